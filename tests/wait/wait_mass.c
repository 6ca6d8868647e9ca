// SPDX-License-Identifier: GPL-2.0
/*
 * Mass cases: 2,000 live children and 200 zombies spread evenly among
 * them (every 11th child).  A wait for any child reports exactly the
 * 200 zombies (as a set), then WNOHANG finds nothing, then all 2,000
 * are reaped as they are released, then ECHILD.  Also targeted waits
 * and process groups at that size.
 *
 * The live children are plain forks of the (small, static) test that
 * block reading a shared pipe; writing n bytes releases n of them.
 * Under slow emulation forking 2,200 processes takes a while, hence the
 * long per-test timeout.
 */
#include "wait_util.h"

#define N_ALL		2200
#define N_ZOMBIE	200
#define N_LIVE		(N_ALL - N_ZOMBIE)
#define MASS_TIMEOUT	900

static bool is_zombie(int i)
{
	return i % 11 == 5;
}

struct pid_idx {
	pid_t pid;
	int idx;
};

struct mass_state {
	struct gate g;
	pid_t pids[N_ALL];
	bool done[N_ALL];
	struct pid_idx sorted[N_ALL];	/* pids sorted, for lookups */
};

static int cmp_pid_idx(const void *a, const void *b)
{
	const struct pid_idx *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Creation index of @pid, -1 if not one of ours (O(log n)). */
static int mass_idx(struct mass_state *s, pid_t pid)
{
	struct pid_idx key = { pid, 0 }, *hit;

	hit = bsearch(&key, s->sorted, N_ALL, sizeof(key), cmp_pid_idx);
	return hit ? hit->idx : -1;
}

/*
 * Fixture "mass": the any-child case, once per flavour.  Fixture
 * "mass2": targeted waits and groups, once for waitpid/wait4 and once
 * for waitid (kept to two runs each: every run forks 2,200 children).
 */
FIXTURE(mass) {
	struct mass_state s;
};

FIXTURE_VARIANT(mass) {
	enum wkind kind;	/* any-child flavour */
};

FIXTURE_VARIANT_ADD(mass, wait4_any) { .kind = WK_WAIT4_ANY, };
FIXTURE_VARIANT_ADD(mass, waitid_all) { .kind = WK_WAITID_ALL, };
FIXTURE_VARIANT_ADD(mass, waitpid_pgrp0) { .kind = WK_WAITPID_PGRP0, };

FIXTURE(mass2) {
	struct mass_state s;
};

FIXTURE_VARIANT(mass2) {
	bool waitid;
};

FIXTURE_VARIANT_ADD(mass2, wait4) { .waitid = false, };
FIXTURE_VARIANT_ADD(mass2, waitid) { .waitid = true, };

static void mass_state_init(struct __test_metadata *_metadata,
		       struct mass_state *s)
{
	struct rlimit rl;

	/* Room for the children (root is not limited anyway). */
	if (!getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < 2 * N_ALL) {
		rl.rlim_cur = rl.rlim_max < 4 * N_ALL ? rl.rlim_max : 4 * N_ALL;
		setrlimit(RLIMIT_NPROC, &rl);
	}
	ASSERT_EQ(0, gate_init(&s->g));
	memset(s->done, 0, sizeof(s->done));
}

FIXTURE_SETUP(mass)
{
	mass_state_init(_metadata, &self->s);
}

FIXTURE_TEARDOWN(mass)
{
}

FIXTURE_SETUP(mass2)
{
	mass_state_init(_metadata, &self->s);
}

FIXTURE_TEARDOWN(mass2)
{
}

struct mass_arg {
	struct gate *g;
	int i;
	pid_t pgid;		/* join this group first, if nonzero */
};

static int mass_child(void *p)
{
	struct mass_arg *a = p;

	if (a->pgid)
		CHILD_CHECK(!setpgid(0, a->pgid == -1 ? 0 : a->pgid));
	if (is_zombie(a->i))
		return code_of(a->i);
	return gate_pass(a->g) ? code_of(a->i) : WU_ORPHANED;
}

/*
 * Fork all N_ALL children.  @pgid_of(i) (may be NULL) gives the group
 * child i joins: 0 none, -1 a new group of its own.
 */
static void spawn_all(struct __test_metadata *_metadata,
		      struct mass_state *self, pid_t (*pgid_of)(int, pid_t *))
{
	for (int i = 0; i < N_ALL; i++) {
		struct mass_arg a = { &self->g, i, 0 };

		if (pgid_of)
			a.pgid = pgid_of(i, self->pids);
		self->pids[i] = spawn(mass_child, &a);
		ASSERT_GT(self->pids[i], 0) {
			TH_LOG("fork %d failed: %s", i, strerror(errno));
		}
		/* Settle group membership on our side too (no race). */
		if (a.pgid && !is_zombie(i))
			ASSERT_EQ(0, setpgid(self->pids[i], a.pgid == -1 ?
					     self->pids[i] : a.pgid));
	}
	for (int i = 0; i < N_ALL; i++)
		self->sorted[i] = (struct pid_idx){ self->pids[i], i };
	qsort(self->sorted, N_ALL, sizeof(self->sorted[0]), cmp_pid_idx);
}

/* What child @i must report (waitid terms). */
typedef void (*expect_fn)(int i, int *code, int *status);

static void expect_exited(int i, int *code, int *status)
{
	*code = CLD_EXITED;
	*status = code_of(i);
}

static void expect_killed(int i, int *code, int *status)
{
	(void)i;
	*code = CLD_KILLED;
	*status = SIGKILL;
}

/*
 * Reap (or, for stops/continues, consume) @n reports with flavour @k
 * and options @opts; each must come from a child with @want(i) not
 * reported before, and carry what @expect says.
 */
static void reap_n(struct __test_metadata *_metadata,
		   struct mass_state *self, enum wkind k, pid_t pgid,
		   int opts, int n, bool (*want)(int), expect_fn expect)
{
	struct wres r;

	for (int j = 0; j < n; j++) {
		int got, code, status;

		wk_wait(k, 0, pgid, -1, opts, &r);
		got = mass_idx(self, r.pid);
		ASSERT_GE(got, 0) {
			TH_LOG("reap %d: ret %ld errno %d pid %d", j, r.ret,
			       r.err, r.pid);
		}
		ASSERT_TRUE(want(got));
		ASSERT_FALSE(self->done[got]);
		expect(got, &code, &status);
		ASSERT_WRES(k, r, self->pids[got], code, status);
		self->done[got] = true;
	}
}

static bool is_live(int i)
{
	return !is_zombie(i);
}

TEST_F_TIMEOUT(mass, zombies_then_live, MASS_TIMEOUT)
{
	struct mass_state *s = &self->s;
	struct wres r;

	spawn_all(_metadata, s, NULL);
	/* Blocking waits: exactly the 200 zombies, whatever the order. */
	reap_n(_metadata, s, variant->kind, 0, 0, N_ZOMBIE, is_zombie,
	       expect_exited);
	wk_wait(variant->kind, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(variant->kind, r);

	ASSERT_EQ(0, gate_open(&s->g, N_LIVE));
	reap_n(_metadata, s, variant->kind, 0, 0, N_LIVE, is_live,
	       expect_exited);
	wk_wait(variant->kind, 0, 0, -1, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
	wk_wait(variant->kind, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * Targeted waits among thousands: each zombie by pid, newest first;
 * a live child by pid gives nothing; then SIGKILL for all the rest.
 */
TEST_F_TIMEOUT(mass2, targeted_then_killed, MASS_TIMEOUT)
{
	struct mass_state *s = &self->s;
	enum wkind k = variant->waitid ? WK_WAITID_ALL : WK_WAIT4_ANY;
	struct wres r;
	int fd;

	spawn_all(_metadata, s, NULL);
	for (int i = N_ALL - 1; i >= 0; i--) {
		if (!is_zombie(i))
			continue;
		if (variant->waitid) {
			fd = sys_pidfd_open(s->pids[i], 0);
			ASSERT_GE(fd, 0);
			wk_wait(WK_WAITID_PIDFD, 0, 0, fd, 0, &r);
			close(fd);
			ASSERT_WRES(WK_WAITID_PIDFD, r, s->pids[i],
				    CLD_EXITED, code_of(i));
		} else {
			wk_wait(WK_WAIT4_PID, s->pids[i], 0, -1, 0, &r);
			ASSERT_WRES(WK_WAIT4_PID, r, s->pids[i],
				    CLD_EXITED, code_of(i));
		}
		s->done[i] = true;
		/* Reaped once: that pid is nothing of ours any more. */
		wk_wait(WK_WAITPID_PID, s->pids[i], 0, -1, WNOHANG, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	}
	wk_wait(WK_WAITPID_PID, s->pids[0], 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_PID, r);
	wk_wait(WK_WAITPID_PID, s->pids[N_ALL - 1], 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(WK_WAITPID_PID, r);

	for (int i = 0; i < N_ALL; i++) {
		if (is_live(i))
			ASSERT_EQ(0, kill(s->pids[i], SIGKILL));
	}
	reap_n(_metadata, s, k, 0, 0, N_LIVE, is_live, expect_killed);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * Two big groups: children alternate between group A (led by child 0)
 * and group B (led by child 1).  Waiting on A yields exactly A's
 * zombies, never B's, and vice versa.
 */
static pid_t pgid_ab(int i, pid_t *pids)
{
	if (i < 2)
		return -1;
	return pids[i % 2];
}

static int grp;

static bool zombie_in_grp(int i)
{
	return is_zombie(i) && (i < 2 ? i : i % 2) == grp;
}

static bool live_in_grp(int i)
{
	return !is_zombie(i) && (i < 2 ? i : i % 2) == grp;
}

TEST_F_TIMEOUT(mass2, two_groups, MASS_TIMEOUT)
{
	struct mass_state *s = &self->s;
	enum wkind k = variant->waitid ? WK_WAITID_PGID : WK_WAITPID_PGID;
	int nz[2] = { 0, 0 }, nl[2] = { 0, 0 };
	struct wres r;

	spawn_all(_metadata, s, pgid_ab);
	for (int i = 0; i < N_ALL; i++) {
		if (is_zombie(i))
			nz[i % 2]++;
		else
			nl[i % 2]++;
	}
	/* Zombies of B first, then of A; the other group stays intact. */
	for (grp = 1; grp >= 0; grp--) {
		reap_n(_metadata, s, k, s->pids[grp], 0, nz[grp],
		       zombie_in_grp, expect_exited);
		wk_wait(k, 0, s->pids[grp], -1, WNOHANG, &r);
		ASSERT_WRES_NONE(k, r);
	}
	/* Our own group has none of them. */
	wk_wait(WK_WAITPID_PGRP0, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);

	ASSERT_EQ(0, gate_open(&s->g, N_LIVE));
	for (grp = 0; grp < 2; grp++) {
		reap_n(_metadata, s, k, s->pids[grp], 0, nl[grp],
		       live_in_grp, expect_exited);
		wk_wait(k, 0, s->pids[grp], -1, WNOHANG, &r);
		ASSERT_WRES_ERR(r, ECHILD);
	}
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * Stops and continues among thousands: 200 children stopped, plus the
 * 200 zombies: a WUNTRACED wait reports exactly those 400 events; then
 * half of the stopped ones are continued and exactly those 100
 * continues are reported; then nothing more until all are killed.
 */
static bool is_stopped(int i)
{
	return i % 11 == 2;
}

static bool is_continued(int i)
{
	return i % 22 == 2;
}

static bool exited_or_stopped(int i)
{
	return is_zombie(i) || is_stopped(i);
}

static void expect_exit_or_stop(int i, int *code, int *status)
{
	if (is_zombie(i)) {
		expect_exited(i, code, status);
	} else {
		*code = CLD_STOPPED;
		*status = SIGSTOP;
	}
}

static void expect_continued(int i, int *code, int *status)
{
	(void)i;
	*code = CLD_CONTINUED;
	*status = SIGCONT;
}

TEST_F_TIMEOUT(mass2, stops_and_continues, MASS_TIMEOUT)
{
	struct mass_state *s = &self->s;
	enum wkind k = variant->waitid ? WK_WAITID_ALL : WK_WAIT4_ANY;
	int nstop = 0, ncont = 0;
	struct wres r;

	spawn_all(_metadata, s, NULL);
	for (int i = 0; i < N_ALL; i++) {
		if (!is_stopped(i))
			continue;
		ASSERT_EQ(0, kill(s->pids[i], SIGSTOP));
		nstop++;
		ncont += is_continued(i);
	}
	reap_n(_metadata, s, k, 0, WUNTRACED, N_ZOMBIE + nstop,
	       exited_or_stopped, expect_exit_or_stop);
	wk_wait(k, 0, 0, -1, WUNTRACED | WCONTINUED | WNOHANG, &r);
	ASSERT_WRES_NONE(k, r);

	memset(s->done, 0, sizeof(s->done));
	for (int i = 0; i < N_ALL; i++) {
		if (is_continued(i))
			ASSERT_EQ(0, kill(s->pids[i], SIGCONT));
	}
	reap_n(_metadata, s, k, 0, WCONTINUED, ncont, is_continued,
	       expect_continued);
	wk_wait(k, 0, 0, -1, WUNTRACED | WCONTINUED | WNOHANG, &r);
	ASSERT_WRES_NONE(k, r);

	memset(s->done, 0, sizeof(s->done));
	for (int i = 0; i < N_ALL; i++) {
		if (is_live(i))
			ASSERT_EQ(0, kill(s->pids[i], SIGKILL));
	}
	reap_n(_metadata, s, k, 0, WUNTRACED | WCONTINUED, N_LIVE, is_live,
	       expect_killed);
	wk_wait(WK_WAITPID_ANY, 0, 0, -1, __WALL | WNOHANG, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

/*
 * A subreaper adopts thousands at once: a middle process forks them
 * (one in three exits at once, see make_orphans()) and exits.  The
 * zombies are reported as a set, then nothing, then the rest.
 */
static bool orphan_zombie(int i)
{
	return orphan_is_zombie(i);
}

static bool orphan_live(int i)
{
	return !orphan_is_zombie(i);
}

TEST_F_TIMEOUT(mass2, subreaper_adopts_thousands, MASS_TIMEOUT)
{
	struct mass_state *s = &self->s;
	enum wkind k = variant->waitid ? WK_WAITID_ALL : WK_WAIT4_ANY;
	struct orphans o = { &s->g, -1, N_ALL, getpid() };
	int nz = 0;
	size_t got = 0;
	struct gate out;
	struct wres r;
	pid_t mid;

	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, note_init(&out));
	o.out = out.wfd;
	mid = spawn(make_orphans, &o);
	ASSERT_GT(mid, 0);
	close(out.wfd);
	while (got < sizeof(s->pids)) {
		ssize_t n = read(out.rfd, (char *)s->pids + got,
				 sizeof(s->pids) - got);

		ASSERT_GT(n, 0);
		got += n;
	}
	wk_wait(WK_WAITPID_PID, mid, 0, -1, 0, &r);
	ASSERT_WRES(WK_WAITPID_PID, r, mid, CLD_EXITED, 0);
	for (int i = 0; i < N_ALL; i++) {
		s->sorted[i] = (struct pid_idx){ s->pids[i], i };
		nz += orphan_is_zombie(i);
	}
	qsort(s->sorted, N_ALL, sizeof(s->sorted[0]), cmp_pid_idx);

	reap_n(_metadata, s, k, 0, 0, nz, orphan_zombie, expect_exited);
	wk_wait(k, 0, 0, -1, WNOHANG, &r);
	ASSERT_WRES_NONE(k, r);
	ASSERT_EQ(0, gate_open(&s->g, N_ALL - nz));
	reap_n(_metadata, s, k, 0, 0, N_ALL - nz, orphan_live, expect_exited);
	wk_wait(k, 0, 0, -1, 0, &r);
	ASSERT_WRES_ERR(r, ECHILD);
}

TEST_HARNESS_MAIN
