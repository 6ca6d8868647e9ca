// SPDX-License-Identifier: GPL-2.0
/*
 * jobctl_fuzz: a differential fuzzer for orphaned process groups.
 *
 *   jobctl_fuzz [--seed S] [--seeds N] [--ops K] [-v]
 *
 * Each seed builds a random tree of agents (jobctl_util.h) with fork,
 * setpgid (of itself or of a child), setsid, exit, SIGKILL, SIGSTOP,
 * SIGCONT, PR_SET_CHILD_SUBREAPER on and off, reaping a zombie child, and
 * the exit of a leader thread (a new thread carries on).  After every
 * operation it compares the kernel with a model computed from /proc
 * (ppid, pgid, sid and the state of every thread of every process):
 *
 *  - a group is orphaned iff none of its members with a live thread has a
 *    parent (not pid 1) in another group of the same session; the kernel's
 *    answer is the SIGTSTP probe (jc_probe()) of one running agent of each
 *    group;
 *  - at an exit, the kernel's algorithm (kill_orphaned_pgrp()) on the
 *    snapshots before and after: the exiting process's group, if its
 *    parent is in another group of its session, and the group of each
 *    child it had, if in another group of its session, get SIGHUP and
 *    SIGCONT iff orphaned afterwards and with a stopped member before; so
 *    every agent must have handled exactly that ("HC" or nothing, si_code
 *    SI_KERNEL), and nothing after any other operation.
 *
 * Half of the seeds start in a session of their own (the first agent
 * calls setsid()), half in the session the fuzzer runs in (in the
 * fastreap guest that is init's: then pid 1 is a parent in the same
 * session, and the global-init rule matters).  Half make the fuzzer a
 * subreaper.  On a mismatch it prints the seed, the operations so far and
 * the processes involved; rerun one seed with --seed S -v.
 *
 * TAP output, one line per seed.  Default: seeds 1 to 16, 150 operations
 * each (about a minute under TCG with the host lightly loaded; 2.5 at
 * load average 15).
 */
#include "jobctl_util.h"

#include <getopt.h>

#define MAXP 4096		/* processes in a snapshot */
#define MAXAGENTS 16		/* live agents at a time */
#define HIST 256

struct proc {
	pid_t pid, ppid, pgid, sid;
	bool alive;		/* some thread is not a zombie */
	bool stopped;		/* some thread is in a group stop (T) */
};

struct snap {
	int n;
	struct proc p[MAXP];
};

static int verbose;
/*
 * JOBCTL_MUTANT=K breaks the model on purpose, to show the fuzzer finds
 * each rule (a mutant must fail some seed): 1 counts a parent that is
 * pid 1, 2 counts zombies, 3 ignores the session, 4 signals only a group
 * that was not orphaned before the exit (the "newly orphaned" reading),
 * 5 never expects SIGHUP+SIGCONT, 6 forgets the exiting process's
 * children.
 */
static int mutant;
static uint64_t rng;
static char hist[HIST][96];
static int nhist;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int pick(int n)
{
	return n > 0 ? (int)(rnd() % (uint64_t)n) : 0;
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	if (nhist == HIST)
		return;
	va_start(ap, fmt);
	vsnprintf(hist[nhist++], sizeof(hist[0]), fmt, ap);
	va_end(ap);
	if (verbose)
		fprintf(stderr, "#   %s\n", hist[nhist - 1]);
}

/* ---- the model, from /proc ---- */

static void proc_threads(pid_t pid, struct proc *p)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		char st;

		if (d->d_name[0] == '.')
			continue;
		st = proc_state(pid, atoi(d->d_name));
		if (st && st != 'Z' && st != 'X')
			p->alive = true;
		if (st == 'T')
			p->stopped = true;
	}
	closedir(dir);
}

static void take(struct snap *s)
{
	struct dirent *d;
	DIR *dir = opendir("/proc");

	s->n = 0;
	while (dir && (d = readdir(dir)) && s->n < MAXP) {
		struct jc_stat st;
		struct proc *p = &s->p[s->n];
		pid_t pid = atoi(d->d_name);

		if (pid <= 0 || jc_proc_stat(pid, &st))
			continue;
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->ppid = st.ppid;
		p->pgid = st.pgid;
		p->sid = st.sid;
		proc_threads(pid, p);
		s->n++;
	}
	if (dir)
		closedir(dir);
}

static struct proc *find(struct snap *s, pid_t pid)
{
	for (int i = 0; i < s->n; i++)
		if (s->p[i].pid == pid)
			return &s->p[i];
	return NULL;
}

