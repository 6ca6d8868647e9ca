// SPDX-License-Identifier: GPL-2.0
/*
 * wait_fuzz: a differential fuzzer for wait() on process trees.
 *
 * fastreap rewrites how __do_wait() finds children for P_ALL and P_PGID
 * waits and leaves P_PID alone, so P_PID is a free oracle: for the same
 * flags and the same waiting thread, waitid(P_ALL) must agree with the
 * union of waitid(P_PID, pid) over every pid that could be a child or a
 * tracee of the waiter, and waitid(P_PGID, g) with the union over the
 * pids in group g:
 *
 *  - ECHILD iff every P_PID answer is ECHILD (P_PID of a non-child is
 *    ECHILD too, so any non-ECHILD P_PID answer forbids ECHILD);
 *  - 0 with si_pid == 0 iff no P_PID answer reports anything;
 *  - otherwise (si_pid, si_code, si_status) equal to one P_PID report.
 *
 * Every query uses WNOHANG|WNOWAIT, so nothing is consumed, and is made
 * between two rounds of P_PID queries: if those differ the tree was not
 * quiescent and the query is redone, so a verdict never rests on a race.
 *
 * A tree is built from a seed: the test process has four threads
 * (W0 = main, W1..W3) that fork children (fork, clone3 with exit_signal
 * SIGUSR2 or 0), children fork grandchildren (also with CLONE_PARENT),
 * processes have one to three threads and join new or existing process
 * groups.  Random operations then trace (PTRACE_SEIZE, with fork/clone/
 * exec/exit options, or PTRACE_ATTACH, by a thread of the real parent's
 * group or by another process; PTRACE_TRACEME), interrupt, continue,
 * listen, detach, group-stop, SIGCONT, kill, exit single threads
 * (delayed zombie leaders, traced zombie threads), exit groups, exec
 * from any thread, move processes between groups (themselves, or their
 * parent moves them, zombies too), set SIGCHLD to
 * SIG_IGN or SA_NOCLDWAIT, consume reports as tracer or parent, and let
 * a forking thread of the test exit (its children pass to a sibling
 * thread); orphans come back to the test, a subreaper.  After each
 * operation the tree settles: every thread in /proc is sleeping (or in
 * D, as an exec waiting for a traced sibling), stopped, traced or a
 * zombie, unchanged over several samples, after
 * op-specific syncs that poll waitid(P_PID, WNOWAIT); the test's threads
 * then compare a few flag sets.
 *
 * At the end every thread of the test and some threads of children with
 * children or tracees of their own compare P_ALL/P_PGID with the P_PID
 * union for 42 flag sets (WEXITED, WSTOPPED, WCONTINUED; none/__WCLONE/
 * __WALL; with and without __WNOTHREAD).  A few consuming waits (WNOHANG
 * without WNOWAIT), blocking waitid()s and blocking wait4()s follow where
 * the union says the call must return at once (a timer signal after
 * GUARD_MS makes a hang a failure), each followed by another round.
 *
 * Wake-ups: some operations run while a thread of the test sleeps in a
 * blocking WNOWAIT wait (no __WNOTHREAD, whose wake-ups stock filters by
 * the notifying task's parent); if it still sleeps WAKE_MS after the
 * tree settled while the union reports, it missed its wake-up.  The
 * same at teardown, which kills everything and has W1 reap it with
 * blocking P_ALL waits while W0 watches the union.
 *
 * Worker threads of all processes run a small command loop on a futex
 * in shared memory (a memfd, so exec'd workers find it again), so the
 * test can make any thread of any process fork, ptrace, wait, exec, exit
 * or compare.  A worker that finds the test gone (the "life" pipe at
 * EOF) exits.
 *
 * Options (after the harness' own): --seed N (first seed, default 1),
 * --seeds N (how many, default 48), --seconds S (stop starting seeds
 * after S seconds, default 40), --verbose (print every operation).
 * The same from the environment: WAIT_FUZZ_SEED, WAIT_FUZZ_SEEDS,
 * WAIT_FUZZ_SECONDS, WAIT_FUZZ_VERBOSE.  A failing seed prints its
 * operation log and a replay command.
 */
#include "wait_util.h"

#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <time.h>
#include <dirent.h>

#ifndef PTRACE_LISTEN
#define PTRACE_LISTEN 0x4208
#endif
#ifndef PTRACE_INTERRUPT
#define PTRACE_INTERRUPT 0x4207
#endif
#ifndef PTRACE_SEIZE
#define PTRACE_SEIZE 0x4206
#endif

#define MAXP		20	/* processes in a tree; slot 0 is the test */
#define MAXT		4	/* threads per process */
#define NAGENTS		4	/* threads of the test: W0 (main), W1..W3 */
#define MAXCAND		(MAXP * MAXT)
#define MAXGROUPS	(MAXP + 2)
#define MSGMAX		(128 * 1024)

#define GUARD_MS	5000	/* a blocking wait that must return */
#define ACK_MS		60000	/* a worker must answer a command */
#define SETTLE_MS	30000	/* the tree must become quiescent */
#define SYNC_MS		5000	/* op-specific syncs, best effort */
#define WAKE_MS		3000	/* asleep in a wait while it could report */

/* Default run: sized for a 2-vCPU TCG guest (10-50x slower). */
#define DEF_SEEDS	48
#define DEF_SECONDS	40

enum kind { K_FORK, K_CLONE_SIG, K_CLONE_0, K_CLONE_PARENT };
static const char *const kind_name[] = { "fork", "clone3/SIGUSR2",
					 "clone3/0", "clone3/CLONE_PARENT" };

/* pgid request at creation */
#define PG_INHERIT	(-1)
#define PG_NEW		0

/* ------------------------------------------------------------------ */
/* Shared memory: command slots for every thread of every process.     */

struct ans {
	long ret;
	int err;
	pid_t pid;
	int code;
	int status;
};

struct tslot {
	int cmd;		/* futex: bumped to post a command */
	int ack;		/* futex: set to cmd when it is done */
	int op;
	long arg[6];
	long ret;
	int err;
	struct ans res;
	pid_t tid;		/* 0 until the thread runs */
};

struct pslot {
	pid_t pid;
	int nthreads;
	int pgid_err;
	int execs;		/* bumped by each new image (OP_EXEC) */
	int cps, cti;		/* the thread that forked it */
	struct tslot t[MAXT];
};

struct shm {
	struct pslot p[MAXP];
	int nprocs;
	/* comparison inputs, set by the test before OP_COMPARE */
	int ncand;
	pid_t cand[MAXCAND];
	int ngroups;
	pid_t groups[MAXGROUPS];
	unsigned long seed;
	/* comparison outputs */
	int checks;		/* comparisons made */
	int unstable;		/* gave up: the P_PID union kept changing */
	int nmsg;
	int msglen;
	char msg[MSGMAX];
};

static struct shm *S;
static int shm_fd = -1;		/* a memfd, so that exec'd workers find S */
static int life_pipe[2] = { -1, -1 };

enum op {
	OP_NOP,
	OP_FORK,	/* new slot, kind, pgid request, threads */
	OP_PTRACE,	/* request, tid, data */
	OP_WAITID,	/* idtype, id, flags: one waitid into res */
	OP_SYNC,	/* tid, flags, ms: poll P_PID until it reports */
	OP_TRACEME,	/* signal to raise after the ack, or 0 */
	OP_EXIT,	/* code: this thread alone */
	OP_EXIT_GROUP,	/* code */
	OP_SETPGID,	/* pgid (0: a new group), pid (0: this process) */
	OP_COMPARE,	/* flag-set mask (low), mask (high), round */
	OP_CONSUME,	/* flags, how, pgid or -1 */
	OP_EXEC,	/* re-exec this binary as a worker (no ack if it works) */
	OP_SIGCHLD,	/* 0: SIG_DFL, 1: SIG_IGN, 2: SA_NOCLDWAIT */
	OP_UNION,	/* flags, pgid or -1: what the P_PID union says */
	OP_BLOCKWAIT,	/* flags, pgid or -1: blocking WNOWAIT wait, then OP_UNION */
};

enum { POST_NONE, POST_EXIT, POST_EXIT_GROUP, POST_RAISE };

/* ------------------------------------------------------------------ */
/* Small helpers.                                                      */

static long futex(int *uaddr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void nap_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static void noop_handler(int sig)
{
	(void)sig;
}

/* xorshift64*: the tree depends on the seed only. */
static uint64_t rng;

static void rng_seed(unsigned long seed)
{
	rng = (seed + 1) * 0x9E3779B97F4A7C15ULL;
	if (!rng)
		rng = 1;
}

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ULL;
}

static int rn(int n)
{
	return n > 0 ? (int)(rnd() % n) : 0;
}

static bool chance(int pct)
{
	return rn(100) < pct;
}

/* /proc/PID/task/TID/stat: state, ppid, pgrp.  False if gone. */
static bool proc_stat(pid_t pid, pid_t tid, char *state, pid_t *ppid,
		      pid_t *pgrp)
{
	char buf[512], *p;
	int pp, pg;
	char st;

	if (proc_task_read(pid, tid, "stat", buf, sizeof(buf)) <= 0)
		return false;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d %d", &st, &pp, &pg) != 3)
		return false;
	if (state)
		*state = st;
	if (ppid)
		*ppid = pp;
	if (pgrp)
		*pgrp = pg;
	return true;
}

static char tstate(pid_t pid, pid_t tid)
{
	char st;

	return proc_stat(pid, tid, &st, NULL, NULL) ? st : '-';
}

/*
 * TracerPid of thread @tid of @pid: the tracer's thread id (not its
 * tgid), 0 if none, -1 if gone.
 */
static pid_t tracer_of(pid_t pid, pid_t tid)
{
	char buf[2048], *p;

	if (proc_task_read(pid, tid, "status", buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "TracerPid:");
	return p ? atoi(p + 10) : -1;
}

/* ------------------------------------------------------------------ */
/* Naming, for messages.                                               */

static void tname(int ps, int ti, char *buf, size_t n)
{
	if (ps == 0)
		snprintf(buf, n, "W%d", ti);
	else
		snprintf(buf, n, "k%d.%d", ps, ti);
}

/* "k3" for a process' pid, "k3.1" for a thread, "W2" for our threads. */
static void pidname(pid_t pid, char *buf, size_t n)
{
	for (int ps = 0; ps < S->nprocs; ps++) {
		for (int ti = 0; ti < MAXT; ti++) {
			if (S->p[ps].t[ti].tid != pid)
				continue;
			if (ps && ti == 0)
				snprintf(buf, n, "k%d(%d)", ps, pid);
			else if (ps)
				snprintf(buf, n, "k%d.%d(%d)", ps, ti, pid);
			else
				snprintf(buf, n, "W%d(%d)", ti, pid);
			return;
		}
	}
	snprintf(buf, n, "%d", pid);
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case 0: return "0";
	case SIGSTOP: return "SIGSTOP";
	case SIGTSTP: return "SIGTSTP";
	case SIGCONT: return "SIGCONT";
	case SIGKILL: return "SIGKILL";
	case SIGTERM: return "SIGTERM";
	case SIGUSR1: return "SIGUSR1";
	case SIGTRAP: return "SIGTRAP";
	}
	return "SIG?";
}

static const char *code_name(int code)
{
	switch (code) {
	case CLD_EXITED: return "EXITED";
	case CLD_KILLED: return "KILLED";
	case CLD_DUMPED: return "DUMPED";
	case CLD_TRAPPED: return "TRAPPED";
	case CLD_STOPPED: return "STOPPED";
	case CLD_CONTINUED: return "CONTINUED";
	}
	return "?";
}

