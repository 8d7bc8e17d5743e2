/* SPDX-License-Identifier: MIT */
/* The engine's build of native/locks/qspinlock.c, with writer loops that call its locks directly
 * (loops.def), out of line as the kernel's (kernel_out_of_line). */
#include "../../locks/qspinlock.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_qspinlock
#define WORKER_LOCK(lock, self) qspinlock_lock(lock, self)
#define WORKER_UNLOCK(lock, self) qspinlock_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_cna
#define WORKER_LOCK(lock, self) cna_lock(lock, self)
#define WORKER_UNLOCK(lock, self) qspinlock_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

/* Seed 002's CNA: compared with qspinlock at one writer, so measured by the same kind of loop. */
#define WORKER_LOOP_NAME writer_loop_cna_v1
#define WORKER_LOCK(lock, self) cna_v1_lock(lock, self)
#define WORKER_UNLOCK(lock, self) qspinlock_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
