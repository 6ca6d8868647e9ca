// SPDX-License-Identifier: GPL-2.0
/*
 * A child traced by a sibling thread of its real parent.
 *
 * Thread A (the test's main thread) forks child C; a sibling thread B
 * ptrace-attaches C and C enters a ptrace stop.  Since the tracer is in
 * the real parent's own thread group, wait_consider_task() lets A see C
 * as its tracer would: A gets C's ptrace stops (CLD_TRAPPED, without
 * WUNTRACED) and not its group stops, also when A waits with __WNOTHREAD
 * for its own children only.  B sees C through its ->ptraced list, with
 * or without __WNOTHREAD.  A third thread with __WNOTHREAD has no child.
 *
 * Each answer is checked for every way of asking: P_ALL, P_PGID and the
 * P_PID oracle; waitpid(-1), waitpid(0) and a blocking wait4().  For
 * P_PGID the process group also holds live children of A forked before
 * and after C, which keep the wait from -ECHILD without reporting; the
 * ones before are more than a wait walks before it tries its queues.
 * When B detaches, A sees C as any parent would again.  A's __WCLONE
 * waits see C only if it is a clone child, as its tracer's see it always.
 */
#include "wait_util.h"

#include <sys/ptrace.h>

#define WANY	(WEXITED | WSTOPPED | WCONTINUED)

struct tracer {
	pthread_t th;
	pid_t tid;
	pid_t tracee;		/* a pid, or a tid for a traced thread */
	bool seize;		/* PTRACE_SEIZE + INTERRUPT, else ATTACH */
	struct gate ready;	/* B -> A: the tracee is in its stop */
	struct gate done;	/* A -> B: the test is over */
	long err;		/* first failing step of B, or 0 */
	/* what B's own P_ALL|__WNOTHREAD wait reported */
	long own_ret;
	siginfo_t own_si;
};

