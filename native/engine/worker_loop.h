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
 * Each instance is compiled three times: a lean loop for runs with no readers, hold, gap,
 * --cs-lines, --ops, --long-hold, --torture-delays or --numa-remote-ns (the compiler drops
 * those branches), the same without the per-acquisition checks below (--no-checks: the bare
 * loop's section alone, the counter checked at the end), and a full one.
 *
 * The critical section is the bare loop's (bench/inline_loop.c): one plain increment of a
 * shared counter, cs.writes, which must equal the writers' acquisitions at the end. Around it,
 * per acquisition, all in the counter's cache line (P1 measures what it costs):
 *   - the owner word: the writer's key (worker_holder_key) stored on entry, read back on exit.
 *     Two writers whose [store, read-back] intervals overlap are caught: the later store
 *     lands inside the earlier writer's interval, and only that writer stores its own key.
 *     (A read-back served from the writer's own store buffer sees its key whatever others
 *     did: the per-event check can miss a short overlap. The counter cannot: it loses the
 *     update.) The lean loop never clears the word, no one else reads it; the full loop
 *     clears it on exit and checks it is clear on entry, because readers check it, as well
 *     as that the reader count is 0;
 *   - the hand-over test: cs.last_holder read, and overwritten with the writer's key at a
 *     hand-over. In the lean loop it and the owner word's test are one branch, after
 *     unlock(), so a hand-over's bookkeeping stays out of the critical section;
 *   - the control word read, compared with the one last acted on;
 *   - one countdown, in a register: the acquisitions left before the next published count
 *     (every WORKER_PUBLISH_EVERY, worker_hot.h) or the next sampled wait (--latency-every),
 *     whichever comes first. The count itself is not kept per acquisition: it is the
 *     countdown's progress, worked out when the loop leaves its fast path.
 * The acquisition that ends a countdown leaves the fast path: if it is the sampled one, it
 * takes the copy of lock() that reads the cycle counter and the shared counter around it.
 */
#ifndef WORKER_LOOP_NAME
#error "define WORKER_LOOP_NAME, WORKER_LOCK and WORKER_UNLOCK before including worker_loop.h"
#endif

#define WORKER_LOOP_CAT_(a, b) a##b
#define WORKER_LOOP_CAT(a, b) WORKER_LOOP_CAT_(a, b)
#define WORKER_LOOP_STEP WORKER_LOOP_CAT(WORKER_LOOP_NAME, _step)
#define WORKER_LOOP_BODY WORKER_LOOP_CAT(WORKER_LOOP_NAME, _body)
#define WORKER_LOOP_LEAN WORKER_LOOP_CAT(WORKER_LOOP_NAME, _lean)
#define WORKER_LOOP_FULL WORKER_LOOP_CAT(WORKER_LOOP_NAME, _full)
#define WORKER_LOOP_UNCHECKED WORKER_LOOP_CAT(WORKER_LOOP_NAME, _unchecked)

/*
 * One acquisition: lock, the critical section and its checks, unlock. Returns the control
 * word read under the lock (whether it counts is decided by that one), and in *control the
 * word to act on: the same, or with STOP set when it reached --ops.
 */
static inline __attribute__((always_inline)) uint32_t
WORKER_LOOP_STEP(struct worker *w, struct run_state *run, void *lock, const bool lean,
		 const bool checked, const bool read_control, const bool timed, const uint32_t key,
		 uint32_t *control)
{
	const struct bench_config *config = run->config;
#ifdef WORKER_LOOP_SETUP
	WORKER_LOOP_SETUP;
#endif
	struct critical_section *cs = &run->cs;
	struct lock_thread *self = &w->ctx;
	const struct torture_profile *torture = lean ? NULL : config->torture;

	if (WORKER_UNLIKELY(torture))
		worker_torture_before_lock(w, config->nwriters, control_measuring(*control));
	if (!timed) {
		WORKER_LOCK(lock, self);
	} else {
		/* Who overtakes us: the count first, then the clock, last, before lock(). */
		uint64_t writes_before = worker_peek_writes(cs);
		uint64_t started = arch_cycles();
		WORKER_LOCK(lock, self);
		w->sample_wait = arch_cycles() - started;
		w->sample_overtaken = cs->writes - writes_before; /* ours is not in yet */
	}

	/*
	 * Unchecked, the word is read once per countdown (its last acquisition), as a bare loop
	 * reads its stop flag once per batch: an acquisition in the batch that ends a window is
	 * counted by the word read at its end, 63 acquisitions at most.
	 */
	const uint32_t control_at_lock = read_control ? WORKER_READ_ONCE(run->control) : *control;
	*control = control_at_lock;
	const bool measuring = control_measuring(control_at_lock);

	/* ---- critical section ---- */
	bool owner_taken = false, readers_in = false;
	if (!checked) {
		/* --no-checks: the bare loop's section, the counter alone (checked at the end). */
	} else if (lean) {
		/*
		 * A store first: the line comes from the last holder once, to be written. A load
		 * first would fetch it shared, and the store fetch it again: two transfers per
		 * hand-over where the bare loop has one (P1 at 2 threads, qspinlock: 0.85 with the
		 * load first, 0.91 with the store).
		 */
		WORKER_WRITE_ONCE(cs->writer_inside, key);
	} else {
		/* Readers check the word, so it is cleared on exit and must be clear on entry. */
		owner_taken = WORKER_READ_ONCE(cs->writer_inside) != 0;
		WORKER_WRITE_ONCE(cs->writer_inside, key);
		readers_in = WORKER_READ_ONCE(cs->readers_inside) != 0;
	}
	/* The owner word's store, the section, its read-back: in this order. Unchecked, there is
	 * nothing to order, and the barrier would make the compiler reload what the lock keeps in
	 * registers (clh's node: 0.92 of the bare loop with it). */
	if (checked)
		WORKER_COMPILER_BARRIER();
	cs->writes++;
	if (!checked) {
		WORKER_UNLOCK(lock, self);
		return control_at_lock;
	}
	const uint32_t previous = cs->last_holder; /* a hand-over when not our key */
	/*
	 * Stored at a hand-over only: uncontended, the section's stores stay the bare loop's
	 * one and the owner word's (a third store each time cost clh 4% at 1 thread). Out of
	 * line: laid out as the likely path, it cost pthread_mutex 4% and clh 20% at 2 threads.
	 */
	if (WORKER_UNLIKELY(previous != key))
		cs->last_holder = key;
	if (!lean) {
		/* In the section: --numa-remote-ns is paid here. */
		if (WORKER_UNLIKELY(previous != key))
			worker_note_handoff(w, previous, key, measuring);
		const uint64_t target = config->ops;
		if (WORKER_UNLIKELY(target) && measuring && ++cs->window_writes == target)
			*control = worker_stop_at_target(run);
		for (unsigned int i = 0; i < config->cs_lines; i++)
			cs->lines[i].value++;
		uint64_t hold = run->calibration->hold_iterations;
		if (hold)
			busy_loop(hold);
		if (WORKER_UNLIKELY(config->long_hold_ms != 0))
			worker_maybe_long_hold(w);
		if (WORKER_UNLIKELY(torture))
			worker_torture_hold(w, torture->writer, config->nwriters, measuring);
	}
	WORKER_COMPILER_BARRIER();
	/* Not 0 when another writer stored its key since ours. */
	const uint32_t owner_mismatch = WORKER_READ_ONCE(cs->writer_inside) ^ key;
	/*
	 * Lean: the hand-over and the overwrite, for after unlock(), so their bookkeeping does not
	 * lengthen the critical section: (the last holder xor us) << 32 | (the owner word xor us),
	 * one register, not 0 for a hand-over or an overlap.
	 */
	uint64_t owner_seen = 0;
	if (lean) {
		owner_seen = (uint64_t)(previous ^ key) << 32 | owner_mismatch;
	} else {
		WORKER_WRITE_ONCE(cs->writer_inside, 0);
		/* Noted before unlock(): no flag has to live across a call to an out-of-line lock. */
		if (WORKER_UNLIKELY(owner_mismatch | owner_taken | readers_in))
			worker_note_violations(w, owner_taken + (owner_mismatch != 0), readers_in);
	}
	/* ---- end of critical section ---- */

	WORKER_UNLOCK(lock, self);
	if (WORKER_UNLIKELY(owner_seen))
		worker_note_owner_inline(w, owner_seen, key, control_at_lock);
	return control_at_lock;
}

static inline __attribute__((always_inline)) void WORKER_LOOP_BODY(struct worker *w,
								   uint32_t control_seen,
								   const bool lean, const bool checked)
{
	struct run_state *run = w->run;
	void *lock = run->lock;
	const uint64_t gap = lean ? 0 : run->calibration->gap_iterations;
	/* The full loop's acquisitions may be slow (hold, gap): it publishes every one, so the
	 * watchdog and the per-interval series never wait for a batch. */
	const uint32_t publish_every = lean ? WORKER_PUBLISH_EVERY : 1;
	uint64_t total = w->acquisitions_total; /* published: the count at the countdown's start */
	uint32_t sample_left = w->sample_countdown; /* until the sampled one, counting it */
	uint32_t countdown_length = worker_countdown_length(sample_left, publish_every);
	uint32_t countdown = countdown_length;
	uint32_t key = worker_holder_key(w->ctx.index + 1, w->ctx.numa_node);
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
		uint32_t control = control_seen;
		uint32_t control_at_lock;
		bool timed = false;
		if (WORKER_LIKELY(--countdown != 0)) {
			control_at_lock = WORKER_LOOP_STEP(w, run, lock, lean, checked, checked, false,
							   key, &control);
			if (WORKER_LIKELY(control == control_seen))
				continue;
		} else {
			/* The countdown's last acquisition: the sampled one when the sample ends it. */
			timed = sample_left == countdown_length;
			if (timed)
				control_at_lock = WORKER_LOOP_STEP(w, run, lock, lean, checked, true, true,
								   key, &control);
			else
				control_at_lock = WORKER_LOOP_STEP(w, run, lock, lean, checked, true, false,
								   key, &control);
		}

		/* Off the fast path: count, publish, record the sample, act on the control word. */
		const bool measuring = control_measuring(control_at_lock);
		const uint32_t made = countdown_length - countdown;
		total += made;
		sample_left -= made;
		if (timed) {
			sample_left = worker_sample_period(w);
			if (measuring)
				worker_record_sample(w);
		}
		if (control != control_seen)
			worker_window_change(&counted, total, measuring);
		worker_publish(w, total, worker_window_now(&counted, total));
		if (control != control_seen) {
			w->sample_countdown = sample_left;
			/* Returned, not written through a pointer: it stays in a register. */
			int64_t seen = worker_control_changed(w, control, control_seen);
			if (seen < 0)
				break;
			control_seen = (uint32_t)seen;
			sample_left = w->sample_countdown; /* the window's period starts (auto) */
			/* --shuffle-interval may have moved us */
			key = worker_holder_key(w->ctx.index + 1, w->ctx.numa_node);
		}
		countdown_length = worker_countdown_length(sample_left, publish_every);
		countdown = countdown_length;
		if (gap)
			busy_loop(gap);
	}
	if (checked) /* unchecked, nothing told hand-overs from reacquisitions */
		w->reacquisitions += worker_window_now(&counted, total) - w->handoff_checks;
	w->sample_countdown = sample_left;
}

