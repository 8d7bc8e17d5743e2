/* SPDX-License-Identifier: MIT */
/*
 * bouncing_ticket - a deliberately DEADLOCKING ticket lock whose waiters keep the ticket line
 * bouncing. The test suite uses it to prove that a simulated run whose virtual time crawls
 * (every poll is a line transfer, so the virtual watchdog lies hours of host time away) still
 * ends, on the simulator's limit on host time without progress.
 *
 * Uncontended it works (the simulator's one-writer check of a lock passes). Its unlock forgets
 * to hand over when someone waits, so the second writer to queue waits for good; each waiter
 * polls with a read-modify-write of the ticket line (a "did anyone leave" cmpxchg that never
 * swaps), so the line moves on every poll and no waiter is ever parked.
 */
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct bouncing_ticket_lock {
	u32 next;  /* the next ticket to hand out */
	u32 owner; /* the ticket now served; same line as next, on purpose */
};

static void bouncing_ticket_lock(void *lockp, struct lock_thread *self)
{
	struct bouncing_ticket_lock *lock = lockp;
	(void)self;
	u32 ticket = __atomic_fetch_add(&lock->next, 1, __ATOMIC_ACQUIRE);
	/* An RMW per poll, not a load: the line bounces between the waiters. */
	while (cmpxchg_acquire(&lock->owner, ticket, ticket) != ticket)
		cpu_relax();
}

static void bouncing_ticket_unlock(void *lockp, struct lock_thread *self)
{
	struct bouncing_ticket_lock *lock = lockp;
	(void)self;
	u32 served = READ_ONCE(lock->owner);
	/* BUG on purpose: a waiter (a ticket handed out after ours) is never served. */
	if (READ_ONCE(lock->next) == served + 1)
		smp_store_release(&lock->owner, served + 1);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "bouncing_ticket",
	.family = "test-broken",
	.summary = "BROKEN on purpose: a ticket lock that never serves a waiter, whose waiters "
		   "keep its line bouncing",
	.source = "locklab test suite",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct bouncing_ticket_lock),
	.tunables = no_tunables,
	.lock = bouncing_ticket_lock,
	.unlock = bouncing_ticket_unlock,
};
