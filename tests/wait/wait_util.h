/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the fastreap wait() conformance oracle.
 *
 * Every .c file here is built on its own as a static binary, so all
 * helpers here are static inline.  Conventions used by all tests:
 *
 *  - Children are identified by their creation index, never by pid
 *    number: tests keep a pids[] array and map reported pids back with
 *    idx_of().  Exit codes are derived from the index so that a report
 *    for the wrong child cannot go unnoticed.
 *  - Children never sleep to synchronise.  They block on a "gate" (a
 *    pipe the test holds the write end of) and exit when told to, or
 *    when the test dies (EOF), so a failing test leaves nothing behind.
 *  - Inside forked children the harness' ASSERT_*() must not be used
 *    (it longjmps into the child's copy of the harness); CHILD_CHECK()
 *    makes the child exit with WU_CHILD_FAIL instead, which the test
 *    then sees as a wrong exit status.
 *  - Loops around ASSERT_*() always get braces: the harness' ASSERT
 *    ends in a trailing for() that bails out, which would otherwise run
 *    only after the loop.
 */
#ifndef WAIT_UTIL_H
#define WAIT_UTIL_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* Exit code of a child whose CHILD_CHECK() failed. */
#define WU_CHILD_FAIL	99
/* Exit code of a gated child whose gate hit EOF (the test died). */
#define WU_ORPHANED	98

#define CHILD_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "# %s:%d: child check failed: %s "	\
			"(errno %d)\n", __FILE__, __LINE__, #cond, errno); \
		_exit(WU_CHILD_FAIL);					\
	}								\
} while (0)

/* glibc's waitid() has no rusage argument, so always go raw. */
static inline long sys_waitid(int which, pid_t id, siginfo_t *info,
			      int options, struct rusage *ru)
{
	return syscall(__NR_waitid, which, id, info, options, ru);
}

static inline long sys_wait4(pid_t pid, int *status, int options,
			     struct rusage *ru)
{
	return syscall(__NR_wait4, pid, status, options, ru);
}

static inline int sys_pidfd_open(pid_t pid, unsigned int flags)
{
	return syscall(__NR_pidfd_open, pid, flags);
}

static inline pid_t sys_clone3(struct clone_args *args)
{
	return syscall(__NR_clone3, args, sizeof(*args));
}

static inline pid_t sys_gettid(void)
{
	return syscall(__NR_gettid);
}

/* ------------------------------------------------------------------ */
/* Gates: children block reading one byte until the test writes it.   */

struct gate {
	int rfd;
	int wfd;
};

/*
 * Write ends of all gates of this process.  A child closes them all
 * (wu_child_init()) so that only the test holds them: if the test dies,
 * every gated child reads EOF and exits instead of lingering.
 */
#define WU_MAX_GATES 64
static int wu_gate_wfds[WU_MAX_GATES];
static int wu_ngates;

static inline int gate_init(struct gate *g)
{
	int fds[2];

	if (wu_ngates == WU_MAX_GATES || pipe2(fds, O_CLOEXEC))
		return -1;
	g->rfd = fds[0];
	g->wfd = fds[1];
	wu_gate_wfds[wu_ngates++] = g->wfd;
	return 0;
}

/* Let @n children through. */
static inline int gate_open(struct gate *g, int n)
{
	char buf[256];

	memset(buf, 'g', sizeof(buf));
	while (n > 0) {
		int chunk = n < (int)sizeof(buf) ? n : (int)sizeof(buf);
		ssize_t w = write(g->wfd, buf, chunk);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		n -= w;
	}
	return 0;
}

/* Child side: returns true when let through, false on EOF/error. */
static inline bool gate_pass(struct gate *g)
{
	char c;
	ssize_t r;

	do {
		r = read(g->rfd, &c, 1);
	} while (r < 0 && errno == EINTR);
	return r == 1;
}

/*
 * Notes go the other way: a child tells the test it is ready.  They are
 * not registered as gates (the child must keep the write end); the test
 * closes its write end after the fork, so a dead child reads as EOF.
 */
static inline int note_init(struct gate *n)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	n->rfd = fds[0];
	n->wfd = fds[1];
	return 0;
}

static inline int note_send(struct gate *n)
{
	return write(n->wfd, "n", 1) == 1 ? 0 : -1;
}

/* Test side: true when the child sent a note, false if it died. */
static inline bool note_recv(struct gate *n)
{
	if (n->wfd >= 0) {
		close(n->wfd);
		n->wfd = -1;
	}
	return gate_pass(n);
}

