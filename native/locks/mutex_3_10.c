/* SPDX-License-Identifier: MIT */
/*
 * mutex_3_10: the kernel mutex as Linux 3.10 had it, the mutex that seed 001 (T. Chen, LKML,
 * 13 June 2013, on 3.10-rc4) measured against the rw-semaphore. The modern `mutex` (mutex.c)
 * is a different lock: an owner word with flags, OSQ spinning and hand-off.
 *
 * Source: kernel/mutex.c and arch/x86/include/asm/mutex_64.h of Linux 3.10 (I. Molnar 2006;
 * adaptive spinning, P. Zijlstra 2009; "mutex: Make more scalable by doing less atomic
 * operations" and "mutex: Queue mutex spinners with MCS lock to reduce cacheline contention",
 * W. Long, April 2013, both in 3.10).
 *
 * State: `count`  1 free, 0 locked, negative locked with (possible) sleepers. The owner task
 * is kept beside it in `owner`, non-atomically with the count (set after taking the lock,
 * cleared before releasing it): only a hint for spinners. The wait list (FIFO) is protected by
 * `wait_lock`; `mcs` is the tail of the MCS queue of spinners (mspin.h).
 *
 *   lock     fast path: atomic decrement (x86 `lock decl`); taken if the result is >= 0 (1->0).
 *            A failed decrement leaves the count below 0; the slow path repairs it.
 *   slow     optimistic spin (the `spin` tunable, CONFIG_MUTEX_SPIN_ON_OWNER): only if the
 *            owner is running (or unknown). Each round: take the MCS queue, spin while the
 *            owner is unchanged and running, then try count 1->0 with a cmpxchg (only if a
 *            read shows 1), leave the MCS queue. Stop when the owner went to sleep or
 *            changed hands, or, with no owner visible, when need_resched() would be true.
 *            Then: join the FIFO under wait_lock; loop { if count >= 0, xchg(count, -1): it
 *            was 1 -> the lock is ours; else sleep }. -1 makes the holder's unlock take the
 *            slow path and wake us. Once ours: leave the list; if it is empty, count = 0.
 *   unlock   clear owner; atomic increment (x86 `lock incl`); done if the result is > 0
 *            (0->1). Else the slow path: under wait_lock, count = 1 (x86 leaves the count
 *            locked when the fast path fails), wake the first waiter, which must then win
 *            the lock like anyone else.
 * No hand-off and no PICKUP: a spinner or a newcomer may take the lock between the unlock and
 * the woken waiter's xchg, any number of times (unbounded stealing).
 *
 * Ordering: taking the lock is an ACQUIRE RMW on count (the decrement, cmpxchg or xchg; a
 * full barrier on x86), releasing it a RELEASE RMW or, in the slow path, a RELEASE store of 1;
 * each acquire pairs with the release of the previous holder. wait_lock orders the list and
 * the waiter's task state; the woken waiter re-reads count under wait_lock.
 *
 * Userspace: an owner counts as running unless it sleeps in a lock (lock_task.h); spinning
 * stops after OSQ_SPIN_NS, standing in for need_resched() at the next scheduler tick. Sleep
 * and wake-up are a futex on the task's state (lock_task.h); like 3.10, the unlocker wakes under
 * wait_lock.
 */
#include <errno.h>

#include "lock_task.h"
#include "mspin.h"
#include "osq.h"
#include "raw_spinlock.h" /* wait_lock: the x86 ticket spinlock of 3.10 (raw_ticket_spin_*) */
#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

/* On the waiting thread's stack, as the kernel's; its wake-up is by task (lock_task_wake()). */
struct mutex_3_10_waiter {
	struct mutex_3_10_waiter *next;
	struct lock_task *task;
};

struct mutex_3_10 {
	atomic_t count;
	struct raw_ticket_spinlock wait_lock; /* a ticket lock, as on x86 in 3.10 */
	struct mutex_3_10_waiter *first, *last;
	struct lock_task *owner;
	struct mspin_node *mcs; /* the kernel's spin_mlock */
	bool spin;
};

