/* SPDX-License-Identifier: MIT */
/*
 * interpose-torture - an ordinary pthread program that checks its own shared state, run by
 * tests/test_interpose.py under liblocklab-interpose.so with every lock of the catalogue.
 * It knows nothing of locklab: whatever lock stands behind pthread_mutex_t must keep it right.
 *
 * Checks, each failing with one line "torture: FAIL <what>" and exit 1:
 *   counter    threads increment a plain counter under a PTHREAD_MUTEX_INITIALIZER mutex and
 *              one from pthread_mutex_init; an "inside" count catches two holders at once;
 *              the total catches lost updates
 *   queue      producers/consumers on a bounded ring with two condition variables (signal,
 *              broadcast, timedwait); every item is consumed exactly once, the ring's count
 *              stays in bounds
 *   trylock    EBUSY while another thread holds the mutex, 0 once it is free
 *   timedlock  ETIMEDOUT no earlier than the deadline while held; 0 once free;
 *              cond_timedwait times out no earlier than its deadline and returns holding
 *   types      recursive and error-checking mutexes keep their semantics
 *   churn      many short-lived threads each lock once (per-thread contexts are recycled)
 *   fork       fork while other threads lock; the child locks the same mutexes
 * A watchdog (alarm) ends a hung run with "torture: FAIL hung" and exit 3.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int nthreads = 4;
static long iterations = 20000;

static void fail(const char *what) __attribute__((noreturn));
static void fail(const char *what)
{
	fprintf(stderr, "torture: FAIL %s\n", what);
	fflush(stderr);
	_exit(1);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "torture: FAIL hung (watchdog)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void check(int err, const char *what)
{
	if (err != 0) {
		char line[160];
		snprintf(line, sizeof(line), "%s returned %s", what, strerror(err));
		fail(line);
	}
}

static void spawn(pthread_t *threads, int n, void *(*fn)(void *))
{
	for (long i = 0; i < n; i++)
		check(pthread_create(&threads[i], NULL, fn, (void *)i), "pthread_create");
}

static void join(pthread_t *threads, int n)
{
	for (int i = 0; i < n; i++)
		check(pthread_join(threads[i], NULL), "pthread_join");
}

static double now_s(clockid_t clock)
{
	struct timespec t;
	clock_gettime(clock, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct timespec deadline_in(clockid_t clock, long ms)
{
	struct timespec t;
	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* ---- counter: mutual exclusion and lost updates ------------------------------------------- */

static pthread_mutex_t static_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dynamic_mutex;
static int inside_static, inside_dynamic; /* atomics: who is in the critical section */
static long counter_static, counter_dynamic; /* plain: the lock must order them */

static void critical(pthread_mutex_t *m, int *inside, long *counter, const char *name)
{
	check(pthread_mutex_lock(m), "pthread_mutex_lock");
	if (__atomic_fetch_add(inside, 1, __ATOMIC_RELAXED) != 0) {
		char line[120];
		snprintf(line, sizeof(line), "mutual exclusion: two threads inside the %s mutex", name);
		fail(line);
	}
	long value = *counter;
	for (volatile int spin = 0; spin < 20; spin++)
		;
	*counter = value + 1;
	__atomic_fetch_sub(inside, 1, __ATOMIC_RELAXED);
	check(pthread_mutex_unlock(m), "pthread_mutex_unlock");
}

static void *counter_thread(void *arg)
{
	(void)arg;
	for (long i = 0; i < iterations; i++) {
		critical(&static_mutex, &inside_static, &counter_static, "static");
		critical(&dynamic_mutex, &inside_dynamic, &counter_dynamic, "initialised");
		if (i % 64 == 0) { /* nested: two locks held at once */
			check(pthread_mutex_lock(&static_mutex), "nested lock");
			critical(&dynamic_mutex, &inside_dynamic, &counter_dynamic, "nested");
			counter_static++;
			check(pthread_mutex_unlock(&static_mutex), "nested unlock");
		}
	}
	return NULL;
}

