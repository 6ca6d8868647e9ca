// SPDX-License-Identifier: GPL-2.0
/*
 * pid namespaces: the namespace's init adopts and reaps orphans (live
 * and zombie) from inside it; when init exits, everything else in the
 * namespace is killed and reaped by the kernel before the outer parent
 * can reap init, so no zombie is left behind; the outer parent sees
 * init under its outer pid.
 *
 * Each test does unshare(CLONE_NEWPID) itself (the harness runs every
 * test in its own process), so its next child is the namespace's init.
 */
#include "wait_util.h"

#include <poll.h>

#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

#define NORPHANS 9

static int sys_pidfd_send_signal(int pidfd, int sig)
{
	return syscall(__NR_pidfd_send_signal, pidfd, sig, NULL, 0);
}

#define NEED_NEWPID() do {						\
	if (unshare(CLONE_NEWPID)) {					\
		if (errno == EPERM || errno == EINVAL)			\
			SKIP(return, "unshare(CLONE_NEWPID): %s",	\
			     strerror(errno));				\
		ASSERT_EQ(0, errno);					\
	}								\
} while (0)

/*
 * init of the namespace: a middle process makes orphans and exits, and
 * init must get them all: first the zombies (and only them), then,
 * once released, the live ones (which check that their parent is now
 * pid 1), then ECHILD.
 */
static int init_reaps_orphans_fn(void *unused)
{
	struct gate g, out;
	struct orphans o = { &g, -1, NORPHANS, 1 };
	pid_t pids[NORPHANS], zpids[NORPHANS], lpids[NORPHANS], mid;
	int st, nz = 0, nl = 0;

	(void)unused;
	CHILD_CHECK(getpid() == 1);
	CHILD_CHECK(getppid() == 0);
	CHILD_CHECK(!gate_init(&g));
	CHILD_CHECK(!note_init(&out));
	o.out = out.wfd;
	mid = spawn(make_orphans, &o);
	CHILD_CHECK(mid == 2);
	close(out.wfd);
	CHILD_CHECK(read(out.rfd, pids, sizeof(pids)) == sizeof(pids));
	CHILD_CHECK(waitpid(mid, &st, 0) == mid && st == 0);

	/* Index-preserving split: zombie i keeps code_of(i). */
	for (int i = 0; i < NORPHANS; i++) {
		zpids[i] = orphan_is_zombie(i) ? pids[i] : -2;
		lpids[i] = orphan_is_zombie(i) ? -2 : pids[i];
		nz += orphan_is_zombie(i);
	}
	nl = NORPHANS - nz;
	for (int j = 0; j < nz; j++) {
		pid_t pid = waitpid(-1, &st, 0);
		int i = idx_of(zpids, NORPHANS, pid);

		CHILD_CHECK(i >= 0);
		CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == code_of(i));
		zpids[i] = -2;
	}
	CHILD_CHECK(waitpid(-1, &st, WNOHANG) == 0);
	CHILD_CHECK(!gate_open(&g, nl));
	for (int j = 0; j < nl; j++) {
		pid_t pid = waitpid(-1, &st, 0);
		int i = idx_of(lpids, NORPHANS, pid);

		CHILD_CHECK(i >= 0);
		CHILD_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == code_of(i));
		lpids[i] = -2;
	}
	CHILD_CHECK(waitpid(-1, &st, __WALL | WNOHANG) == -1 &&
		    errno == ECHILD);
	return 0;
}

TEST(init_reaps_orphans)
{
	struct wres r;
	pid_t init;

	NEED_NEWPID();
	init = spawn(init_reaps_orphans_fn, NULL);
	ASSERT_GT(init, 0);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, init, CLD_EXITED, 0);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * init exits while the namespace holds live processes (its children,
 * orphans it adopted, a zombie it never reaped, a stopped one): all of
 * them are gone, not just dead, by the time we can reap init.
 */
#define NVICTIMS 4

struct victims {
	struct gate *never;	/* nobody ever opens it */
	struct gate *go;	/* tells init to exit */
	int out;		/* victims' outer pids go here */
};

/* Tell the outer test our outer pid: /proc/self is resolved there. */
static int send_outer_pid(int fd)
{
	char buf[32];
	ssize_t n;
	pid_t pid;

	n = readlink("/proc/self", buf, sizeof(buf) - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	pid = atoi(buf);
	return write(fd, &pid, sizeof(pid)) == sizeof(pid) ? 0 : -1;
}

static int victim_fn(void *p)
{
	struct victims *v = p;

	CHILD_CHECK(!send_outer_pid(v->out));
	gate_pass(v->never);
	return 0;
}

/* Stops itself once it has told its pid (no race with the report). */
static int victim_stop_fn(void *p)
{
	struct victims *v = p;

	CHILD_CHECK(!send_outer_pid(v->out));
	raise(SIGSTOP);
	gate_pass(v->never);
	return 0;
}

/* Exits once it has told its pid: init leaves it a zombie. */
static int victim_zombie_fn(void *p)
{
	struct victims *v = p;

	CHILD_CHECK(!send_outer_pid(v->out));
	return 0;
}

/* A middle process whose child becomes an orphan of init. */
static int victim_parent_fn(void *p)
{
	struct victims *v = p;

	CHILD_CHECK(spawn(victim_fn, v) > 0);
	return 0;
}

static int dying_init_fn(void *p)
{
	struct victims *v = p;
	pid_t pid;
	int st;

	/* Two plain children, one stopped. */
	CHILD_CHECK(spawn(victim_fn, v) > 0);
	pid = spawn(victim_stop_fn, v);
	CHILD_CHECK(pid > 0);
	CHILD_CHECK(waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st));
	/* An adopted orphan. */
	pid = spawn(victim_parent_fn, v);
	CHILD_CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && st == 0);
	/* A zombie that init leaves unreaped. */
	pid = spawn(victim_zombie_fn, v);
	CHILD_CHECK(pid > 0);
	CHILD_CHECK(!wait_zombie(pid));
	if (!gate_pass(v->go))
		return WU_ORPHANED;
	return 7;
}

