// SPDX-License-Identifier: GPL-2.0
/*
 * The controlling tty's job control in an orphaned process group
 * (drivers/tty/tty_jobctrl.c: __tty_check_change(); n_tty_read(),
 * n_tty_write() with TOSTOP; tcsetpgrp()).
 *
 * A process in a background group that reads its controlling tty gets
 * SIGTTIN sent to its group and the read fails with EINTR (ERESTARTSYS
 * under a handler without SA_RESTART); if the group is orphaned, no
 * signal and EIO.  The same for a write with TOSTOP set, and for
 * tcsetpgrp(), with SIGTTOU.  An ignored or blocked SIGTTIN gives EIO
 * whatever the group; an ignored SIGTTOU lets the write or tcsetpgrp()
 * through.  With the default action the background reader stops.
 *
 * Setup: agent A leads a session and has a pty as its controlling tty
 * (foreground: A's group).  B, A's child, stays in A's group; X, B's
 * child, leads a background group, qualified by B.  When B exits, X goes
 * to the test (a subreaper in another session) and X's group is
 * orphaned.
 */
#include "jobctl_util.h"

FIXTURE(tty) {
	struct jc j;
	int a, b, x;
};

FIXTURE_SETUP(tty)
{
	struct jc *j = &self->j;

	jc_nchecks = 0;
	ASSERT_EQ(0, jc_init(j));
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	self->a = jc_spawn(j);
	ASSERT_GE(self->a, 0);
	ASSERT_EQ(j->pid[self->a], jc_call(j, self->a, JC_SETSID, 0, 0));
	if (jc_call(j, self->a, JC_TTY_OPEN, 0, 0) != 0)
		SKIP(return, "no pty: %s", strerror(errno));
	self->b = jc_fork(j, self->a);
	ASSERT_GE(self->b, 0);
	self->x = jc_fork(j, self->b);
	ASSERT_GE(self->x, 0);
	ASSERT_EQ(0, jc_call(j, self->x, JC_SETPGID, 0, 0));
	ASSERT_EQ(0, jc_call(j, self->x, JC_SIGACT, SIGTTIN, 2));
	ASSERT_EQ(0, jc_call(j, self->x, JC_SIGACT, SIGTTOU, 2));
}

FIXTURE_TEARDOWN(tty)
{
	jc_cleanup(&self->j);
}

#define J (&self->j)

/* B exits: X's group is orphaned. */
static void orphan_x(struct __test_metadata *_metadata,
		     FIXTURE_DATA(tty) *self)
{
	jc_exit(J, self->b, 0);
	ASSERT_EQ(getpid(), jc_ppid(J->pid[self->x]));
}

/*
 * Agent @slot does @op: in an orphaned group (@orphaned, flippable) it
 * must fail with @eorph (EIO; tcsetpgrp() turns it into ENOTTY) and see
 * no signal; else fail with EINTR after its group got the signal with
 * letter @l from the kernel.
 */
#define JC_EXPECT_JOBCTL(slot, op, arg, orphaned, l, eorph) do {	\
	bool __orph = (orphaned);					\
	long __ret;							\
	int __err;							\
	if (jc_flip())							\
		__orph = !__orph;					\
	jc_mark(J);							\
	__ret = jc_call(J, (slot), (op), (arg), 0);			\
	__err = errno;							\
	ASSERT_EQ(-1, __ret);						\
	ASSERT_EQ(__orph ? (eorph) : EINTR, __err) {			\
		TH_LOG("check %d: op %d in %s group: %s", jc_nchecks,	\
		       (op), __orph ? "an orphaned" : "a",		\
		       strerror(__err));				\
	}								\
	ASSERT_STREQ(__orph ? "" : (l), jc_got(J, (slot), SI_KERNEL));	\
} while (0)

TEST_F_TIMEOUT(tty, read, 180)
{
	/* The foreground reads (nothing there: EAGAIN, non-blocking). */
	ASSERT_EQ(-1, jc_call(J, self->a, JC_TTY_READ, 0, 0));
	ASSERT_EQ(EAGAIN, errno);
	JC_EXPECT_JOBCTL(self->x, JC_TTY_READ, 0, false, "I", EIO);
	/* SIGTTIN went to the whole group: X's child Y too. */
	{
		int y = jc_fork(J, self->x);

		ASSERT_GE(y, 0);
		jc_mark(J);
		ASSERT_EQ(-1, jc_call(J, self->x, JC_TTY_READ, 0, 0));
		ASSERT_EQ(EINTR, errno);
		jc_settle(J);
		ASSERT_STREQ("I", jc_got(J, y, SI_KERNEL));
	}
	orphan_x(_metadata, self);
	JC_EXPECT_JOBCTL(self->x, JC_TTY_READ, 0, true, "I", EIO);
	JC_CHECKS_DONE();
}

