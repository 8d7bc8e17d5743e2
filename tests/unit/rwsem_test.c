/* SPDX-License-Identifier: MIT */
/*
 * Unit test of native/locks/rwsem.c's hand-off spin, single-threaded and deterministic: a
 * writer that set HANDOFF spins on a running writer owner (6.1's rwsem_spin_on_owner(), around
 * rwsem.c:1178) and says "try again at once" only when the owner word goes to none.
 *
 * READ_ONCE is wrapped (before the lock's source is included) to count the spinner's reads of
 * the owner word and, on the Nth, to play the owner: release the lock (owner 0), hand it to
 * readers, or go to sleep.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <locklab/kernel.h>

#include <stdio.h>

#include "access_hooks.h"

#include "../../native/locks/rwsem.c"

#include "check.h"

static struct lock_thread owner_thread;
static struct rw_semaphore test_sem __attribute__((aligned(LOCKLAB_CACHELINE)));

static enum { RELEASE, TO_READERS, SLEEP } owner_does;
static int reads_before_acting, owner_reads;

static void after_read(const void *addr)
{
	if (addr != &test_sem.owner || ++owner_reads != reads_before_acting)
		return;
	switch (owner_does) {
	case RELEASE: __atomic_store_n(&test_sem.owner, 0, __ATOMIC_RELAXED); break;
	case TO_READERS:
		__atomic_store_n(&test_sem.owner, RWSEM_READER_OWNED, __ATOMIC_RELAXED);
		break;
	case SLEEP: lock_task_of(&owner_thread)->sleeping = 1; break;
	}
}

static void after_write(const void *addr) { (void)addr; }

/* The hand-off writer's question: did the owner let go (OWNER_NULL)? */
static bool try_again_at_once(void)
{
	unsigned int rounds = 0;
	return rwsem_spin_on_owner(&test_sem, osq_now_ns() + OSQ_SPIN_NS, &rounds) == OWNER_NULL;
}

static bool spin(int what, int after)
{
	struct lock_task *owner = lock_task_of(&owner_thread);
	owner->sleeping = 0;
	test_sem.owner = (uintptr_t)owner; /* a running writer holds it */
	owner_does = what;
	reads_before_acting = after;
	owner_reads = 0;
	return try_again_at_once();
}

/*
 * 6.1's reader hand-off (rwsem_mark_wake()): the first waiter, a reader past its timeout, finds
 * a writer holding the lock when woken. HANDOFF goes in with the add that takes its bias back,
 * so no writer can take the lock before it; once the writer leaves, the readers are granted
 * and HANDOFF goes, while a writer queued behind them stays queued.
 */
static void test_reader_handoff(bool late)
{
	static struct lock_thread reader_thread, writer_thread;
	static struct rw_semaphore sem __attribute__((aligned(LOCKLAB_CACHELINE)));
	static struct rwsem_waiter reader_waiter, writer_waiter;
	struct rwsem_waiter *reader = &reader_waiter, *writer = &writer_waiter;
	struct wake_list wake = { .n = 0 };

	sem = (struct rw_semaphore){ 0 };
	*reader = (struct rwsem_waiter){ .task = lock_task_of(&reader_thread),
					 .type = WAITER_READER, .timeout = late ? 0 : UINT64_MAX };
	*writer = (struct rwsem_waiter){ .task = lock_task_of(&writer_thread),
					 .type = WAITER_WRITER, .timeout = UINT64_MAX };
	add_waiter(&sem, reader);
	add_waiter(&sem, writer);
	sem.count = RWSEM_WRITER_LOCKED | RWSEM_FLAG_WAITERS;

	rwsem_mark_wake(&sem, WAKE_ANY, &wake);
	unsigned long expected = RWSEM_WRITER_LOCKED | RWSEM_FLAG_WAITERS |
				 (late ? RWSEM_FLAG_HANDOFF : 0);
	CHECK(sem.count == expected && reader->handoff_set == late && wake.n == 0,
	      "a writer holds it: the reader backs off%s (count %#lx)",
	      late ? ", late: with HANDOFF" : ", in time: without HANDOFF", sem.count);
	sem.count &= ~RWSEM_WRITER_LOCKED; /* the writer leaves */
	CHECK(rwsem_try_write_lock_unqueued(&sem, lock_task_of(&writer_thread)) == !late,
	      "a spinning writer %s", late ? "cannot take it past HANDOFF" : "may take it");
	if (!late)
		return;
	rwsem_mark_wake(&sem, WAKE_ANY, &wake);
	CHECK(sem.count == (RWSEM_READER_BIAS | RWSEM_FLAG_WAITERS) && wake.n == 1 &&
		      sem.first == writer && writer->prev == NULL,
	      "the reader is granted, HANDOFF cleared, the writer still queued (count %#lx)",
	      sem.count);
}

int main(void)
{
	test_reader_handoff(true);
	test_reader_handoff(false);
	owner_thread.index = 1;
	CHECK(spin(RELEASE, 50), "the owner let go: try again at once (OWNER_NULL)");
	CHECK(owner_reads >= 50, "it spun until then (%d reads of the owner)", owner_reads);
	CHECK(!spin(TO_READERS, 20), "readers own it now: sleep (OWNER_READER)");
	CHECK(!spin(SLEEP, 20), "the owner sleeps: so does the spinner");
	test_sem.owner = 0;
	CHECK(try_again_at_once(), "no owner at all: try again at once");
	test_sem.owner = RWSEM_READER_OWNED;
	CHECK(!try_again_at_once(), "reader-owned from the start: no spin");
	return check_summary();
}
