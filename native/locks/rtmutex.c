/* SPDX-License-Identifier: MIT */
/*
 * rtmutex: the kernel's priority-inheritance mutex, seed 000's six variants of it, and seed
 * 003's adaptive real-time lock with its non-spinning baseline.
 *
 * Sources: kernel/locking/rtmutex.c of Linux 6.1/6.2 (I. Molnar, T. Gleixner, S. Rostedt et
 * al.; Documentation/locking/rt-mutex-design.rst); for the variants, the LKML thread "Fix data
 * race in mark_rt_mutex_waiters" (Hernan Ponce de Leon, Peter Zijlstra, Antonio Paolillo,
 * 20 Jan - 1 Mar 2023, https://lkml.org/lkml/2023/1/20/702, measured on v6.2-rc6) and the 2022
 * commit that made rt_mutex_set_owner() xchg_acquire ("rtmutex: Add acquire semantics for
 * rtmutex lock acquisition slow path", for a PREEMPT_RT hang on arm64); for the adaptive lock,
 * G. Haskins, S. Dietrich, P. Morreale, "[(RT RFC) PATCH v2 0/9] adaptive real-time locks"
 * (LKML, 25 Feb 2008, against 2.6.24-rt1 / 2.6.24.2-rt2), and the mainline spin-on-owner of
 * 2021 (rtmutex_spin_on_owner(), Linux 5.15).
 *
 * State: `owner` is the owner's task pointer with bit 0 = HAS_WAITERS.
 *   (NULL, 0) free          (NULL, 1) free, the woken top waiter will take it
 *   (task, 0) held          (task, 1) held, with waiters
 * The fast paths (CAS-acquire NULL -> me, CAS-release me -> NULL) work only while bit 0 is
 * clear, so with waiters everyone goes through `wait_lock`, a small spinlock that protects the
 * waiter list (ordered by priority, FIFO among equals) and the priority-inheritance state.
 *
 * Slow lock: under wait_lock, try_to_take() first marks the waiters bit (forcing all fast paths
 * into the slow path), then takes a free lock if we are the top waiter or may steal it (a
 * strictly higher priority; equal priority only with lateral steal, never between real-time
 * tasks). Otherwise we enqueue, boost the owner to our priority if we are its top waiter (a
 * chain walk, if the owner is itself blocked, bounded by max_lock_depth), and wait: the top
 * waiter spins while the owner is unchanged and running, anyone else sleeps on a futex.
 * Slow unlock: no waiters -> free it; waiters -> de-boost, leave (NULL, 1) and wake the top
 * waiter, which takes it in try_to_take() unless someone stole it first.
 *
 * Ordering. The fast-path release CAS pairs with whatever a slow-path taker reads the owner
 * word with: mark_waiters()'s RMW followed by smp_mb__after_atomic() (a full barrier after an
 * RMW: that RMW is acquire and release), and, in the stock kernel, set_owner()'s xchg_acquire.
 * wait_lock orders everything else among slow paths.
 *
 * Seed 000's variants differ only in two helpers, inlined into try_to_take() as in the kernel
 * (both are __always_inline there):
 *   mark_waiters  k0 stock: a relaxed cmpxchg loop, each try from a PLAIN load of the owner
 *                     (the data race KCSAN reported), then smp_mb__after_atomic();
 *                 k2 readonce (and k4): the load becomes READ_ONCE;
 *                 k3 alongor (and k5): the loop becomes one relaxed atomic_long_or; the
 *                     smp_mb__after_atomic() stays (the patch replaced only the loop; Peter
 *                     Zijlstra: an atomic_long_or "would need to retain the barrier").
 *   set_owner     k0: xchg_acquire (the 2022 arm64 fix above);
 *                 k1 rmacq (and k4, k5): a plain store (WRITE_ONCE).
 * Every variant is ordered by mark_waiters' barrier, so all six are sound; k0 and k1 keep the
 * plain load, which ThreadSanitizer reports (test_rtmutex.py checks that it does).
 * On x86 the kernel compiles these to: k0/k1/k2/k4 a `lock cmpxchg` loop, k3/k5 one `lock orq
 * $1`, smp_mb__after_atomic() to nothing, xchg_acquire to `xchg`, the plain store to `mov`.
 * Each variant here is compiled separately, as each was a separate kernel: the named locks
 * rtmutex_k0 .. rtmutex_k5 each have their own try_to_take_kN() (out of line, as the kernel's
 * try_to_take_rt_mutex() is, and named so that tests can read its instructions) and slow path.
 * `rtmutex --param variant=N` reaches the same code through a pointer set at init.
 *
 * Seed 003: rtmutex_rt_2_6_24 is the lock the adaptive series was measured against: 2.6.24-rt1's
 * rtmutex, whose contended waiter sleeps at once (no spinning) and which lets only a strictly
 * higher priority steal a free lock (lateral steal came with patch 1/9 of the series).
 * rtmutex_adaptive is the series: the top waiter spins on a running owner within a budget in ns
 * (the series' timeout, whose default was not found; 0 = never spin, the baseline's behaviour),
 * with lateral steal as a tunable (patch 2/9 made it a sysctl). Both use the helpers of
 * 2.6.24: a fully ordered cmpxchg loop in mark_waiters and a plain store in set_owner, which on
 * x86 are k4's instructions exactly; here both run k4's slow path (READ_ONCE instead of the
 * plain load, so TSAN stays quiet; the same `mov` on x86), and differ only in how they spin. What differs from 2.6.24-rt: it handed an
 * unlocked rtmutex to the top waiter as "pending owner" (a task pointer plus a pending bit)
 * that a higher-priority task could steal back; here the modern (NULL, 1) state does the same
 * job (the woken top waiter takes it unless a higher-priority task takes it first).
 * The stock locks (k0..k5) spin as mainline does since 5.15, with no budget: they stop only at
 * RESCHED_NS, their stand-in for need_resched().
 *
 * Userspace mapping: a thread's priority is its SCHED_FIFO priority (0 = SCHED_OTHER), read
 * when it first takes a lock; boosting is sched_setscheduler() on the owner's thread id, which
 * needs privilege (without it the lock still works, without inheritance, and says so once).
 * "Running" is a flag the owner clears while it sleeps in a lock: userspace cannot see whether
 * another thread is on a CPU. The kernel does the boost with wait_lock dropped in steps; here
 * it is done under wait_lock (a syscall under a spinlock lengthens its hold, which is measured).
 *
 * A port beside the tree's own code (kernel:rtmutex, compiled from 6.1): kept, since it carries
 * seed 000's hand-written variants and seed 003's 2.6.24-rt locks, whose sources are not
 * installable; tests/test_ports.py holds it to the tree's code (docs/locks.md, "Ports and the
 * tree").
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lock_task.h"
/*
 * wait_lock and pi_lock: per variant, the raw spinlock of its kernel (raw_spinlock.h): the
 * queued spinlock for k0..k5 (Linux 6.1), the unfair decrement lock for rtmutex_rt_2_6_24 (x86
 * before 2.6.25), and the ticket lock for rtmutex_adaptive, which the series carried as a
 * prerequisite. Chosen at init (`raw_kind`); a task's pi_lock is taken in the form of the lock
 * whose slow path takes it (struct rt_raw_spinlock has all three words).
 */
