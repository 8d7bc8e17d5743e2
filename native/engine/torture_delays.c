/* SPDX-License-Identifier: MIT */
/*
 * torture_delays.c - --torture-delays TYPE: the hold times of Linux 6.1's locktorture.
 *
 * Source: kernel/locking/locktorture.c and kernel/torture.c of Linux 6.1 (Debian's
 * linux-source-6.1). locktorture does not hold its lock for a fixed time: each torture type's
 * write_delay() (and read_delay() for reader-writer types) draws, inside the critical section,
 * with torture_random():
 *
 *   type (aliases)                    long delay, one in         short delay            preempt
 *   lock_busted                       mdelay(100)  n*200000      -                      n*20000
 *   spin_lock (spin_lock_irq),        mdelay(100)  n*200000      udelay(2), one in n*4  n*20000
 *   rtmutex_lock                      (three independent draws: both delays can happen)
 *   rw_lock (rw_lock_irq)   writer    mdelay(100)  n*200000      else udelay(2)         -
 *                           reader    mdelay(100)  r*200000      else udelay(10)        -
 *   mutex_lock (ww_mutex_lock)        mdelay(500)  n*200000      else mdelay(20)        n*20000
 *   rwsem_lock (percpu_rwsem_lock)    mdelay(1000) n*200000      else mdelay(10)        n*20000
 *                           reader    mdelay(200)  r*200000      else mdelay(50)        r*20000
 *
 * n is nrealwriters_stress and r nrealreaders_stress: here the run's --nwriters and
 * --nreaders. "n*200000" is the kernel's nrealwriters_stress * 2000 * longdelay_ms with
 * longdelay_ms = 100. Each "one in m" is `!(torture_random(trsp) % m)`, one draw each, in
 * the order above.
 *
 * Around the critical section, as lock_torture_writer()/lock_torture_reader() do:
 *   - before each acquisition, one in 2^20 (torture_random() & 0xfffff == 0) sleeps one jiffy
 *     (schedule_timeout_uninterruptible(1)); here 4 ms, one jiffy at HZ=250, Debian's setting;
 *   - rtmutex_lock writers call torture_rtmutex_boost() first: an unboosted thread goes
 *     SCHED_FIFO at priority 50 (sched_set_fifo(): MAX_RT_PRIO / 2) one in n*50000, a boosted
 *     one goes back to SCHED_OTHER one in n*100000; in 6.1 the factor 50000 is a constant
 *     (later kernels made it the rt_boost_factor parameter).
 *
 * What differs, and why:
 *   - mdelay()/udelay() busy-wait on a calibrated clock; so does the engine (the cycle counter,
 *     with cpu_relax(), as x86's delay_tsc() spins on the TSC with rep_nop()).
 *   - torture_preempt_schedule() is __preempt_schedule() under CONFIG_PREEMPTION (a no-op
 *     otherwise): it switches only if a reschedule is pending. A process cannot see that flag;
 *     the engine calls sched_yield(), which switches if another thread of the same priority
 *     is runnable on the CPU.
 *   - locktorture's kthreads run at nice 19 (set_user_nice(current, MAX_NICE)); the engine
 *     leaves the nice value alone, so it measures the lock, not the scheduler's weights.
 *   - torture_random(): the same LCG (state * 39916801 + 479001701 on an unsigned long, the
 *     low 32 bits returned with their 16-bit halves swapped, swahw32()), and the same refresh
 *     (every 10000 draws the state gains the clock in ns; local_clock() there,
 *     CLOCK_MONOTONIC here). The kernel starts each thread's state at 0 and relies on the first
 *     refresh (at the first draw) to tell threads apart; the engine also adds the --seed and
 *     the thread's slot to the starting state, so threads that read the same clock still differ.
 */
#include <time.h>

#include "engine.h"

#define TORTURE_RANDOM_MULT 39916801ul /* prime, as kernel/torture.c */
#define TORTURE_RANDOM_ADD 479001701ul /* prime */
#define TORTURE_RANDOM_REFRESH 10000

#define MS 1000000ull
#define US 1000ull

static uint64_t clock_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

void torture_random_init(struct torture_random_state *trs, uint64_t seed, unsigned int slot)
{
	trs->state = (seed + 1) * 0x9e3779b97f4a7c15ull + slot;
	trs->count = 0;
	trs->refresh_ns = clock_ns;
}

uint32_t torture_random(struct torture_random_state *trs)
{
	if (--trs->count < 0) {
		trs->state += trs->refresh_ns ? trs->refresh_ns() : 0;
		trs->count = TORTURE_RANDOM_REFRESH;
	}
	trs->state = trs->state * TORTURE_RANDOM_MULT + TORTURE_RANDOM_ADD;
	uint32_t low = (uint32_t)trs->state;
	return (low << 16) | (low >> 16); /* swahw32() */
}

/* One role's delays. short_one_in == 0 with short_ns > 0: the short delay is the long draw's
 * else branch. */
