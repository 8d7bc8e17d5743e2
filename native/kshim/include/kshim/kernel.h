/* SPDX-License-Identifier: MIT */
/*
 * kshim/kernel.h - everything else the locking files call: raw spinlocks (the tree's own
 * qspinlock), interrupts and preemption (documented no-ops), per-CPU data, lockdep and the
 * debug hooks (empty: the files are built as a kernel without lock debugging), warnings.
 */
#ifndef KSHIM_KERNEL_H
#define KSHIM_KERNEL_H

#include <kshim/base.h>
#include <kshim/atomic.h>
#include <kshim/sched.h>
#include <asm/qspinlock.h>
#include <linux/cleanup.h>

/* ---- warnings and bugs: one line on stderr, as a kernel prints a WARN or an oops ------------- */
#define WARN_ON(c)                                                                             \
	({                                                                                     \
		bool __c = !!(c);                                                              \
		if (unlikely(__c))                                                             \
			kshim_warn(__FILE__, __LINE__, #c);                                    \
		unlikely(__c);                                                                 \
	})
#define WARN_ON_ONCE(c) WARN_ON(c)
#define WARN(c, ...) WARN_ON(c)
#define WARN_ONCE(c, ...) WARN_ON(c)
#define BUG_ON(c)                                                                              \
	do {                                                                                   \
		if (unlikely(c))                                                               \
			kshim_bug(__FILE__, __LINE__, #c);                                     \
	} while (0)
#define BUG() kshim_bug(__FILE__, __LINE__, "BUG()")
#define DEBUG_LOCKS_WARN_ON(c) WARN_ON(c)
#define SCHED_WARN_ON(c) WARN_ON(c)
#define debug_locks 0
#define debug_locks_off() 0
#define pr_warn(...) ((void)0)
#define pr_info(...) ((void)0)
#define pr_err(...) ((void)0)
#define pr_cont(...) ((void)0)
#define printk(...) ((void)0)
#define printk_deferred(...) ((void)0)

/* ---- preemption and interrupts ------------------------------------------------------------------ */
/*
 * No-ops but for the compiler barrier the kernel's have: a userspace thread cannot stop being
 * preempted or interrupted (see kshim/sched.h for what that changes). In the simulator they
 * count, as the kernel's preempt_count does, and the scheduler model keeps a task whose count
 * is not 0 on its CPU until it is (docs/scheduler.md): spinlocks and interrupts off included.
 */
#ifdef LOCKLAB_SIM
void locklab_sim_preempt_count_add(int delta); /* locklab/sim.h's */
#define kshim_preempt_add(delta) locklab_sim_preempt_count_add(delta)
#else
#define kshim_preempt_add(delta) ((void)0)
#endif
#define preempt_disable() do { barrier(); kshim_preempt_add(1); barrier(); } while (0)
#define preempt_enable() do { barrier(); kshim_preempt_add(-1); barrier(); } while (0)
#define preempt_enable_no_resched() preempt_enable()
#define preempt_disable_notrace() preempt_disable()
#define preempt_enable_notrace() preempt_enable()
#define preempt_count() 0
#define preemptible() 0
#define in_task() 1
#define in_interrupt() 0
#define in_irq() 0
#define in_nmi() 0
#define irqs_disabled() 0
#define local_irq_disable() preempt_disable()
#define local_irq_enable() preempt_enable()
#define local_irq_save(flags) do { (flags) = 0; preempt_disable(); } while (0)
#define local_irq_restore(flags) do { (void)(flags); preempt_enable(); } while (0)
#define might_sleep() ((void)0)
#define might_sleep_if(c) ((void)0)
#define might_resched() ((void)0)
#define migrate_disable() barrier()
#define migrate_enable() barrier()

/* ---- raw spinlocks: the tree's queued spinlock, as on x86 and arm64 ---------------------------- */
#define raw_spin_lock_init(l) do { *(l) = (raw_spinlock_t)__RAW_SPIN_LOCK_UNLOCKED(l); } while (0)
#define raw_spin_lock(l) do { preempt_disable(); queued_spin_lock(&(l)->raw_lock); } while (0)
#define raw_spin_unlock(l) do { queued_spin_unlock(&(l)->raw_lock); preempt_enable(); } while (0)
#define raw_spin_trylock(l)                                                                    \
	({                                                                                     \
		preempt_disable();                                                             \
		int kshim_taken = queued_spin_trylock(&(l)->raw_lock);                         \
		if (!kshim_taken)                                                              \
			preempt_enable();                                                      \
		kshim_taken;                                                                   \
	})
#define raw_spin_is_locked(l) queued_spin_is_locked(&(l)->raw_lock)
#define raw_spin_lock_irq(l) do { local_irq_disable(); raw_spin_lock(l); } while (0)
#define raw_spin_unlock_irq(l) do { raw_spin_unlock(l); local_irq_enable(); } while (0)
#define raw_spin_lock_irqsave(l, flags) do { local_irq_save(flags); raw_spin_lock(l); } while (0)
#define raw_spin_unlock_irqrestore(l, flags)                                                   \
	do {                                                                                   \
		raw_spin_unlock(l);                                                            \
		local_irq_restore(flags);                                                      \
	} while (0)
#define raw_spin_lock_nested(l, subclass) raw_spin_lock(l)
#define raw_spin_lock_nest_lock(l, nest) raw_spin_lock(l)
/* spinlock_t, as a !PREEMPT_RT kernel has it: a raw spinlock. */
typedef struct spinlock {
	struct raw_spinlock rlock;
} spinlock_t;
#define __SPIN_LOCK_UNLOCKED(name) { .rlock = __RAW_SPIN_LOCK_INITIALIZER(name.rlock) }
#define spin_lock_init(l) raw_spin_lock_init(&(l)->rlock)
#define spin_lock(l) raw_spin_lock(&(l)->rlock)
#define spin_unlock(l) raw_spin_unlock(&(l)->rlock)
#define spin_trylock(l) raw_spin_trylock(&(l)->rlock)
#define spin_lock_irqsave(l, f) raw_spin_lock_irqsave(&(l)->rlock, f)
#define spin_unlock_irqrestore(l, f) raw_spin_unlock_irqrestore(&(l)->rlock, f)
#define spin_lock_irq(l) raw_spin_lock_irq(&(l)->rlock)
#define spin_unlock_irq(l) raw_spin_unlock_irq(&(l)->rlock)
#define assert_spin_locked(l) ((void)(l))
/* include/linux/spinlock.h's guards: scoped_guard(raw_spinlock, &l) { ... } */
DEFINE_LOCK_GUARD_1(raw_spinlock, raw_spinlock_t, raw_spin_lock(_T->lock), raw_spin_unlock(_T->lock))
DEFINE_LOCK_GUARD_1(raw_spinlock_irq, raw_spinlock_t, raw_spin_lock_irq(_T->lock),
		    raw_spin_unlock_irq(_T->lock))
DEFINE_LOCK_GUARD_1(raw_spinlock_irqsave, raw_spinlock_t,
		    raw_spin_lock_irqsave(_T->lock, _T->flags),
		    raw_spin_unlock_irqrestore(_T->lock, _T->flags), unsigned long flags)

/* ---- per-CPU data: the kernel's scheme, one copy of the section per CPU id ------------------- */
/*
 * DEFINE_PER_CPU puts the variable in the kshim_percpu section, which then holds the first
 * copy; the runtime gives each CPU id a copy of the whole section and its offset from the
 * first, and per_cpu_ptr() adds that offset, as the kernel adds __per_cpu_offset[cpu].
 */
#define DEFINE_PER_CPU_SECTION(type, name, sec)                                                \
	__attribute__((section("kshim_percpu"), aligned(64))) __typeof__(type) name
#define DEFINE_PER_CPU(type, name) DEFINE_PER_CPU_SECTION(type, name, "")
#define DEFINE_PER_CPU_ALIGNED(type, name) DEFINE_PER_CPU_SECTION(type, name, "")
#define DEFINE_PER_CPU_SHARED_ALIGNED(type, name) DEFINE_PER_CPU_SECTION(type, name, "")
#define DECLARE_PER_CPU(type, name) extern __typeof__(type) name
#define per_cpu_ptr(ptr, cpu) ((__typeof__(ptr))((char *)(ptr) + kshim_percpu_offset[(cpu)]))
#define per_cpu(var, cpu) (*per_cpu_ptr(&(var), cpu))
#define this_cpu_ptr(ptr) per_cpu_ptr(ptr, smp_processor_id())
#define raw_cpu_ptr(ptr) this_cpu_ptr(ptr)
#define this_cpu_read(var) READ_ONCE(*this_cpu_ptr(&(var)))
#define this_cpu_write(var, v) WRITE_ONCE(*this_cpu_ptr(&(var)), (v))
#define __this_cpu_read(var) (*this_cpu_ptr(&(var)))
#define __this_cpu_inc(var) ((*this_cpu_ptr(&(var)))++)
#define __this_cpu_dec(var) ((*this_cpu_ptr(&(var)))--)
#define this_cpu_inc(var) __this_cpu_inc(var)
#define this_cpu_dec(var) __this_cpu_dec(var)
#define this_cpu_add(var, v) ((*this_cpu_ptr(&(var))) += (v))
/* lock_events.h's counters (CONFIG_LOCK_EVENT_COUNTS): kshim/events.c sums them. */
#define raw_cpu_inc(var) __this_cpu_inc(var)
#define raw_cpu_add(var, v) this_cpu_add(var, v)
#define nr_cpu_ids KSHIM_NR_CPUS
#define num_possible_cpus() KSHIM_NR_CPUS
#define prefetch(x) __builtin_prefetch(x)
#define prefetchw(x) arch_prefetchw(x) /* PREFETCHW, as 6.1 on x86 (locklab/arch.h) */

/* ---- lockdep and the lock debug hooks: a kernel without CONFIG_DEBUG_* ------------------------ */
#define lockdep_assert_held(l) ((void)(l))
#define lockdep_assert_held_write(l) ((void)(l))
#define lockdep_assert_held_read(l) ((void)(l))
#define lockdep_assert_irqs_disabled() ((void)0)
#define lockdep_assert_preemption_disabled() ((void)0)
#define lockdep_assert(c) ((void)0)
#define lockdep_assert_once(c) ((void)0)
#define lockdep_init_map(...) ((void)0)
#define lockdep_init_map_wait(...) ((void)0)
#define lockdep_init_map_type(...) ((void)0)
#define lockdep_set_class(lock, key) ((void)(key))
#define lockdep_set_class_and_name(...) ((void)0)
#define lockdep_is_held(l) 1
#define lock_acquire(...) ((void)0)
#define lock_release(...) ((void)0)
#define lock_acquired(...) ((void)0)
#define lock_contended(...) ((void)0)
#define lock_downgrade(...) ((void)0)
#define lock_map_acquire(...) ((void)0)
#define lock_map_release(...) ((void)0)
#define mutex_acquire(...) ((void)0)
#define mutex_acquire_nest(...) ((void)0)
#define mutex_release(...) ((void)0)
#define rwsem_acquire(...) ((void)0)
#define rwsem_acquire_nest(...) ((void)0)
#define rwsem_acquire_read(...) ((void)0)
#define rwsem_release(...) ((void)0)
#define spin_acquire(...) ((void)0)
#define spin_release(...) ((void)0)
#define LOCK_CONTENDED(_lock, try, lock) lock(_lock)
#define LOCK_CONTENDED_RETURN(_lock, try, lock) lock(_lock)
#define debug_check_no_locks_freed(...) ((void)0)
#define trace_contention_begin(...) ((void)0)
#define trace_contention_end(...) ((void)0)
/* The contention tracepoints are compiled out, so there is nothing to export (6.12's mutex.c
 * exports them; linux/tracepoint.h). */
#define EXPORT_TRACEPOINT_SYMBOL(name)
#define EXPORT_TRACEPOINT_SYMBOL_GPL(name)
#define LD_WAIT_SLEEP 0
#define LD_WAIT_SPIN 0
#define LD_WAIT_CONFIG 0
#define LD_WAIT_INV 0
#define LD_LOCK_PERCPU 0
#define SINGLE_DEPTH_NESTING 1
#define STATIC_LOCKDEP_MAP_INIT(name, key) { 0 }

#endif /* KSHIM_KERNEL_H */