static void ans_str(const struct ans *a, char *buf, size_t n)
{
	char who[32];

	if (a->ret < 0) {
		if (a->err == ECHILD)
			snprintf(buf, n, "ECHILD");
		else if (a->err == EINTR)
			snprintf(buf, n, "EINTR(hang)");
		else
			snprintf(buf, n, "errno %d", a->err);
	} else if (!a->pid) {
		snprintf(buf, n, "none");
	} else {
		pidname(a->pid, who, sizeof(who));
		snprintf(buf, n, "%s %s/%d", who, code_name(a->code),
			 a->status);
	}
}

static void flags_str(int f, char *buf, size_t n)
{
	static const struct { int bit; const char *name; } names[] = {
		{ WEXITED, "WEXITED" }, { WSTOPPED, "WSTOPPED" },
		{ WCONTINUED, "WCONTINUED" }, { __WCLONE, "__WCLONE" },
		{ __WALL, "__WALL" }, { __WNOTHREAD, "__WNOTHREAD" },
		{ WNOHANG, "WNOHANG" }, { WNOWAIT, "WNOWAIT" },
	};
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((f & names[i].bit) && len < n)
			len += snprintf(buf + len, n - len, "%s%s",
					len ? "|" : "", names[i].name);
}

/* Append a line to the shared message buffer (any process). */
static void __attribute__((format(printf, 1, 2))) shm_msg(const char *fmt,
							   ...)
{
	va_list ap;
	int room = MSGMAX - S->msglen - 2;
	int n;

	S->nmsg++;
	if (room < 64)
		return;
	va_start(ap, fmt);
	n = vsnprintf(S->msg + S->msglen, room, fmt, ap);
	va_end(ap);
	if (n >= room)
		n = room - 1;
	S->msglen += n;
	S->msg[S->msglen++] = '\n';
	S->msg[S->msglen] = '\0';
}

/* ------------------------------------------------------------------ */
/* Waits.                                                              */

static void do_waitid(int type, pid_t id, int flags, struct ans *a)
{
	siginfo_t si;

	/* Poison: a report or a "none" must overwrite it all. */
	memset(&si, 0x5a, sizeof(si));
	a->ret = sys_waitid(type, id, &si, flags, NULL);
	a->err = a->ret < 0 ? errno : 0;
	a->pid = a->code = a->status = 0;
	if (a->ret == 0) {
		a->pid = si.si_pid;
		a->code = si.si_code;
		a->status = si.si_status;
	}
}

/* A timer that interrupts the calling thread (SIGURG) after @ms. */
static timer_t guard_arm(int ms)
{
	struct sigevent sev;
	struct itimerspec its = {
		.it_value = { ms / 1000, (ms % 1000) * 1000000L },
		.it_interval = { 0, 100 * 1000000L },
	};
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGURG;
	sev._sigev_un._tid = sys_gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &t))
		return (timer_t)0;
	timer_settime(t, 0, &its, NULL);
	return t;
}

static void guard_disarm(timer_t t)
{
	if (t)
		timer_delete(t);
}

/* Poll waitid(P_PID, @tid, WNOHANG|WNOWAIT) until it reports. */
static long do_sync(pid_t tid, int flags, int ms)
{
	double end = now_ms() + ms;
	struct ans a;

	for (int i = 0;; i++) {
		do_waitid(P_PID, tid, flags | WNOHANG | WNOWAIT, &a);
		if (a.ret < 0)
			return -a.err;
		if (a.pid)
			return 1;
		if (now_ms() > end)
			return 0;
		if (i % 64 == 63)
			nap_us(1000);
		else
			sched_yield();
	}
}

/* ------------------------------------------------------------------ */
/* The comparison, run in the waiting thread (of any process).         */

#define NCOMBO 42

static int combo_flags(int k)
{
	static const int ev[7] = {
		WEXITED, WSTOPPED, WCONTINUED, WEXITED | WSTOPPED,
		WEXITED | WCONTINUED, WSTOPPED | WCONTINUED,
		WEXITED | WSTOPPED | WCONTINUED,
	};
	static const int cl[3] = { 0, __WCLONE, __WALL };

	return ev[k / 6] | cl[(k / 2) % 3] | ((k & 1) ? __WNOTHREAD : 0);
}

struct uview {
	int n;
	struct ans a[MAXCAND];
	pid_t pg[MAXCAND];	/* process group of each candidate, -1 gone */
};

static void union_query(struct uview *u, int flags)
{
	u->n = S->ncand;
	for (int i = 0; i < u->n; i++)
		do_waitid(P_PID, S->cand[i], flags, &u->a[i]);
}

static void union_groups(struct uview *u)
{
	for (int i = 0; i < S->ncand; i++)
		u->pg[i] = getpgid(S->cand[i]);
}

static bool ans_eq(const struct ans *a, const struct ans *b)
{
	return a->ret == b->ret && a->err == b->err && a->pid == b->pid &&
	       a->code == b->code && a->status == b->status;
}

static bool union_eq(const struct uview *a, const struct uview *b)
{
	for (int i = 0; i < a->n; i++)
		if (!ans_eq(&a->a[i], &b->a[i]))
			return false;
	return true;
}

/*
 * Is @got what a wait over the candidates in group @g (-1: all) may
 * answer, given the P_PID answers @u?  @blocking: "none" is impossible.
 */
static bool verdict(const struct uview *u, pid_t g, const struct ans *got,
		    bool wait4_style)
{
	bool any = false;
	int nrep = 0;

	for (int i = 0; i < u->n; i++) {
		if (g != -1 && u->pg[i] != g)
			continue;
		if (u->a[i].ret == 0) {
			any = true;
			if (u->a[i].pid)
				nrep++;
		}
	}
	if (!any)
		return got->ret < 0 && got->err == ECHILD;
	if (got->ret < 0)
		return false;
	if (!nrep)
		return got->pid == 0 && got->code == 0 && got->status == 0;
	for (int i = 0; i < u->n; i++) {
		const struct ans *a = &u->a[i];

		if (g != -1 && u->pg[i] != g)
			continue;
		if (a->ret || !a->pid || a->pid != got->pid)
			continue;
		if (wait4_style)	/* status word: pid is what counts */
			return true;
		if (a->code == got->code && a->status == got->status)
			return true;
	}
	return false;
}

/* Is @pid in /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)? */
static int in_children(pid_t pid, pid_t tid, pid_t child)
{
	char buf[4096], *p;

	/* An empty list (no children) is an answer too. */
	if (proc_task_read(pid, tid, "children", buf, sizeof(buf)) < 0)
		return -1;
	for (p = buf; *p; ) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v == child)
			return 1;
		p = end;
	}
	return 0;
}

/*
 * " [child of W1, traced by W2]": the thread @tid (a leader: its
 * process) is a child of, from /proc/.../children where the kernel has
 * it, else "forked by" its creator; and who traces it.
 */
static void relation(pid_t tid, char *buf, size_t n)
{
	char by[24] = "", tr[32] = "";
	bool child_of = false;
	pid_t t = 0;

	for (int ps = 1; ps < S->nprocs; ps++)
		for (int ti = 0; ti < MAXT; ti++) {
			if (S->p[ps].t[ti].tid != tid)
				continue;
			t = tracer_of(S->p[ps].pid, tid);
			if (ti)
				continue;
			tname(S->p[ps].cps, S->p[ps].cti, by, sizeof(by));
			for (int q = 0; q < S->nprocs && !child_of; q++)
				for (int j = 0; j < MAXT && !child_of; j++)
					if (S->p[q].t[j].tid > 0 &&
					    in_children(q ? S->p[q].pid :
							getpid(),
							S->p[q].t[j].tid,
							tid) == 1) {
						tname(q, j, by, sizeof(by));
						child_of = true;
					}
		}
	if (t > 0)
		pidname(t, tr, sizeof(tr));
	if (by[0] && tr[0])
		snprintf(buf, n, " [%s %s, traced by %s]",
			 child_of ? "child of" : "forked by", by, tr);
	else if (by[0])
		snprintf(buf, n, " [%s %s]", child_of ? "child of" :
			 "forked by", by);
	else if (tr[0])
		snprintf(buf, n, " [traced by %s]", tr);
	else
		buf[0] = '\0';
}

/* One line: the P_PID union (non-ECHILD answers) for group @g. */
static void union_str(const struct uview *u, pid_t g, char *buf, size_t n)
{
	size_t len = 0;
	char one[96], who[32];

	len += snprintf(buf, n, "{");
	for (int i = 0; i < u->n && len < n; i++) {
		if (g != -1 && u->pg[i] != g)
			continue;
		if (u->a[i].ret != 0)
			continue;
		if (u->a[i].pid) {
			char rel[64];

			ans_str(&u->a[i], one, sizeof(one));
			relation(S->cand[i], rel, sizeof(rel));
			strncat(one, rel, sizeof(one) - strlen(one) - 1);
		} else {
			pidname(S->cand[i], who, sizeof(who));
			snprintf(one, sizeof(one), "%s none", who);
		}
		len += snprintf(buf + len, n - len, "%s%s", len > 1 ? ", " : "",
				one);
	}
	if (len < n)
		snprintf(buf + len, n - len, "}");
}

static void report(int ps, int ti, const char *what, int flags, pid_t g,
		   const struct ans *got, const struct uview *u)
{
	char fl[128], gs[48], ga[64], us[1024], me[24];

	tname(ps, ti, me, sizeof(me));
	flags_str(flags, fl, sizeof(fl));
	ans_str(got, ga, sizeof(ga));
	union_str(u, g, us, sizeof(us));
	if (g == -1)
		snprintf(gs, sizeof(gs), "%s", what);
	else
		snprintf(gs, sizeof(gs), "%s %d", what, g);
	shm_msg("MISMATCH waiter %s(%d) %s %s: got %s; P_PID union %s",
		me, sys_gettid(), gs, fl, ga, us);
}

/* P_PID answers must be 0 or ECHILD, and report the pid asked for. */
static int check_pid_answers(int ps, int ti, int flags, const struct uview *u)
{
	char fl[128], a[64], me[24], who[32];

	for (int i = 0; i < u->n; i++) {
		const struct ans *x = &u->a[i];

		if ((x->ret < 0 && x->err != ECHILD) ||
		    (x->ret == 0 && x->pid && x->pid != S->cand[i])) {
			tname(ps, ti, me, sizeof(me));
			flags_str(flags, fl, sizeof(fl));
			ans_str(x, a, sizeof(a));
			pidname(S->cand[i], who, sizeof(who));
			shm_msg("BAD P_PID waiter %s %s P_PID %s: %s", me, fl,
				who, a);
			return 1;
		}
	}
	return 0;
}

static pid_t pgid_arg(int gi)
{
	return S->groups[gi];
}

/* The group a P_PGID id stands for (0: the caller's). */
static pid_t pgid_real(pid_t id)
{
	return id ? id : getpgrp();
}

static int compare_flags(int ps, int ti, int flags)
{
	static struct uview u1, u2;	/* one command at a time per process */
	struct ans all, pg[MAXGROUPS];
	int fails = 0;

	for (int attempt = 0; attempt < 6; attempt++) {
		union_groups(&u1);
		union_query(&u1, flags);
		do_waitid(P_ALL, 0, flags, &all);
		for (int g = 0; g < S->ngroups; g++)
			do_waitid(P_PGID, pgid_arg(g), flags, &pg[g]);
		union_query(&u2, flags);
		memcpy(u2.pg, u1.pg, sizeof(u1.pg));
		if (!union_eq(&u1, &u2)) {
			for (int i = 0; i < 10 * (attempt + 1); i++)
				sched_yield();
			nap_us(1000 << attempt);
			continue;
		}
		S->checks++;
		fails += check_pid_answers(ps, ti, flags, &u1);
		if (!verdict(&u1, -1, &all, false)) {
			report(ps, ti, "P_ALL", flags, -1, &all, &u1);
			fails++;
		}
		for (int g = 0; g < S->ngroups; g++) {
			pid_t real = pgid_real(pgid_arg(g));

			if (verdict(&u1, real, &pg[g], false))
				continue;
			report(ps, ti, pgid_arg(g) ? "P_PGID" : "P_PGID 0 =",
			       flags, real, &pg[g], &u1);
			fails++;
		}
		return fails;
	}
	S->unstable++;
	return 0;
}

