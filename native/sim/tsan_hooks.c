/* SPDX-License-Identifier: MIT */
/*
 * tsan_hooks.c - the entry points GCC's -fsanitize=thread instrumentation calls, as
 * libsanitizer's tsan_interface.h declares them: a hook before each plain load and store (with
 * its address and size), and each atomic as a call that must do the operation itself. Here
 * each one charges the coherence model (coherence.c) and feeds spin recognition (scheduler.c);
 * the atomics then run as plain GCC atomics, since only the baton's holder runs.
 *
 * Memory orders cost nothing of their own: an ordered access costs what the model says a
 * locked instruction or a plain access costs, and fences cost a full barrier where the
 * profile's architecture emits one (locklab_sim_fence; C11 fences below). What a weaker order
 * lets a real core overlap is not modelled.
 */
#include <stdint.h>

#include "runtime.h"

#define ATOMIC_ORDER __ATOMIC_SEQ_CST

/* Where the access is, for the report of the costliest lines (coherence.c): the hooks'
 * return address, since these helpers are inlined into them. */
#define NOTE_PC() (sim_self->pc = __builtin_return_address(0))

static inline __attribute__((always_inline)) void load(const volatile void *p, unsigned int size)
{
	if (sim_self == NULL)
		return;
	NOTE_PC();
	bool hit = sim_access((uintptr_t)p, size, SIM_LOAD);
	uint64_t value = size <= 8 ? sim_peek(p, size) : 0;
	if (size == 8 && sim_self->miss_lag != 0)
		sim_note_loaded(sim_self, value);
	sim_spin_load((uintptr_t)p, size, value, hit);
}

static inline __attribute__((always_inline)) void store(volatile void *p, unsigned int size,
							  enum sim_access kind)
{
	if (sim_self == NULL)
		return;
	NOTE_PC();
	sim_spin_dirty();
	sim_access((uintptr_t)p, size, kind);
}

/*
 * A read-modify-write is charged before it runs; afterwards, one that hit a line this CPU
 * already held and left memory as it was (a test-and-set of a taken lock, a failed CAS) is
 * a poll for spin recognition: nobody else can see it. Any other is a write.
 */
static inline __attribute__((always_inline)) bool rmw_begin(volatile void *p, unsigned int size,
							      uint64_t *before)
{
	if (sim_self == NULL)
		return false;
	NOTE_PC();
	bool hit = sim_access((uintptr_t)p, size, SIM_RMW);
	*before = sim_peek(p, size);
	return hit;
}

static inline void rmw_end(volatile void *p, unsigned int size, bool hit, uint64_t before)
{
	if (sim_self == NULL)
		return;
	uint64_t after = sim_peek(p, size);
	if (hit && after == before)
		sim_spin_load((uintptr_t)p, size, after, true);
	else
		sim_spin_dirty();
}

void __tsan_init(void);
void __tsan_init(void) { sim_runtime_init(); }
void __tsan_func_entry(void *pc);
void __tsan_func_exit(void);
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void) {}

#define PLAIN_ACCESS(size)                                                                     \
	void __tsan_read##size(void *p);                                                       \
	void __tsan_read##size(void *p) { load(p, size); }                                     \
	void __tsan_write##size(void *p);                                                      \
	void __tsan_write##size(void *p) { store(p, size, SIM_STORE); }                        \
	void __tsan_unaligned_read##size(void *p);                                             \
	void __tsan_unaligned_read##size(void *p) { load(p, size); }                           \
	void __tsan_unaligned_write##size(void *p);                                            \
	void __tsan_unaligned_write##size(void *p) { store(p, size, SIM_STORE); }              \
	void __tsan_volatile_read##size(void *p);                                              \
	void __tsan_volatile_read##size(void *p) { load(p, size); }                            \
	void __tsan_volatile_write##size(void *p);                                             \
	void __tsan_volatile_write##size(void *p) { store(p, size, SIM_STORE); }

PLAIN_ACCESS(1)
PLAIN_ACCESS(2)
PLAIN_ACCESS(4)
PLAIN_ACCESS(8)
PLAIN_ACCESS(16)

