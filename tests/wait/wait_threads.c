// SPDX-License-Identifier: GPL-2.0
/*
 * Multi-threaded parent: children belong to the thread group, not to
 * the thread that forked them.  Any thread can reap them (and is woken
 * by their exit) unless it passes __WNOTHREAD, which restricts the wait
 * to the calling thread's own children.  When the forking thread exits,
 * its children pass to another thread of the group (not to a reaper
 * outside), which can then reap them even with __WNOTHREAD; a child's
 * PR_SET_PDEATHSIG fires at that hand-over.  Blocking __WNOTHREAD waits
 * sleep and wake as any other, in a single-threaded parent and in a thread
 * with siblings.
 */
#include "wait_util.h"

#include <poll.h>

/*
 * A helper thread that forks on request and then stays alive (blocked
 * on its own gate) or exits; it can also reap with __WNOTHREAD.
 */
struct forker {
	pthread_t th;
	pid_t tid;
	struct gate cmd;	/* commands to the thread */
	struct gate done;	/* thread -> test: command done */
	struct gate ready;	/* gated kid -> thread: set up */
	int nkids;
	pid_t kid[4];
	bool kid_gated[4];
	struct gate kid_gate;	/* gated kids of this thread */
	int kid_pdeathsig;	/* PR_SET_PDEATHSIG for gated kids */
	struct wres res;	/* result of CMD_REAP */
	pid_t reap_target;
};

enum {
	CMD_FORK_GATED = 'g',
	CMD_FORK_ZOMBIE = 'z',
	CMD_REAP = 'r',
	CMD_EXIT = 'x',
};

struct pd_arg {
	struct gate *g;
	struct gate *ready;
	int sig;
	int code;
	pid_t ppid;
};

/* Gated kid: optionally asks for a parent-death signal first. */
static int pd_kid(void *p)
{
	struct pd_arg *a = p;

	if (a->sig)
		CHILD_CHECK(!prctl(PR_SET_PDEATHSIG, a->sig));
	CHILD_CHECK(!note_send(a->ready));
	if (!gate_pass(a->g))
		return WU_ORPHANED;
	/* Still a child of the same process after any hand-over. */
	CHILD_CHECK(getppid() == a->ppid);
	return a->code;
}

static void *forker_main(void *p)
{
	struct forker *f = p;
	char c;

	f->tid = sys_gettid();
	while (read(f->cmd.rfd, &c, 1) == 1) {
		struct pd_arg a = { &f->kid_gate, &f->ready,
				    f->kid_pdeathsig, code_of(f->nkids),
				    getpid() };

		switch (c) {
		case CMD_FORK_GATED:
			f->kid_gated[f->nkids] = true;
			f->kid[f->nkids] = spawn(pd_kid, &a);
			/* The kid is set up once it says so. */
			if (read(f->ready.rfd, &c, 1) != 1)
				f->kid[f->nkids] = -1;
			f->nkids++;
			break;
		case CMD_FORK_ZOMBIE:
			f->kid[f->nkids] = spawn_exit(code_of(f->nkids));
			wait_zombie(f->kid[f->nkids]);
			f->nkids++;
			break;
		case CMD_REAP:
			wk_wait(WK_WAITPID_PID, f->reap_target, 0, -1,
				__WNOTHREAD, &f->res);
			break;
		case CMD_EXIT:
			note_send(&f->done);
			return NULL;
		}
		note_send(&f->done);
	}
	return NULL;
}

static int forker_start(struct forker *f)
{
	memset(f, 0, sizeof(*f));
	if (gate_init(&f->cmd) || gate_init(&f->kid_gate))
		return -1;
	/* Both ends of these stay with us: notes, never note_recv()'d. */
	if (note_init(&f->done) || note_init(&f->ready))
		return -1;
	return pthread_create(&f->th, NULL, forker_main, f);
}

