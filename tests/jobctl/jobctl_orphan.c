// SPDX-License-Identifier: GPL-2.0
/*
 * Orphaned process groups, as stock Linux 6.12 has them (kernel/exit.c:
 * kill_orphaned_pgrp(), will_become_orphaned_pgrp(); kernel/signal.c:
 * get_signal()).
 *
 * A process group is orphaned when none of its members that is not a
 * zombie has a real parent in another process group of the same session,
 * not counting a parent that is the global init.  When an exit makes a
 * group orphaned and the group has a stopped member, every member gets
 * SIGHUP, then SIGCONT (si_code SI_KERNEL).  The exit checks the exiting
 * process's own group (if its parent is in another group of its session)
 * and the group of each child it hands to a new parent (if the child is
 * in another group of the exiting process's session).  setpgid() and
 * setsid() send nothing, but change what later checks find.
 *
 * Whether a group is orphaned "now" is probed with SIGTSTP: get_signal()
 * discards it in an orphaned group, else it stops the process
 * (jobctl_util.h, jc_probe()).
 *
 * Agents are named after their role; "C" is the test itself, which in
 * most cases is a subreaper in another session than the agents (the
 * first agent calls setsid()), so a process handed to C qualifies
 * nothing.
 */
#include "jobctl_util.h"

FIXTURE(orphan) {
	struct jc j;
};

FIXTURE_SETUP(orphan)
{
	jc_nchecks = 0;
	ASSERT_EQ(0, jc_init(&self->j));
}

FIXTURE_TEARDOWN(orphan)
{
	jc_cleanup(&self->j);
}

#define J (&self->j)
#define PID(s) (self->j.pid[s])

/* C becomes a subreaper; agent A, C's child, leads a new session. */
static int session_root(struct __test_metadata *_metadata, struct jc *j)
{
	int a;

	EXPECT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	a = jc_spawn(j);
	EXPECT_GE(a, 0);
	EXPECT_EQ(j->pid[a], jc_call(j, a, JC_SETSID, 0, 0));
	return a;
}

#define FORK(parent) ({							\
	int __s = jc_fork(J, (parent));					\
	ASSERT_GE(__s, 0);						\
	__s;								\
})
#define CALL(slot, op, a, b) jc_call(J, (slot), (op), (a), (b))
#define OWN_GROUP(slot) ASSERT_EQ(0, CALL((slot), JC_SETPGID, 0, 0))

/*
 * P has a child Q in another group of the session; Q's group has no
 * other member with a parent outside it.  P exits, Q goes to C (another
 * session): Q's group is orphaned.  With a stopped member, every member
 * gets SIGHUP and SIGCONT; without, nothing.
 */
static void parent_exit(struct __test_metadata *_metadata,
			FIXTURE_DATA(orphan) *self, bool stopped)
{
	int a, p, q, q2;

	a = session_root(_metadata, J);
	p = FORK(a);
	q = FORK(p);
	OWN_GROUP(q);
	q2 = FORK(q);
	JC_EXPECT_PROBE(J, q, 0);
	JC_EXPECT_PROBE(J, q2, 0);
	if (stopped)
		jc_stop(J, q2);
	jc_mark(J);
	jc_exit(J, p, 0);
	ASSERT_EQ(getpid(), jc_ppid(PID(q)));
	jc_settle(J);
	JC_EXPECT_GOT(J, q, stopped ? "HC" : "");
	JC_EXPECT_GOT(J, q2, stopped ? "HC" : "");
	JC_EXPECT_GOT(J, a, "");
	ASSERT_NE('T', jc_state(J, q2));
	JC_EXPECT_PROBE(J, q, 1);
	JC_EXPECT_PROBE(J, q2, 1);
	JC_CHECKS_DONE();
}

TEST_F_TIMEOUT(orphan, parent_exit_stopped_member, 180)
{
	parent_exit(_metadata, self, true);
}

TEST_F_TIMEOUT(orphan, parent_exit_no_stopped_member, 180)
{
	parent_exit(_metadata, self, false);
}

/*
 * M, whose parent A is in another group of the session, is the only
 * member of its group G to qualify it; its child K (stopped) stays in G.
 * M exits: G is orphaned (K goes to C), K gets SIGHUP and SIGCONT.
 */
