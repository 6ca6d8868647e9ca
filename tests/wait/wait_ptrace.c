// SPDX-License-Identifier: GPL-2.0
/*
 * wait() and ptrace.
 *
 * A tracer that is not the real parent sees the tracee's stops and then
 * its exit first; the real parent sees group stops (not the tracer's
 * signal-delivery stops) while the child is traced, and the exit only
 * once the tracer has reaped the zombie, exited, or detached.  With
 * PTRACE_TRACEME the parent is the tracer and gets ptrace stops without
 * WUNTRACED (CLD_TRAPPED for waitid).  A tracer exiting releases a
 * stopped tracee into an ordinary group stop.  Traced threads are
 * eligible for the tracer's waits without __WALL/__WCLONE (since Linux
 * 4.7, "wait/ptrace: assume __WALL if the child is traced").  __WNOTHREAD
 * does not hide a child traced by another process from its parent.
 *
 * The tracer runs as a separate child of the test (so it is not the
 * parent) and does exactly what the test tells it through a pipe, and
 * sends back each result, so the test checks the tracer's view and the
 * parent's view step by step in one place.
 */
#include "wait_util.h"

#include <sys/ptrace.h>

enum t_op {
	T_SEIZE, T_ATTACH, T_INTERRUPT, T_CONT, T_DETACH, T_WAIT, T_EXIT,
};

struct t_cmd {
	int op;
	pid_t pid;
	int flags;		/* T_WAIT: wait options */
	long data;		/* T_CONT/T_DETACH: signal */
};

struct t_res {
	long ret;
	int st;
	int err;
};

struct tracer {
	pid_t pid;
	struct gate cmd;	/* test -> tracer */
	struct gate res;	/* tracer -> test */
};

static int tracer_fn(void *p)
{
	struct tracer *t = p;
	struct t_cmd c;

	while (read(t->cmd.rfd, &c, sizeof(c)) == sizeof(c)) {
		struct t_res r = { 0, 0x5a5a5a5a, 0 };

		switch (c.op) {
		case T_SEIZE:
			r.ret = ptrace(PTRACE_SEIZE, c.pid, 0, c.data);
			break;
		case T_ATTACH:
			r.ret = ptrace(PTRACE_ATTACH, c.pid, 0, 0);
			break;
		case T_INTERRUPT:
			r.ret = ptrace(PTRACE_INTERRUPT, c.pid, 0, 0);
			break;
		case T_CONT:
			r.ret = ptrace(PTRACE_CONT, c.pid, 0, c.data);
			break;
		case T_DETACH:
			r.ret = ptrace(PTRACE_DETACH, c.pid, 0, c.data);
			break;
		case T_WAIT:
			r.ret = waitpid(c.pid, &r.st, c.flags);
			break;
		case T_EXIT:
			/* Exit with whatever we trace still attached. */
			return 0;
		}
		r.err = r.ret < 0 ? errno : 0;
		CHILD_CHECK(write(t->res.wfd, &r, sizeof(r)) == sizeof(r));
	}
	return WU_ORPHANED;
}

static int tracer_start(struct tracer *t)
{
	if (gate_init(&t->cmd) || note_init(&t->res))
		return -1;
	t->pid = spawn(tracer_fn, t);
	if (t->pid < 0)
		return -1;
	close(t->res.wfd);
	t->res.wfd = -1;
	return 0;
}

/* Have the tracer do @op and return its result. */
static struct t_res tcall(struct tracer *t, int op, pid_t pid, int flags,
			  long data)
{
	struct t_cmd c = { op, pid, flags, data };
	struct t_res r = { -2, 0, 0 };

	if (write(t->cmd.wfd, &c, sizeof(c)) != sizeof(c) ||
	    read(t->res.rfd, &r, sizeof(r)) != sizeof(r))
		r.ret = -2;
	return r;
}

/* Tell the tracer to exit (still attached) and reap it. */
static void tracer_quit(struct __test_metadata *_metadata, struct tracer *t)
{
	struct t_cmd c = { T_EXIT, 0, 0, 0 };
	struct wres r;

	ASSERT_EQ(sizeof(c), write(t->cmd.wfd, &c, sizeof(c)));
	wk_wait(WK_WAITPID_PID, t->pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, t->pid, CLD_EXITED, 0);
}