/* Run command @c in the forker thread and wait until it is done. */
static int forker_do(struct forker *f, char c)
{
	char ack;

	if (write(f->cmd.wfd, &c, 1) != 1)
		return -1;
	return read(f->done.rfd, &ack, 1) == 1 ? 0 : -1;
}

/* Let the thread exit and make sure it is completely gone. */
static int forker_exit(struct forker *f)
{
	if (forker_do(f, CMD_EXIT) || pthread_join(f->th, NULL))
		return -1;
	/*
	 * pthread_join() returns when the thread's tid is cleared, which
	 * is before its children are handed over; the /proc entry only
	 * disappears once the thread is released, after the hand-over.
	 */
	wait_task_gone(getpid(), f->tid);
	return 0;
}

/* The main thread reaps a child forked by another (living) thread. */
TEST(reap_child_of_other_thread)
{
	struct forker f;
	struct wres r;

	ASSERT_EQ(0, forker_start(&f));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_GATED));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_ZOMBIE));

	wk_wait(WK_WAITPID_PID, f.kid[0], 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_PID, r);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, f.kid[1], CLD_EXITED, code_of(1));
	ASSERT_EQ(0, gate_open(&f.kid_gate, 1));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, f.kid[0], CLD_EXITED, code_of(0));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	ASSERT_EQ(0, forker_exit(&f));
}

/* A blocked wait in one thread is woken by another thread's child. */
TEST(woken_by_other_threads_child)
{
	struct releaser rel;
	struct forker f;
	struct wres r;

	ASSERT_EQ(0, forker_start(&f));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_GATED));
	ASSERT_EQ(0, releaser_start(&rel, release_one, &f.kid_gate));
	wk_wait(WK_WAITID_ALL, 0, 0, -1, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES(WK_WAITID_ALL, r, f.kid[0], CLD_EXITED, code_of(0));
	ASSERT_EQ(0, forker_exit(&f));
}

/*
 * __WNOTHREAD: the main thread sees only its own children.  Another
 * thread's zombie is ECHILD for it (even blocking), its own live child
 * makes WNOHANG return 0, and the forking thread itself can reap.
 */
TEST(wnothread_own_children_only)
{
	struct kids k = { 0 };
	struct forker f;
	struct wres r;
	pid_t z;

	ASSERT_EQ(0, forker_start(&f));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_ZOMBIE));
	z = f.kid[0];

	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITPID_PID, z, 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	/* With a live child of our own: nothing to report, not ECHILD. */
	ASSERT_EQ(0, kids_add(&k, true, code_of(5)));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_ANY, r);
	wk_wait(WK_WAITID_PID, z, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	/* The forking thread reaps its own child with __WNOTHREAD. */
	f.reap_target = z;
	ASSERT_EQ(0, forker_do(&f, CMD_REAP));
	ASSERT_WRES(WK_WAITPID_PID, f.res, z, CLD_EXITED, code_of(0));

	kids_release(&k, 0);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, k.pid[0], CLD_EXITED, code_of(5));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	ASSERT_EQ(0, forker_exit(&f));
}

/*
 * A __WNOTHREAD wait is not woken by another thread's child: it goes on
 * sleeping until its own child exits.
 */
struct wnt_steps {
	struct forker *f;
	struct kids *k;
	pid_t waiter;
	int err;
};

static void other_then_own(void *p)
{
	struct wnt_steps *s = p;

	gate_open(&s->f->kid_gate, 1);
	if (wait_zombie(s->f->kid[0]))
		s->err = 1;
	for (int i = 0; i < 200; i++)
		if (!thread_in_wait(s->waiter))
			s->err = 2;
	kids_release(s->k, 0);
}

