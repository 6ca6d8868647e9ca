// SPDX-License-Identifier: GPL-2.0
/*
 * Bad input to waitid()/wait4(): each case runs with one zombie and one
 * live child present, checks the exact errno, and then checks whether
 * the zombie is still there (WNOWAIT) or was consumed.
 *
 * Argument errors (EINVAL, EBADF, ESRCH) are detected before any child
 * is looked at, so the zombie must survive.  EFAULT is different: the
 * kernel reaps the child first and only then fails to copy the status,
 * siginfo or rusage out, so the child is gone and its status lost; the
 * oracle pins that behaviour too (except with WNOWAIT, which never
 * reaps).
 */
#include "wait_util.h"

#include <limits.h>
#include <sys/mman.h>

enum { API_WAITID, API_WAIT4 };

/* How the id/pid argument is chosen. */
enum {
	ID_VALUE,	/* .id_val as is */
	ID_ZOMBIE,	/* the zombie's pid */
	ID_PIDFD,	/* a pidfd for the zombie */
	ID_DEVNULL,	/* an fd that is not a pidfd */
	ID_CLOSED,	/* an fd number that is not open */
	ID_PARENT_FD,	/* a pidfd for a process that is not our child */
};

FIXTURE(bad) {
	struct kids k;
	void *fault;	/* an inaccessible page */
};

FIXTURE_VARIANT(bad) {
	int api;
	int which;	/* waitid idtype */
	int id;
	long id_val;
	int opts;	/* passed verbatim */
	bool bad_info;	/* waitid infop / wait4 status pointer faults */
	bool bad_ru;	/* rusage pointer faults */
	int err;
	bool consumed;	/* the zombie is reaped despite the error */
};

#define BAD_WAITID(name, ...) \
	FIXTURE_VARIANT_ADD(bad, name) { .api = API_WAITID, __VA_ARGS__ }
#define BAD_WAIT4(name, ...) \
	FIXTURE_VARIANT_ADD(bad, name) { .api = API_WAIT4, __VA_ARGS__ }

/* waitid options: at least one of WEXITED/WSTOPPED/WCONTINUED. */
BAD_WAITID(waitid_no_event, .which = P_ALL, .opts = 0, .err = EINVAL);
BAD_WAITID(waitid_wnohang_only, .which = P_ALL, .opts = WNOHANG,
	   .err = EINVAL);
BAD_WAITID(waitid_wnowait_only, .which = P_ALL, .opts = WNOWAIT,
	   .err = EINVAL);
BAD_WAITID(waitid_unknown_bit_0x10, .which = P_ALL,
	   .opts = WEXITED | 0x10, .err = EINVAL);
BAD_WAITID(waitid_unknown_bit_0x100, .which = P_ALL,
	   .opts = WEXITED | 0x100, .err = EINVAL);
BAD_WAITID(waitid_unknown_bit_0x800000, .which = P_ALL,
	   .opts = WEXITED | 0x800000, .err = EINVAL);
/* waitid idtype: P_ALL, P_PID, P_PGID, P_PIDFD (0..3) only. */
BAD_WAITID(waitid_idtype_4, .which = 4, .id = ID_ZOMBIE, .opts = WEXITED,
	   .err = EINVAL);
BAD_WAITID(waitid_idtype_42, .which = 42, .id = ID_ZOMBIE,
	   .opts = WEXITED, .err = EINVAL);
BAD_WAITID(waitid_idtype_neg, .which = -1, .id = ID_ZOMBIE,
	   .opts = WEXITED, .err = EINVAL);
/* waitid ids: P_PID wants > 0, P_PGID and P_PIDFD want >= 0. */
BAD_WAITID(waitid_pid_neg, .which = P_PID, .id_val = -1, .opts = WEXITED,
	   .err = EINVAL);
BAD_WAITID(waitid_pid_zero, .which = P_PID, .id_val = 0, .opts = WEXITED,
	   .err = EINVAL);
