/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Agents for the job-control tests: processes that do, one at a time,
 * what the test (the controller) tells them: fork another agent, setpgid,
 * setsid, become a subreaper, exit, let their leader thread exit, reap a
 * child, read the tty.  Every agent logs the SIGHUP, SIGCONT, SIGTTIN and
 * SIGTTOU it handles (signal, si_code, si_pid) in memory shared with the
 * controller, in the order the handlers ran.
 *
 * Commands go over pipes made before the first agent: slot i reads
 * cmd[i] and answers on rep[i].  Every agent keeps the read ends of all
 * command pipes (a future child agent needs its own), but no write end:
 * only the controller holds those, so when it dies every agent reads EOF
 * and exits.
 *
 * The orphan probe (jc_probe): SIGTSTP to an agent, then a PING.  In an
 * orphaned process group get_signal() discards SIGTSTP (kernel/signal.c),
 * so the agent answers; otherwise it stops, the controller sees it in
 * state T, continues it, and then it answers.  Either way the answer
 * says what the kernel thought of the group at that moment.
 *
 * Builds on tests/wait/wait_util.h (harness, CHILD_CHECK, proc_task_read,
 * proc_state).
 */
#ifndef JOBCTL_UTIL_H
#define JOBCTL_UTIL_H

/*
 * Beside the wait() oracle as ../wait, as in this repository, or, where
 * ../wait is another directory (a kselftest tree's own wait/), through
 * the Makefile's -I of the sibling that holds wait_util.h.
 */
#if __has_include("../wait/wait_util.h")
#include "../wait/wait_util.h"
#else
#include "wait_util.h"
#endif

#include <dirent.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>
#include <time.h>

#define JC_MAX		40	/* agent slots per test */
#define JC_LOG		4096	/* signal log entries per test */
#define JC_TIMEOUT_MS	60000	/* an agent that does not answer */

enum jc_op {
	JC_PING,
	JC_FORK,	/* a: slot of the new agent; returns its pid */
	JC_SETPGID,	/* setpgid(a, b) */
	JC_SETSID,
	JC_EXIT,	/* exit_group(a); no answer */
	JC_SUBREAPER,	/* prctl(PR_SET_CHILD_SUBREAPER, a) */
	JC_REAP,	/* waitpid(a, __WALL); returns the status */
	JC_LEADER_EXIT,	/* a new thread serves; the leader thread exits */
	JC_SIGACT,	/* signal a: 0 default, 1 ignore, 2 log, 3 block */
	JC_TTY_OPEN,	/* new pty, made our controlling tty */
	JC_TTY_READ,	/* read() the pty slave (non-blocking) */
	JC_TTY_WRITE,	/* write() one byte to the pty slave */
	JC_TTY_TOSTOP,	/* set (a = 1) or clear TOSTOP */
	JC_TCSETPGRP,	/* tcsetpgrp(slave, a) */
	JC_KILL,	/* kill(a, b) */
};

struct jc_msg {
	int op, a, b;
};

struct jc_rep {
	long ret;
	int err;
	pid_t tid;	/* the thread that answered */
};

struct jc_sig {
	int slot, signo, code;
	pid_t from;
};

struct jc_shared {
	atomic_uint n;
	struct jc_sig log[JC_LOG];
	pid_t pid[JC_MAX];	/* for the guard */
};

struct jc {
	int cmd[JC_MAX][2];
	int rep[JC_MAX][2];
	pid_t pid[JC_MAX];	/* process */
	pid_t tid[JC_MAX];	/* the thread that serves commands */
	bool gone[JC_MAX];	/* told to exit */
	int n;
	unsigned int mark;	/* log entries already looked at */
	int guard;		/* write end of the guard's pipe */
	struct jc_shared *sh;
};

/* ------------------------------------------------------------------ */
/* The agent side.                                                     */

static struct jc *jc_self;	/* in an agent: the (copied) table */
static int jc_slot = -1;	/* in an agent: its slot */
static int jc_ptm = -1, jc_pts = -1;	/* the pty an agent opened */

