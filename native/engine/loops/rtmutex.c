/* SPDX-License-Identifier: MIT */
/*
 * The engine's build of native/locks/rtmutex.c, with writer loops that call its locks directly
 * (loops.def), out of line as the kernel's (kernel_out_of_line). The tree's code runs in a
 * loop of its own (native/kshim/plugin.c): so the port does too, and a port-against-tree
 * ratio compares the locks, not an indirect call per acquisition against none.
 */
#include "../../locks/rtmutex.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_rtmutex_k0
#define WORKER_LOCK(lock, self) rtmutex_lock_k0(lock, self)
#define WORKER_UNLOCK(lock, self) rtmutex_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_rtmutex_k1
#define WORKER_LOCK(lock, self) rtmutex_lock_k1(lock, self)
#define WORKER_UNLOCK(lock, self) rtmutex_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_rtmutex_k2
#define WORKER_LOCK(lock, self) rtmutex_lock_k2(lock, self)
#define WORKER_UNLOCK(lock, self) rtmutex_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_rtmutex_k3
#define WORKER_LOCK(lock, self) rtmutex_lock_k3(lock, self)
#define WORKER_UNLOCK(lock, self) rtmutex_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_rtmutex_k4
#define WORKER_LOCK(lock, self) rtmutex_lock_k4(lock, self)
#define WORKER_UNLOCK(lock, self) rtmutex_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_rtmutex_k5
#define WORKER_LOCK(lock, self) rtmutex_lock_k5(lock, self)
#define WORKER_UNLOCK(lock, self) rtmutex_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
