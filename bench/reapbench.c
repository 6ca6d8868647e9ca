// SPDX-License-Identifier: GPL-2.0
/*
 * reapbench: time the wait() family with N long-lived children in the way.
 *
 *   reapbench SCENARIO [-n N] [-m M] [-r REPEATS] [-t THREADS] [-i USEC]
 *             [--fork] [--csv] [--name NAME] [-v] [-- TRACER|SHELL ...]
 *   reapbench -l
 *
 * N long-lived children are created first, so they sit at the head of the
 * children list (the worst case for a kernel that moves exiting children
 * to the head, the best case for none). Then each repeat times M
 * operations with CLOCK_MONOTONIC and prints one line:
 *
 *   scenario,N,M,total_ns,ns_per_op[,extra columns]
 *
 * Children are made and brought into the state the timed operation needs
 * (zombie, stopped, continued: checked with waitid(P_PID, WNOWAIT), which
 * does not walk the list) before the clock starts. See bench/README.md.
 *
 * The scenarios live in bench/scenarios/, a file per family, each with its
 * table; this file joins the tables, parses the options and runs one.
 * "reapbench -l" lists them, a line each:
 *
 *   name<TAB>family<TAB>N<TAB>M<TAB>long-lived per N<TAB>bench<TAB>help
 *
 * where N and M are the defaults (./fastreap bench runs every scenario
 * with that M) and bench says how ./fastreap bench runs it: "every-n" at
 * each N it is given, "n0" at N = 0 only, "client" as the workload of a
 * real program, "manual" not at all.
 *
 * Build: gcc -static -O2 -Wall -Wextra -pthread bench/reapbench.c -o reapbench
 */
#define _GNU_SOURCE
#include "reapbench.h"
#include "scenarios/common.h"

#include <getopt.h>

#include "scenarios/reap.c"
#include "scenarios/poll.c"
#include "scenarios/report.c"
#include "scenarios/path.c"
#include "scenarios/exit.c"
#include "scenarios/jobctl.c"
#include "scenarios/procs.c"
#include "scenarios/client.c"

#define FAMILY(name, table) { name, table, sizeof(table) / sizeof(table[0]) }

static const struct {
	const char *name;
	const struct scenario *scens;
	size_t n;
} families[] = {
	FAMILY("reap", reap_scenarios),
	FAMILY("poll", poll_scenarios),
	FAMILY("report", report_scenarios),
	FAMILY("path", path_scenarios),
	FAMILY("exit", exit_scenarios),
	FAMILY("jobctl", jobctl_scenarios),
	FAMILY("procs", procs_scenarios),
	FAMILY("client", client_scenarios),
};

#define NFAMILIES (sizeof(families) / sizeof(families[0]))

static const char *const runs_name[] = {
	[RUNS_EVERY_N] = "every-n", [RUNS_N0] = "n0",
	[RUNS_CLIENT] = "client", [RUNS_MANUAL] = "manual",
};

static void list(void)
{
	const struct scenario *s;
	size_t f, i;

	for (f = 0; f < NFAMILIES; f++)
		for (i = 0; i < families[f].n; i++) {
			s = &families[f].scens[i];
			printf("%s\t%s\t%ld\t%ld\t%d\t%s\t%s\n", s->name,
			       families[f].name, s->n, s->m,
			       s->kids_per_n ? s->kids_per_n : 1,
			       runs_name[s->runs], s->help);
		}
	exit(0);
}

static const struct scenario *find(const char *name)
{
	size_t f, i;

	for (f = 0; f < NFAMILIES; f++)
		for (i = 0; i < families[f].n; i++)
			if (!strcmp(families[f].scens[i].name, name))
				return &families[f].scens[i];
	return NULL;
}

static void usage(void)
{
	size_t f, i;

	fprintf(stderr,
		"usage: reapbench SCENARIO [-n N] [-m M] [-r REPEATS] [--csv]\n"
		"       [--fork] [-t THREADS] [-i INTERVAL_US] [-v] [--name NAME]\n"
		"       [-- TRACER [ARG...]]   (spawn only: run TRACER ARG...\n"
		"                              -p PID,... on the N and on us)\n"
		"       [-- SHELL]             (shell only: bash, which runs M\n"
		"                              commands beside the N)\n"
		"       reapbench -l           (the scenarios, for programs)\n"
		"  -n N        long-lived children, created first\n"
		"  -m M        timed operations per repeat\n"
		"  -r REPEATS  lines of output (default 3)\n"
		"  --fork      fork() children (~100 KiB each) instead of\n"
		"              clone(CLONE_VM) ones (~25 KiB each)\n"
		"  -t THREADS  waiter threads for 'threads' (default 64)\n"
		"  -i USEC     job interval for 'mixed' (default 100)\n"
		"  -v          'mixed': print the zombie backlog over time\n"
		"  --csv       print a header line\n"
		"  --name NAME print NAME instead of SCENARIO in the output\n"
		"              (e.g. the client that runs it: tini, strace)\n"
		"scenarios by family (default N, M):\n");
	for (f = 0; f < NFAMILIES; f++) {
		fprintf(stderr, " %s:\n", families[f].name);
		for (i = 0; i < families[f].n; i++)
			fprintf(stderr, "  %-28s %5ld %4ld  %s\n",
				families[f].scens[i].name,
				families[f].scens[i].n,
				families[f].scens[i].m,
				families[f].scens[i].help);
	}
	exit(1);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONG_OPTIONS,
		{ "name", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const struct scenario *sc;
	int c, n_set = 0, m_set = 0;

	/* fork-exec's program: exit at once, whatever the kernel. */
	if (argc == 2 && !strcmp(argv[1], EXEC_EXIT_ARG))
		_exit(0);
	if (argc == 2 && !strcmp(argv[1], "-l"))
		list();
	if (argc < 2 || argv[1][0] == '-')
		usage();
	sc = find(argv[1]);
	if (!sc)
		usage();
	o.scen = sc->name;
	o.reps = 3;
	o.threads = 64;
	o.interval_us = 100;
	optind = 2;
	while ((c = getopt_long(argc, argv, "n:m:r:t:i:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o.n = atol(optarg); n_set = 1; break;
		case 'm': o.m = atol(optarg); m_set = 1; break;
		case 'r': o.reps = atoi(optarg); break;
		case 't': o.threads = atoi(optarg); break;
		case 'i': o.interval_us = atol(optarg); break;
		case 'v': o.verbose = 1; break;
		case 'c': o.csv = 1; break;
		case 'f': g_use_fork = 1; break;
		case 'L': o.scen = optarg; break;
		default: usage();
		}
	}
	/* Only the clients spawn and shell take a command after "--". */
	if (optind < argc) {
		if (sc->run != scen_spawn && sc->run != scen_shell)
			usage();
		o.cmd = argv + optind;
	}
	if (!n_set)
		o.n = sc->n;
	if (!m_set)
		o.m = sc->m;
	if (o.n < 0 || o.m < 0 || o.reps < 1 || o.threads < 1 ||
	    o.interval_us < 0)
		usage();
	raise_limits(o.n * (sc->kids_per_n ? sc->kids_per_n : 1) +
		     (long)o.reps * o.m + o.threads + 16);
	check_clock();
	/* Default SIGCHLD disposition: zombies must stay for us to reap. */
	signal(SIGCHLD, SIG_DFL);
	if (sc->idle_sibling)
		start_idle_sibling();
	sc->run(sc->a, sc->b);
	if (sc->idle_sibling)
		stop_idle_sibling();
	return 0;
}
