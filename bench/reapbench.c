// SPDX-License-Identifier: GPL-2.0
/*
 * reapbench: time the wait() family with N long-lived children in the way.
 *
 *   reapbench SCENARIO [-n N] [-m M] [-r REPEATS] [-t THREADS] [-i USEC]
 *             [--fork] [--csv] [--name NAME] [-v] [-- TRACER|SHELL ...]
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
 * Build: gcc -static -O2 -Wall -Wextra -pthread bench/reapbench.c -o reapbench
 */
#define _GNU_SOURCE
#include "reapbench.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>

struct opts {
	const char *scen;
	long n, m;
	int reps, threads, csv, verbose, n_set;
	long interval_us;
};

static struct opts o;

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

static void expect_pid(pid_t pid, const char *what)
{
	if (pid <= 0)
		die("%s returned %d", what, pid);
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

/* ---- what the N long-lived children are doing meanwhile ---- */

/*
 * Each kind has nothing to report to the timed waits: live children, and
 * children whose report the timed wait cannot take (a stop without
 * WUNTRACED, a continue without WCONTINUED, a clone child's exit without
 * __WCLONE, another process group's exit for waitpid(0)).
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

static int child_exit0(void *arg)
{
	(void)arg;
	syscall(SYS_exit_group, 0);
	return 0;
}

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

/* Put @pids into a process group of their own, led by the first. */
static void own_pgrp(const pid_t *pids, long n)
{
	long i;

	for (i = 0; i < n; i++)
		if (setpgid(pids[i], pids[0]))
			die("setpgid");
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

/* ---- burst, peek, pgrp, idle-*, nothread-burst: reap M zombies behind N idle children ---- */

enum reap_style { REAP_WAIT, REAP_PEEK, REAP_PGRP, REAP_NOTHREAD };

static void scen_reap(enum reap_style style, enum idle idle)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	pid_t *sht = xcalloc(o.m, sizeof(*sht));
	struct stackpool lp, sp;
	int gate[2], r, st;
	long i;
	uint64_t t0, t1;
	siginfo_t si;

	pool_init(&lp, o.n);
	pool_init(&sp, o.m);
	make_idle(lng, o.n, &lp, idle);
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		make_gated(sht, o.m, &sp, gate);
		release_gated(sht, o.m, gate);
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			switch (style) {
			case REAP_WAIT:
				expect_pid(wait(&st), "wait");
				break;
			case REAP_PGRP:
				expect_pid(waitpid(0, &st, 0), "waitpid(0)");
				break;
			case REAP_NOTHREAD:
				expect_pid(wait4(-1, &st, __WNOTHREAD, NULL),
					   "wait4(-1, __WNOTHREAD)");
				break;
			case REAP_PEEK:
				si.si_pid = 0;
				if (waitid(P_ALL, 0, &si,
					   WEXITED | WNOHANG | WNOWAIT))
					die("waitid(P_ALL)");
				expect_pid(si.si_pid, "waitid(P_ALL, WNOWAIT)");
				if (waitid(P_PID, si.si_pid, &si, WEXITED))
					die("waitid(P_PID)");
				break;
			}
		}
		t1 = now_ns();
		report(o.m, t0, t1);
	}
	kill_reap(lng, o.n);
}

/*
 * ---- nothread, thread-nothread-both(-stopped): __WNOTHREAD polls while a
 * sibling thread holds N zombies, or N stopped children ----
 *
 * nothread: we have one live child of our own, so that every poll returns 0.
 * thread-nothread-both: we have max(N, 1) live children of our own (at N = 0
 * the same as nothread). Our N children have nothing to report and our
 * sibling's N queued zombies are not ours: the patched wait passes over
 * them by count (it took turns between both before patch 15, O(N)).
 * thread-nothread-both-stopped: the sibling's N children are stopped and
 * we poll with WUNTRACED: the patched wait passes over the sibling's N
 * queued stops by count (it took turns between both before patch 16, O(N)).
 */

struct sibling {
	pid_t *pids;
	struct stackpool pool;
	int stopped;
	int ready[2], done[2];
};

static void *sibling_main(void *arg)
{
	struct sibling *sb = arg;
	char c = 0;
	long i;

	/* Children of this thread: __WNOTHREAD waits of another skip them. */
	if (sb->stopped) {
		make_idle(sb->pids, o.n, &sb->pool, IDLE_STOPPED);
	} else {
		for (i = 0; i < o.n; i++)
			sb->pids[i] = spawn_child(child_exit0, NULL,
						  pool_top(&sb->pool, i), 0);
		wait_ready(sb->pids, o.n, WEXITED);
	}
	xwrite(sb->ready[1], &c, 1);
	/* Stay: the children of an exiting thread go to a sibling. */
	xread(sb->done[0], &c, 1);
	return NULL;
}

static void scen_nothread(long n_own, int stopped)
{
	struct sibling sb = { .pids = xcalloc(o.n, sizeof(pid_t)),
			      .stopped = stopped };
	pid_t *own = xcalloc(n_own, sizeof(*own));
	struct stackpool lp;
	pthread_t th;
	char c = 0;

	/* Live children of our own (n_own >= 1), so that every poll returns 0. */
	pool_init(&lp, n_own);
	make_sleepers(own, n_own, &lp);
	pool_init(&sb.pool, o.n);
	if (pipe(sb.ready) || pipe(sb.done) ||
	    pthread_create(&th, NULL, sibling_main, &sb))
		die("sibling thread");
	xread(sb.ready[0], &c, 1);
	time_empty_polls(-1, __WNOTHREAD | (stopped ? WUNTRACED : 0), 0,
			 "waitpid(-1, WNOHANG|__WNOTHREAD)");
	xwrite(sb.done[1], &c, 1);
	pthread_join(th, NULL);
	kill_reap(sb.pids, o.n);
	kill_reap(own, n_own);
}

/*
 * ---- thread-nothread-empty, thread-nothread-burst: nothread-empty and
 * nothread-burst in a thread with an idle sibling, whose __WNOTHREAD waits
 * are for its own children only ----
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

/* ---- pgrp-grandkids: waitpid(0) polls; our child's N children share our group ---- */

static void scen_pgrp_grandkids(void)
{
	int ready[2], hold[2];
	pid_t child;
	char c = 0;

	if (pipe(ready) || pipe(hold))
		die("pipe");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		struct stackpool gp;
		pid_t *gk = xcalloc(o.n, sizeof(pid_t));

		/* They die with us (PR_SET_PDEATHSIG in child_sleep). */
		pool_init(&gp, o.n);
		make_sleepers(gk, o.n, &gp);
		close(hold[1]);
		xwrite(ready[1], &c, 1);
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(hold[0]);
	xread(ready[0], &c, 1);
	time_empty_polls(0, 0, 0, "waitpid(0, WNOHANG)");
	kill_reap(&child, 1);
}

