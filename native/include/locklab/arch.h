/* SPDX-License-Identifier: MIT */
/*
 * arch.h - the only architecture-specific code in locklab.
 *
 * Everything else is portable C11 + GCC atomics. Three things cannot be:
 *   cpu_relax()     the spin-wait hint, as the kernel's cpu_relax(): x86 PAUSE (the kernel's
 *                   rep_nop(), the same encoding), arm64 YIELD;
 *   arch_cycles()   a cheap, monotonic, constant-rate counter used to timestamp samples
 *                   (x86 TSC, arm64 CNTVCT_EL0). Converted to ns by a calibration against
 *                   CLOCK_MONOTONIC in the engine, never trusted as a frequency;
 *   the barriers    what the kernel's smp_* barriers compile to on each architecture, as
 *                   arch/{x86,arm64}/include/asm/barrier.h and include/asm-generic/barrier.h of
 *                   Linux 6.1 define them:
 *
 *                                x86-64                            arm64
 *     arch_smp_mb()              lock; addl $0,-4(%rsp)            dmb ish
 *     arch_smp_rmb()             compiler barrier                  dmb ishld
 *     arch_smp_wmb()             compiler barrier                  dmb ishst
 *     arch_smp_mb__before_atomic()
 *     arch_smp_mb__after_atomic()  compiler barrier (see below)    dmb ish (asm-generic: smp_mb)
 *
 *   smp_acquire__after_ctrl_dep() is smp_rmb() on both (asm-generic), so a compiler barrier
 *   on x86 and dmb ishld on arm64; kernel.h spells it so.
 *   arch_prefetchw(p) a prefetch for writing, the kernel's prefetchw() (qspinlock's of the next
 *                   queue node): x86 PREFETCHW, which 6.1 patches in on every CPU with
 *                   3DNOWPREFETCH (arch/x86/include/asm/processor.h; Intel since Broadwell, every
 *                   AMD), arm64 PRFM PSTL1KEEP (arch/arm64/include/asm/processor.h). GCC's
 *                   __builtin_prefetch(p, 1) is not it on x86: without -mprfchw it emits
 *                   PREFETCHT0, a read: with it the tree's qspinlock ran at 0.77 to 0.93
 *                   of its speed with PREFETCHW, 4 to 16 writers on a 16-core Xeon
 *                   (docs/locks.md).
 *
 * Where C11 makes us differ from the kernel, and why:
 *   - x86 smp_mb__{before,after}_atomic: the kernel's is empty (do { } while (0)), because its
 *     atomics are asm statements with a "memory" clobber, so the compiler cannot move accesses
 *     across them, and a locked instruction is a full barrier for the CPU. Our atomics are
 *     __atomic builtins; a relaxed one does not stop the compiler, so ours is barrier(): the
 *     same instructions (none), the same compiler-level ordering as the kernel's.
 *   - The asm barriers are invisible to the C11 memory model: the measured builds order
 *     memory as the kernel does (LKMM, compiled by GCC), not as a C11 proof would. A C11
 *     seq_cst fence would cost the same on x86 (GCC emits lock orq $0,(%rsp)) and more on
 *     arm64 for smp_wmb (a release fence is dmb ish, not dmb ishst).
 *   - ThreadSanitizer does not model fences at all; kernel.h says how TSAN builds cope. (The
 *     generic C11 fences below do not build with GCC's -fsanitize=thread: TSAN builds are
 *     for x86 and arm64.)
 *   - -4(%rsp) lies in the red zone, which a userspace leaf function may use; adding 0 with a
 *     locked add leaves whatever is there unchanged, so the kernel's form is safe here too.
 */
#ifndef LOCKLAB_ARCH_H
#define LOCKLAB_ARCH_H

#include <stdint.h>

#include "cacheline.h"

#if defined(LOCKLAB_SIM)
/*
 * The simulator's build (native/sim/, docs/simulator.md): the pause, the barriers and the
 * counter are the simulated machine's, charged in virtual cycles. The compiler barriers stay,
 * so the compiled code is ordered as the measured build's. smp_mb__{before,after}_atomic()
 * cost what they cost on the profile's architecture (nothing on x86, dmb ish on arm64).
 */