static void *tracer_main(void *p)
{
	struct tracer *t = p;
	siginfo_t si = { 0 };
	char c;

	t->tid = sys_gettid();
	if (t->seize) {
		if (ptrace(PTRACE_SEIZE, t->tracee, 0, 0) ||
		    ptrace(PTRACE_INTERRUPT, t->tracee, 0, 0))
			t->err = 1;
	} else if (ptrace(PTRACE_ATTACH, t->tracee, 0, 0)) {
		t->err = 2;
	}
	/* The P_PID path is the oracle for "C is in its ptrace stop". */
	if (!t->err && sys_waitid(P_PID, t->tracee, &si,
				  WSTOPPED | WNOWAIT | __WALL, NULL))
		t->err = 3;
	if (!t->err)
		t->own_ret = sys_waitid(P_ALL, 0, &t->own_si,
					WANY | WNOHANG | WNOWAIT | __WNOTHREAD,
					NULL);
	write(t->ready.wfd, "r", 1);
	while (read(t->done.rfd, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static int tracer_start(struct tracer *t, pid_t tracee, bool seize)
{
	t->tracee = tracee;
	t->seize = seize;
	if (note_init(&t->ready) || note_init(&t->done))
		return -1;
	if (pthread_create(&t->th, NULL, tracer_main, t))
		return -1;
	return gate_pass(&t->ready) && !t->err ? 0 : -1;
}

static void tracer_stop(struct tracer *t)
{
	write(t->done.wfd, "d", 1);
	pthread_join(t->th, NULL);
}

/* The stop every way of asking must report for C. */
struct stop {
	pid_t pid;
	int code;		/* si_code */
	int status;		/* si_status */
	int wstatus;		/* wait4's status word */
};

static struct stop attach_stop(pid_t pid)
{
	return (struct stop){ pid, CLD_TRAPPED, SIGSTOP,
			      (SIGSTOP << 8) | 0x7f };
}

static struct stop seize_stop(pid_t pid)
{
	/* waitid's si_status carries the event bits too */
	int code = SIGTRAP | (PTRACE_EVENT_STOP << 8);

	return (struct stop){ pid, CLD_TRAPPED, code, (code << 8) | 0x7f };
}

static void on_signal(int sig)
{
	(void)sig;
}

/* A blocking wait that finds nothing fails with EINTR instead of hanging. */
static void arm_alarm(unsigned int seconds)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */

	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

/* A gated live child, to be released (and reaped) by the test. */
static int live_child_fn(void *g)
{
	return gate_pass(g) ? 0 : WU_ORPHANED;
}

/* @n live children of A behind gate @g, in A's process group. */
static int spawn_live(pid_t *pids, int n, struct gate *g)
{
	for (int i = 0; i < n; i++) {
		pids[i] = spawn(live_child_fn, g);
		if (pids[i] <= 0)
			return -1;
	}
	return 0;
}

#define EXPECT_REPORT(ret, si, want, what) do {				\
	EXPECT_EQ(0, (ret)) TH_LOG("%s: errno %d", what, errno);	\
	EXPECT_EQ((want).pid, (si).si_pid) TH_LOG("%s", what);		\
	EXPECT_EQ((want).code, (si).si_code) TH_LOG("%s", what);	\
	EXPECT_EQ((want).status, (si).si_status) TH_LOG("%s", what);	\
} while (0)

/* A non-consuming waitid() from this thread must report @want. */
static void expect_waitid(struct __test_metadata *_metadata, int idtype,
			  pid_t id, int flags, struct stop want,
			  const char *what)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	EXPECT_REPORT(sys_waitid(idtype, id, &si, flags | WNOHANG | WNOWAIT,
				 NULL), si, want, what);
}

/*
 * A, waiting for its own children only, sees the ptrace stop of C that
 * sibling B made, through every non-consuming way of asking, and B sees
 * it through its own.  Then A consumes it; @extra_flags go with every
 * wait of A.
 */
static void check_parent_sees_stop(struct __test_metadata *_metadata,
				   bool seize, int extra_flags)
{
	struct gate g, lg;
	struct tracer t = { 0 };
	struct stop want;
	siginfo_t si;
	pid_t c, older[8], younger;
	int i, st;

	ASSERT_EQ(0, gate_init(&g));
	ASSERT_EQ(0, gate_init(&lg));
	/*
	 * Same process group as A, on both sides of C in every list; more
	 * before it than a wait looks at before it tries another way.
	 */
	ASSERT_EQ(0, spawn_live(older, ARRAY_SIZE(older), &lg));
	c = spawn_gated(&g, 0);
	ASSERT_GT(c, 0);
	younger = spawn(live_child_fn, &lg);
	ASSERT_GT(younger, 0);
	ASSERT_EQ(0, tracer_start(&t, c, seize));
	want = seize ? seize_stop(c) : attach_stop(c);

	/* B, the tracer, with or without __WNOTHREAD. */
	EXPECT_REPORT(t.own_ret, t.own_si, want, "tracer P_ALL __WNOTHREAD");

	expect_waitid(_metadata, P_PID, c, WANY | __WNOTHREAD | extra_flags,
		      want, "parent P_PID __WNOTHREAD (the oracle)");
	expect_waitid(_metadata, P_ALL, 0, WANY | __WNOTHREAD | extra_flags,
		      want, "parent P_ALL __WNOTHREAD");
	expect_waitid(_metadata, P_PGID, 0, WANY | __WNOTHREAD | extra_flags,
		      want, "parent P_PGID 0 __WNOTHREAD");
	expect_waitid(_metadata, P_PGID, getpgrp(),
		      WANY | __WNOTHREAD | extra_flags, want,
		      "parent P_PGID pgid __WNOTHREAD");
	expect_waitid(_metadata, P_ALL, 0, WANY | extra_flags, want,
		      "parent P_ALL, whole group");

	/* Ptrace stops need no WUNTRACED; a blocking wait must not hang. */
	arm_alarm(20);
	st = 0;
	EXPECT_EQ(c, sys_wait4(-1, &st, __WNOTHREAD | extra_flags, NULL))
		TH_LOG("blocking wait4(-1, __WNOTHREAD): errno %d", errno);
	alarm(0);
	EXPECT_EQ(want.wstatus, st);

	/* Consumed: nothing left to report, but C and the others live. */
	memset(&si, 0, sizeof(si));
	EXPECT_EQ(0, sys_waitid(P_ALL, 0, &si, WANY | WNOHANG | WNOWAIT |
				extra_flags, NULL));
	EXPECT_EQ(0, si.si_pid);
	EXPECT_EQ(0, waitpid(0, &st, WUNTRACED | WCONTINUED | WNOHANG |
			     __WNOTHREAD | extra_flags));

	/* Tear down: C dies in its stop and A reaps it as the tracer. */
	ASSERT_EQ(0, kill(c, SIGKILL));
	/*
	 * Its exit wakes waiters for the tracer B only: a __WNOTHREAD wait
	 * of A that slept before would sleep on, on stock too.
	 */
	ASSERT_EQ(0, wait_zombie(c));
	st = 0;
	EXPECT_EQ(c, sys_wait4(-1, &st, __WNOTHREAD | extra_flags, NULL));
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	tracer_stop(&t);
	gate_open(&lg, ARRAY_SIZE(older) + 1);
	for (i = 0; i < (int)ARRAY_SIZE(older); i++)
		EXPECT_EQ(older[i], waitpid(older[i], &st, 0));
	EXPECT_EQ(younger, waitpid(younger, &st, 0));
	EXPECT_EQ(-1, waitpid(-1, &st, WNOHANG));
	EXPECT_EQ(ECHILD, errno);
}

TEST(attach_stop_reported_to_nothread_parent)
{
	check_parent_sees_stop(_metadata, false, 0);
}

TEST(seize_interrupt_reported_to_nothread_parent)
{
	check_parent_sees_stop(_metadata, true, 0);
}

TEST(attach_stop_reported_to_nothread_parent_wall)
{
	check_parent_sees_stop(_metadata, false, __WALL);
}

/* The consuming forms, one at a time: each must find the stop. */
TEST(waitpid_any_nothread_consumes_stop)
{
	struct gate g;
	struct tracer t = { 0 };
	pid_t c;
	int st = 0;

	ASSERT_EQ(0, gate_init(&g));
	c = spawn_gated(&g, 0);
	ASSERT_GT(c, 0);
	ASSERT_EQ(0, tracer_start(&t, c, false));
	EXPECT_EQ(c, waitpid(-1, &st, WNOHANG | __WNOTHREAD));
	EXPECT_EQ((SIGSTOP << 8) | 0x7f, st);
	ASSERT_EQ(0, kill(c, SIGKILL));
	EXPECT_EQ(c, waitpid(c, &st, __WALL));
	tracer_stop(&t);
}

TEST(waitpid_pgrp_nothread_consumes_stop)
{
	struct gate g, lg;
	struct tracer t = { 0 };
	pid_t c, other;
	int st = 0;

	ASSERT_EQ(0, gate_init(&g));
	ASSERT_EQ(0, gate_init(&lg));
	c = spawn_gated(&g, 0);
	ASSERT_GT(c, 0);
	/* Younger, so first in the process group's member list. */
	other = spawn(live_child_fn, &lg);
	ASSERT_GT(other, 0);
	ASSERT_EQ(0, tracer_start(&t, c, false));
	EXPECT_EQ(c, waitpid(0, &st, WNOHANG | __WNOTHREAD));
	EXPECT_EQ((SIGSTOP << 8) | 0x7f, st);
	ASSERT_EQ(0, kill(c, SIGKILL));
	EXPECT_EQ(c, waitpid(c, &st, __WALL));
	tracer_stop(&t);
	gate_open(&lg, 1);
	EXPECT_EQ(other, waitpid(other, &st, 0));
}

/*
 * A clone child (exit signal not SIGCHLD) traced by B: A's own waits
 * need __WCLONE or __WALL to see it at all (-ECHILD without, as A has no
 * other child); B's do not, as for every tracee.
 */
TEST(clone_child_needs_wclone_for_parent)
{
	struct clone_args args = { .exit_signal = SIGUSR1 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct gate g;
	struct tracer t = { 0 };
	struct stop want;
	siginfo_t si;
	pid_t c;
	int st;

	/* SIGUSR1 is the exit signal: it must not kill the test. */
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, gate_init(&g));
	c = sys_clone3(&args);
	if (c == 0) {
		wu_child_init();
		_exit(gate_pass(&g) ? 0 : WU_ORPHANED);
	}
	ASSERT_GT(c, 0);
	ASSERT_EQ(0, tracer_start(&t, c, false));
	want = attach_stop(c);
	EXPECT_REPORT(t.own_ret, t.own_si, want, "tracer P_ALL __WNOTHREAD");

	EXPECT_EQ(-1, sys_waitid(P_ALL, 0, &si, WANY | WNOHANG | WNOWAIT |
				 __WNOTHREAD, NULL));
	EXPECT_EQ(ECHILD, errno);
	EXPECT_EQ(-1, sys_waitid(P_PID, c, &si, WANY | WNOHANG | WNOWAIT |
				 __WNOTHREAD, NULL));
	EXPECT_EQ(ECHILD, errno);
	expect_waitid(_metadata, P_ALL, 0, WANY | __WNOTHREAD | __WCLONE,
		      want, "parent P_ALL __WNOTHREAD|__WCLONE");
	expect_waitid(_metadata, P_PGID, 0, WANY | __WNOTHREAD | __WALL,
		      want, "parent P_PGID __WNOTHREAD|__WALL");
	st = 0;
	EXPECT_EQ(c, sys_wait4(-1, &st, WNOHANG | __WNOTHREAD | __WCLONE,
			       NULL));
	EXPECT_EQ((SIGSTOP << 8) | 0x7f, st);
	ASSERT_EQ(0, kill(c, SIGKILL));
	EXPECT_EQ(c, waitpid(c, &st, __WALL));
	tracer_stop(&t);
}

/*
 * The converse: a non-clone child traced by B is no child of A's __WCLONE
 * waits, which get -ECHILD (A's other children are not clone children
 * either), while the group's __WCLONE waits see it through B, as any
 * tracee.  A has more children than a wait looks at before it tries
 * another way.
 */
TEST(nonclone_child_hidden_from_parent_wclone)
{
	int flags = WANY | WNOHANG | WNOWAIT | __WNOTHREAD | __WCLONE;
	pid_t others[16];
	struct gate g, lg;
	struct tracer t = { 0 };
	siginfo_t si;
	pid_t c;
	int i, st;

	ASSERT_EQ(0, gate_init(&g));
	ASSERT_EQ(0, gate_init(&lg));
	ASSERT_EQ(0, spawn_live(others, ARRAY_SIZE(others), &lg));
	c = spawn_gated(&g, 0);
	ASSERT_GT(c, 0);
	ASSERT_EQ(0, tracer_start(&t, c, false));

	EXPECT_EQ(-1, sys_waitid(P_PID, c, &si, flags, NULL));
	EXPECT_EQ(ECHILD, errno) TH_LOG("P_PID (the oracle)");
	EXPECT_EQ(-1, sys_waitid(P_ALL, 0, &si, flags, NULL));
	EXPECT_EQ(ECHILD, errno) TH_LOG("P_ALL");
	EXPECT_EQ(-1, sys_waitid(P_PGID, 0, &si, flags, NULL));
	EXPECT_EQ(ECHILD, errno) TH_LOG("P_PGID");
	EXPECT_EQ(-1, sys_wait4(-1, &st, WNOHANG | __WNOTHREAD | __WCLONE,
				NULL));
	EXPECT_EQ(ECHILD, errno) TH_LOG("wait4(-1)");
	expect_waitid(_metadata, P_ALL, 0, WANY | __WCLONE, attach_stop(c),
		      "parent P_ALL __WCLONE, whole group");

	ASSERT_EQ(0, kill(c, SIGKILL));
	EXPECT_EQ(c, waitpid(c, &st, __WALL));
	tracer_stop(&t);
	gate_open(&lg, ARRAY_SIZE(others));
	for (i = 0; i < (int)ARRAY_SIZE(others); i++)
		EXPECT_EQ(others[i], waitpid(others[i], &st, 0));
}

/* A thread that is neither C's parent nor its tracer. */
struct bystander {
	long ret;
	int err;
	siginfo_t si;
	int flags;
};

static void *bystander_main(void *p)
{
	struct bystander *b = p;

	b->ret = sys_waitid(P_ALL, 0, &b->si, b->flags, NULL);
	b->err = errno;
	return NULL;
}

/* A waitid(P_ALL, @flags) from a new thread; 0, or -1 if none ran. */
static int bystander_wait(struct bystander *b, int flags)
{
	pthread_t th;

	memset(b, 0, sizeof(*b));
	b->flags = flags;
	if (pthread_create(&th, NULL, bystander_main, b))
		return -1;
	return pthread_join(th, NULL) ? -1 : 0;
}

TEST(third_thread_nothread_has_no_child)
{
	struct bystander b;
	struct gate g;
	struct tracer t = { 0 };
	pid_t c;
	int st;

	ASSERT_EQ(0, gate_init(&g));
	c = spawn_gated(&g, 0);
	ASSERT_GT(c, 0);
	ASSERT_EQ(0, tracer_start(&t, c, false));

	ASSERT_EQ(0, bystander_wait(&b, WANY | WNOHANG | WNOWAIT |
				    __WNOTHREAD));
	EXPECT_EQ(-1, b.ret);
	EXPECT_EQ(ECHILD, b.err);

	/* Without __WNOTHREAD it sees what its group sees. */
	ASSERT_EQ(0, bystander_wait(&b, WANY | WNOHANG | WNOWAIT));
	EXPECT_REPORT(b.ret, b.si, attach_stop(c), "third thread P_ALL");

	ASSERT_EQ(0, kill(c, SIGKILL));
	EXPECT_EQ(c, waitpid(c, &st, __WALL));
	tracer_stop(&t);
}

/* C, a child of A, dies while B traces it: its pid, or -1. */
static pid_t spawn_traced_zombie(struct tracer *t)
{
	struct gate g;
	pid_t c;

	if (gate_init(&g))
		return -1;
	c = spawn_gated(&g, 0);
	if (c <= 0 || tracer_start(t, c, false) || kill(c, SIGKILL) ||
	    wait_zombie(c))
		return -1;
	return c;
}

/*
 * C dies while B traces it: its exit is queued for the group as a
 * tracee's, and none of the group's natural children's exits is.  A third
 * thread waiting with __WNOTHREAD has still no child or tracee of its
 * own: -ECHILD, not C's exit, however the wait looks for a usual reap.
 * Without __WNOTHREAD it reaps C, as its group may.
 */
TEST(third_thread_nothread_skips_traced_zombie)
{
	struct bystander b;
	struct tracer t = { 0 };
	pid_t c;

	c = spawn_traced_zombie(&t);
	ASSERT_GT(c, 0);
	ASSERT_EQ(0, bystander_wait(&b, WEXITED | WNOHANG | WNOWAIT |
				    __WNOTHREAD));
	EXPECT_EQ(-1, b.ret);
	EXPECT_EQ(ECHILD, b.err);

	ASSERT_EQ(0, bystander_wait(&b, WEXITED | WNOHANG));
	EXPECT_EQ(0, b.ret);
	EXPECT_EQ(c, b.si.si_pid);
	EXPECT_EQ(CLD_KILLED, b.si.si_code);
	EXPECT_EQ(SIGKILL, b.si.si_status);
	tracer_stop(&t);
}

/*
 * C dies while B traces it: A, waiting for its own children only, reaps
 * it (it would wait for a tracer in another process to reap it first),
 * also when it has an older live child, which its waits look at first.
 */
static void check_traced_zombie_reaped(struct __test_metadata *_metadata,
				       bool behind_live_child)
{
	struct gate lg;
	struct tracer t = { 0 };
	siginfo_t si;
	pid_t live = 0, c;
	long ret;

	ASSERT_EQ(0, gate_init(&lg));
	if (behind_live_child)
		ASSERT_EQ(0, spawn_live(&live, 1, &lg));
	c = spawn_traced_zombie(&t);
	ASSERT_GT(c, 0);

	memset(&si, 0, sizeof(si));
	EXPECT_EQ(0, sys_waitid(P_PGID, 0, &si, WEXITED | WNOHANG | WNOWAIT |
				__WNOTHREAD, NULL));
	EXPECT_EQ(c, si.si_pid);
	memset(&si, 0, sizeof(si));
	EXPECT_EQ(0, sys_waitid(P_ALL, 0, &si, WEXITED | WNOHANG |
				__WNOTHREAD, NULL));
	EXPECT_EQ(c, si.si_pid);
	EXPECT_EQ(CLD_KILLED, si.si_code);
	EXPECT_EQ(SIGKILL, si.si_status);
	/* nothing left: the live child, if any, has nothing to report */
	memset(&si, 0, sizeof(si));
	ret = sys_waitid(P_ALL, 0, &si, WANY | WNOHANG, NULL);
	if (behind_live_child) {
		EXPECT_EQ(0, ret);
		EXPECT_EQ(0, si.si_pid);
	} else {
		EXPECT_EQ(-1, ret);
		EXPECT_EQ(ECHILD, errno);
	}
	tracer_stop(&t);
	if (behind_live_child) {
		gate_open(&lg, 1);
		EXPECT_EQ(live, waitpid(live, NULL, 0));
	}
}

TEST(traced_zombie_reaped_by_nothread_parent)
{
	check_traced_zombie_reaped(_metadata, false);
}

TEST(traced_zombie_behind_live_child_reaped_by_nothread_parent)
{
	check_traced_zombie_reaped(_metadata, true);
}

/*
 * C is in a group stop that A has not consumed when B attaches, takes the
 * attach stop and detaches: C goes back to its group stop, which A must
 * now see again as C's parent, through every way of asking, though
 * nothing notifies A of it.
 */
struct detacher {
	pid_t tracee;
	long err;
};

static void *detacher_main(void *p)
{
	struct detacher *d = p;
	siginfo_t si;

	if (ptrace(PTRACE_ATTACH, d->tracee, 0, 0))
		d->err = 1;
	else if (sys_waitid(P_PID, d->tracee, &si, WSTOPPED | __WALL, NULL))
		d->err = 2;
	else if (ptrace(PTRACE_DETACH, d->tracee, 0, 0))
		d->err = 3;
	return NULL;
}

TEST(group_stop_reported_after_sibling_detaches)
{
	struct stop want;
	struct detacher d = { 0 };
	struct gate g;
	pthread_t th;
	pid_t c;
	int st;

	ASSERT_EQ(0, gate_init(&g));
	c = spawn_gated(&g, 0);
	ASSERT_GT(c, 0);
	ASSERT_EQ(0, kill(c, SIGSTOP));
	wait_proc_state(c, c, 'T');
	want = (struct stop){ c, CLD_STOPPED, SIGSTOP, (SIGSTOP << 8) | 0x7f };
	expect_waitid(_metadata, P_PID, c, WSTOPPED, want, "before the attach");

	d.tracee = c;
	ASSERT_EQ(0, pthread_create(&th, NULL, detacher_main, &d));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, d.err);
	/* back in its group stop, traced by nobody */
	wait_proc_state(c, c, 'T');

	expect_waitid(_metadata, P_PID, c, WSTOPPED, want,
		      "P_PID after the detach (the oracle)");
	expect_waitid(_metadata, P_ALL, 0, WSTOPPED, want,
		      "P_ALL after the detach");
	expect_waitid(_metadata, P_PGID, 0, WSTOPPED, want,
		      "P_PGID after the detach");
	st = 0;
	EXPECT_EQ(c, waitpid(-1, &st, WUNTRACED | WNOHANG));
	EXPECT_EQ(want.wstatus, st);

	ASSERT_EQ(0, kill(c, SIGKILL));
	EXPECT_EQ(c, waitpid(c, &st, 0));
	EXPECT_EQ(-1, waitpid(-1, &st, WNOHANG));
	EXPECT_EQ(ECHILD, errno);
}

TEST_HARNESS_MAIN
