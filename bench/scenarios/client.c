// SPDX-License-Identifier: GPL-2.0
/*
 * client: the workloads that ./fastreap bench runs real programs around
 * (Debian's tini, dumb-init, catatonit, strace and bash; bench/README.md).
 * What is timed is the real program's reaping.
 *
 *   orphans: run as the only child of a pid namespace's init, orphan N
 *     processes to it, then a burst of M, and time its reaping of the M;
 *   spawn: M short jobs, followed by a tracer (-- strace -f ...);
 *   shell: exec a job-control shell (-- bash) that runs M commands.
 */
#include <sys/epoll.h>

/* A line of output with CPU times (user, system; ns) per operation. */
static void report_cpu(long m, uint64_t t0, uint64_t t1, const uint64_t c0[2],
		       const uint64_t c1[2])
{
	printf("%s,%ld,%ld,%llu,%llu,%llu,%llu\n", o.scen, o.n, m,
	       (unsigned long long)(t1 - t0),
	       (unsigned long long)((t1 - t0) / (m ? m : 1)),
	       (unsigned long long)((c1[0] - c0[0]) / (m ? m : 1)),
	       (unsigned long long)((c1[1] - c0[1]) / (m ? m : 1)));
	fflush(stdout);
}

/*
 * orphans: the workload of a real init (tini, dumb-init, catatonit) that is
 * pid 1 of a new pid namespace, run as its only child:
 *
 *   unshare -fp --mount-proc tini -- reapbench orphans -n N -m M
 *
 * N long-lived processes are orphaned first (their parent exits), so the
 * init adopts them at the head of its children list, behind only us. Each
 * repeat then orphans M gated children behind them, opens the gate, and
 * times until the init has reaped all M with its own loop. Timed: from the
 * burst of exits until the last one is reaped (as reenact).
 *
 * The observer must not cost O(N) per check (/proc scans do), nor take the
 * CPU from the init. It holds a pidfd per child in an epoll set that asks
 * for nothing but EPOLLHUP: an exit wakes pidfd waiters with the key
 * EPOLLIN, which epoll filters out; the reap (detach_pid()) wakes them with
 * no key, and pidfd_poll() then says EPOLLHUP. So it wakes at most once per
 * reap, at O(1) cost, the same on every kernel. And it runs SCHED_IDLE
 * (weight 3 against 1024), so with one CPU it runs only when the init and
 * the children are asleep: the clock stops when the init has finished its
 * reaping loop, including the last WNOHANG poll that finds nothing.
 * Extra columns: the init's user and system CPU time per reaped child.
 */
static void scen_orphans(NO_ARGS)
{
	struct sched_param sp = { 0 };
	struct stackpool pool;
	struct epoll_event ev, *evs = xcalloc(o.m, sizeof(*evs));
	struct rlimit rl;
	pid_t *sht = xcalloc(o.m, sizeof(*sht)), pid;
	int *pfd = xcalloc(o.m, sizeof(*pfd)), gate[2], ep, r, k;
	uint64_t t0, t1, c0[2], c1[2];
	long i, got;

	if (getpid() == 1 || getppid() != 1) {
		errno = EINVAL;
		die("orphans: run me as the only child of a pid namespace's "
		    "init (unshare -fp --mount-proc tini -- reapbench orphans)");
	}
	/* One pidfd per child of a burst. */
	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit");
	if (rl.rlim_cur < (rlim_t)o.m + 64) {
		rl.rlim_cur = o.m + 64;
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			die("RLIMIT_NOFILE %ld", o.m + 64);
	}
	/* The N: a child makes them and exits, and the init adopts them. */
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		g_orphans = 1;
		long_lived(o.n, &pool);
		_exit(0);
	}
	if (waitpid(pid, NULL, 0) != pid)
		die("waitpid");
	/* Children we make from now on run SCHED_OTHER again. */
	if (sched_setscheduler(0, SCHED_IDLE | SCHED_RESET_ON_FORK, &sp))
		die("sched_setscheduler(SCHED_IDLE)");
	header(",init_user_ns,init_sys_ns");
	for (r = 0; r < o.reps; r++) {
		/* once their parent is reaped, the M are the init's */
		modprobe_burst(sht, o.m, gate, NULL);
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0)
			die("epoll_create1");
		for (i = 0; i < o.m; i++) {
			pfd[i] = syscall(SYS_pidfd_open, sht[i], 0);
			if (pfd[i] < 0)
				die("pidfd_open(%d)", sht[i]);
			/* EPOLLHUP is implied; ONESHOT: report each reap once */
			ev.events = EPOLLONESHOT;
			ev.data.u64 = i;
			if (epoll_ctl(ep, EPOLL_CTL_ADD, pfd[i], &ev))
				die("epoll_ctl");
		}
		/* Every child asleep on the gate, the init idle. */
		for (i = 0; i < o.m; i++)
			while (proc_stat(sht[i], NULL, NULL) != 'S')
				sched_yield();
		proc_stat(1, &c0[0], &c0[1]);
		t0 = now_ns();
		close(gate[1]);
		for (got = 0; got < o.m; got += k) {
			k = epoll_wait(ep, evs, o.m, 600 * 1000);
			if (k < 0 && errno == EINTR)
				k = 0;
			else if (k <= 0)
				die("the init reaped %ld of %ld orphans", got, o.m);
		}
		t1 = now_ns();
		proc_stat(1, &c1[0], &c1[1]);
		report_cpu(o.m, t0, t1, c0, c1);
		for (i = 0; i < o.m; i++)
			close(pfd[i]);
		close(ep);
	}
	/* The N die with the namespace when the init follows us. */
}

