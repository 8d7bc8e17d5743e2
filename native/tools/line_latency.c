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
 * --fanout K,K...: how one line written by one CPU reaches K readers that all spin on it, the
 * pattern of a ticket lock's hand-over. The readers run on the first K CPUs this process may
 * use, FROM left out. Each reader notes the cycle counter when it sees the new value; per
 * round the arrivals are sorted, and the median over rounds of each rank's delay after the
 * store is printed. The first rank's delay holds the writer's invalidation of every copy,
 * the reader's miss, and its leaving a spin loop with no pause (a pipeline clear, on x86).
 * On a machine with one last-level cache, the rise from rank to rank is how long the line
 * takes to answer one more reader, what the simulator's shared-read occupancy stands for
 * (native/sim/coherence.c); where the readers sit at several distances, the ranks mix them.
 * The cycle counter (locklab/arch.h: the TSC on x86) is taken to agree across CPUs, as an
 * invariant, synchronised TSC does (Linux checks it before using it as its clock).
 *
 * --futex: what a futex costs between CPU FROM and the first CPU named (or the next one),
 * the figures a profile calls futex_wake (the waker's system call that wakes a sleeper),
 * context_switch (from that call's return until the sleeper runs on its idle CPU) and
 * futex_wait (a wait's system call that finds the word changed: the part of a wait that is
 * not sleep), and a wake that finds nobody asleep. Medians over the rounds in which the
 * sleeper was asleep when woken.
 *
 * Usage: line-latency [--rounds N] [--trials N] [--from CPU] [--fanout K,K...] [--futex]
 *                     [CPU ...]
 *   prints "transfer FROM TO NS" per CPU (every other online CPU when none is named), then
 *   "atomic NS". With --fanout or --futex, only what they measure: "fanout K NS NS ..." (the
 *   ranks' delays) per K; "futex_wake NS", "context_switch NS", "futex_wait NS",
 *   "futex_wake_nobody NS" and "futex_rounds_asleep N of M".
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "locklab/arch.h"

#define LINE_BYTES 128 /* two 64-byte lines: the adjacent-line prefetcher stays out */
#define MAX_ROUNDS 100000000 /* keeps rounds x readers x 8 bytes far from overflowing */

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

/* Each of these ends the program in one line when it cannot be done. */
static void pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "line-latency: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
		exit(2);
	}
}

static void start_thread(pthread_t *thread, void *(*body)(void *), void *argument)
{
	if (pthread_create(thread, NULL, body, argument) != 0) {
		fprintf(stderr, "line-latency: cannot start a thread\n");
		exit(2);
	}
}

static void *zeroed(size_t count, size_t size)
{
	void *memory = calloc(count, size);
	if (memory == NULL) {
		fprintf(stderr, "line-latency: out of memory\n");
		exit(2);
	}
	return memory;
}

static void *answer(void *argument)
{
	struct side *side = argument;
	pin_to(side->cpu);
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
	pin_to(a);
	start_thread(&thread, answer, &answering);
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

/* ---- --fanout: one writer, K readers of its line ------------------------------------------- */

#define FANOUT_MAX 1024
#define FANOUT_SETTLE_NS 2000.0 /* after the last arrival: every reader spins on a hit again */
#define FANOUT_SKIPPED 100      /* first rounds, not counted: caches and frequencies settle */

struct fanout_slot {
	_Alignas(LINE_BYTES) _Atomic uint64_t round_seen;
	_Atomic uint64_t seen_at; /* cycle counter */
};

static struct shared_line fanout_line;
static struct fanout_slot fanout_slots[FANOUT_MAX];

struct fanout_reader {
	int cpu, index;
	uint64_t rounds;
	_Atomic int *ready;
};

static void *fanout_read(void *argument)
{
	struct fanout_reader *reader = argument;
	struct fanout_slot *slot = &fanout_slots[reader->index];
	pin_to(reader->cpu);
	atomic_fetch_add(reader->ready, 1);
	for (uint64_t round = 1; round <= reader->rounds; round++) {
		while (atomic_load_explicit(&fanout_line.sequence, memory_order_relaxed) != round)
			;
		atomic_store_explicit(&slot->seen_at, arch_cycles(), memory_order_relaxed);
		atomic_store_explicit(&slot->round_seen, round, memory_order_release);
	}
	return NULL;
}

/* Cycles of the counter per nanosecond, against CLOCK_MONOTONIC over 20 ms. */
static double cycles_per_ns(void)
{
	double start_ns = now_ns();
	uint64_t start = arch_cycles();
	while (now_ns() - start_ns < 20e6)
		;
	return (double)(arch_cycles() - start) / (now_ns() - start_ns);
}

/* The CPUs the process was started with: read before anything pins the main thread, which
 * each measurement does (a second --fanout count once found only FROM left). */
static cpu_set_t process_cpus;

/* The CPUs this process may use, FROM left out, in order; how many. */
static int reader_cpus(int from, int *cpus, int most)
{
	int count = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && count < most; cpu++)
		if (cpu != from && CPU_ISSET(cpu, &process_cpus))
			cpus[count++] = cpu;
	return count;
}

/* Prints "fanout K NS ...": K readers, on the first K CPUs this process may use but FROM. */
static void fanout(int from, int readers, uint64_t rounds, double per_ns)
{
	static int cpus[FANOUT_MAX];
	int usable = reader_cpus(from, cpus, FANOUT_MAX);
	if (readers > usable) {
		fprintf(stderr, "line-latency: --fanout %d: this process may use only %d CPUs "
				"other than %d\n", readers, usable, from);
		exit(2);
	}
	rounds += FANOUT_SKIPPED;
	double *delays = zeroed(rounds * (uint64_t)readers, sizeof(*delays)); /* cycles */
	struct fanout_reader *reader = zeroed((size_t)readers, sizeof(*reader));
	pthread_t *threads = zeroed((size_t)readers, sizeof(*threads));
	_Atomic int ready = 0;
	atomic_store(&fanout_line.sequence, 0);
	alarm(20); /* the readers' start too */
	for (int i = 0; i < readers; i++) {
		atomic_store(&fanout_slots[i].round_seen, 0);
		reader[i] = (struct fanout_reader){cpus[i], i, rounds, &ready};
		start_thread(&threads[i], fanout_read, &reader[i]);
	}
	pin_to(from);
	while (atomic_load(&ready) < readers)
		cpu_relax();
	for (uint64_t round = 1; round <= rounds; round++) {
		alarm(20);
		double settle_from = now_ns();
		while (now_ns() - settle_from < FANOUT_SETTLE_NS)
			;
		uint64_t stored_at = arch_cycles();
		atomic_store_explicit(&fanout_line.sequence, round, memory_order_release);
		double *row = &delays[(round - 1) * (uint64_t)readers];
		for (int i = 0; i < readers; i++) {
			while (atomic_load_explicit(&fanout_slots[i].round_seen, memory_order_acquire) !=
			       round)
				cpu_relax();
			row[i] = (double)(int64_t)(atomic_load_explicit(&fanout_slots[i].seen_at,
									memory_order_relaxed) -
						   stored_at);
		}
		qsort(row, (size_t)readers, sizeof(*row), by_value);
	}
	for (int i = 0; i < readers; i++)
		pthread_join(threads[i], NULL);
	uint64_t counted = rounds - FANOUT_SKIPPED;
	double *rank = zeroed(counted, sizeof(*rank));
	printf("fanout %d", readers);
	for (int r = 0; r < readers; r++) {
		for (uint64_t round = 0; round < counted; round++)
			rank[round] = delays[(round + FANOUT_SKIPPED) * (uint64_t)readers + (uint64_t)r];
		printf(" %.1f", median_of(rank, (int)counted) / per_ns);
	}
	printf("\n");
	fflush(stdout);
	free(rank);
	free(delays);
	free(reader);
	free(threads);
}

/* ---- --futex: a sleeper's wake-up between two CPUs ------------------------------------------ */

#define FUTEX_ASLEEP_NS 200000.0 /* the sleeper's CPU has gone idle by then */

static long futex_call(_Atomic uint32_t *word, int op, uint32_t value)
{
	return syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, value, NULL, NULL, 0);
}

