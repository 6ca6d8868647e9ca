// SPDX-License-Identifier: GPL-2.0
/*
 * Multi-threaded children and their group leader.
 *
 * Delayed group leader: the child's leader thread exits while another
 * thread runs on.  The leader is a zombie in /proc but the child is not
 * reapable (WNOHANG: 0, WNOWAIT: nothing) and no SIGCHLD is sent until
 * the last thread is gone.  The status reported is the group exit code:
 * that of exit_group() or the fatal signal if the group exited so, else
 * the code the *last* thread passed to exit(2) (it sets the group exit
 * code when it finds itself last), not the leader's.
 *
 * exec from a non-leader thread: the exec'ing thread takes over the
 * leader's pid; the parent sees exactly one exit, under that pid, with
 * the new image's status, and never a report for the old leader.  A
 * traced thread that execs keeps the report its tracer has not taken,
 * and when the tracer is a sibling thread of the parent, the parent's own
 * __WNOTHREAD waits now find it too.
 */
#include "wait_util.h"

#include <dirent.h>
#include <sys/ptrace.h>

#define EXEC_CHILD_ARG "--wait-leader-exec-child"

enum t_end {
	T_EXIT,		/* last thread: exit(2) of that thread only */
	T_EXIT_GROUP,	/* last thread: exit_group(2) */
	T_KILLED,	/* the test sends SIGTERM */
};

FIXTURE(leader) {
	struct gate g;
	struct gate ready;
	sigset_t old;
};

FIXTURE_VARIANT(leader) {
	bool pthread_exit;	/* leader leaves via pthread_exit() */
	int leader_code;	/* else via exit(2) with this code */
	enum t_end how;
	int t_code;
	int code;		/* expected report */
	int status;
};

FIXTURE_VARIANT_ADD(leader, thread_exit_reports_last_code) {
	.leader_code = 3, .how = T_EXIT, .t_code = 9,
	.code = CLD_EXITED, .status = 9,
};
FIXTURE_VARIANT_ADD(leader, pthread_exit_leader) {
	.pthread_exit = true, .how = T_EXIT, .t_code = 7,
	.code = CLD_EXITED, .status = 7,
};
FIXTURE_VARIANT_ADD(leader, exit_group_reports_group_code) {
	.leader_code = 3, .how = T_EXIT_GROUP, .t_code = 9,
	.code = CLD_EXITED, .status = 9,
};
FIXTURE_VARIANT_ADD(leader, killed_reports_signal) {
	.leader_code = 3, .how = T_KILLED,
	.code = CLD_KILLED, .status = SIGTERM,
};

FIXTURE_SETUP(leader)
{
	sigset_t set;

	ASSERT_EQ(0, gate_init(&self->g));
	ASSERT_EQ(0, note_init(&self->ready));
	/* Keep SIGCHLD pending to see when it is sent. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	ASSERT_EQ(0, sigprocmask(SIG_BLOCK, &set, &self->old));
}

FIXTURE_TEARDOWN(leader)
{
}

struct dl_arg {
	const FIXTURE_VARIANT(leader) *v;
	struct gate *g;
	struct gate *ready;
	pid_t pid;		/* the child, for the releaser */
};

static void *dl_thread(void *p)
{
	struct dl_arg *a = p;

	if (!gate_pass(a->g))
		syscall(__NR_exit_group, WU_ORPHANED);
	if (a->v->how == T_EXIT_GROUP)
		syscall(__NR_exit_group, a->v->t_code);
	syscall(__NR_exit, a->v->t_code);
	return NULL;
}

static int dl_child(void *p)
{
	struct dl_arg *a = p;
	pthread_t th;

	CHILD_CHECK(!pthread_create(&th, NULL, dl_thread, a));
	CHILD_CHECK(!note_send(a->ready));
	if (a->v->pthread_exit)
		pthread_exit(NULL);
	/* The leader thread alone: not exit_group. */
	syscall(__NR_exit, a->v->leader_code);
	return WU_CHILD_FAIL;
}

static bool sigchld_pending(void)
{
	sigset_t set;

	sigpending(&set);
	return sigismember(&set, SIGCHLD);
}

static void release_or_kill(void *p)
{
	struct dl_arg *a = p;

	if (a->v->how == T_KILLED)
		kill(a->pid, SIGTERM);
	else
		gate_open(a->g, 1);
}