static void jc_handler(int sig, siginfo_t *si, void *uc)
{
	unsigned int i;

	(void)uc;
	if (!jc_self)
		return;
	i = atomic_fetch_add(&jc_self->sh->n, 1);
	if (i < JC_LOG)
		jc_self->sh->log[i] = (struct jc_sig){ jc_slot, sig,
						       si->si_code, si->si_pid };
}

/*
 * Log @sig.  SIGHUP and SIGCONT restart system calls; SIGTTIN and SIGTTOU
 * do not, so that a background tty read returns EINTR instead of being
 * restarted (and signalled) for ever.
 */
static inline int jc_log_signal(int sig)
{
	struct sigaction sa = { .sa_sigaction = jc_handler,
				.sa_flags = SA_SIGINFO };

	if (sig == SIGHUP || sig == SIGCONT)
		sa.sa_flags |= SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL);
}

static inline int jc_sigact(int sig, int mode)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, sig);
	switch (mode) {
	case 0:
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		return signal(sig, SIG_DFL) == SIG_ERR ? -1 : 0;
	case 1:
		return signal(sig, SIG_IGN) == SIG_ERR ? -1 : 0;
	case 2:
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		return jc_log_signal(sig);
	case 3:
		return sigprocmask(SIG_BLOCK, &set, NULL);
	}
	errno = EINVAL;
	return -1;
}

static void jc_serve(void) __attribute__((noreturn));

static inline void jc_answer(long ret, int err);

/* The thread that takes over when the leader thread exits. */
static void *jc_serve_thread(void *arg)
{
	(void)arg;
	jc_answer(0, 0);
	jc_serve();
}

static inline void jc_answer(long ret, int err)
{
	struct jc_rep r = { ret, err, sys_gettid() };

	if (write(jc_self->rep[jc_slot][1], &r, sizeof(r)) != sizeof(r))
		_exit(WU_CHILD_FAIL);
}

static void jc_become(int slot);

static void jc_serve(void)
{
	struct jc_msg m;
	long ret;
	int st;
	char c;

	for (;;) {
		ssize_t r = read(jc_self->cmd[jc_slot][0], &m, sizeof(m));

		if (r < 0 && errno == EINTR)
			continue;
		if (r != sizeof(m))
			_exit(WU_ORPHANED);	/* the controller is gone */
		errno = 0;
		switch (m.op) {
		case JC_PING:
			ret = 0;
			break;
		case JC_FORK:
			ret = fork();
			if (ret == 0)
				jc_become(m.a);
			break;
		case JC_SETPGID:
			ret = setpgid(m.a, m.b);
			break;
		case JC_SETSID:
			ret = setsid();
			break;
		case JC_EXIT:
			syscall(SYS_exit_group, m.a);
			ret = -1;
			break;
		case JC_SUBREAPER:
			ret = prctl(PR_SET_CHILD_SUBREAPER, m.a, 0, 0, 0);
			break;
		case JC_REAP:
			do {
				ret = waitpid(m.a, &st, __WALL);
			} while (ret < 0 && errno == EINTR);
			if (ret > 0)
				ret = st;
			break;
		case JC_LEADER_EXIT: {
			pthread_t th;

			if (pthread_create(&th, NULL, jc_serve_thread, NULL)) {
				ret = -1;
				break;
			}
			/* The new thread answers, and serves from now on. */
			syscall(SYS_exit, 0);
			ret = -1;
			break;
		}
		case JC_SIGACT:
			ret = jc_sigact(m.a, m.b);
			break;
		case JC_TTY_OPEN:
			jc_ptm = posix_openpt(O_RDWR | O_NOCTTY);
			ret = -1;
			if (jc_ptm < 0 || grantpt(jc_ptm) || unlockpt(jc_ptm))
				break;
			jc_pts = open(ptsname(jc_ptm),
				      O_RDWR | O_NOCTTY | O_NONBLOCK);
			if (jc_pts < 0)
				break;
			ret = ioctl(jc_pts, TIOCSCTTY, 0);
			break;
		case JC_TTY_READ:
			ret = read(jc_pts, &c, 1);
			break;
		case JC_TTY_WRITE:
			c = 'w';
			ret = write(jc_pts, &c, 1);
			break;
		case JC_TTY_TOSTOP: {
			struct termios t;

			ret = tcgetattr(jc_pts, &t);
			if (ret)
				break;
			if (m.a)
				t.c_lflag |= TOSTOP;
			else
				t.c_lflag &= ~TOSTOP;
			ret = tcsetattr(jc_pts, TCSANOW, &t);
			break;
		}
		case JC_TCSETPGRP:
			ret = tcsetpgrp(jc_pts, m.a);
			break;
		case JC_KILL:
			ret = kill(m.a, m.b);
			break;
		default:
			ret = -1;
			errno = EINVAL;
		}
		jc_answer(ret, ret < 0 ? errno : 0);
	}
}