/* Tracer-side expectations. */
#define T_OK(t, op, pid, data) do {					\
	struct t_res _r = tcall((t), (op), (pid), 0, (data));		\
	ASSERT_EQ(0, _r.ret);						\
} while (0)

#define T_WAIT_FOR(t, target, flags, want_pid, want_st) do {		\
	struct t_res _r = tcall((t), T_WAIT, (target), (flags), 0);	\
	ASSERT_EQ((want_pid), _r.ret);					\
	ASSERT_EQ((want_st), _r.st);					\
} while (0)

#define T_WAIT_ST(t, pid, flags, want_st) \
	T_WAIT_FOR(t, pid, flags, pid, want_st)

#define T_WAIT_ERR(t, pid, flags, want_err) do {			\
	struct t_res _r = tcall((t), T_WAIT, (pid), (flags), 0);	\
	ASSERT_EQ(-1, _r.ret);						\
	ASSERT_EQ((want_err), _r.err);					\
} while (0)

#define T_WAIT_NONE(t, pid, flags) do {					\
	struct t_res _r = tcall((t), T_WAIT, (pid), (flags) | WNOHANG, 0); \
	ASSERT_EQ(0, _r.ret);						\
} while (0)

/* Status words as the tracer sees them. */
#define ST_STOPPED(sig)		(((sig) << 8) | 0x7f)
#define ST_EVENT_STOP(sig)	((PTRACE_EVENT_STOP << 16) | ST_STOPPED(sig))

/* The real parent (the test) sees nothing at all for @pid right now. */
#define PARENT_SEES_NOTHING(pid) do {					\
	struct wres _w;							\
	wk_wait(WK_WAITID_PID, (pid), 0, -1,				\
		WSTOPPED | WCONTINUED | WNOHANG | WNOWAIT, &_w);	\
	ASSERT_WRES_NONE(WK_WAITID_PID, _w);				\
} while (0)

/* A tracee: allows any tracer (Yama), then waits on its gate. */
static int tracee_fn(void *p)
{
	struct wu_gated_arg *a = p;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	CHILD_CHECK(!note_send(a->g + 1));
	return gate_pass(a->g) ? a->code : WU_ORPHANED;
}

/*
 * g[0]: the tracee's gate; g[1]: its "ready" note.  A clone child with
 * @exit_signal (0: none) unless that is SIGCHLD.
 */
static pid_t spawn_tracee(struct gate g[2], int code, int exit_signal)
{
	struct wu_gated_arg a = { g, code };
	pid_t pid;

	if (gate_init(&g[0]) || note_init(&g[1]))
		return -1;
	if (exit_signal == SIGCHLD) {
		pid = spawn(tracee_fn, &a);
	} else {
		/* x86-64 order: flags, stack, parent_tid, child_tid, tls */
		pid = syscall(__NR_clone, exit_signal, 0, 0, 0, 0);
		if (pid == 0) {
			wu_child_init();
			_exit(tracee_fn(&a));
		}
	}
	if (pid > 0 && !note_recv(&g[1]))
		return -1;
	return pid;
}

/* ------------------------------------------------------------------ */

enum ending {
	END_TRACER_REAPS,	/* tracer waits for the zombie */
	END_TRACER_EXITS,	/* tracer exits, still attached */
	END_DETACH,		/* tracer detaches before the exit */
};

FIXTURE(nonparent) {
	struct gate g[2];
	struct tracer t;
	pid_t pid;
};

FIXTURE_VARIANT(nonparent) {
	bool seize;
	enum ending end;
};

FIXTURE_VARIANT_ADD(nonparent, seize_tracer_reaps) {
	.seize = true, .end = END_TRACER_REAPS,
};
FIXTURE_VARIANT_ADD(nonparent, seize_tracer_exits) {
	.seize = true, .end = END_TRACER_EXITS,
};
FIXTURE_VARIANT_ADD(nonparent, seize_detach) {
	.seize = true, .end = END_DETACH,
};
FIXTURE_VARIANT_ADD(nonparent, attach_tracer_reaps) {
	.seize = false, .end = END_TRACER_REAPS,
};
FIXTURE_VARIANT_ADD(nonparent, attach_tracer_exits) {
	.seize = false, .end = END_TRACER_EXITS,
};
FIXTURE_VARIANT_ADD(nonparent, attach_detach) {
	.seize = false, .end = END_DETACH,
};

