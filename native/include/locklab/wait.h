/* SPDX-License-Identifier: MIT */
/*
 * wait.h - how a spinning lock's waiter waits: the waiting policy, a tunable of every lock
 * whose waiters spin. LiTL ships each algorithm with a spinning and a spin-then-park policy
 * (Guiroux, Lachaize, Quema, "Multicore Locks: The Case Is Not Closed Yet", USENIX ATC 2016),
 * because a program with more threads than CPUs preempts owners and next waiters, which the
 * kernel avoids by disabling preemption and userspace cannot.
 *
 *   spin            poll with cpu_relax() until the awaited word changes (the default in the
 *                   engine, so measured figures do not move);
 *   yield           spin for spin_ns, then sched_yield() between polls, so that a preempted
 *                   owner or next waiter sharing this CPU can run;
 *   spin-then-park  spin for spin_ns, then sleep on a futex on the awaited word until the
 *                   thread that changes that word wakes it.
 *
 * Parking is a handshake between the awaited word W and a count P of waiters parked on it:
 *
 *   waiter:  P += 1; smp_mb(); if W still holds the value waited out: futex_wait(W, value);
 *            P -= 1, unless a waker woke it
 *   waker:   store W; smp_mb(); if P != 0: P -= futex_wake(W), the number it woke
 *
 * The waker takes the waiters it woke off the count itself: a woken waiter may wait a time
 * slice for a CPU, and every release in that time would otherwise see P != 0 and make a
 * futex_wake system call for nobody (measured: 1.2 million wake calls for 553 sleeps, tas
 * with 8 threads on 2 CPUs).
 *
 * Except where P is in the waiter's own queue node (MCS, the queued spinlock's nodes): there
 * the waiter takes itself off (lock_park_node() and friends). After the hand-over the waiter
 * may take the lock, let it go and end, and the interposer gives its slot, node included and
 * zeroed, to a new thread: a waker's late decrement would land on that thread's count and
 * lose its next wake-up (seen once as a 100 s hang of the interposition torture: mcs under
 * spin-then-park). The price: after an early wake (lock_prewake_node()) the hand-over may
 * still count the successor as parked and make one wake call for nobody.
 *
 * Either the waiter reads the new W, or the waker reads P != 0 and wakes; a wake between the
 * waiter's read and its sleep is not lost, because futex_wait compares W again in the kernel
 * under the futex's own lock. Each lock says in its file which word its waiters park on, so a
 * parked waiter is woken by the store that ends its wait (a hand-over, a turn, a release),
 * never by polling, and the lock's order is the order it had. (Two exceptions, each said
 * where it is: tickets that share a turn's futex word wake together and the wrong ones sleep
 * again, and the ck locks, whose words we cannot see, wake all sleepers at each release.)
 * Only spin-then-park pays the waker's smp_mb(); under spin an unlock gains one predictable
 * branch on `struct lock_wait`, which sits in a cache line of its own that no thread writes
 * after init.
 *
 * The spin budget is measured on CLOCK_MONOTONIC, read once per WAIT_CLOCK_POLLS pauses: a
 * pause costs from 10 to 140 cycles depending on the core, so a count of pauses is no bound.
 */
#ifndef LOCKLAB_WAIT_H
#define LOCKLAB_WAIT_H

#include <sched.h>
#include <time.h>

#include "futex.h"
#include "kernel.h"
#include "lock.h"

enum lock_wait_policy {
	LOCK_WAIT_SPIN,
	LOCK_WAIT_YIELD,
	LOCK_WAIT_PARK,
};

static const char *const lock_wait_policy_names[] __attribute__((unused)) = {
	"spin", "yield", "spin-then-park", NULL,
};

#define LOCK_WAIT_SPIN_NS_DEFAULT 2000

/* The two tunables, first in the lock's table, so lock_wait_configure() finds them at 0, 1. */
#define LOCK_WAIT_TUNABLES                                                                     \
	{ "wait", LOCK_WAIT_SPIN, LOCK_WAIT_SPIN, LOCK_WAIT_PARK,                              \
	  "waiting policy: spin, yield (sched_yield after spin_ns) or spin-then-park (futex "  \
	  "sleep after spin_ns, woken by the hand-over)",                                      \
	  lock_wait_policy_names },                                                            \
	{ "spin_ns", LOCK_WAIT_SPIN_NS_DEFAULT, 0, 1000000000,                                 \
	  "how long a waiter spins before it yields or parks, in ns (not with wait=spin)",    \
	  NULL }
#define LOCK_WAIT_PARAM_POLICY 0
#define LOCK_WAIT_PARAM_SPIN_NS 1

