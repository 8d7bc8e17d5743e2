/* SPDX-License-Identifier: MIT */
/*
 * rwsem: the kernel's reader-writer semaphore, with writer optimistic spinning, batched reader
 * wake-ups and hand-off, and seed 001's two tweaks as tunables.
 *
 * Source: kernel/locking/rwsem.c (D. Howells 2001; xadd count, M. Lespinasse 2013; owner field
 * and writer spinning, T. Chen and D. Bueso 2014; reader-owned spinning, hand-off and batched
 * wake-up, W. Long 2019); seed 001 (T. Chen, June 2013); notes (c).
 *
 * State: `count`
 *   bit 0       WRITER_LOCKED
 *   bit 1       WAITERS        the wait list is not empty
 *   bit 2       HANDOFF        the first waiter timed out (a writer, or a reader that a writer
 *                              keeps out): it takes the lock next, no stealing
 *   bits 8-62   active readers (READER_BIAS = 1 << 8 each)
 *   bit 63      READFAIL       reader count overflow guard (never reached here)
 * and `owner`: the writer's task, or READER_OWNED, plus NONSPINNABLE when a writer gave up
 * spinning on readers.
 *
 *   down_read    fetch-add-ACQUIRE a bias; fails (slow path) on WRITER|WAITERS|HANDOFF|READFAIL.
 *                Slow path: steal if no writer and no hand-off; else queue, take the bias back,
 *                and sleep until a waker grants the lock (it adds our bias for us).
 *   down_write   CAS-ACQUIRE 0 -> WRITER_LOCKED. Slow path: spin on the owner through the OSQ
 *                while a writer owner runs, or a bounded time on a reader-owned lock (about
 *                10 us + 0.5 us per reader, at most 25 us; then NONSPINNABLE); then queue and
 *                sleep; once first and 4 ms late, set HANDOFF. A reader at the front 4 ms late
 *                that a writer keeps out when woken sets HANDOFF too.
 *   up_read      fetch-add-RELEASE -bias; the last reader out with waiters wakes them.
 *   up_write     clear owner, fetch-add-RELEASE -WRITER_LOCKED; wake if WAITERS.
 *   wake         a writer at the front is woken to try; readers at the front are granted in a
 *                batch of up to 256 (skipping queued writers), their biases added at once.
 *
 * Tunables: `writer_spin` (seed 001's tweak 1: an owner field and optimistic spinning for
 * writers) and `skip_active` (tweak 2: when the lock is active, a writer goes straight to the
 * slow path instead of trying atomics that must fail).
 *
 * A port beside the tree's own code (kernel:rwsem, compiled from 6.1): kept, since it carries seed
 * 001's two tweaks as tunables, and is what the interposition library, the arm64 build and a host
 * without a kernel tree run; tests/test_ports.py holds it to the tree's code (docs/locks.md,
 * "Ports and the tree").
 */
#include <errno.h>

#include "osq.h"
#include "lock_task.h"
#include "raw_spinlock.h" /* wait_lock: Linux 6.1's qspinlock (raw_qspin_*) */
#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

#define RWSEM_WRITER_LOCKED (1UL << 0)
#define RWSEM_FLAG_WAITERS (1UL << 1)
#define RWSEM_FLAG_HANDOFF (1UL << 2)
#define RWSEM_FLAG_READFAIL (1UL << 63)
#define RWSEM_READER_SHIFT 8
#define RWSEM_READER_BIAS (1UL << RWSEM_READER_SHIFT)
#define RWSEM_READER_MASK (~(RWSEM_READER_BIAS - 1))
#define RWSEM_LOCK_MASK (RWSEM_WRITER_LOCKED | RWSEM_READER_MASK)
#define RWSEM_READ_FAILED_MASK                                                                 \
	(RWSEM_WRITER_LOCKED | RWSEM_FLAG_WAITERS | RWSEM_FLAG_HANDOFF | RWSEM_FLAG_READFAIL)

#define RWSEM_READER_OWNED (1UL << 0)
#define RWSEM_NONSPINNABLE (1UL << 1)
#define RWSEM_OWNER_FLAGS (RWSEM_READER_OWNED | RWSEM_NONSPINNABLE)