BAD_WAITID(waitid_pid_intmin, .which = P_PID, .id_val = INT_MIN,
	   .opts = WEXITED, .err = EINVAL);
BAD_WAITID(waitid_pgid_neg, .which = P_PGID, .id_val = -1,
	   .opts = WEXITED, .err = EINVAL);
BAD_WAITID(waitid_pidfd_neg, .which = P_PIDFD, .id_val = -1,
	   .opts = WEXITED, .err = EINVAL);
BAD_WAITID(waitid_pidfd_not_pidfd, .which = P_PIDFD, .id = ID_DEVNULL,
	   .opts = WEXITED, .err = EBADF);
BAD_WAITID(waitid_pidfd_closed, .which = P_PIDFD, .id = ID_CLOSED,
	   .opts = WEXITED, .err = EBADF);
BAD_WAITID(waitid_pidfd_not_child, .which = P_PIDFD, .id = ID_PARENT_FD,
	   .opts = WEXITED, .err = ECHILD);
BAD_WAITID(waitid_pid_not_child, .which = P_PID, .id_val = 1,
	   .opts = WEXITED, .err = ECHILD);
/* Faulting user pointers: the child is reaped before the copy-out. */
BAD_WAITID(waitid_bad_infop, .which = P_PID, .id = ID_ZOMBIE,
	   .opts = WEXITED, .bad_info = true, .err = EFAULT,
	   .consumed = true);
BAD_WAITID(waitid_bad_infop_pidfd, .which = P_PIDFD, .id = ID_PIDFD,
	   .opts = WEXITED, .bad_info = true, .err = EFAULT,
	   .consumed = true);
BAD_WAITID(waitid_bad_infop_wnowait, .which = P_PID, .id = ID_ZOMBIE,
	   .opts = WEXITED | WNOWAIT, .bad_info = true, .err = EFAULT);
BAD_WAITID(waitid_bad_rusage, .which = P_PID, .id = ID_ZOMBIE,
	   .opts = WEXITED, .bad_ru = true, .err = EFAULT, .consumed = true);
BAD_WAITID(waitid_bad_rusage_wnowait, .which = P_PID, .id = ID_ZOMBIE,
	   .opts = WEXITED | WNOWAIT, .bad_ru = true, .err = EFAULT);

/* wait4 options: WNOHANG|WUNTRACED|WCONTINUED|__WNOTHREAD|__WCLONE|__WALL */
BAD_WAIT4(wait4_wexited, .id = ID_ZOMBIE, .opts = WEXITED, .err = EINVAL);
BAD_WAIT4(wait4_wnowait, .id = ID_ZOMBIE, .opts = WNOWAIT, .err = EINVAL);
BAD_WAIT4(wait4_unknown_bit_0x10, .id = ID_ZOMBIE, .opts = 0x10,
	  .err = EINVAL);
BAD_WAIT4(wait4_unknown_bit_0x800000, .id = ID_ZOMBIE, .opts = 0x800000,
	  .err = EINVAL);
/* -INT_MIN is no process group. */
BAD_WAIT4(wait4_pid_intmin, .id_val = INT_MIN, .opts = 0, .err = ESRCH);
BAD_WAIT4(wait4_pid_not_child, .id_val = 1, .opts = 0, .err = ECHILD);
BAD_WAIT4(wait4_pgid_nonexistent, .id_val = -INT_MAX, .opts = 0,
	  .err = ECHILD);
BAD_WAIT4(wait4_bad_status, .id = ID_ZOMBIE, .opts = 0, .bad_info = true,
	  .err = EFAULT, .consumed = true);
BAD_WAIT4(wait4_bad_rusage, .id = ID_ZOMBIE, .opts = 0, .bad_ru = true,
	  .err = EFAULT, .consumed = true);
BAD_WAIT4(wait4_bad_status_any, .id_val = -1, .opts = 0, .bad_info = true,
	  .err = EFAULT, .consumed = true);

