/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of native/locks/rwsem_xadd_3_10.c: the count arithmetic of the 3.10 xadd rwsem,
 * and how many atomic operations on count a writer does before it sleeps, with and without
 * seed 001's tweak 2 (skip_active). Deterministic: threads are only started once the others
 * are asleep in the lock, and every wait is bounded by a watchdog.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long count_rmws; /* RMWs on sem->count, all threads */
#define RWSEM_3_10_COUNT_RMW_HOOK() __atomic_fetch_add(&count_rmws, 1, __ATOMIC_RELAXED)

#include "../../native/locks/rwsem_xadd_3_10.c"

#include "check.h"


static unsigned long rmws(void)
{
	return __atomic_load_n(&count_rmws, __ATOMIC_SEQ_CST);
}

static long count_of(struct rwsem_3_10 *sem)
{
	return __atomic_load_n(&sem->count, __ATOMIC_SEQ_CST);
}

#define MAX_THREADS 4
static struct lock_thread threads[MAX_THREADS];

static void init_sem(struct rwsem_3_10 *sem, bool writer_spin, bool skip_active)
{
	long params[2] = { writer_spin, skip_active };
	struct lock_init_args args = { params, MAX_THREADS };
	memset(sem, 0, sizeof(*sem));
	CHECK(rwsem_3_10_init(sem, &args) == 0, "init");
	for (unsigned int i = 0; i < MAX_THREADS; i++) {
		memset(&threads[i], 0, sizeof(threads[i]));
		threads[i].index = i;
	}
}

static void test_constants(void)
{
	CHECK(RWSEM_ACTIVE_MASK == 0xffffffffL, "active part is bits 0-31");
	CHECK(RWSEM_WAITING_BIAS == -(1L << 32), "WAITING_BIAS = -(1 << 32)");
	CHECK(RWSEM_ACTIVE_WRITE_BIAS == -(1L << 32) + 1, "ACTIVE_WRITE_BIAS = WAITING + ACTIVE");
	CHECK((unsigned long)RWSEM_ACTIVE_WRITE_BIAS == 0xffffffff00000001UL, "0xffffffff00000001");
}

static void test_uncontended_arithmetic(void)
{
	static struct rwsem_3_10 sem;
	init_sem(&sem, false, false);

	unsigned long before = rmws();
	rwsem_3_10_down_write(&sem, &threads[0]);
	CHECK(count_of(&sem) == RWSEM_ACTIVE_WRITE_BIAS, "down_write on a free sem: %#lx",
	      (unsigned long)count_of(&sem));
	CHECK(rmws() - before == 1, "one xadd takes a free sem (%lu)", rmws() - before);
	CHECK(!rwsem_3_10_down_write_trylock(&sem, &threads[1]), "trylock of a held sem");
	rwsem_3_10_up_write(&sem, &threads[0]);
	CHECK(count_of(&sem) == 0, "up_write frees it: %ld", count_of(&sem));

	for (int i = 0; i < 3; i++)
		rwsem_3_10_down_read(&sem, &threads[0]);
	CHECK(count_of(&sem) == 3 * RWSEM_ACTIVE_READ_BIAS, "three readers: %ld", count_of(&sem));
	CHECK(!rwsem_3_10_down_write_trylock(&sem, &threads[1]), "trylock of a read-held sem");
	for (int i = 0; i < 3; i++)
		rwsem_3_10_up_read(&sem, &threads[0]);
	CHECK(count_of(&sem) == 0, "readers gone: %ld", count_of(&sem));

	CHECK(rwsem_3_10_down_write_trylock(&sem, &threads[0]), "trylock of a free sem");
	CHECK(count_of(&sem) == RWSEM_ACTIVE_WRITE_BIAS, "trylock's count: %#lx",
	      (unsigned long)count_of(&sem));
	rwsem_3_10_up_write(&sem, &threads[0]);
	CHECK(count_of(&sem) == 0, "free again");
}