/*
 * spawn: a process holding N children starts M short jobs one after the
 * other and reaps each by pid, followed by a tracer (strace -f). A job is
 * what glibc's posix_spawn() makes, a clone(CLONE_VM|CLONE_VFORK), minus
 * the exec: fork() itself grows with N on every kernel (forkwait in
 * docs/results.md). And waitpid(pid) looks the job up by pid, so whatever
 * grows with N is the tracer's. Extra columns: the tracer's user and
 * system CPU time per job.
 *
 * The tracer is either our tracer already (strace -f reapbench spawn) or
 * the command after "--", started once the N exist with "-p PID,..." for
 * them and for us appended (strace -f -p). The second holds the same N+1
 * tracees and follows the jobs the same way, without seeing the N start
 * and die: on a stock kernel each of those events costs the tracer O(N),
 * O(N^2) in all, minutes of TCG at N = 10,000 before the clock starts.
 */

/* State letter and TracerPid of process @pid; state 0 if it is gone. */
static char proc_status(pid_t pid, pid_t *tracer)
{
	char path[64], line[256], state = 0;
	int tp = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "State: %c", &state) == 1)
			continue;
		else if (sscanf(line, "TracerPid: %d", &tp) == 1)
			break;
	if (f)
		fclose(f);
	if (tracer)
		*tracer = tp;
	return state;
}

/* Run @cmd with "-p PID,PID,..." for @pids and ourselves appended. */
static pid_t start_tracer(char **cmd, const pid_t *pids, long n)
{
	enum { PER_ARG = 4096 }; /* pids per -p: far below MAX_ARG_STRLEN */
	long ncmd = 0, nargs, a, i, k;
	char **argv, *buf;
	pid_t pid;

	while (cmd[ncmd])
		ncmd++;
	nargs = ncmd + 2 * (n / PER_ARG + 2) + 1;
	argv = xcalloc(nargs, sizeof(*argv));
	buf = xcalloc(n + 1, 12);
	memcpy(argv, cmd, ncmd * sizeof(*argv));
	a = ncmd;
	for (i = 0; i < n; i += PER_ARG) {
		argv[a++] = "-p";
		argv[a++] = buf;
		for (k = i; k < n && k < i + PER_ARG; k++)
			buf += sprintf(buf, "%s%d", k > i ? "," : "", pids[k]);
		buf++;
	}
	argv[a++] = "-p";
	sprintf(buf, "%d", (int)getpid());
	argv[a++] = buf;
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		execvp(argv[0], argv);
		die("exec %s", argv[0]);
	}
	free(argv);
	return pid;
}

/*
 * In an untraced child: wait until @pids and our parent are all traced and
 * asleep again, i.e. the tracer has attached and is idle.
 */
static void wait_attached(const pid_t *pids, long n)
{
	pid_t parent = getppid(), tracer;
	uint64_t give_up = now_ns() + 600 * 1000000000ull;
	long i;

	for (i = -1; i < n; i++)
		while (proc_status(i < 0 ? parent : pids[i], &tracer) != 'S' ||
		       !tracer) {
			if (now_ns() > give_up)
				_exit(1);
			usleep(1000);
		}
	_exit(0);
}

static void spawn_jobs(long m, char *stack_top)
{
	long i;
	pid_t pid;
	int st;

	for (i = 0; i < m; i++) {
		pid = clone(child_exit0, stack_top, CLONE_VM | CLONE_VFORK |
			    SIGCHLD, NULL);
		if (pid < 0)
			die("clone(CLONE_VFORK)");
		if (waitpid(pid, &st, 0) != pid)
			die("waitpid(job)");
	}
}

