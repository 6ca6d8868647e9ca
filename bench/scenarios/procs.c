// SPDX-License-Identifier: GPL-2.0
/*
 * procs: the lives of many processes at once.
 *
 *   pidns: a pid namespace of N processes torn down;
 *   mixed: a container init with N services and a churn of short jobs;
 *   mem: the memory and time it takes to make N long-lived children.
 */
#include <stdatomic.h>

static int ns_init(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct stackpool pool;

	long_lived(o.n - 1, &pool);
	if (write(fd, "r", 1) != 1)
		_exit(1);
	child_sleep(NULL);
	return 0;
}

/*
 * Time from kill(init, SIGKILL) until waitpid(init) returns, i.e. until
 * zap_pid_ns_processes() has reaped the namespace's N-1 other processes.
 */
static void scen_pidns(NO_ARGS)
{
	int flags = CLONE_NEWPID | (geteuid() ? CLONE_NEWUSER : 0);
	size_t stk = 1 << 20;
	char *stack = mmap(NULL, stk, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	int rp[2], r;
	pid_t init;
	char c;
	uint64_t t0, t1;

	if (stack == MAP_FAILED)
		die("mmap");
	if (o.n < 1)
		o.n = 1;
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		if (pipe(rp))
			die("pipe");
		/* No CLONE_VM: the ns init gets its own copy of memory. */
		init = clone(ns_init, stack + stk, flags | SIGCHLD,
			     (void *)(intptr_t)rp[1]);
		if (init < 0)
			die("clone(CLONE_NEWPID)");
		close(rp[1]);
		if (read(rp[0], &c, 1) != 1)
			die("pid namespace init failed");
		close(rp[0]);
		t0 = now_ns();
		kill(init, SIGKILL);
		if (waitpid(init, NULL, 0) != init)
			die("waitpid(ns init)");
		t1 = now_ns();
		report(o.n, t0, t1);
	}
}

/* ---- mixed: a container init with services and a churn of short jobs ---- */

struct mixed_shm {
	atomic_long exited;
	uint64_t ts[]; /* indexed by pid: CLOCK_MONOTONIC just before _exit */
};

static struct mixed_shm *mshm;
static long mshm_pids;

static int mixed_job(void *arg)
{
	long pid = syscall(SYS_getpid);

	(void)arg;
	if (pid < mshm_pids)
		mshm->ts[pid] = now_ns();
	atomic_fetch_add(&mshm->exited, 1);
	syscall(SYS_exit_group, 0);
	return 0;
}

/*
 * The spawner is a child of the reaper; it starts each job with
 * clone(CLONE_PARENT|CLONE_VFORK|CLONE_VM), so jobs are the reaper's
 * children (queued behind the N services) and one stack is enough.
 */
static void mixed_spawner(void)
{
	char *stack = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	uint64_t next = now_ns(), t, step = o.interval_us * 1000ull;
	struct timespec ts;
	long j;

	if (stack == MAP_FAILED)
		die("mmap");
	for (j = 0; j < o.m; j++) {
		if (clone(mixed_job, stack + 64 * 1024,
			  CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD,
			  NULL) < 0)
			die("clone(CLONE_PARENT)");
		next += step;
		t = now_ns();
		if (next < t) {
			next = t; /* no catch-up bursts: a steady churn */
			continue;
		}
		ts.tv_sec = next / 1000000000ull;
		ts.tv_nsec = next % 1000000000ull;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
				       NULL) == EINTR)
			;
	}
	_exit(0);
}

/* With -v: the zombie backlog over time, 20 buckets, max per bucket. */
static void print_backlog(uint64_t span, const uint64_t *samp_t,
			  const long *samp_b)
{
	uint64_t b = span / 20 + 1;
	long nb, i;

	for (nb = 0; nb < 20; nb++) {
		long mx = 0;

		for (i = 0; i < o.m; i++)
			if (samp_t[i] / b == (uint64_t)nb && samp_b[i] > mx)
				mx = samp_b[i];
		printf("# backlog t_ms=%.1f zombies_max=%ld\n", nb * b / 1e6,
		       mx);
	}
}