static int do_compare(int ps, int ti, uint64_t mask)
{
	int fails = 0;

	for (int k = 0; k < NCOMBO; k++)
		if (mask >> k & 1)
			fails += compare_flags(ps, ti,
					       combo_flags(k) | WNOHANG | WNOWAIT);
	return fails;
}

/*
 * A wait that may consume or block, checked against the P_PID union just
 * before it.  @how: 0 consuming waitid WNOHANG; 1 blocking waitid WNOWAIT;
 * 2 blocking (or WNOHANG) wait4, consuming.  @g: -1 for P_ALL/wait4(-1),
 * else a P_PGID id / wait4(-g) (0: the caller's group).  Blocking only
 * where the union says the call must return at once.
 */
enum { CONS_WNOHANG, CONS_BLOCK_WAITID, CONS_WAIT4 };
static const char *const cons_name[] = { "consuming waitid",
					 "blocking waitid", "wait4" };

static int do_consume(int ps, int ti, int flags, int how, pid_t g)
{
	static struct uview u;
	pid_t real = g == -1 ? -1 : pgid_real(g);
	char fl[128], me[24], ga[64], us[1024], what[48];
	bool any = false, rep = false;
	struct ans got;
	timer_t t = 0;

	if (how == CONS_WAIT4)	/* wait4 always waits for exits */
		flags |= WEXITED;
	union_groups(&u);
	union_query(&u, (flags & ~WNOHANG) | WNOHANG | WNOWAIT);
	for (int i = 0; i < u.n; i++) {
		if (real != -1 && u.pg[i] != real)
			continue;
		if (u.a[i].ret == 0) {
			any = true;
			rep |= u.a[i].pid != 0;
		}
	}
	S->checks++;
	if (how == CONS_WNOHANG) {
		do_waitid(g == -1 ? P_ALL : P_PGID, g == -1 ? 0 : g,
			  flags | WNOHANG, &got);
	} else {
		bool block = rep || !any;
		int f = flags & ~WNOHANG;

		if (!block)
			f |= WNOHANG;
		if (block)
			t = guard_arm(GUARD_MS);
		if (how == CONS_BLOCK_WAITID) {
			do_waitid(g == -1 ? P_ALL : P_PGID, g == -1 ? 0 : g,
				  f | WNOWAIT, &got);
		} else {
			int st = 0;
			int o = (f & (__WCLONE | __WALL | __WNOTHREAD |
				      WNOHANG | WCONTINUED)) |
				((f & WSTOPPED) ? WUNTRACED : 0);

			got.ret = sys_wait4(g == -1 ? -1 : -g, &st, o, NULL);
			got.err = got.ret < 0 ? errno : 0;
			got.pid = got.ret > 0 ? got.ret : 0;
			got.code = got.status = 0;
			if (got.ret > 0)
				wu_decode(st, &got.code, &got.status);
			if (got.ret >= 0)
				got.ret = 0;
		}
		guard_disarm(t);
	}
	S->p[ps].t[ti].res = got;
	if (verdict(&u, real, &got, how == CONS_WAIT4))
		return 0;
	tname(ps, ti, me, sizeof(me));
	flags_str(flags, fl, sizeof(fl));
	ans_str(&got, ga, sizeof(ga));
	union_str(&u, real, us, sizeof(us));
	if (g == -1)
		snprintf(what, sizeof(what), "%s P_ALL", cons_name[how]);
	else
		snprintf(what, sizeof(what), "%s P_PGID %d", cons_name[how], g);
	shm_msg("%s waiter %s(%d) %s %s: got %s; P_PID union %s",
		got.ret < 0 && got.err == EINTR ? "HANG" : "MISMATCH",
		me, sys_gettid(), what, fl, ga, us);
	return 1;
}

/* What a wait by this thread with @flags over group @g would do. */
enum { U_ECHILD, U_REPORT, U_BLOCK };

static int union_class(int flags, pid_t g)
{
	static struct uview u;
	pid_t real = g == -1 ? -1 : pgid_real(g);
	bool any = false, rep = false;

	union_groups(&u);
	union_query(&u, (flags & ~WNOHANG) | WNOHANG | WNOWAIT);
	for (int i = 0; i < u.n; i++) {
		if (real != -1 && u.pg[i] != real)
			continue;
		if (u.a[i].ret == 0) {
			any = true;
			rep |= u.a[i].pid != 0;
		}
	}
	return !any ? U_ECHILD : rep ? U_REPORT : U_BLOCK;
}

/*
 * A blocking WNOWAIT wait that the test interrupts (SIGURG) if it is
 * still asleep once an operation made the tree settle; then what the
 * union says.  Interrupted while the union reports: a lost wake-up.
 */
static long do_blockwait(struct tslot *s, int flags, pid_t g)
{
	do_waitid(g == -1 ? P_ALL : P_PGID, g == -1 ? 0 : g,
		  (flags & ~WNOHANG) | WNOWAIT, &s->res);
	return union_class(flags, g);
}

/* ------------------------------------------------------------------ */
/* Worker threads: a command loop on a futex.                          */

static void thread_loop(int ps, int ti) __attribute__((noreturn));
static void *thread_main(void *arg);

static int start_thread(int ps, int ti)
{
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &attr, thread_main,
			     (void *)(intptr_t)(ps * 16 + ti));
	pthread_attr_destroy(&attr);
	return ret;
}

static void kid_main(int ps, pid_t pgid_req, int nthreads)
	__attribute__((noreturn));

static void kid_main(int ps, pid_t pgid_req, int nthreads)
{
	struct pslot *p = &S->p[ps];

	/* Only the test holds the life pipe's write end. */
	if (life_pipe[1] >= 0) {
		close(life_pipe[1]);
		life_pipe[1] = -1;
	}
	p->pid = getpid();
	if (pgid_req != PG_INHERIT)
		p->pgid_err = setpgid(0, pgid_req) ? errno : 0;
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	for (int i = 1; i < nthreads; i++)
		if (start_thread(ps, i))
			_exit(WU_CHILD_FAIL);
	thread_loop(ps, 0);
}

static pid_t do_fork(int nps, int kind, pid_t pgid_req, int nthreads)
{
	pid_t pid;

	if (kind == K_FORK) {
		pid = fork();
	} else {
		struct clone_args ca;

		memset(&ca, 0, sizeof(ca));
		ca.exit_signal = kind == K_CLONE_SIG ? SIGUSR2 : 0;
		/* a sibling: our parent's child, with our exit signal */
		if (kind == K_CLONE_PARENT)
			ca.flags = CLONE_PARENT;
		pid = sys_clone3(&ca);
	}
	if (pid == 0)
		kid_main(nps, pgid_req, nthreads);
	return pid;
}

static int run_op(int ps, int ti, struct tslot *s)
{
	long *a = s->arg;

	s->ret = 0;
	s->err = 0;
	switch (s->op) {
	case OP_NOP:
		break;
	case OP_FORK:
		s->ret = do_fork(a[0], a[1], a[2], a[3]);
		s->err = s->ret < 0 ? errno : 0;
		break;
	case OP_PTRACE:
		s->ret = ptrace(a[0], (pid_t)a[1], 0, a[2]);
		s->err = s->ret < 0 ? errno : 0;
		break;
	case OP_WAITID:
		do_waitid(a[0], a[1], a[2], &s->res);
		s->ret = s->res.ret;
		s->err = s->res.err;
		break;
	case OP_SYNC:
		s->ret = do_sync(a[0], a[1], a[2]);
		break;
	case OP_TRACEME:
		s->ret = ptrace(PTRACE_TRACEME, 0, 0, 0);
		s->err = s->ret < 0 ? errno : 0;
		if (!s->ret && a[0])
			return POST_RAISE;
		break;
	case OP_EXIT:
		return POST_EXIT;
	case OP_EXIT_GROUP:
		return POST_EXIT_GROUP;
	case OP_SETPGID:
		s->ret = setpgid(a[1], a[0]);
		s->err = s->ret < 0 ? errno : 0;
		break;
	case OP_COMPARE:
		s->ret = do_compare(ps, ti, (uint64_t)a[0] |
					    ((uint64_t)a[1] << 32));
		break;
	case OP_CONSUME:
		s->ret = do_consume(ps, ti, a[0], a[1], a[2]);
		break;
	case OP_EXEC: {
		char fd[16], life[16], slot[16];
		char *argv[] = { "wait_fuzz", "--worker", fd, life, slot,
				 NULL };

		snprintf(fd, sizeof(fd), "%d", shm_fd);
		snprintf(life, sizeof(life), "%d", life_pipe[0]);
		snprintf(slot, sizeof(slot), "%d", ps);
		/* thread-self: /proc/self/exe is gone once the leader exited */
		execv("/proc/thread-self/exe", argv);
		s->ret = -1;
		s->err = errno;
		break;
	}
	case OP_UNION:
		s->ret = union_class(a[0], a[1]);
		break;
	case OP_BLOCKWAIT:
		s->ret = do_blockwait(s, a[0], a[1]);
		break;
	case OP_SIGCHLD: {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = a[0] == 1 ? SIG_IGN : SIG_DFL;
		sa.sa_flags = a[0] == 2 ? SA_NOCLDWAIT : 0;
		s->ret = sigaction(SIGCHLD, &sa, NULL);
		s->err = s->ret < 0 ? errno : 0;
		break;
	}
	}
	return POST_NONE;
}

/* The test is gone (life pipe at EOF): do not linger. */
static void life_check(void)
{
	struct pollfd pfd = { .fd = life_pipe[0], .events = POLLIN };

	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLIN)))
		syscall(SYS_exit_group, WU_ORPHANED);
}

static void thread_loop(int ps, int ti)
{
	struct tslot *s = &S->p[ps].t[ti];
	int seen = __atomic_load_n(&s->cmd, __ATOMIC_ACQUIRE);

	__atomic_store_n(&s->tid, sys_gettid(), __ATOMIC_RELEASE);
	for (;;) {
		int c = __atomic_load_n(&s->cmd, __ATOMIC_ACQUIRE);
		struct timespec ts = { 5, 0 };
		long arg0;
		int post;

		if (c == seen) {
			if (futex(&s->cmd, FUTEX_WAIT, c, &ts) &&
			    errno == ETIMEDOUT && ps)
				life_check();
			continue;
		}
		seen = c;
		post = run_op(ps, ti, s);
		arg0 = s->arg[0];
		__atomic_store_n(&s->ack, c, __ATOMIC_RELEASE);
		futex(&s->ack, FUTEX_WAKE, INT_MAX, NULL);
		switch (post) {
		case POST_EXIT:
			syscall(SYS_exit, arg0);
			break;
		case POST_EXIT_GROUP:
			syscall(SYS_exit_group, arg0);
			break;
		case POST_RAISE:
			syscall(SYS_tgkill, getpid(), sys_gettid(), arg0);
			break;
		}
	}
}

static void *thread_main(void *arg)
{
	int v = (int)(intptr_t)arg;

	thread_loop(v / 16, v % 16);
}

/* ------------------------------------------------------------------ */
/* The controller (the test's main thread, which is also W0).          */

static unsigned long cur_seed;
static bool verbose;
static int setup_errors;	/* infrastructure trouble this seed */
static char oplog[64 * 1024];
static size_t oplog_len;

static void __attribute__((format(printf, 1, 2))) logf_(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (verbose)
		fprintf(stderr, "#   %s\n", line);
	if (oplog_len + strlen(line) + 8 < sizeof(oplog))
		oplog_len += snprintf(oplog + oplog_len,
				      sizeof(oplog) - oplog_len, "#   %s\n",
				      line);
}

