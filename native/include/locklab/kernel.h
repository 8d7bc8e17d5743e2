/* SPDX-License-Identifier: MIT */
/*
 * kernel.h - the Linux kernel's concurrency vocabulary, mapped onto GCC __atomic builtins.
 *
 * Lock files are written in kernel idiom so that a kernel developer can read them against
 * kernel/locking/ and move a patch across in either direction. The mapping follows the
 * kernel memory model (tools/memory-model/Documentation/explanation.txt and
 * Documentation/atomic_t.txt of Linux 6.1):
 *
 *   READ_ONCE / WRITE_ONCE             relaxed load / store (no tearing, no fusing)
 *   smp_load_acquire / smp_store_release   acquire load / release store
 *   xchg, cmpxchg, atomic_*_return     fully ordered: seq_cst RMW
 *   *_acquire / *_release / *_relaxed  the RMW with that ordering
 *   atomic_inc/add/or/andnot (no return value)   relaxed RMW
 *   smp_mb, smp_rmb, smp_wmb, smp_mb__before_atomic, smp_mb__after_atomic,
 *   smp_acquire__after_ctrl_dep        what the kernel emits on this architecture (arch.h)
 *
 * The builtins work on plain integer and pointer objects, like the kernel's accessors, so a lock
 * word is declared as in the kernel (u32, atomic_t, a pointer), not as _Atomic.
 * ThreadSanitizer understands every builtin used here except the stand-alone fences; see
 * "fences" below for how a TSAN build keeps the ordering a barrier gives.
 */
#ifndef LOCKLAB_KERNEL_H
#define LOCKLAB_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "arch.h"

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define barrier() __asm__ __volatile__("" ::: "memory")

/*
 * A lock or unlock that the kernel calls out of line, and so do the ports of its locks:
 * mutex_lock(), down_write() and rt_mutex_lock() are exported functions, x86 builds
 * _raw_spin_lock() out of line (it selects no ARCH_INLINE_SPIN_LOCK), and _raw_spin_unlock()
 * too where PREEMPT_BUILD selects UNINLINE_SPIN_UNLOCK (PREEMPT, PREEMPT_DYNAMIC: Debian's
 * 6.1). The tree's code in its plugin is called so too (native/kshim/plugin.c); docs/locks.md
 * says what inlining the ports cost the comparison.
 */
#define kernel_out_of_line __attribute__((noinline))

/* ---- plain accesses ---------------------------------------------------------------------- */
#define READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, val) __atomic_store_n(&(x), (val), __ATOMIC_RELAXED)
#define smp_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, val) __atomic_store_n((p), (val), __ATOMIC_RELEASE)

/* ---- fences ------------------------------------------------------------------------------- */
/*
 * Every build uses the kernel's per-architecture barriers (arch.h): on x86 smp_mb() is a locked
 * add to the stack, smp_rmb()/smp_wmb() and smp_mb__{before,after}_atomic() are compiler
 * barriers only; on arm64 they are dmb ish / ishld / ishst and dmb ish.
 *
 * ThreadSanitizer does not model stand-alone fences (GCC 12 even refuses
 * __atomic_thread_fence under -fsanitize=thread, and its libtsan would run one as a bare
 * hardware fence with no happens-before), so under TSAN a barrier orders nothing it can see,
 * and TSAN would report races that the barrier prevents. The TSAN build therefore also says
 * the ordering in a way TSAN follows: a relaxed RMW that an smp_mb__before_atomic() or
 * smp_mb__after_atomic() completes is written with MB_ATOMIC_ORDER as its memory order, which
 * is relaxed in the measured builds (the barrier does the work, as in the kernel) and seq_cst
 * under TSAN (a full barrier next to an RMW gives that RMW acquire and release, so this says
 * no more than the pair does). The barrier stays in the TSAN build too, for the hardware. This
 * is the one place where a build is stronger than the kernel, and it is the build that only
 * checks, never measures.
 */
