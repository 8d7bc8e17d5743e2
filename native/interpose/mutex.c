/* SPDX-License-Identifier: MIT */
/*
 * pthread_mutex_*: a mutex's side-table entry, the lab lock behind it (with the trylock gate
 * for locks without trylock), timed locks, and the exported symbols.
 */
#include <errno.h>
#include <string.h>

#include "interpose.h"

/* ---- the mutexes' side table ---------------------------------------------------------------- */

static u32 classify(const void *addr, int *glibc_kind)
{
	int kind = ((const pthread_mutex_t *)addr)->__data.__kind;
	*glibc_kind = kind;
	if (mode == MODE_PASS)
		return ENTRY_PASS;
	if ((kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE ||
	    (kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_ERRORCHECK ||
	    (kind & (KIND_ROBUST | KIND_PRIO_INHERIT | KIND_PRIO_PROTECT | KIND_PSHARED)))
		return ENTRY_PASS;
	return ENTRY_LAB; /* normal, default and adaptive mutexes */
}

static void lab_init(struct mutex_entry *e)
{
	e->occupancy = 0;
	e->owner = NULL;
	lab_lock_init(ops, &init_args, e->side.lab, "lock '%s' failed to initialise a mutex");
}

static void mutex_entry_start(struct side_entry *side, const void *addr)
{
	struct mutex_entry *e = (struct mutex_entry *)side;
	side->kind = classify(addr, &e->glibc_kind);
	if (side->kind == ENTRY_LAB)
		lab_init(e);
}

struct side_table mutexes = {
	.what = "a mutex",
	.entry_size = sizeof(struct mutex_entry),
	.ops = &ops,
	.start = mutex_entry_start,
};
_Static_assert(offsetof(struct mutex_entry, side) == 0, "a side_entry * is a mutex_entry *");

static inline struct mutex_entry *entry_lookup(const pthread_mutex_t *m)
{
	return (struct mutex_entry *)side_lookup(&mutexes, m);
}

/* The entry of `m`; (re)built when `fresh` (pthread_mutex_init) or after a destroy. */
static inline struct mutex_entry *entry_get(pthread_mutex_t *m, bool fresh)
{
	return (struct mutex_entry *)side_get(&mutexes, m, fresh);
}

/* Counters live in the entry and are written by the holder only: no atomic RMW needed. */
static inline void count(struct mutex_entry *e, bool contended)
{
	if (!stats_wanted)
		return;
	__atomic_store_n(&e->acquisitions, __atomic_load_n(&e->acquisitions, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	if (contended)
		__atomic_store_n(&e->contended,
				 __atomic_load_n(&e->contended, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

/* ---- the lab lock as a mutex ---------------------------------------------------------------- */

/*
 * The catalogue's pthread_rwlock as the mutex lock calls pthread_rwlock_*, which are ours now:
 * in_lab_setup sends those calls straight to the C library.
 */
static void libc_rwlock_call(void (*fn)(void *, struct lock_thread *), void *lab,
			     struct lock_thread *self)
{
	in_lab_setup = true;
	fn(lab, self);
	in_lab_setup = false;
}

static inline void lab_lock(struct mutex_entry *e, struct lock_thread *self)
{
	if (ops->trylock == NULL)
		__atomic_fetch_add(&e->occupancy, 1, __ATOMIC_SEQ_CST);
	if (unlikely(mutex_lock_is_libc_rwlock))
		libc_rwlock_call(ops->lock, e->side.lab, self);
	else
		ops->lock(e->side.lab, self);
}

static inline bool lab_trylock(struct mutex_entry *e, struct lock_thread *self)
{
	if (unlikely(mutex_lock_is_libc_rwlock)) {
		in_lab_setup = true;
		bool taken = ops->trylock(e->side.lab, self);
		in_lab_setup = false;
		return taken;
	}
	if (ops->trylock != NULL)
		return ops->trylock(e->side.lab, self);
	/* Nobody is in lock(), holds, or is in unlock(): the lock is free and lock() won't wait. */
	u32 zero = 0;
	if (!__atomic_compare_exchange_n(&e->occupancy, &zero, 1, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_RELAXED))
		return false;
	ops->lock(e->side.lab, self);
	return true;
}

static inline void lab_unlock(struct mutex_entry *e, struct lock_thread *self)
{
	if (unlikely(mutex_lock_is_libc_rwlock))
		libc_rwlock_call(ops->unlock, e->side.lab, self);
	else
		ops->unlock(e->side.lab, self);
	if (ops->trylock == NULL)
		__atomic_fetch_sub(&e->occupancy, 1, __ATOMIC_SEQ_CST);
}

/* ---- timed locks (rwlock.c's too) ----------------------------------------------------------- */

static bool deadline_passed(clockid_t clock, const struct timespec *deadline, long *left_ns)
{
	struct timespec now;
	clock_gettime(clock, &now);
	if (now.tv_sec > deadline->tv_sec ||
	    (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec))
		return true;
	long long left = (long long)(deadline->tv_sec - now.tv_sec) * 1000000000LL +
			 (deadline->tv_nsec - now.tv_nsec);
	*left_ns = left > 1000000000LL ? 1000000000L : (long)left;
	return false;
}

/*
 * Retry attempt(arg) with a bounded sleeping backoff until it succeeds (true) or the deadline
 * has passed on `clock` (false; one last attempt once it has). The deadline must be valid.
 */
bool poll_until(clockid_t clock, const struct timespec *deadline, bool (*attempt)(void *),
		void *arg)
{
	long left_ns = 0, backoff_ns = 1000;
	for (;;) {
		if (deadline_passed(clock, deadline, &left_ns))
			return attempt(arg);
		struct timespec nap = { 0, backoff_ns < left_ns ? backoff_ns : left_ns };
		nanosleep(&nap, NULL);
		if (backoff_ns < 1000000)
			backoff_ns *= 2;
		if (attempt(arg))
			return true;
	}
}

/* ---- a mutex's lock and unlock (cond.c's waits too) ----------------------------------------- */

struct mutex_attempt {
	struct mutex_entry *e;
	struct lock_thread *self;
};

static bool mutex_attempt(void *arg)
{
	struct mutex_attempt *a = arg;
	return lab_trylock(a->e, a->self);
}

/* Lock `m` (deadline NULL: wait for ever). Returns 0, ETIMEDOUT or EINVAL. */
int do_lock(pthread_mutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	struct mutex_entry *e = entry_get(m, false);
	if (e->side.kind == ENTRY_PASS) {
		int err = deadline == NULL ? real.mutex_lock(m)
			  : clock == CLOCK_REALTIME || real.mutex_clocklock == NULL
				  ? real.mutex_timedlock(m, deadline)
				  : real.mutex_clocklock(m, clock, deadline);
		if (err == 0)
			count(e, false);
		return err;
	}
	struct slot *s = slot_take();
	bool contended = false;
	if (deadline != NULL) {
		if (!lab_trylock(e, &s->lt)) {
			contended = true;
			if (!timespec_valid(deadline)) {
				slot_put(&s->lt);
				return EINVAL;
			}
			struct mutex_attempt a = { e, &s->lt };
			if (!poll_until(clock, deadline, mutex_attempt, &a)) {
				slot_put(&s->lt);
				return ETIMEDOUT;
			}
		}
	} else if (stats_wanted) {
		if (!lab_trylock(e, &s->lt)) {
			contended = true;
			lab_lock(e, &s->lt);
		}
	} else {
		lab_lock(e, &s->lt);
	}
	e->owner = &s->lt;
	count(e, contended);
	return 0;
}

int do_unlock(pthread_mutex_t *m)
{
	struct mutex_entry *e = entry_lookup(m);
	if (e == NULL || e->side.kind == ENTRY_PASS)
		return real.mutex_unlock(m);
	struct lock_thread *owner = e->owner;
	if (owner == NULL)
		return EPERM; /* not locked */
	e->owner = NULL;
	lab_unlock(e, owner);
	note_nodes_migrate(owner, &mutexes.nodes_migrate);
	slot_put(owner);
	return 0;
}

/* ---- interposed: mutexes -------------------------------------------------------------------- */

static int ll_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
	if (!ensure_ready())
		return 0;
	int err = real.mutex_init(m, attr);
	if (err == 0 && (mode == MODE_LAB || stats_wanted) && !in_lab_setup)
		entry_get(m, true);
	return err;
}

static int ll_mutex_destroy(pthread_mutex_t *m)
{
	if (!ensure_ready())
		return 0;
	if ((mode == MODE_LAB || stats_wanted) && !in_lab_setup) {
		struct mutex_entry *e = entry_lookup(m);
		if (e != NULL && e->side.live) {
			if (e->side.kind == ENTRY_LAB && e->owner != NULL)
				return EBUSY;
			side_retire(&mutexes, &e->side);
		}
	}
	return real.mutex_destroy(m);
}

static int ll_mutex_lock(pthread_mutex_t *m)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_lock(m);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_lock(m);
	return do_lock(m, CLOCK_REALTIME, NULL);
}

static int ll_mutex_trylock(pthread_mutex_t *m)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_trylock(m);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_trylock(m);
	struct mutex_entry *e = entry_get(m, false);
	if (e->side.kind == ENTRY_PASS) {
		int err = real.mutex_trylock(m);
		if (err == 0)
			count(e, false);
		return err;
	}
	struct slot *s = slot_take();
	if (!lab_trylock(e, &s->lt)) {
		slot_put(&s->lt);
		return EBUSY;
	}
	e->owner = &s->lt;
	count(e, false);
	return 0;
}

static int ll_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *t)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_clocklock(m, clock, t);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_clocklock(m, clock, t);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return do_lock(m, clock, t);
}

static int ll_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_timedlock(m, t);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_timedlock(m, t);
	return do_lock(m, CLOCK_REALTIME, t);
}

static int ll_mutex_unlock(pthread_mutex_t *m)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_unlock(m);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_unlock(m);
	return do_unlock(m);
}

