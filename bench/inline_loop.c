/* SPDX-License-Identifier: MIT */
/*
 * inline_loop - the P1 same-source reference: the lock's own source compiled into a bare loop
 * (bare_loop.h), which calls lock() and unlock() directly, inlined where the engine's
 * specialised loops inline them, and nothing else: no checks, no counts, no sampling. Built
 * once per lock:
 *   -DLOCK_SOURCE='"tas.c"' -DLOCK_OPS=tas_ops
 * Usage: inline_loop LOCK SECONDS NTHREADS  (LOCK: the lock's name, checked)
 * -DBARE_CHECKS adds the engine's per-acquisition checks and nothing else of the engine: the
 * floor under the engine's cost with its checks on.
 * -DBARE_ONE_READ adds one plain read of the section's line and nothing else: the least that
 * any per-acquisition check reading the line (as the owner word's read-back must) can cost.
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

#if defined(BARE_CHECKS) || defined(BARE_ONE_READ)
/* Hand-overs and overlaps, counted after unlock() as the engine counts them. */
static unsigned long long noted[BARE_MAX_THREADS * 8];
#endif

#if !defined(BARE_CHECKS) && !defined(BARE_ONE_READ)
static void bare_iteration(unsigned int thread)
{
	LOCK_OPS.lock(lock_memory, &selves[thread]);
	bare_section_fence();
	shared_line.counter = shared_line.counter + 1;
	bare_section_fence();
	LOCK_OPS.unlock(lock_memory, &selves[thread]);
}
#elif defined(BARE_ONE_READ)
/*
 * The owner word read after the increment, as the engine reads it back, but never stored: no
 * check's store, no hand-over test. The branch on it after unlock() keeps the read.
 */
static void bare_iteration(unsigned int thread)
{
	LOCK_OPS.lock(lock_memory, &selves[thread]);
	bare_section_fence();
	shared_line.counter = shared_line.counter + 1;
	bare_section_fence();
	unsigned int seen = __atomic_load_n(&shared_line.owner, __ATOMIC_RELAXED);
	LOCK_OPS.unlock(lock_memory, &selves[thread]);
	if (__builtin_expect(seen != 0, 0))
		noted[thread * 8]++;
}
#else
/*
 * The engine's lean critical section and nothing else of it (worker_loop.h): the owner word
 * stored first, the counter, the last holder read (and overwritten at a hand-over), the owner
 * word read back.
 * What the checks cost by themselves; the engine may not go below it without dropping them.
 */
static void bare_iteration(unsigned int thread)
{
	const unsigned int key = thread + 1;
	LOCK_OPS.lock(lock_memory, &selves[thread]);
	bare_section_fence();
	__atomic_store_n(&shared_line.owner, key, __ATOMIC_RELAXED);
	bare_section_fence();
	shared_line.counter = shared_line.counter + 1;
	unsigned int previous = shared_line.last_holder;
	if (__builtin_expect(previous != key, 0))
		shared_line.last_holder = key;
	bare_section_fence();
	unsigned int overwritten = __atomic_load_n(&shared_line.owner, __ATOMIC_RELAXED) ^ key;
	LOCK_OPS.unlock(lock_memory, &selves[thread]);
	if (__builtin_expect((previous ^ key) | overwritten, 0))
		noted[thread * 8]++;
}
#endif

static void bare_batch(unsigned int thread)
{
	for (int i = 0; i < BARE_BATCH; i++)
		bare_iteration(thread);
}
