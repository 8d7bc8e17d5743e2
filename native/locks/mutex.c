/* SPDX-License-Identifier: MIT */
/*
 * The kernel's mutex: an owner word with flags, optimistic spinning through the OSQ while the
 * owner runs, a FIFO of sleeping waiters, and hand-off to the first waiter so it cannot starve.
 *
 * Source: kernel/locking/mutex.c of Linux 6.1 (I. Molnar 2006; owner word and OSQ spinning
 * by W. Long, J. Lynch, D. Bueso, P. Zijlstra, 2014-2016; hand-off by P. Zijlstra, "locking/
 * mutex: Add lock handoff to avoid starvation", 2016). HANDOFF is set only by a CAS on an owned
 * lock, as 6.1's __mutex_trylock_common() does.
 *
 * State: `owner` = the owner's task pointer | WAITERS (bit 0) | HANDOFF (bit 1) | PICKUP (bit 2).
 *   WAITERS  the wait list is not empty: unlock must take the slow path and wake someone;
 *   HANDOFF  the first waiter was woken and still lost the lock to a spinner or a newcomer:
 *            the next unlock gives the lock to it directly instead of freeing it;
 *   PICKUP   the lock was handed to the task in the word; only that task may take it.
 * Fast paths: CAS-acquire 0 -> me, CAS-release me -> 0 (fails when any flag is set).
 *
 * Slow lock, step for step as 6.1's __mutex_lock_common(): try the lock (__mutex_trylock(),
 * which a PICKUP or a free lock with WAITERS lets through where the fast path's CAS fails);
 * then, with the `spin` tunable, spin optimistically if the owner runs (mutex_can_spin_on_
 * owner()): queue on the OSQ so only one thread watches the owner, and loop on "try the lock,
 * else spin while that owner is unchanged and running". Failing that, join the FIFO wait list
 * (setting WAITERS) and sleep on a futex; when woken, try again, and a first waiter that still
 * fails sets HANDOFF and spins itself. Before HANDOFF anyone may steal. The wait list is
 * doubly linked, so a waiter leaves it in O(1), as list_del() does.
 * Slow unlock: clear the owner (keeping the flags), or with HANDOFF pass it to the first waiter
 * (owner = waiter | PICKUP); then wake the first waiter.
 *
 * Userspace: an owner counts as running unless it is asleep in a lock (lock_task.h; a
 * preempted owner still looks running), and a spin also stops after a scheduler tick's worth
 * (OSQ_SPIN_NS), standing in for need_resched(), which userspace cannot see: without it a
 * spinner would spin on a preempted owner until the owner's next time slice. The clock is read
 * once in 64 rounds, not per round.
 *
 * A port beside the tree's own code (kernel:mutex, compiled from 6.1): kept, since it is what the
 * interposition library, the arm64 build and a host without a kernel tree run; tests/test_ports.py
 * holds it to the tree's code (docs/locks.md, "Ports and the tree").
 */
#include <errno.h>

#include "osq.h"
#include "lock_task.h"
#include "raw_spinlock.h" /* wait_lock: Linux 6.1's qspinlock (raw_qspin_*) */
#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

#define MUTEX_FLAG_WAITERS 0x01UL
#define MUTEX_FLAG_HANDOFF 0x02UL
#define MUTEX_FLAG_PICKUP 0x04UL
#define MUTEX_FLAGS 0x07UL

/* On the waiting thread's stack, as the kernel's; its wake-up is by task (lock_task_wake()). */
struct mutex_waiter {
	struct mutex_waiter *next, *prev;
	struct lock_task *task;
};

struct mutex {
	uintptr_t owner;
	struct optimistic_spin_queue osq;
	struct qspinlock wait_lock; /* protects the wait list; a qspinlock, as in 6.1 */
	struct mutex_waiter *first, *last;
	bool spin;     /* tunable: optimistic spinning */
};


static inline struct lock_task *owner_task(uintptr_t owner)
{
	return (struct lock_task *)(owner & ~MUTEX_FLAGS);
}

/*
 * Take the lock if it is free, or handed to us (PICKUP); keep WAITERS, drop PICKUP. With
 * `handoff` (the woken first waiter), a lock that someone else holds gets HANDOFF instead, by
 * the same CAS, so the flag is only ever set on an owned lock: if the owner lets go between our
 * read and the CAS, the CAS fails and the next round takes the free lock. (An unconditional
 * fetch_or would land HANDOFF on a free lock, where the next acquirer of any kind clears it.)
 * NULL when taken, else the task that holds it. The kernel's __mutex_trylock_common(lock,
 * handoff) of Linux 6.1: __mutex_trylock_or_owner() without `handoff`,
 * __mutex_trylock_or_handoff() with it.
 */
