/* SPDX-License-Identifier: MIT */
/*
 * Anderson's array-based queue lock.
 *
 * Source: T. E. Anderson, "The Performance of Spin Lock Alternatives for Shared-Memory
 * Multiprocessors", IEEE TPDS 1(1), 1990, section III.C; Herlihy & Shavit, AMP ch. 7.5.1.
 *
 * State: a ring of `nslots` flags, each on its own cache line, with nslots a power of two
 * >= the number of threads, and a counter `next_slot`. An arrival takes a slot with
 * fetch-and-add and spins on that slot's flag; the holder releases by raising the flag of the
 * following slot. Exactly one flag is raised at any time, so the ring is FIFO, and each
 * waiter spins on its own line like MCS, but with no pointers: the price is memory
 * proportional to the thread count, fixed at init.
 *
 * Ordering: the spin on my slot is ACQUIRE, pairing with the RELEASE that raises it. The
 * holder lowers its own flag before releasing the next one, so the lowering is ordered before
 * the slot comes round again (nslots acquisitions later, through the same release chain).
 *
 * Waiting policy (wait.h): a waiter parks on its own slot's flag, and the release that raises
 * the flag wakes it, so the ring's order is kept. A new owner wakes the next slot's parked
 * waiter early (lock_prewake), to be spinning by the release.
 */
#include <stdlib.h>
#include <string.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>
#include <locklab/wait.h>

struct anderson_slot {
	alignas(LOCKLAB_CACHELINE) u32 has_lock;
	u32 parked; /* 1 while the slot's waiter sleeps on `has_lock` (spin-then-park) */
};

struct anderson_lock {
	u32 next_slot;
	u32 slot_mask; /* nslots - 1 */
	struct anderson_slot *slots;
	struct lock_wait wait;
};

/* The slot a thread holds lives in its first queue node between lock and unlock. */
struct anderson_holder {
	u32 slot;
};

static int anderson_init(void *lockp, const struct lock_init_args *args)
{
	struct anderson_lock *lock = lockp;
	u32 nslots = 1;

	while (nslots < args->nthreads)
		nslots <<= 1;
	lock->slots = aligned_alloc(LOCKLAB_CACHELINE, nslots * sizeof(struct anderson_slot));
	if (lock->slots == NULL)
		return -12; /* -ENOMEM */
	memset(lock->slots, 0, nslots * sizeof(struct anderson_slot));
	lock->slots[0].has_lock = 1;
	lock->slot_mask = nslots - 1;
	lock_wait_configure(&lock->wait, args);
	return 0;
}

static void anderson_destroy(void *lockp)
{
	struct anderson_lock *lock = lockp;
	free(lock->slots);
}

static void anderson_lock(void *lockp, struct lock_thread *self)
{
	struct anderson_lock *lock = lockp;
	u32 slot = __atomic_fetch_add(&lock->next_slot, 1, __ATOMIC_RELAXED) & lock->slot_mask;

	lock_wait_cond_load_acquire(&lock->wait, self, &lock->slots[slot].has_lock,
				    &lock->slots[slot].parked, VAL != 0);
	struct anderson_slot *next = &lock->slots[(slot + 1) & lock->slot_mask];
	lock_prewake(&lock->wait, self, &next->has_lock, &next->parked);
	WRITE_ONCE(lock->slots[slot].has_lock, 0); /* re-arm for the next round */
	lock_qnode(self, LOCK_QNODE_QUEUE, struct anderson_holder)->slot = slot;
}

static bool anderson_trylock(void *lockp, struct lock_thread *self)
{
	struct anderson_lock *lock = lockp;
	u32 ticket = READ_ONCE(lock->next_slot);
	u32 slot = ticket & lock->slot_mask;

	/* Take a slot only if its flag is already up, i.e. nobody holds or waits. */
	if (!smp_load_acquire(&lock->slots[slot].has_lock))
		return false;
	if (cmpxchg_relaxed(&lock->next_slot, ticket, ticket + 1) != ticket)
		return false;
	WRITE_ONCE(lock->slots[slot].has_lock, 0);
	lock_qnode(self, LOCK_QNODE_QUEUE, struct anderson_holder)->slot = slot;
	return true;
}

static void anderson_unlock(void *lockp, struct lock_thread *self)
{
	struct anderson_lock *lock = lockp;
	u32 slot = lock_qnode(self, LOCK_QNODE_QUEUE, struct anderson_holder)->slot;

	struct anderson_slot *next = &lock->slots[(slot + 1) & lock->slot_mask];

	smp_store_release(&next->has_lock, 1);
	lock_unpark(&lock->wait, self, &next->has_lock, &next->parked, 1);
}

static const struct lock_tunable wait_tunables[] = { LOCK_WAIT_TUNABLES, LOCK_TUNABLES_END };

const struct lock_ops anderson_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "anderson",
	.family = "spin-queue",
	.summary = "Anderson array lock: FIFO ring of per-slot flags, one cache line each",
	.source = "Anderson, IEEE TPDS 1(1) 1990, sec. III.C",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct anderson_lock),
	.tunables = wait_tunables,
	.init = anderson_init,
	.destroy = anderson_destroy,
	.lock = anderson_lock,
	.unlock = anderson_unlock,
	.trylock = anderson_trylock,
};