/* The child side of a fork: serve slot @slot from now on. */
static void jc_become(int slot)
{
	jc_slot = slot;
	jc_serve();
}

/* ------------------------------------------------------------------ */
/* The controller side.                                                */

/*
 * The guard: a child of the controller that SIGKILLs every agent when
 * the controller is gone (the harness does not always run the teardown
 * after a failed assertion, and a stopped agent cannot see EOF).
 */
static inline int jc_guard(struct jc *j)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		wu_child_init();
		for (int i = 0; i < JC_MAX; i++) {
			close(j->cmd[i][1]);
			close(j->rep[i][1]);
		}
		close(fds[1]);
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		for (int i = 0; i < JC_MAX; i++)
			if (j->sh->pid[i] > 0)
				kill(j->sh->pid[i], SIGKILL);
		_exit(0);
	}
	close(fds[0]);		/* fds[1] stays open until we are gone */
	j->guard = fds[1];
	return 0;
}

static inline int jc_init(struct jc *j)
{
	memset(j, 0, sizeof(*j));
	j->sh = mmap(NULL, sizeof(*j->sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (j->sh == MAP_FAILED)
		return -1;
	for (int i = 0; i < JC_MAX; i++)
		if (pipe2(j->cmd[i], O_CLOEXEC) || pipe2(j->rep[i], O_CLOEXEC))
			return -1;
	return jc_guard(j);
}

static inline int jc_read_rep(struct jc *j, int slot, struct jc_rep *r,
			      int timeout_ms)
{
	struct pollfd p = { .fd = j->rep[slot][0], .events = POLLIN };
	int k;

	do {
		k = poll(&p, 1, timeout_ms);
	} while (k < 0 && errno == EINTR);
	if (k != 1)
		return -1;
	return read(j->rep[slot][0], r, sizeof(*r)) == sizeof(*r) ? 0 : -1;
}

static inline int jc_send(struct jc *j, int slot, int op, int a, int b)
{
	struct jc_msg m = { op, a, b };

	return write(j->cmd[slot][1], &m, sizeof(m)) == sizeof(m) ? 0 : -1;
}

/* Run one command in agent @slot: its return value (errno set), or -2
 * (with a message) when it does not answer. */
static inline long jc_call(struct jc *j, int slot, int op, int a, int b)
{
	struct jc_rep r;

	if (jc_send(j, slot, op, a, b) ||
	    jc_read_rep(j, slot, &r, JC_TIMEOUT_MS)) {
		fprintf(stderr, "# agent %d (pid %d) did not answer op %d\n",
			slot, j->pid[slot], op);
		return -2;
	}
	j->tid[slot] = r.tid;
	errno = r.err;
	return r.ret;
}

/* Agent side setup, in a fresh child of the controller. */
static inline void jc_agent_init(struct jc *j)
{
	wu_child_init();
	jc_self = j;
	close(j->guard);
	for (int i = 0; i < JC_MAX; i++) {
		close(j->cmd[i][1]);
		close(j->rep[i][0]);
	}
	signal(SIGCHLD, SIG_DFL);
	jc_log_signal(SIGHUP);
	jc_log_signal(SIGCONT);
}

/* A new agent, child of the controller: its slot, or -1. */
static inline int jc_spawn(struct jc *j)
{
	int slot = j->n;
	pid_t pid;

	if (slot == JC_MAX)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		jc_agent_init(j);
		jc_become(slot);
	}
	j->n++;
	j->pid[slot] = j->tid[slot] = j->sh->pid[slot] = pid;
	if (jc_call(j, slot, JC_PING, 0, 0))
		return -1;
	return slot;
}

/* A new agent, child of agent @parent: its slot, or -1. */
static inline int jc_fork(struct jc *j, int parent)
{
	int slot = j->n;
	long pid;

	if (slot == JC_MAX)
		return -1;
	pid = jc_call(j, parent, JC_FORK, slot, 0);
	if (pid <= 0)
		return -1;
	j->n++;
	j->pid[slot] = j->tid[slot] = j->sh->pid[slot] = pid;
	if (jc_call(j, slot, JC_PING, 0, 0))
		return -1;
	return slot;
}

/* Is any thread of @pid still alive (not a zombie, not gone)? */
static inline bool jc_alive(pid_t pid)
{
	char path[64];
	struct dirent *d;
	bool alive = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!alive && (d = readdir(dir))) {
		char st;

		if (d->d_name[0] == '.')
			continue;
		st = proc_state(pid, atoi(d->d_name));
		alive = st && st != 'Z' && st != 'X';
	}
	closedir(dir);
	return alive;
}