TEST_F_TIMEOUT(tty, read_ignored_or_blocked, 180)
{
	/* EIO whatever the group, and no signal. */
	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTIN, 1));
	jc_mark(J);
	ASSERT_EQ(-1, jc_call(J, self->x, JC_TTY_READ, 0, 0));
	ASSERT_EQ(EIO, errno);
	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTIN, 2));
	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTIN, 3));
	ASSERT_EQ(-1, jc_call(J, self->x, JC_TTY_READ, 0, 0));
	ASSERT_EQ(EIO, errno);
	ASSERT_STREQ("", jc_got(J, self->x, SI_KERNEL));
	/* Handled and unblocked again: SIGTTIN and EINTR again. */
	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTIN, 2));
	JC_EXPECT_JOBCTL(self->x, JC_TTY_READ, 0, false, "I", EIO);
	JC_CHECKS_DONE();
}

/* The default action: the background reader stops; orphaned, EIO. */
TEST_F_TIMEOUT(tty, read_default_action, 180)
{
	struct jc_rep r;
	int waited = 0;

	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTIN, 0));
	ASSERT_EQ(0, jc_send(J, self->x, JC_TTY_READ, 0, 0));
	while (jc_state(J, self->x) != 'T') {
		ASSERT_NE(0, jc_read_rep(J, self->x, &r, 1)) {
			TH_LOG("the background read returned %ld (%s)",
			       r.ret, strerror(r.err));
		}
		ASSERT_LT(++waited, JC_TIMEOUT_MS);
	}
	/* Bring X to the foreground: the restarted read then goes on. */
	ASSERT_EQ(0, jc_call(J, self->a, JC_TCSETPGRP, J->pid[self->x], 0));
	jc_kill(J, self->x, SIGCONT);
	ASSERT_EQ(0, jc_read_rep(J, self->x, &r, JC_TIMEOUT_MS));
	ASSERT_EQ(-1, r.ret);
	ASSERT_EQ(EAGAIN, r.err);
	/* X, in the foreground, gives it back (A is in the background). */
	ASSERT_EQ(0, jc_call(J, self->x, JC_TCSETPGRP, J->pid[self->a], 0));
	orphan_x(_metadata, self);
	ASSERT_EQ(-1, jc_call(J, self->x, JC_TTY_READ, 0, 0));
	ASSERT_EQ(EIO, errno);
	JC_CHECKS_DONE();
}

TEST_F_TIMEOUT(tty, write_tostop, 180)
{
	/* Without TOSTOP a background write goes through. */
	ASSERT_EQ(1, jc_call(J, self->x, JC_TTY_WRITE, 0, 0));
	ASSERT_EQ(0, jc_call(J, self->a, JC_TTY_TOSTOP, 1, 0));
	JC_EXPECT_JOBCTL(self->x, JC_TTY_WRITE, 0, false, "O", EIO);
	/* An ignored SIGTTOU lets it through. */
	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTOU, 1));
	ASSERT_EQ(1, jc_call(J, self->x, JC_TTY_WRITE, 0, 0));
	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTOU, 2));
	orphan_x(_metadata, self);
	JC_EXPECT_JOBCTL(self->x, JC_TTY_WRITE, 0, true, "O", EIO);
	JC_CHECKS_DONE();
}

TEST_F_TIMEOUT(tty, tcsetpgrp, 180)
{
	pid_t x = J->pid[self->x];

	JC_EXPECT_JOBCTL(self->x, JC_TCSETPGRP, x, false, "O", ENOTTY);
	orphan_x(_metadata, self);
	/* tiocspgrp() reports the orphaned group's EIO as ENOTTY. */
	JC_EXPECT_JOBCTL(self->x, JC_TCSETPGRP, x, true, "O", ENOTTY);
	/* An ignored SIGTTOU lets even an orphaned group take the tty. */
	ASSERT_EQ(0, jc_call(J, self->x, JC_SIGACT, SIGTTOU, 1));
	ASSERT_EQ(0, jc_call(J, self->x, JC_TCSETPGRP, x, 0));
	ASSERT_EQ(-1, jc_call(J, self->a, JC_TTY_READ, 0, 0));
	ASSERT_EQ(EIO, errno);	/* A is now in the background, orphaned */
	JC_CHECKS_DONE();
}

TEST_HARNESS_MAIN