static struct lock_task *mutex_trylock_or_owner(struct mutex *lock, struct lock_task *me,
						bool handoff)
{
	uintptr_t owner = READ_ONCE(lock->owner);
	for (;;) {
		struct lock_task *task = owner_task(owner);
		uintptr_t flags = owner & MUTEX_FLAGS;
		if (task) {
			if (flags & MUTEX_FLAG_PICKUP) {
				if (task != me)
					return task;
				flags &= ~MUTEX_FLAG_PICKUP;
			} else if (handoff) {
				if (flags & MUTEX_FLAG_HANDOFF)
					return task;
				flags |= MUTEX_FLAG_HANDOFF;
			} else {
				return task;
			}
		} else {
			flags &= ~MUTEX_FLAG_HANDOFF; /* never set on a free lock; the kernel WARNs */
			task = me;
		}
		/* ACQUIRE when taking; for setting HANDOFF it is what the kernel's CAS has too. */
		if (__atomic_compare_exchange_n(&lock->owner, &owner, (uintptr_t)task | flags, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return task == me ? NULL : task;
	}
}

/* __mutex_trylock(). */
static bool mutex_trylock_flags(struct mutex *lock, struct lock_task *me)
{
	return mutex_trylock_or_owner(lock, me, false) == NULL;
}

/*
 * Spin while `owner` holds the lock and runs; true when it let go (worth trying again).
 * `round` counts the polls of the whole spin, for spun_a_tick().
 */
static bool mutex_spin_on_owner(struct mutex *lock, struct lock_task *owner, u64 deadline,
				unsigned int *round)
{
	while (owner_task(READ_ONCE(lock->owner)) == owner) {
		if (!lock_task_running(owner) || spun_a_tick(++*round, deadline))
			return false;
		cpu_relax();
	}
	return true;
}

/* mutex_can_spin_on_owner(): not when the owner sleeps (need_resched() is never true here). */
static bool mutex_can_spin_on_owner(const struct mutex *lock)
{
	struct lock_task *owner = owner_task(READ_ONCE(lock->owner));
	return owner == NULL || lock_task_running(owner);
}

/*
 * Optimistic spinning: through the OSQ unless we are the woken first waiter (which spins
 * directly, as in the kernel). Returns true with the lock held.
 */
static bool mutex_optimistic_spin(struct mutex *lock, struct lock_thread *self, bool waiter)
{
	struct lock_task *me = lock_task_of(self);
	u64 deadline = osq_now_ns() + OSQ_SPIN_NS;
	unsigned int round = 0;
	bool taken = false;

	if (!waiter && (!mutex_can_spin_on_owner(lock) || !osq_lock(&lock->osq, self)))
		return false;
	for (;;) {
		struct lock_task *owner = mutex_trylock_or_owner(lock, me, false);
		if (owner == NULL) {
			taken = true;
			break;
		}
		if (!mutex_spin_on_owner(lock, owner, deadline, &round) ||
		    spun_a_tick(++round, deadline))
			break;
		cpu_relax();
	}
	if (!waiter)
		osq_unlock(&lock->osq, self);
	if (!taken && osq_now_ns() >= deadline) /* the tick's stand-in ran out, not the owner */
		lock_event(self, LOCK_EVENT_SPIN_EXPIRED);
	return taken;
}

/*
 * Out of line, as the kernel's __mutex_lock_slowpath() (noinline, kernel/locking/mutex.c):
 * inlined into mutex_lock_op(), its six callee-saved registers were pushed and popped around
 * the fast path's cmpxchg at every acquisition (the port ran at 0.92 of the tree's code at one
 * writer on an AMD EPYC VM; docs/locks.md).
 */
static __attribute__((noinline)) void mutex_lock_slowpath(struct mutex *lock,
							  struct lock_thread *self)
{
	struct lock_task *me = lock_task_of(self);
	struct mutex_waiter waiter;

	if (mutex_trylock_flags(lock, me) || (lock->spin && mutex_optimistic_spin(lock, self, false)))
		return;

	raw_qspin_lock(&lock->wait_lock, self);
	if (mutex_trylock_flags(lock, me)) {
		raw_qspin_unlock(&lock->wait_lock);
		return;
	}
	waiter.next = NULL;
	waiter.prev = lock->last;
	waiter.task = me;
	if (lock->last)
		lock->last->next = &waiter;
	else
		WRITE_ONCE(lock->first, &waiter); /* read unlocked by a woken waiter */
	lock->last = &waiter;
	if (lock->first == &waiter) /* the first waiter announces itself */
		__atomic_fetch_or(&lock->owner, MUTEX_FLAG_WAITERS, __ATOMIC_RELAXED);

	/* BLOCKED while it tries, from here and after each sleep: an unlock meanwhile makes it
	 * RUNNING, so a sleep it was about to begin does not happen (set_current_state()). */
	lock_task_block(me);
	for (;;) {
		/* Woken or not, the lock may be free (or handed to us) now. */
		if (mutex_trylock_flags(lock, me))
			break;
		raw_qspin_unlock(&lock->wait_lock);

		lock_task_schedule(me);

		/*
		 * Woken: try at once. The first waiter that fails even now asks for a hand-off (in
		 * the same CAS, while the lock is held), so spinners and newcomers cannot overtake
		 * it again, then spins itself.
		 */
		bool first = READ_ONCE(lock->first) == &waiter;
		lock_task_block(me);
		bool taken = mutex_trylock_or_owner(lock, me, first) == NULL;
		if (!taken && first)
			taken = lock->spin && mutex_optimistic_spin(lock, self, true);
		raw_qspin_lock(&lock->wait_lock, self);
		if (taken)
			break;
	}
	lock_task_unblock(me);
	/* Leave the wait list; the last one out clears the flags. */
	if (waiter.prev)
		waiter.prev->next = waiter.next;
	else
		WRITE_ONCE(lock->first, waiter.next);
	if (waiter.next)
		waiter.next->prev = waiter.prev;
	else
		lock->last = waiter.prev;
	if (lock->first == NULL)
		__atomic_fetch_and(&lock->owner, ~(MUTEX_FLAG_WAITERS | MUTEX_FLAG_HANDOFF),
				   __ATOMIC_RELAXED);
	raw_qspin_unlock(&lock->wait_lock);
}

/* Out of line, as the kernel's __mutex_unlock_slowpath() (noinline). */
static __attribute__((noinline)) void mutex_unlock_slowpath(struct mutex *lock,
							    struct lock_thread *self)
{
	struct lock_task *me = lock_task_of(self);
	uintptr_t owner = READ_ONCE(lock->owner);

	/* Release, unless a waiter asked for a hand-off. */
	while (!(owner & MUTEX_FLAG_HANDOFF)) {
		if (__atomic_compare_exchange_n(&lock->owner, &owner, owner & MUTEX_FLAG_WAITERS,
						false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
			if (!(owner & MUTEX_FLAG_WAITERS))
				return;
			break;
		}
	}
	raw_qspin_lock(&lock->wait_lock, self);
	struct mutex_waiter *next = lock->first;
	struct lock_task *woken = NULL; /* the waiter itself may be gone after unlock */
	if (next) {
		if (owner & MUTEX_FLAG_HANDOFF) {
			/* owner = next | PICKUP, keeping WAITERS: only it may take the lock now. */
			uintptr_t old = READ_ONCE(lock->owner);
			while (!__atomic_compare_exchange_n(
				&lock->owner, &old,
				(uintptr_t)next->task | (old & MUTEX_FLAG_WAITERS) | MUTEX_FLAG_PICKUP,
				false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
				;
		}
		woken = next->task;
	} else if (owner & MUTEX_FLAG_HANDOFF) {
		/* The waiter that asked left already (it took the lock meanwhile): just free it. */
		__atomic_fetch_and(&lock->owner, MUTEX_FLAG_WAITERS, __ATOMIC_RELEASE);
	}
	raw_qspin_unlock(&lock->wait_lock);
	(void)me;
	if (woken)
		lock_task_wake(woken);
}

static kernel_out_of_line void mutex_lock_op(void *lockp, struct lock_thread *self)
{
	struct mutex *lock = lockp;
	struct lock_task *me = lock_task_of(self);
	uintptr_t expected = 0;

	if (likely(__atomic_compare_exchange_n(&lock->owner, &expected, (uintptr_t)me, false,
					       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		return;
	mutex_lock_slowpath(lock, self);
}

static bool mutex_trylock_op(void *lockp, struct lock_thread *self)
{
	return mutex_trylock_flags(lockp, lock_task_of(self));
}

static kernel_out_of_line void mutex_unlock_op(void *lockp, struct lock_thread *self)
{
	struct mutex *lock = lockp;
	uintptr_t expected = (uintptr_t)lock_task_of(self);

	if (likely(__atomic_compare_exchange_n(&lock->owner, &expected, 0, false, __ATOMIC_RELEASE,
					       __ATOMIC_RELAXED)))
		return;
	mutex_unlock_slowpath(lock, self);
}

static int mutex_init_op(void *lockp, const struct lock_init_args *args)
{
	struct mutex *lock = lockp;
	if (args->nthreads > OSQ_MAX_THREADS)
		return -EINVAL;
	lock->spin = args->params[0] != 0;
	return 0;
}

static const struct lock_tunable mutex_tunables[] = {
	{ "spin", 1, 0, 1, "optimistic spinning on a running owner, through the OSQ (0: off)", NULL },
	LOCK_TUNABLES_END,
};

const struct lock_ops mutex_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "mutex",
	.family = "sleeping-kernel",
	.summary = "kernel mutex: owner word with flags, OSQ spinning, FIFO sleepers, hand-off",
	.source = "Linux kernel/locking/mutex.c and osq_lock.c (2014-2016)",
	.flags = LOCK_SPINS | LOCK_SLEEPS,
	.lock_size = sizeof(struct mutex),
	.tunables = mutex_tunables,
	.init = mutex_init_op,
	.lock = mutex_lock_op,
	.unlock = mutex_unlock_op,
	.trylock = mutex_trylock_op,
};