TEST(wnothread_not_woken_by_other_threads_child)
{
	struct kids k = { 0 };
	struct wnt_steps s = { NULL, &k, sys_gettid(), 0 };
	struct releaser rel;
	struct forker f;
	struct wres r;

	ASSERT_EQ(0, forker_start(&f));
	s.f = &f;
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_GATED));
	ASSERT_EQ(0, kids_add(&k, true, code_of(5)));

	ASSERT_EQ(0, releaser_start(&rel, other_then_own, &s));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_EQ(0, s.err);
	ASSERT_WRES(WK_WAITPID_ANY, r, k.pid[0], CLD_EXITED, code_of(5));
	/* The other thread's zombie is still there for a plain wait. */
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, f.kid[0], CLD_EXITED, code_of(0));
	ASSERT_EQ(0, forker_exit(&f));
}

/*
 * The forking thread exits: its live and zombie children pass to the
 * remaining thread (the main one), whose __WNOTHREAD waits now find
 * them; they stay children of this process (getppid unchanged).
 */
TEST(children_inherited_on_thread_exit)
{
	struct forker f;
	struct wres r;

	ASSERT_EQ(0, forker_start(&f));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_GATED));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_ZOMBIE));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	ASSERT_EQ(0, forker_exit(&f));

	/* The zombie is ours now; the live one too. */
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, f.kid[1], CLD_EXITED, code_of(1));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_ANY, r);
	ASSERT_EQ(0, gate_open(&f.kid_gate, 1));
	wk_wait(WK_WAITPID_PID, f.kid[0], 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, f.kid[0], CLD_EXITED, code_of(0));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* Our own live child @k goes, then the third thread @idle: nothing left. */
static void end_handed_over(struct __test_metadata *_metadata, struct kids *k,
			    struct forker *idle)
{
	struct wres r;

	kids_release(k, 0);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, k->pid[0], CLD_EXITED, code_of(5));
	ASSERT_EQ(0, forker_exit(idle));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * The same while a third thread lives on, and the main thread has a live
 * child of its own from before: its __WNOTHREAD waits, which look at the
 * first child and then at the exits it may take, find the zombie handed
 * over behind it.
 */
TEST(zombie_inherited_behind_own_child_beside_a_thread)
{
	struct forker f, idle;
	struct kids k = { 0 };
	struct wres r;

	ASSERT_EQ(0, kids_add(&k, true, code_of(5)));
	ASSERT_EQ(0, forker_start(&idle));
	ASSERT_EQ(0, forker_start(&f));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_ZOMBIE));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD | WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_ANY, r);

	ASSERT_EQ(0, forker_exit(&f));
	check_nothread_report(_metadata, f.kid[0], 0, CLD_EXITED, code_of(0));

	end_handed_over(_metadata, &k, &idle);
}

/*
 * The same with a stop that nobody consumed: the main thread's __WNOTHREAD
 * waits with WUNTRACED find it behind its own live child, and then the
 * continue that follows.
 */
TEST(stop_inherited_behind_own_child_beside_a_thread)
{
	struct forker f, idle;
	struct kids k = { 0 };
	struct wres r;
	pid_t kid;

	ASSERT_EQ(0, kids_add(&k, true, code_of(5)));
	ASSERT_EQ(0, forker_start(&idle));
	ASSERT_EQ(0, forker_start(&f));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_GATED));
	kid = f.kid[0];
	ASSERT_GT(kid, 0);
	ASSERT_EQ(0, kill(kid, SIGSTOP));
	ASSERT_EQ(0, sync_stopped(kid));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD | WUNTRACED | WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_ANY, r);

	ASSERT_EQ(0, forker_exit(&f));
	check_nothread_report(_metadata, kid, WUNTRACED, CLD_STOPPED, SIGSTOP);

	ASSERT_EQ(0, kill(kid, SIGCONT));
	ASSERT_EQ(0, sync_continued(kid));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD | WCONTINUED | WNOHANG, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, kid, CLD_CONTINUED, SIGCONT);

	ASSERT_EQ(0, gate_open(&f.kid_gate, 1));
	wk_wait(WK_WAITPID_PID, kid, 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, kid, CLD_EXITED, code_of(0));
	end_handed_over(_metadata, &k, &idle);
}

