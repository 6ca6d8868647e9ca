// SPDX-License-Identifier: GPL-2.0
/*
 * path: everyday paths, each timed whole, at N = 0 by default: what fork,
 * exec, exit, job control and ptrace cost where nothing scales. With -n
 * the N idle children are there too. One op is one whole path:
 *
 *   forkwait: fork(), _exit(0) in the child, waitpid(pid);
 *   fork-exec: fork(), execve() of a static program that exits at once,
 *     waitpid(pid): a shell running a command;
 *   pipeline: a job-control shell's pipeline "a | b": two children, each
 *     put into the job's process group on both sides of the fork (the
 *     child's setpgid() and the shell's), then waitpid(-pgid, WUNTRACED)
 *     until both are reaped;
 *   daemon: a daemon's double fork: a child calls setsid(), forks the
 *     daemon and exits; we wait for it by pid and, as the subreaper the
 *     daemon is reparented to, reap the daemon with wait();
 *   stop-cont: SIGSTOP to a child, waitpid(-1) for its stop, SIGCONT,
 *     waitpid(-1) for its continue, with WUNTRACED|WCONTINUED as bash
 *     waits for a job;
 *   ptrace-syscall: a tracer's syscall stops, as strace's: PTRACE_SYSCALL
 *     and waitpid(-1, __WALL) for the entry stop, again for the exit stop
 *     of one system call of the tracee.
 */
#include <sys/mman.h>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* argv[1] that makes reapbench exit at once: fork-exec's program. */
#define EXEC_EXIT_ARG "exec-exit"

/* Each repeat, time M calls of @op. */
static void time_ops(void (*op)(void))
{
	uint64_t t0, t1;
	int r;
	long i;

	header(NULL);
	for (r = 0; r < o.reps; r++) {
		t0 = now_ns();
		for (i = 0; i < o.m; i++)
			op();
		t1 = now_ns();
		report(o.m, t0, t1);
	}
}

/* Reap @pid, which must have exited with status 0. */
static void reap_ok(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		die("waitpid(%d)", pid);
	expect_status(WIFEXITED(st) && WEXITSTATUS(st) == 0, st, pid);
}

static void forkwait_op(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid < 0)
		die("fork");
	reap_ok(pid);
}

/*
 * fork-exec execs this very binary, from a copy in memory: a file on the
 * guest's 9p root would be read from the host, and while the guest waits
 * for it -icount's clock jumps ahead. The copy is opened read-only for the
 * exec (a file open for writing cannot be executed: ETXTBSY).
 */
static int exe_fd = -1;

static void load_exe(void)
{
	char buf[65536], path[64];
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), mfd;
	ssize_t len;

	mfd = memfd_create("reapbench", MFD_CLOEXEC | MFD_EXEC);
	if (mfd < 0 && errno == EINVAL)		/* before Linux 6.3 */
		mfd = memfd_create("reapbench", MFD_CLOEXEC);
	if (in < 0 || mfd < 0)
		die("open /proc/self/exe, memfd_create");
	while ((len = read(in, buf, sizeof(buf))) > 0)
		xwrite(mfd, buf, len);
	if (len < 0)
		die("read /proc/self/exe");
	close(in);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	exe_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (exe_fd < 0)
		die("open %s", path);
	close(mfd);
}

static void fork_exec_op(void)
{
	static char *const argv[] = { "reapbench", EXEC_EXIT_ARG, NULL };
	static char *const envp[] = { NULL };
	pid_t pid = fork();

	if (pid == 0) {
		fexecve(exe_fd, argv, envp);
		_exit(127);
	}
	if (pid < 0)
		die("fork");
	reap_ok(pid);
}

/* Fork a member of the pipeline's group @pgid (0: a new group it leads). */
static pid_t pipeline_child(pid_t pgid, const int p[2], int writer)
{
	pid_t pid = fork();
	char c = 'x';

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (setpgid(0, pgid))
			_exit(1);
		if (writer)
			_exit(write(p[1], &c, 1) != 1);
		close(p[1]);
		_exit(read(p[0], &c, 1) != 1);
	}
	/* The shell's side: whichever runs first puts the child there. */
	if (setpgid(pid, pgid ? pgid : pid))
		die("setpgid(%d)", pid);
	return pid;
}

static void pipeline_op(void)
{
	pid_t a, b, pid;
	int p[2], st, k;

	if (pipe(p))
		die("pipe");
	a = pipeline_child(0, p, 1);
	b = pipeline_child(a, p, 0);
	close(p[0]);
	close(p[1]);
	for (k = 0; k < 2; k++) {
		pid = waitpid(-a, &st, WUNTRACED);
		expect_pid(pid, "waitpid(-pgid)");
		expect_status((pid == a || pid == b) && WIFEXITED(st) &&
			      WEXITSTATUS(st) == 0, st, pid);
	}
}

