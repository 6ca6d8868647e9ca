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

struct modprobe {
	int *gate;		/* the children exit when [1] is closed */
	int *tomain;		/* their pids go to [1] */
	pid_t *burst;
	long m;
	struct stackpool *pool;
};

/* stop_machine: one child per "CPU", then go away */
static int modprobe_main(void *arg)
{
	struct modprobe *mp = arg;
	long i;

	close(mp->gate[1]);
	close(mp->tomain[0]);
	pool_init(mp->pool, mp->m);
	for (i = 0; i < mp->m; i++)
		mp->burst[i] = spawn_child(child_gate, gate_arg(mp->gate),
					   pool_top(mp->pool, i), 0);
	if (write(mp->tomain[1], mp->burst, mp->m * sizeof(*mp->burst)) !=
	    (ssize_t)(mp->m * sizeof(*mp->burst)))
		syscall(SYS_exit_group, 1);
	syscall(SYS_exit_group, 0);
	return 0;
}

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
	int reps = 1, csv = 0, c, r, gate[2], tomain[2];
	struct stackpool lp, sp, mpstack;
	struct modprobe mp;
	pid_t *lng, *burst, modprobe, pid;
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
	pool_init(&mpstack, 1);
	make_sleepers(lng, n, &lp);
	if (csv)
		printf("scenario,N,M,total_ns,ns_per_op\n");

	for (r = 0; r < reps; r++) {
		if (pipe(gate) || pipe(tomain))
			die("pipe");
		sp.base = NULL;		/* set by modprobe_main() unless --fork */
		mp.gate = gate;
		mp.tomain = tomain;
		mp.burst = burst;
		mp.m = m;
		mp.pool = &sp;
		modprobe = spawn_child(modprobe_main, &mp, pool_top(&mpstack, 0),
				       0);
		close(gate[0]);
		close(tomain[1]);
		for (i = 0; i < (long)(m * sizeof(*burst));) {
			ssize_t got = read(tomain[0], (char *)burst + i,
					   m * sizeof(*burst) - i);

			if (got <= 0)
				die("reading pids from modprobe");
			i += got;
		}
		close(tomain[0]);
		if (waitpid(modprobe, NULL, 0) != modprobe)
			die("waitpid(modprobe)");
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
		/* the burst's stacks, mapped by "modprobe" in our memory */
		if (sp.base)
			munmap(sp.base, sp.n * CHILD_STACK);
	}
	kill_reap(lng, n);
	return 0;
}
