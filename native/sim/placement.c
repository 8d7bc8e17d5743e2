/* SPDX-License-Identifier: MIT */
/*
 * placement.c - which virtual CPU an unpinned thread goes to, as the Linux scheduler decides
 * it for a task of the fair class: when it is created (fork balancing) and when it is woken
 * (wake-affine and the search for an idle sibling).
 *
 * Written from kernel/sched/fair.c and kernel/sched/topology.c. Two releases' rules, named by
 * the machine file's "sched" line (the profile's kernel, or --sched):
 *
 *   linux-6.1    find_idlest_group() classifies groups (has spare, fully busy, overloaded)
 *                and, across NUMA nodes, keeps a task near its creator while the node would
 *                run at most imb_numa_nr tasks (adjust_numa_imbalance);
 *   linux-4.20   find_idlest_group() compares runnable and average load with
 *                imbalance_pct (125 above the LLC), its spare-capacity test skipped for a
 *                fork; wake_affine_idle() without 6.1's "previous CPU idle" rule.
 *
 * The domains and loads it reads are sched_domain.c's; the idle balancing, balance.c's.
 * docs/scheduler.md lists what is left out (NUMA balancing, the idle scan's limits, ...).
 */
#include <stdlib.h>

#include "sched_domain.h"

/* ---- fork balancing: find_idlest_group(), find_idlest_group_cpu() --------------------------- */
static bool idler_6_1(const struct group_stats *g, const struct group_stats *idlest)
{
	if (g->type != idlest->type)
		return g->type < idlest->type;
	if (g->type != GROUP_HAS_SPARE)
		return g->avg_load < idlest->avg_load;
	if (g->idle_cpus != idlest->idle_cpus)
		return g->idle_cpus > idlest->idle_cpus;
	return g->util < idlest->util;
}

/* 6.1: the leader of the group to go to, or -1 to stay in the local one. */
static int find_idlest_group_6_1(const struct decision *d, int level, int this_cpu)
{
	const struct level *l = &sched_levels[level];
	int leaders[SIM_MAX_CPUS], n = sched_groups_of(level, this_cpu, leaders);
	struct group_stats local, g, idlest = { .leader = -1, .type = GROUP_OVERLOADED,
						.avg_load = 1e300 };
	sched_group_stats(d, level, leaders[0], &local);
	for (int i = 1; i < n; i++) {
		sched_group_stats(d, level, leaders[i], &g);
		if (g.weight > 0 && idler_6_1(&g, &idlest))
			idlest = g;
	}
	if (idlest.leader < 0 || local.type < idlest.type)
		return -1;
	if (local.type > idlest.type)
		return idlest.leader;
	if (local.type != GROUP_HAS_SPARE) {
		double imbalance = 1024.0 * (l->imbalance_pct - 100) / 100;
		if ((l->flags & SD_NUMA) && idlest.avg_load + imbalance >= local.avg_load)
			return -1;
		if (idlest.avg_load >= local.avg_load + imbalance ||
		    100 * local.avg_load <= l->imbalance_pct * idlest.avg_load)
			return -1;
		return idlest.leader;
	}
	if (l->flags & SD_NUMA) { /* no NUMA balancing: no preferred node */
		int imb_numa_nr = local.weight < l->imb_numa_nr ? local.weight : l->imb_numa_nr;
		if (!sched_adjust_numa_imbalance(abs(local.idle_cpus - idlest.idle_cpus),
					   local.nr_running + 1, imb_numa_nr))
			return -1;
	}
	return local.idle_cpus >= idlest.idle_cpus ? -1 : idlest.leader;
}

/* 4.20 for a fork: runnable and average load against imbalance_pct (find_idlest_group()
 * before the group types of 5.5; its spare-capacity test is skipped for SD_BALANCE_FORK). */
static int find_idlest_group_4_20(const struct decision *d, int level, int this_cpu)
{
	const struct level *l = &sched_levels[level];
	int leaders[SIM_MAX_CPUS], n = sched_groups_of(level, this_cpu, leaders);
	double scale = 100 + (l->imbalance_pct - 100) / 2;
	double imbalance = 1024.0 * (l->imbalance_pct - 100) / 100;
	double min_runnable = 1e300, min_avg = 1e300;
	int idlest = -1;
	struct group_stats local, g;
	sched_group_stats(d, level, leaders[0], &local);
	for (int i = 1; i < n; i++) {
		sched_group_stats(d, level, leaders[i], &g);
		if (g.weight == 0)
			continue;
		if (min_runnable > g.runnable_load + imbalance) {
			min_runnable = g.runnable_load;
			min_avg = g.avg_load;
			idlest = g.leader;
		} else if (g.runnable_load < min_runnable + imbalance &&
			   100 * min_avg > scale * g.avg_load) {
			min_avg = g.avg_load;
			idlest = g.leader;
		}
	}
	if (idlest < 0 || ((l->flags & SD_NUMA) && min_runnable + imbalance >= local.runnable_load))
		return -1;
	if (min_runnable > local.runnable_load + imbalance)
		return -1;
	if (local.runnable_load < min_runnable + imbalance &&
	    100 * local.avg_load < scale * min_avg)
		return -1;
	return idlest;
}

