/* SPDX-License-Identifier: MIT */
/*
 * Test-and-set family: tas, ttas, ttas_backoff.
 *
 * Sources:
 *   T. E. Anderson, "The Performance of Spin Lock Alternatives for Shared-Memory
 *   Multiprocessors", IEEE TPDS 1(1), 1990 (test-and-set, test-and-test-and-set, backoff);
 *   M. Herlihy, N. Shavit, "The Art of Multiprocessor Programming", ch. 7.2-7.4 (BackoffLock).
 *
 * State: one word, 0 = free, 1 = held.
 *
 *   tas           every attempt is an atomic exchange: each waiter keeps the line in
 *                 exclusive state, so the holder's release competes with a storm of RMWs.
 *   ttas          waiters spin on a plain read (the line stays shared in their caches) and
 *                 only try the exchange once the lock looks free.
 *   ttas_backoff  as ttas, but after a failed exchange wait a random time in [0, limit)
 *                 pauses, doubling limit from backoff_min up to backoff_max. Spreading retries
 *                 out reduces the burst of RMWs that follows every release.
 *
 * Ordering: the successful exchange is ACQUIRE (pairs with the RELEASE store in unlock), so
 * the critical section cannot float above it. Failed exchanges and the read-only spin need
 * none: they only decide whether to try again.
 *
 * Waiting policy (wait.h): all three take `wait`. A parked waiter sleeps on the lock word
 * while it reads 1, and unlock wakes one parked waiter after its release store. The word's
 * protocol (0 free, 1 held) is the algorithm's own: parking adds a count beside it, it does
 * not add Drepper's third "contended" state, so the lock stays the published one. None of
 * the three promises an order, and parking adds none.
 */
#include <locklab/kernel.h>
#include <locklab/lock.h>
#include <locklab/wait.h>

struct tas_lock {
	u32 locked;
	u32 parked; /* waiters asleep on `locked` (spin-then-park) */
	struct lock_wait wait;
};

static int tas_init(void *lockp, const struct lock_init_args *args)
{
	struct tas_lock *lock = lockp;
	lock_wait_configure(&lock->wait, args);
	return 0;
}

static bool tas_trylock(void *lockp, struct lock_thread *self)
{
	struct tas_lock *lock = lockp;
	(void)self;
	return xchg_acquire(&lock->locked, 1) == 0;
}

static void tas_lock(void *lockp, struct lock_thread *self)
{
	struct tas_lock *lock = lockp;
	struct lock_wait_budget budget = LOCK_WAIT_BUDGET_INIT;

	while (xchg_acquire(&lock->locked, 1) != 0)
		if (lock_wait_pause(&lock->wait, &budget))
			lock_park(self, &budget, &lock->locked, 1, &lock->parked);
}

static void tas_unlock(void *lockp, struct lock_thread *self)
{
	struct tas_lock *lock = lockp;
	smp_store_release(&lock->locked, 0); /* pairs with xchg_acquire() in lock/trylock */
	lock_unpark(&lock->wait, self, &lock->locked, &lock->parked, 1);
}

/* ttas's read-only spin, shared with ttas_backoff: no coherence traffic until a release. */
static inline __attribute__((always_inline)) void
ttas_wait_free(u32 *locked, u32 *parked, const struct lock_wait *wait, struct lock_thread *self,
	       struct lock_wait_budget *budget)
{
	while (READ_ONCE(*locked) != 0)
		if (lock_wait_pause(wait, budget))
			lock_park(self, budget, locked, 1, parked);
}

/*
 * The wait, out of line, as the kernel keeps a spinlock's slow path: inlined into a writer
 * loop, its calls and its budget cost the uncontended acquisition two stack stores and the
 * loop's registers (the engine's P1 on an Intel VM: 0.95 of the same-source loop with the wait
 * inlined, 0.98-0.99 with it out of line).
 */
static __attribute__((noinline)) void ttas_lock_contended(struct tas_lock *lock,
							    struct lock_thread *self)
{
	struct lock_wait_budget budget = LOCK_WAIT_BUDGET_INIT;

	do
		ttas_wait_free(&lock->locked, &lock->parked, &lock->wait, self, &budget);
	while (xchg_acquire(&lock->locked, 1) != 0);
}

static void ttas_lock(void *lockp, struct lock_thread *self)
{
	struct tas_lock *lock = lockp;

	if (likely(xchg_acquire(&lock->locked, 1) == 0))
		return;
	ttas_lock_contended(lock, self);
}

/* ttas_backoff keeps its random state in the thread's first queue node. */
struct backoff_state {
	u64 random;
};