#include <locklab/sim.h>
#define LOCKLAB_SIM_COMPILER_BARRIER() __asm__ __volatile__("" ::: "memory")
static inline void locklab_cpu_relax(void)
{
	LOCKLAB_SIM_COMPILER_BARRIER();
	locklab_sim_relax();
}
#define arch_smp_mb() ({ LOCKLAB_SIM_COMPILER_BARRIER(); locklab_sim_fence(SIM_FENCE_FULL); })
#define arch_smp_rmb() ({ LOCKLAB_SIM_COMPILER_BARRIER(); locklab_sim_fence(SIM_FENCE_READ); })
#define arch_smp_wmb() ({ LOCKLAB_SIM_COMPILER_BARRIER(); locklab_sim_fence(SIM_FENCE_WRITE); })
#define arch_smp_mb__before_atomic()                                                           \
	({ LOCKLAB_SIM_COMPILER_BARRIER(); locklab_sim_fence(SIM_FENCE_ATOMIC); })
#define arch_smp_mb__after_atomic() arch_smp_mb__before_atomic()
static inline uint64_t arch_cycles(void) { return locklab_sim_cycles(); }
/* The model has no prefetchers (docs/simulator.md, "What it ignores"). */
static inline void arch_prefetchw(const void *p) { (void)p; }
#define LOCKLAB_ARCH "simulated"
#elif defined(__x86_64__) || defined(__i386__)
static inline void locklab_cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }
#ifdef __x86_64__
#define arch_smp_mb() __asm__ __volatile__("lock; addl $0,-4(%%rsp)" ::: "memory", "cc")
#else
#define arch_smp_mb() __asm__ __volatile__("lock; addl $0,-4(%%esp)" ::: "memory", "cc")
#endif
#define arch_smp_rmb() __asm__ __volatile__("" ::: "memory")
#define arch_smp_wmb() __asm__ __volatile__("" ::: "memory")
#define arch_smp_mb__before_atomic() __asm__ __volatile__("" ::: "memory")
#define arch_smp_mb__after_atomic() __asm__ __volatile__("" ::: "memory")
static inline uint64_t arch_cycles(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
/* The kernel falls back to PREFETCHT0 without 3DNOWPREFETCH; there PREFETCHW is a no-op. */
static inline void arch_prefetchw(const void *p)
{
	__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
}
#define LOCKLAB_ARCH "x86_64"
#elif defined(__aarch64__)
static inline void locklab_cpu_relax(void) { __asm__ __volatile__("yield" ::: "memory"); }
#define arch_smp_mb() __asm__ __volatile__("dmb ish" ::: "memory")
#define arch_smp_rmb() __asm__ __volatile__("dmb ishld" ::: "memory")
#define arch_smp_wmb() __asm__ __volatile__("dmb ishst" ::: "memory")
#define arch_smp_mb__before_atomic() arch_smp_mb()
#define arch_smp_mb__after_atomic() arch_smp_mb()
static inline uint64_t arch_cycles(void)
{
	uint64_t ticks;
	/* ISB keeps the read from being hoisted above earlier instructions. */
	__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(ticks) :: "memory");
	return ticks;
}
static inline void arch_prefetchw(const void *p)
{
	__asm__ __volatile__("prfm pstl1keep, %a0" : : "p"(p));
}
#define LOCKLAB_ARCH "arm64"
#else
#include <time.h>
/* No kernel mapping to follow: the C11 fences that give at least the kernel's ordering. */
static inline void locklab_cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }
#define arch_smp_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define arch_smp_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define arch_smp_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define arch_smp_mb__before_atomic() arch_smp_mb()
#define arch_smp_mb__after_atomic() arch_smp_mb()
static inline uint64_t arch_cycles(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
static inline void arch_prefetchw(const void *p) { __builtin_prefetch(p, 1); }
#define LOCKLAB_ARCH "generic"
#endif

/*
 * cpu_relax() by the kernel's name, as a macro: a plugin given as C source that defines its own
 * cpu_relax() is compiled in front of the engine's loop, which includes this file
 * (native/engine/source_plugin/loop.c), and keeps its own.
 */
#ifndef cpu_relax
#define cpu_relax() locklab_cpu_relax()
#endif

#endif /* LOCKLAB_ARCH_H */
