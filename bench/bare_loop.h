/* SPDX-License-Identifier: MIT */
/*
 * bare_loop.h - the driver both bare P1 loops share (inline_loop.c: the engine's lock sources;
 * ck_loop.c: Concurrency Kit and glibc). It has nothing of the engine: N threads, thread i
 * pinned to CPU i (as the engine's --pin 0,1), each running batches of BARE_BATCH acquisitions
 * until a stop flag read between batches; the critical section is one shared counter increment.
 * Prints acquisitions per second; exits 1 if the counter lost an update.
 *   usage: PROGRAM LOCK SECONDS NTHREADS
 * The including file defines bare_lock_setup(name) (false: unknown lock) and
 * bare_batch(thread): BARE_BATCH times lock; shared_line.counter++; unlock.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BARE_MAX_THREADS 64

/*
 * The critical section's cache line: the counter, and beside it the engine's owner word and
 * last holder, which only the checked loops touch (inline_loop.c, BARE_CHECKS, BARE_ONE_READ).
 */
static _Alignas(64) struct {
	unsigned long long counter;
	unsigned int owner;
	unsigned int last_holder;
} shared_line;
static _Alignas(64) int bare_stop;
static pthread_barrier_t bare_start;
static unsigned long long bare_count[BARE_MAX_THREADS * 8];

#define BARE_BATCH 1024

/*
 * Around the critical section, for the compiler alone (no instruction): where lock() and
 * unlock() are calls into functions the compiler sees (the kernel ports' out-of-line entry
 * points, kernel_out_of_line), GCC's analysis of static variables finds that they never touch
 * the counter and kept it in a register across them, losing updates at 2 threads. ck's inline
 * locks and glibc's calls give it no such view.
 */
#define bare_section_fence() __asm__ __volatile__("" ::: "memory")

static bool bare_lock_setup(const char *name);
static void bare_batch(unsigned int thread);

/* flatten: lock() and unlock() inline, as in the engine's writer loops (worker_loop.h). */
__attribute__((flatten)) static void *bare_thread(void *arg)
{
	unsigned int thread = (unsigned int)(size_t)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(thread, &set);
	sched_setaffinity(0, sizeof(set), &set);
	unsigned long long n = 0;
	pthread_barrier_wait(&bare_start);
	while (!__atomic_load_n(&bare_stop, __ATOMIC_RELAXED)) {
		bare_batch(thread);
		n += BARE_BATCH;
	}
	bare_count[thread * 8] = n;
	return NULL;
}

static double bare_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc != 4 || !bare_lock_setup(argv[1])) {
		fprintf(stderr, "usage: %s LOCK SECONDS NTHREADS\n", argv[0]);
		return 2;
	}
	double seconds = atof(argv[2]);
	unsigned int n = (unsigned int)atoi(argv[3]);
	pthread_t threads[BARE_MAX_THREADS];
	if (n < 1 || n > BARE_MAX_THREADS)
		return 2;
	pthread_barrier_init(&bare_start, NULL, n + 1);
	for (unsigned int i = 0; i < n; i++)
		pthread_create(&threads[i], NULL, bare_thread, (void *)(size_t)i);
	pthread_barrier_wait(&bare_start);
	double start = bare_now();
	struct timespec sleep = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };
	nanosleep(&sleep, NULL);
	__atomic_store_n(&bare_stop, 1, __ATOMIC_RELAXED);
	unsigned long long total = 0;
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(threads[i], NULL);
		total += bare_count[i * 8];
	}
	double elapsed = bare_now() - start;
	printf("%.0f\n", (double)total / elapsed);
	return shared_line.counter == total ? 0 : 1;
}
