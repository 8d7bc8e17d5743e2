/* SPDX-License-Identifier: MIT */
/*
 * lock_task.h - the part of a task_struct that the sleeping kernel locks (mutex, rwsem,
 * rtmutex) read of another thread: is it on a CPU? Userspace cannot see that, so a thread
 * says so itself: `sleeping` is set while it waits on a futex inside a lock, and an owner that
 * is not sleeping counts as running (a preempted owner still does; spinners bound their spin).
 * Lives in the thread's queue node 3; zero, as the engine allocates it, means running.
 */
#ifndef LOCKLAB_LOCK_TASK_H
#define LOCKLAB_LOCK_TASK_H

#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct lock_task {
	u32 sleeping;
};

static inline struct lock_task *lock_task_of(struct lock_thread *self)
{
	return lock_qnode(self, LOCK_QNODE_TASK, struct lock_task);
}

static inline bool lock_task_running(const struct lock_task *task)
{
	return !READ_ONCE(task->sleeping);
}

/*
 * Sleep until *word != value (or a spurious wake-up), marked as not running meanwhile. The
 * mark, a full barrier, then the word read again: with lock_task_wake()'s barrier between
 * its store to the word and its read of the mark, either this read sees the new value and the
 * thread does not sleep, or the waker sees the mark and makes the system call.
 */
static inline void lock_task_sleep(struct lock_task *task, u32 *word, u32 value)
{
	WRITE_ONCE(task->sleeping, 1);
	smp_mb();
	if (READ_ONCE(*word) == value)
		futex_wait(word, value);
	WRITE_ONCE(task->sleeping, 0);
}

/*
 * Wake the thread of `task` waiting on `word`, whose new value the caller has stored: the
 * system call only if it is asleep, or about to be (lock_task_sleep()). The kernel's
 * try_to_wake_up() of a task still on its CPU only sets its state (ttwu_runnable()); a
 * system call for it would hold the waker back a microsecond, time the woken waiter would
 * have that the kernel does not give it.
 */
static inline void lock_task_wake(const struct lock_task *task, u32 *word)
{
	smp_mb();
	if (READ_ONCE(task->sleeping))
		futex_wake_one(word);
}

#endif /* LOCKLAB_LOCK_TASK_H */