/* Agent @slot exits with @code; returns once its exit_notify() is over
 * (every signal it sends at exit is queued by then). */
static inline void jc_exit(struct jc *j, int slot, int code)
{
	jc_send(j, slot, JC_EXIT, code, 0);
	j->gone[slot] = true;
	while (jc_alive(j->pid[slot]))
		sched_yield();
}

/* The leader thread of agent @slot exits; a new thread serves it. */
static inline int jc_leader_exit(struct jc *j, int slot)
{
	if (jc_call(j, slot, JC_LEADER_EXIT, 0, 0) != 0)
		return -1;
	wait_proc_state(j->pid[slot], j->pid[slot], 'Z');
	return 0;
}

/* kill() agent @slot; never a group by mistake (pid 0 or -1). */
static inline int jc_kill(struct jc *j, int slot, int sig)
{
	if (slot < 0 || slot >= j->n || j->pid[slot] <= 0)
		abort();
	return kill(j->pid[slot], sig);
}

static inline char jc_state(struct jc *j, int slot)
{
	return proc_state(j->pid[slot], j->tid[slot]);
}

static inline void jc_stop(struct jc *j, int slot)
{
	jc_kill(j, slot, SIGSTOP);
	while (jc_state(j, slot) != 'T')
		sched_yield();
}

/* SIGCONT (the agent logs it as SI_USER) and wait until it serves. */
static inline int jc_cont(struct jc *j, int slot)
{
	jc_kill(j, slot, SIGCONT);
	return jc_call(j, slot, JC_PING, 0, 0) == 0 ? 0 : -1;
}

/*
 * Send @sig (SIGTSTP, SIGTTIN or SIGTTOU) to agent @slot, which must be
 * running (not stopped) and not ignore it.  1: the kernel discarded it
 * (the agent's process group was orphaned), 0: it stopped the agent (not
 * orphaned; the agent is continued again), -1: neither within the timeout.
 */
static inline int jc_probe_sig(struct jc *j, int slot, int sig)
{
	struct jc_rep r;
	int waited = 0;

	if (jc_kill(j, slot, sig) || jc_send(j, slot, JC_PING, 0, 0))
		return -1;
	for (;;) {
		if (jc_read_rep(j, slot, &r, 1) == 0)
			return 1;
		if (jc_state(j, slot) == 'T')
			break;
		if (++waited > JC_TIMEOUT_MS)
			return -1;
	}
	jc_kill(j, slot, SIGCONT);
	if (jc_read_rep(j, slot, &r, JC_TIMEOUT_MS))
		return -1;
	return 0;
}

static inline int jc_probe(struct jc *j, int slot)
{
	return jc_probe_sig(j, slot, SIGTSTP);
}

/* Forget the log so far. */
static inline void jc_mark(struct jc *j)
{
	j->mark = atomic_load(&j->sh->n);
}

/*
 * The signals agent @slot handled since the last jc_mark() whose si_code
 * is @code, as letters: one H per SIGHUP, then one C per SIGCONT, one I
 * per SIGTTIN, one O per SIGTTOU ("" if none).  @code SI_KERNEL is what
 * the kernel's own job-control signals carry.  The letters are sorted
 * because the order the handlers ran in is not the order of sending:
 * with SIGHUP and SIGCONT both pending, the kernel sets up the SIGHUP
 * frame first and the SIGCONT frame on top of it, so SIGCONT's handler
 * runs first.
 */