static void scen_mixed(NO_ARGS)
{
	uint64_t *lat = xcalloc(o.m, sizeof(*lat));
	uint64_t *samp_t = xcalloc(o.m, sizeof(uint64_t));
	long *samp_b = xcalloc(o.m, sizeof(long));
	struct stackpool lp;
	pid_t *lng;
	long reaped, backlog, bmax;
	double bsum;
	int r, st, spawner_done, blocking;
	pid_t spawner, pid;
	uint64_t t0, t1, t;
	size_t sz;

	mshm_pids = read_long("/proc/sys/kernel/pid_max") + 1;
	if (mshm_pids < 32769)
		mshm_pids = 4194305;
	sz = sizeof(*mshm) + mshm_pids * sizeof(uint64_t);
	mshm = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mshm == MAP_FAILED)
		die("mmap shared");
	lng = long_lived(o.n, &lp);
	header(",p50_ns,p99_ns,max_ns,backlog_max,backlog_mean");
	for (r = 0; r < o.reps; r++) {
		atomic_store(&mshm->exited, 0);
		reaped = 0;
		bmax = 0;
		bsum = 0;
		spawner_done = 0;
		t0 = now_ns();
		spawner = fork();
		if (spawner < 0)
			die("fork");
		if (spawner == 0)
			mixed_spawner();
		/* tini: block in wait(-1), then WNOHANG until nothing is left */
		while (reaped < o.m || !spawner_done) {
			blocking = 1;
			for (;;) {
				pid = waitpid(-1, &st, blocking ? 0 : WNOHANG);
				if (pid < 0 && errno == EINTR)
					continue;
				if (pid < 0 && errno == ECHILD &&
				    reaped == o.m && spawner_done)
					break;
				if (pid < 0)
					die("waitpid(-1)");
				if (pid == 0)
					break;
				blocking = 0;
				t = now_ns();
				if (pid == spawner) {
					spawner_done = 1;
					continue;
				}
				if (reaped >= o.m) {
					errno = 0;
					die("reaped unexpected child %d", pid);
				}
				lat[reaped] = pid < mshm_pids &&
					t > mshm->ts[pid] ?
					t - mshm->ts[pid] : 0;
				reaped++;
				backlog = atomic_load(&mshm->exited) - reaped;
				if (backlog < 0)
					backlog = 0;
				samp_t[reaped - 1] = t - t0;
				samp_b[reaped - 1] = backlog;
				if (backlog > bmax)
					bmax = backlog;
				bsum += backlog;
			}
		}
		t1 = now_ns();
		if (o.verbose)
			print_backlog(t1 - t0, samp_t, samp_b);
		qsort(lat, o.m, sizeof(*lat), cmp_u64);
		printf("%s,%ld,%ld,%llu,%llu,%llu,%llu,%llu,%ld,%.1f\n",
		       o.scen, o.n, o.m, (unsigned long long)(t1 - t0),
		       (unsigned long long)((t1 - t0) / (o.m ? o.m : 1)),
		       (unsigned long long)(o.m ? lat[o.m / 2] : 0),
		       (unsigned long long)(o.m ? lat[(o.m * 99) / 100] : 0),
		       (unsigned long long)(o.m ? lat[o.m - 1] : 0),
		       bmax, o.m ? bsum / o.m : 0.0);
		fflush(stdout);
	}
	kill_reap(lng, o.n);
}

/* ---- mem: memory and time it takes to create N long-lived children ---- */

static long meminfo_kib(const char *field)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t len = strlen(field);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			v = atol(line + len + 1);
			break;
		}
	fclose(f);
	return v;
}

static void scen_mem(NO_ARGS)
{
	static const char *const fields[] = {
		"MemAvailable", "KernelStack", "PageTables", "Slab",
	};
	long before[4], after[4];
	pid_t *lng = xcalloc(o.n, sizeof(*lng));
	struct stackpool lp;
	uint64_t t0, t1;
	int r, k;

	pool_init(&lp, o.n);
	header(",kib_per_child_memavail,kib_kstack,kib_pagetables,kib_slab");
	for (r = 0; r < o.reps; r++) {
		for (k = 0; k < 4; k++)
			before[k] = meminfo_kib(fields[k]);
		t0 = now_ns();
		make_sleepers(lng, o.n, &lp);
		t1 = now_ns();
		for (k = 0; k < 4; k++)
			after[k] = meminfo_kib(fields[k]);
		printf("%s,%ld,%ld,%llu,%llu,%.1f,%.1f,%.1f,%.1f\n", o.scen,
		       o.n, o.n, (unsigned long long)(t1 - t0),
		       (unsigned long long)((t1 - t0) / (o.n ? o.n : 1)),
		       (double)(before[0] - after[0]) / (o.n ? o.n : 1),
		       (double)(after[1] - before[1]) / (o.n ? o.n : 1),
		       (double)(after[2] - before[2]) / (o.n ? o.n : 1),
		       (double)(after[3] - before[3]) / (o.n ? o.n : 1));
		fflush(stdout);
		kill_reap(lng, o.n);
	}
}

static const struct scenario procs_scenarios[] = {
	{ "pidns", 1000, 0, scen_pidns, 0, 0,
	  .help = "kill a pid ns init of N processes, reap it" },
	{ "mixed", 1000, 200, scen_mixed, 0, 0,
	  .help = "N services + M short jobs: reap latency" },
	{ "mem", 1000, 0, scen_mem, 0, 0,
	  .help = "KiB of memory per long-lived child (meminfo)",
	  .runs = RUNS_MANUAL },
};
