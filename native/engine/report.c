/* SPDX-License-Identifier: MIT */
/*
 * report.c - what a run measured: the verdict, a short human summary, and the JSON document
 * (schema: native/engine/result.schema.json) that the front end stores.
 * Every figure comes from the measured window only; the warm-up is discarded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <locklab/tunable.h>

#include "engine.h"

/* The watchdog's idle time: a simulated run's is virtual, and far below a second. */
#ifdef LOCKLAB_SIM
#define WATCHDOG_IDLE "%.4f virtual s"
#else
#define WATCHDOG_IDLE "%.1f s"
#endif

#ifndef LOCKLAB_VERSION
#define LOCKLAB_VERSION "unknown"
#endif

struct violation_summary {
	uint64_t owner;             /* writer found another writer inside, or lost ownership */
	uint64_t readers;           /* writer and reader inside together */
	uint64_t read_data;         /* data changed under a reader */
	uint64_t counter_mismatch;  /* |cs.writes - write acquisitions| */
	uint64_t cs_lines_mismatch; /* shared lines whose count differs from cs.writes */
	uint64_t total;
};

struct fairness {
	uint64_t max, min;
	double max_min_ratio;
	double jain_index;
	double fairness_factor; /* share of acquisitions by the busiest half (CNA paper) */
};

struct role_summary {
	unsigned int threads;
	uint64_t acquisitions;
	struct fairness fairness;
	struct histogram latency;
};

static int compare_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static struct fairness fairness_of(const uint64_t *counts, unsigned int n)
{
	struct fairness f = { 0, UINT64_MAX, NAN, NAN, NAN };
	double sum = 0, sum_sq = 0, busiest = 0;
	uint64_t *sorted = malloc(n * sizeof(uint64_t));
	if (n == 0 || sorted == NULL) {
		free(sorted);
		f.min = 0;
		return f;
	}
	memcpy(sorted, counts, n * sizeof(uint64_t));
	qsort(sorted, n, sizeof(uint64_t), compare_desc);
	for (unsigned int i = 0; i < n; i++) {
		sum += (double)sorted[i];
		sum_sq += (double)sorted[i] * (double)sorted[i];
		if (i < n / 2)
			busiest += (double)sorted[i];
	}
	f.max = sorted[0];
	f.min = sorted[n - 1];
	f.max_min_ratio = f.min ? (double)f.max / (double)f.min : INFINITY;
	f.jain_index = sum_sq > 0 ? sum * sum / (n * sum_sq) : NAN;
	/* Busiest half: the top n/2 threads (1 thread: all of it). 0.5 is perfectly fair. */
	f.fairness_factor = n == 1 ? 1.0 : (sum > 0 ? busiest / sum : NAN);
	free(sorted);
	return f;
}

static void summarise_role(const struct run_state *run, bool readers, bool private_ok,
			   struct role_summary *out)
{
	uint64_t *counts = calloc(run->nthreads + 1, sizeof(uint64_t));
	memset(out, 0, sizeof(*out));
	for (unsigned int i = 0; i < run->nthreads; i++) {
		const struct worker *w = run->workers[i];
		if (w->is_reader != readers)
			continue;
		uint64_t n = __atomic_load_n(&w->acquisitions_window, __ATOMIC_RELAXED);
		if (counts)
			counts[out->threads] = n;
		out->threads++;
		out->acquisitions += n;
		if (private_ok)
			histogram_merge(&out->latency, w->latency);
	}
	if (counts)
		out->fairness = fairness_of(counts, out->threads);
	free(counts);
}

static void check_violations(const struct run_state *run, struct violation_summary *v)
{
	uint64_t write_acquisitions = 0;
	memset(v, 0, sizeof(*v));
	for (unsigned int i = 0; i < run->nthreads; i++) {
		const struct worker *w = run->workers[i];
		v->owner += w->violations_owner;
		v->readers += w->violations_readers;
		v->read_data += w->violations_read_data;
		if (!w->is_reader)
			write_acquisitions += w->acquisitions_total;
	}
	v->counter_mismatch = run->cs.writes > write_acquisitions
				      ? run->cs.writes - write_acquisitions
				      : write_acquisitions - run->cs.writes;
	for (unsigned int i = 0; i < run->config->cs_lines; i++)
		v->cs_lines_mismatch += run->cs.lines[i].value != run->cs.writes;
	v->total = v->owner + v->readers + v->read_data + v->counter_mismatch + v->cs_lines_mismatch;
}

