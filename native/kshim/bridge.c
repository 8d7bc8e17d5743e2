/* SPDX-License-Identifier: MIT */
/*
 * bridge.c - compiled in the kernel environment with the tree's headers: the lock inits the
 * engine calls, the raw spinlock's out-of-line entry points, and the check that the
 * declarations the engine uses (kshim/bridge.h) are the tree's.
 */
#include <linux/mutex.h>
#include <linux/rtmutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include "bridge.h"

#ifdef KSHIM_LOCK_rtmutex
_Static_assert(sizeof(struct rt_mutex) <= KSHIM_LOCK_BYTES, "struct rt_mutex is larger than the engine's lock");
void kshim_rtmutex_init(void *lock)
{
	rt_mutex_init((struct rt_mutex *)lock);
}
#endif

#ifdef KSHIM_LOCK_mutex
_Static_assert(sizeof(struct mutex) <= KSHIM_LOCK_BYTES, "struct mutex is larger than the engine's lock");
void kshim_mutex_init(void *lock)
{
	mutex_init((struct mutex *)lock);
}
#endif

#ifdef KSHIM_LOCK_rwsem
_Static_assert(sizeof(struct rw_semaphore) <= KSHIM_LOCK_BYTES, "struct rw_semaphore is larger than the engine's lock");
void kshim_rwsem_init(void *lock)
{
	init_rwsem((struct rw_semaphore *)lock);
}
#endif

void kshim_spinlock_init(void *lock)
{
	*(struct qspinlock *)lock = (struct qspinlock)__ARCH_SPIN_LOCK_UNLOCKED;
}

void kshim_raw_spin_lock(struct qspinlock *lock)
{
	preempt_disable();
	queued_spin_lock(lock);
}

int kshim_raw_spin_trylock(struct qspinlock *lock)
{
	preempt_disable();
	if (queued_spin_trylock(lock))
		return 1;
	preempt_enable();
	return 0;
}

void kshim_raw_spin_unlock(struct qspinlock *lock)
{
	queued_spin_unlock(lock);
	preempt_enable();
}