TEST_F_TIMEOUT(orphan, member_exit_orphans_own_group, 180)
{
	int a, m, k;

	a = session_root(_metadata, J);
	m = FORK(a);
	OWN_GROUP(m);
	k = FORK(m);
	JC_EXPECT_PROBE(J, k, 0);
	jc_stop(J, k);
	jc_mark(J);
	jc_exit(J, m, 0);
	jc_settle(J);
	JC_EXPECT_GOT(J, k, "HC");
	JC_EXPECT_GOT(J, a, "");
	JC_EXPECT_PROBE(J, k, 1);
	JC_CHECKS_DONE();
}

/*
 * The same, but M2 (also A's child) is in G too: M's exit leaves G
 * qualified by M2, so nothing happens and K stays stopped; M2's exit
 * then orphans G.
 */
TEST_F_TIMEOUT(orphan, member_exit_other_member_qualifies, 180)
{
	int a, m, m2, k;

	a = session_root(_metadata, J);
	m = FORK(a);
	OWN_GROUP(m);
	m2 = FORK(a);
	ASSERT_EQ(0, CALL(m2, JC_SETPGID, 0, PID(m)));
	k = FORK(m);
	jc_stop(J, k);
	jc_mark(J);
	jc_exit(J, m, 0);
	jc_settle(J);
	JC_EXPECT_GOT(J, k, "");
	JC_EXPECT_GOT(J, m2, "");
	ASSERT_EQ('T', jc_state(J, k));
	JC_EXPECT_PROBE(J, m2, 0);
	jc_mark(J);
	jc_exit(J, m2, 0);
	jc_settle(J);
	JC_EXPECT_GOT(J, k, "HC");
	JC_EXPECT_PROBE(J, k, 1);
	JC_CHECKS_DONE();
}

/*
 * A parent in another session does not qualify a group; one in another
 * group of the same session does.
 */
TEST_F_TIMEOUT(orphan, parent_in_other_session, 180)
{
	int a, b, c, x;

	/* Children of C: A in C's session, B in its own. */
	a = jc_spawn(J);
	ASSERT_GE(a, 0);
	OWN_GROUP(a);
	JC_EXPECT_PROBE(J, a, 0);
	b = jc_spawn(J);
	ASSERT_GE(b, 0);
	ASSERT_EQ(PID(b), CALL(b, JC_SETSID, 0, 0));
	JC_EXPECT_PROBE(J, b, 1);
	/* X: a new session below B; C2: a new group in B's session. */
	x = FORK(b);
	ASSERT_EQ(PID(x), CALL(x, JC_SETSID, 0, 0));
	JC_EXPECT_PROBE(J, x, 1);
	c = FORK(b);
	OWN_GROUP(c);
	JC_EXPECT_PROBE(J, c, 0);
	/* C2's own child in C2's group: qualified through C2 only. */
	x = FORK(c);
	JC_EXPECT_PROBE(J, x, 0);
	JC_CHECKS_DONE();
}

/*
 * A parent that is the global init does not qualify a group, even in the
 * same session (in the fastreap guest, init and the tests share session
 * 0).  And an exit whose parent is init checks the group all the same:
 * X, a child of init in another group of init's session, exits; its
 * group, orphaned before and after, has a stopped member, which gets
 * SIGHUP and SIGCONT again.  Where init is in another session (most
 * hosts), neither part says much: then nothing is sent.
 */
TEST_F_TIMEOUT(orphan, global_init_parent, 180)
{
	struct jc_stat s1, sx;
	int a, p, x, y;

	a = jc_spawn(J);
	ASSERT_GE(a, 0);
	OWN_GROUP(a);
	p = FORK(a);
	x = FORK(p);
	OWN_GROUP(x);
	JC_EXPECT_PROBE(J, x, 0);
	jc_exit(J, p, 0);
	if (jc_ppid(PID(x)) != 1)
		SKIP(return, "an ancestor is a subreaper: X went to %d",
		     jc_ppid(PID(x)));
	ASSERT_EQ(0, jc_proc_stat(1, &s1));
	ASSERT_EQ(0, jc_proc_stat(PID(x), &sx));
	if (s1.sid != sx.sid)
		TH_LOG("init is in session %d, X in %d: a weaker case",
		       s1.sid, sx.sid);
	JC_EXPECT_PROBE(J, x, 1);
	y = FORK(x);
	JC_EXPECT_PROBE(J, y, 1);
	jc_stop(J, y);
	jc_mark(J);
	jc_exit(J, x, 0);
	jc_settle(J);
	JC_EXPECT_GOT(J, y, s1.sid == sx.sid ? "HC" : "");
	if (s1.sid != sx.sid)
		ASSERT_EQ('T', jc_state(J, y));
	JC_CHECKS_DONE();
}