/* will_become_orphaned_pgrp(g, NULL), on snapshot @s. */
static bool orphaned(struct snap *s, pid_t g)
{
	for (int i = 0; i < s->n; i++) {
		struct proc *p = &s->p[i], *pp;

		if (p->pgid != g || (!p->alive && mutant != 2) ||
		    (p->ppid == 1 && mutant != 1))
			continue;
		pp = find(s, p->ppid);
		if (pp && pp->pgid != g && (pp->sid == p->sid || mutant == 3))
			return false;
	}
	return true;
}

/* has_stopped_jobs(g), leaving out @except (it is exiting). */
static bool stopped(struct snap *s, pid_t g, pid_t except)
{
	for (int i = 0; i < s->n; i++)
		if (s->p[i].pgid == g && s->p[i].stopped &&
		    s->p[i].pid != except)
			return true;
	return false;
}

static void dump(struct snap *s, struct jc *j)
{
	fprintf(stderr, "# agents (slot pid ppid pgid sid alive stopped):\n");
	for (int i = 0; i < j->n; i++) {
		struct proc *p = find(s, j->pid[i]);

		if (p)
			fprintf(stderr, "#   %2d %6d %6d %6d %6d %d %d\n", i,
				p->pid, p->ppid, p->pgid, p->sid, p->alive,
				p->stopped);
		else
			fprintf(stderr, "#   %2d %6d gone\n", i, j->pid[i]);
	}
	fprintf(stderr, "# operations so far:\n");
	for (int i = 0; i < nhist; i++)
		fprintf(stderr, "#   %s\n", hist[i]);
}

/* ---- one seed ---- */

struct fuzz {
	struct jc j;
	struct snap pre, post;
	bool subreaper[JC_MAX];
	bool threaded[JC_MAX];
	pid_t hup[JC_MAX];	/* groups expected to get SIGHUP+SIGCONT */
	int nhup;
	char why[160];
};

static bool live(struct fuzz *f, int i)
{
	return !f->j.gone[i] && jc_alive(f->j.pid[i]);
}

static bool running(struct fuzz *f, int i)
{
	return live(f, i) && jc_state(&f->j, i) != 'T';
}

static int nlive(struct fuzz *f)
{
	int n = 0;

	for (int i = 0; i < f->j.n; i++)
		n += live(f, i);
	return n;
}

/* A random agent that can take a command (-1 if none). */
static int pick_running(struct fuzz *f)
{
	int c[JC_MAX], n = 0;

	for (int i = 0; i < f->j.n; i++)
		if (running(f, i))
			c[n++] = i;
	return n ? c[pick(n)] : -1;
}

/*
 * For setsid(): the running agent, not a group leader (setsid() would
 * fail), whose children lead or live in the most groups other than its
 * own (-1 if none has any).  Those groups are what setsid() recounts one
 * by one; a random pick rarely finds such a parent.
 */
static int pick_spread_parent(struct fuzz *f)
{
	pid_t pgid[JC_MAX], ppid[JC_MAX];
	int best = -1, most = 0;

	/* each agent's group and parent, read once (-1: gone) */
	for (int i = 0; i < f->j.n; i++) {
		bool ok = live(f, i);

		pgid[i] = ok ? getpgid(f->j.pid[i]) : -1;
		ppid[i] = ok ? jc_ppid(f->j.pid[i]) : -1;
	}
	for (int a = 0; a < f->j.n; a++) {
		pid_t seen[JC_MAX];
		int n = 0;

		if (pgid[a] < 0 || pgid[a] == f->j.pid[a] || !running(f, a))
			continue;
		for (int c = 0; c < f->j.n; c++) {
			pid_t g = pgid[c];
			int k;

			if (g < 0 || g == pgid[a] || ppid[c] != f->j.pid[a])
				continue;
			for (k = 0; k < n && seen[k] != g; k++)
				;
			if (k == n)
				seen[n++] = g;
		}
		if (n > most) {
			most = n;
			best = a;
		}
	}
	return best;
}

static int pick_live(struct fuzz *f, bool want_stopped)
{
	int c[JC_MAX], n = 0;

	for (int i = 0; i < f->j.n; i++)
		if (live(f, i) && (jc_state(&f->j, i) == 'T') == want_stopped)
			c[n++] = i;
	return n ? c[pick(n)] : -1;
}

