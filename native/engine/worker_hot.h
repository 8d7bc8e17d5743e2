/* SPDX-License-Identifier: MIT */
/*
 * worker_hot.h - what the measured writer loop (worker_loop.h) needs: the cold helpers that
 * live in worker_cold.c, and the few per-acquisition steps it inlines.
 */
#ifndef LOCKLAB_WORKER_HOT_H
#define LOCKLAB_WORKER_HOT_H

#include <locklab/arch.h>

#include "engine.h"

/*
 * The loop's own spellings of the kernel's accessors (locklab/kernel.h): a plugin given as
 * C source is compiled in front of this file (source_plugin/loop.c), and a file written in
 * C11 <stdatomic.h>, or with its own likely() or READ_ONCE(), must not meet kernel.h's.
 */
#define WORKER_READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WORKER_WRITE_ONCE(x, val) __atomic_store_n(&(x), (val), __ATOMIC_RELAXED)
#define WORKER_COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")
#define WORKER_LIKELY(x) __builtin_expect(!!(x), 1)
#define WORKER_UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * Acquisition counts are published to the worker's own cache line once every
 * WORKER_PUBLISH_EVERY acquisitions, whenever the control word changes, and when the thread
 * leaves; the final counts are exact (the window's are settled at each control change). The
 * full loop (hold, gap: slow acquisitions) publishes at every one, so the watchdog and the
 * per-interval series never wait for a batch; a sleeping lock's lean loop batches too: a
 * thread asleep in lock() holds back at most 63 acquisitions from the series.
 */
#define WORKER_PUBLISH_EVERY 64u

/* worker_cold.c: the rare paths, kept out of line. */
/* Pin the thread to `cpu` (-1: leave it), noting its CPU and node. */
void worker_pin_to(struct worker *w, int cpu);
/* locktorture's rt_boost: SCHED_FIFO on, or back to SCHED_OTHER. */
void worker_set_fifo(struct worker *w, bool fifo);
bool worker_handle_control(struct worker *w, uint32_t control, uint32_t *control_seen);
/* --churn's writer loop (worker_churn.c). */
void writer_churn_loop(struct worker *w, uint32_t control_seen);
/* worker_handle_control() for the loop: the new control_seen, or -1 when the thread leaves. */
int64_t worker_control_changed(struct worker *w, uint32_t control, uint32_t control_seen);
void worker_torture_before_lock(struct worker *w, unsigned int nwriters, bool measuring);
void worker_torture_hold(struct worker *w, const struct torture_delay_spec *spec,
			 unsigned int nthreads, bool measuring);
void worker_maybe_long_hold(struct worker *w);
uint32_t worker_stop_at_target(struct run_state *run);
/* The holder changed (or moved): count a hand-over, pay --numa-remote-ns. Keys as below. */
void worker_note_handoff(struct worker *w, uint32_t previous, uint32_t key, bool measuring);
/*
 * After the lean loop's unlock(): the last holder was another key (a hand-over), or the owner
 * word was overwritten. `seen`: (last holder xor our key) << 32 | (owner word xor our key).
 */
void worker_note_owner(struct worker *w, uint64_t seen, uint32_t key, uint32_t control_at_lock);
void worker_note_violations(struct worker *w, unsigned int owner, unsigned int readers);
/* A sampled acquisition in the window: its wait and overtakes (w->sample_wait, _overtaken). */
void worker_record_sample(struct worker *w);

/*
 * A writer and its NUMA node as one word, the owner word's value: the writer's index + 1 in
 * the low bits (never 0: 0 is "no writer"), the node + 1 above (-1, unknown, is 0). So the
 * hand-over test is one compare, and a writer moved to another node is a new holder.
 */
#define WORKER_KEY_WRITER_BITS 13 /* MAX_THREADS (options.c) is 4096 */
static inline uint32_t worker_holder_key(uint32_t writer, int32_t node)
{
	return writer | (uint32_t)(node + 1) << WORKER_KEY_WRITER_BITS;
}

static inline uint32_t worker_key_writer(uint32_t key)
{
	return key & ((1u << WORKER_KEY_WRITER_BITS) - 1);
}

static inline uint32_t worker_key_node(uint32_t key)
{
	return key >> WORKER_KEY_WRITER_BITS;
}

/* A hand-over from another writer, counted when the acquisition is in the window. */
static inline void worker_count_handoff(struct worker *w, bool same_node, bool measuring)
{
	w->handoff_checks += measuring;
	w->handoffs += measuring;
	w->handoffs_same_node += measuring & same_node;
}

/*
 * worker_note_owner(), with the common case inline: a hand-over from another writer, no
 * overlap. An out-of-line call there would add its own cost to every hand-over.
 */
static inline void worker_note_owner_inline(struct worker *w, uint64_t seen, uint32_t key,
					    uint32_t control_at_lock)
{
	uint32_t found = (uint32_t)(seen >> 32) ^ key;
	if (WORKER_LIKELY((uint32_t)seen == 0 && found != 0 &&
		   worker_key_writer(found) != worker_key_writer(key))) {
		worker_count_handoff(w, worker_key_node(found) == worker_key_node(key),
				     control_measuring(control_at_lock));
		return;
	}
	worker_note_owner(w, seen, key, control_at_lock);
}

/* Acquisitions from one timed acquisition to the next; none timed while sample_every is 0. */
static inline uint32_t worker_sample_period(const struct worker *w)
{
	return w->sample_every != 0 ? w->sample_every : UINT32_MAX;
}

/* Time one acquisition in `every` (0: none) from here on. */
/* One more acquisition in its writer's counts: the run's, and the window's while measuring. */
static inline void worker_count_acquisition(struct worker *w, bool measuring)
{
	__atomic_store_n(&w->acquisitions_total, w->acquisitions_total + 1, __ATOMIC_RELAXED);
	if (measuring)
		__atomic_store_n(&w->acquisitions_window, w->acquisitions_window + 1,
				 __ATOMIC_RELAXED);
}

static inline void worker_sampling_from(struct worker *w, uint32_t every)
{
	w->sample_every = every;
	w->sample_countdown = worker_sample_period(w);
}

/* Acquisitions until the loop next leaves its fast path: to publish, or to time one. */
static inline uint32_t worker_countdown_length(uint32_t until_sample, uint32_t publish_every)
{
	return until_sample < publish_every ? until_sample : publish_every;
}

/*
 * A sampled writer's read of the shared counter before it waits: it races with the holder's
 * plain increment, on purpose (an overtake count, not a correctness check). Hidden from
 * ThreadSanitizer, which checks the lock's ordering through the holders' plain accesses.
 */
__attribute__((no_sanitize("thread"))) static inline uint64_t
worker_peek_writes(const struct critical_section *cs)
{
	return *(const volatile uint64_t *)&cs->writes;
}

/* The window's acquisitions: `base` at the acquisition count `at`, plus those since if open. */
struct worker_window_count {
	uint64_t base;
	uint64_t at;
	bool open;
};

static inline uint64_t worker_window_now(const struct worker_window_count *c, uint64_t total)
{
	return c->base + (c->open ? total - c->at : 0);
}

/* The control word changed at acquisition `total`, which counted as `measuring`. */
static inline void worker_window_change(struct worker_window_count *c, uint64_t total,
					bool measuring)
{
	c->base = worker_window_now(c, total - 1) + measuring;
	c->at = total;
	c->open = measuring;
}

/* Store the loop's local counts where the control loop and the report read them. */
static inline void worker_publish(struct worker *w, uint64_t total, uint64_t window)
{
	__atomic_store_n(&w->acquisitions_total, total, __ATOMIC_RELAXED);
	__atomic_store_n(&w->acquisitions_window, window, __ATOMIC_RELAXED);
}

#endif /* LOCKLAB_WORKER_HOT_H */
