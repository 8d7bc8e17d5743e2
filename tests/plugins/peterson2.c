/* SPDX-License-Identifier: MIT */
/*
 * peterson2 - Peterson's mutual exclusion for exactly two threads, from G. L. Peterson, "Myths
 * about the mutual exclusion problem", Information Processing Letters 12(3), 1981. Kept as a
 * test lock: its init refuses any other thread count, so the front end must try a simulated
 * sweep at the sweep's own point (2 writers), not at a point of its own.
 *
 * Each thread raises its flag, then yields the turn to the other, and waits while the other's
 * flag is up and the turn is the other's. The wait reads the other's flag after this thread's
 * own stores: a store followed by a load of another location. Acquire/release (and x86's TSO)
 * let that load pass the stores, and both threads enter; only sequentially consistent accesses
 * put the four in one order every thread agrees on, as the paper assumes.
 */
#include <errno.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

struct peterson2_lock {
	u32 interested[2]; /* the paper's flag[i]: thread i wants in */
	u32 turn;          /* who yields: the last thread to set it waits */
};

static int peterson2_init(void *lockp, const struct lock_init_args *args)
{
	(void)lockp;
	return args->nthreads == 2 ? 0 : -EINVAL; /* the algorithm is for two threads only */
}

static void peterson2_lock(void *lockp, struct lock_thread *self)
{
	struct peterson2_lock *lock = lockp;
	u32 me = self->index, other = 1 - self->index;

	__atomic_store_n(&lock->interested[me], 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&lock->turn, other, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&lock->interested[other], __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&lock->turn, __ATOMIC_SEQ_CST) == other)
		cpu_relax();
}

static void peterson2_unlock(void *lockp, struct lock_thread *self)
{
	struct peterson2_lock *lock = lockp;

	/* Release: the critical section's accesses stay before the other thread's entry. */
	__atomic_store_n(&lock->interested[self->index], 0, __ATOMIC_RELEASE);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "peterson2",
	.family = "test-two-threads",
	.summary = "Peterson's lock for exactly two threads (init refuses others)",
	.source = "G. L. Peterson, Myths about the mutual exclusion problem, IPL 12(3), 1981",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct peterson2_lock),
	.tunables = no_tunables,
	.init = peterson2_init,
	.lock = peterson2_lock,
	.unlock = peterson2_unlock,
};
