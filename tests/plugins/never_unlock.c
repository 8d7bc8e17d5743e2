/* SPDX-License-Identifier: MIT */
/*
 * never_unlock - a deliberately DEADLOCKING lock: unlock() forgets to release, so the second
 * acquisition spins forever. The test suite uses it to prove the engine's watchdog ends the
 * run with exit status 3 instead of hanging.
 */
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct never_unlock_lock {
	u32 locked;
};

static void never_unlock_lock(void *lockp, struct lock_thread *self)
{
	struct never_unlock_lock *lock = lockp;
	(void)self;
	while (xchg_acquire(&lock->locked, 1) != 0)
		cpu_relax();
}

static void never_unlock_unlock(void *lockp, struct lock_thread *self)
{
	(void)lockp; /* BUG on purpose: the lock stays held */
	(void)self;
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "never_unlock",
	.family = "test-broken",
	.summary = "BROKEN on purpose: unlock never releases (deadlocks)",
	.source = "locklab test suite",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct never_unlock_lock),
	.tunables = no_tunables,
	.lock = never_unlock_lock,
	.unlock = never_unlock_unlock,
};