/* PR_SET_PDEATHSIG is about the forking thread: it fires on hand-over. */
TEST(pdeathsig_fires_on_thread_exit)
{
	struct forker f;
	struct wres r;

	ASSERT_EQ(0, forker_start(&f));
	f.kid_pdeathsig = SIGUSR1;
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_GATED));
	ASSERT_GT(f.kid[0], 0);
	ASSERT_EQ(0, forker_exit(&f));
	wk_wait(WK_WAITPID_PID, f.kid[0], 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, f.kid[0], CLD_KILLED, SIGUSR1);
}

/*
 * Several threads blocked in wait(-1) at once: each exit is delivered
 * to exactly one of them.  With a second child still alive the other
 * waiter goes back to sleep; when the last child is taken, the other
 * waiter gets ECHILD.
 */
struct waiter {
	pthread_t th;
	pid_t tid;
	struct gate *done;	/* one byte when the wait returned */
	struct wres r;
};

static void *waiter_main(void *p)
{
	struct waiter *w = p;

	__atomic_store_n(&w->tid, sys_gettid(), __ATOMIC_RELEASE);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &w->r);
	note_send(w->done);
	return NULL;
}

static bool pipe_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

static void start_waiters(struct __test_metadata *_metadata,
			  struct waiter *w, int n, struct gate *done)
{
	for (int i = 0; i < n; i++) {
		w[i].done = done;
		w[i].tid = 0;
		ASSERT_EQ(0, pthread_create(&w[i].th, NULL, waiter_main,
					    &w[i]));
	}
	/* Both asleep in the wait before anything happens. */
	for (int i = 0; i < n; i++) {
		while (!__atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE))
			sched_yield();
		while (!thread_in_wait(w[i].tid))
			sched_yield();
	}
}

TEST(concurrent_waiters_each_exit_once)
{
	struct kids k = { 0 };
	struct waiter w[2];
	struct gate done;
	int first, other;
	char c;

	ASSERT_EQ(0, note_init(&done));
	ASSERT_EQ(0, kids_add(&k, true, code_of(0)));
	ASSERT_EQ(1, kids_add(&k, true, code_of(1)));
	start_waiters(_metadata, w, 2, &done);

	kids_release(&k, 0);
	ASSERT_EQ(1, read(done.rfd, &c, 1));
	/* Exactly one waiter returned; the other sleeps on. */
	first = w[0].r.pid ? 0 : 1;
	other = !first;
	ASSERT_EQ(k.pid[0], w[first].r.pid);
	/*
	 * The other one was woken too, rescans and must go back to
	 * sleep: wait for that (or for it to return, which is wrong).
	 */
	while (!thread_in_wait(w[other].tid) && !pipe_readable(done.rfd))
		sched_yield();
	ASSERT_FALSE(pipe_readable(done.rfd));
	ASSERT_EQ(0, w[other].r.pid);

	kids_release(&k, 1);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(w[i].th, NULL));
	}
	ASSERT_WRES(WK_WAITPID_ANY, w[first].r, k.pid[0], CLD_EXITED,
		    code_of(0));
	ASSERT_WRES(WK_WAITPID_ANY, w[other].r, k.pid[1], CLD_EXITED,
		    code_of(1));
}

TEST(concurrent_waiters_last_child)
{
	struct kids k = { 0 };
	struct waiter w[2];
	struct gate done;
	int got;

	ASSERT_EQ(0, note_init(&done));
	ASSERT_EQ(0, kids_add(&k, true, code_of(0)));
	start_waiters(_metadata, w, 2, &done);
	kids_release(&k, 0);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_join(w[i].th, NULL));
	}
	/* One of them has it, the other finds no child left. */
	got = w[0].r.pid ? 0 : 1;
	ASSERT_WRES(WK_WAITPID_ANY, w[got].r, k.pid[0], CLD_EXITED,
		    code_of(0));
	ASSERT_WRES_ERR(w[!got].r, ECHILD);
}

