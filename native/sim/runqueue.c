/* SPDX-License-Identifier: MIT */
/*
 * runqueue.c - more threads than virtual CPUs: each CPU runs one thread at a time, and the
 * others placed on it wait their turn, as the Linux scheduler's fair class (CFS) gives it.
 *
 * Written from the kernel's rules as Linux 6.1 states them (kernel/sched/fair.c, the same in
 * these respects since 2.6.23, and so for the seeds' 3.10 and 4.20), for tasks of equal
 * weight (nice 0), and left as they are before EEVDF replaced them in 6.6:
 *
 *   virtual runtime   a task's vruntime grows with the time it runs (weight 1024: one for
 *                     one); the CPU runs the waiting task with the least (pick_next_entity);
 *   the slice         of nr runnable tasks each gets period / nr, the period being
 *                     sched_latency (6 ms) or, past sched_nr_latency (8) tasks, nr x
 *                     min_granularity (0.75 ms) (__sched_period, sched_slice);
 *   the tick          the running task is preempted at a scheduler tick once it has run its
 *                     slice (check_preempt_tick); ticks come every 4 ms (HZ=250, Debian's
 *                     and the kernel shim's);
 *   scaling           the three times are multiplied by 1 + log2(min(CPUs, 8))
 *                     (sched_tunable_scaling's default, SCHED_TUNABLESCALING_LOG);
 *   a waking task     starts no earlier than min_vruntime - sched_latency / 2
 *                     (place_entity with GENTLE_FAIR_SLEEPERS), and preempts the running one
 *                     when their vruntimes differ by more than wakeup_granularity (1 ms)
 *                     (check_preempt_wakeup, wakeup_preempt_entity);
 *   a new task        starts one slice after min_vruntime (START_DEBIT);
 *   sched_yield()     the next waiting task runs (yield_task_fair skips the yielder once).
 *
 * Every switch costs the profile's context_switch. A preemption that a wake-up asks for takes
 * effect at the running thread's next access, pause or end of a busy loop, not at the instant
 * of the wake, since that thread's clock may already be past it: a thread's steps between two
 * of those points are not ordered against others (scheduler.c). A CPU with one thread works
 * exactly as before: it never waits, and nothing here changes its clock.
 */
#include <string.h>

#include "runqueue.h"

#define TICK_NS 4000000.0                /* HZ=250 */
#define SCHED_LATENCY_NS 6000000.0       /* sysctl_sched_latency, unscaled */
#define MIN_GRANULARITY_NS 750000.0      /* sysctl_sched_min_granularity, unscaled */
#define WAKEUP_GRANULARITY_NS 1000000.0  /* sysctl_sched_wakeup_granularity, unscaled */
#define SCHED_NR_LATENCY 8

struct run_queue sim_queues[SIM_MAX_CPUS + 1];
#define queues sim_queues
static uint64_t tick, latency, min_granularity, wakeup_granularity;
static uint64_t arrivals; /* FIFO among equal vruntimes */

void sim_rq_init(void)
{
	int cpus = sim_machine.cpus < 8 ? sim_machine.cpus : 8;
	int factor = 1;
	while (cpus > 1) { /* 1 + ilog2 */
		factor++;
		cpus >>= 1;
	}
	tick = sim_ns_to_cycles(TICK_NS);
	latency = sim_ns_to_cycles(SCHED_LATENCY_NS * factor);
	min_granularity = sim_ns_to_cycles(MIN_GRANULARITY_NS * factor);
	wakeup_granularity = sim_ns_to_cycles(WAKEUP_GRANULARITY_NS * factor);
}

static bool shares(const struct sim_thread *t) { return t->counted; }

bool sim_rq_is_current(const struct sim_thread *t)
{
	return !shares(t) || queues[t->cpu].current == t;
}

static uint64_t slice_of(int runnable)
{
	uint64_t period = runnable > SCHED_NR_LATENCY ? (uint64_t)runnable * min_granularity
						       : latency;
	return period / (uint64_t)runnable;
}

/* Its SCHED_FIFO priority, raised by a priority-inheritance boost; 0: the fair class. */
static int rt_level(const struct sim_thread *t)
{
	return t->rt_boost > t->rt_priority ? t->rt_boost : t->rt_priority;
}

