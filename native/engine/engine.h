/* SPDX-License-Identifier: MIT */
/*
 * engine.h - internal interfaces of locklab-bench (not for plugins; they use lock.h).
 *
 * Data flows one way: options -> config -> run (threads + control loop) -> results -> report.
 * No unit calls back up this chain: problems are reported through diagnostics.c, which depends
 * on nothing, and the registry (with its listing) depends only on the JSON writer.
 */
#ifndef LOCKLAB_ENGINE_H
#define LOCKLAB_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdalign.h>
#include <sys/types.h>

#include <locklab/arch.h>
#include <locklab/lock.h>
#ifdef LOCKLAB_SIM
#include <locklab/sim.h>
#endif

#define ENGINE_SCHEMA_VERSION 1
#define MAX_TUNABLES 16
#define MAX_CPUS 1024

enum exit_status {
	EXIT_FINE = 0,
	EXIT_VIOLATION = 1,
	EXIT_USAGE = 2,
	EXIT_WATCHDOG = 3,
};

/* ---- diagnostics (diagnostics.c) ---------------------------------------------------------- */
/* Print "locklab-bench: error: ..." on one line and exit 2. */
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- registry (registry.c) -------------------------------------------------------------- */
const struct lock_ops *registry_find(const char *name);
void registry_load_plugin(const char *path); /* usage_error() on failure */
const struct lock_ops *registry_last_plugin(void);
/*
 * A plugin may export its own writer loop (LOCKLAB_PLUGIN_LOOP_SYMBOL, worker_loop.h compiled
 * with its lock called directly, as native/engine/loops/ do for built-in locks) and the
 * engine layout it was compiled against (LOCKLAB_PLUGIN_LAYOUT_SYMBOL, LOCKLAB_ENGINE_LAYOUT:
 * a hash of the engine headers the loop depends on, set by the build).
 */
struct worker;
typedef void plugin_writer_loop_fn(struct worker *w, uint32_t control_seen);
#define LOCKLAB_PLUGIN_LOOP_SYMBOL "locklab_plugin_writer_loop"
#define LOCKLAB_PLUGIN_LAYOUT_SYMBOL "locklab_plugin_engine_layout"
#ifndef LOCKLAB_ENGINE_LAYOUT
#define LOCKLAB_ENGINE_LAYOUT "unset"
#endif
plugin_writer_loop_fn *registry_plugin_loop(const struct lock_ops *ops);
/*
 * A plugin may count rare events of its own (a kernel: lock, the kernel's lock event counters,
 * CONFIG_LOCK_EVENT_COUNTS): it exports LOCKLAB_PLUGIN_EVENTS_SYMBOL, which writes up to `most`
 * names and counts, each summed over the plugin's CPUs, and returns how many it has. The
 * engine calls it from its control thread, at the window's open and close.
 */
#define LOCKLAB_PLUGIN_EVENTS_SYMBOL "locklab_plugin_events"
#define PLUGIN_MAX_EVENTS 64
typedef unsigned int plugin_events_fn(const char **names, uint64_t *counts, unsigned int most);
plugin_events_fn *registry_plugin_events(const struct lock_ops *ops);
size_t registry_count(void);
const struct lock_ops *registry_at(size_t i);
size_t lock_tunable_count(const struct lock_ops *ops);
/* --list: every lock (name, family, summary; with json_path, the JSON catalogue with aliases). */
void list_locks(const char *json_path);

/* ---- topology and machine facts (topology.c) ----------------------------------------------- */
struct cpu_info {
	int cpu;
	int package;
	int core;     /* core id within the package, as sysfs says it */
	int node;     /* NUMA node */
	int smt_rank; /* 0 for the first hardware thread of a core, 1 for its sibling, ... */
	int core_key; /* one per core machine-wide: its first CPU, or from package and core id */
};

struct machine_facts {
	char hostname[128];
	char cpu_model[256];
	char kernel[256];
	char governor[64];
	const char *arch;
	int cpus_online;
	int cpus_allowed;
	int cores;
	int packages;
	int numa_nodes;
	int numa_nodes_real; /* before --numa-nodes split the CPUs into virtual nodes */
	int threads_per_core;
	struct cpu_info allowed[MAX_CPUS]; /* the CPUs this process may run on, by cpu number */
};

void machine_facts_read(struct machine_facts *facts);
/* --numa-nodes: split the allowed CPUs, in order, into `nodes` equal virtual nodes. */
void topology_split_nodes(struct machine_facts *facts, unsigned int nodes);
void topology_print(const struct machine_facts *facts);

