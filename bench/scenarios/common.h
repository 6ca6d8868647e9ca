/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the scenario families of reapbench share: the options, the output
 * lines, the scenario table's entry, and the ways children are made and
 * brought into a state before the clock starts.
 *
 * reapbench.c is one translation unit: it includes reapbench.h, this file
 * and then every family file (scenarios/<family>.c), whose tables it joins.
 */
#ifndef FASTREAP_SCENARIOS_COMMON_H
#define FASTREAP_SCENARIOS_COMMON_H

#include <pthread.h>
#include <sys/ptrace.h>

struct opts {
	const char *scen;	/* the name printed in the first column */
	long n, m;
	int reps, threads, csv, verbose;
	long interval_us;
	char **cmd;		/* after "--": the tracer or the shell */
};

static struct opts o;

/*
 * How ./fastreap bench runs a scenario: at every N, at N = 0 only (an
 * everyday path, whose question is its cost where nothing scales), as the
 * workload of a real program (lib/bench.py's CLIENTS), or not at all.
 */
enum bench_runs { RUNS_EVERY_N, RUNS_N0, RUNS_CLIENT, RUNS_MANUAL };

struct scenario {
	const char *name;
	long n, m;		/* default N and M; ./fastreap bench's too */
	void (*run)(int a, int b);
	int a, b;		/* run()'s arguments */
	const char *help;
	int kids_per_n;		/* long-lived children per N; 0 means 1 */
	enum bench_runs runs;
	int idle_sibling;	/* run in a thread with an idle sibling */
};

/* The parameter list of a run() that takes no arguments. */
#define UNUSED __attribute__((unused))
#define NO_ARGS int a UNUSED, int b UNUSED

static void header(const char *extra)
{
	if (o.csv)
		printf("scenario,N,M,total_ns,ns_per_op%s\n", extra ? extra : "");
}

static void report(long m, uint64_t t0, uint64_t t1)
{
	uint64_t total = t1 - t0;

	printf("%s,%ld,%ld,%llu,%llu\n", o.scen, o.n, m,
	       (unsigned long long)total,
	       (unsigned long long)(m ? total / m : 0));
	fflush(stdout);
}

static void expect_pid(pid_t pid, const char *what)
{
	if (pid <= 0)
		die("%s returned %d", what, pid);
}

/* Fail unless @st, as a wait returned it for @pid, is what @ok says. */
static void expect_status(int ok, int st, pid_t pid)
{
	if (!ok) {
		errno = 0;
		die("unexpected status %#x from %d", st, pid);
	}
}

/* N long-lived sleeping children, in a stack pool of their own. */
static pid_t *long_lived(long n, struct stackpool *pool)
{
	pid_t *pids = xcalloc(n, sizeof(*pids));

	pool_init(pool, n);
	make_sleepers(pids, n, pool);
	return pids;
}

/* Start M gate children (they exit when released); returns the gate. */
static void make_gated(pid_t *pids, long m, struct stackpool *pool, int gate[2])
{
	long i;

	if (pipe(gate))
		die("pipe");
	for (i = 0; i < m; i++)
		pids[i] = spawn_child(child_gate, gate_arg(gate),
				      pool_top(pool, i), 0);
}

/* Release gate children and wait until they are all zombies. */
static void release_gated(const pid_t *pids, long m, int gate[2])
{
	close(gate[1]);
	wait_ready(pids, m, WEXITED);
	close(gate[0]);
}

static int child_exit0(void *arg)
{
	(void)arg;
	syscall(SYS_exit_group, 0);
	return 0;
}

/* Put @pids into a process group of their own, led by the first. */
static void own_pgrp(const pid_t *pids, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (setpgid(pids[i], pids[0]))
			die("setpgid");
}

/*
 * What the N long-lived children are doing meanwhile. Each kind has
 * nothing to report to the timed waits: live children, and children whose
 * report the timed wait cannot take (a stop without WUNTRACED, a continue
 * without WCONTINUED, a clone child's exit without __WCLONE, another
 * process group's exit for waitpid(0)).
 */
enum idle {
	IDLE_LIVE,		/* sleeping */
	IDLE_OTHER_PGRP,	/* sleeping, in a process group of their own */
	IDLE_STOPPED,		/* stopped by SIGSTOP */
	IDLE_CONTINUED,		/* stopped, then continued by SIGCONT */
	IDLE_CLONE_ZOMBIE,	/* exited clone children (exit signal 0) */
	IDLE_OTHER_PGRP_ZOMBIE,	/* exited, in a process group of their own */
	IDLE_OTHER_PGRP_STOPPED, /* stopped, in a process group of their own */
};

/* A child whose exit signal is 0: only __WCLONE or __WALL waits see it. */
static pid_t spawn_clone_child(void *stack_top)
{
	pid_t pid;

	if (g_use_fork || !stack_top) {
		pid = syscall(SYS_clone, 0, NULL, NULL, NULL, 0);
		if (pid == 0)
			syscall(SYS_exit_group, 0);
	} else {
		pid = clone(child_exit0, stack_top, CLONE_VM, NULL);
	}
	if (pid < 0)
		die("spawning a clone child");
	return pid;
}

