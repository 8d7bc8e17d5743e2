/* SPDX-License-Identifier: MIT */
/*
 * Ticket locks: the plain one, and two with proportional backoff (seed 004).
 *
 * Source: J. M. Mellor-Crummey, M. L. Scott, "Algorithms for Scalable Synchronization on
 * Shared-Memory Multiprocessors", ACM TOCS 9(1), 1991, section 2.2; in Linux as the x86
 * spinlock from 2.6.25 (N. Piggin, 2008) until qspinlock replaced it in 4.2.
 *
 * State: two counters in one cache line.
 *   next_ticket   the ticket the next arrival takes (fetch-and-add);
 *   now_serving   the ticket that holds the lock; only the holder writes it.
 * Free when next_ticket == now_serving. Waiters are served strictly FIFO.
 *
 * Two 32-bit words rather than the kernel's two halves of one word: C11 has no mixed-size
 * atomics, and the halves exist only to make trylock a single CAS, which we get here by
 * CAS-ing next_ticket after reading now_serving.
 *
 * Ordering: taking a ticket needs none; the wait reads now_serving with ACQUIRE, pairing with
 * the RELEASE store in unlock, so the previous holder's critical section is visible.
 *
 * Waiting policy (wait.h), plain ticket only: a waiter parks on its own turn, not on
 * now_serving, so a release wakes the next owner and nobody else. Turns hash to
 * TICKET_PARK_SLOTS futex words by ticket; unlock bumps the word of the ticket it now serves
 * and wakes its sleepers (one, unless more than TICKET_PARK_SLOTS wait: then a waiter whose
 * turn it is not goes back to sleep). The tickets decide who owns the lock, so parking keeps
 * the FIFO order. A new owner wakes the next ticket's sleepers early, as wait.h's
 * lock_prewake() says why. The proportional-backoff variants below are themselves a way of waiting
 * (seed 004 measures it) and spin as published.
 *
 * Proportional backoff: a waiter that knows it is k-th in line waits about k critical sections
 * before looking again, instead of hammering the shared line (each poll of now_serving is a
 * cache miss once the holder writes it). Three revisions of seed 004's thread, each a variant:
 *
 *   ticket_auto_backoff_rfc  R. van Riel, "[RFC PATCH 3/3] x86,smp: auto tune spinlock backoff
 *                       delay factor", LKML, 21 December 2012: seed 004's "auto", the one
 *                       M. Lespinasse measured (1 January 2013). One integer delay per CPU
 *                       (here: per thread), shared by every lock, from MIN 1 to
 *                       MAX_SPINLOCK_DELAY 1000. A waiter spins delay * (ticket - head) pauses
 *                       (the holder counts: not minus 1), then looks: its turn -> delay - 1
 *                       ("may have overslept"), done; still busy -> delay + 1 on 3 looks in 8,
 *                       picked by the low bits of the head seen ((head & 3) == 0 or
 *                       (head & 7) == 1), i.e. +1 per 2.7 busy looks.
 *   ticket_auto_backoff R. van Riel's later revision (January 2013, after Lespinasse's review):
 *                       each CPU (here: each thread) learns a delay per lock, in 8-bit fixed
 *                       point, kept in a 64-entry table hashed by the lock's address. Each
 *                       wait adds 1/7 to it (up to MAX); waking to find the lock already ours
 *                       ("overslept") takes max(delay/32, 1) off, as long as it is at least 2.
 *                       MAX is 16000, or 16 in a virtual machine where a preempted vCPU makes
 *                       long waits misleading. Waits (ticket - head - 1) * delay.
 *   ticket_fixed_delay  M. Lespinasse, "x86,smp: proportional backoff for ticket spinlocks"
 *                       (his version, LKML, 1 January 2013, seed 004): one system-wide
 *                       constant, spinlock_delay, in cpu_relax() pauses per waiter ahead,
 *                       (ticket - head - 1) * spinlock_delay. His best values were 375
 *                       (4-socket Barcelona), 75 (2-socket Westmere) and 45 (2-socket Sandy
 *                       Bridge): machine-dependent, hence the tunable.
 * The later two poll tightly when nobody is ahead (the next owner must not oversleep its
 * turn); the RFC does not: even next in line waits `delay` pauses between looks.
 *
 * What of the RFC was verified: the RFC's own text is not in the archives we could search,
 * so it rests on Lespinasse's account in seed 004 (delay * (ticket - head) "instead of"
 * his (ticket - head - 1); "rik's autotuned target of ~3.7 accesses per contended spinlock
 * acquisition") and on the later revision, which kept the names MIN/MAX_SPINLOCK_DELAY. The
 * 3-in-8 increase is our reading of the RFC: it is the rule that gives Lespinasse's ~3.7
 * looks per contended acquisition (2.7 busy looks, each +3/8, balance the final -1, plus
 * that final look); +1 on every busy look would settle at 2.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>
#include <locklab/wait.h>

#define TICKET_PARK_SLOTS 16

/* A futex word for the tickets that hash to it, and how many of their waiters sleep on it. */
struct ticket_turn {
	u32 seq;
	u32 parked;
};

