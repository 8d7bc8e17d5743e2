/* SPDX-License-Identifier: MIT */
/*
 * source_plugin/loop.c - a plugin given as C source (locklab run --plugin mylock.c), compiled with a
 * writer loop of its own: the user's file is included here, unmodified, and worker_loop.h is
 * instantiated with its locklab_plugin_lock's lock() and unlock(). The struct is const and its
 * initialiser is in this translation unit, and the Makefile compiles with
 * -fno-semantic-interposition, so the compiler resolves both calls and inlines them, as the
 * engine's own loops call its locks directly (native/engine/loops/). A .so built any other
 * way keeps the engine's indirect-call loop.
 *
 *   LOCKLAB_PLUGIN_SOURCE   the user's file, as a string (the Makefile's source-plugin rule)
 */
#include LOCKLAB_PLUGIN_SOURCE

#include "../worker_hot.h"

#include "../plugin_loop_weak.h"

/* Exported: the engine looks them up by name (LOCKLAB_PLUGIN_LOOP_SYMBOL, _LAYOUT_SYMBOL). */
void locklab_plugin_writer_loop(struct worker *w, uint32_t control_seen);
#define WORKER_LOOP_NAME locklab_plugin_writer_loop
#define WORKER_LOCK(lock, self) locklab_plugin_lock.lock(lock, self)
#define WORKER_UNLOCK(lock, self) locklab_plugin_lock.unlock(lock, self)
#include "../worker_loop.h"

extern const char locklab_plugin_engine_layout[];
const char locklab_plugin_engine_layout[] = LOCKLAB_ENGINE_LAYOUT;
