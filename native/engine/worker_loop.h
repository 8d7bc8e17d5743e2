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
 * Each instance is compiled twice: a lean loop for runs with no readers, hold, gap,
 * --cs-lines, --ops, --long-hold or --torture-delays (the compiler drops those branches), and a
 * full one.
 *
 * The critical section is the bare loop's (bench/inline_loop.c): one plain increment of a
 * shared counter, cs.writes, which must equal the writers' acquisitions at the end. Around it,
 * per acquisition, the lean loop adds no store but the owner word's, and then only loads and
 * register work (P1 measures what that costs):
 *   - the owner word: stored with the writer's id on entry, read back on exit. Any two writers
 *     whose [store, read-back] intervals overlap are caught: the later store lands inside the
 *     earlier writer's interval, and only that writer stores its own id. No one reads the word
 *     between writers, so it is not cleared. The full loop clears it on exit, and checks it
 *     is clear on entry, because readers check it;
 *   - (full loop only: the reader count read, it must be 0; the lean one runs without readers);
 *   - the control word read, compared with the one last acted on;
 *   - the hand-over test: one compare of the last holder and its node; stores only when it
 *     changed;
 *   - the acquisition count and the sampling countdown, in registers; the count is published
 *     every WORKER_PUBLISH_EVERY acquisitions (worker_hot.h), a constant mask.
 * One acquisition in --latency-every takes the other copy of lock(), which reads the cycle
 * counter and the shared counter around it; the unsampled ones pay only the countdown.
 */
#ifndef WORKER_LOOP_NAME
#error "define WORKER_LOOP_NAME, WORKER_LOCK and WORKER_UNLOCK before including worker_loop.h"
#endif