/*
 * A single-threaded process's blocking __WNOTHREAD waits sleep until its
 * child exits, and wake then, P_ALL and P_PGID alike.  The child is killed
 * by a helper process, as a helper thread would make us multi-threaded: a
 * clone child without an exit signal, which these waits do not take.
 */
static int killer_fn(void *arg)
{
	pid_t victim = *(pid_t *)arg, parent = getppid();

	while (!task_in_wait(parent, parent))
		sched_yield();
	return kill(victim, SIGTERM) ? WU_CHILD_FAIL : 0;
}

static pid_t spawn_killer(pid_t *victim)
{
	struct clone_args args = { .exit_signal = 0 };
	pid_t pid = sys_clone3(&args);

	if (pid == 0) {
		wu_child_init();
		_exit(killer_fn(victim));
	}
	return pid;
}

TEST(single_thread_nothread_blocking_waits_wake)
{
	static const enum wkind kinds[] = {
		WK_WAITPID_ANY, WK_WAITID_ALL, WK_WAITPID_PGRP0,
		WK_WAITID_PGID0,
	};
	struct gate g;
	struct wres r;
	pid_t c, killer;

	for (unsigned int i = 0; i < ARRAY_SIZE(kinds); i++) {
		ASSERT_EQ(0, gate_init(&g));
		c = spawn_gated(&g, code_of(i));
		ASSERT_GT(c, 0);
		killer = spawn_killer(&c);
		ASSERT_GT(killer, 0);
		wk_wait(kinds[i], 0, 0, -1, __WNOTHREAD, &r);
		ASSERT_WRES(kinds[i], r, c, CLD_KILLED, SIGTERM);
		wk_wait(WK_WAITPID_PID, killer, 0, -1, __WCLONE, &r);
		ASSERT_WRES(WK_WAITPID_PID, r, killer, CLD_EXITED, 0);
	}
}

/*
 * The same in a thread with siblings, which has more children than its
 * first walk looks at, beside a sibling's zombie: its blocking
 * __WNOTHREAD waits pass over the sibling's report, sleep, and wake for
 * the one child of theirs that a sibling thread kills.
 */
static void kill_victim(void *victim)
{
	kill(*(pid_t *)victim, SIGTERM);
}

TEST(thread_nothread_blocking_waits_wake)
{
	static const enum wkind kinds[] = {
		WK_WAITPID_ANY, WK_WAITID_ALL, WK_WAITPID_PGRP0,
		WK_WAITID_PGID0,
	};
	struct releaser rel;
	struct forker f;
	pid_t kids[8];
	struct gate g;
	struct wres r;
	unsigned int i, j;

	ASSERT_EQ(0, forker_start(&f));
	ASSERT_EQ(0, forker_do(&f, CMD_FORK_ZOMBIE));
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		ASSERT_EQ(0, gate_init(&g));
		for (j = 0; j < ARRAY_SIZE(kids); j++) {
			kids[j] = spawn_gated(&g, code_of(j));
			ASSERT_GT(kids[j], 0);
		}
		ASSERT_EQ(0, releaser_start(&rel, kill_victim, &kids[5]));
		wk_wait(kinds[i], 0, 0, -1, __WNOTHREAD, &r);
		ASSERT_EQ(0, releaser_join(&rel));
		ASSERT_WRES(kinds[i], r, kids[5], CLD_KILLED, SIGTERM);
		ASSERT_EQ(0, gate_open(&g, ARRAY_SIZE(kids) - 1));
		for (j = 0; j < ARRAY_SIZE(kids); j++)
			if (j != 5)
				ASSERT_EQ(kids[j], waitpid(kids[j], NULL, 0));
	}
	/* The sibling's zombie is still there for a plain wait. */
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, f.kid[0], CLD_EXITED, code_of(0));
	ASSERT_EQ(0, forker_exit(&f));
}

TEST_HARNESS_MAIN
