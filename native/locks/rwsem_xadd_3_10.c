/* SPDX-License-Identifier: MIT */
/*
 * rwsem_xadd_3_10: the kernel's reader-writer semaphore as Linux 3.10 had it (the "xadd"
 * scheme), the rw-semaphore seed 001 measured (T. Chen, LKML, 13 June 2013, on 3.10-rc4),
 * with the seed's two tweaks as tunables. The modern `rwsem` (rwsem.c) is a different lock.
 *
 * Source: lib/rwsem.c (D. Howells 2001; writer lock stealing, A. Shi 2012 and M. Lespinasse,
 * "rwsem: implement support for write lock stealing on the fastpath" and the rest of his
 * series, Linux 3.10) and include/asm-generic/rwsem.h of Linux 3.10, with x86's test in
 * up_write (below). In 3.10 x86's down_write still went to the slow path on any count but 0,
 * as asm-generic does (Chen, 29 July 2013: "We went to the failed path within __down_write if
 * the count field is non zero"); testing only the active part came later. Tweak 1 follows
 * T. Chen's writer-spinning patch from the seed's thread (linux-mm, 29 July 2013), which
 * mainline took in 3.16.
 *
 * State: one signed 64-bit `count`:
 *   bits 0-31   active part: readers holding or trying, plus 1 for a writer (ACTIVE_BIAS = 1)
 *   bits 32-63  waiting part: WAITING_BIAS = -(1 << 32) while the wait list is not empty,
 *               and once more for a writer holding or trying (ACTIVE_WRITE_BIAS =
 *               WAITING_BIAS + ACTIVE_BIAS)
 * so 0 is free, > 0 is read-locked with nobody waiting, WAITING_BIAS is "waiters, none
 * active", and ACTIVE_WRITE_BIAS is "one writer, nobody waiting". No owner field (tweak 1
 * adds one), no flags. The wait list (FIFO) is protected by `wait_lock`.
 *
 *   down_read    add ACTIVE_READ_BIAS (xadd); taken if the result is > 0. Else
 *                down_read_failed: under wait_lock queue, take the bias back (adding
 *                WAITING_BIAS if the list was empty) in one update; if nobody is active, or
 *                only readers are and we were first in line, wake the front; sleep until a
 *                waker grants us the lock (it adds our bias for us).
 *   down_write   add ACTIVE_WRITE_BIAS (xadd); taken iff the result is exactly
 *                ACTIVE_WRITE_BIAS. Else down_write_failed: under wait_lock queue and take
 *                the bias back (adding WAITING_BIAS if the list was empty) in one update; if
 *                others were queued and the lock is only read-held, wake the readers at the
 *                front. Then loop: if the active part is 0, try cmpxchg(count, WAITING_BIAS,
 *                ACTIVE_WRITE_BIAS [+ WAITING_BIAS if others still wait]); else sleep until
 *                woken and the active part is 0. That cmpxchg does not care whether we are
 *                first in line, and a writer's fast path can win against it: lock stealing.
 *   up_read      subtract ACTIVE_READ_BIAS; if the result is negative with a zero active
 *                part (the last active locker left, waiters queued), rwsem_wake.
 *   up_write     subtract ACTIVE_WRITE_BIAS; the same test. That is x86's asm/rwsem.h
 *                (call_rwsem_wake returns at once while others are active); asm-generic
 *                calls rwsem_wake on any negative result and lets the wake sort it out.
 *   wake         (__rwsem_do_wake, under wait_lock) a writer at the front is woken but not
 *                granted, so others may steal. Readers at the front: grant the first one's
 *                bias at once and back off if a writer stole the lock meanwhile; then grant
 *                the whole run of readers up to the first queued writer, taking WAITING_BIAS
 *                off if that empties the list, and wake them.
 *
 * Tunables (both off in 3.10):
 *   writer_spin  tweak 1: writers publish themselves in `owner`, and a failed down_write,
 *                after taking its bias off, spins (through the 3.10 mutex's MCS spinner
 *                queue, mspin.h) while the owner is an active writer that runs, trying
 *                cmpxchg 0 -> ACTIVE_WRITE_BIAS or WAITING_BIAS -> WAITING_BIAS +
 *                ACTIVE_WRITE_BIAS; it queues only when that fails.
 *   skip_active  tweak 2: down_write first reads count; if the active part is not 0 it goes
 *                straight to down_write_failed without adding the bias, so that path has
 *                nothing to take off. That saves the xadd and the update that undoes it: two
 *                atomics when others already wait, one when the list is empty (WAITING_BIAS
 *                must still be added then).
 * The seed gives no code for either tweak. Tweak 1's spinning before queueing follows
 * Chen's patch of 29 July 2013 (his June version, which the seed measured, is not public);
 * tweak 2 is written from the seed's description.
 *
 * Ordering: taking the lock is a fully ordered RMW on count (xadd, cmpxchg: a locked
 * instruction on x86), as is every release (xadd). A granted reader's `granted` is set with a
 * RELEASE store after its bias was added, pairing with the reader's ACQUIRE load. A sleeping
 * writer marks its task BLOCKED with a full barrier before it re-reads count, and wakers
 * update count before lock_task_wake()'s barrier and its read of the state, so either the
 * writer sees the new count or the waker sees BLOCKED and wakes it (set_current_state()
 * against wake_up_process(), lock_task.h).
 *
 * Userspace: futexes for sleeping; "owner running" from lock_task.h; a spin stops after
 * OSQ_SPIN_NS, standing in for need_resched(). Like 3.10, wakers wake under wait_lock.
 */
