/* SPDX-License-Identifier: MIT */
/*
 * Ticket lock.
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
 */
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct ticket_lock {
	u32 next_ticket;
	u32 now_serving;
};

static void ticket_lock(void *lockp, struct lock_thread *self)
{
	struct ticket_lock *lock = lockp;
	u32 ticket = __atomic_fetch_add(&lock->next_ticket, 1, __ATOMIC_RELAXED);
	(void)self;

	if (likely(smp_load_acquire(&lock->now_serving) == ticket))
		return;
	smp_cond_load_acquire(&lock->now_serving, VAL == ticket);
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
	(void)self;
	/* Only the holder writes now_serving, so a plain read + release store suffices. */
	smp_store_release(&lock->now_serving, READ_ONCE(lock->now_serving) + 1);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops ticket_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ticket",
	.family = "spin-fair",
	.summary = "ticket lock: fetch-and-add a ticket, spin until it is served (FIFO)",
	.source = "Mellor-Crummey & Scott, ACM TOCS 9(1) 1991, sec. 2.2",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct ticket_lock),
	.tunables = no_tunables,
	.lock = ticket_lock,
	.unlock = ticket_unlock,
	.trylock = ticket_trylock,
};
