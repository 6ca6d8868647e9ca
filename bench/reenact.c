// SPDX-License-Identifier: GPL-2.0
/*
 * reenact: the 2007 SGI story in one process tree.
 *
 *   reenact [-n N] [-m M] [-r REPEATS] [--fork] [--csv]
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
 * Build: gcc -static -O2 -Wall -Wextra -pthread bench/reenact.c -o reenact
 */
#define _GNU_SOURCE
#include "reapbench.h"

#include <getopt.h>
#include <sys/prctl.h>

static void usage(void)
{
	fprintf(stderr,
		"usage: reenact [-n N] [-m M] [-r REPEATS] [--fork] [--csv]\n"
		"  -n N  long-lived children of the reaper (default 2000)\n"
		"  -m M  children of the exiting 'modprobe' that then all exit\n"
		"        at once (default 1000)\n");
	exit(1);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "fork", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long n = 2000, m = 1000, i, reaped;
	int reps = 1, csv = 0, c, r, gate[2];
	struct stackpool lp, sp;
	pid_t *lng, *burst, pid;
	uint64_t t0, t1;
	siginfo_t si;

	while ((c = getopt_long(argc, argv, "n:m:r:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': n = atol(optarg); break;
		case 'm': m = atol(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 'c': csv = 1; break;
		case 'f': g_use_fork = 1; break;
		default: usage();
		}
	}
	if (optind != argc || n < 0 || m < 1 || reps < 1)
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
		reaped = 0;
		while (reaped < m) {
			/* tini: block for one, then drain with WNOHANG */
			pid = wait(NULL);
			if (pid < 0 && errno == EINTR)
				continue;
			if (pid < 0)
				die("wait");
			reaped++;
			while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
				reaped++;
		}
		t1 = now_ns();
		printf("reenact,%ld,%ld,%llu,%llu\n", n, m,
		       (unsigned long long)(t1 - t0),
		       (unsigned long long)((t1 - t0) / m));
		fflush(stdout);
		fprintf(stderr,
			"reenact: reaper with %ld long-lived children: a burst of %ld exits was fully reaped in %.3f ms (%.1f us per zombie)\n",
			n, m, (t1 - t0) / 1e6, (t1 - t0) / 1e3 / m);
		/* the burst's stacks, mapped by modprobe_burst() */
		if (sp.base)
			munmap(sp.base, sp.n * CHILD_STACK);
	}
	kill_reap(lng, n);
	return 0;
}
