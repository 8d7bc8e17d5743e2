/* SPDX-License-Identifier: MIT */
/*
 * pthread_rwlock_*: a rwlock's side-table entry, the gate that gives the lab lock its try and
 * timed acquisitions, each thread's holds, and the exported symbols.
 */
#include <errno.h>
#include <sched.h>

#include "interpose.h"

/* ---- interposed: reader-writer locks -------------------------------------------------------- */

/* rwlock_entry.gate (interpose.h): readers, writers and pending tries, 21 bits each. */
#define GATE_FIELD_BITS 21
#define GATE_READER 1ull
#define GATE_WRITER (1ull << GATE_FIELD_BITS)
#define GATE_TRY (1ull << (2 * GATE_FIELD_BITS))
#define GATE_FIELD_MASK (GATE_WRITER - 1)

static inline u64 gate_readers(u64 g) { return g & GATE_FIELD_MASK; }
static inline u64 gate_writers(u64 g) { return (g >> GATE_FIELD_BITS) & GATE_FIELD_MASK; }
static inline u64 gate_tries(u64 g) { return g >> (2 * GATE_FIELD_BITS); }

/* Whether a holder counted in `g` keeps a reader (or writer) out. */
static inline bool gate_conflicts(u64 g, bool write)
{
	if (write || rw_mode == RW_EXCLUSIVE)
		return gate_readers(g) != 0 || gate_writers(g) != 0;
	return gate_writers(g) != 0;
}

static u32 rw_classify(const void *addr, int *pshared)
{
	*pshared = ((const pthread_rwlock_t *)addr)->__data.__shared != 0;
	return rw_mode == RW_PASS || *pshared ? ENTRY_PASS : ENTRY_LAB;
}

static void rw_lab_init(struct rwlock_entry *e)
{
	e->gate = 0;
	lab_lock_init(rw_ops, &rw_init_args, e->side.lab, "lock '%s' failed to initialise a rwlock");
}

static void rwlock_entry_start(struct side_entry *side, const void *addr)
{
	struct rwlock_entry *e = (struct rwlock_entry *)side;
	side->kind = rw_classify(addr, &e->pshared);
	if (side->kind == ENTRY_LAB)
		rw_lab_init(e);
}

struct side_table rwlocks = {
	.what = "a rwlock",
	.entry_size = sizeof(struct rwlock_entry),
	.ops = &rw_ops,
	.start = rwlock_entry_start,
};
_Static_assert(offsetof(struct rwlock_entry, side) == 0, "a side_entry * is a rwlock_entry *");

static inline struct rwlock_entry *rw_entry_lookup(const pthread_rwlock_t *rw)
{
	return (struct rwlock_entry *)side_lookup(&rwlocks, rw);
}

/* The entry of `rw`; (re)built when `fresh` (pthread_rwlock_init) or after a destroy. */
static inline struct rwlock_entry *rw_entry_get(pthread_rwlock_t *rw, bool fresh)
{
	return (struct rwlock_entry *)side_get(&rwlocks, rw, fresh);
}

static inline void rw_count(struct rwlock_entry *e, bool write, bool contended)
{
	if (!stats_wanted)
		return;
	__atomic_fetch_add(write ? &e->writes : &e->reads, 1, __ATOMIC_RELAXED);
	if (contended)
		__atomic_fetch_add(write ? &e->contended_writes : &e->contended_reads, 1,
				   __ATOMIC_RELAXED);
}

/* The lab lock's own calls; in exclusive mode a reader takes the lock as a writer does. */
static inline void rw_lab_acquire(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	if (write || rw_mode == RW_EXCLUSIVE)
		rw_ops->lock(e->side.lab, self);
	else
		rw_ops->read_lock(e->side.lab, self);
}

static inline void rw_lab_release(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	if (write || rw_mode == RW_EXCLUSIVE)
		rw_ops->unlock(e->side.lab, self);
	else
		rw_ops->read_unlock(e->side.lab, self);
}

