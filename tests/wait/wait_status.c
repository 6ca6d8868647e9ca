// SPDX-License-Identifier: GPL-2.0
/*
 * Exact exit status reporting: exit codes, death by signal, the core
 * dump flag, and resource usage from wait4()/waitid().
 *
 * Every child is looked at twice: first with waitid(WNOWAIT) (si_code,
 * si_status, si_signo, si_uid), then reaped with waitpid() (the status
 * word, bit for bit), so both views of the same exit are pinned.
 */
#include "wait_util.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>

/* Check both views of child @pid: @code (CLD_*) with @status. */
static void check_both(struct __test_metadata *_metadata, pid_t pid,
		       int code, int status)
{
	struct wres r;

	wk_wait(WK_WAITID_PID, pid, 0, -1, WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, code, status);
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, code, status);
	/* And the macros agree with the decoded view. */
	switch (code) {
	case CLD_EXITED:
		ASSERT_TRUE(WIFEXITED(r.raw));
		ASSERT_FALSE(WIFSIGNALED(r.raw));
		ASSERT_EQ(status, WEXITSTATUS(r.raw));
		break;
	case CLD_KILLED:
	case CLD_DUMPED:
		ASSERT_FALSE(WIFEXITED(r.raw));
		ASSERT_TRUE(WIFSIGNALED(r.raw));
		ASSERT_EQ(status, WTERMSIG(r.raw));
		ASSERT_EQ(code == CLD_DUMPED, !!WCOREDUMP(r.raw));
		break;
	}
	ASSERT_FALSE(WIFSTOPPED(r.raw));
	ASSERT_FALSE(WIFCONTINUED(r.raw));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* exit(@code) keeps only the low 8 bits. */
TEST(exit_codes)
{
	static const struct { int arg, seen; } c[] = {
		{ 0, 0 }, { 1, 1 }, { 42, 42 }, { 127, 127 }, { 128, 128 },
		{ 255, 255 }, { 256, 0 }, { 257, 1 }, { -1, 255 },
		{ 0x1ff, 255 },
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(c); i++) {
		pid_t pid = spawn_exit(c[i].arg);

		ASSERT_GT(pid, 0);
		check_both(_metadata, pid, CLD_EXITED, c[i].seen);
	}
}

/* Kernel signal numbers: glibc's SIGRTMIN is not a constant. */
static const int fatal_sigs[] = {
	SIGKILL, SIGTERM, SIGHUP, SIGINT, SIGUSR1, SIGUSR2, SIGPIPE,
	SIGALRM, 34 /* SIGRTMIN */, 64 /* SIGRTMAX */,
};

/* Killed from outside: CLD_KILLED, status word == signal number. */
TEST(killed_by_signal)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(fatal_sigs); i++) {
		struct gate g;
		pid_t pid;

		ASSERT_EQ(0, gate_init(&g));
		pid = spawn_gated(&g, 0);
		ASSERT_GT(pid, 0);
		ASSERT_EQ(0, kill(pid, fatal_sigs[i]));
		check_both(_metadata, pid, CLD_KILLED, fatal_sigs[i]);
	}
}

static int raise_fn(void *arg)
{
	raise((int)(intptr_t)arg);
	return WU_CHILD_FAIL;
}

/* A child killing itself looks the same. */
TEST(raised_signal)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(fatal_sigs); i++) {
		pid_t pid = spawn(raise_fn, (void *)(intptr_t)fatal_sigs[i]);

		ASSERT_GT(pid, 0);
		check_both(_metadata, pid, CLD_KILLED, fatal_sigs[i]);
	}
}

/* SIGKILL of a stopped child: a plain kill, no stop left behind. */
TEST(killed_while_stopped)
{
	struct wres r;
	struct gate g;
	pid_t pid;

	ASSERT_EQ(0, gate_init(&g));
	pid = spawn_gated(&g, 0);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED | WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	check_both(_metadata, pid, CLD_KILLED, SIGKILL);
}