/*
 * ---- pgrp-both: waitpid(0) polls; N live in our group, N zombies in
 * another ----
 *
 * A P_PGID poll whose group has N members with nothing to report while N
 * exits of another group are queued: every poll returns 0, and stock walks
 * all 2N children for it. The N live ones are made first, so that our
 * first child is in our group; the N zombies as pgrp-zombies makes its N,
 * in a group of their own. At N = 0 one live child stays in our group, so
 * that the polls still return 0 (as pgrp-grandkids at N = 0).
 * pgrp-both-stopped: the same with WUNTRACED, the N of the other group
 * stopped (@others) instead of exited.
 */
static void scen_pgrp_both(enum idle others, int flags)
{
	long n_live = o.n ? o.n : 1;
	pid_t *live = xcalloc(n_live, sizeof(*live));
	pid_t *others_pids = xcalloc(o.n, sizeof(*others_pids));
	struct stackpool lp, op;

	pool_init(&lp, n_live);
	pool_init(&op, o.n);
	make_idle(live, n_live, &lp, IDLE_LIVE);
	make_idle(others_pids, o.n, &op, others);
	time_empty_polls(0, flags, 0, "waitpid(0, WNOHANG)");
	kill_reap(others_pids, o.n);
	kill_reap(live, n_live);
}

/* ---- threads-stopped: 4 blocked wait(-1) threads reap M among N stopped ---- */

#define WAITERS		4
#define WAITER_QUIT	42	/* exit code that ends a waiter thread */

static struct {
	atomic_long reaped;
	long target;
	int done[2];
} bw;

static void *blocked_waiter(void *arg)
{
	int st;
	pid_t pid;
	char c = 0;

	(void)arg;
	for (;;) {
		pid = wait(&st);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			die("wait");
		}
		if (WIFEXITED(st) && WEXITSTATUS(st) == WAITER_QUIT)
			return NULL;
		if (atomic_fetch_add(&bw.reaped, 1) + 1 == bw.target)
			xwrite(bw.done[1], &c, 1);
	}
}

static int child_quit(void *arg)
{
	(void)arg;
	syscall(SYS_exit_group, WAITER_QUIT);
	return 0;
}

static void scen_threads_stopped(void)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	pid_t *sht = xcalloc(o.m, sizeof(*sht));
	struct stackpool lp, sp;
	pthread_t th[WAITERS];
	uint64_t t0, t1;
	int gate[2], r, k;
	pid_t anchor;
	char c;

	pool_init(&lp, o.n + 1);
	pool_init(&sp, o.m > WAITERS ? o.m : WAITERS);
	make_idle(lng, o.n, &lp, IDLE_STOPPED);
	/* A live child keeps the waiters from -ECHILD, even when N is 0. */
	make_sleepers(&anchor, 1, &lp);
	if (pipe(bw.done))
		die("pipe");
	for (k = 0; k < WAITERS; k++)
		if (pthread_create(&th[k], NULL, blocked_waiter, NULL))
			die("pthread_create");
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		atomic_store(&bw.reaped, 0);
		bw.target = o.m;
		make_gated(sht, o.m, &sp, gate);
		/* From the release of M children to their last reap. */
		t0 = now_ns();
		close(gate[1]);
		if (o.m)
			xread(bw.done[0], &c, 1);
		t1 = now_ns();
		close(gate[0]);
		report(o.m, t0, t1);
	}
	for (k = 0; k < WAITERS; k++)
		spawn_child(child_quit, NULL, pool_top(&sp, k), 0);
	for (k = 0; k < WAITERS; k++)
		pthread_join(th[k], NULL);
	kill_reap(lng, o.n);
	kill_reap(&anchor, 1);
}

/*
 * ---- empty, nothread-empty: WNOHANG polls that find nothing; the second
 * with __WNOTHREAD, which in our single-threaded process waits for the same
 * children ----
 */

static void scen_empty(int flags)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	struct stackpool lp;

	pool_init(&lp, o.n);
	make_sleepers(lng, o.n, &lp);
	/* At N = 0 we have no children: ECHILD. */
	time_empty_polls(-1, flags, o.n == 0, "waitpid(-1, WNOHANG)");
	kill_reap(lng, o.n);
}

/* ---- stopped / continued: M stop or continue reports ---- */

static void scen_stopcont(int continued)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	pid_t *sht = xcalloc(o.m, sizeof(*sht));
	struct stackpool lp, sp;
	int r, st;
	long i;
	pid_t pid;
	uint64_t t0, t1;

	pool_init(&lp, o.n);
	pool_init(&sp, o.m);
	make_sleepers(lng, o.n, &lp);
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		make_sleepers(sht, o.m, &sp);
		for (i = 0; i < o.m; i++)
			kill(sht[i], SIGSTOP);
		wait_ready(sht, o.m, WSTOPPED);
		if (continued) {
			/* Consume the stop reports (by pid), then continue. */
			for (i = 0; i < o.m; i++)
				if (waitpid(sht[i], &st, WUNTRACED) != sht[i])
					die("waitpid stop report");
			for (i = 0; i < o.m; i++)
				kill(sht[i], SIGCONT);
			wait_ready(sht, o.m, WCONTINUED);
		}
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			pid = waitpid(-1, &st, continued ? WCONTINUED : WUNTRACED);
			expect_pid(pid, "waitpid(-1)");
			if (continued ? !WIFCONTINUED(st) : !WIFSTOPPED(st)) {
				errno = 0;
				die("unexpected status %#x from %d", st, pid);
			}
		}
		t1 = now_ns();
		report(o.m, t0, t1);
		kill_reap(sht, o.m);
	}
	kill_reap(lng, o.n);
}

/* ---- ptrace: a tracer that is not the parent reaps exiting tracees ---- */


/*
 * The parent P makes N long-lived children and REPEATS batches of M gated
 * children and sends their pids to the tracer T (this process). T seizes
 * the batches first (last batch first) and the long-lived children last,
 * so the long-lived tracees are at the head of T's ptraced list. For each
 * batch, T asks P to open its gate and reaps the M exiting tracees with
 * wait(-1, __WALL). P reaps its own children only at the end.
 */