/* A lock's policy: alignas so it shares no line with words that waiters and owners write. */
struct lock_wait {
	alignas(LOCKLAB_CACHELINE) u32 policy;
	u32 spin_ns;
};

static inline void lock_wait_configure(struct lock_wait *wait, const struct lock_init_args *args)
{
	wait->policy = (u32)args->params[LOCK_WAIT_PARAM_POLICY];
	wait->spin_ns = (u32)args->params[LOCK_WAIT_PARAM_SPIN_NS];
}

/* One wait's progress through its spin budget. */
struct lock_wait_budget {
	u64 deadline_ns; /* 0: not started */
	u32 polls;
};

#define LOCK_WAIT_BUDGET_INIT { 0, 0 }
#define WAIT_CLOCK_POLLS 32

static inline u64 lock_wait_now_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (u64)now.tv_sec * 1000000000u + (u64)now.tv_nsec;
}

/* The budget's bookkeeping, out of line: under spin it is never called. */
static __attribute__((noinline, unused)) bool lock_wait_budget_spent(const struct lock_wait *wait,
								     struct lock_wait_budget *budget)
{
	if (budget->deadline_ns == 0) { /* the first failed look starts the clock */
		budget->deadline_ns = wait->spin_ns ? lock_wait_now_ns() + wait->spin_ns : 1;
		return wait->spin_ns == 0;
	}
	if (budget->deadline_ns == 1) /* spent: every poll from now yields or parks */
		return true;
	if (++budget->polls % WAIT_CLOCK_POLLS != 0 || lock_wait_now_ns() < budget->deadline_ns)
		return false;
	budget->deadline_ns = 1;
	return true;
}

/*
 * One failed look at the awaited word: pause, and yield if the policy says so. Returns true
 * when the caller should park now (spin-then-park, budget spent).
 */
static inline __attribute__((always_inline)) bool lock_wait_pause(const struct lock_wait *wait,
								  struct lock_wait_budget *budget)
{
	cpu_relax();
	if (likely(wait->policy == LOCK_WAIT_SPIN))
		return false;
	if (!lock_wait_budget_spent(wait, budget))
		return false;
	if (wait->policy == LOCK_WAIT_YIELD) {
		sched_yield();
		return false;
	}
	return true;
}

/*
 * A wait nobody will wake (a successor linking itself, a count draining): spin, or under
 * yield and spin-then-park yield once the budget is spent, since the thread awaited may be
 * preempted on this CPU.
 */
static inline __attribute__((always_inline)) void
lock_wait_pause_unwoken(const struct lock_wait *wait, struct lock_wait_budget *budget)
{
	cpu_relax();
	if (likely(wait->policy == LOCK_WAIT_SPIN))
		return;
	if (lock_wait_budget_spent(wait, budget))
		sched_yield();
}

/* Who takes a woken waiter off P: its waker (a count in the lock), or itself (in its node). */
enum lock_park_count {
	LOCK_COUNT_WAKER,
	LOCK_COUNT_WAITER,
};

/*
 * The waiter's half of the handshake: sleep while *word == value. A woken waiter gets a new
 * spin budget: it was woken because its wait is ending, or about to (lock_prewake()).
 */
static inline void lock_park_counted(struct lock_thread *self, struct lock_wait_budget *budget,
				     u32 *word, u32 value, u32 *parked, enum lock_park_count by)
{
	budget->deadline_ns = 0;
	__atomic_fetch_add(parked, 1, __ATOMIC_RELAXED);
	smp_mb(); /* P's increment before the read of W: pairs with the waker's smp_mb() */
	if (READ_ONCE(*word) == value) {
		lock_count(&self->parks);
		if (futex_wait(word, value) == 0 && by == LOCK_COUNT_WAKER)
			return; /* woken: the waker took us off the count */
	}
	__atomic_fetch_sub(parked, 1, __ATOMIC_RELAXED);
}

static inline void lock_park(struct lock_thread *self, struct lock_wait_budget *budget, u32 *word,
			     u32 value, u32 *parked)
{
	lock_park_counted(self, budget, word, value, parked, LOCK_COUNT_WAKER);
}

/* A unit test may stall a waker here, just after its wake (tests/unit/mcs_wait_test.c). */
#ifndef lock_wait_after_wake
#define lock_wait_after_wake() ((void)0)
#endif

/* The waker's count of what it woke: the statistics count them, and where the waker keeps
 * P, they leave it. */
