/* SPDX-License-Identifier: MIT */
/*
 * interpose-torture - an ordinary pthread program that checks its own shared state, run by
 * tests/test_interpose.py under liblocklab-interpose.so with every lock of the catalogue.
 * It knows nothing of locklab: whatever lock stands behind pthread_mutex_t must keep it right.
 *
 * Checks (rwlock ones too), each failing with one line "torture: FAIL <what>" and exit 1:
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
 *   rwlock     readers check a pair of fields writers move one at a time (a static and an
 *              initialised rwlock; rd/wr, try, timed and clock variants, nested reads);
 *              trywrlock EBUSY and timedwrlock/clockwrlock ETIMEDOUT (no earlier than the
 *              deadline) beside a reader, tryrdlock/timedrdlock beside a writer; EDEADLK;
 *              destroy and re-init; process-shared rwlocks
 *   fork       fork while other threads lock; the child locks the same mutexes and rwlocks.
 *              Under ThreadSanitizer the others pause, outside the lock, across each fork:
 *              its runtime does not support fork while threads run and can deadlock in it
 *              (its maintainers say so in llvm-project PR 96600), as the forking parent
 *              did here, waiting for a lock whose holder was blocked in the runtime. The
 *              pause narrows that to the runtime's own locks
 * Options: --threads N, --iterations N, --rwlock-only (only the rwlock checks),
 * --exclusive-readers (the rwlocks' lock lets one reader in at a time: tryrdlock beside a
 * reader is then EBUSY).
 * A watchdog (alarm) ends a hung run with "torture: FAIL hung" and exit 3.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
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
	static int failing; /* one line: a second thread that fails waits for the first's exit */
	if (__atomic_exchange_n(&failing, 1, __ATOMIC_RELAXED))
		for (;;)
			pause();
	fprintf(stderr, "torture: FAIL %s\n", what);
	fflush(stderr);
	_exit(1);
}

/* The part running now, for the watchdog's line: a hang seen once in a long suite must say
 * where it was. */
static const char *volatile phase = "start";

static void write_all(const char *text)
{
	size_t length = 0;
	while (text[length] != '\0') /* strlen() is not async-signal-safe by the letter */
		length++;
	if (write(2, text, length) < 0)
		_exit(3);
}