/*
 * The backoff variants below embed this lock and share its unlock, but have no `wait`
 * tunable: their policy stays LOCK_WAIT_SPIN, the zero of the lock memory the engine and the
 * interposition library hand to init.
 */
struct ticket_lock {
	u32 next_ticket;
	u32 now_serving;
	struct lock_wait wait;
	alignas(LOCKLAB_CACHELINE) struct ticket_turn turns[TICKET_PARK_SLOTS];
};

static int ticket_init(void *lockp, const struct lock_init_args *args)
{
	struct ticket_lock *lock = lockp;
	lock_wait_configure(&lock->wait, args);
	return 0;
}

/*
 * Sleep until now_serving may be `ticket`. The turn's seq is read before the parked count
 * goes up, so a bump between that read and the sleep makes futex_wait return at once.
 */
static void ticket_park(struct ticket_lock *lock, struct lock_thread *self,
			struct lock_wait_budget *budget, u32 ticket)
{
	struct ticket_turn *turn = &lock->turns[ticket % TICKET_PARK_SLOTS];
	u32 seq = READ_ONCE(turn->seq);

	budget->deadline_ns = 0; /* woken or not, spin again before the next sleep */
	__atomic_fetch_add(&turn->parked, 1, __ATOMIC_RELAXED);
	smp_mb(); /* parked before the read of now_serving: pairs with ticket_unpark() */
	if (READ_ONCE(lock->now_serving) != ticket) {
		lock_count(&self->parks);
		if (futex_wait(&turn->seq, seq) == 0)
			return; /* woken: the waker took us off the count */
	}
	__atomic_fetch_sub(&turn->parked, 1, __ATOMIC_RELAXED);
}

/* Wake the sleepers of `ticket`'s turn, if any. */
static void ticket_wake_turn(struct ticket_lock *lock, struct lock_thread *self, u32 ticket)
{
	struct ticket_turn *turn = &lock->turns[ticket % TICKET_PARK_SLOTS];

	if (READ_ONCE(turn->parked) != 0) {
		__atomic_fetch_add(&turn->seq, 1, __ATOMIC_RELAXED);
		lock_woke(self, &turn->parked, futex_wake(&turn->seq, INT_MAX), LOCK_COUNT_WAKER);
	}
}

static void ticket_unpark(struct ticket_lock *lock, struct lock_thread *self, u32 serving)
{
	smp_mb(); /* now_serving before the read of parked: pairs with ticket_park() */
	ticket_wake_turn(lock, self, serving);
}

static void ticket_wait_turn(struct ticket_lock *lock, struct lock_thread *self, u32 ticket)
{
	struct lock_wait_budget budget = LOCK_WAIT_BUDGET_INIT;

	while (smp_load_acquire(&lock->now_serving) != ticket)
		if (lock_wait_pause(&lock->wait, &budget))
			ticket_park(lock, self, &budget, ticket);
	if (lock->wait.policy == LOCK_WAIT_PARK)
		ticket_wake_turn(lock, self, ticket + 1); /* early, as wait.h's lock_prewake() */
}