static void scen_ptrace(void)
{
	long total = o.n + (long)o.reps * o.m, i;
	pid_t *pids = xcalloc(total, sizeof(*pids));
	int topar[2], tot[2], r, st;
	pid_t parent, pid;
	uint64_t t0, t1;
	char c;

	if (pipe(topar) || pipe(tot))
		die("pipe");
	parent = fork();
	if (parent < 0)
		die("fork");
	if (parent == 0) {
		struct stackpool pool;
		int (*gates)[2] = xcalloc(o.reps, sizeof(*gates));

		close(topar[1]);
		close(tot[0]);
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
		pool_init(&pool, total);
		make_sleepers(pids, o.n, &pool);
		for (r = 0; r < o.reps; r++) {
			if (pipe(gates[r]))
				die("pipe");
			for (i = 0; i < o.m; i++) {
				long k = o.n + (long)r * o.m + i;

				pids[k] = spawn_child(child_gate,
						      gate_arg(gates[r]),
						      pool_top(&pool, k), 0);
			}
			close(gates[r][0]);
		}
		xwrite(tot[1], pids, total * sizeof(*pids));
		for (r = 0; r < o.reps; r++) {
			xread(topar[0], &c, 1);
			close(gates[r][1]);
			xwrite(tot[1], &c, 1);
		}
		xread(topar[0], &c, 1);
		for (i = 0; i < total; i++)
			waitpid(pids[i], NULL, 0);
		_exit(0);
	}
	close(topar[0]);
	close(tot[1]);
	xread(tot[0], pids, total * sizeof(*pids));
	for (r = o.reps - 1; r >= 0; r--)
		for (i = 0; i < o.m; i++)
			if (ptrace(PTRACE_SEIZE, pids[o.n + (long)r * o.m + i],
				   0, 0))
				die("PTRACE_SEIZE");
	for (i = 0; i < o.n; i++)
		if (ptrace(PTRACE_SEIZE, pids[i], 0, 0))
			die("PTRACE_SEIZE");
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		pid_t *batch = pids + o.n + (long)r * o.m;

		xwrite(topar[1], "g", 1);
		xread(tot[0], &c, 1);
		wait_ready(batch, o.m, WEXITED);
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			pid = waitpid(-1, &st, __WALL);
			expect_pid(pid, "waitpid(-1, __WALL)");
		}
		t1 = now_ns();
		report(o.m, t0, t1);
	}
	kill_reap(pids, o.n);
	xwrite(topar[1], "q", 1);
	waitpid(parent, NULL, 0);
}

/* ---- threads: a 64-thread waiter whose threads forked the children ---- */

static struct {
	pthread_barrier_t bar;
	int job; /* 0 quit, 1 make sleepers, 2 make gated */
	pid_t *lng, *sht;
	struct stackpool lp, sp;
	int gate[2];
} tw;

static void thread_share(int k)
{
	long i;

	if (tw.job == 1)
		for (i = k; i < o.n; i += o.threads)
			tw.lng[i] = spawn_child(child_sleep, NULL,
						pool_top(&tw.lp, i), 0);
	else if (tw.job == 2)
		for (i = k; i < o.m; i += o.threads)
			tw.sht[i] = spawn_child(child_gate, gate_arg(tw.gate),
						pool_top(&tw.sp, i), 0);
}

static void *thread_main(void *arg)
{
	int k = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&tw.bar);
		if (!tw.job)
			return NULL;
		thread_share(k);
		pthread_barrier_wait(&tw.bar);
	}
}

static void thread_job(int job)
{
	tw.job = job;
	pthread_barrier_wait(&tw.bar);
	if (!job)
		return;
	thread_share(0);
	pthread_barrier_wait(&tw.bar);
}

static void scen_threads(void)
{
	pthread_t *th = xcalloc(o.threads, sizeof(*th));
	pthread_attr_t attr;
	int r, st, k;
	long i;
	uint64_t t0, t1;

	tw.lng = xcalloc(o.n, sizeof(pid_t));
	tw.sht = xcalloc(o.m, sizeof(pid_t));
	pool_init(&tw.lp, o.n);
	pool_init(&tw.sp, o.m);
	pthread_barrier_init(&tw.bar, NULL, o.threads);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (k = 1; k < o.threads; k++)
		if (pthread_create(&th[k], &attr, thread_main,
				   (void *)(intptr_t)k))
			die("pthread_create");
	thread_job(1);
	header(",threads");
	for (r = 0; r < o.reps; r++) {
		if (pipe(tw.gate))
			die("pipe");
		thread_job(2);
		release_gated(tw.sht, o.m, tw.gate);
		t0 = now_ns();
		for (i = 0; i < o.m; i++)
			expect_pid(wait(&st), "wait");
		t1 = now_ns();
		printf("%s,%ld,%ld,%llu,%llu,%d\n", o.scen, o.n, o.m,
		       (unsigned long long)(t1 - t0),
		       (unsigned long long)((t1 - t0) / (o.m ? o.m : 1)),
		       o.threads);
		fflush(stdout);
	}
	kill_reap(tw.lng, o.n);
	thread_job(0);
	for (k = 1; k < o.threads; k++)
		pthread_join(th[k], NULL);
}

/* ---- pidns: tear down a pid namespace of N processes ---- */

static int ns_init(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct stackpool pool;
	pid_t *pids = xcalloc(o.n, sizeof(*pids));

	pool_init(&pool, o.n);
	make_sleepers(pids, o.n - 1, &pool);
	if (write(fd, "r", 1) != 1)
		_exit(1);
	child_sleep(NULL);
	return 0;
}

static void scen_pidns(void)
{
	int flags = CLONE_NEWPID | (geteuid() ? CLONE_NEWUSER : 0);
	size_t stk = 1 << 20;
	char *stack = mmap(NULL, stk, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	int rp[2], r;
	pid_t init;
	char c;
	uint64_t t0, t1;

	if (stack == MAP_FAILED)
		die("mmap");
	if (o.n < 1)
		o.n = 1;
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		if (pipe(rp))
			die("pipe");
		/* No CLONE_VM: the ns init gets its own copy of memory. */
		init = clone(ns_init, stack + stk, flags | SIGCHLD,
			     (void *)(intptr_t)rp[1]);
		if (init < 0)
			die("clone(CLONE_NEWPID)");
		close(rp[1]);
		if (read(rp[0], &c, 1) != 1)
			die("pid namespace init failed");
		close(rp[0]);
		t0 = now_ns();
		kill(init, SIGKILL);
		if (waitpid(init, NULL, 0) != init)
			die("waitpid(ns init)");
		t1 = now_ns();
		report(o.n, t0, t1);
	}
}

/* ---- forkwait: fork + _exit + waitpid(pid), the common path ---- */

static void scen_forkwait(void)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	struct stackpool lp;
	int r, st;
	long i;
	pid_t pid;
	uint64_t t0, t1;

	pool_init(&lp, o.n);
	make_sleepers(lng, o.n, &lp);
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			pid = fork();
			if (pid == 0)
				_exit(0);
			if (pid < 0)
				die("fork");
			if (waitpid(pid, &st, 0) != pid)
				die("waitpid");
		}
		t1 = now_ns();
		report(o.m, t0, t1);
	}
	kill_reap(lng, o.n);
}

/* ---- mixed: a container init with services and a churn of short jobs ---- */

struct mixed_shm {
	atomic_long exited;
	uint64_t ts[]; /* indexed by pid: CLOCK_MONOTONIC just before _exit */
};

static struct mixed_shm *mshm;
static long mshm_pids;