/* First thing every child does. */
static inline void wu_child_init(void)
{
	for (int i = 0; i < wu_ngates; i++)
		close(wu_gate_wfds[i]);
	wu_ngates = 0;
}

/* ------------------------------------------------------------------ */
/* Spawning children.                                                  */

typedef int (*child_fn_t)(void *arg);

static inline pid_t spawn(child_fn_t fn, void *arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		wu_child_init();
		_exit(fn(arg));
	}
	return pid;
}

static inline int wu_exit_fn(void *arg)
{
	return (int)(intptr_t)arg;
}

/* A child that exits with @code at once (soon a zombie). */
static inline pid_t spawn_exit(int code)
{
	return spawn(wu_exit_fn, (void *)(intptr_t)code);
}

struct wu_gated_arg {
	struct gate *g;
	int code;
};

static inline int wu_gated_fn(void *arg)
{
	struct wu_gated_arg *a = arg;

	return gate_pass(a->g) ? a->code : WU_ORPHANED;
}

/* A child that stays alive until @g lets it through, then exits @code. */
static inline pid_t spawn_gated(struct gate *g, int code)
{
	struct wu_gated_arg a = { .g = g, .code = code };

	return spawn(wu_gated_fn, &a);
}

/* Exit code used for the child with creation index @i. */
static inline int code_of(int i)
{
	return (i * 7 + 3) & 0xff;
}

static inline int idx_of(const pid_t *pids, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (pids[i] == pid)
			return i;
	return -1;
}

/*
 * Block until @pid is a zombie, without reaping it: a WNOWAIT wait is
 * the synchronisation point, so no sleeps are needed.  __WALL so that
 * it also works for clone children.
 */
static inline int wait_zombie(pid_t pid)
{
	siginfo_t si = { 0 };

	if (sys_waitid(P_PID, pid, &si, WEXITED | WNOWAIT | __WALL, NULL))
		return -1;
	return si.si_pid == pid ? 0 : -1;
}

/* Block until @pid is stopped / continued, consuming nothing. */
static inline int sync_state(pid_t pid, int opt, int code)
{
	siginfo_t si = { 0 };

	if (sys_waitid(P_PID, pid, &si, opt | WNOWAIT, NULL))
		return -1;
	return (si.si_pid == pid && si.si_code == code) ? 0 : -1;
}

static inline int sync_stopped(pid_t pid)
{
	return sync_state(pid, WSTOPPED, CLD_STOPPED);
}

static inline int sync_continued(pid_t pid)
{
	return sync_state(pid, WCONTINUED, CLD_CONTINUED);
}

/*
 * Read /proc/@pid/task/@tid/@name into @buf (@size bytes with the NUL):
 * the bytes read, or -1 if the thread or the file is gone.
 */
