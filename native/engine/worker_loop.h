/* SPDX-License-Identifier: MIT */
/*
 * worker_loop.h - the measured writer loop, as a template. Include it after defining
 *   WORKER_LOOP_NAME          the function's name: void NAME(struct worker *, uint32_t)
 *   WORKER_LOCK(lock, self)   the acquire, e.g. tas_lock(lock, self) or ops->lock(lock, self)
 *   WORKER_UNLOCK(lock, self) the release
 *   WORKER_LOOP_SETUP         (optional) a declaration the two above use
 * worker.c instantiates it once with the indirect calls of struct lock_ops (plugins and the
 * locks without a loop of their own); native/engine/loops/<family>.c include the lock's own
 * source and instantiate it with direct calls, so the lock inlines into the loop as it does in
 * a bare benchmark loop (lockhammer builds one binary per lock for the same reason).
 *
 * Each instance is compiled twice: a lean loop for runs with no hold, gap, --cs-lines, --ops,
 * --long-hold or --torture-delays (the compiler drops those branches), and a full one.
 *
 * Per acquisition the lean loop costs: one read of the shared control word; the correctness
 * checks (the owner word read, set, checked and cleared; the reader count read; the plain
 * counter incremented, and the sequence a sampled waiter reads stored); the hand-over test (two
 * reads; stores only when the holder changed); and register work: the acquisition count and the
 * sampling countdown are locals, published every WORKER_PUBLISH_EVERY acquisitions. One
 * acquisition in --latency-every takes the other copy of lock(), which reads the cycle counter
 * around it; the unsampled ones pay only the countdown.
 */
#ifndef WORKER_LOOP_NAME
#error "define WORKER_LOOP_NAME, WORKER_LOCK and WORKER_UNLOCK before including worker_loop.h"
#endif

#define WORKER_LOOP_CAT_(a, b) a##b
#define WORKER_LOOP_CAT(a, b) WORKER_LOOP_CAT_(a, b)
#define WORKER_LOOP_BODY WORKER_LOOP_CAT(WORKER_LOOP_NAME, _body)

static inline __attribute__((always_inline)) void WORKER_LOOP_BODY(struct worker *w,
								   uint32_t control_seen,
								   const bool lean)
{
	struct run_state *run = w->run;
	const struct bench_config *config = run->config;
#ifdef WORKER_LOOP_SETUP
	WORKER_LOOP_SETUP;
#endif
	void *lock = run->lock;
	struct critical_section *cs = &run->cs;
	struct lock_thread *self = &w->ctx;
	const uint32_t me = self->index + 1;
	const uint64_t hold = lean ? 0 : run->calibration->hold_iterations;
	const uint64_t gap = lean ? 0 : run->calibration->gap_iterations;
	const unsigned int cs_lines = lean ? 0 : config->cs_lines;
	const uint64_t target = lean ? 0 : config->ops;
	const struct torture_profile *torture = lean ? NULL : config->torture;
	const bool long_hold = lean ? false : config->long_hold_ms != 0;
	/* Publish when total & publish_mask == 0: every acquisition, or one in 64. */
	const uint64_t publish_mask =
		(!lean || (config->lock->flags & LOCK_SLEEPS)) ? 0 : WORKER_PUBLISH_EVERY - 1;
	uint64_t total = w->acquisitions_total;
	uint32_t sample_countdown = w->sample_countdown;
	int32_t node = self->numa_node;
	/*
	 * The window's count changes only with the control word: it is kept as the count at the
	 * last change plus, while measuring, the acquisitions since. So the loop counts one number.
	 */
	struct worker_window_count counted = { w->acquisitions_window, total,
					       control_measuring(control_seen) };

	for (;;) {
		if (unlikely(torture))
			worker_torture_before_lock(w, config->nwriters,
						   control_measuring(control_seen));
		bool timed = --sample_countdown == 0;
		if (likely(!timed)) {
			WORKER_LOCK(lock, self);
		} else {
			/* Who overtakes us: the sequence first, then the clock, last, before lock(). */
			uint64_t sequence_before = READ_ONCE(cs->write_sequence);
			uint64_t started = arch_cycles();
			WORKER_LOCK(lock, self);
			w->sample_wait = arch_cycles() - started;
			w->sample_overtaken = READ_ONCE(cs->write_sequence) - sequence_before;
		}

		const uint32_t control_at_lock = READ_ONCE(run->control);
		uint32_t control = control_at_lock; /* --ops may set STOP below */
		/* `measuring` is needed only on the rare paths: computed there. */
#define measuring control_measuring(control_at_lock)

		/* ---- critical section ---- */
		bool owner_taken = READ_ONCE(cs->writer_inside) != 0;
		WRITE_ONCE(cs->writer_inside, me);
		bool readers_in = READ_ONCE(cs->readers_inside) != 0;
		uint64_t writes = cs->writes + 1;
		cs->writes = writes;
		WRITE_ONCE(cs->write_sequence, writes);
		/*
		 * A reacquisition when the holder (and its node: --shuffle-interval) is unchanged;
		 * no store then. The rest of the window's acquisitions are reacquisitions.
		 */
		if (unlikely(cs->last_writer != me || cs->last_writer_node != node))
			worker_note_handoff(w, cs, me, measuring);
		if (unlikely(target) && measuring && ++cs->window_writes == target)
			control = worker_stop_at_target(run);
		for (unsigned int i = 0; i < cs_lines; i++)
			cs->lines[i].value++;
		if (hold)
			busy_loop(hold);
		if (unlikely(long_hold))
			worker_maybe_long_hold(w);
		if (unlikely(torture))
			worker_torture_hold(w, torture->writer, config->nwriters, measuring);
		bool bad_exit = READ_ONCE(cs->writer_inside) != me;
		WRITE_ONCE(cs->writer_inside, 0);
		/* ---- end of critical section ---- */

		WORKER_UNLOCK(lock, self);

		if (unlikely(owner_taken | readers_in | bad_exit))
			worker_note_violations(w, owner_taken + bad_exit, readers_in);
		total++;
		if (unlikely(timed)) {
			sample_countdown = config->latency_every;
			if (measuring)
				worker_record_sample(w);
		}
		if (unlikely((total & publish_mask) == 0 || control != control_seen)) {
			if (control != control_seen)
				worker_window_change(&counted, total, measuring);
			worker_publish(w, total, worker_window_now(&counted, total));
			if (control != control_seen) {
				/* Returned, not written through a pointer: it stays in a register. */
				int64_t seen = worker_control_changed(w, control, control_seen);
				if (seen < 0)
					break;
				control_seen = (uint32_t)seen;
				node = self->numa_node; /* --shuffle-interval may have moved us */
			}
		}
#undef measuring
		if (gap)
			busy_loop(gap);
	}
	w->reacquisitions += worker_window_now(&counted, total) - w->handoff_checks;
	w->sample_countdown = sample_countdown;
}

void WORKER_LOOP_NAME(struct worker *w, uint32_t control_seen);
void WORKER_LOOP_NAME(struct worker *w, uint32_t control_seen)
{
	const struct bench_config *config = w->run->config;
	const struct calibration *cal = w->run->calibration;
	bool lean = cal->hold_iterations == 0 && cal->gap_iterations == 0 &&
		    config->cs_lines == 0 && config->ops == 0 && config->torture == NULL &&
		    config->long_hold_ms == 0;
	if (lean)
		WORKER_LOOP_BODY(w, control_seen, true);
	else
		WORKER_LOOP_BODY(w, control_seen, false);
}

#undef WORKER_LOOP_BODY
