// SPDX-License-Identifier: GPL-2.0
/*
 * Process group selection: waitpid(-pgid)/waitpid(0) and waitid(P_PGID)
 * with children spread over several groups, children that change group
 * after fork (also while the parent is already waiting), and ECHILD when
 * no child is in the group even though other children exist.
 *
 * Group membership is what the child has at the time of the scan (for
 * a zombie: at its exit), so a wait implementation that indexes
 * children by group must follow setpgid().
 */
#include "wait_util.h"

FIXTURE(pgrp) {
	struct kids k;
};

FIXTURE_VARIANT(pgrp) {
	enum wkind kind;	/* by explicit pgid */
	enum wkind own;		/* the caller's own group (0) */
};

FIXTURE_VARIANT_ADD(pgrp, waitpid) {
	.kind = WK_WAITPID_PGID, .own = WK_WAITPID_PGRP0,
};
FIXTURE_VARIANT_ADD(pgrp, waitid) {
	.kind = WK_WAITID_PGID, .own = WK_WAITID_PGID0,
};

FIXTURE_SETUP(pgrp)
{
	memset(&self->k, 0, sizeof(self->k));
}

FIXTURE_TEARDOWN(pgrp)
{
}

static void gwait(const FIXTURE_VARIANT(pgrp) *v, pid_t pgid, int opts,
		  struct wres *r)
{
	wk_wait(v->kind, 0, pgid, -1, opts, r);
}

static void owait(const FIXTURE_VARIANT(pgrp) *v, int opts, struct wres *r)
{
	wk_wait(v->own, 0, 0, -1, opts, r);
}

/*
 * Reap exactly the children with indices in @want (bitmask) from group
 * @pgid, as a set, then expect ECHILD for that group.
 */
