// SPDX-License-Identifier: GPL-2.0
/*
 * Who reaps: reparenting to a PR_SET_CHILD_SUBREAPER ancestor when the
 * parent dies with live and zombie children, and automatic reaping when
 * SIGCHLD is ignored or has SA_NOCLDWAIT.  (Reparenting to a pid
 * namespace's init is in wait_pidns.c.)
 */
#include "wait_util.h"

#include <poll.h>

#define NORPHANS 9

/*
 * Fork a middle process that makes NORPHANS orphans (see make_orphans)
 * and exits; reap it and return the orphans' pids in @pids.
 */
static void orphan_via_middle(struct __test_metadata *_metadata,
			      struct gate *g, pid_t new_ppid, pid_t *pids)
{
	struct orphans o = { g, -1, NORPHANS, new_ppid };
	struct gate out;
	struct wres r;
	pid_t mid;

	ASSERT_EQ(0, note_init(&out));
	o.out = out.wfd;
	mid = spawn(make_orphans, &o);
	ASSERT_GT(mid, 0);
	close(out.wfd);
	ASSERT_EQ(NORPHANS * sizeof(pid_t),
		  read(out.rfd, pids, NORPHANS * sizeof(pid_t)));
	close(out.rfd);
	/* Once the middle is reapable, its children have been handed on. */
	wk_wait(WK_WAITPID_PID, mid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, mid, CLD_EXITED, 0);
}

/*
 * Reap the orphans as adopted children: first exactly the zombies (as
 * a set), then nothing while the live ones live, then exactly those,
 * then ECHILD.  @k selects the wait flavour.
 */
static void reap_orphans(struct __test_metadata *_metadata, enum wkind k,
			 struct gate *g, const pid_t *pids)
{
	bool done[NORPHANS] = { false };
	int nlive = 0;
	struct wres r;

	for (int phase = 0; phase < 2; phase++) {
		for (int i = 0; i < NORPHANS; i++) {
			int got;

			if (orphan_is_zombie(i) != (phase == 0))
				continue;
			wk_wait(k, 0, getpgrp(), -1, 0, &r);
			got = idx_of(pids, NORPHANS, r.pid);
			ASSERT_GE(got, 0);
			ASSERT_FALSE(done[got]);
			ASSERT_EQ(phase == 0, orphan_is_zombie(got));
			ASSERT_WRES(k, r, pids[got], CLD_EXITED, code_of(got));
			done[got] = true;
		}
		if (phase == 0) {
			wk_wait(k, 0, getpgrp(), -1, WNOHANG, &r);
			ASSERT_WRES_NONE(k, r);
			for (int i = 0; i < NORPHANS; i++)
				nlive += !orphan_is_zombie(i);
			ASSERT_EQ(0, gate_open(g, nlive));
		}
	}
	wk_wait(k, 0, getpgrp(), -1, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

FIXTURE(subreaper) {
	struct gate g;
	pid_t pids[NORPHANS];
};

FIXTURE_VARIANT(subreaper) {
	enum wkind kind;
};

FIXTURE_VARIANT_ADD(subreaper, waitpid_any) { .kind = WK_WAITPID_ANY, };
FIXTURE_VARIANT_ADD(subreaper, waitpid_pgrp0) { .kind = WK_WAITPID_PGRP0, };
FIXTURE_VARIANT_ADD(subreaper, waitid_all) { .kind = WK_WAITID_ALL, };

FIXTURE_SETUP(subreaper)
{
	ASSERT_EQ(0, gate_init(&self->g));
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
}

FIXTURE_TEARDOWN(subreaper)
{
}

/* The parent dies with live and zombie children: we get them all. */
TEST_F(subreaper, adopts_live_and_zombies)
{
	orphan_via_middle(_metadata, &self->g, getpid(), self->pids);
	reap_orphans(_metadata, variant->kind, &self->g, self->pids);
}

/*
 * Nested subreapers: orphans go to the nearest one.  The inner one
 * (our child) reaps them all and exits 0; we only ever see it.
 */
static int inner_subreaper(void *p)
{
	struct gate *g = p;
	struct orphans o = { g, -1, NORPHANS, getpid() };
	pid_t pids[NORPHANS], mid;
	struct gate out;
	int st, nlive = 0;

	CHILD_CHECK(!prctl(PR_SET_CHILD_SUBREAPER, 1));
	CHILD_CHECK(!note_init(&out));
	o.out = out.wfd;
	mid = spawn(make_orphans, &o);
	CHILD_CHECK(mid > 0);
	close(out.wfd);
	CHILD_CHECK(read(out.rfd, pids, sizeof(pids)) == sizeof(pids));
	CHILD_CHECK(waitpid(mid, &st, 0) == mid && st == 0);
	for (int i = 0; i < NORPHANS; i++)
		nlive += !orphan_is_zombie(i);
	/* Zombies first (only they can be reported), then the rest. */
	for (int j = 0; j < NORPHANS - nlive; j++) {
		pid_t pid = waitpid(-1, &st, 0);
		int i = idx_of(pids, NORPHANS, pid);

		CHILD_CHECK(i >= 0 && orphan_is_zombie(i));
		CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == code_of(i));
	}
	CHILD_CHECK(waitpid(-1, &st, WNOHANG) == 0);
	/* The gate is ours here: nobody else holds its write end. */
	CHILD_CHECK(!gate_open(g, nlive));
	for (int j = 0; j < nlive; j++) {
		pid_t pid = waitpid(-1, &st, 0);
		int i = idx_of(pids, NORPHANS, pid);

		CHILD_CHECK(i >= 0 && !orphan_is_zombie(i));
		CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == code_of(i));
	}
	CHILD_CHECK(waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD);
	return 0;
}

