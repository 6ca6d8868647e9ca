// SPDX-License-Identifier: GPL-2.0
/*
 * kthreads: the guest side of "fastreap census" and of the storm module
 * test.  Static, so that it runs in a fastreap guest from the host's
 * read-only root.
 *
 *   kthreads census
 *	Print one line per fact and one "task" line per process, for
 *	lib/census.py to classify:
 *	  online N / possible LIST / pid_max N / uptime S
 *	  init_children N PID...
 *	  task PID PPID FLAGS STATE PCOUNT RUN_NS NAME
 *
 *   kthreads test MODULE.ko [PARAM...]
 *	TAP test of the 2007 module-load storm: record init's children,
 *	load MODULE (finit_module) while sampling /proc from this thread,
 *	check that no kernel thread ever becomes a child of pid 1, that
 *	every kernel thread stays a child of kthreadd and that init's child
 *	count does not change, unload it and check that it left no kernel
 *	thread and no zombie behind.  The module's "storm:" kernel log lines
 *	are echoed as "# storm: ..." TAP diagnostics.  Exit status 1 when a
 *	test fails.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PF_KTHREAD 0x00200000u
#define KTHREADD 2
#define STORM_PREFIX "storm/"

struct task {
	int pid, ppid;
	unsigned int flags;
	char state;
	char name[80];
};

struct snap {
	struct task *t;
	int n, cap;
};

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < size - 1) {
		n = read(fd, buf + got, size - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	buf[got] = 0;
	return (int)got;
}

/* Parse /proc/PID/stat; the name may hold spaces and ')'. */
static int read_task(int pid, struct task *t)
{
	char path[64], buf[1024], *open_paren, *close_paren;
	unsigned int flags;
	int ppid;
	char state;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -1;
	if (sscanf(close_paren + 2, "%c %d %*d %*d %*d %*d %u", &state, &ppid,
		   &flags) != 3)
		return -1;
	len = close_paren - open_paren - 1;
	if (len >= sizeof(t->name))
		len = sizeof(t->name) - 1;
	memcpy(t->name, open_paren + 1, len);
	t->name[len] = 0;
	for (char *c = t->name; *c; c++)
		if (isspace((unsigned char)*c))
			*c = '_';
	t->pid = pid;
	t->ppid = ppid;
	t->flags = flags;
	t->state = state;
	return 0;
}

static void take_snap(struct snap *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	s->n = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		int pid = atoi(e->d_name);

		if (pid <= 0)
			continue;
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 1024;
			s->t = realloc(s->t, s->cap * sizeof(*s->t));
			if (!s->t) {
				perror("realloc");
				exit(2);
			}
		}
		if (read_task(pid, &s->t[s->n]) == 0)
			s->n++;
	}
	closedir(d);
}

static int is_kthread(const struct task *t)
{
	return (t->flags & PF_KTHREAD) != 0;
}

/* Number of children listed in /proc/1/task/1/children, -1 if unreadable. */
static int init_children(char *list, size_t size)
{
	char buf[65536];
	int n = 0;

	if (read_file("/proc/1/task/1/children", buf, sizeof(buf)) < 0)
		return -1;
	for (char *p = buf; *p;) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (!*p)
			break;
		n++;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	if (list) {
		snprintf(list, size, "%s", buf);
		list[strcspn(list, "\n")] = 0;
	}
	return n;
}

static int census(void)
{
	char buf[65536], possible[256] = "?", uptime[64] = "?";
	struct snap s = { 0 };
	int n;

	read_file("/sys/devices/system/cpu/possible", possible,
		  sizeof(possible));
	possible[strcspn(possible, "\n")] = 0;
	read_file("/proc/uptime", uptime, sizeof(uptime));
	uptime[strcspn(uptime, " \n")] = 0;
	printf("online %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	printf("possible %s\n", possible);
	printf("uptime %s\n", uptime);
	if (read_file("/proc/sys/kernel/pid_max", buf, sizeof(buf)) > 0)
		printf("pid_max %s", buf);
	n = init_children(buf, sizeof(buf));
	printf("init_children %d %s\n", n, buf);
	take_snap(&s);
	for (int i = 0; i < s.n; i++) {
		struct task *t = &s.t[i];
		char path[64], sched[256];
		unsigned long long run_ns = 0, wait_ns = 0;
		long long pcount = -1;

		snprintf(path, sizeof(path), "/proc/%d/schedstat", t->pid);
		if (read_file(path, sched, sizeof(sched)) > 0)
			sscanf(sched, "%llu %llu %lld", &run_ns, &wait_ns,
			       &pcount);
		printf("task %d %d 0x%x %c %lld %llu %s\n", t->pid, t->ppid,
		       t->flags, t->state, pcount, run_ns, t->name);
	}
	free(s.t);
	return 0;
}

/* --- the storm test ------------------------------------------------------ */

static int tap_n, tap_failed;

static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failed++;
}