/* A group id to join: an agent's group or our own (-1: none). */
static pid_t pick_group(struct fuzz *f)
{
	int i = pick(f->j.n + 1);
	struct jc_stat st;

	if (i == f->j.n)
		return getpgid(0);
	if (jc_proc_stat(f->j.pid[i], &st))
		return -1;
	return st.pgid;
}

/* The kernel's exit-time checks, from the snapshots around @x's exit. */
static void predict_exit(struct fuzz *f, pid_t x)
{
	struct proc *px = find(&f->pre, x), *pp;

	f->nhup = 0;
	if (!px || mutant == 5)
		return;
	/* The children it hands on (forget_original_parent()). */
	for (int i = 0; i < f->pre.n && mutant != 6; i++) {
		struct proc *c = &f->pre.p[i];

		if (c->ppid != x || c->pid == x)
			continue;
		if (c->pgid != px->pgid && c->sid == px->sid &&
		    orphaned(&f->post, c->pgid) &&
		    !(mutant == 4 && orphaned(&f->pre, c->pgid)) &&
		    stopped(&f->pre, c->pgid, x))
			f->hup[f->nhup++] = c->pgid;
	}
	/* Its own group. */
	pp = find(&f->pre, px->ppid);
	if (pp && pp->pgid != px->pgid && pp->sid == px->sid &&
	    orphaned(&f->post, px->pgid) && stopped(&f->pre, px->pgid, x) &&
	    !(mutant == 4 && orphaned(&f->pre, px->pgid)))
		f->hup[f->nhup++] = px->pgid;
}

static bool hup_expected(struct fuzz *f, pid_t pgid)
{
	for (int i = 0; i < f->nhup; i++)
		if (f->hup[i] == pgid)
			return true;
	return false;
}

/* Every agent handled "HC" iff its group is in f->hup, else nothing. */
static int check_signals(struct fuzz *f)
{
	struct jc *j = &f->j;

	/* Let the continued run, then everyone handle what is pending. */
	for (int i = 0; i < j->n; i++) {
		struct proc *p = find(&f->pre, j->pid[i]);

		if (!live(f, i) || !p || !hup_expected(f, p->pgid))
			continue;
		for (int k = 0; jc_state(j, i) == 'T'; k++) {
			if (k > JC_TIMEOUT_MS) {
				snprintf(f->why, sizeof(f->why),
					 "agent %d stays stopped", i);
				return -1;
			}
			usleep(1000);
		}
	}
	jc_settle(j);
	for (int i = 0; i < j->n; i++) {
		struct proc *p = find(&f->pre, j->pid[i]);
		const char *want, *got;

		if (!live(f, i))
			continue;
		want = p && hup_expected(f, p->pgid) ? "HC" : "";
		got = jc_got(j, i, SI_KERNEL);
		if (strcmp(want, got)) {
			snprintf(f->why, sizeof(f->why),
				 "agent %d (pid %d, group %d) handled '%s' "
				 "from the kernel, the model says '%s'", i,
				 j->pid[i], p ? p->pgid : 0, got, want);
			return -1;
		}
	}
	jc_mark(j);
	return 0;
}

/* Probe one running agent of every group that has one. */
static int check_groups(struct fuzz *f)
{
	struct jc *j = &f->j;
	pid_t done[JC_MAX];
	int ndone = 0;

	take(&f->post);
	for (int i = 0; i < j->n; i++) {
		struct proc *p;
		bool seen = false, want;
		int got;

		if (!running(f, i))
			continue;
		p = find(&f->post, j->pid[i]);
		if (!p)
			continue;
		for (int k = 0; k < ndone; k++)
			seen |= done[k] == p->pgid;
		if (seen)
			continue;
		done[ndone++] = p->pgid;
		want = orphaned(&f->post, p->pgid);
		got = jc_probe(j, i);
		if (got != want) {
			snprintf(f->why, sizeof(f->why),
				 "group %d: the probe of agent %d (pid %d) "
				 "says %s, the model %s", p->pgid, i,
				 j->pid[i], got < 0 ? "nothing" : got ?
				 "orphaned" : "not orphaned",
				 want ? "orphaned" : "not orphaned");
			return -1;
		}
	}
	return 0;
}

static int slot_of(struct fuzz *f, pid_t pid)
{
	for (int i = 0; i < f->j.n; i++)
		if (f->j.pid[i] == pid && live(f, i))
			return i;
	return -1;
}

