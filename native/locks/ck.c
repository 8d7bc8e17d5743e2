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
 *
 * Waiting policy (wait.h): ck's wait loops are its own, so the policy reaches them through
 * the one hook they all call, ck_pr_stall(), which this file defines before ck's spinlock
 * headers are read; ck's code is unchanged. Under spin the hook is a PAUSE after one test of
 * a thread-local pointer (initial-exec TLS: no call). Under yield it yields once spin_ns is
 * spent. Under spin-then-park the hook
 * cannot see the word ck waits on, so it parks on a release generation of the lock instead:
 * each unlock bumps it (only under this policy), and a waiter sleeps on the value it read at
 * its previous stall, before ck's last look at the lock, so a release after that look is
 * never slept through. The wake-up is a broadcast (every parked waiter of the lock looks
 * again; ck's own word still decides who owns the lock, so ck's order is kept). ck_mcs's
 * unlock waits for a successor to link, which no release ends: it yields, never parks.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <ck_pr.h>

#include <locklab/lock.h>
#include <locklab/wait.h>

/* ---- waiting policy: through ck's stall hook --------------------------------------------- */

/* Beside each ck lock: its policy, and the release generation that parked waiters sleep on. */
struct ck_wait {
	u32 generation;
	u32 parked;
	struct lock_wait wait;
};

/* One wait of one thread in a ck lock call, under yield or spin-then-park. */
struct ck_waiter {
	struct ck_wait *lock;
	struct lock_thread *self;
	struct lock_wait_budget budget;
	u32 generation_seen; /* at the previous stall */
	bool generation_valid;
	bool may_park;
};

static __thread struct ck_waiter *ck_current_waiter __attribute__((tls_model("initial-exec")));

/* A stall under yield or spin-then-park. */
static __attribute__((noinline)) void ck_wait_stall(struct ck_waiter *waiter)
{
	if (!waiter->may_park) { /* ck_mcs's unlock, awaiting a link that no release ends */
		lock_wait_pause_unwoken(&waiter->lock->wait, &waiter->budget);
		return;
	}
	if (lock_wait_pause(&waiter->lock->wait, &waiter->budget) && waiter->generation_valid)
		lock_park(waiter->self, &waiter->budget, &waiter->lock->generation,
			  waiter->generation_seen, &waiter->lock->parked);
	waiter->generation_seen = smp_load_acquire(&waiter->lock->generation);
	waiter->generation_valid = true;
}

#define ck_pr_stall()                                                                          \
	do {                                                                                   \
		struct ck_waiter *stalling = ck_current_waiter;                                \
		if (likely(stalling == NULL))                                                  \
			cpu_relax(); /* wait=spin: ck's own PAUSE */                           \
		else                                                                           \
			ck_wait_stall(stalling);                                               \
	} while (0)
#include <ck_spinlock.h>

/* Run `call` (a ck lock or unlock) with the lock's policy in force in its stalls. */
#define CK_WAITING(cw, me, parking, call)                                                      \
	do {                                                                                   \
		if (likely((cw)->wait.policy == LOCK_WAIT_SPIN)) {                             \
			call;                                                                  \
			break;                                                                 \
		}                                                                              \
		struct ck_waiter waiter = { (cw), (me), LOCK_WAIT_BUDGET_INIT, 0, false,       \
					    (parking) };                                       \
		struct ck_waiter *outer = ck_current_waiter; /* a signal handler's, nested */  \
		ck_current_waiter = &waiter;                                                   \
		call;                                                                          \
		ck_current_waiter = outer;                                                     \
	} while (0)

/* After ck's unlock: under spin-then-park, a new generation, and wake who sleeps on the old. */
static inline void ck_wait_released(struct ck_wait *cw, struct lock_thread *self)
{
	if (likely(cw->wait.policy != LOCK_WAIT_PARK))
		return;
	__atomic_fetch_add(&cw->generation, 1, __ATOMIC_RELEASE); /* after ck's release store */
	lock_unpark(&cw->wait, self, &cw->generation, &cw->parked, INT_MAX);
}

static const struct lock_tunable wait_tunables[] = { LOCK_WAIT_TUNABLES, LOCK_TUNABLES_END };