static void scen_spawn(NO_ARGS)
{
	char **tracer_cmd = o.cmd;
	size_t stk = 64 * 1024;
	char *stack = mmap(NULL, stk, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pid_t *lng, tracer = 0, checker;
	uint64_t t0, t1, c0[2] = { 0, 0 }, c1[2] = { 0, 0 };
	struct stackpool lp;
	int r, st;

	if (stack == MAP_FAILED)
		die("mmap");
	lng = long_lived(o.n, &lp);
	proc_status(getpid(), &tracer);
	if (tracer_cmd) {
		if (tracer)
			die("spawn: already traced, no tracer to start");
		t0 = now_ns();
		checker = fork();
		if (checker < 0)
			die("fork");
		if (checker == 0)
			wait_attached(lng, o.n);
		tracer = start_tracer(tracer_cmd, lng, o.n);
		if (waitpid(checker, &st, 0) != checker || st != 0) {
			errno = ETIMEDOUT;
			die("spawn: %s did not attach", tracer_cmd[0]);
		}
		printf("# %s: attached to %ld processes in %.0f ms\n", o.scen,
		       o.n + 1, (now_ns() - t0) / 1e6);
	}
	/* Untimed: a tracer's first jobs allocate its per-tracee state. */
	spawn_jobs(o.m, stack + stk);
	header(",tracer_user_ns,tracer_sys_ns");
	for (r = 0; r < o.reps; r++) {
		if (tracer)
			proc_stat(tracer, &c0[0], &c0[1]);
		t0 = now_ns();
		spawn_jobs(o.m, stack + stk);
		t1 = now_ns();
		if (tracer)
			proc_stat(tracer, &c1[0], &c1[1]);
		report_cpu(o.m, t0, t1, c0, c1);
	}
	if (tracer_cmd) {
		/*
		 * strace detaches on SIGTERM (by pid, O(1) each), then exits.
		 * A tracer that does not (seen: strace under strace) must not
		 * hang the run: a minute, then SIGKILL, which detaches too.
		 */
		uint64_t give_up = now_ns() + 60 * 1000000000ull;

		kill(tracer, SIGTERM);
		while (waitpid(tracer, &st, WNOHANG) == 0) {
			if (now_ns() > give_up) {
				kill(tracer, SIGKILL);
				waitpid(tracer, &st, 0);
				errno = ETIMEDOUT;
				die("spawn: %s did not exit on SIGTERM",
				    tracer_cmd[0]);
			}
			usleep(10000);
		}
	}
	kill_reap(lng, o.n);
}

/*
 * shell: a job-control shell holding N children runs M commands, one after
 * the other. We make the N, then exec the shell after "--" (bash) on a
 * script that times M subshells, "( : )", with job control on: bash reaps
 * each with wait4(-1, WSTOPPED|WCONTINUED) and polls wait4(-1, WNOHANG|
 * WSTOPPED|WCONTINUED) until it returns 0, two waits beside the N per
 * command (seen with strace -f). A subshell is a fork without an exec: an
 * exec reads its binary over the guest's 9p root, and while the guest
 * waits for the host, -icount's clock jumps ahead: samples of one boot
 * differed up to 12x. The N are the shell's children but not its
 * jobs, as after "disown": bash walks its own job table for every
 * command, and what grows with N here is then the kernel's alone. Its
 * EPOCHREALTIME is the guest's CLOCK_REALTIME, which -icount drives too.
 */
static void scen_shell(NO_ARGS)
{
	char **shell = o.cmd;
	struct stackpool pool;
	char script[1024];

	if (!shell)
		die("shell: name the shell after \"--\" (reapbench shell -- bash)");
	/* The shell's children, not its jobs: it never knows their pids. */
	long_lived(o.n, &pool);
	snprintf(script, sizeof(script),
		 "set -m\n"
		 "for ((r = 0; r < %d; r++)); do\n"
		 "	t0=$EPOCHREALTIME\n"
		 "	for ((i = 0; i < %ld; i++)); do ( : ); done\n"
		 "	t1=$EPOCHREALTIME\n"
		 "	ns=$(( (10#${t1/./} - 10#${t0/./}) * 1000 ))\n"
		 "	echo \"%s,%ld,%ld,$ns,$((ns / %ld))\"\n"
		 "done\n", o.reps, o.m, o.scen, o.n, o.m, o.m ? o.m : 1);
	/* "." in EPOCHREALTIME, whatever the guest's locale */
	setenv("LC_ALL", "C", 1);
	execlp(shell[0], shell[0], "-c", script, (char *)NULL);
	die("exec %s", shell[0]);
}

static const struct scenario client_scenarios[] = {
	{ "orphans", 1000, 512, scen_orphans, 0, 0,
	  .help = "child of a pid ns init: time its reaping of M",
	  .runs = RUNS_CLIENT },
	{ "spawn", 1000, 100, scen_spawn, 0, 0,
	  .help = "vfork-like job + waitpid(pid) x M [-- TRACER]",
	  .runs = RUNS_CLIENT },
	{ "shell", 1000, 50, scen_shell, 0, 0,
	  .help = "-- bash: a job-control shell runs M commands",
	  .runs = RUNS_CLIENT },
};