static double cycles_to_ns(const struct run_state *run, double cycles)
{
	double rate = run->calibration->cycles_per_ns;
	return rate > 0 ? cycles / rate : cycles;
}

static void json_latency(struct json_writer *j, const char *key, const struct run_state *run,
			 const struct role_summary *role)
{
	if (role->threads == 0 || role->latency.count == 0) {
		json_null(j, key);
		return;
	}
	const struct histogram *h = &role->latency;
	json_begin_object(j, key);
	json_uint(j, "samples", h->count);
	json_uint(j, "sampled_every", run->sample_every);
	json_double(j, "mean", cycles_to_ns(run, h->sum / (double)h->count));
	json_double(j, "p50", cycles_to_ns(run, (double)histogram_percentile(h, 50)));
	json_double(j, "p90", cycles_to_ns(run, (double)histogram_percentile(h, 90)));
	json_double(j, "p99", cycles_to_ns(run, (double)histogram_percentile(h, 99)));
	json_double(j, "p99_9", cycles_to_ns(run, (double)histogram_percentile(h, 99.9)));
	json_double(j, "max", cycles_to_ns(run, (double)h->max));
	json_end_object(j);
}

static void json_fairness(struct json_writer *j, const char *key, const struct role_summary *role)
{
	if (role->threads == 0) {
		json_null(j, key);
		return;
	}
	json_begin_object(j, key);
	json_uint(j, "max", role->fairness.max);
	json_uint(j, "min", role->fairness.min);
	json_double(j, "max_min_ratio", role->fairness.max_min_ratio);
	json_double(j, "jain_index", role->fairness.jain_index);
	json_double(j, "fairness_factor", role->fairness.fairness_factor);
	json_end_object(j);
}

/* Hand-overs between writers, summed over the writers (see worker.c). */
struct handoff_summary {
	uint64_t total, same_node, reacquisitions;
	uint64_t parks, wakes; /* the waiting policy's futex sleeps and wake-ups (wait.h) */
	bool nodes_known; /* every writer pinned, so its node is known */
	uint64_t overtaken_samples, overtaken_sum, overtaken_max, overtaken_beyond;
	uint64_t remote_cost_paid; /* --numa-remote-ns */
};

static struct handoff_summary handoffs_of(const struct run_state *run)
{
	struct handoff_summary h = { 0, 0, 0, 0, 0, true, 0, 0, 0, 0, remote_cost_paid_of(run) };
	for (unsigned int i = 0; i < run->nthreads; i++) {
		const struct worker *w = run->workers[i];
		h.parks += w->ctx.parks;
		h.wakes += w->ctx.wakes;
		if (w->is_reader)
			continue;
		h.total += w->handoffs;
		h.same_node += w->handoffs_same_node;
		h.reacquisitions += w->reacquisitions;
		h.nodes_known &= w->ctx.numa_node >= 0;
		h.overtaken_samples += w->overtaken_samples;
		h.overtaken_sum += w->overtaken_sum;
		h.overtaken_beyond += w->overtaken_beyond;
		if (w->overtaken_max > h.overtaken_max)
			h.overtaken_max = w->overtaken_max;
	}
	return h;
}

