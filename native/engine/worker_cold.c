/* SPDX-License-Identifier: MIT */
/*
 * worker_cold.c - what the measured writer loops (worker_loop.h, in worker.c, in
 * native/engine/loops/ and in plugins with a loop of their own) call out of line, as
 * worker_hot.h declares it: a changed control word (the window, --stutter, --shuffle-interval),
 * locktorture's delays and boosts, --long-hold, --ops, a sampled wait, a hand-over or an
 * overlap. Kept apart from worker.c, which runs the loops, so the header and this file are a
 * pair and the loops' file depends on both, not the other way round.
 */
#include <pthread.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <locklab/kernel.h>

#include "engine.h"
#include "worker_hot.h"

#ifndef LOCKLAB_SIM
/* The scheduler's count of the calling thread's moves between CPUs, where the kernel shows it
 * (CONFIG_SCHED_DEBUG's /proc/thread-self/sched); -1 otherwise. */
static long thread_migrations(void)
{
	FILE *in = fopen("/proc/thread-self/sched", "r");
	long count = -1;
	char line[256];
	while (in != NULL && fgets(line, sizeof(line), in) != NULL)
		if (sscanf(line, " se.nr_migrations : %ld", &count) == 1)
			break;
	if (in != NULL)
		fclose(in);
	return count;
}
#endif

static void usage_snapshot_take(struct usage_snapshot *snap)
{
	struct rusage usage;
	getrusage(RUSAGE_THREAD, &usage);
	snap->user_s = (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec * 1e-6;
	snap->system_s = (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec * 1e-6;
	snap->voluntary_switches = usage.ru_nvcsw;
	snap->involuntary_switches = usage.ru_nivcsw;
#ifdef LOCKLAB_SIM
	snap->migrations = (long)locklab_sim_migrations();
	snap->cpu = locklab_sim_current_cpu();
#else
	snap->migrations = thread_migrations();
	snap->cpu = sched_getcpu();
#endif
}

void worker_pin_to(struct worker *w, int cpu)
{
	cpu_set_t set;
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Failure leaves the thread where it is; the report shows the CPU it asked for. */
	sched_setaffinity(0, sizeof(set), &set);
	w->ctx.cpu = cpu;
	w->ctx.numa_node = node_of_cpu(w->run->facts, cpu);
}

/* --shuffle-interval: generation g moves slot s to the CPU planned for slot s + g. */
static void shuffle(struct worker *w, uint32_t control)
{
	struct run_state *run = w->run;
	unsigned int generation = control / CONTROL_SHUFFLE_ONE;
	int cpu = run->cpu_of_slot[(w->slot + generation) % (unsigned int)run->cpu_slot_count];
	worker_pin_to(w, cpu);
}

/*
 * Called when the control word changed since the last acquisition. Returns false when the
 * thread must leave.
 *
 * Each thread snapshots its own rusage (context switches, CPU) and cache-miss counter when it
 * first sees the window open and when it sees the stop, so no other thread reads its counters
 * mid-run. A thread that is asleep inside a sleeping lock when the window opens starts its
 * window late, by that wait.
 */
bool worker_handle_control(struct worker *w, uint32_t control, uint32_t *control_seen)
{
	struct run_state *run = w->run;
	for (;;) {
		if (control_measuring(control) && !w->window_started) {
			/* Acquire: run->sample_every was stored before CONTROL_MEASURE was set. */
			(void)__atomic_load_n(&run->control, __ATOMIC_ACQUIRE);
			if (w->sample_every != run->sample_every) /* auto: the period starts now */
				worker_sampling_from(w, run->sample_every);
			usage_snapshot_take(&w->usage_start);
			w->cache_misses_counted =
				cache_miss_counter_read(w->cache_miss_fd, &w->cache_misses_start);
			w->window_started = true;
		}
		if (control & CONTROL_STOP) {
			if (w->window_started && !w->window_ended) {
				usage_snapshot_take(&w->usage_end);
				w->cache_misses_counted &=
					cache_miss_counter_read(w->cache_miss_fd, &w->cache_misses_end);
				w->window_ended = true;
			}
			return false;
		}
		if (control / CONTROL_SHUFFLE_ONE != *control_seen / CONTROL_SHUFFLE_ONE)
			shuffle(w, control);
		*control_seen = control;
		if (!(control & CONTROL_PAUSE))
			return true;
		/* --stutter: sleep until the control loop changes the word again. */
		syscall(SYS_futex, &run->control, FUTEX_WAIT_PRIVATE, control, NULL, NULL, 0);
		control = __atomic_load_n(&run->control, __ATOMIC_ACQUIRE);
	}
}

int64_t worker_control_changed(struct worker *w, uint32_t control, uint32_t control_seen)
{
	return worker_handle_control(w, control, &control_seen) ? (int64_t)control_seen : -1;
}

static uint64_t next_random(struct worker *w)
{
	w->random ^= w->random << 13;
	w->random ^= w->random >> 7;
	w->random ^= w->random << 17;
	return w->random;
}

/* locktorture's long hold: about once per (nwriters * 2000 * long_hold_ms) acquisitions. */
void worker_maybe_long_hold(struct worker *w)
{
	const struct bench_config *config = w->run->config;
	uint64_t one_in = (uint64_t)config->nwriters * 2000u * config->long_hold_ms;
	if (next_random(w) % one_in != 0)
		return;
	double until = monotonic_s() + config->long_hold_ms * 1e-3;
	while (monotonic_s() < until)
		cpu_relax();
}

/* ---- --torture-delays ---- */

/* Said once per run, on stderr, when the first thread is refused SCHED_FIFO. */
static void note_boost_denied(int err)
{
	static int said;
	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED) == 0)
		fprintf(stderr, "locklab-bench: note: SCHED_FIFO not permitted (%s): "
			"--torture-delays rtmutex_lock goes on without locktorture's rt_boost\n",
			strerror(err));
}

