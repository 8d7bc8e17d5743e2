/* SPDX-License-Identifier: MIT */
/* The engine's build of native/locks/ck.c, with writer loops that inline Concurrency Kit's locks
 * (loops.def): ck's lock and unlock are static inline functions of its headers, so each loop
 * holds them as an independent bare loop of the same lock does (bench/ck_loop.c). */
#include "../../locks/ck.c"
#include "../worker_hot.h"

#define WORKER_LOOP_NAME writer_loop_ck_ticket
#define WORKER_LOCK(lock, self) ck_ticket_lock_op(lock, self)
#define WORKER_UNLOCK(lock, self) ck_ticket_unlock_op(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_ck_ticket_pb
#define WORKER_LOCK(lock, self) ck_ticket_pb_lock_op(lock, self)
#define WORKER_UNLOCK(lock, self) ck_ticket_pb_unlock_op(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_ck_mcs
#define WORKER_LOCK(lock, self) ck_mcs_lock_op(lock, self)
#define WORKER_UNLOCK(lock, self) ck_mcs_unlock_op(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_ck_clh
#define WORKER_LOCK(lock, self) ck_clh_lock_op(lock, self)
#define WORKER_UNLOCK(lock, self) ck_clh_unlock_op(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK

#define WORKER_LOOP_NAME writer_loop_ck_fas
#define WORKER_LOCK(lock, self) ck_fas_lock_op(lock, self)
#define WORKER_UNLOCK(lock, self) ck_fas_unlock_op(lock, self)
#include "../worker_loop.h"
#undef WORKER_LOOP_NAME
#undef WORKER_LOCK
#undef WORKER_UNLOCK
