/*
 * line_latency: what one cache line costs to move between two CPUs, the figures a machine
 * profile's costs are made of (the TOML files in machines/, docs/simulator.md), measured on this machine.
 *
 * Method: the ping-pong of the core-to-core latency tools (for example AnandTech's and
 * nviennot/core-to-core-latency): two threads pinned to CPUs a and b take turns writing a
 * sequence number into one line; each waits with plain loads until the other's number
 * appears. One round trip is two transfers of the line in a modified state, so a transfer is
 * half a round trip. The median of several trials is kept, so a trial that the scheduler
 * disturbed does not count.
 *
 * Also: an atomic read-modify-write on a line the CPU already owns (a dependent chain of
 * fetch-adds), the figure a profile calls `atomic`.
 *
 * Usage: line-latency [--rounds N] [--trials N] [--from CPU] [CPU ...]
 *   prints "transfer FROM TO NS" per CPU (every other online CPU when none is named),
 *   then "atomic NS".
 */
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "locklab/arch.h"

#define LINE_BYTES 128 /* two 64-byte lines: the adjacent-line prefetcher stays out */

struct shared_line {
	_Alignas(LINE_BYTES) _Atomic uint64_t sequence;
	char padding[LINE_BYTES - sizeof(uint64_t)];
};

struct side {
	struct shared_line *line;
	int cpu;
	uint64_t first; /* 1: the side that starts; 2: the side that answers */
	uint64_t rounds;
	_Atomic int *ready;
};

/* A trial that makes no progress (a CPU taken away by the host) ends the program, in one line. */
static void on_stall(int signal_number)
{
	static const char line[] = "line-latency: a trial made no progress for 20 s\n";
	(void)signal_number;
	if (write(STDERR_FILENO, line, sizeof(line) - 1) < 0)
		_exit(3);
	_exit(3);
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *answer(void *argument)
{
	struct side *side = argument;
	if (pin_to(side->cpu) != 0) {
		fprintf(stderr, "line-latency: cannot pin to CPU %d: %s\n", side->cpu, strerror(errno));
		exit(2);
	}
	atomic_fetch_add(side->ready, 1);
	for (uint64_t expected = side->first; expected <= 2 * side->rounds; expected += 2) {
		while (atomic_load_explicit(&side->line->sequence, memory_order_acquire) != expected - 1)
			cpu_relax();
		atomic_store_explicit(&side->line->sequence, expected, memory_order_release);
	}
	return NULL;
}

/* One trial: nanoseconds per transfer between CPUs a and b. */
static double transfer_ns(int a, int b, uint64_t rounds)
{
	static struct shared_line line;
	_Atomic int ready = 0;
	struct side answering = {&line, b, 2, rounds, &ready};
	pthread_t thread;
	atomic_store(&line.sequence, 0);
	if (pin_to(a) != 0) {
		fprintf(stderr, "line-latency: cannot pin to CPU %d: %s\n", a, strerror(errno));
		exit(2);
	}
	if (pthread_create(&thread, NULL, answer, &answering) != 0) {
		fprintf(stderr, "line-latency: cannot start a thread\n");
		exit(2);
	}
	while (atomic_load(&ready) == 0)
		cpu_relax();
	double start = now_ns();
	for (uint64_t next = 1; next < 2 * rounds; next += 2) {
		atomic_store_explicit(&line.sequence, next, memory_order_release);
		while (atomic_load_explicit(&line.sequence, memory_order_acquire) != next + 1)
			cpu_relax();
	}
	double elapsed = now_ns() - start;
	pthread_join(thread, NULL);
	return elapsed / (double)(2 * rounds);
}

static int by_value(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double median_of(double *values, int count)
{
	qsort(values, (size_t)count, sizeof(*values), by_value);
	return values[count / 2];
}

static double atomic_ns(uint64_t operations)
{
	static _Alignas(LINE_BYTES) _Atomic uint64_t counter;
	double start = now_ns();
	for (uint64_t i = 0; i < operations; i++)
		atomic_fetch_add_explicit(&counter, 1, memory_order_seq_cst);
	return (now_ns() - start) / (double)operations;
}

static long number(const char *text, const char *what)
{
	char *end;
	errno = 0;
	long value = strtol(text, &end, 10);
	if (errno || *end || end == text || value < 0) {
		fprintf(stderr, "line-latency: %s must be a whole number >= 0, not '%s'\n", what, text);
		exit(2);
	}
	return value;
}

int main(int argc, char **argv)
{
	uint64_t rounds = 20000;
	int trials = 5, from = 0, targets[4096], target_count = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = (uint64_t)number(argv[++i], "--rounds");
		else if (!strcmp(argv[i], "--trials") && i + 1 < argc)
			trials = (int)number(argv[++i], "--trials");
		else if (!strcmp(argv[i], "--from") && i + 1 < argc)
			from = (int)number(argv[++i], "--from");
		else if (argv[i][0] == '-') {
			fprintf(stderr, "line-latency: unknown option '%s'\n", argv[i]);
			return 2;
		} else if (target_count < 4096)
			targets[target_count++] = (int)number(argv[i], "a CPU");
	}
	if (rounds == 0 || trials < 1 || trials > 99) {
		fprintf(stderr, "line-latency: --rounds must be > 0 and --trials 1 to 99\n");
		return 2;
	}
	signal(SIGALRM, on_stall);
	if (target_count == 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		for (int cpu = 0; cpu < online && cpu < 4096; cpu++)
			if (cpu != from)
				targets[target_count++] = cpu;
	}
	for (int t = 0; t < target_count; t++) {
		double samples[99];
		for (int trial = 0; trial < trials; trial++) {
			alarm(20);
			samples[trial] = transfer_ns(from, targets[t], rounds);
		}
		printf("transfer %d %d %.1f\n", from, targets[t], median_of(samples, trials));
		fflush(stdout);
	}
	double samples[99];
	alarm(20);
	for (int trial = 0; trial < trials; trial++)
		samples[trial] = atomic_ns(rounds * 10);
	printf("atomic %.2f\n", median_of(samples, trials));
	return 0;
}