/* The writer's fast path on a read-held sem: 3.10 adds the bias; skip_active leaves count. */
static void test_fast_path_on_an_active_sem(void)
{
	static struct rwsem_3_10 sem;
	bool biased;

	init_sem(&sem, false, false);
	rwsem_3_10_down_read(&sem, &threads[0]);
	unsigned long before = rmws();
	CHECK(!rwsem_3_10_down_write_fast(&sem, &biased), "3.10: a reader holds it");
	CHECK(biased, "3.10: the bias went in");
	CHECK(rmws() - before == 1, "3.10: one xadd (%lu)", rmws() - before);
	CHECK(count_of(&sem) == 1 + RWSEM_ACTIVE_WRITE_BIAS, "3.10: count %#lx",
	      (unsigned long)count_of(&sem));

	init_sem(&sem, false, true);
	rwsem_3_10_down_read(&sem, &threads[0]);
	before = rmws();
	CHECK(!rwsem_3_10_down_write_fast(&sem, &biased), "skip_active: a reader holds it");
	CHECK(!biased, "skip_active: no bias");
	CHECK(rmws() == before, "skip_active: count untouched (%lu RMWs)", rmws() - before);
	CHECK(count_of(&sem) == 1, "skip_active: count still %ld", count_of(&sem));
}

/* ---- threads ----------------------------------------------------------------------------- */

enum job_op { JOB_WRITE, JOB_READ };

struct job {
	struct rwsem_3_10 *sem;
	struct lock_thread *self;
	enum job_op op;
	int acquired; /* set once it holds the lock */
	int release;  /* main sets it to let the job unlock */
	long count_when_acquired;
};

static void *job_main(void *arg)
{
	struct job *job = arg;
	if (job->op == JOB_WRITE)
		rwsem_3_10_down_write(job->sem, job->self);
	else
		rwsem_3_10_down_read(job->sem, job->self);
	job->count_when_acquired = count_of(job->sem);
	__atomic_store_n(&job->acquired, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&job->release, __ATOMIC_ACQUIRE))
		sched_yield();
	if (job->op == JOB_WRITE)
		rwsem_3_10_up_write(job->sem, job->self);
	else
		rwsem_3_10_up_read(job->sem, job->self);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Watchdog: a hang fails the test instead of hanging it. */
static bool wait_until(bool (*cond)(struct job *), struct job *job, const char *what)
{
	double deadline = now_s() + 20.0;
	while (!cond(job)) {
		if (now_s() > deadline) {
			printf("FAIL: timed out waiting until %s\n", what);
			failures++;
			return false;
		}
		sched_yield();
	}
	return true;
}

static bool job_sleeps(struct job *job)
{
	/* Asleep in the lock, and queued. */
	return __atomic_load_n(&lock_task_of(job->self)->sleeping, __ATOMIC_ACQUIRE) != 0;
}