struct futex_pair {
	_Alignas(LINE_BYTES) _Atomic uint32_t word;
	_Alignas(LINE_BYTES) _Atomic uint64_t going_to_sleep; /* the round the sleeper is in */
	_Alignas(LINE_BYTES) _Atomic uint64_t woke; /* the round it woke in */
	_Atomic double woke_at_ns;
	int cpu;
	uint64_t rounds;
};

static void *futex_sleep(void *argument)
{
	struct futex_pair *pair = argument;
	pin_to(pair->cpu);
	for (uint64_t round = 1; round <= pair->rounds; round++) {
		atomic_store(&pair->going_to_sleep, round);
		while (atomic_load(&pair->word) == 0)
			futex_call(&pair->word, FUTEX_WAIT, 0);
		atomic_store(&pair->woke_at_ns, now_ns());
		atomic_store(&pair->woke, round);
		while (atomic_load(&pair->word) != 0) /* the waker re-arms the word */
			cpu_relax();
	}
	return NULL;
}

static double median_and_free(double *values, uint64_t count)
{
	double median = count ? median_of(values, (int)count) : -1;
	free(values);
	return median;
}

static void futex_costs(int from, int to, uint64_t rounds)
{
	static struct futex_pair pair;
	static _Alignas(LINE_BYTES) _Atomic uint32_t nobody_sleeps_here, never_waited_on;
	double *wake = zeroed(rounds, sizeof(double)), *run = zeroed(rounds, sizeof(double));
	double *wait = zeroed(rounds, sizeof(double)), *empty = zeroed(rounds, sizeof(double));
	uint64_t slept = 0;
	pair.cpu = to;
	pair.rounds = rounds;
	pthread_t thread;
	pin_to(from);
	start_thread(&thread, futex_sleep, &pair);
	for (uint64_t round = 1; round <= rounds; round++) {
		alarm(20);
		while (atomic_load(&pair.going_to_sleep) != round)
			cpu_relax();
		double asleep_from = now_ns();
		while (now_ns() - asleep_from < FUTEX_ASLEEP_NS)
			cpu_relax();
		atomic_store(&pair.word, 1); /* the lock's store, not the system call's cost */
		double start = now_ns();
		long woken = futex_call(&pair.word, FUTEX_WAKE, 1);
		double returned = now_ns();
		while (atomic_load(&pair.woke) != round)
			cpu_relax();
		if (woken == 1) { /* it was asleep: else it saw the word before sleeping */
			wake[slept] = returned - start;
			run[slept++] = atomic_load(&pair.woke_at_ns) - returned;
		}
		atomic_store(&pair.word, 0);
		start = now_ns();
		futex_call(&never_waited_on, FUTEX_WAIT, 1); /* the word is 0: returns at once */
		wait[round - 1] = now_ns() - start;
		start = now_ns();
		futex_call(&nobody_sleeps_here, FUTEX_WAKE, 1);
		empty[round - 1] = now_ns() - start;
	}
	pthread_join(thread, NULL);
	if (slept == 0) {
		fprintf(stderr, "line-latency: --futex: the sleeper was never asleep when woken, in "
				"%llu rounds\n", (unsigned long long)rounds);
		exit(3);
	}
	printf("futex_wake %.1f\n", median_and_free(wake, slept));
	printf("context_switch %.1f\n", median_and_free(run, slept));
	printf("futex_wait %.1f\n", median_and_free(wait, rounds));
	printf("futex_wake_nobody %.1f\n", median_and_free(empty, rounds));
	printf("futex_rounds_asleep %llu of %llu\n", (unsigned long long)slept,
	       (unsigned long long)rounds);
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

#define FANOUT_COUNTS 64

/* "4,8,15": the reader counts of --fanout, each 1 to FANOUT_MAX, at most FANOUT_COUNTS. */
static int reader_counts(const char *text, int *counts)
{
	int count = 0;
	char copy[256];
	if (strlen(text) >= sizeof(copy)) {
		fprintf(stderr, "line-latency: --fanout: a list of at most %zu characters\n",
			sizeof(copy) - 1);
		exit(2);
	}
	snprintf(copy, sizeof(copy), "%s", text);
	for (char *saved, *item = strtok_r(copy, ",", &saved); item;
	     item = strtok_r(NULL, ",", &saved)) {
		long readers = number(item, "--fanout's reader count");
		if (readers < 1 || readers > FANOUT_MAX || count == FANOUT_COUNTS) {
			fprintf(stderr, "line-latency: --fanout: at most %d counts, each 1 to %d\n",
				FANOUT_COUNTS, FANOUT_MAX);
			exit(2);
		}
		counts[count++] = (int)readers;
	}
	if (count == 0) {
		fprintf(stderr, "line-latency: --fanout needs reader counts, as 1,2,4\n");
		exit(2);
	}
	return count;
}

int main(int argc, char **argv)
{
	uint64_t rounds = 20000;
	int trials = 5, from = 0, targets[4096], target_count = 0, fanouts[FANOUT_COUNTS];
	int fanout_count = 0;
	bool futex = false, rounds_given = false;
	if (sched_getaffinity(0, sizeof(process_cpus), &process_cpus) != 0)
		CPU_ZERO(&process_cpus);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = (uint64_t)number(argv[++i], "--rounds");
			rounds_given = true;
		} else if (!strcmp(argv[i], "--trials") && i + 1 < argc)
			trials = (int)number(argv[++i], "--trials");
		else if (!strcmp(argv[i], "--from") && i + 1 < argc)
			from = (int)number(argv[++i], "--from");
		else if (!strcmp(argv[i], "--fanout") && i + 1 < argc)
			fanout_count = reader_counts(argv[++i], fanouts);
		else if (!strcmp(argv[i], "--futex"))
			futex = true;
		else if (argv[i][0] == '-') {
			fprintf(stderr, "line-latency: unknown option '%s'\n", argv[i]);
			return 2;
		} else if (target_count < 4096)
			targets[target_count++] = (int)number(argv[i], "a CPU");
	}
	if (rounds == 0 || rounds > MAX_ROUNDS || trials < 1 || trials > 99) {
		fprintf(stderr, "line-latency: --rounds must be 1 to %d and --trials 1 to 99\n",
			MAX_ROUNDS);
		return 2;
	}
	signal(SIGALRM, on_stall);
	if (fanout_count || futex) {
		/* A round of these waits microseconds, not a transfer: fewer by default. */
		uint64_t measured_rounds = rounds_given ? rounds : 2000;
		int next_cpu = (from + 1) % (int)sysconf(_SC_NPROCESSORS_ONLN);
		int sleeper = target_count ? targets[0] : next_cpu;
		if (futex && sleeper == from) { /* before anything is measured */
			fprintf(stderr, "line-latency: --futex needs two CPUs: %d is both\n", from);
			return 2;
		}
		double per_ns = fanout_count ? cycles_per_ns() : 0;
		for (int f = 0; f < fanout_count; f++)
			fanout(from, fanouts[f], measured_rounds, per_ns);
		if (futex)
			futex_costs(from, sleeper, measured_rounds);
		return 0;
	}
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