FIXTURE_SETUP(nonparent)
{
	self->pid = spawn_tracee(self->g, code_of(0), SIGCHLD);
	ASSERT_GT(self->pid, 0);
	ASSERT_EQ(0, tracer_start(&self->t));
}

FIXTURE_TEARDOWN(nonparent)
{
}

TEST_F(nonparent, stops_then_exit)
{
	struct tracer *t = &self->t;
	pid_t pid = self->pid;
	struct wres r;

	if (variant->seize) {
		T_OK(t, T_SEIZE, pid, 0);
	} else {
		/* The attach SIGSTOP: the tracer's business only. */
		T_OK(t, T_ATTACH, pid, 0);
		T_WAIT_ST(t, pid, 0, ST_STOPPED(SIGSTOP));
		T_OK(t, T_CONT, pid, 0);
	}
	PARENT_SEES_NOTHING(pid);

	/* SIGSTOP: first a signal-delivery stop, for the tracer only. */
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	T_WAIT_ST(t, pid, 0, ST_STOPPED(SIGSTOP));
	PARENT_SEES_NOTHING(pid);
	T_WAIT_NONE(t, pid, 0);
	/* Let it through: the group stop, seen by both. */
	T_OK(t, T_CONT, pid, SIGSTOP);
	T_WAIT_ST(t, pid, 0, variant->seize ? ST_EVENT_STOP(SIGSTOP) :
					      ST_STOPPED(SIGSTOP));
	wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	PARENT_SEES_NOTHING(pid);
	T_WAIT_NONE(t, pid, 0);

	if (variant->end == END_DETACH) {
		/* Detached, still group-stopped: SIGCONT, then exit. */
		T_OK(t, T_DETACH, pid, 0);
		T_WAIT_ERR(t, pid, WNOHANG, ECHILD);
		ASSERT_EQ(0, kill(pid, SIGCONT));
		ASSERT_EQ(0, gate_open(&self->g[0], 1));
		wk_wait(WK_WAITID_PID, pid, 0, -1, 0, &r);
		ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_EXITED, code_of(0));
		tracer_quit(_metadata, t);
		return;
	}

	T_OK(t, T_CONT, pid, 0);
	ASSERT_EQ(0, gate_open(&self->g[0], 1));
	/* A zombie now, but traced: the real parent sees nothing yet. */
	wait_proc_state(pid, pid, 'Z');
	PARENT_SEES_NOTHING(pid);
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_PID, r);

	if (variant->end == END_TRACER_REAPS) {
		T_WAIT_ST(t, pid, 0, code_of(0) << 8);
		/* Only the tracer's hold is gone: it cannot see it again. */
		T_WAIT_ERR(t, pid, WNOHANG, ECHILD);
		tracer_quit(_metadata, t);
	} else {
		tracer_quit(_metadata, t);
	}
	/* Now the real parent gets the exit, exactly once. */
	wk_wait(WK_WAITID_PID, pid, 0, -1, WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_EXITED, code_of(0));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, code_of(0));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * The real parent blocked in wait() for a traced child is woken only
 * when the tracer lets go of the zombie.
 */
static void tracer_reaps_now(void *p)
{
	struct tracer *t = p;

	tcall(t, T_WAIT, -1, __WALL, 0);
}

TEST(parent_wait_blocks_until_tracer_reaps)
{
	struct tracer tr, *t = &tr;
	struct releaser rel;
	struct gate g[2];
	struct wres r;
	pid_t pid;

	pid = spawn_tracee(g, code_of(0), SIGCHLD);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, tracer_start(t));
	T_OK(t, T_SEIZE, pid, 0);
	ASSERT_EQ(0, gate_open(&g[0], 1));
	wait_proc_state(pid, pid, 'Z');
	ASSERT_EQ(0, releaser_start(&rel, tracer_reaps_now, t));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, code_of(0));
	tracer_quit(_metadata, t);
}

/*
 * The tracer exits while the tracee sits in the attach SIGSTOP's
 * signal-delivery stop.  The tracee is let go with whatever signal is
 * still pending delivery: if the tracer never waited for the stop, that
 * is the SIGSTOP, and the tracee enters an ordinary group stop that its
 * real parent sees; if the tracer did wait, its wait took the signal
 * (as if continued with signal 0), and the tracee just runs on.
 */
