// SPDX-License-Identifier: GPL-2.0
/*
 * Job control reporting: WUNTRACED/WSTOPPED and WCONTINUED.
 *
 * A stop and a continue are each reported once; only the latest job
 * control state is reportable; exit wins over an unreported stop or
 * continue; a multi-threaded child stops and continues as one.
 *
 * Synchronisation on the child's state uses waitid(WNOWAIT), which
 * does not consume the report under test.
 */
#include "wait_util.h"

#include <dirent.h>

FIXTURE(stop) {
	struct kids k;
};

FIXTURE_VARIANT(stop) {
	enum wkind kind;
};

FIXTURE_VARIANT_ADD(stop, waitpid_pid) { .kind = WK_WAITPID_PID, };
FIXTURE_VARIANT_ADD(stop, waitpid_any) { .kind = WK_WAITPID_ANY, };
FIXTURE_VARIANT_ADD(stop, wait4_any) { .kind = WK_WAIT4_ANY, };
FIXTURE_VARIANT_ADD(stop, waitid_pid) { .kind = WK_WAITID_PID, };
FIXTURE_VARIANT_ADD(stop, waitid_all) { .kind = WK_WAITID_ALL, };
FIXTURE_VARIANT_ADD(stop, waitid_pidfd) { .kind = WK_WAITID_PIDFD, };

FIXTURE_SETUP(stop)
{
	memset(&self->k, 0, sizeof(self->k));
	/* One live child (index 0) that the tests stop and continue. */
	ASSERT_EQ(0, kids_add(&self->k, true, code_of(0)));
}

FIXTURE_TEARDOWN(stop)
{
}

#define SW_ALL (WUNTRACED | WCONTINUED)

/* Wait the variant's way for child 0. */
static void swait(const FIXTURE_VARIANT(stop) *v, struct kids *k, int opts,
		  struct wres *r)
{
	wk_wait(v->kind, k->pid[0], getpgrp(), k->pidfd[0], opts, r);
}

#define EXPECT_REPORT(opts, code, status) do {				\
	swait(variant, &self->k, (opts), &r);				\
	ASSERT_WRES(variant->kind, r, self->k.pid[0], (code), (status)); \
} while (0)

#define EXPECT_NOTHING(opts) do {					\
	swait(variant, &self->k, (opts) | WNOHANG, &r);			\
	ASSERT_WRES_NONE(variant->kind, r);				\
} while (0)

/* Kill child 0 and reap it; nothing is left afterwards. */
#define KILL_AND_REAP() do {						\
	ASSERT_EQ(0, kill(self->k.pid[0], SIGKILL));			\
	EXPECT_REPORT(SW_ALL, CLD_KILLED, SIGKILL);			\
	swait(variant, &self->k, SW_ALL | WNOHANG, &r);			\
	ASSERT_WRES_ERR(r, ECHILD);					\
} while (0)

/* Each stop signal: reported once, with that signal. */
TEST_F(stop, stop_reported_once)
{
	static const int sigs[] = { SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU };
	struct wres r;

	EXPECT_NOTHING(SW_ALL);
	for (unsigned int i = 0; i < ARRAY_SIZE(sigs); i++) {
		ASSERT_EQ(0, kill(self->k.pid[0], sigs[i]));
		/* Blocks until the child has actually stopped. */
		EXPECT_REPORT(WUNTRACED, CLD_STOPPED, sigs[i]);
		EXPECT_NOTHING(SW_ALL);
		ASSERT_EQ(0, kill(self->k.pid[0], SIGCONT));
		EXPECT_REPORT(WCONTINUED, CLD_CONTINUED, SIGCONT);
		EXPECT_NOTHING(SW_ALL);
	}
	KILL_AND_REAP();
}

static void send_cont(void *pid)
{
	kill(*(pid_t *)pid, SIGCONT);
}

/* A blocking WCONTINUED wait is woken by the SIGCONT, reported once. */
TEST_F(stop, continue_reported_once)
{
	struct releaser rel;
	struct wres r;

	ASSERT_EQ(0, kill(self->k.pid[0], SIGSTOP));
	EXPECT_REPORT(WUNTRACED, CLD_STOPPED, SIGSTOP);
	/* Stopped and already reported: nothing for WCONTINUED yet. */
	EXPECT_NOTHING(SW_ALL);
	ASSERT_EQ(0, releaser_start(&rel, send_cont, &self->k.pid[0]));
	EXPECT_REPORT(WCONTINUED, CLD_CONTINUED, SIGCONT);
	ASSERT_EQ(0, releaser_join(&rel));
	if (!wk_is_waitid(variant->kind))
		ASSERT_TRUE(WIFCONTINUED(r.raw));
	EXPECT_NOTHING(SW_ALL);
	KILL_AND_REAP();
}

