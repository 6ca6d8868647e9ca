// SPDX-License-Identifier: GPL-2.0
/*
 * "Clone" children: processes (not threads) whose exit_signal is not
 * SIGCHLD, made with clone3() or clone() without CLONE_THREAD.  A wait
 * without __WCLONE/__WALL does not see them at all (ECHILD if they are
 * the only children), __WCLONE sees only them, __WALL sees everyone.
 */
#include "wait_util.h"

FIXTURE(clone) {
	struct kids k;
};

FIXTURE_VARIANT(clone) {
	bool clone3;
	int exit_signal;
};

FIXTURE_VARIANT_ADD(clone, clone3_sigusr1) { .clone3 = true,
					     .exit_signal = SIGUSR1, };
FIXTURE_VARIANT_ADD(clone, clone3_nosig) { .clone3 = true,
					   .exit_signal = 0, };
FIXTURE_VARIANT_ADD(clone, clone3_sigrtmin) { .clone3 = true,
					      .exit_signal = 34, };
FIXTURE_VARIANT_ADD(clone, clone_sigusr1) { .clone3 = false,
					    .exit_signal = SIGUSR1, };
FIXTURE_VARIANT_ADD(clone, clone_nosig) { .clone3 = false,
					  .exit_signal = 0, };

FIXTURE_SETUP(clone)
{
	sigset_t set;

	memset(&self->k, 0, sizeof(self->k));
	/* Keep exit signals pending so they can be checked. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, 34);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
}

FIXTURE_TEARDOWN(clone)
{
}

/*
 * Add a clone child to @k (same conventions as kids_add()): a fork-like
 * clone with the variant's exit signal.
 */
static int add_clone(const FIXTURE_VARIANT(clone) *v, struct kids *k,
		     bool gated, int code)
{
	int i = k->n;
	pid_t pid;

	if (i == KIDS_MAX || gate_init(&k->gate[i]))
		return -1;
	if (v->clone3) {
		struct clone_args args = {
			.exit_signal = v->exit_signal,
		};

		pid = sys_clone3(&args);
	} else {
		/* x86-64 order: flags, stack, parent_tid, child_tid, tls */
		pid = syscall(__NR_clone, v->exit_signal, 0, 0, 0, 0);
	}
	if (pid == 0) {
		wu_child_init();
		_exit(gated ? wu_gated_fn(&(struct wu_gated_arg){
				&k->gate[i], code }) : code);
	}
	if (pid < 0)
		return -1;
	k->pid[i] = pid;
	k->pidfd[i] = sys_pidfd_open(pid, 0);
	if (k->pidfd[i] < 0)
		return -1;
	k->n++;
	return i;
}

/* The ways of waiting that take options, our group for P_PGID. */
static const enum wkind option_kinds[] = {
	WK_WAITPID_ANY, WK_WAITPID_PID, WK_WAITPID_PGRP0,
	WK_WAIT4_ANY, WK_WAITID_ALL, WK_WAITID_PID, WK_WAITID_PGID0,
	WK_WAITID_PIDFD,
};

/* Every way of waiting that lacks __WCLONE/__WALL: all ECHILD. */
static void assert_invisible(struct __test_metadata *_metadata,
			     struct kids *k, int i, int extra)
{
	struct wres r;

	for (unsigned int j = 0; j < ARRAY_SIZE(option_kinds); j++) {
		wk_wait(option_kinds[j], k->pid[i], getpgrp(), k->pidfd[i],
			WNOHANG | extra, &r);
		ASSERT_WRES_ERR(r, ECHILD);
		/* Not even blocking: there is nothing to wait for. */
		wk_wait(option_kinds[j], k->pid[i], getpgrp(), k->pidfd[i],
			extra, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	}
}

/* Only a zombie clone child exists: plain waits get ECHILD. */
TEST_F(clone, plain_wait_gets_echild)
{
	struct wres r;

	ASSERT_EQ(0, add_clone(variant, &self->k, false, code_of(0)));
	ASSERT_EQ(0, wait_zombie(self->k.pid[0]));
	assert_invisible(_metadata, &self->k, 0, 0);
	assert_invisible(_metadata, &self->k, 0, WUNTRACED | WCONTINUED);

	/* __WCLONE finds it, with an ordinary report. */
	wk_wait(WK_WAITID_PIDFD, 0, 0, self->k.pidfd[0], __WCLONE | WNOWAIT,
		&r);
	ASSERT_WRES(WK_WAITID_PIDFD, r, self->k.pid[0], CLD_EXITED,
		    code_of(0));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WCLONE, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, self->k.pid[0], CLD_EXITED,
		    code_of(0));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* __WCLONE sees only clone children, plain waits only the others. */
TEST_F(clone, wclone_selects_clone_children_only)
{
	struct wres r;

	ASSERT_EQ(0, kids_add(&self->k, false, code_of(0)));
	ASSERT_EQ(1, add_clone(variant, &self->k, false, code_of(1)));
	ASSERT_EQ(0, wait_zombie(self->k.pid[0]));
	ASSERT_EQ(0, wait_zombie(self->k.pid[1]));

	/* Each selector reports its own kind of child, however asked. */
	wk_wait(WK_WAITPID_PID, self->k.pid[0], 0, -1, __WCLONE | WNOHANG,
		&r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITPID_PID, self->k.pid[1], 0, -1, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	wk_wait(WK_WAITID_ALL, 0, 0, -1, __WCLONE, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, self->k.pid[1], CLD_EXITED,
		    code_of(1));
	wk_wait(WK_WAITID_ALL, 0, 0, -1, __WCLONE | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAIT, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAIT, r, self->k.pid[0], CLD_EXITED, code_of(0));
	wk_wait(WK_WAIT, 0, 0, -1, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* __WALL sees both kinds (as a set); __WALL wins over __WCLONE. */
TEST_F(clone, wall_selects_all)
{
	/* zombies: 0 (normal), 1 (clone), 3 (clone), 4 (normal) */
	static const bool is_clone[] = { 0, 1, 0, 1, 0, 1 };
	static const bool zombie[] = { 1, 1, 0, 1, 1, 0 };
	bool done[ARRAY_SIZE(zombie)] = { false };
	const int n = ARRAY_SIZE(zombie);
	struct wres r;

	for (int i = 0; i < n; i++) {
		int got = is_clone[i] ?
			add_clone(variant, &self->k, !zombie[i], code_of(i)) :
			kids_add(&self->k, !zombie[i], code_of(i));

		ASSERT_EQ(i, got);
	}
	for (int i = 0; i < n; i++) {
		if (zombie[i])
			ASSERT_EQ(0, wait_zombie(self->k.pid[i]));
	}

	for (int round = 0; round < 2; round++) {
		for (int j = 0; j < 4 - 2 * round; j++) {
			int got, opts = j % 2 ? __WALL : __WALL | __WCLONE;

			wk_wait(j % 2 ? WK_WAITPID_ANY : WK_WAITID_ALL, 0, 0,
				-1, opts, &r);
			got = idx_of(self->k.pid, n, r.pid);
			ASSERT_GE(got, 0);
			ASSERT_FALSE(done[got]);
			ASSERT_EQ(round == 0, zombie[got]);
			ASSERT_EQ(CLD_EXITED, r.code);
			ASSERT_EQ(code_of(got), r.status);
			done[got] = true;
		}
		wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
		if (round == 0) {
			ASSERT_WRES_NONE(WK_WAITPID_ANY, r);
			kids_release(&self->k, 2);
			kids_release(&self->k, 5);
		} else {
			ASSERT_WRES_ERR(r, ECHILD);
		}
	}
}

/*
 * A blocking plain wait is not satisfied by a clone child's exit: it
 * goes on blocking until the ordinary child exits.
 */
struct two_step {
	struct kids *k;
	pid_t waiter;
	int err;
};

static void clone_then_normal(void *p)
{
	struct two_step *t = p;

	kids_release(t->k, 1);
	if (wait_zombie(t->k->pid[1]))
		t->err = 1;
	/* The clone child is a zombie and the wait still sleeps. */
	while (!thread_in_wait(t->waiter))
		sched_yield();
	kids_release(t->k, 0);
}

TEST_F(clone, plain_wait_not_woken_by_clone_child)
{
	struct two_step t = { &self->k, sys_gettid(), 0 };
	struct releaser rel;
	struct wres r;

	ASSERT_EQ(0, kids_add(&self->k, true, code_of(0)));
	ASSERT_EQ(1, add_clone(variant, &self->k, true, code_of(1)));
	ASSERT_EQ(0, releaser_start(&rel, clone_then_normal, &t));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_EQ(0, t.err);
	ASSERT_WRES(WK_WAITPID_ANY, r, self->k.pid[0], CLD_EXITED,
		    code_of(0));
	wk_wait(WK_WAITPID_PID, self->k.pid[1], 0, -1, __WCLONE, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, self->k.pid[1], CLD_EXITED,
		    code_of(1));
}

/* Stops of a clone child need __WCLONE/__WALL too. */
TEST_F(clone, clone_child_stop_needs_wclone)
{
	struct wres r;
	pid_t pid;

	ASSERT_EQ(0, add_clone(variant, &self->k, true, code_of(0)));
	pid = self->k.pid[0];
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED | WNOWAIT | __WALL, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED | __WCLONE, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, __WALL, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_KILLED, SIGKILL);
}

/*
 * The parent gets the child's exit_signal (none for 0), not SIGCHLD,
 * carrying the usual CLD_EXITED siginfo.
 */
TEST_F(clone, exit_signal_delivered)
{
	struct timespec zero = { 0, 0 };
	sigset_t pending, set;
	siginfo_t si;
	pid_t pid;

	ASSERT_EQ(0, add_clone(variant, &self->k, false, code_of(0)));
	pid = self->k.pid[0];
	ASSERT_EQ(0, wait_zombie(pid));

	ASSERT_EQ(0, sigpending(&pending));
	ASSERT_FALSE(sigismember(&pending, SIGCHLD));
	for (int s = 1; s <= 64; s++) {
		if (s == 32 || s == 33)
			continue;	/* glibc-internal, never valid here */
		ASSERT_EQ(s == variant->exit_signal,
			  sigismember(&pending, s) == 1);
	}
	if (variant->exit_signal) {
		sigemptyset(&set);
		sigaddset(&set, variant->exit_signal);
		ASSERT_EQ(variant->exit_signal,
			  sigtimedwait(&set, &si, &zero));
		ASSERT_EQ(variant->exit_signal, si.si_signo);
		ASSERT_EQ(CLD_EXITED, si.si_code);
		ASSERT_EQ(pid, si.si_pid);
		ASSERT_EQ(code_of(0), si.si_status);
	}
	ASSERT_EQ(pid, waitpid(pid, NULL, __WCLONE));
}

/*
 * Clone zombies found by their process group, among plain zombies of our
 * group and clone zombies of another: each selector takes its own.
 */
TEST_F(clone, group_wait_finds_clone_zombie)
{
	pid_t other;
	struct wres r;

	ASSERT_EQ(0, kids_add(&self->k, false, code_of(0)));
	ASSERT_EQ(1, add_clone(variant, &self->k, true, code_of(1)));
	ASSERT_EQ(2, add_clone(variant, &self->k, false, code_of(2)));
	other = self->k.pid[1];
	ASSERT_EQ(0, setpgid(other, other));
	kids_release(&self->k, 1);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, wait_zombie(self->k.pid[i]));

	/* Our group: the clone zombie for __WCLONE, the other without. */
	wk_wait(WK_WAITID_PGID0, 0, 0, -1, __WCLONE | WNOHANG, &r);
	ASSERT_WRES(WK_WAITID_PGID0, r, self->k.pid[2], CLD_EXITED,
		    code_of(2));
	wk_wait(WK_WAITID_PGID, 0, other, -1, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITID_PGID, 0, other, -1, __WCLONE | WNOHANG, &r);
	ASSERT_WRES(WK_WAITID_PGID, r, other, CLD_EXITED, code_of(1));
	wk_wait(WK_WAITPID_PGRP0, 0, 0, -1, __WCLONE | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITPID_PGRP0, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES(WK_WAITPID_PGRP0, r, self->k.pid[0], CLD_EXITED,
		    code_of(0));
}

/*
 * Only a live clone child exists: waits without __WCLONE/__WALL get
 * ECHILD at once, and those with either find nothing yet, by P_ALL and
 * P_PGID as by P_PID; its exit is theirs.  P_ALL and P_PGID decide
 * ECHILD from counts kept since the fork, where a new process is
 * counted as a clone child or not.
 */
TEST_F(clone, live_clone_child_counts_for_wclone_only)
{
	static const int selectors[] = { __WCLONE, __WALL };
	struct wres r;

	ASSERT_EQ(0, add_clone(variant, &self->k, true, code_of(0)));
	assert_invisible(_metadata, &self->k, 0, 0);
	for (unsigned int j = 0; j < ARRAY_SIZE(option_kinds); j++) {
		for (unsigned int s = 0; s < ARRAY_SIZE(selectors); s++) {
			wk_wait(option_kinds[j], self->k.pid[0], getpgrp(),
				self->k.pidfd[0], selectors[s] | WNOHANG, &r);
			ASSERT_WRES_NONE(option_kinds[j], r);
		}
	}
	kids_release(&self->k, 0);
	ASSERT_EQ(0, wait_zombie(self->k.pid[0]));
	assert_invisible(_metadata, &self->k, 0, 0);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, __WCLONE, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, self->k.pid[0], CLD_EXITED,
		    code_of(0));
}

TEST_HARNESS_MAIN