static void json_handoffs(struct json_writer *j, const struct handoff_summary *h, bool private_ok)
{
	if (!private_ok) {
		json_null(j, "handoffs");
		json_null(j, "overtaken");
		return;
	}
	json_begin_object(j, "handoffs");
	json_uint(j, "total", h->total);
	json_uint(j, "same_node", h->same_node);
	if (h->nodes_known && h->total)
		json_double(j, "same_node_fraction", (double)h->same_node / (double)h->total);
	else
		json_null(j, "same_node_fraction");
	json_bool(j, "nodes_known", h->nodes_known);
	json_uint(j, "reacquisitions", h->reacquisitions);
	json_uint(j, "remote_cost_paid", h->remote_cost_paid);
	json_end_object(j);
	if (h->overtaken_samples == 0) {
		json_null(j, "overtaken");
		return;
	}
	json_begin_object(j, "overtaken");
	json_uint(j, "samples", h->overtaken_samples);
	json_uint(j, "max", h->overtaken_max);
	json_double(j, "mean", (double)h->overtaken_sum / (double)h->overtaken_samples);
	json_uint(j, "beyond_other_writers", h->overtaken_beyond);
	json_end_object(j);
}

static const char *status_name(int status)
{
	switch (status) {
	case EXIT_FINE: return "ok";
	case EXIT_VIOLATION: return "violation";
	case EXIT_WATCHDOG: return "watchdog";
	default: return "error";
	}
}

static void json_config(struct json_writer *j, const struct bench_config *c)
{
	json_begin_object(j, "config");
	json_string(j, "lock", c->lock->name);
	json_string(j, "family", c->lock->family);
	json_string(j, "source", c->lock->source);
	json_begin_object(j, "params");
	for (size_t i = 0; i < lock_tunable_count(c->lock); i++) {
		const struct lock_tunable *t = &c->lock->tunables[i];
		if (t->choices != NULL)
			json_string(j, t->name, lock_tunable_choice(t, c->params[i]));
		else
			json_int(j, t->name, c->params[i]);
	}
	json_end_object(j);
	json_uint(j, "nwriters", c->nwriters);
	json_uint(j, "nreaders", c->nreaders);
	json_double(j, "duration_s", c->duration_s);
	json_uint(j, "ops", c->ops);
	json_double(j, "warmup_s", c->warmup_s);
	json_uint(j, "hold_ns", c->hold_ns);
	json_uint(j, "gap_ns", c->gap_ns);
	json_uint(j, "cs_lines", c->cs_lines);
	json_uint(j, "long_hold_ms", c->long_hold_ms);
	json_double(j, "stutter_s", c->stutter_s);
	json_double(j, "shuffle_interval_s", c->shuffle_interval_s);
	json_double(j, "stat_interval_s", c->stat_interval_s);
	json_double(j, "interval_s", c->interval_s);
	json_string(j, "pin", c->pin_text);
	json_uint(j, "numa_nodes", c->numa_nodes);
	json_uint(j, "seed", c->seed);
	json_double(j, "watchdog_s", c->watchdog_s);
	if (c->latency_every == LATENCY_EVERY_AUTO)
		json_string(j, "latency_every", "auto");
	else
		json_uint(j, "latency_every", c->latency_every);
	json_string(j, "plugin", c->plugin_path);
	json_string(j, "torture_delays", c->torture ? c->torture->name : NULL);
	json_uint(j, "numa_remote_ns", c->numa_remote_ns);
	json_uint(j, "churn", c->churn);
	json_bool(j, "checks", !c->no_checks);
	json_end_object(j);
}

static void json_machine(struct json_writer *j, const struct run_state *run)
{
	const struct machine_facts *m = run->facts;
	json_begin_object(j, "machine");
	json_string(j, "hostname", m->hostname);
	json_string(j, "arch", m->arch);
	json_string(j, "cpu_model", m->cpu_model);
	json_string(j, "kernel", m->kernel);
	json_string(j, "governor", m->governor);
	json_int(j, "cpus_online", m->cpus_online);
	json_int(j, "cpus_allowed", m->cpus_allowed);
	json_int(j, "cores", m->cores);
	json_int(j, "packages", m->packages);
	json_int(j, "numa_nodes", m->numa_nodes);
	json_int(j, "numa_nodes_real", m->numa_nodes_real);
	json_int(j, "threads_per_core", m->threads_per_core);
	json_bool(j, "smt", m->threads_per_core > 1);
#ifdef LOCKLAB_SIM
	json_bool(j, "simulated", true);
#endif
	json_machine_workload(j, run);
	json_end_object(j);
}

