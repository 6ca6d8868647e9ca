// SPDX-License-Identifier: GPL-2.0
/*
 * Basic wait semantics, run once per wait flavour (fixture variants):
 * wait, waitpid(-1/pid/0/-pgid), wait4(-1/pid), waitid(P_ALL/P_PID/
 * P_PGID 0/P_PGID pgid/P_PIDFD).  Children inherit the test's process
 * group, so the group flavours behave like "any child" here; group
 * selection proper is in wait_pgrp.c.
 */
#include "wait_util.h"

FIXTURE(basic) {
	struct kids k;
};

FIXTURE_VARIANT(basic) {
	enum wkind kind;
};

FIXTURE_VARIANT_ADD(basic, wait) { .kind = WK_WAIT, };
FIXTURE_VARIANT_ADD(basic, waitpid_any) { .kind = WK_WAITPID_ANY, };
FIXTURE_VARIANT_ADD(basic, waitpid_pid) { .kind = WK_WAITPID_PID, };
FIXTURE_VARIANT_ADD(basic, waitpid_pgrp0) { .kind = WK_WAITPID_PGRP0, };
FIXTURE_VARIANT_ADD(basic, waitpid_pgid) { .kind = WK_WAITPID_PGID, };
FIXTURE_VARIANT_ADD(basic, wait4_any) { .kind = WK_WAIT4_ANY, };
FIXTURE_VARIANT_ADD(basic, wait4_pid) { .kind = WK_WAIT4_PID, };
FIXTURE_VARIANT_ADD(basic, waitid_all) { .kind = WK_WAITID_ALL, };
FIXTURE_VARIANT_ADD(basic, waitid_pid) { .kind = WK_WAITID_PID, };
FIXTURE_VARIANT_ADD(basic, waitid_pgid0) { .kind = WK_WAITID_PGID0, };
FIXTURE_VARIANT_ADD(basic, waitid_pgid) { .kind = WK_WAITID_PGID, };
FIXTURE_VARIANT_ADD(basic, waitid_pidfd) { .kind = WK_WAITID_PIDFD, };

FIXTURE_SETUP(basic)
{
	memset(&self->k, 0, sizeof(self->k));
}

FIXTURE_TEARDOWN(basic)
{
}

/* Wait the variant's way; @i is the target child for targeted kinds. */
static void bwait(const FIXTURE_VARIANT(basic) *v, struct kids *k, int i,
		  int opts, struct wres *r)
{
	wk_wait(v->kind, k->pid[i], getpgrp(), k->pidfd[i], opts, r);
}

/*
 * Reap every child of @k not yet marked in @done and check its status;
 * afterwards the next wait must fail with ECHILD.  Any-child kinds
 * compare the set of reported children, targeted kinds go child by
 * child.
 */