static int mixed_job(void *arg)
{
	long pid = syscall(SYS_getpid);

	(void)arg;
	if (pid < mshm_pids)
		mshm->ts[pid] = now_ns();
	atomic_fetch_add(&mshm->exited, 1);
	syscall(SYS_exit_group, 0);
	return 0;
}

/*
 * The spawner is a child of the reaper; it starts each job with
 * clone(CLONE_PARENT|CLONE_VFORK|CLONE_VM), so jobs are the reaper's
 * children (queued behind the N services) and one stack is enough.
 */
static void mixed_spawner(void)
{
	char *stack = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	uint64_t next = now_ns(), t, step = o.interval_us * 1000ull;
	struct timespec ts;
	long j;

	if (stack == MAP_FAILED)
		die("mmap");
	for (j = 0; j < o.m; j++) {
		if (clone(mixed_job, stack + 64 * 1024,
			  CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD,
			  NULL) < 0)
			die("clone(CLONE_PARENT)");
		next += step;
		t = now_ns();
		if (next < t) {
			next = t; /* no catch-up bursts: a steady churn */
			continue;
		}
		ts.tv_sec = next / 1000000000ull;
		ts.tv_nsec = next % 1000000000ull;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
	}
	_exit(0);
}

static void scen_mixed(void)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	uint64_t *lat = xcalloc(o.m, sizeof(*lat));
	uint64_t *samp_t = xcalloc(o.m, sizeof(uint64_t));
	long *samp_b = xcalloc(o.m, sizeof(long));
	struct stackpool lp;
	long reaped, backlog, bmax, i, nb;
	double bsum;
	int r, st, spawner_done, blocking;
	pid_t spawner, pid;
	uint64_t t0, t1, t;
	size_t sz;

	mshm_pids = read_long("/proc/sys/kernel/pid_max") + 1;
	if (mshm_pids < 32769)
		mshm_pids = 4194305;
	sz = sizeof(*mshm) + mshm_pids * sizeof(uint64_t);
	mshm = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mshm == MAP_FAILED)
		die("mmap shared");
	pool_init(&lp, o.n);
	make_sleepers(lng, o.n, &lp);
	header(",p50_ns,p99_ns,max_ns,backlog_max,backlog_mean");
	for (r = 0; r < o.reps; r++) {
		atomic_store(&mshm->exited, 0);
		reaped = 0;
		bmax = 0;
		bsum = 0;
		spawner_done = 0;
		t0 = now_ns();
		spawner = fork();
		if (spawner < 0)
			die("fork");
		if (spawner == 0)
			mixed_spawner();
		/* tini: block in wait(-1), then WNOHANG until nothing is left */
		while (reaped < o.m || !spawner_done) {
			blocking = 1;
			for (;;) {
				pid = waitpid(-1, &st, blocking ? 0 : WNOHANG);
				if (pid < 0 && errno == EINTR)
					continue;
				if (pid < 0 && errno == ECHILD &&
				    reaped == o.m && spawner_done)
					break;
				if (pid < 0)
					die("waitpid(-1)");
				if (pid == 0)
					break;
				blocking = 0;
				t = now_ns();
				if (pid == spawner) {
					spawner_done = 1;
					continue;
				}
				if (reaped >= o.m) {
					errno = 0;
					die("reaped unexpected child %d", pid);
				}
				lat[reaped] = pid < mshm_pids &&
					t > mshm->ts[pid] ?
					t - mshm->ts[pid] : 0;
				reaped++;
				backlog = atomic_load(&mshm->exited) - reaped;
				if (backlog < 0)
					backlog = 0;
				samp_t[reaped - 1] = t - t0;
				samp_b[reaped - 1] = backlog;
				if (backlog > bmax)
					bmax = backlog;
				bsum += backlog;
			}
		}
		t1 = now_ns();
		if (o.verbose) {
			/* zombie backlog over time, 20 buckets, max per bucket */
			uint64_t span = t1 - t0, b = span / 20 + 1;

			for (nb = 0; nb < 20; nb++) {
				long mx = 0;

				for (i = 0; i < o.m; i++)
					if (samp_t[i] / b == (uint64_t)nb &&
					    samp_b[i] > mx)
						mx = samp_b[i];
				printf("# backlog t_ms=%.1f zombies_max=%ld\n",
				       nb * b / 1e6, mx);
			}
		}
		qsort(lat, o.m, sizeof(*lat), cmp_u64);
		printf("%s,%ld,%ld,%llu,%llu,%llu,%llu,%llu,%ld,%.1f\n",
		       o.scen, o.n, o.m, (unsigned long long)(t1 - t0),
		       (unsigned long long)((t1 - t0) / (o.m ? o.m : 1)),
		       (unsigned long long)(o.m ? lat[o.m / 2] : 0),
		       (unsigned long long)(o.m ? lat[(o.m * 99) / 100] : 0),
		       (unsigned long long)(o.m ? lat[o.m - 1] : 0),
		       bmax, o.m ? bsum / o.m : 0.0);
		fflush(stdout);
	}
	kill_reap(lng, o.n);
}

/* ---- clients: real programs around reapbench (see bench/README.md) ---- */

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
	char path[64], buf[1024], *p, state;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p || sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu", &state, &ut, &st) != 3)
		return 0;
	if (user)
		*user = ut * (1000000000ull / hz);
	if (sys)
		*sys = st * (1000000000ull / hz);
	return state;
}

static void report_cpu(long m, uint64_t t0, uint64_t t1, const uint64_t c0[2],
		       const uint64_t c1[2])
{
	printf("%s,%ld,%ld,%llu,%llu,%llu,%llu\n", o.scen, o.n, m,
	       (unsigned long long)(t1 - t0),
	       (unsigned long long)((t1 - t0) / (m ? m : 1)),
	       (unsigned long long)((c1[0] - c0[0]) / (m ? m : 1)),
	       (unsigned long long)((c1[1] - c0[1]) / (m ? m : 1)));
	fflush(stdout);
}

/*
 * orphans: the workload of a real init (tini, dumb-init, catatonit) that is
 * pid 1 of a new pid namespace, run as its only child:
 *
 *   unshare -fp --mount-proc tini -- reapbench orphans -n N -m M
 *
 * N long-lived processes are orphaned first (their parent exits), so the
 * init adopts them at the head of its children list, behind only us. Each
 * repeat then orphans M gated children behind them, opens the gate, and
 * times until the init has reaped all M with its own loop. Timed: from the
 * burst of exits until the last one is reaped (as reenact).
 *
 * The observer must not cost O(N) per check (/proc scans do), nor take the
 * CPU from the init. It holds a pidfd per child in an epoll set that asks
 * for nothing but EPOLLHUP: an exit wakes pidfd waiters with the key
 * EPOLLIN, which epoll filters out; the reap (detach_pid()) wakes them with
 * no key, and pidfd_poll() then says EPOLLHUP. So it wakes at most once per
 * reap, at O(1) cost, the same on every kernel. And it runs SCHED_IDLE
 * (weight 3 against 1024), so with one CPU it runs only when the init and
 * the children are asleep: the clock stops when the init has finished its
 * reaping loop, including the last WNOHANG poll that finds nothing.
 * Extra columns: the init's user and system CPU time per reaped child.
 */
