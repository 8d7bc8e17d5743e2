/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of native/locks/mutex_3_10.c: the 3.10 mutex's count, 1 free / 0 locked /
 * negative locked with sleepers, through the fast paths and with waiters queued. Spinning is
 * off so that waiters sleep at once; threads start only once the previous one sleeps, and
 * every wait is bounded by a watchdog.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../native/locks/mutex_3_10.c"

#include "check.h"


#define MAX_THREADS 3
static struct lock_thread threads[MAX_THREADS];

static int count_of(struct mutex_3_10 *lock)
{
	return __atomic_load_n(&lock->count.counter, __ATOMIC_SEQ_CST);
}

static void init_mutex(struct mutex_3_10 *lock, bool spin)
{
	long params[1] = { spin };
	struct lock_init_args args = { params, MAX_THREADS };
	memset(lock, 0, sizeof(*lock));
	CHECK(mutex_3_10_init(lock, &args) == 0, "init");
	for (unsigned int i = 0; i < MAX_THREADS; i++) {
		memset(&threads[i], 0, sizeof(threads[i]));
		threads[i].index = i;
	}
}

static void test_fast_paths(void)
{
	static struct mutex_3_10 lock;
	init_mutex(&lock, true);

	CHECK(count_of(&lock) == 1, "free is 1: %d", count_of(&lock));
	mutex_3_10_lock(&lock, &threads[0]);
	CHECK(count_of(&lock) == 0, "locked is 0: %d", count_of(&lock));
	CHECK(READ_ONCE(lock.owner) == lock_task_of(&threads[0]), "owner set after locking");
	CHECK(!mutex_3_10_trylock(&lock, &threads[1]), "trylock of a held mutex");
	CHECK(count_of(&lock) == 0, "a failed trylock leaves 0: %d", count_of(&lock));
	mutex_3_10_unlock(&lock, &threads[0]);
	CHECK(count_of(&lock) == 1, "unlocked is 1: %d", count_of(&lock));
	CHECK(READ_ONCE(lock.owner) == NULL, "owner cleared");
	CHECK(mutex_3_10_trylock(&lock, &threads[1]), "trylock of a free mutex");
	CHECK(count_of(&lock) == 0, "trylock: 1 -> 0");
	mutex_3_10_unlock(&lock, &threads[1]);
	CHECK(count_of(&lock) == 1, "1 again");
}

struct job {
	struct mutex_3_10 *lock;
	struct lock_thread *self;
	int acquired;
	int release;
	int count_when_acquired;
};

static void *job_main(void *arg)
{
	struct job *job = arg;
	mutex_3_10_lock(job->lock, job->self);
	job->count_when_acquired = count_of(job->lock);
	__atomic_store_n(&job->acquired, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&job->release, __ATOMIC_ACQUIRE))
		sched_yield();
	mutex_3_10_unlock(job->lock, job->self);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool job_sleeps(struct job *job)
{
	return __atomic_load_n(&lock_task_of(job->self)->sleeping, __ATOMIC_ACQUIRE) != 0;
}

static bool job_acquired(struct job *job)
{
	return __atomic_load_n(&job->acquired, __ATOMIC_ACQUIRE) != 0;
}

static void wait_until(bool (*cond)(struct job *), struct job *job, const char *what)
{
	double deadline = now_s() + 20.0;
	while (!cond(job)) {
		if (now_s() > deadline) {
			printf("FAIL: timed out waiting until %s\n", what);
			exit(1);
		}
		sched_yield();
	}
}

static pthread_t start(struct job *job)
{
	pthread_t tid;
	if (pthread_create(&tid, NULL, job_main, job) != 0) {
		perror("pthread_create");
		exit(2);
	}
	return tid;
}

static void test_waiters(void)
{
	static struct mutex_3_10 lock;
	init_mutex(&lock, false);

	mutex_3_10_lock(&lock, &threads[0]);
	struct job a = { &lock, &threads[1], 0, 0, 0 };
	struct job b = { &lock, &threads[2], 0, 0, 0 };

	pthread_t ta = start(&a);
	wait_until(job_sleeps, &a, "the first waiter sleeps");
	CHECK(count_of(&lock) == -1, "a sleeper's xchg made it -1: %d", count_of(&lock));

	/* x86's `lock decl` fast path takes the count below -1; a sleeper shows as negative. */
	pthread_t tb = start(&b);
	wait_until(job_sleeps, &b, "the second waiter sleeps");
	CHECK(count_of(&lock) < 0, "still negative with two sleepers: %d", count_of(&lock));

	/* Unlock: the slow path frees it (1) and wakes the first; its xchg takes it (-1). */
	mutex_3_10_unlock(&lock, &threads[0]);
	wait_until(job_acquired, &a, "the first waiter holds it");
	CHECK(a.count_when_acquired == -1, "taken with a sleeper left: -1, not %d",
	      a.count_when_acquired);
	CHECK(!job_acquired(&b), "the second still waits");
	__atomic_store_n(&a.release, 1, __ATOMIC_RELEASE);

	wait_until(job_acquired, &b, "the second waiter holds it");
	CHECK(b.count_when_acquired == 0, "the last waiter out sets 0, not %d",
	      b.count_when_acquired);
	__atomic_store_n(&b.release, 1, __ATOMIC_RELEASE);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	CHECK(count_of(&lock) == 1, "free at the end: %d", count_of(&lock));
	CHECK(lock.first == NULL && lock.last == NULL, "the wait list is empty");
}

int main(void)
{
	test_fast_paths();
	test_waiters();
	return check_summary();
}
