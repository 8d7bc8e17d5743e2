/* SPDX-License-Identifier: MIT */
/*
 * worker.c - the measuring loop, one per thread. It is kept small and separate from every
 * lock: per acquisition it costs one read of the shared control word and the correctness
 * checks below (worker_loop.h lists what each costs); one acquisition in --latency-every is
 * timed with the cycle counter (by default, so few that timing costs under 0.5%: run.c).
 *
 * Correctness, always on:
 *   writers  find readers_inside == 0 on entry, own writer_inside until exit (with readers in
 *            the run: find it 0 on entry and clear it on exit), and increment a plain counter
 *            (cs.writes) that must equal the sum of the writers' acquisitions at the end: a
 *            lost update means two writers overlapped.
 *   readers  find writer_inside == 0, and cs.writes unchanged from entry to exit.
 * Under ThreadSanitizer the plain accesses also make TSAN check the lock's memory ordering.
 *
 * Hand-overs, for every lock: a writer notes who held the lock before it (last_holder, in the
 * critical section's cache line, so no extra miss), counts a hand-over from another writer,
 * and whether that writer was on its NUMA node. CNA's whole point shows up as that fraction.
 * On a sampled acquisition a writer also counts how many acquisitions overtook it while it
 * waited (cs.writes before and after): a FIFO lock bounds it by the number of writers.
 * The last holder is tracked from the first acquisition, warm-up included; hand-overs are
 * counted in the window only.
 *
 * --numa-remote-ns N: a writer whose predecessor (another writer) ran on another node
 * busy-waits N ns more inside the critical section, standing for the remote transfer of the
 * lock's and the data's cache lines. It is an emulation, for virtual nodes on one socket,
 * where a cross-node hand-over costs nothing extra; every hand-over that paid is counted, so
 * the count equals the cross-node hand-overs (handoffs - same_node).
 *
 * --torture-delays TYPE: the hold time is drawn as locktorture draws it (torture_delays.c).
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

/*
 * The reader loop's bookkeeping after unlock: count, record the sampled wait, and act on a
 * changed control word. Returns false when the thread must leave.
 */
static inline bool acquisition_done(struct worker *w, bool measuring, bool timed,
				    uint64_t waited, uint32_t control, uint32_t *control_seen)
{
	worker_count_acquisition(w, measuring);
	if (unlikely(timed)) {
		w->sample_countdown = worker_sample_period(w);
		if (measuring)
			histogram_record(w->latency, waited);
	}
	return likely(control == *control_seen) || worker_handle_control(w, control, control_seen);
}

/* The generic writer loop: the lock through struct lock_ops (plugins, and the locks without a
 * loop of their own in native/engine/loops/). */
#define WORKER_LOOP_NAME writer_loop_indirect
#define WORKER_LOCK(lock, self) ops->lock(lock, self)
#define WORKER_UNLOCK(lock, self) ops->unlock(lock, self)
#define WORKER_LOOP_SETUP const struct lock_ops *ops = config->lock
#include "worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
#undef WORKER_LOOP_SETUP

/* The built-in locks compiled into a loop of their own (native/engine/loops/). */
#define LOOP(ops, loop) extern const struct lock_ops ops; void loop(struct worker *w, uint32_t control_seen);
#include "loops/loops.def"
#undef LOOP

static const struct {
	const struct lock_ops *ops;
	void (*writer_loop)(struct worker *w, uint32_t control_seen);
} specialised_loops[] = {
#define LOOP(ops, loop) { &ops, loop },
#include "loops/loops.def"
#undef LOOP
};

typedef void writer_loop_fn(struct worker *w, uint32_t control_seen);

static writer_loop_fn *writer_loop_of(const struct lock_ops *ops)
{
	writer_loop_fn *plugin_loop = registry_plugin_loop(ops);
	if (plugin_loop != NULL)
		return plugin_loop;
	for (size_t i = 0; i < sizeof(specialised_loops) / sizeof(specialised_loops[0]); i++)
		if (specialised_loops[i].ops == ops)
			return specialised_loops[i].writer_loop;
	return writer_loop_indirect;
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
	const struct torture_profile *torture = config->torture;
	uint64_t checksum = 0;

	for (;;) {
		uint64_t started = 0;
		if (unlikely(torture))
			worker_torture_before_lock(w, config->nwriters, control_measuring(control_seen));
		bool timed = --w->sample_countdown == 0;
		if (unlikely(timed))
			started = arch_cycles();

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
		if (unlikely(torture))
			worker_torture_hold(w, torture->reader, config->nreaders, measuring);
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

	w->tid = (pid_t)syscall(SYS_gettid); /* before the barrier, after which it is read */
#ifdef LOCKLAB_SIM
	locklab_sim_on_cpu_word(&w->ctx.off_cpu, 1); /* a kernel: lock's task may take its place */
#endif
	worker_pin_to(w, run->cpu_of_slot[w->slot]);
	w->random = (run->config->seed + 1) * 0x9e3779b97f4a7c15ull ^ (w->slot + 1);
	worker_sampling_from(w, run->sample_every);
	torture_random_init(&w->torture_rng, run->config->seed, w->slot);
	w->cache_miss_fd = cache_miss_counter_open(w->cache_miss_reason, sizeof(w->cache_miss_reason));

	pthread_barrier_wait(&run->start_barrier);
	uint32_t control = __atomic_load_n(&run->control, __ATOMIC_ACQUIRE);
	uint32_t control_seen = control;
	if (worker_handle_control(w, control, &control_seen)) {
		if (w->is_reader)
			reader_loop(w, control_seen);
		else if (run->config->churn)
			writer_churn_loop(w, control_seen);
		else if (getenv("LOCKLAB_INDIRECT_LOOP") != NULL)
			writer_loop_indirect(w, control_seen);
		else
			writer_loop_of(run->config->lock)(w, control_seen);
	}
	if (w->torture_boosted)
		worker_set_fifo(w, false); /* torture_rtmutex_boost(NULL): reset prio */
	if (w->cache_miss_fd >= 0)
		close(w->cache_miss_fd);
	return NULL;
}