FIXTURE_SETUP(bad)
{
	memset(&self->k, 0, sizeof(self->k));
	self->fault = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	ASSERT_NE(MAP_FAILED, self->fault);
}

FIXTURE_TEARDOWN(bad)
{
}

static long pick_id(struct __test_metadata *_metadata,
		    FIXTURE_DATA(bad) *self, const FIXTURE_VARIANT(bad) *v)
{
	int fd;

	switch (v->id) {
	case ID_ZOMBIE:
		return self->k.pid[0];
	case ID_PIDFD:
		return self->k.pidfd[0];
	case ID_DEVNULL:
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		EXPECT_GE(fd, 0);
		return fd;
	case ID_CLOSED:
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		EXPECT_GE(fd, 0);
		close(fd);
		return fd;
	case ID_PARENT_FD:
		fd = sys_pidfd_open(getppid(), 0);
		EXPECT_GE(fd, 0);
		return fd;
	}
	return v->id_val;
}

TEST_F(bad, call)
{
	struct rusage ru, *rup = NULL;
	siginfo_t si, *sip = &si;
	pid_t zombie;
	int st, *stp = &st;
	long id, ret;
	struct wres r;

	/* Child 0: the zombie that must (not) survive; child 1: alive. */
	ASSERT_EQ(0, kids_add(&self->k, false, code_of(0)));
	ASSERT_EQ(1, kids_add(&self->k, true, code_of(1)));
	zombie = self->k.pid[0];
	ASSERT_EQ(0, wait_zombie(zombie));

	id = pick_id(_metadata, self, variant);
	if (variant->bad_info) {
		sip = self->fault;
		stp = self->fault;
	}
	if (variant->bad_ru)
		rup = self->fault;
	else if (variant->api == API_WAIT4)
		rup = &ru;

	if (variant->api == API_WAITID)
		ret = sys_waitid(variant->which, id, sip, variant->opts, rup);
	else
		ret = sys_wait4(id, stp, variant->opts, rup);
	ASSERT_EQ(-1, ret);
	ASSERT_EQ(variant->err, errno);

	/* Is the zombie still there, with its status intact? */
	wk_wait(WK_WAITID_PID, zombie, 0, -1, WNOHANG | WNOWAIT, &r);
	if (variant->consumed) {
		ASSERT_WRES_ERR(r, ECHILD);
	} else {
		ASSERT_WRES(WK_WAITID_PID, r, zombie, CLD_EXITED, code_of(0));
		wk_wait(WK_WAITPID_PID, zombie, 0, -1, 0, &r);
		ASSERT_WRES(WK_WAITPID_PID, r, zombie, CLD_EXITED, code_of(0));
	}

	/* The live child was not disturbed either. */
	wk_wait(WK_WAITID_ALL, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITID_ALL, r);
	kids_release(&self->k, 1);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, self->k.pid[1], CLD_EXITED,
		    code_of(1));
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * WNOHANG with nothing to report still writes the (zeroed) siginfo,
 * so a bad infop gives EFAULT even then.
 */
TEST(wnohang_bad_infop_nothing_to_report)
{
	void *fault = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);
	struct kids k = { 0 };
	struct wres r;

	ASSERT_NE(MAP_FAILED, fault);
	ASSERT_EQ(0, kids_add(&k, true, code_of(0)));
	ASSERT_EQ(-1, sys_waitid(P_ALL, 0, fault, WEXITED | WNOHANG, NULL));
	ASSERT_EQ(EFAULT, errno);
	/* With a NULL infop there is nothing to fault on: plain 0. */
	ASSERT_EQ(0, sys_waitid(P_ALL, 0, NULL, WEXITED | WNOHANG, NULL));
	kids_release(&k, 0);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_ANY, r, k.pid[0], CLD_EXITED, code_of(0));
}

TEST_HARNESS_MAIN