#ifdef __SANITIZE_THREAD__
#define MB_ATOMIC_ORDER __ATOMIC_SEQ_CST
#else
#define MB_ATOMIC_ORDER __ATOMIC_RELAXED
#endif
#define smp_mb() arch_smp_mb()
#define smp_rmb() arch_smp_rmb()
#define smp_wmb() arch_smp_wmb()
#define smp_mb__before_atomic() arch_smp_mb__before_atomic()
#define smp_mb__after_atomic() arch_smp_mb__after_atomic()
/*
 * A read barrier after a control dependency upgrades it to ACQUIRE: smp_rmb(), as
 * include/asm-generic/barrier.h defines it for both x86 and arm64.
 */
#define smp_acquire__after_ctrl_dep() smp_rmb()

/* ---- exchange ----------------------------------------------------------------------------- */
#define xchg(p, new) __atomic_exchange_n((p), (new), __ATOMIC_SEQ_CST)
#define xchg_acquire(p, new) __atomic_exchange_n((p), (new), __ATOMIC_ACQUIRE)
#define xchg_release(p, new) __atomic_exchange_n((p), (new), __ATOMIC_RELEASE)
#define xchg_relaxed(p, new) __atomic_exchange_n((p), (new), __ATOMIC_RELAXED)

/*
 * cmpxchg returns the value found; try_cmpxchg returns success and, on failure, writes the
 * value found into *oldp (so a retry loop needs no extra load).
 */
#define __locklab_cmpxchg(p, old, new, order)                                                  \
	({                                                                                     \
		__typeof__(*(p)) __found = (old);                                              \
		__atomic_compare_exchange_n((p), &__found, (new), false, (order),              \
					    __ATOMIC_RELAXED);                                 \
		__found;                                                                       \
	})
#define cmpxchg(p, old, new) __locklab_cmpxchg(p, old, new, __ATOMIC_SEQ_CST)
#define cmpxchg_acquire(p, old, new) __locklab_cmpxchg(p, old, new, __ATOMIC_ACQUIRE)
#define cmpxchg_release(p, old, new) __locklab_cmpxchg(p, old, new, __ATOMIC_RELEASE)
#define cmpxchg_relaxed(p, old, new) __locklab_cmpxchg(p, old, new, __ATOMIC_RELAXED)

#define try_cmpxchg(p, oldp, new)                                                              \
	__atomic_compare_exchange_n((p), (oldp), (new), false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)