static void tracer_exits_while_stopped(struct __test_metadata *_metadata,
				       bool tracer_waited)
{
	struct tracer tr, *t = &tr;
	struct gate g[2];
	struct wres r;
	pid_t pid;

	pid = spawn_tracee(g, code_of(0), SIGCHLD);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, tracer_start(t));
	T_OK(t, T_ATTACH, pid, 0);
	if (tracer_waited)
		T_WAIT_ST(t, pid, 0, ST_STOPPED(SIGSTOP));
	else
		wait_proc_state(pid, pid, 't');
	PARENT_SEES_NOTHING(pid);
	tracer_quit(_metadata, t);

	if (tracer_waited) {
		/* Running again (back in its read), never stopped. */
		wait_proc_state(pid, pid, 'S');
		PARENT_SEES_NOTHING(pid);
	} else {
		wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED, &r);
		ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_STOPPED, SIGSTOP);
		ASSERT_EQ(0, kill(pid, SIGCONT));
		wk_wait(WK_WAITPID_PID, pid, 0, -1, WCONTINUED, &r);
		ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_CONTINUED, SIGCONT);
	}
	ASSERT_EQ(0, gate_open(&g[0], 1));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED | WCONTINUED, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, code_of(0));
}

TEST(tracer_exits_before_waiting_for_stop)
{
	tracer_exits_while_stopped(_metadata, false);
}

TEST(tracer_exits_after_waiting_for_stop)
{
	tracer_exits_while_stopped(_metadata, true);
}

/* ------------------------------------------------------------------ */
/* PTRACE_TRACEME: the parent is the tracer.                           */

static int traceme_fn(void *arg)
{
	(void)arg;
	CHILD_CHECK(!ptrace(PTRACE_TRACEME, 0, 0, 0));
	raise(SIGUSR1);
	return 5;
}

TEST(traceme_parent_is_tracer)
{
	struct wres r;
	pid_t pid;

	pid = spawn(traceme_fn, NULL);
	ASSERT_GT(pid, 0);
	/* A ptrace stop: reported without WSTOPPED, as CLD_TRAPPED. */
	wk_wait(WK_WAITID_PID, pid, 0, -1, WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_TRAPPED, SIGUSR1);
	/* Without WUNTRACED either; same report via waitpid. */
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, pid, CLD_STOPPED, SIGUSR1);
	/* Reported once. */
	wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED | WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITID_PID, r);
	/* Suppress the signal; the exit is reported once, to us. */
	ASSERT_EQ(0, ptrace(PTRACE_CONT, pid, 0, 0));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, 5);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* Delivering the signal on resume: killed by it, reported once. */
TEST(traceme_signal_delivered)
{
	struct wres r;
	pid_t pid;

	pid = spawn(traceme_fn, NULL);
	ASSERT_GT(pid, 0);
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_STOPPED, SIGUSR1);
	ASSERT_EQ(0, ptrace(PTRACE_CONT, pid, 0, SIGUSR1));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_KILLED, SIGUSR1);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * A tracee whose trap and whose group's continue are both there to take:
 * the tracer takes the trap first, then the continue, whichever way it
 * waits.  (A wait that takes one of two reports of a node must leave the
 * other to be found.)
 */
static int trap_fn(void *p)
{
	struct gate *g = p;

	CHILD_CHECK(!ptrace(PTRACE_TRACEME, 0, 0, 0));
	raise(SIGSTOP);
	return gate_pass(g) ? 6 : WU_ORPHANED;
}

FIXTURE(trap_and_continue) {
	struct gate gate;
	pid_t pid;
	int pidfd;
};

FIXTURE_VARIANT(trap_and_continue) {
	enum wkind k;
};

