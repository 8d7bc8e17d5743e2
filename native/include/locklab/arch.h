/* SPDX-License-Identifier: MIT */
/*
 * arch.h - the only architecture-specific code in locklab.
 *
 * Everything else is portable C11 + GCC atomics. Two things cannot be:
 *   cpu_relax()     the spin-wait hint (x86 PAUSE, arm64 YIELD), as the kernel's cpu_relax();
 *   arch_cycles()   a cheap, monotonic, constant-rate counter used to timestamp samples
 *                   (x86 TSC, arm64 CNTVCT_EL0). Converted to ns by a calibration against
 *                   CLOCK_MONOTONIC in the engine, never trusted as a frequency.
 */
#ifndef LOCKLAB_ARCH_H
#define LOCKLAB_ARCH_H

#include <stdint.h>

/*
 * Alignment for anything written by one thread and read by others. 128, not 64: x86's
 * adjacent-line prefetcher pairs lines, and several arm64 parts have 128-byte lines.
 */
#define LOCKLAB_CACHELINE 128

#if defined(__x86_64__) || defined(__i386__)
static inline void cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }
static inline uint64_t arch_cycles(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#define LOCKLAB_ARCH "x86_64"
#elif defined(__aarch64__)
static inline void cpu_relax(void) { __asm__ __volatile__("yield" ::: "memory"); }
static inline uint64_t arch_cycles(void)
{
	uint64_t ticks;
	/* ISB keeps the read from being hoisted above earlier instructions. */
	__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(ticks) :: "memory");
	return ticks;
}
#define LOCKLAB_ARCH "arm64"
#else
#include <time.h>
static inline void cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }
static inline uint64_t arch_cycles(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
#define LOCKLAB_ARCH "generic"
#endif

#endif /* LOCKLAB_ARCH_H */
