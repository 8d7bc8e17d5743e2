/* SPDX-License-Identifier: MIT */
/*
 * mutex_calls - what one uncontended pthread_mutex_lock/unlock pair and one
 * pthread_rwlock_rdlock/unlock pair cost, in ns. bench/interpose_overhead.py runs it with and
 * without LD_PRELOAD=liblocklab-interpose.so (LOCKLAB_LOCK=pthread_mutex: every call passed to
 * the C library): the difference is what interposition adds to each call, measured with far
 * less noise than a whole program's throughput, which it then multiplies by the calls a program
 * makes.
 *
 * usage: mutex_calls [PAIRS]   prints "mutex_ns_per_pair: X" and "rwlock_ns_per_pair: Y"
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 20000000;
	if (pairs <= 0) {
		fprintf(stderr, "mutex_calls: PAIRS must be a positive number\n");
		return 2;
	}
	/* Statically initialised, as most programs' locks are: the interposer finds them lazily. */
	static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
	static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;

	double start = now_ns();
	for (long i = 0; i < pairs; i++) {
		pthread_mutex_lock(&mutex);
		pthread_mutex_unlock(&mutex);
	}
	double middle = now_ns();
	for (long i = 0; i < pairs; i++) {
		pthread_rwlock_rdlock(&rwlock);
		pthread_rwlock_unlock(&rwlock);
	}
	double end = now_ns();
	printf("mutex_ns_per_pair: %.3f\n", (middle - start) / (double)pairs);
	printf("rwlock_ns_per_pair: %.3f\n", (end - middle) / (double)pairs);
	return 0;
}