static void setup_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void setup_error(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	setup_errors++;
	logf_("SETUP ERROR: %s", line);
	shm_msg("SETUP ERROR: %s", line);
}

static bool fatal;	/* a worker of the test is stuck: stop the run */
static int busy_ps = -1, busy_ti = -1;	/* a blocked waiter: hands off */
static int busy_c;			/* its command number */
static bool busy_aborted;		/* it had to be let go early */
static char kstate(int ps, int ti);

/* Can thread (ps, ti) take a command now? */
static bool idle(int ps, int ti)
{
	return kstate(ps, ti) == 'S' && !(ps == busy_ps && ti == busy_ti);
}
static void unstick_thread(pid_t pid, pid_t tid);

/* The slot and thread of a tid of ours or of a kid; false if unknown. */
static bool slot_of_tid(pid_t tid, int *ps, int *ti)
{
	for (int p = 0; p < S->nprocs; p++)
		for (int t = 0; t < MAXT; t++)
			if (tid > 0 && S->p[p].t[t].tid == tid) {
				*ps = p;
				*ti = t;
				return true;
			}
	return false;
}


/* Post @op to thread (ps, ti), not W0; returns the command number. */
static int tpost(int ps, int ti, int op, long a0, long a1, long a2, long a3)
{
	struct tslot *s = &S->p[ps].t[ti];
	int c;

	s->op = op;
	s->arg[0] = a0;
	s->arg[1] = a1;
	s->arg[2] = a2;
	s->arg[3] = a3;
	c = s->cmd + 1;
	__atomic_store_n(&s->cmd, c, __ATOMIC_RELEASE);
	futex(&s->cmd, FUTEX_WAKE, INT_MAX, NULL);
	return c;
}

static bool tacked(int ps, int ti, int c)
{
	return __atomic_load_n(&S->p[ps].t[ti].ack, __ATOMIC_ACQUIRE) == c;
}

/* Have thread (ps, ti) run @op; its result is in S->p[ps].t[ti]. */
static long tcall(int ps, int ti, int op, long a0, long a1, long a2, long a3)
{
	struct tslot *s = &S->p[ps].t[ti];
	double end;
	int c;

	if (fatal)
		return -1000;
	if (ps == 0 && ti == 0) {
		s->op = op;
		s->arg[0] = a0;
		s->arg[1] = a1;
		s->arg[2] = a2;
		s->arg[3] = a3;
		run_op(0, 0, s);	/* W0 is us; it never exits */
		return s->ret;
	}
	c = tpost(ps, ti, op, a0, a1, a2, a3);
	if (op == OP_EXEC)	/* answers only if execv() fails */
		return 0;
	end = now_ms() + ACK_MS;
	for (int stopped = 0;;) {
		int ack = __atomic_load_n(&s->ack, __ATOMIC_ACQUIRE);
		struct timespec ts = { 0, 50 * 1000000L };
		char st = ps ? kstate(ps, ti) : 'S';

		if (ack == c)
			return s->ret;
		/*
		 * A worker caught in a ptrace stop (a fork/clone/exit event
		 * of PTRACE_O_TRACE*) is continued by its tracer; one that
		 * stopped otherwise or died will not answer.
		 */
		if (st == 't' && stopped % 8 == 7)
			unstick_thread(S->p[ps].pid, s->tid);
		if (strchr("tTZ-", st))
			stopped++;
		else
			stopped = 0;
		if (now_ms() > end || stopped > 100) {
			char me[24];

			tname(ps, ti, me, sizeof(me));
			setup_error("%s (tid %d) did not answer op %d", me,
				    s->tid, op);
			if (ps == 0)
				fatal = true;
			s->ret = -1000;
			return -1000;
		}
		futex(&s->ack, FUTEX_WAIT, ack, &ts);
	}
}

static int terr(int ps, int ti)
{
	return S->p[ps].t[ti].err;
}

/* Model kept by the controller, for choices and the log. */
struct kinfo {
	int kind;
	int cps, cti;		/* creator */
	bool seized[MAXT];	/* PTRACE_SEIZE'd by us (else ATTACH/TRACEME) */
};
static struct kinfo K[MAXP];

static pid_t pid_of(int ps)
{
	return ps ? S->p[ps].pid : getpid();
}

static pid_t tid_of(int ps, int ti)
{
	return S->p[ps].t[ti].tid;
}

static int slot_of_pid(pid_t pid)
{
	if (pid == getpid())
		return 0;
	for (int ps = 1; ps < S->nprocs; ps++)
		if (S->p[ps].pid == pid)
			return ps;
	return -1;
}

static char kstate(int ps, int ti)
{
	if (ps == 0)
		return 'S';
	if (!tid_of(ps, ti))
		return '-';
	return tstate(S->p[ps].pid, tid_of(ps, ti));
}

/* Threads of @ps that can take a command (sleeping in their loop). */

static int commandable(int ps, int *out)
{
	int n = 0;

	for (int ti = 0; ti < (ps ? S->p[ps].nthreads : NAGENTS); ti++)
		if (idle(ps, ti))
			out[n++] = ti;
	return n;
}

static bool pick_cmd_thread(int ps, int *ti)
{
	int c[MAXT], n = commandable(ps, c);

	if (!n)
		return false;
	*ti = c[rn(n)];
	return true;
}

/* Snapshot of every kid thread's state letter. */
static void snapshot(char *buf, size_t n)
{
	size_t len = 0;

	for (int ps = 1; ps < S->nprocs && len + MAXT + 2 < n; ps++) {
		for (int ti = 0; ti < S->p[ps].nthreads; ti++)
			buf[len++] = kstate(ps, ti);
		buf[len++] = ' ';
	}
	buf[len] = '\0';
}

/*
 * D counts as quiet once it holds over the samples: a thread that execs
 * waits killably in de_thread() for its siblings to die, and it waits
 * for good when one of them sits in a PTRACE_EVENT_EXIT stop that its
 * tracer never resumes (stock does the same, seed 221255).
 */
static bool snapshot_quiet(const char *s)
{
	for (; *s; s++)
		if (!strchr("STtZD- ", *s))
			return false;
	return true;
}

/*
 * Let the tree settle: every kid thread sleeping (also uninterruptibly,
 * see above), stopped, traced, a zombie or gone, and the same over
 * several samples.  The comparisons re-check stability themselves (two
 * P_PID rounds around each query).
 */
static bool settle(void)
{
	char prev[MAXP * (MAXT + 1) + 1] = "", cur[sizeof(prev)];
	double end = now_ms() + SETTLE_MS;
	int stable = 0;

	while (now_ms() < end) {
		snapshot(cur, sizeof(cur));
		if (snapshot_quiet(cur) && !strcmp(cur, prev))
			stable++;
		else
			stable = 0;
		if (stable >= 3)
			return true;
		memcpy(prev, cur, sizeof(prev));
		for (int i = 0; i < 4; i++)
			sched_yield();
		nap_us(stable ? 2000 : 500);
	}
	setup_error("tree did not settle: %s", cur);
	return false;
}

/* Wait until all threads of new kid @ps are up. */
/* Thread ids of process @pid, from /proc. */
static int proc_tids(pid_t pid, pid_t *out, int max)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max)
		if (d->d_name[0] != '.')
			out[n++] = atoi(d->d_name);
	closedir(dir);
	return n;
}

/*
 * Thread @tid of @pid sits in a ptrace stop where we need it running
 * (a worker in the middle of a command, a process being born traced):
 * its tracer, if one of our idle threads, continues it.
 */
/*
 * The blocked waiter of random_blocker() is the tracer of a thread we
 * need running: interrupt its wait, that check is off.
 */
static void release_blocker(void)
{
	double end = now_ms() + ACK_MS;

	syscall(SYS_tgkill, getpid(), tid_of(busy_ps, busy_ti), SIGURG);
	while (!tacked(busy_ps, busy_ti, busy_c) && now_ms() < end)
		nap_us(1000);
	logf_("  (W%d let go of its wait: its tracee is in the way)",
	      busy_ti);
	busy_aborted = true;
	busy_ps = busy_ti = -1;
}

static void unstick_thread(pid_t pid, pid_t tid)
{
	static int depth;
	char tn[24], yn[32];
	int tps, tti;
	pid_t tr;
	long r;

	if (depth || tstate(pid, tid) != 't')
		return;
	tr = tracer_of(pid, tid);
	if (!slot_of_tid(tr, &tps, &tti))
		return;
	if (tps == busy_ps && tti == busy_ti)
		release_blocker();
	/*
	 * A tracer in a group stop cannot continue its tracee (seed 21602,
	 * on stock as on the series): continue the tracer's process first,
	 * a SIGCONT that the checks that follow see like any other.
	 */
	if (tps > 0 && kstate(tps, tti) == 'T') {
		double end = now_ms() + 2000;

		tname(tps, tti, tn, sizeof(tn));
		logf_("  (SIGCONT to %s: a tracer stopped in the way -> %d)",
		      tn, kill(S->p[tps].pid, SIGCONT));
		while (kstate(tps, tti) == 'T' && now_ms() < end)
			nap_us(1000);
	}
	if (!idle(tps, tti))
		return;
	depth++;
	r = tcall(tps, tti, OP_PTRACE, PTRACE_CONT, tid, 0, 0);
	if (r && terr(tps, tti) == ESRCH) {
		/*
		 * An exec event of a non-leader (its pid changed): ptrace()
		 * wants the tracer to have waited for it first.
		 */
		tcall(tps, tti, OP_WAITID, P_PID, tid,
		      WSTOPPED | __WALL | WNOHANG, 0);
		r = tcall(tps, tti, OP_PTRACE, PTRACE_CONT, tid, 0, 0);
	}
	depth--;
	tname(tps, tti, tn, sizeof(tn));
	pidname(tid, yn, sizeof(yn));
	logf_("  (%s: CONT %s, stopped in the way -> %ld %s)", tn, yn, r,
	      r ? strerror(terr(tps, tti)) : "");
}

static void unstick_process(pid_t pid)
{
	pid_t tids[64];
	int n = proc_tids(pid, tids, 64);

	for (int i = 0; i < n; i++)
		unstick_thread(pid, tids[i]);
}

/* Wait until all threads of new kid @ps (pid @pid) are up. */
static bool kid_ready(int ps, pid_t pid, int nthreads)
{
	double end = now_ms() + ACK_MS;

	for (int i = 0;; i++) {
		bool up = true;

		for (int ti = 0; ti < nthreads; ti++)
			up &= __atomic_load_n(&S->p[ps].t[ti].tid,
					      __ATOMIC_ACQUIRE) != 0 &&
			      kstate(ps, ti) == 'S';
		if (up)
			return true;
		if (now_ms() > end)
			return false;
		/* born traced (PTRACE_O_TRACEFORK...): starts in a stop */
		if (i % 64 == 63)
			unstick_process(pid);
		if (i % 16 == 15)
			nap_us(1000);
		else
			sched_yield();
	}
}

