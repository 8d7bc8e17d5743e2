/* SPDX-License-Identifier: MIT */
/*
 * kshim/base.h - the kernel's C environment for the tree's own lock files, in userspace.
 *
 * locklab compiles kernel/locking/{rtmutex_api,mutex,osq_lock,rwsem,qspinlock}.c from an
 * installed kernel tree, unmodified but for the user's patches, against these headers, as the
 * kernel's own userspace harnesses (tools/testing/radix-tree, memblock, vma) compile kernel
 * files against tools/include. Every linux/ header this folder holds is a thin name for a part of
 * this file or of the runtime (native/kshim/runtime.c); the lock types themselves
 * (linux/rtmutex.h, mutex.h, rwsem.h, osq_lock.h, asm-generic/qspinlock*.h, rbtree*.h, list.h,
 * sched/wake_q.h) come from the tree.
 *
 * Memory ordering is mapped as the kernel maps it (Documentation/atomic_t.txt,
 * Documentation/memory-barriers.txt, Linux 6.1 and 6.12), on x86-64 and arm64:
 *   READ_ONCE / WRITE_ONCE               relaxed atomic load / store
 *   smp_load_acquire / smp_store_release acquire load / release store
 *   RMW that returns a value, no suffix  seq_cst (fully ordered)
 *   _acquire / _release / _relaxed RMW   that order
 *   RMW that returns nothing (atomic_or) relaxed
 *   smp_mb, smp_rmb, smp_wmb, smp_mb__{before,after}_atomic   the kernel's instructions on
 *                                        this architecture (locklab/arch.h)
 *   plain accesses                       left plain, so ThreadSanitizer sees them as KCSAN does
 *
 * ThreadSanitizer and fences: TSAN models acquire and release, never a stand-alone fence or a
 * dependency, and the kernel orders marked accesses with both (qspinlock publishes a queue
 * node with smp_wmb() and a relaxed xchg, and its successor writes through the pointer it
 * read). In the TSAN build, the build that checks and never measures, marked accesses carry
 * the ordering those fences and dependencies give: READ_ONCE is an acquire load, WRITE_ONCE a
 * release store, and relaxed and acquire RMWs are acq_rel. The last also stands for what
 * orders a task's creation before it can own a lock (fork and the scheduler, in the kernel):
 * the shim makes a thread's task on its first lock call, and publishes it by the acquire RMW
 * that takes the lock (lock->owner). TSAN then reports what KCSAN reports: plain
 * accesses that race with another access, marked or not (KCSAN ignores marked-marked pairs
 * too). The measured builds map every access as the kernel does.
 */
#ifndef KSHIM_BASE_H
#define KSHIM_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <locklab/arch.h>

#include "../../host.h"

/* ---- the configuration the files are compiled for ----------------------------------------- */
/* A 64-bit SMP kernel without lock debugging, lockdep, paravirt spinlocks or PREEMPT_RT. */
#define CONFIG_SMP 1
#define CONFIG_64BIT 1
#define CONFIG_RT_MUTEXES 1
#define CONFIG_MUTEX_SPIN_ON_OWNER 1
#define CONFIG_RWSEM_SPIN_ON_OWNER 1
#define CONFIG_NR_CPUS KSHIM_NR_CPUS
#define BITS_PER_LONG 64
#define BITS_PER_BYTE 8
#define NR_CPUS KSHIM_NR_CPUS
#define __LITTLE_ENDIAN 1234
#define __LITTLE_ENDIAN_BITFIELD 1

/* ---- types ----------------------------------------------------------------------------------- */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;
typedef u8 __u8;
typedef u16 __u16;
typedef u32 __u32;
typedef u64 __u64;
typedef s32 __s32;
typedef s64 __s64;
typedef long ssize_t;
typedef int pid_t;
typedef unsigned int gfp_t;
typedef long long ktime_t;
typedef long long loff_t; /* 6.12's lock_events.h declares lockevent_read() with it */
typedef u32 uid_t;
typedef struct {
	int counter;
} atomic_t;
typedef struct {
	s64 counter;
} atomic64_t;
typedef atomic64_t atomic_long_t;
struct list_head {
	struct list_head *next, *prev;
};
struct hlist_head {
	struct hlist_node *first;
};
struct hlist_node {
	struct hlist_node *next, **pprev;
};
struct file; /* named by lockevent_read()'s declaration (6.12), never used */
struct lock_class_key {
	char unused;
};
struct lockdep_map {
	char unused;
};
struct callback_head {
	struct callback_head *next;
	void (*func)(struct callback_head *head);
};
#define rcu_head callback_head

