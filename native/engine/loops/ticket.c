/* SPDX-License-Identifier: MIT */
/* The engine's build of native/locks/ticket.c, with writer loops that inline its locks (loops.def). */
#include "../../locks/ticket.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_ticket
#define WORKER_LOCK(lock, self) ticket_lock(lock, self)
#define WORKER_UNLOCK(lock, self) ticket_unlock(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
