/* SPDX-License-Identifier: MIT */
/*
 * calibrate.c - the cycle counter's rate, and the busy loop behind --hold-ns and --gap-ns.
 *
 * Hold and gap are a loop of a fixed number of iterations, not a spin on a clock: reading a
 * clock inside the critical section would itself be a measurable cost. The loop's speed is
 * measured here, and then the requested hold and gap are timed over many repetitions, so the
 * report states how close to the request the loop actually came (as lockhammer does).
 *
 * So is what timing one acquisition costs, for --latency-every auto.
 *
 * The cost of one cpu_relax() is timed too: delays counted in pauses (Lespinasse's 45/75/375,
 * backoff limits) mean different times on different cores (PAUSE takes about 10 cycles on
 * Intel cores before Skylake, about 140 on Skylake-era ones, and differs again on AMD), so the
 * report gives their equivalent in ns.
 */
#include <math.h>
#include <time.h>

#include "engine.h"

double monotonic_s(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/*
 * Out of line, so the worker and the calibration run the very same code; the asm makes the
 * counter live in a register every iteration, so the loop can be neither removed nor unrolled
 * into something faster than what was calibrated.
 */
__attribute__((noinline)) void busy_loop(uint64_t iterations)
{
#ifdef LOCKLAB_SIM
	locklab_sim_work(iterations); /* one virtual cycle an iteration, calibrated as any loop */
#else
	for (uint64_t i = 0; i < iterations; i++)
		__asm__ __volatile__("" : "+r"(i));
#endif
}

/*
 * The fastest of several timings of `body`, in seconds: the least disturbed by preemption on a
 * shared machine. On the simulator's virtual clock nothing disturbs a timing, so once two in a
 * row took the same virtual cycles every later one would too: the clock moves on by what they
 * would take instead of running them. The figures and the virtual time stay those of running
 * them; the host's time for them (most of a short simulated run's start) is saved.
 */
static double fastest_s(void (*body)(void))
{
	const int attempts = 5;
	double best = INFINITY;
#ifdef LOCKLAB_SIM
	uint64_t last_span = UINT64_MAX;
#endif
	for (int attempt = 0; attempt < attempts; attempt++) {
#ifdef LOCKLAB_SIM
		uint64_t first_cycle = arch_cycles(); /* a clock read costs no virtual time */
#endif
		double start = monotonic_s();
		body();
		double elapsed = monotonic_s() - start;
		if (elapsed < best)
			best = elapsed;
#ifdef LOCKLAB_SIM
		uint64_t span = arch_cycles() - first_cycle;
		if (span == last_span) {
			locklab_sim_work(span * (uint64_t)(attempts - 1 - attempt));
			break;
		}
		last_span = span;
#endif
	}
	return best;
}

enum { LOOP_ITERATIONS = 2000000, PAUSES = 100000, SAMPLES = 20000 };

static void loop_body(void) { busy_loop(LOOP_ITERATIONS); }

static double loop_ns_per_iteration(void)
{
	return fastest_s(loop_body) * 1e9 / LOOP_ITERATIONS;
}

static double cycles_per_ns(void)
{
	double best_rate = 0;
	double best_span = INFINITY;
	for (int attempt = 0; attempt < 3; attempt++) {
		double t0 = monotonic_s();
		uint64_t c0 = arch_cycles();
		busy_loop(2000000);
		uint64_t c1 = arch_cycles();
		double t1 = monotonic_s();
		if (t1 - t0 < best_span) {
			best_span = t1 - t0;
			best_rate = (double)(c1 - c0) / ((t1 - t0) * 1e9);
		}
	}
	return best_rate;
}

/* Mean over many repetitions: what the threads will actually get, preemption included. */
static double time_per_call_ns(uint64_t iterations, unsigned int repetitions)
{
	double start = monotonic_s();
	for (unsigned int i = 0; i < repetitions; i++)
		busy_loop(iterations);
	return (monotonic_s() - start) * 1e9 / repetitions;
}

static double measured_ns(uint64_t iterations, uint64_t requested_ns)
{
	if (requested_ns == 0)
		return 0;
	unsigned int repetitions = (unsigned int)(20000000 / (requested_ns + 100));
	if (repetitions < 20)
		repetitions = 20;
	if (repetitions > 20000)
		repetitions = 20000;
	return time_per_call_ns(iterations, repetitions);
}

/* Iterations for a requested time: the fixed cost of a call comes off first. */
static uint64_t iterations_for(uint64_t requested_ns, double call_ns, double ns_per_iteration)
{
	double loop_ns = (double)requested_ns - call_ns;
	if (requested_ns == 0 || loop_ns <= 0)
		return 0;
	return (uint64_t)llround(loop_ns / ns_per_iteration);
}

static double error_pct(double measured, uint64_t requested)
{
	return requested == 0 ? 0.0 : (measured - (double)requested) * 100.0 / (double)requested;
}

static void pauses_body(void)
{
	for (unsigned int i = 0; i < PAUSES; i++)
		cpu_relax();
}

/* Fastest of several timings of a run of pauses, per pause. */
static double cpu_relax_ns(void) { return fastest_s(pauses_body) * 1e9 / PAUSES; }

/*
 * What a timed acquisition adds to an untimed one: two reads of the cycle counter around the
 * lock and a histogram entry (the loop's other bookkeeping happens every 64 acquisitions
 * anyway). Fastest of several timings.
 */
static void samples_body(void)
{
	static struct histogram scratch;
	for (unsigned int i = 0; i < SAMPLES; i++) {
		uint64_t before = arch_cycles();
		histogram_record(&scratch, arch_cycles() - before);
	}
}

static double sample_ns(void) { return fastest_s(samples_body) * 1e9 / SAMPLES; }

unsigned int sample_every_auto(double acquisition_ns, double sample_ns)
{
	const unsigned int most = 1u << 20;
	if (!(acquisition_ns > 0) || !(sample_ns > 0))
		return LATENCY_EVERY_NO_WARMUP;
	double wanted = sample_ns / (SAMPLING_BUDGET * acquisition_ns);
	unsigned int every = 1;
	while (every < most && (double)every < wanted)
		every <<= 1;
	return every;
}

void spin_delay_ns(const struct calibration *cal, uint64_t ns)
{
#ifdef LOCKLAB_SIM
	/* The same time passes, without a host iteration per pause. */
	locklab_sim_work((uint64_t)((double)ns * cal->cycles_per_ns));
	return;
#endif
	uint64_t start = arch_cycles();
	uint64_t cycles = (uint64_t)((double)ns * cal->cycles_per_ns);
	while (arch_cycles() - start < cycles)
		cpu_relax();
}

void calibrate(const struct bench_config *config, struct calibration *out)
{
	out->cycles_per_ns = cycles_per_ns();
	out->loop_ns_per_iteration = loop_ns_per_iteration();
	out->call_ns = time_per_call_ns(0, 100000);
	out->hold_iterations =
		iterations_for(config->hold_ns, out->call_ns, out->loop_ns_per_iteration);
	out->gap_iterations = iterations_for(config->gap_ns, out->call_ns, out->loop_ns_per_iteration);
	out->hold_measured_ns = measured_ns(out->hold_iterations, config->hold_ns);
	out->gap_measured_ns = measured_ns(out->gap_iterations, config->gap_ns);
	out->hold_error_pct = error_pct(out->hold_measured_ns, config->hold_ns);
	out->gap_error_pct = error_pct(out->gap_measured_ns, config->gap_ns);
	out->cpu_relax_ns = cpu_relax_ns();
	out->sample_ns = sample_ns();
}