static void json_calibration(struct json_writer *j, const struct run_state *run)
{
	const struct calibration *cal = run->calibration;
	json_begin_object(j, "calibration");
	json_double(j, "cycles_per_ns", cal->cycles_per_ns);
	json_double(j, "loop_ns_per_iteration", cal->loop_ns_per_iteration);
	json_double(j, "loop_call_ns", cal->call_ns);
	json_uint(j, "hold_ns_requested", run->config->hold_ns);
	json_uint(j, "hold_iterations", cal->hold_iterations);
	json_double(j, "hold_ns_measured", cal->hold_measured_ns);
	json_double(j, "hold_error_pct", cal->hold_error_pct);
	json_uint(j, "gap_ns_requested", run->config->gap_ns);
	json_uint(j, "gap_iterations", cal->gap_iterations);
	json_double(j, "gap_ns_measured", cal->gap_measured_ns);
	json_double(j, "gap_error_pct", cal->gap_error_pct);
	json_double(j, "sample_ns", cal->sample_ns);
	json_pause_tunables(j, run);
	json_end_object(j);
}

struct usage_totals {
	long voluntary, involuntary, migrations; /* migrations: -1 where unknown */
	double user_s, system_s;
};

static struct usage_totals usage_delta(const struct worker *w)
{
	struct usage_totals u = { 0, 0, 0, 0, 0 };
	if (!w->window_started || !w->window_ended)
		return u;
	u.migrations = w->usage_start.migrations < 0 || w->usage_end.migrations < 0
			       ? -1
			       : w->usage_end.migrations - w->usage_start.migrations;
	/* with --churn, its mail threads' too (worker_churn.c) */
	u.voluntary = w->usage_end.voluntary_switches - w->usage_start.voluntary_switches +
		      w->churn_voluntary;
	u.involuntary = w->usage_end.involuntary_switches - w->usage_start.involuntary_switches +
			w->churn_involuntary;
	u.user_s = w->usage_end.user_s - w->usage_start.user_s + w->churn_user_s;
	u.system_s = w->usage_end.system_s - w->usage_start.system_s;
	return u;
}

static double per_1000(double value, uint64_t acquisitions)
{
	return acquisitions ? value * 1000.0 / (double)acquisitions : NAN;
}

static void json_threads(struct json_writer *j, const struct run_state *run, bool private_ok)
{
	json_begin_array(j, "threads");
	for (unsigned int i = 0; i < run->nthreads; i++) {
		const struct worker *w = run->workers[i];
		json_begin_object(j, NULL);
		json_uint(j, "index", w->ctx.index);
		json_string(j, "role", w->is_reader ? "reader" : "writer");
		json_int(j, "cpu", run->cpu_of_slot[w->slot]);
		json_int(j, "node", run->cpu_of_slot[w->slot] >= 0
					    ? node_of_cpu(run->facts, run->cpu_of_slot[w->slot])
					    : -1);
		json_uint(j, "acquisitions", __atomic_load_n(&w->acquisitions_window, __ATOMIC_RELAXED));
		if (private_ok) {
			struct usage_totals u = usage_delta(w);
			json_int(j, "voluntary_switches", u.voluntary);
			json_int(j, "involuntary_switches", u.involuntary);
			json_int(j, "migrations", u.migrations);
			json_int(j, "last_cpu", w->window_ended ? w->usage_end.cpu : -1);
			json_double(j, "user_s", u.user_s);
			json_double(j, "system_s", u.system_s);
			json_uint(j, "violations", w->violations_owner + w->violations_readers +
							   w->violations_read_data);
		}
		json_end_object(j);
	}
	json_end_array(j);
}