/* fork.c's child handler: `e`, which the forking thread holds, rebuilt held by it again. */
void mutex_rebuild_for_child(struct mutex_entry *e)
{
	struct lock_thread *owner = e->owner;
	side_lab_destroy(&mutexes, &e->side);
	lab_init(e);
	lab_lock(e, owner);
	e->owner = owner;
}

/* ---- symbols, with glibc's versions (see interpose.map) ------------------------------------- */

ALIAS(ll_mutex_init, ll_mutex_init_v225)
VERSION(ll_mutex_init_v225, "pthread_mutex_init@@GLIBC_2.2.5")
ALIAS(ll_mutex_destroy, ll_mutex_destroy_v225)
VERSION(ll_mutex_destroy_v225, "pthread_mutex_destroy@@GLIBC_2.2.5")
ALIAS(ll_mutex_lock, ll_mutex_lock_v225)
VERSION(ll_mutex_lock_v225, "pthread_mutex_lock@@GLIBC_2.2.5")
ALIAS(ll_mutex_unlock, ll_mutex_unlock_v225)
VERSION(ll_mutex_unlock_v225, "pthread_mutex_unlock@@GLIBC_2.2.5")
ALIAS(ll_mutex_trylock, ll_mutex_trylock_v225)
VERSION(ll_mutex_trylock_v225, "pthread_mutex_trylock@GLIBC_2.2.5")
ALIAS(ll_mutex_trylock, ll_mutex_trylock_v234)
VERSION(ll_mutex_trylock_v234, "pthread_mutex_trylock@@GLIBC_2.34")
ALIAS(ll_mutex_timedlock, ll_mutex_timedlock_v225)
VERSION(ll_mutex_timedlock_v225, "pthread_mutex_timedlock@GLIBC_2.2.5")
ALIAS(ll_mutex_timedlock, ll_mutex_timedlock_v234)
VERSION(ll_mutex_timedlock_v234, "pthread_mutex_timedlock@@GLIBC_2.34")
ALIAS(ll_mutex_clocklock, ll_mutex_clocklock_v230)
VERSION(ll_mutex_clocklock_v230, "pthread_mutex_clocklock@GLIBC_2.30")
ALIAS(ll_mutex_clocklock, ll_mutex_clocklock_v234)
VERSION(ll_mutex_clocklock_v234, "pthread_mutex_clocklock@@GLIBC_2.34")
