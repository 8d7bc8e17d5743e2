/* SPDX-License-Identifier: MIT */
/*
 * bridge.h - the kernel locks' API as the engine calls it. Included by bridge.c, which
 * also includes the tree's own headers: the compiler checks these declarations against the
 * tree's, so a tree whose API differs fails to build instead of being called wrongly.
 * The engine side sees the lock types as incomplete: it only passes pointers.
 */
#ifndef KSHIM_BRIDGE_H
#define KSHIM_BRIDGE_H

/* What the engine allocates per lock; bridge.c checks each type fits. */
#define KSHIM_LOCK_BYTES 512

struct rt_mutex;
struct mutex;
struct rw_semaphore;
struct qspinlock;

/* Each lock's *_init() is a macro with a static lockdep key in the kernel: called here. */
void kshim_rtmutex_init(void *lock);
void kshim_mutex_init(void *lock);
void kshim_rwsem_init(void *lock);
void kshim_spinlock_init(void *lock);

/* kernel/locking/rtmutex_api.c */
void rt_mutex_lock(struct rt_mutex *lock);
int rt_mutex_trylock(struct rt_mutex *lock);
void rt_mutex_unlock(struct rt_mutex *lock);
/* kernel/locking/mutex.c */
void mutex_lock(struct mutex *lock);
int mutex_trylock(struct mutex *lock);
void mutex_unlock(struct mutex *lock);
/* kernel/locking/rwsem.c */
void down_read(struct rw_semaphore *sem);
void up_read(struct rw_semaphore *sem);
void down_write(struct rw_semaphore *sem);
int down_write_trylock(struct rw_semaphore *sem);
void up_write(struct rw_semaphore *sem);
/*
 * The raw spinlock, out of line with its fast path inlined, as the kernel's _raw_spin_lock()
 * and _raw_spin_unlock() (kernel/locking/spinlock.c, without CONFIG_INLINE_SPIN_*).
 */
void kshim_raw_spin_lock(struct qspinlock *lock);
int kshim_raw_spin_trylock(struct qspinlock *lock);
void kshim_raw_spin_unlock(struct qspinlock *lock);

#endif /* KSHIM_BRIDGE_H */