static void reap_rest(struct __test_metadata *_metadata,
		      const FIXTURE_VARIANT(basic) *v, struct kids *k,
		      bool *done)
{
	struct wres r;
	int left = 0;

	for (int i = 0; i < k->n; i++)
		left += !done[i];

	while (left) {
		int target = 0, got;

		/* Targeted kinds: the lowest index not reaped yet. */
		while (wk_targeted(v->kind) && done[target])
			target++;
		bwait(v, k, target, 0, &r);
		got = idx_of(k->pid, k->n, r.pid);
		ASSERT_GE(got, 0);
		ASSERT_FALSE(done[got]);
		ASSERT_WRES(v->kind, r, k->pid[got], CLD_EXITED, code_of(got));
		done[got] = true;
		left--;
	}
	ASSERT_EQ(0, left);

	bwait(v, k, 0, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	if (wk_has_opts(v->kind)) {
		bwait(v, k, 0, WNOHANG, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	}
}

/* No children at all: ECHILD, also with WNOHANG. */
TEST_F(basic, no_children)
{
	struct wres r;

	/*
	 * Targeted kinds aim at an existing process that is not our
	 * child: our parent.
	 */
	self->k.pid[0] = getppid();
	self->k.pidfd[0] = sys_pidfd_open(getppid(), 0);
	ASSERT_GE(self->k.pidfd[0], 0);

	bwait(variant, &self->k, 0, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	if (wk_has_opts(variant->kind)) {
		bwait(variant, &self->k, 0, WNOHANG, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	}
}

/* Only live children: WNOHANG reports nothing (0, si_pid 0). */
TEST_F(basic, wnohang_only_live)
{
	bool done[KIDS_MAX] = { false };
	struct wres r;

	if (!wk_has_opts(variant->kind))
		SKIP(return, "wait() takes no options");

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(i, kids_add(&self->k, true, code_of(i)));
	}

	for (int i = 0; i < 3; i++) {
		bwait(variant, &self->k, i, WNOHANG, &r);
		ASSERT_WRES_NONE(variant->kind, r);
	}
	for (int i = 0; i < 3; i++)
		kids_release(&self->k, i);
	reap_rest(_metadata, variant, &self->k, done);
}

/*
 * A blocking wait with only live children blocks: the child is let go
 * by a helper thread only once this thread sleeps in the wait, and the
 * wait then reports exactly that child.
 */
TEST_F(basic, blocks_until_exit)
{
	bool done[KIDS_MAX] = { false };
	struct releaser rel;
	struct wres r;

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(i, kids_add(&self->k, true, code_of(i)));
	}

	ASSERT_EQ(0, releaser_start(&rel, release_one, &self->k.gate[1]));
	bwait(variant, &self->k, 1, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES(variant->kind, r, self->k.pid[1], CLD_EXITED, code_of(1));
	done[1] = true;

	/* The others are still alive. */
	if (wk_has_opts(variant->kind)) {
		bwait(variant, &self->k, 0, WNOHANG, &r);
		ASSERT_WRES_NONE(variant->kind, r);
	}
	kids_release(&self->k, 0);
	kids_release(&self->k, 2);
	reap_rest(_metadata, variant, &self->k, done);
}

/*
 * Zombies among many live children: exactly the zombies are reported
 * (as a set for any-child kinds), then nothing while the rest lives.
 * A targeted wait on a live child must not report some other zombie.
 */
TEST_F(basic, zombies_among_live)
{
	static const bool zombie[] = {
		0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1,
	};
	const int n = ARRAY_SIZE(zombie);
	bool done[KIDS_MAX] = { false };
	struct wres r;
	int nz = 0;

	for (int i = 0; i < n; i++) {
		ASSERT_EQ(i, kids_add(&self->k, !zombie[i], code_of(i)));
		nz += zombie[i];
	}
	/* Make sure all are zombies before looking (WNOWAIT, no reaping). */
	for (int i = 0; i < n; i++) {
		if (zombie[i])
			ASSERT_EQ(0, wait_zombie(self->k.pid[i]));
	}

	if (wk_targeted(variant->kind)) {
		bwait(variant, &self->k, 0, WNOHANG, &r);
		ASSERT_WRES_NONE(variant->kind, r);
		/* Reverse creation order: no list-order dependence. */
		for (int i = n - 1; i >= 0; i--) {
			if (!zombie[i])
				continue;
			bwait(variant, &self->k, i, 0, &r);
			ASSERT_WRES(variant->kind, r, self->k.pid[i],
				    CLD_EXITED, code_of(i));
			done[i] = true;
		}
	} else {
		for (int j = 0; j < nz; j++) {
			int got;

			bwait(variant, &self->k, 0, 0, &r);
			got = idx_of(self->k.pid, n, r.pid);
			ASSERT_GE(got, 0);
			ASSERT_TRUE(zombie[got]);
			ASSERT_FALSE(done[got]);
			ASSERT_WRES(variant->kind, r, self->k.pid[got],
				    CLD_EXITED, code_of(got));
			done[got] = true;
		}
		if (wk_has_opts(variant->kind)) {
			bwait(variant, &self->k, 0, WNOHANG, &r);
			ASSERT_WRES_NONE(variant->kind, r);
		}
	}

	for (int i = 0; i < n; i++)
		if (!zombie[i])
			kids_release(&self->k, i);
	reap_rest(_metadata, variant, &self->k, done);
}

/*
 * WNOWAIT leaves the child reportable: the same child comes back on the
 * next call until a wait without WNOWAIT reaps it.  wait4() does not
 * know WNOWAIT and must refuse it without touching the zombie.
 */
TEST_F(basic, wnowait_repeats)
{
	bool done[KIDS_MAX] = { false };
	struct wres r;

	if (!wk_has_opts(variant->kind))
		SKIP(return, "wait() takes no options");

	ASSERT_EQ(0, kids_add(&self->k, true, code_of(0)));
	ASSERT_EQ(1, kids_add(&self->k, false, code_of(1)));

	if (!wk_is_waitid(variant->kind)) {
		ASSERT_EQ(0, wait_zombie(self->k.pid[1]));
		bwait(variant, &self->k, 1, WNOWAIT, &r);
		ASSERT_WRES_ERR(r, EINVAL);
	} else {
		for (int rep = 0; rep < 3; rep++) {
			bwait(variant, &self->k, 1, WNOWAIT, &r);
			ASSERT_WRES(variant->kind, r, self->k.pid[1],
				    CLD_EXITED, code_of(1));
		}
		bwait(variant, &self->k, 1, 0, &r);
		ASSERT_WRES(variant->kind, r, self->k.pid[1], CLD_EXITED,
			    code_of(1));
		done[1] = true;
		bwait(variant, &self->k, wk_targeted(variant->kind) ? 1 : 0,
		      WNOHANG | WNOWAIT, &r);
		if (wk_targeted(variant->kind))
			ASSERT_WRES_ERR(r, ECHILD);
		else
			ASSERT_WRES_NONE(variant->kind, r);
	}
	kids_release(&self->k, 0);
	reap_rest(_metadata, variant, &self->k, done);
}

/* A reaped child is gone for good: targeting it again gives ECHILD. */
TEST_F(basic, reaped_once)
{
	bool done[KIDS_MAX] = { false };
	struct wres r;

	ASSERT_EQ(0, kids_add(&self->k, false, code_of(0)));
	ASSERT_EQ(1, kids_add(&self->k, true, code_of(1)));

	bwait(variant, &self->k, 0, 0, &r);
	ASSERT_WRES(variant->kind, r, self->k.pid[0], CLD_EXITED, code_of(0));
	done[0] = true;
	if (wk_targeted(variant->kind)) {
		bwait(variant, &self->k, 0, WNOHANG, &r);
		ASSERT_WRES_ERR(r, ECHILD);
		bwait(variant, &self->k, 0, 0, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	}
	kids_release(&self->k, 1);
	reap_rest(_metadata, variant, &self->k, done);
}

/*
 * A pidfd opened with PIDFD_NONBLOCK makes waitid(P_PIDFD) non-blocking:
 * with the child still alive it fails with EAGAIN, unless the caller
 * asked for WNOHANG itself (then it is the usual 0); once the child is
 * a zombie it reaps as usual.
 */
TEST(pidfd_nonblock_eagain)
{
	struct kids k = { 0 };
	struct wres r;
	int fd;

	ASSERT_EQ(0, kids_add(&k, true, code_of(0)));
	fd = sys_pidfd_open(k.pid[0], O_NONBLOCK);
	ASSERT_GE(fd, 0);
	wk_wait(WK_WAITID_PIDFD, 0, 0, fd, 0, &r);
	ASSERT_WRES_ERR(r, EAGAIN);
	wk_wait(WK_WAITID_PIDFD, 0, 0, fd, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITID_PIDFD, r);

	kids_release(&k, 0);
	ASSERT_EQ(0, wait_zombie(k.pid[0]));
	wk_wait(WK_WAITID_PIDFD, 0, 0, fd, 0, &r);
	ASSERT_WRES(WK_WAITID_PIDFD, r, k.pid[0], CLD_EXITED, code_of(0));
	wk_wait(WK_WAITID_PIDFD, 0, 0, fd, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

TEST_HARNESS_MAIN