/* An agent whose exit may orphan a group with a stopped member. */
static int aim(struct fuzz *f)
{
	int c[4 * JC_MAX], n = 0;

	take(&f->pre);
	for (int i = 0; i < f->pre.n; i++) {
		struct proc *s = &f->pre.p[i];

		if (!s->stopped || slot_of(f, s->pid) < 0)
			continue;
		for (int k = 0; k < f->pre.n && n < 4 * JC_MAX - 2; k++) {
			struct proc *m = &f->pre.p[k], *pp;
			int x;

			if (m->pgid != s->pgid)
				continue;
			pp = find(&f->pre, m->ppid);
			if (!pp)
				continue;
			/* A member with a parent elsewhere, or its parent. */
			if (m->alive && pp->pgid != m->pgid &&
			    pp->sid == m->sid) {
				if ((x = slot_of(f, m->pid)) >= 0)
					c[n++] = x;
				if ((x = slot_of(f, pp->pid)) >= 0)
					c[n++] = x;
			}
			/* The parent of a zombie member. */
			if (!m->alive && (x = slot_of(f, pp->pid)) >= 0)
				c[n++] = x;
		}
	}
	if (!n)
		return pick(f->j.n);
	return c[pick(n)];
}

/* One random operation; 0, or -1 with f->why set. */
static int step(struct fuzz *f, int opno)
{
	struct jc *j = &f->j;
	int a, kind = pick(100), k;
	pid_t g, x;
	long r;

	f->nhup = 0;
	if (kind < 8 && nlive(f) > 1) {
		/*
		 * Aim at a group with a stopped member: the exit (or SIGKILL)
		 * of one of its qualifying members, of such a member's
		 * parent, or of a zombie member's parent; else a random exit.
		 */
		a = aim(f);
		if (a < 0 || !live(f, a))
			return 0;
		take(&f->pre);
		if (!running(f, a)) {
			jc_kill(j, a, SIGKILL);
			j->gone[a] = true;
			while (jc_alive(j->pid[a]))
				sched_yield();
		} else {
			jc_exit(j, a, 0);
		}
		take(&f->post);
		predict_exit(f, j->pid[a]);
		note("%d: agent %d (pid %d) exits (aimed); model: %d group(s) "
		     "get SIGHUP+SIGCONT", opno, a, j->pid[a], f->nhup);
	} else if (kind < 33 && j->n < JC_MAX && nlive(f) < MAXAGENTS) {
		a = pick_running(f);
		if (a < 0)
			return 0;
		k = jc_fork(j, a);
		if (k < 0) {
			snprintf(f->why, sizeof(f->why), "fork failed");
			return -1;
		}
		note("%d: agent %d forks agent %d (pid %d)", opno, a, k,
		     j->pid[k]);
	} else if (kind < 47) {
		a = pick_running(f);
		g = pick_group(f);
		if (a < 0 || g < 0)
			return 0;
		if (pick(2) == 0)
			g = 0;		/* a group of its own */
		r = jc_call(j, a, JC_SETPGID, 0, g);
		note("%d: agent %d setpgid(0, %d) = %ld", opno, a, g, r);
	} else if (kind < 55) {
		/* A parent moves one of its children. */
		int c = pick(j->n);

		take(&f->pre);
		g = pick_group(f);
		if (!live(f, c) || g < 0)
			return 0;
		x = jc_ppid(j->pid[c]);
		for (a = 0; a < j->n; a++)
			if (j->pid[a] == x && running(f, a))
				break;
		if (a == j->n)
			return 0;
		if (pick(2) == 0)
			g = j->pid[c];
		r = jc_call(j, a, JC_SETPGID, j->pid[c], g);
		note("%d: agent %d setpgid(agent %d, %d) = %ld", opno, a, c,
		     g, r);
	} else if (kind < 59) {
		a = pick(2) ? pick_running(f) : pick_spread_parent(f);
		if (a < 0)
			return 0;
		r = jc_call(j, a, JC_SETSID, 0, 0);
		note("%d: agent %d setsid() = %ld", opno, a, r);
	} else if (kind < 66 && nlive(f) > 1) {
		bool sigkill = pick(4) == 0;

		a = sigkill ? pick(j->n) : pick_running(f);
		if (a < 0 || !live(f, a))
			return 0;
		take(&f->pre);
		if (sigkill) {
			jc_kill(j, a, SIGKILL);
			j->gone[a] = true;
			while (jc_alive(j->pid[a]))
				sched_yield();
		} else {
			jc_exit(j, a, 0);
		}
		take(&f->post);
		predict_exit(f, j->pid[a]);
		note("%d: agent %d (pid %d) %s; model: %d group(s) get "
		     "SIGHUP+SIGCONT", opno, a, j->pid[a],
		     sigkill ? "is killed" : "exits", f->nhup);
	} else if (kind < 80) {
		a = pick_live(f, false);
		if (a < 0)
			return 0;
		jc_stop(j, a);
		note("%d: agent %d stopped", opno, a);
	} else if (kind < 86) {
		a = pick_live(f, true);
		if (a < 0)
			return 0;
		if (jc_cont(j, a)) {
			snprintf(f->why, sizeof(f->why), "agent %d: no answer "
				 "after SIGCONT", a);
			return -1;
		}
		note("%d: agent %d continued", opno, a);
	} else if (kind < 91) {
		a = pick_running(f);
		if (a < 0)
			return 0;
		f->subreaper[a] = !f->subreaper[a];
		r = jc_call(j, a, JC_SUBREAPER, f->subreaper[a], 0);
		note("%d: agent %d subreaper %d = %ld", opno, a,
		     f->subreaper[a], r);
	} else if (kind < 97) {
		/* Reap a zombie agent, by its parent. */
		int c = pick(j->n);

		if (!j->gone[c] || proc_state(j->pid[c], j->pid[c]) != 'Z')
			return 0;
		x = jc_ppid(j->pid[c]);
		for (a = 0; a < j->n; a++)
			if (j->pid[a] == x && running(f, a))
				break;
		if (a == j->n)
			return 0;
		r = jc_call(j, a, JC_REAP, j->pid[c], 0);
		note("%d: agent %d reaps agent %d = %ld", opno, a, c, r);
	} else {
		a = pick_running(f);
		if (a < 0 || f->threaded[a])
			return 0;
		if (jc_leader_exit(j, a)) {
			snprintf(f->why, sizeof(f->why), "leader exit failed");
			return -1;
		}
		f->threaded[a] = true;
		note("%d: agent %d: leader thread exits, thread %d serves",
		     opno, a, j->tid[a]);
	}
	if (check_signals(f))
		return -1;
	return check_groups(f);
}

