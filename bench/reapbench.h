/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the fastreap benchmarks (reapbench.c, reenact.c).
 *
 * Children are either cheap clone(CLONE_VM|SIGCHLD) processes running on a
 * small stack carved out of one mapping (the default), or real fork()ed
 * processes (--fork). Cheap children only ever make raw system calls, so
 * they never touch the glibc state they share with their parent.
 *
 * Include after defining _GNU_SOURCE.
 */
#ifndef FASTREAP_REAPBENCH_H
#define FASTREAP_REAPBENCH_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef __WALL
#define __WALL 0x40000000
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* The long options that both programs take (getopt_long()). */
#define COMMON_LONG_OPTIONS \
	{ "csv", no_argument, NULL, 'c' }, \
	{ "fork", no_argument, NULL, 'f' }, \
	{ "help", no_argument, NULL, 'h' }

/* User stack of one cheap child: only the top page or two is touched. */
#define CHILD_STACK (16 * 1024)

static int g_use_fork; /* --fork: real fork() children instead of clones */
/*
 * Long-lived children made while this is set outlive their parent: they are
 * meant to be orphaned and adopted by an init, which then holds them.
 */
static int g_orphans;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Warn (on stderr) when CLOCK_MONOTONIC ticks coarsely, e.g. a guest that
 * fell back to the jiffies clocksource: then only totals far above the
 * granularity mean anything.
 */
static inline void check_clock(void)
{
	uint64_t t0, t1, g = UINT64_MAX;
	int i;

	for (i = 0; i < 3; i++) {
		t0 = now_ns();
		do
			t1 = now_ns();
		while (t1 == t0);
		if (t1 - t0 < g)
			g = t1 - t0;
	}
	if (g > 1000) {
		char cs[64] = "?";
		FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource",
				"r");

		if (f) {
			if (fscanf(f, "%63s", cs) != 1)
				strcpy(cs, "?");
			fclose(f);
		}
		fprintf(stderr,
			"# warning: CLOCK_MONOTONIC granularity is %llu ns (clocksource %s): use a larger M\n",
			(unsigned long long)g, cs);
	}
}

static inline void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;
	int e = errno;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(e));
	exit(2);
}

static inline long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Raise a sysctl to at least @want (root only; failures are reported). */
static inline void sysctl_at_least(const char *path, long want)
{
	long cur = read_long(path);
	FILE *f;

	if (cur < 0 || cur >= want)
		return;
	f = fopen(path, "w");
	if (!f || fprintf(f, "%ld\n", want) < 0 || fclose(f) != 0)
		fprintf(stderr, "warning: cannot raise %s from %ld to %ld\n",
			path, cur, want);
}

/* Make room for @nprocs more processes: RLIMIT_NPROC, pid_max, threads-max. */
static inline void raise_limits(long nprocs)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	long want = nprocs + 32768;

	if (setrlimit(RLIMIT_NPROC, &rl) != 0 &&
	    getrlimit(RLIMIT_NPROC, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NPROC, &rl);
	}
	if (geteuid() != 0)
		return;
	if (want > 4194304)
		want = 4194304;
	sysctl_at_least("/proc/sys/kernel/pid_max", want);
	sysctl_at_least("/proc/sys/kernel/threads-max", want);
}

/* One mapping holding the user stacks of many cheap children. */
struct stackpool {
	char *base;
	size_t n;
};

static inline void pool_init(struct stackpool *p, size_t n)
{
	p->n = n ? n : 1;
	if (g_use_fork) {
		p->base = NULL;
		return;
	}
	p->base = mmap(NULL, p->n * CHILD_STACK, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		       -1, 0);
	if (p->base == MAP_FAILED)
		die("mmap stack pool of %zu children", p->n);
	/*
	 * Keep fork() of the parent cheap: no child needs these stacks.
	 * Without this a fork copies a page per long-lived child, and the
	 * exit of its last user frees them: O(N) that is not wait()'s.
	 */
	if (madvise(p->base, p->n * CHILD_STACK, MADV_DONTFORK))
		die("madvise(MADV_DONTFORK): no CONFIG_ADVISE_SYSCALLS?");
}

static inline void *pool_top(struct stackpool *p, size_t i)
{
	if (!p->base)
		return NULL;
	return p->base + (i % p->n + 1) * CHILD_STACK;
}

/*
 * Start a child running @fn(@arg). Cheap children: clone(CLONE_VM|SIGCHLD|
 * @flags) on @stack_top. --fork children: a real copy of the address space
 * (fork(), or a raw clone() system call when @flags need it).
 */
static inline pid_t spawn_child(int (*fn)(void *), void *arg, void *stack_top,
			 int flags)
{
	pid_t pid;

	if (g_use_fork || !stack_top) {
		if (flags)
			pid = syscall(SYS_clone, SIGCHLD | flags, NULL, NULL,
				      NULL, 0);
		else
			pid = fork();
		if (pid == 0)
			syscall(SYS_exit_group, fn(arg));
	} else {
		pid = clone(fn, stack_top, CLONE_VM | SIGCHLD | flags, arg);
	}
	if (pid < 0)
		die("spawning a child (use a bigger pid_max / less N?)");
	return pid;
}

/*
 * Long-lived child: sleeps until killed (stop/continue do not end it). It
 * closes its copies of the parent's files, so it holds no pipe open, and
 * dies with the thread that created it, unless g_orphans is set (then the
 * init that adopts it kills it when its pid namespace ends).
 */