enum pin_mode { PIN_NONE, PIN_COMPACT, PIN_CORES, PIN_SCATTER, PIN_LIST };

/* Fills cpu_of_slot[0..nthreads-1]; -1 everywhere for PIN_NONE. usage_error() if impossible. */
void pin_plan(const struct machine_facts *facts, enum pin_mode mode, const int *list,
	      int list_len, unsigned int nthreads, int *cpu_of_slot);
int node_of_cpu(const struct machine_facts *facts, int cpu);

/* ---- locktorture's delays (torture_delays.c) ------------------------------------------------ */
/* kernel/torture.c's struct torture_random_state, with the refresh clock as a hook for tests. */
struct torture_random_state {
	uint64_t state; /* the kernel's unsigned long */
	long count;
	uint64_t (*refresh_ns)(void);
};

/* One role's delays: see the table in torture_delays.c. */
struct torture_delay_spec {
	uint64_t long_ns;
	unsigned long long_one_in;    /* times the number of threads of the role */
	uint64_t short_ns;
	unsigned long short_one_in;   /* 0: the short delay is the long draw's else branch */
	unsigned long preempt_one_in; /* 0: no preemption point */
};

struct torture_profile {
	const char *name;     /* locktorture's torture_type */
	const char *function; /* the kernel function the delays follow */
	const struct torture_delay_spec *writer;
	const struct torture_delay_spec *reader; /* NULL: the type has no readers */
	bool rt_boost;                           /* torture_rtmutex_boost() */
};

struct torture_draw {
	uint64_t delay_ns;
	bool long_delay;
	bool short_delay;
	bool preempt;
};

void torture_random_init(struct torture_random_state *trs, uint64_t seed, unsigned int slot);
uint32_t torture_random(struct torture_random_state *trs);
const struct torture_profile *torture_profile_find(const char *name);
const char *torture_profile_names(void);
struct torture_draw torture_draw_delay(const struct torture_delay_spec *spec,
				       struct torture_random_state *trs, unsigned int nthreads);
bool torture_draw_sleep(struct torture_random_state *trs); /* one jiffy before the lock */
/* torture_rtmutex_boost(): +1 go SCHED_FIFO, -1 back to SCHED_OTHER, 0 nothing. */
int torture_draw_boost(struct torture_random_state *trs, unsigned int nwriters, bool boosted);
double torture_long_probability(const struct torture_delay_spec *spec, unsigned int nthreads);
double torture_short_probability(const struct torture_delay_spec *spec, unsigned int nthreads);
double torture_preempt_probability(const struct torture_delay_spec *spec, unsigned int nthreads);
/* A hold into the window's counts; a long one begun before the window and held into it too. */
void torture_count_hold(struct worker *w, const struct torture_draw *d, bool measuring,
			uint32_t before, uint32_t after);

/* ---- configuration (options.c) ------------------------------------------------------------- */
/* --latency-every auto: the period is chosen when the window opens (sample_every_auto()). */
#define LATENCY_EVERY_AUTO 0u
/* Without a warm-up to measure the rate on, auto times one acquisition in this many. */
#define LATENCY_EVERY_NO_WARMUP 64u

struct bench_config {
	const struct lock_ops *lock;
	long params[MAX_TUNABLES];
	unsigned int nwriters;
	unsigned int nreaders;
	double duration_s;  /* 0: no time limit (then ops > 0) */
	uint64_t ops;       /* 0: no acquisition target */
	double warmup_s;
	double stat_interval_s;
	double stutter_s;
	double shuffle_interval_s;
	unsigned int long_hold_ms;
	uint64_t hold_ns;
	uint64_t gap_ns;
	unsigned int cs_lines;
	enum pin_mode pin;
	unsigned int numa_nodes; /* --numa-nodes; 0: the machine's own */
	const char *pin_text;
	int pin_list[MAX_CPUS];
	int pin_list_len;
	uint64_t seed;
	double watchdog_s;
	unsigned int latency_every; /* sample one acquisition in this many, or LATENCY_EVERY_AUTO */
	double interval_s;          /* period of the per-interval throughput series */
	const char *json_path;
	const char *plugin_path;
	bool list;
	bool topology;
	const char *scenario; /* NULL: the throughput run; "pi-inversion" */
	const struct torture_profile *torture; /* --torture-delays; NULL: off */
	unsigned int churn; /* --churn: write acquisitions per short-lived thread; 0: off */
	uint64_t numa_remote_ns; /* --numa-remote-ns: emulated cost of a cross-node hand-over */
	bool no_checks; /* --no-checks: the bare loop's section, no per-acquisition check */
};

