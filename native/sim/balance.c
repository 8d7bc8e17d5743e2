/* SPDX-License-Identifier: MIT */
/*
 * balance.c - a CPU with nothing to run pulls a waiting thread, as load_balance() does for a
 * CPU newly idle (newidle_balance()) and for the idle CPUs a busy CPU's tick kicks
 * (nohz_balancer_kick(), _nohz_idle_balance()): find_busiest_group(), calculate_imbalance()
 * and detach_tasks() of kernel/sched/fair.c, Linux 6.1's, or 4.20's average-load test.
 */
#include "sched_domain.h"

static int balance_failed[MAX_LEVELS][SIM_MAX_CPUS];

static bool busier(const struct group_stats *g, const struct group_stats *busiest)
{
	if (g->nr_running == 0)
		return false;
	if (busiest->leader < 0 || g->type != busiest->type)
		return busiest->leader < 0 || g->type > busiest->type;
	/* 4.20: the higher average load; 6.1: so for busy groups, else the idle CPUs */
	if (sim_machine.sched == SIM_SCHED_LINUX_4_20 || g->type != GROUP_HAS_SPARE)
		return g->avg_load > busiest->avg_load;
	if (g->idle_cpus != busiest->idle_cpus)
		return g->idle_cpus < busiest->idle_cpus;
	return g->nr_running > busiest->nr_running;
}

static bool movable(const struct sim_thread *t, int level, int cpu, int dst, uint64_t at)
{
	if (t->state != SIM_CPU_WAIT || t->cpu != cpu || t->pinned || !t->counted ||
	    t->rt_priority > 0 || t->rt_boost > 0)
		return false;
	bool hot = !(sched_levels[level].flags & SD_SHARE_CPUCAPACITY) &&
		   at < t->left_cpu_at + sim_ns_to_cycles(MIGRATION_COST_NS);
	return !hot || balance_failed[level][dst] > sched_levels[level].cache_nice_tries;
}

/* The tasks to move from the busiest group to `dst`'s, by find_busiest_group()'s and
 * calculate_imbalance()'s rules for an idle destination; 0: balanced. */
static int imbalance_for(int level, const struct group_stats *local,
			 const struct group_stats *busiest, bool newly_idle)
{
	const struct level *l = &sched_levels[level];
	if (busiest->leader < 0)
		return 0;
	if (sim_machine.sched == SIM_SCHED_LINUX_4_20) { /* load, not task counts */
		double pct = l->imbalance_pct;
		bool has_capacity = local->nr_running < local->weight ||
				    local->capacity * 100 > local->util * pct;
		bool force = has_capacity && (busiest->type == GROUP_OVERLOADED ||
					      (l->prefer_sibling &&
					       busiest->nr_running > local->nr_running + 1));
		if (force)
			return 1;
		if (local->avg_load >= busiest->avg_load)
			return 0;
		if (newly_idle ? 100 * busiest->avg_load <= pct * local->avg_load
			       : local->idle_cpus <= busiest->idle_cpus + 1)
			return 0;
		return 1;
	}
	if (local->type > busiest->type)
		return 0;
	bool force = l->prefer_sibling && local->type == GROUP_HAS_SPARE &&
		     busiest->nr_running > local->nr_running + 1;
	if (!force && busiest->type != GROUP_OVERLOADED &&
	    ((busiest->weight > 1 && local->idle_cpus <= busiest->idle_cpus + 1) ||
	     busiest->nr_running == 1))
		return 0;
	if (local->type != GROUP_HAS_SPARE)
		return local->avg_load < busiest->avg_load ? 1 : 0;
	if (busiest->type > GROUP_FULLY_BUSY && !(l->flags & SD_SHARE_PKG))
		return -1; /* migrate_util: as much as the local group has spare */
	long imbalance = busiest->weight == 1 || l->prefer_sibling
				 ? busiest->nr_running - local->nr_running
				 : local->idle_cpus - busiest->idle_cpus;
	if (imbalance < 0)
		imbalance = 0;
	if (l->flags & SD_NUMA)
		imbalance = sched_adjust_numa_imbalance(imbalance, local->nr_running + 1, l->imb_numa_nr);
	return (int)(imbalance >> 1);
}

