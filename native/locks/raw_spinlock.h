/* SPDX-License-Identifier: MIT */
/*
 * raw_spinlock.h - the raw spinlocks (`wait_lock`, rtmutex's `pi_lock`) of the sleeping hand
 * ports, in the two forms their kernels used. Each port says at its include site which one it
 * takes, and why; the choice shapes its slow path at high writer counts (every waiter and
 * waker passes through wait_lock), so it is the kernel's, not the simplest.
 *
 *   raw_qspin_*        Linux 6.1 (x86 and arm64 select ARCH_USE_QUEUED_SPINLOCKS): the queued
 *                      spinlock, the same code as the `qspinlock` lock (qspinlock.h), x86 word
 *                      layout. Ports: mutex.c, rwsem.c, rtmutex.c's k0..k5.
 *   raw_ticket_spin_*  x86 from 2.6.25 (N. Piggin, "x86: FIFO ticket spinlocks", 2008) to 4.1:
 *                      arch/x86/include/asm/spinlock.h and spinlock_types.h of Linux 3.10. Ports:
 *                      mutex_3_10.c, rwsem_xadd_3_10.c, rtmutex.c's rtmutex_adaptive (the
 *                      adaptive series carried the ticket lock into 2.6.24-rt as a prerequisite:
 *                      its latency spikes came from wait_lock's unfairness).
 *   raw_dec_spin_*     x86 up to 2.6.24: the unfair decrement spinlock (include/asm-x86/
 *                      spinlock_64.h of 2.6.24; i386 did the same on a byte). Port: rtmutex.c's
 *                      rtmutex_rt_2_6_24, the baseline the adaptive series was measured against.
 *
 * Queued: a waiter needs a queue node of its own, hence `self`. The nodes are the thread's
 * LOCK_QNODE_RAW_SPIN slots (3, and 4 for one level of nesting: rtmutex takes a task's pi_lock
 * inside a wait_lock, as the kernel does, whose qspinlock nests up to 4 deep through the tail's
 * idx). Not slot 0, where the OSQ node of the same mutex or rwsem lives: in the kernel the OSQ
 * is never held while wait_lock is taken (6.1 mutex_optimistic_spin() and rwsem's take the OSQ
 * and only trylock the owner word; a waiter spins without the OSQ), but a spinner that leaves
 * the OSQ may still touch our OSQ node for a moment (osq.h, step A), so the two never share.
 *
 * Ticket (3.10, NR_CPUS >= 256 as distribution kernels built it: 16-bit tickets): one 32-bit
 * word, `head` (now serving) in the low half and `tail` (next ticket) in the high half.
 *   lock     xadd(word, 1 << 16): the old value gives my ticket (its tail) and the head; equal
 *            -> mine, else spin with pause until head == my ticket. ACQUIRE.
 *   unlock   head + 1, a 16-bit RELEASE store (3.10: a non-locked `addw` on head; only the holder
 *            writes head, so load + store is the same).
 *   trylock  free (head == tail) -> cmpxchg(word, old, old + (1 << 16)), ACQUIRE.
 * Mixed-size accesses on one word, as the kernel's union: GCC __atomic builtins on the union
 * members, as in qspinlock.h. Every access that hands the lock over is at the word's address
 * (the head half is its low half on little-endian), so TSAN sees each RELEASE/ACQUIRE pair.
 * ticket.c's `ticket` lock is the same algorithm in two 32-bit words (and its backoff variants
 * and their unit test are built on that layout), so it is not reused here: this one is the
 * kernel's word, as the brief for the ports asks.
 */
#ifndef LOCKLAB_RAW_SPINLOCK_H
#define LOCKLAB_RAW_SPINLOCK_H

#include <locklab/kernel.h>
#include <locklab/lock.h>

#include "qspinlock.h"

/* ---- Linux 6.1: queued ---------------------------------------------------------------------- */

/*
 * The fast path inline, the slow path out of line, as the kernel's queued_spin_lock() calls
 * queued_spin_lock_slowpath(). `unused`: the 3.10 ports include this file for the ticket lock.
 */
static __attribute__((noinline, unused)) void
raw_qspin_lock_slowpath(struct qspinlock *lock, u32 val, struct lock_thread *self)
{
	queued_spin_lock_slowpath(lock, val, self, Q_PENDING_BYTE, CNA_NONE, LOCK_QNODE_RAW_SPIN);
}