/* The highest level among the threads waiting for `cpu`; -1 when none waits. */
static int top_waiting_level(int cpu)
{
	int top = -1;
	if (queues[cpu].waiting == 0)
		return top;
	for (int i = 0; i < sim_thread_count(); i++) {
		const struct sim_thread *t = sim_thread_at(i);
		if (t->state == SIM_CPU_WAIT && t->cpu == cpu && rt_level(t) > top)
			top = rt_level(t);
	}
	return top;
}

static bool placement_ticks; /* an unpinned thread may move: ticks balance (sim_balance_kick) */

/*
 * Its turn ends at `end` (need_resched() is true from then); while threads wait for its CPU
 * and some thread may move, it also stops at each tick before that, where an idle CPU may
 * take a waiting thread (sim_balance_kick).
 */
static void end_slice_at(struct sim_thread *t, uint64_t end)
{
	t->resched_at = end;
	uint64_t next_tick = (t->clock / tick + 1) * tick;
	if (placement_ticks && queues[t->cpu].waiting > 0 && next_tick < end)
		end = next_tick;
	t->slice_end = end;
	/* A spinner with preemption off is woken too: it may look at need_resched(). */
	uint64_t wake = end == SIM_FOREVER ? SIM_FOREVER : end > t->clock ? end : t->clock;
	if (t->state == SIM_SPIN_PARKED && t->wake_at != wake) { /* a spinner burns its slice */
		t->wake_at = wake;
		sim_thread_requeue(t);
	}
}

/* The first tick after the fair slice of the thread on its CPU. */
static uint64_t due_tick(const struct sim_thread *t)
{
	uint64_t due = t->on_cpu_since + slice_of(queues[t->cpu].waiting + 1);
	return (due / tick + 1) * tick;
}

/*
 * When the thread on the CPU gives it up, `at` being now: at once for a waiting thread of a
 * higher real-time level (a real-time one before any of the fair class); never while alone
 * or while it is real-time and none waits above it (SCHED_FIFO has no slice); else at the
 * first tick after its fair slice.
 */
static void set_slice_end(struct sim_thread *t, uint64_t at)
{
	int top = top_waiting_level(t->cpu);
	int mine = rt_level(t);
	if (top > mine)
		end_slice_at(t, at);
	else if (top < 0 || mine > 0)
		end_slice_at(t, SIM_FOREVER);
	else
		end_slice_at(t, due_tick(t));
}

/* Its vruntime now: it grows with the time on the CPU in the fair class only (a real-time or
 * boosted task's does not move, as the kernel's does not while it is in the RT class). */
static uint64_t vruntime_now(const struct sim_thread *t, uint64_t now)
{
	if (rt_level(t) > 0)
		return t->vruntime;
	return t->vruntime + (now > t->on_cpu_since ? now - t->on_cpu_since : 0);
}

/* The waiting thread to run next: the highest real-time level, the earliest arrival among
 * equals; in the fair class, the least vruntime. */
static struct sim_thread *leftmost(int cpu)
{
	struct sim_thread *best = NULL;
	for (int i = 0; i < sim_thread_count(); i++) {
		struct sim_thread *t = sim_thread_at(i);
		if (t->state != SIM_CPU_WAIT || t->cpu != cpu)
			continue;
		int level = rt_level(t), best_level = best ? rt_level(best) : -1;
		if (level != best_level) {
			if (level > best_level)
				best = t;
			continue;
		}
		if ((level == 0 && t->vruntime < best->vruntime) ||
		    ((level > 0 || t->vruntime == best->vruntime) &&
		     t->cpu_arrival < best->cpu_arrival))
			best = t;
	}
	return best;
}

static void update_min_vruntime(struct run_queue *q, uint64_t candidate)
{
	if (candidate > q->min_vruntime)
		q->min_vruntime = candidate;
}

/* `t` takes the CPU at `at`. */
static void dispatch(struct sim_thread *t, uint64_t at)
{
	struct run_queue *q = &queues[t->cpu];
	sim_pelt_sync(t->cpu, t, at);
	q->waiting--;
	q->current = t;
	update_min_vruntime(q, t->vruntime);
	t->state = SIM_RUNNABLE;
	if (at > t->clock)
		t->clock = at; /* sim_block() counts the wait as time off the CPU */
	t->on_cpu_since = t->clock;
	set_slice_end(t, t->clock);
	sim_thread_requeue(t);
}

