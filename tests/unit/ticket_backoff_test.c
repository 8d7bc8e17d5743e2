/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of native/locks/ticket.c's ticket_auto_backoff_rfc (R. van Riel's RFC of
 * 21 December 2012, seed 004's "auto"), single-threaded and deterministic: the wait between
 * looks is replaced by a script that records the pauses asked for and moves the lock's head
 * as the holders ahead would, so the real lock loop runs with a known sequence of heads.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <stdio.h>
#include <string.h>

struct ticket_lock;
static void scripted_wait(struct ticket_lock *lock, unsigned long long pauses);
#define TICKET_RFC_WAIT(lock, pauses) scripted_wait((lock), (pauses))

#include "../../native/locks/ticket.c"

#include "check.h"


/* Each wait: record the pauses, then the holder ahead hands on `step` tickets. */
#define MAX_WAITS 64
static unsigned long long waits[MAX_WAITS];
static unsigned int nwaits;
static u32 step = 1;

static void scripted_wait(struct ticket_lock *lock, unsigned long long pauses)
{
	if (nwaits < MAX_WAITS)
		waits[nwaits] = pauses;
	nwaits++;
	WRITE_ONCE(lock->now_serving, lock->now_serving + step);
	if (nwaits > 1000) /* a runaway loop: serve everyone */
		WRITE_ONCE(lock->now_serving, lock->next_ticket - 1);
}

static struct lock_thread thread;

/* Take a ticket with `ahead` tickets before it (the holder included), head at `head`. */
static void lock_with(struct ticket_lock *lock, u32 head, u32 ahead)
{
	lock->now_serving = head;
	lock->next_ticket = head + ahead;
	nwaits = 0;
	ticket_auto_backoff_rfc_ops.lock(lock, &thread);
	ticket_auto_backoff_rfc_ops.unlock(lock, &thread);
}

static void test_delay_times_ticket_minus_head(void)
{
	struct ticket_lock lock;
	memset(&thread, 0, sizeof(thread));
	step = 1;

	/*
	 * Ticket 5, head 2: three ahead, the holder included. Delay starts at MIN = 1.
	 * Look 1: head 3, busy; 3 is not picked (3 & 3 = 3, 3 & 7 = 3): delay 1.
	 * Look 2: head 4, busy; 4 & 3 = 0 is picked: delay 2.
	 * Look 3: head 5, ours: delay - 1 = 1.
	 */
	lock_with(&lock, 2, 3);
	CHECK(nwaits == 3, "three waits, not %u", nwaits);
	CHECK(waits[0] == 3, "first wait: delay 1 x (ticket - head) 3 = 3, not %llu", waits[0]);
	CHECK(waits[1] == 2, "second wait: 1 x 2, not %llu", waits[1]);
	CHECK(waits[2] == 2, "third wait: delay 2 x 1, not %llu (next in line waits too)",
	      waits[2]);
	CHECK(*rfc_delay_of(&thread) == 1, "overslept: 2 - 1 = 1, not %u", *rfc_delay_of(&thread));

	/* Free lock: no wait at all, and the delay stays. */
	lock_with(&lock, 40, 0);
	CHECK(nwaits == 0, "an uncontended lock does not wait (%u)", nwaits);
	CHECK(*rfc_delay_of(&thread) == 1, "delay untouched: %u", *rfc_delay_of(&thread));
}

static void test_integer_steps_and_bounds(void)
{
	struct ticket_lock lock;
	memset(&thread, 0, sizeof(thread));

	/* Never below MIN: one ahead, ours at the first look. */
	step = 1;
	lock_with(&lock, 100, 1);
	CHECK(nwaits == 1 && waits[0] == 1, "MIN delay, one ahead: one wait of 1 (%u, %llu)",
	      nwaits, waits[0]);
	CHECK(*rfc_delay_of(&thread) == RFC_MIN_SPINLOCK_DELAY, "stays at MIN: %u",
	      *rfc_delay_of(&thread));

	/* Busy looks at heads 8..15: picked are 8 (& 3 == 0), 9 (& 7 == 1), 12: +3 of 8. */
	*rfc_delay_of(&thread) = 10;
	lock_with(&lock, 7, 10); /* ticket 17; looks at 8..17, the last one ours */
	CHECK(nwaits == 10, "ten waits, not %u", nwaits);
	CHECK(waits[0] == 10 * 10, "first wait 10 x 10, not %llu", waits[0]);
	/* heads 8..16 busy: picked 8, 9, 12, 16 -> 14; ours at 17 -> 13. */
	CHECK(*rfc_delay_of(&thread) == 13, "+1 at heads 8, 9, 12, 16, -1 at the end: %u",
	      *rfc_delay_of(&thread));

	/* The cap: at MAX, busy looks do not raise it; the final -1 does lower it. */
	*rfc_delay_of(&thread) = RFC_MAX_SPINLOCK_DELAY;
	lock_with(&lock, 15, 4); /* busy looks at 16 (picked), 17 (picked), 18; ours at 19 */
	CHECK(waits[0] == 1000ull * 4, "MAX x 4 = 4000, not %llu", waits[0]);
	CHECK(waits[1] == 1000ull * 3, "stays at MAX 1000: 3000, not %llu", waits[1]);
	CHECK(*rfc_delay_of(&thread) == RFC_MAX_SPINLOCK_DELAY - 1, "999, not %u",
	      *rfc_delay_of(&thread));
	CHECK(RFC_MAX_SPINLOCK_DELAY == 1000 && RFC_MIN_SPINLOCK_DELAY == 1, "MIN 1, MAX 1000");

	/* One delay per thread, whatever the lock (the per-CPU variable). */
	struct ticket_lock other;
	*rfc_delay_of(&thread) = 50;
	step = 3;
	lock_with(&other, 0, 3); /* ours at the first look */
	CHECK(waits[0] == 150, "the same delay for another lock: 150, not %llu", waits[0]);
	CHECK(*rfc_delay_of(&thread) == 49, "and it is updated: %u", *rfc_delay_of(&thread));
}

int main(void)
{
	test_delay_times_ticket_minus_head();
	test_integer_steps_and_bounds();
	return check_summary();
}