static void json_intervals(struct json_writer *j, const struct run_state *run)
{
	json_begin_array(j, "intervals");
	for (size_t i = 1; i < run->nintervals; i++) {
		const struct interval_sample *a = &run->intervals[i - 1], *b = &run->intervals[i];
		double span = b->t_s - a->t_s;
		uint64_t writes = b->write_acquisitions - a->write_acquisitions;
		uint64_t reads = b->read_acquisitions - a->read_acquisitions;
		json_begin_object(j, NULL);
		json_double(j, "t_s", b->t_s);
		json_double(j, "span_s", span);
		json_uint(j, "write_acquisitions", writes);
		json_uint(j, "read_acquisitions", reads);
		json_double(j, "ops_per_s", span > 0 ? (double)(writes + reads) / span : NAN);
		json_end_object(j);
	}
	json_end_array(j);
}

static void describe_violations(const struct violation_summary *v, char *out, size_t size)
{
	snprintf(out, size,
		 "%llu overlapping writers, %llu writer/reader overlaps, %llu reads of changing "
		 "data, write counter off by %llu, %llu shared lines off",
		 (unsigned long long)v->owner, (unsigned long long)v->readers,
		 (unsigned long long)v->read_data, (unsigned long long)v->counter_mismatch,
		 (unsigned long long)v->cs_lines_mismatch);
}

/* What the machine did to the run besides the lock (disturbance.c). */
struct disturbance {
	double steal_fraction; /* -1: unknown */
	int steal_cpus;
	unsigned long long steal_ticks;
	bool cache_misses_known;
	uint64_t cache_misses;
	/*
	 * NAN where undefined (no counters, no acquisition, no hand-over). Per hand-over stands in
	 * for seed 004's "coherency accesses per contended acquisition": a hand-over is the
	 * acquisition that brings the lock's and the data's lines from another CPU.
	 */
	double misses_per_acquisition, misses_per_handoff;
	char cache_miss_reason[128];
};

static double misses_per(const struct disturbance *d, uint64_t events)
{
	return d->cache_misses_known && events ? (double)d->cache_misses / (double)events : NAN;
}

static void disturbance_of(const struct run_state *run, bool private_ok, double window,
			   uint64_t acquisitions, uint64_t handoffs, struct disturbance *d)
{
	memset(d, 0, sizeof(*d));
	d->steal_fraction = -1;
	d->misses_per_acquisition = d->misses_per_handoff = NAN;
	if (run->steal_read_start && run->steal_read_end) {
		d->steal_fraction = steal_fraction(&run->steal_start, &run->steal_end, window);
		d->steal_cpus = run->steal_start.cpus;
		d->steal_ticks = run->steal_end.ticks - run->steal_start.ticks;
	}
	if (!private_ok) {
		snprintf(d->cache_miss_reason, sizeof(d->cache_miss_reason),
			 "not read: the watchdog fired");
		return;
	}
	d->cache_misses_known = run->nthreads > 0;
	for (unsigned int i = 0; i < run->nthreads && d->cache_misses_known; i++) {
		const struct worker *w = run->workers[i];
		if (w->cache_miss_fd < 0) {
			snprintf(d->cache_miss_reason, sizeof(d->cache_miss_reason), "%s",
				 w->cache_miss_reason);
			d->cache_misses_known = false;
		} else if (!w->cache_misses_counted || !w->window_ended) {
			snprintf(d->cache_miss_reason, sizeof(d->cache_miss_reason),
				 "thread %u: counter not read at both ends of the window", i);
			d->cache_misses_known = false;
		} else {
			d->cache_misses += w->cache_misses_end - w->cache_misses_start;
		}
	}
	d->misses_per_acquisition = misses_per(d, acquisitions);
	d->misses_per_handoff = misses_per(d, handoffs);
}