static void scen_orphans(void)
{
	struct sched_param sp = { 0 };
	struct stackpool pool;
	struct epoll_event ev, *evs = xcalloc(o.m, sizeof(*evs));
	struct rlimit rl;
	pid_t *sht = xcalloc(o.m, sizeof(*sht)), pid;
	int *pfd = xcalloc(o.m, sizeof(*pfd)), gate[2], ep, r, k;
	uint64_t t0, t1, c0[2], c1[2];
	long i, got;

	if (getpid() == 1 || getppid() != 1) {
		errno = EINVAL;
		die("orphans: run me as the only child of a pid namespace's "
		    "init (unshare -fp --mount-proc tini -- reapbench orphans)");
	}
	/* One pidfd per child of a burst. */
	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	if (rl.rlim_cur < (rlim_t)o.m + 64) {
		rl.rlim_cur = o.m + 64;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			die("RLIMIT_NOFILE %ld", o.m + 64);
	}
	/* The N: a child makes them and exits, and the init adopts them. */
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		pid_t *lng = xcalloc(o.n, sizeof(*lng));

		g_orphans = 1;
		pool_init(&pool, o.n);
		make_sleepers(lng, o.n, &pool);
		_exit(0);
	}
	if (waitpid(pid, NULL, 0) != pid)
		die("waitpid");
	/* Children we make from now on run SCHED_OTHER again. */
	if (sched_setscheduler(0, SCHED_IDLE | SCHED_RESET_ON_FORK, &sp))
		die("sched_setscheduler(SCHED_IDLE)");
	header(",init_user_ns,init_sys_ns");
	for (r = 0; r < o.reps; r++) {
		/* once their parent is reaped, the M are the init's */
		modprobe_burst(sht, o.m, gate, NULL);
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0)
			die("epoll_create1");
		for (i = 0; i < o.m; i++) {
			pfd[i] = syscall(SYS_pidfd_open, sht[i], 0);
			if (pfd[i] < 0)
				die("pidfd_open(%d)", sht[i]);
			/* EPOLLHUP is implied; ONESHOT: report each reap once */
			ev.events = EPOLLONESHOT;
			ev.data.u64 = i;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, pfd[i], &ev))
				die("epoll_ctl");
		}
		/* Every child asleep on the gate, the init idle. */
		for (i = 0; i < o.m; i++)
			while (proc_stat(sht[i], NULL, NULL) != 'S')
				sched_yield();
		proc_stat(1, &c0[0], &c0[1]);
		t0 = now_ns();
		close(gate[1]);
		for (got = 0; got < o.m; got += k) {
			k = epoll_wait(ep, evs, o.m, 600 * 1000);
			if (k < 0 && errno == EINTR)
				k = 0;
			else if (k <= 0)
				die("the init reaped %ld of %ld orphans", got, o.m);
		}
		t1 = now_ns();
		proc_stat(1, &c1[0], &c1[1]);
		report_cpu(o.m, t0, t1, c0, c1);
		for (i = 0; i < o.m; i++)
			close(pfd[i]);
		close(ep);
	}
	/* The N die with the namespace when the init follows us. */
}

/*
 * spawn: a process holding N children starts M short jobs one after the
 * other and reaps each by pid, followed by a tracer (strace -f). A job is
 * what glibc's posix_spawn() makes, a clone(CLONE_VM|CLONE_VFORK), minus
 * the exec: fork() itself grows with N on every kernel (forkwait in
 * docs/results.md). And waitpid(pid) looks the job up by pid, so whatever
 * grows with N is the tracer's. Extra columns: the tracer's user and
 * system CPU time per job.
 *
 * The tracer is either our tracer already (strace -f reapbench spawn) or
 * the command after "--", started once the N exist with "-p PID,..." for
 * them and for us appended (strace -f -p). The second holds the same N+1
 * tracees and follows the jobs the same way, without seeing the N start
 * and die: on a stock kernel each of those events costs the tracer O(N),
 * O(N^2) in all, minutes of TCG at N = 10,000 before the clock starts.
 */
static int job_exit(void *arg)
{
	(void)arg;
	syscall(SYS_exit_group, 0);
	return 0;
}

/* State letter and TracerPid of process @pid; state 0 if it is gone. */
static char proc_status(pid_t pid, pid_t *tracer)
{
	char path[64], line[256], state = 0;
	int tp = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "State: %c", &state) == 1)
			continue;
		else if (sscanf(line, "TracerPid: %d", &tp) == 1)
			break;
	if (f)
		fclose(f);
	if (tracer)
		*tracer = tp;
	return state;
}

/* Run @cmd with "-p PID,PID,..." for @pids and ourselves appended. */
static pid_t start_tracer(char **cmd, const pid_t *pids, long n)
{
	enum { PER_ARG = 4096 }; /* pids per -p: far below MAX_ARG_STRLEN */
	long ncmd = 0, nargs, a, i, k;
	char **argv, *buf;
	pid_t pid;

	while (cmd[ncmd])
		ncmd++;
	nargs = ncmd + 2 * (n / PER_ARG + 2) + 1;
	argv = xcalloc(nargs, sizeof(*argv));
	buf = xcalloc(n + 1, 12);
	memcpy(argv, cmd, ncmd * sizeof(*argv));
	a = ncmd;
	for (i = 0; i < n; i += PER_ARG) {
		argv[a++] = "-p";
		argv[a++] = buf;
		for (k = i; k < n && k < i + PER_ARG; k++)
			buf += sprintf(buf, "%s%d", k > i ? "," : "", pids[k]);
		buf++;
	}
	argv[a++] = "-p";
	sprintf(buf, "%d", (int)getpid());
	argv[a++] = buf;
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execvp(argv[0], argv);
		die("exec %s", argv[0]);
	}
	free(argv);
	return pid;
}

/*
 * In an untraced child: wait until @pids and our parent are all traced and
 * asleep again, i.e. the tracer has attached and is idle.
 */
static void wait_attached(const pid_t *pids, long n)
{
	pid_t parent = getppid(), tracer;
	uint64_t give_up = now_ns() + 600 * 1000000000ull;
	long i;

	for (i = -1; i < n; i++)
		while (proc_status(i < 0 ? parent : pids[i], &tracer) != 'S' ||
		       !tracer) {
			if (now_ns() > give_up)
				_exit(1);
			usleep(1000);
		}
	_exit(0);
}

static void spawn_jobs(long m, char *stack_top)
{
	long i;
	pid_t pid;
	int st;

	for (i = 0; i < m; i++) {
		pid = clone(job_exit, stack_top, CLONE_VM | CLONE_VFORK |
			    SIGCHLD, NULL);
		if (pid < 0)
			die("clone(CLONE_VFORK)");
		if (waitpid(pid, &st, 0) != pid)
			die("waitpid(job)");
	}
}

