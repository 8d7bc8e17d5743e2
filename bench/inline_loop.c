/* SPDX-License-Identifier: MIT */
/*
 * inline_loop - the P1 same-source reference: the lock's own source compiled into a bare loop
 * (bare_loop.h), so the compiler inlines lock() and unlock() as it does in the engine's
 * specialised loops, and nothing else: no checks, no counts, no sampling. Built once per lock:
 *   -DLOCK_SOURCE='"tas.c"' -DLOCK_OPS=tas_ops
 * Usage: inline_loop LOCK SECONDS NTHREADS  (LOCK: the lock's name, checked)
 */
#include LOCK_SOURCE

#include "bare_loop.h"

static _Alignas(LOCKLAB_CACHELINE) unsigned char lock_memory[4096];
static struct lock_thread selves[BARE_MAX_THREADS];

static bool bare_lock_setup(const char *name)
{
	if (strcmp(name, LOCK_OPS.name) != 0)
		return false;
	for (unsigned int i = 0; i < BARE_MAX_THREADS; i++) {
		selves[i].index = i;
		selves[i].cpu = (int)i;
		selves[i].numa_node = 0;
	}
	long params[16] = { 0 };
	for (unsigned int i = 0; LOCK_OPS.tunables && LOCK_OPS.tunables[i].name; i++)
		params[i] = LOCK_OPS.tunables[i].default_value;
	return !LOCK_OPS.init || LOCK_OPS.init(lock_memory, &(struct lock_init_args){ params, BARE_MAX_THREADS }) == 0;
}

static void bare_iteration(unsigned int thread)
{
	LOCK_OPS.lock(lock_memory, &selves[thread]);
	shared_counter = shared_counter + 1;
	LOCK_OPS.unlock(lock_memory, &selves[thread]);
}