/*
 * What a woken thread waits before it runs on its idle CPU, where the profile says: the wake-up
 * to running from the shallowest idle state, and the deeper exit latency of the deepest state
 * whose target residency the CPU has been idle for (the menu governor, told the idle time).
 */
uint64_t sim_rq_idle_exit(int cpu, uint64_t at)
{
	uint64_t since = queues[cpu].idle_stamp, idle_for = at > since ? at - since : 0;
	for (int i = sim_machine.idle_states - 1; i > 0; i--)
		if (idle_for >= sim_machine.idle_residency[i])
			return sim_machine.idle_exit[i] - sim_machine.idle_exit[0];
	return 0;
}

static uint64_t wake_from_idle(int cpu, uint64_t at)
{
	return sim_machine.wake_to_run + sim_rq_idle_exit(cpu, at);
}

void sim_rq_arrive(struct sim_thread *t, uint64_t at, bool fresh)
{
	if (at > t->clock)
		t->clock = at;
	if (t->state == SIM_CPU_WAIT) /* already waiting for its CPU */
		return;
	bool woken = t->state != SIM_RUNNABLE && t->state != SIM_SPIN_PARKED;
	if (t->state == SIM_SPIN_PARKED) /* moved while it spun: it polls again where it lands */
		sim_spin_unpark(t);
	if (!shares(t)) { /* the control thread, on a CPU of its own, idle while it slept */
		if (woken && sim_machine.wake_to_run)
			t->clock += sim_machine.wake_to_run;
		t->state = SIM_RUNNABLE;
		sim_thread_requeue(t);
		return;
	}
	struct run_queue *q = &queues[t->cpu];
	int runnable = q->waiting + (q->current != NULL && q->current != t) + 1;
	uint64_t floor = fresh ? q->min_vruntime + slice_of(runnable)
			       : (q->min_vruntime > latency / 2 ? q->min_vruntime - latency / 2 : 0);
	if (fresh || t->vruntime < floor)
		t->vruntime = floor;
	sim_pelt_sync(t->cpu, t, t->clock);
	if (q->current == NULL || q->current == t) {
		if (woken && sim_machine.wake_to_run && q->current == NULL)
			t->clock += wake_from_idle(t->cpu, t->clock);
		q->current = t;
		t->state = SIM_RUNNABLE;
		t->on_cpu_since = t->clock;
		t->slice_end = t->resched_at = SIM_FOREVER;
		sim_thread_requeue(t);
		return;
	}
	struct sim_thread *running = q->current;
	uint64_t running_vruntime = vruntime_now(running, t->clock);
	if (woken && t->on_cpu_word != NULL && !t->on_cpu_stored) {
		/* Woken, it waits off its CPU. Asleep it was off too (the kernel's on_cpu was 0),
		 * which the word did not say: set now, by no thread's store. */
		t->on_cpu_held = __atomic_load_n(t->on_cpu_word, __ATOMIC_RELAXED);
		__atomic_store_n(t->on_cpu_word, t->on_cpu_off, __ATOMIC_RELAXED);
		t->on_cpu_stored = true;
	}
	t->state = SIM_CPU_WAIT;
	t->cpu_arrival = ++arrivals;
	q->waiting++;
	sim_thread_requeue(t);
	set_slice_end(running, t->clock);
	if (!fresh && rt_level(t) == 0 && rt_level(running) == 0 &&
	    running_vruntime > t->vruntime + wakeup_granularity && t->clock < running->resched_at)
		end_slice_at(running, t->clock);
}

/* The thread on its CPU leaves it, handing it to nobody yet (sim_rq_settle does). */
static void leave_cpu(struct sim_thread *t)
{
	sim_pelt_sync(t->cpu, t, t->clock);
	t->left_cpu_at = t->clock;
	t->vruntime = vruntime_now(t, t->clock);
	t->slice_end = t->resched_at = SIM_FOREVER;
	queues[t->cpu].current = NULL;
}

