// SPDX-License-Identifier: GPL-2.0
/*
 * poll: WNOHANG waits that find nothing, beside N children that have
 * nothing to report to them. It is the last call of every reaping loop
 * (tini, dumb-init, catatonit, bash): waitpid(-1, WNOHANG) until it
 * returns 0.
 *
 *   empty, nothread-empty, thread-nothread-empty: waitpid(-1, WNOHANG)
 *     beside N live children, with __WNOTHREAD, and by a thread with an
 *     idle sibling;
 *   nothread, thread-nothread-both(-stopped): __WNOTHREAD polls while a
 *     sibling thread holds N zombies, or N stopped children;
 *   pgrp-grandkids, pgrp-both(-stopped): waitpid(0) polls beside members
 *     of our group that are not our children, or beside another group's
 *     N reports.
 */

/* At N = 0 we have no children: ECHILD. */
static void scen_empty(int flags, int b UNUSED)
{
	struct stackpool lp;
	pid_t *lng = long_lived(o.n, &lp);

	time_empty_polls(-1, flags, o.n == 0, "waitpid(-1, WNOHANG)");
	kill_reap(lng, o.n);
}

/*
 * nothread: we have one live child of our own, so that every poll returns
 * 0, and a sibling thread holds N zombies. thread-nothread-both: we have
 * max(N, 1) live children of our own (at N = 0 the same as nothread). Our
 * N children have nothing to report and our sibling's N queued zombies
 * are not ours: a wait that walks both costs O(N); one that passes over
 * the sibling's zombies by count does not. thread-nothread-both-stopped:
 * the sibling's N children are stopped and we poll with WUNTRACED, so its
 * N queued stops are the ones to pass over.
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

/* @own_n: max(N, 1) live children of our own, else one. */
static void scen_nothread(int own_n, int stopped)
{
	struct sibling sb = { .pids = xcalloc(o.n, sizeof(pid_t)),
			      .stopped = stopped };
	long n_own = own_n && o.n ? o.n : 1;
	struct stackpool lp;
	pid_t *own = long_lived(n_own, &lp);
	pthread_t th;
	char c = 0;

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

/* pgrp-grandkids: our one child's N children share our group. */
static void scen_pgrp_grandkids(NO_ARGS)
{
	pid_t holder = make_holder(o.n, 0, KIDS_HOME);

	time_empty_polls(0, 0, 0, "waitpid(0, WNOHANG)");
	kill_reap(&holder, 1);
}

/*
 * pgrp-both: a P_PGID poll whose group has N members with nothing to
 * report while N exits of another group are queued: every poll returns 0,
 * and a wait that walks the children list walks all 2N for it. The N live
 * ones are made first, so that our first child is in our group; the N
 * zombies as pgrp-zombies makes its N, in a group of their own. At N = 0
 * one live child stays in our group, so that the polls still return 0 (as
 * pgrp-grandkids at N = 0). pgrp-both-stopped: the same with WUNTRACED,
 * the N of the other group stopped (@others) instead of exited.
 */
static void scen_pgrp_both(int others, int flags)
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

static const struct scenario poll_scenarios[] = {
	{ "empty", 1000, 200, scen_empty, 0, 0,
	  .help = "M waitpid(-1, WNOHANG) polls that return 0" },
	{ "nothread-empty", 1000, 200, scen_empty, __WNOTHREAD, 0,
	  .help = "the empty polls with __WNOTHREAD" },
	{ "thread-nothread-empty", 1000, 200, scen_empty, __WNOTHREAD, 0,
	  .help = "nothread-empty beside an idle thread",
	  .idle_sibling = 1 },
	{ "nothread", 1000, 200, scen_nothread, 0, 0,
	  .help = "__WNOTHREAD polls; a sibling has N zombies" },
	{ "thread-nothread-both", 1000, 200, scen_nothread, 1, 0,
	  .help = "nothread, and N live children of our own",
	  .kids_per_n = 2 },
	{ "thread-nothread-both-stopped", 1000, 200, scen_nothread, 1, 1,
	  .help = "the same with WUNTRACED, the sibling's N stopped",
	  .kids_per_n = 2 },
	{ "pgrp-grandkids", 1000, 200, scen_pgrp_grandkids, 0, 0,
	  .help = "waitpid(0) polls; our child's N kids" },
	{ "pgrp-both", 1000, 200, scen_pgrp_both, IDLE_OTHER_PGRP_ZOMBIE, 0,
	  .help = "waitpid(0) polls; N live in our group, N zombies in another",
	  .kids_per_n = 2 },
	{ "pgrp-both-stopped", 1000, 200, scen_pgrp_both,
	  IDLE_OTHER_PGRP_STOPPED, WUNTRACED,
	  .help = "the same, WUNTRACED, the N of another group stopped",
	  .kids_per_n = 2 },
};
