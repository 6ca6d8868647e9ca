// SPDX-License-Identifier: GPL-2.0
/*
 * reap: M zombies reaped behind N long-lived children that have nothing
 * to report to the reaping wait.
 *
 *   burst, peek, pgrp, idle-*, pgrp-zombies: one thread reaps, each with
 *     its own kind of wait and its own kind of idle N;
 *   nothread-burst, thread-nothread-burst: wait4(-1, __WNOTHREAD), in a
 *     single-threaded process and in a thread with an idle sibling;
 *   threads: a 64-thread waiter whose threads made the children;
 *   threads-stopped: four threads blocked in wait(), N stopped children.
 */
#include <stdatomic.h>

enum reap_style { REAP_WAIT, REAP_PEEK, REAP_PGRP, REAP_NOTHREAD };

static void scen_reap(int style, int idle)
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
 * threads: the waiter has o.threads threads (-t, default 64); child i is
 * made by thread i mod o.threads, so each thread's children list holds its
 * share of the N at its head. The main thread reaps M zombies with wait().
 */
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

static void scen_threads(NO_ARGS)
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

/*
 * threads-stopped: WAITERS threads block in wait(-1) beside N stopped
 * children and one live one; M gated children exit at once. Timed: from
 * the gate's opening to the last reap, by whichever thread.
 */
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

static void scen_threads_stopped(NO_ARGS)
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

static const struct scenario reap_scenarios[] = {
	{ "burst", 1000, 50, scen_reap, REAP_WAIT, IDLE_LIVE,
	  .help = "wait(-1) reaps M zombies" },
	{ "peek", 1000, 50, scen_reap, REAP_PEEK, IDLE_LIVE,
	  .help = "waitid(P_ALL, WNOWAIT) + waitid(P_PID) x M" },
	{ "pgrp", 1000, 50, scen_reap, REAP_PGRP, IDLE_OTHER_PGRP,
	  .help = "waitpid(0) reaps M; the N are in another pgrp" },
	{ "idle-stopped", 1000, 50, scen_reap, REAP_WAIT, IDLE_STOPPED,
	  .help = "wait() reaps M; the N are stopped" },
	{ "idle-continued", 1000, 50, scen_reap, REAP_WAIT, IDLE_CONTINUED,
	  .help = "wait() reaps M; the N were continued" },
	{ "idle-clone", 1000, 50, scen_reap, REAP_WAIT, IDLE_CLONE_ZOMBIE,
	  .help = "wait() reaps M; the N are clone zombies" },
	{ "pgrp-zombies", 1000, 50, scen_reap, REAP_PGRP,
	  IDLE_OTHER_PGRP_ZOMBIE,
	  .help = "waitpid(0) reaps M; N zombies elsewhere" },
	{ "nothread-burst", 1000, 50, scen_reap, REAP_NOTHREAD, IDLE_LIVE,
	  .help = "the burst, wait4(-1, __WNOTHREAD)" },
	{ "thread-nothread-burst", 1000, 50, scen_reap, REAP_NOTHREAD,
	  IDLE_LIVE, .help = "nothread-burst beside an idle thread",
	  .idle_sibling = 1 },
	{ "threads", 1000, 50, scen_threads, 0, 0,
	  .help = "64-thread waiter reaps M zombies" },
	{ "threads-stopped", 1000, 50, scen_threads_stopped, 0, 0,
	  .help = "4 blocked wait() threads, N stopped" },
};
