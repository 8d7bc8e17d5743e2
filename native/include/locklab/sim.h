/* SPDX-License-Identifier: MIT */
/*
 * sim.h - what code compiled for the simulator (-DLOCKLAB_SIM) calls in locklab's simulation
 * runtime (native/sim/), besides the ThreadSanitizer hooks GCC inserts at every access.
 *
 * In that build the three things arch.h maps per architecture become virtual: cpu_relax()
 * costs the machine profile's pause, the barriers cost what a full barrier costs there, and
 * arch_cycles() reads the calling virtual CPU's clock. Everything else (time, futexes,
 * sched_yield, threads, pinning) is intercepted by the runtime at the C library's functions,
 * so the engine and the locks compile unchanged. See docs/simulator.md.
 */
#ifndef LOCKLAB_SIM_H
#define LOCKLAB_SIM_H

#include <stdint.h>

/* ATOMIC: a full barrier on arm64 and none on x86: smp_mb__{before,after}_atomic(), and a C11
 * release or acq_rel fence (tsan_hooks.c). */
enum locklab_sim_fence { SIM_FENCE_FULL, SIM_FENCE_READ, SIM_FENCE_WRITE, SIM_FENCE_ATOMIC };

void locklab_sim_relax(void);
void locklab_sim_fence(enum locklab_sim_fence kind);
uint64_t locklab_sim_cycles(void);
/* The busy loop of --hold-ns/--gap-ns and the engine's delays: time passes, nothing is read. */
void locklab_sim_work(uint64_t cycles);
double locklab_sim_cycles_per_ns(void);

/* The calling thread's word that says whether it is on its CPU (the kernel shim's task->on_cpu,
 * which owner spinning polls): while the scheduler model has switched the thread out for
 * another, the word holds `off`, stored as the thread's own store on its CPU, as the kernel's
 * scheduler stores it there; then what it held before. */
void locklab_sim_on_cpu_word(int *word, int off);
/* The task whose on-CPU word that is now runs at the kernel's priority `prio` (0 to 98:
 * real-time, highest first; 99 and above: the fair class): a priority-inheritance boost
 * (rt_mutex_setprio()), or its end. */
void locklab_sim_boost(int *on_cpu_word, int prio);
/* The calling task's preemption count (the kernel shim's preempt_disable() and spinlocks):
 * while it is not 0 the scheduler model keeps the task on its CPU, and when it is back to 0 a
 * preemption that waited happens. */
void locklab_sim_preempt_count_add(int delta);
/* The kernel's need_resched(): the calling task's CPU has another to run and its turn is over. */
int locklab_sim_need_resched(void);
/* The calling thread's virtual CPU now, and how often the scheduler model moved it (the
 * kernel's se.nr_migrations). */
int locklab_sim_current_cpu(void);
uint64_t locklab_sim_migrations(void);

/* The simulated machine, for the engine's topology (one call per CPU, 0..cpus-1). */
struct locklab_sim_cpu {
	int package;
	int core; /* within the package */
	int node;
	int smt_rank;
};
int locklab_sim_cpu_count(void);
void locklab_sim_cpu_at(int cpu, struct locklab_sim_cpu *out);
const char *locklab_sim_machine_name(void);
/* Whose placement rules the scheduler model follows: "linux-4.20" or "linux-6.1". */
const char *locklab_sim_sched_rules(void);
const char *locklab_sim_machine_summary(void);
const char *locklab_sim_machine_arch(void);

/* Where a line came from when a virtual CPU missed: the distance classes the report splits. */
enum locklab_sim_distance {
	SIM_FROM_SMT_SIBLING,
	SIM_FROM_SAME_LLC,
	SIM_FROM_SAME_SOCKET,
	SIM_FROM_OTHER_SOCKET,
	SIM_FROM_MEMORY,
	SIM_DISTANCES,
};
extern const char *const locklab_sim_distance_names[SIM_DISTANCES];

/* Totals over every thread the run created (the control thread's own traffic left out). */
struct locklab_sim_counts {
	uint64_t transfers[SIM_DISTANCES];
	uint64_t spin_parks;    /* spinners parked until their line changed */
	uint64_t futex_sleeps;  /* futex waits that slept */
	uint64_t switches;      /* host context switches the simulation made */
	uint64_t virtual_cycles; /* the latest clock of any thread */
};
void locklab_sim_counts(struct locklab_sim_counts *out);
void locklab_sim_set_seed(uint64_t seed); /* the order of ties (scheduler.c) */
uint64_t locklab_sim_seed(void);
/* The host seconds the simulation has taken so far. */
double locklab_sim_host_seconds(void);
/* The acquisitions the control thread has seen, at each of its ticks; NULL, or the line that says
 * the run has spent the simulator's limit of host time without one (its watchdog's reason). */
const char *locklab_sim_progress(uint64_t acquisitions);
/* Where each thread is (state, virtual CPU, clock, what it waits on): a watchdog's report. */
void locklab_sim_describe_threads(void);
/* Locks whose waiting happens in code locklab does not compile (glibc's, the kernel's PI futex). */
const char *locklab_sim_unsupported_lock(const char *name);
/* Why the plugin at `path` cannot run in the simulator (built without its instrumentation), or NULL. */
const char *locklab_sim_uninstrumented_plugin(const char *path);

#endif /* LOCKLAB_SIM_H */
