/* SPDX-License-Identifier: MIT */
/*
 * sched_domain.c - the scheduling domains of the simulated machine, built as sd_init() and
 * sched_init_numa() build them (kernel/sched/topology.c, Linux 4.20 and 6.1), PELT's load
 * and utilisation of threads and CPUs (kernel/sched/pelt.c), and what placement.c and
 * balance.c read of them: a CPU's tasks and load, a domain's groups and their statistics
 * (update_sg_wakeup_stats(), update_sg_lb_stats(), group_classify()).
 *
 * The domains: SMT siblings, the LLC (MC), the node, the package (DIE), then one NUMA level
 * for each node distance of the profile's SLIT; a level spanning what the one below it spans
 * is dropped, as degenerate domains are. A domain's groups are its child level's spans (the
 * kernel's overlapping groups of asymmetric SLITs are not built). Load is PELT's: a thread's
 * runnable and running time decayed by half every 32 ms, summed per CPU with the blocked.
 */
#include <math.h>
#include <stdlib.h>

#include "sched_domain.h"

struct level sched_levels[MAX_LEVELS];
int sched_nlevels;
int sched_llc_level = -1;
/* Fixed once the domains are built: each CPU's group leader one level down from each level
 * (the lowest CPU sharing its span there; level 0's groups are single CPUs), its LLC's size,
 * and a CPU's capacity. */
static int group_leader[MAX_LEVELS][SIM_MAX_CPUS];
static int llc_weight[SIM_MAX_CPUS];
static double cpu_capacity = 1024.0;

bool sched_in_span(int level, int a, int b)
{
	const struct sim_cpu *x = &sim_machine.cpu[a], *y = &sim_machine.cpu[b];
	if (level < 0)
		return a == b;
	switch (sched_levels[level].kind) {
	case LEVEL_SMT:
		return x->core_key == y->core_key;
	case LEVEL_MC:
		return x->llc == y->llc;
	case LEVEL_NODE:
		return x->node == y->node;
	case LEVEL_DIE:
		return x->package == y->package;
	default:
		return sim_machine.node_distance[x->node][y->node] <= sched_levels[level].distance;
	}
}

static int span_weight(int level, int cpu)
{
	int n = 0;
	for (int i = 0; i < sim_machine.cpus; i++)
		n += sched_in_span(level, cpu, i);
	return n;
}

/* Whether level `a` spans what `b` spans, or more, around every CPU. */
static bool covers(int a, int b)
{
	for (int c = 0; c < sim_machine.cpus; c++)
		for (int d = 0; d < sim_machine.cpus; d++)
			if (sched_in_span(b, c, d) && !sched_in_span(a, c, d))
				return false;
	return true;
}

static int by_weight(const void *a, const void *b)
{
	const struct level *x = a, *y = b;
	if (x->weight != y->weight)
		return x->weight - y->weight;
	return x->kind != y->kind ? (int)x->kind - (int)y->kind : x->distance - y->distance;
}

/* sd_init(): each level's flags and constants, as the rules' release sets them. */
static void init_level(struct level *l)
{
	bool old = sim_machine.sched == SIM_SCHED_LINUX_4_20;
	l->flags = SD_NEWIDLE | SD_FORK | SD_WAKE_AFFINE | SD_PREFER_SIBLING;
	l->imbalance_pct = old ? 125 : 117;
	l->cache_nice_tries = 0;
	if (l->kind == LEVEL_SMT) {
		l->flags |= SD_SHARE_CPUCAPACITY | SD_SHARE_PKG;
		l->imbalance_pct = 110;
	} else if (l->kind == LEVEL_MC) {
		l->flags |= SD_SHARE_PKG;
		l->imbalance_pct = 117;
		l->cache_nice_tries = 1;
	} else if (l->kind == LEVEL_NUMA) {
		l->flags = (l->flags | SD_NUMA) & ~(unsigned int)SD_PREFER_SIBLING;
		l->cache_nice_tries = 2;
		/* 4.20: RECLAIM_DISTANCE; 6.1: node_reclaim_distance, which AMD's Zen raises */
		int reclaim = !old && sim_machine.node_reclaim_distance > 0
				      ? sim_machine.node_reclaim_distance
				      : RECLAIM_DISTANCE;
		if (l->distance > reclaim)
			l->flags &= ~(unsigned int)(SD_FORK | SD_WAKE_AFFINE);
	} else {
		l->cache_nice_tries = 1;
	}
}