static void on_alarm(int sig)
{
	(void)sig;
	write_all("torture: FAIL hung (watchdog) in ");
	write_all(phase);
	write_all("\n");
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

/* ---- rwlock: readers see writers' updates whole ---------------------------------------------- */

/*
 * Writers move `a` and `b` one at a time (non-atomically, a spin between); readers must always
 * see them equal. An "inside" word counts writers (high half) and readers (low half) in the
 * critical section: a writer with company, or a reader beside a writer, is a failure.
 */
struct rw_pair {
	pthread_rwlock_t *lock;
	const char *name;
	long a, b;
	long writes;
	unsigned long inside;
};

#define RW_WRITER_INSIDE (1ul << 32)
static pthread_rwlock_t static_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t dynamic_rwlock;
static struct rw_pair rw_pairs[2] = { { &static_rwlock, "static", 0, 0, 0, 0 },
				      { &dynamic_rwlock, "initialised", 0, 0, 0, 0 } };
static bool exclusive_readers; /* --exclusive-readers: the lock behind rwlocks shares nothing */

static void rw_fail(const struct rw_pair *p, const char *what)
{
	char line[160];
	snprintf(line, sizeof(line), "rwlock: %s (%s rwlock)", what, p->name);
	fail(line);
}

static void rw_read_section(struct rw_pair *p)
{
	unsigned long in = __atomic_add_fetch(&p->inside, 1, __ATOMIC_RELAXED);
	if (in >= RW_WRITER_INSIDE)
		rw_fail(p, "a reader inside beside a writer");
	long a = p->a;
	for (volatile int spin = 0; spin < 30; spin++)
		;
	long b = p->b;
	if (a != b)
		rw_fail(p, "a reader saw a half-done write");
	__atomic_sub_fetch(&p->inside, 1, __ATOMIC_RELAXED);
}

static void rw_write_section(struct rw_pair *p)
{
	if (__atomic_fetch_add(&p->inside, RW_WRITER_INSIDE, __ATOMIC_RELAXED) != 0)
		rw_fail(p, "a writer inside with company");
	p->a++;
	for (volatile int spin = 0; spin < 20; spin++)
		;
	p->b++;
	p->writes++;
	__atomic_sub_fetch(&p->inside, RW_WRITER_INSIDE, __ATOMIC_RELAXED);
}

static void rw_read(struct rw_pair *p, long i)
{
	if (i % 16 == 1) { /* try, then block */
		int err = pthread_rwlock_tryrdlock(p->lock);
		if (err == EBUSY)
			err = pthread_rwlock_rdlock(p->lock);
		check(err, "pthread_rwlock_tryrdlock/rdlock");
	} else if (i % 16 == 2) {
		struct timespec t = deadline_in(CLOCK_REALTIME, 60000);
		check(pthread_rwlock_timedrdlock(p->lock, &t), "pthread_rwlock_timedrdlock");
	} else {
		check(pthread_rwlock_rdlock(p->lock), "pthread_rwlock_rdlock");
	}
	rw_read_section(p);
	/* A read lock taken again (the default kind allows it): only on the static one. */
	if (i % 32 == 3 && p->lock == &static_rwlock) {
		check(pthread_rwlock_rdlock(p->lock), "nested pthread_rwlock_rdlock");
		rw_read_section(p);
		check(pthread_rwlock_unlock(p->lock), "nested pthread_rwlock_unlock");
	}
	check(pthread_rwlock_unlock(p->lock), "pthread_rwlock_unlock (reader)");
}

static void rw_write(struct rw_pair *p, long i)
{
	if (i % 16 == 1) {
		int err = pthread_rwlock_trywrlock(p->lock);
		if (err == EBUSY)
			err = pthread_rwlock_wrlock(p->lock);
		check(err, "pthread_rwlock_trywrlock/wrlock");
	} else if (i % 16 == 2) {
#ifndef __SANITIZE_THREAD__
		struct timespec t = deadline_in(CLOCK_MONOTONIC, 60000);
		check(pthread_rwlock_clockwrlock(p->lock, CLOCK_MONOTONIC, &t),
		      "pthread_rwlock_clockwrlock");
#else /* GCC 12's TSAN does not intercept the clock variants: it would miss this lock */
		struct timespec t = deadline_in(CLOCK_REALTIME, 60000);
		check(pthread_rwlock_timedwrlock(p->lock, &t), "pthread_rwlock_timedwrlock");
#endif
	} else {
		check(pthread_rwlock_wrlock(p->lock), "pthread_rwlock_wrlock");
	}
	rw_write_section(p);
	check(pthread_rwlock_unlock(p->lock), "pthread_rwlock_unlock (writer)");
}

static void *rw_thread(void *arg)
{
	long id = (long)arg;
	bool writer = id % 2 == 0; /* half the threads mostly write, half only read */
	for (long i = 0; i < iterations; i++) {
		struct rw_pair *p = &rw_pairs[(i + id) % 2];
		if (writer && i % 4 == 0)
			rw_write(p, i / 4);
		else
			rw_read(p, i);
	}
	return NULL;
}

static void test_rwlock_consistency(void)
{
	pthread_t threads[64];
	int n = nthreads > 1 ? nthreads : 2;
	pthread_rwlockattr_t attr;
	check(pthread_rwlockattr_init(&attr), "rwlockattr_init");
	/* The kind is glibc's; a lab lock's own policy replaces it. */
	check(pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP),
	      "rwlockattr_setkind_np");
	check(pthread_rwlock_init(&dynamic_rwlock, &attr), "pthread_rwlock_init");
	pthread_rwlockattr_destroy(&attr);
	spawn(threads, n, rw_thread);
	join(threads, n);
	long writes = 0;
	for (long id = 0; id < n; id += 2)
		for (long i = 0; i < iterations; i += 4)
			writes++;
	for (int k = 0; k < 2; k++)
		if (rw_pairs[k].a != rw_pairs[k].b)
			rw_fail(&rw_pairs[k], "the pair differs at the end");
	if (rw_pairs[0].writes + rw_pairs[1].writes != writes)
		fail("rwlock: lost updates: the writes under the rwlocks are short");
}

/* ---- rwlock: try and timed acquisitions against a holder ------------------------------------ */

static pthread_rwlock_t held_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static bool holder_writes;

static void *rw_holder(void *arg)
{
	(void)arg;
	if (holder_writes)
		check(pthread_rwlock_wrlock(&held_rwlock), "holder wrlock");
	else
		check(pthread_rwlock_rdlock(&held_rwlock), "holder rdlock");
	gate_set(1);
	gate_wait(2);
	check(pthread_rwlock_unlock(&held_rwlock), "holder rwlock unlock");
	return NULL;
}