#include "raw_spinlock.h"
#include <locklab/futex.h>
#include <locklab/kernel.h>
#include <locklab/lock.h>

#define RT_MUTEX_HAS_WAITERS 1UL
#define MAX_LOCK_DEPTH 1024
/*
 * The kernel's waiter stops spinning when it must reschedule. Userspace cannot see that (nor
 * whether the owner was preempted), so the stock lock stops after one scheduler tick's worth:
 * a SCHED_FIFO waiter spinning on the CPU of a preempted owner would otherwise never yield.
 */
#define RESCHED_NS 1000000u

/*
 * Seed 000's variants, as the two differences they make. Compile-time constants: each named
 * variant is its own instantiation of the slow path, as each was its own kernel.
 */
#define VARIANT_SET_OWNER_RELAXED (1u << 0) /* k1, k4, k5 */
#define VARIANT_MARK_READ_ONCE (1u << 1)    /* k2, k4 */
#define VARIANT_MARK_OR (1u << 2)           /* k3, k5 */
#define VARIANT_K0 0u
#define VARIANT_K1 VARIANT_SET_OWNER_RELAXED
#define VARIANT_K2 VARIANT_MARK_READ_ONCE
#define VARIANT_K3 VARIANT_MARK_OR
#define VARIANT_K4 (VARIANT_SET_OWNER_RELAXED | VARIANT_MARK_READ_ONCE)
#define VARIANT_K5 (VARIANT_SET_OWNER_RELAXED | VARIANT_MARK_OR)

/*
 * An out-of-line function that keeps its own name in the binary: not inlined, not cloned for
 * constant arguments, not merged with an identical twin (k1 and k4 compile to the same x86
 * code), so its instructions can be read per variant (tests/test_rtmutex.py does).
 */
#ifdef __clang__
#define noinline_named __attribute__((noinline))
#else
#define noinline_named __attribute__((noinline, noclone, no_icf))
#endif

struct rtmutex;

/* Which raw spinlock a variant's kernel had (raw_spinlock.h). */
enum rt_raw_kind {
	RT_RAW_QUEUED, /* Linux 6.1 */
	RT_RAW_TICKET, /* x86 2.6.25 .. 4.1, and the adaptive series on 2.6.24-rt */
	RT_RAW_DEC,    /* x86 up to 2.6.24 */
};

