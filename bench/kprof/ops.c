// SPDX-License-Identifier: GPL-2.0
/*
 * The operations whose kernel instructions docs/results.md counts with
 * kprof: each runs 1,000 of them between kprof_start() and kprof_stop(),
 * with the setup (forks, exits, tracer attaches) outside the region.
 *
 *   ops reap      wait() reaps 1,000 exited children
 *   ops pgreap    waitpid(0) reaps 1,000 exited children of our group
 *   ops pgpoll    waitpid(0, WNOHANG) beside one live child of our group
 *   ops treap     a tracer (not the parent) reaps 1,000 exited tracees
 *   ops setpgid   1,000 pairs of setpgid(): a child into its own group
 *                 and back
 *   ops setsid    1,000 children of ours, in our group, call setsid()
 *   ops cexit     1,000 times clone(CLONE_VM) a child that exits at once,
 *                 and waitpid() it
 *   ops orphexit  the same, but the child first joins the group of
 *                 another child of ours (bench's orphan-exit)
 *   ops ptsys     1,000 round trips of PTRACE_SYSCALL and
 *                 waitpid(-1, __WALL) on a tracee that loops on getppid()
 *   ops ptsyspid  the same with waitpid(pid, __WALL), as a tracer of one
 *                 tracee may wait
 *   ops thread    1,000 times pthread_create() a thread that returns at
 *                 once, and pthread_join() it
 *   ops stopcont  1,000 times SIGSTOP a child, waitpid(pid, WUNTRACED),
 *                 SIGCONT it, waitpid(pid, WCONTINUED): by pid, the path
 *                 that the series leaves alone, beside its queueing
 *   ops stopcontall  the same with waitpid(-1, ...)
 *   ops attach    1,000 times PTRACE_SEIZE a child, PTRACE_INTERRUPT it,
 *                 waitpid(pid, __WALL) its trap and PTRACE_DETACH it, as
 *                 strace -p does
 *   ops autoreap  ops cexit with SIGCHLD ignored: the child reaps itself,
 *                 and wait() returns -ECHILD once it is gone
 *
 * Build static and non-PIE, so that the markers' addresses are fixed:
 *   gcc -O2 -static -no-pie -o ops ops.c markers.c
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/ptrace.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <errno.h>
#include <pthread.h>
void kprof_start(void);
void kprof_stop(void);
#define M 1000
static pid_t pids[M];

static void die(const char *s) { perror(s); exit(1); }

/* A child that waits for @gate's write end to close, then exits. */
static pid_t gated_child(int gate[2])
{
	char c;
	pid_t pid = fork();

	if (pid < 0) die("fork");
	if (!pid) { close(gate[1]); read(gate[0], &c, 1); _exit(0); }
	return pid;
}

/* Wait, without reaping, until each of pids[] has exited. */
static void await_zombies(int flags)
{
	for (int i = 0; i < M; i++) {
		siginfo_t si;
		if (waitid(P_PID, pids[i], &si, WEXITED | WNOWAIT | flags)) die("waitid");
	}
}

/* M exited children, not yet reaped, in pids[] */
static void fork_zombies(void)
{
	int gate[2];
	if (pipe(gate)) die("pipe");
	for (int i = 0; i < M; i++)
		pids[i] = gated_child(gate);
	close(gate[0]); close(gate[1]);
	await_zombies(0);
}

/* tracer (not parent) reaps M exited tracees */
static void treap(void)
{
	int tp[2], tq[2], gate[2], st; char c; pid_t parent;
	if (pipe(tp) || pipe(tq) || pipe(gate)) die("pipe");
	parent = fork();
	if (!parent) {
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
		for (int i = 0; i < M; i++)
			pids[i] = gated_child(gate);
		close(gate[0]);
		write(tp[1], pids, sizeof(pids));
		read(tq[0], &c, 1);	/* tracer seized all */
		close(gate[1]);
		read(tq[0], &c, 1);	/* tracer done: reap outside its window */
		for (int i = 0; i < M; i++) waitpid(pids[i], NULL, 0);
		_exit(0);
	}
	close(gate[0]); close(gate[1]);
	read(tp[0], pids, sizeof(pids));
	for (int i = 0; i < M; i++)
		if (ptrace(PTRACE_SEIZE, pids[i], 0, 0)) die("seize");
	write(tq[1], "g", 1);
	await_zombies(__WALL);
	kprof_start();
	for (int i = 0; i < M; i++)
		if (waitpid(-1, &st, __WALL) <= 0) die("waitpid");
	kprof_stop();
	write(tq[1], "d", 1);
	waitpid(parent, NULL, 0);
}