static void make_idle(pid_t *pids, long n, struct stackpool *pool,
		      enum idle kind)
{
	int gate[2];
	long i;

	switch (kind) {
	case IDLE_CLONE_ZOMBIE:
		for (i = 0; i < n; i++)
			pids[i] = spawn_clone_child(pool_top(pool, i));
		wait_ready(pids, n, WEXITED);
		return;
	case IDLE_OTHER_PGRP_ZOMBIE:
		make_gated(pids, n, pool, gate);
		own_pgrp(pids, n);
		release_gated(pids, n, gate);
		return;
	default:
		break;
	}
	make_sleepers(pids, n, pool);
	if (kind == IDLE_OTHER_PGRP || kind == IDLE_OTHER_PGRP_STOPPED)
		own_pgrp(pids, n);
	if (kind == IDLE_STOPPED || kind == IDLE_CONTINUED ||
	    kind == IDLE_OTHER_PGRP_STOPPED) {
		for (i = 0; i < n; i++)
			kill(pids[i], SIGSTOP);
		wait_ready(pids, n, WSTOPPED);
	}
	if (kind == IDLE_CONTINUED) {
		for (i = 0; i < n; i++)
			kill(pids[i], SIGCONT);
		wait_ready(pids, n, WCONTINUED);
	}
}

/*
 * Each repeat, time M polls waitpid(@pid, WNOHANG | @flags) (@what) that
 * must find nothing: return 0, or with @echild_ok fail with ECHILD.
 */
static void time_empty_polls(pid_t pid, int flags, int echild_ok,
			     const char *what)
{
	uint64_t t0, t1;
	pid_t ret;
	int r, st;
	long i;

	header(NULL);
	for (r = 0; r < o.reps; r++) {
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			ret = waitpid(pid, &st, WNOHANG | flags);
			if (ret != 0 && !(echild_ok && errno == ECHILD))
				die("%s found something (returned %d)", what,
				    ret);
		}
		t1 = now_ns();
		report(o.m, t0, t1);
	}
}

/* Where a holder's sleepers live: its group, one other group, a group each. */
enum kids_group { KIDS_HOME, KIDS_AWAY, KIDS_SPREAD };

/*
 * A child that holds N sleepers of its own (they die with it) until we
 * close our end of its pipe, or die. With @setpgrp_self it leads a group
 * of its own first.
 */
static pid_t make_holder(long n, int setpgrp_self, enum kids_group kids)
{
	int ready[2], hold[2];
	pid_t pid;
	char c = 0;

	if (pipe(ready) || pipe(hold))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct stackpool gp;
		pid_t *gk;
		long i;

		if (setpgrp_self && setpgid(0, 0))
			die("setpgid");
		gk = long_lived(n, &gp);
		for (i = 0; kids != KIDS_HOME && i < n; i++)
			if (setpgid(gk[i], gk[kids == KIDS_AWAY ? 0 : i]))
				die("setpgid(kid)");
		close(hold[1]);
		close(ready[0]);
		xwrite(ready[1], &c, 1);
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(hold[0]);
	close(ready[1]);
	xread(ready[0], &c, 1);
	close(ready[0]);
	return pid;
}

/*
 * The fields of /proc/PID/stat after the command name ("S 1 2 ..."), read
 * into @buf; NULL when the process is gone.
 */
static const char *proc_stat_fields(pid_t pid, char *buf, size_t size)
{
	char path[64], *p;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len <= 0)
		return NULL;
	buf[len] = 0;
	p = strrchr(buf, ')'); /* the command name may hold anything */
	return p && p[1] ? p + 2 : NULL;
}

/*
 * State and CPU time (user, system; ns) of process @pid, from /proc/PID/stat;
 * returns the state letter, or 0 when the process is gone. The kernel
 * counts CPU time in ticks (4 ms at HZ=250), so it means something only
 * over many ticks; it tells a client's own work (user) from the kernel's
 * (system, where wait() walks its lists).
 */
static char proc_stat(pid_t pid, uint64_t *user, uint64_t *sys)
{
	unsigned long long ut, st;
	long hz = sysconf(_SC_CLK_TCK);
	char buf[1024], state;
	const char *p = proc_stat_fields(pid, buf, sizeof(buf));

	if (!p || sscanf(p, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu", &state, &ut, &st) != 3)
		return 0;
	if (user)
		*user = ut * (1000000000ull / hz);
	if (sys)
		*sys = st * (1000000000ull / hz);
	return state;
}

/*
 * An idle sibling thread: a thread's __WNOTHREAD waits are then for its own
 * children only, where in a single-threaded process they take the same
 * children as any wait.
 */
static struct {
	pthread_t th;
	int done[2];
} idle_sibling;

static void *idle_sibling_main(void *arg)
{
	char c;

	(void)arg;
	xread(idle_sibling.done[0], &c, 1);
	return NULL;
}

static void start_idle_sibling(void)
{
	if (pipe(idle_sibling.done) ||
	    pthread_create(&idle_sibling.th, NULL, idle_sibling_main, NULL))
		die("sibling thread");
}

static void stop_idle_sibling(void)
{
	xwrite(idle_sibling.done[1], "q", 1);
	pthread_join(idle_sibling.th, NULL);
}

#endif