/* Create kid: thread (cps, cti) forks it.  Returns its slot or -1. */
static int op_spawn(int cps, int cti, int kind, pid_t pgid_req, int nthreads)
{
	int ps = S->nprocs;
	char cn[24];
	pid_t pid;

	if (ps >= MAXP)
		return -1;
	memset(&S->p[ps], 0, sizeof(S->p[ps]));
	memset(&K[ps], 0, sizeof(K[ps]));
	S->p[ps].nthreads = nthreads;
	S->p[ps].cps = cps;
	S->p[ps].cti = cti;
	K[ps].kind = kind;
	K[ps].cps = cps;
	K[ps].cti = cti;
	S->nprocs++;
	tname(cps, cti, cn, sizeof(cn));
	pid = tcall(cps, cti, OP_FORK, ps, kind, pgid_req, nthreads);
	if (pid <= 0) {
		logf_("spawn k%d by %s failed: errno %d", ps, cn,
		      terr(cps, cti));
		S->nprocs--;
		return -1;
	}
	if (!kid_ready(ps, pid, nthreads)) {
		setup_error("k%d (pid %d) did not come up", ps, pid);
		return ps;
	}
	logf_("k%d = pid %d: %s by %s, pgid %s%d -> %d%s, threads %d %d %d",
	      ps, pid, kind_name[kind], cn,
	      pgid_req == PG_INHERIT ? "inherit" :
	      pgid_req == PG_NEW ? "new" : "join ",
	      pgid_req > 0 ? pgid_req : 0, getpgid(pid),
	      S->p[ps].pgid_err ? " (setpgid failed)" : "",
	      tid_of(ps, 0), nthreads > 1 ? tid_of(ps, 1) : 0,
	      nthreads > 2 ? tid_of(ps, 2) : 0);
	return ps;
}

/* The slot of the process tracing (ps, ti), or -1 (none, or unknown). */
static int tracer_slot(int ps, int ti)
{
	pid_t tr = tracer_of(S->p[ps].pid, tid_of(ps, ti));
	int tps, tti;

	return slot_of_tid(tr, &tps, &tti) ? tps : -1;
}

/*
 * Run ptrace request @req on (yps, yti) from its tracer thread (ptrace()
 * from any other thread is ESRCH).  The tracer through *tps, *tti.
 */
static long ptrace_by_tracer(int req, int yps, int yti, long data, int *tps,
			     int *tti)
{
	pid_t tr = tracer_of(S->p[yps].pid, tid_of(yps, yti));

	*tps = -1;
	*tti = -1;
	if (!slot_of_tid(tr, tps, tti) || !idle(*tps, *tti)) {
		*tti = -1;
		return -1;
	}
	return tcall(*tps, *tti, OP_PTRACE, req, tid_of(yps, yti), data, 0);
}

/* Poll from any thread of @ps until @tid reports to it (best effort). */
static void sync_report(int ps, pid_t tid, int flags)
{
	int ti;

	if (ps < 0 || !pick_cmd_thread(ps, &ti))
		return;
	tcall(ps, ti, OP_SYNC, tid, flags, SYNC_MS, 0);
}

/* Agent thread Wk exits; a fresh thread takes its slot. */
static void op_agent_exit(int k)
{
	pid_t old = tid_of(0, k);
	double end;

	tcall(0, k, OP_EXIT, 0, 0, 0, 0);
	end = now_ms() + ACK_MS;
	while (proc_state(getpid(), old)) {
		if (now_ms() > end) {
			setup_error("W%d did not go away", k);
			fatal = true;
			return;
		}
		sched_yield();
	}
	S->p[0].t[k].tid = 0;
	if (start_thread(0, k)) {
		setup_error("cannot restart W%d", k);
		fatal = true;
		return;
	}
	while (!__atomic_load_n(&S->p[0].t[k].tid, __ATOMIC_ACQUIRE))
		sched_yield();
	logf_("W%d (tid %d) exited; new W%d is tid %d", k, old, k,
	      tid_of(0, k));
}

/*
 * Thread (ps, ti) execs this binary, which comes back as a one-thread
 * worker (de_thread(): a non-leader takes the leader's pid; a clone
 * child becomes a SIGCHLD child).  An ATTACH'd or TRACEME'd tracee
 * stops with SIGTRAP after the exec, a PTRACE_O_TRACEEXEC one in an
 * exec event: its tracer continues it.
 */
static void op_exec(int ps, int ti)
{
	int old = __atomic_load_n(&S->p[ps].execs, __ATOMIC_ACQUIRE);
	int ack0 = S->p[ps].t[ti].ack;
	double end = now_ms() + ACK_MS;
	char yn[24];

	tname(ps, ti, yn, sizeof(yn));
	tcall(ps, ti, OP_EXEC, 0, 0, 0, 0);
	for (double since = 0;; ) {
		if (__atomic_load_n(&S->p[ps].execs, __ATOMIC_ACQUIRE) != old &&
		    kstate(ps, 0) == 'S')
			break;
		/* stopped for a tracer that cannot continue it: so be it */
		if (kstate(ps, 0) != 't')
			since = 0;
		else if (!since)
			since = now_ms();
		if (since && now_ms() - since > 2000) {
			logf_("%s: exec'd, stays in a ptrace stop", yn);
			return;
		}
		if (S->p[ps].t[ti].ack != ack0) {
			logf_("%s: exec failed: errno %d", yn, terr(ps, ti));
			return;
		}
		if (now_ms() > end) {
			setup_error("%s: exec did not come back", yn);
			return;
		}
		unstick_process(S->p[ps].pid);
		nap_us(2000);
	}
	K[ps].kind = K_FORK;
	logf_("%s: exec -> one thread, pid %d", yn, S->p[ps].pid);
}

/* ------------------------------------------------------------------ */
/* Random operations.                                                  */

enum rop {
	R_SEIZE, R_ATTACH, R_TRACEME, R_INTERRUPT, R_PCONT, R_LISTEN,
	R_DETACH, R_TRACER_CONSUME, R_GSTOP, R_SIGCONT, R_PARENT_CONSUME,
	R_THREAD_EXIT, R_EXIT_GROUP, R_KILL, R_KILLPG, R_SETPGID,
	R_MOVE_KID, R_AGENT_EXIT, R_SPAWN, R_EXEC, R_SIGCHLD, R_NOPS
};

static const int rop_weight[R_NOPS] = {
	[R_SEIZE] = 12, [R_ATTACH] = 10, [R_TRACEME] = 7, [R_INTERRUPT] = 9,
	[R_PCONT] = 6, [R_LISTEN] = 3, [R_DETACH] = 3,
	[R_TRACER_CONSUME] = 5, [R_GSTOP] = 12, [R_SIGCONT] = 7,
	[R_PARENT_CONSUME] = 6, [R_THREAD_EXIT] = 8, [R_EXIT_GROUP] = 5,
	[R_KILL] = 3, [R_KILLPG] = 1, [R_SETPGID] = 3, [R_MOVE_KID] = 3,
	[R_AGENT_EXIT] = 2,
	[R_SPAWN] = 3, [R_EXEC] = 3, [R_SIGCHLD] = 2,
};

struct thr {
	int ps, ti;
};

/* Kid threads whose state letter is in @states. */
static int kid_threads(struct thr *out, const char *states)
{
	int n = 0;

	for (int ps = 1; ps < S->nprocs; ps++)
		for (int ti = 0; ti < S->p[ps].nthreads; ti++) {
			char st = kstate(ps, ti);

			if (st != '-' && strchr(states, st))
				out[n++] = (struct thr){ ps, ti };
		}
	return n;
}

/* Kid threads traced by someone (and not gone). */
static int traced_threads(struct thr *out)
{
	struct thr all[MAXCAND];
	int n = kid_threads(all, "RSDTtZ"), m = 0;

	for (int i = 0; i < n; i++)
		if (tracer_of(S->p[all[i].ps].pid,
			      tid_of(all[i].ps, all[i].ti)) > 0)
			out[m++] = all[i];
	return m;
}

/* A thread to act as tracer or waiter: ours (60%) or a kid's. */
static bool pick_actor(struct thr *x)
{
	struct thr c[MAXCAND];
	int n;

	if (chance(60)) {
		*x = (struct thr){ 0, rn(NAGENTS) };
		if (busy_ps == 0 && x->ti == busy_ti)
			x->ti = 0;
		return true;
	}
	n = kid_threads(c, "S");
	if (!n)
		return false;
	*x = c[rn(n)];
	return true;
}

/* A process group in play other than ours (for joins and killpg). */
static pid_t pick_kid_group(void)
{
	pid_t g[MAXP];
	int n = 0;

	for (int ps = 1; ps < S->nprocs; ps++) {
		pid_t pg = getpgid(S->p[ps].pid);

		if (pg > 0 && pg != getpgrp())
			g[n++] = pg;
	}
	return n ? g[rn(n)] : -1;
}

static void spawn_random(void)
{
	struct thr c[MAXCAND];
	int cps = 0, cti = rn(NAGENTS), n, kind, nth;
	pid_t pg = PG_INHERIT;

	if (busy_ps == 0 && cti == busy_ti)
		cti = 0;

	/* A grandchild a quarter of the time. */
	if (chance(25) && (n = kid_threads(c, "S"))) {
		int i = rn(n);

		cps = c[i].ps;
		cti = c[i].ti;
	}
	kind = chance(60) ? K_FORK : chance(50) ? K_CLONE_SIG : K_CLONE_0;
	if (cps && chance(20))
		kind = K_CLONE_PARENT;
	nth = chance(45) ? 1 : chance(55) ? 2 : 3;
	if (chance(35)) {
		pg = PG_NEW;
	} else if (chance(40)) {
		pid_t g = pick_kid_group();

		if (g > 0)
			pg = g;
	}
	op_spawn(cps, cti, kind, pg, nth);
}

static const char *req_name(int req)
{
	switch (req) {
	case PTRACE_SEIZE: return "SEIZE";
	case PTRACE_ATTACH: return "ATTACH";
	case PTRACE_INTERRUPT: return "INTERRUPT";
	case PTRACE_CONT: return "CONT";
	case PTRACE_LISTEN: return "LISTEN";
	case PTRACE_DETACH: return "DETACH";
	}
	return "?";
}

#define SYNC_STOP	(WSTOPPED | WEXITED | __WALL)

/*
 * Attach or seize (yps, yti) from thread (xps, xti); @opts: options for
 * PTRACE_SEIZE (children born traced, exit and exec events).
 */
static bool op_trace(int xps, int xti, int yps, int yti, bool seize,
		     int after, long opts)
{
	char xn[24], yn[24];
	long r;

	tname(xps, xti, xn, sizeof(xn));
	tname(yps, yti, yn, sizeof(yn));
	r = tcall(xps, xti, OP_PTRACE, seize ? PTRACE_SEIZE : PTRACE_ATTACH,
		  tid_of(yps, yti), seize ? opts : 0, 0);
	logf_("%s: %s %s (tid %d)%s%s%s%s%s -> %ld%s%s", xn,
	      seize ? "SEIZE" : "ATTACH", yn, tid_of(yps, yti),
	      opts & PTRACE_O_TRACEFORK ? " TRACEFORK" : "",
	      opts & PTRACE_O_TRACECLONE ? " TRACECLONE" : "",
	      opts & PTRACE_O_TRACEEXEC ? " TRACEEXEC" : "",
	      opts & PTRACE_O_TRACEEXIT ? " TRACEEXIT" : "",
	      opts & PTRACE_O_EXITKILL ? " EXITKILL" : "", r,
	      r ? " errno " : "", r ? strerror(terr(xps, xti)) : "");
	if (r)
		return false;
	K[yps].seized[yti] = seize;
	if (seize)
		return true;
	sync_report(xps, tid_of(yps, yti), SYNC_STOP);
	/* after: 0 leave the attach stop, 1 consume it, 2 and continue */
	if (after >= 1) {
		r = tcall(xps, xti, OP_WAITID, P_PID, tid_of(yps, yti),
			  SYNC_STOP | WNOHANG, 0);
		logf_("%s: waitid(P_PID %s) consumes -> %ld pid %d", xn, yn, r,
		      S->p[xps].t[xti].res.pid);
	}
	if (after >= 2) {
		r = tcall(xps, xti, OP_PTRACE, PTRACE_CONT, tid_of(yps, yti),
			  0, 0);
		logf_("%s: CONT %s -> %ld", xn, yn, r);
	}
	return true;
}

