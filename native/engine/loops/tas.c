/* SPDX-License-Identifier: MIT */
/* The engine's build of native/locks/tas.c, with writer loops that inline its locks (loops.def). */
#include "../../locks/tas.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_tas
#define WORKER_LOCK(lock, self) tas_lock(lock, self)
#define WORKER_UNLOCK(lock, self) tas_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_ttas
#define WORKER_LOCK(lock, self) ttas_lock(lock, self)
#define WORKER_UNLOCK(lock, self) tas_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