static void json_disturbance(struct json_writer *j, const struct disturbance *d)
{
	json_begin_object(j, "steal");
	if (d->steal_fraction >= 0) {
		json_double(j, "fraction", d->steal_fraction);
		json_uint(j, "ticks", d->steal_ticks);
		json_int(j, "cpus", d->steal_cpus);
		json_null(j, "reason");
	} else {
		json_null(j, "fraction");
		json_null(j, "ticks");
		json_int(j, "cpus", 0);
		json_string(j, "reason", "no steal column in /proc/stat for the run's CPUs");
	}
	json_end_object(j);
	json_begin_object(j, "cache_misses");
	if (d->cache_misses_known) {
		json_uint(j, "total", d->cache_misses);
		json_double(j, "per_acquisition", d->misses_per_acquisition);
		json_double(j, "per_handoff", d->misses_per_handoff);
		json_null(j, "reason");
	} else {
		json_null(j, "total");
		json_null(j, "per_acquisition");
		json_null(j, "per_handoff");
		json_string(j, "reason", d->cache_miss_reason);
	}
	json_end_object(j);
}

/* Everything a run measured, and its verdict: computed once, then printed and written. */
struct run_result {
	int status;
	bool private_ok; /* per-thread state was read (not after a watchdog) */
	struct violation_summary violations;
	struct role_summary writers, readers;
	struct usage_totals usage;
	struct handoff_summary handoffs;
	struct disturbance disturbance;
	uint64_t total, since_start;
	double window, throughput;
	char error_text[512];
};

static void run_result_compute(struct run_state *run, int status, struct run_result *r)
{
	const struct bench_config *config = run->config;
	char violation_text[256] = "";

	memset(r, 0, sizeof(*r));
	r->private_ok = status != EXIT_WATCHDOG;
	if (r->private_ok) {
		check_violations(run, &r->violations);
		if (r->violations.total)
			status = EXIT_VIOLATION;
		for (unsigned int i = 0; i < run->nthreads; i++) {
			struct usage_totals u = usage_delta(run->workers[i]);
			r->usage.voluntary += u.voluntary;
			r->usage.involuntary += u.involuntary;
			r->usage.migrations = r->usage.migrations < 0 || u.migrations < 0
						      ? -1
						      : r->usage.migrations + u.migrations;
			r->usage.user_s += u.user_s;
			r->usage.system_s += u.system_s;
		}
	}
	r->handoffs = handoffs_of(run);
	summarise_role(run, false, r->private_ok, &r->writers);
	summarise_role(run, true, r->private_ok, &r->readers);
	r->total = r->writers.acquisitions + r->readers.acquisitions;
	r->since_start = acquisitions_since_start(run); /* what locktorture's Total counts */
	/* The measured window: to its end, or to the watchdog when that fired inside it. */
	r->window = run->window_s;
	if (status == EXIT_WATCHDOG)
		r->window = run->window_start_s == 0 ? 0
			    : run->window_end_s > 0  ? run->window_end_s - run->window_start_s
						     : monotonic_s() - run->window_start_s;
	r->throughput = r->window > 0 ? (double)r->total / r->window : NAN;
	disturbance_of(run, r->private_ok, r->window, r->total, r->handoffs.total, &r->disturbance);
	describe_violations(&r->violations, violation_text, sizeof(violation_text));
	if (status == EXIT_WATCHDOG && run->watchdog_reason != NULL)
		snprintf(r->error_text, sizeof(r->error_text), "%s, with lock '%s' and %u threads",
			 run->watchdog_reason, config->lock->name, run->nthreads);
	else if (status == EXIT_WATCHDOG)
		snprintf(r->error_text, sizeof(r->error_text),
			 "watchdog: no acquisition in " WATCHDOG_IDLE " with lock '%s' and %u threads: "
			 "%s%s%s%s",
			 run->watchdog_idle_s, config->lock->name, run->nthreads,
			 run->watchdog_starved ? "starved by other tasks, not called a deadlock"
					       : "deadlock or livelock",
			 run->watchdog_host[0] ? " (" : "", run->watchdog_host,
			 run->watchdog_host[0] ? ")" : "");
	else if (status == EXIT_VIOLATION)
		snprintf(r->error_text, sizeof(r->error_text),
			 "correctness violation with lock '%s': %s", config->lock->name,
			 violation_text);
	r->status = status;
}