static u32 backoff_random(struct backoff_state *state, unsigned int thread_index)
{
	if (unlikely(state->random == 0))
		state->random = 0x9e3779b97f4a7c15ull * (thread_index + 1);
	/* xorshift64: cheap, and good enough to desynchronise waiters. */
	state->random ^= state->random << 13;
	state->random ^= state->random >> 7;
	state->random ^= state->random << 17;
	return (u32)(state->random >> 32);
}

enum { BACKOFF_MIN = 2, BACKOFF_MAX }; /* after the waiting policy's two */

static const struct lock_tunable ttas_backoff_tunables[] = {
	LOCK_WAIT_TUNABLES,
	{ "backoff_min", 4, 1, 1 << 20, "first backoff limit, in cpu_relax() pauses", NULL },
	{ "backoff_max", 1024, 1, 1 << 24, "largest backoff limit, in cpu_relax() pauses", NULL },
	LOCK_TUNABLES_END,
};

struct ttas_backoff_lock {
	u32 locked;
	u32 parked;
	u32 backoff_min;
	u32 backoff_max;
	struct lock_wait wait;
};

static int ttas_backoff_init(void *lockp, const struct lock_init_args *args)
{
	struct ttas_backoff_lock *lock = lockp;
	if (args->params[BACKOFF_MIN] > args->params[BACKOFF_MAX])
		return -22; /* -EINVAL: min above max */
	lock->backoff_min = (u32)args->params[BACKOFF_MIN];
	lock->backoff_max = (u32)args->params[BACKOFF_MAX];
	lock_wait_configure(&lock->wait, args);
	return 0;
}

static void ttas_backoff_lock(void *lockp, struct lock_thread *self)
{
	struct ttas_backoff_lock *lock = lockp;
	struct backoff_state *state = lock_qnode(self, LOCK_QNODE_QUEUE, struct backoff_state);
	struct lock_wait_budget budget = LOCK_WAIT_BUDGET_INIT;
	u32 limit = lock->backoff_min;

	for (;;) {
		ttas_wait_free(&lock->locked, &lock->parked, &lock->wait, self, &budget);
		if (xchg_acquire(&lock->locked, 1) == 0)
			return;
		/* Lost the race after seeing it free: others are contending, back off. */
		for (u32 pause = backoff_random(state, self->index) % limit; pause > 0; pause--)
			cpu_relax();
		if (limit < lock->backoff_max)
			limit = limit * 2 < lock->backoff_max ? limit * 2 : lock->backoff_max;
	}
}

static bool ttas_backoff_trylock(void *lockp, struct lock_thread *self)
{
	struct ttas_backoff_lock *lock = lockp;
	(void)self;
	return READ_ONCE(lock->locked) == 0 && xchg_acquire(&lock->locked, 1) == 0;
}

static void ttas_backoff_unlock(void *lockp, struct lock_thread *self)
{
	struct ttas_backoff_lock *lock = lockp;
	smp_store_release(&lock->locked, 0);
	lock_unpark(&lock->wait, self, &lock->locked, &lock->parked, 1);
}

static const struct lock_tunable wait_tunables[] = { LOCK_WAIT_TUNABLES, LOCK_TUNABLES_END };

const struct lock_ops tas_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "tas",
	.family = "spin-simple",
	.summary = "test-and-set: spin on an atomic exchange",
	.source = "Anderson, IEEE TPDS 1(1) 1990",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct tas_lock),
	.tunables = wait_tunables,
	.init = tas_init,
	.lock = tas_lock,
	.unlock = tas_unlock,
	.trylock = tas_trylock,
};

const struct lock_ops ttas_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ttas",
	.family = "spin-simple",
	.summary = "test-and-test-and-set: spin reading, exchange when free",
	.source = "Anderson, IEEE TPDS 1(1) 1990",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct tas_lock),
	.tunables = wait_tunables,
	.init = tas_init,
	.lock = ttas_lock,
	.unlock = tas_unlock,
	.trylock = tas_trylock,
};

const struct lock_ops ttas_backoff_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "ttas_backoff",
	.family = "spin-simple",
	.summary = "ttas with randomised exponential backoff after a lost race",
	.source = "Anderson, IEEE TPDS 1(1) 1990; Herlihy & Shavit, AMP ch. 7.4",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct ttas_backoff_lock),
	.tunables = ttas_backoff_tunables,
	.init = ttas_backoff_init,
	.lock = ttas_backoff_lock,
	.unlock = ttas_backoff_unlock,
	.trylock = ttas_backoff_trylock,
};
