/* SPDX-License-Identifier: MIT */
/*
 * kshim/atomic.h - atomic_t, atomic64_t and atomic_long_t (Documentation/atomic_t.txt): the
 * operations, each with the ordering that the kernel documents for its name. The __atomic
 * builtins are type-generic, so one set of kshim_atomic_* macros serves all three types, and
 * atomic_*, atomic64_* and atomic_long_* are names for it.
 */
#ifndef KSHIM_ATOMIC_H
#define KSHIM_ATOMIC_H

#include <kshim/base.h>

#define ATOMIC_INIT(i) { (i) }
#define ATOMIC64_INIT(i) { (i) }
#define ATOMIC_LONG_INIT(i) { (i) }

#define kshim_atomic_read(v) READ_ONCE((v)->counter)
#define kshim_atomic_set(v, i) WRITE_ONCE((v)->counter, (i))
#define kshim_atomic_read_acquire(v) smp_load_acquire(&(v)->counter)
#define kshim_atomic_set_release(v, i) smp_store_release(&(v)->counter, (i))
/* RMWs that return nothing are unordered. */
#define kshim_atomic_add(i, v) ((void)__atomic_fetch_add(&(v)->counter, (i), KSHIM_RELAXED_RMW))
#define kshim_atomic_sub(i, v) ((void)__atomic_fetch_sub(&(v)->counter, (i), KSHIM_RELAXED_RMW))
#define kshim_atomic_or(i, v) ((void)__atomic_fetch_or(&(v)->counter, (i), KSHIM_RELAXED_RMW))
#define kshim_atomic_and(i, v) ((void)__atomic_fetch_and(&(v)->counter, (i), KSHIM_RELAXED_RMW))
#define kshim_atomic_xor(i, v) ((void)__atomic_fetch_xor(&(v)->counter, (i), KSHIM_RELAXED_RMW))
#define kshim_atomic_andnot(i, v) kshim_atomic_and(~(i), v)
#define kshim_atomic_inc(v) kshim_atomic_add(1, v)
#define kshim_atomic_dec(v) kshim_atomic_sub(1, v)
#define kshim_atomic_fetch_add(i, v) __atomic_fetch_add(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_sub(i, v) __atomic_fetch_sub(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_or(i, v) __atomic_fetch_or(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_and(i, v) __atomic_fetch_and(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_xor(i, v) __atomic_fetch_xor(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_andnot(i, v) __atomic_fetch_and(&(v)->counter, ~(i), __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_inc(v) __atomic_fetch_add(&(v)->counter, 1, __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_dec(v) __atomic_fetch_sub(&(v)->counter, 1, __ATOMIC_SEQ_CST)
#define kshim_atomic_add_return(i, v) __atomic_add_fetch(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define kshim_atomic_sub_return(i, v) __atomic_sub_fetch(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define kshim_atomic_inc_return(v) __atomic_add_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST)
#define kshim_atomic_dec_return(v) __atomic_sub_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST)
#define kshim_atomic_xchg(v, n) __atomic_exchange_n(&(v)->counter, (n), __ATOMIC_SEQ_CST)
#define kshim_atomic_cmpxchg(v, o, n) kshim_cmpxchg(&(v)->counter, o, n, __ATOMIC_SEQ_CST)
#define kshim_atomic_try_cmpxchg(v, op, n) kshim_try_cmpxchg(&(v)->counter, op, n, __ATOMIC_SEQ_CST)
#define kshim_atomic_fetch_add_acquire(i, v) __atomic_fetch_add(&(v)->counter, (i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_sub_acquire(i, v) __atomic_fetch_sub(&(v)->counter, (i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_or_acquire(i, v) __atomic_fetch_or(&(v)->counter, (i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_and_acquire(i, v) __atomic_fetch_and(&(v)->counter, (i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_xor_acquire(i, v) __atomic_fetch_xor(&(v)->counter, (i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_andnot_acquire(i, v) __atomic_fetch_and(&(v)->counter, ~(i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_inc_acquire(v) __atomic_fetch_add(&(v)->counter, 1, KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_dec_acquire(v) __atomic_fetch_sub(&(v)->counter, 1, KSHIM_ACQUIRE_RMW)
#define kshim_atomic_add_return_acquire(i, v) __atomic_add_fetch(&(v)->counter, (i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_sub_return_acquire(i, v) __atomic_sub_fetch(&(v)->counter, (i), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_inc_return_acquire(v) __atomic_add_fetch(&(v)->counter, 1, KSHIM_ACQUIRE_RMW)
#define kshim_atomic_dec_return_acquire(v) __atomic_sub_fetch(&(v)->counter, 1, KSHIM_ACQUIRE_RMW)
#define kshim_atomic_xchg_acquire(v, n) __atomic_exchange_n(&(v)->counter, (n), KSHIM_ACQUIRE_RMW)
#define kshim_atomic_cmpxchg_acquire(v, o, n) kshim_cmpxchg(&(v)->counter, o, n, KSHIM_ACQUIRE_RMW)
#define kshim_atomic_try_cmpxchg_acquire(v, op, n) kshim_try_cmpxchg(&(v)->counter, op, n, KSHIM_ACQUIRE_RMW)
#define kshim_atomic_fetch_add_release(i, v) __atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELEASE)
#define kshim_atomic_fetch_sub_release(i, v) __atomic_fetch_sub(&(v)->counter, (i), __ATOMIC_RELEASE)
#define kshim_atomic_fetch_or_release(i, v) __atomic_fetch_or(&(v)->counter, (i), __ATOMIC_RELEASE)
#define kshim_atomic_fetch_and_release(i, v) __atomic_fetch_and(&(v)->counter, (i), __ATOMIC_RELEASE)
#define kshim_atomic_fetch_xor_release(i, v) __atomic_fetch_xor(&(v)->counter, (i), __ATOMIC_RELEASE)
#define kshim_atomic_fetch_andnot_release(i, v) __atomic_fetch_and(&(v)->counter, ~(i), __ATOMIC_RELEASE)
#define kshim_atomic_fetch_inc_release(v) __atomic_fetch_add(&(v)->counter, 1, __ATOMIC_RELEASE)
#define kshim_atomic_fetch_dec_release(v) __atomic_fetch_sub(&(v)->counter, 1, __ATOMIC_RELEASE)
#define kshim_atomic_add_return_release(i, v) __atomic_add_fetch(&(v)->counter, (i), __ATOMIC_RELEASE)
#define kshim_atomic_sub_return_release(i, v) __atomic_sub_fetch(&(v)->counter, (i), __ATOMIC_RELEASE)
#define kshim_atomic_inc_return_release(v) __atomic_add_fetch(&(v)->counter, 1, __ATOMIC_RELEASE)
#define kshim_atomic_dec_return_release(v) __atomic_sub_fetch(&(v)->counter, 1, __ATOMIC_RELEASE)
#define kshim_atomic_xchg_release(v, n) __atomic_exchange_n(&(v)->counter, (n), __ATOMIC_RELEASE)
#define kshim_atomic_cmpxchg_release(v, o, n) kshim_cmpxchg(&(v)->counter, o, n, __ATOMIC_RELEASE)
#define kshim_atomic_try_cmpxchg_release(v, op, n) kshim_try_cmpxchg(&(v)->counter, op, n, __ATOMIC_RELEASE)
#define kshim_atomic_fetch_add_relaxed(i, v) __atomic_fetch_add(&(v)->counter, (i), KSHIM_RELAXED_RMW)
#define kshim_atomic_fetch_sub_relaxed(i, v) __atomic_fetch_sub(&(v)->counter, (i), KSHIM_RELAXED_RMW)
#define kshim_atomic_fetch_or_relaxed(i, v) __atomic_fetch_or(&(v)->counter, (i), KSHIM_RELAXED_RMW)
#define kshim_atomic_fetch_and_relaxed(i, v) __atomic_fetch_and(&(v)->counter, (i), KSHIM_RELAXED_RMW)
#define kshim_atomic_fetch_xor_relaxed(i, v) __atomic_fetch_xor(&(v)->counter, (i), KSHIM_RELAXED_RMW)
#define kshim_atomic_fetch_andnot_relaxed(i, v) __atomic_fetch_and(&(v)->counter, ~(i), KSHIM_RELAXED_RMW)
#define kshim_atomic_fetch_inc_relaxed(v) __atomic_fetch_add(&(v)->counter, 1, KSHIM_RELAXED_RMW)
#define kshim_atomic_fetch_dec_relaxed(v) __atomic_fetch_sub(&(v)->counter, 1, KSHIM_RELAXED_RMW)
#define kshim_atomic_add_return_relaxed(i, v) __atomic_add_fetch(&(v)->counter, (i), KSHIM_RELAXED_RMW)
#define kshim_atomic_sub_return_relaxed(i, v) __atomic_sub_fetch(&(v)->counter, (i), KSHIM_RELAXED_RMW)
#define kshim_atomic_inc_return_relaxed(v) __atomic_add_fetch(&(v)->counter, 1, KSHIM_RELAXED_RMW)
#define kshim_atomic_dec_return_relaxed(v) __atomic_sub_fetch(&(v)->counter, 1, KSHIM_RELAXED_RMW)
#define kshim_atomic_xchg_relaxed(v, n) __atomic_exchange_n(&(v)->counter, (n), KSHIM_RELAXED_RMW)
#define kshim_atomic_cmpxchg_relaxed(v, o, n) kshim_cmpxchg(&(v)->counter, o, n, KSHIM_RELAXED_RMW)
#define kshim_atomic_try_cmpxchg_relaxed(v, op, n) kshim_try_cmpxchg(&(v)->counter, op, n, KSHIM_RELAXED_RMW)
/* Add a unless the counter is u; fully ordered when it adds (atomic_t.txt). */
#define kshim_atomic_fetch_add_unless(v, a, u)                                                 \
	({                                                                                     \
		__typeof__((v)->counter) __c = kshim_atomic_read(v);                           \
		do {                                                                           \
			if (unlikely(__c == (u)))                                              \
				break;                                                         \
		} while (!kshim_atomic_try_cmpxchg(v, &__c, __c + (a)));                       \
		__c;                                                                           \
	})