static void ticket_lock(void *lockp, struct lock_thread *self)
{
	struct ticket_lock *lock = lockp;
	u32 ticket = __atomic_fetch_add(&lock->next_ticket, 1, __ATOMIC_RELAXED);

	if (likely(smp_load_acquire(&lock->now_serving) == ticket))
		return;
	ticket_wait_turn(lock, self, ticket);
}

static bool ticket_trylock(void *lockp, struct lock_thread *self)
{
	struct ticket_lock *lock = lockp;
	/* ACQUIRE: if the CAS succeeds, this read is what orders us after the last holder. */
	u32 serving = smp_load_acquire(&lock->now_serving);
	(void)self;
	return cmpxchg_relaxed(&lock->next_ticket, serving, serving + 1) == serving;
}

static void ticket_unlock(void *lockp, struct lock_thread *self)
{
	struct ticket_lock *lock = lockp;
	/* Only the holder writes now_serving, so a plain read + release store suffices. */
	u32 serving = READ_ONCE(lock->now_serving) + 1;

	smp_store_release(&lock->now_serving, serving);
	if (unlikely(lock->wait.policy == LOCK_WAIT_PARK))
		ticket_unpark(lock, self, serving);
}

/* ---- proportional backoff ------------------------------------------------------------------ */

#define DELAY_SHIFT 8
#define DELAY_FIXED_1 (1u << DELAY_SHIFT)
#define MIN_SPINLOCK_DELAY (1 * DELAY_FIXED_1)
#define MAX_SPINLOCK_DELAY (16000 * DELAY_FIXED_1)
#define MAX_SPINLOCK_DELAY_GUEST (16 * DELAY_FIXED_1)
#define DELAY_HASH_SHIFT 6

struct ticket_backoff_lock {
	struct ticket_lock ticket;
	u32 delay_max;      /* auto: fixed-point cap on the learned delay */
	u32 spinlock_delay; /* fixed: pauses per waiter ahead */
};

/* van Riel's per-CPU table, per thread here, in the thread's spare queue-node memory. */
struct delay_table {
	u32 delay[1u << DELAY_HASH_SHIFT]; /* 0: never used, start at MIN_SPINLOCK_DELAY */
};

_Static_assert(sizeof(struct delay_table) <= 2 * LOCK_QNODE_BYTES,
	       "the delay table fits the thread's queue nodes 1 and 2");

static inline u32 *delay_slot(const void *lock, struct lock_thread *self)
{
	/* Queue nodes 1 and 2 (LOCK_QNODE_BACKOFF and the next) are contiguous and unused by
	 * ticket locks, which have no lock_task. */
	struct delay_table *table = lock_qnode(self, LOCK_QNODE_BACKOFF, struct delay_table);
	u32 hash = (u32)((uintptr_t)lock >> 6) * 0x9e3779b9u >> (32 - DELAY_HASH_SHIFT);
	return &table->delay[hash];
}

static inline void spin_pauses(u64 pauses)
{
	while (pauses--)
		cpu_relax();
}

/* The RFC's wait between looks; unit tests replace it to drive the loop deterministically. */
#ifndef TICKET_RFC_WAIT
#define TICKET_RFC_WAIT(lock, pauses) spin_pauses(pauses)
#endif

static void ticket_auto_backoff_lock(void *lockp, struct lock_thread *self)
{
	struct ticket_backoff_lock *lock = lockp;
	u32 ticket = __atomic_fetch_add(&lock->ticket.next_ticket, 1, __ATOMIC_RELAXED);
	u32 head = smp_load_acquire(&lock->ticket.now_serving);

	if (likely(head == ticket))
		return;

	u32 *slot = delay_slot(lock, self);
	u32 delay = *slot ? *slot : MIN_SPINLOCK_DELAY;
	for (;;) {
		u32 waiters_ahead = ticket - head - 1;
		if (waiters_ahead == 0) {
			smp_cond_load_acquire(&lock->ticket.now_serving, VAL == ticket);
			break;
		}
		if (delay < lock->delay_max)
			delay += DELAY_FIXED_1 / 7;
		spin_pauses(((u64)delay * waiters_ahead) >> DELAY_SHIFT);
		head = smp_load_acquire(&lock->ticket.now_serving);
		if (head == ticket) {
			/* Overslept: the lock was ours before we looked. Wait less next time. */
			if (delay >= 2 * DELAY_FIXED_1) {
				u32 step = delay / 32 > DELAY_FIXED_1 ? delay / 32 : DELAY_FIXED_1;
				delay -= step;
			}
			break;
		}
	}
	*slot = delay;
}