_Static_assert(sizeof(struct ck_spinlock_mcs) <= LOCK_QNODE_BYTES, "ck_mcs node fits a qnode");
_Static_assert(sizeof(struct ck_spinlock_clh) <= LOCK_QNODE_BYTES, "ck_clh node fits a qnode");

/* ---- ck_ticket ---------------------------------------------------------------------------- */

struct ck_ticket_lock {
	struct ck_spinlock_ticket ticket;
	struct ck_wait cw;
};

static void ck_ticket_lock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_lock *lock = lockp;
	CK_WAITING(&lock->cw, self, true, ck_spinlock_ticket_lock(&lock->ticket));
}

static void ck_ticket_unlock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_lock *lock = lockp;
	ck_spinlock_ticket_unlock(&lock->ticket);
	ck_wait_released(&lock->cw, self);
}

/* ck defines a ticket trylock only for x86 (CK_F_SPINLOCK_TICKET_TRYLOCK); the engine never
 * needs one, so the arm64 build goes without. */
#ifdef CK_F_SPINLOCK_TICKET_TRYLOCK
static bool ck_ticket_trylock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_lock *lock = lockp;
	(void)self;
	return ck_spinlock_ticket_trylock(&lock->ticket);
}
#define CK_TICKET_TRYLOCK(op) op
#else
#define CK_TICKET_TRYLOCK(op) NULL
#endif

static int ck_ticket_init_op(void *lockp, const struct lock_init_args *args)
{
	struct ck_ticket_lock *lock = lockp;
	ck_spinlock_ticket_init(&lock->ticket);
	lock_wait_configure(&lock->cw.wait, args);
	return 0;
}

const struct lock_ops ck_ticket_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_ticket",
	.family = "peer-ck",
	.summary = "Concurrency Kit ticket spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/ticket.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_ticket_lock),
	.tunables = wait_tunables,
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
	struct ck_wait cw;
};

static void ck_ticket_pb_lock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_pb *lock = lockp;
	CK_WAITING(&lock->cw, self, true, ck_spinlock_ticket_lock_pb(&lock->ticket, lock->shift));
}

static void ck_ticket_pb_unlock_op(void *lockp, struct lock_thread *self)
{
	struct ck_ticket_pb *lock = lockp;
	ck_spinlock_ticket_unlock(&lock->ticket);
	ck_wait_released(&lock->cw, self);
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
	lock->shift = (unsigned int)args->params[2]; /* after the waiting policy's two */
	lock_wait_configure(&lock->cw.wait, args);
	return 0;
}

static const struct lock_tunable ck_ticket_pb_tunables[] = {
	LOCK_WAIT_TUNABLES,
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

struct ck_mcs_lock {
	struct ck_spinlock_mcs *queue;
	struct ck_wait cw;
};

static void ck_mcs_lock_op(void *lockp, struct lock_thread *self)
{
	struct ck_mcs_lock *lock = lockp;
	struct ck_spinlock_mcs *node = lock_qnode(self, LOCK_QNODE_QUEUE, struct ck_spinlock_mcs);
	CK_WAITING(&lock->cw, self, true, ck_spinlock_mcs_lock(&lock->queue, node));
}

static void ck_mcs_unlock_op(void *lockp, struct lock_thread *self)
{
	struct ck_mcs_lock *lock = lockp;
	struct ck_spinlock_mcs *node = lock_qnode(self, LOCK_QNODE_QUEUE, struct ck_spinlock_mcs);
	if (likely(lock->cw.wait.policy == LOCK_WAIT_SPIN)) { /* one test of the policy */
		ck_spinlock_mcs_unlock(&lock->queue, node);
		return;
	}
	CK_WAITING(&lock->cw, self, false, ck_spinlock_mcs_unlock(&lock->queue, node));
	ck_wait_released(&lock->cw, self);
}

static bool ck_mcs_trylock_op(void *lockp, struct lock_thread *self)
{
	struct ck_mcs_lock *lock = lockp;
	return ck_spinlock_mcs_trylock(&lock->queue,
				       lock_qnode(self, LOCK_QNODE_QUEUE, struct ck_spinlock_mcs));
}

static int ck_mcs_init_op(void *lockp, const struct lock_init_args *args)
{
	struct ck_mcs_lock *lock = lockp;
	ck_spinlock_mcs_init(&lock->queue);
	lock_wait_configure(&lock->cw.wait, args);
	return 0;
}

const struct lock_ops ck_mcs_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_mcs",
	.family = "peer-ck",
	.summary = "Concurrency Kit MCS queue spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/mcs.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_mcs_lock),
	.tunables = wait_tunables,
	.init = ck_mcs_init_op,
	.lock = ck_mcs_lock_op,
	.unlock = ck_mcs_unlock_op,
	.trylock = ck_mcs_trylock_op,
};

