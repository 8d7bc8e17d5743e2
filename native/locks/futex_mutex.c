/* SPDX-License-Identifier: MIT */
/*
 * Three-state futex mutex.
 *
 * Source: U. Drepper, "Futexes Are Tricky", Red Hat, 2004 (rev. 2011), "Mutex, Take 3".
 *
 * State: one 32-bit futex word.
 *   0  unlocked
 *   1  locked, no waiters
 *   2  locked, maybe waiters (someone may be asleep in FUTEX_WAIT)
 * The uncontended paths are a single CAS (lock) and a single atomic decrement (unlock); the
 * unlock enters the kernel only when the word was 2. A waiter always sets 2 before sleeping,
 * so an unlock cannot miss it; at worst one needless FUTEX_WAKE happens.
 *
 * Ordering: every successful acquisition is an ACQUIRE RMW (cmpxchg or xchg); unlock is a
 * RELEASE decrement, and the store of 0 on the contended path is RELEASE as well.
 */
#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

enum { FUTEX_MUTEX_UNLOCKED, FUTEX_MUTEX_LOCKED, FUTEX_MUTEX_CONTENDED };

struct futex_mutex {
	u32 word;
};

static void futex_mutex_lock_slowpath(struct futex_mutex *mutex, u32 seen)
{
	/* Announce a waiter, unless the word already says so. */
	if (seen != FUTEX_MUTEX_CONTENDED)
		seen = xchg_acquire(&mutex->word, FUTEX_MUTEX_CONTENDED);
	while (seen != FUTEX_MUTEX_UNLOCKED) {
		futex_wait(&mutex->word, FUTEX_MUTEX_CONTENDED);
		/* We cannot know whether others still wait, so take it as CONTENDED. */
		seen = xchg_acquire(&mutex->word, FUTEX_MUTEX_CONTENDED);
	}
}

static void futex_mutex_lock(void *lockp, struct lock_thread *self)
{
	struct futex_mutex *mutex = lockp;
	u32 seen = cmpxchg_acquire(&mutex->word, FUTEX_MUTEX_UNLOCKED, FUTEX_MUTEX_LOCKED);
	(void)self;

	if (unlikely(seen != FUTEX_MUTEX_UNLOCKED))
		futex_mutex_lock_slowpath(mutex, seen);
}

static bool futex_mutex_trylock(void *lockp, struct lock_thread *self)
{
	struct futex_mutex *mutex = lockp;
	(void)self;
	return cmpxchg_acquire(&mutex->word, FUTEX_MUTEX_UNLOCKED, FUTEX_MUTEX_LOCKED) ==
	       FUTEX_MUTEX_UNLOCKED;
}

static void futex_mutex_unlock(void *lockp, struct lock_thread *self)
{
	struct futex_mutex *mutex = lockp;
	(void)self;

	if (unlikely(__atomic_fetch_sub(&mutex->word, 1, __ATOMIC_RELEASE) !=
		     FUTEX_MUTEX_LOCKED)) {
		/* It was CONTENDED: free it completely and wake one sleeper. */
		smp_store_release(&mutex->word, FUTEX_MUTEX_UNLOCKED);
		futex_wake_one(&mutex->word);
	}
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops futex_mutex_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "futex_mutex",
	.family = "sleeping",
	.summary = "three-state futex mutex (0 free, 1 locked, 2 contended)",
	.source = "Drepper, \"Futexes Are Tricky\" 2011, Mutex take 3",
	.flags = LOCK_SLEEPS,
	.lock_size = sizeof(struct futex_mutex),
	.tunables = no_tunables,
	.lock = futex_mutex_lock,
	.unlock = futex_mutex_unlock,
	.trylock = futex_mutex_trylock,
};