void options_parse(int argc, char **argv, struct bench_config *config);

/* ---- calibration (calibrate.c) ------------------------------------------------------------ */
struct calibration {
	double cycles_per_ns;        /* arch_cycles() rate */
	double loop_ns_per_iteration; /* the busy loop used for hold and gap */
	double call_ns;               /* fixed cost of one busy_loop() call */
	uint64_t hold_iterations;
	uint64_t gap_iterations;
	double hold_measured_ns; /* mean of timed repetitions of the calibrated hold */
	double gap_measured_ns;
	double hold_error_pct;   /* (measured - requested) / requested */
	double gap_error_pct;
	double cpu_relax_ns; /* one cpu_relax(): PAUSE or YIELD, timed */
	double sample_ns;    /* what timing one acquisition adds: two counter reads, a record */
};

void calibrate(const struct bench_config *config, struct calibration *out);
/*
 * --latency-every auto: one timed acquisition in the power of two that keeps timing's cost
 * (sample_ns each) under SAMPLING_BUDGET of a thread that takes one acquisition every
 * `acquisition_ns`. A fixed count, so the timed acquisitions are a uniform draw of the window's.
 */
#define SAMPLING_BUDGET 0.005
unsigned int sample_every_auto(double acquisition_ns, double sample_ns);
void busy_loop(uint64_t iterations);
/* Busy-wait `ns` on the cycle counter with cpu_relax(), as the kernel's delay_tsc() does. */
void spin_delay_ns(const struct calibration *cal, uint64_t ns);
double monotonic_s(void);

/* ---- latency histogram (histogram.c) ------------------------------------------------------- */
#define HIST_SUB_BITS 5
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)

struct histogram {
	uint64_t count;
	uint64_t max;
	double sum;
	uint64_t bucket[HIST_BUCKETS];
};

void histogram_record(struct histogram *h, uint64_t value);
void histogram_merge(struct histogram *into, const struct histogram *from);
uint64_t histogram_percentile(const struct histogram *h, double pct);

/* ---- the run (run.c, worker.c) -------------------------------------------------------------- */
/* The control word, read by every thread once per acquisition. */
enum {
	CONTROL_MEASURE = 1u << 0, /* the warm-up is over: count, time and snapshot */
	CONTROL_STOP = 1u << 1,    /* finish the current acquisition and leave */
	CONTROL_PAUSE = 1u << 2,   /* --stutter: wait until it clears */
	CONTROL_SHUFFLE_ONE = 1u << 8, /* the --shuffle-interval generation counts from here up */
};

static inline bool control_measuring(uint32_t control)
{
	return (control & (CONTROL_MEASURE | CONTROL_STOP)) == CONTROL_MEASURE;
}

struct usage_snapshot {
	double user_s;
	double system_s;
	long voluntary_switches;
	long involuntary_switches;
	long migrations; /* between CPUs (/proc's se.nr_migrations); -1: unknown */
	int cpu;         /* the CPU it was on */
};

struct worker {
	struct lock_thread ctx; /* first: cache-aligned, handed to the lock */
	struct run_state *run;
	pthread_t thread;
	bool is_reader;
	unsigned int slot; /* index among all threads, for pinning */
	pid_t tid;	   /* for its schedstat (watchdog.c) */
	double stall_ran_s, stall_waited_s; /* its schedstat when the count stopped (watchdog.c) */

	/* Written only by the worker, read by the control loop: own cache line. */
	alignas(LOCKLAB_CACHELINE) uint64_t acquisitions_total;
	uint64_t acquisitions_window;

