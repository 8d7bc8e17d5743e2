/* SPDX-License-Identifier: MIT */
/*
 * broken_rw - a deliberately BROKEN reader-writer lock, kept so the test suite can prove that
 * the interposer's rwlock checks (tests/interpose/torture.c) catch a lock whose readers do not
 * exclude writers.
 *
 * Writers exclude each other correctly (an atomic exchange on a flag), and readers wait while
 * a writer holds the flag, then count themselves; but a writer never looks at the reader
 * count, so it walks in on readers, and readers see its half-done update.
 */
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct broken_rw_lock {
	u32 writer;
	u32 readers;
};

static void broken_rw_write_lock(void *lockp, struct lock_thread *self)
{
	struct broken_rw_lock *lock = lockp;
	(void)self;
	while (xchg(&lock->writer, 1) != 0)
		cpu_relax();
	/* BUG: should wait here until lock->readers is 0 */
}

static void broken_rw_write_unlock(void *lockp, struct lock_thread *self)
{
	struct broken_rw_lock *lock = lockp;
	(void)self;
	smp_store_release(&lock->writer, 0);
}

static void broken_rw_read_lock(void *lockp, struct lock_thread *self)
{
	struct broken_rw_lock *lock = lockp;
	(void)self;
	while (smp_load_acquire(&lock->writer) != 0)
		cpu_relax();
	__atomic_fetch_add(&lock->readers, 1, __ATOMIC_ACQUIRE);
}

static void broken_rw_read_unlock(void *lockp, struct lock_thread *self)
{
	struct broken_rw_lock *lock = lockp;
	(void)self;
	__atomic_fetch_sub(&lock->readers, 1, __ATOMIC_RELEASE);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "broken_rw",
	.family = "test-broken",
	.summary = "BROKEN on purpose: writers do not wait for readers",
	.source = "locklab test suite",
	.flags = LOCK_SPINS | LOCK_READER_WRITER,
	.lock_size = sizeof(struct broken_rw_lock),
	.tunables = no_tunables,
	.lock = broken_rw_write_lock,
	.unlock = broken_rw_write_unlock,
	.read_lock = broken_rw_read_lock,
	.read_unlock = broken_rw_read_unlock,
};