static void scen_spawn(char **tracer_cmd)
{
	size_t stk = 64 * 1024;
	char *stack = mmap(NULL, stk, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pid_t *lng = xcalloc(o.n, sizeof(*lng)), tracer = 0, checker;
	uint64_t t0, t1, c0[2] = { 0, 0 }, c1[2] = { 0, 0 };
	struct stackpool lp;
	int r, st;

	if (stack == MAP_FAILED)
		die("mmap");
	pool_init(&lp, o.n);
	make_sleepers(lng, o.n, &lp);
	proc_status(getpid(), &tracer);
	if (tracer_cmd) {
		if (tracer)
			die("spawn: already traced, no tracer to start");
		t0 = now_ns();
		checker = fork();
		if (checker < 0)
			die("fork");
		if (checker == 0)
			wait_attached(lng, o.n);
		tracer = start_tracer(tracer_cmd, lng, o.n);
		if (waitpid(checker, &st, 0) != checker || st != 0) {
			errno = ETIMEDOUT;
			die("spawn: %s did not attach", tracer_cmd[0]);
		}
		printf("# %s: attached to %ld processes in %.0f ms\n", o.scen,
		       o.n + 1, (now_ns() - t0) / 1e6);
	}
	/* Untimed: a tracer's first jobs allocate its per-tracee state. */
	spawn_jobs(o.m, stack + stk);
	header(",tracer_user_ns,tracer_sys_ns");
	for (r = 0; r < o.reps; r++) {
		if (tracer)
			proc_stat(tracer, &c0[0], &c0[1]);
		t0 = now_ns();
		spawn_jobs(o.m, stack + stk);
		t1 = now_ns();
		if (tracer)
			proc_stat(tracer, &c1[0], &c1[1]);
		report_cpu(o.m, t0, t1, c0, c1);
	}
	if (tracer_cmd) {
		/*
		 * strace detaches on SIGTERM (by pid, O(1) each), then exits.
		 * A tracer that does not (seen: strace under strace) must not
		 * hang the run: a minute, then SIGKILL, which detaches too.
		 */
		uint64_t give_up = now_ns() + 60 * 1000000000ull;

		kill(tracer, SIGTERM);
		while (waitpid(tracer, &st, WNOHANG) == 0) {
			if (now_ns() > give_up) {
				kill(tracer, SIGKILL);
				waitpid(tracer, &st, 0);
				errno = ETIMEDOUT;
				die("spawn: %s did not exit on SIGTERM",
				    tracer_cmd[0]);
			}
			usleep(10000);
		}
	}
	kill_reap(lng, o.n);
}

/*
 * shell: a job-control shell holding N children runs M commands, one after
 * the other. We make the N, then exec the shell after "--" (bash) on a
 * script that times M subshells, "( : )", with job control on: bash reaps
 * each with wait4(-1, WSTOPPED|WCONTINUED) and polls wait4(-1, WNOHANG|
 * WSTOPPED|WCONTINUED) until it returns 0, two waits beside the N per
 * command (seen with strace -f). A subshell is a fork without an exec: an
 * exec reads its binary over the guest's 9p root, and while the guest
 * waits for the host, -icount's clock jumps ahead: samples of one boot
 * differed up to 12x. The N are the shell's children but not its
 * jobs, as after "disown": bash walks its own job table for every
 * command, and what grows with N here is then the kernel's alone. Its
 * EPOCHREALTIME is the guest's CLOCK_REALTIME, which -icount drives too.
 */
static void scen_shell(char **shell)
{
	struct stackpool pool;
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	char script[1024];

	if (!shell)
		die("shell: name the shell after \"--\" (reapbench shell -- bash)");
	pool_init(&pool, o.n);
	make_sleepers(lng, o.n, &pool);
	snprintf(script, sizeof(script),
		 "set -m\n"
		 "for ((r = 0; r < %d; r++)); do\n"
		 "	t0=$EPOCHREALTIME\n"
		 "	for ((i = 0; i < %ld; i++)); do ( : ); done\n"
		 "	t1=$EPOCHREALTIME\n"
		 "	ns=$(( (10#${t1/./} - 10#${t0/./}) * 1000 ))\n"
		 "	echo \"%s,%ld,%ld,$ns,$((ns / %ld))\"\n"
		 "done\n", o.reps, o.m, o.scen, o.n, o.m, o.m ? o.m : 1);
	/* "." in EPOCHREALTIME, whatever the guest's locale */
	setenv("LC_ALL", "C", 1);
	execlp(shell[0], shell[0], "-c", script, (char *)NULL);
	die("exec %s", shell[0]);
}

/* ---- mem: memory and time it takes to create N long-lived children ---- */

static long meminfo_kib(const char *field)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t len = strlen(field);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			v = atol(line + len + 1);
			break;
		}
	fclose(f);
	return v;
}

static void scen_mem(void)
{
	static const char *const fields[] = {
		"MemAvailable", "KernelStack", "PageTables", "Slab",
	};
	long before[4], after[4];
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	struct stackpool lp;
	uint64_t t0, t1;
	int r, k;

	pool_init(&lp, o.n);
	header(",kib_per_child_memavail,kib_kstack,kib_pagetables,kib_slab");
	for (r = 0; r < o.reps; r++) {
		for (k = 0; k < 4; k++)
			before[k] = meminfo_kib(fields[k]);
		t0 = now_ns();
		make_sleepers(lng, o.n, &lp);
		t1 = now_ns();
		for (k = 0; k < 4; k++)
			after[k] = meminfo_kib(fields[k]);
		printf("%s,%ld,%ld,%llu,%llu,%.1f,%.1f,%.1f,%.1f\n", o.scen,
		       o.n, o.n, (unsigned long long)(t1 - t0),
		       (unsigned long long)((t1 - t0) / (o.n ? o.n : 1)),
		       (double)(before[0] - after[0]) / (o.n ? o.n : 1),
		       (double)(after[1] - before[1]) / (o.n ? o.n : 1),
		       (double)(after[2] - before[2]) / (o.n ? o.n : 1),
		       (double)(after[3] - before[3]) / (o.n ? o.n : 1));
		fflush(stdout);
		kill_reap(lng, o.n);
	}
}

/* ---- exit*, orphan-exit, setpgid*, setsid, tstp-orphan, ttyin-orphan ---- */

/*
 * Job control: exits and group changes beside a process group or session
 * of N (issue 11). CPU time per task comes from /proc/PID/schedstat
 * (sum_exec_runtime, ns): under -icount it counts guest instructions of
 * that task alone, so it splits a timed burst into the exiting children's
 * own cost and the reaper's.
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

/* Where a holder's sleepers live: its group, one other group, a group each. */
enum kids_group { KIDS_HOME, KIDS_AWAY, KIDS_SPREAD };