TEST_F(leader, delayed_leader)
{
	struct dl_arg a = { variant, &self->g, &self->ready, 0 };
	struct releaser rel;
	struct wres r;
	pid_t pid;

	pid = spawn(dl_child, &a);
	ASSERT_GT(pid, 0);
	ASSERT_TRUE(note_recv(&self->ready));
	/* The leader is dead (a zombie thread), the other thread runs. */
	wait_proc_state(pid, pid, 'Z');

	for (int k = WK_WAITPID_ANY; k <= WK_WAITID_PIDFD; k++) {
		int fd = sys_pidfd_open(pid, 0);

		/* Not reapable yet, nothing to see yet. */
		ASSERT_GE(fd, 0);
		wk_wait(k, pid, getpgrp(), fd, WNOHANG | __WALL, &r);
		ASSERT_WRES_NONE(k, r);
		if (wk_is_waitid(k)) {
			wk_wait(k, pid, getpgrp(), fd, WNOHANG | WNOWAIT, &r);
			ASSERT_WRES_NONE(k, r);
		}
		close(fd);
	}
	ASSERT_FALSE(sigchld_pending());

	/* Blocks until the last thread is gone. */
	a.pid = pid;
	ASSERT_EQ(0, releaser_start(&rel, release_or_kill, &a));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES(WK_WAITPID_PID, r, pid, variant->code, variant->status);
	ASSERT_TRUE(sigchld_pending());
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * waitid() of @pid's process group, of every child, of @pid and of
 * @pidfd with @opts as they are (wk_wait() adds WEXITED): each reports
 * (@pid, @code, @status), or nothing if @code is 0.
 */
static void dl_expect(struct __test_metadata *_metadata, pid_t pid, int pidfd,
		      int opts, int code, int status)
{
	const struct { idtype_t type; id_t id; } ways[] = {
		{ P_ALL, 0 }, { P_PGID, 0 }, { P_PID, pid }, { P_PIDFD, pidfd },
	};
	siginfo_t si;

	for (unsigned int i = 0; i < ARRAY_SIZE(ways); i++) {
		memset(&si, 0x5a, sizeof(si));
		ASSERT_EQ(0, sys_waitid(ways[i].type, ways[i].id, &si, opts,
					NULL));
		ASSERT_EQ(code ? pid : 0, si.si_pid);
		if (code) {
			ASSERT_EQ(code, si.si_code);
			ASSERT_EQ(status, si.si_status);
		}
	}
}

/*
 * The process of a delayed leader still stops and is continued: its
 * leader is a zombie, but the process is not reapable, so a wait for
 * stops or continues alone finds nothing before (not ECHILD), then its
 * stop, then its continue, by P_ALL and P_PGID as by P_PID.
 */
TEST_F(leader, delayed_leader_stops_and_continues)
{
	struct dl_arg a = { variant, &self->g, &self->ready, 0 };
	struct releaser rel;
	struct wres r;
	pid_t pid;
	int fd;

	pid = spawn(dl_child, &a);
	ASSERT_GT(pid, 0);
	ASSERT_TRUE(note_recv(&self->ready));
	wait_proc_state(pid, pid, 'Z');
	fd = sys_pidfd_open(pid, 0);
	ASSERT_GE(fd, 0);
	dl_expect(_metadata, pid, fd, WSTOPPED | WNOHANG, 0, 0);
	dl_expect(_metadata, pid, fd, WCONTINUED | WNOHANG, 0, 0);
	dl_expect(_metadata, pid, fd, WSTOPPED | WCONTINUED | WNOHANG, 0, 0);

	ASSERT_EQ(0, kill(pid, SIGSTOP));
	wk_wait(WK_WAITID_PID, pid, 0, -1, WSTOPPED | WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_STOPPED, SIGSTOP);
	dl_expect(_metadata, pid, fd, WSTOPPED | WNOHANG | WNOWAIT,
		  CLD_STOPPED, SIGSTOP);
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WSTOPPED | WNOHANG, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, pid, CLD_STOPPED, SIGSTOP);
	dl_expect(_metadata, pid, fd, WSTOPPED | WNOHANG, 0, 0);

	/* the continued state is there when kill() returns */
	ASSERT_EQ(0, kill(pid, SIGCONT));
	dl_expect(_metadata, pid, fd, WCONTINUED | WNOHANG | WNOWAIT,
		  CLD_CONTINUED, SIGCONT);
	wk_wait(WK_WAITID_PGID0, 0, 0, -1, WCONTINUED | WNOHANG, &r);
	ASSERT_WRES(WK_WAITID_PGID0, r, pid, CLD_CONTINUED, SIGCONT);
	dl_expect(_metadata, pid, fd, WCONTINUED | WNOHANG, 0, 0);
	close(fd);

	a.pid = pid;
	ASSERT_EQ(0, releaser_start(&rel, release_or_kill, &a));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_EQ(0, releaser_join(&rel));
	ASSERT_WRES(WK_WAITPID_ANY, r, pid, variant->code, variant->status);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/* ------------------------------------------------------------------ */
/* exec from a non-leader thread.                                      */

/*
 * The new image: argv = { exe, EXEC_CHILD_ARG, pid, gate fd, code }.
 * Checks it kept the leader's pid and is single-threaded, then waits
 * for the test and exits with the given code.
 */
static int exec_child_main(char **argv)
{
	pid_t want = atoi(argv[2]);
	struct gate g = { .rfd = atoi(argv[3]), .wfd = -1 };
	int code = atoi(argv[4]);
	struct dirent *de;
	int threads = 0;
	DIR *d;

	CHILD_CHECK(getpid() == want);
	CHILD_CHECK(sys_gettid() == want);
	d = opendir("/proc/self/task");
	CHILD_CHECK(d);
	while ((de = readdir(d)))
		threads += de->d_name[0] != '.';
	closedir(d);
	CHILD_CHECK(threads == 1);
	return gate_pass(&g) ? code : WU_ORPHANED;
}

struct ex_arg {
	char exe[512];		/* see exec_from_thread() */
	struct gate *g;
	struct gate *tid_note;	/* the exec'ing thread's tid goes here */
	bool leader_exits_first;
	struct gate *go;	/* if set, the exec waits for it */
};

static void *ex_thread(void *p)
{
	struct ex_arg *a = p;
	char pid[16], fd[16], *argv[6];
	pid_t tid = sys_gettid();

	snprintf(pid, sizeof(pid), "%d", getpid());
	/* The gate's read end must survive the exec. */
	snprintf(fd, sizeof(fd), "%d", dup(a->g->rfd));
	argv[0] = a->exe;
	argv[1] = EXEC_CHILD_ARG;
	argv[2] = pid;
	argv[3] = fd;
	argv[4] = "42";
	argv[5] = NULL;
	if (write(a->tid_note->wfd, &tid, sizeof(tid)) != sizeof(tid))
		syscall(__NR_exit_group, WU_CHILD_FAIL);
	if (a->leader_exits_first) {
		/* Wait until the leader is a zombie thread. */
		while (proc_state(getpid(), getpid()) != 'Z')
			sched_yield();
	}
	if (a->go && !gate_pass(a->go))
		syscall(__NR_exit_group, WU_ORPHANED);
	execv(argv[0], argv);
	syscall(__NR_exit_group, WU_CHILD_FAIL);
	return NULL;
}

static int ex_child(void *p)
{
	pthread_t th;

	CHILD_CHECK(!pthread_create(&th, NULL, ex_thread, p));
	if (((struct ex_arg *)p)->leader_exits_first)
		syscall(__NR_exit, 5);
	/* Block here; the exec tears this thread down. */
	for (;;)
		pause();
	return WU_CHILD_FAIL;
}

/*
 * Where the exec'ing thread finds our image: not "/proc/self/exe" at exec
 * time, for with the leader already dead /proc/self/exe of the process is
 * gone (it is the leader's).
 */
static int exe_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

/*
 * The exec is done when the new image's command line shows up (and then
 * its leader, the former thread, runs under @pid), and it is asleep on
 * its gate.
 */
static void wait_exec_done(struct __test_metadata *_metadata, pid_t pid)
{
	char buf[4096];
	struct wres r;
	ssize_t n;
	int fd;

	for (;;) {
		snprintf(buf, sizeof(buf), "/proc/%d/cmdline", pid);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		ASSERT_GE(fd, 0);
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0 && memmem(buf, n, EXEC_CHILD_ARG,
				    strlen(EXEC_CHILD_ARG)))
			break;
		/* A failed exec ends the child: do not spin forever. */
		wk_wait(WK_WAITID_PID, pid, 0, -1, WNOHANG | WNOWAIT | __WALL,
			&r);
		ASSERT_EQ(0, r.pid);
		sched_yield();
	}
	wait_proc_state(pid, pid, 'S');
}