/* ---- compiler ---------------------------------------------------------------------------------- */
#undef __always_inline /* glibc's sys/cdefs.h, through stdint.h, has one too */
#define __always_inline inline __attribute__((__always_inline__))
#define noinline __attribute__((__noinline__))
#define __noreturn __attribute__((__noreturn__))
#define __cold __attribute__((__cold__))
#define __pure __attribute__((__pure__))
#define __aligned(x) __attribute__((__aligned__(x)))
#define __packed __attribute__((__packed__))
#define __maybe_unused __attribute__((__unused__))
#define __always_unused __attribute__((__unused__))
#define __used __attribute__((__used__))
#define __weak __attribute__((__weak__))
#define __cleanup(func) __attribute__((__cleanup__(func)))
#define __must_check __attribute__((__warn_unused_result__))
#define __section(s) __attribute__((__section__(s)))
#define __printf(a, b) __attribute__((__format__(printf, a, b)))
#define __latent_entropy
#define __randomize_layout
#define __no_randomize_layout
#define __sched
#define __lockfunc
#define __init
#define __initdata
#define __read_mostly
#define __ro_after_init
#define __visible
#define __force
#define __user
#define __iomem
#define __rcu
#define __percpu
#define __private
#define __acquires(x)
#define __releases(x)
#define __acquire(x) ((void)0)
#define __release(x) ((void)0)
#define __cond_lock(x, c) (c)
#define __must_hold(x)
#define __no_kcsan
#define noinstr
#define notrace
#define asmlinkage
#define __ACCESS_PRIVATE(p, member) ((p)->member)
#define ACCESS_PRIVATE(p, member) ((p)->member)
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define barrier() __asm__ __volatile__("" ::: "memory")
#define fallthrough __attribute__((__fallthrough__))
#define __same_type(a, b) __builtin_types_compatible_p(__typeof__(a), __typeof__(b))
#define __is_constexpr(x) (sizeof(int) == sizeof(*(8 ? ((void *)((long)(x) * 0l)) : (int *)8)))
#define BUILD_BUG_ON(cond) _Static_assert(!(cond), "BUILD_BUG_ON: " #cond)
#define BUILD_BUG_ON_MSG(cond, msg) _Static_assert(!(cond), msg)
#define BUILD_BUG() __builtin_trap()
#define __stringify_1(x) #x
#define __stringify(x) __stringify_1(x)
/* linux/compiler_types.h and compiler.h: a fresh name per use (6.12's scoped_guard() labels). */
#define ___PASTE(a, b) a##b
#define __PASTE(a, b) ___PASTE(a, b)
#define __UNIQUE_ID(prefix) __PASTE(__PASTE(__UNIQUE_ID_, prefix), __COUNTER__)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define offsetof_end(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))
#define container_of(ptr, type, member)                                                        \
	({                                                                                     \
		void *__mptr = (void *)(ptr);                                                  \
		((type *)((char *)__mptr - offsetof(type, member)));                           \
	})
#define container_of_const container_of
#define typeof_member(T, m) __typeof__(((T *)0)->m)
#define __scalar_type_to_unsigned_cases(type)                                                  \
	unsigned type : (unsigned type)0, signed type : (signed type)0