/* A child that holds N sleepers of its own until its pipe closes. */
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
		pid_t *gk = xcalloc(n, sizeof(pid_t));
		long i;

		if (setpgrp_self && setpgid(0, 0))
			die("setpgid");
		pool_init(&gp, n);
		make_sleepers(gk, n, &gp);	/* they die with us */
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
	/* The holder exits when we close this (or die). */
	return pid;
}

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

static void scen_exit(enum exit_where where)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	pid_t *sht = xcalloc(o.m, sizeof(*sht));
	uint64_t *cpu = xcalloc(o.m, sizeof(*cpu));
	uint64_t t0, t1, exit_ns, exit_max, me0, me1;
	struct stackpool lp;
	int gate[2], r;
	pid_t holder = 0, pid;
	long i, reaped;

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
		reaped = 0;
		while (reaped < o.m) {
			pid = wait(NULL);
			if (pid < 0 && errno == EINTR)
				continue;
			expect_pid(pid, "wait");
			reaped++;
			while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
				reaped++;
		}
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
		kill(holder, SIGKILL);
		waitpid(holder, NULL, 0);
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

static void scen_orphan_exit(void)
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
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
}

/*
 * setpgid: a gated child X moves into a group of N+1 (a leader L and N
 * sleepers) and back out into its own group: one op is the pair of
 * setpgid() calls. setpgid-kids: the same moves, but X has N children of
 * its own (in X's own group), and the group it joins is just L.
 * setpgid-kids-away: X's N children are in a group of their own;
 * setpgid-kids-spread: each of them leads a group of its own.
 */
static void scen_setpgid(int kids, enum kids_group where)
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
	kill(x, SIGKILL);
	waitpid(x, NULL, 0);
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

static void scen_setsid(void)
{
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	struct stackpool lp, sp;
	pid_t pid;
	int r, st;
	long i;

	pool_init(&lp, o.n);
	pool_init(&sp, 1);
	make_sleepers(lng, o.n, &lp);
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
	pid_t *gk = xcalloc(o.n, sizeof(pid_t)), me = getpid();
	struct stackpool gp;
	uint64_t t[2];
	char c = 0;
	long i;

	if (setpgid(0, 0))
		die("setpgid(X)");
	pool_init(&gp, o.n);
	make_sleepers(gk, o.n, &gp);	/* they die with us */
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
	char path[64], buf[1024], *p;
	ssize_t len;
	int fd, ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1)
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

static void scen_orphan_job(int with_tty)
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

/* ---- main ---- */

/*
 * kids_per_n: long-lived children per N, for raise_limits(); 0 means 1.
 * Only the rows that make more set it (designated), so the others leave
 * it out: no missing-initializer warnings for them.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct {
	const char *name;
	long n, m; /* defaults */
	const char *help;
	int kids_per_n;
} scens[] = {
	{ "burst", 1000, 100, "wait(-1) reaps M zombies" },
	{ "empty", 1000, 1000, "M waitpid(-1, WNOHANG) polls that return 0" },
	{ "peek", 1000, 100, "waitid(P_ALL, WNOWAIT) + waitid(P_PID) x M" },
	{ "pgrp", 1000, 100, "waitpid(0) reaps M; the N are in another pgrp" },
	{ "stopped", 1000, 100, "M WUNTRACED stop reports" },
	{ "continued", 1000, 100, "M WCONTINUED reports" },
	{ "ptrace", 1000, 100, "a tracer (not the parent) reaps M tracees" },
	{ "threads", 1000, 100, "64-thread waiter reaps M zombies" },
	{ "idle-stopped", 1000, 100, "wait() reaps M; the N are stopped" },
	{ "idle-continued", 1000, 100, "wait() reaps M; the N were continued" },
	{ "idle-clone", 1000, 100, "wait() reaps M; the N are clone zombies" },
	{ "pgrp-zombies", 1000, 100, "waitpid(0) reaps M; N zombies elsewhere" },
	{ "nothread", 1000, 1000, "__WNOTHREAD polls; a sibling has N zombies" },
	{ "nothread-empty", 1000, 1000, "the empty polls with __WNOTHREAD" },
	{ "nothread-burst", 1000, 100, "the burst, wait4(-1, __WNOTHREAD)" },
	{ "thread-nothread-empty", 1000, 1000,
	  "nothread-empty beside an idle thread" },
	{ "thread-nothread-burst", 1000, 100,
	  "nothread-burst beside an idle thread" },
	{ "thread-nothread-both", 1000, 1000,
	  "nothread, and N live children of our own", .kids_per_n = 2 },
	{ "thread-nothread-both-stopped", 1000, 1000,
	  "the same with WUNTRACED, the sibling's N stopped",
	  .kids_per_n = 2 },
	{ "pgrp-grandkids", 1000, 1000, "waitpid(0) polls; our child's N kids" },
	{ "pgrp-both", 1000, 1000,
	  "waitpid(0) polls; N live in our group, N zombies in another",
	  .kids_per_n = 2 },
	{ "pgrp-both-stopped", 1000, 1000,
	  "the same with WUNTRACED, the N of another group stopped",
	  .kids_per_n = 2 },
	{ "threads-stopped", 1000, 100, "4 blocked wait() threads, N stopped" },
	{ "pidns", 1000, 0, "kill a pid ns init of N processes, reap it" },
	{ "forkwait", 0, 1000, "fork + _exit + waitpid(pid), M times" },
	{ "mixed", 1000, 1000, "N services + M short jobs: reap latency" },
	{ "orphans", 1000, 512, "child of a pid ns init: time its reaping of M" },
	{ "spawn", 1000, 100, "vfork-like job + waitpid(pid) x M [-- TRACER]" },
	{ "mem", 1000, 0, "KiB of memory per long-lived child (meminfo)" },
	{ "exit", 1000, 512, "the demo's burst; the N in our group; split" },
	{ "exit-ownpgrp", 1000, 512, "the same, the N in a group of their own" },
	{ "exit-held", 1000, 512, "the same, the N our child's, not ours" },
	{ "orphan-exit", 1000, 100, "clone+setpgid+exit+waitpid into a group of N" },
	{ "setpgid", 1000, 100, "setpgid() into a group of N and out, x M" },
	{ "setpgid-kids", 1000, 100, "the same, the mover has N children" },
	{ "setpgid-kids-away", 1000, 100,
	  "the same, the mover's N children in another group" },
	{ "setpgid-kids-spread", 1000, 100,
	  "the same, each of the mover's N children in its own group" },
	{ "setsid", 1000, 100, "setsid() beside N in the group and session" },
	{ "tstp-orphan", 1000, 100, "SIGTSTP to an orphaned group of N" },
	{ "ttyin-orphan", 1000, 100, "background tty read (EIO), orphaned N" },
	{ "shell", 1000, 50, "-- bash: a job-control shell runs M commands" },
};
#pragma GCC diagnostic pop