#define WRITER_SPIN(preempt) { 100 * MS, 200000, 2 * US, 4, (preempt) }
static const struct torture_delay_spec spin_writer = WRITER_SPIN(20000);
static const struct torture_delay_spec busted_writer = { 100 * MS, 200000, 0, 0, 20000 };
static const struct torture_delay_spec rwlock_writer = { 100 * MS, 200000, 2 * US, 0, 0 };
static const struct torture_delay_spec rwlock_reader = { 100 * MS, 200000, 10 * US, 0, 0 };
static const struct torture_delay_spec mutex_writer = { 500 * MS, 200000, 20 * MS, 0, 20000 };
static const struct torture_delay_spec rwsem_writer = { 1000 * MS, 200000, 10 * MS, 0, 20000 };
static const struct torture_delay_spec rwsem_reader = { 200 * MS, 200000, 50 * MS, 0, 20000 };

static const struct torture_profile profiles[] = {
	{ "lock_busted", "torture_lock_busted_write_delay", &busted_writer, NULL, false },
	{ "spin_lock", "torture_spin_lock_write_delay", &spin_writer, NULL, false },
	{ "spin_lock_irq", "torture_spin_lock_write_delay", &spin_writer, NULL, false },
	{ "rw_lock", "torture_rwlock_write_delay/read_delay", &rwlock_writer, &rwlock_reader,
	  false },
	{ "rw_lock_irq", "torture_rwlock_write_delay/read_delay", &rwlock_writer, &rwlock_reader,
	  false },
	{ "mutex_lock", "torture_mutex_delay", &mutex_writer, NULL, false },
	{ "ww_mutex_lock", "torture_mutex_delay", &mutex_writer, NULL, false },
	{ "rtmutex_lock", "torture_rtmutex_delay, torture_rtmutex_boost", &spin_writer, NULL,
	  true },
	{ "rwsem_lock", "torture_rwsem_write_delay/read_delay", &rwsem_writer, &rwsem_reader,
	  false },
	{ "percpu_rwsem_lock", "torture_rwsem_write_delay/read_delay", &rwsem_writer,
	  &rwsem_reader, false },
};

const struct torture_profile *torture_profile_find(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		const char *a = profiles[i].name, *b = name;
		while (*a && *a == *b)
			a++, b++;
		if (*a == '\0' && *b == '\0')
			return &profiles[i];
	}
	return NULL;
}

const char *torture_profile_names(void)
{
	return "lock_busted, spin_lock, spin_lock_irq, rw_lock, rw_lock_irq, mutex_lock, "
	       "ww_mutex_lock, rtmutex_lock, rwsem_lock, percpu_rwsem_lock";
}

struct torture_draw torture_draw_delay(const struct torture_delay_spec *spec,
				       struct torture_random_state *trs, unsigned int nthreads)
{
	struct torture_draw d = { 0, false, false, false };
	unsigned long n = nthreads;
	if (torture_random(trs) % (n * spec->long_one_in) == 0) {
		d.long_delay = true;
		d.delay_ns += spec->long_ns;
	} else if (spec->short_ns && spec->short_one_in == 0) {
		d.short_delay = true;
		d.delay_ns += spec->short_ns;
	}
	if (spec->short_one_in && torture_random(trs) % (n * spec->short_one_in) == 0) {
		d.short_delay = true;
		d.delay_ns += spec->short_ns;
	}
	if (spec->preempt_one_in && torture_random(trs) % (n * spec->preempt_one_in) == 0)
		d.preempt = true;
	return d;
}

bool torture_draw_sleep(struct torture_random_state *trs)
{
	return (torture_random(trs) & 0xfffff) == 0;
}

int torture_draw_boost(struct torture_random_state *trs, unsigned int nwriters, bool boosted)
{
	const unsigned long factor = 50000; /* "yes, quite arbitrary", in 6.1 a constant */
	unsigned long n = nwriters;
	if (!boosted)
		return torture_random(trs) % (n * factor) == 0 ? 1 : 0;
	return torture_random(trs) % (n * factor * 2) == 0 ? -1 : 0;
}

double torture_long_probability(const struct torture_delay_spec *spec, unsigned int nthreads)
{
	return 1.0 / ((double)nthreads * spec->long_one_in);
}

double torture_short_probability(const struct torture_delay_spec *spec, unsigned int nthreads)
{
	if (spec->short_ns == 0)
		return 0;
	if (spec->short_one_in == 0)
		return 1.0 - torture_long_probability(spec, nthreads);
	return 1.0 / ((double)nthreads * spec->short_one_in);
}

double torture_preempt_probability(const struct torture_delay_spec *spec, unsigned int nthreads)
{
	return spec->preempt_one_in ? 1.0 / ((double)nthreads * spec->preempt_one_in) : 0;
}

/*
 * Count one hold in the window's figures. A long hold drawn in the warm-up that is still held
 * when the window opens is counted too, once, in long and long_before_window: the window
 * measured it (a 100 ms hold can cover a whole 4 ms window, whose throughput is then 0), so a
 * count of 0 would hide why. Its acquisition is not counted: it was made before the window.
 * `before` and `after`: the control word as the hold began and as it ended.
 */
void torture_count_hold(struct worker *w, const struct torture_draw *d, bool measuring,
			uint32_t before, uint32_t after)
{
	if (measuring) {
		w->torture_draws++;
		w->torture_long += d->long_delay;
		w->torture_short += d->short_delay;
		w->torture_preempt += d->preempt;
	} else if (d->long_delay && !(before & (CONTROL_MEASURE | CONTROL_STOP)) &&
		   (after & CONTROL_MEASURE)) {
		w->torture_long++;
		w->torture_long_before_window++;
	}
}
