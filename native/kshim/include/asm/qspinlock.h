/* SPDX-License-Identifier: MIT */
/*
 * asm/qspinlock.h: the architecture's part of the queued spinlock, as arch/x86/include/asm/
 * qspinlock.h (Linux 6.1, 6.12) and arm64 (which takes asm-generic/qspinlock.h whole) give it.
 *   x86: the pending bit is set with `lock bts` (GCC emits it for a fetch_or whose result is
 *        only tested at that bit), the rest of the word read after; a waiter polls the pending
 *        -> locked hand-over up to 512 times (_Q_PENDING_LOOPS) before it queues. No paravirt:
 *        virt_spin_lock() is false, as on bare metal.
 *   arm64: the generic atomic_fetch_or_acquire() and _Q_PENDING_LOOPS of 1.
 */
#ifndef KSHIM_ASM_QSPINLOCK_H
#define KSHIM_ASM_QSPINLOCK_H

#include <asm-generic/qspinlock_types.h>
#include <kshim/atomic.h>

#if defined(__x86_64__)
#define _Q_PENDING_LOOPS (1 << 9)
#define queued_fetch_set_pending_acquire queued_fetch_set_pending_acquire
static __always_inline u32 queued_fetch_set_pending_acquire(struct qspinlock *lock)
{
	u32 val = __atomic_fetch_or(&lock->val.counter, _Q_PENDING_VAL, __ATOMIC_ACQUIRE) &
		  _Q_PENDING_VAL;
	val |= atomic_read(&lock->val) & ~_Q_PENDING_MASK;
	return val;
}
#endif

#include <asm-generic/qspinlock.h>

#endif /* KSHIM_ASM_QSPINLOCK_H */