void worker_set_fifo(struct worker *w, bool fifo)
{
	/* sched_set_fifo(): MAX_RT_PRIO / 2; sched_set_normal(current, 0). */
	struct sched_param param = { .sched_priority = fifo ? 50 : 0 };
	int err = pthread_setschedparam(pthread_self(), fifo ? SCHED_FIFO : SCHED_OTHER, &param);
	if (err == 0)
		w->torture_boosted = fifo;
	else if (fifo)
		note_boost_denied(err);
}

/* lock_torture_writer()/reader() before the lock: the rare one-jiffy sleep, then the boost. */
void worker_torture_before_lock(struct worker *w, unsigned int nwriters, bool measuring)
{
	if (unlikely(torture_draw_sleep(&w->torture_rng))) {
		struct timespec jiffy = { 0, 4 * 1000 * 1000 }; /* HZ=250 */
		nanosleep(&jiffy, NULL);
		w->torture_sleeps += measuring;
	}
	if (w->is_reader || !w->run->config->torture->rt_boost)
		return;
	int change = torture_draw_boost(&w->torture_rng, nwriters, w->torture_boosted);
	if (likely(change == 0))
		return;
	if (change > 0) {
		worker_set_fifo(w, true);
		w->torture_boosts += measuring && w->torture_boosted;
		w->torture_boosts_denied += measuring && !w->torture_boosted;
	} else {
		worker_set_fifo(w, false);
		w->torture_unboosts += measuring;
	}
}

/* The critical section's delay, drawn as write_delay()/read_delay() draw it. */
void worker_torture_hold(struct worker *w, const struct torture_delay_spec *spec,
			 unsigned int nthreads, bool measuring)
{
	uint32_t before = READ_ONCE(w->run->control);
	struct torture_draw d = torture_draw_delay(spec, &w->torture_rng, nthreads);
	if (d.delay_ns)
		spin_delay_ns(w->run->calibration, d.delay_ns);
	if (unlikely(d.preempt))
		sched_yield();
	torture_count_hold(w, &d, measuring, before, READ_ONCE(w->run->control));
}

/*
 * The first writer to reach --ops stops the run; it holds the lock, so the count is exact.
 * Returns the new control word, so the caller leaves after this acquisition.
 */
uint32_t worker_stop_at_target(struct run_state *run)
{
	double now = monotonic_s();
	uint32_t before = __atomic_fetch_or(&run->control, CONTROL_STOP, __ATOMIC_ACQ_REL);
	if (!(before & CONTROL_STOP))
		run->window_end_s = now;
	return before | CONTROL_STOP;
}

void worker_record_sample(struct worker *w)
{
	histogram_record(w->latency, w->sample_wait);
	uint64_t overtaken = w->sample_overtaken;
	w->overtaken_samples++;
	w->overtaken_sum += overtaken;
	if (overtaken > w->overtaken_max)
		w->overtaken_max = overtaken;
	/* A FIFO lock lets at most the other writers, queued ahead, in first. */
	if (overtaken >= w->run->config->nwriters)
		w->overtaken_beyond++;
}

void worker_note_violations(struct worker *w, unsigned int owner, unsigned int readers)
{
	w->violations_owner += owner;
	w->violations_readers += readers;
}

/*
 * When the previous holder was not this writer on this node: count the hand-over (in the
 * window), and pay --numa-remote-ns when that holder ran on another node. The full loop calls
 * it in the critical section, where that cost belongs; the lean loop, which runs without
 * --numa-remote-ns, after unlock() through worker_note_owner().
 */
void worker_note_handoff(struct worker *w, uint32_t previous, uint32_t key, bool measuring)
{
	bool same_node = worker_key_node(previous) == worker_key_node(key);
	if (previous != 0 && worker_key_writer(previous) != worker_key_writer(key)) {
		worker_count_handoff(w, same_node, measuring);
		uint64_t remote_ns = w->run->config->numa_remote_ns;
		if (unlikely(remote_ns) && !same_node) {
			spin_delay_ns(w->run->calibration, remote_ns);
			w->remote_cost_paid += measuring;
		}
	} else {
		w->handoff_checks += measuring;
		if (previous != 0) /* this writer, moved by --shuffle-interval since */
			w->reacquisitions += measuring;
	}
}

void worker_note_owner(struct worker *w, uint64_t seen, uint32_t key, uint32_t control_at_lock)
{
	uint32_t found = (uint32_t)(seen >> 32) ^ key;
	if (found != key)
		worker_note_handoff(w, found, key, control_measuring(control_at_lock));
	w->violations_owner += (uint32_t)seen != 0;
}
