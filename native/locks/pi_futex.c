/* SPDX-License-Identifier: MIT */
/*
 * The kernel's own priority-inheritance futex, the natural peer of our rtmutex: in the kernel,
 * FUTEX_LOCK_PI queues on an rt_mutex.
 *
 * Source: futex(2), FUTEX_LOCK_PI / FUTEX_UNLOCK_PI / FUTEX_TRYLOCK_PI (Linux 2.6.18,
 * I. Molnar and T. Gleixner, 2006); kernel/futex/pi.c.
 *
 * State: one 32-bit word, the owner's thread id (0: free), with FUTEX_WAITERS set by the
 * kernel when someone sleeps. Uncontended lock is a CAS 0 -> tid in userspace, unlock a CAS
 * tid -> 0; anything else goes to the kernel, which does the queueing, the boosting and the
 * hand-over (it writes the new owner's tid into the word).
 *
 * Ordering: the userspace CASes are ACQUIRE and RELEASE; the kernel path is a full barrier.
 * ThreadSanitizer cannot see the kernel's hand-over, so the TSAN build leaves this lock out.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

struct pi_futex {
	u32 word;
};

/* The thread's id, cached in its queue node 0 (gettid is a syscall). */
static inline u32 thread_id(struct lock_thread *self)
{
	u32 *tid = lock_qnode(self, LOCK_QNODE_QUEUE, u32);
	if (unlikely(*tid == 0))
		*tid = (u32)syscall(SYS_gettid);
	return *tid;
}

static void pi_futex_lock(void *lockp, struct lock_thread *self)
{
	struct pi_futex *lock = lockp;
	u32 tid = thread_id(self);

	if (likely(cmpxchg_acquire(&lock->word, 0, tid) == 0))
		return;
	/* Queue in the kernel: it boosts the owner and returns with the lock ours. */
	while (syscall(SYS_futex, &lock->word, FUTEX_LOCK_PI_PRIVATE, 0, NULL, NULL, 0) != 0)
		if (errno != EINTR && errno != EAGAIN)
			break; /* cannot happen with a valid word; the torture checks would tell */
}

static bool pi_futex_trylock(void *lockp, struct lock_thread *self)
{
	struct pi_futex *lock = lockp;
	return cmpxchg_acquire(&lock->word, 0, thread_id(self)) == 0;
}

static void pi_futex_unlock(void *lockp, struct lock_thread *self)
{
	struct pi_futex *lock = lockp;
	u32 tid = thread_id(self);

	if (likely(cmpxchg_release(&lock->word, tid, 0) == tid))
		return;
	/* FUTEX_WAITERS is set: the kernel hands the lock to the top waiter. */
	syscall(SYS_futex, &lock->word, FUTEX_UNLOCK_PI_PRIVATE, 0, NULL, NULL, 0);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops pi_futex_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "pi_futex",
	.family = "peer-kernel",
	.summary = "the kernel's priority-inheritance futex (FUTEX_LOCK_PI), an in-kernel rt_mutex",
	.source = "futex(2) FUTEX_LOCK_PI, Linux 2.6.18; kernel/futex/pi.c",
	.flags = LOCK_SLEEPS | LOCK_PRIO_INHERIT | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct pi_futex),
	.tunables = no_tunables,
	.lock = pi_futex_lock,
	.unlock = pi_futex_unlock,
	.trylock = pi_futex_trylock,
};
