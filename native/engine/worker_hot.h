/* SPDX-License-Identifier: MIT */
/*
 * worker_hot.h - what the measured writer loop (worker_loop.h) needs: the cold helpers that
 * live in worker.c, and the few per-acquisition steps it inlines.
 */
#ifndef LOCKLAB_WORKER_HOT_H
#define LOCKLAB_WORKER_HOT_H

#include <locklab/arch.h>
#include <locklab/kernel.h>

#include "engine.h"

/*
 * Acquisition counts live in the loop's locals and are published to the worker's own cache
 * line once every WORKER_PUBLISH_EVERY acquisitions, whenever the control word changes, and
 * when the thread leaves; the final counts are exact (the window's are settled at each control
 * change). The full loop (hold, gap: slow acquisitions) publishes at every one, so the
 * watchdog and the per-interval series never wait for a batch; a sleeping lock's lean loop
 * batches too: a thread asleep in lock() holds back at most 63 acquisitions from the series.
 */
#define WORKER_PUBLISH_EVERY 64u

/* worker.c: the rare paths, kept out of line. */
bool worker_handle_control(struct worker *w, uint32_t control, uint32_t *control_seen);
/* worker_handle_control() for the loop: the new control_seen, or -1 when the thread leaves. */
int64_t worker_control_changed(struct worker *w, uint32_t control, uint32_t control_seen);
void worker_torture_before_lock(struct worker *w, unsigned int nwriters, bool measuring);
void worker_torture_hold(struct worker *w, const struct torture_delay_spec *spec,
			 unsigned int nthreads, bool measuring);
void worker_maybe_long_hold(struct worker *w);
uint32_t worker_stop_at_target(struct run_state *run);
/* The holder changed (or moved): count a hand-over, pay --numa-remote-ns, note the holder. */
void worker_note_handoff(struct worker *w, struct critical_section *cs, uint32_t me,
			 bool measuring);
void worker_note_violations(struct worker *w, unsigned int owner, unsigned int readers);
/* A sampled acquisition in the window: its wait and overtakes (w->sample_wait, _overtaken). */
void worker_record_sample(struct worker *w);

/* The last holder and its node as one number: the hand-over test is one compare. */
static inline uint64_t worker_holder_key(uint32_t writer, int32_t node)
{
	return (uint64_t)writer | (uint64_t)(uint32_t)node << 32;
}

/* Acquisitions from one timed acquisition to the next; none timed while sample_every is 0. */
static inline uint32_t worker_sample_period(const struct worker *w)
{
	return w->sample_every != 0 ? w->sample_every : UINT32_MAX;
}

/* Time one acquisition in `every` (0: none) from here on. */
static inline void worker_sampling_from(struct worker *w, uint32_t every)
{
	w->sample_every = every;
	w->sample_countdown = worker_sample_period(w);
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
