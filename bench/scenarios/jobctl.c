// SPDX-License-Identifier: GPL-2.0
/*
 * jobctl: job control beside a process group or session of N.
 *
 *   setpgid, setpgid-kids(-away, -spread): a move into a group and out;
 *   setsid: a new session beside N in the group and session;
 *   tstp-orphan, ttyin-orphan: the orphaned-group checks of SIGTSTP and
 *     of a background read of the tty.
 */
#include <sys/ioctl.h>

/*
 * setpgid: a gated child X moves into a group of N+1 (a leader L and N
 * sleepers) and back out into its own group: one op is the pair of
 * setpgid() calls. setpgid-kids: the same moves, but X has N children of
 * its own (in X's own group), and the group it joins is just L.
 * setpgid-kids-away: X's N children are in a group of their own;
 * setpgid-kids-spread: each of them leads a group of its own.
 */
static void scen_setpgid(int kids, int where)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	struct stackpool lp, xp;
	uint64_t t0, t1;
	pid_t leader, x;
	int gate[2], r;
	long i;

	pool_init(&lp, o.n);
	pool_init(&xp, 2);
	make_gated(&leader, 1, &xp, gate);
	if (setpgid(leader, leader))
		die("setpgid(L)");
	if (kids) {
		x = make_holder(o.n, 1, where);
	} else {
		make_sleepers(lng, o.n, &lp);
		for (i = 0; i < o.n; i++)
			if (setpgid(lng[i], leader))
				die("setpgid");
		x = spawn_child(child_sleep, NULL, pool_top(&xp, 1), 0);
		if (setpgid(x, x))
			die("setpgid(X)");
	}
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		t0 = now_ns();
		for (i = 0; i < o.m; i++)
			if (setpgid(x, leader) || setpgid(x, x))
				die("setpgid(X)");
		t1 = now_ns();
		report(o.m, t0, t1);
	}
	if (getpgid(x) != x)
		die("X not back in its own group");
	kill_reap(&x, 1);
	kill_reap(lng, kids ? 0 : o.n);
	release_gated(&leader, 1, gate);
	kill_reap(&leader, 1);
}

/*
 * setsid: each op, a child of ours, in our group and session beside N
 * sleeping siblings, calls setsid() and exits; only the setsid() is timed
 * (by the child, in memory it shares with us).
 */
static uint64_t setsid_ns;

static int child_setsid(void *arg)
{
	uint64_t t0 = now_ns();

	(void)arg;
	if (syscall(SYS_setsid) < 0)
		syscall(SYS_exit_group, 1);
	setsid_ns += now_ns() - t0;
	syscall(SYS_exit_group, 0);
	return 0;
}

static void scen_setsid(NO_ARGS)
{
	struct stackpool lp, sp;
	pid_t *lng = long_lived(o.n, &lp), pid;
	int r, st;
	long i;

	pool_init(&sp, 1);
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		setsid_ns = 0;
		for (i = 0; i < o.m; i++) {
			/* CLONE_VM: the child adds to our setsid_ns. */
			pid = spawn_child(child_setsid, NULL, pool_top(&sp, 0), 0);
			if (waitpid(pid, &st, 0) != pid || st != 0)
				die("setsid child");
		}
		report(o.m, 0, setsid_ns);
	}
	kill_reap(lng, o.n);
}

/*
 * tstp-orphan, ttyin-orphan: a job-control check in an orphaned group of
 * N+1. X leads group G in a session of its own leader H (so X's parent,
 * us once H's middle child has exited, is in another session) and has N
 * sleeping children in G: no member has a parent in another group of the
 * session, so G is orphaned, and is_current_pgrp_orphaned() walks all of
 * it. tstp-orphan: one op is kill(X, SIGTSTP) (discarded, as G is
 * orphaned) and a pipe round trip to X. ttyin-orphan: X reads its
 * controlling tty (a pty whose foreground group is H's) from the
 * background; one op is one read() that fails with EIO, timed by X.
 */
struct orphan_job {
	pid_t h, x;
	int in, out;		/* to X, from X */
};

static void orphan_x_main(int tty, int in, int out)
{
	pid_t me = getpid();
	struct stackpool gp;
	uint64_t t[2];
	char c = 0;
	long i;

	if (setpgid(0, 0))
		die("setpgid(X)");
	long_lived(o.n, &gp);	/* they die with us */
	xwrite(out, &me, sizeof(me));
	for (;;) {
		if (read(in, &c, 1) != 1)
			_exit(0);
		if (tty < 0) {		/* tstp-orphan: echo */
			xwrite(out, &c, 1);
			continue;
		}
		t[0] = now_ns();
		for (i = 0; i < o.m; i++)
			if (read(tty, &c, 1) != -1 || errno != EIO)
				die("background read of the tty did not fail "
				    "with EIO");
		t[1] = now_ns();
		xwrite(out, t, sizeof(t));
	}
}