static void op_traceme(int yps, int yti, int sig)
{
	char yn[24], tn[32];
	pid_t ppid = 0;
	long r;

	tname(yps, yti, yn, sizeof(yn));
	r = tcall(yps, yti, OP_TRACEME, sig, 0, 0, 0);
	proc_stat(S->p[yps].pid, tid_of(yps, yti), NULL, &ppid, NULL);
	pidname(tracer_of(S->p[yps].pid, tid_of(yps, yti)), tn, sizeof(tn));
	logf_("%s: TRACEME%s%s -> %ld (tracer: %s)", yn,
	      sig ? " + raise " : "", sig ? sig_name(sig) : "", r, tn);
	if (!r && sig)
		sync_report(slot_of_pid(ppid), tid_of(yps, yti), SYNC_STOP);
}

static void op_ptrace_req(int req, int yps, int yti, long data)
{
	char yn[24], tn[24] = "?";
	int tps, tti;
	long r;

	tname(yps, yti, yn, sizeof(yn));
	r = ptrace_by_tracer(req, yps, yti, data, &tps, &tti);
	if (tti >= 0)
		tname(tps, tti, tn, sizeof(tn));
	logf_("%s: %s %s data %ld -> %ld%s%s", tn, req_name(req), yn, data, r,
	      r && tti >= 0 ? " errno " : "",
	      r && tti >= 0 ? strerror(terr(tps, tti)) : "");
	if (!r && req == PTRACE_INTERRUPT)
		sync_report(tps, tid_of(yps, yti), SYNC_STOP);
}

/* A thread of @ps's process waits for @pid with P_PID, consuming. */
static void op_consume_pid(int ps, pid_t pid, int flags, const char *who)
{
	char wn[24], fl[128];
	int ti;
	long r;

	if (ps < 0 || !pick_cmd_thread(ps, &ti))
		return;
	tname(ps, ti, wn, sizeof(wn));
	flags_str(flags, fl, sizeof(fl));
	r = tcall(ps, ti, OP_WAITID, P_PID, pid, flags, 0);
	logf_("%s (%s): waitid(P_PID %d, %s) -> %ld pid %d %s/%d", wn, who,
	      pid, fl, r, S->p[ps].t[ti].res.pid,
	      code_name(S->p[ps].t[ti].res.code), S->p[ps].t[ti].res.status);
}