#include <errno.h>

#include "lock_task.h"
#include "mspin.h"
#include "osq.h"
#include "raw_spinlock.h" /* wait_lock: the x86 ticket spinlock of 3.10 (raw_ticket_spin_*) */
#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

#define RWSEM_ACTIVE_BIAS 1L
#define RWSEM_ACTIVE_MASK 0xffffffffL
#define RWSEM_WAITING_BIAS (-RWSEM_ACTIVE_MASK - 1)
#define RWSEM_ACTIVE_READ_BIAS RWSEM_ACTIVE_BIAS
#define RWSEM_ACTIVE_WRITE_BIAS (RWSEM_WAITING_BIAS + RWSEM_ACTIVE_BIAS)

/* Unit tests count the RMWs on count through this hook. */
#ifndef RWSEM_3_10_COUNT_RMW_HOOK
#define RWSEM_3_10_COUNT_RMW_HOOK() ((void)0)
#endif

enum rwsem_3_10_waiter_type { WAITING_FOR_WRITE, WAITING_FOR_READ };

/* On the waiting thread's stack, as the kernel's; its wake-up is by task (lock_task_wake()). */
struct rwsem_3_10_waiter {
	struct rwsem_3_10_waiter *next;
	struct lock_task *task;
	enum rwsem_3_10_waiter_type type;
	u32 granted; /* a reader's: the waker added its bias (3.10 clears waiter.task) */
};

struct rwsem_3_10 {
	long count;
	struct raw_ticket_spinlock wait_lock; /* a ticket lock, as on x86 in 3.10 */
	struct rwsem_3_10_waiter *first, *last;
	/* Tweak 1 only. */
	struct lock_task *owner;
	struct mspin_node *mcs;
	/* The tweaks as tunables, which 3.10 compiled in: on a line of their own, so that reading
	 * them costs no transfer of the count's line (rwsem.c says what that cost). */
	alignas(LOCKLAB_CACHELINE) bool writer_spin;
	bool skip_active;
};
_Static_assert(offsetof(struct rwsem_3_10, writer_spin) / LOCKLAB_CACHELINE !=
			       offsetof(struct rwsem_3_10, count) / LOCKLAB_CACHELINE &&
		       offsetof(struct rwsem_3_10, skip_active) / LOCKLAB_CACHELINE !=
			       offsetof(struct rwsem_3_10, count) / LOCKLAB_CACHELINE,
	       "the tunables stay off the count's line");

/* Queue nodes: LOCK_QNODE_QUEUE the MCS spinner node, LOCK_QNODE_TASK the lock_task. */
#define RWSEM_3_10_MSPIN_NODE LOCK_QNODE_QUEUE

/* rwsem_atomic_update(): add, return the new value; fully ordered. */
static inline long rwsem_atomic_update(long delta, struct rwsem_3_10 *sem)
{
	RWSEM_3_10_COUNT_RMW_HOOK();
	return __atomic_add_fetch(&sem->count, delta, __ATOMIC_SEQ_CST);
}

static inline long rwsem_cmpxchg(struct rwsem_3_10 *sem, long old, long new)
{
	RWSEM_3_10_COUNT_RMW_HOOK();
	return cmpxchg(&sem->count, old, new);
}

static inline bool rwsem_list_is_singular(const struct rwsem_3_10 *sem)
{
	return sem->first != NULL && sem->first == sem->last;
}

/* ---- waking (wait_lock held, list not empty) ----------------------------------------------- */

enum rwsem_3_10_wake_type {
	RWSEM_WAKE_ANY,     /* wake whatever is at the front */
	RWSEM_WAKE_READERS, /* wake readers only */
};

/* wake_up_process(): its barrier orders the waker's count update before the wake. */
static inline void rwsem_3_10_wake_writer(struct rwsem_3_10_waiter *waiter)
{
	lock_task_wake(waiter->task);
}

static void rwsem_3_10_do_wake(struct rwsem_3_10 *sem, enum rwsem_3_10_wake_type type)
{
	struct rwsem_3_10_waiter *waiter = sem->first;

	if (waiter->type == WAITING_FOR_WRITE) {
		/* Woken, not granted: other writers may still steal the lock. */
		if (type == RWSEM_WAKE_ANY)
			rwsem_3_10_wake_writer(waiter);
		return;
	}

	/* Grant the first reader before counting the rest, backing off if a writer stole it. */
	long adjustment = RWSEM_ACTIVE_READ_BIAS;
	for (;;) {
		long oldcount = rwsem_atomic_update(adjustment, sem) - adjustment;
		if (likely(oldcount >= RWSEM_WAITING_BIAS))
			break;
		/* A writer holds it. Undo; retry only if it left meanwhile. */
		if (rwsem_atomic_update(-adjustment, sem) & RWSEM_ACTIVE_MASK)
			return;
	}

	/* Every reader up to the first queued writer. */
	long woken = 0;
	struct rwsem_3_10_waiter *next = waiter;
	while (next && next->type == WAITING_FOR_READ) {
		woken++;
		next = next->next;
	}
	adjustment = woken * RWSEM_ACTIVE_READ_BIAS - adjustment;
	if (next == NULL)
		adjustment -= RWSEM_WAITING_BIAS; /* the list becomes empty */
	if (adjustment)
		rwsem_atomic_update(adjustment, sem);

	/* Unlink first: a granted reader may return at once, and its waiter (on its stack) with it. */
	sem->first = next;
	if (next == NULL)
		sem->last = NULL;
	while (woken--) {
		struct rwsem_3_10_waiter *reader = waiter;
		struct lock_task *task = reader->task; /* it may leave once granted */
		waiter = waiter->next;
		smp_store_release(&reader->granted, 1); /* pairs with the reader's ACQUIRE */
		lock_task_wake(task);
	}
}

static void rwsem_3_10_wake(struct rwsem_3_10 *sem)
{
	raw_ticket_spin_lock(&sem->wait_lock);
	if (sem->first)
		rwsem_3_10_do_wake(sem, RWSEM_WAKE_ANY);
	raw_ticket_spin_unlock(&sem->wait_lock);
}

static void rwsem_3_10_add_waiter(struct rwsem_3_10 *sem, struct rwsem_3_10_waiter *waiter)
{
	waiter->next = NULL;
	if (sem->last)
		sem->last->next = waiter;
	else
		sem->first = waiter;
	sem->last = waiter;
}

static void rwsem_3_10_del_waiter(struct rwsem_3_10 *sem, struct rwsem_3_10_waiter *waiter)
{
	struct rwsem_3_10_waiter **link = &sem->first, *prev = NULL;
	while (*link != waiter) {
		prev = *link;
		link = &(*link)->next;
	}
	*link = waiter->next;
	if (sem->last == waiter)
		sem->last = prev;
}

/* ---- readers ----------------------------------------------------------------------------- */

static void rwsem_3_10_down_read_failed(struct rwsem_3_10 *sem, struct lock_thread *self)
{
	struct rwsem_3_10_waiter waiter;
	struct lock_task *me = lock_task_of(self);
	long adjustment = -RWSEM_ACTIVE_READ_BIAS;

	waiter.task = me;
	waiter.type = WAITING_FOR_READ;
	waiter.granted = 0;

	raw_ticket_spin_lock(&sem->wait_lock);
	if (sem->first == NULL)
		adjustment += RWSEM_WAITING_BIAS;
	rwsem_3_10_add_waiter(sem, &waiter);

	/* Waiting now, no longer actively locking. */
	long count = rwsem_atomic_update(adjustment, sem);

	/*
	 * Nobody active: wake the front. Only readers active and we were first in line: wake
	 * ourselves (and the readers behind us) to join them.
	 */
	if (count == RWSEM_WAITING_BIAS ||
	    (count > RWSEM_WAITING_BIAS && adjustment != -RWSEM_ACTIVE_READ_BIAS))
		rwsem_3_10_do_wake(sem, RWSEM_WAKE_ANY);
	raw_ticket_spin_unlock(&sem->wait_lock);

	lock_task_wait_for(me, &waiter.granted);
}

static void rwsem_3_10_down_read(void *lockp, struct lock_thread *self)
{
	struct rwsem_3_10 *sem = lockp;

	if (unlikely(rwsem_atomic_update(RWSEM_ACTIVE_READ_BIAS, sem) <= 0))
		rwsem_3_10_down_read_failed(sem, self);
}

static void rwsem_3_10_up_read(void *lockp, struct lock_thread *self)
{
	struct rwsem_3_10 *sem = lockp;
	(void)self;

	long count = rwsem_atomic_update(-RWSEM_ACTIVE_READ_BIAS, sem);
	if (unlikely(count < 0 && (count & RWSEM_ACTIVE_MASK) == 0))
		rwsem_3_10_wake(sem);
}

/* ---- writers: tweak 1, spinning on a running writer owner --------------------------------- */

/* Chen's rwsem_try_write_lock_unqueued(): take it if nobody is active, queued or not. */
static bool rwsem_3_10_try_write_lock_unqueued(struct rwsem_3_10 *sem)
{
	long count = READ_ONCE(sem->count);

	while (count == 0 || count == RWSEM_WAITING_BIAS) {
		long old = rwsem_cmpxchg(sem, count, count + RWSEM_ACTIVE_WRITE_BIAS);
		if (old == count)
			return true;
		count = old;
	}
	return false;
}

static bool rwsem_3_10_spin_on_owner(struct rwsem_3_10 *sem, struct lock_task *owner,
				     u64 deadline)
{
	for (unsigned int i = 1; READ_ONCE(sem->owner) == owner; i++) {
		if (!lock_task_running(owner))
			break;
		if (spun_a_tick(i, deadline))
			break; /* need_resched() */
		cpu_relax();
	}
	return READ_ONCE(sem->owner) == NULL;
}