#define __unqual_scalar_typeof(x)                                                              \
	__typeof__(_Generic((x), char : (char)0, __scalar_type_to_unsigned_cases(char),        \
			    __scalar_type_to_unsigned_cases(short),                            \
			    __scalar_type_to_unsigned_cases(int),                              \
			    __scalar_type_to_unsigned_cases(long),                             \
			    __scalar_type_to_unsigned_cases(long long), default : (x)))
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define BIT(n) (1UL << (n))
#define GENMASK(h, l) (((~0UL) << (l)) & (~0UL >> (BITS_PER_LONG - 1 - (h))))
#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))
#define IS_ENABLED(option) __is_defined(option)
#define __is_defined(x) ___is_defined(x)
#define ___is_defined(val) ____is_defined(__ARG_PLACEHOLDER_##val)
#define __ARG_PLACEHOLDER_1 0,
#define ____is_defined(arg1_or_junk) __take_second_arg(arg1_or_junk 1, 0)
#define __take_second_arg(__ignored, val, ...) val
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define EXPORT_SYMBOL_NS_GPL(sym, ns)
#define L1_CACHE_BYTES 64
#define SMP_CACHE_BYTES L1_CACHE_BYTES
#define ____cacheline_aligned __attribute__((__aligned__(SMP_CACHE_BYTES)))
#define ____cacheline_aligned_in_smp ____cacheline_aligned
#define __cacheline_aligned ____cacheline_aligned
#define NULL_PTR ((void *)0)
#define ERR_PTR(err) ((void *)(long)(err))
#define PTR_ERR(p) ((long)(p))
#define IS_ERR(p) unlikely((unsigned long)(void *)(p) >= (unsigned long)-4095)
#define EINTR 4
#define EAGAIN 11
#define EBUSY 16
#define EINVAL 22
#define EDEADLK 35
#define EDEADLOCK EDEADLK
#define EALREADY 114
#define ETIMEDOUT 110
#define EOWNERDEAD 130
#define ENOLCK 37
/* include/linux/string.h: the compiler's own, as the kernel's x86-64 build gets them inline. */
#define memset __builtin_memset
#define memcpy __builtin_memcpy
#define memcmp __builtin_memcmp
#define LIST_POISON1 ((void *)0x100) /* include/linux/poison.h, without an offset */
#define LIST_POISON2 ((void *)0x122)
#define _RET_IP_ ((unsigned long)__builtin_return_address(0))
#define _THIS_IP_ ({ __label__ __here; __here: (unsigned long)&&__here; })

/* ---- marked accesses -------------------------------------------------------------------------- */
#ifdef __SANITIZE_THREAD__
#define KSHIM_ONCE_LOAD __ATOMIC_ACQUIRE  /* see the header comment: TSAN sees no fences */
#define KSHIM_ONCE_STORE __ATOMIC_RELEASE
#define KSHIM_RELAXED_RMW __ATOMIC_ACQ_REL
#define KSHIM_ACQUIRE_RMW __ATOMIC_ACQ_REL
#else
#define KSHIM_ONCE_LOAD __ATOMIC_RELAXED
#define KSHIM_ONCE_STORE __ATOMIC_RELAXED
#define KSHIM_RELAXED_RMW __ATOMIC_RELAXED
#define KSHIM_ACQUIRE_RMW __ATOMIC_ACQUIRE
#endif
/* Relaxed atomics on the object as declared: a pointer or an integer. */
#define READ_ONCE(x)                                                                           \
	({                                                                                     \
		__unqual_scalar_typeof(x) __v = __atomic_load_n(&(x), KSHIM_ONCE_LOAD);        \
		__v;                                                                           \
	})
#define WRITE_ONCE(x, val) __atomic_store_n(&(x), (val), KSHIM_ONCE_STORE)
#define data_race(expr) (expr)
#define smp_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* ---- RCU (rbtree.h uses it): the locking files only read under rcu_read_lock() what tasks keep alive ------------- */
#define rcu_read_lock() barrier()
#define rcu_read_unlock() barrier()
#define rcu_assign_pointer(p, v) smp_store_release(&(p), (v))
#define rcu_dereference(p) READ_ONCE(p)
#define rcu_dereference_raw(p) READ_ONCE(p) /* 6.12's rb_find_rcu(); no lockdep check to skip */
#define RCU_INIT_POINTER(p, v) WRITE_ONCE(p, v)