/*
 * Each copy a function of its own, so neither's register allocation pays for the other's.
 * flatten: lock() and unlock() inline however often the body uses them (the compiler keeps a
 * lock called from two places, ticket_lock(), out of line otherwise), as in the bare loop.
 */
static __attribute__((noinline, hot, flatten)) void WORKER_LOOP_LEAN(struct worker *w, uint32_t control_seen)
{
	WORKER_LOOP_BODY(w, control_seen, true, true);
}

/* --no-checks: the lean loop without the owner word and the hand-over test. */
static __attribute__((noinline, hot, flatten)) void WORKER_LOOP_UNCHECKED(struct worker *w,
									   uint32_t control_seen)
{
	WORKER_LOOP_BODY(w, control_seen, true, false);
}

static __attribute__((noinline)) void WORKER_LOOP_FULL(struct worker *w, uint32_t control_seen)
{
	WORKER_LOOP_BODY(w, control_seen, false, true);
}

void WORKER_LOOP_NAME(struct worker *w, uint32_t control_seen);
void WORKER_LOOP_NAME(struct worker *w, uint32_t control_seen)
{
	const struct bench_config *config = w->run->config;
	const struct calibration *cal = w->run->calibration;
	bool lean = config->nreaders == 0 && cal->hold_iterations == 0 &&
		    cal->gap_iterations == 0 && config->cs_lines == 0 && config->ops == 0 &&
		    config->torture == NULL && config->long_hold_ms == 0 &&
		    config->numa_remote_ns == 0; /* paid in the critical section */
	if (config->no_checks) /* options.c allows it with the lean loop only */
		WORKER_LOOP_UNCHECKED(w, control_seen);
	else if (lean)
		WORKER_LOOP_LEAN(w, control_seen);
	else
		WORKER_LOOP_FULL(w, control_seen);
}

#undef WORKER_LOOP_STEP
#undef WORKER_LOOP_BODY
#undef WORKER_LOOP_LEAN
#undef WORKER_LOOP_FULL
#undef WORKER_LOOP_UNCHECKED