#define RWSEM_WAIT_TIMEOUT_NS 4000000u /* a waiter waits this long before asking for hand-off */
#define MAX_READERS_WAKEUP 256

enum waiter_type { WAITER_READER, WAITER_WRITER };

/* On the waiting thread's stack, as the kernel's; its wake-up is by task (lock_task_wake()). */
struct rwsem_waiter {
	struct rwsem_waiter *next, *prev; /* doubly linked, as the kernel's list_head: O(1) removal */
	struct lock_task *task;
	enum waiter_type type;
	u32 granted; /* a reader's: the waker added its bias (the kernel clears waiter->task) */
	u64 timeout; /* when to ask for hand-off */
	bool handoff_set; /* it set HANDOFF (a writer then spins on the owner before sleeping) */
};

struct rw_semaphore {
	unsigned long count;
	uintptr_t owner;
	struct optimistic_spin_queue osq;
	struct qspinlock wait_lock; /* a qspinlock, as in 6.1 */
	struct rwsem_waiter *first, *last;
	/*
	 * Seed 001's tweaks, which no kernel has as fields (a kernel has them compiled in or
	 * not). Every down_write reads skip_active before its CAS: on the count's line, that
	 * load took the line back from a spinner before the CAS could, and the port handed over
	 * up to twice as often as the tree's code on a 16-core Xeon, at 0.66 to 0.76 of its speed
	 * at 4 to 16 writers (docs/locks.md). On a line of their own, which nobody writes, the
	 * load always hits.
	 */
	alignas(LOCKLAB_CACHELINE) bool writer_spin;
	bool skip_active;
};
_Static_assert(offsetof(struct rw_semaphore, writer_spin) / LOCKLAB_CACHELINE !=
			       offsetof(struct rw_semaphore, count) / LOCKLAB_CACHELINE &&
		       offsetof(struct rw_semaphore, skip_active) / LOCKLAB_CACHELINE !=
			       offsetof(struct rw_semaphore, count) / LOCKLAB_CACHELINE,
	       "the tunables stay off the count's line");

/*
 * A reader's mark in the owner word: its task and READER_OWNED, stored by every reader that
 * takes the lock, as 6.1's __rwsem_set_reader_owned() does (the store is on the count's line,
 * and its traffic is part of what readers cost). The task is only a hint (the last reader in).
 */
static inline void set_reader_owned(struct rw_semaphore *sem, const struct lock_task *task)
{
	uintptr_t nonspinnable = READ_ONCE(sem->owner) & RWSEM_NONSPINNABLE;
	WRITE_ONCE(sem->owner, (uintptr_t)task | RWSEM_READER_OWNED | nonspinnable);
}

/* ---- the wait list (under wait_lock) ------------------------------------------------------ */

static void add_waiter(struct rw_semaphore *sem, struct rwsem_waiter *waiter)
{
	waiter->next = NULL;
	waiter->prev = sem->last;
	if (sem->last)
		sem->last->next = waiter;
	else
		WRITE_ONCE(sem->first, waiter);
	sem->last = waiter;
}

static void del_waiter(struct rw_semaphore *sem, struct rwsem_waiter *waiter)
{
	if (waiter->prev)
		waiter->prev->next = waiter->next;
	else
		WRITE_ONCE(sem->first, waiter->next);
	if (waiter->next)
		waiter->next->prev = waiter->prev;
	else
		sem->last = waiter->prev;
}

/* Collected wake-ups, done after wait_lock is dropped (the kernel's wake_q). */
struct wake_list {
	struct lock_task *tasks[MAX_READERS_WAKEUP + 1];
	unsigned int n;
};

static void wake_all(struct wake_list *wake)
{
	for (unsigned int i = 0; i < wake->n; i++)
		lock_task_wake(wake->tasks[i]);
}