/*
 * A raw spinlock of any of those kernels; the lock's raw_kind says which word is used. Words
 * side by side, not a union: a thread may use rtmutexes of several kernels one after the other
 * (the unit test does, so could an interposed program), and a free ticket lock's word is not
 * 0, so a task's pi_lock must not be read in another form afterwards.
 */
struct rt_raw_spinlock {
	struct qspinlock queued;
	struct raw_ticket_spinlock ticket;
	struct raw_dec_spinlock dec;
};

/* What the lock needs of a task_struct; lives in the thread's LOCK_QNODE_TASK node. */
struct rt_task {
	struct lock_task base; /* first: whether it is asleep in a lock */
	pid_t tid;             /* 0 until the thread first uses an rtmutex */
	int normal_prio;       /* its own SCHED_FIFO priority, 0 for SCHED_OTHER */
	int prio;              /* effective priority, after inheritance */
	struct rt_raw_spinlock pi_lock; /* protects owned and prio; taken inside a wait_lock */
	struct rtmutex *blocked_on;
	struct rtmutex *owned; /* locks it holds that have waiters: their top waiters boost it */
};

/*
 * On the waiting thread's stack, as the kernel's: the unlocker reads it, and the thread's next
 * calls write over it once it has the lock. Its wake-up is by task (lock_task_wake()).
 */
struct rt_waiter {
	struct rt_waiter *next;
	struct rt_task *task;
	int prio;
};

typedef void rt_mutex_slowlock_fn(struct rtmutex *lock, struct rt_task *task);

struct rtmutex {
	uintptr_t owner;           /* struct rt_task * | RT_MUTEX_HAS_WAITERS */
	struct rt_raw_spinlock wait_lock; /* protects everything below */
	struct rt_waiter *waiters; /* highest priority first, FIFO among equals */
	struct rtmutex *next_owned;
	/* configuration, set by init */
	rt_mutex_slowlock_fn *slowlock; /* the variant's slow path, for `rtmutex --param variant` */
	bool lateral_steal;
	enum rt_raw_kind raw_kind; /* the raw spinlock of the variant's kernel */
	u64 spin_budget_ns; /* how long the top waiter spins on a running owner; 0: it never does */
};

_Static_assert(sizeof(struct rt_task) <= LOCK_QNODE_BYTES, "rt_task fits a queue node");

/* The thread whose task this is (the task lives in its LOCK_QNODE_TASK slot). */
static inline struct lock_thread *rt_thread_of(struct rt_task *task)
{
	return (struct lock_thread *)(void *)((char *)task -
					      offsetof(struct lock_thread, qnode[LOCK_QNODE_TASK]));
}

/* Take a raw spinlock of `lock`'s kernel; `me` is the calling thread's task (its queue nodes). */
static inline void rt_raw_lock(const struct rtmutex *lock, struct rt_raw_spinlock *raw,
			       struct rt_task *me)
{
	switch (lock->raw_kind) {
	case RT_RAW_QUEUED: raw_qspin_lock(&raw->queued, rt_thread_of(me)); break;
	case RT_RAW_TICKET: raw_ticket_spin_lock(&raw->ticket); break;
	case RT_RAW_DEC: raw_dec_spin_lock(&raw->dec); break;
	}
}

static inline bool rt_raw_trylock(const struct rtmutex *lock, struct rt_raw_spinlock *raw)
{
	switch (lock->raw_kind) {
	case RT_RAW_TICKET: return raw_ticket_spin_trylock(&raw->ticket);
	case RT_RAW_DEC: return raw_dec_spin_trylock(&raw->dec);
	default: return raw_qspin_trylock(&raw->queued);
	}
}

static inline void rt_raw_unlock(const struct rtmutex *lock, struct rt_raw_spinlock *raw)
{
	switch (lock->raw_kind) {
	case RT_RAW_QUEUED: raw_qspin_unlock(&raw->queued); break;
	case RT_RAW_TICKET: raw_ticket_spin_unlock(&raw->ticket); break;
	case RT_RAW_DEC: raw_dec_spin_unlock(&raw->dec); break;
	}
}

/* ---- tasks and priorities ------------------------------------------------------------------ */

static bool pi_warned;

static struct rt_task *rt_task_of(struct lock_thread *self)
{
	struct rt_task *task = (struct rt_task *)lock_task_of(self);
	if (unlikely(task->tid == 0)) {
		/*
		 * Other threads read these through the owner word, which the fast path sets with
		 * ACQUIRE only (no release): hence the marked stores here and loads there.
		 */
		struct sched_param param;
		int prio = sched_getscheduler(0) == SCHED_FIFO && sched_getparam(0, &param) == 0
				   ? param.sched_priority
				   : 0;
		WRITE_ONCE(task->normal_prio, prio);
		WRITE_ONCE(task->prio, prio);
		WRITE_ONCE(task->tid, (pid_t)syscall(SYS_gettid));
	}
	return task;
}