FIXTURE_VARIANT_ADD(trap_and_continue, waitpid_any) {
	.k = WK_WAITPID_ANY,
};
FIXTURE_VARIANT_ADD(trap_and_continue, waitpid_pgrp0) {
	.k = WK_WAITPID_PGRP0,
};
FIXTURE_VARIANT_ADD(trap_and_continue, waitid_all) {
	.k = WK_WAITID_ALL,
};
FIXTURE_VARIANT_ADD(trap_and_continue, waitid_pgid0) {
	.k = WK_WAITID_PGID0,
};
FIXTURE_VARIANT_ADD(trap_and_continue, waitid_pid) {
	.k = WK_WAITID_PID,
};
FIXTURE_VARIANT_ADD(trap_and_continue, waitid_pidfd) {
	.k = WK_WAITID_PIDFD,
};

FIXTURE_SETUP(trap_and_continue)
{
	struct wres r;

	ASSERT_EQ(0, gate_init(&self->gate));
	self->pid = spawn(trap_fn, &self->gate);
	ASSERT_GT(self->pid, 0);
	self->pidfd = sys_pidfd_open(self->pid, 0);
	ASSERT_GE(self->pidfd, 0);
	/* its raise(SIGSTOP), a signal-delivery stop */
	wk_wait(WK_WAITPID_PID, self->pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, self->pid, CLD_STOPPED, SIGSTOP);
	/* let SIGSTOP through: its group stops, in a trap of ours */
	ASSERT_EQ(0, ptrace(PTRACE_CONT, self->pid, 0, SIGSTOP));
	ASSERT_EQ(0, sync_state(self->pid, WSTOPPED, CLD_TRAPPED));
	/* the group is continued; the tracee stays in the trap */
	ASSERT_EQ(0, kill(self->pid, SIGCONT));
}

FIXTURE_TEARDOWN(trap_and_continue)
{
	kill(self->pid, SIGKILL);
	waitpid(self->pid, NULL, __WALL);
	close(self->pidfd);
}

TEST_F(trap_and_continue, trap_then_continue)
{
	enum wkind k = variant->k;
	int opts = WCONTINUED | WNOHANG;
	struct wres r;

	/* a trap is reported without WUNTRACED; wait4 says "stopped" */
	wk_wait(k, self->pid, 0, self->pidfd, opts, &r);
	ASSERT_WRES(k, r, self->pid,
		    wk_is_waitid(k) ? CLD_TRAPPED : CLD_STOPPED, SIGSTOP);
	wk_wait(k, self->pid, 0, self->pidfd, opts, &r);
	ASSERT_WRES(k, r, self->pid, CLD_CONTINUED, SIGCONT);
	wk_wait(k, self->pid, 0, self->pidfd, opts, &r);
	ASSERT_WRES_NONE(k, r);
}

/* ------------------------------------------------------------------ */
/* Traced threads.                                                     */

static void *traced_thread(void *p)
{
	struct gate *g = p;
	pid_t tid = sys_gettid();

	if (write(g[1].wfd, &tid, sizeof(tid)) != sizeof(tid))
		syscall(__NR_exit_group, WU_CHILD_FAIL);
	if (!gate_pass(&g[0]))
		syscall(__NR_exit_group, WU_ORPHANED);
	/* This thread alone. */
	syscall(__NR_exit, 6);
	return NULL;
}

/* g[0]: the thread's gate, g[1]: its tid goes here, g[2]: main's gate */
static int thread_tracee_fn(void *p)
{
	struct gate *g = p;
	pthread_t th;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	CHILD_CHECK(!pthread_create(&th, NULL, traced_thread, g));
	return gate_pass(&g[2]) ? 3 : WU_ORPHANED;
}

/*
 * The tracer of a non-leader thread waits for it without __WALL (and
 * with __WCLONE, or __WALL, alike): a traced task is always eligible.
 * It sees the thread's own exit code when the thread exits alone.
 */
