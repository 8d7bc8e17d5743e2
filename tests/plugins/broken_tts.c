/* SPDX-License-Identifier: MIT */
/*
 * broken_tts - a deliberately BROKEN lock, kept so the test suite can prove that the engine's
 * correctness checks catch a lock that fails mutual exclusion.
 *
 * Test-then-set without an atomic read-modify-write: two threads can both read 0 and both
 * store 1, and both enter. A few pauses between the test and the set widen that window so the
 * failure shows up within a short run even on two cores.
 */
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct broken_tts_lock {
	u32 locked;
};

static void broken_tts_lock(void *lockp, struct lock_thread *self)
{
	struct broken_tts_lock *lock = lockp;
	(void)self;
	while (smp_load_acquire(&lock->locked) != 0)
		cpu_relax();
	for (int i = 0; i < 8; i++) /* the race window */
		cpu_relax();
	WRITE_ONCE(lock->locked, 1); /* BUG: not atomic with the test above */
}

static void broken_tts_unlock(void *lockp, struct lock_thread *self)
{
	struct broken_tts_lock *lock = lockp;
	(void)self;
	smp_store_release(&lock->locked, 0);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "broken_tts",
	.family = "test-broken",
	.summary = "BROKEN on purpose: non-atomic test-then-set",
	.source = "locklab test suite",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct broken_tts_lock),
	.tunables = no_tunables,
	.lock = broken_tts_lock,
	.unlock = broken_tts_unlock,
};