_Static_assert(sizeof(struct mspin_node) <= LOCK_QNODE_BYTES, "mspin node fits a qnode");

/* Queue nodes: LOCK_QNODE_QUEUE the MCS spinner node, LOCK_QNODE_TASK the lock_task. */
#define MUTEX_3_10_MSPIN_NODE LOCK_QNODE_QUEUE

static inline void mutex_3_10_set_owner(struct mutex_3_10 *lock, struct lock_task *me)
{
	WRITE_ONCE(lock->owner, me);
}

/* The kernel's mutex_can_spin_on_owner(): spin only if the owner runs (or none is visible). */
static bool mutex_3_10_can_spin_on_owner(struct mutex_3_10 *lock)
{
	struct lock_task *owner = READ_ONCE(lock->owner);
	return owner == NULL || lock_task_running(owner);
}

/* Spin while `owner` holds the lock and runs; true if the lock has no owner now. */
static bool mutex_3_10_spin_on_owner(struct mutex_3_10 *lock, struct lock_task *owner,
				     u64 deadline)
{
	for (unsigned int i = 1; READ_ONCE(lock->owner) == owner; i++) {
		if (!lock_task_running(owner))
			break;
		if (spun_a_tick(i, deadline))
			break; /* need_resched() */
		cpu_relax();
	}
	return READ_ONCE(lock->owner) == NULL;
}

static bool mutex_3_10_optimistic_spin(struct mutex_3_10 *lock, struct lock_thread *self)
{
	struct mspin_node *node = lock_qnode(self, MUTEX_3_10_MSPIN_NODE, struct mspin_node);
	u64 deadline = osq_now_ns() + OSQ_SPIN_NS;

	if (!mutex_3_10_can_spin_on_owner(lock))
		return false;
	for (;;) {
		mspin_lock(&lock->mcs, node);
		struct lock_task *owner = READ_ONCE(lock->owner);
		if (owner && !mutex_3_10_spin_on_owner(lock, owner, deadline)) {
			mspin_unlock(&lock->mcs, node);
			return false;
		}
		/* Read first: a cmpxchg that must fail would still take the line exclusive. */
		if (atomic_read(&lock->count) == 1 &&
		    cmpxchg_acquire(&lock->count.counter, 1, 0) == 1) {
			mutex_3_10_set_owner(lock, lock_task_of(self));
			mspin_unlock(&lock->mcs, node);
			return true;
		}
		mspin_unlock(&lock->mcs, node);
		/* No owner visible: it may be between taking the lock and setting owner. */
		if (!owner && osq_now_ns() >= deadline)
			return false;
		cpu_relax();
	}
}

/* count >= 0 shows no sleeper; only then is the xchg worth it (MUTEX_SHOW_NO_WAITER). */
static inline bool mutex_3_10_xchg_take(struct mutex_3_10 *lock)
{
	return atomic_read(&lock->count) >= 0 &&
	       xchg_acquire(&lock->count.counter, -1) == 1;
}

static void mutex_3_10_lock_slowpath(struct mutex_3_10 *lock, struct lock_thread *self)
{
	struct mutex_3_10_waiter waiter;
	struct lock_task *me = lock_task_of(self);

	if (lock->spin && mutex_3_10_optimistic_spin(lock, self))
		return;

	raw_ticket_spin_lock(&lock->wait_lock);
	waiter.next = NULL;
	waiter.task = me;
	if (lock->last)
		lock->last->next = &waiter;
	else
		lock->first = &waiter;
	lock->last = &waiter;

	/* Try at once, even before sleeping: it also makes the holder's unlock wake us. */
	while (!mutex_3_10_xchg_take(lock)) {
		lock_task_set_blocked(me); /* under wait_lock: a wake after this is not lost */
		raw_ticket_spin_unlock(&lock->wait_lock);
		lock_task_schedule(me);
		raw_ticket_spin_lock(&lock->wait_lock);
	}
	lock_task_unblock(me);

	/* Ours: leave the list (FIFO, but not necessarily first: we may have stolen it). */
	struct mutex_3_10_waiter **link = &lock->first, *prev = NULL;
	while (*link != &waiter) {
		prev = *link;
		link = &(*link)->next;
	}
	*link = waiter.next;
	if (lock->last == &waiter)
		lock->last = prev;
	mutex_3_10_set_owner(lock, me);
	/* Nobody left to wake: let the next unlock take the fast path again. */
	if (lock->first == NULL)
		atomic_set(&lock->count, 0);
	raw_ticket_spin_unlock(&lock->wait_lock);
}

