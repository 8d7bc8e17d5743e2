/* SPDX-License-Identifier: MIT */
/*
 * Concurrency Kit spinlocks, linked from the system's libck (Debian: libck-dev), as peers:
 * ck_ticket, ck_ticket_pb (proportional backoff, seed 004's peer), ck_mcs, ck_clh and ck_fas.
 *
 * Source: Concurrency Kit 0.7 by S. Bahra et al., include/spinlock/{ticket,mcs,clh,fas}.h.
 * They are header-inline, so they compile into this file with the system's headers; nothing
 * of ck is copied here. They use inline-asm atomics, which ThreadSanitizer cannot see, so the
 * TSAN build leaves them out (LOCK_TSAN_OPAQUE).
 *
 * Per-thread state: ck_mcs's context node is the thread's queue node 0; ck_clh swaps nodes
 * like our clh, so the node a thread owns is tracked in self->lock_private.
 */
#include <stdlib.h>

#include <ck_spinlock.h>

#include <locklab/lock.h>

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

_Static_assert(sizeof(struct ck_spinlock_mcs) <= LOCK_QNODE_BYTES, "ck_mcs node fits a qnode");
_Static_assert(sizeof(struct ck_spinlock_clh) <= LOCK_QNODE_BYTES, "ck_clh node fits a qnode");

/* ---- ck_ticket ---------------------------------------------------------------------------- */

static void ck_ticket_lock_op(void *lockp, struct lock_thread *self)
{
	(void)self;
	ck_spinlock_ticket_lock(lockp);
}

static void ck_ticket_unlock_op(void *lockp, struct lock_thread *self)
{
	(void)self;
	ck_spinlock_ticket_unlock(lockp);
}

/* ck defines a ticket trylock only for x86 (CK_F_SPINLOCK_TICKET_TRYLOCK); the engine never
 * needs one, so the arm64 build goes without. */
#ifdef CK_F_SPINLOCK_TICKET_TRYLOCK
static bool ck_ticket_trylock_op(void *lockp, struct lock_thread *self)
{
	(void)self;
	return ck_spinlock_ticket_trylock(lockp);
}
#define CK_TICKET_TRYLOCK(op) op
#else
#define CK_TICKET_TRYLOCK(op) NULL
#endif

static int ck_ticket_init_op(void *lockp, const struct lock_init_args *args)
{
	(void)args;
	ck_spinlock_ticket_init(lockp);
	return 0;
}

const struct lock_ops ck_ticket_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_ticket",
	.family = "peer-ck",
	.summary = "Concurrency Kit ticket spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/ticket.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_spinlock_ticket),
	.tunables = no_tunables,
	.init = ck_ticket_init_op,
	.lock = ck_ticket_lock_op,
	.unlock = ck_ticket_unlock_op,
	.trylock = CK_TICKET_TRYLOCK(ck_ticket_trylock_op),
};

/*
 * ---- ck_ticket_pb: the same lock with ck's proportional backoff ------------------------------
 *
 * ck_spinlock_ticket_lock_pb(ticket, c) on x86-64 (the one-word ticket lock): take a ticket,
 * then until it is served: one ck_pr_stall() (PAUSE), load the serving ticket, set
 * backoff = (ticket - serving) << c, and call ck_backoff_eb(&backoff), which spins `backoff`
 * iterations of a compiler barrier (no PAUSE) and then doubles `backoff`. The doubling is
 * lost: the next poll recomputes backoff from the queue position. So the wait per poll is
 * proportional to the waiters ahead, the holder included, times 2^c; it never grows
 * exponentially while one waits.
 */

struct ck_ticket_pb {
	struct ck_spinlock_ticket ticket;
	unsigned int shift;
};

static void ck_ticket_pb_lock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_pb *lock = lockp;
	(void)self;
	ck_spinlock_ticket_lock_pb(&lock->ticket, lock->shift);
}

static void ck_ticket_pb_unlock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_pb *lock = lockp;
	(void)self;
	ck_spinlock_ticket_unlock(&lock->ticket);
}

#ifdef CK_F_SPINLOCK_TICKET_TRYLOCK
static bool ck_ticket_pb_trylock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_pb *lock = lockp;
	(void)self;
	return ck_spinlock_ticket_trylock(&lock->ticket);
}
#endif

static int ck_ticket_pb_init_op(void *lockp, const struct lock_init_args *args)
{
	struct ck_ticket_pb *lock = lockp;
	ck_spinlock_ticket_init(&lock->ticket);
	lock->shift = (unsigned int)args->params[0];
	return 0;
}

static const struct lock_tunable ck_ticket_pb_tunables[] = {
	{ "shift", 0, 0, 16,
	  "each poll waits (ticket - head) << shift empty loop iterations; proportional, not "
	  "exponential: ck_backoff_eb doubles only a copy that the next poll recomputes", NULL },
	LOCK_TUNABLES_END,
};