/* Make the scheduler run `task` at `prio` (SCHED_FIFO), or back at SCHED_OTHER for 0. */
static void apply_prio(struct rt_task *task, int prio)
{
	struct sched_param param = { .sched_priority = prio };
	if (sched_setscheduler(READ_ONCE(task->tid), prio > 0 ? SCHED_FIFO : SCHED_OTHER, &param) != 0 &&
	    !__atomic_exchange_n(&pi_warned, true, __ATOMIC_RELAXED))
		fprintf(stderr, "locklab-bench: rtmutex: cannot change a thread's priority (%s): "
				"running without priority inheritance\n",
			strerror(errno));
}

static int top_waiter_prio(const struct rtmutex *lock)
{
	const struct rt_waiter *top = READ_ONCE(lock->waiters);
	return top ? READ_ONCE(top->prio) : 0;
}

/* The task's effective priority: its own, or its highest top waiter's. Holds pi_lock. */
static void adjust_prio_locked(struct rt_task *task)
{
	int prio = READ_ONCE(task->normal_prio);
	for (struct rtmutex *lock = task->owned; lock; lock = lock->next_owned)
		if (top_waiter_prio(lock) > prio)
			prio = top_waiter_prio(lock);
	if (prio != READ_ONCE(task->prio)) {
		WRITE_ONCE(task->prio, prio);
		apply_prio(task, prio);
	}
}

/*
 * `lock` (held by `task`) has waiters: make sure they count for task's priority, and
 * recompute it. Called with lock->wait_lock held.
 */
static void pi_attach(struct rt_task *task, struct rtmutex *lock, struct rt_task *me)
{
	rt_raw_lock(lock, &task->pi_lock, me);
	struct rtmutex *held = task->owned;
	while (held && held != lock)
		held = held->next_owned;
	if (held == NULL) {
		lock->next_owned = task->owned;
		task->owned = lock;
	}
	adjust_prio_locked(task);
	rt_raw_unlock(lock, &task->pi_lock);
}

/* `task` releases `lock`: its waiters stop counting (the de-boost itself is pi_adjust). */
static void pi_detach(struct rt_task *task, struct rtmutex *lock)
{
	rt_raw_lock(lock, &task->pi_lock, task);
	struct rtmutex **link = &task->owned;
	while (*link && *link != lock)
		link = &(*link)->next_owned;
	if (*link)
		*link = lock->next_owned;
	lock->next_owned = NULL;
	rt_raw_unlock(lock, &task->pi_lock);
}

static void pi_adjust(struct rt_task *task, const struct rtmutex *lock)
{
	rt_raw_lock(lock, &task->pi_lock, task);
	adjust_prio_locked(task);
	rt_raw_unlock(lock, &task->pi_lock);
}

/* ---- the owner word ------------------------------------------------------------------------ */

static inline struct rt_task *rt_mutex_owner(const struct rtmutex *lock)
{
	return (struct rt_task *)(READ_ONCE(lock->owner) & ~RT_MUTEX_HAS_WAITERS);
}

/*
 * Set HAS_WAITERS, so that no fast path can take or release the lock behind wait_lock's back,
 * and order what follows after the fast-path release that may have freed it. The RMW is relaxed
 * "to avoid back-to-back ACQUIRE operations in the event of contention" (the kernel's comment);
 * smp_mb__after_atomic() makes it a full barrier (MB_ATOMIC_ORDER: see kernel.h for TSAN).
 */
static __attribute__((always_inline)) inline void mark_waiters(struct rtmutex *lock,
							       unsigned int variant)
{
	if (variant & VARIANT_MARK_OR) {
		/* atomic_long_or(RT_MUTEX_HAS_WAITERS, &lock->owner): one `lock or` on x86. */
		(void)__atomic_fetch_or(&lock->owner, RT_MUTEX_HAS_WAITERS, MB_ATOMIC_ORDER);
	} else {
		uintptr_t owner, found;
		do {
			if (variant & VARIANT_MARK_READ_ONCE)
				owner = READ_ONCE(lock->owner);
			else
				owner = lock->owner; /* the stock plain load: the data race */
			found = owner;
			/* cmpxchg_relaxed(&lock->owner, owner, owner | HAS_WAITERS) != owner */
			__atomic_compare_exchange_n(&lock->owner, &found,
						    owner | RT_MUTEX_HAS_WAITERS, false,
						    MB_ATOMIC_ORDER, __ATOMIC_RELAXED);
		} while (found != owner);
	}
	smp_mb__after_atomic();
}

