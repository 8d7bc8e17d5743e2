/* SPDX-License-Identifier: MIT */
/*
 * The engine's build of native/locks/mutex.c, with writer loops that call its locks directly
 * (loops.def), out of line as the kernel's (kernel_out_of_line). The tree's code runs in a
 * loop of its own (native/kshim/plugin.c): so the port does too, and a port-against-tree
 * ratio compares the locks, not an indirect call per acquisition against none.
 */
#include "../../locks/mutex.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_mutex
#define WORKER_LOCK(lock, self) mutex_lock_op(lock, self)
#define WORKER_UNLOCK(lock, self) mutex_unlock_op(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