static inline const char *jc_got(struct jc *j, int slot, int code)
{
	static const int order[] = { SIGHUP, SIGCONT, SIGTTIN, SIGTTOU };
	static const char letter[] = "HCIO";
	static char buf[64];
	unsigned int n = atomic_load(&j->sh->n), k = 0;

	for (int o = 0; o < 4; o++) {
		for (unsigned int i = j->mark; i < n && i < JC_LOG; i++) {
			struct jc_sig *s = &j->sh->log[i];

			if (s->slot == slot && s->code == code &&
			    s->signo == order[o] && k < 63)
				buf[k++] = letter[o];
		}
	}
	buf[k] = '\0';
	return buf;
}

/* Let every running agent handle what is pending (a round trip each). */
static inline void jc_settle(struct jc *j)
{
	for (int i = 0; i < j->n; i++)
		if (!j->gone[i] && jc_alive(j->pid[i]) && jc_state(j, i) != 'T')
			jc_call(j, i, JC_PING, 0, 0);
}

/* Fields of /proc/@pid/stat: state, ppid, pgid, sid (0 if gone). */
struct jc_stat {
	char state;
	pid_t ppid, pgid, sid;
};

static inline int jc_proc_stat(pid_t pid, struct jc_stat *s)
{
	char buf[1024], *p;

	memset(s, 0, sizeof(*s));
	if (proc_task_read(pid, pid, "stat", buf, sizeof(buf)) <= 0)
		return -1;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%c %d %d %d", &s->state, &s->ppid, &s->pgid,
			 &s->sid) != 4)
		return -1;
	return 0;
}

static inline pid_t jc_ppid(pid_t pid)
{
	struct jc_stat s;

	return jc_proc_stat(pid, &s) ? 0 : s.ppid;
}

/* Kill every agent and reap those that are our children. */
static inline void jc_cleanup(struct jc *j)
{
	for (int i = 0; i < j->n; i++)
		if (j->pid[i] > 0)
			kill(j->pid[i], SIGKILL);
	for (int i = 0; i < j->n; i++)
		waitpid(j->pid[i], NULL, __WALL | WNOHANG);
	while (waitpid(-1, NULL, __WALL | WNOHANG) > 0)
		;
}

/* ------------------------------------------------------------------ */
/* Checks that can be flipped, to show that each one can fail.         */

/*
 * Every JC_EXPECT_*() is one numbered check of the running test.  With
 * JOBCTL_FLIP=K in the environment the K-th check of every test expects
 * the opposite (orphaned <-> not, "HC" <-> none): each test with K or
 * more checks must then fail.  Each test logs its number of checks.
 */
static int jc_nchecks;

static inline bool jc_flip(void)
{
	const char *e = getenv("JOBCTL_FLIP");

	++jc_nchecks;
	return e && atoi(e) == jc_nchecks;
}

/* The probe of agent @slot says orphaned (1) or not (0). */
#define JC_EXPECT_PROBE(j, slot, want) do {				\
	int __want = (want);						\
	if (jc_flip())							\
		__want = !__want;					\
	ASSERT_EQ(__want, jc_probe((j), (slot))) {			\
		TH_LOG("check %d: agent %d (pid %d) %s", jc_nchecks,	\
		       (slot), (j)->pid[slot], __want ?			\
		       "should be in an orphaned group" :		\
		       "should not be in an orphaned group");		\
	}								\
} while (0)

/* Agent @slot handled exactly @want (e.g. "HC", "") from the kernel. */
#define JC_EXPECT_GOT(j, slot, want) do {				\
	const char *__want = (want);					\
	if (jc_flip())							\
		__want = __want[0] ? "" : "HC";				\
	ASSERT_STREQ(__want, jc_got((j), (slot), SI_KERNEL)) {		\
		TH_LOG("check %d: kernel signals to agent %d (pid %d)",\
		       jc_nchecks, (slot), (j)->pid[slot]);		\
	}								\
} while (0)

#define JC_CHECKS_DONE() TH_LOG("%d checks", jc_nchecks)

#endif /* JOBCTL_UTIL_H */