static bool job_acquired(struct job *job)
{
	return __atomic_load_n(&job->acquired, __ATOMIC_ACQUIRE) != 0;
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

/*
 * Writers arriving while a reader holds the sem: count the RMWs each does until it sleeps.
 * 3.10: the xadd and the update that takes the bias off (adding WAITING_BIAS if first).
 * skip_active: none of those; only the WAITING_BIAS of the first writer to queue.
 */
static void test_writer_rmws_before_sleeping(bool skip_active)
{
	static struct rwsem_3_10 sem;
	const char *name = skip_active ? "skip_active" : "3.10";
	init_sem(&sem, false, skip_active);

	rwsem_3_10_down_read(&sem, &threads[0]);
	struct job w1 = { &sem, &threads[1], JOB_WRITE, 0, 0, 0 };
	struct job w2 = { &sem, &threads[2], JOB_WRITE, 0, 0, 0 };

	unsigned long before = rmws();
	pthread_t t1 = start(&w1);
	if (!wait_until(job_sleeps, &w1, "the first writer sleeps"))
		exit(1);
	unsigned long first = rmws() - before;
	CHECK(first == (skip_active ? 1u : 2u), "%s: first writer's RMWs before sleeping: %lu",
	      name, first);
	CHECK(count_of(&sem) == 1 + RWSEM_WAITING_BIAS, "%s: reader + waiters: %#lx", name,
	      (unsigned long)count_of(&sem));

	before = rmws();
	pthread_t t2 = start(&w2);
	if (!wait_until(job_sleeps, &w2, "the second writer sleeps"))
		exit(1);
	unsigned long second = rmws() - before;
	CHECK(second == (skip_active ? 0u : 2u), "%s: queued writer's RMWs before sleeping: %lu",
	      name, second);
	CHECK(count_of(&sem) == 1 + RWSEM_WAITING_BIAS, "%s: still reader + waiters: %#lx", name,
	      (unsigned long)count_of(&sem));

	/* The reader leaves: the first writer takes it, WAITING_BIAS kept for the second. */
	rwsem_3_10_up_read(&sem, &threads[0]);
	if (!wait_until(job_acquired, &w1, "the first writer holds it"))
		exit(1);
	CHECK(w1.count_when_acquired == RWSEM_ACTIVE_WRITE_BIAS + RWSEM_WAITING_BIAS,
	      "%s: writer with a waiter behind: %#lx", name,
	      (unsigned long)w1.count_when_acquired);
	__atomic_store_n(&w1.release, 1, __ATOMIC_RELEASE);
	if (!wait_until(job_acquired, &w2, "the second writer holds it"))
		exit(1);
	CHECK(w2.count_when_acquired == RWSEM_ACTIVE_WRITE_BIAS,
	      "%s: last waiter takes WAITING_BIAS off: %#lx", name,
	      (unsigned long)w2.count_when_acquired);
	__atomic_store_n(&w2.release, 1, __ATOMIC_RELEASE);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	CHECK(count_of(&sem) == 0, "%s: free at the end: %ld", name, count_of(&sem));
}

/* Readers queued behind a writer are granted as a batch up to the next queued writer. */
static void test_reader_batch_grant(void)
{
	static struct rwsem_3_10 sem;
	init_sem(&sem, false, false);

	rwsem_3_10_down_write(&sem, &threads[0]);
	struct job r1 = { &sem, &threads[1], JOB_READ, 0, 0, 0 };
	struct job r2 = { &sem, &threads[2], JOB_READ, 0, 0, 0 };
	struct job w = { &sem, &threads[3], JOB_WRITE, 0, 0, 0 };
	pthread_t t1 = start(&r1);
	if (!wait_until(job_sleeps, &r1, "reader 1 sleeps"))
		exit(1);
	pthread_t t2 = start(&r2);
	if (!wait_until(job_sleeps, &r2, "reader 2 sleeps"))
		exit(1);
	pthread_t t3 = start(&w);
	if (!wait_until(job_sleeps, &w, "the writer sleeps"))
		exit(1);
	CHECK(count_of(&sem) == RWSEM_ACTIVE_WRITE_BIAS + RWSEM_WAITING_BIAS,
	      "writer holds, three wait: %#lx", (unsigned long)count_of(&sem));

	rwsem_3_10_up_write(&sem, &threads[0]);
	if (!wait_until(job_acquired, &r1, "reader 1 holds it") ||
	    !wait_until(job_acquired, &r2, "reader 2 holds it"))
		exit(1);
	CHECK(count_of(&sem) == 2 * RWSEM_ACTIVE_READ_BIAS + RWSEM_WAITING_BIAS,
	      "two readers granted, the writer still waits: %#lx",
	      (unsigned long)count_of(&sem));
	CHECK(!job_acquired(&w), "the writer waits for the readers");
	__atomic_store_n(&r1.release, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&r2.release, 1, __ATOMIC_RELEASE);
	if (!wait_until(job_acquired, &w, "the writer holds it"))
		exit(1);
	CHECK(w.count_when_acquired == RWSEM_ACTIVE_WRITE_BIAS, "the last waiter: %#lx",
	      (unsigned long)w.count_when_acquired);
	__atomic_store_n(&w.release, 1, __ATOMIC_RELEASE);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	pthread_join(t3, NULL);
	CHECK(count_of(&sem) == 0, "free at the end: %ld", count_of(&sem));
}

int main(void)
{
	test_constants();
	test_uncontended_arithmetic();
	test_fast_path_on_an_active_sem();
	test_writer_rmws_before_sleeping(false);
	test_writer_rmws_before_sleeping(true);
	test_reader_batch_grant();
	return check_summary();
}