/* Parent pid of @pid from /proc/PID/stat, 0 if gone. */
static pid_t proc_ppid(pid_t pid)
{
	char buf[1024];
	const char *p = proc_stat_fields(pid, buf, sizeof(buf));
	int ppid = 0;

	if (!p || sscanf(p, "%*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

static void orphan_job_start(struct orphan_job *j, int with_tty)
{
	int in[2], out[2], tty = -1;
	pid_t mid;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		die("PR_SET_CHILD_SUBREAPER");
	if (pipe(in) || pipe(out))
		die("pipe");
	j->h = fork();
	if (j->h < 0)
		die("fork");
	if (j->h == 0) {
		close(in[1]);
		close(out[0]);
		if (setsid() < 0)
			die("setsid");
		if (with_tty) {
			int ptm = posix_openpt(O_RDWR | O_NOCTTY);

			if (ptm < 0 || grantpt(ptm) || unlockpt(ptm))
				die("posix_openpt");
			tty = open(ptsname(ptm), O_RDWR | O_NOCTTY);
			if (tty < 0 || ioctl(tty, TIOCSCTTY, 0))
				die("pty as controlling tty");
		}
		mid = fork();
		if (mid < 0)
			die("fork");
		if (mid == 0) {
			pid_t x = fork();

			if (x < 0)
				die("fork");
			if (x == 0)
				orphan_x_main(tty, in[0], out[1]);
			_exit(0);
		}
		/* H: hold the session (and the pty) until killed. */
		close(in[0]);
		close(out[1]);
		for (;;)
			pause();
	}
	close(in[0]);
	close(out[1]);
	j->in = in[1];
	j->out = out[0];
	xread(j->out, &j->x, sizeof(j->x));	/* X and its N are there */
	/* X's parent exits; X comes to us, in another session. */
	while (proc_ppid(j->x) != getpid())
		sched_yield();
}

static void orphan_job_end(struct orphan_job *j)
{
	close(j->in);
	close(j->out);
	kill(j->h, SIGKILL);
	kill(j->x, SIGKILL);
	/* H, X, X's N (PDEATHSIG) and H's zombie child all come to us. */
	while (wait(NULL) > 0 || errno == EINTR)
		;
	if (errno != ECHILD)
		die("wait");
}

static void scen_orphan_job(int with_tty, int b UNUSED)
{
	struct orphan_job j;
	uint64_t t0, t1, t[2];
	char c = 'p';
	int r;
	long i;

	orphan_job_start(&j, with_tty);
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		if (with_tty) {
			xwrite(j.in, &c, 1);
			xread(j.out, t, sizeof(t));
			report(o.m, t[0], t[1]);
			continue;
		}
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			if (kill(j.x, SIGTSTP))
				die("kill(X, SIGTSTP)");
			xwrite(j.in, &c, 1);
			xread(j.out, &c, 1);
		}
		t1 = now_ns();
		report(o.m, t0, t1);
	}
	if (proc_stat(j.x, NULL, NULL) == 'T')
		die("X stopped: its group is not orphaned");
	orphan_job_end(&j);
}

static const struct scenario jobctl_scenarios[] = {
	{ "setpgid", 1000, 200, scen_setpgid, 0, KIDS_HOME,
	  .help = "setpgid() into a group of N and out, x M" },
	{ "setpgid-kids", 1000, 200, scen_setpgid, 1, KIDS_HOME,
	  .help = "the same, the mover has N children" },
	{ "setpgid-kids-away", 1000, 200, scen_setpgid, 1, KIDS_AWAY,
	  .help = "the same, the mover's N children in another group" },
	{ "setpgid-kids-spread", 1000, 200, scen_setpgid, 1, KIDS_SPREAD,
	  .help = "the same, each of the mover's N children in its own group" },
	{ "setsid", 1000, 100, scen_setsid, 0, 0,
	  .help = "setsid() beside N in the group and session" },
	{ "tstp-orphan", 1000, 100, scen_orphan_job, 0, 0,
	  .help = "SIGTSTP to an orphaned group of N" },
	{ "ttyin-orphan", 1000, 200, scen_orphan_job, 1, 0,
	  .help = "background tty read (EIO), orphaned N" },
};
