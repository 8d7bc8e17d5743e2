/* SPDX-License-Identifier: MIT */
/*
 * report_workload.c - the parts of the result that describe the workload rather than the
 * lock: locktorture's drawn delays (--torture-delays), the emulated remote-node cost
 * (--numa-remote-ns), the cost of one cpu_relax(), and every tunable counted in pauses with
 * its equivalent in ns. report.c calls these; the schema is native/engine/result.schema.json.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* Privately counted by the workers: read only after they have exited (private_ok). */
struct torture_totals {
	uint64_t draws, long_delays, long_before_window, short_delays, preempts, sleeps;
	uint64_t boosts, unboosts, boosts_denied;
};

static struct torture_totals torture_totals_of(const struct run_state *run, bool readers)
{
	struct torture_totals t = { 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	for (unsigned int i = 0; i < run->nthreads; i++) {
		const struct worker *w = run->workers[i];
		if (w->is_reader != readers)
			continue;
		t.draws += w->torture_draws;
		t.long_delays += w->torture_long;
		t.long_before_window += w->torture_long_before_window;
		t.short_delays += w->torture_short;
		t.preempts += w->torture_preempt;
		t.sleeps += w->torture_sleeps;
		t.boosts += w->torture_boosts;
		t.unboosts += w->torture_unboosts;
		t.boosts_denied += w->torture_boosts_denied;
	}
	return t;
}

static void json_share(struct json_writer *j, const char *key, uint64_t count, uint64_t draws)
{
	if (draws)
		json_double(j, key, (double)count / (double)draws);
	else
		json_null(j, key);
}

static void json_torture_role(struct json_writer *j, const char *key,
			      const struct torture_delay_spec *spec, unsigned int nthreads,
			      const struct torture_totals *t)
{
	if (spec == NULL || nthreads == 0) {
		json_null(j, key);
		return;
	}
	json_begin_object(j, key);
	json_uint(j, "threads", nthreads);
	json_uint(j, "acquisitions", t->draws);
	json_uint(j, "long", t->long_delays);
	json_uint(j, "long_before_window", t->long_before_window);
	json_uint(j, "short", t->short_delays);
	json_uint(j, "preempt", t->preempts);
	json_uint(j, "jiffy_sleeps", t->sleeps);
	json_uint(j, "long_ns", spec->long_ns);
	json_uint(j, "short_ns", spec->short_ns);
	json_share(j, "long_share", t->long_delays, t->draws);
	json_share(j, "short_share", t->short_delays, t->draws);
	json_share(j, "preempt_share", t->preempts, t->draws);
	json_double(j, "expected_long_share", torture_long_probability(spec, nthreads));
	json_double(j, "expected_short_share", torture_short_probability(spec, nthreads));
	json_double(j, "expected_preempt_share", torture_preempt_probability(spec, nthreads));
	json_end_object(j);
}

void json_torture_delays(struct json_writer *j, const struct run_state *run, bool private_ok)
{
	const struct bench_config *c = run->config;
	if (c->torture == NULL || !private_ok) {
		json_null(j, "torture_delays");
		return;
	}
	struct torture_totals writers = torture_totals_of(run, false);
	struct torture_totals readers = torture_totals_of(run, true);
	json_begin_object(j, "torture_delays");
	json_string(j, "type", c->torture->name);
	json_string(j, "follows", "Linux 6.1 kernel/locking/locktorture.c");
	json_string(j, "functions", c->torture->function);
	json_torture_role(j, "writer", c->torture->writer, c->nwriters, &writers);
	json_torture_role(j, "reader", c->torture->reader, c->nreaders, &readers);
	if (c->torture->rt_boost && c->nwriters) {
		json_begin_object(j, "rt_boost");
		json_uint(j, "boosts", writers.boosts);
		json_uint(j, "unboosts", writers.unboosts);
		json_uint(j, "denied", writers.boosts_denied);
		json_double(j, "expected_boost_share", 1.0 / ((double)c->nwriters * 50000.0));
		json_end_object(j);
	} else {
		json_null(j, "rt_boost");
	}
	json_end_object(j);
}

/* The window's rare events (run.c counts them at its open and close). */
void json_lock_events(struct json_writer *j, const struct run_state *run)
{
	static const char *const names[LOCK_EVENTS] = {
		[LOCK_EVENT_SPIN_EXPIRED] = "spin_expired",
		[LOCK_EVENT_QUEUE_FLUSH] = "queue_flush",
	};
	json_begin_object(j, "lock_events");
	for (unsigned int e = 0; e < LOCK_EVENTS; e++)
		json_uint(j, names[e], run->events[e]);
	if (run->plugin_events) {
		json_begin_object(j, "plugin");
		for (unsigned int e = 0; e < run->plugin_events; e++)
			json_uint(j, run->plugin_event_names[e], run->plugin_event_counts[e]);
		json_end_object(j);
	} else {
		json_null(j, "plugin");
	}
	json_end_object(j);
}

uint64_t remote_cost_paid_of(const struct run_state *run)
{
	uint64_t paid = 0;
	for (unsigned int i = 0; i < run->nthreads; i++)
		paid += run->workers[i]->remote_cost_paid;
	return paid;
}

/* Inside the "machine" object: facts of this run's machine that the run emulates or timed. */
void json_machine_workload(struct json_writer *j, const struct run_state *run)
{
	char text[96];
	json_double(j, "cpu_relax_ns", run->calibration->cpu_relax_ns);
	json_uint(j, "emulated_remote_node_cost_ns", run->config->numa_remote_ns);
	if (run->config->numa_remote_ns) {
		snprintf(text, sizeof(text), "emulated remote-node cost %llu ns",
			 (unsigned long long)run->config->numa_remote_ns);
		json_string(j, "remote_node_cost", text);
	} else {
		json_null(j, "remote_node_cost");
	}
}

/* A tunable counted in cpu_relax() pauses says "pauses" in its meaning (see lock.h). */
bool tunable_counts_pauses(const struct lock_tunable *t)
{
	for (const char *p = t->meaning; p && (p = strstr(p, "pauses")) != NULL; p++) {
		bool starts = p == t->meaning || !isalnum((unsigned char)p[-1]);
		if (starts)
			return true;
	}
	return false;
}

/* Inside "calibration": each pause-counted tunable of the lock, as set, and in ns. */
void json_pause_tunables(struct json_writer *j, const struct run_state *run)
{
	const struct bench_config *c = run->config;
	json_double(j, "cpu_relax_ns", run->calibration->cpu_relax_ns);
	json_begin_array(j, "pause_tunables");
	for (size_t i = 0; i < lock_tunable_count(c->lock); i++) {
		const struct lock_tunable *t = &c->lock->tunables[i];
		if (!tunable_counts_pauses(t))
			continue;
		json_begin_object(j, NULL);
		json_string(j, "name", t->name);
		json_string(j, "unit", "pauses");
		json_int(j, "value", c->params[i]);
		json_double(j, "ns", (double)c->params[i] * run->calibration->cpu_relax_ns);
		json_double(j, "ns_per_pause", run->calibration->cpu_relax_ns);
		json_end_object(j);
	}
	json_end_array(j);
}

void print_workload_summary(FILE *out, const struct run_state *run, bool private_ok)
{
	const struct bench_config *c = run->config;
	fprintf(out, "  cpu_relax    %.1f ns per pause", run->calibration->cpu_relax_ns);
	for (size_t i = 0; i < lock_tunable_count(c->lock); i++) {
		const struct lock_tunable *t = &c->lock->tunables[i];
		if (tunable_counts_pauses(t))
			fprintf(out, "; %s %ld pauses = %.0f ns", t->name, c->params[i],
				(double)c->params[i] * run->calibration->cpu_relax_ns);
	}
	fputc('\n', out);
	if (c->numa_remote_ns)
		fprintf(out, "  machine      emulated remote-node cost %llu ns: paid by %llu "
			"hand-overs\n",
			(unsigned long long)c->numa_remote_ns,
			private_ok ? (unsigned long long)remote_cost_paid_of(run) : 0ull);
	if (c->torture && private_ok) {
		struct torture_totals t = torture_totals_of(run, false);
		fprintf(out, "  torture      %s delays: %llu long", c->torture->name,
			(unsigned long long)t.long_delays);
		if (t.long_before_window)
			fprintf(out, " (%llu begun in the warm-up, held into the window)",
				(unsigned long long)t.long_before_window);
		fprintf(out, ", %llu short, %llu preempt in %llu write acquisitions",
			(unsigned long long)t.short_delays, (unsigned long long)t.preempts,
			(unsigned long long)t.draws);
		if (c->torture->rt_boost)
			fprintf(out, "; %llu SCHED_FIFO boosts (%llu denied)",
				(unsigned long long)t.boosts, (unsigned long long)t.boosts_denied);
		fputc('\n', out);
	}
}
