/* SPDX-License-Identifier: MIT */
/*
 * sched_domain.h - what placement.c (fork and wake-up placement) and balance.c (idle load
 * balancing) share: the scheduling domains built from the profile, PELT's loads, and the
 * statistics of a domain's groups, as kernel/sched/fair.c and topology.c define them.
 */
#ifndef LOCKLAB_SIM_SCHED_DOMAIN_H
#define LOCKLAB_SIM_SCHED_DOMAIN_H

#include "runqueue.h"

#define MAX_LEVELS 12
#define PELT_HALF_LIFE_NS 32768000.0 /* 32 periods of 1024 us */
#define MIGRATION_COST_NS 500000.0   /* sysctl_sched_migration_cost */
#define WAKEE_DECAY_NS 1e9           /* record_wakee(): halved each second (HZ jiffies) */
#define RECLAIM_DISTANCE 30          /* node_reclaim_distance */
#define NUMA_IMBALANCE_MIN 2
#define SCHED_NR_MIGRATE 32

enum { SD_NEWIDLE = 1, SD_FORK = 2, SD_WAKE_AFFINE = 4, SD_SHARE_CPUCAPACITY = 8,
       SD_SHARE_PKG = 16, SD_PREFER_SIBLING = 32, SD_NUMA = 64 };
enum level_kind { LEVEL_SMT, LEVEL_MC, LEVEL_NODE, LEVEL_DIE, LEVEL_NUMA };
/* The kernel's order of group types: the higher, the busier. */
enum group_type { GROUP_HAS_SPARE = 0, GROUP_FULLY_BUSY = 1, GROUP_OVERLOADED = 5 };

struct level {
	enum level_kind kind;
	int distance; /* LEVEL_NUMA: the SLIT distance it reaches */
	unsigned int flags;
	int imbalance_pct, cache_nice_tries, imb_numa_nr, weight;
	bool prefer_sibling; /* its child's SD_PREFER_SIBLING: balance by task counts */
};

extern struct level sched_levels[MAX_LEVELS];
extern int sched_nlevels;
extern int sched_llc_level; /* the highest level sharing a cache (sd_llc); -1: none */

/* Whether b is in the span of a's domain at `level` (-1: a itself). */
bool sched_in_span(int level, int a, int b);
/* The number of CPUs sharing `cpu`'s last-level cache (sd_llc_size). */
int sched_llc_size(int cpu);
/* PELT: `avg` decayed from `from` to `to` with `signal` (0 to n tasks) all along. */
double sched_decayed(double avg, double signal, uint64_t from, uint64_t to);
bool sched_task_runnable(const struct sim_thread *t);

/* The task placed (its own load left out), the CPU on which the control thread, creating or
 * waking it, counts as a running task of full load (-1: none; the engine's main thread takes
 * no CPU of the profile otherwise, and runs only between its sleeps), and when. */
struct decision {
	const struct sim_thread *p;
	int control_cpu;
	uint64_t now;
};

int sched_nr_running(const struct decision *d, int cpu);
bool sched_idle(const struct decision *d, int cpu);
double sched_cpu_load(const struct decision *d, int cpu);
double sched_cpu_util(const struct decision *d, int cpu);
double sched_runnable_load(const struct decision *d, int cpu);
bool sched_allowed(const struct sim_thread *p, int cpu);

struct group_stats {
	int leader, weight, nr_running, idle_cpus, type;
	double load, util, capacity, avg_load, runnable_load;
};

void sched_group_stats(const struct decision *d, int level, int leader, struct group_stats *g);
/* The leaders of the groups of `level`'s domain around `cpu`, the local group's first. */
int sched_groups_of(int level, int cpu, int *leaders);
long sched_adjust_numa_imbalance(long imbalance, int dst_running, int imb_numa_nr);
/* The thread, asleep or waiting, moves to `cpu` (a wake-up's or a balancer's move). */
void sched_migrate(struct sim_thread *t, int cpu, uint64_t at);

#endif /* LOCKLAB_SIM_SCHED_DOMAIN_H */