static void daemon_op(void)
{
	pid_t mid = fork(), pid;
	int st;

	if (mid < 0)
		die("fork");
	if (mid == 0) {
		if (setsid() < 0)
			_exit(1);
		pid = fork();
		if (pid == 0)
			_exit(0);	/* the daemon, whose work is done */
		_exit(pid < 0);
	}
	reap_ok(mid);
	pid = wait(&st);	/* the daemon, now ours */
	expect_pid(pid, "wait (the daemon)");
	expect_status(pid != mid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      st, pid);
}

static void daemon_setup(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		die("PR_SET_CHILD_SUBREAPER");
}

static pid_t job;	/* stop-cont's child, ptrace-syscall's tracee */

static void stop_cont_op(void)
{
	int st;

	if (kill(job, SIGSTOP) ||
	    waitpid(-1, &st, WUNTRACED | WCONTINUED) != job)
		die("stop");
	expect_status(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, st, job);
	if (kill(job, SIGCONT) ||
	    waitpid(-1, &st, WUNTRACED | WCONTINUED) != job)
		die("continue");
	expect_status(WIFCONTINUED(st), st, job);
}

static void stop_cont_setup(void)
{
	static struct stackpool jp;

	pool_init(&jp, 1);
	job = spawn_child(child_sleep, NULL, pool_top(&jp, 0), 0);
}

static void job_teardown(void)
{
	kill_reap(&job, 1);
}

static void syscall_stop(void)
{
	int st;

	if (ptrace(PTRACE_SYSCALL, job, 0, 0) ||
	    waitpid(-1, &st, __WALL) != job)
		die("PTRACE_SYSCALL, waitpid(-1, __WALL)");
	expect_status(WIFSTOPPED(st) && WSTOPSIG(st) == (SIGTRAP | 0x80),
		      st, job);
}

static void ptrace_syscall_op(void)
{
	syscall_stop();		/* entry */
	syscall_stop();		/* exit */
}

static void ptrace_syscall_setup(void)
{
	int st;

	job = fork();
	if (job < 0)
		die("fork");
	if (job == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		for (;;)
			syscall(SYS_getppid);
	}
	if (waitpid(job, &st, 0) != job)
		die("waitpid(tracee)");
	expect_status(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, st, job);
	if (ptrace(PTRACE_SETOPTIONS, job, 0, PTRACE_O_TRACESYSGOOD |
		   PTRACE_O_EXITKILL))
		die("PTRACE_SETOPTIONS");
}

enum path_kind {
	PATH_FORKWAIT, PATH_FORK_EXEC, PATH_PIPELINE, PATH_DAEMON,
	PATH_STOP_CONT, PATH_PTRACE_SYSCALL,
};

static const struct {
	void (*setup)(void), (*op)(void), (*teardown)(void);
} paths[] = {
	[PATH_FORKWAIT] = { NULL, forkwait_op, NULL },
	[PATH_FORK_EXEC] = { load_exe, fork_exec_op, NULL },
	[PATH_PIPELINE] = { NULL, pipeline_op, NULL },
	[PATH_DAEMON] = { daemon_setup, daemon_op, NULL },
	[PATH_STOP_CONT] = { stop_cont_setup, stop_cont_op, job_teardown },
	[PATH_PTRACE_SYSCALL] = { ptrace_syscall_setup, ptrace_syscall_op,
				  job_teardown },
};

static void scen_path(int kind, int b UNUSED)
{
	struct stackpool lp;
	pid_t *lng = long_lived(o.n, &lp);

	if (paths[kind].setup)
		paths[kind].setup();
	/* Untimed: the first run brings in pages (fork-exec's copy) and slabs. */
	paths[kind].op();
	time_ops(paths[kind].op);
	if (paths[kind].teardown)
		paths[kind].teardown();
	kill_reap(lng, o.n);
}

static const struct scenario path_scenarios[] = {
	{ "forkwait", 0, 200, scen_path, PATH_FORKWAIT, 0,
	  .help = "fork + _exit + waitpid(pid), M times" },
	{ "fork-exec", 0, 100, scen_path, PATH_FORK_EXEC, 0,
	  .help = "fork + exec of a program that exits + waitpid(pid)",
	  .runs = RUNS_N0 },
	{ "pipeline", 0, 100, scen_path, PATH_PIPELINE, 0,
	  .help = "two children, setpgid() both sides, waitpid(-pgid)",
	  .runs = RUNS_N0 },
	{ "daemon", 0, 100, scen_path, PATH_DAEMON, 0,
	  .help = "double fork with setsid(); both reaped",
	  .runs = RUNS_N0 },
	{ "stop-cont", 0, 200, scen_path, PATH_STOP_CONT, 0,
	  .help = "SIGSTOP, wait, SIGCONT, wait (WUNTRACED|WCONTINUED)",
	  .runs = RUNS_N0 },
	{ "ptrace-syscall", 0, 200, scen_path, PATH_PTRACE_SYSCALL, 0,
	  .help = "a tracer's two syscall stops (PTRACE_SYSCALL, wait)",
	  .runs = RUNS_N0 },
};

