/* SPDX-License-Identifier: MIT */
/*
 * scenario_pi.c - the priority-inversion scenario (--scenario pi-inversion), for seeds 000
 * and 003: does the lock bound a high-priority waiter's latency when a medium-priority CPU hog
 * shares the CPU with a low-priority owner?
 *
 * Three SCHED_FIFO threads pinned to one CPU, so the scheduler's choice is deterministic:
 *   low (prio 10)     takes the lock, signals, and sleeps until high is about to lock; then
 *                     computes for --hold-ns inside it, and releases;
 *   medium (prio 20)  released by the controller: releases high, then burns the CPU for
 *                     10 x hold, never touching the lock;
 *   high (prio 30)    released by medium, so medium is already running: wakes low, tries to
 *                     take the lock and blocks.
 * Without priority inheritance, medium preempts low, so high waits for medium's whole burst.
 * With it, low runs at high's priority, finishes its critical section, and high gets the lock
 * before medium's burst ends. Each iteration records that ordering (a shared sequence number
 * taken when high acquires and when medium finishes). Each step waits for the one before it,
 * never for a clock, so the ordering holds however late the controller or the host is: low
 * cannot finish its hold before high and medium are there.
 *
 * The controller (the main thread, SCHED_OTHER, on another CPU when there is one) paces the
 * iterations with futexes and is the watchdog: an iteration that does not finish in
 * --watchdog seconds ends the run with exit status 3.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <locklab/futex.h>
#include <locklab/kernel.h>

#include "engine.h"

#define PRIO_LOW 10
#define PRIO_MEDIUM 20
#define PRIO_HIGH 30
#define BURST_PER_HOLD 10

enum role { ROLE_LOW, ROLE_MEDIUM, ROLE_HIGH, ROLES };
static const char *const role_names[ROLES] = { "low", "medium", "high" };
static const int role_prio[ROLES] = { PRIO_LOW, PRIO_MEDIUM, PRIO_HIGH };

struct pi_run {
	const struct bench_config *config;
	void *lock;
	double hold_s, burst_s;
	u32 go_low;       /* iteration number low may start */
	u32 go_medium;    /* iteration number medium may start */
	u32 go_high;      /* iteration number high may start (from medium) */
	u32 low_holds;    /* iteration number whose lock low holds */
	u32 high_locking; /* iteration number whose lock() high is about to call */
	u32 done;         /* threads finished with the current iteration */
	u32 sequence;     /* ordering of "high acquired" and "medium's burst ended" */
	u32 stop;
	uint64_t cs_counter; /* plain, under the lock: a lost update means overlap */
	uint64_t acquisitions;
	/* results, per iteration */
	u32 *high_seq, *medium_seq;
	struct histogram high_wait; /* ns, from high's lock() call to the acquisition */
};

struct pi_thread {
	alignas(LOCKLAB_CACHELINE) struct lock_thread ctx;
	struct pi_run *run;
	enum role role;
	int cpu;
	pthread_t thread;
};

static void wait_for(u32 *word, u32 value)
{
	u32 seen;
	while ((seen = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != value)
		futex_wait(word, seen);
}

static void publish(u32 *word, u32 value)
{
	__atomic_store_n(word, value, __ATOMIC_RELEASE);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 8, NULL, NULL, 0);
}

static void spin_for(double seconds)
{
	double until = monotonic_s() + seconds;
	while (monotonic_s() < until)
		cpu_relax();
}

