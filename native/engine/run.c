/* SPDX-License-Identifier: MIT */
/*
 * run.c - sets a run up, drives it from the main thread, and checks it afterwards.
 *
 * The main thread never touches the lock. Every 10 ms it reads the workers' counters and acts
 * on the clock: end of warm-up, the throughput series, locktorture-style stat lines, stutter,
 * shuffle, the end of the window, and the watchdog. A run whose threads make no acquisition
 * for --watchdog seconds (deadlock, livelock, a lost wake-up) is reported and the process
 * exits with status 3 without waiting for threads that will never return.
 */
#include <errno.h>
#include <linux/futex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#ifdef LOCKLAB_SIM
/* Virtual time: a simulated run lasts milliseconds, and a tick costs only the counters' lines. */
#define TICK_S 0.0001
#else
#define TICK_S 0.01
#endif

static void control_changed(struct run_state *run)
{
	syscall(SYS_futex, &run->control, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

static void control_set(struct run_state *run, uint32_t bits)
{
	__atomic_fetch_or(&run->control, bits, __ATOMIC_ACQ_REL);
	control_changed(run);
}

static void control_clear(struct run_state *run, uint32_t bits)
{
	__atomic_fetch_and(&run->control, ~bits, __ATOMIC_ACQ_REL);
	control_changed(run);
}

/*
 * Until the next tick, or at once when the watchdog's timer raises its alarm (watchdog.c). A
 * simulated run has no timer, and keeps its plain sleep: a futex wait would cost the control
 * thread another virtual time, and move every simulated figure.
 */
static void control_sleep(struct run_state *run)
{
	struct timespec tick = { 0, (long)(TICK_S * 1e9) };
#ifdef LOCKLAB_SIM
	(void)run;
	while (nanosleep(&tick, &tick) != 0 && errno == EINTR)
		;
#else
	syscall(SYS_futex, &run->alarm, FUTEX_WAIT_PRIVATE, 0, &tick, NULL, 0);
#endif
}

static void sum_counters(const struct run_state *run, bool readers, uint64_t *total,
			 uint64_t *window, uint64_t *max_total, uint64_t *min_total)
{
	*total = *window = *max_total = 0;
	*min_total = UINT64_MAX;
	for (unsigned int i = 0; i < run->nthreads; i++) {
		const struct worker *w = run->workers[i];
		if (w->is_reader != readers)
			continue;
		uint64_t t = __atomic_load_n(&w->acquisitions_total, __ATOMIC_RELAXED);
		*total += t;
		*window += __atomic_load_n(&w->acquisitions_window, __ATOMIC_RELAXED);
		if (t > *max_total)
			*max_total = t;
		if (t < *min_total)
			*min_total = t;
	}
	if (*min_total == UINT64_MAX)
		*min_total = 0;
}

/* locktorture's periodic line; "???" flags max > 2 * min, as lock_torture_print_stats does. */
static void print_stat_lines(const struct run_state *run, FILE *out)
{
	uint64_t total, window, max, min;
	if (run->config->nwriters) {
		sum_counters(run, false, &total, &window, &max, &min);
		fprintf(out, "Writes:  Total: %llu  Max/Min: %llu/%llu %s Fail: %d %s\n",
			(unsigned long long)total, (unsigned long long)max, (unsigned long long)min,
			max / 2 > min ? "???" : "", 0, "");
	}
	if (run->config->nreaders) {
		sum_counters(run, true, &total, &window, &max, &min);
		fprintf(out, "Reads :  Total: %llu  Max/Min: %llu/%llu %s Fail: %d %s\n",
			(unsigned long long)total, (unsigned long long)max, (unsigned long long)min,
			max / 2 > min ? "???" : "", 0, "");
	}
	fflush(out);
}

static void record_interval(struct run_state *run, double t_s)
{
	uint64_t total, writes, reads, max, min;
	if (run->nintervals == run->intervals_cap) {
		size_t cap = run->intervals_cap ? run->intervals_cap * 2 : 256;
		struct interval_sample *grown = realloc(run->intervals, cap * sizeof(*grown));
		if (grown == NULL)
			return; /* the series is lost, the measurement is not */
		run->intervals = grown;
		run->intervals_cap = cap;
	}
	sum_counters(run, false, &total, &writes, &max, &min);
	sum_counters(run, true, &total, &reads, &max, &min);
	run->intervals[run->nintervals++] = (struct interval_sample){ t_s, writes, reads };
}

static void watchdog_fire(struct run_state *run, double idle_s)
{
	run->watchdog_fired = true;
	run->watchdog_idle_s = idle_s;
#ifdef LOCKLAB_SIM
	locklab_sim_describe_threads();
#else
	watchdog_disarm(); /* answered: the report may take its time */
	watchdog_describe_host(run);
#endif
	/* Threads may be stuck inside the lock forever: report and leave without joining. */
	report_write(run, EXIT_WATCHDOG);
	fflush(stdout);
	fflush(stderr);
	_exit(EXIT_WATCHDOG);
}

/*
 * The watchdog, at each look of the control thread. A measured run's is a timer's (watchdog.c):
 * here it is only answered. A simulated run's counts virtual time; so does the simulator's own
 * limit on host time without an acquisition (native/sim/progress.c), with which a run whose
 * virtual time crawls ends as on the watchdog, the simulator's line its reason.
 */
static void check_watchdog(struct run_state *run, uint64_t progress, bool paused, double now)
{
	double idle;
#ifdef LOCKLAB_SIM
	if (progress_stalled(&run->watch, progress, paused, now, run->config->watchdog_s, &idle))
		watchdog_fire(run, idle);
	const char *stalled = locklab_sim_progress(progress);
	if (stalled != NULL) {
		run->watchdog_reason = stalled;
		watchdog_fire(run, now - run->watch.seen_at_s);
	}
#else
	(void)paused;
	(void)now;
	watchdog_note_tick(run, progress);
	if (watchdog_alarm(run, &idle))
		watchdog_fire(run, idle);
#endif
}

/*
 * --latency-every auto: the period from the warm-up's acquisitions per thread (none were timed),
 * stored before CONTROL_MEASURE is set, which the threads read it after.
 */
static void choose_sample_every(struct run_state *run, double warmup_s)
{
	uint64_t acquisitions = acquisitions_since_start(run);
	double acquisition_ns = acquisitions == 0 ? INFINITY
				: warmup_s * 1e9 * run->nthreads / (double)acquisitions;
	run->sample_every = sample_every_auto(acquisition_ns, run->calibration->sample_ns);
}

/*
 * The rare events counted so far: lock.h's, summed over the threads, and the plugin's own.
 * Not instrumented: in the simulator the control thread's reads of the threads' lines would
 * move them, and the counts are statistics, read while the threads run.
 */
static __attribute__((no_sanitize_thread)) void count_events(struct run_state *run,
							      uint64_t *events,
							      uint64_t *plugin_counts)
{
	for (unsigned int e = 0; e < LOCK_EVENTS; e++) {
		events[e] = 0;
		for (unsigned int i = 0; i < run->nthreads; i++)
			events[e] += *(volatile unsigned long *)&run->workers[i]->ctx.events[e];
	}
	plugin_events_fn *plugin = registry_plugin_events(run->config->lock);
	run->plugin_events = plugin ? plugin(run->plugin_event_names, plugin_counts,
					     PLUGIN_MAX_EVENTS) : 0;
}

/* The window's events: what was counted at its close less what was counted at its open. */
static void close_events(struct run_state *run)
{
	uint64_t events[LOCK_EVENTS], plugin_counts[PLUGIN_MAX_EVENTS];
	count_events(run, events, plugin_counts);
	for (unsigned int e = 0; e < LOCK_EVENTS; e++)
		run->events[e] = events[e] - run->events[e];
	for (unsigned int e = 0; e < run->plugin_events; e++)
		run->plugin_event_counts[e] = plugin_counts[e] - run->plugin_event_counts[e];
}

/* The measured window starts now: its time, and the series' first point. */
static void open_window(struct run_state *run, double now, double *next_interval)
{
	run->window_start_s = now;
	count_events(run, run->events, run->plugin_event_counts);
#ifdef LOCKLAB_SIM
	locklab_sim_counts(&run->sim_at_window);
	run->sim_acquisitions_at_window = acquisitions_since_start(run);
#endif
	run->steal_read_start = steal_read(run, &run->steal_start);
	record_interval(run, 0);
	*next_interval = now + run->config->interval_s;
}

/* The control loop; returns when the window has ended. */
static void drive(struct run_state *run)
{
	const struct bench_config *config = run->config;
	FILE *stat_out = config->json_path && strcmp(config->json_path, "-") == 0 ? stderr : stdout;
	double start = monotonic_s();
	double next_interval = 0, next_stat = start + config->stat_interval_s;
	double next_stutter = start + config->stutter_s;
	double next_shuffle = start + config->shuffle_interval_s;
	bool paused = false;

	/*
	 * Without a warm-up the window opens before the threads are released: a fast --ops run
	 * can otherwise end before the window's start is recorded.
	 */
	if (config->warmup_s == 0)
		open_window(run, start, &next_interval); /* CONTROL_MEASURE was set at start */
	pthread_barrier_wait(&run->start_barrier);
#ifdef LOCKLAB_SIM
	run->watch = (struct progress_watch){ 0, start };
#else
	watchdog_arm(run);
#endif

	for (;;) {
		control_sleep(run);
		double now = monotonic_s();
		uint32_t control = __atomic_load_n(&run->control, __ATOMIC_ACQUIRE);

		if (!(control & CONTROL_MEASURE) && now - start >= config->warmup_s) {
			if (config->latency_every == LATENCY_EVERY_AUTO)
				choose_sample_every(run, now - start);
			open_window(run, now, &next_interval);
			control_set(run, CONTROL_MEASURE);
			continue;
		}
		if (control & CONTROL_STOP)
			break; /* --ops reached; the stopping writer recorded window_end_s */
		if ((control & CONTROL_MEASURE) && config->duration_s > 0 &&
		    now - run->window_start_s >= config->duration_s) {
			uint32_t before = __atomic_fetch_or(&run->control, CONTROL_STOP, __ATOMIC_ACQ_REL);
			if (!(before & CONTROL_STOP))
				run->window_end_s = now;
			control_changed(run);
			break;
		}
		if ((control & CONTROL_MEASURE) && now >= next_interval) {
			record_interval(run, now - run->window_start_s);
			next_interval += config->interval_s;
		}
		if (config->stat_interval_s > 0 && now >= next_stat) {
			print_stat_lines(run, stat_out);
			next_stat += config->stat_interval_s;
		}
		if (config->stutter_s > 0 && now >= next_stutter) {
			paused = !paused;
			if (paused)
				control_set(run, CONTROL_PAUSE);
			else
				control_clear(run, CONTROL_PAUSE);
			next_stutter += config->stutter_s;
		}
		if (config->shuffle_interval_s > 0 && now >= next_shuffle) {
			__atomic_fetch_add(&run->control, CONTROL_SHUFFLE_ONE, __ATOMIC_ACQ_REL);
			control_changed(run);
			next_shuffle += config->shuffle_interval_s;
		}
		check_watchdog(run, acquisitions_since_start(run), paused, now);
	}
	close_events(run);
	run->steal_read_end = steal_read(run, &run->steal_end); /* within a tick of the end */
}

/*
 * Join every worker, the watchdog still on: a lock that deadlocked at once ends --watchdog
 * seconds after its last acquisition, not --watchdog seconds after the window.
 */
static void join_workers(struct run_state *run)
{
	for (unsigned int i = 0; i < run->nthreads; i++) {
		if (run->config->watchdog_s == 0) {
			pthread_join(run->workers[i]->thread, NULL);
			continue;
		}
		for (;;) {
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 50 * 1000 * 1000;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			if (pthread_timedjoin_np(run->workers[i]->thread, NULL, &until) == 0)
				break;
			check_watchdog(run, acquisitions_since_start(run), false, monotonic_s());
		}
	}
#ifndef LOCKLAB_SIM
	watchdog_disarm();
#endif
}

static void *aligned_zalloc(size_t size)
{
	size_t rounded = (size + LOCKLAB_CACHELINE - 1) / LOCKLAB_CACHELINE * LOCKLAB_CACHELINE;
	void *p = aligned_alloc(LOCKLAB_CACHELINE, rounded ? rounded : LOCKLAB_CACHELINE);
	if (p == NULL) {
		fprintf(stderr, "locklab-bench: error: out of memory\n");
		exit(EXIT_USAGE);
	}
	memset(p, 0, rounded);
	return p;
}

int run_benchmark(const struct bench_config *config, const struct machine_facts *facts)
{
	static struct calibration calibration;
	static struct run_state run;
	const struct lock_ops *ops = config->lock;

	calibrate(config, &calibration);

	run.config = config;
	run.facts = facts;
	run.calibration = &calibration;
	run.nthreads = config->nwriters + config->nreaders;
	run.lock = aligned_zalloc(ops->lock_size);
	if (config->cs_lines)
		run.cs.lines = aligned_zalloc(config->cs_lines * sizeof(struct cs_line));

	struct lock_init_args init_args = { config->params, run.nthreads };
	if (ops->init) {
		int err = ops->init(run.lock, &init_args);
		if (err != 0)
			usage_error("lock '%s' failed to initialise: %s", ops->name, strerror(-err));
	}

	run.cpu_slot_count = (int)run.nthreads;
	run.cpu_of_slot = calloc(run.nthreads, sizeof(int));
	run.workers = calloc(run.nthreads, sizeof(struct worker *));
	if (run.cpu_of_slot == NULL || run.workers == NULL)
		usage_error("out of memory");
	pin_plan(facts, config->pin, config->pin_list, config->pin_list_len, run.nthreads,
		 run.cpu_of_slot);

	pthread_barrier_init(&run.start_barrier, NULL, run.nthreads + 1);
	/* Without a warm-up the window opens with the first acquisition. */
	run.control = config->warmup_s == 0 ? CONTROL_MEASURE : 0;
	/* auto: nothing is timed in the warm-up, whose rate sets the window's period. */
	if (config->latency_every != LATENCY_EVERY_AUTO)
		run.sample_every = config->latency_every;
	else if (config->warmup_s == 0)
		run.sample_every = LATENCY_EVERY_NO_WARMUP;
	for (unsigned int i = 0; i < run.nthreads; i++) {
		struct worker *w = aligned_zalloc(sizeof(*w));
		w->run = &run;
		w->slot = i;
		w->ctx.index = i;
		w->ctx.cpu = -1;
		w->ctx.numa_node = -1;
		w->cache_miss_fd = -1;
		w->is_reader = i >= config->nwriters; /* writers first, then readers */
		w->latency = calloc(1, sizeof(struct histogram));
		if (w->latency == NULL)
			usage_error("out of memory");
		run.workers[i] = w;
	}
	for (unsigned int i = 0; i < run.nthreads; i++) {
		int err = pthread_create(&run.workers[i]->thread, NULL, worker_main, run.workers[i]);
		if (err != 0)
			usage_error("cannot create thread %u of %u: %s", i + 1, run.nthreads,
				    strerror(err));
	}
	drive(&run); /* releases the threads */
	join_workers(&run);
	run.window_s = run.window_end_s - run.window_start_s;

	int status = report_write(&run, EXIT_FINE);

	if (ops->destroy)
		ops->destroy(run.lock);
	for (unsigned int i = 0; i < run.nthreads; i++) {
		free(run.workers[i]->latency);
		free(run.workers[i]);
	}
	free(run.workers);
	free(run.cpu_of_slot);
	free(run.cs.lines);
	free(run.intervals);
	free(run.lock);
	pthread_barrier_destroy(&run.start_barrier);
	return status;
}