static void test_counter(void)
{
	pthread_t threads[64];
	check(pthread_mutex_init(&dynamic_mutex, NULL), "pthread_mutex_init");
	spawn(threads, nthreads, counter_thread);
	join(threads, nthreads);
	long nested = (iterations + 63) / 64;
	if (counter_static != nthreads * (iterations + nested) ||
	    counter_dynamic != nthreads * (iterations + nested))
		fail("lost updates: a counter under the mutex is short");
}

/* ---- queue: producer/consumer with condition variables ------------------------------------- */

#define RING 8
static pthread_mutex_t ring_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty;
static long ring[RING];
static int ring_head, ring_count, producers_left;
static long consumed_sum, consumed_count;
static unsigned char *seen;

static void *producer(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < iterations; i++) {
		long item = id * iterations + i;
		check(pthread_mutex_lock(&ring_mutex), "lock ring");
		while (ring_count == RING)
			check(pthread_cond_wait(&not_full, &ring_mutex), "cond_wait not_full");
		if (ring_count < 0 || ring_count >= RING)
			fail("queue: ring count out of bounds on put");
		ring[(ring_head + ring_count) % RING] = item;
		ring_count++;
		check(pthread_cond_signal(&not_empty), "cond_signal");
		check(pthread_mutex_unlock(&ring_mutex), "unlock ring");
	}
	check(pthread_mutex_lock(&ring_mutex), "lock ring");
	if (--producers_left == 0)
		check(pthread_cond_broadcast(&not_empty), "cond_broadcast");
	check(pthread_mutex_unlock(&ring_mutex), "unlock ring");
	return NULL;
}

static void *consumer(void *arg)
{
	long id = (long)arg;
	check(pthread_mutex_lock(&ring_mutex), "lock ring");
	for (;;) {
		while (ring_count == 0 && producers_left > 0) {
			if (id == 0) { /* one consumer waits with a (generous) deadline */
				struct timespec t = deadline_in(CLOCK_REALTIME, 2000);
				int err = pthread_cond_timedwait(&not_empty, &ring_mutex, &t);
				if (err != 0 && err != ETIMEDOUT)
					check(err, "cond_timedwait");
			} else {
				check(pthread_cond_wait(&not_empty, &ring_mutex), "cond_wait not_empty");
			}
		}
		if (ring_count == 0)
			break;
		if (ring_count < 0 || ring_count > RING)
			fail("queue: ring count out of bounds on get");
		long item = ring[ring_head];
		ring_head = (ring_head + 1) % RING;
		ring_count--;
		if (seen[item])
			fail("queue: an item was consumed twice");
		seen[item] = 1;
		consumed_sum += item;
		consumed_count++;
		check(pthread_cond_signal(&not_full), "cond_signal");
	}
	check(pthread_mutex_unlock(&ring_mutex), "unlock ring");
	return NULL;
}

static void test_queue(void)
{
	int np = nthreads / 2 > 0 ? nthreads / 2 : 1, nc = nthreads - np > 0 ? nthreads - np : 1;
	pthread_t prod[64], cons[64];
	pthread_condattr_t attr;
	check(pthread_condattr_init(&attr), "condattr_init");
	check(pthread_cond_init(&not_empty, &attr), "pthread_cond_init");
	pthread_condattr_destroy(&attr);
	seen = calloc((size_t)(np * iterations), 1);
	producers_left = np;
	spawn(cons, nc, consumer);
	spawn(prod, np, producer);
	join(prod, np);
	join(cons, nc);
	long n = np * iterations;
	if (consumed_count != n || consumed_sum != n * (n - 1) / 2)
		fail("queue: items lost or duplicated");
	pthread_cond_destroy(&not_empty);
	free(seen);
}

/* ---- trylock and timed locks ----------------------------------------------------------------- */

static pthread_mutex_t held_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gate_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_state; /* 0: holder starting, 1: holder holds, 2: holder may release */

static void gate_set(int state)
{
	check(pthread_mutex_lock(&gate_mutex), "lock gate");
	gate_state = state;
	check(pthread_cond_broadcast(&gate_cond), "broadcast gate");
	check(pthread_mutex_unlock(&gate_mutex), "unlock gate");
}

