// SPDX-License-Identifier: GPL-2.0
/*
 * proctree_stress - randomised process-tree stress test for wait(), exit and
 * reparenting (kernel/exit.c).
 *
 * A controller process (a PR_SET_CHILD_SUBREAPER) drives a set of worker
 * processes through per-slot command pipes.  Workers report their identity
 * and acknowledge commands on one shared report pipe, so the controller knows
 * exactly which pid lives in which slot, who its parent is and what it should
 * report to wait().  Every wait result is checked against that model:
 *
 *  - every child is reported exactly once on exit, with the right status;
 *  - stop/continue reports only appear when a stop/continue is pending, at
 *    most once unless WNOWAIT was used;
 *  - no ECHILD while an eligible child certainly exists;
 *  - WNOHANG never returns 0 while a report is certainly ready (readiness
 *    is only assumed after it was confirmed with a pidfd poll, a WNOWAIT
 *    wait or a tracer reaping the child);
 *  - no hang (watchdog), no child and no zombie left at the end.
 *
 * Usage: proctree_stress [--seed N] [--ops N] [--seconds S] [--max-procs N]
 *                        [--watchdog S] [-v]
 *
 * The run is driven by one seeded PRNG; the seed is printed first so that a
 * failure can be replayed.  Exit status 0 on success, 1 on an invariant
 * failure, 2 on a usage or setup error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

#define MAX_SLOTS	64
#define MAX_THREADS	3	/* extra threads per worker */

/* ---------------------------------------------------------------------- */
/* Protocol between controller and workers.                               */

enum {
	OP_HELLO = 1,	/* worker -> controller: I am alive in this slot */
	OP_ACK,		/* worker -> controller: command done, val = result */
	OP_PING,
	OP_EXIT,	/* arg = code, arg2 = 1: every thread exits on its own */
	OP_THREAD,	/* start one more idle thread */
	OP_LEADER_EXIT,	/* arg = code; the leader exits, a thread takes over */
	OP_EXEC,	/* arg = 1: exec from a non-leader thread */
	OP_FORK,	/* arg = new slot, arg2 = pgid request */
	OP_TRACE_ATTACH, /* arg = pid, arg2 = 1: PTRACE_SEIZE */
	OP_TRACE_DETACH, /* arg = pid, arg2 = 1: tracee was seized */
	OP_TRACE_REAP,	/* arg = pid: wait for the dead tracee */
};

struct cmd {
	int op, arg, arg2, seq;
};

/* Always smaller than PIPE_BUF, so writes from many workers never mix. */
struct rep {
	int slot, op, seq, val;
	pid_t pid, tid, ppid, pgid;
};

#define PGID_KEEP	-1	/* pgid request: leave it as inherited */
#define PGID_NEW	0	/* pgid request: become a group leader */

/*
 * The ends workers use live at fixed descriptors, so a re-exec'd worker
 * (and anything it forks later) finds them all without being told.
 */
#define FD_BASE		200
#define cmd_rd(slot)	(FD_BASE + (slot))
#define rep_wr		(FD_BASE + MAX_SLOTS)
#define life_rd		(FD_BASE + MAX_SLOTS + 1)

static int cmd_wr[MAX_SLOTS];
static int rep_rd = -1;
static int life_wr = -1;	/* EOF on life_rd: the controller is gone */

/* ---------------------------------------------------------------------- */
/* Small helpers shared by both sides.                                    */

static pid_t sys_gettid(void)
{
	return syscall(SYS_gettid);
}