/*
 * Core dumps.  WCOREDUMP/CLD_DUMPED is only reported when the dump was
 * attempted and got as far as writing: RLIMIT_CORE below one page or a
 * core file that cannot be created report CLD_KILLED, while a dump cut
 * short by RLIMIT_CORE still reports CLD_DUMPED.  So the fixture arranges a
 * dump that will succeed: core_pattern must be a plain relative file
 * name (the kernel default "core"); if it is a pipe or an absolute path
 * and we may write it, it is set to "core" for the test and restored
 * afterwards, else the test is skipped.  The child raises RLIMIT_CORE
 * to unlimited and dumps into a fresh temporary directory.
 */
#define CORE_PATTERN "/proc/sys/kernel/core_pattern"

FIXTURE(core) {
	char saved[256];
	bool restore;
	char dir[64];
};

static int read_core_pattern(char *buf, size_t len)
{
	int fd = open(CORE_PATTERN, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int write_core_pattern(const char *p)
{
	int fd = open(CORE_PATTERN, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, p, strlen(p));
	close(fd);
	return n == (ssize_t)strlen(p) ? 0 : -1;
}

FIXTURE_SETUP(core)
{
	struct rlimit rl;

	self->restore = false;
	self->dir[0] = '\0';
	if (prctl(PR_GET_DUMPABLE) != 1)
		SKIP(return, "process is not dumpable");
	if (getrlimit(RLIMIT_CORE, &rl) || rl.rlim_max != RLIM_INFINITY) {
		rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
		if (setrlimit(RLIMIT_CORE, &rl))
			SKIP(return, "cannot raise RLIMIT_CORE hard limit");
	}
	if (read_core_pattern(self->saved, sizeof(self->saved)))
		SKIP(return, "cannot read " CORE_PATTERN);
	if (self->saved[0] == '|' || self->saved[0] == '/' ||
	    strchr(self->saved, '%')) {
		if (write_core_pattern("core"))
			SKIP(return, "core_pattern is '%s' and not writable",
			     self->saved);
		self->restore = true;
	}
	strcpy(self->dir, "/tmp/wait_status_core.XXXXXX");
	if (!mkdtemp(self->dir)) {
		self->dir[0] = '\0';
		SKIP(return, "cannot create a directory for the core");
	}
}

/* Remove the core file(s); returns how many there were. */
static int clean_dir(const char *dir)
{
	char path[512];
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!unlink(path))
			n++;
	}
	closedir(d);
	return n;
}

FIXTURE_TEARDOWN(core)
{
	if (self->dir[0]) {
		clean_dir(self->dir);
		rmdir(self->dir);
	}
	if (self->restore) {
		/* The file holds the pattern plus a newline. */
		self->saved[strcspn(self->saved, "\n")] = '\0';
		write_core_pattern(self->saved);
	}
}

struct dump_arg {
	const char *dir;
	int sig;
	rlim_t limit;
};

static int dump_fn(void *p)
{
	struct dump_arg *a = p;
	struct rlimit rl = { a->limit, a->limit };

	CHILD_CHECK(!setrlimit(RLIMIT_CORE, &rl));
	CHILD_CHECK(!chdir(a->dir));
	raise(a->sig);
	return WU_CHILD_FAIL;
}

TEST_F(core, dumped)
{
	static const int sigs[] = { SIGQUIT, SIGABRT, SIGSEGV, SIGSYS };

	for (unsigned int i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct dump_arg a = { self->dir, sigs[i], RLIM_INFINITY };
		pid_t pid = spawn(dump_fn, &a);

		ASSERT_GT(pid, 0);
		check_both(_metadata, pid, CLD_DUMPED, sigs[i]);
		/* The flag means a core really was written. */
		ASSERT_EQ(1, clean_dir(self->dir));
	}
}

/* RLIMIT_CORE 0: no dump, so a core signal reports CLD_KILLED. */
TEST_F(core, not_dumped_rlimit_zero)
{
	struct dump_arg a = { self->dir, SIGQUIT, 0 };
	pid_t pid = spawn(dump_fn, &a);

	ASSERT_GT(pid, 0);
	check_both(_metadata, pid, CLD_KILLED, SIGQUIT);
	ASSERT_EQ(0, clean_dir(self->dir));
}