/* SIGCONT to a child that is not stopped is no event. */
TEST_F(stop, cont_without_stop_not_reported)
{
	struct wres r;

	ASSERT_EQ(0, kill(self->k.pid[0], SIGCONT));
	EXPECT_NOTHING(SW_ALL);
	KILL_AND_REAP();
}

static void send_kill(void *pid)
{
	kill(*(pid_t *)pid, SIGKILL);
}

/*
 * Without WUNTRACED a stop is no event: the wait keeps blocking until
 * the child dies, and the stop is never reported.
 */
TEST_F(stop, stop_invisible_without_wuntraced)
{
	struct releaser rel;
	struct wres r;

	ASSERT_EQ(0, kill(self->k.pid[0], SIGSTOP));
	ASSERT_EQ(0, sync_stopped(self->k.pid[0]));
	EXPECT_NOTHING(0);
	EXPECT_NOTHING(WCONTINUED);
	ASSERT_EQ(0, releaser_start(&rel, send_kill, &self->k.pid[0]));
	EXPECT_REPORT(0, CLD_KILLED, SIGKILL);
	ASSERT_EQ(0, releaser_join(&rel));
	swait(variant, &self->k, SW_ALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* Stopped, never reported, then killed: only the death is reported. */
TEST_F(stop, stop_then_exit)
{
	struct wres r;

	ASSERT_EQ(0, kill(self->k.pid[0], SIGSTOP));
	ASSERT_EQ(0, sync_stopped(self->k.pid[0]));
	ASSERT_EQ(0, kill(self->k.pid[0], SIGKILL));
	ASSERT_EQ(0, wait_zombie(self->k.pid[0]));
	EXPECT_REPORT(SW_ALL, CLD_KILLED, SIGKILL);
	swait(variant, &self->k, SW_ALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* Continued, never reported, then exits normally: only the exit. */
TEST_F(stop, continue_then_exit)
{
	struct wres r;

	ASSERT_EQ(0, kill(self->k.pid[0], SIGSTOP));
	EXPECT_REPORT(WUNTRACED, CLD_STOPPED, SIGSTOP);
	ASSERT_EQ(0, kill(self->k.pid[0], SIGCONT));
	ASSERT_EQ(0, sync_continued(self->k.pid[0]));
	kids_release(&self->k, 0);
	ASSERT_EQ(0, wait_zombie(self->k.pid[0]));
	EXPECT_REPORT(SW_ALL, CLD_EXITED, code_of(0));
	swait(variant, &self->k, SW_ALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * Stop, continue, stop with nobody looking: only the latest state, the
 * second stop, is reported, and the continue in between is lost.
 */
TEST_F(stop, stop_cont_stop)
{
	struct wres r;
	pid_t pid = self->k.pid[0];

	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(0, sync_stopped(pid));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	ASSERT_EQ(0, sync_continued(pid));
	ASSERT_EQ(0, kill(pid, SIGTSTP));
	ASSERT_EQ(0, sync_stopped(pid));
	EXPECT_REPORT(SW_ALL | WNOHANG, CLD_STOPPED, SIGTSTP);
	EXPECT_NOTHING(SW_ALL);
	ASSERT_EQ(0, kill(pid, SIGCONT));
	EXPECT_REPORT(SW_ALL, CLD_CONTINUED, SIGCONT);
	EXPECT_NOTHING(SW_ALL);
	KILL_AND_REAP();
}

/* Stop then continue with nobody looking: only the continue. */
TEST_F(stop, stop_cont_before_wait)
{
	struct wres r;
	pid_t pid = self->k.pid[0];

	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(0, sync_stopped(pid));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	ASSERT_EQ(0, sync_continued(pid));
	EXPECT_NOTHING(WUNTRACED);
	EXPECT_REPORT(SW_ALL | WNOHANG, CLD_CONTINUED, SIGCONT);
	EXPECT_NOTHING(SW_ALL);
	KILL_AND_REAP();
}

/* WNOWAIT leaves stop and continue reports in place. */
TEST(wnowait_stop_and_continue)
{
	struct gate g;
	struct wres r;
	pid_t pid;

	ASSERT_EQ(0, gate_init(&g));
	pid = spawn_gated(&g, 0);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	for (int i = 0; i < 3; i++) {
		wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED | WNOWAIT, &r);
		ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	}
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED | WNOHANG | WNOWAIT, &r);
	ASSERT_WRES_NONE(WK_WAITID_PID, r);

	ASSERT_EQ(0, kill(pid, SIGCONT));
	for (int i = 0; i < 3; i++) {
		wk_wait(WK_WAITID_PID, pid, 0, -1, WCONTINUED | WNOWAIT, &r);
		ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_CONTINUED, SIGCONT);
	}
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WCONTINUED, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_CONTINUED, SIGCONT);
	wk_wait(WK_WAITID_PID, pid, 0, -1, WCONTINUED | WNOHANG | WNOWAIT, &r);
	ASSERT_WRES_NONE(WK_WAITID_PID, r);
	ASSERT_EQ(0, gate_open(&g, 1));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, 0);
}

/*
 * waitid() without WEXITED does not see a zombie at all: with no other
 * child it is ECHILD at once (it does not block), and the zombie stays.
 */
TEST(zombie_invisible_to_wstopped_only)
{
	siginfo_t si;
	struct wres r;
	pid_t pid;

	pid = spawn_exit(code_of(0));
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, wait_zombie(pid));
	ASSERT_EQ(-1, sys_waitid(P_PID, pid, &si, WSTOPPED | WNOHANG, NULL));
	ASSERT_EQ(ECHILD, errno);
	ASSERT_EQ(-1, sys_waitid(P_ALL, 0, &si, WSTOPPED | WCONTINUED, NULL));
	ASSERT_EQ(ECHILD, errno);
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, code_of(0));
}

