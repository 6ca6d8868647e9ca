// SPDX-License-Identifier: GPL-2.0
/*
 * Two transitions of one child at the same moment, many times over; once
 * both are done, the real parent's waits by -1 and by group must report
 * what its wait by pid reports.
 *
 * attach_during_sigcont: a tracer's PTRACE_SEIZE and a SIGCONT land on a
 * child that has an unconsumed continue and a group stop under way.  The
 * group stop cannot finish: a second thread of the child waits for its
 * vfork child, which never execs.  Whichever comes first, the child ends
 * up continued and traced by a process other than its parent, and stock
 * reports the continue to the parent's WCONTINUED wait by pid, by -1 and
 * by group.
 *
 * The race this catches: a SIGCONT that reads the child's new ->ptrace
 * with its old ->parent takes the child for one traced by its parent's
 * own group, which reports through its trace node, and takes its node off
 * the continue queue after the attach has checked the queue: the waits by
 * -1 and by group then find nothing.  The window is a few instructions
 * wide.  A kernel that busy-waits inside it when the child is named
 * "wait_race_c" (docs/results.md) makes a kernel with that race fail here
 * within 50 rounds; on a correct kernel the name is only a name.
 */
#include "wait_util.h"

#include <sys/mman.h>
#include <sys/ptrace.h>
#include <time.h>

#define RACE_ROUNDS	200
/* SIGCONT this many microseconds after the tracer is let go, in turn */
#define RACE_STEP_US	100
#define RACE_STEPS	24
#define RACE_TIMEOUT	300

static char vfork_stack[64 * 1024] __attribute__((aligned(16)));

/* The vfork child: says who it is, then never execs nor exits. */
static int vfork_child_main(void *arg)
{
	pid_t self = syscall(SYS_getpid);

	/* shares the child's memory: raw syscalls only */
	syscall(SYS_write, *(int *)arg, &self, sizeof(self));
	for (;;)
		syscall(SYS_pause);
	return 0;
}

static void *vfork_thread_main(void *arg)
{
	/* returns only when the vfork child dies */
	clone(vfork_child_main, vfork_stack + sizeof(vfork_stack),
	      CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
	return NULL;
}

/* The child: a second thread that holds any group stop open. */
static int held_child_main(void *arg)
{
	pthread_t thread;

	CHILD_CHECK(!prctl(PR_SET_NAME, "wait_race_c"));
	CHILD_CHECK(!pthread_create(&thread, NULL, vfork_thread_main, arg));
	for (;;)
		pause();
	return 0;
}

/* The tracer: seizes @child as soon as *@go is set, then stays. */
static int tracer_main(const int *go, pid_t child, int note_fd)
{
	char done;

	while (!__atomic_load_n(go, __ATOMIC_ACQUIRE))
		;
	done = ptrace(PTRACE_SEIZE, child, 0, 0) ? 'n' : 'y';
	CHILD_CHECK(write(note_fd, &done, 1) == 1);
	for (;;)
		pause();
	return 0;
}

static void spin_us(long us)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) * 1000000 +
		 (now.tv_nsec - start.tv_nsec) / 1000 < us);
}

/* The parent's waits that must agree: by pid, by -1 and by its group. */
static const enum wkind race_waits[] = {
	WK_WAITID_PID, WK_WAITID_ALL, WK_WAITID_PGID0,
};

FIXTURE(race) {
};

FIXTURE_SETUP(race)
{
}

FIXTURE_TEARDOWN(race)
{
}

/*
 * One round: a child with an unconsumed continue and a group stop under
 * way, a tracer's seize and our SIGCONT at once, then the reports.
 */
static void race_round(struct __test_metadata *_metadata, int *go,
		       int round)
{
	long delay_us = (round % RACE_STEPS) * RACE_STEP_US;
	pid_t child, vfork_child, tracer;
	struct gate note, traced;
	struct wres r;
	char done;
	int i;

	ASSERT_EQ(0, note_init(&note));
	child = spawn(held_child_main, &note.wfd);
	ASSERT_GT(child, 0);
	close(note.wfd);
	ASSERT_EQ((ssize_t)sizeof(vfork_child),
		  read(note.rfd, &vfork_child, sizeof(vfork_child)));
	close(note.rfd);

	/* a group stop that cannot finish, then its continue */
	ASSERT_EQ(0, kill(child, SIGSTOP));
	wait_proc_state(child, child, 'T');
	ASSERT_EQ(0, kill(child, SIGCONT));
	ASSERT_EQ(0, sync_continued(child));
	/* the next one, under way as the tracer comes */
	ASSERT_EQ(0, kill(child, SIGSTOP));
	wait_proc_state(child, child, 'T');
	wk_wait(WK_WAITID_PID, child, 0, -1,
		WUNTRACED | WNOHANG | WNOWAIT, &r);
	ASSERT_WRES_NONE(WK_WAITID_PID, r);
	wk_wait(WK_WAITID_PID, child, 0, -1,
		WCONTINUED | WNOHANG | WNOWAIT, &r);
	ASSERT_WRES(WK_WAITID_PID, r, child, CLD_CONTINUED, SIGCONT);

	__atomic_store_n(go, 0, __ATOMIC_RELEASE);
	ASSERT_EQ(0, note_init(&traced));
	tracer = fork();
	ASSERT_GE(tracer, 0);
	if (!tracer) {
		wu_child_init();
		close(traced.rfd);
		_exit(tracer_main(go, child, traced.wfd));
	}
	close(traced.wfd);
	__atomic_store_n(go, 1, __ATOMIC_RELEASE);
	spin_us(delay_us);
	ASSERT_EQ(0, kill(child, SIGCONT));
	ASSERT_EQ(1, read(traced.rfd, &done, 1));
	close(traced.rfd);
	ASSERT_EQ('y', done);

	/* continued, traced by another process: the parent's report */
	for (i = 0; i < (int)ARRAY_SIZE(race_waits); i++) {
		wk_wait(race_waits[i], child, 0, -1,
			WCONTINUED | WNOHANG | WNOWAIT, &r);
		ASSERT_EQ(child, r.pid) {
			TH_LOG("round %d, SIGCONT %ld us after the seize, "
			       "wait kind %d", round, delay_us,
			       race_waits[i]);
		}
		ASSERT_WRES(race_waits[i], r, child, CLD_CONTINUED, SIGCONT);
	}

	ASSERT_EQ(0, kill(tracer, SIGKILL));
	ASSERT_EQ(tracer, waitpid(tracer, NULL, 0));
	/* the vfork child comes to us, the subreaper, first */
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	ASSERT_EQ(0, kill(vfork_child, SIGKILL));
	ASSERT_EQ(vfork_child, waitpid(vfork_child, NULL, 0));
}

/* a round takes about 0.1 s under TCG, more on a debug kernel */
TEST_F_TIMEOUT(race, attach_during_sigcont, RACE_TIMEOUT)
{
	int round;
	int *go;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	go = mmap(NULL, sizeof(*go), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, go);

	for (round = 0; round < RACE_ROUNDS; round++)
		race_round(_metadata, go, round);
}

TEST_HARNESS_MAIN
