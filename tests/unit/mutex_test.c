/* SPDX-License-Identifier: MIT */
/*
 * Unit test of native/locks/mutex.c's hand-off request, single-threaded and deterministic.
 *
 * The race: a woken first waiter reads the owner word (held by X), and X releases the lock
 * before the waiter sets HANDOFF. The kernel sets HANDOFF by a CAS on the value it read, so the
 * CAS fails and the waiter takes the now free lock; an unconditional fetch_or would leave
 * HANDOFF on a free lock. The test makes that interleaving happen every time: READ_ONCE and
 * WRITE_ONCE are wrapped (before the lock's source is included) so that
 *   - when the waiter marks itself asleep, it is "woken" at once (its state is RUNNING), and
 *   - the first read of the owner word after that wake-up returns X's value and then releases
 *     the lock as X's unlock would (owner = WAITERS), between the waiter's read and its update.
 * Every later read of the owner word checks that HANDOFF is never set on a free lock.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <locklab/kernel.h>

#include <stdio.h>

#include "access_hooks.h"

#include "../../native/locks/mutex.c"

#include "check.h"


static struct lock_thread waiter_thread, owner_thread;
static struct mutex test_lock __attribute__((aligned(LOCKLAB_CACHELINE)));

static enum { RELEASE_BETWEEN_READ_AND_UPDATE, KEEP_HOLDING } scenario;
static enum { IDLE, RELEASE_ON_NEXT_READ, CHECKING, DONE } phase;
static int handoff_on_free_lock;
static uintptr_t owner_at_second_sleep;

static void after_read(const void *addr)
{
	if (addr != &test_lock.owner)
		return;
	uintptr_t owner = __atomic_load_n(&test_lock.owner, __ATOMIC_RELAXED);
	if (phase == RELEASE_ON_NEXT_READ) {
		/* The waiter has read "held by X": X lets go now, before the waiter acts on it. */
		__atomic_store_n(&test_lock.owner, owner & MUTEX_FLAG_WAITERS, __ATOMIC_RELEASE);
		phase = CHECKING;
	} else if (owner_task(owner) == NULL && (owner & MUTEX_FLAG_HANDOFF)) {
		handoff_on_free_lock++;
	}
}

static void after_write(const void *addr)
{
	struct lock_task *me = lock_task_of(&waiter_thread);
	if (addr != &me->sleeping || __atomic_load_n(&me->sleeping, __ATOMIC_RELAXED) != 1)
		return;
	/* Going to sleep: wake it at once (it is RUNNING again, so it does not wait). */
	__atomic_store_n(&me->state, LOCK_TASK_RUNNING, __ATOMIC_RELAXED);
	if (phase == IDLE) {
		phase = scenario == RELEASE_BETWEEN_READ_AND_UPDATE ? RELEASE_ON_NEXT_READ : CHECKING;
	} else if (phase == CHECKING && scenario == KEEP_HOLDING) {
		/* Asleep again after asking: X unlocks and, seeing HANDOFF, hands the lock over. */
		uintptr_t owner = __atomic_load_n(&test_lock.owner, __ATOMIC_RELAXED);
		owner_at_second_sleep = owner;
		if (owner & MUTEX_FLAG_HANDOFF)
			__atomic_store_n(&test_lock.owner,
					 (uintptr_t)me | (owner & MUTEX_FLAG_WAITERS) |
						 MUTEX_FLAG_PICKUP,
					 __ATOMIC_RELEASE);
		else
			__atomic_store_n(&test_lock.owner, owner & MUTEX_FLAG_WAITERS,
					 __ATOMIC_RELEASE);
		phase = DONE;
	}
}

static void run_scenario(int which)
{
	struct lock_task *x = lock_task_of(&owner_thread);
	long params[] = { 0 }; /* spin=0: no optimistic spinning, straight to the wait list */
	struct lock_init_args args = { params, 2 };

	scenario = which;
	phase = IDLE;
	handoff_on_free_lock = 0;
	CHECK(mutex_init_op(&test_lock, &args) == 0, "init");
	test_lock.owner = (uintptr_t)x; /* X holds the lock */
	mutex_lock_op(&test_lock, &waiter_thread);
}

static void check_taken_and_unlock(void)
{
	struct lock_task *me = lock_task_of(&waiter_thread);
	uintptr_t owner = __atomic_load_n(&test_lock.owner, __ATOMIC_RELAXED);
	CHECK(owner_task(owner) == me, "the waiter holds the lock (owner %#lx)",
	      (unsigned long)owner);
	CHECK((owner & MUTEX_FLAGS) == 0, "no flags left once the wait list is empty (owner %#lx)",
	      (unsigned long)owner);
	mutex_unlock_op(&test_lock, &waiter_thread);
	CHECK(__atomic_load_n(&test_lock.owner, __ATOMIC_RELAXED) == 0, "unlocked");
}

/* X releases between the woken first waiter's read of the owner word and its update. */
static void test_handoff_never_lands_on_a_free_lock(void)
{
	run_scenario(RELEASE_BETWEEN_READ_AND_UPDATE);
	CHECK(phase == CHECKING, "the waiter slept, was woken and read the owner (phase %d)",
	      (int)phase);
	CHECK(handoff_on_free_lock == 0,
	      "HANDOFF landed on a free lock (seen %d times): it must be set only by a CAS while "
	      "the lock is held",
	      handoff_on_free_lock);
	check_taken_and_unlock();
}

/* X keeps holding it: the woken first waiter's request lands, and X hands the lock over. */
static void test_handoff_lands_on_a_held_lock(void)
{
	struct lock_task *x = lock_task_of(&owner_thread);
	run_scenario(KEEP_HOLDING);
	CHECK(phase == DONE, "the waiter asked, slept again and was handed the lock (phase %d)",
	      (int)phase);
	CHECK(owner_at_second_sleep ==
		      ((uintptr_t)x | MUTEX_FLAG_WAITERS | MUTEX_FLAG_HANDOFF),
	      "HANDOFF set on the lock X holds (owner %#lx)", (unsigned long)owner_at_second_sleep);
	CHECK(handoff_on_free_lock == 0, "HANDOFF on a free lock");
	check_taken_and_unlock();
}

int main(void)
{
	waiter_thread.index = 0;
	owner_thread.index = 1;
	test_handoff_never_lands_on_a_free_lock();
	test_handoff_lands_on_a_held_lock();
	return check_summary();
}
