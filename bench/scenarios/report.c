// SPDX-License-Identifier: GPL-2.0
/*
 * report: reports other than a parent's reap of its own children, behind
 * N long-lived children.
 *
 *   stopped, continued: M stop or continue reports, waitpid(-1);
 *   ptrace: a tracer that is not the parent reaps M exiting tracees.
 */

static void scen_stopcont(int continued, int b UNUSED)
{
	pid_t *sht = xcalloc(o.m, sizeof(*sht));
	struct stackpool lp, sp;
	pid_t *lng = long_lived(o.n, &lp);
	int r, st;
	long i;
	pid_t pid;
	uint64_t t0, t1;

	pool_init(&sp, o.m);
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		make_sleepers(sht, o.m, &sp);
		for (i = 0; i < o.m; i++)
			kill(sht[i], SIGSTOP);
		wait_ready(sht, o.m, WSTOPPED);
		if (continued) {
			/* Consume the stop reports (by pid), then continue. */
			for (i = 0; i < o.m; i++)
				if (waitpid(sht[i], &st, WUNTRACED) != sht[i])
					die("waitpid stop report");
			for (i = 0; i < o.m; i++)
				kill(sht[i], SIGCONT);
			wait_ready(sht, o.m, WCONTINUED);
		}
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			pid = waitpid(-1, &st, continued ? WCONTINUED : WUNTRACED);
			expect_pid(pid, "waitpid(-1)");
			expect_status(continued ? WIFCONTINUED(st) :
				      WIFSTOPPED(st), st, pid);
		}
		t1 = now_ns();
		report(o.m, t0, t1);
		kill_reap(sht, o.m);
	}
	kill_reap(lng, o.n);
}

/*
 * The parent P makes N long-lived children and REPEATS batches of M gated
 * children and sends their pids to the tracer T (this process). T seizes
 * the batches first (last batch first) and the long-lived children last,
 * so the long-lived tracees are at the head of T's ptraced list. For each
 * batch, T asks P to open its gate and reaps the M exiting tracees with
 * wait(-1, __WALL). P reaps its own children only at the end.
 */
static void scen_ptrace(NO_ARGS)
{
	long total = o.n + (long)o.reps * o.m, i;
	pid_t *pids = xcalloc(total, sizeof(*pids));
	int topar[2], tot[2], r, st;
	pid_t parent, pid;
	uint64_t t0, t1;
	char c;

	if (pipe(topar) || pipe(tot))
		die("pipe");
	parent = fork();
	if (parent < 0)
		die("fork");
	if (parent == 0) {
		struct stackpool pool;
		int (*gates)[2] = xcalloc(o.reps, sizeof(*gates));

		close(topar[1]);
		close(tot[0]);
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
		pool_init(&pool, total);
		make_sleepers(pids, o.n, &pool);
		for (r = 0; r < o.reps; r++) {
			if (pipe(gates[r]))
				die("pipe");
			for (i = 0; i < o.m; i++) {
				long k = o.n + (long)r * o.m + i;

				pids[k] = spawn_child(child_gate,
						      gate_arg(gates[r]),
						      pool_top(&pool, k), 0);
			}
			close(gates[r][0]);
		}
		xwrite(tot[1], pids, total * sizeof(*pids));
		for (r = 0; r < o.reps; r++) {
			xread(topar[0], &c, 1);
			close(gates[r][1]);
			xwrite(tot[1], &c, 1);
		}
		xread(topar[0], &c, 1);
		for (i = 0; i < total; i++)
			waitpid(pids[i], NULL, 0);
		_exit(0);
	}
	close(topar[0]);
	close(tot[1]);
	xread(tot[0], pids, total * sizeof(*pids));
	for (r = o.reps - 1; r >= 0; r--)
		for (i = 0; i < o.m; i++)
			if (ptrace(PTRACE_SEIZE, pids[o.n + (long)r * o.m + i],
				   0, 0))
				die("PTRACE_SEIZE");
	for (i = 0; i < o.n; i++)
		if (ptrace(PTRACE_SEIZE, pids[i], 0, 0))
			die("PTRACE_SEIZE");
	header(NULL);
	for (r = 0; r < o.reps; r++) {
		pid_t *batch = pids + o.n + (long)r * o.m;

		xwrite(topar[1], "g", 1);
		xread(tot[0], &c, 1);
		wait_ready(batch, o.m, WEXITED);
		t0 = now_ns();
		for (i = 0; i < o.m; i++) {
			pid = waitpid(-1, &st, __WALL);
			expect_pid(pid, "waitpid(-1, __WALL)");
		}
		t1 = now_ns();
		report(o.m, t0, t1);
	}
	kill_reap(pids, o.n);
	xwrite(topar[1], "q", 1);
	waitpid(parent, NULL, 0);
}

static const struct scenario report_scenarios[] = {
	{ "stopped", 1000, 50, scen_stopcont, 0, 0,
	  .help = "M WUNTRACED stop reports" },
	{ "continued", 1000, 50, scen_stopcont, 1, 0,
	  .help = "M WCONTINUED reports" },
	{ "ptrace", 1000, 50, scen_ptrace, 0, 0,
	  .help = "a tracer (not the parent) reaps M tracees" },
};