static __attribute__((always_inline)) inline void set_owner(struct rtmutex *lock,
							    struct rt_task *task, bool waiters,
							    unsigned int variant)
{
	uintptr_t value = (uintptr_t)task | (waiters ? RT_MUTEX_HAS_WAITERS : 0);
	if (variant & VARIANT_SET_OWNER_RELAXED)
		WRITE_ONCE(lock->owner, value);
	else
		(void)xchg_acquire(&lock->owner, value);
}

/* ---- the waiter list ----------------------------------------------------------------------- */

/* Links change under wait_lock; WRITE_ONCE because the spinning top waiter reads the head. */
static void enqueue_waiter(struct rtmutex *lock, struct rt_waiter *waiter)
{
	struct rt_waiter **link = &lock->waiters;
	while (*link && (*link)->prio >= waiter->prio) /* FIFO among equals */
		link = &(*link)->next;
	waiter->next = *link;
	WRITE_ONCE(*link, waiter);
}

static void dequeue_waiter(struct rtmutex *lock, struct rt_waiter *waiter)
{
	struct rt_waiter **link = &lock->waiters;
	while (*link && *link != waiter)
		link = &(*link)->next;
	if (*link)
		WRITE_ONCE(*link, waiter->next);
	waiter->next = NULL;
}

/* May a task of priority `prio` take the free lock ahead of the top waiter? */
static bool may_steal(const struct rtmutex *lock, int prio, const struct rt_waiter *top)
{
	if (prio > top->prio)
		return true;
	/* Lateral steal: equal priority, never between real-time tasks (unbounded latency). */
	return lock->lateral_steal && prio == top->prio && prio == 0;
}

/* Caller holds wait_lock. `waiter` is NULL on the first try, before enqueueing. */
static __attribute__((always_inline)) inline bool
try_to_take(struct rtmutex *lock, struct rt_task *task, struct rt_waiter *waiter,
	    unsigned int variant)
{
	mark_waiters(lock, variant);
	if (rt_mutex_owner(lock) != NULL)
		return false;
	struct rt_waiter *top = lock->waiters;
	if (waiter) {
		if (waiter != top && !may_steal(lock, waiter->prio, top))
			return false;
		dequeue_waiter(lock, waiter);
	} else if (top && !may_steal(lock, task->prio, top)) {
		return false;
	}
	bool waiters = lock->waiters != NULL;
	set_owner(lock, task, waiters, variant);
	if (waiters)
		pi_attach(task, lock, task); /* the remaining top waiter boosts us */
	return true;
}

/*
 * Priority inheritance: `lock`'s top waiter changed; boost its owner, and if that owner is
 * itself waiting for another rtmutex, carry the boost along the chain. Called with
 * lock->wait_lock held. Each further lock's wait_lock is only tried, never waited for, so the
 * walk cannot deadlock, and is held while that lock's owner is boosted from its waiters (who
 * live on their threads' stacks, as long as they are queued, which wait_lock keeps them); it
 * stops at MAX_LOCK_DEPTH. (In locklab-bench every thread uses one lock: the chain has depth 1.)
 */
static void boost_chain(struct rtmutex *lock, struct rt_task *me)
{
	struct rtmutex *held = NULL; /* the last further lock whose wait_lock the walk took */
	struct rt_task *owner = rt_mutex_owner(lock);
	for (int depth = 0; owner && depth < MAX_LOCK_DEPTH; depth++) {
		pi_attach(owner, lock, me);
		struct rtmutex *next = READ_ONCE(owner->blocked_on);
		if (next == NULL || next == lock || !rt_raw_trylock(next, &next->wait_lock))
			break;
		if (held)
			rt_raw_unlock(held, &held->wait_lock);
		held = next;
		/* Requeue the owner's own waiter in `next` at its new priority. */
		for (struct rt_waiter *w = next->waiters; w; w = w->next) {
			if (w->task == owner && w->prio != READ_ONCE(owner->prio)) {
				dequeue_waiter(next, w);
				WRITE_ONCE(w->prio, READ_ONCE(owner->prio));
				enqueue_waiter(next, w);
				break;
			}
		}
		lock = next;
		owner = rt_mutex_owner(next);
	}
	if (held)
		rt_raw_unlock(held, &held->wait_lock);
}

static u64 now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

/*
 * The top waiter spins while the owner is unchanged and running, within the lock's budget.
 * Returns true to try again at once, false to sleep. The clock is read every 64 polls, so a
 * budget is overrun by up to 63 polls; a zero budget is never spun at all (the caller does not
 * come here).
 */
static bool spin_on_owner(struct rtmutex *lock, struct rt_waiter *waiter, struct rt_task *owner)
{
	u64 deadline = now_ns() + lock->spin_budget_ns;
	for (unsigned int i = 1;; i++) {
		if (rt_mutex_owner(lock) != owner)
			return true;
		if (!lock_task_running(&owner->base) || READ_ONCE(lock->waiters) != waiter)
			return false;
		if ((i & 63) == 0 && now_ns() >= deadline)
			return false;
		cpu_relax();
	}
}