/* ---- the RFC of 21 December 2012 ---------------------------------------------------------- */

#define RFC_MIN_SPINLOCK_DELAY 1
#define RFC_MAX_SPINLOCK_DELAY 1000

/* The per-CPU `spinlock_delay`, per thread here, in the thread's LOCK_QNODE_BACKOFF node. */
struct rfc_spinlock_delay {
	u32 delay; /* 0: never used, start at RFC_MIN_SPINLOCK_DELAY */
};

static inline u32 *rfc_delay_of(struct lock_thread *self)
{
	return &lock_qnode(self, LOCK_QNODE_BACKOFF, struct rfc_spinlock_delay)->delay;
}

/* One step of the RFC's tuning after a look at head that found the lock still busy. */
static inline u32 rfc_delay_after_busy_look(u32 delay, u32 head)
{
	/* 3 looks in 8 (by head's low bits): +1 per 2.7 busy looks on average. */
	if (delay < RFC_MAX_SPINLOCK_DELAY && ((head & 3) == 0 || (head & 7) == 1))
		delay++;
	return delay;
}

static void ticket_auto_backoff_rfc_lock(void *lockp, struct lock_thread *self)
{
	struct ticket_lock *lock = lockp;
	u32 ticket = __atomic_fetch_add(&lock->next_ticket, 1, __ATOMIC_RELAXED);
	u32 head = smp_load_acquire(&lock->now_serving);

	if (likely(head == ticket))
		return;

	u32 *slot = rfc_delay_of(self);
	u32 delay = *slot ? *slot : RFC_MIN_SPINLOCK_DELAY;
	for (;;) {
		/* Everyone ahead, the holder included: ticket - head, not minus 1. */
		TICKET_RFC_WAIT(lock, (u64)delay * (ticket - head));
		head = smp_load_acquire(&lock->now_serving);
		if (head == ticket) {
			/* Ours: we may have overslept, wait less next time. */
			if (delay > RFC_MIN_SPINLOCK_DELAY)
				delay--;
			break;
		}
		delay = rfc_delay_after_busy_look(delay, head);
	}
	*slot = delay;
}

static void ticket_fixed_delay_lock(void *lockp, struct lock_thread *self)
{
	struct ticket_backoff_lock *lock = lockp;
	u32 ticket = __atomic_fetch_add(&lock->ticket.next_ticket, 1, __ATOMIC_RELAXED);
	(void)self;

	for (;;) {
		u32 head = smp_load_acquire(&lock->ticket.now_serving);
		if (head == ticket)
			return;
		u32 waiters_ahead = ticket - head - 1;
		if (waiters_ahead == 0)
			cpu_relax();
		else
			spin_pauses((u64)waiters_ahead * lock->spinlock_delay);
	}
}

/* A hypervisor sets the x86 "hypervisor" CPU flag; van Riel caps the delay lower there. */
static bool running_in_guest(void)
{
	char line[4096];
	bool guest = false;
	FILE *cpuinfo = fopen("/proc/cpuinfo", "r");
	if (cpuinfo == NULL)
		return false;
	while (!guest && fgets(line, sizeof(line), cpuinfo))
		guest = strncmp(line, "flags", 5) == 0 && strstr(line, " hypervisor") != NULL;
	fclose(cpuinfo);
	return guest;
}