	/* Private to the worker until it has exited. */
	alignas(LOCKLAB_CACHELINE) uint64_t violations_owner;
	/* Hand-overs seen by this writer in the window (see struct critical_section). */
	uint64_t handoffs;           /* the previous holder was another writer */
	uint64_t handoffs_same_node; /* ... on my NUMA node */
	uint64_t reacquisitions;     /* the previous holder was me */
	uint64_t handoff_checks;     /* acquisitions that took the hand-over path (worker_loop.h) */
	uint64_t sample_wait;        /* the sampled acquisition's wait, cycles */
	uint64_t sample_overtaken;   /* and how many acquisitions overtook it */
	uint64_t overtaken_max;      /* sampled: most acquisitions by others during one wait */
	uint64_t overtaken_sum;
	uint64_t overtaken_samples;
	uint64_t overtaken_beyond;   /* sampled waits overtaken by more than the other writers */
	uint64_t violations_readers;
	uint64_t violations_read_data;
	uint64_t remote_cost_paid; /* --numa-remote-ns: hand-overs from another node that paid */
	/* --torture-delays, counted in the window. */
	uint64_t torture_draws;
	uint64_t torture_long;
	uint64_t torture_long_before_window; /* of torture_long: begun in the warm-up */
	uint64_t torture_short;
	uint64_t torture_preempt;
	uint64_t torture_sleeps;
	uint64_t torture_boosts;
	uint64_t torture_unboosts;
	uint64_t torture_boosts_denied;
	bool torture_boosted;
	/* --churn: what its mail threads did in the window; the first thread it could not make */
	long churn_voluntary, churn_involuntary;
	double churn_user_s;
	uint64_t churn_mails;
	int churn_failed;
	struct torture_random_state torture_rng;
	uint64_t random;
	uint32_t sample_every;     /* the period in force: run->sample_every once measuring */
	uint32_t sample_countdown; /* acquisitions until the next timed one, counting it */
	bool window_started;
	bool window_ended;
	struct usage_snapshot usage_start;
	struct usage_snapshot usage_end;
	struct histogram *latency;
	/* Hardware cache misses in the window (disturbance.c); fd -1: none, see cache_miss_reason. */
	int cache_miss_fd;
	bool cache_misses_counted; /* both ends of the window were read */
	uint64_t cache_misses_start;
	uint64_t cache_misses_end;
	char cache_miss_reason[96];
};

/* Shared data the critical section works on, away from the lock's own cache line. */
struct cs_line {
	alignas(LOCKLAB_CACHELINE) uint64_t value;
};

struct critical_section {
	/* The holder's key (worker_holder_key), or 0 (the lean loop never clears it). */
	alignas(LOCKLAB_CACHELINE) uint32_t writer_inside;
	uint32_t readers_inside;
	uint64_t writes;        /* plain, under the write lock (a sampled waiter peeks at it) */
	uint64_t window_writes; /* plain: for --ops */
	/* The last holder's key, for hand-over counts: plain, under the write lock. */
	uint32_t last_holder;
	struct cs_line *lines;  /* --cs-lines */
};

/* Steal ticks (USER_HZ) summed over the CPUs a run uses, from /proc/stat (disturbance.c). */
struct steal_sample {
	unsigned long long ticks;
	int cpus;
};

struct interval_sample {
	double t_s; /* since the start of the measured window */
	uint64_t write_acquisitions;
	uint64_t read_acquisitions;
};

struct progress_watch {
	uint64_t seen;	  /* acquisitions at the last change */
	double seen_at_s; /* when that change was seen */
};

struct run_state {
	const struct bench_config *config;
	const struct machine_facts *facts;
	const struct calibration *calibration;
	void *lock;
	struct critical_section cs;
	alignas(LOCKLAB_CACHELINE) uint32_t control;
	/* --latency-every in force in the window: set before CONTROL_MEASURE, read after it. */
	uint32_t sample_every;
	pthread_barrier_t start_barrier;
	double window_end_s; /* written by whoever stops the run (under the lock for --ops) */
	unsigned int nthreads;
	struct worker **workers;
	int *cpu_of_slot;
	int cpu_slot_count;

	/* Results of the control loop. */
	double window_start_s;
	double window_s;
	bool watchdog_fired;
	double watchdog_idle_s;
	const char *watchdog_reason; /* NULL: no acquisition for --watchdog; else which limit */
	/* The watchdog's rule and alarm (watchdog.c): the handler's, set before the timer runs. */
	struct progress_watch watch;
	uint32_t alarm; /* futex word: raised by the handler, the control thread sleeps on it */
	double alarm_idle_s, alarm_at_s;
	/* What the host did to the threads since the count stopped (watchdog.c). */
	uint64_t stall_progress;
	bool stall_noted;
	double stall_at_s;
	bool watchdog_starved;
	char watchdog_host[256];
	struct interval_sample *intervals;
	size_t nintervals;
	size_t intervals_cap;
	/* Steal on the run's CPUs, read by the control loop at the window's open and close. */
	struct steal_sample steal_start;
	struct steal_sample steal_end;
	bool steal_read_start;
	bool steal_read_end;
	/* Rare events (lock.h's lock_event(), and the plugin's own): in the window alone. */
	uint64_t events[LOCK_EVENTS];
	unsigned int plugin_events;
	const char *plugin_event_names[PLUGIN_MAX_EVENTS];
	uint64_t plugin_event_counts[PLUGIN_MAX_EVENTS];
#ifdef LOCKLAB_SIM
	/* The simulation's counts when the window opened (report_sim.c). */
	struct locklab_sim_counts sim_at_window;
	uint64_t sim_acquisitions_at_window;
#endif
};