static void futex_wait(int *uaddr, int val)
{
	syscall(SYS_futex, uaddr, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake(int *uaddr)
{
	syscall(SYS_futex, uaddr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int write_all(int fd, const void *buf, size_t len)
{
	ssize_t n;

	do {
		n = write(fd, buf, len);
	} while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/* ---------------------------------------------------------------------- */
/* Worker side.  Workers only run what the controller tells them to.     */

static int w_slot;
static int w_thread_quit;	/* futex: nonzero makes idle threads exit */
static int w_leader_tid;	/* futex: cleared by the kernel when the leader exits */
static int w_leader_gone;
static char w_self[PATH_MAX];

static void w_report(int op, int seq, int val)
{
	struct rep r = {
		.slot = w_slot, .op = op, .seq = seq, .val = val,
		.pid = getpid(), .tid = sys_gettid(), .ppid = getppid(),
		.pgid = getpgid(0),
	};

	if (write_all(rep_wr, &r, sizeof(r)))
		_exit(112);
}

static void *w_idle_thread(void *unused)
{
	int q;

	(void)unused;
	/* Blocked threads still have to be stopped and killed with the group. */
	for (;;) {
		q = __atomic_load_n(&w_thread_quit, __ATOMIC_ACQUIRE);
		if (q)
			syscall(SYS_exit, q);
		futex_wait(&w_thread_quit, 0);
	}
	return NULL;
}

static int w_start_thread(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return ret;
}

static void w_exec(void)
{
	char slot[16];
	char *argv[] = { "proctree_stress", "--worker", slot, NULL };

	snprintf(slot, sizeof(slot), "%d", w_slot);
	execv(w_self, argv);
	w_report(OP_ACK, -1, -errno);
	_exit(113);
}

static void *w_exec_thread(void *unused)
{
	(void)unused;
	w_exec();
	return NULL;
}

static void w_loop(void);

static void *w_cmd_thread(void *seqp)
{
	int seq = (int)(intptr_t)seqp, tid;

	/* Only acknowledge once the old leader is really gone. */
	while ((tid = __atomic_load_n(&w_leader_tid, __ATOMIC_ACQUIRE)))
		futex_wait(&w_leader_tid, tid);
	w_report(OP_ACK, seq, 0);
	w_loop();
	return NULL;
}

static void w_init(int slot, int pgid_req);

/*
 * The tracer half.  The tracer is never the tracee's real parent, which is
 * what makes the real parent's view of a traced child interesting.
 */
static int w_trace(const struct cmd *c)
{
	pid_t pid = c->arg;
	int st;

	switch (c->op) {
	case OP_TRACE_ATTACH:
		if (c->arg2)
			return ptrace(PTRACE_SEIZE, pid, 0, 0) ? -errno : 0;
		if (ptrace(PTRACE_ATTACH, pid, 0, 0))
			return -errno;
		/* Swallow the attach SIGSTOP so no group stop happens. */
		if (waitpid(pid, &st, __WALL) != pid)
			return -1000 - errno;
		if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGSTOP)
			return -2000 - st;
		return ptrace(PTRACE_CONT, pid, 0, 0) ? -errno : 0;
	case OP_TRACE_DETACH:
		/* PTRACE_DETACH needs a ptrace-stopped tracee. */
		if (c->arg2 ? ptrace(PTRACE_INTERRUPT, pid, 0, 0) :
			      syscall(SYS_tgkill, pid, pid, SIGSTOP))
			return -errno;
		if (waitpid(pid, &st, __WALL) != pid)
			return -1000 - errno;
		if (!WIFSTOPPED(st) ||
		    (c->arg2 ? (st >> 16) != PTRACE_EVENT_STOP :
			       WSTOPSIG(st) != SIGSTOP || (st >> 16)))
			return -2000 - st;
		return ptrace(PTRACE_DETACH, pid, 0, 0) ? -errno : 0;
	case OP_TRACE_REAP:
		if (waitpid(pid, &st, __WALL) != pid)
			return -1000 - errno;
		return st;
	}
	return -EINVAL;
}

static void w_loop(void)
{
	struct pollfd pfd[2];
	struct cmd c;
	ssize_t n;
	pid_t pid;

	for (;;) {
		pfd[0] = (struct pollfd){ .fd = cmd_rd(w_slot), .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = life_rd, .events = POLLIN };
		if (poll(pfd, 2, -1) < 0)
			continue;
		if (pfd[1].revents)
			_exit(111);	/* controller died: don't linger */
		/* The read end is O_NONBLOCK so the controller can drain it. */
		n = read(cmd_rd(w_slot), &c, sizeof(c));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n != sizeof(c))
			_exit(114);

		switch (c.op) {
		case OP_PING:
			w_report(OP_ACK, c.seq, 0);
			break;
		case OP_EXIT:
			if (!c.arg2)
				_exit(c.arg);
			/*
			 * No exit_group(): synchronize_group_exit() takes the
			 * code of whichever thread goes last, so all use the
			 * same one.  An exited leader's code must not show.
			 */
			__atomic_store_n(&w_thread_quit, 0x100 | c.arg,
					 __ATOMIC_RELEASE);
			futex_wake(&w_thread_quit);
			syscall(SYS_exit, c.arg);
			break;
		case OP_THREAD:
			w_report(OP_ACK, c.seq,
				 w_start_thread(w_idle_thread, NULL) ? -1 : 0);
			break;
		case OP_LEADER_EXIT:
			w_leader_tid = sys_gettid();
			syscall(SYS_set_tid_address, &w_leader_tid);
			w_leader_gone = 1;
			if (w_start_thread(w_cmd_thread, (void *)(intptr_t)c.seq))
				_exit(115);
			syscall(SYS_exit, c.arg);
			break;
		case OP_EXEC:
			if (!c.arg || w_leader_gone)
				w_exec();
			if (w_start_thread(w_exec_thread, NULL))
				_exit(116);
			/* de_thread() kills us; never read another command. */
			for (;;)
				pause();
		case OP_FORK:
			pid = fork();
			if (pid == 0)
				w_init(c.arg, c.arg2);
			w_report(OP_ACK, c.seq, pid < 0 ? -errno : pid);
			break;
		case OP_TRACE_ATTACH:
		case OP_TRACE_DETACH:
		case OP_TRACE_REAP:
			w_report(OP_ACK, c.seq, w_trace(&c));
			break;
		default:
			_exit(117);
		}
	}
}

/* Entry of every new worker: after fork, clone and exec alike.  Never returns. */
static void w_init(int slot, int pgid_req)
{
	struct rlimit nocore = { 0, 0 };
	sigset_t all;
	int sig;

	w_slot = slot;
	w_thread_quit = 0;
	w_leader_gone = 0;
	if (life_wr >= 0) {
		close(life_wr);
		life_wr = -1;
	}
	/* Default dispositions, so the model knows what each signal does. */
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	setrlimit(RLIMIT_CORE, &nocore);
	alarm(0);
	if (pgid_req != PGID_KEEP)
		setpgid(0, pgid_req);	/* the HELLO tells what we got */
	w_report(OP_HELLO, 0, 0);
	w_loop();
	_exit(118);
}

/* ---------------------------------------------------------------------- */
/* Controller side: options, PRNG, failure reporting, watchdog.          */

static unsigned long long opt_seed = 1;
static long opt_ops = 10000;
static long opt_seconds;
static int opt_max = 12;
static int opt_watchdog = 300;
static int opt_verbose;

static unsigned long long rng_state;
static long op_no;
static pid_t ctl_pid, ctl_pgid;
static char wd_what[256];

static unsigned long long rnd64(void)
{
	/* splitmix64: tiny, good enough, and identical everywhere. */
	unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int rnd(int n)
{
	return n > 0 ? (int)(rnd64() % (unsigned int)n) : 0;
}

static int chance(int percent)
{
	return rnd(100) < percent;
}

/* ---- the model ---- */

enum { ST_LIVE = 1, ST_STOPPED, ST_DYING };
enum { NO, MAYBE, YES };

struct proc {
	int used;
	pid_t pid;
	int pidfd;
	int state;
	int parent;	/* slot of the worker parent, -1: the controller */
	int forker;	/* real parent is the controller's forker thread */
	int clone;	/* exit_signal != SIGCHLD: needs __WCLONE/__WALL */
	pid_t pgid;
	int threads;
	int leader_gone;
	int tracer, tracee, seized;
	int exp, alt;	/* acceptable wait statuses once ST_DYING */
	int stop_sig;	/* a stop report may be pending */
	int stop_ok;	/* ... and it was seen with WNOWAIT */
	int cont, cont_ok;	/* same for a continued report */
	int zombie_ok;	/* exit is complete (pidfd readable etc.) */
	int seq;
};

static struct proc P[MAX_SLOTS];
static long n_spawned, n_reaped, n_waits, n_reports;
static int trace_disabled;

static void kill_all_workers(void)
{
	int i;

	for (i = 0; i < MAX_SLOTS; i++)
		if (P[i].used && P[i].pid > 0)
			kill(P[i].pid, SIGKILL);
}

static const char *state_name(int st)
{
	return st == ST_LIVE ? "live" : st == ST_STOPPED ? "stopped" :
	       st == ST_DYING ? "dying" : "?";
}

static void dump_model(void)
{
	int i;

	for (i = 0; i < opt_max; i++) {
		struct proc *p = &P[i];

		if (!p->used)
			continue;
		fprintf(stderr,
			"  slot %2d pid %d %s parent %d%s%s pgid %d thr %d%s tracer %d tracee %d exp %#x alt %#x stop %d/%d cont %d/%d zombie %d\n",
			i, p->pid, state_name(p->state), p->parent,
			p->forker ? " (forker)" : "", p->clone ? " clone" : "",
			p->pgid, p->threads, p->leader_gone ? " leader-gone" : "",
			p->tracer, p->tracee, p->exp, p->alt, p->stop_sig,
			p->stop_ok, p->cont, p->cont_ok, p->zombie_ok);
	}
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	alarm(0);
	fprintf(stderr, "proctree_stress: seed=%llu op=%ld FAIL: ", opt_seed,
		op_no);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  (replay with --seed %llu --ops %ld --max-procs %d)\n",
		opt_seed, opt_ops, opt_max);
	dump_model();
	kill_all_workers();
	exit(1);
}

static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!opt_verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "[%ld] ", op_no);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void watchdog_fired(int sig)
{
	char buf[512];
	int len;

	(void)sig;
	len = snprintf(buf, sizeof(buf),
		       "proctree_stress: seed=%llu op=%ld FAIL: watchdog: no progress for %d s while %s\n",
		       opt_seed, op_no, opt_watchdog, wd_what);
	if (len > 0)
		write(2, buf, len < (int)sizeof(buf) ? len : (int)sizeof(buf) - 1);
	kill_all_workers();
	_exit(1);
}

/* Say what we are about to block on, and re-arm the watchdog. */
static void __attribute__((format(printf, 1, 2))) wd(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(wd_what, sizeof(wd_what), fmt, ap);
	va_end(ap);
	alarm(opt_watchdog);
}

/* ---- model queries ---- */

static int slot_of(pid_t pid)
{
	int i;

	for (i = 0; i < opt_max; i++)
		if (P[i].used && P[i].pid == pid)
			return i;
	return -1;
}

/* Is the controller this worker's parent?  Reparenting happens at exit. */
static int owned(const struct proc *p)
{
	if (p->parent < 0)
		return YES;
	if (P[p->parent].state == ST_DYING)
		return MAYBE;
	return NO;
}

/* Is the worker traced?  A tracer's tracees are released at its exit. */
static int traced(const struct proc *p)
{
	if (p->tracer < 0)
		return NO;
	if (P[p->tracer].state == ST_DYING)
		return MAYBE;
	return YES;
}

/* Exit status helpers: wait status encoding as in wait(2). */
static int st_exit(int code)
{
	return (code & 0xff) << 8;
}

static int status_ok(const struct proc *p, int status)
{
	return status == p->exp || (p->alt != -1 && status == p->alt);
}

/* The worker's exit is final: its children and tracees are released. */
static void exit_final(int s)
{
	int i;

	P[s].zombie_ok = 1;
	for (i = 0; i < opt_max; i++) {
		if (!P[i].used || P[i].parent != s)
			continue;
		/* find_new_reaper(): the subreaper's first live thread */
		P[i].parent = -1;
		P[i].forker = 0;
		P[i].clone = 0;
	}
	if (P[s].tracee >= 0) {
		P[P[s].tracee].tracer = -1;
		P[s].tracee = -1;
	}
}

static void slot_free(int s)
{
	struct cmd c;

	exit_final(s);
	if (P[s].tracer >= 0)
		P[P[s].tracer].tracee = -1;
	close(P[s].pidfd);
	/* A command the worker never read must not reach the next one. */
	while (read(cmd_rd(s), &c, sizeof(c)) > 0)
		;
	memset(&P[s], 0, sizeof(P[s]));
	n_reaped++;
}

/* The worker is going to exit with @status (or already has). */
static void set_dying(int s, int status)
{
	P[s].state = ST_DYING;
	P[s].exp = status;
	P[s].alt = -1;
	P[s].stop_ok = 0;
	P[s].cont_ok = 0;
}

/*
 * kill() with a fatal signal settles the group exit at send time
 * (complete_signal() sets SIGNAL_GROUP_EXIT), which also drops any pending
 * stop or continued report.
 */
static void killed(int s, int sig)
{
	struct proc *p = &P[s];

	if (p->state == ST_DYING) {
		/* An exit command may or may not have won the race. */
		if (!p->zombie_ok && WIFEXITED(p->exp))
			p->alt = sig;
		return;
	}
	set_dying(s, sig);
	p->stop_sig = 0;
	p->cont = 0;
}

/* ---------------------------------------------------------------------- */
/* Talking to workers.                                                    */

static void get_report(struct rep *r)
{
	ssize_t n;

	do {
		n = read(rep_rd, r, sizeof(*r));
	} while (n < 0 && errno == EINTR);
	if (n != sizeof(*r))
		fail("short read %zd on the report pipe while %s", n, wd_what);
}

static void send_cmd(int s, int op, int arg, int arg2)
{
	struct cmd c = { op, arg, arg2, ++P[s].seq };

	if (write_all(cmd_wr[s], &c, sizeof(c)))
		fail("writing command %d to slot %d: %s", op, s, strerror(errno));
}

/* Check a report's identity fields against the model. */
static void check_identity(int s, const struct rep *r, const char *what)
{
	struct proc *p = &P[s];
	pid_t want_ppid;
	int own = owned(p);

	if (r->pid != p->pid)
		fail("%s: slot %d reports pid %d, expected %d", what, s, r->pid,
		     p->pid);
	if (r->pgid != p->pgid)
		fail("%s: slot %d (pid %d) reports pgid %d, expected %d", what,
		     s, p->pid, r->pgid, p->pgid);
	if (own == MAYBE && r->ppid == ctl_pid) {
		p->parent = -1;		/* reparenting already happened */
		p->forker = 0;
		return;
	}
	want_ppid = own == YES ? ctl_pid : P[p->parent].pid;
	if (r->ppid != want_ppid)
		fail("%s: pid %d has ppid %d, expected %d%s", what, p->pid,
		     r->ppid, want_ppid,
		     own == MAYBE ? " or the subreaper" : "");
}

/* Wait for the acknowledgement of the last command sent to slot @s. */
static int await_ack(int s, const char *what)
{
	struct rep r;

	wd("waiting for slot %d (pid %d) to ack %s", s, P[s].pid, what);
	get_report(&r);
	if (r.slot != s || r.op != OP_ACK || r.seq != P[s].seq)
		fail("%s: expected ack from slot %d seq %d, got op %d from slot %d seq %d val %d",
		     what, s, P[s].seq, r.op, r.slot, r.seq, r.val);
	check_identity(s, &r, what);
	return r.val;
}

static void await_hello(int s, const char *what)
{
	struct rep r;

	wd("waiting for the hello of slot %d (%s)", s, what);
	get_report(&r);
	if (r.slot != s || r.op != OP_HELLO)
		fail("%s: expected hello from slot %d, got op %d from slot %d val %d",
		     what, s, r.op, r.slot, r.val);
	if (P[s].pid && r.pid != P[s].pid)
		fail("%s: slot %d came back as pid %d, expected %d", what, s,
		     r.pid, P[s].pid);
	if (r.tid != r.pid)
		fail("%s: hello from pid %d sent by tid %d, not the leader",
		     what, r.pid, r.tid);
	P[s].pid = r.pid;
	P[s].pgid = r.pgid;
	check_identity(s, &r, what);
}

/* ---------------------------------------------------------------------- */
/* wait() in all its flavours, and the checks on what it returns.        */

enum { API_WAIT, API_WAITPID, API_WAIT4, API_WAITID };
enum { SEL_ALL, SEL_PID, SEL_PGID, SEL_PIDFD };

struct wq {
	int api, sel;
	pid_t id;	/* pid or pgid; 0 with SEL_PGID: caller's group */
	int fd;		/* pidfd for SEL_PIDFD */
	int flags;	/* WEXITED etc, waitid() style */
};

static const char *api_name[] = { "wait", "waitpid", "wait4", "waitid" };

static void wq_describe(const struct wq *q, int api, char *buf, size_t len)
{
	static const char *sel_name[] = { "all", "pid", "pgid", "pidfd" };

	snprintf(buf, len, "%s(%s %d, flags%s%s%s%s%s%s%s%s)", api_name[api],
		 sel_name[q->sel], q->id,
		 q->flags & WEXITED ? " WEXITED" : "",
		 q->flags & WSTOPPED ? " WSTOPPED" : "",
		 q->flags & WCONTINUED ? " WCONTINUED" : "",
		 q->flags & WNOHANG ? " WNOHANG" : "",
		 q->flags & WNOWAIT ? " WNOWAIT" : "",
		 q->flags & __WALL ? " __WALL" : "",
		 q->flags & __WCLONE ? " __WCLONE" : "",
		 q->flags & __WNOTHREAD ? " __WNOTHREAD" : "");
}

/* Could this wait request see worker @p at all?  NO, MAYBE or YES. */
static int eligible(const struct wq *q, const struct proc *p)
{
	if (!p->used)
		return NO;
	switch (q->sel) {
	case SEL_PID:
	case SEL_PIDFD:
		if (p->pid != q->id)
			return NO;
		break;
	case SEL_PGID:
		if (p->pgid != (q->id ? q->id : ctl_pgid))
			return NO;
		break;
	}
	if (!(q->flags & __WALL) && p->clone != !!(q->flags & __WCLONE))
		return NO;
	/* The main thread waits; children of the forker thread need it. */
	if ((q->flags & __WNOTHREAD) && p->forker)
		return NO;
	return owned(p);
}

/* Is a report certainly ready (ready=1) or certainly coming (ready=0)? */
static int certain(const struct wq *q, const struct proc *p, int ready)
{
	if (eligible(q, p) != YES || traced(p) != NO)
		return 0;
	if ((q->flags & WEXITED) && p->state == ST_DYING &&
	    (p->zombie_ok || !ready))
		return 1;
	if ((q->flags & WSTOPPED) && p->stop_sig && p->stop_ok)
		return 1;
	return (q->flags & WCONTINUED) && p->cont && p->cont_ok;
}

static int any_certain(const struct wq *q, int ready)
{
	int i;

	for (i = 0; i < opt_max; i++)
		if (certain(q, &P[i], ready))
			return i;
	return -1;
}

/* A child that makes do_wait() clear notask_error for sure, or -1. */
static int echild_witness(const struct wq *q)
{
	int i;

	for (i = 0; i < opt_max; i++) {
		const struct proc *p = &P[i];

		if (eligible(q, p) != YES)
			continue;
		/*
		 * A live child always counts, so does a traced zombie; an
		 * untraced zombie only counts with WEXITED.
		 */
		if (p->state != ST_DYING || traced(p) == YES ||
		    (q->flags & WEXITED))
			return i;
	}
	return -1;
}

enum { R_EXIT = 1, R_STOP, R_CONT };

/* Check one report against the model and update it.  Returns the slot. */
static int check_report(const struct wq *q, const char *desc, pid_t pid,
			int kind, int status)
{
	int s = slot_of(pid), nowait = q->flags & WNOWAIT;
	struct proc *p;
	int confirm;

	n_reports++;
	if (s < 0)
		fail("%s returned pid %d (kind %d status %#x): not a live worker (reported twice?)",
		     desc, pid, kind, status);
	p = &P[s];
	if (eligible(q, p) == NO)
		fail("%s returned pid %d (slot %d), which is not an eligible child",
		     desc, pid, s);
	if (owned(p) == MAYBE) {
		p->parent = -1;
		p->forker = 0;
	}
	/*
	 * A traced zombie is only visible to its tracer; group stop and
	 * continue state stays visible to the real parent.
	 */
	if (kind == R_EXIT && traced(p) == YES)
		fail("%s: real parent got exit status %#x for pid %d while it is traced by pid %d",
		     desc, status, pid, P[p->tracer].pid);
	if (kind == R_EXIT && traced(p) == MAYBE) {
		P[p->tracer].tracee = -1;
		p->tracer = -1;
	}
	/* A dying child's stop/continue state goes away with its exit. */
	confirm = nowait && p->state != ST_DYING;

	switch (kind) {
	case R_EXIT:
		if (!(q->flags & WEXITED))
			fail("%s: exit report without WEXITED", desc);
		if (p->state != ST_DYING)
			fail("%s: pid %d reported exit status %#x but it should be %s",
			     desc, pid, status, state_name(p->state));
		if (!status_ok(p, status))
			fail("%s: pid %d exit status %#x, expected %#x%s", desc,
			     pid, status, p->exp, p->alt != -1 ? " or alt" : "");
		if (nowait) {
			exit_final(s);
		} else {
			vlog("reaped pid %d slot %d status %#x", pid, s, status);
			slot_free(s);
		}
		break;
	case R_STOP:
		if (!(q->flags & WSTOPPED))
			fail("%s: stop report without WSTOPPED", desc);
		if (!p->stop_sig || status != p->stop_sig)
			fail("%s: pid %d reported stopped by %d, expected %d",
			     desc, pid, status, p->stop_sig);
		if (confirm)
			p->stop_ok = 1;
		else if (!nowait)
			p->stop_sig = p->stop_ok = 0;
		break;
	case R_CONT:
		if (!(q->flags & WCONTINUED))
			fail("%s: continued report without WCONTINUED", desc);
		if (!p->cont)
			fail("%s: pid %d reported continued, none pending",
			     desc, pid);
		if (confirm)
			p->cont_ok = 1;
		else if (!nowait)
			p->cont = p->cont_ok = 0;
		break;
	default:
		fail("%s: pid %d gave an unknown report (status %#x)", desc,
		     pid, status);
	}
	return s;
}

/* Turn a wait4() status into (kind, status) as check_report() wants it. */
static int decode_status(int st, int *kind)
{
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		*kind = R_EXIT;
		return st;
	}
	if (WIFSTOPPED(st)) {
		*kind = R_STOP;
		return WSTOPSIG(st);
	}
	if (WIFCONTINUED(st)) {
		*kind = R_CONT;
		return SIGCONT;
	}
	*kind = 0;
	return st;
}

static int decode_siginfo(const siginfo_t *si, int *kind)
{
	switch (si->si_code) {
	case CLD_EXITED:
		*kind = R_EXIT;
		return st_exit(si->si_status);
	case CLD_KILLED:
	case CLD_DUMPED:
		*kind = R_EXIT;
		return si->si_status;
	case CLD_STOPPED:
		*kind = R_STOP;
		return si->si_status;
	case CLD_CONTINUED:
		*kind = si->si_status == SIGCONT ? R_CONT : 0;
		return si->si_status;
	}
	*kind = 0;
	return si->si_code;
}

/*
 * Run one wait request and check the outcome.  Returns the slot reported,
 * -1 if nothing was reported (WNOHANG), -2 on ECHILD.
 */
static int do_wait(const struct wq *q)
{
	int wflags = q->flags & ~(WEXITED | WNOWAIT);
	int kind = 0, status = 0, witness, ret, api = q->api;
	struct rusage ru;
	char desc[200];
	siginfo_t si;
	pid_t arg;

	/* wait() is wait4(-1, &st, 0, NULL): blocking, plain children. */
	if (q->api == API_WAIT && (q->sel != SEL_ALL || q->flags != WEXITED))
		api = API_WAITPID;
	wq_describe(q, api, desc, sizeof(desc));
	n_waits++;
	arg = q->sel == SEL_ALL ? -1 : q->sel == SEL_PGID ? -q->id : q->id;
	wd("blocked in %s", desc);
	do {
		memset(&si, 0, sizeof(si));
		switch (api) {
		case API_WAIT:
			ret = wait(&status);
			break;
		case API_WAITPID:
			ret = waitpid(arg, &status, wflags);
			break;
		case API_WAIT4:
			ret = wait4(arg, &status, wflags, &ru);
			break;
		default:
			ret = waitid(q->sel == SEL_ALL ? P_ALL :
				     q->sel == SEL_PGID ? P_PGID :
				     q->sel == SEL_PIDFD ? P_PIDFD : P_PID,
				     q->sel == SEL_PIDFD ? (id_t)q->fd : (id_t)q->id,
				     &si, q->flags);
			if (ret == 0)
				ret = si.si_pid;
			break;
		}
	} while (ret < 0 && errno == EINTR);
	alarm(opt_watchdog);

	if (ret < 0) {
		if (errno != ECHILD)
			fail("%s: %s", desc, strerror(errno));
		witness = echild_witness(q);
		if (witness >= 0)
			fail("%s: ECHILD although pid %d (slot %d) is an eligible child",
			     desc, P[witness].pid, witness);
		vlog("%s -> ECHILD", desc);
		return -2;
	}
	if (ret == 0) {
		if (!(q->flags & WNOHANG))
			fail("%s returned 0 without WNOHANG", desc);
		witness = any_certain(q, 1);
		if (witness >= 0)
			fail("%s: nothing reported although pid %d (slot %d) has a confirmed report ready",
			     desc, P[witness].pid, witness);
		vlog("%s -> nothing", desc);
		return -1;
	}
	if (api == API_WAITID) {
		if (si.si_signo != SIGCHLD)
			fail("%s: si_signo %d", desc, si.si_signo);
		status = decode_siginfo(&si, &kind);
	} else {
		status = decode_status(status, &kind);
	}
	vlog("%s -> pid %d kind %d status %#x", desc, ret, kind, status);
	return check_report(q, desc, ret, kind, status);
}

/* The clone flags a wait for this worker needs; sometimes __WALL. */
static int clone_flags(const struct proc *p)
{
	if (chance(30))
		return __WALL;
	return p->clone ? __WCLONE : 0;
}

/* A targeted waitid(P_PID or P_PIDFD) on one worker. */
static int wait_one(int s, int flags)
{
	struct wq q = {
		.api = API_WAITID, .sel = chance(50) ? SEL_PIDFD : SEL_PID,
		.id = P[s].pid, .fd = P[s].pidfd,
		.flags = flags | clone_flags(&P[s]),
	};

	return do_wait(&q);
}

/*
 * Look at everything worker @s could report right now; check_report()
 * fails on anything the model does not allow (only an old continued
 * report may legitimately show up).
 */
static void expect_quiet(int s, const char *why)
{
	vlog("check quiet: %s", why);
	wait_one(s, WEXITED | WSTOPPED | WCONTINUED | WNOHANG | WNOWAIT);
}

/* A random wait request; blocking only when a report must come. */
static void op_wait(void)
{
	struct wq q = { .api = rnd(4) };
	int pick = rnd(opt_max);

	switch (rnd(10)) {
	case 0 ... 3:
		q.sel = SEL_ALL;
		break;
	case 4 ... 6:
		q.sel = SEL_PID;
		break;
	case 7 ... 8:
		q.sel = SEL_PGID;
		break;
	default:
		q.sel = q.api == API_WAITID ? SEL_PIDFD : SEL_PID;
		break;
	}
	if (q.sel != SEL_ALL && !P[pick].used)
		q.sel = SEL_ALL;
	if (q.sel == SEL_PGID)
		q.id = chance(20) ? 0 : P[pick].pgid;
	else if (q.sel != SEL_ALL)
		q.id = P[pick].pid;
	q.fd = P[pick].pidfd;

	if (q.api == API_WAITID) {
		do {
			q.flags = (chance(70) ? WEXITED : 0) |
				  (chance(50) ? WSTOPPED : 0) |
				  (chance(50) ? WCONTINUED : 0);
		} while (!q.flags);
		if (chance(25))
			q.flags |= WNOWAIT;
	} else {
		q.flags = WEXITED | (chance(50) ? WSTOPPED : 0) |
			  (chance(50) ? WCONTINUED : 0);
	}
	switch (rnd(8)) {
	case 0 ... 1:
		q.flags |= __WALL;
		break;
	case 2:
		q.flags |= __WCLONE;
		break;
	case 3:
		q.flags |= __WNOTHREAD | (chance(50) ? __WALL : 0);
		break;
	}
	if (chance(70) || any_certain(&q, 0) < 0)
		q.flags |= WNOHANG;
	do_wait(&q);
}

/* ---------------------------------------------------------------------- */
/* Operations.                                                             */

/* A random slot that is in use as @used says and satisfies @ok, or -1. */
static int pick(int used, int (*ok)(const struct proc *p))
{
	int i, start = rnd(opt_max), s;

	for (i = 0; i < opt_max; i++) {
		s = (start + i) % opt_max;
		if (P[s].used == used && (!ok || ok(&P[s])))
			return s;
	}
	return -1;
}

static int pick_slot(int (*ok)(const struct proc *p))
{
	return pick(1, ok);
}

static int free_slot(void)
{
	return pick(0, NULL);
}

/* Worker can take plain commands: running, and not part of a ptrace pair. */
static int is_idle(const struct proc *p)
{
	return p->state == ST_LIVE && p->tracer < 0 && p->tracee < 0;
}

static int is_live(const struct proc *p)
{
	return p->state == ST_LIVE;
}

/*
 * Our direct, untraced child, which is what stop/continue needs.  It must
 * not be in the controller's process group: a stopped child there does not
 * keep that group from being orphaned (its parent is inside the group), and
 * an orphaned group with stopped members gets SIGHUP+SIGCONT from
 * kill_orphaned_pgrp().  In a worker group the stopped child itself links
 * the group to the controller, and SIGTSTP is never dropped.
 */
static int is_stoppable(const struct proc *p)
{
	return is_live(p) && owned(p) == YES && p->tracer < 0 &&
	       p->pgid != ctl_pgid;
}

static int is_stopped(const struct proc *p)
{
	return p->state == ST_STOPPED;
}

static int can_fork(const struct proc *p)
{
	return is_idle(p);
}

static int can_thread(const struct proc *p)
{
	return is_idle(p) && p->threads < MAX_THREADS;
}

static int can_leader_exit(const struct proc *p)
{
	return is_idle(p) && p->threads > 0 && !p->leader_gone;
}

/* Tracers and tracees are single-threaded, so one ptrace link covers all. */
static int can_trace(const struct proc *p)
{
	return is_idle(p) && !p->threads && !p->leader_gone;
}

static int has_children(const struct proc *p)
{
	int i;

	for (i = 0; i < opt_max; i++)
		if (P[i].used && P[i].parent == p - P)
			return 1;
	return 0;
}

/*
 * A tracee must have no children: their SIGCHLD, although ignored, would
 * put it into a signal-delivery-stop nobody resumes.
 */
static int can_be_traced(const struct proc *p)
{
	return can_trace(p) && owned(p) == YES && !has_children(p);
}

static int has_tracee(const struct proc *p)
{
	return p->state == ST_LIVE && p->tracee >= 0;
}

static int is_dying(const struct proc *p)
{
	return p->state == ST_DYING && !p->zombie_ok;
}

static int is_mortal(const struct proc *p)
{
	return p->state != ST_DYING;
}

static int pgid_request(void)
{
	int s;

	switch (rnd(4)) {
	case 0:
		return PGID_NEW;
	case 1:
		return ctl_pgid;
	case 2:
		s = pick_slot(is_live);
		if (s >= 0 && P[s].pgid != ctl_pgid)
			return P[s].pgid;
	}
	return PGID_KEEP;
}

/* Forker thread: its children are the controller's, but not the main thread's. */
static int fork_req[2], fork_resp[2];

struct fork_request {
	int slot, pgid;
};

static void *forker_thread(void *unused)
{
	struct fork_request req;
	pid_t pid;

	(void)unused;
	while (read(fork_req[0], &req, sizeof(req)) == sizeof(req)) {
		pid = fork();
		if (pid == 0)
			w_init(req.slot, req.pgid);
		if (write_all(fork_resp[1], &pid, sizeof(pid)))
			break;
	}
	return NULL;
}

static void slot_init(int s)
{
	struct proc *p = &P[s];

	memset(p, 0, sizeof(*p));
	p->used = 1;
	p->state = ST_LIVE;
	p->parent = -1;
	p->tracer = p->tracee = -1;
	p->alt = -1;
	p->pidfd = -1;
}

static int op_spawn(void)
{
	int s = free_slot(), how = rnd(8), pgid, par = -1;
	struct fork_request req;
	struct clone_args ca;
	const char *what;
	pid_t pid = 0;

	if (s < 0)
		return 0;
	pgid = pgid_request();
	if (how >= 5)
		par = pick_slot(can_fork);
	slot_init(s);
	if (how < 2) {
		what = "fork";
		pid = fork();
		if (pid == 0)
			w_init(s, pgid);
	} else if (how == 2) {
		what = "forker-thread fork";
		req = (struct fork_request){ s, pgid };
		wd("waiting for the forker thread");
		if (write_all(fork_req[1], &req, sizeof(req)) ||
		    read(fork_resp[0], &pid, sizeof(pid)) != sizeof(pid))
			fail("forker thread: %s", strerror(errno));
		P[s].forker = 1;
	} else if (how <= 4 || par < 0) {
		/* A non-SIGCHLD exit_signal makes it a "clone" child. */
		what = "clone3";
		memset(&ca, 0, sizeof(ca));
		ca.exit_signal = chance(50) ? SIGUSR2 : 0;
		pid = syscall(SYS_clone3, &ca, sizeof(ca));
		if (pid == 0)
			w_init(s, pgid);
		P[s].clone = 1;
	} else {
		struct rep r[2];
		int i;

		what = "worker fork";
		P[s].parent = par;
		send_cmd(par, OP_FORK, s, pgid);
		/* The parent's ack and the child's hello race: take both. */
		wd("waiting for slot %d (pid %d) to fork slot %d", par,
		   P[par].pid, s);
		for (i = 0; i < 2; i++) {
			get_report(&r[i]);
			if (r[i].op == OP_ACK && r[i].val < 0)
				fail("worker fork failed: %s", strerror(-r[i].val));
		}
		if (r[0].op == OP_HELLO) {
			struct rep t = r[0];

			r[0] = r[1];
			r[1] = t;
		}
		if (r[0].op != OP_ACK || r[0].slot != par ||
		    r[0].seq != P[par].seq || r[1].op != OP_HELLO ||
		    r[1].slot != s || r[1].pid != r[0].val)
			fail("worker fork: bad replies");
		check_identity(par, &r[0], what);
		P[s].pid = r[1].pid;
		P[s].pgid = r[1].pgid;
		check_identity(s, &r[1], what);
		pid = P[s].pid;
	}
	if (pid < 0)
		fail("%s: %s", what, strerror(errno));
	if (P[s].parent < 0) {
		P[s].pid = pid;
		await_hello(s, what);
	}
	P[s].pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (P[s].pidfd < 0)
		fail("pidfd_open(%d): %s", pid, strerror(errno));
	n_spawned++;
	vlog("%s: slot %d pid %d parent %d pgid %d", what, s, pid,
	     P[s].parent, P[s].pgid);
	return 1;
}

static int op_exit(void)
{
	int s = pick_slot(is_live), code = rnd(256), threads;
	struct proc *p;

	if (s < 0)
		return 0;
	p = &P[s];
	threads = (p->threads || p->leader_gone) && chance(50);
	send_cmd(s, OP_EXIT, code, threads);
	/* Without a group exit the leader's own exit code is reported. */
	set_dying(s, st_exit(code));
	vlog("exit pid %d code %d%s -> %#x", p->pid, code,
	     threads ? " (each thread)" : "", p->exp);
	return 1;
}

static const int fatal_sigs[] = {
	SIGKILL, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM,
};

static void send_signal(int s, int sig)
{
	int ret;

	ret = chance(50) ? kill(P[s].pid, sig) :
	      (int)syscall(SYS_pidfd_send_signal, P[s].pidfd, sig, NULL, 0);
	if (ret)
		fail("signal %d to pid %d: %s", sig, P[s].pid, strerror(errno));
}

static int op_kill(void)
{
	int s = pick_slot(is_mortal), sig;

	if (s < 0)
		return 0;
	sig = fatal_sigs[rnd(sizeof(fatal_sigs) / sizeof(fatal_sigs[0]))];
	/* Only SIGKILL gets through a stop or a tracer that is not looking. */
	if (P[s].state == ST_STOPPED || P[s].tracer >= 0)
		sig = SIGKILL;
	send_signal(s, sig);
	killed(s, sig);
	vlog("kill pid %d sig %d", P[s].pid, sig);
	return 1;
}

static int op_kill_group(void)
{
	int s = pick_slot(is_live), i;
	pid_t pgid;

	if (s < 0 || P[s].pgid == ctl_pgid)
		return 0;
	pgid = P[s].pgid;
	if (kill(-pgid, SIGKILL))
		fail("kill(-%d, SIGKILL): %s", pgid, strerror(errno));
	for (i = 0; i < opt_max; i++)
		if (P[i].used && P[i].pgid == pgid)
			killed(i, SIGKILL);
	vlog("kill group %d", pgid);
	return 1;
}

static int op_stop(void)
{
	int s = pick_slot(is_stoppable), sig;
	struct proc *p;

	if (s < 0)
		return 0;
	p = &P[s];
	sig = chance(50) ? SIGTSTP : SIGSTOP;
	send_signal(s, sig);
	p->state = ST_STOPPED;
	p->stop_sig = sig;
	p->stop_ok = 0;
	/* Group stop completion drops a pending continued report. */
	if (wait_one(s, WSTOPPED | WNOWAIT) != s || !p->stop_ok)
		fail("pid %d: no stop report after signal %d", p->pid, sig);
	p->cont = p->cont_ok = 0;
	vlog("stopped pid %d with %d", p->pid, sig);
	if (chance(40) && wait_one(s, WSTOPPED | WNOHANG) != s)
		fail("pid %d: confirmed stop not reported", p->pid);
	return 1;
}

static int op_cont(void)
{
	int s = pick_slot(is_stopped);
	struct proc *p;

	if (s < 0) {
		/* SIGCONT to a running child must not invent a report. */
		s = pick_slot(is_stoppable);
		if (s < 0)
			return 0;
		send_signal(s, SIGCONT);
		expect_quiet(s, "SIGCONT to a running child");
		return 1;
	}
	p = &P[s];
	send_signal(s, SIGCONT);
	p->state = ST_LIVE;
	p->stop_sig = p->stop_ok = 0;
	p->cont = 1;
	/* The stop report is gone the moment SIGCONT is sent. */
	wait_one(s, WSTOPPED | WNOHANG);
	if (wait_one(s, WCONTINUED | WNOWAIT) != s || !p->cont_ok)
		fail("pid %d: no continued report after SIGCONT", p->pid);
	vlog("continued pid %d", p->pid);
	if (chance(40) && wait_one(s, WCONTINUED | WNOHANG) != s)
		fail("pid %d: confirmed continue not reported", p->pid);
	return 1;
}

static int op_thread(void)
{
	int s = pick_slot(can_thread);

	if (s < 0)
		return 0;
	send_cmd(s, OP_THREAD, 0, 0);
	if (await_ack(s, "thread"))
		fail("pid %d could not create a thread", P[s].pid);
	P[s].threads++;
	vlog("pid %d has %d extra threads", P[s].pid, P[s].threads);
	return 1;
}

static int op_leader_exit(void)
{
	int s = pick_slot(can_leader_exit), code = rnd(256);

	if (s < 0)
		return 0;
	send_cmd(s, OP_LEADER_EXIT, code, 0);
	await_ack(s, "leader exit");
	P[s].leader_gone = 1;
	vlog("leader of pid %d exited with %d", P[s].pid, code);
	/* A zombie leader with live threads must not be reported. */
	if (owned(&P[s]) == YES)
		expect_quiet(s, "exited leader with live threads");
	return 1;
}

static int op_exec(void)
{
	int s = pick_slot(is_idle), nonleader;
	struct proc *p;

	if (s < 0)
		return 0;
	p = &P[s];
	nonleader = p->leader_gone || (p->threads && chance(60));
	send_cmd(s, OP_EXEC, nonleader, 0);
	/* Same pid after exec, even when a non-leader thread did it. */
	await_hello(s, nonleader ? "exec from a thread" : "exec");
	/* de_thread() resets exit_signal to SIGCHLD. */
	p->clone = 0;
	p->threads = 0;
	p->leader_gone = 0;
	p->cont_ok = 0;
	vlog("pid %d exec'd%s", p->pid, nonleader ? " from a thread" : "");
	if (owned(p) == YES)
		expect_quiet(s, "exec");
	return 1;
}

static int op_ping(void)
{
	int s = pick_slot(is_live);

	if (s < 0)
		return 0;
	send_cmd(s, OP_PING, 0, 0);
	await_ack(s, "ping");
	return 1;
}

/*
 * Block until dying worker @s has exited completely: its pidfd turns
 * readable once the whole group is dead and its children are reparented.
 */
static void await_exit(int s)
{
	struct pollfd pfd = { .fd = P[s].pidfd, .events = POLLIN };

	wd("polling the pidfd of dying pid %d", P[s].pid);
	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			fail("poll pidfd: %s", strerror(errno));
	exit_final(s);
}

/* Wait until a dying worker is a zombie (pidfd or WNOWAIT) */
static int op_confirm(void)
{
	int s = pick_slot(is_dying);
	struct proc *p;

	if (s < 0)
		return 0;
	p = &P[s];
	if (owned(p) == YES && traced(p) == NO && chance(50)) {
		if (wait_one(s, WEXITED | WNOWAIT) != s)
			fail("pid %d: no exit report", p->pid);
	} else {
		await_exit(s);
	}
	vlog("pid %d is a zombie", p->pid);
	/* A certainly ready zombie must not be missed by WNOHANG. */
	if (certain(&(struct wq){ .sel = SEL_ALL, .flags = WEXITED | __WALL }, p, 1) &&
	    chance(50) && wait_one(s, WEXITED | WNOHANG) != s)
		fail("pid %d: confirmed zombie not reaped", p->pid);
	return 1;
}

static int op_trace(void)
{
	int t, w, val, mode;

	if (trace_disabled)
		return 0;
	t = pick_slot(has_tracee);
	if (t >= 0) {
		w = P[t].tracee;
		if (P[w].state == ST_DYING) {
			/* The tracer reaps first, then the real parent. */
			send_cmd(t, OP_TRACE_REAP, P[w].pid, 0);
			val = await_ack(t, "tracer reaping its tracee");
			if (val < 0 || !status_ok(&P[w], val))
				fail("tracer got status %#x for pid %d, expected %#x",
				     val, P[w].pid, P[w].exp);
			P[w].tracer = -1;
			P[t].tracee = -1;
			exit_final(w);
			vlog("tracer %d reaped %d status %#x", P[t].pid,
			     P[w].pid, val);
		} else {
			send_cmd(t, OP_TRACE_DETACH, P[w].pid, P[w].seized);
			val = await_ack(t, "ptrace detach");
			if (val)
				fail("ptrace detach of %d: %d", P[w].pid, val);
			P[w].tracer = -1;
			P[t].tracee = -1;
			vlog("tracer %d detached %d", P[t].pid, P[w].pid);
			expect_quiet(w, "after ptrace detach");
			send_cmd(w, OP_PING, 0, 0);
			await_ack(w, "ping after detach");
		}
		return 1;
	}
	t = pick_slot(can_trace);
	w = pick_slot(can_be_traced);
	if (t < 0 || w < 0 || t == w)
		return 0;
	mode = chance(50);
	vlog("pid %d %s pid %d", P[t].pid, mode ? "seizes" : "attaches to",
	     P[w].pid);
	send_cmd(t, OP_TRACE_ATTACH, P[w].pid, mode);
	val = await_ack(t, "ptrace attach");
	if (val == -EPERM) {
		printf("proctree_stress: ptrace not permitted, skipping ptrace ops\n");
		trace_disabled = 1;
		return 1;
	}
	if (val)
		fail("%s of pid %d: %d", mode ? "PTRACE_SEIZE" : "PTRACE_ATTACH",
		     P[w].pid, val);
	P[w].tracer = t;
	P[w].seized = mode;
	P[t].tracee = w;
	expect_quiet(w, "after ptrace attach");
	return 1;
}

struct op {
	int (*fn)(void);
	int weight;
};

static const struct op ops[] = {
	{ op_spawn, 18 }, { op_exit, 8 }, { op_kill, 5 }, { op_kill_group, 1 },
	{ op_stop, 5 }, { op_cont, 5 }, { op_thread, 5 }, { op_leader_exit, 3 },
	{ op_exec, 3 }, { op_ping, 2 }, { op_confirm, 5 }, { op_trace, 5 },
};

static void run_one_op(void)
{
	int total = 30, i, r, tries;

	for (i = 0; i < (int)(sizeof(ops) / sizeof(ops[0])); i++)
		total += ops[i].weight;
	/* What is left over is a random wait, the most common operation. */
	for (tries = 0; tries < 20; tries++) {
		r = rnd(total);
		for (i = 0; i < (int)(sizeof(ops) / sizeof(ops[0])); i++) {
			if (r < ops[i].weight)
				break;
			r -= ops[i].weight;
		}
		if (i == (int)(sizeof(ops) / sizeof(ops[0]))) {
			op_wait();
			return;
		}
		if (ops[i].fn())
			return;
	}
	op_wait();
}

/* ---------------------------------------------------------------------- */
/* End of run: kill everything, reap everything, and look for leftovers. */

static void scan_proc_for_children(void)
{
	char path[300], buf[512], *s, state;
	struct dirent *de;
	int fd, ppid;
	ssize_t n;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		fail("opendir /proc: %s", strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;	/* it went away */
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		s = strrchr(buf, ')');	/* comm may contain anything */
		if (!s || sscanf(s + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (ppid == ctl_pid)
			fail("pid %s (state %c) is still our child after the final ECHILD%s",
			     de->d_name, state,
			     state == 'Z' ? ": a zombie was left behind" : "");
	}
	closedir(d);
}

static void finish(void)
{
	struct wq q = { .api = API_WAITID, .sel = SEL_ALL };
	int i, ret;

	for (i = 0; i < opt_max; i++) {
		if (!P[i].used)
			continue;
		if (kill(P[i].pid, SIGKILL) && errno != ESRCH)
			fail("kill %d: %s", P[i].pid, strerror(errno));
		killed(i, SIGKILL);
	}
	/* Once every exit is final, every leftover is our untraced child. */
	for (i = 0; i < opt_max; i++) {
		if (!P[i].used || P[i].zombie_ok)
			continue;
		await_exit(i);
	}
	/* Everything is a confirmed zombie: WNOHANG must find each one. */
	for (;;) {
		q.api = rnd(4);
		q.flags = WEXITED | WNOHANG | __WALL | (chance(30) ? WSTOPPED : 0);
		ret = do_wait(&q);
		if (ret == -2)
			break;
		if (ret == -1)
			fail("final reaping: WNOHANG found nothing");
	}
	for (i = 0; i < opt_max; i++)
		if (P[i].used)
			fail("pid %d (slot %d) was never reported", P[i].pid, i);
	scan_proc_for_children();
}

/* ---------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: proctree_stress [--seed N] [--ops N] [--seconds S] [--max-procs N] [--watchdog S] [-v]\n");
	exit(2);
}

static long num_arg(char **argv, int *i)
{
	char *end;
	long v;

	if (!argv[*i + 1])
		usage();
	v = strtol(argv[++*i], &end, 0);
	if (*end || v < 0)
		usage();
	return v;
}

/* Create a pipe whose read (@end 0) or write (@end 1) end sits at @fixed. */
static int pipe_at(int end, int fixed)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) || dup2(fds[end], fixed) != fixed) {
		perror("proctree_stress: pipe");
		exit(2);
	}
	close(fds[end]);
	return fds[!end];
}