/* The short human summary (stderr when the JSON goes to stdout), and the error line. */
static void run_result_print(const struct run_state *run, const struct run_result *r)
{
	const struct bench_config *config = run->config;
	const struct role_summary *writers = &r->writers, *readers = &r->readers;
	bool json_on_stdout = config->json_path && strcmp(config->json_path, "-") == 0;
	FILE *human = json_on_stdout ? stderr : stdout;

	fprintf(human, "%s: %u writers, %u readers, %.3f s measured\n", config->lock->name,
		config->nwriters, config->nreaders, r->window);
	fprintf(human, "  throughput   %.0f ops/s (%llu acquisitions)\n", r->throughput,
		(unsigned long long)r->total);
	if (writers->threads && r->private_ok && writers->latency.count)
		fprintf(human, "  write wait   p50 %.0f ns  p99 %.0f ns  max %.0f ns  (1 in %u timed)"
			"  max/min %.2f\n",
			cycles_to_ns(run, (double)histogram_percentile(&writers->latency, 50)),
			cycles_to_ns(run, (double)histogram_percentile(&writers->latency, 99)),
			cycles_to_ns(run, (double)writers->latency.max), run->sample_every,
			writers->fairness.max_min_ratio);
	if (writers->threads > 1 && r->private_ok && r->handoffs.total)
		fprintf(human, "  hand-overs   %llu between writers, %.1f%% on the same node%s, "
			"%llu re-acquisitions\n",
			(unsigned long long)r->handoffs.total,
			100.0 * (double)r->handoffs.same_node / (double)r->handoffs.total,
			r->handoffs.nodes_known ? "" : " (threads unpinned: node unknown)",
			(unsigned long long)r->handoffs.reacquisitions);
	if (r->private_ok && (r->handoffs.parks || r->handoffs.wakes))
		fprintf(human, "  parking      %llu parks, %llu wake-ups (wait=spin-then-park)\n",
			(unsigned long long)r->handoffs.parks, (unsigned long long)r->handoffs.wakes);
	if (readers->threads && r->private_ok && readers->latency.count)
		fprintf(human, "  read wait    p50 %.0f ns  p99 %.0f ns  max %.0f ns  (1 in %u timed)\n",
			cycles_to_ns(run, (double)histogram_percentile(&readers->latency, 50)),
			cycles_to_ns(run, (double)histogram_percentile(&readers->latency, 99)),
			cycles_to_ns(run, (double)readers->latency.max), run->sample_every);
	if (config->hold_ns || config->gap_ns)
		fprintf(human, "  calibration  hold %llu ns -> %.0f ns (%+.1f%%), gap %llu ns -> %.0f ns "
			"(%+.1f%%)\n",
			(unsigned long long)config->hold_ns, run->calibration->hold_measured_ns,
			run->calibration->hold_error_pct, (unsigned long long)config->gap_ns,
			run->calibration->gap_measured_ns, run->calibration->gap_error_pct);
	print_workload_summary(human, run, r->private_ok);
#ifdef LOCKLAB_SIM
	print_simulation(human, run);
#endif
	if (r->disturbance.steal_fraction > 0)
		fprintf(human, "  steal        %.1f%% of the run's CPU time (hypervisor)\n",
			100.0 * r->disturbance.steal_fraction);
	if (isfinite(r->disturbance.misses_per_acquisition)) {
		fprintf(human, "  cache misses %.2f per acquisition", r->disturbance.misses_per_acquisition);
		if (isfinite(r->disturbance.misses_per_handoff))
			fprintf(human, ", %.2f per hand-over", r->disturbance.misses_per_handoff);
		fputc('\n', human);
	}
	fflush(human);
	if (r->status != EXIT_FINE)
		fprintf(stderr, "locklab-bench: %s\n", r->error_text);
#ifdef LOCKLAB_SIM
	if (r->status != EXIT_FINE) /* a bug found at 96 virtual CPUs can be stepped through */
		fprintf(stderr, "locklab-sim: the same command with --seed %llu on %s replays this "
			"interleaving exactly\n", (unsigned long long)locklab_sim_seed(),
			locklab_sim_machine_name());
#endif
}

