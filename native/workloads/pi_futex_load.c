/* SPDX-License-Identifier: MIT */
/*
 * pi-futex-load - threads contending for one priority-inheritance pthread mutex, so that the
 * kernel's rt_mutex does the waiting (seed 000's lock, reached from userspace).
 *
 * A PTHREAD_PRIO_INHERIT mutex is a PI futex: glibc takes it with a compare-and-swap of the
 * owner's TID in user space, and a contended lock or unlock goes to the kernel's
 * FUTEX_LOCK_PI / FUTEX_UNLOCK_PI, which queue the waiters on an rt_mutex (kernel/futex/pi.c,
 * kernel/locking/rtmutex.c). `perf bench futex lock-pi` does the same with raw futex calls.
 *
 * usage: pi-futex-load THREADS OPS_PER_THREAD [HOLD]
 * Each thread takes the mutex OPS_PER_THREAD times, increments a shared counter and spins
 * HOLD (default 100) iterations inside, then unlocks. Prints "ops/s: X" (all threads' lock
 * acquisitions over the wall time) and "ok"; a lost update, or any error, is one line
 * "pi-futex-load: error: ..." and exit status 1 (usage: 2).
 */
#define LOAD_NAME "pi-futex-load"
#include "load_args.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 1024

static pthread_mutex_t pi_mutex;
static unsigned long long shared_counter;
static unsigned long ops_per_thread;
static unsigned long hold_iterations = 100;

static void *contend(void *unused)
{
	(void)unused;
	for (unsigned long i = 0; i < ops_per_thread; i++) {
		int error = pthread_mutex_lock(&pi_mutex);
		if (error)
			fail("pthread_mutex_lock", error);
		shared_counter++;
		/* The hold: an empty asm the compiler cannot drop, so waiters really queue. */
		for (unsigned long spin = 0; spin < hold_iterations; spin++)
			__asm__ __volatile__("" ::: "memory");
		error = pthread_mutex_unlock(&pi_mutex);
		if (error)
			fail("pthread_mutex_unlock", error);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: pi-futex-load THREADS OPS_PER_THREAD [HOLD]\n");
		return 2;
	}
	unsigned long threads = parse_count(argv[1], "THREADS", MAX_THREADS);
	ops_per_thread = parse_count(argv[2], "OPS_PER_THREAD", 1000000000UL);
	if (argc == 4)
		hold_iterations = parse_count(argv[3], "HOLD", 100000000UL);

	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	int error = pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT);
	if (error)
		fail("PTHREAD_PRIO_INHERIT", error);
	error = pthread_mutex_init(&pi_mutex, &attr);
	if (error)
		fail("pthread_mutex_init", error);

	pthread_t ids[MAX_THREADS];
	struct timespec start, end;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned long t = 0; t < threads; t++) {
		error = pthread_create(&ids[t], NULL, contend, NULL);
		if (error)
			fail("pthread_create", error);
	}
	for (unsigned long t = 0; t < threads; t++)
		pthread_join(ids[t], NULL);
	clock_gettime(CLOCK_MONOTONIC, &end);

	unsigned long long expected = (unsigned long long)threads * ops_per_thread;
	if (shared_counter != expected) {
		fprintf(stderr, "pi-futex-load: error: lost updates: counter %llu, expected %llu\n",
			shared_counter, expected);
		return 1;
	}
	double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
	printf("threads: %lu ops: %llu seconds: %.6f\n", threads, expected, seconds);
	printf("ops/s: %.1f\n", (double)expected / seconds);
	printf("ok\n");
	return 0;
}