static void reap_group(struct __test_metadata *_metadata,
		       const FIXTURE_VARIANT(pgrp) *v, struct kids *k,
		       pid_t pgid, unsigned int want)
{
	unsigned int seen = 0;
	struct wres r;

	for (int n = __builtin_popcount(want); n > 0; n--) {
		int got;

		gwait(v, pgid, 0, &r);
		got = idx_of(k->pid, k->n, r.pid);
		ASSERT_GE(got, 0);
		ASSERT_TRUE(want & (1u << got));
		ASSERT_FALSE(seen & (1u << got));
		ASSERT_WRES(v->kind, r, k->pid[got], CLD_EXITED, code_of(got));
		seen |= 1u << got;
	}
	gwait(v, pgid, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * Three groups of three children each (the first of each its leader),
 * all zombies: each group yields exactly its own children, the
 * caller's own group none.
 */
TEST_F(pgrp, several_groups)
{
	pid_t pgid[3];
	struct wres r;

	for (int g = 0; g < 3; g++) {
		for (int j = 0; j < 3; j++) {
			int i = g * 3 + j;

			ASSERT_EQ(i, kids_add(&self->k, true, code_of(i)));
			if (j == 0)
				pgid[g] = self->k.pid[i];
			/* Before the child can exit: no race with it. */
			ASSERT_EQ(0, setpgid(self->k.pid[i], pgid[g]));
			ASSERT_EQ(pgid[g], getpgid(self->k.pid[i]));
		}
	}
	for (int i = 0; i < 9; i++) {
		kids_release(&self->k, i);
		ASSERT_EQ(0, wait_zombie(self->k.pid[i]));
	}

	/* No child in our own group, though there are nine children. */
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	owait(variant, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	reap_group(_metadata, variant, &self->k, pgid[1], 0x38);
	reap_group(_metadata, variant, &self->k, pgid[2], 0x1c0);
	/* Group 1 is gone; group 0 is still intact. */
	gwait(variant, pgid[1], WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	reap_group(_metadata, variant, &self->k, pgid[0], 0x7);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* Live children in one group, zombies in another: no crosstalk. */
TEST_F(pgrp, live_group_and_zombie_group)
{
	pid_t live, dead;
	struct wres r;

	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(i, kids_add(&self->k, true, code_of(i)));
	}
	live = self->k.pid[0];
	dead = self->k.pid[1];
	ASSERT_EQ(0, setpgid(live, live));
	ASSERT_EQ(0, setpgid(dead, dead));
	ASSERT_EQ(0, setpgid(self->k.pid[2], live));
	ASSERT_EQ(0, setpgid(self->k.pid[3], dead));
	kids_release(&self->k, 1);
	kids_release(&self->k, 3);
	ASSERT_EQ(0, wait_zombie(self->k.pid[1]));
	ASSERT_EQ(0, wait_zombie(self->k.pid[3]));

	gwait(variant, live, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);
	reap_group(_metadata, variant, &self->k, dead, 0xa);
	gwait(variant, live, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);
	kids_release(&self->k, 0);
	kids_release(&self->k, 2);
	reap_group(_metadata, variant, &self->k, live, 0x5);
}

/*
 * A child of ours that dies first, in a group of its own: the oldest exit,
 * so that a wait for another group cannot find its zombie by looking at
 * the oldest only.
 */
static void oldest_exit_elsewhere(struct __test_metadata *_metadata,
				  struct kids *k, int i)
{
	ASSERT_EQ(0, setpgid(k->pid[i], k->pid[i]));
	kids_release(k, i);
	ASSERT_EQ(0, wait_zombie(k->pid[i]));
}

/*
 * setpgid() may move a zombie child (one that never exec'd) to another
 * group, and its exit goes along: a wait for the group it joined reaps
 * it, a wait for the group it left does not.  Here a zombie leaves our
 * group for one that has no other zombie; then one leads a group of its
 * own.
 */
TEST_F(pgrp, zombie_moved_out_by_setpgid)
{
	pid_t other;
	struct wres r;

	for (int i = 0; i < 5; i++)
		ASSERT_EQ(i, kids_add(&self->k, true, code_of(i)));
	/* 0 holds the other group open, 1 ours; 2 and 3 die in ours. */
	other = self->k.pid[0];
	ASSERT_EQ(0, setpgid(other, other));
	oldest_exit_elsewhere(_metadata, &self->k, 4);
	kids_release(&self->k, 2);
	ASSERT_EQ(0, wait_zombie(self->k.pid[2]));
	ASSERT_EQ(0, setpgid(self->k.pid[2], other));
	ASSERT_EQ(other, getpgid(self->k.pid[2]));

	gwait(variant, other, WNOHANG, &r);
	ASSERT_WRES(variant->kind, r, self->k.pid[2], CLD_EXITED, code_of(2));
	gwait(variant, other, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->own, r);

	kids_release(&self->k, 3);
	ASSERT_EQ(0, wait_zombie(self->k.pid[3]));
	ASSERT_EQ(0, setpgid(self->k.pid[3], self->k.pid[3]));
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->own, r);
	gwait(variant, self->k.pid[3], WNOHANG, &r);
	ASSERT_WRES(variant->kind, r, self->k.pid[3], CLD_EXITED, code_of(3));
	gwait(variant, self->k.pid[3], WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	reap_group(_metadata, variant, &self->k, self->k.pid[4], 0x10);
	kids_release(&self->k, 0);
	reap_group(_metadata, variant, &self->k, other, 0x1);
	kids_release(&self->k, 1);
	owait(variant, 0, &r);
	ASSERT_WRES(variant->own, r, self->k.pid[1], CLD_EXITED, code_of(1));
}

/*
 * The same the other way: a zombie of another group joins ours, then one
 * that was the last member of its group.
 */
TEST_F(pgrp, zombie_moved_in_by_setpgid)
{
	pid_t other, ours = getpgrp();
	struct wres r;

	for (int i = 0; i < 4; i++)
		ASSERT_EQ(i, kids_add(&self->k, true, code_of(i)));
	/* 0 holds the other group open, 1 ours; 2 dies in the other. */
	other = self->k.pid[0];
	ASSERT_EQ(0, setpgid(other, other));
	ASSERT_EQ(0, setpgid(self->k.pid[2], other));
	oldest_exit_elsewhere(_metadata, &self->k, 3);
	kids_release(&self->k, 2);
	ASSERT_EQ(0, wait_zombie(self->k.pid[2]));
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->own, r);
	ASSERT_EQ(0, setpgid(self->k.pid[2], ours));
	ASSERT_EQ(ours, getpgid(self->k.pid[2]));

	gwait(variant, other, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);
	owait(variant, WNOHANG, &r);
	ASSERT_WRES(variant->own, r, self->k.pid[2], CLD_EXITED, code_of(2));
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->own, r);

	/* The last member of its group joins ours: the group is gone. */
	ASSERT_EQ(0, setpgid(self->k.pid[3], ours));
	gwait(variant, self->k.pid[3], WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	owait(variant, WNOHANG, &r);
	ASSERT_WRES(variant->own, r, self->k.pid[3], CLD_EXITED, code_of(3));
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->own, r);
	kids_release(&self->k, 0);
	reap_group(_metadata, variant, &self->k, other, 0x1);
	kids_release(&self->k, 1);
	reap_group(_metadata, variant, &self->k, ours, 0x2);
}

/* Stop @pid, and continue it if @continued, consuming no report. */
static void stop_child(struct __test_metadata *_metadata, pid_t pid,
		       bool continued)
{
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(0, sync_stopped(pid));
	if (continued) {
		ASSERT_EQ(0, kill(pid, SIGCONT));
		ASSERT_EQ(0, sync_continued(pid));
	}
}

/*
 * A stopped (or continued) child that setpgid() moves takes its report
 * along, as a zombie takes its exit: a WUNTRACED (WCONTINUED) wait for the
 * group it joined finds it, one for the group it left does not.  The first
 * child of each group is live, and an older stop of a third group is
 * queued first, so that neither our first child nor the oldest report
 * finds the moved one by itself.
 */
static void jobctl_moved_by_setpgid(struct __test_metadata *_metadata,
				    const FIXTURE_VARIANT(pgrp) *v,
				    struct kids *k, bool continued)
{
	int opts = (continued ? WCONTINUED : WUNTRACED) | WNOHANG;
	int code = continued ? CLD_CONTINUED : CLD_STOPPED;
	int status = continued ? SIGCONT : SIGSTOP;
	pid_t other, third, ours = getpgrp();
	struct wres r;

	for (int i = 0; i < 5; i++)
		ASSERT_EQ(i, kids_add(k, true, code_of(i)));
	/* 0 leads the other group, 1 stays in ours, 2 stops in a third. */
	other = k->pid[0];
	third = k->pid[2];
	ASSERT_EQ(0, setpgid(other, other));
	ASSERT_EQ(0, setpgid(third, third));
	ASSERT_EQ(0, setpgid(k->pid[3], other));
	stop_child(_metadata, third, continued);

	/* 4 stops in our group and moves to the other. */
	stop_child(_metadata, k->pid[4], continued);
	ASSERT_EQ(0, setpgid(k->pid[4], other));
	owait(v, opts, &r);
	ASSERT_WRES_NONE(v->own, r);
	gwait(v, other, opts, &r);
	ASSERT_WRES(v->kind, r, k->pid[4], code, status);
	gwait(v, other, opts, &r);
	ASSERT_WRES_NONE(v->kind, r);

	/* 3 stops in the other group and moves to ours. */
	stop_child(_metadata, k->pid[3], continued);
	ASSERT_EQ(0, setpgid(k->pid[3], ours));
	gwait(v, other, opts, &r);
	ASSERT_WRES_NONE(v->kind, r);
	owait(v, opts, &r);
	ASSERT_WRES(v->own, r, k->pid[3], code, status);
	owait(v, opts, &r);
	ASSERT_WRES_NONE(v->own, r);

	/* The third group's report was there all along. */
	gwait(v, third, opts, &r);
	ASSERT_WRES(v->kind, r, third, code, status);
	for (int i = 0; i < 5; i++) {
		ASSERT_EQ(0, kill(k->pid[i], SIGKILL));
		ASSERT_EQ(k->pid[i], waitpid(k->pid[i], NULL, 0));
	}
}

TEST_F(pgrp, stop_moved_by_setpgid)
{
	jobctl_moved_by_setpgid(_metadata, variant, &self->k, false);
}

TEST_F(pgrp, continue_moved_by_setpgid)
{
	jobctl_moved_by_setpgid(_metadata, variant, &self->k, true);
}

/* The group a zombie died in outlives the group leader's reaping. */
TEST_F(pgrp, group_outlives_reaped_leader)
{
	struct wres r;
	pid_t g;

	ASSERT_EQ(0, kids_add(&self->k, false, code_of(0)));
	ASSERT_EQ(1, kids_add(&self->k, true, code_of(1)));
	g = self->k.pid[1];
	ASSERT_EQ(0, setpgid(g, g));
	ASSERT_EQ(2, kids_add(&self->k, true, code_of(2)));
	ASSERT_EQ(0, setpgid(self->k.pid[2], g));

	kids_release(&self->k, 1);
	wk_wait(WK_WAITPID_PID, g, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, g, CLD_EXITED, code_of(1));
	/* Leader reaped; its group lives on in child 2. */
	gwait(variant, g, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);
	kids_release(&self->k, 2);
	reap_group(_metadata, variant, &self->k, g, 0x4);
	/* Child 0 stayed in our group all along. */
	owait(variant, 0, &r);
	ASSERT_WRES(variant->own, r, self->k.pid[0], CLD_EXITED, code_of(0));
}

/* A child that leaves our group by itself after fork. */
struct mover_arg {
	struct gate *ready;
	struct gate *go;
	pid_t to;		/* 0: become a group leader */
	int code;
};

static int mover_fn(void *p)
{
	struct mover_arg *a = p;

	if (a->ready) {
		CHILD_CHECK(!setpgid(0, a->to));
		CHILD_CHECK(!note_send(a->ready));
		return gate_pass(a->go) ? a->code : WU_ORPHANED;
	}
	/* Move only when told to, then exit at once. */
	if (!gate_pass(a->go))
		return WU_ORPHANED;
	CHILD_CHECK(!setpgid(0, a->to));
	return a->code;
}

TEST_F(pgrp, child_changes_group_after_fork)
{
	struct gate ready, go;
	struct mover_arg a = { &ready, &go, 0, code_of(0) };
	struct wres r;
	pid_t pid;

	ASSERT_EQ(0, note_init(&ready));
	ASSERT_EQ(0, gate_init(&go));
	pid = spawn(mover_fn, &a);
	ASSERT_GT(pid, 0);
	ASSERT_TRUE(note_recv(&ready));
	ASSERT_EQ(pid, getpgid(pid));

	/* Our only child left our group: ECHILD, even blocking. */
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	owait(variant, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	gwait(variant, pid, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);

	ASSERT_EQ(0, gate_open(&go, 1));
	ASSERT_EQ(0, wait_zombie(pid));
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	gwait(variant, pid, 0, &r);
	ASSERT_WRES(variant->kind, r, pid, CLD_EXITED, code_of(0));
}

/*
 * The parent already sleeps in a wait for group G when a child of its
 * own group moves into G and exits: the wait reports that child.
 */
struct move_release {
	struct gate *go;
};

static void open_go(void *p)
{
	gate_open(((struct move_release *)p)->go, 1);
}

TEST_F(pgrp, child_moves_into_waited_group)
{
	struct gate go;
	struct mover_arg a = { NULL, &go, 0, code_of(1) };
	struct move_release mr = { &go };
	struct releaser rel;
	struct wres r;
	pid_t g, mover;

	/* Child 0 leads group G and stays alive. */
	ASSERT_EQ(0, kids_add(&self->k, true, code_of(0)));
	g = self->k.pid[0];
	ASSERT_EQ(0, setpgid(g, g));
	ASSERT_EQ(0, gate_init(&go));
	a.to = g;
	mover = spawn(mover_fn, &a);
	ASSERT_GT(mover, 0);

	gwait(variant, g, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);
	owait(variant, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->own, r);

	ASSERT_EQ(0, releaser_start(&rel, open_go, &mr));
	gwait(variant, g, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES(variant->kind, r, mover, CLD_EXITED, code_of(1));

	owait(variant, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	kids_release(&self->k, 0);
	reap_group(_metadata, variant, &self->k, g, 0x1);
}

/*
 * The reverse: the parent sleeps in a wait for its own group, and its
 * last child there moves to another group and exits.  The exit only
 * wakes waiters whose selection matches the child as it is now, so the
 * wait is not woken and goes on sleeping although no child is left in
 * the group (a quirk, but today's behaviour).  Any later wake-up, here
 * a signal, makes it rescan and fail with ECHILD (not EINTR: the rescan
 * comes before the signal check).
 */
struct emptied {
	struct gate *go;
	pid_t mover;
	pid_t waiter;
	int err;
};

static void move_then_interrupt(void *p)
{
	struct emptied *e = p;

	gate_open(e->go, 1);
	if (wait_zombie(e->mover))
		e->err = 1;
	/* Had the exit woken it, it would leave the syscall by now. */
	for (int i = 0; i < 200; i++)
		if (!thread_in_wait(e->waiter))
			e->err = 2;
	syscall(__NR_tgkill, getpid(), e->waiter, SIGUSR2);
}

static volatile sig_atomic_t got_usr2;

static void usr2_handler(int sig)
{
	(void)sig;
	got_usr2 = 1;
}

TEST_F(pgrp, emptied_group_wait_sleeps_on)
{
	struct sigaction sa = { .sa_handler = usr2_handler };
	struct gate go;
	struct mover_arg a = { NULL, &go, 0, code_of(1) };
	struct emptied e = { &go, 0, sys_gettid(), 0 };
	struct releaser rel;
	struct wres r;
	pid_t g;

	ASSERT_EQ(0, sigaction(SIGUSR2, &sa, NULL));
	ASSERT_EQ(0, kids_add(&self->k, true, code_of(0)));
	g = self->k.pid[0];
	ASSERT_EQ(0, setpgid(g, g));
	ASSERT_EQ(0, gate_init(&go));
	a.to = g;
	e.mover = spawn(mover_fn, &a);
	ASSERT_GT(e.mover, 0);

	ASSERT_EQ(0, releaser_start(&rel, move_then_interrupt, &e));
	owait(variant, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_EQ(0, e.err);
	ASSERT_WRES_ERR(r, ECHILD);
	ASSERT_TRUE(got_usr2);

	/* The mover is a zombie in G now. */
	kids_release(&self->k, 0);
	/* Count the mover in as child 1 for the final set check. */
	self->k.pid[1] = e.mover;
	self->k.n = 2;
	reap_group(_metadata, variant, &self->k, g, 0x3);
}

/* A group that exists but holds none of our children, or none at all. */
TEST_F(pgrp, group_without_children)
{
	pid_t pid;
	struct wres r;

	ASSERT_EQ(0, kids_add(&self->k, false, code_of(0)));
	pid = self->k.pid[0];
	ASSERT_EQ(0, wait_zombie(pid));
	/* Our own group, named explicitly: the zombie is there. */
	gwait(variant, getpgrp(),
	      WNOHANG | (wk_is_waitid(variant->kind) ? WNOWAIT : 0), &r);
	ASSERT_EQ(pid, r.pid);

	/* Now a live child that is alone in its own group. */
	ASSERT_EQ(1, kids_add(&self->k, true, code_of(1)));
	ASSERT_EQ(0, setpgid(self->k.pid[1], self->k.pid[1]));
	if (!wk_is_waitid(variant->kind)) {
		/* waitpid took the zombie above already. */
		gwait(variant, getpgrp(), WNOHANG, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	} else {
		gwait(variant, getpgrp(), 0, &r);
		ASSERT_WRES(variant->kind, r, pid, CLD_EXITED, code_of(0));
	}
	/* Our group exists (we are in it) but holds no child of ours. */
	gwait(variant, getpgrp(), WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	gwait(variant, getpgrp(), 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	/* A group id no process has. */
	gwait(variant, 0x3ffffff0, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	gwait(variant, 0x3ffffff0, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	kids_release(&self->k, 1);
	reap_group(_metadata, variant, &self->k, self->k.pid[1], 0x2);
}

TEST_HARNESS_MAIN
