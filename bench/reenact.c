// SPDX-License-Identifier: GPL-2.0
/*
 * reenact: the 2007 SGI story in one process tree.
 *
 *   reenact [-n N] [-m M] [-r REPEATS] [-p POLLS] [--fork] [--csv]
 *
 * A pid-1-like reaper (PR_SET_CHILD_SUBREAPER) holds N long-lived children,
 * like init holding events/0..events/4095 and friends. A "modprobe" child
 * then starts M children (stop_machine's one thread per CPU) and exits, so
 * the M are reparented to the reaper, behind the N. Like the kernel
 * threads of 2007, none of them has an address space of its own to free
 * (they share the reaper's, unless --fork): so the burst's exits cost the
 * same at any N, and what grows with N is wait()'s alone. When they all exit at
 * once the reaper collects them with a tini-like loop: block in wait(-1),
 * then waitpid(-1, WNOHANG) until it returns 0, and again. The time from
 * the burst of exits until the last zombie is gone is printed as
 *
 *   reenact,N,M,total_ns,ns_per_op
 *
 * followed by a human-readable line on stderr.
 *
 * With -p, each repeat then also times the call that ends every reaping
 * loop, and where a patch that only moves exiting children to the head of
 * the list still walks them all: POLLS waitpid(-1, WNOHANG) calls that
 * find nothing to reap, beside the N and one more live child (the main
 * process an init like tini runs, so that the call returns 0 at N = 0
 * too, not ECHILD). Printed as
 *
 *   poll,N,POLLS,total_ns,ns_per_op
 *
 * Build: gcc -static -O2 -Wall -Wextra -pthread bench/reenact.c -o reenact
 */
#define _GNU_SOURCE
#include "reapbench.h"

#include <getopt.h>
#include <sys/prctl.h>

/* One line of output: @ns for @m operations beside @n children. */
static void result(const char *what, long n, long m, uint64_t ns)
{
	printf("%s,%ld,%ld,%llu,%llu\n", what, n, m, (unsigned long long)ns,
	       (unsigned long long)(ns / m));
	fflush(stdout);
}

/* POLLS calls waitpid(-1, WNOHANG), each of which must return 0. */
static void time_empty_polls(long n, long polls)
{
	uint64_t t0, t1;
	pid_t pid;
	long i;

	t0 = now_ns();
	for (i = 0; i < polls; i++) {
		pid = waitpid(-1, NULL, WNOHANG);
		if (pid != 0)
			die("waitpid(-1, WNOHANG) returned %d", pid);
	}
	t1 = now_ns();
	result("poll", n, polls, t1 - t0);
	fprintf(stderr,
		"reenact: reaper with %ld long-lived children and its main one: an empty waitpid(-1, WNOHANG) took %.2f us\n",
		n, (t1 - t0) / 1e3 / polls);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: reenact [-n N] [-m M] [-r REPEATS] [-p POLLS] [--fork] [--csv]\n"
		"  -n N      long-lived children of the reaper (default 2000)\n"
		"  -m M      children of the exiting 'modprobe' that then all\n"
		"            exit at once (default 1000)\n"
		"  -p POLLS  then time POLLS empty waitpid(-1, WNOHANG) calls\n"
		"            (default 0: none)\n");
	exit(1);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	long n = 2000, m = 1000, polls = 0, i;
	int reps = 1, csv = 0, c, r, gate[2];
	struct stackpool lp, sp, mp;
	pid_t *lng, *burst, main_child;
	uint64_t t0, t1;
	siginfo_t si;

	while ((c = getopt_long(argc, argv, "n:m:r:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': n = atol(optarg); break;
		case 'm': m = atol(optarg); break;
		case 'p': polls = atol(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 'c': csv = 1; break;
		case 'f': g_use_fork = 1; break;
		default: usage();
		}
	}
	if (optind != argc || n < 0 || m < 1 || reps < 1 || polls < 0)
		usage();
	raise_limits(n + m + 16);
	check_clock();
	signal(SIGCHLD, SIG_DFL);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		die("PR_SET_CHILD_SUBREAPER");

	lng = xcalloc(n, sizeof(*lng));
	burst = xcalloc(m, sizeof(*burst));
	pool_init(&lp, n);
	make_sleepers(lng, n, &lp);
	if (csv)
		printf("scenario,N,M,total_ns,ns_per_op\n");

	for (r = 0; r < reps; r++) {
		/* like 2007's kernel threads, the burst shares our memory */
		modprobe_burst(burst, m, gate, &sp);
		/* All M are now ours (reparented to the subreaper) and alive. */
		for (i = 0; i < m; i++) {
			memset(&si, 0, sizeof(si));
			if (waitid(P_PID, burst[i], &si,
				   WEXITED | WNOHANG | WNOWAIT))
				die("child %d was not reparented to us",
				    burst[i]);
		}

		t0 = now_ns();
		close(gate[1]); /* the burst: all M exit at once */
		tini_reap(m);
		t1 = now_ns();
		result("reenact", n, m, t1 - t0);
		fprintf(stderr,
			"reenact: reaper with %ld long-lived children: a burst of %ld exits was fully reaped in %.3f ms (%.1f us per zombie)\n",
			n, m, (t1 - t0) / 1e6, (t1 - t0) / 1e3 / m);
		/* the burst's stacks, mapped by modprobe_burst() */
		if (sp.base)
			munmap(sp.base, sp.n * CHILD_STACK);
	}
	if (polls) {
		pool_init(&mp, 1);
		make_sleepers(&main_child, 1, &mp);
		for (r = 0; r < reps; r++)
			time_empty_polls(n, polls);
		kill_reap(&main_child, 1);
	}
	kill_reap(lng, n);
	return 0;
}