static int find_idlest_group_cpu(const struct decision *d, int level, int leader, int this_cpu)
{
	uint64_t latest_stamp = 0, min_exit = UINT64_MAX;
	int shallowest = -1, least_loaded = this_cpu, members = 0;
	double min_load = 1e300;
	for (int cpu = 0; cpu < sim_machine.cpus; cpu++) {
		if (!sched_in_span(level - 1, leader, cpu) || !sched_allowed(d->p, cpu))
			continue;
		members++;
		if (sched_idle(d, cpu)) {
			/* the shallowest idle state, then the most recently idled, warmest cache */
			uint64_t exit = sim_rq_idle_exit(cpu, d->now);
			if (exit < min_exit ||
			    (exit == min_exit && sim_queues[cpu].idle_stamp > latest_stamp)) {
				min_exit = exit;
				latest_stamp = sim_queues[cpu].idle_stamp;
				shallowest = cpu;
			}
		} else if (shallowest < 0) {
			double load = sim_machine.sched == SIM_SCHED_LINUX_4_20 ? sched_runnable_load(d, cpu)
									       : sched_cpu_load(d, cpu);
			if (load < min_load) {
				min_load = load;
				least_loaded = cpu;
			}
		}
	}
	if (members == 1)
		return leader;
	return shallowest >= 0 ? shallowest : least_loaded;
}

int sim_place_new(const struct sim_thread *parent)
{
	struct decision d = { .p = NULL, .control_cpu = parent->counted ? -1 : 0,
			      .now = parent->clock };
	int cpu = parent->counted ? parent->cpu : 0, new_cpu = cpu, level = -1;
	while (level + 1 < sched_nlevels && (sched_levels[level + 1].flags & SD_FORK))
		level++; /* the highest domain balancing forks, below the first that does not */
	for (; level >= 0; level--) {
		int group = sim_machine.sched == SIM_SCHED_LINUX_4_20
				    ? find_idlest_group_4_20(&d, level, cpu)
				    : find_idlest_group_6_1(&d, level, cpu);
		if (group < 0)
			continue;
		new_cpu = find_idlest_group_cpu(&d, level, group, cpu);
		cpu = new_cpu; /* and on down, within the group it chose */
	}
	return sched_nlevels == 0 ? sim_rq_nr_running(0) == 0 ? 0 : cpu : new_cpu;
}

/* ---- wake-up: select_task_rq_fair()'s fast path --------------------------------------------- */
static bool share_cache(int a, int b)
{
	return sched_llc_level >= 0 && sched_in_span(sched_llc_level, a, b);
}


/* record_wakee(): how often the waker switches between wakees, halved every second. */
static void record_wakee(struct sim_thread *waker, const struct sim_thread *p, uint64_t now)
{
	if (now > waker->wakee_flip_decay_at + sim_ns_to_cycles(WAKEE_DECAY_NS)) {
		waker->wakee_flips >>= 1;
		waker->wakee_flip_decay_at = now;
	}
	if (waker->last_wakee != p) {
		waker->last_wakee = p;
		waker->wakee_flips++;
	}
}

static bool wake_wide(const struct sim_thread *waker, const struct sim_thread *p, int this_cpu)
{
	unsigned int master = waker->wakee_flips, slave = p->wakee_flips;
	unsigned int factor = (unsigned int)sched_llc_size(this_cpu);
	if (master < slave) {
		unsigned int swap = master;
		master = slave;
		slave = swap;
	}
	return !(slave < factor || master < slave * factor);
}