/* ---- barriers: what the kernel emits on this architecture (locklab/arch.h) -------------------- */
#define mb() smp_mb()
#define rmb() smp_rmb()
#define wmb() smp_wmb()
#define smp_mb() arch_smp_mb()
#define smp_rmb() arch_smp_rmb()
#define smp_wmb() arch_smp_wmb()
#define smp_mb__before_atomic() arch_smp_mb__before_atomic()
#define smp_mb__after_atomic() arch_smp_mb__after_atomic()
#define smp_mb__after_spinlock() smp_mb()
#define smp_mb__after_unlock_lock() do { } while (0)
#define smp_acquire__after_ctrl_dep() smp_rmb()
#define smp_store_mb(var, value) do { WRITE_ONCE(var, value); smp_mb(); } while (0)

/* ---- RMW on plain objects (xchg, cmpxchg families) -------------------------------------------- */
#define kshim_xchg(p, n, o) ({ __atomic_exchange_n((p), (n), (o)); })
#define xchg(p, n) kshim_xchg(p, n, __ATOMIC_SEQ_CST)
#define xchg_acquire(p, n) kshim_xchg(p, n, KSHIM_ACQUIRE_RMW)
#define xchg_release(p, n) kshim_xchg(p, n, __ATOMIC_RELEASE)
#define xchg_relaxed(p, n) kshim_xchg(p, n, KSHIM_RELAXED_RMW)
/* The failure order: the success order without its release half. */
#define kshim_fail_order(o)                                                                   \
	((o) == __ATOMIC_SEQ_CST ? __ATOMIC_SEQ_CST                                            \
	 : ((o) == __ATOMIC_ACQUIRE || (o) == __ATOMIC_ACQ_REL) ? __ATOMIC_ACQUIRE             \
								 : __ATOMIC_RELAXED)
#define kshim_cmpxchg(p, old, n, o)                                                            \
	({                                                                                     \
		__typeof__(*(p)) __found = (old);                                              \
		__atomic_compare_exchange_n((p), &__found, (n), false, (o),                    \
					    kshim_fail_order(o));                              \
		__found;                                                                       \
	})
#define kshim_try_cmpxchg(p, oldp, n, o)                                                       \
	__atomic_compare_exchange_n((p), (oldp), (n), false, (o), kshim_fail_order(o))
#define cmpxchg(p, o, n) kshim_cmpxchg(p, o, n, __ATOMIC_SEQ_CST)
#define cmpxchg_acquire(p, o, n) kshim_cmpxchg(p, o, n, KSHIM_ACQUIRE_RMW)
#define cmpxchg_release(p, o, n) kshim_cmpxchg(p, o, n, __ATOMIC_RELEASE)
#define cmpxchg_relaxed(p, o, n) kshim_cmpxchg(p, o, n, KSHIM_RELAXED_RMW)
#define try_cmpxchg(p, op, n) kshim_try_cmpxchg(p, op, n, __ATOMIC_SEQ_CST)
#define try_cmpxchg_acquire(p, op, n) kshim_try_cmpxchg(p, op, n, KSHIM_ACQUIRE_RMW)
#define try_cmpxchg_release(p, op, n) kshim_try_cmpxchg(p, op, n, __ATOMIC_RELEASE)
#define try_cmpxchg_relaxed(p, op, n) kshim_try_cmpxchg(p, op, n, KSHIM_RELAXED_RMW)

/*
 * smp_cond_load_*(ptr, cond): spin with cpu_relax() until cond (in terms of VAL) holds; the
 * acquire form orders what follows after the load that saw it (asm-generic/barrier.h; arm64
 * waits in WFE on the line instead, an energy difference, not an ordering one).
 */
#define smp_cond_load_relaxed(ptr, cond_expr)                                                 \
	({                                                                                     \
		__unqual_scalar_typeof(*(ptr)) VAL;                                            \
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
		__unqual_scalar_typeof(*(ptr)) __val = smp_cond_load_relaxed(ptr, cond_expr); \
		smp_acquire__after_ctrl_dep(); /* under TSAN the last READ_ONCE is the acquire */ \
		__val;                                                                         \
	})

#endif /* KSHIM_BASE_H */