static inline int child_sleep(void *arg)
{
	(void)arg;
	syscall(SYS_close_range, 0, ~0U, 0);
	/* Do not outlive a benchmark that dies half-way. */
	if (!g_orphans)
		syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	for (;;)
		syscall(SYS_ppoll, NULL, 0, NULL, NULL, 0);
	return 0;
}

/*
 * Gate child: keeps only the read end of the gate pipe and exits as soon as
 * the parent closes the write end.
 */
static inline void *gate_arg(const int gate[2])
{
	return (void *)(intptr_t)gate[0];
}

static inline int child_gate(void *arg)
{
	unsigned int rfd = (unsigned int)(intptr_t)arg;
	char c;

	if (rfd > 0)
		syscall(SYS_close_range, 0, rfd - 1, 0);
	syscall(SYS_close_range, rfd + 1, ~0U, 0);
	while (syscall(SYS_read, rfd, &c, 1) < 0)
		;
	syscall(SYS_exit_group, 0);
	return 0;
}

/*
 * Wait (without consuming anything) until every child in @pids has a report
 * of kind @which (WEXITED, WSTOPPED or WCONTINUED) pending. waitid(P_PID)
 * looks the child up by pid, so this does not walk the children list.
 */
static inline void wait_ready(const pid_t *pids, long m, int which)
{
	long i;
	siginfo_t si;

	for (i = 0; i < m; i++) {
		for (;;) {
			memset(&si, 0, sizeof(si));
			if (waitid(P_PID, pids[i], &si,
				   which | WNOHANG | WNOWAIT | __WALL) != 0)
				die("waitid(P_PID %d, WNOWAIT)", pids[i]);
			if (si.si_pid == pids[i])
				break;
			sched_yield();
		}
	}
}

/* SIGKILL and reap (by pid, so O(1) each) a set of children. */
static inline void kill_reap(const pid_t *pids, long n)
{
	long i;

	for (i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (i = 0; i < n; i++)
		while (waitpid(pids[i], NULL, __WALL) < 0 && errno == EINTR)
			;
}

/*
 * tini's reaping loop, as every init's: block in wait() for one zombie,
 * then waitpid(-1, WNOHANG) until it returns 0, and again, until @m
 * children are reaped.
 */
static inline void tini_reap(long m)
{
	long reaped = 0;
	pid_t pid;

	while (reaped < m) {
		pid = wait(NULL);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			die("wait");
		reaped++;
		while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
			reaped++;
	}
}

/* Create @n long-lived sleeping children (pids into @pids). */
static inline void make_sleepers(pid_t *pids, long n, struct stackpool *pool)
{
	long i;

	for (i = 0; i < n; i++)
		pids[i] = spawn_child(child_sleep, NULL, pool_top(pool, i), 0);
}

static inline void xwrite(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t w;

	while (len) {
		w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		p += w;
		len -= w;
	}
}

static inline void xread(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t r;

	while (len) {
		r = read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die("read");
		p += r;
		len -= r;
	}
}

/* What burst_main(), the "modprobe" child, needs. */
struct burst {
	int *gate;
	int *tomain;
	pid_t *pids;
	long m;
	struct stackpool *pool;
};

static inline int burst_main(void *arg)
{
	struct burst *b = arg;
	size_t len = b->m * sizeof(*b->pids);
	long i;

	close(b->gate[1]);
	close(b->tomain[0]);
	pool_init(b->pool, b->m);
	for (i = 0; i < b->m; i++)
		b->pids[i] = spawn_child(child_gate, gate_arg(b->gate),
					 pool_top(b->pool, i), 0);
	/* no exit(): with CLONE_VM, glibc's state is the caller's */
	syscall(SYS_exit_group, write(b->tomain[1], b->pids, len) !=
		(ssize_t)len);
	return 0;
}

/*
 * The 2007 burst: a "modprobe" child starts @m children, each asleep on a
 * new @gate, sends us their pids and exits, so that they are reparented to
 * our subreaper or init.  With @shared it shares our memory, as 2007's
 * kernel threads did (clone(CLONE_VM)), and maps the @m stacks into
 * @shared, which the caller unmaps once they are reaped.  Without, it is a
 * fork(): its copy of our memory is torn down by the last of them to exit.
 * Returns once it is reaped, with the pids in @pids.
 */
static inline void modprobe_burst(pid_t *pids, long m, int gate[2],
				  struct stackpool *shared)
{
	static struct stackpool own_stack;
	struct stackpool unshared;	/* filled in by a fork()ed child's copy */
	int tomain[2];
	struct burst b = { gate, tomain, pids, m, shared ? shared : &unshared };
	pid_t pid;

	if (pipe(gate) || pipe(tomain))
		die("pipe");
	if (shared) {
		shared->base = NULL;	/* unless the child maps it */
		if (!own_stack.n)
			pool_init(&own_stack, 1);
	}
	pid = spawn_child(burst_main, &b,
			  shared ? pool_top(&own_stack, 0) : NULL, 0);
	close(gate[0]);
	close(tomain[1]);
	xread(tomain[0], pids, m * sizeof(*pids));
	close(tomain[0]);
	if (waitpid(pid, NULL, 0) != pid)
		die("waitpid(modprobe)");
}

static inline void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		die("calloc");
	return p;
}

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif
