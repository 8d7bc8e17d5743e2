/* SPDX-License-Identifier: MIT */
/*
 * MCS queue lock.
 *
 * Source: J. M. Mellor-Crummey, M. L. Scott, "Algorithms for Scalable Synchronization on
 * Shared-Memory Multiprocessors", ACM TOCS 9(1), 1991, section 2.4 (the list-based queuing
 * lock). The kernel's kernel/locking/mcs_spinlock.h and qspinlock's queue are built on it.
 *
 * State: `tail` points to the last waiter's node, NULL when the lock is free. Each waiter
 * spins on `locked` in its own node, so a release touches exactly one remote cache line.
 *
 *   lock:    init my node; prev = xchg(tail, me); if prev, link prev->next = me and spin on
 *            my->locked until the predecessor hands over.
 *   unlock:  if no successor is linked yet, try cmpxchg(tail, me, NULL); if that fails a
 *            successor is between its xchg and its link, so wait for my->next; then hand
 *            over with next->locked = 1.
 *
 * Ordering:
 *   - the xchg on tail is fully ordered: RELEASE publishes my node's init before anyone can
 *     find it, ACQUIRE (when prev == NULL) pairs with the cmpxchg_release in unlock;
 *   - prev->next is stored RELEASE and read ACQUIRE, so the successor's init of its `locked`
 *     field happens before the predecessor's hand-over store to it;
 *   - the hand-over is RELEASE, the spin on my->locked ACQUIRE: the critical section passes.
 * The node is the thread's queue node 0, never allocated in the hot path.
 *
 * Waiting policy (wait.h): a waiter parks on its own node's `locked`, and its predecessor's
 * hand-over store wakes it, so the queue's FIFO order is untouched. A waiter that becomes
 * the owner wakes its parked successor early (lock_prewake_node), so that the successor is up
 * and spinning by the hand-over. The unlocker's wait for a
 * successor to link itself has nobody to wake it: under yield and spin-then-park it yields
 * once its budget is spent, since the successor may be preempted between xchg and link.
 */
#include <stddef.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>
#include <locklab/wait.h>

struct mcs_node {
	struct mcs_node *next;
	u32 locked; /* 1 once the predecessor has handed the lock over */
	u32 parked; /* 1 while the waiter sleeps on `locked` (spin-then-park) */
};

struct mcs_lock {
	struct mcs_node *tail;
	struct lock_wait wait;
};

static int mcs_init(void *lockp, const struct lock_init_args *args)
{
	struct mcs_lock *lock = lockp;
	lock_wait_configure(&lock->wait, args);
	return 0;
}

static void mcs_lock(void *lockp, struct lock_thread *self)
{
	struct mcs_lock *lock = lockp;
	struct mcs_node *node = lock_qnode(self, LOCK_QNODE_QUEUE, struct mcs_node);
	struct mcs_node *prev;

	node->next = NULL;
	node->locked = 0;

	prev = xchg(&lock->tail, node);
	if (likely(prev == NULL))
		return; /* queue was empty: we hold the lock */

	smp_store_release(&prev->next, node); /* pairs with smp_load_acquire(&node->next) */
	/* Pairs with the hand-over in unlock. */
	lock_wait_node_load_acquire(&lock->wait, self, &node->locked, &node->parked, VAL);
	struct mcs_node *next = READ_ONCE(node->next);
	if (next != NULL)
		lock_prewake_node(&lock->wait, self, &next->locked, &next->parked);
}

static bool mcs_trylock(void *lockp, struct lock_thread *self)
{
	struct mcs_lock *lock = lockp;
	struct mcs_node *node = lock_qnode(self, LOCK_QNODE_QUEUE, struct mcs_node);

	node->next = NULL;
	node->locked = 0;
	return cmpxchg_acquire(&lock->tail, NULL, node) == NULL;
}

static void mcs_unlock(void *lockp, struct lock_thread *self)
{
	struct mcs_lock *lock = lockp;
	struct mcs_node *node = lock_qnode(self, LOCK_QNODE_QUEUE, struct mcs_node);
	struct mcs_node *next = smp_load_acquire(&node->next);

	if (likely(next == NULL)) {
		/* No successor visible: if we are still the tail, the lock becomes free. */
		if (cmpxchg_release(&lock->tail, node, NULL) == node)
			return;
		/* A successor swapped the tail but has not linked itself yet. */
		struct lock_wait_budget budget = LOCK_WAIT_BUDGET_INIT;
		while ((next = smp_load_acquire(&node->next)) == NULL)
			lock_wait_pause_unwoken(&lock->wait, &budget);
	}
	smp_store_release(&next->locked, 1);
	lock_unpark_node(&lock->wait, self, &next->locked, &next->parked);
}

static const struct lock_tunable wait_tunables[] = { LOCK_WAIT_TUNABLES, LOCK_TUNABLES_END };

const struct lock_ops mcs_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "mcs",
	.family = "spin-queue",
	.summary = "MCS queue lock: FIFO, each waiter spins on its own node",
	.source = "Mellor-Crummey & Scott, ACM TOCS 9(1) 1991, sec. 2.4",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct mcs_lock),
	.tunables = wait_tunables,
	.init = mcs_init,
	.lock = mcs_lock,
	.unlock = mcs_unlock,
	.trylock = mcs_trylock,
};