/* Blocking entry. Returns whether a conflicting holder or waiter was there (contended). */
static bool rw_enter(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	u64 g = __atomic_fetch_add(&e->gate, write ? GATE_WRITER : GATE_READER, __ATOMIC_SEQ_CST);
	/*
	 * A try that succeeded before us must not find us queued in the lab lock ahead of it
	 * (a writer-preferring lock would make a try-reader wait for us): wait for it to be in.
	 * A reader of a shared lock with no writer counted waits for nothing: only try-readers
	 * can be pending then, and readers never keep readers out.
	 */
	if (gate_tries(g) != 0 && (write || rw_mode == RW_EXCLUSIVE || gate_writers(g) != 0)) {
		unsigned int spins = 0;
		while (gate_tries(__atomic_load_n(&e->gate, __ATOMIC_SEQ_CST)) != 0)
			if (++spins % 64 == 0)
				sched_yield();
			else
				cpu_relax();
	}
	rw_lab_acquire(e, self, write);
	return gate_conflicts(g, write);
}

/* Never waits: the gate says whether the lab lock can be taken at once, and then takes it. */
static bool rw_try(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	u64 g = __atomic_load_n(&e->gate, __ATOMIC_SEQ_CST);
	do {
		if (gate_conflicts(g, write))
			return false;
	} while (!__atomic_compare_exchange_n(&e->gate, &g,
					      g + (write ? GATE_WRITER : GATE_READER) + GATE_TRY,
					      false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	rw_lab_acquire(e, self, write);
	__atomic_fetch_sub(&e->gate, GATE_TRY, __ATOMIC_SEQ_CST);
	return true;
}

struct rw_attempt {
	struct rwlock_entry *e;
	struct lock_thread *self;
	bool write;
};

static bool rw_attempt(void *arg)
{
	struct rw_attempt *a = arg;
	return rw_try(a->e, a->self, a->write);
}

/* The calling thread's latest hold of `e`, or NULL. */
struct rw_hold *rw_held(struct thread_ctx *ctx, const struct rwlock_entry *e)
{
	for (unsigned int i = ctx->n_rw_holds; i-- > 0;)
		if (ctx->rw_holds[i].e == e)
			return &ctx->rw_holds[i];
	return NULL;
}

static void rw_hold_push(struct thread_ctx *ctx, struct rwlock_entry *e, struct slot *s, bool write)
{
	if (ctx->n_rw_holds == MAX_DEPTH)
		fatal("a thread holds more than %s rwlocks at once", "32");
	ctx->rw_holds[ctx->n_rw_holds++] = (struct rw_hold){ e, s, write };
}

static int rw_pass_acquire(pthread_rwlock_t *rw, bool write, bool try, clockid_t clock,
			   const struct timespec *deadline)
{
	if (try)
		return write ? real.rwlock_trywrlock(rw) : real.rwlock_tryrdlock(rw);
	if (deadline == NULL)
		return write ? real.rwlock_wrlock(rw) : real.rwlock_rdlock(rw);
	if (clock == CLOCK_REALTIME)
		return write ? real.rwlock_timedwrlock(rw, deadline)
			     : real.rwlock_timedrdlock(rw, deadline);
	int (*clocked)(pthread_rwlock_t *, clockid_t, const struct timespec *) =
		write ? real.rwlock_clockwrlock : real.rwlock_clockrdlock;
	return clocked ? clocked(rw, clock, deadline) : EINVAL;
}

/*
 * Take `rw` for reading or writing: blocking, `try` (EBUSY), or by a deadline on `clock`
 * (ETIMEDOUT, EINVAL for a bad deadline when it has to wait). EDEADLK when the thread holds
 * it for writing, or asks to write while it reads (glibc's and POSIX's answers).
 */
static int rw_acquire(pthread_rwlock_t *rw, bool write, bool try, clockid_t clock,
		      const struct timespec *deadline)
{
	struct rwlock_entry *e = rw_entry_get(rw, false);
	if (e->side.kind == ENTRY_PASS) {
		int err = rw_pass_acquire(rw, write, try, clock, deadline);
		if (err == 0)
			rw_count(e, write, false);
		return err;
	}
	struct thread_ctx *ctx = thread_ctx();
	struct rw_hold *held = rw_held(ctx, e);
	if (held != NULL && (held->write || write))
		return try ? EBUSY : EDEADLK;
	if (held != NULL) { /* a read lock taken again: the outer one already keeps writers out */
		rw_hold_push(ctx, e, NULL, false);
		rw_count(e, false, false);
		return 0;
	}
	struct slot *s = slot_take();
	bool contended = false;
	if (try || deadline != NULL) {
		if (!rw_try(e, &s->lt, write)) {
			contended = true;
			struct rw_attempt a = { e, &s->lt, write };
			int err = try ? EBUSY
				  : !timespec_valid(deadline) ? EINVAL
				  : poll_until(clock, deadline, rw_attempt, &a) ? 0
									  : ETIMEDOUT;
			if (err != 0) {
				slot_put(&s->lt);
				return err;
			}
		}
	} else {
		contended = rw_enter(e, &s->lt, write);
	}
	rw_hold_push(ctx, e, s, write);
	rw_count(e, write, contended);
	return 0;
}

static int rw_release(pthread_rwlock_t *rw)
{
	struct rwlock_entry *e = rw_entry_lookup(rw);
	if (e == NULL || e->side.kind == ENTRY_PASS)
		return real.rwlock_unlock(rw);
	struct thread_ctx *ctx = my_ctx;
	struct rw_hold *held = ctx ? rw_held(ctx, e) : NULL;
	if (held == NULL)
		return EPERM; /* not held by this thread */
	struct rw_hold h = *held;
	for (struct rw_hold *next = held + 1; next < ctx->rw_holds + ctx->n_rw_holds; next++)
		next[-1] = *next;
	ctx->n_rw_holds--;
	if (h.slot == NULL)
		return 0; /* a nested read lock */
	rw_lab_release(e, &h.slot->lt, h.write);
	__atomic_fetch_sub(&e->gate, h.write ? GATE_WRITER : GATE_READER, __ATOMIC_SEQ_CST);
	note_nodes_migrate(&h.slot->lt, &rwlocks.nodes_migrate);
	slot_put(&h.slot->lt);
	return 0;
}

/*
 * True when the call goes straight to the C library: the lab's own calls (a lock built on
 * glibc's rwlock), our start-up, or no lab lock and no statistics.
 */
static inline bool rw_forward(void)
{
	if (unlikely(in_lab_setup) || !ensure_ready())
		return true;
	return rw_mode == RW_PASS && !stats_wanted;
}

static int ll_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr)
{
	bool forward = rw_forward();
	int err = real.rwlock_init ? real.rwlock_init(rw, attr) : 0;
	if (err == 0 && !forward)
		rw_entry_get(rw, true);
	return err;
}

static int ll_rwlock_destroy(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_destroy ? real.rwlock_destroy(rw) : 0;
	struct rwlock_entry *e = rw_entry_lookup(rw);
	if (e != NULL && e->side.live) {
		if (e->side.kind == ENTRY_LAB && __atomic_load_n(&e->gate, __ATOMIC_SEQ_CST) != 0)
			return EBUSY;
		side_retire(&rwlocks, &e->side);
	}
	return real.rwlock_destroy(rw);
}

static int ll_rwlock_rdlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_rdlock ? real.rwlock_rdlock(rw) : 0;
	return rw_acquire(rw, false, false, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_wrlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_wrlock ? real.rwlock_wrlock(rw) : 0;
	return rw_acquire(rw, true, false, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_tryrdlock ? real.rwlock_tryrdlock(rw) : 0;
	return rw_acquire(rw, false, true, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_trywrlock ? real.rwlock_trywrlock(rw) : 0;
	return rw_acquire(rw, true, true, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_timedrdlock ? real.rwlock_timedrdlock(rw, t) : 0;
	return rw_acquire(rw, false, false, CLOCK_REALTIME, t);
}

static int ll_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_timedwrlock ? real.rwlock_timedwrlock(rw, t) : 0;
	return rw_acquire(rw, true, false, CLOCK_REALTIME, t);
}

static int ll_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t clock, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_clockrdlock ? real.rwlock_clockrdlock(rw, clock, t) : EINVAL;
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return rw_acquire(rw, false, false, clock, t);
}

static int ll_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t clock, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_clockwrlock ? real.rwlock_clockwrlock(rw, clock, t) : EINVAL;
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return rw_acquire(rw, true, false, clock, t);
}

static int ll_rwlock_unlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_unlock ? real.rwlock_unlock(rw) : 0;
	return rw_release(rw);
}