/* One timed acquisition that must time out: not before its deadline, not absurdly late. */
static void expect_timeout(bool write, clockid_t clock, long ms, const char *what)
{
	double start = now_s(clock);
	struct timespec deadline = deadline_in(clock, ms);
	double deadline_s = (double)deadline.tv_sec + (double)deadline.tv_nsec * 1e-9;
	int err;
	if (clock == CLOCK_REALTIME)
		err = write ? pthread_rwlock_timedwrlock(&held_rwlock, &deadline)
			    : pthread_rwlock_timedrdlock(&held_rwlock, &deadline);
	else
		err = write ? pthread_rwlock_clockwrlock(&held_rwlock, clock, &deadline)
			    : pthread_rwlock_clockrdlock(&held_rwlock, clock, &deadline);
	double end = now_s(clock);
	char line[160];
	if (err != ETIMEDOUT) {
		snprintf(line, sizeof(line), "rwlock: %s returned %s, not ETIMEDOUT", what,
			 strerror(err));
		fail(line);
	}
	if (end < deadline_s) {
		snprintf(line, sizeof(line), "rwlock: %s timed out before its deadline", what);
		fail(line);
	}
	if (end - start > 10.0) {
		snprintf(line, sizeof(line), "rwlock: %s returned far (> 10 s) after it", what);
		fail(line);
	}
}

static void test_rwlock_try_and_timed(void)
{
	pthread_t t;

	/* A reader holds it. */
	holder_writes = false;
	gate_state = 0;
	spawn(&t, 1, rw_holder);
	gate_wait(1);
	if (pthread_rwlock_trywrlock(&held_rwlock) != EBUSY)
		fail("rwlock: trywrlock did not return EBUSY while a reader holds it");
	expect_timeout(true, CLOCK_REALTIME, 1, "timedwrlock (1 ms) against a reader");
	expect_timeout(true, CLOCK_REALTIME, 30, "timedwrlock (30 ms) against a reader");
	expect_timeout(true, CLOCK_MONOTONIC, 20, "clockwrlock (monotonic, 20 ms) against a reader");
	struct timespec bad = { .tv_sec = 0, .tv_nsec = 2000000000L };
	if (pthread_rwlock_timedwrlock(&held_rwlock, &bad) != EINVAL)
		fail("rwlock: an invalid deadline on a held rwlock did not give EINVAL");
	if (!exclusive_readers) { /* readers share it */
		check(pthread_rwlock_tryrdlock(&held_rwlock), "tryrdlock beside a reader");
		check(pthread_rwlock_unlock(&held_rwlock), "unlock after tryrdlock");
		struct timespec later = deadline_in(CLOCK_REALTIME, 5000);
		check(pthread_rwlock_timedrdlock(&held_rwlock, &later), "timedrdlock beside a reader");
		check(pthread_rwlock_unlock(&held_rwlock), "unlock after timedrdlock");
	} else if (pthread_rwlock_tryrdlock(&held_rwlock) != EBUSY) {
		fail("rwlock: tryrdlock did not return EBUSY while a reader holds it (exclusive)");
	}
	gate_set(2);
	join(&t, 1);

	/* A writer holds it. */
	holder_writes = true;
	gate_state = 0;
	spawn(&t, 1, rw_holder);
	gate_wait(1);
	if (pthread_rwlock_tryrdlock(&held_rwlock) != EBUSY)
		fail("rwlock: tryrdlock did not return EBUSY while a writer holds it");
	if (pthread_rwlock_trywrlock(&held_rwlock) != EBUSY)
		fail("rwlock: trywrlock did not return EBUSY while a writer holds it");
	expect_timeout(false, CLOCK_REALTIME, 20, "timedrdlock (20 ms) against a writer");
	expect_timeout(false, CLOCK_MONOTONIC, 20, "clockrdlock (monotonic, 20 ms) against a writer");
	gate_set(2);
	join(&t, 1);

	/* Free again. */
	struct timespec later = deadline_in(CLOCK_REALTIME, 5000);
	check(pthread_rwlock_timedwrlock(&held_rwlock, &later), "timedwrlock on a free rwlock");
#ifndef __SANITIZE_THREAD__ /* TSAN reports the misuse itself */
	if (pthread_rwlock_wrlock(&held_rwlock) != EDEADLK)
		fail("rwlock: wrlock by its writer did not report EDEADLK");
#endif
	check(pthread_rwlock_unlock(&held_rwlock), "unlock after timedwrlock");
	check(pthread_rwlock_trywrlock(&held_rwlock), "trywrlock on a free rwlock");
	check(pthread_rwlock_unlock(&held_rwlock), "unlock after trywrlock");
	check(pthread_rwlock_tryrdlock(&held_rwlock), "tryrdlock on a free rwlock");
	check(pthread_rwlock_unlock(&held_rwlock), "unlock after tryrdlock");

	/* Destroyed and initialised again at the same address: works as new. */
	pthread_rwlock_t reused;
	for (int i = 0; i < 3; i++) {
		check(pthread_rwlock_init(&reused, NULL), "init reused rwlock");
		check(pthread_rwlock_wrlock(&reused), "wrlock reused");
		check(pthread_rwlock_unlock(&reused), "unlock reused");
		check(pthread_rwlock_rdlock(&reused), "rdlock reused");
		check(pthread_rwlock_unlock(&reused), "unlock reused");
		check(pthread_rwlock_destroy(&reused), "destroy reused rwlock");
	}
	/* Process-shared: the C library's, and still a rwlock. */
	pthread_rwlockattr_t attr;
	pthread_rwlock_t shared;
	check(pthread_rwlockattr_init(&attr), "rwlockattr_init");
	check(pthread_rwlockattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), "setpshared");
	check(pthread_rwlock_init(&shared, &attr), "init pshared rwlock");
	pthread_rwlockattr_destroy(&attr);
	check(pthread_rwlock_wrlock(&shared), "wrlock pshared");
	if (pthread_rwlock_tryrdlock(&shared) != EBUSY)
		fail("rwlock: a process-shared rwlock let a reader in beside its writer");
	check(pthread_rwlock_unlock(&shared), "unlock pshared");
	check(pthread_rwlock_destroy(&shared), "destroy pshared rwlock");
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