static void *pi_thread_main(void *arg)
{
	struct pi_thread *t = arg;
	struct pi_run *run = t->run;
	const struct lock_ops *ops = run->config->lock;
#ifdef LOCKLAB_SIM
	locklab_sim_on_cpu_word(&t->ctx.off_cpu, 1); /* as worker_main() */
#endif

	for (u32 iteration = 1;; iteration++) {
		wait_for(t->role == ROLE_LOW      ? &run->go_low
			 : t->role == ROLE_MEDIUM ? &run->go_medium
						  : &run->go_high,
			 iteration);
		if (__atomic_load_n(&run->stop, __ATOMIC_ACQUIRE))
			return NULL;
		switch (t->role) {
		case ROLE_LOW:
			ops->lock(run->lock, &t->ctx);
			publish(&run->low_holds, iteration);
			run->cs_counter++;
			/* Asleep, not spinning: on a single CPU the controller still runs. */
			wait_for(&run->high_locking, iteration);
			spin_for(run->hold_s);
			run->acquisitions++;
			ops->unlock(run->lock, &t->ctx);
			break;
		case ROLE_HIGH: {
			publish(&run->high_locking, iteration);
			double started = monotonic_s();
			ops->lock(run->lock, &t->ctx);
			double waited = monotonic_s() - started;
			run->high_seq[iteration] = __atomic_fetch_add(&run->sequence, 1, __ATOMIC_RELAXED);
			run->cs_counter++;
			run->acquisitions++;
			ops->unlock(run->lock, &t->ctx);
			histogram_record(&run->high_wait, (uint64_t)(waited * 1e9));
			break;
		}
		case ROLE_MEDIUM:
			publish(&run->go_high, iteration); /* high preempts us here */
			spin_for(run->burst_s);
			run->medium_seq[iteration] = __atomic_fetch_add(&run->sequence, 1, __ATOMIC_RELAXED);
			break;
		case ROLES:
			break;
		}
		__atomic_fetch_add(&run->done, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &run->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
}

/* Wait (the controller) until *word == value, or fail after timeout_s. */
static bool wait_for_timeout(u32 *word, u32 value, double timeout_s)
{
	double deadline = monotonic_s() + timeout_s;
	u32 seen;
	while ((seen = __atomic_load_n(word, __ATOMIC_ACQUIRE)) != value) {
		double left = deadline - monotonic_s();
		if (left <= 0)
			return false;
		struct timespec ts = { (time_t)left, (long)((left - (double)(time_t)left) * 1e9) };
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
	}
	return true;
}

static void json_ns_percentiles(struct json_writer *j, const struct histogram *h)
{
	json_begin_object(j, "high_wait_ns");
	json_uint(j, "samples", h->count);
	json_double(j, "mean", h->count ? h->sum / (double)h->count : 0);
	json_double(j, "p50", (double)histogram_percentile(h, 50));
	json_double(j, "p90", (double)histogram_percentile(h, 90));
	json_double(j, "p99", (double)histogram_percentile(h, 99));
	json_double(j, "max", (double)h->max);
	json_end_object(j);
}

static int pi_report(struct pi_run *run, const struct machine_facts *facts, u32 iterations,
		     u32 planned, int cpu, bool watchdog)
{
	const struct bench_config *config = run->config;
	u32 high_first = 0;
	for (u32 i = 1; i <= iterations; i++)
		high_first += run->high_seq[i] < run->medium_seq[i];
	bool violation = !watchdog && run->cs_counter != run->acquisitions;
	int status = watchdog ? EXIT_WATCHDOG : violation ? EXIT_VIOLATION : EXIT_FINE;
	bool pi = config->lock->flags & LOCK_PRIO_INHERIT;

	bool json_on_stdout = config->json_path && strcmp(config->json_path, "-") == 0;
	FILE *human = json_on_stdout ? stderr : stdout;
	fprintf(human, "%s: pi-inversion, %u iterations on CPU %d (low %d, medium %d, high %d)\n",
		config->lock->name, iterations, cpu, PRIO_LOW, PRIO_MEDIUM, PRIO_HIGH);
	fprintf(human, "  high acquired before medium's burst ended: %u of %u (lock %s priority "
		"inheritance)\n", high_first, iterations, pi ? "has" : "has no");
	fprintf(human, "  high's wait   p50 %.0f ns  p99 %.0f ns  max %.0f ns (burst %.0f ns)\n",
		(double)histogram_percentile(&run->high_wait, 50),
		(double)histogram_percentile(&run->high_wait, 99), (double)run->high_wait.max,
		run->burst_s * 1e9);
	if (watchdog)
		fprintf(stderr, "locklab-bench: watchdog: pi-inversion iteration %u did not finish in "
			"%.1f s with lock '%s'\n", iterations + 1, config->watchdog_s, config->lock->name);
	if (violation)
		fprintf(stderr, "locklab-bench: correctness violation with lock '%s': counter %llu "
			"after %llu acquisitions\n", config->lock->name,
			(unsigned long long)run->cs_counter, (unsigned long long)run->acquisitions);
	if (config->json_path == NULL)
		return status;
	struct json_writer *j = json_open(config->json_path);
	if (j == NULL)
		return status == EXIT_FINE ? EXIT_USAGE : status;
	json_int(j, "schema", ENGINE_SCHEMA_VERSION);
	json_string(j, "scenario", "pi-inversion");
	json_string(j, "status", status == EXIT_FINE       ? "ok"
				 : status == EXIT_WATCHDOG ? "watchdog"
							   : "violation");
	json_string(j, "lock", config->lock->name);
	json_bool(j, "lock_has_priority_inheritance", pi);
	json_string(j, "machine_host", facts->hostname);
	json_int(j, "cpu", cpu);
	json_uint(j, "iterations", iterations);
	json_uint(j, "iterations_planned", planned);
	json_uint(j, "high_before_medium", high_first);
	json_double(j, "hold_ns", run->hold_s * 1e9);
	json_double(j, "burst_ns", run->burst_s * 1e9);
	json_begin_object(j, "priorities");
	for (int r = 0; r < ROLES; r++)
		json_int(j, role_names[r], role_prio[r]);
	json_end_object(j);
	json_ns_percentiles(j, &run->high_wait);
	json_close(j);
	return status;
}

int run_pi_scenario(const struct bench_config *config, const struct machine_facts *facts)
{
	static struct pi_run run;
	static struct pi_thread threads[ROLES];
	const struct lock_ops *ops = config->lock;
	u32 iterations = config->ops ? (u32)config->ops : 20;
	int cpu = facts->allowed[0].cpu;

	/* Permission first: one clear line, and what still runs. */
	struct sched_param probe = { .sched_priority = PRIO_LOW };
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &probe) != 0)
		usage_error("--scenario pi-inversion needs SCHED_FIFO (root, CAP_SYS_NICE or "
			    "RLIMIT_RTPRIO), which is not permitted here; every other run works "
			    "without it");
	probe.sched_priority = 0;
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &probe);
	if (facts->cpus_allowed > 1) { /* the controller keeps off the scenario's CPU */
		cpu_set_t others;
		CPU_ZERO(&others);
		for (int i = 1; i < facts->cpus_allowed; i++)
			CPU_SET(facts->allowed[i].cpu, &others);
		sched_setaffinity(0, sizeof(others), &others);
	}

	run.config = config;
	run.hold_s = (config->hold_ns ? (double)config->hold_ns : 1e6) * 1e-9;
	run.burst_s = run.hold_s * BURST_PER_HOLD;
	run.high_seq = calloc(iterations + 1, sizeof(u32));
	run.medium_seq = calloc(iterations + 1, sizeof(u32));
	void *lock = NULL;
	if (posix_memalign(&lock, LOCKLAB_CACHELINE, ops->lock_size < 64 ? 64 : ops->lock_size) ||
	    !run.high_seq || !run.medium_seq)
		usage_error("out of memory");
	memset(lock, 0, ops->lock_size);
	run.lock = lock;
	struct lock_init_args init_args = { config->params, ROLES };
	if (ops->init && ops->init(lock, &init_args) != 0)
		usage_error("lock '%s' failed to initialise", ops->name);

	for (int r = 0; r < ROLES; r++) {
		struct pi_thread *t = &threads[r];
		pthread_attr_t attr;
		struct sched_param param = { .sched_priority = role_prio[r] };
		cpu_set_t one;
		t->run = &run;
		t->role = (enum role)r;
		t->ctx.index = (unsigned int)r;
		t->ctx.cpu = cpu;
		t->ctx.numa_node = node_of_cpu(facts, cpu);
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_init(&attr);
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &param);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		int err = pthread_create(&t->thread, &attr, pi_thread_main, t);
		pthread_attr_destroy(&attr);
		if (err != 0)
			usage_error("cannot start the %s-priority thread: %s", role_names[r],
				    strerror(err));
	}

	double timeout = config->watchdog_s > 0 ? config->watchdog_s : 3600;
	u32 finished = 0;
	for (u32 i = 1; i <= iterations; i++) {
		__atomic_store_n(&run.done, 0, __ATOMIC_RELAXED);
		publish(&run.go_low, i);
		if (!wait_for_timeout(&run.low_holds, i, timeout))
			_exit(pi_report(&run, facts, finished, iterations, cpu, true));
		publish(&run.go_medium, i);
		if (!wait_for_timeout(&run.done, ROLES, timeout))
			_exit(pi_report(&run, facts, finished, iterations, cpu, true));
		finished = i;
	}
	__atomic_store_n(&run.stop, 1, __ATOMIC_RELEASE);
	publish(&run.go_low, iterations + 1);
	publish(&run.go_medium, iterations + 1);
	publish(&run.go_high, iterations + 1);
	for (int r = 0; r < ROLES; r++)
		pthread_join(threads[r].thread, NULL);
	int status = pi_report(&run, facts, finished, iterations, cpu, false);
	if (ops->destroy)
		ops->destroy(lock);
	return status;
}
