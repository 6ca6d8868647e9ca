// SPDX-License-Identifier: GPL-2.0
/*
 * Smoke test for a freshly booted kernel: fork children that exit with
 * known statuses and reap them with wait(-1) and waitpid(pid), then check
 * that wait() says ECHILD.  Prints TAP so the workbench can count it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR_CHILDREN 16

static int failures, tests;

static void ok(int cond, const char *what)
{
	tests++;
	if (!cond)
		failures++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tests, what);
}

static pid_t spawn(int status)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(status);
	return pid;
}

int main(void)
{
	pid_t pids[NR_CHILDREN];
	int seen[NR_CHILDREN] = { 0 };
	int i, status, good = 1;
	pid_t pid;

	printf("TAP version 13\n1..4\n");

	for (i = 0; i < NR_CHILDREN; i++)
		pids[i] = spawn(i);
	for (i = 0; i < NR_CHILDREN; i++) {
		int j;

		pid = wait(&status);
		for (j = 0; j < NR_CHILDREN && pids[j] != pid; j++)
			;
		if (j == NR_CHILDREN || seen[j]++ || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != j)
			good = 0;
	}
	ok(good, "wait(-1) reaps every child once with its exit status");

	pid = spawn(42);
	ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	   WEXITSTATUS(status) == 42, "waitpid(pid) reaps that child");

	errno = 0;
	ok(wait(&status) == -1 && errno == ECHILD, "wait() with no child: ECHILD");

	pid = spawn(0);
	while (waitpid(pid, &status, WNOHANG) == 0)
		;
	ok(WIFEXITED(status), "WNOHANG polling eventually reaps the child");

	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