void sim_rq_release(struct sim_thread *self)
{
	if (!shares(self))
		return;
	struct run_queue *q = &queues[self->cpu];
	if (q->current == self)
		leave_cpu(self);
	if (self->state == SIM_DONE) {
		sim_pelt_detach(self, self->clock);
		if (self->rq_placed) {
			q->placed--;
			self->rq_placed = false;
		}
	}
	if (q->current != NULL)
		return;
	sim_rq_settle(self->cpu, self->clock);
	if (q->current == NULL && q->waiting == 0) /* nothing to run: newidle_balance() */
		sim_balance_newidle(self->cpu, self->clock);
}

void locklab_sim_on_cpu_word(int *word, int off)
{
	if (sim_self != NULL) {
		sim_self->on_cpu_word = word;
		sim_self->on_cpu_off = off;
	}
}

/* A store the thread makes to its own on-CPU word, charged and seen as any of its stores, so
 * that owner spinners polling the word see it change. */
static void store_on_cpu_word(struct sim_thread *self, int value)
{
	sim_spin_dirty();
	sim_access((uintptr_t)self->on_cpu_word, sizeof(int), SIM_STORE);
	__atomic_store_n(self->on_cpu_word, value, __ATOMIC_RELAXED);
}

/*
 * The running thread gives the CPU to the waiting thread with the least vruntime, itself among
 * them (a preemption at its slice's end, or sched_yield); it runs again when its turn comes.
 */
static void switch_out(struct sim_thread *self, bool yielding)
{
	self->vruntime = vruntime_now(self, self->clock);
	struct sim_thread *next = leftmost(self->cpu);
	int mine = rt_level(self), theirs = rt_level(next);
	/* It goes on if it is still the one to run; a yield gives way to its equals and to the
	 * fair class's others (yield_task_rt, yield_task_fair), never to a lower level. */
	if (mine > theirs ||
	    (!yielding && ((mine > 0 && mine == theirs) ||
			   (mine == 0 && theirs == 0 && self->vruntime < next->vruntime)))) {
		self->on_cpu_since = self->clock;
		update_min_vruntime(&queues[self->cpu], self->vruntime);
		set_slice_end(self, self->clock);
		return;
	}
	self->slice_end = self->resched_at = SIM_FOREVER;
	if (self->on_cpu_word != NULL && !self->on_cpu_stored) { /* ordered: others may run */
		int held = __atomic_load_n(self->on_cpu_word, __ATOMIC_RELAXED);
		store_on_cpu_word(self, self->on_cpu_off);
		next = leftmost(self->cpu); /* its CPU too may have changed meanwhile */
		if (next == NULL) { /* nobody waits now */
			store_on_cpu_word(self, held);
			self->on_cpu_since = self->clock;
			return;
		}
		self->on_cpu_held = held;
		self->on_cpu_stored = true;
	}
	struct run_queue *q = &queues[self->cpu];
	sim_pelt_sync(self->cpu, self, self->clock);
	self->left_cpu_at = self->clock;
	self->involuntary_switches++;
	self->state = SIM_CPU_WAIT;
	/* A real-time task preempted by a higher one stays at the head of its level's queue. */
	self->cpu_arrival = mine > 0 && !yielding ? 0 : ++arrivals;
	q->waiting++;
	q->current = NULL;
	dispatch(next, self->clock + sim_machine.costs.context_switch);
	sim_block(); /* which gives the word back what it held (sim_rq_resumed) */
}

/* Back on its CPU after waiting for it: its on-CPU word holds again what it held. */
void sim_rq_resumed(struct sim_thread *self)
{
	if (!self->on_cpu_stored)
		return;
	self->on_cpu_stored = false;
	store_on_cpu_word(self, self->on_cpu_held);
}

void locklab_sim_preempt_count_add(int delta)
{
	struct sim_thread *self = sim_self;
	if (self == NULL)
		return;
	self->preempt_count += delta;
	if (self->preempt_count == 0)
		sim_rq_check(self); /* a preemption that waited for it */
}

int locklab_sim_current_cpu(void) { return sim_self != NULL ? sim_self->cpu : -1; }

uint64_t locklab_sim_migrations(void) { return sim_self != NULL ? sim_self->migrations : 0; }

int locklab_sim_need_resched(void)
{
	const struct sim_thread *self = sim_self;
	return self != NULL && self->clock >= self->resched_at;
}

