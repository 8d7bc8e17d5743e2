/* SPDX-License-Identifier: MIT */
/*
 * osq.h - the optimistic spin queue (OSQ) of the kernel's mutex and rwsem: an MCS-like queue of
 * would-be spinners, so that only its head spins on the lock owner. Unlike MCS, a queued
 * spinner can leave the queue (it must reschedule, or its predecessor stopped running), which
 * is why the nodes are per thread and never freed, and why leaving takes three steps.
 *
 * Source: kernel/locking/osq_lock.c (W. Long, J. Lynch, P. Zijlstra, 2014); notes (c).
 *
 * State: `tail` is the last node's thread index + 1 (0: empty), so a node can be found from a
 * tail value. A node: next, prev, locked (1 once its predecessor handed over).
 *   lock    init my node; old = xchg(tail, me); empty -> we hold it. Else link behind prev and
 *           spin on my locked until granted or until I must stop; stopping unqueues:
 *           A  unlink from prev: cmpxchg(prev->next, me, NULL); if that fails prev is handing
 *              over to me right now, so wait for it (we got the lock after all);
 *           B  find my successor: if I am the tail, cmpxchg the tail back to prev (no one
 *              behind); else wait for my next and take it (xchg next, NULL);
 *           C  link prev->next = next and next->prev = prev.
 *   unlock  cmpxchg(tail, me, 0) if nobody is behind; else hand over to next (locked = 1).
 * The kernel stops on need_resched() or a preempted predecessor vCPU. Userspace sees neither:
 * a spinner stops after OSQ_SPIN_NS, standing in for the next scheduler tick.
 *
 * Ordering: xchg on tail is fully ordered (publishes my node); the hand-over is RELEASE and
 * the spin on locked ACQUIRE, so the OSQ holder sees its predecessor's spinning state.
 */
#ifndef LOCKLAB_OSQ_H
#define LOCKLAB_OSQ_H

#include <time.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

#define OSQ_MAX_THREADS 4096
#define OSQ_SPIN_NS 1000000u

struct optimistic_spin_node {
	struct optimistic_spin_node *next, *prev;
	int locked;
	unsigned int index; /* thread index + 1, as encoded in the tail */
};

struct optimistic_spin_queue {
	u32 tail;
};

/* Any thread's node from its index, as the kernel finds a CPU's per-CPU node. */
static struct optimistic_spin_node *osq_nodes[OSQ_MAX_THREADS];

static inline u64 osq_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

/*
 * The stand-in for need_resched() in every owner and queue spin: a tick's worth (OSQ_SPIN_NS)
 * since the spin began, the clock read once in 64 rounds, not per round.
 */
static inline bool spun_a_tick(unsigned int round, u64 deadline)
{
	return (round & 63) == 0 && osq_now_ns() >= deadline;
}

static inline struct optimistic_spin_node *osq_decode(u32 encoded)
{
	return READ_ONCE(osq_nodes[encoded - 1]);
}

/* Step B: return my successor once it is linked, or NULL if I was the tail (now prev). */
static inline struct optimistic_spin_node *osq_wait_next(struct optimistic_spin_queue *lock,
							 struct optimistic_spin_node *node,
							 struct optimistic_spin_node *prev)
{
	u32 curr = node->index;
	u32 old = prev ? READ_ONCE(prev->index) : 0;

	for (;;) {
		if (READ_ONCE(lock->tail) == curr &&
		    __atomic_compare_exchange_n(&lock->tail, &curr, old, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return NULL; /* I was last: the tail is prev (or empty) again */
		curr = READ_ONCE(node->index);
		if (READ_ONCE(node->next)) {
			struct optimistic_spin_node *next = xchg(&node->next, NULL);
			if (next)
				return next;
		}
		cpu_relax();
	}
}

static inline bool osq_lock(struct optimistic_spin_queue *lock, struct lock_thread *self)
{
	struct optimistic_spin_node *node = lock_qnode(self, LOCK_QNODE_QUEUE, struct optimistic_spin_node);
	struct optimistic_spin_node *prev, *next;
	u32 curr = self->index + 1;

	/*
	 * Marked stores: a spinner that is unqueueing may still read this node's next through a
	 * stale prev pointer while we reuse it (the kernel's data_race() in step A); its cmpxchg
	 * then fails and it re-reads.
	 */
	WRITE_ONCE(node->locked, 0);
	WRITE_ONCE(node->next, NULL);
	WRITE_ONCE(node->index, curr); /* always the same value; read by unqueueing neighbours */
	/*
	 * The table is shared, 16 entries to a line: write it only when this thread's node is
	 * not there yet (once per thread), so that queueing stores nothing shared but the tail,
	 * as the kernel's per-CPU nodes need no table.
	 */
	if (READ_ONCE(osq_nodes[self->index]) != node)
		WRITE_ONCE(osq_nodes[self->index], node);

	u32 old = xchg(&lock->tail, curr);
	if (old == 0)
		return true;

	prev = osq_decode(old);
	WRITE_ONCE(node->prev, prev);
	/* prev->next is what prev's unlock and unqueue read: publish it last. */
	smp_store_release(&prev->next, node);

	u64 deadline = osq_now_ns() + OSQ_SPIN_NS;
	for (unsigned int i = 1; !smp_load_acquire(&node->locked); i++) {
		if (spun_a_tick(i, deadline))
			goto unqueue;
		cpu_relax();
	}
	return true;

unqueue:
	/* Step A: undo prev->next = node, unless prev is handing over to us right now. */
	for (;;) {
		prev = READ_ONCE(node->prev);
		struct optimistic_spin_node *expected = node;
		if (READ_ONCE(prev->next) == node &&
		    __atomic_compare_exchange_n(&prev->next, &expected, NULL, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			break;
		if (smp_load_acquire(&node->locked))
			return true; /* the hand-over won the race */
		cpu_relax();
		/* prev may have unqueued itself and given us a new prev: re-read it. */
	}
	/* Step B */
	next = osq_wait_next(lock, node, prev);
	if (!next)
		return false;
	/* Step C: prev <-> next; prev cannot leave meanwhile, its next is NULL. */
	WRITE_ONCE(next->prev, prev);
	smp_store_release(&prev->next, next);
	return false;
}

static inline void osq_unlock(struct optimistic_spin_queue *lock, struct lock_thread *self)
{
	struct optimistic_spin_node *node = lock_qnode(self, LOCK_QNODE_QUEUE, struct optimistic_spin_node);
	u32 curr = self->index + 1;

	if (likely(__atomic_compare_exchange_n(&lock->tail, &curr, 0, false, __ATOMIC_RELEASE,
					       __ATOMIC_RELAXED)))
		return;
	struct optimistic_spin_node *next = xchg(&node->next, NULL);
	if (next) {
		smp_store_release(&next->locked, 1);
		return;
	}
	next = osq_wait_next(lock, node, NULL);
	if (next)
		smp_store_release(&next->locked, 1);
}

#endif /* LOCKLAB_OSQ_H */