/*
 * A dump that does not fit RLIMIT_CORE is cut short, but the flag is
 * still reported: the ELF writer counts the dump as done once it has
 * started writing (a limit of at least one page lets it start).
 */
TEST_F(core, dumped_truncated)
{
	struct dump_arg a = { self->dir, SIGQUIT, 4096 };
	pid_t pid = spawn(dump_fn, &a);

	ASSERT_GT(pid, 0);
	check_both(_metadata, pid, CLD_DUMPED, SIGQUIT);
	ASSERT_EQ(1, clean_dir(self->dir));
}

/* The core file cannot be created: no dump, no flag. */
static int dump_blocked_fn(void *p)
{
	struct dump_arg *a = p;
	char name[64];

	/* Directories where core or core.PID (core_uses_pid) would go. */
	CHILD_CHECK(!chdir(a->dir));
	CHILD_CHECK(!mkdir("core", 0700));
	snprintf(name, sizeof(name), "core.%d", getpid());
	CHILD_CHECK(!mkdir(name, 0700));
	return dump_fn(p);
}

static int rm_dirs(const char *dir)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!rmdir(path))
			n++;
	}
	closedir(d);
	return n;
}

TEST_F(core, not_dumped_unwritable)
{
	struct dump_arg a = { self->dir, SIGQUIT, RLIM_INFINITY };
	pid_t pid = spawn(dump_blocked_fn, &a);

	ASSERT_GT(pid, 0);
	check_both(_metadata, pid, CLD_KILLED, SIGQUIT);
	/* Only the two directories, no core file. */
	ASSERT_EQ(0, clean_dir(self->dir));
	ASSERT_EQ(2, rm_dirs(self->dir));
}

/* ------------------------------------------------------------------ */
/* Resource usage.                                                     */

#define BURN_US		100000	/* CPU time a burner uses */
#define TOUCH_BYTES	(32 << 20)	/* memory a burner touches */

static long tv_us(struct timeval tv)
{
	return tv.tv_sec * 1000000L + tv.tv_usec;
}

static long ru_cpu_us(const struct rusage *ru)
{
	return tv_us(ru->ru_utime) + tv_us(ru->ru_stime);
}