#define WORKER_LOOP_CAT_(a, b) a##b
#define WORKER_LOOP_CAT(a, b) WORKER_LOOP_CAT_(a, b)
#define WORKER_LOOP_BODY WORKER_LOOP_CAT(WORKER_LOOP_NAME, _body)
#define WORKER_LOOP_LEAN WORKER_LOOP_CAT(WORKER_LOOP_NAME, _lean)
#define WORKER_LOOP_FULL WORKER_LOOP_CAT(WORKER_LOOP_NAME, _full)

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
	struct critical_section *cs;
	struct lock_thread *self = &w->ctx;
	const uint32_t me = self->index + 1;
	const uint64_t hold = lean ? 0 : run->calibration->hold_iterations;
	const uint64_t gap = lean ? 0 : run->calibration->gap_iterations;
	const unsigned int cs_lines = lean ? 0 : config->cs_lines;
	const uint64_t target = lean ? 0 : config->ops;
	const struct torture_profile *torture = lean ? NULL : config->torture;
	const bool long_hold = lean ? false : config->long_hold_ms != 0;
	/*
	 * Publish when total & publish_mask == 0: one in 64 in the lean loop, a constant there;
	 * every acquisition in the full one, whose acquisitions may be slow (hold, gap).
	 */
	const uint64_t publish_mask = lean ? WORKER_PUBLISH_EVERY - 1 : 0;
	uint64_t total = w->acquisitions_total;
	uint32_t sample_countdown = w->sample_countdown;
	uint64_t holder = worker_holder_key(me, self->numa_node);
	/*
	 * The window's count changes only with the control word: it is kept as the count at the
	 * last change plus, while measuring, the acquisitions since. So the loop counts one number.
	 */
	struct worker_window_count counted = { w->acquisitions_window, total,
					       control_measuring(control_seen) };

	for (;;) {
		/*
		 * Hide run's value from the optimiser for one iteration: otherwise it hoists each
		 * field's address out of the loop, runs out of registers and reloads them from the
		 * stack at every acquisition. Costs no instruction.
		 */
		__asm__("" : "+r"(run));
		cs = &run->cs;
		if (unlikely(torture))
			worker_torture_before_lock(w, config->nwriters,
						   control_measuring(control_seen));
		bool timed = --sample_countdown == 0;
		if (likely(!timed)) {
			WORKER_LOCK(lock, self);
		} else {
			/* Who overtakes us: the count first, then the clock, last, before lock(). */
			uint64_t writes_before = worker_peek_writes(cs);
			uint64_t started = arch_cycles();
			WORKER_LOCK(lock, self);
			w->sample_wait = arch_cycles() - started;
			w->sample_overtaken = cs->writes - writes_before; /* ours is not in yet */
		}

		const uint32_t control_at_lock = READ_ONCE(run->control);
		uint32_t control = control_at_lock; /* --ops may set STOP below */
		/* `measuring` is needed only on the rare paths: computed there. */
#define measuring control_measuring(control_at_lock)

		/* ---- critical section ---- */
		bool owner_taken = !lean && READ_ONCE(cs->writer_inside) != 0;
		WRITE_ONCE(cs->writer_inside, me);
		/* The lean loop runs only when there are no readers: none to check for. */
		bool readers_in = !lean && READ_ONCE(cs->readers_inside) != 0;
		cs->writes++;
		/*
		 * A reacquisition when the holder (and its node: --shuffle-interval) is unchanged;
		 * no store then. The rest of the window's acquisitions are reacquisitions.
		 */
		if (unlikely(worker_holder_key(cs->last_writer, cs->last_writer_node) != holder))
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
		/* Not 0 when another writer stored its id since ours: one branch for all checks. */
		uint32_t exit_mismatch = READ_ONCE(cs->writer_inside) ^ me;
		if (!lean)
			WRITE_ONCE(cs->writer_inside, 0);
		/* Noted before unlock(): no flag has to live across a call to an out-of-line lock. */
		if (unlikely(exit_mismatch | owner_taken | readers_in))
			worker_note_violations(w, owner_taken + (exit_mismatch != 0), readers_in);
		/* ---- end of critical section ---- */

		WORKER_UNLOCK(lock, self);

		total++;
		if (unlikely(timed)) {
			sample_countdown = worker_sample_period(w);
			if (measuring)
				worker_record_sample(w);
		}
		if (unlikely((total & publish_mask) == 0 || control != control_seen)) {
			if (control != control_seen)
				worker_window_change(&counted, total, measuring);
			worker_publish(w, total, worker_window_now(&counted, total));
			if (control != control_seen) {
				w->sample_countdown = sample_countdown;
				/* Returned, not written through a pointer: it stays in a register. */
				int64_t seen = worker_control_changed(w, control, control_seen);
				if (seen < 0)
					break;
				control_seen = (uint32_t)seen;
				sample_countdown = w->sample_countdown; /* auto: the window's period */
				/* --shuffle-interval may have moved us */
				holder = worker_holder_key(me, self->numa_node);
			}
		}
#undef measuring
		if (gap)
			busy_loop(gap);
	}
	w->reacquisitions += worker_window_now(&counted, total) - w->handoff_checks;
	w->sample_countdown = sample_countdown;
}

/*
 * Each copy a function of its own, so neither's register allocation pays for the other's.
 * flatten: lock() and unlock() inline however often the body uses them (the compiler keeps a
 * lock called from two places, ticket_lock(), out of line otherwise), as in the bare loop.
 */
static __attribute__((noinline, hot, flatten)) void WORKER_LOOP_LEAN(struct worker *w, uint32_t control_seen)
{
	WORKER_LOOP_BODY(w, control_seen, true);
}

static __attribute__((noinline)) void WORKER_LOOP_FULL(struct worker *w, uint32_t control_seen)
{
	WORKER_LOOP_BODY(w, control_seen, false);
}

void WORKER_LOOP_NAME(struct worker *w, uint32_t control_seen);
void WORKER_LOOP_NAME(struct worker *w, uint32_t control_seen)
{
	const struct bench_config *config = w->run->config;
	const struct calibration *cal = w->run->calibration;
	bool lean = config->nreaders == 0 && cal->hold_iterations == 0 &&
		    cal->gap_iterations == 0 && config->cs_lines == 0 && config->ops == 0 &&
		    config->torture == NULL && config->long_hold_ms == 0;
	if (lean)
		WORKER_LOOP_LEAN(w, control_seen);
	else
		WORKER_LOOP_FULL(w, control_seen);
}

#undef WORKER_LOOP_BODY
#undef WORKER_LOOP_LEAN
#undef WORKER_LOOP_FULL