static void usage(void)
{
	size_t i;

	fprintf(stderr,
		"usage: reapbench SCENARIO [-n N] [-m M] [-r REPEATS] [--csv]\n"
		"       [--fork] [-t THREADS] [-i INTERVAL_US] [-v] [--name NAME]\n"
		"       [-- TRACER [ARG...]]   (spawn only: run TRACER ARG...\n"
		"                              -p PID,... on the N and on us)\n"
		"       [-- SHELL]             (shell only: bash, which runs M\n"
		"                              commands beside the N)\n"
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
		"scenarios (default N, M):\n");
	for (i = 0; i < sizeof(scens) / sizeof(scens[0]); i++)
		fprintf(stderr, "  %-10s %5ld %5ld  %s\n", scens[i].name,
			scens[i].n, scens[i].m, scens[i].help);
	exit(1);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "fork", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "name", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	size_t s, ns = sizeof(scens) / sizeof(scens[0]);
	int c, m_set = 0;
	const char *scen;

	if (argc < 2 || argv[1][0] == '-')
		usage();
	scen = o.scen = argv[1];
	for (s = 0; s < ns; s++)
		if (!strcmp(scens[s].name, scen))
			break;
	if (s == ns)
		usage();
	o.reps = 3;
	o.threads = 64;
	o.interval_us = 100;
	optind = 2;
	while ((c = getopt_long(argc, argv, "n:m:r:t:i:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'n': o.n = atol(optarg); o.n_set = 1; break;
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
	/* Only spawn and shell take a command: the tracer, the shell. */
	if (optind != argc && strcmp(scen, "spawn") && strcmp(scen, "shell"))
		usage();
	if (!o.n_set)
		o.n = scens[s].n;
	if (!m_set)
		o.m = scens[s].m;
	if (o.n < 0 || o.m < 0 || o.reps < 1 || o.threads < 1 ||
	    o.interval_us < 0)
		usage();
	/* N long-lived children, or kids_per_n times N (scens[]). */
	raise_limits(o.n * (scens[s].kids_per_n ? scens[s].kids_per_n : 1) +
		     (long)o.reps * o.m + o.threads + 16);
	check_clock();
	/* Default SIGCHLD disposition: zombies must stay for us to reap. */
	signal(SIGCHLD, SIG_DFL);

	if (!strcmp(scen, "burst"))
		scen_reap(REAP_WAIT, IDLE_LIVE);
	else if (!strcmp(scen, "peek"))
		scen_reap(REAP_PEEK, IDLE_LIVE);
	else if (!strcmp(scen, "pgrp"))
		scen_reap(REAP_PGRP, IDLE_OTHER_PGRP);
	else if (!strcmp(scen, "idle-stopped"))
		scen_reap(REAP_WAIT, IDLE_STOPPED);
	else if (!strcmp(scen, "idle-continued"))
		scen_reap(REAP_WAIT, IDLE_CONTINUED);
	else if (!strcmp(scen, "idle-clone"))
		scen_reap(REAP_WAIT, IDLE_CLONE_ZOMBIE);
	else if (!strcmp(scen, "pgrp-zombies"))
		scen_reap(REAP_PGRP, IDLE_OTHER_PGRP_ZOMBIE);
	else if (!strcmp(scen, "nothread"))
		scen_nothread(1, 0);
	else if (!strcmp(scen, "thread-nothread-both"))
		scen_nothread(o.n ? o.n : 1, 0);
	else if (!strcmp(scen, "thread-nothread-both-stopped"))
		scen_nothread(o.n ? o.n : 1, 1);
	else if (!strcmp(scen, "pgrp-grandkids"))
		scen_pgrp_grandkids();
	else if (!strcmp(scen, "pgrp-both"))
		scen_pgrp_both(IDLE_OTHER_PGRP_ZOMBIE, 0);
	else if (!strcmp(scen, "pgrp-both-stopped"))
		scen_pgrp_both(IDLE_OTHER_PGRP_STOPPED, WUNTRACED);
	else if (!strcmp(scen, "threads-stopped"))
		scen_threads_stopped();
	else if (!strcmp(scen, "empty"))
		scen_empty(0);
	else if (!strcmp(scen, "nothread-empty"))
		scen_empty(__WNOTHREAD);
	else if (!strcmp(scen, "nothread-burst"))
		scen_reap(REAP_NOTHREAD, IDLE_LIVE);
	else if (!strcmp(scen, "thread-nothread-empty")) {
		start_idle_sibling();
		scen_empty(__WNOTHREAD);
		stop_idle_sibling();
	} else if (!strcmp(scen, "thread-nothread-burst")) {
		start_idle_sibling();
		scen_reap(REAP_NOTHREAD, IDLE_LIVE);
		stop_idle_sibling();
	}
	else if (!strcmp(scen, "stopped"))
		scen_stopcont(0);
	else if (!strcmp(scen, "continued"))
		scen_stopcont(1);
	else if (!strcmp(scen, "ptrace"))
		scen_ptrace();
	else if (!strcmp(scen, "threads"))
		scen_threads();
	else if (!strcmp(scen, "pidns"))
		scen_pidns();
	else if (!strcmp(scen, "forkwait"))
		scen_forkwait();
	else if (!strcmp(scen, "mixed"))
		scen_mixed();
	else if (!strcmp(scen, "orphans"))
		scen_orphans();
	else if (!strcmp(scen, "spawn"))
		scen_spawn(optind < argc ? argv + optind : NULL);
	else if (!strcmp(scen, "shell"))
		scen_shell(optind < argc ? argv + optind : NULL);
	else if (!strcmp(scen, "mem"))
		scen_mem();
	else if (!strcmp(scen, "exit"))
		scen_exit(EXIT_SAME_PGRP);
	else if (!strcmp(scen, "exit-ownpgrp"))
		scen_exit(EXIT_OTHER_PGRP);
	else if (!strcmp(scen, "exit-held"))
		scen_exit(EXIT_HELD);
	else if (!strcmp(scen, "orphan-exit"))
		scen_orphan_exit();
	else if (!strcmp(scen, "setpgid"))
		scen_setpgid(0, KIDS_HOME);
	else if (!strcmp(scen, "setpgid-kids"))
		scen_setpgid(1, KIDS_HOME);
	else if (!strcmp(scen, "setpgid-kids-away"))
		scen_setpgid(1, KIDS_AWAY);
	else if (!strcmp(scen, "setpgid-kids-spread"))
		scen_setpgid(1, KIDS_SPREAD);
	else if (!strcmp(scen, "setsid"))
		scen_setsid();
	else if (!strcmp(scen, "tstp-orphan"))
		scen_orphan_job(0);
	else if (!strcmp(scen, "ttyin-orphan"))
		scen_orphan_job(1);
	return 0;
}