void *worker_main(void *arg);

/* watchdog.c: no acquisition for a limit; a --stutter pause counts as progress. */
bool progress_stalled(struct progress_watch *watch, uint64_t progress, bool paused, double now_s,
		      double limit_s, double *idle_s);
#ifndef LOCKLAB_SIM
void watchdog_arm(struct run_state *run); /* after the workers exist: the timer starts */
void watchdog_disarm(void);
bool watchdog_alarm(struct run_state *run, double *idle_s); /* raised: how long idle */
void watchdog_note_tick(struct run_state *run, uint64_t progress); /* each control tick */
void watchdog_describe_host(struct run_state *run); /* watchdog_host, watchdog_starved */
#endif
/* All acquisitions so far, warm-up included; also the watchdog's measure of progress. */
static inline uint64_t acquisitions_since_start(const struct run_state *run)
{
	uint64_t total = 0;
	for (unsigned int i = 0; i < run->nthreads; i++)
		total += __atomic_load_n(&run->workers[i]->acquisitions_total, __ATOMIC_RELAXED);
	return total;
}
/* Runs the whole measurement; returns the exit status. */
int run_benchmark(const struct bench_config *config, const struct machine_facts *facts);
/* --scenario pi-inversion (scenario_pi.c). */
int run_pi_scenario(const struct bench_config *config, const struct machine_facts *facts);

/* ---- disturbance (disturbance.c): steal time and cache misses, read outside the loop ---- */
bool steal_read(const struct run_state *run, struct steal_sample *out);
/* The share of the window's CPU time on the run's CPUs the hypervisor took; -1 if unknown. */
double steal_fraction(const struct steal_sample *start, const struct steal_sample *end,
		      double window_s);
/* A counter of this thread's hardware cache misses, running; -1 with `reason` if none. */
int cache_miss_counter_open(char *reason, size_t size);
bool cache_miss_counter_read(int fd, uint64_t *value);

#ifdef LOCKLAB_SIM
/* report_sim.c: the simulated run's transfers per acquisition and host cost. */
struct json_writer;
void json_simulation(struct json_writer *j, const struct run_state *run);
void print_simulation(FILE *out, const struct run_state *run);
#endif

/* ---- output (report.c, json.c) --------------------------------------------------------------- */
struct json_writer;
struct json_writer *json_open(const char *path);
void json_close(struct json_writer *w);
void json_begin_object(struct json_writer *w, const char *key);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w, const char *key);
void json_end_array(struct json_writer *w);
void json_string(struct json_writer *w, const char *key, const char *value);
void json_int(struct json_writer *w, const char *key, long long value);
void json_uint(struct json_writer *w, const char *key, unsigned long long value);
void json_double(struct json_writer *w, const char *key, double value);
void json_bool(struct json_writer *w, const char *key, bool value);
void json_null(struct json_writer *w, const char *key);

/*
 * The run's result, computed once (the verdict included), then printed and written apart:
 * report_write() is run_result_compute(), run_result_print() and run_result_write_json().
 * `status` is EXIT_FINE or EXIT_WATCHDOG; returns the final exit status (EXIT_VIOLATION when a
 * check failed). After a watchdog only the progress counters are read: stuck threads still own
 * the rest.
 */
int report_write(struct run_state *run, int status);
/* report_workload.c: --torture-delays, --numa-remote-ns, cpu_relax() and pause tunables. */
void json_torture_delays(struct json_writer *j, const struct run_state *run, bool private_ok);
void json_lock_events(struct json_writer *j, const struct run_state *run);
void json_machine_workload(struct json_writer *j, const struct run_state *run);
void json_pause_tunables(struct json_writer *j, const struct run_state *run);
uint64_t remote_cost_paid_of(const struct run_state *run);
bool tunable_counts_pauses(const struct lock_tunable *t);
void print_workload_summary(FILE *out, const struct run_state *run, bool private_ok);

#endif /* LOCKLAB_ENGINE_H */