/*
 * A zombie does not qualify its group.  Z (parent P in another group of
 * the session) leads G, with child S.  Z exits and stays a zombie, S goes
 * to C: G is orphaned.  Then P exits: handing the zombie Z to C checks G
 * again, and G, still orphaned, has a stopped member: SIGHUP, SIGCONT.
 */
TEST_F_TIMEOUT(orphan, zombie_members_do_not_count, 180)
{
	int a, p, z, s;

	a = session_root(_metadata, J);
	p = FORK(a);
	z = FORK(p);
	OWN_GROUP(z);
	s = FORK(z);
	JC_EXPECT_PROBE(J, s, 0);
	jc_mark(J);
	jc_exit(J, z, 0);
	ASSERT_EQ('Z', proc_state(PID(z), PID(z)));
	jc_settle(J);
	JC_EXPECT_GOT(J, s, "");
	JC_EXPECT_PROBE(J, s, 1);
	jc_stop(J, s);
	jc_mark(J);
	jc_exit(J, p, 0);
	jc_settle(J);
	JC_EXPECT_GOT(J, s, "HC");
	JC_EXPECT_GOT(J, a, "");
	JC_CHECKS_DONE();
}

/*
 * A multi-threaded member whose leader thread has exited (a zombie
 * leader, threads alive) still qualifies its group; once its last thread
 * exits, the group is orphaned.
 */
TEST_F_TIMEOUT(orphan, threaded_member_exited_leader_counts, 180)
{
	int a, t, k;

	a = session_root(_metadata, J);
	t = FORK(a);
	OWN_GROUP(t);
	k = FORK(t);
	ASSERT_EQ(0, jc_leader_exit(J, t));
	ASSERT_NE(PID(t), self->j.tid[t]);
	JC_EXPECT_PROBE(J, k, 0);
	JC_EXPECT_PROBE(J, t, 0);
	jc_stop(J, k);
	jc_mark(J);
	jc_exit(J, t, 0);
	jc_settle(J);
	JC_EXPECT_GOT(J, k, "HC");
	JC_EXPECT_PROBE(J, k, 1);
	JC_CHECKS_DONE();
}

/*
 * Reparenting to a subreaper A in another group of the same session: X
 * stays qualified by its new parent, nothing is sent.
 */
TEST_F_TIMEOUT(orphan, subreaper_other_group_same_session, 180)
{
	int a, p, x, y;

	a = session_root(_metadata, J);
	ASSERT_EQ(0, CALL(a, JC_SUBREAPER, 1, 0));
	p = FORK(a);
	OWN_GROUP(p);
	x = FORK(p);
	OWN_GROUP(x);
	y = FORK(x);
	jc_stop(J, y);
	jc_mark(J);
	jc_exit(J, p, 0);
	ASSERT_EQ(PID(a), jc_ppid(PID(x)));
	jc_settle(J);
	JC_EXPECT_GOT(J, x, "");
	JC_EXPECT_GOT(J, y, "");
	ASSERT_EQ('T', jc_state(J, y));
	JC_EXPECT_PROBE(J, x, 0);
	JC_CHECKS_DONE();
}

/*
 * Reparenting to a subreaper A in the child's own group: X no longer
 * qualifies the group, which is orphaned and has a stopped member: every
 * member, A included, gets SIGHUP and SIGCONT.
 */
TEST_F_TIMEOUT(orphan, subreaper_same_group, 180)
{
	int a, p, x, y;

	a = session_root(_metadata, J);
	ASSERT_EQ(0, CALL(a, JC_SUBREAPER, 1, 0));
	p = FORK(a);
	OWN_GROUP(p);
	x = FORK(p);
	ASSERT_EQ(0, CALL(x, JC_SETPGID, 0, PID(a)));
	y = FORK(x);
	JC_EXPECT_PROBE(J, y, 0);
	jc_stop(J, y);
	jc_mark(J);
	jc_exit(J, p, 0);
	ASSERT_EQ(PID(a), jc_ppid(PID(x)));
	jc_settle(J);
	JC_EXPECT_GOT(J, a, "HC");
	JC_EXPECT_GOT(J, x, "HC");
	JC_EXPECT_GOT(J, y, "HC");
	JC_EXPECT_PROBE(J, y, 1);
	JC_CHECKS_DONE();
}