static void mutex_3_10_unlock_slowpath(struct mutex_3_10 *lock)
{
	raw_ticket_spin_lock(&lock->wait_lock);
	/* x86 keeps the lock locked when the fast path fails: free it here. */
	atomic_set_release(&lock->count, 1);
	struct mutex_3_10_waiter *first = lock->first;
	if (first)
		lock_task_wake(first->task); /* under wait_lock, as 3.10's */
	raw_ticket_spin_unlock(&lock->wait_lock);
}

static void mutex_3_10_lock(void *lockp, struct lock_thread *self)
{
	struct mutex_3_10 *lock = lockp;

	/* x86 `lock decl; jns`: 1 -> 0 is the fast path; ACQUIRE pairs with the unlock. */
	if (likely(__atomic_sub_fetch(&lock->count.counter, 1, __ATOMIC_ACQUIRE) >= 0)) {
		mutex_3_10_set_owner(lock, lock_task_of(self));
		return;
	}
	mutex_3_10_lock_slowpath(lock, self);
}

static bool mutex_3_10_trylock(void *lockp, struct lock_thread *self)
{
	struct mutex_3_10 *lock = lockp;

	if (cmpxchg_acquire(&lock->count.counter, 1, 0) != 1)
		return false;
	mutex_3_10_set_owner(lock, lock_task_of(self));
	return true;
}

static void mutex_3_10_unlock(void *lockp, struct lock_thread *self)
{
	struct mutex_3_10 *lock = lockp;
	(void)self;

	WRITE_ONCE(lock->owner, NULL);
	/* x86 `lock incl; jg`: 0 -> 1 is the fast path; RELEASE pairs with the next taker. */
	if (likely(__atomic_add_fetch(&lock->count.counter, 1, __ATOMIC_RELEASE) > 0))
		return;
	mutex_3_10_unlock_slowpath(lock);
}

static int mutex_3_10_init(void *lockp, const struct lock_init_args *args)
{
	struct mutex_3_10 *lock = lockp;
	atomic_set(&lock->count, 1);
	lock->spin = args->params[0] != 0;
	return 0;
}

static const struct lock_tunable mutex_3_10_tunables[] = {
	{ "spin", 1, 0, 1,
	  "optimistic spinning on a running owner through the MCS spinner queue (0: off, as "
	  "without CONFIG_MUTEX_SPIN_ON_OWNER)", NULL },
	LOCK_TUNABLES_END,
};

const struct lock_ops mutex_3_10_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "mutex_3_10",
	.family = "sleeping-kernel",
	.summary = "Linux 3.10 mutex: count 1/0/-1, MCS-queued spinning, FIFO sleepers, no hand-off",
	.source = "Linux 3.10 kernel/mutex.c + x86 asm/mutex_64.h (W. Long's MCS spinner queue, "
		  "April 2013); seed 001 (T. Chen, LKML, 13 June 2013)",
	.flags = LOCK_SPINS | LOCK_SLEEPS,
	.lock_size = sizeof(struct mutex_3_10),
	.tunables = mutex_3_10_tunables,
	.init = mutex_3_10_init,
	.lock = mutex_3_10_lock,
	.unlock = mutex_3_10_unlock,
	.trylock = mutex_3_10_trylock,
};