static void gate_wait(int state)
{
	check(pthread_mutex_lock(&gate_mutex), "lock gate");
	while (gate_state != state)
		check(pthread_cond_wait(&gate_cond, &gate_mutex), "wait gate");
	check(pthread_mutex_unlock(&gate_mutex), "unlock gate");
}

static void *holder(void *arg)
{
	(void)arg;
	check(pthread_mutex_lock(&held_mutex), "holder lock");
	gate_set(1);
	gate_wait(2);
	check(pthread_mutex_unlock(&held_mutex), "holder unlock");
	return NULL;
}

static void test_try_and_timed(void)
{
	pthread_t t;
	gate_state = 0;
	spawn(&t, 1, holder);
	gate_wait(1);
	if (pthread_mutex_trylock(&held_mutex) != EBUSY)
		fail("trylock: did not return EBUSY on a held mutex");
	const long timeout_ms[] = { 1, 30 };
	for (int i = 0; i < 2; i++) {
		double start = now_s(CLOCK_REALTIME);
		struct timespec deadline = deadline_in(CLOCK_REALTIME, timeout_ms[i]);
		double deadline_s = (double)deadline.tv_sec + (double)deadline.tv_nsec * 1e-9;
		int err = pthread_mutex_timedlock(&held_mutex, &deadline);
		double end = now_s(CLOCK_REALTIME);
		if (err != ETIMEDOUT)
			fail("timedlock: a held mutex did not time out");
		if (end < deadline_s)
			fail("timedlock: returned ETIMEDOUT before the deadline");
		if (end - start > 10.0)
			fail("timedlock: returned far (> 10 s) after the deadline");
	}
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 2000000000L };
	if (pthread_mutex_timedlock(&held_mutex, &bad) != EINVAL)
		fail("timedlock: an invalid deadline on a held mutex did not give EINVAL");
	gate_set(2);
	join(&t, 1);
	struct timespec later = deadline_in(CLOCK_REALTIME, 5000);
	check(pthread_mutex_timedlock(&held_mutex, &later), "timedlock on a free mutex");
	check(pthread_mutex_unlock(&held_mutex), "unlock after timedlock");
	check(pthread_mutex_trylock(&held_mutex), "trylock on a free mutex");
	check(pthread_mutex_unlock(&held_mutex), "unlock after trylock");

	/* cond_timedwait on a monotonic clock: nobody signals, so it must time out, holding. */
	pthread_condattr_t attr;
	pthread_cond_t cond;
	check(pthread_condattr_init(&attr), "condattr_init");
	check(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), "condattr_setclock");
	check(pthread_cond_init(&cond, &attr), "cond_init monotonic");
	check(pthread_mutex_lock(&held_mutex), "lock for timedwait");
	struct timespec deadline = deadline_in(CLOCK_MONOTONIC, 20);
	double deadline_s = (double)deadline.tv_sec + (double)deadline.tv_nsec * 1e-9;
	int err;
	do
		err = pthread_cond_timedwait(&cond, &held_mutex, &deadline);
	while (err == 0); /* spurious wake-ups are allowed */
	if (err != ETIMEDOUT)
		fail("cond_timedwait: did not time out");
	if (now_s(CLOCK_MONOTONIC) < deadline_s)
		fail("cond_timedwait: timed out before the deadline");
	if (pthread_mutex_trylock(&held_mutex) != EBUSY) /* normal mutex: held by us */
		fail("cond_timedwait: returned without the mutex");
	check(pthread_mutex_unlock(&held_mutex), "unlock after timedwait");
	pthread_cond_destroy(&cond);
	pthread_condattr_destroy(&attr);
}

/* ---- mutex types passed through ------------------------------------------------------------- */

