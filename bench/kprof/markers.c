// SPDX-License-Identifier: GPL-2.0
/*
 * The markers kprof.so watches for: call kprof_start() and kprof_stop()
 * around the region to profile.  noinline and a barrier keep each a
 * function of its own, whose first block kprof sees run.
 */
void kprof_start(void) __attribute__((noinline));
void kprof_stop(void) __attribute__((noinline));

void kprof_start(void)
{
	__asm__ volatile("" ::: "memory");
}

void kprof_stop(void)
{
	__asm__ volatile("" ::: "memory");
}