/* One load_balance() at `level` for the idle `dst`: whether it pulled a thread. */
static bool balance(int level, int dst, uint64_t at, bool newly_idle)
{
	struct decision d = { .p = NULL, .control_cpu = -1, .now = at };
	int leaders[SIM_MAX_CPUS], n = sched_groups_of(level, dst, leaders);
	struct group_stats local, g, busiest = { .leader = -1 };
	sched_group_stats(&d, level, leaders[0], &local);
	for (int i = 1; i < n; i++) {
		sched_group_stats(&d, level, leaders[i], &g);
		if (busier(&g, &busiest))
			busiest = g;
	}
	int tasks = imbalance_for(level, &local, &busiest, newly_idle);
	if (tasks == 0) {
		balance_failed[level][dst] = 0; /* load_balance()'s out_balanced */
		return false;
	}
	double util_budget = tasks < 0 ? local.capacity - local.util : 0;
	/* find_busiest_queue(): the most threads; detach_tasks(): the least recently run */
	int src = -1;
	for (int cpu = 0; cpu < sim_machine.cpus; cpu++)
		if (sched_in_span(level - 1, busiest.leader, cpu) && sim_queues[cpu].waiting > 0 &&
		    (src < 0 || sim_rq_nr_running(cpu) > sim_rq_nr_running(src)))
			src = cpu;
	int moved = 0;
	for (int loop = 0; src >= 0 && loop < SCHED_NR_MIGRATE; loop++) {
		struct sim_thread *pick = NULL;
		for (int i = 0; i < sim_thread_count(); i++) {
			struct sim_thread *t = sim_thread_at(i);
			if (movable(t, level, src, dst, at) &&
			    (pick == NULL || t->left_cpu_at < pick->left_cpu_at))
				pick = t;
		}
		if (pick == NULL || (tasks < 0 && moved > 0 && pick->util_avg > util_budget))
			break;
		sim_pelt_sync(src, pick, at); /* it waited, runnable, until now */
		sim_rq_detach(pick);
		sched_migrate(pick, dst, at);
		sim_rq_attach_at(pick, at + sim_machine.costs.context_switch);
		moved++;
		util_budget -= pick->util_avg;
		if ((tasks > 0 && moved >= tasks) || (tasks < 0 && util_budget <= 0))
			break;
	}
	if (src >= 0)
		sim_rq_settle(src, at);
	/* load_balance(): a failure counts outside newidle balancing only */
	if (moved > 0)
		balance_failed[level][dst] = 0;
	else if (!newly_idle)
		balance_failed[level][dst]++;
	return moved > 0;
}

static bool overloaded_anywhere(void)
{
	for (int cpu = 0; cpu < sim_machine.cpus; cpu++)
		if (sim_queues[cpu].waiting > 0)
			return true;
	return false;
}

void sim_balance_newidle(int cpu, uint64_t at)
{
	sim_queues[cpu].idle_stamp = at > 0 ? at : 1;
	if (cpu >= sim_machine.cpus || !overloaded_anywhere() || !sim_place_any_unpinned())
		return; /* rd->overload: no CPU has a thread waiting */
	for (int level = 0; level < sched_nlevels; level++)
		if ((sched_levels[level].flags & SD_NEWIDLE) && balance(level, cpu, at, true))
			return;
}

void sim_balance_kick(int cpu, uint64_t at)
{
	int ilb = -1; /* find_new_ilb(): the first idle CPU balances for every idle one */
	for (int c = 0; c < sim_machine.cpus && ilb < 0; c++)
		if (sim_rq_nr_running(c) == 0)
			ilb = c;
	for (int k = 1; ilb >= 0 && k <= sim_machine.cpus && sim_queues[cpu].waiting > 0; k++) {
		int dst = (ilb + k) % sim_machine.cpus; /* _nohz_idle_balance(): itself last */
		for (int level = 0; level < sched_nlevels && sim_rq_nr_running(dst) == 0; level++)
			if (balance(level, dst, at, false))
				break;
	}
}

bool sim_place_any_unpinned(void)
{
	for (int i = 0; i < sim_thread_count(); i++) {
		const struct sim_thread *t = sim_thread_at(i);
		if (t->counted && !t->pinned && t->state != SIM_DONE)
			return true;
	}
	return false;
}