static bool rwsem_3_10_optimistic_spin(struct rwsem_3_10 *sem, struct lock_thread *self)
{
	struct mspin_node *node = lock_qnode(self, RWSEM_3_10_MSPIN_NODE, struct mspin_node);
	u64 deadline = osq_now_ns() + OSQ_SPIN_NS;

	/* Spin only on an active writer that runs: readers leave no owner to watch. */
	struct lock_task *owner = READ_ONCE(sem->owner);
	if (owner == NULL || !lock_task_running(owner))
		return false;
	for (;;) {
		mspin_lock(&sem->mcs, node);
		owner = READ_ONCE(sem->owner);
		if (owner && !rwsem_3_10_spin_on_owner(sem, owner, deadline)) {
			mspin_unlock(&sem->mcs, node);
			return false;
		}
		if (rwsem_3_10_try_write_lock_unqueued(sem)) {
			WRITE_ONCE(sem->owner, lock_task_of(self));
			mspin_unlock(&sem->mcs, node);
			return true;
		}
		mspin_unlock(&sem->mcs, node);
		if (!owner && osq_now_ns() >= deadline)
			return false;
		cpu_relax();
	}
}

/* ---- writers ----------------------------------------------------------------------------- */

/* The queued writer's attempt (wait_lock held): only from "waiters, none active". */
static bool rwsem_3_10_try_write_lock(struct rwsem_3_10 *sem, long count)
{
	if (count & RWSEM_ACTIVE_MASK)
		return false;
	long new = RWSEM_ACTIVE_WRITE_BIAS;
	if (!rwsem_list_is_singular(sem))
		new += RWSEM_WAITING_BIAS; /* others still wait after we leave the list */
	return rwsem_cmpxchg(sem, RWSEM_WAITING_BIAS, new) == RWSEM_WAITING_BIAS;
}

/*
 * `biased`: our ACTIVE_WRITE_BIAS is in count (the fast path added it) and must come off;
 * false with skip_active, whose fast path never touched count.
 */
static void rwsem_3_10_down_write_failed(struct rwsem_3_10 *sem, struct lock_thread *self,
					 bool biased)
{
	struct rwsem_3_10_waiter waiter;
	struct lock_task *me = lock_task_of(self);
	long adjustment = biased ? -RWSEM_ACTIVE_WRITE_BIAS : 0;
	long count = 0;

	if (sem->writer_spin) {
		/* Tweak 1: stop actively locking first, then spin on the owner. */
		if (adjustment)
			rwsem_atomic_update(adjustment, sem);
		adjustment = 0;
		if (rwsem_3_10_optimistic_spin(sem, self))
			return;
	}

	waiter.task = me;
	waiter.type = WAITING_FOR_WRITE;

	raw_ticket_spin_lock(&sem->wait_lock);
	bool others_waiting = sem->first != NULL;
	if (!others_waiting)
		adjustment += RWSEM_WAITING_BIAS;
	rwsem_3_10_add_waiter(sem, &waiter);

	/* Waiting now, no longer actively locking: one update does both. */
	if (adjustment)
		count = rwsem_atomic_update(adjustment, sem);
	else
		count = __atomic_load_n(&sem->count, __ATOMIC_SEQ_CST);

	/* Others queued before us and no writer active: readers hold it; wake those ahead. */
	if (others_waiting && count > RWSEM_WAITING_BIAS)
		rwsem_3_10_do_wake(sem, RWSEM_WAKE_READERS);

	lock_task_block(me); /* set_task_state(): wakes from here on are seen */
	for (;;) {
		if (rwsem_3_10_try_write_lock(sem, count))
			break;
		raw_ticket_spin_unlock(&sem->wait_lock);

		/* Sleep until nobody is active; a wake-up alone is only a hint. */
		do {
			lock_task_schedule(me);
			lock_task_block(me); /* set_task_state(): a full barrier before the read */
			count = __atomic_load_n(&sem->count, __ATOMIC_SEQ_CST);
		} while (count & RWSEM_ACTIVE_MASK);

		raw_ticket_spin_lock(&sem->wait_lock);
	}
	rwsem_3_10_del_waiter(sem, &waiter);
	if (sem->writer_spin)
		WRITE_ONCE(sem->owner, me);
	raw_ticket_spin_unlock(&sem->wait_lock);
	lock_task_unblock(me);
}

