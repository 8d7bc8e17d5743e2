/* SPDX-License-Identifier: MIT */
/* The engine's build of native/locks/clh.c, with writer loops that inline its locks (loops.def). */
#include "../../locks/clh.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_clh
#define WORKER_LOCK(lock, self) clh_lock(lock, self)
#define WORKER_UNLOCK(lock, self) clh_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