static void test_types(void)
{
	pthread_mutexattr_t attr;
	pthread_mutex_t recursive, errorcheck;
	check(pthread_mutexattr_init(&attr), "mutexattr_init");
	check(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE), "settype recursive");
	check(pthread_mutex_init(&recursive, &attr), "init recursive");
	check(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK), "settype errorcheck");
	check(pthread_mutex_init(&errorcheck, &attr), "init errorcheck");
	pthread_mutexattr_destroy(&attr);
	check(pthread_mutex_lock(&recursive), "recursive lock");
	check(pthread_mutex_lock(&recursive), "recursive lock again");
	check(pthread_mutex_unlock(&recursive), "recursive unlock");
	check(pthread_mutex_unlock(&recursive), "recursive unlock again");
	check(pthread_mutex_lock(&errorcheck), "errorcheck lock");
#ifndef __SANITIZE_THREAD__ /* TSAN reports the misuse itself: these checks are for opt */
	if (pthread_mutex_lock(&errorcheck) != EDEADLK)
		fail("types: an error-checking mutex did not report EDEADLK");
#endif
	check(pthread_mutex_unlock(&errorcheck), "errorcheck unlock");
#ifndef __SANITIZE_THREAD__
	if (pthread_mutex_unlock(&errorcheck) != EPERM)
		fail("types: an error-checking mutex did not report EPERM");
#endif
	check(pthread_mutex_destroy(&recursive), "destroy recursive");
	check(pthread_mutex_destroy(&errorcheck), "destroy errorcheck");
	/* A mutex destroyed and initialised again at the same address works as new. */
	pthread_mutex_t reused;
	for (int i = 0; i < 3; i++) {
		check(pthread_mutex_init(&reused, NULL), "init reused");
		check(pthread_mutex_lock(&reused), "lock reused");
		check(pthread_mutex_unlock(&reused), "unlock reused");
		check(pthread_mutex_destroy(&reused), "destroy reused");
	}
}

/* ---- churn: more threads over time than lock contexts at once ------------------------------ */

static void *churn_thread(void *arg)
{
	(void)arg;
	critical(&static_mutex, &inside_static, &counter_static, "static (churn)");
	return NULL;
}

static void test_churn(void)
{
	long before = counter_static;
	for (int round = 0; round < 50; round++) {
		pthread_t threads[4];
		spawn(threads, 4, churn_thread);
		join(threads, 4);
	}
	if (counter_static != before + 200)
		fail("churn: lost updates");
}

/* ---- fork in a threaded program -------------------------------------------------------------- */

static int stop_busy;

static void *busy_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_busy, __ATOMIC_RELAXED))
		critical(&static_mutex, &inside_static, &counter_static, "static (fork)");
	return NULL;
}

static void before_fork(void) { pthread_mutex_lock(&static_mutex); }
static void after_fork(void) { pthread_mutex_unlock(&static_mutex); }

static void test_fork(void)
{
	pthread_t threads[64];
	int n = nthreads > 1 ? nthreads : 2;
	check(pthread_atfork(before_fork, after_fork, after_fork), "pthread_atfork");
	spawn(threads, n, busy_thread);
	for (int round = 0; round < 5; round++) {
		pid_t pid = fork();
		if (pid < 0)
			fail("fork failed");
		if (pid == 0) {
			alarm(20);
			for (int i = 0; i < 1000; i++) {
				critical(&static_mutex, &inside_static, &counter_static, "static (child)");
				critical(&dynamic_mutex, &inside_dynamic, &counter_dynamic, "child");
			}
			_exit(0);
		}
		int status;
		if (waitpid(pid, &status, 0) != pid)
			fail("fork: waitpid failed");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail("fork: the child failed or hung");
	}
	__atomic_store_n(&stop_busy, 1, __ATOMIC_RELAXED);
	join(threads, n);
}

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--threads") == 0)
			nthreads = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--iterations") == 0)
			iterations = atol(argv[i + 1]);
	}
	if (nthreads < 1 || nthreads > 64 || iterations < 1) {
		fprintf(stderr, "usage: %s [--threads 1..64] [--iterations N]\n", argv[0]);
		return 2;
	}
	signal(SIGALRM, on_alarm);
	alarm(100);
	test_counter();
	test_queue();
	test_try_and_timed();
	test_types();
	test_churn();
	test_fork();
	printf("torture: ok (%d threads, %ld iterations)\n", nthreads, iterations);
	return 0;
}
