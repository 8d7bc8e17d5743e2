/* SPDX-License-Identifier: MIT */
/* The engine's build of native/locks/pthread_locks.c, with writer loops that inline its locks (loops.def). */
#include "../../locks/pthread_locks.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_pthread_mutex
#define WORKER_LOCK(lock, self) pthread_mutex_ops_lock(lock, self)
#define WORKER_UNLOCK(lock, self) pthread_mutex_ops_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