#define kshim_atomic_add_unless(v, a, u) (kshim_atomic_fetch_add_unless(v, a, u) != (u))
#define kshim_atomic_inc_and_test(v) (kshim_atomic_inc_return(v) == 0)
#define kshim_atomic_dec_and_test(v) (kshim_atomic_dec_return(v) == 0)
#define kshim_atomic_sub_and_test(i, v) (kshim_atomic_sub_return(i, v) == 0)
#define kshim_atomic_add_negative(i, v) (kshim_atomic_add_return(i, v) < 0)
#define kshim_atomic_cond_read_relaxed(v, c) smp_cond_load_relaxed(&(v)->counter, (c))
#define kshim_atomic_cond_read_acquire(v, c) smp_cond_load_acquire(&(v)->counter, (c))

/* atomic_t */
#define atomic_read kshim_atomic_read
#define atomic_fetch_add_unless kshim_atomic_fetch_add_unless
#define atomic_add_unless kshim_atomic_add_unless
#define atomic_set kshim_atomic_set
#define atomic_read_acquire kshim_atomic_read_acquire
#define atomic_set_release kshim_atomic_set_release
#define atomic_add kshim_atomic_add
#define atomic_sub kshim_atomic_sub
#define atomic_or kshim_atomic_or
#define atomic_and kshim_atomic_and
#define atomic_xor kshim_atomic_xor
#define atomic_andnot kshim_atomic_andnot
#define atomic_inc kshim_atomic_inc
#define atomic_dec kshim_atomic_dec
#define atomic_inc_and_test kshim_atomic_inc_and_test
#define atomic_dec_and_test kshim_atomic_dec_and_test
#define atomic_sub_and_test kshim_atomic_sub_and_test
#define atomic_add_negative kshim_atomic_add_negative
#define atomic_cond_read_relaxed kshim_atomic_cond_read_relaxed
#define atomic_cond_read_acquire kshim_atomic_cond_read_acquire
#define atomic_fetch_add kshim_atomic_fetch_add
#define atomic_fetch_sub kshim_atomic_fetch_sub
#define atomic_fetch_or kshim_atomic_fetch_or
#define atomic_fetch_and kshim_atomic_fetch_and
#define atomic_fetch_xor kshim_atomic_fetch_xor
#define atomic_fetch_andnot kshim_atomic_fetch_andnot
#define atomic_fetch_inc kshim_atomic_fetch_inc
#define atomic_fetch_dec kshim_atomic_fetch_dec
#define atomic_add_return kshim_atomic_add_return
#define atomic_sub_return kshim_atomic_sub_return
#define atomic_inc_return kshim_atomic_inc_return
#define atomic_dec_return kshim_atomic_dec_return
#define atomic_xchg kshim_atomic_xchg
#define atomic_cmpxchg kshim_atomic_cmpxchg
#define atomic_try_cmpxchg kshim_atomic_try_cmpxchg
#define atomic_fetch_add_acquire kshim_atomic_fetch_add_acquire
#define atomic_fetch_sub_acquire kshim_atomic_fetch_sub_acquire
#define atomic_fetch_or_acquire kshim_atomic_fetch_or_acquire
#define atomic_fetch_and_acquire kshim_atomic_fetch_and_acquire
#define atomic_fetch_xor_acquire kshim_atomic_fetch_xor_acquire
#define atomic_fetch_andnot_acquire kshim_atomic_fetch_andnot_acquire
#define atomic_fetch_inc_acquire kshim_atomic_fetch_inc_acquire
#define atomic_fetch_dec_acquire kshim_atomic_fetch_dec_acquire
#define atomic_add_return_acquire kshim_atomic_add_return_acquire
#define atomic_sub_return_acquire kshim_atomic_sub_return_acquire
#define atomic_inc_return_acquire kshim_atomic_inc_return_acquire
#define atomic_dec_return_acquire kshim_atomic_dec_return_acquire
#define atomic_xchg_acquire kshim_atomic_xchg_acquire
#define atomic_cmpxchg_acquire kshim_atomic_cmpxchg_acquire
#define atomic_try_cmpxchg_acquire kshim_atomic_try_cmpxchg_acquire
#define atomic_fetch_add_release kshim_atomic_fetch_add_release
#define atomic_fetch_sub_release kshim_atomic_fetch_sub_release
#define atomic_fetch_or_release kshim_atomic_fetch_or_release
#define atomic_fetch_and_release kshim_atomic_fetch_and_release
#define atomic_fetch_xor_release kshim_atomic_fetch_xor_release
#define atomic_fetch_andnot_release kshim_atomic_fetch_andnot_release
#define atomic_fetch_inc_release kshim_atomic_fetch_inc_release
#define atomic_fetch_dec_release kshim_atomic_fetch_dec_release
#define atomic_add_return_release kshim_atomic_add_return_release
#define atomic_sub_return_release kshim_atomic_sub_return_release
#define atomic_inc_return_release kshim_atomic_inc_return_release
#define atomic_dec_return_release kshim_atomic_dec_return_release
#define atomic_xchg_release kshim_atomic_xchg_release
#define atomic_cmpxchg_release kshim_atomic_cmpxchg_release
#define atomic_try_cmpxchg_release kshim_atomic_try_cmpxchg_release
#define atomic_fetch_add_relaxed kshim_atomic_fetch_add_relaxed
#define atomic_fetch_sub_relaxed kshim_atomic_fetch_sub_relaxed
#define atomic_fetch_or_relaxed kshim_atomic_fetch_or_relaxed
#define atomic_fetch_and_relaxed kshim_atomic_fetch_and_relaxed
#define atomic_fetch_xor_relaxed kshim_atomic_fetch_xor_relaxed
#define atomic_fetch_andnot_relaxed kshim_atomic_fetch_andnot_relaxed
#define atomic_fetch_inc_relaxed kshim_atomic_fetch_inc_relaxed
#define atomic_fetch_dec_relaxed kshim_atomic_fetch_dec_relaxed
#define atomic_add_return_relaxed kshim_atomic_add_return_relaxed
#define atomic_sub_return_relaxed kshim_atomic_sub_return_relaxed
#define atomic_inc_return_relaxed kshim_atomic_inc_return_relaxed
#define atomic_dec_return_relaxed kshim_atomic_dec_return_relaxed
#define atomic_xchg_relaxed kshim_atomic_xchg_relaxed
#define atomic_cmpxchg_relaxed kshim_atomic_cmpxchg_relaxed
#define atomic_try_cmpxchg_relaxed kshim_atomic_try_cmpxchg_relaxed
/* atomic64_t */
#define atomic64_read kshim_atomic_read
#define atomic64_set kshim_atomic_set
#define atomic64_read_acquire kshim_atomic_read_acquire
#define atomic64_set_release kshim_atomic_set_release
#define atomic64_add kshim_atomic_add
#define atomic64_sub kshim_atomic_sub
#define atomic64_or kshim_atomic_or
#define atomic64_and kshim_atomic_and
#define atomic64_xor kshim_atomic_xor
#define atomic64_andnot kshim_atomic_andnot
#define atomic64_inc kshim_atomic_inc
#define atomic64_dec kshim_atomic_dec
#define atomic64_inc_and_test kshim_atomic_inc_and_test
#define atomic64_dec_and_test kshim_atomic_dec_and_test
#define atomic64_sub_and_test kshim_atomic_sub_and_test
#define atomic64_add_negative kshim_atomic_add_negative
#define atomic64_cond_read_relaxed kshim_atomic_cond_read_relaxed
#define atomic64_cond_read_acquire kshim_atomic_cond_read_acquire
#define atomic64_fetch_add kshim_atomic_fetch_add
#define atomic64_fetch_sub kshim_atomic_fetch_sub
#define atomic64_fetch_or kshim_atomic_fetch_or
#define atomic64_fetch_and kshim_atomic_fetch_and
#define atomic64_fetch_xor kshim_atomic_fetch_xor
#define atomic64_fetch_andnot kshim_atomic_fetch_andnot
#define atomic64_fetch_inc kshim_atomic_fetch_inc
#define atomic64_fetch_dec kshim_atomic_fetch_dec
#define atomic64_add_return kshim_atomic_add_return
#define atomic64_sub_return kshim_atomic_sub_return
#define atomic64_inc_return kshim_atomic_inc_return
#define atomic64_dec_return kshim_atomic_dec_return
#define atomic64_xchg kshim_atomic_xchg
#define atomic64_cmpxchg kshim_atomic_cmpxchg
#define atomic64_try_cmpxchg kshim_atomic_try_cmpxchg
#define atomic64_fetch_add_acquire kshim_atomic_fetch_add_acquire
#define atomic64_fetch_sub_acquire kshim_atomic_fetch_sub_acquire
#define atomic64_fetch_or_acquire kshim_atomic_fetch_or_acquire
#define atomic64_fetch_and_acquire kshim_atomic_fetch_and_acquire
#define atomic64_fetch_xor_acquire kshim_atomic_fetch_xor_acquire
#define atomic64_fetch_andnot_acquire kshim_atomic_fetch_andnot_acquire
#define atomic64_fetch_inc_acquire kshim_atomic_fetch_inc_acquire
#define atomic64_fetch_dec_acquire kshim_atomic_fetch_dec_acquire
#define atomic64_add_return_acquire kshim_atomic_add_return_acquire
#define atomic64_sub_return_acquire kshim_atomic_sub_return_acquire
#define atomic64_inc_return_acquire kshim_atomic_inc_return_acquire
#define atomic64_dec_return_acquire kshim_atomic_dec_return_acquire
#define atomic64_xchg_acquire kshim_atomic_xchg_acquire
#define atomic64_cmpxchg_acquire kshim_atomic_cmpxchg_acquire
#define atomic64_try_cmpxchg_acquire kshim_atomic_try_cmpxchg_acquire
#define atomic64_fetch_add_release kshim_atomic_fetch_add_release
#define atomic64_fetch_sub_release kshim_atomic_fetch_sub_release
#define atomic64_fetch_or_release kshim_atomic_fetch_or_release
#define atomic64_fetch_and_release kshim_atomic_fetch_and_release
#define atomic64_fetch_xor_release kshim_atomic_fetch_xor_release
#define atomic64_fetch_andnot_release kshim_atomic_fetch_andnot_release
#define atomic64_fetch_inc_release kshim_atomic_fetch_inc_release
#define atomic64_fetch_dec_release kshim_atomic_fetch_dec_release
#define atomic64_add_return_release kshim_atomic_add_return_release
#define atomic64_sub_return_release kshim_atomic_sub_return_release
#define atomic64_inc_return_release kshim_atomic_inc_return_release
#define atomic64_dec_return_release kshim_atomic_dec_return_release
#define atomic64_xchg_release kshim_atomic_xchg_release
#define atomic64_cmpxchg_release kshim_atomic_cmpxchg_release
#define atomic64_try_cmpxchg_release kshim_atomic_try_cmpxchg_release
#define atomic64_fetch_add_relaxed kshim_atomic_fetch_add_relaxed
#define atomic64_fetch_sub_relaxed kshim_atomic_fetch_sub_relaxed
#define atomic64_fetch_or_relaxed kshim_atomic_fetch_or_relaxed
#define atomic64_fetch_and_relaxed kshim_atomic_fetch_and_relaxed
#define atomic64_fetch_xor_relaxed kshim_atomic_fetch_xor_relaxed
#define atomic64_fetch_andnot_relaxed kshim_atomic_fetch_andnot_relaxed
#define atomic64_fetch_inc_relaxed kshim_atomic_fetch_inc_relaxed
#define atomic64_fetch_dec_relaxed kshim_atomic_fetch_dec_relaxed
#define atomic64_add_return_relaxed kshim_atomic_add_return_relaxed
#define atomic64_sub_return_relaxed kshim_atomic_sub_return_relaxed
#define atomic64_inc_return_relaxed kshim_atomic_inc_return_relaxed
#define atomic64_dec_return_relaxed kshim_atomic_dec_return_relaxed
#define atomic64_xchg_relaxed kshim_atomic_xchg_relaxed
#define atomic64_cmpxchg_relaxed kshim_atomic_cmpxchg_relaxed
#define atomic64_try_cmpxchg_relaxed kshim_atomic_try_cmpxchg_relaxed
/* atomic_long_t */
#define atomic_long_read kshim_atomic_read
#define atomic_long_fetch_add_unless kshim_atomic_fetch_add_unless
#define atomic_long_add_unless kshim_atomic_add_unless
#define atomic_long_set kshim_atomic_set
#define atomic_long_read_acquire kshim_atomic_read_acquire
#define atomic_long_set_release kshim_atomic_set_release
#define atomic_long_add kshim_atomic_add
#define atomic_long_sub kshim_atomic_sub
#define atomic_long_or kshim_atomic_or
#define atomic_long_and kshim_atomic_and
#define atomic_long_xor kshim_atomic_xor
#define atomic_long_andnot kshim_atomic_andnot
#define atomic_long_inc kshim_atomic_inc
#define atomic_long_dec kshim_atomic_dec
#define atomic_long_inc_and_test kshim_atomic_inc_and_test
#define atomic_long_dec_and_test kshim_atomic_dec_and_test
#define atomic_long_sub_and_test kshim_atomic_sub_and_test
#define atomic_long_add_negative kshim_atomic_add_negative
#define atomic_long_cond_read_relaxed kshim_atomic_cond_read_relaxed
#define atomic_long_cond_read_acquire kshim_atomic_cond_read_acquire
#define atomic_long_fetch_add kshim_atomic_fetch_add
#define atomic_long_fetch_sub kshim_atomic_fetch_sub
#define atomic_long_fetch_or kshim_atomic_fetch_or
#define atomic_long_fetch_and kshim_atomic_fetch_and
#define atomic_long_fetch_xor kshim_atomic_fetch_xor
#define atomic_long_fetch_andnot kshim_atomic_fetch_andnot
#define atomic_long_fetch_inc kshim_atomic_fetch_inc
#define atomic_long_fetch_dec kshim_atomic_fetch_dec
#define atomic_long_add_return kshim_atomic_add_return
#define atomic_long_sub_return kshim_atomic_sub_return
#define atomic_long_inc_return kshim_atomic_inc_return
#define atomic_long_dec_return kshim_atomic_dec_return
#define atomic_long_xchg kshim_atomic_xchg
#define atomic_long_cmpxchg kshim_atomic_cmpxchg
#define atomic_long_try_cmpxchg kshim_atomic_try_cmpxchg
#define atomic_long_fetch_add_acquire kshim_atomic_fetch_add_acquire
#define atomic_long_fetch_sub_acquire kshim_atomic_fetch_sub_acquire
#define atomic_long_fetch_or_acquire kshim_atomic_fetch_or_acquire
#define atomic_long_fetch_and_acquire kshim_atomic_fetch_and_acquire
#define atomic_long_fetch_xor_acquire kshim_atomic_fetch_xor_acquire
#define atomic_long_fetch_andnot_acquire kshim_atomic_fetch_andnot_acquire
#define atomic_long_fetch_inc_acquire kshim_atomic_fetch_inc_acquire
#define atomic_long_fetch_dec_acquire kshim_atomic_fetch_dec_acquire
#define atomic_long_add_return_acquire kshim_atomic_add_return_acquire
#define atomic_long_sub_return_acquire kshim_atomic_sub_return_acquire
#define atomic_long_inc_return_acquire kshim_atomic_inc_return_acquire
#define atomic_long_dec_return_acquire kshim_atomic_dec_return_acquire
#define atomic_long_xchg_acquire kshim_atomic_xchg_acquire
#define atomic_long_cmpxchg_acquire kshim_atomic_cmpxchg_acquire
#define atomic_long_try_cmpxchg_acquire kshim_atomic_try_cmpxchg_acquire
#define atomic_long_fetch_add_release kshim_atomic_fetch_add_release
#define atomic_long_fetch_sub_release kshim_atomic_fetch_sub_release
#define atomic_long_fetch_or_release kshim_atomic_fetch_or_release
#define atomic_long_fetch_and_release kshim_atomic_fetch_and_release
#define atomic_long_fetch_xor_release kshim_atomic_fetch_xor_release
#define atomic_long_fetch_andnot_release kshim_atomic_fetch_andnot_release
#define atomic_long_fetch_inc_release kshim_atomic_fetch_inc_release
#define atomic_long_fetch_dec_release kshim_atomic_fetch_dec_release
#define atomic_long_add_return_release kshim_atomic_add_return_release
#define atomic_long_sub_return_release kshim_atomic_sub_return_release
#define atomic_long_inc_return_release kshim_atomic_inc_return_release
#define atomic_long_dec_return_release kshim_atomic_dec_return_release
#define atomic_long_xchg_release kshim_atomic_xchg_release
#define atomic_long_cmpxchg_release kshim_atomic_cmpxchg_release
#define atomic_long_try_cmpxchg_release kshim_atomic_try_cmpxchg_release
#define atomic_long_fetch_add_relaxed kshim_atomic_fetch_add_relaxed
#define atomic_long_fetch_sub_relaxed kshim_atomic_fetch_sub_relaxed
#define atomic_long_fetch_or_relaxed kshim_atomic_fetch_or_relaxed
#define atomic_long_fetch_and_relaxed kshim_atomic_fetch_and_relaxed
#define atomic_long_fetch_xor_relaxed kshim_atomic_fetch_xor_relaxed
#define atomic_long_fetch_andnot_relaxed kshim_atomic_fetch_andnot_relaxed
#define atomic_long_fetch_inc_relaxed kshim_atomic_fetch_inc_relaxed
#define atomic_long_fetch_dec_relaxed kshim_atomic_fetch_dec_relaxed
#define atomic_long_add_return_relaxed kshim_atomic_add_return_relaxed
#define atomic_long_sub_return_relaxed kshim_atomic_sub_return_relaxed
#define atomic_long_inc_return_relaxed kshim_atomic_inc_return_relaxed
#define atomic_long_dec_return_relaxed kshim_atomic_dec_return_relaxed
#define atomic_long_xchg_relaxed kshim_atomic_xchg_relaxed
#define atomic_long_cmpxchg_relaxed kshim_atomic_cmpxchg_relaxed
#define atomic_long_try_cmpxchg_relaxed kshim_atomic_try_cmpxchg_relaxed

#endif /* KSHIM_ATOMIC_H */