const struct lock_ops ck_ticket_pb_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_ticket_pb",
	.family = "peer-ck",
	.summary = "Concurrency Kit ticket spinlock with proportional backoff (lock_pb)",
	.source = "Concurrency Kit 0.7, include/spinlock/ticket.h, ck_spinlock_ticket_lock_pb",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_ticket_pb),
	.tunables = ck_ticket_pb_tunables,
	.init = ck_ticket_pb_init_op,
	.lock = ck_ticket_pb_lock_op,
	.unlock = ck_ticket_pb_unlock_op,
	.trylock = CK_TICKET_TRYLOCK(ck_ticket_pb_trylock_op),
};

/* ---- ck_mcs -------------------------------------------------------------------------------- */

static void ck_mcs_lock_op(void *lockp, struct lock_thread *self)
{
	ck_spinlock_mcs_lock(lockp, lock_qnode(self, LOCK_QNODE_QUEUE, struct ck_spinlock_mcs));
}

static void ck_mcs_unlock_op(void *lockp, struct lock_thread *self)
{
	ck_spinlock_mcs_unlock(lockp, lock_qnode(self, LOCK_QNODE_QUEUE, struct ck_spinlock_mcs));
}

static bool ck_mcs_trylock_op(void *lockp, struct lock_thread *self)
{
	return ck_spinlock_mcs_trylock(lockp, lock_qnode(self, LOCK_QNODE_QUEUE, struct ck_spinlock_mcs));
}

static int ck_mcs_init_op(void *lockp, const struct lock_init_args *args)
{
	(void)args;
	ck_spinlock_mcs_init(lockp);
	return 0;
}

const struct lock_ops ck_mcs_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_mcs",
	.family = "peer-ck",
	.summary = "Concurrency Kit MCS queue spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/mcs.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_spinlock_mcs *),
	.tunables = no_tunables,
	.init = ck_mcs_init_op,
	.lock = ck_mcs_lock_op,
	.unlock = ck_mcs_unlock_op,
	.trylock = ck_mcs_trylock_op,
};

/* ---- ck_clh -------------------------------------------------------------------------------- */

struct ck_clh_lock {
	struct ck_spinlock_clh *queue;
	struct ck_spinlock_clh *initial_unowned; /* for destroy() only */
};

static int ck_clh_init_op(void *lockp, const struct lock_init_args *args)
{
	struct ck_clh_lock *lock = lockp;
	(void)args;
	lock->initial_unowned = calloc(1, sizeof(*lock->initial_unowned));
	if (lock->initial_unowned == NULL)
		return -12; /* -ENOMEM */
	ck_spinlock_clh_init(&lock->queue, lock->initial_unowned);
	return 0;
}

static void ck_clh_destroy_op(void *lockp)
{
	struct ck_clh_lock *lock = lockp;
	free(lock->initial_unowned);
}

static void ck_clh_lock_op(void *lockp, struct lock_thread *self)
{
	struct ck_clh_lock *lock = lockp;
	if (self->lock_private == NULL)
		self->lock_private = lock_qnode(self, LOCK_QNODE_QUEUE, struct ck_spinlock_clh);
	ck_spinlock_clh_lock(&lock->queue, self->lock_private);
}

static void ck_clh_unlock_op(void *lockp, struct lock_thread *self)
{
	(void)lockp;
	/* ck_spinlock_clh_unlock replaces the thread's node with its predecessor's. */
	ck_spinlock_clh_unlock((struct ck_spinlock_clh **)&self->lock_private);
}

const struct lock_ops ck_clh_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_clh",
	.family = "peer-ck",
	.summary = "Concurrency Kit CLH queue spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/clh.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_clh_lock),
	.tunables = no_tunables,
	.init = ck_clh_init_op,
	.destroy = ck_clh_destroy_op,
	.lock = ck_clh_lock_op,
	.unlock = ck_clh_unlock_op,
};

/* ---- ck_fas -------------------------------------------------------------------------------- */

static void ck_fas_lock_op(void *lockp, struct lock_thread *self)
{
	(void)self;
	ck_spinlock_fas_lock(lockp);
}

static void ck_fas_unlock_op(void *lockp, struct lock_thread *self)
{
	(void)self;
	ck_spinlock_fas_unlock(lockp);
}

static bool ck_fas_trylock_op(void *lockp, struct lock_thread *self)
{
	(void)self;
	return ck_spinlock_fas_trylock(lockp);
}

static int ck_fas_init_op(void *lockp, const struct lock_init_args *args)
{
	(void)args;
	ck_spinlock_fas_init(lockp);
	return 0;
}

const struct lock_ops ck_fas_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_fas",
	.family = "peer-ck",
	.summary = "Concurrency Kit fetch-and-store (test-and-set) spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/fas.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_spinlock_fas),
	.tunables = no_tunables,
	.init = ck_fas_init_op,
	.lock = ck_fas_lock_op,
	.unlock = ck_fas_unlock_op,
	.trylock = ck_fas_trylock_op,
};