static int run_seed(unsigned int seed, int ops)
{
	static struct fuzz f;
	int status, a, rc = 0;
	pid_t pid;

	/* Each seed in a child of its own: a clean slate of agents. */
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		memset(&f, 0, sizeof(f));
		nhist = 0;
		rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t)seed << 17) ^ seed;
		for (int i = 0; i < 4; i++)
			rnd();
		if (setpgid(0, 0) || jc_init(&f.j))
			_exit(3);
		if (seed & 2) {
			prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
			note("the fuzzer is a subreaper");
		}
		a = jc_spawn(&f.j);
		if (a < 0)
			_exit(3);
		note("agent 0 (pid %d), child of the fuzzer", f.j.pid[a]);
		if (seed & 1) {
			jc_call(&f.j, a, JC_SETSID, 0, 0);
			note("agent 0 setsid()");
		}
		for (int op = 0; op < ops && !rc; op++) {
			rc = step(&f, op);
			if (rc) {
				take(&f.post);
				fprintf(stderr, "# seed %u, operation %d: %s\n",
					seed, op, f.why);
				dump(&f.post, &f.j);
			}
		}
		jc_cleanup(&f.j);
		_exit(rc ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "seeds", required_argument, NULL, 'n' },
		{ "ops", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned int first = 1, nseeds = 16;
	int ops = 150, c, failed = 0;

	while ((c = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
		switch (c) {
		case 's': first = atoi(optarg); nseeds = 1; break;
		case 'n': nseeds = atoi(optarg); break;
		case 'o': ops = atoi(optarg); break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr, "usage: jobctl_fuzz [--seed S] "
				"[--seeds N] [--ops K] [-v]\n");
			return 2;
		}
	}
	if (getenv("JOBCTL_MUTANT"))
		mutant = atoi(getenv("JOBCTL_MUTANT"));
	signal(SIGCHLD, SIG_DFL);
	printf("TAP version 13\n1..%u\n", nseeds);
	for (unsigned int i = 0; i < nseeds; i++) {
		unsigned int seed = first + i;
		int rc = run_seed(seed, ops);

		printf("%s %u seed %u (%d operations)\n", rc ? "not ok" : "ok",
		       i + 1, seed, ops);
		fflush(stdout);
		failed += rc != 0;
	}
	return failed ? 1 : 0;
}