/*
 * Reparenting to a subreaper in another session (C): the group is
 * orphaned, as with init.
 */
TEST_F_TIMEOUT(orphan, subreaper_other_session, 180)
{
	int a, p, x, y;

	a = session_root(_metadata, J);
	p = FORK(a);
	x = FORK(p);
	OWN_GROUP(x);
	y = FORK(x);
	jc_stop(J, y);
	jc_mark(J);
	jc_exit(J, p, 0);
	ASSERT_EQ(getpid(), jc_ppid(PID(x)));
	jc_settle(J);
	JC_EXPECT_GOT(J, x, "HC");
	JC_EXPECT_GOT(J, y, "HC");
	JC_CHECKS_DONE();
}

/*
 * setpgid() changes the state silently.  P (in A's group; its parent is
 * C, in another session) has a child X leading group G with a stopped
 * member Y; X qualifies G through P.  P joins G: G is orphaned (P's own
 * parent is in another session), nothing is sent, Y stays stopped, and
 * a probe sees G orphaned.  P goes back: G is not orphaned again.
 */
TEST_F_TIMEOUT(orphan, setpgid_changes_state_silently, 180)
{
	int a, m, p, x, y;

	a = session_root(_metadata, J);
	m = FORK(a);
	p = FORK(m);
	jc_exit(J, m, 0);
	ASSERT_EQ(getpid(), jc_ppid(PID(p)));
	x = FORK(p);
	OWN_GROUP(x);
	y = FORK(x);
	jc_stop(J, y);
	JC_EXPECT_PROBE(J, x, 0);
	jc_mark(J);
	ASSERT_EQ(0, CALL(p, JC_SETPGID, 0, PID(x)));
	jc_settle(J);
	JC_EXPECT_GOT(J, x, "");
	JC_EXPECT_GOT(J, y, "");
	JC_EXPECT_GOT(J, p, "");
	ASSERT_EQ('T', jc_state(J, y));
	JC_EXPECT_PROBE(J, x, 1);
	JC_EXPECT_PROBE(J, p, 1);
	ASSERT_EQ(0, CALL(p, JC_SETPGID, 0, PID(a)));
	JC_EXPECT_PROBE(J, x, 0);
	/* A parent moving the child: A's child Q joins G, qualifying it. */
	ASSERT_EQ(0, CALL(p, JC_SETPGID, 0, PID(x)));
	JC_EXPECT_PROBE(J, x, 1);
	{
		int q = FORK(a);

		ASSERT_EQ(0, CALL(a, JC_SETPGID, PID(q), PID(x)));
		JC_EXPECT_PROBE(J, x, 0);
		ASSERT_EQ(0, CALL(a, JC_SETPGID, PID(q), PID(a)));
		JC_EXPECT_PROBE(J, x, 1);
	}
	jc_settle(J);
	JC_EXPECT_GOT(J, y, "");
	ASSERT_EQ('T', jc_state(J, y));
	JC_CHECKS_DONE();
}

/*
 * A parent that changes group changes what all its children qualify at
 * once.  P starts in A's group beside its child X; its child Y leads a
 * group G.  P's moves: to a group of its own (X, left behind, qualifies
 * A's group), into G (Y is at home there, X still away), back to A's
 * group (A's group is orphaned again, Y qualifies G).  Then P leaves once
 * more and exits: its children go to C, in another session, and A's
 * group, with X stopped, is orphaned.
 */