static inline void raw_qspin_lock(struct qspinlock *lock, struct lock_thread *self)
{
	int val = 0;

	if (likely(atomic_try_cmpxchg_acquire(&lock->val, &val, (int)_Q_LOCKED_VAL)))
		return;
	raw_qspin_lock_slowpath(lock, (u32)val, self);
}

static inline bool raw_qspin_trylock(struct qspinlock *lock)
{
	return queued_spin_trylock(lock);
}

static inline void raw_qspin_unlock(struct qspinlock *lock)
{
	smp_store_release(&lock->locked, 0); /* pairs with the ACQUIRE of the next taker */
}

/* ---- x86 2.6.25 .. 4.1: ticket -------------------------------------------------------------- */

#define TICKET_SHIFT 16

struct raw_ticket_spinlock {
	union {
		u32 head_tail;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		struct {
			q_u16 head;
			q_u16 tail;
		};
#else
		struct {
			q_u16 tail;
			q_u16 head;
		};
#endif
	};
};

static inline void raw_ticket_spin_lock(struct raw_ticket_spinlock *lock)
{
	u32 old = __atomic_fetch_add(&lock->head_tail, 1u << TICKET_SHIFT, __ATOMIC_ACQUIRE);
	u16 ticket = (u16)(old >> TICKET_SHIFT);

	if (likely((u16)old == ticket))
		return;
	/* ACQUIRE: pairs with the previous holder's RELEASE of head. */
	while (__atomic_load_n(&lock->head, __ATOMIC_ACQUIRE) != ticket)
		cpu_relax();
}

static inline bool raw_ticket_spin_trylock(struct raw_ticket_spinlock *lock)
{
	u32 old = READ_ONCE(lock->head_tail);

	if ((u16)old != (u16)(old >> TICKET_SHIFT))
		return false;
	return __atomic_compare_exchange_n(&lock->head_tail, &old, old + (1u << TICKET_SHIFT), false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void raw_ticket_spin_unlock(struct raw_ticket_spinlock *lock)
{
	__atomic_store_n(&lock->head, (q_u16)(READ_ONCE(lock->head) + 1), __ATOMIC_RELEASE);
}

/* ---- x86 up to 2.6.24: decrement ------------------------------------------------------------ */

/*
 * The kernel's word `slock` is 1 when free: lock is `lock decl`, taken if the result is not
 * negative; otherwise spin with pause while slock <= 0, then decrement again. Unlock stores 1;
 * trylock exchanges 0 in and succeeds if the old value was positive. No order among waiters:
 * whoever decrements first after the store of 1 wins, often the releasing CPU itself.
 * Stored here as `taken` = 1 - slock, so that a zeroed word is free as the kernel's static
 * initialiser {1} makes it (every lock and task here starts zeroed): the same instructions
 * with `incl` for `decl`, the same costs. (Built with CONFIG_PREEMPT, 2.6.24's spin_lock()
 * wrapped the arch lock in a trylock-then-wait loop, kernel/spinlock.c's BUILD_LOCK_OPS: the
 * same unfair test-and-test-and-set, one exchange per attempt.)
 */
struct raw_dec_spinlock {
	s32 taken; /* 0 free; 1 - slock */
};

static inline void raw_dec_spin_lock(struct raw_dec_spinlock *lock)
{
	/* ACQUIRE: pairs with the previous holder's RELEASE store of 0. */
	while (__atomic_fetch_add(&lock->taken, 1, __ATOMIC_ACQUIRE) != 0) {
		while (__atomic_load_n(&lock->taken, __ATOMIC_RELAXED) >= 1)
			cpu_relax();
	}
}

static inline bool raw_dec_spin_trylock(struct raw_dec_spinlock *lock)
{
	return __atomic_exchange_n(&lock->taken, 1, __ATOMIC_ACQUIRE) == 0;
}

static inline void raw_dec_spin_unlock(struct raw_dec_spinlock *lock)
{
	__atomic_store_n(&lock->taken, 0, __ATOMIC_RELEASE);
}

_Static_assert(sizeof(struct raw_dec_spinlock) == 4, "one 32-bit word, as the kernel's");
_Static_assert(sizeof(struct raw_ticket_spinlock) == 4, "one 32-bit word, as the kernel's");
_Static_assert(sizeof(struct qspinlock) == 4, "one 32-bit word, as the kernel's");

#endif /* LOCKLAB_RAW_SPINLOCK_H */