/* Structure copies: each line once, and a loop that copies is not a spin. */
static inline __attribute__((always_inline)) void range(void *p, unsigned long size,
							 enum sim_access kind)
{
	if (sim_self == NULL || size == 0)
		return;
	NOTE_PC();
	sim_spin_dirty();
	uintptr_t line_bytes = (uintptr_t)1 << sim_machine.line_shift;
	uintptr_t first = (uintptr_t)p & ~(line_bytes - 1);
	for (uintptr_t a = first; a < (uintptr_t)p + size; a += line_bytes)
		sim_access(a, (unsigned int)line_bytes, kind);
}

void __tsan_read_range(void *p, unsigned long size);
void __tsan_read_range(void *p, unsigned long size) { range(p, size, SIM_LOAD); }
void __tsan_write_range(void *p, unsigned long size);
void __tsan_write_range(void *p, unsigned long size) { range(p, size, SIM_STORE); }

/*
 * A C11 fence costs what the compiler emits for it on the profile's architecture, the
 * mapping of Sewell et al.'s "C/C++11 mappings to processors"
 * (https://www.cl.cam.ac.uk/~pes20/cpp/cpp0xmappings.html), which GCC 12 follows:
 *
 *   order               x86-64               arm64        charged as
 *   relaxed             nothing              nothing      nothing
 *   acquire, consume    compiler barrier     dmb ishld    SIM_FENCE_READ (smp_rmb())
 *   release, acq_rel    compiler barrier     dmb ish      SIM_FENCE_ATOMIC (full on arm64)
 *   seq_cst             lock orq $0,(%rsp)   dmb ish      SIM_FENCE_FULL (smp_mb())
 *
 * A release fence is dmb ish, not the kernel's smp_wmb() (dmb ishst): it must also order
 * the loads before it. GCC reaches this hook only with -Wtsan off (the Makefile's CFLAGS_sim).
 */
void __tsan_atomic_thread_fence(int order);
void __tsan_atomic_thread_fence(int order)
{
	switch (order) {
	case __ATOMIC_RELAXED:
		return;
	case __ATOMIC_CONSUME:
	case __ATOMIC_ACQUIRE:
		locklab_sim_fence(SIM_FENCE_READ);
		return;
	case __ATOMIC_RELEASE:
	case __ATOMIC_ACQ_REL:
		locklab_sim_fence(SIM_FENCE_ATOMIC);
		return;
	default:
		locklab_sim_fence(SIM_FENCE_FULL);
	}
}
void __tsan_atomic_signal_fence(int order);
void __tsan_atomic_signal_fence(int order) { (void)order; }

#define ATOMICS(bits, type)                                                                    \
	type __tsan_atomic##bits##_load(const volatile type *a, int mo);                       \
	type __tsan_atomic##bits##_load(const volatile type *a, int mo)                        \
	{                                                                                      \
		(void)mo;                                                                      \
		load(a, sizeof(type));                                                         \
		return __atomic_load_n(a, ATOMIC_ORDER);                                       \
	}                                                                                      \
	void __tsan_atomic##bits##_store(volatile type *a, type v, int mo);                    \
	void __tsan_atomic##bits##_store(volatile type *a, type v, int mo)                     \
	{                                                                                      \
		(void)mo;                                                                      \
		store(a, sizeof(type), SIM_STORE);                                             \
		__atomic_store_n(a, v, ATOMIC_ORDER);                                          \
	}                                                                                      \
	RMW(bits, type, exchange, __atomic_exchange_n)                                         \
	RMW(bits, type, fetch_add, __atomic_fetch_add)                                         \
	RMW(bits, type, fetch_sub, __atomic_fetch_sub)                                         \
	RMW(bits, type, fetch_and, __atomic_fetch_and)                                         \
	RMW(bits, type, fetch_or, __atomic_fetch_or)                                           \
	RMW(bits, type, fetch_xor, __atomic_fetch_xor)                                         \
	RMW(bits, type, fetch_nand, __atomic_fetch_nand)                                       \
	/* Each of the three inlines the compare-and-swap, so NOTE_PC names its caller. */      \
	static inline __attribute__((always_inline)) int cas##bits(volatile type *a, type *c,  \
								   type v)                     \
	{                                                                                      \
		uint64_t before = 0;                                                           \
		bool hit = rmw_begin(a, sizeof(type), &before);                                \
		int done = __atomic_compare_exchange_n(a, c, v, false, ATOMIC_ORDER,           \
						       ATOMIC_ORDER);                          \
		rmw_end(a, sizeof(type), hit, before);                                         \
		return done;                                                                   \
	}                                                                                      \
	CAS_HOOK(bits, type, strong)                                                           \
	CAS_HOOK(bits, type, weak) /* a weak one never fails spuriously here */                \
	type __tsan_atomic##bits##_compare_exchange_val(volatile type *a, type c, type v,      \
							int mo, int fail_mo);                  \
	type __tsan_atomic##bits##_compare_exchange_val(volatile type *a, type c, type v,      \
							int mo, int fail_mo)                   \
	{                                                                                      \
		(void)mo;                                                                      \
		(void)fail_mo;                                                                 \
		cas##bits(a, &c, v);                                                           \
		return c;                                                                      \
	}