TEST_F_TIMEOUT(orphan, parent_moves_away_from_its_children, 180)
{
	int a, p, x, y, y2;

	a = session_root(_metadata, J);
	p = FORK(a);
	x = FORK(p);
	y = FORK(p);
	OWN_GROUP(y);
	y2 = FORK(y);
	/* A's parent is C, in another session; P's and X's are in the group */
	JC_EXPECT_PROBE(J, x, 1);
	JC_EXPECT_PROBE(J, y2, 0);
	OWN_GROUP(p);
	JC_EXPECT_PROBE(J, x, 0);
	JC_EXPECT_PROBE(J, p, 0);
	JC_EXPECT_PROBE(J, y2, 0);
	ASSERT_EQ(0, CALL(p, JC_SETPGID, 0, PID(y)));
	JC_EXPECT_PROBE(J, x, 0);
	JC_EXPECT_PROBE(J, y2, 0);
	ASSERT_EQ(0, CALL(p, JC_SETPGID, 0, PID(a)));
	JC_EXPECT_PROBE(J, x, 1);
	JC_EXPECT_PROBE(J, y2, 0);
	OWN_GROUP(p);
	JC_EXPECT_PROBE(J, x, 0);
	jc_stop(J, x);
	jc_mark(J);
	jc_exit(J, p, 0);
	ASSERT_EQ(getpid(), jc_ppid(PID(x)));
	ASSERT_EQ(getpid(), jc_ppid(PID(y)));
	jc_settle(J);
	JC_EXPECT_GOT(J, x, "HC");
	JC_EXPECT_GOT(J, a, "HC");
	JC_EXPECT_GOT(J, y, "");
	JC_EXPECT_GOT(J, y2, "");
	JC_EXPECT_PROBE(J, y2, 1);
	JC_CHECKS_DONE();
}

/*
 * setsid() of a parent with a child in its group and one leading another:
 * P, A's child, has joined W's group, where its child X was born; its
 * child Y leads G.  When P leaves the session, G is orphaned, and W's
 * group stays qualified by W alone until W moves to A's group.
 */
TEST_F_TIMEOUT(orphan, setsid_of_a_parent_with_children_home_and_away, 180)
{
	int a, p, x, y, y2, w;

	a = session_root(_metadata, J);
	p = FORK(a);
	y = FORK(p);
	OWN_GROUP(y);
	y2 = FORK(y);
	w = FORK(a);
	OWN_GROUP(w);
	ASSERT_EQ(0, CALL(p, JC_SETPGID, 0, PID(w)));
	x = FORK(p);
	JC_EXPECT_PROBE(J, x, 0);
	JC_EXPECT_PROBE(J, y2, 0);
	ASSERT_EQ(PID(p), CALL(p, JC_SETSID, 0, 0));
	JC_EXPECT_PROBE(J, y2, 1);
	JC_EXPECT_PROBE(J, x, 0);
	ASSERT_EQ(0, CALL(w, JC_SETPGID, 0, PID(a)));
	JC_EXPECT_PROBE(J, x, 1);
	jc_exit(J, x, 0);
	JC_EXPECT_PROBE(J, y2, 1);
	JC_CHECKS_DONE();
}

/*
 * setpgid() of a parent into the group of one of its children, while its
 * other children lead groups of their own.  P, M's child, joins Y's group:
 * now P qualifies it, and Y no longer does.  When M exits, P goes to C
 * (another session), and Y's group, with a stopped member, is orphaned;
 * Z's group is still qualified by Z.  With @crowd more members in Y's
 * group than P has children, the kernel may find Y among P's children
 * rather than among the group's members.
 */
static void parent_joins_a_child(struct __test_metadata *_metadata,
				 FIXTURE_DATA(orphan) *self, int crowd)
{
	int a, m, p, y, y2, z, z2, v, i;

	a = session_root(_metadata, J);
	m = FORK(a);
	p = FORK(m);
	OWN_GROUP(p);
	y = FORK(p);
	OWN_GROUP(y);
	y2 = FORK(y);
	for (i = 0; i < crowd; i++)
		FORK(y);
	z = FORK(p);
	OWN_GROUP(z);
	z2 = FORK(z);
	v = FORK(p);
	OWN_GROUP(v);
	JC_EXPECT_PROBE(J, y2, 0);
	JC_EXPECT_PROBE(J, z2, 0);
	ASSERT_EQ(0, CALL(p, JC_SETPGID, 0, PID(y)));
	JC_EXPECT_PROBE(J, y2, 0);
	JC_EXPECT_PROBE(J, z2, 0);
	jc_stop(J, y2);
	jc_mark(J);
	jc_exit(J, m, 0);
	ASSERT_EQ(getpid(), jc_ppid(PID(p)));
	jc_settle(J);
	JC_EXPECT_GOT(J, y2, "HC");
	JC_EXPECT_GOT(J, y, "HC");
	JC_EXPECT_GOT(J, p, "HC");
	JC_EXPECT_GOT(J, z2, "");
	JC_EXPECT_GOT(J, v, "");
	JC_EXPECT_PROBE(J, z2, 0);
	JC_CHECKS_DONE();
}

TEST_F_TIMEOUT(orphan, parent_joins_the_group_of_a_child, 180)
{
	parent_joins_a_child(_metadata, self, 0);
}