static bool random_op(void)
{
	struct thr c[MAXCAND], x, y;
	int total = 0, w, op, n;
	char yn[24];

	for (int i = 0; i < R_NOPS; i++)
		total += rop_weight[i];

	w = rn(total);
	for (op = 0; w >= rop_weight[op]; op++)
		w -= rop_weight[op];

	switch (op) {
	case R_SEIZE:
	case R_ATTACH:
		n = kid_threads(c, "STt");
		if (!n || !pick_actor(&x))
			return false;
		y = c[rn(n)];
		if (y.ps == x.ps || tracer_of(S->p[y.ps].pid,
					      tid_of(y.ps, y.ti)))
			return false;
		{
			static const long o[] = {
				PTRACE_O_TRACEFORK, PTRACE_O_TRACECLONE,
				PTRACE_O_TRACEEXEC, PTRACE_O_TRACEEXIT,
				PTRACE_O_EXITKILL,
			};
			long opts = 0;

			if (chance(35))
				for (int i = 0; i < 5; i++)
					if (chance(40))
						opts |= o[i];
			op_trace(x.ps, x.ti, y.ps, y.ti, op == R_SEIZE, rn(3),
				 opts);
		}
		return true;
	case R_TRACEME:
		n = kid_threads(c, "S");
		if (!n)
			return false;
		y = c[rn(n)];
		if (tracer_of(S->p[y.ps].pid, tid_of(y.ps, y.ti)))
			return false;
		{
			static const int sigs[] = { 0, SIGSTOP, SIGUSR1,
						    SIGTRAP };

			op_traceme(y.ps, y.ti, sigs[rn(4)]);
		}
		return true;
	case R_INTERRUPT:
	case R_PCONT:
	case R_LISTEN:
	case R_DETACH:
		n = traced_threads(c);
		if (!n)
			return false;
		y = c[rn(n)];
		if (op == R_INTERRUPT)
			op_ptrace_req(PTRACE_INTERRUPT, y.ps, y.ti, 0);
		else if (op == R_PCONT)
			op_ptrace_req(PTRACE_CONT, y.ps, y.ti,
				      chance(30) ? SIGSTOP : 0);
		else if (op == R_LISTEN)
			op_ptrace_req(PTRACE_LISTEN, y.ps, y.ti, 0);
		else
			op_ptrace_req(PTRACE_DETACH, y.ps, y.ti, 0);
		return true;
	case R_TRACER_CONSUME:
		n = traced_threads(c);
		if (!n)
			return false;
		y = c[rn(n)];
		op_consume_pid(tracer_slot(y.ps, y.ti), tid_of(y.ps, y.ti),
			       WEXITED | WSTOPPED | WCONTINUED | __WALL |
			       WNOHANG, "tracer");
		return true;
	case R_GSTOP:
	case R_SIGCONT:
	case R_KILL:
		n = kid_threads(c, "RSDTt");
		if (!n)
			return false;
		y = c[rn(n)];
		tname(y.ps, y.ti, yn, sizeof(yn));
		{
			int sig = op == R_SIGCONT ? SIGCONT :
				  op == R_GSTOP ? (chance(80) ? SIGSTOP :
							       SIGTSTP) :
				  chance(40) ? SIGKILL :
				  chance(50) ? SIGTERM : SIGUSR1;
			bool thread = op != R_SIGCONT && chance(30);
			int r = thread ? syscall(SYS_tgkill, S->p[y.ps].pid,
						 tid_of(y.ps, y.ti), sig) :
					 kill(S->p[y.ps].pid, sig);

			logf_("%s(%s, %s) -> %d", thread ? "tgkill" : "kill",
			      yn, sig_name(sig), r);
		}
		return true;
	case R_PARENT_CONSUME:
		n = kid_threads(c, "RSDTtZ");
		if (!n)
			return false;
		y = c[rn(n)];
		{
			pid_t ppid = 0;
			int f = (chance(60) ? WSTOPPED : 0) |
				(chance(60) ? WCONTINUED : 0) |
				(chance(20) ? WEXITED : 0);

			if (!f)
				f = WSTOPPED;
			proc_stat(S->p[y.ps].pid, S->p[y.ps].pid, NULL, &ppid,
				  NULL);
			op_consume_pid(slot_of_pid(ppid), S->p[y.ps].pid,
				       f | __WALL | WNOHANG, "parent");
		}
		return true;
	case R_THREAD_EXIT:
	case R_EXIT_GROUP:
		n = kid_threads(c, "S");
		if (!n)
			return false;
		y = c[rn(n)];
		tname(y.ps, y.ti, yn, sizeof(yn));
		{
			int code = 10 + rn(100);

			tcall(y.ps, y.ti, op == R_THREAD_EXIT ? OP_EXIT :
				  OP_EXIT_GROUP, code, 0, 0, 0);
			logf_("%s: %s(%d)", yn, op == R_THREAD_EXIT ? "exit" :
			      "exit_group", code);
		}
		return true;
	case R_KILLPG:
		{
			pid_t g = pick_kid_group();
			int sig = chance(50) ? SIGKILL : SIGTERM;

			if (g <= 0)
				return false;
			logf_("kill(-%d, %s) -> %d", g, sig_name(sig),
			      kill(-g, sig));
		}
		return true;
	case R_SETPGID:
		n = kid_threads(c, "S");
		if (!n)
			return false;
		y = c[rn(n)];
		tname(y.ps, y.ti, yn, sizeof(yn));
		{
			pid_t g = chance(40) ? 0 : chance(20) ? getpgrp() :
							       pick_kid_group();
			long r;

			if (g < 0)
				g = 0;
			r = tcall(y.ps, y.ti, OP_SETPGID, g, 0, 0, 0);
			logf_("%s: setpgid(0, %d) -> %ld pgid now %d", yn, g, r,
			      getpgid(S->p[y.ps].pid));
		}
		return true;
	case R_MOVE_KID:
		/*
		 * A parent moves a child, maybe a zombie (setpgid() takes one
		 * that never exec'd): its exit must follow it to the group.
		 */
		n = kid_threads(c, "RSDTtZ");
		if (!n)
			return false;
		{
			int ps = c[rn(n)].ps, pps, pti;
			pid_t pid = S->p[ps].pid, ppid, g;
			long r;

			/* any idle thread of the parent's process may do it */
			if (!proc_stat(pid, pid, NULL, &ppid, NULL) ||
			    (pps = slot_of_pid(ppid)) < 0 ||
			    !pick_cmd_thread(pps, &pti))
				return false;
			g = chance(30) ? 0 : chance(30) ? getpgid(ppid) :
							  pick_kid_group();
			if (g < 0)
				g = 0;
			tname(pps, pti, yn, sizeof(yn));
			r = tcall(pps, pti, OP_SETPGID, g, pid, 0, 0);
			logf_("%s: setpgid(%d, %d) -> %ld pgid now %d", yn, pid,
			      g, r, getpgid(pid));
		}
		return true;
	case R_AGENT_EXIT:
		{
			int k = 1 + rn(NAGENTS - 1);

			if (busy_ps == 0 && k == busy_ti)
				return false;
			op_agent_exit(k);
		}
		return true;
	case R_SPAWN:
		if (S->nprocs >= MAXP)
			return false;
		spawn_random();
		return true;
	case R_EXEC:
		n = kid_threads(c, "S");
		if (!n)
			return false;
		y = c[rn(n)];
		/*
		 * de_thread() waits for the other threads to be released:
		 * a traced one that exits waits for its tracer, forever.
		 */
		for (int ti = 1; ti < S->p[y.ps].nthreads; ti++)
			if (ti != y.ti && tid_of(y.ps, ti) &&
			    tracer_of(S->p[y.ps].pid, tid_of(y.ps, ti)) > 0)
				return false;
		if (y.ti != 0 && tid_of(y.ps, 0) &&
		    tracer_of(S->p[y.ps].pid, tid_of(y.ps, 0)) > 0 &&
		    chance(50))
			return false;
		op_exec(y.ps, y.ti);
		return true;
	case R_SIGCHLD:
		n = kid_threads(c, "S");
		if (!n)
			return false;
		y = c[rn(n)];
		tname(y.ps, y.ti, yn, sizeof(yn));
		{
			int mode = rn(3);
			long r = tcall(y.ps, y.ti, OP_SIGCHLD, mode, 0, 0, 0);

			logf_("%s: SIGCHLD %s -> %ld", yn, mode == 1 ?
			      "SIG_IGN" : mode == 2 ? "SA_NOCLDWAIT" :
			      "SIG_DFL", r);
		}
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Comparison rounds.                                                  */

/* Candidates: every kid thread ever created; groups: all in play. */
static void set_candidates(void)
{
	int n = 0, ng = 0;

	for (int ps = 1; ps < S->nprocs; ps++)
		for (int ti = 0; ti < S->p[ps].nthreads; ti++)
			if (tid_of(ps, ti))
				S->cand[n++] = tid_of(ps, ti);
	S->ncand = n;
	S->groups[ng++] = 0;
	S->groups[ng++] = getpgrp();
	for (int ps = 1; ps < S->nprocs; ps++) {
		pid_t g = getpgid(S->p[ps].pid);
		bool seen = false;

		if (g <= 0)
			continue;
		for (int i = 1; i < ng; i++)
			seen |= S->groups[i] == g;
		if (!seen && ng < MAXGROUPS)
			S->groups[ng++] = g;
	}
	S->ngroups = ng;
}

/* Does process @ps have children or tracees among the kids? */
static bool has_dependents(int ps)
{
	pid_t pid = pid_of(ps);

	for (int k = 1; k < S->nprocs; k++)
		for (int ti = 0; ti < S->p[k].nthreads; ti++) {
			pid_t ppid = 0;

			if (!tid_of(k, ti))
				continue;
			if (!proc_stat(S->p[k].pid, tid_of(k, ti), NULL, &ppid,
				       NULL))
				continue;
			if (ti == 0 && ppid == pid)
				return true;
			{
				pid_t tr = tracer_of(S->p[k].pid,
						     tid_of(k, ti));
				int tps, tti;

				if (slot_of_tid(tr, &tps, &tti) && tps == ps)
					return true;
			}
		}
	return false;
}

static uint64_t sample_mask(int k)
{
	uint64_t m = 0;

	if (k >= NCOMBO)
		return (1ULL << NCOMBO) - 1;
	while (__builtin_popcountll(m) < k)
		m |= 1ULL << rn(NCOMBO);
	return m;
}

static int total_fail;		/* this seed */

static void compare_as(int ps, int ti, uint64_t mask)
{
	long r = tcall(ps, ti, OP_COMPARE, (long)(mask & 0xffffffff),
		       (long)(mask >> 32), 0, 0);

	if (r > 0)
		total_fail += r;
}

/* Every thread of ours, and some kid threads with dependents. */
static void compare_round(int our_flags, int kid_flags, int kid_waiters)
{
	int kids = 0;

	set_candidates();
	for (int ti = 0; ti < NAGENTS && !fatal; ti++)
		compare_as(0, ti, sample_mask(our_flags));
	for (int ps = 1; ps < S->nprocs && kids < kid_waiters && !fatal;
	     ps++) {
		int c[MAXT], n;

		if (!has_dependents(ps))
			continue;
		n = commandable(ps, c);
		for (int i = 0; i < n && kids < kid_waiters; i++, kids++)
			compare_as(ps, c[i], sample_mask(kid_flags));
	}
}

/* A consuming or blocking wait by a random untraced waiter. */
static void consume_random(void)
{
	struct thr w[MAXCAND];
	int nw = 0, how, flags, gi;
	pid_t g = -1;
	char wn[24], fl[128], got[64];
	long r;

	for (int ti = 0; ti < NAGENTS; ti++)
		w[nw++] = (struct thr){ 0, ti };
	for (int ps = 1; ps < S->nprocs; ps++) {
		int c[MAXT], n;

		if (!has_dependents(ps))
			continue;
		n = commandable(ps, c);
		for (int i = 0; i < n; i++)
			if (!tracer_of(S->p[ps].pid, tid_of(ps, c[i])))
				w[nw++] = (struct thr){ ps, c[i] };
	}
	set_candidates();
	{
		struct thr x = w[rn(nw)];

		how = rn(4);
		how = how == 3 ? CONS_WNOHANG : how;
		flags = combo_flags(rn(NCOMBO));
		if (chance(30)) {
			gi = rn(S->ngroups);
			g = S->groups[gi];
		}
		tname(x.ps, x.ti, wn, sizeof(wn));
		flags_str(flags, fl, sizeof(fl));
		r = tcall(x.ps, x.ti, OP_CONSUME, flags, how, g, 0);
		ans_str(&S->p[x.ps].t[x.ti].res, got, sizeof(got));
		logf_("%s: %s %s %d %s -> %s: %s", wn, cons_name[how],
		      g == -1 ? "P_ALL" : "P_PGID", g == -1 ? 0 : g, fl, got,
		      r ? "FAIL" : "ok");
		if (r > 0)
			total_fail += r;
	}
}

/* ------------------------------------------------------------------ */
/* Seeds.                                                              */

static void seed_begin(unsigned long seed)
{
	cur_seed = seed;
	S->seed = seed;
	S->nprocs = 1;
	S->msglen = 0;
	S->msg[0] = '\0';
	S->nmsg = 0;
	S->checks = 0;
	S->unstable = 0;
	oplog_len = 0;
	oplog[0] = '\0';
	total_fail = 0;
	setup_errors = 0;
	rng_seed(seed);
}

/* First line of a /proc file of thread @tid of @pid, "" if none. */
static void proc_line(pid_t pid, pid_t tid, const char *name, char *buf,
		      size_t n)
{
	/* Gone or unreadable: buf stays "". */
	proc_task_read(pid, tid, name, buf, n);
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = *(p + 1) ? ';' : '\0';
}

/* Every kid thread: state, tracer, where it sleeps; for the log. */
static void dump_tree(void)
{
	for (int ps = 1; ps < S->nprocs; ps++)
		for (int ti = 0; ti < S->p[ps].nthreads; ti++) {
			pid_t pid = S->p[ps].pid, tid = tid_of(ps, ti);
			char st = kstate(ps, ti), wchan[64], stack[512];
			char name[32], tr[32] = "-";

			if (!tid || st == '-')
				continue;
			pidname(tid, name, sizeof(name));
			if (tracer_of(pid, tid) > 0)
				pidname(tracer_of(pid, tid), tr, sizeof(tr));
			proc_line(pid, tid, "wchan", wchan, sizeof(wchan));
			proc_line(pid, tid, "stack", stack, sizeof(stack));
			shm_msg("  %s state %c tracer %s wchan %s stack %s",
				name, st, tr, wchan, stack);
		}
}

/* Kid threads in a ptrace stop (some are stuck there while dying). */
static int unstick_all(void)
{
	int n = 0;

	for (int ps = 1; ps < S->nprocs; ps++)
		for (int ti = 0; ti < S->p[ps].nthreads; ti++)
			if (tid_of(ps, ti) && kstate(ps, ti) == 't') {
				unstick_thread(S->p[ps].pid, tid_of(ps, ti));
				n++;
			}
	return n;
}

/* Is our thread @tid asleep in wait4()/waitid() (not just woken)? */
static bool asleep_in_wait(pid_t tid)
{
	return tstate(getpid(), tid) == 'S' && thread_in_wait(tid);
}

/* Report a waiter that sleeps on while the union reports. */
static void lost_wakeup(const char *who, const char *call)
{
	static struct uview u;
	char snap[MAXP * (MAXT + 1) + 1], us[1024];

	snapshot(snap, sizeof(snap));
	set_candidates();
	union_groups(&u);
	union_query(&u, WEXITED | __WALL | WNOHANG | WNOWAIT);
	union_str(&u, -1, us, sizeof(us));
	shm_msg("LOST WAKEUP %s: %s asleep for %d ms while P_PID reports; "
		"threads %s; P_PID union (WEXITED|__WALL) %s", who, call,
		WAKE_MS, snap, us);
	dump_tree();
	total_fail++;
}

/*
 * Kill everything and reap it: W1 blocks in waitid(P_ALL, WEXITED|
 * __WALL) again and again while W0 watches the P_PID union.  A killed
 * tracee may stop on its way out (PTRACE_EVENT_EXIT) or sit in a ptrace
 * stop whose report the wait takes: its tracer (one of us by then, kid
 * tracers die) continues it.  If W1 sleeps on in its wait for WAKE_MS
 * while P_PID reports a zombie the whole time, it missed its wake-up.
 */
static void teardown(void)
{
	double end = now_ms() + 2 * ACK_MS;
	pid_t w1 = tid_of(0, 1);

	for (int ps = 1; ps < S->nprocs; ps++)
		if (S->p[ps].pid > 0)
			kill(S->p[ps].pid, SIGKILL);
	for (;;) {
		struct ans *a = &S->p[0].t[1].res;
		double seen = 0;
		bool hang = false;
		int c;

		if (now_ms() > end) {
			setup_error("teardown: children left after %d s",
				    2 * ACK_MS / 1000);
			fatal = true;
			break;
		}
		unstick_all();
		set_candidates();
		busy_ps = 0;
		busy_ti = 1;
		busy_aborted = false;
		c = busy_c = tpost(0, 1, OP_WAITID, P_ALL, 0, WEXITED | __WALL,
				   0);
		while (!tacked(0, 1, c) && !busy_aborted) {
			if (now_ms() > end)
				break;
			if (unstick_all())	/* may let W1 go */
				seen = 0;
			set_candidates();
			if (union_class(WEXITED | __WALL, -1) == U_REPORT &&
			    asleep_in_wait(w1)) {
				if (!seen)
					seen = now_ms();
				else if (now_ms() - seen > WAKE_MS)
					hang = true;
			} else {
				seen = 0;
			}
			if (hang)
				break;
			nap_us(2000);
		}
		if (busy_aborted)	/* W1 was let go, and maybe used since */
			continue;
		if (hang)
			lost_wakeup("teardown", "W1 waitid(P_ALL, WEXITED|__WALL)");
		if (!tacked(0, 1, c)) {
			double end2 = now_ms() + ACK_MS;

			syscall(SYS_tgkill, getpid(), w1, SIGURG);
			while (!tacked(0, 1, c) && now_ms() < end2)
				nap_us(1000);
		}
		busy_ps = busy_ti = -1;
		if (!tacked(0, 1, c)) {
			setup_error("teardown: W1 stuck in its wait");
			fatal = true;
			break;
		}
		if (hang)
			continue;
		if (a->ret < 0 && a->err == ECHILD)
			break;
		if (a->ret < 0 && a->err != EINTR) {
			setup_error("teardown waitid: errno %d", a->err);
			break;
		}
	}
	for (int ps = 1; ps < S->nprocs; ps++) {
		pid_t pid = S->p[ps].pid;

		while (pid > 0 && !kill(pid, 0) && now_ms() < end)
			sched_yield();
		if (pid > 0 && !kill(pid, 0))
			logf_("note: k%d (pid %d) still exists after teardown",
			      ps, pid);
	}
	S->nprocs = 1;
}

/* Print what a failing seed did and saw.  Returns failures. */
static int seed_end(const char *name)
{
	int fails = total_fail + setup_errors;

	teardown();
	fails = total_fail + setup_errors;
	if (fails || verbose) {
		fprintf(stderr, "# %s seed %lu: %d failure(s), %d checks, "
			"%d unstable%s\n", name, cur_seed, fails, S->checks,
			S->unstable, fails ? "; operations:" : "");
		if (fails)
			fputs(oplog, stderr);
		if (S->msglen) {
			char *line = S->msg, *nl;
			int shown = 0;

			while (*line && (nl = strchr(line, '\n'))) {
				if (shown++ < 40 || verbose)
					fprintf(stderr, "#   %.*s\n",
						(int)(nl - line), line);
				line = nl + 1;
			}
			if (shown > 40 && !verbose)
				fprintf(stderr, "#   ... %d more\n",
					shown - 40);
		}
		if (fails)
			fprintf(stderr, "# replay: wait_fuzz -r fuzz.%s -- "
				"--seed %lu --seeds 1 --verbose\n", name,
				cur_seed);
	}
	return fails;
}

/*
 * A thread of ours blocks in a WNOWAIT wait (no __WNOTHREAD: stock does
 * not wake a __WNOTHREAD waiter for a child traced by a sibling) with
 * nothing to report yet; a random operation follows and the tree
 * settles.  If the waiter still sleeps then, it is interrupted, and if
 * the union then reports something for it, it missed its wake-up.
 * (ECHILD is not checked: stock does not always wake a waiter whose
 * last eligible child went away.)
 */
static bool random_blocker(void)
{
	int k = 1 + rn(NAGENTS - 1), flags, c;
	pid_t g = -1, tid = tid_of(0, k);
	char fl[128], got[64], wn[24];
	struct ans *res = &S->p[0].t[k].res;
	double end;
	bool ok = false;
	long u;

	flags = combo_flags(rn(NCOMBO)) & ~__WNOTHREAD;
	set_candidates();
	if (chance(25))
		g = S->groups[rn(S->ngroups)];
	if (tcall(0, k, OP_UNION, flags, g, 0, 0) != U_BLOCK)
		return false;
	tname(0, k, wn, sizeof(wn));
	flags_str(flags, fl, sizeof(fl));
	c = tpost(0, k, OP_BLOCKWAIT, flags, g, 0, 0);
	busy_c = c;
	busy_aborted = false;
	end = now_ms() + ACK_MS;
	while (!thread_in_wait(tid) && !tacked(0, k, c) && now_ms() < end)
		sched_yield();
	logf_("%s blocks in waitid(%s %d, %s|WNOWAIT)", wn,
	      g == -1 ? "P_ALL" : "P_PGID", g == -1 ? 0 : g, fl);
	busy_ps = 0;
	busy_ti = k;
	for (int tries = 0; !ok && tries < 50 && !fatal; tries++)
		ok = random_op();
	settle();
	busy_ps = busy_ti = -1;
	if (busy_aborted)
		return true;
	/*
	 * The wake-up, if any, came with the event.  P_PID answers the
	 * same for every thread of ours without __WNOTHREAD: while it
	 * reports and the waiter sleeps on, give it WAKE_MS.
	 */
	set_candidates();
	end = now_ms() + ACK_MS;
	for (double seen = 0; !tacked(0, k, c) && now_ms() < end;
	     nap_us(2000)) {
		if (union_class(flags, g) != U_REPORT)
			break;
		if (!asleep_in_wait(tid))
			seen = 0;
		else if (!seen)
			seen = now_ms();
		else if (now_ms() - seen > WAKE_MS)
			break;
	}
	if (!tacked(0, k, c))
		syscall(SYS_tgkill, getpid(), tid, SIGURG);
	end = now_ms() + ACK_MS;
	while (!tacked(0, k, c) && now_ms() < end)
		nap_us(1000);
	if (!tacked(0, k, c)) {
		setup_error("%s did not come back from its wait", wn);
		fatal = true;
		return true;
	}
	u = S->p[0].t[k].ret;
	ans_str(res, got, sizeof(got));
	logf_("%s: the blocked waitid -> %s; the union now: %s", wn, got,
	      u == U_ECHILD ? "ECHILD" : u == U_REPORT ? "reports" :
	      "nothing");
	if (res->ret < 0 && res->err == EINTR && u == U_REPORT) {
		shm_msg("LOST WAKEUP waiter %s(%d) waitid(%s %d, %s|WNOWAIT)"
			" still asleep after the operation, but the P_PID union"
			" reports now", wn, tid, g == -1 ? "P_ALL" : "P_PGID",
			g == -1 ? 0 : g, fl);
		dump_tree();
		total_fail++;
	}
	return true;
}

static void run_random_seed(unsigned long seed)
{
	int nkids, nops;

	seed_begin(seed);
	nkids = 3 + rn(5);
	nops = 3 + rn(12);
	logf_("seed %lu: %d kids, %d operations", seed, nkids, nops);
	for (int i = 0; i < nkids && !fatal; i++)
		spawn_random();
	settle();
	for (int i = 0, tries = 0; i < nops && tries < 200 && !fatal;
	     tries++) {
		if (!(chance(25) ? random_blocker() : random_op()))
			continue;
		i++;
		settle();
		/* states a later operation would undo */
		compare_round(3, 0, 0);
	}
	compare_round(NCOMBO, 10, 4);
	for (int i = 0, n = 1 + rn(3); i < n && !fatal; i++) {
		consume_random();
		settle();
		compare_round(12, 6, 2);
	}
}

/* ------------------------------------------------------------------ */
/* The harness.                                                        */

static unsigned long opt_seed = 1;
static unsigned long opt_seeds = DEF_SEEDS;
static double opt_seconds = DEF_SECONDS;

FIXTURE(fuzz) {
	int dummy;
};

FIXTURE_SETUP(fuzz)
{
	struct sigaction sa;
	struct rlimit rl = { 0, 0 };
	sigset_t set;

	/* A memfd, not anonymous memory: exec'd workers map it again. */
	shm_fd = memfd_create("wait_fuzz", 0);
	ASSERT_LE(0, shm_fd);
	ASSERT_EQ(0, ftruncate(shm_fd, sizeof(*S)));
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED,
		 shm_fd, 0);
	ASSERT_NE(MAP_FAILED, S);
	memset(S, 0, sizeof(*S));
	/* The read end survives exec, the write end stays with us. */
	ASSERT_EQ(0, pipe(life_pipe));
	ASSERT_EQ(0, fcntl(life_pipe[1], F_SETFD, FD_CLOEXEC));
	/* Orphans come back to us, so teardown can reap everything. */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	setrlimit(RLIMIT_CORE, &rl);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = noop_handler;
	/* SIGURG: the guard timer; must interrupt, so no SA_RESTART. */
	ASSERT_EQ(0, sigaction(SIGURG, &sa, NULL));
	/*
	 * SIGCHLD and SIGUSR2 (the exit signal of clone children) stay
	 * blocked everywhere: a traced worker that got one while running a
	 * command would enter a signal-delivery stop and never answer.
	 * Blocked, they never stop anyone; wait() does not care.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR2);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, NULL));
	S->nprocs = 1;
	S->p[0].pid = getpid();
	S->p[0].nthreads = NAGENTS;
	S->p[0].t[0].tid = sys_gettid();
	for (int k = 1; k < NAGENTS; k++) {
		ASSERT_EQ(0, start_thread(0, k));
		while (!__atomic_load_n(&S->p[0].t[k].tid, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	fatal = false;
}

FIXTURE_TEARDOWN(fuzz)
{
	if (S)
		for (int ps = 1; ps < S->nprocs; ps++)
			if (S->p[ps].pid > 0)
				kill(S->p[ps].pid, SIGKILL);
}

/*
 * The known case: thread A forks C, sibling thread B traces C, which
 * enters a ptrace stop.  Stock reports (C, CLD_TRAPPED, SIGSTOP) to A
 * even with __WNOTHREAD (wait_consider_task() treats a child traced by
 * its real parent's group as if the caller were the tracer).  Done with
 * PTRACE_ATTACH (attach stop), with PTRACE_SEIZE + PTRACE_INTERRUPT
 * (event stop), and with a group stop of C while B traces it.
 */
static int scripted(const char *name, int variant)
{
	int c;

	seed_begin(1000 + variant);
	logf_("%s variant %d", name, variant);
	c = op_spawn(0, 1, K_FORK, PG_INHERIT, 1);	/* A = W1 forks C */
	/*
	 * Live children of A, for P_PGID: one in another group, one made
	 * after C in C's group (a group walk that meets it first stops
	 * there: it keeps the wait from ECHILD).
	 */
	op_spawn(0, 1, K_FORK, PG_NEW, 1);
	op_spawn(0, 1, K_FORK, PG_INHERIT, 1);
	settle();
	switch (variant) {
	case 0:		/* B = W2 attaches: C in its attach stop */
		op_trace(0, 2, c, 0, false, 0, 0);
		break;
	case 1:		/* seize and interrupt: an event stop */
		op_trace(0, 2, c, 0, true, 0, 0);
		op_ptrace_req(PTRACE_INTERRUPT, c, 0, 0);
		break;
	case 2:		/* attach stop reported; then a group stop */
		op_trace(0, 2, c, 0, false, 2, 0);
		settle();
		logf_("kill(k%d, SIGSTOP) -> %d", c, kill(S->p[c].pid,
							   SIGSTOP));
		sync_report(0, tid_of(c, 0), SYNC_STOP);
		settle();
		op_ptrace_req(PTRACE_CONT, c, 0, SIGSTOP);
		sync_report(0, tid_of(c, 0), SYNC_STOP);
		break;
	}
	settle();
	compare_round(NCOMBO, NCOMBO, 4);
	/* A's consuming and blocking waits, __WNOTHREAD (the hang) */
	set_candidates();
	{
		/*
		 * Blocking WNOWAIT first, then wait4 consumes (blocking, in
		 * the first variant only: a hang costs the guard's time),
		 * then nothing is left.
		 */
		static const int hows[] = { CONS_BLOCK_WAITID, CONS_WAIT4,
					    CONS_WNOHANG, CONS_WNOHANG };

		for (int i = variant ? 2 : 0; i < 4 && !fatal; i++) {
			long r = tcall(0, 1, OP_CONSUME, WEXITED | __WNOTHREAD,
				       hows[i], -1, 0);
			char got[64];

			ans_str(&S->p[0].t[1].res, got, sizeof(got));
			logf_("W1: %s P_ALL WEXITED|__WNOTHREAD -> %s: %s",
			      cons_name[hows[i]], got, r ? "FAIL" : "ok");
			if (r > 0)
				total_fail += r;
		}
	}
	return seed_end(name);
}

TEST_F_TIMEOUT(fuzz, sibling_tracer_wnothread, 300)
{
	int fails = 0;

	for (int v = 0; v < 3 && !fatal; v++)
		fails += scripted("sibling_tracer_wnothread", v);
	EXPECT_EQ(0, fails);
}

TEST_F_TIMEOUT(fuzz, random_trees, 900)
{
	double start = now_ms();
	unsigned long done = 0, bad = 0, checks = 0, unstable = 0;
	char failed[512] = "";
	size_t flen = 0;

	for (unsigned long s = opt_seed; s < opt_seed + opt_seeds && !fatal;
	     s++) {
		int f, c;

		if (done && now_ms() - start > opt_seconds * 1000) {
			fprintf(stderr, "# time budget of %.0f s reached after "
				"%lu seed(s)\n", opt_seconds, done);
			break;
		}
		run_random_seed(s);
		c = S->checks;
		f = seed_end("random_trees");
		checks += c;
		unstable += S->unstable;
		done++;
		if (f) {
			bad++;
			if (flen + 24 < sizeof(failed))
				flen += snprintf(failed + flen,
						 sizeof(failed) - flen, " %lu",
						 s);
		}
	}
	fprintf(stderr, "# seeds %lu..%lu: %lu run, %lu failed%s%s; "
		"%lu comparisons (%lu given up as unstable), %.1f s\n",
		opt_seed, opt_seed + done - (done ? 1 : 0), done, bad,
		bad ? ":" : "", failed, checks, unstable,
		(now_ms() - start) / 1000);
	EXPECT_FALSE(fatal);
	EXPECT_EQ(0, (int)bad);
}

/* An exec'd worker: "--worker SHM_FD LIFE_FD SLOT". */
static void worker_main(char **argv) __attribute__((noreturn));
static void worker_main(char **argv)
{
	struct sigaction sa;
	sigset_t set;
	int ps;

	shm_fd = atoi(argv[2]);
	life_pipe[0] = atoi(argv[3]);
	ps = atoi(argv[4]);
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED,
		 shm_fd, 0);
	if (S == MAP_FAILED || ps <= 0 || ps >= MAXP)
		_exit(WU_CHILD_FAIL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = noop_handler;
	sigaction(SIGURG, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	S->p[ps].t[0].tid = sys_gettid();
	__atomic_add_fetch(&S->p[ps].execs, 1, __ATOMIC_RELEASE);
	thread_loop(ps, 0);
}

/* Our options go before the harness sees argv. */
int main(int argc, char **argv)
{
	const char *e;
	int n = 1;

	if (argc == 5 && !strcmp(argv[1], "--worker"))
		worker_main(argv);

	if ((e = getenv("WAIT_FUZZ_SEED")))
		opt_seed = strtoul(e, NULL, 0);
	if ((e = getenv("WAIT_FUZZ_SEEDS")))
		opt_seeds = strtoul(e, NULL, 0);
	if ((e = getenv("WAIT_FUZZ_SECONDS")))
		opt_seconds = atof(e);
	if ((e = getenv("WAIT_FUZZ_VERBOSE")))
		verbose = atoi(e);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			opt_seed = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
			opt_seeds = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			opt_seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--verbose")) {
			verbose = true;
		} else if (!strcmp(argv[i], "--")) {
			continue;
		} else {
			argv[n++] = argv[i];
		}
	}
	argv[n] = NULL;
	return test_harness_run(n, argv);
}