/* fork.c's child handler: a rwlock this thread holds, rebuilt with only its own holds. */
void rw_rebuild_for_child(struct rwlock_entry *e)
{
	side_lab_destroy(&rwlocks, &e->side);
	rw_lab_init(e);
	for (unsigned int i = 0; i < my_ctx->n_rw_holds; i++) {
		struct rw_hold *h = &my_ctx->rw_holds[i];
		if (h->e != e || h->slot == NULL)
			continue;
		e->gate += h->write ? GATE_WRITER : GATE_READER;
		rw_lab_acquire(e, &h->slot->lt, h->write);
	}
}

/* ---- symbols, with glibc's versions (see interpose.map) ------------------------------------- */

/* rwlocks: every one is @GLIBC_2.2.5 (clock ones @GLIBC_2.30) and @@GLIBC_2.34 */
ALIAS(ll_rwlock_init, ll_rwlock_init_v225)
VERSION(ll_rwlock_init_v225, "pthread_rwlock_init@GLIBC_2.2.5")
ALIAS(ll_rwlock_init, ll_rwlock_init_v234)
VERSION(ll_rwlock_init_v234, "pthread_rwlock_init@@GLIBC_2.34")
ALIAS(ll_rwlock_destroy, ll_rwlock_destroy_v225)
VERSION(ll_rwlock_destroy_v225, "pthread_rwlock_destroy@GLIBC_2.2.5")
ALIAS(ll_rwlock_destroy, ll_rwlock_destroy_v234)
VERSION(ll_rwlock_destroy_v234, "pthread_rwlock_destroy@@GLIBC_2.34")
ALIAS(ll_rwlock_rdlock, ll_rwlock_rdlock_v225)
VERSION(ll_rwlock_rdlock_v225, "pthread_rwlock_rdlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_rdlock, ll_rwlock_rdlock_v234)
VERSION(ll_rwlock_rdlock_v234, "pthread_rwlock_rdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_tryrdlock, ll_rwlock_tryrdlock_v225)
VERSION(ll_rwlock_tryrdlock_v225, "pthread_rwlock_tryrdlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_tryrdlock, ll_rwlock_tryrdlock_v234)
VERSION(ll_rwlock_tryrdlock_v234, "pthread_rwlock_tryrdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_timedrdlock, ll_rwlock_timedrdlock_v225)
VERSION(ll_rwlock_timedrdlock_v225, "pthread_rwlock_timedrdlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_timedrdlock, ll_rwlock_timedrdlock_v234)
VERSION(ll_rwlock_timedrdlock_v234, "pthread_rwlock_timedrdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_wrlock, ll_rwlock_wrlock_v225)
VERSION(ll_rwlock_wrlock_v225, "pthread_rwlock_wrlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_wrlock, ll_rwlock_wrlock_v234)
VERSION(ll_rwlock_wrlock_v234, "pthread_rwlock_wrlock@@GLIBC_2.34")
ALIAS(ll_rwlock_trywrlock, ll_rwlock_trywrlock_v225)
VERSION(ll_rwlock_trywrlock_v225, "pthread_rwlock_trywrlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_trywrlock, ll_rwlock_trywrlock_v234)
VERSION(ll_rwlock_trywrlock_v234, "pthread_rwlock_trywrlock@@GLIBC_2.34")
ALIAS(ll_rwlock_timedwrlock, ll_rwlock_timedwrlock_v225)
VERSION(ll_rwlock_timedwrlock_v225, "pthread_rwlock_timedwrlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_timedwrlock, ll_rwlock_timedwrlock_v234)
VERSION(ll_rwlock_timedwrlock_v234, "pthread_rwlock_timedwrlock@@GLIBC_2.34")
ALIAS(ll_rwlock_unlock, ll_rwlock_unlock_v225)
VERSION(ll_rwlock_unlock_v225, "pthread_rwlock_unlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_unlock, ll_rwlock_unlock_v234)
VERSION(ll_rwlock_unlock_v234, "pthread_rwlock_unlock@@GLIBC_2.34")
ALIAS(ll_rwlock_clockrdlock, ll_rwlock_clockrdlock_v230)
VERSION(ll_rwlock_clockrdlock_v230, "pthread_rwlock_clockrdlock@GLIBC_2.30")
ALIAS(ll_rwlock_clockrdlock, ll_rwlock_clockrdlock_v234)
VERSION(ll_rwlock_clockrdlock_v234, "pthread_rwlock_clockrdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_clockwrlock, ll_rwlock_clockwrlock_v230)
VERSION(ll_rwlock_clockwrlock_v230, "pthread_rwlock_clockwrlock@GLIBC_2.30")
ALIAS(ll_rwlock_clockwrlock, ll_rwlock_clockwrlock_v234)
VERSION(ll_rwlock_clockwrlock_v234, "pthread_rwlock_clockwrlock@@GLIBC_2.34")