/* A writer, woken to try for itself; a reader, granted first (its bias is in). */
static void wake_waiter(struct rwsem_waiter *waiter, struct wake_list *wake)
{
	wake->tasks[wake->n++] = waiter->task; /* before the grant: a reader may leave after it */
	if (waiter->type == WAITER_READER)
		smp_store_release(&waiter->granted, 1); /* pairs with its ACQUIRE load */
}

/* What rwsem_mark_wake() may wake; READ_OWNED: readers, into a lock readers already own. */
enum wake_type { WAKE_ANY, WAKE_READERS, WAKE_READ_OWNED };

/*
 * Wake whoever is at the front: a writer to try for itself, or readers, granted at once.
 * Caller holds wait_lock and the list is not empty. The kernel's rwsem_mark_wake().
 */
static void rwsem_mark_wake(struct rw_semaphore *sem, enum wake_type type, struct wake_list *wake)
{
	struct rwsem_waiter *first = sem->first;

	if (first->type == WAITER_WRITER) {
		if (type == WAKE_ANY)
			wake_waiter(first, wake);
		return;
	}
	/*
	 * Grant the first reader's bias now, so no writer can slip in; back off if one did, and
	 * if the first reader has waited past its timeout, ask for hand-off in the same add: no
	 * writer may take the lock before the readers now (6.1's reader hand-off). Not when
	 * readers own it already (a stealing reader woke us): their bias keeps writers out.
	 */
	unsigned long first_bias = 0;
	if (type != WAKE_READ_OWNED) {
		first_bias = RWSEM_READER_BIAS;
		unsigned long old = __atomic_fetch_add(&sem->count, first_bias, __ATOMIC_ACQUIRE);
		if (old & RWSEM_WRITER_LOCKED) {
			unsigned long handoff = 0;
			if (osq_now_ns() > first->timeout) {
				if (!(old & RWSEM_FLAG_HANDOFF))
					handoff = RWSEM_FLAG_HANDOFF;
				first->handoff_set = true;
			}
			__atomic_fetch_add(&sem->count, handoff - first_bias, __ATOMIC_RELAXED);
			return;
		}
		set_reader_owned(sem, first->task);
	}
	/* Readers from anywhere in the queue, up to a batch; queued writers keep their place. */
	struct rwsem_waiter *granted[MAX_READERS_WAKEUP];
	unsigned int woken = 0;
	for (struct rwsem_waiter *w = sem->first; w && woken < MAX_READERS_WAKEUP; w = w->next)
		if (w->type == WAITER_READER)
			granted[woken++] = w;
	for (unsigned int i = 0; i < woken; i++)
		del_waiter(sem, granted[i]);
	unsigned long adjustment = woken * RWSEM_READER_BIAS - first_bias;
	/* An empty list drops WAITERS; an empty list or woken readers drop HANDOFF too. */
	if (sem->first == NULL)
		adjustment -= RWSEM_FLAG_WAITERS;
	if ((sem->first == NULL || woken) && (READ_ONCE(sem->count) & RWSEM_FLAG_HANDOFF))
		adjustment -= RWSEM_FLAG_HANDOFF;
	if (adjustment)
		__atomic_fetch_add(&sem->count, adjustment, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < woken; i++)
		wake_waiter(granted[i], wake);
}

static void rwsem_wake(struct rw_semaphore *sem, struct lock_thread *self)
{
	struct wake_list wake = { .n = 0 };
	raw_qspin_lock(&sem->wait_lock, self);
	if (sem->first)
		rwsem_mark_wake(sem, WAKE_ANY, &wake);
	raw_qspin_unlock(&sem->wait_lock);
	wake_all(&wake);
}

/* ---- readers --------------------------------------------------------------------------------- */