#ifdef __SANITIZE_THREAD__
static int pause_requested, paused_threads;

/* Outside the lock until the fork is done; counted, so the fork waits for every one. */
static void pause_while_forking(void)
{
	if (!__atomic_load_n(&pause_requested, __ATOMIC_ACQUIRE))
		return;
	__atomic_fetch_add(&paused_threads, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&pause_requested, __ATOMIC_ACQUIRE))
		usleep(100);
	__atomic_fetch_sub(&paused_threads, 1, __ATOMIC_ACQ_REL);
}

static void pause_busy_threads(int n)
{
	__atomic_store_n(&pause_requested, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&paused_threads, __ATOMIC_ACQUIRE) < n)
		usleep(100);
}

/* Every one out of its pause before the next is asked for: a stale count is no pause. */
static void resume_busy_threads(void)
{
	__atomic_store_n(&pause_requested, 0, __ATOMIC_RELEASE);
	while (__atomic_load_n(&paused_threads, __ATOMIC_ACQUIRE) > 0)
		usleep(100);
}
#else
static void pause_while_forking(void) {}
static void pause_busy_threads(int n) { (void)n; }
static void resume_busy_threads(void) {}
#endif

static void *busy_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_busy, __ATOMIC_RELAXED)) {
		critical(&static_mutex, &inside_static, &counter_static, "static (fork)");
		pause_while_forking();
	}
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
		pause_busy_threads(n);
		pid_t pid = fork();
		if (pid != 0)
			resume_busy_threads();
		if (pid < 0)
			fail("fork failed");
		if (pid == 0) {
			alarm(20);
			for (int i = 0; i < 1000; i++) {
				critical(&static_mutex, &inside_static, &counter_static, "static (child)");
				critical(&dynamic_mutex, &inside_dynamic, &counter_dynamic, "child");
				rw_write(&rw_pairs[i % 2], i);
				rw_read(&rw_pairs[i % 2], i);
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
	bool rwlock_only = false, usage = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--rwlock-only") == 0)
			rwlock_only = true;
		else if (strcmp(argv[i], "--exclusive-readers") == 0)
			exclusive_readers = true;
		else if (i + 1 < argc && strcmp(argv[i], "--threads") == 0)
			nthreads = atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--iterations") == 0)
			iterations = atol(argv[++i]);
		else
			usage = true;
	}
	if (usage || nthreads < 1 || nthreads > 64 || iterations < 1) {
		fprintf(stderr, "usage: %s [--threads 1..64] [--iterations N] [--rwlock-only] "
				"[--exclusive-readers]\n", argv[0]);
		return 2;
	}
	signal(SIGALRM, on_alarm);
	alarm(100);
	phase = "rwlock consistency";
	test_rwlock_consistency();
	phase = "rwlock try and timed";
	test_rwlock_try_and_timed();
	if (rwlock_only) {
		printf("torture: ok (rwlocks only, %d threads, %ld iterations)\n", nthreads, iterations);
		return 0;
	}
	phase = "counter";
	test_counter();
	phase = "queue";
	test_queue();
	phase = "try and timed";
	test_try_and_timed();
	phase = "types";
	test_types();
	phase = "churn";
	test_churn();
	phase = "fork";
	test_fork();
	printf("torture: ok (%d threads, %ld iterations)\n", nthreads, iterations);
	return 0;
}