/* The JSON document (result.schema.json); returns the final exit status. */
static int run_result_write_json(const struct run_state *run, const struct run_result *r)
{
	const struct bench_config *config = run->config;
	const struct usage_totals *usage = &r->usage;
	int status = r->status;

	if (config->json_path == NULL)
		return status;
	struct json_writer *j = json_open(config->json_path);
	if (j == NULL) {
		fprintf(stderr, "locklab-bench: error: cannot write %s\n", config->json_path);
		return status == EXIT_FINE ? EXIT_USAGE : status;
	}
	json_int(j, "schema", ENGINE_SCHEMA_VERSION);
	json_string(j, "engine_version", LOCKLAB_VERSION);
	json_string(j, "status", status_name(status));
	json_string(j, "error", status == EXIT_FINE ? NULL : r->error_text);
	json_config(j, config);
	json_machine(j, run);
	json_double(j, "window_s", r->window);
	json_double(j, "throughput_ops_per_s", r->throughput);
	json_uint(j, "total_acquisitions", r->total);
	json_uint(j, "write_acquisitions", r->writers.acquisitions);
	json_uint(j, "read_acquisitions", r->readers.acquisitions);
	json_uint(j, "acquisitions_since_start", r->since_start);
	json_begin_object(j, "violations");
	json_bool(j, "checked", r->private_ok);
	json_uint(j, "total", r->violations.total);
	json_uint(j, "overlapping_writers", r->violations.owner);
	json_uint(j, "writer_reader_overlaps", r->violations.readers);
	json_uint(j, "read_data_changed", r->violations.read_data);
	json_uint(j, "write_counter_mismatch", r->violations.counter_mismatch);
	json_uint(j, "cs_lines_mismatch", r->violations.cs_lines_mismatch);
	json_end_object(j);
	json_begin_object(j, "fairness");
	json_fairness(j, "write", &r->writers);
	json_fairness(j, "read", &r->readers);
	json_end_object(j);
	/* Unchecked, nothing counted hand-overs. */
	json_handoffs(j, &r->handoffs, r->private_ok && !run->config->no_checks);
	json_torture_delays(j, run, r->private_ok);
	json_lock_events(j, run);
	json_begin_object(j, "latency_ns");
	json_latency(j, "write", run, &r->writers);
	json_latency(j, "read", run, &r->readers);
	json_end_object(j);
	json_begin_object(j, "context_switches");
	json_int(j, "voluntary", usage->voluntary);
	json_int(j, "involuntary", usage->involuntary);
	json_double(j, "voluntary_per_1000_acquisitions",
		    per_1000((double)usage->voluntary, r->total));
	json_double(j, "involuntary_per_1000_acquisitions",
		    per_1000((double)usage->involuntary, r->total));
	json_int(j, "migrations", usage->migrations);
	json_double(j, "migrations_per_1000_acquisitions",
		    usage->migrations < 0 ? NAN : per_1000((double)usage->migrations, r->total));
	json_uint(j, "parks", r->handoffs.parks);
	json_uint(j, "wakes", r->handoffs.wakes);
	json_end_object(j);
	json_begin_object(j, "cpu");
	json_double(j, "user_s", usage->user_s);
	json_double(j, "system_s", usage->system_s);
	json_double(j, "ms_per_1000_acquisitions",
		    per_1000((usage->user_s + usage->system_s) * 1e3, r->total));
	json_double(j, "utilisation",
		    r->window > 0 ? (usage->user_s + usage->system_s) / r->window : NAN);
	json_end_object(j);
	json_disturbance(j, &r->disturbance);
	json_threads(j, run, r->private_ok);
	json_intervals(j, run);
	json_calibration(j, run);
#ifdef LOCKLAB_SIM
	json_simulation(j, run);
#endif
	json_close(j);
	return status;
}

int report_write(struct run_state *run, int status)
{
	static struct run_result result; /* histograms: too large for a watchdog's stack */

	run_result_compute(run, status, &result);
	run_result_print(run, &result);
	return run_result_write_json(run, &result);
}