/* ---- ck_clh -------------------------------------------------------------------------------- */

struct ck_clh_lock {
	struct ck_spinlock_clh *queue;
	struct ck_spinlock_clh *initial_unowned; /* for destroy() only */
	struct ck_wait cw;
};

static int ck_clh_init_op(void *lockp, const struct lock_init_args *args)
{
	struct ck_clh_lock *lock = lockp;
	lock_wait_configure(&lock->cw.wait, args);
	/* In a line of its own, as the threads' queue nodes are (and bench/ck_loop.c's). */
	lock->initial_unowned = aligned_alloc(LOCKLAB_CACHELINE, LOCKLAB_CACHELINE);
	if (lock->initial_unowned == NULL)
		return -12; /* -ENOMEM */
	memset(lock->initial_unowned, 0, LOCKLAB_CACHELINE);
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
	CK_WAITING(&lock->cw, self, true, ck_spinlock_clh_lock(&lock->queue, self->lock_private));
}

static void ck_clh_unlock_op(void *lockp, struct lock_thread *self)
{
	struct ck_clh_lock *lock = lockp;
	/*
	 * ck_spinlock_clh_unlock replaces the thread's node with its predecessor's. Given a local,
	 * not &self->lock_private, the node stays in a register across ck's unlock fence, as in a
	 * bare loop of ck's (bench/ck_loop.c), instead of being read back from memory after it.
	 */
	struct ck_spinlock_clh *node = self->lock_private;
	ck_spinlock_clh_unlock(&node);
	self->lock_private = node;
	ck_wait_released(&lock->cw, self);
}

const struct lock_ops ck_clh_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_clh",
	.family = "peer-ck",
	.summary = "Concurrency Kit CLH queue spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/clh.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_clh_lock),
	.tunables = wait_tunables,
	.init = ck_clh_init_op,
	.destroy = ck_clh_destroy_op,
	.lock = ck_clh_lock_op,
	.unlock = ck_clh_unlock_op,
};

/* ---- ck_fas -------------------------------------------------------------------------------- */

struct ck_fas_lock {
	struct ck_spinlock_fas fas;
	struct ck_wait cw;
};

static void ck_fas_lock_op(void *lockp, struct lock_thread *self)
{
	struct ck_fas_lock *lock = lockp;
	CK_WAITING(&lock->cw, self, true, ck_spinlock_fas_lock(&lock->fas));
}

static void ck_fas_unlock_op(void *lockp, struct lock_thread *self)
{
	struct ck_fas_lock *lock = lockp;
	ck_spinlock_fas_unlock(&lock->fas);
	ck_wait_released(&lock->cw, self);
}

static bool ck_fas_trylock_op(void *lockp, struct lock_thread *self)
{
	struct ck_fas_lock *lock = lockp;
	(void)self;
	return ck_spinlock_fas_trylock(&lock->fas);
}

static int ck_fas_init_op(void *lockp, const struct lock_init_args *args)
{
	struct ck_fas_lock *lock = lockp;
	ck_spinlock_fas_init(&lock->fas);
	lock_wait_configure(&lock->cw.wait, args);
	return 0;
}

const struct lock_ops ck_fas_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ck_fas",
	.family = "peer-ck",
	.summary = "Concurrency Kit fetch-and-store (test-and-set) spinlock",
	.source = "Concurrency Kit 0.7, include/spinlock/fas.h",
	.flags = LOCK_SPINS | LOCK_EXTERNAL | LOCK_TSAN_OPAQUE,
	.lock_size = sizeof(struct ck_fas_lock),
	.tunables = wait_tunables,
	.init = ck_fas_init_op,
	.lock = ck_fas_lock_op,
	.unlock = ck_fas_unlock_op,
	.trylock = ck_fas_trylock_op,
};