/*
 * The fast path alone, for the unit tests: true if taken; else *biased says whether our
 * ACTIVE_WRITE_BIAS was added (3.10) or count was left alone (skip_active saw it active).
 */
static bool rwsem_3_10_down_write_fast(struct rwsem_3_10 *sem, bool *biased)
{
	/* Tweak 2: an active lock makes the xadd fail; do not touch count at all. */
	if (sem->skip_active && (READ_ONCE(sem->count) & RWSEM_ACTIVE_MASK)) {
		*biased = false;
		return false;
	}
	*biased = true;
	return rwsem_atomic_update(RWSEM_ACTIVE_WRITE_BIAS, sem) == RWSEM_ACTIVE_WRITE_BIAS;
}

static void rwsem_3_10_down_write(void *lockp, struct lock_thread *self)
{
	struct rwsem_3_10 *sem = lockp;
	bool biased;

	if (likely(rwsem_3_10_down_write_fast(sem, &biased))) {
		if (sem->writer_spin)
			WRITE_ONCE(sem->owner, lock_task_of(self));
		return;
	}
	rwsem_3_10_down_write_failed(sem, self, biased);
}

static bool rwsem_3_10_down_write_trylock(void *lockp, struct lock_thread *self)
{
	struct rwsem_3_10 *sem = lockp;

	if (rwsem_cmpxchg(sem, 0, RWSEM_ACTIVE_WRITE_BIAS) != 0)
		return false;
	if (sem->writer_spin)
		WRITE_ONCE(sem->owner, lock_task_of(self));
	return true;
}

static void rwsem_3_10_up_write(void *lockp, struct lock_thread *self)
{
	struct rwsem_3_10 *sem = lockp;
	(void)self;

	/* Clear it before releasing: after, it could be the next writer's. */
	if (sem->writer_spin)
		WRITE_ONCE(sem->owner, NULL);
	long count = rwsem_atomic_update(-RWSEM_ACTIVE_WRITE_BIAS, sem);
	if (unlikely(count < 0 && (count & RWSEM_ACTIVE_MASK) == 0))
		rwsem_3_10_wake(sem);
}

enum { PARAM_WRITER_SPIN, PARAM_SKIP_ACTIVE };

static int rwsem_3_10_init(void *lockp, const struct lock_init_args *args)
{
	struct rwsem_3_10 *sem = lockp;
	sem->writer_spin = args->params[PARAM_WRITER_SPIN] != 0;
	sem->skip_active = args->params[PARAM_SKIP_ACTIVE] != 0;
	return 0;
}

static const struct lock_tunable rwsem_3_10_tunables[] = {
	[PARAM_WRITER_SPIN] = { "writer_spin", 0, 0, 1,
				"seed 001 tweak 1: writer owner field and optimistic spinning "
				"on a running writer owner (mainline from 3.16)", NULL },
	[PARAM_SKIP_ACTIVE] = { "skip_active", 0, 0, 1,
				"seed 001 tweak 2: down_write on an active sem goes straight to "
				"down_write_failed without adding (and removing) the bias", NULL },
	LOCK_TUNABLES_END,
};

const struct lock_ops rwsem_xadd_3_10_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "rwsem_xadd_3_10",
	.family = "sleeping-kernel",
	.summary = "Linux 3.10 xadd rw-semaphore: biased count, lock stealing, no owner/spinning",
	.source = "Linux 3.10 lib/rwsem.c + asm-generic/rwsem.h (M. Lespinasse's write lock "
		  "stealing, 3.10); tweaks: T. Chen, seed 001 (LKML, 13 June 2013)",
	.flags = LOCK_SLEEPS | LOCK_READER_WRITER,
	.lock_size = sizeof(struct rwsem_3_10),
	.tunables = rwsem_3_10_tunables,
	.init = rwsem_3_10_init,
	.lock = rwsem_3_10_down_write,
	.unlock = rwsem_3_10_up_write,
	.trylock = rwsem_3_10_down_write_trylock,
	.read_lock = rwsem_3_10_down_read,
	.read_unlock = rwsem_3_10_up_read,
};