/* parent reaps M exited children */
static void reap(void)
{
	fork_zombies();
	kprof_start();
	for (int i = 0; i < M; i++)
		if (wait(NULL) <= 0) die("wait");
	kprof_stop();
}

/* M setpgid() into own group and back */
static void spgid(void)
{
	int gate[2]; pid_t ch;
	if (pipe(gate)) die("pipe");
	setsid();	/* the guest's runner is in group 0 */
	ch = gated_child(gate);
	close(gate[0]);
	kprof_start();
	for (int i = 0; i < M; i++) {
		if (setpgid(ch, ch)) die("setpgid");
		if (setpgid(ch, getpid())) die("setpgid2");
	}
	kprof_stop();
	close(gate[1]);
	wait(NULL);
}

/* M children call setsid(), one at a time; only that call is counted */
static void ssid(void)
{
	setsid();
	for (int i = 0; i < M; i++) {
		pid_t pid = fork();

		if (pid < 0) die("fork");
		if (!pid) {
			kprof_start();
			if (setsid() < 0) die("setsid");
			kprof_stop();
			_exit(0);
		}
		if (waitpid(pid, NULL, 0) != pid) die("waitpid");
	}
}

/* waitpid(0, WNOHANG) beside one live child in our group */
static void pgpoll(void)
{
	int gate[2];
	if (pipe(gate)) die("pipe");
	setsid();
	gated_child(gate);
	close(gate[0]);
	kprof_start();
	for (int i = 0; i < M; i++)
		if (waitpid(0, NULL, WNOHANG) != 0) die("pgpoll");
	kprof_stop();
	close(gate[1]);
	wait(NULL);
}

/* waitpid(0) reaps M exited children of our group */
static void pgreap(void)
{
	setsid();
	fork_zombies();
	kprof_start();
	for (int i = 0; i < M; i++)
		if (waitpid(0, NULL, 0) <= 0) die("waitpid0");
	kprof_stop();
}

/* A child that joins group @arg (0: stays) and exits. */
static int join_exit(void *arg)
{
	if (arg)
		syscall(SYS_setpgid, 0, (pid_t)(long)arg);
	syscall(SYS_exit_group, 0);
	return 0;
}

static char stack[65536] __attribute__((aligned(16)));

/*
 * reapbench's exit and orphan-exit ops: M times clone(CLONE_VM) a child
 * that (orphexit: joins the group of a holder child H, whose parent, we,
 * is in another group of the session) exits, and waitpid() it.
 */
static void cexit(int orphan)
{
	int gate[2]; pid_t h = 0, pid;
	if (pipe(gate)) die("pipe");
	setsid();
	if (orphan) {
		h = gated_child(gate);
		if (setpgid(h, h)) die("setpgid");
	}
	close(gate[0]);
	kprof_start();
	for (int i = 0; i < M; i++) {
		pid = clone(join_exit, stack + sizeof(stack), CLONE_VM | SIGCHLD,
			    (void *)(long)h);
		if (pid < 0 || waitpid(pid, NULL, 0) != pid) die("cexit");
	}
	kprof_stop();
	close(gate[1]);
	while (wait(NULL) > 0)
		;
}

/*
 * A tracer's syscall round trips, as strace's: M times PTRACE_SYSCALL a
 * tracee that loops on getppid(), and waitpid(-1, __WALL) its stop (an
 * entry or an exit stop each time); waitpid(pid, __WALL) if @by_pid.
 */
