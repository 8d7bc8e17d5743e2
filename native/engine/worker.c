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

static void set_fifo(struct worker *w, bool fifo)
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
		set_fifo(w, true);
		w->torture_boosts += measuring && w->torture_boosted;
		w->torture_boosts_denied += measuring && !w->torture_boosted;
	} else {
		set_fifo(w, false);
		w->torture_unboosts += measuring;
	}
}

/* The critical section's delay, drawn as write_delay()/read_delay() draw it. */
void worker_torture_hold(struct worker *w, const struct torture_delay_spec *spec,
			 unsigned int nthreads, bool measuring)
{
	struct torture_draw d = torture_draw_delay(spec, &w->torture_rng, nthreads);
	if (d.delay_ns)
		spin_delay_ns(w->run->calibration, d.delay_ns);
	if (unlikely(d.preempt))
		sched_yield();
	if (measuring) {
		w->torture_draws++;
		w->torture_long += d.long_delay;
		w->torture_short += d.short_delay;
		w->torture_preempt += d.preempt;
	}
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

static void count_acquisition(struct worker *w, bool measuring)
{
	__atomic_store_n(&w->acquisitions_total, w->acquisitions_total + 1, __ATOMIC_RELAXED);
	if (measuring)
		__atomic_store_n(&w->acquisitions_window, w->acquisitions_window + 1,
				 __ATOMIC_RELAXED);
}

void worker_record_sample(struct worker *w)
{
	histogram_record(w->latency, w->sample_wait);
	uint64_t overtaken = w->sample_overtaken;
	w->overtaken_samples++;
	w->overtaken_sum += overtaken;
	if (overtaken > w->overtaken_max)
		w->overtaken_max = overtaken;
}

void worker_note_violations(struct worker *w, unsigned int owner, unsigned int readers)
{
	w->violations_owner += owner;
	w->violations_readers += readers;
}

/*
 * The reader loop's bookkeeping after unlock: count, record the sampled wait, and act on a
 * changed control word. Returns false when the thread must leave.
 */
static inline bool acquisition_done(struct worker *w, bool measuring, bool timed,
				    uint64_t waited, uint32_t control, uint32_t *control_seen)
{
	count_acquisition(w, measuring);
	if (unlikely(timed)) {
		w->sample_countdown = worker_sample_period(w);
		if (measuring)
			histogram_record(w->latency, waited);
	}
	return likely(control == *control_seen) || worker_handle_control(w, control, control_seen);
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

	pin_to(w, run->cpu_of_slot[w->slot]);
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
		else if (getenv("LOCKLAB_INDIRECT_LOOP") != NULL)
			writer_loop_indirect(w, control_seen);
		else
			writer_loop_of(run->config->lock)(w, control_seen);
	}
	if (w->torture_boosted)
		set_fifo(w, false); /* torture_rtmutex_boost(NULL): reset prio */
	if (w->cache_miss_fd >= 0)
		close(w->cache_miss_fd);
	return NULL;
}
