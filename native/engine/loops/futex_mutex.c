/* SPDX-License-Identifier: MIT */
/* The engine's build of native/locks/futex_mutex.c, with writer loops that inline its locks (loops.def). */
#include "../../locks/futex_mutex.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_futex_mutex
#define WORKER_LOCK(lock, self) futex_mutex_lock(lock, self)
#define WORKER_UNLOCK(lock, self) futex_mutex_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
