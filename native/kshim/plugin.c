/* SPDX-License-Identifier: MIT */
/*
 * plugin.c - a lock compiled from a kernel tree, as a locklab plugin: its struct lock_ops and
 * a writer loop of its own (worker_loop.h, with the kernel's lock and unlock called directly,
 * as the built-in locks' loops in native/engine/loops/ do), so it is measured as the
 * hand-written locks are, never through an indirect call per acquisition.
 *
 * Built by locklab (python/locklab/kernel/from_source.py) once per lock, tree, patch set and
 * build, with -DKSHIM_LOCK_<name>, KSHIM_SOURCE (the tree and patches, for the catalogue) and
 * LOCKLAB_ENGINE_LAYOUT (the engine it is loaded into).
 *
 * The calls are out of line, as in the kernel and as the ports' (kernel_out_of_line in
 * locklab/kernel.h says why); raw_spin_lock() is _raw_spin_lock() here (bridge.h).
 */
#include <locklab/lock.h>

#include "../engine/worker_hot.h"
#include "bridge.h"

#if defined(KSHIM_LOCK_rtmutex)
#define KSHIM_NAME "kernel:rtmutex"
#define KSHIM_SUMMARY "the kernel's rtmutex (rtmutex_api.c), compiled from the tree"
#define KSHIM_FLAGS (LOCK_SPINS | LOCK_SLEEPS | LOCK_PRIO_INHERIT)
#define KSHIM_TYPE struct rt_mutex
#define KSHIM_INIT kshim_rtmutex_init
#define KSHIM_LOCK rt_mutex_lock
#define KSHIM_TRYLOCK rt_mutex_trylock
#define KSHIM_UNLOCK rt_mutex_unlock
#elif defined(KSHIM_LOCK_mutex)
#define KSHIM_NAME "kernel:mutex"
#define KSHIM_SUMMARY "the kernel's mutex with OSQ spinning (mutex.c, osq_lock.c), from the tree"
#define KSHIM_FLAGS (LOCK_SPINS | LOCK_SLEEPS)
#define KSHIM_TYPE struct mutex
#define KSHIM_INIT kshim_mutex_init
#define KSHIM_LOCK mutex_lock
#define KSHIM_TRYLOCK mutex_trylock
#define KSHIM_UNLOCK mutex_unlock
#elif defined(KSHIM_LOCK_rwsem)
#define KSHIM_NAME "kernel:rwsem"
#define KSHIM_SUMMARY "the kernel's rw_semaphore (rwsem.c, osq_lock.c), from the tree"
#define KSHIM_FLAGS (LOCK_SPINS | LOCK_SLEEPS | LOCK_READER_WRITER)
#define KSHIM_TYPE struct rw_semaphore
#define KSHIM_INIT kshim_rwsem_init
#define KSHIM_LOCK down_write
#define KSHIM_TRYLOCK down_write_trylock
#define KSHIM_UNLOCK up_write
#define KSHIM_READ_LOCK down_read
#define KSHIM_READ_UNLOCK up_read
#elif defined(KSHIM_LOCK_qspinlock)
#define KSHIM_NAME "kernel:qspinlock"
#define KSHIM_SUMMARY "the kernel's queued spinlock (qspinlock.c, no paravirt), from the tree"
#define KSHIM_FLAGS LOCK_SPINS
#define KSHIM_TYPE struct qspinlock
#define KSHIM_INIT kshim_spinlock_init
#define KSHIM_LOCK kshim_raw_spin_lock
#define KSHIM_TRYLOCK kshim_raw_spin_trylock
#define KSHIM_UNLOCK kshim_raw_spin_unlock
#else
#error "build with -DKSHIM_LOCK_rtmutex, _mutex, _rwsem or _qspinlock"
#endif

#ifndef KSHIM_SOURCE
#define KSHIM_SOURCE "a kernel tree"
#endif

static int kernel_lock_init(void *lock, const struct lock_init_args *args)
{
	(void)args;
	KSHIM_INIT(lock);
	return 0;
}

static void kernel_lock(void *lock, struct lock_thread *self)
{
	(void)self;
	KSHIM_LOCK((KSHIM_TYPE *)lock);
}

static bool kernel_trylock(void *lock, struct lock_thread *self)
{
	(void)self;
	return KSHIM_TRYLOCK((KSHIM_TYPE *)lock) != 0;
}

static void kernel_unlock(void *lock, struct lock_thread *self)
{
	(void)self;
	KSHIM_UNLOCK((KSHIM_TYPE *)lock);
}

#ifdef KSHIM_READ_LOCK
static void kernel_read_lock(void *lock, struct lock_thread *self)
{
	(void)self;
	KSHIM_READ_LOCK((KSHIM_TYPE *)lock);
}

static void kernel_read_unlock(void *lock, struct lock_thread *self)
{
	(void)self;
	KSHIM_READ_UNLOCK((KSHIM_TYPE *)lock);
}
#endif

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

__attribute__((visibility("default"))) extern const struct lock_ops locklab_plugin_lock;
const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = KSHIM_NAME,
	.family = "kernel-source",
	.summary = KSHIM_SUMMARY,
	.source = KSHIM_SOURCE,
	.flags = KSHIM_FLAGS,
	.lock_size = KSHIM_LOCK_BYTES,
	.tunables = no_tunables,
	.init = kernel_lock_init,
	.lock = kernel_lock,
	.unlock = kernel_unlock,
	.trylock = kernel_trylock,
#ifdef KSHIM_READ_LOCK
	.read_lock = kernel_read_lock,
	.read_unlock = kernel_read_unlock,
#endif
};

__attribute__((visibility("default"))) extern const char locklab_plugin_engine_layout[];
const char locklab_plugin_engine_layout[] = LOCKLAB_ENGINE_LAYOUT;

#include "../engine/plugin_loop_weak.h"

/* Exported: the engine looks it up by name (LOCKLAB_PLUGIN_LOOP_SYMBOL). */
__attribute__((visibility("default"))) void locklab_plugin_writer_loop(struct worker *w,
								       uint32_t control_seen);
#define WORKER_LOOP_NAME locklab_plugin_writer_loop
#define WORKER_LOCK(lock, self) ((void)(self), KSHIM_LOCK((KSHIM_TYPE *)(lock)))
#define WORKER_UNLOCK(lock, self) KSHIM_UNLOCK((KSHIM_TYPE *)(lock))
#include "../engine/worker_loop.h"