TEST(traced_thread_needs_no_wall)
{
	struct gate g[3];
	struct tracer t;
	struct wres r;
	pid_t pid, tid;

	ASSERT_EQ(0, gate_init(&g[0]));
	ASSERT_EQ(0, note_init(&g[1]));
	ASSERT_EQ(0, gate_init(&g[2]));
	pid = spawn(thread_tracee_fn, g);
	ASSERT_GT(pid, 0);
	close(g[1].wfd);
	ASSERT_EQ(sizeof(tid), read(g[1].rfd, &tid, sizeof(tid)));
	ASSERT_NE(pid, tid);
	ASSERT_EQ(0, tracer_start(&t));

	T_OK(&t, T_SEIZE, tid, 0);
	/* Running and traced: not ECHILD, nothing to report. */
	T_WAIT_NONE(&t, -1, 0);
	T_WAIT_NONE(&t, tid, __WCLONE);
	T_OK(&t, T_INTERRUPT, tid, 0);
	T_WAIT_ST(&t, tid, 0, ST_EVENT_STOP(SIGTRAP));
	T_OK(&t, T_CONT, tid, 0);
	T_OK(&t, T_INTERRUPT, tid, 0);
	T_WAIT_ST(&t, tid, __WCLONE, ST_EVENT_STOP(SIGTRAP));
	T_OK(&t, T_CONT, tid, 0);
	T_OK(&t, T_INTERRUPT, tid, 0);
	T_WAIT_FOR(&t, -1, __WALL, tid, ST_EVENT_STOP(SIGTRAP));
	T_OK(&t, T_CONT, tid, 0);
	/* The real parent sees nothing of the thread's doings. */
	PARENT_SEES_NOTHING(pid);

	ASSERT_EQ(0, gate_open(&g[0], 1));
	T_WAIT_ST(&t, tid, 0, 6 << 8);
	T_WAIT_ERR(&t, -1, __WALL | WNOHANG, ECHILD);
	PARENT_SEES_NOTHING(pid);
	tracer_quit(_metadata, &t);

	/* The process lives on in its leader. */
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_PID, r);
	ASSERT_EQ(0, gate_open(&g[2], 1));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, 3);
	wk_wait(WK_WAITPID_PID, tid, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* ------------------------------------------------------------------ */
/* __WNOTHREAD in a single-threaded parent.                            */

/* The tracer as a grandchild of the test, orphaned: not our child. */
static int orphan_tracer_fn(void *p)
{
	return spawn(tracer_fn, p) > 0 ? 0 : WU_CHILD_FAIL;
}

static void orphan_tracer_start(struct __test_metadata *_metadata,
				struct tracer *t)
{
	struct wres r;
	pid_t mid;

	ASSERT_EQ(0, gate_init(&t->cmd));
	ASSERT_EQ(0, note_init(&t->res));
	mid = spawn(orphan_tracer_fn, t);
	ASSERT_GT(mid, 0);
	close(t->res.wfd);
	t->res.wfd = -1;
	wk_wait(WK_WAITPID_PID, mid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, mid, CLD_EXITED, 0);
}

/*
 * Every untargeted way of asking, with @opts | WNOHANG, and the P_PID
 * oracle for @pid, find nothing (@err 0) or fail with @err.
 */
static void expect_all(struct __test_metadata *_metadata, pid_t pid,
		       int opts, int err)
{
	static const enum wkind kinds[] = {
		WK_WAITPID_ANY, WK_WAITID_ALL, WK_WAITPID_PGRP0,
		WK_WAITID_PGID0, WK_WAITID_PID,
	};
	struct wres r;

	for (unsigned int i = 0; i < ARRAY_SIZE(kinds); i++) {
		wk_wait(kinds[i], pid, 0, -1, opts | WNOHANG, &r);
		ASSERT_EQ(err ? -1 : 0, r.ret)
			TH_LOG("kind %d, opts %#x: errno %d", kinds[i],
			       opts, r.err);
		ASSERT_EQ(err, r.err);
		ASSERT_EQ(0, r.pid);
	}
}

/*
 * __WNOTHREAD limits a wait to the waiting thread's own ->children and
 * ->ptraced, not to the children whose ->parent it is: a child traced by
 * another process keeps a single-threaded parent's __WNOTHREAD waits from
 * -ECHILD, alive or as a zombie that the tracer holds, as it keeps its
 * other waits, and the P_PID oracle agrees.  Once the tracer reaps the
 * zombie, __WNOTHREAD waits report it as any other.
 */
TEST(single_thread_nothread_sees_child_traced_by_nonchild)
{
	struct tracer tr, *t = &tr;
	struct gate g[2];
	struct wres r;
	pid_t pid;

	pid = spawn_tracee(g, code_of(0), SIGCHLD);
	ASSERT_GT(pid, 0);
	orphan_tracer_start(_metadata, t);
	T_OK(t, T_SEIZE, pid, 0);

	expect_all(_metadata, pid, WUNTRACED | WCONTINUED, 0);
	expect_all(_metadata, pid, WUNTRACED | WCONTINUED | __WNOTHREAD, 0);

	ASSERT_EQ(0, gate_open(&g[0], 1));
	wait_proc_state(pid, pid, 'Z');
	expect_all(_metadata, pid, 0, 0);
	expect_all(_metadata, pid, __WNOTHREAD, 0);

	T_WAIT_ST(t, pid, 0, code_of(0) << 8);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, __WNOTHREAD | WNOHANG | WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, pid, CLD_EXITED, code_of(0));
	wk_wait(WK_WAITPID_PGRP0, 0, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES(WK_WAITPID_PGRP0, r, pid, CLD_EXITED, code_of(0));
	expect_all(_metadata, pid, __WNOTHREAD, ECHILD);
	/* The tracer reads EOF and exits when we do. */
}

/* ------------------------------------------------------------------ */
/* The exit that a tracer lets go of goes to the real parent.          */

FIXTURE(handover) {
	struct tracer t;
	struct gate g[2];
	pid_t pid;
};

FIXTURE_VARIANT(handover) {
	int exit_signal;
};

FIXTURE_VARIANT_ADD(handover, sigchld) { .exit_signal = SIGCHLD, };
FIXTURE_VARIANT_ADD(handover, clone_sigusr1) { .exit_signal = SIGUSR1, };
FIXTURE_VARIANT_ADD(handover, clone_nosig) { .exit_signal = 0, };

FIXTURE_SETUP(handover)
{
	sigset_t set;

	/* a clone child's exit signal would kill us */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	self->pid = spawn_tracee(self->g, code_of(0), variant->exit_signal);
	ASSERT_GT(self->pid, 0);
	/* not our child: every other wait of ours may say -ECHILD */
	orphan_tracer_start(_metadata, &self->t);
}

FIXTURE_TEARDOWN(handover)
{
}

/*
 * A tracer that is not the real parent reaps its tracee's exit with
 * wait(-1, __WALL); the zombie is then the real parent's, reported to the
 * waits that take its kind of child (the plain ones for a child whose
 * exit signal is SIGCHLD, __WCLONE for a clone child, __WALL for both),
 * by P_ALL and P_PGID as by the P_PID oracle, and the others say
 * -ECHILD.  Once reaped, nothing is left.
 */
TEST_F(handover, tracer_reaps_then_parent)
{
	static const int opts[] = { 0, (int)__WCLONE, __WALL };
	static const enum wkind kinds[] = {
		WK_WAITID_PID, WK_WAITID_ALL, WK_WAITID_PGID0,
	};
	bool clone = variant->exit_signal != SIGCHLD;
	struct tracer *t = &self->t;
	pid_t pid = self->pid;
	struct wres r;

	T_OK(t, T_SEIZE, pid, 0);
	ASSERT_EQ(0, gate_open(&self->g[0], 1));
	wait_proc_state(pid, pid, 'Z');
	/* the tracer holds it: nothing to report, but no -ECHILD */
	expect_all(_metadata, pid, __WALL, 0);
	T_WAIT_FOR(t, -1, __WALL, pid, code_of(0) << 8);

	for (unsigned int i = 0; i < ARRAY_SIZE(opts); i++) {
		bool takes = opts[i] == __WALL ||
			     clone == (opts[i] == (int)__WCLONE);

		if (!takes) {
			expect_all(_metadata, pid, opts[i], ECHILD);
			continue;
		}
		for (unsigned int k = 0; k < ARRAY_SIZE(kinds); k++) {
			wk_wait(kinds[k], pid, 0, -1,
				opts[i] | WNOHANG | WNOWAIT, &r);
			ASSERT_EQ(pid, r.pid)
				TH_LOG("kind %d, opts %#x", kinds[k], opts[i]);
			ASSERT_WRES(kinds[k], r, pid, CLD_EXITED, code_of(0));
		}
	}
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, (clone ? __WCLONE : 0) | WNOHANG,
		&r);
	ASSERT_WRES(WK_WAITPID_ANY, r, pid, CLD_EXITED, code_of(0));
	expect_all(_metadata, pid, __WALL, ECHILD);
	/* The tracer reads EOF and exits when we do. */
}

TEST_HARNESS_MAIN