TEST_F_TIMEOUT(orphan, parent_joins_the_crowded_group_of_a_child, 180)
{
	parent_joins_a_child(_metadata, self, 12);
}

/*
 * setsid() of the parent that qualified a group orphans it, silently;
 * setsid() of a member leaves the group to the others.
 */
TEST_F_TIMEOUT(orphan, setsid_changes_state_silently, 180)
{
	int a, p, x, y, w;

	a = session_root(_metadata, J);
	p = FORK(a);
	x = FORK(p);
	OWN_GROUP(x);
	y = FORK(x);
	w = FORK(a);
	ASSERT_EQ(0, CALL(w, JC_SETPGID, 0, PID(x)));
	jc_stop(J, y);
	JC_EXPECT_PROBE(J, x, 0);
	jc_mark(J);
	/* P leaves the session: X no longer qualifies G; W still does. */
	ASSERT_EQ(PID(p), CALL(p, JC_SETSID, 0, 0));
	JC_EXPECT_PROBE(J, x, 0);
	/* W, the last one, leaves G for a session of its own. */
	ASSERT_EQ(PID(w), CALL(w, JC_SETSID, 0, 0));
	jc_settle(J);
	JC_EXPECT_GOT(J, x, "");
	JC_EXPECT_GOT(J, y, "");
	ASSERT_EQ('T', jc_state(J, y));
	JC_EXPECT_PROBE(J, x, 1);
	JC_CHECKS_DONE();
}

/*
 * setsid() of a parent whose children lead groups of their own, in more
 * than one group: each group that its leader alone qualified is orphaned,
 * silently; V's group, which W qualifies too, is not.
 */
TEST_F_TIMEOUT(orphan, setsid_of_a_parent_with_children_spread, 180)
{
	int a, p, y, y2, z, z2, v, v2, w;

	a = session_root(_metadata, J);
	p = FORK(a);
	y = FORK(p);
	OWN_GROUP(y);
	y2 = FORK(y);
	z = FORK(p);
	OWN_GROUP(z);
	z2 = FORK(z);
	v = FORK(p);
	OWN_GROUP(v);
	v2 = FORK(v);
	w = FORK(a);
	ASSERT_EQ(0, CALL(w, JC_SETPGID, 0, PID(v)));
	JC_EXPECT_PROBE(J, y2, 0);
	JC_EXPECT_PROBE(J, z2, 0);
	JC_EXPECT_PROBE(J, v2, 0);
	jc_mark(J);
	ASSERT_EQ(PID(p), CALL(p, JC_SETSID, 0, 0));
	jc_settle(J);
	JC_EXPECT_GOT(J, y2, "");
	JC_EXPECT_GOT(J, z2, "");
	JC_EXPECT_PROBE(J, y2, 1);
	JC_EXPECT_PROBE(J, z2, 1);
	JC_EXPECT_PROBE(J, v2, 0);
	JC_CHECKS_DONE();
}

/*
 * SIGTTIN and SIGTTOU are discarded in an orphaned group like SIGTSTP;
 * SIGSTOP stops a process in any group.
 */
TEST_F_TIMEOUT(orphan, stop_signals, 180)
{
	int a, b;

	a = session_root(_metadata, J);
	ASSERT_EQ(1, jc_probe_sig(J, a, SIGTTIN));
	ASSERT_EQ(1, jc_probe_sig(J, a, SIGTTOU));
	JC_EXPECT_PROBE(J, a, 1);
	jc_stop(J, a);
	ASSERT_EQ(0, jc_cont(J, a));
	b = FORK(a);
	OWN_GROUP(b);
	ASSERT_EQ(0, jc_probe_sig(J, b, SIGTTIN));
	ASSERT_EQ(0, jc_probe_sig(J, b, SIGTTOU));
	JC_EXPECT_PROBE(J, b, 0);
	/* A handler, not the default action: nothing is discarded. */
	ASSERT_EQ(0, CALL(a, JC_SIGACT, SIGTTIN, 2));
	jc_mark(J);
	ASSERT_EQ(0, kill(PID(a), SIGTTIN));
	ASSERT_EQ(0, CALL(a, JC_PING, 0, 0));
	ASSERT_STREQ("I", jc_got(J, a, SI_USER));
	JC_CHECKS_DONE();
}

TEST_HARNESS_MAIN