/* build_sched_domains()'s imb_numa_nr, from the levels before degenerate ones are dropped. */
static void set_numa_margins(struct level *all, int n)
{
	int imb = 0, imb_span = 1;
	for (int i = 1; i < n; i++) {
		if (!(all[i].flags & SD_SHARE_PKG) && (all[i - 1].flags & SD_SHARE_PKG)) {
			int nr_llcs = all[i].weight / all[i - 1].weight;
			imb = nr_llcs == 1 ? all[i].weight >> 3 : nr_llcs;
			imb = imb < 1 ? 1 : imb;
			all[i].imb_numa_nr = imb;
			imb_span = all[i].weight;
			for (int j = i + 1; j < n; j++)
				if (all[j].flags & SD_NUMA) {
					imb_span = all[j].weight;
					break;
				}
		} else if (imb > 0) {
			int factor = all[i].weight / imb_span;
			all[i].imb_numa_nr = imb * (factor < 1 ? 1 : factor);
		}
	}
}

void sim_place_init(void)
{
	struct level all[MAX_LEVELS];
	int n = 0;
	all[n++] = (struct level){ .kind = LEVEL_SMT };
	all[n++] = (struct level){ .kind = LEVEL_MC };
	all[n++] = (struct level){ .kind = LEVEL_NODE };
	all[n++] = (struct level){ .kind = LEVEL_DIE };
	for (int d = 11; d <= 254 && n < MAX_LEVELS; d++) /* sched_init_numa(): each distance */
		for (int a = 0; a < sim_machine.nodes; a++)
			for (int b = 0; b < sim_machine.nodes; b++)
				if (sim_machine.node_distance[a][b] == d && n < MAX_LEVELS &&
				    all[n - 1].distance != d)
					all[n++] = (struct level){ .kind = LEVEL_NUMA, .distance = d };
	sched_nlevels = 0;
	for (int i = 0; i < n; i++) { /* weights need sched_levels[] for sched_in_span() */
		sched_levels[0] = all[i];
		sched_nlevels = 1;
		all[i].weight = span_weight(0, 0);
		init_level(&all[i]);
	}
	qsort(all, (size_t)n, sizeof(all[0]), by_weight);
	set_numa_margins(all, n);
	sched_nlevels = 0;
	for (int i = 0; i < n; i++) {
		sched_levels[sched_nlevels] = all[i];
		/* a level nesting nothing new (degenerate), or not nesting the one below, goes */
		bool single = sched_nlevels == 0 && all[i].weight == 1;
		bool degenerate = sched_nlevels > 0 && covers(sched_nlevels - 1, sched_nlevels);
		bool nests = sched_nlevels == 0 || covers(sched_nlevels, sched_nlevels - 1);
		if (!single && !degenerate && nests)
			sched_nlevels++;
	}
	for (int i = 0; i < sched_nlevels; i++) {
		sched_levels[i].prefer_sibling = i > 0 && (sched_levels[i - 1].flags & SD_PREFER_SIBLING);
		if (sched_levels[i].flags & SD_SHARE_PKG)
			sched_llc_level = i;
	}
	for (int level = 0; level < sched_nlevels; level++)
		for (int c = 0; c < sim_machine.cpus; c++) {
			int leader = c;
			for (int e = 0; e < c && leader == c; e++)
				if (sched_in_span(level - 1, c, e))
					leader = e;
			group_leader[level][c] = leader;
		}
	for (int c = 0; c < sim_machine.cpus; c++)
		llc_weight[c] = sched_llc_level >= 0 ? span_weight(sched_llc_level, c) : 1;
	/* 4.20 gives an x86 SMT thread smt_gain / siblings (1178 / 2); 6.1, and arm64, 1024 */
	if (sim_machine.sched == SIM_SCHED_LINUX_4_20 && sched_nlevels > 0 &&
	    sched_levels[0].kind == LEVEL_SMT && !sim_machine_is_arm64())
		cpu_capacity = 1178.0 / span_weight(0, 0);
	for (int cpu = 0; cpu <= sim_machine.cpus; cpu++)
		sim_queues[cpu].idle_stamp = 1; /* all idle alike at the start */
}

int sched_llc_size(int cpu) { return llc_weight[cpu]; }

