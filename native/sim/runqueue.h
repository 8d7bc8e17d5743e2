/* SPDX-License-Identifier: MIT */
/*
 * runqueue.h - what runqueue.c (who runs on a CPU) and placement.c (which CPU a thread runs
 * on) share: each virtual CPU's queue and its load as the kernel's PELT averages it.
 */
#ifndef LOCKLAB_SIM_RUNQUEUE_H
#define LOCKLAB_SIM_RUNQUEUE_H

#include "runtime.h"

struct run_queue {
	struct sim_thread *current; /* the thread on the CPU: running or spinning; NULL: idle */
	int waiting;                /* threads ready to run, waiting for it */
	int placed;                 /* threads placed on it that have not ended */
	uint64_t min_vruntime;
	/* PELT (sched_domain.c): the decayed sums of its threads' runnable and running time, in
	 * the kernel's units (1024 = one thread all the time), as of pelt_at. */
	double load, util;
	uint64_t pelt_at;
	uint64_t idle_stamp; /* when it last went idle (newidle_balance's rq->idle_stamp) */
};

extern struct run_queue sim_queues[SIM_MAX_CPUS + 1];

static inline int sim_rq_nr_running(int cpu)
{
	return (sim_queues[cpu].current != NULL) + sim_queues[cpu].waiting;
}

/* The exit latency of the idle state the idle CPU is in at `at`, beyond its shallowest's: the
 * deepest whose target residency it has been idle for (the profile's idle_states). */
uint64_t sim_rq_idle_exit(int cpu, uint64_t at);
/* sched_domain.c: the averages brought up to `at` before the queue or the thread changes. */
void sim_pelt_sync(int cpu, struct sim_thread *t, uint64_t at);
/* A thread's averages leave its CPU's sums (it ends, or moves) or join them. */
void sim_pelt_detach(struct sim_thread *t, uint64_t at);
void sim_pelt_attach(struct sim_thread *t, uint64_t at);
/* The CPU has gone idle at `at`: it may pull a waiting thread (newidle_balance). */
void sim_balance_newidle(int cpu, uint64_t at);
/* A tick of a CPU with threads waiting: an idle CPU may pull one (the nohz kick). */
void sim_balance_kick(int cpu, uint64_t at);
/* Whether any thread may move between CPUs (one that nothing pinned). */
bool sim_place_any_unpinned(void);

#endif /* LOCKLAB_SIM_RUNQUEUE_H */