static inline void lock_woke(struct lock_thread *self, u32 *parked, long woken,
			     enum lock_park_count by)
{
	if (woken <= 0)
		return;
	lock_wait_after_wake();
	if (by == LOCK_COUNT_WAKER)
		__atomic_fetch_sub(parked, (u32)woken, __ATOMIC_RELAXED);
	__atomic_store_n(&self->wakes, self->wakes + (unsigned long)woken, __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) void
lock_unpark_counted(const struct lock_wait *wait, struct lock_thread *self, u32 *word, u32 *parked,
		    int count, enum lock_park_count by)
{
	if (likely(wait->policy != LOCK_WAIT_PARK))
		return;
	smp_mb(); /* the store to W before the read of P: pairs with lock_park() */
	if (unlikely(READ_ONCE(*parked) != 0))
		lock_woke(self, (u32 *)parked, futex_wake(word, count), by);
}

/* The waker's half, after its store to *word; wakes up to `count` parked waiters. */
static inline __attribute__((always_inline)) void lock_unpark(const struct lock_wait *wait,
							      struct lock_thread *self, u32 *word,
							      u32 *parked, int count)
{
	lock_unpark_counted(wait, self, word, parked, count, LOCK_COUNT_WAKER);
}

/* The same for a waiter's own node: after the hand-over nothing writes the node. */
static inline __attribute__((always_inline)) void lock_unpark_node(const struct lock_wait *wait,
								   struct lock_thread *self,
								   u32 *word, u32 *parked)
{
	lock_unpark_counted(wait, self, word, parked, 1, LOCK_COUNT_WAITER);
}

/*
 * A new owner of a FIFO lock wakes its parked successor at once, not at the hand-over: the
 * successor's wake-up (a system call, then a wait for a CPU) overlaps the owner's critical
 * section, and the hand-over finds it spinning. Without it, under oversubscription every
 * hand-over waits a whole wake-up with the lock free. Best effort, so no barrier: the
 * hand-over's lock_unpark() still wakes a successor that parked after this look.
 */
static inline __attribute__((always_inline)) void
lock_prewake_counted(const struct lock_wait *wait, struct lock_thread *self, u32 *word, u32 *parked,
		     enum lock_park_count by)
{
	if (likely(wait->policy != LOCK_WAIT_PARK))
		return;
	if (READ_ONCE(*parked) != 0)
		lock_woke(self, parked, futex_wake(word, 1), by);
}

static inline __attribute__((always_inline)) void lock_prewake(const struct lock_wait *wait,
							       struct lock_thread *self, u32 *word,
							       u32 *parked)
{
	lock_prewake_counted(wait, self, word, parked, LOCK_COUNT_WAKER);
}

/* The same for a successor's own node (its count is its own: see the top of this file). */
static inline __attribute__((always_inline)) void lock_prewake_node(const struct lock_wait *wait,
								    struct lock_thread *self,
								    u32 *word, u32 *parked)
{
	lock_prewake_counted(wait, self, word, parked, LOCK_COUNT_WAITER);
}

/*
 * smp_cond_load_acquire() with a waiting policy: wait until cond (in terms of VAL) holds for
 * the 32-bit word at ptr, parking on that word (its parked count at parked) when the policy
 * says so. Returns the value that satisfied cond, read with ACQUIRE.
 */
#define lock_wait_cond_load_acquire_counted(wait, self, ptr, parked, by, cond_expr)             \
	({                                                                                     \
		_Static_assert(sizeof(*(ptr)) == 4, "a futex word is 32 bits");                \
		struct lock_wait_budget __budget = LOCK_WAIT_BUDGET_INIT;                      \
		__typeof__(*(ptr)) VAL;                                                        \
		for (;;) {                                                                     \
			VAL = smp_load_acquire(ptr);                                           \
			if (cond_expr)                                                         \
				break;                                                         \
			if (lock_wait_pause((wait), &__budget))                                \
				lock_park_counted((self), &__budget, (u32 *)(ptr), (u32)VAL,   \
						  (parked), (by));                             \
		}                                                                              \
		VAL;                                                                           \
	})
#define lock_wait_cond_load_acquire(wait, self, ptr, parked, cond_expr)                         \
	lock_wait_cond_load_acquire_counted(wait, self, ptr, parked, LOCK_COUNT_WAKER, cond_expr)
/* The same, parked on the waiter's own node (its count is its own). */
#define lock_wait_node_load_acquire(wait, self, ptr, parked, cond_expr)                         \
	lock_wait_cond_load_acquire_counted(wait, self, ptr, parked, LOCK_COUNT_WAITER, cond_expr)

#endif /* LOCKLAB_WAIT_H */