static inline ssize_t proc_task_read(pid_t pid, pid_t tid, const char *name,
				     char *buf, size_t size)
{
	char path[96];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", pid, tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/* State letter of thread @tid of process @pid, 0 if gone. */
static inline char proc_state(pid_t pid, pid_t tid)
{
	char buf[512], *p;

	if (proc_task_read(pid, tid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	return (p && p[1] == ' ') ? p[2] : 0;
}

/* Poll (no sleeping) until thread @tid of @pid is in state @st. */
static inline void wait_proc_state(pid_t pid, pid_t tid, char st)
{
	while (proc_state(pid, tid) != st)
		sched_yield();
}

/* Poll until thread @tid of @pid is gone from /proc (fully released). */
static inline void wait_task_gone(pid_t pid, pid_t tid)
{
	while (proc_state(pid, tid))
		sched_yield();
}

/*
 * Is thread @tid of process @pid asleep inside wait4() or waitid()?
 * /proc/.../syscall only shows a syscall number once the task is off
 * the CPU, and do_wait() queues itself before it scans the children,
 * so once this is true a child exit can no longer be missed and the
 * wait has demonstrably not returned yet.
 */
static inline bool task_in_wait(pid_t pid, pid_t tid)
{
	char path[64], buf[256];
	ssize_t n;
	long nr;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%ld", &nr) != 1)
		return false;
	return nr == __NR_wait4 || nr == __NR_waitid;
}

/* The same for a thread of this process. */
static inline bool thread_in_wait(pid_t tid)
{
	return task_in_wait(getpid(), tid);
}

/*
 * Runs @fn(@arg) from a helper thread once the creating thread is
 * blocked in a wait call: proves that the wait really blocked and was
 * woken by whatever @fn does (release a child, send SIGCONT, ...).
 */
struct releaser {
	pthread_t th;
	pid_t waiter;
	void (*fn)(void *arg);
	void *arg;
};

static inline void *wu_releaser_main(void *p)
{
	struct releaser *r = p;

	while (!thread_in_wait(r->waiter))
		sched_yield();
	r->fn(r->arg);
	return NULL;
}

static inline int releaser_start(struct releaser *r, void (*fn)(void *),
				 void *arg)
{
	r->waiter = sys_gettid();
	r->fn = fn;
	r->arg = arg;
	return pthread_create(&r->th, NULL, wu_releaser_main, r);
}

static inline int releaser_join(struct releaser *r)
{
	return pthread_join(r->th, NULL);
}

/* releaser callback: let one child through a gate. */
static inline void release_one(void *g)
{
	gate_open(g, 1);
}

/* ------------------------------------------------------------------ */
/* One normalised view over all wait flavours.                         */

enum wkind {
	WK_WAIT,		/* wait(&st) */
	WK_WAITPID_ANY,		/* waitpid(-1, ...) */
	WK_WAITPID_PID,		/* waitpid(pid, ...) */
	WK_WAITPID_PGRP0,	/* waitpid(0, ...): caller's group */
	WK_WAITPID_PGID,	/* waitpid(-pgid, ...) */
	WK_WAIT4_ANY,		/* wait4(-1, ..., &ru) */
	WK_WAIT4_PID,		/* wait4(pid, ..., &ru) */
	WK_WAITID_ALL,		/* waitid(P_ALL, 0, ...) */
	WK_WAITID_PID,		/* waitid(P_PID, pid, ...) */
	WK_WAITID_PGID0,	/* waitid(P_PGID, 0, ...): caller's group */
	WK_WAITID_PGID,		/* waitid(P_PGID, pgid, ...) */
	WK_WAITID_PIDFD,	/* waitid(P_PIDFD, pidfd, ...) */
};

/* The kind waits for one specific child (else: any child of a set). */
static inline bool wk_targeted(enum wkind k)
{
	return k == WK_WAITPID_PID || k == WK_WAIT4_PID ||
	       k == WK_WAITID_PID || k == WK_WAITID_PIDFD;
}

static inline bool wk_is_waitid(enum wkind k)
{
	return k >= WK_WAITID_ALL;
}

/* Result of one wait, normalised to waitid's terms. */
struct wres {
	long ret;	/* syscall return value */
	int err;	/* errno if ret < 0 */
	pid_t pid;	/* reported child, 0 if none */
	int code;	/* CLD_* */
	int status;	/* exit code or signal */
	int raw;	/* wait4 status word (wait4 kinds only) */
	int signo;	/* si_signo (waitid kinds only) */
	uid_t uid;	/* si_uid (waitid kinds only) */
};

/* Translate a wait4 status word into waitid's si_code/si_status. */
static inline void wu_decode(int raw, int *code, int *status)
{
	if (WIFEXITED(raw)) {
		*code = CLD_EXITED;
		*status = WEXITSTATUS(raw);
	} else if (WIFSIGNALED(raw)) {
		*code = WCOREDUMP(raw) ? CLD_DUMPED : CLD_KILLED;
		*status = WTERMSIG(raw);
	} else if (WIFSTOPPED(raw)) {
		*code = CLD_STOPPED;
		*status = WSTOPSIG(raw);
	} else if (WIFCONTINUED(raw)) {
		*code = CLD_CONTINUED;
		*status = SIGCONT;
	} else {
		*code = -1;
		*status = -1;
	}
}

/*
 * Wait the @k way.  @target is the child for targeted kinds, @pgid the
 * group for the PGID kinds, @pidfd the pidfd for WK_WAITID_PIDFD.
 * @opts are wait4-style flags (WNOHANG, WUNTRACED, WCONTINUED, __W*);
 * for waitid kinds WEXITED is added and WUNTRACED means WSTOPPED
 * (same bit); WNOWAIT is passed through as is.
 */
static inline void wk_wait(enum wkind k, pid_t target, pid_t pgid, int pidfd,
			   int opts, struct wres *r)
{
	siginfo_t si;
	int raw = 0x5a5a5a5a;

	memset(r, 0, sizeof(*r));
	if (wk_is_waitid(k)) {
		idtype_t type = P_ALL;
		id_t id = 0;

		switch (k) {
		case WK_WAITID_PID:
			type = P_PID;
			id = target;
			break;
		case WK_WAITID_PGID0:
			type = P_PGID;
			id = 0;
			break;
		case WK_WAITID_PGID:
			type = P_PGID;
			id = pgid;
			break;
		case WK_WAITID_PIDFD:
			type = P_PIDFD;
			id = pidfd;
			break;
		default:
			break;
		}
		/* Poison: the kernel must overwrite every field. */
		memset(&si, 0x5a, sizeof(si));
		r->ret = sys_waitid(type, id, &si, opts | WEXITED, NULL);
		r->err = r->ret < 0 ? errno : 0;
		if (r->ret == 0) {
			r->pid = si.si_pid;
			r->code = si.si_code;
			r->status = si.si_status;
			r->signo = si.si_signo;
			r->uid = si.si_uid;
		}
		return;
	}

	switch (k) {
	case WK_WAIT:
		r->ret = wait(&raw);
		break;
	case WK_WAITPID_ANY:
		r->ret = waitpid(-1, &raw, opts);
		break;
	case WK_WAITPID_PID:
		r->ret = waitpid(target, &raw, opts);
		break;
	case WK_WAITPID_PGRP0:
		r->ret = waitpid(0, &raw, opts);
		break;
	case WK_WAITPID_PGID:
		r->ret = waitpid(-pgid, &raw, opts);
		break;
	case WK_WAIT4_ANY:
	case WK_WAIT4_PID: {
		struct rusage ru;

		r->ret = wait4(k == WK_WAIT4_ANY ? -1 : target, &raw, opts,
			       &ru);
		break;
	}
	default:
		r->ret = -1;
		errno = ENOSYS;
	}
	r->err = r->ret < 0 ? errno : 0;
	if (r->ret > 0) {
		r->pid = r->ret;
		r->raw = raw;
		wu_decode(raw, &r->code, &r->status);
	} else if (r->ret == 0) {
		/* WNOHANG with nothing to report: status untouched. */
		r->raw = raw;
	}
}

/*
 * For use inside children (no harness asserts there): reap @n children
 * with waitpid(-1, @opts) and check they are exactly @pids[0..n) (as a
 * set), each exited with code_of(@base + index).  0 if so, else -1.
 */
static inline int reap_set(const pid_t *pids, int n, int base, int opts)
{
	bool seen[n];

	memset(seen, 0, sizeof(seen));
	for (int j = 0; j < n; j++) {
		int st, i;
		pid_t pid = waitpid(-1, &st, opts);

		i = idx_of(pids, n, pid);
		if (i < 0 || seen[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != code_of(base + i)) {
			fprintf(stderr, "# reap_set: pid %d idx %d st %#x\n",
				pid, i, st);
			return -1;
		}
		seen[i] = true;
	}
	return 0;
}

/*
 * Orphan maker, run as a middle process: forks @n children, where child
 * i is a zombie-to-be (exits code_of(i) at once) if orphan_is_zombie(i),
 * else waits on @g and then exits code_of(i), after checking that its
 * parent by then is @new_ppid (CHILD_CHECK, so a wrong reaper shows as
 * a wrong exit status).  Waits until the zombies are zombies, writes
 * all pids, in creation order, to @out, and returns; the caller then
 * exits, orphaning them all.
 */
struct orphans {
	struct gate *g;
	int out;
	int n;
	pid_t new_ppid;
};

static inline bool orphan_is_zombie(int i)
{
	return i % 3 == 1;
}

struct wu_orphan_arg {
	struct gate *g;
	pid_t new_ppid;
	int code;
};

static inline int wu_orphan_fn(void *p)
{
	struct wu_orphan_arg *a = p;

	if (!gate_pass(a->g))
		return WU_ORPHANED;
	CHILD_CHECK(getppid() == a->new_ppid);
	return a->code;
}

static inline int make_orphans(void *p)
{
	struct orphans *o = p;
	pid_t pids[o->n];

	for (int i = 0; i < o->n; i++) {
		struct wu_orphan_arg a = { o->g, o->new_ppid, code_of(i) };

		pids[i] = orphan_is_zombie(i) ? spawn_exit(code_of(i)) :
						spawn(wu_orphan_fn, &a);
		CHILD_CHECK(pids[i] > 0);
	}
	for (int i = 0; i < o->n; i++)
		if (orphan_is_zombie(i))
			CHILD_CHECK(!wait_zombie(pids[i]));
	CHILD_CHECK(write(o->out, pids, sizeof(pids)) ==
		    (ssize_t)sizeof(pids));
	return 0;
}

/* The kind accepts options (plain wait() has none). */
static inline bool wk_has_opts(enum wkind k)
{
	return k != WK_WAIT;
}

/* wait4 status word for a waitid-style (code, status) pair. */
static inline int wu_encode(int code, int status)
{
	switch (code) {
	case CLD_EXITED:
		return (status & 0xff) << 8;
	case CLD_KILLED:
		return status;
	case CLD_DUMPED:
		return status | 0x80;
	case CLD_STOPPED:
	case CLD_TRAPPED:
		return (status << 8) | 0x7f;
	case CLD_CONTINUED:
		return 0xffff;
	}
	return -1;
}

/*
 * Assert that @r reports @pid_ with @code_/@status_, in every field the
 * flavour @k exposes: waitid's si_signo/si_uid, wait4's status word.
 */
#define ASSERT_WRES(k, r, pid_, code_, status_) do {			\
	ASSERT_EQ((pid_), (r).pid);					\
	ASSERT_EQ((code_), (r).code);					\
	ASSERT_EQ((status_), (r).status);				\
	if (wk_is_waitid(k)) {						\
		ASSERT_EQ(0, (r).ret);					\
		ASSERT_EQ(SIGCHLD, (r).signo);				\
		ASSERT_EQ(getuid(), (r).uid);				\
	} else {							\
		ASSERT_EQ((pid_), (r).ret);				\
		ASSERT_EQ(wu_encode((code_), (status_)), (r).raw);	\
	}								\
} while (0)

/* Assert that a WNOHANG wait of flavour @k found nothing to report. */
#define ASSERT_WRES_NONE(k, r) do {					\
	ASSERT_EQ(0, (r).ret);						\
	ASSERT_EQ(0, (r).pid);						\
	if (wk_is_waitid(k)) {						\
		/* waitid zeroes the siginfo rather than leaving it */	\
		ASSERT_EQ(0, (r).signo);				\
		ASSERT_EQ(0, (r).code);					\
		ASSERT_EQ(0, (r).status);				\
	} else {							\
		/* wait4 leaves the status word alone */		\
		ASSERT_EQ(0x5a5a5a5a, (r).raw);				\
	}								\
} while (0)

#define ASSERT_WRES_ERR(r, errno_) do {					\
	ASSERT_EQ(-1, (r).ret);						\
	ASSERT_EQ((errno_), (r).err);					\
} while (0)

/*
 * @pid reports (@code, @status) to this thread's __WNOTHREAD waits with
 * @opts: by P_ALL and P_PGID without consuming it, then once by
 * waitpid(-1), and then nothing is left to report.
 */
static inline void check_nothread_report(struct __test_metadata *_metadata,
					 pid_t pid, int opts, int code,
					 int status)
{
	struct wres r;

	opts |= __WNOTHREAD | WNOHANG;
	wk_wait(WK_WAITID_ALL, 0, 0, -1, opts | WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, pid, code, status);
	wk_wait(WK_WAITID_PGID0, 0, 0, -1, opts | WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_PGID0, r, pid, code, status);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, opts, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, pid, code, status);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, opts, &r);
	ASSERT_WRES_NONE(WK_WAITPID_ANY, r);
}

/*
 * A small set of children of the test, with a pidfd each (for P_PIDFD)
 * and an own gate each (so exactly one chosen child can be released).
 */
#define KIDS_MAX 32
struct kids {
	int n;
	pid_t pid[KIDS_MAX];
	int pidfd[KIDS_MAX];
	struct gate gate[KIDS_MAX];
};

/* Add child number k->n: exits @code at once if !gated, else on its gate. */
static inline int kids_add(struct kids *k, bool gated, int code)
{
	int i = k->n;

	if (i == KIDS_MAX || gate_init(&k->gate[i]))
		return -1;
	k->pid[i] = gated ? spawn_gated(&k->gate[i], code) : spawn_exit(code);
	if (k->pid[i] < 0)
		return -1;
	k->pidfd[i] = sys_pidfd_open(k->pid[i], 0);
	if (k->pidfd[i] < 0)
		return -1;
	k->n++;
	return i;
}

static inline void kids_release(struct kids *k, int i)
{
	gate_open(&k->gate[i], 1);
}

#endif /* WAIT_UTIL_H */
