/* SPDX-License-Identifier: MIT */
/*
 * inline_loop - the P1 reference: the tightest possible single-thread lock+unlock loop, with
 * the lock's own code compiled into it (so the compiler may inline it) and a plain counter in
 * the critical section, as the engine has. Built once per lock:
 *   -DLOCK_SOURCE='"../native/locks/tas.c"' -DLOCK_OPS=tas_ops
 * Usage: inline_loop OPS   -> prints acquisitions per second
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include LOCK_SOURCE

int main(int argc, char **argv)
{
	static struct lock_thread self;
	static _Alignas(LOCKLAB_CACHELINE) unsigned char lock[LOCKLAB_CACHELINE];
	static volatile unsigned long long protected_counter;
	unsigned long long ops = argc > 1 ? strtoull(argv[1], NULL, 10) : 50000000ull;
	struct timespec start, end;

	if (LOCK_OPS.init)
		LOCK_OPS.init(lock, &(struct lock_init_args){ NULL, 1 });
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned long long i = 0; i < ops; i++) {
		LOCK_OPS.lock(lock, &self);
		protected_counter = protected_counter + 1;
		LOCK_OPS.unlock(lock, &self);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
	printf("%.0f\n", (double)ops / seconds);
	return protected_counter == ops ? 0 : 1;
}
