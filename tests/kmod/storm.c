// SPDX-License-Identifier: GPL-2.0
/*
 * Replay the 2007 module-load storm on a modern kernel.
 *
 * In 2007 every module load ran stop_machine_run(), which created one
 * high-priority kernel thread per CPU; each became a child of init and had
 * to be found on init's child list when it exited.  This module does the
 * same on purpose: on load it creates one kernel thread bound to each
 * online CPU and stops them all again, @rounds times, and then runs
 * stop_machine() @stop_rounds times.  Each phase is timed and reported in
 * one parseable line, "storm: KEY=VALUE ...", for tests/kmod/kmodtest.c.
 *
 * Linux 6.12 parents kernel threads to kthreadd and runs stop_machine()
 * on the per-CPU stopper threads created once at boot, so the test expects
 * init's child list to stay untouched and no pid to be spent on
 * stop_machine().
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/idr.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/stop_machine.h>

static unsigned int rounds = 3;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "rounds of one kthread per online CPU (default 3)");

static unsigned int stop_rounds = 3;
module_param(stop_rounds, uint, 0444);
MODULE_PARM_DESC(stop_rounds, "stop_machine() calls (default 3)");

static unsigned int hold_ms;
module_param(hold_ms, uint, 0444);
MODULE_PARM_DESC(hold_ms,
		 "keep each round's threads alive this long, so that an observer can see them (default 0)");

static int storm_thread(void *unused)
{
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* The cyclic pid allocator's position: pids handed out between two reads. */
static unsigned int storm_pid_cursor(void)
{
	return idr_get_cursor(&init_pid_ns.idr);
}

static int storm_round(unsigned int round, struct task_struct **tasks)
{
	unsigned int cpu, cpus = 0, pid0;
	u64 t0, t1, t2;
	int ret = 0;

	cpus_read_lock();
	pid0 = storm_pid_cursor();
	t0 = ktime_get_ns();
	for_each_online_cpu(cpu) {
		struct task_struct *t;

		t = kthread_create_on_cpu(storm_thread, NULL, cpu, "storm/%u");
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			break;
		}
		tasks[cpu] = t;
		wake_up_process(t);
		cpus++;
	}
	t1 = ktime_get_ns();
	if (!ret && hold_ms)
		msleep(hold_ms);
	t2 = ktime_get_ns();
	for_each_online_cpu(cpu) {
		if (tasks[cpu]) {
			kthread_stop(tasks[cpu]);
			tasks[cpu] = NULL;
		}
	}
	pr_info("round=%u cpus=%u create_ns=%llu stop_ns=%llu pids=%u\n",
		round, cpus, t1 - t0, ktime_get_ns() - t2,
		storm_pid_cursor() - pid0);
	cpus_read_unlock();
	return ret;
}

static int storm_stop_fn(void *data)
{
	atomic_inc(data);
	return 0;
}

static int __init storm_init(void)
{
	unsigned int i, cpus = num_online_cpus(), pid0;
	u64 kthreads_ns, sm_ns = 0, t0;
	struct task_struct **tasks;
	int ret = 0;

	pr_info("start cpus=%u rounds=%u stop_rounds=%u hold_ms=%u\n",
		cpus, rounds, stop_rounds, hold_ms);

	tasks = kcalloc(nr_cpu_ids, sizeof(*tasks), GFP_KERNEL);
	if (!tasks)
		return -ENOMEM;
	t0 = ktime_get_ns();
	for (i = 0; i < rounds && !ret; i++)
		ret = storm_round(i, tasks);
	kthreads_ns = ktime_get_ns() - t0;
	kfree(tasks);
	if (ret) {
		pr_err("creating kthreads failed: %d\n", ret);
		return ret;
	}

	pid0 = storm_pid_cursor();
	for (i = 0; i < stop_rounds; i++) {
		atomic_t ran = ATOMIC_INIT(0);
		u64 t = ktime_get_ns();

		ret = stop_machine(storm_stop_fn, &ran, cpu_online_mask);
		t = ktime_get_ns() - t;
		sm_ns += t;
		pr_info("stop_machine=%u cpus=%u ns=%llu ran_on=%d ret=%d\n",
			i, cpus, t, atomic_read(&ran), ret);
		if (ret)
			return ret;
	}
	pr_info("summary cpus=%u rounds=%u threads=%u kthreads_ns=%llu stop_rounds=%u stop_machine_ns=%llu stop_machine_pids=%u\n",
		cpus, rounds, rounds * cpus, kthreads_ns, stop_rounds, sm_ns,
		storm_pid_cursor() - pid0);
	return 0;
}

static void __exit storm_exit(void)
{
	pr_info("unloaded\n");
}

module_init(storm_init);
module_exit(storm_exit);

MODULE_DESCRIPTION("Replay the 2007 module-load kthread storm: one kthread per CPU, k rounds, and stop_machine()");
MODULE_AUTHOR("fastreap");
MODULE_LICENSE("GPL");