static int ticket_auto_backoff_init(void *lockp, const struct lock_init_args *args)
{
	struct ticket_backoff_lock *lock = lockp;
	long max = args->params[0];
	if (max == 0)
		lock->delay_max = running_in_guest() ? MAX_SPINLOCK_DELAY_GUEST : MAX_SPINLOCK_DELAY;
	else
		lock->delay_max = (u32)max * DELAY_FIXED_1;
	return 0;
}

static int ticket_fixed_delay_init(void *lockp, const struct lock_init_args *args)
{
	struct ticket_backoff_lock *lock = lockp;
	lock->spinlock_delay = (u32)args->params[0];
	return 0;
}

static bool ticket_backoff_trylock(void *lockp, struct lock_thread *self)
{
	return ticket_trylock(&((struct ticket_backoff_lock *)lockp)->ticket, self);
}

static void ticket_backoff_unlock(void *lockp, struct lock_thread *self)
{
	ticket_unlock(&((struct ticket_backoff_lock *)lockp)->ticket, self);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };
static const struct lock_tunable wait_tunables[] = { LOCK_WAIT_TUNABLES, LOCK_TUNABLES_END };

static const struct lock_tunable auto_backoff_tunables[] = {
	{ "delay_max", 0, 0, 16000,
	  "cap on the learned delay, in pauses per waiter ahead (0: 16000, or 16 in a VM)", NULL },
	LOCK_TUNABLES_END,
};

static const struct lock_tunable fixed_delay_tunables[] = {
	{ "spinlock_delay", 75, 0, 100000, "pauses per waiter ahead, for every lock and CPU", NULL },
	LOCK_TUNABLES_END,
};

const struct lock_ops ticket_auto_backoff_rfc_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ticket_auto_backoff_rfc",
	.family = "spin-fair",
	.summary = "ticket lock, backoff delay*(ticket-head), one per-thread integer delay 1..1000 "
		   "(RFC, seed 004's auto)",
	.source = "R. van Riel, [RFC PATCH 3/3] x86,smp: auto tune spinlock backoff delay factor, "
		  "LKML 21 Dec 2012",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct ticket_lock),
	.tunables = no_tunables,
	.lock = ticket_auto_backoff_rfc_lock,
	.unlock = ticket_unlock,
	.trylock = ticket_trylock,
};

const struct lock_ops ticket_auto_backoff_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ticket_auto_backoff",
	.family = "spin-fair",
	.summary = "ticket lock, backoff (ticket-head-1)*delay, per-thread per-lock fixed-point "
		   "delay (later revision)",
	.source = "R. van Riel, x86,smp: auto tune spinlock backoff delay factor, revision after "
		  "Lespinasse's review, LKML Jan 2013",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct ticket_backoff_lock),
	.tunables = auto_backoff_tunables,
	.init = ticket_auto_backoff_init,
	.lock = ticket_auto_backoff_lock,
	.unlock = ticket_backoff_unlock,
	.trylock = ticket_backoff_trylock,
};

const struct lock_ops ticket_fixed_delay_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ticket_fixed_delay",
	.family = "spin-fair",
	.summary = "ticket lock, backoff (ticket-head-1)*spinlock_delay, one system-wide delay",
	.source = "M. Lespinasse, his x86,smp: proportional backoff for ticket spinlocks, LKML "
		  "1 Jan 2013 (seed 004)",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct ticket_backoff_lock),
	.tunables = fixed_delay_tunables,
	.init = ticket_fixed_delay_init,
	.lock = ticket_fixed_delay_lock,
	.unlock = ticket_backoff_unlock,
	.trylock = ticket_backoff_trylock,
};

const struct lock_ops ticket_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ticket",
	.family = "spin-fair",
	.summary = "ticket lock: fetch-and-add a ticket, spin until it is served (FIFO)",
	.source = "Mellor-Crummey & Scott, ACM TOCS 9(1) 1991, sec. 2.2",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct ticket_lock),
	.tunables = wait_tunables,
	.init = ticket_init,
	.lock = ticket_lock,
	.unlock = ticket_unlock,
	.trylock = ticket_trylock,
};