struct loader {
	int fd;
	const char *params;
	int ret, err;
	volatile int done;
};

static void *load(void *arg)
{
	struct loader *l = arg;

	l->ret = syscall(SYS_finit_module, l->fd, l->params, 0);
	l->err = errno;
	__atomic_store_n(&l->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct check {
	int kthreads, not_kthreadd, of_init, storm, zombies, dying;
	char first_bad[160];
};

static void check_snap(const struct snap *s, struct check *c)
{
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < s->n; i++) {
		const struct task *t = &s->t[i];

		if (t->state == 'Z')
			c->zombies++;
		if (!is_kthread(t))
			continue;
		c->kthreads++;
		if (!strncmp(t->name, STORM_PREFIX, strlen(STORM_PREFIX)))
			c->storm++;
		if (t->pid == KTHREADD)
			continue;
		/*
		 * /proc shows ppid 0 once a task has been released (it is
		 * exiting and already unhashed): not a parent at all.
		 */
		if (t->ppid == 0) {
			c->dying++;
			continue;
		}
		if (t->ppid == 1)
			c->of_init++;
		if (t->ppid != KTHREADD) {
			if (!c->not_kthreadd)
				snprintf(c->first_bad, sizeof(c->first_bad),
					 "%d %s ppid %d", t->pid, t->name,
					 t->ppid);
			c->not_kthreadd++;
		}
	}
}

/* Echo the kernel log records written since kmsg_fd was opened. */
static int echo_storm_log(int kmsg_fd, int *summary)
{
	char rec[8192];
	int lines = 0;

	*summary = 0;
	for (;;) {
		ssize_t n = read(kmsg_fd, rec, sizeof(rec) - 1);
		char *msg;

		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: skip */
		if (n <= 0)
			break;
		rec[n] = 0;
		msg = strchr(rec, ';');
		if (!msg || strncmp(msg + 1, "storm: ", 7))
			continue;
		msg++;
		msg[strcspn(msg, "\n")] = 0;
		printf("# %s\n", msg);
		lines++;
		if (strstr(msg, "storm: summary "))
			*summary = 1;
	}
	fflush(stdout);
	return lines;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int storm_test(const char *ko, const char *params)
{
	char name[256], *dot, errbuf[256];
	struct snap s = { 0 };
	struct check c0, c;
	struct loader l = { .params = params };
	pthread_t th;
	int init0, kmsg, samples = 0, bad_samples = 0, init_changed = 0;
	int max_storm = 0, summary = 0, max_of_init = 0;
	double t0, load_s;
	const char *base = strrchr(ko, '/') ? strrchr(ko, '/') + 1 : ko;

	snprintf(name, sizeof(name), "%s", base);
	dot = strstr(name, ".ko");
	if (dot)
		*dot = 0;

	printf("TAP version 13\n1..13\n");
	init0 = init_children(NULL, 0);
	tap(init0 >= 0, "init's children readable from /proc/1/task/1/children (%d)",
	    init0);
	take_snap(&s);
	check_snap(&s, &c0);
	tap(c0.kthreads > 0 && !c0.not_kthreadd,
	    "before load: all %d kernel threads are children of kthreadd%s%s",
	    c0.kthreads, c0.not_kthreadd ? "; not: " : "", c0.first_bad);

	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg >= 0)
		lseek(kmsg, 0, SEEK_END);
	l.fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (l.fd < 0) {
		snprintf(errbuf, sizeof(errbuf), "%s", strerror(errno));
		tap(0, "load %s: %s", ko, errbuf);
		printf("Bail out! cannot open the module\n");
		return 1;
	}
	t0 = now();
	if (pthread_create(&th, NULL, load, &l)) {
		printf("Bail out! pthread_create failed\n");
		return 1;
	}
	/* Sample while the module's init runs: the storm is in there. */
	while (!__atomic_load_n(&l.done, __ATOMIC_ACQUIRE)) {
		int n = init_children(NULL, 0);

		take_snap(&s);
		check_snap(&s, &c);
		samples++;
		if (c.of_init || c.not_kthreadd) {
			bad_samples++;
			if (c.of_init > max_of_init)
				max_of_init = c.of_init;
			if (bad_samples == 1)
				printf("# bad sample: %d kthreads of init, first not of kthreadd: %s\n",
				       c.of_init, c.first_bad);
		}
		if (n != init0)
			init_changed++;
		if (c.storm > max_storm)
			max_storm = c.storm;
	}
	pthread_join(th, NULL);
	load_s = now() - t0;
	close(l.fd);
	printf("# module: %s\n", ko);
	tap(l.ret == 0, "finit_module(%s, \"%s\") = %d%s%s (%.3f s)", base,
	    params, l.ret, l.ret ? " " : "", l.ret ? strerror(l.err) : "",
	    load_s);
	printf("# sampler: %d samples of /proc during the load, up to %d storm threads seen at once\n",
	       samples, max_storm);
	tap(!bad_samples,
	    "during the storm no kernel thread was a child of pid 1 (%d of %d samples bad, up to %d)",
	    bad_samples, samples, max_of_init);
	tap(!init_changed,
	    "during the storm init's child count stayed %d (%d samples differed)",
	    init0, init_changed);

	take_snap(&s);
	check_snap(&s, &c);
	tap(!c.not_kthreadd && !c.of_init,
	    "after load: all %d kernel threads are children of kthreadd%s%s",
	    c.kthreads, c.not_kthreadd ? "; not: " : "", c.first_bad);
	tap(init_children(NULL, 0) == init0,
	    "after load: init has %d children, as before (%d)",
	    init_children(NULL, 0), init0);
	if (kmsg >= 0)
		echo_storm_log(kmsg, &summary);
	tap(summary, "the module reported its storm timings");

	if (l.ret == 0) {
		int r = syscall(SYS_delete_module, name, O_NONBLOCK);

		snprintf(errbuf, sizeof(errbuf), "%s",
			 r ? strerror(errno) : "");
		tap(r == 0, "delete_module(%s) = %d%s%s", name, r,
		    r ? " " : "", errbuf);
	} else {
		tap(0, "delete_module(%s): not loaded", name);
	}
	/* Exiting tasks are reaped asynchronously: give them a moment. */
	for (int i = 0; i < 50; i++) {
		take_snap(&s);
		check_snap(&s, &c);
		if (!c.storm && !c.zombies)
			break;
		usleep(20000);
	}
	tap(!c.storm, "after unload: no %s* kernel thread is left (%d leaked)",
	    STORM_PREFIX, c.storm);
	tap(!c.zombies, "after unload: no zombie anywhere (%d)", c.zombies);
	tap(!c.not_kthreadd && !c.of_init,
	    "after unload: all %d kernel threads are children of kthreadd%s%s",
	    c.kthreads, c.not_kthreadd ? "; not: " : "", c.first_bad);
	tap(init_children(NULL, 0) == init0,
	    "after unload: init has %d children, as before (%d)",
	    init_children(NULL, 0), init0);
	if (kmsg >= 0) {
		echo_storm_log(kmsg, &summary);
		close(kmsg);
	}
	printf("# %d of %d failed\n", tap_failed, tap_n);
	free(s.t);
	return tap_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	char params[1024] = "";

	if (argc >= 2 && !strcmp(argv[1], "census"))
		return census();
	if (argc >= 3 && !strcmp(argv[1], "test")) {
		for (int i = 3; i < argc; i++) {
			if (strlen(params) + strlen(argv[i]) + 2 > sizeof(params))
				break;
			if (*params)
				strcat(params, " ");
			strcat(params, argv[i]);
		}
		return storm_test(argv[2], params);
	}
	fprintf(stderr, "usage: %s census | test MODULE.ko [PARAM=VALUE...]\n",
		argv[0]);
	return 2;
}