typedef bool try_to_take_fn(struct rtmutex *lock, struct rt_task *task,
			    struct rt_waiter *waiter);

/*
 * Instantiated once per variant with that variant's try_to_take, which it calls directly.
 * The task is BLOCKED from before it queues until it has the lock, and again each time it
 * comes back under wait_lock, as the kernel's set_current_state() calls make it: an unlock
 * meanwhile sets it RUNNING, so that a sleep it was about to begin does not happen.
 */
static __attribute__((always_inline)) inline void
rt_mutex_slowlock(struct rtmutex *lock, struct rt_task *task, try_to_take_fn *take)
{
	struct rt_waiter waiter;

	rt_raw_lock(lock, &lock->wait_lock, task);
	if (take(lock, task, NULL)) {
		rt_raw_unlock(lock, &lock->wait_lock);
		return;
	}
	lock_task_block(&task->base);
	waiter.next = NULL;
	waiter.task = task;
	waiter.prio = READ_ONCE(task->prio);
	WRITE_ONCE(task->blocked_on, lock);
	enqueue_waiter(lock, &waiter);
	if (lock->waiters == &waiter)
		boost_chain(lock, task);

	for (;;) {
		if (take(lock, task, &waiter))
			break;
		struct rt_task *owner = rt_mutex_owner(lock);
		bool spin = lock->waiters == &waiter && owner && lock->spin_budget_ns;
		rt_raw_unlock(lock, &lock->wait_lock);

		if (!(spin && spin_on_owner(lock, &waiter, owner)))
			lock_task_schedule(&task->base);
		rt_raw_lock(lock, &lock->wait_lock, task);
		lock_task_block(&task->base);
	}
	lock_task_unblock(&task->base);
	WRITE_ONCE(task->blocked_on, NULL);
	rt_raw_unlock(lock, &lock->wait_lock);
}

static void rt_mutex_slowunlock(struct rtmutex *lock, struct rt_task *task)
{
	struct rt_waiter *top;

	rt_raw_lock(lock, &lock->wait_lock, task);
	pi_detach(task, lock);
	top = lock->waiters;
	if (top == NULL) {
		/* Only wait_lock holders set bit 0 and only the owner clears the owner: safe. */
		smp_store_release(&lock->owner, 0);
		rt_raw_unlock(lock, &lock->wait_lock);
		pi_adjust(task, lock);
		return;
	}
	/* Free, but with waiters: fast paths still fail; the top waiter takes it. */
	smp_store_release(&lock->owner, RT_MUTEX_HAS_WAITERS);
	struct lock_task *woken = &top->task->base; /* the waiter itself may be gone after unlock */
	rt_raw_unlock(lock, &lock->wait_lock);
	lock_task_wake(woken);
	/*
	 * De-boost only now. The kernel de-boosts before the wake-up, under wait_lock, with
	 * preemption off until the wake-up is done (mark_wakeup_next_waiter()). Userspace cannot
	 * turn preemption off: dropping our priority before the top waiter is awake would let a
	 * medium-priority thread preempt us between the two, the very inversion this lock exists
	 * to prevent.
	 */
	pi_adjust(task, lock);
}

/* ---- lock ops ------------------------------------------------------------------------------ */