static int inner_fn(void *p)
{
	struct gate *g = p;

	/* spawn() closed the gate's write end; the inner reaper needs one. */
	CHILD_CHECK(!gate_init(g));
	return inner_subreaper(g);
}

TEST(nested_subreaper_nearest_wins)
{
	struct gate g = { -1, -1 };
	struct wres r;
	pid_t inner;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	inner = spawn(inner_fn, &g);
	ASSERT_GT(inner, 0);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, inner, CLD_EXITED, 0);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* ------------------------------------------------------------------ */
/* Automatic reaping: SIGCHLD ignored, or SA_NOCLDWAIT.                */

static volatile sig_atomic_t nsigchld;

static void count_sigchld(int sig)
{
	(void)sig;
	nsigchld++;
}

FIXTURE(autoreap) {
	struct kids k;
};

FIXTURE_VARIANT(autoreap) {
	bool nocldwait;		/* SA_NOCLDWAIT with a handler */
};

FIXTURE_VARIANT_ADD(autoreap, sig_ign) { .nocldwait = false, };
FIXTURE_VARIANT_ADD(autoreap, sa_nocldwait) { .nocldwait = true, };

FIXTURE_SETUP(autoreap)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };

	memset(&self->k, 0, sizeof(self->k));
	if (variant->nocldwait) {
		sa.sa_handler = count_sigchld;
		sa.sa_flags = SA_NOCLDWAIT | SA_RESTART;
	}
	ASSERT_EQ(0, sigaction(SIGCHLD, &sa, NULL));
	nsigchld = 0;
}

FIXTURE_TEARDOWN(autoreap)
{
}

static void release_all(void *p)
{
	struct kids *k = p;

	for (int i = 0; i < k->n; i++)
		kids_release(k, i);
}

/* All pidfds readable: every child has exited. */
static int all_exited(struct kids *k)
{
	struct pollfd pfd[KIDS_MAX];

	for (int i = 0; i < k->n; i++)
		pfd[i] = (struct pollfd){ .fd = k->pidfd[i], .events = POLLIN };
	return poll(pfd, k->n, 0);
}

/*
 * Children are reaped as they exit; a wait blocks while any is alive
 * and fails with ECHILD once all are gone, reporting none of them.
 */
TEST_F(autoreap, wait_gets_echild_when_all_gone)
{
	struct releaser rel;
	struct wres r;

	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(i, kids_add(&self->k, true, code_of(i)));
	}
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_ANY, r);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITID_ALL, r);

	ASSERT_EQ(0, releaser_start(&rel, release_all, &self->k));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES_ERR(r, ECHILD);
	ASSERT_EQ(4, all_exited(&self->k));
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	/* SIG_IGN: no signal at all; SA_NOCLDWAIT: the handler runs. */
	ASSERT_EQ(variant->nocldwait, nsigchld >= 1);
}

/* Same for waitid(P_PID): never a report, ECHILD when gone. */
TEST_F(autoreap, targeted_wait_gets_echild)
{
	struct releaser rel;
	struct wres r;

	ASSERT_EQ(0, kids_add(&self->k, true, code_of(0)));
	ASSERT_EQ(0, releaser_start(&rel, release_all, &self->k));
	wk_wait(WK_WAITID_PIDFD, 0, 0, self->k.pidfd[0], 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES_ERR(r, ECHILD);
}

/* Stops are still reported; only the exit is swallowed. */
TEST_F(autoreap, stop_still_reported)
{
	struct wres r;
	pid_t pid;

	ASSERT_EQ(0, kids_add(&self->k, true, code_of(0)));
	pid = self->k.pid[0];
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	ASSERT_EQ(0, kill(pid, SIGCONT));
	wk_wait(WK_WAITID_PID, pid, 0, -1, WCONTINUED, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_CONTINUED, SIGCONT);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED | WCONTINUED, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * A zombie made before SIGCHLD was ignored stays and is reported;
 * only exits after the change are reaped automatically.
 */
TEST(zombie_from_before_sig_ign_stays)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };
	struct wres r;
	pid_t pid;

	pid = spawn_exit(code_of(0));
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, wait_zombie(pid));
	ASSERT_EQ(0, sigaction(SIGCHLD, &sa, NULL));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, pid, CLD_EXITED, code_of(0));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * Automatic reaping is about SIGCHLD: a clone child with another exit
 * signal (or none) still becomes a zombie and waits for __WCLONE.
 */
TEST(clone_children_not_autoreaped)
{
	struct sigaction sa = { .sa_handler = SIG_IGN };
	static const int sigs[] = { SIGUSR1, 0 };
	sigset_t set;
	struct wres r;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	ASSERT_EQ(0, sigaction(SIGCHLD, &sa, NULL));
	for (unsigned int i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct clone_args args = { .exit_signal = sigs[i] };
		pid_t pid = sys_clone3(&args);

		if (pid == 0)
			_exit(code_of(i));
		ASSERT_GT(pid, 0);
		ASSERT_EQ(0, wait_zombie(pid));
		wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WCLONE, &r);
		ASSERT_WRES(WK_WAITPID_ANY, r, pid, CLD_EXITED, code_of(i));
	}
}

TEST_HARNESS_MAIN
