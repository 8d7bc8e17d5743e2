/* SPDX-License-Identifier: MIT */
/*
 * MCS under spin-then-park: after the hand-over, nothing writes the woken waiter's node
 * (native/include/locklab/wait.h, "Except where P is in the waiter's own queue node").
 *
 * The waiter may take the lock, let it go and end while its waker is still between its wake
 * and its return, and the interposer then gives the waiter's slot, node zeroed, to a new
 * thread. A waker that took the woken waiter off the node's count at that point drove the new
 * thread's count below zero, and the new thread's next wake-up was lost: a hang, once, in the
 * interposition torture. Here the waker is stalled at that point (lock_wait_after_wake()),
 * the node zeroed as the interposer zeroes it, and the node's next waiter must be woken.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static sem_t waker_stalled, waker_released;
static __thread bool stall_this_waker;

static void stall_after_wake(void)
{
	if (!stall_this_waker)
		return;
	stall_this_waker = false;
	sem_post(&waker_stalled);
	sem_wait(&waker_released);
}
#define lock_wait_after_wake() stall_after_wake()

#include "../../native/locks/mcs.c"

#include "check.h"

static struct mcs_lock lock;
static struct lock_thread first_holder, reused_slot, second_holder;

static u32 *parked_of(struct lock_thread *slot)
{
	return &lock_qnode(slot, LOCK_QNODE_QUEUE, struct mcs_node)->parked;
}

static void *lock_and_leave(void *slot)
{
	mcs_lock(&lock, slot);
	mcs_unlock(&lock, slot);
	return NULL;
}

static void *stalled_hand_over(void *unused)
{
	(void)unused;
	stall_this_waker = true;
	mcs_unlock(&lock, &first_holder);
	return NULL;
}

static void *late_hand_over(void *unused)
{
	(void)unused;
	usleep(100 * 1000);
	mcs_unlock(&lock, &second_holder);
	return NULL;
}

/* Until the thread on `slot` sleeps in the futex (its count says it parked; then a margin). */
static void wait_until_parked(struct lock_thread *slot)
{
	while (__atomic_load_n(parked_of(slot), __ATOMIC_RELAXED) == 0)
		usleep(1000);
	usleep(50 * 1000);
}

int main(void)
{
	const long params[2] = { LOCK_WAIT_PARK, 0 }; /* park at once */
	const struct lock_init_args args = { params, 4 };
	pthread_t waiter, waker, second_waiter, second_waker;

	sem_init(&waker_stalled, 0, 0);
	sem_init(&waker_released, 0, 0);
	mcs_init(&lock, &args);

	mcs_lock(&lock, &first_holder);
	pthread_create(&waiter, NULL, lock_and_leave, &reused_slot);
	wait_until_parked(&reused_slot);
	pthread_create(&waker, NULL, stalled_hand_over, NULL);
	sem_wait(&waker_stalled); /* the waiter is woken; its waker stands still */
	pthread_join(waiter, NULL); /* the waiter took the lock, let it go, and ended */
	memset(reused_slot.qnode, 0, sizeof(reused_slot.qnode)); /* as the interposer's slot_forget */
	sem_post(&waker_released);
	pthread_join(waker, NULL);
	CHECK(*parked_of(&reused_slot) == 0, "the waker wrote the woken waiter's node: parked %u",
	      *parked_of(&reused_slot));

	/* The node's next waiter parks, and the next hand-over must wake it. */
	mcs_lock(&lock, &second_holder);
	pthread_create(&second_waiter, NULL, lock_and_leave, &reused_slot);
	pthread_create(&second_waker, NULL, late_hand_over, NULL);
	pthread_join(second_waker, NULL);
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 5;
	int joined = pthread_timedjoin_np(second_waiter, NULL, &deadline);
	CHECK(joined == 0, "the node's next waiter was never woken (parked %u, locked %u)",
	      *parked_of(&reused_slot),
	      lock_qnode(&reused_slot, LOCK_QNODE_QUEUE, struct mcs_node)->locked);
	return check_summary();
}
