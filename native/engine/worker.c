/* SPDX-License-Identifier: MIT */
/*
 * worker.c - the measuring loop, one per thread. It is kept small and separate from every
 * lock: per acquisition it costs one read of the shared control word, two plain stores to
 * the thread's own cache line, and the correctness checks below; one acquisition in
 * --latency-every is timed with the cycle counter.
 *
 * Correctness, always on:
 *   writers  find writer_inside == 0 and readers_inside == 0 on entry, own writer_inside until
 *            exit, and increment a plain counter (cs.writes) that must equal the sum of the
 *            writers' acquisitions at the end: a lost update means two writers overlapped.
 *   readers  find writer_inside == 0, and cs.writes unchanged from entry to exit.
 * Under ThreadSanitizer the plain accesses also make TSAN check the lock's memory ordering.
 *
 * Hand-overs, for every lock: a writer notes who held the lock before it (last_writer, in the
 * critical section's cache line, so no extra miss) and counts a hand-over from another writer,
 * and whether that writer was on its NUMA node. CNA's whole point shows up as that fraction.
 * On a sampled acquisition a writer also counts how many acquisitions overtook it while it
 * waited (write_sequence before and after): a FIFO lock bounds it by the number of writers.
 */
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <locklab/kernel.h>

#include "engine.h"

static void usage_snapshot_take(struct usage_snapshot *snap)
{
	struct rusage usage;
	getrusage(RUSAGE_THREAD, &usage);
	snap->user_s = (double)usage.ru_utime.tv_sec + (double)usage.ru_utime.tv_usec * 1e-6;
	snap->system_s = (double)usage.ru_stime.tv_sec + (double)usage.ru_stime.tv_usec * 1e-6;
	snap->voluntary_switches = usage.ru_nvcsw;
	snap->involuntary_switches = usage.ru_nivcsw;
}

static void pin_to(struct worker *w, int cpu)
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
	pin_to(w, cpu);
}

/*
 * Called when the control word changed since the last acquisition. Returns false when the
 * thread must leave.
 *
 * Each thread snapshots its own rusage (context switches, CPU) when it first sees the window
 * open and when it sees the stop, so no other thread reads its counters mid-run. A thread that
 * is asleep inside a sleeping lock when the window opens starts its window late, by that wait.
 */