static void rwsem_down_read_slowpath(struct rw_semaphore *sem, struct lock_thread *self,
				     unsigned long count)
{
	struct rwsem_waiter waiter;
	struct lock_task *me = lock_task_of(self);
	struct wake_list wake = { .n = 0 };
	unsigned long adjustment = -RWSEM_READER_BIAS;
	long readers = (long)count >> RWSEM_READER_SHIFT; /* before our bias */

	/*
	 * Reader lock stealing: our bias is in, and no writer holds or is promised the lock. Not
	 * when readers own it already, as 6.1 has it (around rwsem.c:1016): a stream of readers
	 * would starve a queued writer until its hand-off timeout.
	 */
	bool queue_behind_readers = (READ_ONCE(sem->owner) & RWSEM_READER_OWNED) && readers > 0;
	if (!queue_behind_readers && !(count & (RWSEM_WRITER_LOCKED | RWSEM_FLAG_HANDOFF))) {
		set_reader_owned(sem, me);
		/* The first reader in wakes the readers queued (WAKE_READ_OWNED). */
		if (readers == 0 && (count & RWSEM_FLAG_WAITERS)) {
			raw_qspin_lock(&sem->wait_lock, self);
			if (sem->first)
				rwsem_mark_wake(sem, WAKE_READ_OWNED, &wake);
			raw_qspin_unlock(&sem->wait_lock);
			wake_all(&wake);
		}
		return;
	}
	waiter.task = me;
	waiter.type = WAITER_READER;
	waiter.granted = 0;
	waiter.timeout = osq_now_ns() + RWSEM_WAIT_TIMEOUT_NS;
	waiter.handoff_set = false;

	raw_qspin_lock(&sem->wait_lock, self);
	if (sem->first == NULL) {
		/* The writer may have left meanwhile: then our bias stands and the lock is ours. */
		/* ACQUIRE: the kernel's smp_acquire__after_ctrl_dep(), as a load TSAN can follow. */
		if (!(smp_load_acquire(&sem->count) & RWSEM_WRITER_LOCKED)) {
			raw_qspin_unlock(&sem->wait_lock);
			set_reader_owned(sem, me);
			return;
		}
		adjustment += RWSEM_FLAG_WAITERS;
	}
	add_waiter(sem, &waiter);
	count = __atomic_add_fetch(&sem->count, adjustment, __ATOMIC_ACQ_REL);
	/*
	 * rwsem_cond_wake_waiter(): no writer holds it now, so wake the front (maybe us): readers
	 * only while readers hold it, anyone when nobody does.
	 */
	if (!(count & RWSEM_WRITER_LOCKED)) {
		if (count & RWSEM_READER_MASK) {
			rwsem_mark_wake(sem, WAKE_READERS, &wake);
		} else {
			__atomic_fetch_and(&sem->owner, ~RWSEM_NONSPINNABLE, __ATOMIC_RELAXED);
			rwsem_mark_wake(sem, WAKE_ANY, &wake);
		}
	}
	raw_qspin_unlock(&sem->wait_lock);
	wake_all(&wake);

	lock_task_wait_for(me, &waiter.granted);
	/* Granted: the waker added our bias and took us off the list. */
}

static kernel_out_of_line void rwsem_down_read(void *lockp, struct lock_thread *self)
{
	struct rw_semaphore *sem = lockp;
	unsigned long count = __atomic_fetch_add(&sem->count, RWSEM_READER_BIAS, __ATOMIC_ACQUIRE);

	if (unlikely(count & RWSEM_READ_FAILED_MASK))
		rwsem_down_read_slowpath(sem, self, count);
	else
		set_reader_owned(sem, lock_task_of(self));
}

static kernel_out_of_line void rwsem_up_read(void *lockp, struct lock_thread *self)
{
	struct rw_semaphore *sem = lockp;
	(void)self;
	unsigned long count = __atomic_sub_fetch(&sem->count, RWSEM_READER_BIAS, __ATOMIC_RELEASE);

	if (unlikely((count & (RWSEM_READER_MASK | RWSEM_FLAG_WAITERS)) == RWSEM_FLAG_WAITERS)) {
		__atomic_fetch_and(&sem->owner, ~RWSEM_NONSPINNABLE, __ATOMIC_RELAXED);
		rwsem_wake(sem, self);
	}
}

/* ---- writers --------------------------------------------------------------------------------- */