static void ptsys(int by_pid)
{
	int st; pid_t pid = fork();
	if (pid < 0) die("fork");
	if (!pid) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		for (;;)
			syscall(SYS_getppid);
	}
	if (waitpid(pid, &st, 0) != pid) die("waitpid");
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD);
	kprof_start();
	for (int i = 0; i < M; i++) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, 0)) die("syscall");
		if (waitpid(by_pid ? pid : -1, &st, __WALL) != pid)
			die("wait");
	}
	kprof_stop();
	kill(pid, SIGKILL);
	waitpid(pid, &st, __WALL);
}

static void *thread_body(void *arg)
{
	return arg;
}

/* a thread's life: pthread_create() and pthread_join() */
static void thread(void)
{
	pthread_t t;

	kprof_start();
	for (int i = 0; i < M; i++)
		if (pthread_create(&t, NULL, thread_body, NULL) ||
		    pthread_join(t, NULL))
			die("thread");
	kprof_stop();
}

/*
 * A child's stop and continue, each reported: by pid (stock's O(1) path,
 * which the series leaves alone but still queues for) or by -1.
 */
static void stopcont(int by_pid)
{
	int gate[2], st; pid_t ch, w;
	if (pipe(gate)) die("pipe");
	ch = gated_child(gate);
	close(gate[0]);
	w = by_pid ? ch : -1;
	kprof_start();
	for (int i = 0; i < M; i++) {
		if (kill(ch, SIGSTOP) || waitpid(w, &st, WUNTRACED) != ch ||
		    !WIFSTOPPED(st))
			die("stop");
		if (kill(ch, SIGCONT) || waitpid(w, &st, WCONTINUED) != ch ||
		    !WIFCONTINUED(st))
			die("cont");
	}
	kprof_stop();
	close(gate[1]);
	wait(NULL);
}

/* a tracer's attach to a running child, and its detach */
static void attach(void)
{
	int gate[2], st; pid_t ch;
	if (pipe(gate)) die("pipe");
	ch = gated_child(gate);
	close(gate[0]);
	kprof_start();
	for (int i = 0; i < M; i++)
		if (ptrace(PTRACE_SEIZE, ch, 0, 0) ||
		    ptrace(PTRACE_INTERRUPT, ch, 0, 0) ||
		    waitpid(ch, &st, __WALL) != ch ||
		    ptrace(PTRACE_DETACH, ch, 0, 0))
			die("attach");
	kprof_stop();
	close(gate[1]);
	wait(NULL);
}

/* cexit with SIGCHLD ignored: each child is released at its exit */
static void autoreap(void)
{
	pid_t pid;

	signal(SIGCHLD, SIG_IGN);
	kprof_start();
	for (int i = 0; i < M; i++) {
		pid = clone(join_exit, stack + sizeof(stack), CLONE_VM | SIGCHLD,
			    NULL);
		if (pid < 0 || wait(NULL) != -1 || errno != ECHILD)
			die("autoreap");
	}
	kprof_stop();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: ops reap|pgreap|pgpoll|treap|setpgid|setsid|cexit|orphexit|ptsys|ptsyspid|thread|stopcont|stopcontall|attach|autoreap\n");
		return 2;
	}
	if (!strcmp(argv[1], "treap")) treap();
	else if (!strcmp(argv[1], "reap")) reap();
	else if (!strcmp(argv[1], "setpgid")) spgid();
	else if (!strcmp(argv[1], "setsid")) ssid();
	else if (!strcmp(argv[1], "pgpoll")) pgpoll();
	else if (!strcmp(argv[1], "pgreap")) pgreap();
	else if (!strcmp(argv[1], "cexit")) cexit(0);
	else if (!strcmp(argv[1], "ptsys")) ptsys(0);
	else if (!strcmp(argv[1], "ptsyspid")) ptsys(1);
	else if (!strcmp(argv[1], "orphexit")) cexit(1);
	else if (!strcmp(argv[1], "thread")) thread();
	else if (!strcmp(argv[1], "stopcont")) stopcont(1);
	else if (!strcmp(argv[1], "stopcontall")) stopcont(0);
	else if (!strcmp(argv[1], "attach")) attach();
	else if (!strcmp(argv[1], "autoreap")) autoreap();
	else {
		fprintf(stderr, "ops: unknown operation '%s'\n", argv[1]);
		return 2;
	}
	printf("ok %s\n", argv[1]);
	return 0;
}
