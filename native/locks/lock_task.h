/* SPDX-License-Identifier: MIT */
/*
 * lock_task.h - the part of a task_struct that the sleeping kernel locks (mutex, rwsem,
 * rtmutex) use of another thread: its state, which a waker sets to RUNNING, and whether it is
 * on a CPU. Userspace cannot see the latter, so a thread says so itself: `sleeping` is set
 * while it waits on a futex inside a lock, and an owner that is not sleeping counts as running
 * (a preempted owner still does, but in the simulator; spinners bound their spin). Lives in
 * the thread's LOCK_QNODE_TASK node; zero, as the engine allocates it, means running.
 */
#ifndef LOCKLAB_LOCK_TASK_H
#define LOCKLAB_LOCK_TASK_H

#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct lock_task {
	u32 sleeping;
	u32 state; /* futex word: LOCK_TASK_BLOCKED while it waits in a lock, else RUNNING */
};

enum { LOCK_TASK_RUNNING = 0, LOCK_TASK_BLOCKED = 1 };

static inline struct lock_task *lock_task_of(struct lock_thread *self)
{
	return lock_qnode(self, LOCK_QNODE_TASK, struct lock_task);
}

/*
 * In the simulator a thread's task also reads as not running while the scheduler model has it
 * switched out (lock_thread.off_cpu, whose thread's task slot this is): the read goes unseen
 * by the model, so a run whose CPUs are not shared costs what it did. Elsewhere, never.
 */
#ifdef LOCKLAB_SIM
__attribute__((no_sanitize_thread)) static inline bool
lock_task_off_cpu(const struct lock_task *task)
{
	const struct lock_thread *thread = (const struct lock_thread *)(const void *)(
		(const unsigned char *)task - offsetof(struct lock_thread, qnode) -
		LOCK_QNODE_TASK * LOCK_QNODE_BYTES);
	return __atomic_load_n(&thread->off_cpu, __ATOMIC_RELAXED) != 0;
}
#else
static inline bool lock_task_off_cpu(const struct lock_task *task)
{
	(void)task;
	return false;
}
#endif

static inline bool lock_task_running(const struct lock_task *task)
{
	return !lock_task_off_cpu(task) && !READ_ONCE(task->sleeping);
}

/*
 * __set_current_state(TASK_UNINTERRUPTIBLE): the plain store, for a waiter that stores it
 * under a lock its waker holds while it wakes (3.10's mutex), which orders the two.
 */
static inline void lock_task_set_blocked(struct lock_task *task)
{
	WRITE_ONCE(task->state, LOCK_TASK_BLOCKED);
}

/*
 * The kernel's set_current_state(TASK_UNINTERRUPTIBLE), before the waiter's last look at
 * its condition: a store and a full barrier (smp_store_mb(); an xchg on x86). With the
 * barrier in lock_task_wake(), either that look sees what the waker did, or the waker sees
 * BLOCKED and wakes it.
 */
static inline void lock_task_block(struct lock_task *task)
{
	lock_task_set_blocked(task);
	smp_mb();
}

/* __set_current_state(TASK_RUNNING): done waiting. */
static inline void lock_task_unblock(struct lock_task *task)
{
	WRITE_ONCE(task->state, LOCK_TASK_RUNNING);
}

/*
 * schedule(): sleep while still BLOCKED, marked as not running meanwhile. The mark, a full
 * barrier, then the state read again: with lock_task_wake()'s barrier between its change of
 * the state and its read of the mark, either this read sees RUNNING and the thread does not
 * sleep, or the waker sees the mark and makes the system call. May return with the thread
 * still BLOCKED (a signal, or a waker of an earlier wait): callers look at their condition
 * again, as the kernel's do.
 */
static inline void lock_task_schedule(struct lock_task *task)
{
	WRITE_ONCE(task->sleeping, 1);
	smp_mb();
	if (READ_ONCE(task->state) == LOCK_TASK_BLOCKED)
		futex_wait(&task->state, LOCK_TASK_BLOCKED);
	WRITE_ONCE(task->sleeping, 0);
}

/*
 * The kernel's wait loop on a flag its waker sets (an rwsem reader's grant): BLOCKED, look,
 * sleep, until the flag reads non-zero. ACQUIRE, pairing with the waker's RELEASE store of it.
 */
static inline void lock_task_wait_for(struct lock_task *task, const u32 *flag)
{
	for (;;) {
		lock_task_block(task);
		if (smp_load_acquire(flag))
			break;
		lock_task_schedule(task);
	}
	lock_task_unblock(task);
}

/*
 * A waker's two steps on the task, which lock_task_wake() puts together and rtmutex.c's
 * try_to_wake_up() takes its own locks between. BLOCKED -> RUNNING, fully ordered; false if
 * the task is not blocked: it has not looked yet, and will see the caller's stores.
 */
static inline bool lock_task_set_running(struct lock_task *task)
{
	u32 blocked = LOCK_TASK_BLOCKED;
	return __atomic_compare_exchange_n(&task->state, &blocked, LOCK_TASK_RUNNING, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/*
 * Then the system call, only if the task is asleep or about to be (lock_task_schedule()):
 * after lock_task_set_running() and a full barrier, either this read sees the task's mark or
 * the task sees RUNNING and does not sleep.
 */
static inline void lock_task_kick(struct lock_task *task)
{
	if (__atomic_load_n(&task->sleeping, __ATOMIC_SEQ_CST))
		futex_wake_one(&task->state);
}

/*
 * try_to_wake_up() of a task, after the caller has stored what it waits for: a full barrier,
 * then BLOCKED -> RUNNING, then the system call only if it is asleep or about to be. The
 * kernel wakes a task still on its CPU by its state alone (ttwu_runnable()); a system call for
 * it would hold the waker back a microsecond that the kernel does not cost. The wake is by
 * task, not by waiter, as the kernel's wake_q is: a waiter lives on its thread's stack, and
 * may be gone once the lock is granted.
 */
static inline void lock_task_wake(struct lock_task *task)
{
	smp_mb();
	if (!lock_task_set_running(task))
		return;
	smp_mb();
	lock_task_kick(task);
}

#endif /* LOCKLAB_LOCK_TASK_H */
