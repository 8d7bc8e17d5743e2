/* SPDX-License-Identifier: MIT */
/*
 * example_ticket - an out-of-tree lock for locklab-bench, to copy and patch.
 *
 * A ticket lock (Mellor-Crummey & Scott, ACM TOCS 9(1) 1991, sec. 2.2) whose waiters pause
 * `spin_pause` times between polls of now_serving: set it with --param spin_pause=N. Build and
 * run it without rebuilding locklab:
 *
 *   cc -std=c11 -O2 -Wall -Wextra -shared -fPIC -I native/include \
 *      -o example_ticket.so examples/plugin/example_ticket.c
 *   .venv/bin/locklab-bench --plugin ./example_ticket.so --nwriters 4 --duration 2
 *
 * The contract is native/include/locklab/lock.h: export one `struct lock_ops` named
 * locklab_plugin_lock, with abi_version = LOCKLAB_ABI_VERSION.
 */
#include <locklab/kernel.h>
#include <locklab/lock.h>

struct example_ticket_lock {
	u32 next_ticket;
	u32 now_serving;
	u32 spin_pause; /* copied from the tunable at init */
};

enum { SPIN_PAUSE };

static const struct lock_tunable example_ticket_tunables[] = {
	{ "spin_pause", 1, 1, 1 << 16, "cpu_relax() pauses between polls of now_serving", NULL },
	LOCK_TUNABLES_END,
};

static int example_ticket_init(void *lockp, const struct lock_init_args *args)
{
	struct example_ticket_lock *lock = lockp;
	lock->spin_pause = (u32)args->params[SPIN_PAUSE];
	return 0;
}

static void example_ticket_lock(void *lockp, struct lock_thread *self)
{
	struct example_ticket_lock *lock = lockp;
	u32 ticket = __atomic_fetch_add(&lock->next_ticket, 1, __ATOMIC_RELAXED);
	(void)self;

	/* ACQUIRE pairs with the RELEASE in unlock: the last holder's writes are visible. */
	while (smp_load_acquire(&lock->now_serving) != ticket)
		for (u32 i = 0; i < lock->spin_pause; i++)
			cpu_relax();
}

static void example_ticket_unlock(void *lockp, struct lock_thread *self)
{
	struct example_ticket_lock *lock = lockp;
	(void)self;
	smp_store_release(&lock->now_serving, READ_ONCE(lock->now_serving) + 1);
}

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "example_ticket",
	.family = "plugin-example",
	.summary = "ticket lock with a tunable pause between polls (plugin example)",
	.source = "Mellor-Crummey & Scott, ACM TOCS 9(1) 1991, sec. 2.2",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct example_ticket_lock),
	.tunables = example_ticket_tunables,
	.init = example_ticket_init,
	.lock = example_ticket_lock,
	.unlock = example_ticket_unlock,
};