static void setup_pipes(void)
{
	int i;

	for (i = 0; i < opt_max; i++) {
		cmd_wr[i] = pipe_at(0, cmd_rd(i));
		/* Nonblocking read end: lets the controller drain stale commands. */
		fcntl(cmd_rd(i), F_SETFL, O_NONBLOCK);
	}
	rep_rd = pipe_at(1, rep_wr);
	life_wr = pipe_at(0, life_rd);
	if (pipe2(fork_req, O_CLOEXEC) || pipe2(fork_resp, O_CLOEXEC)) {
		perror("proctree_stress: pipe");
		exit(2);
	}
}

/*
 * Children of global init never link a process group to the rest of the
 * session (will_become_orphaned_pgrp()), so with us as init every worker
 * group would be orphaned.  Then run the controller one level down.
 */
static void avoid_being_init(void)
{
	int status;
	pid_t pid, w;

	if (getpid() != 1)
		return;
	pid = fork();
	if (pid < 0) {
		perror("proctree_stress: fork");
		exit(2);
	}
	if (pid == 0)
		return;
	do {
		w = wait(&status);
	} while (w != pid && (w >= 0 || errno == EINTR));
	exit(w == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	struct timespec t0;
	pthread_t forker;
	int i;

	if (readlink("/proc/self/exe", w_self, sizeof(w_self) - 1) < 0)
		strcpy(w_self, "/proc/self/exe");
	/* Re-exec'd worker: same pid, same slot, same pipes. */
	if (argc == 3 && !strcmp(argv[1], "--worker"))
		w_init(atoi(argv[2]), PGID_KEEP);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed"))
			opt_seed = strtoull(argv[++i] ? argv[i] : "x", NULL, 0);
		else if (!strcmp(argv[i], "--ops"))
			opt_ops = num_arg(argv, &i);
		else if (!strcmp(argv[i], "--seconds"))
			opt_seconds = num_arg(argv, &i);
		else if (!strcmp(argv[i], "--max-procs"))
			opt_max = num_arg(argv, &i);
		else if (!strcmp(argv[i], "--watchdog"))
			opt_watchdog = num_arg(argv, &i);
		else if (!strcmp(argv[i], "-v"))
			opt_verbose = 1;
		else
			usage();
	}
	if (opt_max < 2 || opt_max > MAX_SLOTS || opt_watchdog < 1)
		usage();
	rng_state = opt_seed;
	setvbuf(stdout, NULL, _IONBF, 0);
	avoid_being_init();
	printf("proctree_stress: seed=%llu ops=%ld seconds=%ld max-procs=%d\n",
	       opt_seed, opt_ops, opt_seconds, opt_max);

	ctl_pid = getpid();
	ctl_pgid = getpgrp();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		perror("proctree_stress: PR_SET_CHILD_SUBREAPER");
		return 2;
	}
	/* Clone children with exit_signal SIGUSR2 signal us; not fatal. */
	signal(SIGUSR2, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, watchdog_fired);
	setup_pipes();
	if (pthread_create(&forker, NULL, forker_thread, NULL)) {
		fprintf(stderr, "proctree_stress: pthread_create failed\n");
		return 2;
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (op_no = 0; op_no < opt_ops; op_no++) {
		alarm(opt_watchdog);
		run_one_op();
		if (opt_seconds && !(op_no % 16) &&
		    seconds_since(&t0) >= opt_seconds)
			break;
	}
	finish();
	alarm(0);
	printf("proctree_stress: %ld processes (%ld reaped), %ld waits, %ld reports, %.2f s\n",
	       n_spawned, n_reaped, n_waits, n_reports, seconds_since(&t0));
	printf("proctree_stress: seed=%llu ops=%ld ok\n", opt_seed, op_no);
	return 0;
}