/* ------------------------------------------------------------------ */
/* Multi-threaded child: the group stops and continues as one.         */

#define MT_THREADS 4

static void *mt_thread(void *g)
{
	gate_pass(g);
	return NULL;
}

struct mt_arg {
	struct gate *g;
	struct gate *ready;
};

static int mt_child(void *p)
{
	struct mt_arg *a = p;
	pthread_t th[MT_THREADS];

	for (int i = 0; i < MT_THREADS; i++)
		CHILD_CHECK(!pthread_create(&th[i], NULL, mt_thread, a->g));
	CHILD_CHECK(!note_send(a->ready));
	gate_pass(a->g);
	return WU_CHILD_FAIL;
}

/* Thread ids of process @pid, from /proc. */
static int list_tids(pid_t pid, pid_t *tids, int max)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max)
		if (de->d_name[0] != '.')
			tids[n++] = atoi(de->d_name);
	closedir(d);
	return n;
}

TEST(multithreaded_child_stops_as_one)
{
	struct gate g, ready;
	struct mt_arg a = { &g, &ready };
	pid_t pid, tids[MT_THREADS + 2];
	struct wres r;
	int n;

	ASSERT_EQ(0, gate_init(&g));
	ASSERT_EQ(0, note_init(&ready));
	pid = spawn(mt_child, &a);
	ASSERT_GT(pid, 0);
	ASSERT_TRUE(note_recv(&ready));
	n = list_tids(pid, tids, ARRAY_SIZE(tids));
	ASSERT_EQ(MT_THREADS + 1, n);

	/* A stop sent to one non-leader thread stops the whole group. */
	for (int i = 0; i < n; i++) {
		if (tids[i] != pid) {
			ASSERT_EQ(0, syscall(__NR_tgkill, pid, tids[i],
					     SIGTSTP));
			break;
		}
	}
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WUNTRACED, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_STOPPED, SIGTSTP);
	/* Reported only once every thread has stopped. */
	for (int i = 0; i < n; i++) {
		ASSERT_EQ('T', proc_state(pid, tids[i]));
	}
	/* One report for the group, not one per thread. */
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WSTOPPED | WCONTINUED | WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITID_ALL, r);
	/* Threads are not children. */
	for (int i = 0; i < n; i++) {
		if (tids[i] == pid)
			continue;
		wk_wait(WK_WAITPID_PID, tids[i], 0, -1,
			WUNTRACED | WNOHANG | __WALL, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	}

	ASSERT_EQ(0, kill(pid, SIGCONT));
	wk_wait(WK_WAITID_PID, pid, 0, -1, WCONTINUED, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_CONTINUED, SIGCONT);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WSTOPPED | WCONTINUED | WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITID_ALL, r);

	/* And stops once more, with SIGSTOP to the leader this time. */
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ('T', proc_state(pid, tids[i]));
	}
	ASSERT_EQ(0, kill(pid, SIGKILL));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, WUNTRACED | WCONTINUED, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, pid, CLD_KILLED, SIGKILL);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

TEST_HARNESS_MAIN