TEST(init_exit_kills_namespace)
{
	struct gate never, go, out;
	struct victims v = { &never, &go, -1 };
	pid_t init, pids[NVICTIMS];
	int fds[NVICTIMS];
	struct wres r;

	NEED_NEWPID();
	ASSERT_EQ(0, gate_init(&never));
	ASSERT_EQ(0, gate_init(&go));
	ASSERT_EQ(0, note_init(&out));
	v.out = out.wfd;
	init = spawn(dying_init_fn, &v);
	ASSERT_GT(init, 0);
	close(out.wfd);
	for (int i = 0; i < NVICTIMS; i++) {
		ASSERT_EQ(sizeof(pid_t), read(out.rfd, &pids[i],
					      sizeof(pid_t)));
		/* All alive or zombies (init has not exited yet). */
		fds[i] = sys_pidfd_open(pids[i], 0);
		ASSERT_GE(fds[i], 0);
	}
	ASSERT_EQ(0, gate_open(&go, 1));

	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, init, CLD_EXITED, 7);
	/* Every process of the namespace is fully released. */
	for (int i = 0; i < NVICTIMS; i++) {
		struct pollfd pfd = { .fd = fds[i], .events = POLLIN };

		ASSERT_EQ(1, poll(&pfd, 1, 0));
		ASSERT_EQ(-1, sys_pidfd_send_signal(fds[i], 0));
		ASSERT_EQ(ESRCH, errno);
	}
	/* None of them was ours, and nothing is left for us. */
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	/* The dead namespace takes no new processes. */
	ASSERT_EQ(-1, fork());
	ASSERT_EQ(ENOMEM, errno);
}

/* init killed by a signal: the same, and the signal is reported. */
static int sleeping_init_fn(void *p)
{
	struct victims *v = p;

	CHILD_CHECK(spawn(victim_fn, v) > 0);
	gate_pass(v->never);
	return 0;
}

TEST(init_killed_kills_namespace)
{
	struct gate never, out;
	struct victims v = { &never, NULL, -1 };
	struct wres r;
	pid_t init, pid;
	int fd;

	NEED_NEWPID();
	ASSERT_EQ(0, gate_init(&never));
	ASSERT_EQ(0, note_init(&out));
	v.out = out.wfd;
	init = spawn(sleeping_init_fn, &v);
	ASSERT_GT(init, 0);
	close(out.wfd);
	ASSERT_EQ(sizeof(pid_t), read(out.rfd, &pid, sizeof(pid_t)));
	fd = sys_pidfd_open(pid, 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, kill(init, SIGKILL));
	wk_wait(WK_WAITID_PID, init, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITID_PID, r, init, CLD_KILLED, SIGKILL);
	ASSERT_EQ(-1, sys_pidfd_send_signal(fd, 0));
	ASSERT_EQ(ESRCH, errno);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * Inside the namespace, init's own wait semantics are the ordinary
 * ones, with namespace pids: WNOHANG with live children gives 0, and
 * the reported pid is the one fork() returned inside.
 */
static int init_plain_wait_fn(void *unused)
{
	struct gate g;
	siginfo_t si;
	pid_t pid;
	int st;

	(void)unused;
	CHILD_CHECK(!gate_init(&g));
	pid = spawn_gated(&g, 33);
	CHILD_CHECK(pid == 2);
	memset(&si, 0x5a, sizeof(si));
	CHILD_CHECK(!waitid(P_ALL, 0, &si, WEXITED | WNOHANG));
	CHILD_CHECK(si.si_pid == 0);
	CHILD_CHECK(!gate_open(&g, 1));
	CHILD_CHECK(!waitid(P_PID, 2, &si, WEXITED | WNOWAIT));
	CHILD_CHECK(si.si_pid == 2 && si.si_code == CLD_EXITED &&
		    si.si_status == 33);
	CHILD_CHECK(waitpid(-1, &st, 0) == 2 && st == 33 << 8);
	CHILD_CHECK(waitpid(-1, &st, 0) == -1 && errno == ECHILD);
	return 0;
}

TEST(init_waits_with_namespace_pids)
{
	struct wres r;
	pid_t init;

	NEED_NEWPID();
	init = spawn(init_plain_wait_fn, NULL);
	ASSERT_GT(init, 0);
	wk_wait(WK_WAITPID_PID, init, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, init, CLD_EXITED, 0);
}

TEST_HARNESS_MAIN