static bool handle_control(struct worker *w, uint32_t control, uint32_t *control_seen)
{
	struct run_state *run = w->run;
	for (;;) {
		if (control_measuring(control) && !w->window_started) {
			usage_snapshot_take(&w->usage_start);
			w->window_started = true;
		}
		if (control & CONTROL_STOP) {
			if (w->window_started && !w->window_ended) {
				usage_snapshot_take(&w->usage_end);
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

static uint64_t next_random(struct worker *w)
{
	w->random ^= w->random << 13;
	w->random ^= w->random >> 7;
	w->random ^= w->random << 17;
	return w->random;
}

/* locktorture's long hold: about once per (nwriters * 2000 * long_hold_ms) acquisitions. */
static void maybe_long_hold(struct worker *w)
{
	const struct bench_config *config = w->run->config;
	uint64_t one_in = (uint64_t)config->nwriters * 2000u * config->long_hold_ms;
	if (next_random(w) % one_in != 0)
		return;
	double until = monotonic_s() + config->long_hold_ms * 1e-3;
	while (monotonic_s() < until)
		cpu_relax();
}

/*
 * The first writer to reach --ops stops the run; it holds the lock, so the count is exact.
 * Returns the new control word, so the caller leaves after this acquisition.
 */
static uint32_t stop_at_target(struct run_state *run)
{
	double now = monotonic_s();
	uint32_t before = __atomic_fetch_or(&run->control, CONTROL_STOP, __ATOMIC_ACQ_REL);
	if (!(before & CONTROL_STOP))
		run->window_end_s = now;
	return before | CONTROL_STOP;
}

static void count_acquisition(struct worker *w, bool measuring)
{
	__atomic_store_n(&w->acquisitions_total, w->acquisitions_total + 1, __ATOMIC_RELAXED);
	if (measuring)
		__atomic_store_n(&w->acquisitions_window, w->acquisitions_window + 1,
				 __ATOMIC_RELAXED);
}

/*
 * One acquisition in latency_every is sampled: for writers, read the write sequence (to count
 * who overtakes us), then start the cycle count, last, just before lock().
 */
static inline bool sample_begin(struct worker *w, uint64_t *started, const uint64_t *sequence,
				uint64_t *sequence_before)
{
	bool timed = --w->sample_countdown == 0;
	if (unlikely(timed)) {
		if (sequence)
			*sequence_before = READ_ONCE(*sequence);
		*started = arch_cycles();
	}
	return timed;
}

/*
 * Bookkeeping after unlock, the same for writers and readers: count, record the sampled wait,
 * and act on a changed control word. Returns false when the thread must leave.
 */
static inline bool acquisition_done(struct worker *w, bool measuring, bool timed,
				    uint64_t waited, uint32_t control, uint32_t *control_seen)
{
	count_acquisition(w, measuring);
	if (unlikely(timed)) {
		w->sample_countdown = w->run->config->latency_every;
		if (measuring)
			histogram_record(w->latency, waited);
	}
	return likely(control == *control_seen) || handle_control(w, control, control_seen);
}

/* In the critical section: count the hand-over from the previous holder. */
static inline void note_handoff(struct worker *w, struct critical_section *cs, uint32_t me)
{
	uint32_t previous = cs->last_writer;
	if (previous == me) {
		w->reacquisitions++;
	} else if (previous != 0) {
		w->handoffs++;
		w->handoffs_same_node += cs->last_writer_node == w->ctx.numa_node;
	}
	cs->last_writer = me;
	cs->last_writer_node = w->ctx.numa_node;
}

static inline void note_overtaken(struct worker *w, uint64_t before, uint64_t after)
{
	uint64_t overtaken = after - before;
	w->overtaken_samples++;
	w->overtaken_sum += overtaken;
	if (overtaken > w->overtaken_max)
		w->overtaken_max = overtaken;
}

static void writer_loop(struct worker *w, uint32_t control_seen)
{
	struct run_state *run = w->run;
	const struct bench_config *config = run->config;
	const struct lock_ops *ops = config->lock;
	void *lock = run->lock;
	struct critical_section *cs = &run->cs;
	struct lock_thread *self = &w->ctx;
	const uint32_t me = self->index + 1;
	const uint64_t hold = run->calibration->hold_iterations;
	const uint64_t gap = run->calibration->gap_iterations;
	const unsigned int cs_lines = config->cs_lines;
	const uint64_t target = config->ops;

	for (;;) {
		uint64_t started = 0, sequence_before = 0;
		bool timed = sample_begin(w, &started, &cs->write_sequence, &sequence_before);

		ops->lock(lock, self);

		uint64_t waited = timed ? arch_cycles() - started : 0;
		uint32_t control = READ_ONCE(run->control);
		bool measuring = control_measuring(control);

		/* ---- critical section ---- */
		if (unlikely(READ_ONCE(cs->writer_inside) != 0))
			w->violations_owner++;
		WRITE_ONCE(cs->writer_inside, me);
		if (unlikely(READ_ONCE(cs->readers_inside) != 0))
			w->violations_readers++;
		cs->writes++;
		WRITE_ONCE(cs->write_sequence, cs->writes);
		if (measuring) {
			note_handoff(w, cs, me);
			if (unlikely(timed))
				note_overtaken(w, sequence_before, cs->writes - 1);
		}
		if (measuring && target && ++cs->window_writes == target)
			control = stop_at_target(run);
		for (unsigned int i = 0; i < cs_lines; i++)
			cs->lines[i].value++;
		if (hold)
			busy_loop(hold);
		if (unlikely(config->long_hold_ms))
			maybe_long_hold(w);
		if (unlikely(READ_ONCE(cs->writer_inside) != me))
			w->violations_owner++;
		WRITE_ONCE(cs->writer_inside, 0);
		/* ---- end of critical section ---- */

		ops->unlock(lock, self);

		if (!acquisition_done(w, measuring, timed, waited, control, &control_seen))
			return;
		if (gap)
			busy_loop(gap);
	}
}

static void reader_loop(struct worker *w, uint32_t control_seen)
{
	struct run_state *run = w->run;
	const struct bench_config *config = run->config;
	const struct lock_ops *ops = config->lock;
	void *lock = run->lock;
	struct critical_section *cs = &run->cs;
	struct lock_thread *self = &w->ctx;
	const uint64_t hold = run->calibration->hold_iterations;
	const uint64_t gap = run->calibration->gap_iterations;
	const unsigned int cs_lines = config->cs_lines;
	uint64_t checksum = 0;

	for (;;) {
		uint64_t started = 0;
		bool timed = sample_begin(w, &started, NULL, NULL);

		ops->read_lock(lock, self);

		uint64_t waited = timed ? arch_cycles() - started : 0;
		uint32_t control = READ_ONCE(run->control);
		bool measuring = control_measuring(control);

		/* ---- read-side critical section ---- */
		__atomic_fetch_add(&cs->readers_inside, 1, __ATOMIC_RELAXED);
		if (unlikely(READ_ONCE(cs->writer_inside) != 0))
			w->violations_readers++;
		uint64_t writes_seen = cs->writes;
		for (unsigned int i = 0; i < cs_lines; i++)
			checksum += cs->lines[i].value;
		if (hold)
			busy_loop(hold);
		if (unlikely(cs->writes != writes_seen))
			w->violations_read_data++;
		__atomic_fetch_sub(&cs->readers_inside, 1, __ATOMIC_RELAXED);
		/* ---- end of read-side critical section ---- */

		ops->read_unlock(lock, self);

		if (!acquisition_done(w, measuring, timed, waited, control, &control_seen))
			break;
		if (gap)
			busy_loop(gap);
	}
	/* Keep the reads of cs_lines from being optimised away. */
	__asm__ __volatile__("" : : "r"(checksum));
}

void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run_state *run = w->run;

	pin_to(w, run->cpu_of_slot[w->slot]);
	w->random = (run->config->seed + 1) * 0x9e3779b97f4a7c15ull ^ (w->slot + 1);
	w->sample_countdown = run->config->latency_every;

	pthread_barrier_wait(&run->start_barrier);
	uint32_t control = __atomic_load_n(&run->control, __ATOMIC_ACQUIRE);
	uint32_t control_seen = control;
	if (handle_control(w, control, &control_seen)) {
		if (w->is_reader)
			reader_loop(w, control_seen);
		else
			writer_loop(w, control_seen);
	}
	return NULL;
}
