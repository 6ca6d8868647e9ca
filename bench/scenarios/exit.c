// SPDX-License-Identifier: GPL-2.0
/*
 * exit: exits beside N long-lived processes, timed with their cost split
 * between the exiting children and their reaper.
 *
 *   exit, exit-ownpgrp, exit-held: the demo's burst (bench/reenact.c),
 *     the N in our group, in a group of their own, or held by a child;
 *   orphan-exit: the exit whose orphaned-group check walks a group of N.
 */

/*
 * CPU time of task @pid, from /proc/PID/schedstat (sum_exec_runtime, ns):
 * under -icount it counts guest instructions of that task alone, so it
 * splits a timed burst into the exiting children's own cost and the
 * reaper's.
 */
static uint64_t schedstat_ns(pid_t pid)
{
	char path[64], buf[256];
	unsigned long long ns = 0;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s", path);
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		die("read %s", path);
	buf[len] = 0;
	if (sscanf(buf, "%llu", &ns) != 1)
		die("parse %s", path);
	return ns;
}

/*
 * Our own CPU time so far.  Not from /proc/self/schedstat: for a running
 * task that shows sum_exec_runtime as of the last tick or switch (up to
 * 4 ms old); the thread CPU clock brings it up to date first.
 */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Where the N long-lived processes of the exit* scenarios are. */
enum exit_where {
	EXIT_SAME_PGRP,		/* our children, in our process group */
	EXIT_OTHER_PGRP,	/* our children, in a group of their own */
	EXIT_HELD,		/* children of a child of ours (same group) */
};

/*
 * exit, exit-ownpgrp, exit-held: the demo's burst (bench/reenact.c), with
 * its cost split. We are a subreaper holding the N; a "modprobe" child
 * starts M gated children and exits, so they are reparented to us; the
 * gate opens and we reap them with the tini loop (wait(), then WNOHANG
 * until 0). Timed as reenact: from the gate's opening to the last reap.
 * Each repeat also runs the burst once untimed, collecting the zombies by
 * pid, to read every exiting child's own CPU time (schedstat, from asleep
 * on the gate to zombie). Extra columns: that exit cost per child and its
 * maximum (the child that pays for a shared mm's teardown shows there),
 * and our own CPU time in the timed burst (the reaping) per child.
 */
static void burst_children(pid_t *sht, int gate[2])
{
	long i;

	modprobe_burst(sht, o.m, gate, NULL);
	/* Reparented to us; every one asleep on the gate. */
	for (i = 0; i < o.m; i++) {
		siginfo_t si = { 0 };

		if (waitid(P_PID, sht[i], &si, WEXITED | WNOHANG | WNOWAIT))
			die("burst child %d is not ours", sht[i]);
		while (proc_stat(sht[i], NULL, NULL) != 'S')
			sched_yield();
	}
}

static void scen_exit(int where, int b UNUSED)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	pid_t *sht = xcalloc(o.m, sizeof(*sht));
	uint64_t *cpu = xcalloc(o.m, sizeof(*cpu));
	uint64_t t0, t1, exit_ns, exit_max, me0, me1;
	struct stackpool lp;
	int gate[2], r;
	pid_t holder = 0;
	long i;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		die("PR_SET_CHILD_SUBREAPER");
	pool_init(&lp, o.n);
	if (where == EXIT_HELD) {
		holder = make_holder(o.n, 0, KIDS_HOME);
	} else {
		make_sleepers(lng, o.n, &lp);
		if (where == EXIT_OTHER_PGRP && o.n)
			own_pgrp(lng, o.n);
	}
	header(",exit_ns_per_child,exit_ns_max,reaper_ns_per_child");
	for (r = 0; r < o.reps; r++) {
		/* Untimed: each child's own cost, from its schedstat. */
		burst_children(sht, gate);
		for (i = 0; i < o.m; i++)
			cpu[i] = schedstat_ns(sht[i]);
		close(gate[1]);
		wait_ready(sht, o.m, WEXITED);
		exit_ns = exit_max = 0;
		for (i = 0; i < o.m; i++) {
			cpu[i] = schedstat_ns(sht[i]) - cpu[i];
			exit_ns += cpu[i];
			if (cpu[i] > exit_max)
				exit_max = cpu[i];
		}
		kill_reap(sht, o.m);

		/* Timed: the demo's burst and tini loop. */
		burst_children(sht, gate);
		me0 = thread_cpu_ns();
		t0 = now_ns();
		close(gate[1]);
		tini_reap(o.m);
		t1 = now_ns();
		me1 = thread_cpu_ns();
		printf("%s,%ld,%ld,%llu,%llu,%llu,%llu,%llu\n", o.scen, o.n,
		       o.m, (unsigned long long)(t1 - t0),
		       (unsigned long long)((t1 - t0) / o.m),
		       (unsigned long long)(exit_ns / o.m),
		       (unsigned long long)exit_max,
		       (unsigned long long)((me1 - me0) / o.m));
		fflush(stdout);
	}
	if (holder) {
		kill_reap(&holder, 1);
		/* Its N die with it (PDEATHSIG) and come to us, the subreaper. */
		while (wait(NULL) > 0 || errno == EINTR)
			;
	} else {
		kill_reap(lng, o.n);
	}
}

/*
 * orphan-exit: the exit whose orphan check walks a group of N. A holder
 * child H leads group G (it qualifies G: its parent, we, is in another
 * group of the session) and has N sleeping children in G (they do not:
 * their parent is in G). Each op: clone a child that joins G and exits,
 * waitpid(pid). Its exit runs kill_orphaned_pgrp(): its parent (we) is in
 * another group of the same session, so will_become_orphaned_pgrp()
 * searches G for another member with a parent outside G: H, the oldest,
 * which comes last. M times.
 */
static int child_join_exit(void *arg)
{
	syscall(SYS_setpgid, 0, (pid_t)(intptr_t)arg);
	syscall(SYS_exit_group, 0);
	return 0;
}

static void scen_orphan_exit(NO_ARGS)
{
	struct stackpool sp;
	uint64_t t0, t1;
	pid_t holder, pid;
	int r, st;
	long i;

	holder = make_holder(o.n, 1, KIDS_HOME);
	pool_init(&sp, 1);
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			pid = spawn_child(child_join_exit,
					  (void *)(intptr_t)holder,
					  pool_top(&sp, 0), 0);
			if (waitpid(pid, &st, 0) != pid)
				die("waitpid");
		}
		t1 = now_ns();
		report(o.m, t0, t1);
	}
	kill_reap(&holder, 1);
}

static const struct scenario exit_scenarios[] = {
	{ "exit", 1000, 512, scen_exit, EXIT_SAME_PGRP, 0,
	  .help = "the demo's burst; the N in our group; split" },
	{ "exit-ownpgrp", 1000, 512, scen_exit, EXIT_OTHER_PGRP, 0,
	  .help = "the same, the N in a group of their own" },
	{ "exit-held", 1000, 512, scen_exit, EXIT_HELD, 0,
	  .help = "the same, the N our child's, not ours" },
	{ "orphan-exit", 1000, 100, scen_orphan_exit, 0, 0,
	  .help = "clone+setpgid+exit+waitpid into a group of N" },
};