/*
 * Start a child whose second thread execs as @a says, see ex_thread():
 * returns its pid, and the thread's tid in *@tid.
 */
static pid_t start_ex_child(struct __test_metadata *_metadata,
			    struct ex_arg *a, pid_t *tid)
{
	pid_t pid;

	ASSERT_EQ(0, exe_path(a->exe, sizeof(a->exe)));
	ASSERT_EQ(0, gate_init(a->g));
	ASSERT_EQ(0, note_init(a->tid_note));
	pid = spawn(ex_child, a);
	ASSERT_GT(pid, 0);
	close(a->tid_note->wfd);
	ASSERT_EQ(sizeof(*tid), read(a->tid_note->rfd, tid, sizeof(*tid)));
	ASSERT_NE(pid, *tid);
	return pid;
}

static void exec_from_thread(struct __test_metadata *_metadata,
			     bool leader_exits_first)
{
	struct gate g, tid_note;
	struct ex_arg a = { "", &g, &tid_note, leader_exits_first, NULL };
	struct wres r;
	pid_t pid, tid;

	pid = start_ex_child(_metadata, &a, &tid);
	wait_exec_done(_metadata, pid);

	/* No report for the old leader or the vanished thread. */
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WNOHANG | __WALL, &r);
	ASSERT_WRES_NONE(WK_WAITID_ALL, r);
	wk_wait(WK_WAITPID_PID, tid, 0, -1, WNOHANG | __WALL, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	ASSERT_EQ(0, gate_open(&g, 1));
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WNOWAIT | __WALL, &r);
	ASSERT_WRES(WK_WAITID_ALL, r, pid, CLD_EXITED, 42);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, pid, CLD_EXITED, 42);
	/* Reaped once: nothing more, under either pid. */
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(WK_WAITPID_PID, pid, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

TEST(exec_from_non_leader)
{
	exec_from_thread(_metadata, false);
}

/* Same, when the leader had already exited (a delayed leader). */
TEST(exec_from_non_leader_after_leader_exit)
{
	exec_from_thread(_metadata, true);
}

/* A sibling thread that seizes a tracee and keeps it until told. */
struct seizer {
	pthread_t th;
	pid_t tracee;
	struct gate ready;	/* seizer -> test: seized (or failed) */
	struct gate done;	/* test -> seizer: let go */
	int err;
};

static void *seizer_main(void *p)
{
	struct seizer *s = p;
	char c;

	if (ptrace(PTRACE_SEIZE, s->tracee, 0, 0))
		s->err = errno ? errno : -1;
	note_send(&s->ready);
	while (read(s->done.rfd, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static int seizer_start(struct seizer *s, pid_t tracee)
{
	char c;

	s->tracee = tracee;
	if (note_init(&s->ready) || note_init(&s->done) ||
	    pthread_create(&s->th, NULL, seizer_main, s))
		return -1;
	return read(s->ready.rfd, &c, 1) == 1 && !s->err ? 0 : -1;
}

static void seizer_stop(struct seizer *s)
{
	note_send(&s->done);
	pthread_join(s->th, NULL);
}

/*
 * A thread traced by a sibling thread of ours execs while its group's
 * continue is unconsumed: it takes over the leader's pid and becomes our
 * child, traced by our own group, whose reports go through its trace
 * node.  Its continue is now ours to take too: our __WNOTHREAD waits find
 * it behind our own older live child, by every way of asking.
 */
TEST(exec_from_traced_non_leader_keeps_continue)
{
	struct gate g, go, tid_note, lg;
	struct ex_arg a = { "", &g, &tid_note, false, &go };
	struct seizer s = { 0 };
	pid_t live, pid, tid;
	struct wres r;

	ASSERT_EQ(0, gate_init(&lg));
	live = spawn_gated(&lg, 0);
	ASSERT_GT(live, 0);
	ASSERT_EQ(0, gate_init(&go));
	pid = start_ex_child(_metadata, &a, &tid);

	/* a continue that nobody consumes, then the thread is traced */
	ASSERT_EQ(0, kill(pid, SIGSTOP));
	ASSERT_EQ(0, sync_stopped(pid));
	ASSERT_EQ(0, kill(pid, SIGCONT));
	ASSERT_EQ(0, sync_continued(pid));
	ASSERT_EQ(0, seizer_start(&s, tid));

	ASSERT_EQ(0, gate_open(&go, 1));
	wait_exec_done(_metadata, pid);
	wk_wait(WK_WAITID_PID, pid, 0, -1,
		WCONTINUED | WNOHANG | WNOWAIT | __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITID_PID, r, pid, CLD_CONTINUED, SIGCONT);
	check_nothread_report(_metadata, pid, WCONTINUED, CLD_CONTINUED,
			      SIGCONT);

	/*
	 * Our group traces it: we reap it as its tracer would.  Its exit
	 * wakes the tracer's __WNOTHREAD waits only, as on stock: wait for
	 * the zombie first.
	 */
	ASSERT_EQ(0, gate_open(&g, 1));
	ASSERT_EQ(0, wait_zombie(pid));
	wk_wait(WK_WAITPID_PID, pid, 0, -1, __WALL | __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, pid, CLD_EXITED, 42);
	seizer_stop(&s);
	ASSERT_EQ(0, gate_open(&lg, 1));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WNOTHREAD, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, live, CLD_EXITED, 0);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], EXEC_CHILD_ARG))
		return exec_child_main(argv);
	return test_harness_run(argc, argv);
}