/* wake_affine(): the waker's CPU if it will run the wakee sooner, else its previous one. */
static int wake_affine(const struct decision *d, int level, int this_cpu, int prev)
{
	bool old = sim_machine.sched == SIM_SCHED_LINUX_4_20;
	if (sched_idle(d, this_cpu) && share_cache(this_cpu, prev)) /* wake_affine_idle() */
		return sched_idle(d, prev) ? prev : this_cpu;
	if (!old && sched_idle(d, prev)) /* 6.1's rule; 4.20 goes on to the weights */
		return prev;
	double task_load = sched_decayed(d->p->load_avg, 0, d->p->pelt_at, d->now);
	struct decision with = *d;
	with.p = NULL; /* 6.1: sched_cpu_load(), the wakee's blocked load in prev's; 4.20: runnable */
	double this_load = old ? sched_runnable_load(&with, this_cpu) : sched_cpu_load(&with, this_cpu);
	double prev_load = old ? sched_runnable_load(&with, prev) : sched_cpu_load(&with, prev);
	double this_eff = (this_load + task_load) * 100;
	double prev_eff = (prev_load - task_load) * (100 + (sched_levels[level].imbalance_pct - 100) / 2);
	return this_eff < prev_eff ? this_cpu : prev;
}

static bool core_idle(const struct decision *d, int cpu)
{
	for (int c = 0; c < sim_machine.cpus; c++)
		if (sim_machine.cpu[c].core_key == sim_machine.cpu[cpu].core_key && !sched_idle(d, c))
			return false;
	return true;
}

static bool smt_active(void) { return sched_nlevels > 0 && sched_levels[0].kind == LEVEL_SMT; }

/* select_idle_sibling(): an idle CPU sharing the target's cache, or the target. */
static int select_idle_sibling(const struct decision *d, struct sim_thread *p, int prev,
			       int target)
{
	if (sched_idle(d, target))
		return target;
	if (prev != target && share_cache(prev, target) && sched_idle(d, prev))
		return prev;
	bool old = sim_machine.sched == SIM_SCHED_LINUX_4_20;
	int recent = p->recent_used_cpu;
	if (!old) /* 4.20 writes it on a hit only */
		p->recent_used_cpu = prev;
	if (recent >= 0 && recent != prev && recent != target && share_cache(recent, target) &&
	    sched_idle(d, recent)) {
		p->recent_used_cpu = prev;
		return recent;
	}
	if (sched_llc_level < 0)
		return target;
	bool has_idle_core = false;
	if (smt_active()) {
		for (int c = 0; c < sim_machine.cpus && !has_idle_core; c++)
			has_idle_core = share_cache(c, target) && core_idle(d, c);
		if (!old && !has_idle_core && share_cache(prev, target))
			for (int c = 0; c < sim_machine.cpus; c++)
				if (c != prev && sim_machine.cpu[c].core_key ==
						 sim_machine.cpu[prev].core_key &&
				    share_cache(c, target) && sched_idle(d, c))
					return c;
	}
	/* select_idle_core(), select_idle_cpu(): the LLC after the target, wrapping (4.20: from
	 * the target); an idle core first when there is one, else the first idle CPU; 4.20
	 * then tries the target's SMT siblings (select_idle_smt()) */
	int fallback = -1;
	for (int k = old ? 0 : 1; k <= sim_machine.cpus; k++) {
		int c = (target + k) % sim_machine.cpus;
		if (!share_cache(c, target) || !sched_idle(d, c))
			continue;
		if (!has_idle_core || core_idle(d, c))
			return c;
		if (fallback < 0)
			fallback = c;
	}
	return fallback >= 0 ? fallback : target;
}

void sim_place_woken(struct sim_thread *t, struct sim_thread *waker)
{
	if (t->pinned || !t->counted || t->rt_priority > 0 || sched_nlevels == 0 || t->cpu < 0 ||
	    t->cpu >= sim_machine.cpus)
		return;
	int prev = t->cpu;
	/* A timer's wake runs on the sleeper's CPU; the control thread counts as on CPU 0. */
	bool by_program = waker != NULL && waker->counted;
	int this_cpu = waker == NULL ? prev : by_program ? waker->cpu : 0;
	uint64_t now = waker != NULL && waker->clock > t->clock ? waker->clock : t->clock;
	struct decision d = { .p = t, .control_cpu = waker != NULL && !by_program ? 0 : -1,
			      .now = now };
	bool want_affine = true;
	if (waker != NULL) {
		record_wakee(waker, t, now);
		want_affine = !wake_wide(waker, t, this_cpu);
	}
	int new_cpu = prev;
	for (int level = 0; level < sched_nlevels && want_affine; level++)
		if ((sched_levels[level].flags & SD_WAKE_AFFINE) && sched_in_span(level, this_cpu, prev)) {
			if (this_cpu != prev)
				new_cpu = wake_affine(&d, level, this_cpu, prev);
			break;
		}
	new_cpu = select_idle_sibling(&d, t, prev, new_cpu);
	if (new_cpu != prev)
		sched_migrate(t, new_cpu, now);
}