static __attribute__((always_inline)) inline void
rtmutex_fastlock(struct rtmutex *lock, struct lock_thread *self, rt_mutex_slowlock_fn *slowlock)
{
	struct rt_task *task = rt_task_of(self);
	uintptr_t expected = 0;

	if (likely(__atomic_compare_exchange_n(&lock->owner, &expected, (uintptr_t)task, false,
					       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		return;
	slowlock(lock, task);
}

/*
 * One variant: its try_to_take (out of line and named, see noinline_named), its slow path and
 * its lock operation, which reaches both by direct calls.
 */
#define RTMUTEX_VARIANT(name, bits)                                                            \
	static noinline_named bool try_to_take_##name(struct rtmutex *lock, struct rt_task *task, \
						      struct rt_waiter *waiter)                  \
	{                                                                                      \
		return try_to_take(lock, task, waiter, (bits));                                \
	}                                                                                      \
	static void rt_mutex_slowlock_##name(struct rtmutex *lock, struct rt_task *task)       \
	{                                                                                      \
		rt_mutex_slowlock(lock, task, try_to_take_##name);                              \
	}                                                                                      \
	static void rtmutex_lock_##name(void *lockp, struct lock_thread *self)                 \
	{                                                                                      \
		rtmutex_fastlock(lockp, self, rt_mutex_slowlock_##name);                        \
	}
RTMUTEX_VARIANT(k0, VARIANT_K0)
RTMUTEX_VARIANT(k1, VARIANT_K1)
RTMUTEX_VARIANT(k2, VARIANT_K2)
RTMUTEX_VARIANT(k3, VARIANT_K3)
RTMUTEX_VARIANT(k4, VARIANT_K4)
RTMUTEX_VARIANT(k5, VARIANT_K5)

static bool rtmutex_trylock(void *lockp, struct lock_thread *self)
{
	struct rtmutex *lock = lockp;
	struct rt_task *task = rt_task_of(self);
	uintptr_t expected = 0;
	return __atomic_compare_exchange_n(&lock->owner, &expected, (uintptr_t)task, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/*
 * `rtmutex --param variant=N`: the same slow paths, through the pointer init chose. The pointer
 * is read once the CAS has failed: read before it, on the owner's line, the load would fetch
 * that line ahead of the CAS, as seed 001's tunables did to the rwsem port (docs/locks.md).
 */
static void rtmutex_lock_by_param(void *lockp, struct lock_thread *self)
{
	struct rtmutex *lock = lockp;
	if (likely(rtmutex_trylock(lock, self)))
		return;
	lock->slowlock(lock, rt_task_of(self));
}

static void rtmutex_unlock(void *lockp, struct lock_thread *self)
{
	struct rtmutex *lock = lockp;
	struct rt_task *task = rt_task_of(self);
	uintptr_t expected = (uintptr_t)task;

	if (likely(__atomic_compare_exchange_n(&lock->owner, &expected, 0, false, __ATOMIC_RELEASE,
					       __ATOMIC_RELAXED)))
		return;
	rt_mutex_slowunlock(lock, task);
}

static rt_mutex_slowlock_fn *const variant_slowlock[6] = {
	rt_mutex_slowlock_k0, rt_mutex_slowlock_k1, rt_mutex_slowlock_k2,
	rt_mutex_slowlock_k3, rt_mutex_slowlock_k4, rt_mutex_slowlock_k5,
};

static int rtmutex_init_variant(struct rtmutex *lock, long variant)
{
	if (variant < 0 || variant > 5)
		return -EINVAL;
	lock->slowlock = variant_slowlock[variant];
	lock->spin_budget_ns = RESCHED_NS; /* mainline: spin until need_resched() */
	lock->raw_kind = RT_RAW_QUEUED; /* 6.1 */
	return 0;
}

enum { PARAM_VARIANT };

static int rtmutex_init(void *lockp, const struct lock_init_args *args)
{
	return rtmutex_init_variant(lockp, args->params[PARAM_VARIANT]);
}

#define RTMUTEX_K_INIT(k)                                                                      \
	static int rtmutex_k##k##_init(void *lockp, const struct lock_init_args *args)         \
	{                                                                                      \
		(void)args;                                                                    \
		return rtmutex_init_variant(lockp, k);                                         \
	}
RTMUTEX_K_INIT(0)
RTMUTEX_K_INIT(1)
RTMUTEX_K_INIT(2)
RTMUTEX_K_INIT(3)
RTMUTEX_K_INIT(4)
RTMUTEX_K_INIT(5)

enum { PARAM_SPIN_BUDGET_NS, PARAM_LATERAL_STEAL };

static int rtmutex_adaptive_init(void *lockp, const struct lock_init_args *args)
{
	struct rtmutex *lock = lockp;
	lock->spin_budget_ns = (u64)args->params[PARAM_SPIN_BUDGET_NS];
	lock->raw_kind = RT_RAW_TICKET; /* the series' prerequisite on 2.6.24-rt */
	lock->lateral_steal = args->params[PARAM_LATERAL_STEAL] != 0;
	return 0;
}

/* 2.6.24-rt1: never spin, steal only with a strictly higher priority. */
static int rtmutex_rt_2_6_24_init(void *lockp, const struct lock_init_args *args)
{
	struct rtmutex *lock = lockp;
	(void)args;
	lock->spin_budget_ns = 0;
	lock->lateral_steal = false;
	lock->raw_kind = RT_RAW_DEC; /* 2.6.24 on x86: the unfair decrement lock */
	return 0;
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

static const struct lock_tunable rtmutex_tunables[] = {
	[PARAM_VARIANT] = { "variant", 0, 0, 5,
			    "seed 000's kernels: 0 stock, 1 rmacq, 2 readonce, 3 alongor, "
			    "4 rmacq+readonce, 5 rmacq+alongor", NULL },
	LOCK_TUNABLES_END,
};

static const struct lock_tunable adaptive_tunables[] = {
	[PARAM_SPIN_BUDGET_NS] = { "spin_budget_ns", 20000, 0, 1000000000,
				   "how long the top waiter spins on a running owner (ns); "
				   "0: never spin (sleep at once, as 2.6.24-rt)", NULL },
	[PARAM_LATERAL_STEAL] = { "lateral_steal", 1, 0, 1,
				  "let an equal-priority (non-RT) thread take a free lock ahead "
				  "of the top waiter", NULL },
	LOCK_TUNABLES_END,
};

#define SEED_000_SOURCE                                                                        \
	"Linux v6.2-rc6 kernel/locking/rtmutex.c; LKML 'Fix data race in "                     \
	"mark_rt_mutex_waiters' (Jan 2023)"

#define RTMUTEX_SPINS (LOCK_SPINS | LOCK_SLEEPS | LOCK_PRIO_INHERIT)
#define RTMUTEX_NO_SPIN (LOCK_SLEEPS | LOCK_PRIO_INHERIT)

#define RTMUTEX_OPS(ops_name, lock_name, summary_text, source_text, flags_value, init_fn,       \
		    lock_fn, tunables_table)                                                   \
	const struct lock_ops ops_name = {                                                     \
		.abi_version = LOCKLAB_ABI_VERSION,                                            \
		.name = lock_name,                                                             \
		.family = "sleeping-rt",                                                       \
		.summary = summary_text,                                                       \
		.source = source_text,                                                         \
		.flags = flags_value,                                                          \
		.lock_size = sizeof(struct rtmutex),                                           \
		.tunables = tunables_table,                                                    \
		.init = init_fn,                                                               \
		.lock = lock_fn,                                                               \
		.unlock = rtmutex_unlock,                                                      \
		.trylock = rtmutex_trylock,                                                    \
	}

RTMUTEX_OPS(rtmutex_ops, "rtmutex", "priority-inheritance mutex; seed 000 variant by param",
	    SEED_000_SOURCE, RTMUTEX_SPINS, rtmutex_init, rtmutex_lock_by_param, rtmutex_tunables);
RTMUTEX_OPS(rtmutex_k0_ops, "rtmutex_k0",
	    "rtmutex k0 stock: plain load + relaxed CAS loop + barrier, xchg_acquire",
	    SEED_000_SOURCE, RTMUTEX_SPINS, rtmutex_k0_init, rtmutex_lock_k0, no_tunables);
RTMUTEX_OPS(rtmutex_k1_ops, "rtmutex_k1", "rtmutex k1 rmacq: set_owner is a plain store",
	    SEED_000_SOURCE, RTMUTEX_SPINS, rtmutex_k1_init, rtmutex_lock_k1, no_tunables);
RTMUTEX_OPS(rtmutex_k2_ops, "rtmutex_k2", "rtmutex k2 readonce: mark_waiters loads READ_ONCE",
	    SEED_000_SOURCE, RTMUTEX_SPINS, rtmutex_k2_init, rtmutex_lock_k2, no_tunables);
RTMUTEX_OPS(rtmutex_k3_ops, "rtmutex_k3",
	    "rtmutex k3 alongor: mark_waiters is one relaxed OR + barrier", SEED_000_SOURCE,
	    RTMUTEX_SPINS, rtmutex_k3_init, rtmutex_lock_k3, no_tunables);
RTMUTEX_OPS(rtmutex_k4_ops, "rtmutex_k4", "rtmutex k4: rmacq + readonce", SEED_000_SOURCE,
	    RTMUTEX_SPINS, rtmutex_k4_init, rtmutex_lock_k4, no_tunables);
RTMUTEX_OPS(rtmutex_k5_ops, "rtmutex_k5", "rtmutex k5: rmacq + alongor", SEED_000_SOURCE,
	    RTMUTEX_SPINS, rtmutex_k5_init, rtmutex_lock_k5, no_tunables);
RTMUTEX_OPS(rtmutex_rt_2_6_24_ops, "rtmutex_rt_2_6_24",
	    "seed 003's baseline: 2.6.24-rt rtmutex, a contended waiter sleeps at once",
	    "Linux 2.6.24-rt1 kernel/rtmutex.c (PREEMPT_RT patch, 2008), the baseline of "
	    "Haskins et al., adaptive real-time locks v2 (LKML, 25 Feb 2008)",
	    RTMUTEX_NO_SPIN, rtmutex_rt_2_6_24_init, rtmutex_lock_k4, no_tunables);
RTMUTEX_OPS(rtmutex_adaptive_ops, "rtmutex_adaptive",
	    "adaptive rtmutex: top waiter spins on a running owner within a budget",
	    "G. Haskins et al., [(RT RFC) PATCH v2 0/9] adaptive real-time locks (LKML, 25 Feb "
	    "2008, on 2.6.24-rt1); budget as its nanosecond timeout",
	    RTMUTEX_SPINS, rtmutex_adaptive_init, rtmutex_lock_k4, adaptive_tunables);
