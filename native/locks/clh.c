/* SPDX-License-Identifier: MIT */
/*
 * CLH queue lock.
 *
 * Sources: T. S. Craig, "Building FIFO and Priority-Queuing Spin Locks from Atomic Swap",
 * TR 93-02-02, University of Washington, 1993; P. Magnusson, A. Landin, E. Hagersten,
 * "Queue Locks on Cache Coherent Multiprocessors", IPPS 1994.
 *
 * State: `tail` points to the node of the last arrival. A node's `locked` is 1 while its owner
 * holds or waits for the lock. Each waiter spins on its *predecessor's* node (the queue is
 * implicit: nobody stores a next pointer), so lock is one xchg and unlock one store.
 *
 * Node recycling: on unlock a thread gives its node to its successor (who may still be
 * reading it) and takes its predecessor's node, which nobody reads any more. So the node a
 * thread enqueues wanders between threads; `self->lock_private` tracks the one it owns now.
 * The lock starts with one unlocked dummy node, allocated at init and freed at destroy
 * (after the run, when no thread reads any node).
 *
 * No trylock: reading the tail and CAS-ing it is open to ABA (the tail node can be released,
 * recycled by another thread and enqueued again between the read and the CAS), and the
 * published algorithm has none.
 *
 * Ordering: the xchg on tail is fully ordered (RELEASE publishes locked = 1 before anyone can
 * spin on it; ACQUIRE is not needed for it but the kernel idiom is a full xchg). The spin on
 * pred->locked is ACQUIRE, pairing with the RELEASE store of 0 in unlock.
 *
 * Waiting policy (wait.h): a waiter parks on its predecessor's `locked`, and the predecessor's
 * release of that node wakes it: one waiter per node, woken by the hand-over, in FIFO order.
 * A new owner wakes its parked successor early (lock_prewake), to be spinning by the release.
 */
#include <stdlib.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>
#include <locklab/wait.h>

struct clh_node {
	u32 locked;
	u32 parked;            /* 1 while the successor sleeps on `locked` (spin-then-park) */
	struct clh_node *pred; /* read back by the owner in unlock */
};

struct clh_lock {
	struct clh_node *tail;
	struct clh_node *initial_dummy; /* for destroy() only */
	struct lock_wait wait;
};

static struct clh_node *clh_my_node(struct lock_thread *self)
{
	if (unlikely(self->lock_private == NULL))
		self->lock_private = lock_qnode(self, LOCK_QNODE_QUEUE, struct clh_node);
	return self->lock_private;
}

static int clh_init(void *lockp, const struct lock_init_args *args)
{
	struct clh_lock *lock = lockp;
	lock_wait_configure(&lock->wait, args);
	lock->initial_dummy = calloc(1, sizeof(*lock->initial_dummy));
	if (lock->initial_dummy == NULL)
		return -12; /* -ENOMEM */
	lock->tail = lock->initial_dummy;
	return 0;
}

static void clh_destroy(void *lockp)
{
	struct clh_lock *lock = lockp;
	free(lock->initial_dummy);
}

/* The wait for the predecessor, out of line: tas.c says why (ttas_lock_contended()). Its
 * first read repeats the caller's, a hit on a line this CPU has just read. */
static __attribute__((noinline)) void clh_lock_contended(struct clh_lock *lock,
							 struct lock_thread *self,
							 struct clh_node *pred)
{
	lock_wait_cond_load_acquire(&lock->wait, self, &pred->locked, &pred->parked, VAL == 0);
}

static void clh_lock(void *lockp, struct lock_thread *self)
{
	struct clh_lock *lock = lockp;
	struct clh_node *node = clh_my_node(self);
	struct clh_node *pred;

	WRITE_ONCE(node->locked, 1);
	pred = xchg(&lock->tail, node);
	node->pred = pred;
	/* Pairs with the release in unlock. */
	if (unlikely(smp_load_acquire(&pred->locked) != 0))
		clh_lock_contended(lock, self, pred);
	lock_prewake(&lock->wait, self, &node->locked, &node->parked); /* our successor */
}

static void clh_unlock(void *lockp, struct lock_thread *self)
{
	struct clh_lock *lock = lockp;
	struct clh_node *node = self->lock_private;
	struct clh_node *pred = node->pred;

	smp_store_release(&node->locked, 0); /* our successor may now enter */
	/* The node is the successor's from here; a stale read of `parked` only wakes for nothing. */
	lock_unpark(&lock->wait, self, &node->locked, &node->parked, 1);
	self->lock_private = pred; /* nobody spins on pred any more: it is ours */
}

static const struct lock_tunable wait_tunables[] = { LOCK_WAIT_TUNABLES, LOCK_TUNABLES_END };

const struct lock_ops clh_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "clh",
	.family = "spin-queue",
	.summary = "CLH queue lock: FIFO, each waiter spins on its predecessor's node",
	.source = "Craig, UW TR 93-02-02 1993; Magnusson, Landin & Hagersten, IPPS 1994",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct clh_lock),
	.tunables = wait_tunables,
	.init = clh_init,
	.destroy = clh_destroy,
	.lock = clh_lock,
	.unlock = clh_unlock,
};