/* __tsan_atomicN_compare_exchange_{strong,weak}: the same CAS, inlined into each. */
#define CAS_HOOK(bits, type, kind)                                                             \
	int __tsan_atomic##bits##_compare_exchange_##kind(volatile type *a, type *c, type v,   \
							  int mo, int fail_mo);                \
	int __tsan_atomic##bits##_compare_exchange_##kind(volatile type *a, type *c, type v,   \
							  int mo, int fail_mo)                 \
	{                                                                                      \
		(void)mo;                                                                      \
		(void)fail_mo;                                                                 \
		return cas##bits(a, c, v);                                                     \
	}

/* A failed compare-and-swap still takes the line exclusive, as a locked cmpxchg does. */
#define RMW(bits, type, name, builtin)                                                         \
	type __tsan_atomic##bits##_##name(volatile type *a, type v, int mo);                   \
	type __tsan_atomic##bits##_##name(volatile type *a, type v, int mo)                    \
	{                                                                                      \
		(void)mo;                                                                      \
		uint64_t before = 0;                                                           \
		bool hit = rmw_begin(a, sizeof(type), &before);                                \
		type old = builtin(a, v, ATOMIC_ORDER);                                        \
		rmw_end(a, sizeof(type), hit, before);                                         \
		return old;                                                                    \
	}

ATOMICS(8, uint8_t)
ATOMICS(16, uint16_t)
ATOMICS(32, uint32_t)
ATOMICS(64, uint64_t)

/* ---- what arch.h's cpu_relax(), barriers and cycle counter become --------------------------- */
void locklab_sim_relax(void)
{
	struct sim_thread *self = sim_self;
	if (self == NULL)
		return;
	self->clock += sim_machine.costs.cpu_relax;
	sim_spin_iteration_end();
}

/*
 * A full barrier drains the store buffer: about a locked instruction's cost. The read and
 * write barriers are compiler barriers on x86 and cheap on arm64: the model charges nothing.
 * SIM_FENCE_ATOMIC is a full barrier on arm64 only: smp_mb__{before,after}_atomic() (arch.h's
 * table), and a C11 release or acq_rel fence (dmb ish there, nothing on x86).
 */
void locklab_sim_fence(enum locklab_sim_fence kind)
{
	if (sim_self == NULL)
		return;
	if (kind == SIM_FENCE_FULL || (kind == SIM_FENCE_ATOMIC && sim_machine_is_arm64())) {
		sim_drain_stores(sim_self);
		sim_self->clock += sim_machine.costs.atomic;
	}
}

uint64_t locklab_sim_cycles(void)
{
	if (sim_self == NULL)
		return 0;
	sim_spin_clock_read();
	return sim_self->clock;
}

void locklab_sim_work(uint64_t cycles)
{
	if (sim_self == NULL)
		return;
	sim_spin_dirty();
	sim_self->clock += cycles;
	sim_rq_check(sim_self);
}

__attribute__((constructor)) static void start_runtime(void) { sim_runtime_init(); }