void sim_rq_tick(struct sim_thread *self)
{
	if (!shares(self) || queues[self->cpu].current != self)
		return;
	if (placement_ticks)
		placement_ticks = sim_place_any_unpinned();
	if (queues[self->cpu].waiting > 0 && placement_ticks)
		sim_balance_kick(self->cpu, self->clock); /* an idle CPU may take a waiting one */
	if (queues[self->cpu].waiting == 0) {
		self->slice_end = self->resched_at = SIM_FOREVER;
		return;
	}
	/* A balancing tick, not the turn's end, or a preemption that waits for the count to be
	 * back to 0 (locklab_sim_preempt_count_add): the next stop, its tick or its turn's end. */
	if (self->clock < self->resched_at || self->preempt_count > 0) {
		end_slice_at(self, self->resched_at);
		return;
	}
	switch_out(self, false);
}

void sim_rq_yield(struct sim_thread *self)
{
	if (shares(self) && queues[self->cpu].current == self && queues[self->cpu].waiting > 0)
		switch_out(self, true);
}

void sim_rq_set_cpu(struct sim_thread *t, int cpu)
{
	if (t->rq_placed)
		queues[t->cpu].placed--;
	sim_pelt_detach(t, t->clock);
	t->cpu = cpu;
	t->rq_placed = cpu >= 0;
	if (t->rq_placed) {
		queues[cpu].placed++;
		sim_pelt_attach(t, t->clock);
		if (!t->pinned)
			placement_ticks = true; /* from now on (sim_place_any_unpinned() may tell) */
	}
}

/*
 * Moves between CPUs (sched_setaffinity): each moving thread leaves its CPU's queue without
 * handing the CPU over, takes its new CPU, and joins that queue again; then a CPU left idle
 * with threads waiting runs the first of them. Threads alone on their CPUs swap places without
 * a wait or a switch, as before.
 */
void sim_rq_detach(struct sim_thread *t)
{
	t->rq_attached = false;
	if (!shares(t))
		return;
	struct run_queue *q = &queues[t->cpu];
	if (q->current == t) {
		leave_cpu(t);
		t->rq_attached = true;
	} else if (t->state == SIM_CPU_WAIT) {
		sim_pelt_sync(t->cpu, t, t->clock);
		q->waiting--;
		t->state = SIM_RUNNABLE; /* ready, out of the queue until attached again */
		t->rq_attached = true;
	}
}

void sim_rq_attach(struct sim_thread *t) { sim_rq_attach_at(t, t->clock); }

void sim_rq_attach_at(struct sim_thread *t, uint64_t at)
{
	if (t->rq_attached)
		sim_rq_arrive(t, at, false);
	t->rq_attached = false;
}

void sim_rq_settle(int cpu, uint64_t at)
{
	struct run_queue *q = &queues[cpu];
	if (q->current == NULL && q->waiting > 0)
		dispatch(leftmost(cpu), at + sim_machine.costs.context_switch);
	else if (q->current != NULL)
		set_slice_end(q->current, at);
}

/* Its level changed: the CPU it is on, or waits for, decides again who runs. */
static void level_changed(struct sim_thread *t, uint64_t at)
{
	if (!shares(t))
		return;
	struct run_queue *q = &queues[t->cpu];
	if (q->current == t)
		set_slice_end(t, at);
	else if (t->state == SIM_CPU_WAIT && q->current != NULL)
		set_slice_end(q->current, at);
}

void sim_rq_set_priority(struct sim_thread *t, int rt_priority, uint64_t at)
{
	t->rt_priority = rt_priority;
	level_changed(t, at);
}

void locklab_sim_boost(int *on_cpu_word, int prio)
{
	int level = prio < 99 ? 99 - prio : 0; /* the kernel's prio: 0 to 98 real-time */
	for (int i = 0; i < sim_thread_count() && sim_self != NULL; i++) {
		struct sim_thread *t = sim_thread_at(i);
		if (t->on_cpu_word == on_cpu_word && t->state != SIM_DONE) {
			t->rt_boost = level;
			level_changed(t, sim_self->clock);
			return;
		}
	}
}

void sim_rq_forget(struct sim_thread *t, uint64_t at)
{
	int cpu = t->cpu;
	sim_rq_detach(t);
	t->state = SIM_DONE;
	sim_rq_set_cpu(t, -1);
	sim_rq_settle(cpu, at);
}
