/* SPDX-License-Identifier: MIT */
/*
 * raw_spinlock.h - the small internal spinlock (`wait_lock`) that the sleeping kernel locks
 * (mutex, rwsem, rtmutex) use to protect their wait lists: test-and-test-and-set, as short
 * critical sections under it need nothing fairer.
 */
#ifndef LOCKLAB_RAW_SPINLOCK_H
#define LOCKLAB_RAW_SPINLOCK_H

#include <locklab/kernel.h>

static inline void raw_spin_lock(u32 *lock)
{
	while (xchg_acquire(lock, 1) != 0)
		smp_cond_load_relaxed(lock, VAL == 0);
}

static inline bool raw_spin_trylock(u32 *lock)
{
	return READ_ONCE(*lock) == 0 && xchg_acquire(lock, 1) == 0;
}

static inline void raw_spin_unlock(u32 *lock)
{
	smp_store_release(lock, 0);
}

#endif /* LOCKLAB_RAW_SPINLOCK_H */