const char *locklab_sim_sched_rules(void)
{
	return sim_machine.sched == SIM_SCHED_LINUX_4_20 ? "linux-4.20" : "linux-6.1";
}

/* ---- PELT ---------------------------------------------------------------------------------- */
double sched_decayed(double avg, double signal, uint64_t from, uint64_t to)
{
	if (to <= from)
		return avg;
	double f = exp2(-sim_cycles_to_ns(to - from) / PELT_HALF_LIFE_NS);
	return avg * f + 1024.0 * signal * (1.0 - f);
}

bool sched_task_runnable(const struct sim_thread *t)
{
	return sim_queues[t->cpu].current == t || t->state == SIM_CPU_WAIT;
}

void sim_pelt_sync(int cpu, struct sim_thread *t, uint64_t at)
{
	struct run_queue *q = &sim_queues[cpu];
	if (at > q->pelt_at) {
		q->load = sched_decayed(q->load, sim_rq_nr_running(cpu), q->pelt_at, at);
		q->util = sched_decayed(q->util, q->current != NULL, q->pelt_at, at);
		q->pelt_at = at;
	}
	if (t != NULL && at > t->pelt_at) {
		t->load_avg = sched_decayed(t->load_avg, sched_task_runnable(t), t->pelt_at, at);
		t->util_avg = sched_decayed(t->util_avg, sim_queues[t->cpu].current == t, t->pelt_at, at);
		t->pelt_at = at;
	}
}

void sim_pelt_detach(struct sim_thread *t, uint64_t at)
{
	if (!t->pelt_attached)
		return;
	struct run_queue *q = &sim_queues[t->cpu];
	sim_pelt_sync(t->cpu, t, at);
	q->load = q->load > t->load_avg ? q->load - t->load_avg : 0;
	q->util = q->util > t->util_avg ? q->util - t->util_avg : 0;
	t->pelt_attached = false;
}

void sim_pelt_attach(struct sim_thread *t, uint64_t at)
{
	struct run_queue *q = &sim_queues[t->cpu];
	sim_pelt_sync(t->cpu, NULL, at);
	if (t->pelt_at == 0) { /* new: full load; util from its CPU's (post_init_entity_util_avg) */
		double cap = (1024.0 - q->util) / 2;
		double util = q->util > 0 ? q->util * 1024.0 / (q->load + 1) : cap;
		t->load_avg = 1024.0;
		t->util_avg = cap <= 0 ? 0 : util < cap ? util : cap;
		t->pelt_at = at > 0 ? at : 1;
	}
	q->load += t->load_avg;
	q->util += t->util_avg;
	t->pelt_attached = true;
}

/* ---- what a decision sees ------------------------------------------------------------------ */
int sched_nr_running(const struct decision *d, int cpu)
{
	int n = sim_rq_nr_running(cpu) + (cpu == d->control_cpu);
	if (d->p != NULL && d->p->cpu == cpu && sched_task_runnable(d->p))
		n--;
	return n;
}

bool sched_idle(const struct decision *d, int cpu) { return sched_nr_running(d, cpu) == 0; }

double sched_cpu_load(const struct decision *d, int cpu)
{
	const struct run_queue *q = &sim_queues[cpu];
	double load = sched_decayed(q->load, sim_rq_nr_running(cpu), q->pelt_at, d->now) +
		      (cpu == d->control_cpu ? 1024.0 : 0);
	if (d->p != NULL && d->p->cpu == cpu && d->p->pelt_attached)
		load -= sched_decayed(d->p->load_avg, sched_task_runnable(d->p), d->p->pelt_at, d->now);
	return load > 0 ? load : 0;
}

double sched_cpu_util(const struct decision *d, int cpu)
{
	const struct run_queue *q = &sim_queues[cpu];
	double util = sched_decayed(q->util, q->current != NULL, q->pelt_at, d->now) +
		      (cpu == d->control_cpu ? 1024.0 : 0);
	if (d->p != NULL && d->p->cpu == cpu && d->p->pelt_attached)
		util -= sched_decayed(d->p->util_avg, q->current == d->p, d->p->pelt_at, d->now);
	return util > 0 ? util : 0;
}