/* Take it if free and not promised to a hand-off waiter (spinners). */
static bool rwsem_try_write_lock_unqueued(struct rw_semaphore *sem, struct lock_task *me)
{
	unsigned long count = READ_ONCE(sem->count);
	while (!(count & (RWSEM_LOCK_MASK | RWSEM_FLAG_HANDOFF))) {
		if (__atomic_compare_exchange_n(&sem->count, &count, count | RWSEM_WRITER_LOCKED,
						false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			WRITE_ONCE(sem->owner, (uintptr_t)me);
			return true;
		}
	}
	return false;
}

/* How long a writer spins on a reader-owned lock: 10 us + 0.5 us per reader, at most 25 us. */
static u64 reader_spin_ns(const struct rw_semaphore *sem)
{
	unsigned long readers = READ_ONCE(sem->count) >> RWSEM_READER_SHIFT;
	u64 ns = 10000 + 500 * (u64)(readers > 30 ? 30 : readers);
	return ns > 25000 ? 25000 : ns;
}

/*
 * What the owner word says to a spinner (6.1's enum owner_state, as bits): it goes on spinning
 * for the first three.
 */
enum owner_state {
	OWNER_NULL = 1 << 0,
	OWNER_WRITER = 1 << 1,
	OWNER_READER = 1 << 2,
	OWNER_NONSPINNABLE = 1 << 3,
};
#define OWNER_SPINNABLE (OWNER_NULL | OWNER_WRITER | OWNER_READER)

static enum owner_state rwsem_owner_state(uintptr_t owner)
{
	if (owner & RWSEM_NONSPINNABLE)
		return OWNER_NONSPINNABLE;
	if (owner & RWSEM_READER_OWNED)
		return OWNER_READER;
	return owner ? OWNER_WRITER : OWNER_NULL;
}

/* rwsem_can_spin_on_owner(): not when spinning is off, nor on a writer that is not running. */
static bool rwsem_can_spin_on_owner(struct rw_semaphore *sem)
{
	uintptr_t owner = READ_ONCE(sem->owner);
	if (owner & RWSEM_NONSPINNABLE)
		return false;
	return rwsem_owner_state(owner) != OWNER_WRITER ||
	       lock_task_running((struct lock_task *)owner);
}

/*
 * rwsem_spin_on_owner(): while the same writer holds the lock and runs, spin on the owner word
 * alone; then say what the word shows. need_resched()'s stand-in is the tick's worth of
 * spinning since `deadline` (spun_a_tick, osq.h), its rounds counted in `*rounds` across the
 * calls of one spin, so that owners that change often do not restart the count.
 */
static enum owner_state rwsem_spin_on_owner(struct rw_semaphore *sem, u64 deadline,
					    unsigned int *rounds)
{
	uintptr_t owner = READ_ONCE(sem->owner);
	enum owner_state state = rwsem_owner_state(owner);
	if (state != OWNER_WRITER)
		return state;
	for (;;) {
		uintptr_t now = READ_ONCE(sem->owner);
		if (now != owner) /* another owner, or the same with other flags */
			return rwsem_owner_state(now);
		if (spun_a_tick(++*rounds, deadline) ||
		    !lock_task_running((struct lock_task *)owner))
			return OWNER_NONSPINNABLE;
		cpu_relax();
	}
}

/*
 * rwsem_optimistic_spin(): in the OSQ, spin on the owner, try to take the lock each time it
 * changes, and give up on an owner that sleeps, on readers after their time (checked once in
 * 16 rounds), or after a tick's worth of spinning (the need_resched() stand-in, checked where
 * 6.1 checks it: in rwsem_spin_on_owner() for a writer owner, here for the others).
 */
static bool rwsem_optimistic_spin(struct rw_semaphore *sem, struct lock_thread *self)
{
	struct lock_task *me = lock_task_of(self);
	enum owner_state previous = OWNER_NULL;
	u64 reader_deadline = 0;
	unsigned int reader_rounds = 0;
	bool taken = false;

	if (!osq_lock(&sem->osq, self))
		return false;
	u64 deadline = osq_now_ns() + OSQ_SPIN_NS;
	for (unsigned int rounds = 0;;) {
		enum owner_state state = rwsem_spin_on_owner(sem, deadline, &rounds);
		if (!(state & OWNER_SPINNABLE))
			break;
		if (rwsem_try_write_lock_unqueued(sem, me)) {
			taken = true;
			break;
		}
		if (state == OWNER_READER) {
			/* A new reader phase starts its own time: a writer may steal between two. */
			if (previous != OWNER_READER) {
				if (READ_ONCE(sem->owner) & RWSEM_NONSPINNABLE)
					break;
				reader_deadline = osq_now_ns() + reader_spin_ns(sem);
				reader_rounds = 0;
			} else if ((++reader_rounds & 15) == 0 && osq_now_ns() > reader_deadline) {
				__atomic_fetch_or(&sem->owner, RWSEM_NONSPINNABLE, __ATOMIC_RELAXED);
				break;
			}
		}
		if (state != OWNER_WRITER && spun_a_tick(++rounds, deadline))
			break;
		previous = state;
		cpu_relax();
	}
	osq_unlock(&sem->osq, self);
	return taken;
}

/*
 * The queued writer's attempt (wait_lock held): take the lock if free, or, first in line and
 * past its timeout, set HANDOFF so that no one else can take it. The kernel's
 * rwsem_try_write_lock().
 */
static bool rwsem_try_write_lock(struct rw_semaphore *sem, struct rwsem_waiter *waiter)
{
	bool first = sem->first == waiter;
	unsigned long count = READ_ONCE(sem->count), new;

	do {
		bool has_handoff = count & RWSEM_FLAG_HANDOFF;
		if (has_handoff && !first)
			return false;
		if (count & RWSEM_LOCK_MASK) {
			if (has_handoff || !first || osq_now_ns() < waiter->timeout)
				return false;
			new = count | RWSEM_FLAG_HANDOFF;
		} else {
			new = (count | RWSEM_WRITER_LOCKED) & ~RWSEM_FLAG_HANDOFF;
			if (sem->first == waiter && waiter->next == NULL)
				new &= ~RWSEM_FLAG_WAITERS;
		}
	} while (!__atomic_compare_exchange_n(&sem->count, &count, new, false, __ATOMIC_ACQUIRE,
					      __ATOMIC_RELAXED));
	if (new & RWSEM_FLAG_HANDOFF) {
		waiter->handoff_set = true;
		return false;
	}
	del_waiter(sem, waiter);
	WRITE_ONCE(sem->owner, (uintptr_t)waiter->task);
	return true;
}

static void rwsem_down_write_slowpath(struct rw_semaphore *sem, struct lock_thread *self)
{
	struct rwsem_waiter waiter;
	struct lock_task *me = lock_task_of(self);
	struct wake_list wake = { .n = 0 };

	if (sem->writer_spin && rwsem_can_spin_on_owner(sem) && rwsem_optimistic_spin(sem, self))
		return;

	waiter.task = me;
	waiter.type = WAITER_WRITER;
	waiter.timeout = osq_now_ns() + RWSEM_WAIT_TIMEOUT_NS;
	waiter.handoff_set = false;

	raw_qspin_lock(&sem->wait_lock, self);
	bool alone = sem->first == NULL;
	add_waiter(sem, &waiter);
	if (alone) {
		__atomic_fetch_or(&sem->count, RWSEM_FLAG_WAITERS, __ATOMIC_RELAXED);
	} else {
		/* Readers queued ahead may be grantable now (the lock is reader-owned or free). */
		unsigned long count = READ_ONCE(sem->count);
		if (!(count & RWSEM_WRITER_LOCKED))
			rwsem_mark_wake(sem, count & RWSEM_READER_MASK ? WAKE_READERS : WAKE_ANY,
					&wake);
	}
	/* BLOCKED while it tries, from here and after each sleep: a wake meanwhile makes it
	 * RUNNING, so a sleep it was about to begin does not happen (set_current_state()). */
	lock_task_block(me);
	for (;;) {
		bool skip = sem->skip_active && (READ_ONCE(sem->count) & RWSEM_LOCK_MASK) &&
			    osq_now_ns() < waiter.timeout;
		if (!skip && rwsem_try_write_lock(sem, &waiter))
			break;
		raw_qspin_unlock(&sem->wait_lock);
		wake_all(&wake);
		wake.n = 0;

		/*
		 * 6.1 (rwsem.c around line 1178): a writer that set HANDOFF spins on a running
		 * writer owner first, and tries again at once if that owner let go.
		 */
		unsigned int rounds = 0;
		if (!(waiter.handoff_set &&
		      rwsem_spin_on_owner(sem, osq_now_ns() + OSQ_SPIN_NS, &rounds) == OWNER_NULL)) {
			lock_task_schedule(me);
			lock_task_block(me);
		}
		raw_qspin_lock(&sem->wait_lock, self);
	}
	lock_task_unblock(me);
	raw_qspin_unlock(&sem->wait_lock);
	wake_all(&wake);
}

static kernel_out_of_line void rwsem_down_write(void *lockp, struct lock_thread *self)
{
	struct rw_semaphore *sem = lockp;
	struct lock_task *me = lock_task_of(self);
	unsigned long expected = 0;

	/* Seed 001's tweak 2: an active lock makes the CAS fail anyway; do not even try it. */
	if (sem->skip_active && READ_ONCE(sem->count) != 0) {
		rwsem_down_write_slowpath(sem, self);
		return;
	}
	if (likely(__atomic_compare_exchange_n(&sem->count, &expected, RWSEM_WRITER_LOCKED, false,
					       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))) {
		WRITE_ONCE(sem->owner, (uintptr_t)me);
		return;
	}
	rwsem_down_write_slowpath(sem, self);
}

static bool rwsem_down_write_trylock(void *lockp, struct lock_thread *self)
{
	struct rw_semaphore *sem = lockp;
	unsigned long expected = 0;
	if (__atomic_compare_exchange_n(&sem->count, &expected, RWSEM_WRITER_LOCKED, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		WRITE_ONCE(sem->owner, (uintptr_t)lock_task_of(self));
		return true;
	}
	return false;
}

static kernel_out_of_line void rwsem_up_write(void *lockp, struct lock_thread *self)
{
	struct rw_semaphore *sem = lockp;
	(void)self;
	WRITE_ONCE(sem->owner, 0);
	unsigned long count =
		__atomic_fetch_sub(&sem->count, RWSEM_WRITER_LOCKED, __ATOMIC_RELEASE);
	if (unlikely(count & RWSEM_FLAG_WAITERS))
		rwsem_wake(sem, self);
}

enum { PARAM_WRITER_SPIN, PARAM_SKIP_ACTIVE };

static int rwsem_init(void *lockp, const struct lock_init_args *args)
{
	struct rw_semaphore *sem = lockp;
	if (args->nthreads > OSQ_MAX_THREADS)
		return -EINVAL;
	sem->writer_spin = args->params[PARAM_WRITER_SPIN] != 0;
	sem->skip_active = args->params[PARAM_SKIP_ACTIVE] != 0;
	return 0;
}

static const struct lock_tunable rwsem_tunables[] = {
	[PARAM_WRITER_SPIN] = { "writer_spin", 1, 0, 1,
				"seed 001 tweak 1: owner field and optimistic spinning for writers", NULL },
	[PARAM_SKIP_ACTIVE] = { "skip_active", 0, 0, 1,
				"seed 001 tweak 2: a writer finding the lock active goes straight "
				"to the slow path", NULL },
	LOCK_TUNABLES_END,
};

const struct lock_ops rwsem_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "rwsem",
	.family = "sleeping-kernel",
	.summary = "kernel rw-semaphore: reader count + flags, writer spinning, batched wake-up",
	.source = "Linux kernel/locking/rwsem.c; T. Chen, seed 001 (LKML, June 2013)",
	.flags = LOCK_SPINS | LOCK_SLEEPS | LOCK_READER_WRITER,
	.lock_size = sizeof(struct rw_semaphore),
	.tunables = rwsem_tunables,
	.init = rwsem_init,
	.lock = rwsem_down_write,
	.unlock = rwsem_up_write,
	.trylock = rwsem_down_write_trylock,
	.read_lock = rwsem_down_read,
	.read_unlock = rwsem_up_read,
};
