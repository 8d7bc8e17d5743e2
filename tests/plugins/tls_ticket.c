/* SPDX-License-Identifier: MIT */
/*
 * tls_ticket - a ticket lock whose ticket lives in thread-local storage, for the test suite:
 * each thread checks at every acquisition that its thread-local block is still its own (its
 * pthread_self and gettid as it first saw them, and the ticket it drew), and aborts the run
 * if not. The simulator runs every thread's code on one host thread and swaps the thread
 * pointer at each hand-over (native/sim/context.c): a swap that missed would show here.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

struct tls_ticket_lock {
	u32 next;
	u32 serving;
};

static _Thread_local u32 my_ticket;
static _Thread_local pthread_t me;
static _Thread_local long my_tid;
static _Thread_local bool known;

static void check_own_block(const char *where)
{
	if (!known) {
		me = pthread_self();
		my_tid = syscall(SYS_gettid);
		known = true;
		return;
	}
	if (!pthread_equal(me, pthread_self()) || my_tid != syscall(SYS_gettid)) {
		fprintf(stderr, "tls_ticket: another thread's thread-local block at %s\n", where);
		abort();
	}
}

static void tls_ticket_lock(void *lockp, struct lock_thread *self)
{
	struct tls_ticket_lock *lock = lockp;
	(void)self;
	check_own_block("lock");
	my_ticket = __atomic_fetch_add(&lock->next, 1, __ATOMIC_RELAXED);
	while (smp_load_acquire(&lock->serving) != my_ticket)
		cpu_relax();
}

static void tls_ticket_unlock(void *lockp, struct lock_thread *self)
{
	struct tls_ticket_lock *lock = lockp;
	(void)self;
	check_own_block("unlock");
	if (READ_ONCE(lock->serving) != my_ticket) {
		fprintf(stderr, "tls_ticket: the ticket in thread-local storage is not the one served\n");
		abort();
	}
	smp_store_release(&lock->serving, my_ticket + 1);
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

const struct lock_ops locklab_plugin_lock = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "tls_ticket",
	.family = "test",
	.summary = "ticket lock with its ticket in thread-local storage (a test)",
	.source = "locklab test suite",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct tls_ticket_lock),
	.tunables = no_tunables,
	.lock = tls_ticket_lock,
	.unlock = tls_ticket_unlock,
};