#define try_cmpxchg_acquire(p, oldp, new)                                                      \
	__atomic_compare_exchange_n((p), (oldp), (new), false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
#define try_cmpxchg_release(p, oldp, new)                                                      \
	__atomic_compare_exchange_n((p), (oldp), (new), false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)
#define try_cmpxchg_relaxed(p, oldp, new)                                                      \
	__atomic_compare_exchange_n((p), (oldp), (new), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)

/* ---- atomic_t and atomic_long_t ------------------------------------------------------------ */
typedef struct {
	int counter;
} atomic_t;
typedef struct {
	long counter;
} atomic_long_t;

#define ATOMIC_INIT(i) { (i) }

#define atomic_read(v) READ_ONCE((v)->counter)
#define atomic_set(v, i) WRITE_ONCE((v)->counter, (i))
#define atomic_read_acquire(v) smp_load_acquire(&(v)->counter)
#define atomic_set_release(v, i) smp_store_release(&(v)->counter, (i))

/* Non-value-returning RMWs are unordered in the kernel model. */
#define atomic_add(i, v) ((void)__atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELAXED))
#define atomic_sub(i, v) ((void)__atomic_fetch_sub(&(v)->counter, (i), __ATOMIC_RELAXED))
#define atomic_inc(v) atomic_add(1, v)
#define atomic_dec(v) atomic_sub(1, v)
#define atomic_or(i, v) ((void)__atomic_fetch_or(&(v)->counter, (i), __ATOMIC_RELAXED))
#define atomic_andnot(i, v) ((void)__atomic_fetch_and(&(v)->counter, ~(i), __ATOMIC_RELAXED))

/*
 * Two names are both the kernel's and C11's, with their arguments the other way round:
 * atomic_fetch_add(i, v) and atomic_fetch_or(i, v) here, atomic_fetch_add(obj, arg) in
 * <stdatomic.h>. A file that includes <stdatomic.h> gets C11's, whichever it includes first
 * (after this file, the system header's definitions replace these without a warning); the
 * kernel's with an explicit order (atomic_fetch_add_acquire, ...) stay. docs/locks.md.
 */
#ifndef atomic_fetch_add
#define atomic_fetch_add(i, v) __atomic_fetch_add(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#endif
#ifndef atomic_fetch_or
#define atomic_fetch_or(i, v) __atomic_fetch_or(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#endif
#define atomic_fetch_add_acquire(i, v) __atomic_fetch_add(&(v)->counter, (i), __ATOMIC_ACQUIRE)
#define atomic_fetch_add_release(i, v) __atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELEASE)
#define atomic_fetch_add_relaxed(i, v) __atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELAXED)
#define atomic_fetch_or_acquire(i, v) __atomic_fetch_or(&(v)->counter, (i), __ATOMIC_ACQUIRE)
#define atomic_fetch_andnot_release(i, v)                                                      \
	__atomic_fetch_and(&(v)->counter, ~(i), __ATOMIC_RELEASE)
#define atomic_add_return(i, v) __atomic_add_fetch(&(v)->counter, (i), __ATOMIC_SEQ_CST)
#define atomic_sub_return_release(i, v) __atomic_sub_fetch(&(v)->counter, (i), __ATOMIC_RELEASE)
#define atomic_xchg(v, new) xchg(&(v)->counter, (new))
#define atomic_cmpxchg(v, old, new) cmpxchg(&(v)->counter, (old), (new))
#define atomic_try_cmpxchg(v, oldp, new) try_cmpxchg(&(v)->counter, (oldp), (new))
#define atomic_try_cmpxchg_acquire(v, oldp, new) try_cmpxchg_acquire(&(v)->counter, (oldp), (new))
#define atomic_try_cmpxchg_release(v, oldp, new) try_cmpxchg_release(&(v)->counter, (oldp), (new))
#define atomic_try_cmpxchg_relaxed(v, oldp, new) try_cmpxchg_relaxed(&(v)->counter, (oldp), (new))

/* atomic_long_* share the spelling; the builtins are type-generic. */
#define atomic_long_read atomic_read
#define atomic_long_set atomic_set
#define atomic_long_or atomic_or
#define atomic_long_andnot atomic_andnot
#define atomic_long_cmpxchg atomic_cmpxchg
#define atomic_long_try_cmpxchg atomic_try_cmpxchg
#define atomic_long_try_cmpxchg_acquire atomic_try_cmpxchg_acquire
#define atomic_long_try_cmpxchg_release atomic_try_cmpxchg_release
#define atomic_long_try_cmpxchg_relaxed atomic_try_cmpxchg_relaxed
#define atomic_long_fetch_add_acquire atomic_fetch_add_acquire
#define atomic_long_fetch_add_release atomic_fetch_add_release

/*
 * smp_cond_load_acquire(ptr, cond): spin until cond (written in terms of VAL) holds for the
 * value at ptr, then return that value with ACQUIRE ordering. The relaxed variant gives no
 * ordering. Both spin with cpu_relax(), like the kernel's generic version.
 */
#define smp_cond_load_relaxed(ptr, cond_expr)                                                 \
	({                                                                                     \
		__typeof__(*(ptr)) VAL;                                                        \
		for (;;) {                                                                     \
			VAL = READ_ONCE(*(ptr));                                               \
			if (cond_expr)                                                         \
				break;                                                         \
			cpu_relax();                                                           \
		}                                                                              \
		VAL;                                                                           \
	})
#define smp_cond_load_acquire(ptr, cond_expr)                                                 \
	({                                                                                     \
		__typeof__(*(ptr)) VAL;                                                        \
		for (;;) {                                                                     \
			VAL = smp_load_acquire(ptr);                                           \
			if (cond_expr)                                                         \
				break;                                                         \
			cpu_relax();                                                           \
		}                                                                              \
		VAL;                                                                           \
	})

#endif /* LOCKLAB_KERNEL_H */