/* Burn BURN_US of CPU time (own accounting) and touch TOUCH_BYTES. */
static int burn_fn(void *arg)
{
	volatile unsigned long x = 0;
	struct rusage ru;
	char *mem;

	(void)arg;
	mem = mmap(NULL, TOUCH_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(mem != MAP_FAILED);
	for (long off = 0; off < TOUCH_BYTES; off += 4096)
		mem[off] = 1;
	do {
		for (int i = 0; i < 100000; i++)
			x += i;
		CHILD_CHECK(!getrusage(RUSAGE_SELF, &ru));
	} while (ru_cpu_us(&ru) < BURN_US);
	return 0;
}

static void check_burner_ru(struct __test_metadata *_metadata,
			    const struct rusage *ru)
{
	ASSERT_GE(ru_cpu_us(ru), BURN_US);
	ASSERT_GE(ru->ru_maxrss, TOUCH_BYTES / 1024);
}

/* Poison so that "not written" and "written" can be told apart. */
static void poison_ru(struct rusage *ru)
{
	memset(ru, 0xa5, sizeof(*ru));
}

static bool ru_poisoned(const struct rusage *ru)
{
	const unsigned char *p = (const void *)ru;

	for (size_t i = 0; i < sizeof(*ru); i++)
		if (p[i] != 0xa5)
			return false;
	return true;
}

TEST(rusage_wait4)
{
	struct rusage ru;
	pid_t pid;
	int st;

	pid = spawn(burn_fn, NULL);
	ASSERT_GT(pid, 0);
	poison_ru(&ru);
	ASSERT_EQ(pid, wait4(pid, &st, 0, &ru));
	ASSERT_EQ(0, st);
	check_burner_ru(_metadata, &ru);
}

TEST(rusage_waitid)
{
	struct rusage ru;
	siginfo_t si;
	pid_t pid;

	pid = spawn(burn_fn, NULL);
	ASSERT_GT(pid, 0);
	/* WNOWAIT also fills the rusage, and still does not reap. */
	poison_ru(&ru);
	ASSERT_EQ(0, sys_waitid(P_PID, pid, &si, WEXITED | WNOWAIT, &ru));
	ASSERT_EQ(pid, si.si_pid);
	check_burner_ru(_metadata, &ru);
	poison_ru(&ru);
	ASSERT_EQ(0, sys_waitid(P_PID, pid, &si, WEXITED, &ru));
	ASSERT_EQ(pid, si.si_pid);
	ASSERT_EQ(CLD_EXITED, si.si_code);
	ASSERT_EQ(0, si.si_status);
	check_burner_ru(_metadata, &ru);
}

/* A child that does nothing: small but plausible numbers. */
TEST(rusage_idle_child)
{
	struct rusage ru;
	pid_t pid;
	int st;

	pid = spawn_exit(0);
	ASSERT_GT(pid, 0);
	poison_ru(&ru);
	ASSERT_EQ(pid, wait4(pid, &st, 0, &ru));
	ASSERT_EQ(0, st);
	ASSERT_GE(tv_us(ru.ru_utime), 0);
	ASSERT_GE(tv_us(ru.ru_stime), 0);
	ASSERT_LT(ru_cpu_us(&ru), 1000000);
	ASSERT_GT(ru.ru_maxrss, 0);
	ASSERT_LT(ru.ru_maxrss, TOUCH_BYTES / 1024);
}

/* Nothing reported (WNOHANG): the rusage buffer is not written. */
TEST(rusage_untouched_when_nothing_reported)
{
	struct rusage ru;
	struct gate g;
	siginfo_t si;
	pid_t pid;
	int st;

	ASSERT_EQ(0, gate_init(&g));
	pid = spawn_gated(&g, 0);
	ASSERT_GT(pid, 0);
	poison_ru(&ru);
	ASSERT_EQ(0, wait4(pid, &st, WNOHANG, &ru));
	ASSERT_TRUE(ru_poisoned(&ru));
	ASSERT_EQ(0, sys_waitid(P_PID, pid, &si, WEXITED | WNOHANG, &ru));
	ASSERT_TRUE(ru_poisoned(&ru));
	ASSERT_EQ(0, gate_open(&g, 1));
	ASSERT_EQ(pid, wait4(pid, &st, 0, &ru));
	ASSERT_FALSE(ru_poisoned(&ru));
}

/*
 * RUSAGE_CHILDREN of the parent only grows when a child is reaped:
 * not when it becomes a zombie and not on a WNOWAIT look.
 */
TEST(rusage_children_counts_on_reap)
{
	struct rusage before, mid, after;
	siginfo_t si;
	pid_t pid;

	ASSERT_EQ(0, getrusage(RUSAGE_CHILDREN, &before));
	pid = spawn(burn_fn, NULL);
	ASSERT_GT(pid, 0);
	ASSERT_EQ(0, sys_waitid(P_PID, pid, &si, WEXITED | WNOWAIT, NULL));
	ASSERT_EQ(0, getrusage(RUSAGE_CHILDREN, &mid));
	ASSERT_EQ(ru_cpu_us(&before), ru_cpu_us(&mid));
	ASSERT_EQ(before.ru_maxrss, mid.ru_maxrss);
	ASSERT_EQ(0, sys_waitid(P_PID, pid, &si, WEXITED, NULL));
	ASSERT_EQ(0, getrusage(RUSAGE_CHILDREN, &after));
	ASSERT_GE(ru_cpu_us(&after) - ru_cpu_us(&before), BURN_US);
	ASSERT_GE(after.ru_maxrss, TOUCH_BYTES / 1024);
}

TEST_HARNESS_MAIN
