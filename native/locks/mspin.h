/* SPDX-License-Identifier: MIT */
/*
 * mspin.h - the MCS queue of mutex spinners of Linux 3.10 (kernel/mutex.c, "mspin_lock"),
 * used by mutex_3_10 and by rwsem_xadd_3_10's writer spinning (seed 001's tweak 1, which
 * copied it from the mutex). Only the queue's head spins on the lock owner, so a crowd of
 * spinners does not hammer the owner's cache line.
 *
 * Source: W. Long, "mutex: Queue mutex spinners with MCS lock to reduce cacheline contention"
 * (Linux 3.10, April 2013). The OSQ (osq.h) replaced it in 3.15.
 *
 * Unlike the OSQ, a queued spinner cannot leave: it waits until its predecessor hands over,
 * however long that takes. In the kernel the spinners run with preemption disabled, so the
 * wait is short; here a preempted predecessor makes everyone behind it wait for the scheduler.
 * That is the lock's behaviour in userspace, measured rather than hidden.
 *
 * State: `tail` points at the last queued node (NULL: empty). A node: next, locked.
 *   lock    init my node; prev = xchg(tail, me); NULL -> mine. Else link prev->next = me and
 *           spin until prev sets my locked.
 *   unlock  no successor linked: cmpxchg(tail, me, NULL), done if it works; else wait for
 *           the successor to link itself, then set its locked.
 *
 * Ordering: the xchg on tail is fully ordered (it publishes my initialised node). 3.10 linked
 * and handed over with plain stores plus an smp_wmb() and spun with a plain load (acquire and
 * release came in 3.13, "locking/mcs: ..." by T. Chen, J. Low, W. Long); here the link and the
 * hand-over are RELEASE stores and the spin an ACQUIRE load, pairing with each other, which
 * is what C11 needs and compiles to the same plain moves on x86.
 */
#ifndef LOCKLAB_MSPIN_H
#define LOCKLAB_MSPIN_H

#include <locklab/kernel.h>

struct mspin_node {
	struct mspin_node *next;
	int locked; /* 1 once the predecessor handed over */
};

static inline void mspin_lock(struct mspin_node **tail, struct mspin_node *node)
{
	WRITE_ONCE(node->locked, 0);
	WRITE_ONCE(node->next, NULL);

	struct mspin_node *prev = xchg(tail, node);
	if (likely(prev == NULL))
		return;
	smp_store_release(&prev->next, node); /* pairs with the ACQUIRE read in mspin_unlock */
	while (!smp_load_acquire(&node->locked))
		cpu_relax();
}

static inline void mspin_unlock(struct mspin_node **tail, struct mspin_node *node)
{
	struct mspin_node *next = smp_load_acquire(&node->next);

	if (likely(next == NULL)) {
		if (cmpxchg(tail, node, NULL) == node)
			return;
		/* Someone swapped the tail but has not linked itself yet. */
		while ((next = smp_load_acquire(&node->next)) == NULL)
			cpu_relax();
	}
	smp_store_release(&next->locked, 1); /* pairs with the successor's ACQUIRE spin */
}

#endif /* LOCKLAB_MSPIN_H */
