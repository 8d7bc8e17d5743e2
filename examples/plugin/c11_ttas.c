/* SPDX-License-Identifier: MIT */
/*
 * c11_ttas - an out-of-tree lock written in standard C11 <stdatomic.h> alone: no locklab header
 * but locklab/lock.h, the contract. The kernel-idiom example is example_ticket.c beside it.
 *
 * Test-and-test-and-set (Rudolph & Segall, ISCA 1984; measured against its alternatives by
 * Anderson, IEEE TPDS 1(1) 1990): a waiter polls the lock word with plain loads, which hit in
 * its own cache while the lock is held, and tries the exchange only once it reads the word
 * free, so a held lock's line is not bounced by failing exchanges.
 *
 * The ordering is written with fences, as C11 (7.17.4) defines them: the release fence in
 * unlock, before the relaxed store that frees the lock, synchronises with the acquire fence
 * in lock, after the relaxed exchange that reads that store. So the last holder's writes
 * happen before the next holder's reads. Build with -DC11_TTAS_ORDERS for the same lock with
 * the orders on the accesses themselves (acquire exchange, release store) instead:
 * ThreadSanitizer follows those, but not fences (locklab says so when it compiles this file
 * under --build tsan; tests/plugins/c11_ttas_orders.c is that form).
 *
 * Run it from its source, no build step of your own:
 *
 *   locklab run --plugin examples/plugin/c11_ttas.c --lock ticket,c11_ttas --nwriters 1,2
 *   locklab run --plugin examples/plugin/c11_ttas.c --lock c11_ttas --build tsan --nwriters 2
 *   locklab run --plugin examples/plugin/c11_ttas.c --lock ticket,c11_ttas --sim mach1 --nwriters 2,4
 *
 * Its waiters poll without a pause instruction (C11 has none): the simulator then runs every
 * poll, where a cpu_relax() (locklab/arch.h) would let it park the waiter (docs/locks.md).
 */
#include <stdatomic.h>
#include <stdbool.h>

#include <locklab/lock.h>

#ifdef C11_TTAS_ORDERS
#define C11_TTAS_NAME "c11_ttas_orders"
#define TAKE_ORDER memory_order_acquire
#define FREE_ORDER memory_order_release
#else
#define C11_TTAS_NAME "c11_ttas"
#define TAKE_ORDER memory_order_relaxed
#define FREE_ORDER memory_order_relaxed
#endif

struct c11_ttas_lock {
	atomic_bool held;
};

static void c11_ttas_lock(void *lockp, struct lock_thread *self)
{
	struct c11_ttas_lock *lock = lockp;
	(void)self;
	for (;;) {
		if (!atomic_exchange_explicit(&lock->held, true, TAKE_ORDER))
			break;
		/* Test before the next test-and-set: poll our cached copy until it reads free. */
		while (atomic_load_explicit(&lock->held, memory_order_relaxed))
			;
	}
#ifndef C11_TTAS_ORDERS
	/* Pairs with the release fence in unlock: the exchange read the store that freed it. */
	atomic_thread_fence(memory_order_acquire);
#endif
}

static bool c11_ttas_trylock(void *lockp, struct lock_thread *self)
{
	struct c11_ttas_lock *lock = lockp;
	(void)self;
	if (atomic_load_explicit(&lock->held, memory_order_relaxed) ||
	    atomic_exchange_explicit(&lock->held, true, TAKE_ORDER))
		return false;
#ifndef C11_TTAS_ORDERS
	atomic_thread_fence(memory_order_acquire);
#endif
	return true;
}

static void c11_ttas_unlock(void *lockp, struct lock_thread *self)
{
	struct c11_ttas_lock *lock = lockp;
	(void)self;
#ifndef C11_TTAS_ORDERS
	/* Our critical section's writes before the store that frees the lock. */
	atomic_thread_fence(memory_order_release);
#endif
	atomic_store_explicit(&lock->held, false, FREE_ORDER);
}

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = C11_TTAS_NAME,
	.family = "plugin-example",
	.summary = "test-and-test-and-set in C11 <stdatomic.h> alone (plugin example)",
	.source = "Rudolph & Segall, ISCA 1984; Anderson, IEEE TPDS 1(1) 1990",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct c11_ttas_lock),
	.lock = c11_ttas_lock,
	.unlock = c11_ttas_unlock,
	.trylock = c11_ttas_trylock,
};