/* What the CPU's runnable threads weigh (4.20's weighted_cpuload(): no blocked load). */
double sched_runnable_load(const struct decision *d, int cpu)
{
	double load = cpu == d->control_cpu ? 1024.0 : 0; /* the creator or waker, running */
	for (int i = 0; i < sim_thread_count(); i++) {
		const struct sim_thread *t = sim_thread_at(i);
		if (t != d->p && t->cpu == cpu && t->counted && sched_task_runnable(t))
			load += sched_decayed(t->load_avg, 1, t->pelt_at, d->now);
	}
	return load;
}

bool sched_allowed(const struct sim_thread *p, int cpu)
{
	return p == NULL || !p->pinned || p->cpu == cpu;
}


/* update_sg_wakeup_stats() / update_sg_lb_stats(): a group of `level`'s domain, the CPUs
 * that share `leader`'s span one level down. */
void sched_group_stats(const struct decision *d, int level, int leader, struct group_stats *g)
{
	const struct level *l = &sched_levels[level];
	bool old = sim_machine.sched == SIM_SCHED_LINUX_4_20;
	*g = (struct group_stats){ .leader = leader };
	for (int cpu = 0; cpu < sim_machine.cpus; cpu++) {
		if (!sched_in_span(level - 1, leader, cpu) || !sched_allowed(d->p, cpu))
			continue;
		double load = sched_cpu_load(d, cpu), util = sched_cpu_util(d, cpu);
		g->weight++;
		g->load += load;
		g->util += util;
		g->nr_running += sched_nr_running(d, cpu);
		g->idle_cpus += sched_idle(d, cpu);
		if (old)
			g->runnable_load += sched_runnable_load(d, cpu);
	}
	g->capacity = cpu_capacity * g->weight;
	double pct = l->imbalance_pct;
	bool over_util = g->capacity * 100 < g->util * pct;
	if (old) { /* 4.20: overloaded past its capacity, no runnable test; no "fully busy" */
		g->type = g->nr_running > g->weight && over_util ? GROUP_OVERLOADED : GROUP_HAS_SPARE;
	} else { /* group_is_overloaded(), group_has_capacity(); runnable is load at nice 0 */
		bool over_runnable = g->capacity * pct < g->load * 100;
		bool overloaded = g->nr_running > g->weight && (over_util || over_runnable);
		bool has_capacity = g->nr_running < g->weight ||
				    (!over_runnable && g->capacity * 100 > g->util * pct);
		g->type = overloaded ? GROUP_OVERLOADED
				     : has_capacity ? GROUP_HAS_SPARE : GROUP_FULLY_BUSY;
	}
	g->avg_load = g->load * 1024.0 / g->capacity;
	g->runnable_load = g->runnable_load * 1024.0 / g->capacity;
}

/* The groups of `level`'s domain around `cpu`, in the kernel's order: its own first, then
 * the others as the CPUs follow it (build_sched_groups() walks the span from `cpu`). */
int sched_groups_of(int level, int cpu, int *leaders)
{
	int n = 0;
	for (int k = 0; k < sim_machine.cpus; k++) {
		int c = (cpu + k) % sim_machine.cpus;
		if (!sched_in_span(level, cpu, c))
			continue;
		int leader = group_leader[level][c];
		bool seen = false;
		for (int i = 0; i < n && !seen; i++)
			seen = leaders[i] == leader;
		if (!seen)
			leaders[n++] = leader;
	}
	return n;
}

long sched_adjust_numa_imbalance(long imbalance, int dst_running, int imb_numa_nr)
{
	if (dst_running > imb_numa_nr)
		return imbalance;
	return imbalance <= NUMA_IMBALANCE_MIN ? 0 : imbalance;
}

/* The thread leaves its CPU for `cpu` (asleep or waiting, never running): its vruntime
 * keeps its distance from the queue's min_vruntime (migrate_task_rq_fair()). */
void sched_migrate(struct sim_thread *t, int cpu, uint64_t at)
{
	struct run_queue *from = &sim_queues[t->cpu], *to = &sim_queues[cpu];
	int64_t lag = (int64_t)(t->vruntime - from->min_vruntime); /* signed, as the kernel's */
	sim_pelt_sync(t->cpu, t, at);
	sim_rq_set_cpu(t, cpu);
	t->vruntime = lag < 0 && (uint64_t)-lag > to->min_vruntime ? 0 : to->min_vruntime + (uint64_t)lag;
	t->migrations++;
}
