/* SPDX-License-Identifier: MIT */
/*
 * rtmutex: the kernel's priority-inheritance mutex, seed 000's six variants of it, and the
 * adaptive real-time lock of seed 003.
 *
 * Sources: kernel/locking/rtmutex.c (I. Molnar, T. Gleixner, S. Rostedt et al.); the thread
 * "Fix data race in mark_rt_mutex_waiters" (LKML, January 2023) for the variants; G. Haskins et
 * al., "adaptive real-time locks" (LKML, 2008) and the mainline spin-on-owner of 2021 for the
 * adaptive lock. Written from shared/notes/algorithms.md (a) and (b).
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
 * Seed 000's variants differ only in two helpers (the variant param, or the lock names
 * rtmutex-k0 .. rtmutex-k5):
 *   mark_waiters  k0: a relaxed CAS loop that starts from a PLAIN load, then smp_mb__after_atomic
 *                     (the plain load is the data race KCSAN reported);
 *                 k2 (and k4): the load becomes READ_ONCE;
 *                 k3 (and k5): the loop becomes one relaxed atomic_long_or, no fence.
 *   set_owner     k0: xchg_acquire (the acquire added by the 2022 arm64 PREEMPT_RT hang fix);
 *                 k1 (and k4, k5): a plain relaxed store.
 * k5 keeps neither the fence nor the acquire, so a slow-path taker that finds the lock just
 * released by a fast-path unlock is not ordered after that owner's critical section: on x86
 * the hardware orders it anyway, ThreadSanitizer (and arm64) need not. That, and the plain
 * load of k0/k1, is what the thread argued about; TSAN shows both.
 *
 * Userspace mapping: a thread's priority is its SCHED_FIFO priority (0 = SCHED_OTHER), read
 * when it first takes a lock; boosting is sched_setscheduler() on the owner's thread id, which
 * needs privilege (without it the lock still works, without inheritance, and says so once).
 * "Running" is a flag the owner clears while it sleeps in a lock: userspace cannot see whether
 * another thread is on a CPU. The kernel does the boost with wait_lock dropped in steps; here
 * it is done under wait_lock (a syscall under a spinlock lengthens its hold, which is measured).
 *
 * Adaptive (rtmutex_adaptive): the top waiter's spin is bounded by a budget in ns (the 2008
 * series had a timeout whose default was not found; mainline has none, and the stock lock
 * here stops only at RESCHED_NS, its stand-in for need_resched), and lateral steal can be
 * turned off.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lock_task.h"
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

/* Seed 000's variants, as the two differences they make. */
enum {
	VARIANT_SET_OWNER_RELAXED = 1u << 0, /* k1, k4, k5 */
	VARIANT_MARK_READ_ONCE = 1u << 1,    /* k2, k4 */
	VARIANT_MARK_OR = 1u << 2,           /* k3, k5 */
};

static const unsigned int variant_bits[6] = {
	0,
	VARIANT_SET_OWNER_RELAXED,
	VARIANT_MARK_READ_ONCE,
	VARIANT_MARK_OR,
	VARIANT_SET_OWNER_RELAXED | VARIANT_MARK_READ_ONCE,
	VARIANT_SET_OWNER_RELAXED | VARIANT_MARK_OR,
};

struct rtmutex;

/* What the lock needs of a task_struct; lives in the thread's queue node 3. */
struct rt_task {
	struct lock_task base; /* first: whether it is asleep in a lock */
	pid_t tid;             /* 0 until the thread first uses an rtmutex */
	int normal_prio;       /* its own SCHED_FIFO priority, 0 for SCHED_OTHER */
	int prio;              /* effective priority, after inheritance */
	u32 pi_lock;           /* protects owned and prio; taken inside a lock's wait_lock */
	struct rtmutex *blocked_on;
	struct rtmutex *owned; /* locks it holds that have waiters: their top waiters boost it */
};

struct rt_waiter {
	struct rt_waiter *next;
	struct rt_task *task;
	int prio;
	u32 wake; /* futex word: the unlocker sets 1 */
};

struct rtmutex {
	uintptr_t owner;           /* struct rt_task * | RT_MUTEX_HAS_WAITERS */
	u32 wait_lock;             /* protects everything below */
	struct rt_waiter *waiters; /* highest priority first, FIFO among equals */
	struct rtmutex *next_owned;
	/* configuration, set by init */
	unsigned int variant;
	bool adaptive;
	bool lateral_steal;
	u64 spin_budget_ns;
};

_Static_assert(sizeof(struct rt_task) <= LOCK_QNODE_BYTES, "rt_task fits a queue node");
_Static_assert(sizeof(struct rt_waiter) <= LOCK_QNODE_BYTES, "rt_waiter fits a queue node");

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
static void pi_attach(struct rt_task *task, struct rtmutex *lock)
{
	raw_spin_lock(&task->pi_lock);
	struct rtmutex *held = task->owned;
	while (held && held != lock)
		held = held->next_owned;
	if (held == NULL) {
		lock->next_owned = task->owned;
		task->owned = lock;
	}
	adjust_prio_locked(task);
	raw_spin_unlock(&task->pi_lock);
}

/* `task` releases `lock`: its waiters stop counting (the de-boost itself is pi_adjust). */
static void pi_detach(struct rt_task *task, struct rtmutex *lock)
{
	raw_spin_lock(&task->pi_lock);
	struct rtmutex **link = &task->owned;
	while (*link && *link != lock)
		link = &(*link)->next_owned;
	if (*link)
		*link = lock->next_owned;
	lock->next_owned = NULL;
	raw_spin_unlock(&task->pi_lock);
}

static void pi_adjust(struct rt_task *task)
{
	raw_spin_lock(&task->pi_lock);
	adjust_prio_locked(task);
	raw_spin_unlock(&task->pi_lock);
}

/* ---- the owner word ------------------------------------------------------------------------ */

static inline struct rt_task *rt_mutex_owner(const struct rtmutex *lock)
{
	return (struct rt_task *)(READ_ONCE(lock->owner) & ~RT_MUTEX_HAS_WAITERS);
}

static inline void mark_waiters(struct rtmutex *lock)
{
	if (lock->variant & VARIANT_MARK_OR) {
		__atomic_fetch_or(&lock->owner, RT_MUTEX_HAS_WAITERS, __ATOMIC_RELAXED);
		return;
	}
	uintptr_t owner;
	if (lock->variant & VARIANT_MARK_READ_ONCE)
		owner = READ_ONCE(lock->owner);
	else
		owner = lock->owner; /* the plain load of the stock kernel: a data race */
#ifdef __SANITIZE_THREAD__
	/*
	 * ThreadSanitizer does not model fences: the same ordering, said as a fully ordered CAS
	 * (a full barrier right after a successful RMW gives that RMW acquire+release).
	 */
	while (!__atomic_compare_exchange_n(&lock->owner, &owner, owner | RT_MUTEX_HAS_WAITERS,
					    false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
#else
	while (!try_cmpxchg_relaxed(&lock->owner, &owner, owner | RT_MUTEX_HAS_WAITERS))
		;
	smp_mb__after_atomic();
#endif
}

static inline void set_owner(struct rtmutex *lock, struct rt_task *task, bool waiters)
{
	uintptr_t value = (uintptr_t)task | (waiters ? RT_MUTEX_HAS_WAITERS : 0);
	if (lock->variant & VARIANT_SET_OWNER_RELAXED)
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
static bool try_to_take(struct rtmutex *lock, struct rt_task *task, struct rt_waiter *waiter)
{
	mark_waiters(lock);
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
	set_owner(lock, task, waiters);
	if (waiters)
		pi_attach(task, lock); /* the remaining top waiter boosts us */
	return true;
}

/*
 * Priority inheritance: `lock`'s top waiter changed; boost its owner, and if that owner is
 * itself waiting for another rtmutex, carry the boost along the chain. Each further lock's
 * wait_lock is only tried, never waited for, so the walk cannot deadlock; it stops at
 * MAX_LOCK_DEPTH. (In locklab-bench every thread uses one lock: the chain has depth 1.)
 */
static void boost_chain(struct rtmutex *lock)
{
	struct rt_task *owner = rt_mutex_owner(lock);
	for (int depth = 0; owner && depth < MAX_LOCK_DEPTH; depth++) {
		pi_attach(owner, lock);
		struct rtmutex *next = READ_ONCE(owner->blocked_on);
		if (next == NULL || next == lock || !raw_spin_trylock(&next->wait_lock))
			return;
		/* Requeue the owner's own waiter in `next` at its new priority. */
		for (struct rt_waiter *w = next->waiters; w; w = w->next) {
			if (w->task == owner && w->prio != READ_ONCE(owner->prio)) {
				dequeue_waiter(next, w);
				WRITE_ONCE(w->prio, READ_ONCE(owner->prio));
				enqueue_waiter(next, w);
				break;
			}
		}
		struct rt_task *next_owner = rt_mutex_owner(next);
		raw_spin_unlock(&next->wait_lock);
		lock = next;
		owner = next_owner;
	}
}

static u64 now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

/*
 * The top waiter spins while the owner is unchanged and running (adaptive: and within its
 * budget). Returns true to try again at once, false to sleep.
 */
static bool spin_on_owner(struct rtmutex *lock, struct rt_waiter *waiter, struct rt_task *owner)
{
	u64 deadline = now_ns() + (lock->adaptive ? lock->spin_budget_ns : RESCHED_NS);
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

static void rt_mutex_slowlock(struct rtmutex *lock, struct rt_task *task, struct rt_waiter *waiter)
{
	raw_spin_lock(&lock->wait_lock);
	if (try_to_take(lock, task, NULL)) {
		raw_spin_unlock(&lock->wait_lock);
		return;
	}
	waiter->task = task;
	waiter->prio = READ_ONCE(task->prio);
	waiter->wake = 0;
	WRITE_ONCE(task->blocked_on, lock);
	enqueue_waiter(lock, waiter);
	if (lock->waiters == waiter)
		boost_chain(lock);

	for (;;) {
		if (try_to_take(lock, task, waiter))
			break;
		struct rt_task *owner = rt_mutex_owner(lock);
		bool top = lock->waiters == waiter;
		WRITE_ONCE(waiter->wake, 0); /* a wake after this point is not lost */
		raw_spin_unlock(&lock->wait_lock);

		if (!(top && owner && spin_on_owner(lock, waiter, owner))) {
			lock_task_sleep(&task->base, &waiter->wake, 0);
		}
		raw_spin_lock(&lock->wait_lock);
	}
	WRITE_ONCE(task->blocked_on, NULL);
	raw_spin_unlock(&lock->wait_lock);
}

static void rt_mutex_slowunlock(struct rtmutex *lock, struct rt_task *task)
{
	struct rt_waiter *top;

	raw_spin_lock(&lock->wait_lock);
	pi_detach(task, lock);
	top = lock->waiters;
	if (top == NULL) {
		/* Only wait_lock holders set bit 0 and only the owner clears the owner: safe. */
		smp_store_release(&lock->owner, 0);
		raw_spin_unlock(&lock->wait_lock);
		pi_adjust(task);
		return;
	}
	/* Free, but with waiters: fast paths still fail; the top waiter takes it. */
	smp_store_release(&lock->owner, RT_MUTEX_HAS_WAITERS);
	WRITE_ONCE(top->wake, 1);
	u32 *wake = &top->wake; /* waiter nodes live as long as their thread: safe after unlock */
	raw_spin_unlock(&lock->wait_lock);
	futex_wake_one(wake);
	/*
	 * De-boost only now, as the kernel does (its wake-up runs with preemption off): dropping
	 * our priority before the top waiter is awake would let a medium-priority thread preempt
	 * us between the two, the very inversion this lock exists to prevent.
	 */
	pi_adjust(task);
}

/* ---- lock ops ------------------------------------------------------------------------------ */

static void rtmutex_lock(void *lockp, struct lock_thread *self)
{
	struct rtmutex *lock = lockp;
	struct rt_task *task = rt_task_of(self);
	uintptr_t expected = 0;

	if (likely(__atomic_compare_exchange_n(&lock->owner, &expected, (uintptr_t)task, false,
					       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
		return;
	rt_mutex_slowlock(lock, task, lock_qnode(self, 2, struct rt_waiter));
}

static bool rtmutex_trylock(void *lockp, struct lock_thread *self)
{
	struct rtmutex *lock = lockp;
	struct rt_task *task = rt_task_of(self);
	uintptr_t expected = 0;
	return __atomic_compare_exchange_n(&lock->owner, &expected, (uintptr_t)task, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
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

static int rtmutex_init_variant(struct rtmutex *lock, long variant)
{
	if (variant < 0 || variant > 5)
		return -EINVAL;
	lock->variant = variant_bits[variant];
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
	/* The owner-word helpers of k2 (READ_ONCE, full barrier, acquire): race-free, all orders. */
	lock->variant = variant_bits[2];
	lock->adaptive = true;
	lock->spin_budget_ns = (u64)args->params[PARAM_SPIN_BUDGET_NS];
	lock->lateral_steal = args->params[PARAM_LATERAL_STEAL] != 0;
	return 0;
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

static const struct lock_tunable rtmutex_tunables[] = {
	[PARAM_VARIANT] = { "variant", 0, 0, 5,
			    "seed 000's kernels: 0 stock, 1 rmacq, 2 readonce, 3 alongor, "
			    "4 rmacq+readonce, 5 rmacq+alongor" },
	LOCK_TUNABLES_END,
};

static const struct lock_tunable adaptive_tunables[] = {
	[PARAM_SPIN_BUDGET_NS] = { "spin_budget_ns", 20000, 0, 1000000000,
				   "how long the top waiter spins on a running owner (ns)" },
	[PARAM_LATERAL_STEAL] = { "lateral_steal", 1, 0, 1,
				  "let an equal-priority (non-RT) thread take a free lock ahead "
				  "of the top waiter" },
	LOCK_TUNABLES_END,
};

#define RTMUTEX_OPS(ops_name, lock_name, summary_text, init_fn, tunables_table)                \
	const struct lock_ops ops_name = {                                                     \
		.abi_version = LOCKLAB_ABI_VERSION,                                            \
		.name = lock_name,                                                             \
		.family = "sleeping-rt",                                                       \
		.summary = summary_text,                                                       \
		.source = "Linux kernel/locking/rtmutex.c; LKML 'Fix data race in "            \
			  "mark_rt_mutex_waiters' (Jan 2023)",                                 \
		.flags = LOCK_SPINS | LOCK_SLEEPS | LOCK_PRIO_INHERIT,                         \
		.lock_size = sizeof(struct rtmutex),                                           \
		.tunables = tunables_table,                                                    \
		.init = init_fn,                                                               \
		.lock = rtmutex_lock,                                                          \
		.unlock = rtmutex_unlock,                                                      \
		.trylock = rtmutex_trylock,                                                    \
	}

RTMUTEX_OPS(rtmutex_ops, "rtmutex", "priority-inheritance mutex; seed 000 variant by param",
	    rtmutex_init, rtmutex_tunables);
RTMUTEX_OPS(rtmutex_k0_ops, "rtmutex-k0", "rtmutex k0 stock: plain load + CAS loop, xchg_acquire",
	    rtmutex_k0_init, no_tunables);
RTMUTEX_OPS(rtmutex_k1_ops, "rtmutex-k1", "rtmutex k1 rmacq: set_owner is a relaxed store",
	    rtmutex_k1_init, no_tunables);
RTMUTEX_OPS(rtmutex_k2_ops, "rtmutex-k2", "rtmutex k2 readonce: mark_waiters loads READ_ONCE",
	    rtmutex_k2_init, no_tunables);
RTMUTEX_OPS(rtmutex_k3_ops, "rtmutex-k3", "rtmutex k3 alongor: mark_waiters is one relaxed OR",
	    rtmutex_k3_init, no_tunables);
RTMUTEX_OPS(rtmutex_k4_ops, "rtmutex-k4", "rtmutex k4: rmacq + readonce", rtmutex_k4_init,
	    no_tunables);
RTMUTEX_OPS(rtmutex_k5_ops, "rtmutex-k5", "rtmutex k5: rmacq + alongor (no acquire left)",
	    rtmutex_k5_init, no_tunables);

const struct lock_ops rtmutex_adaptive_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "rtmutex_adaptive",
	.family = "sleeping-rt",
	.summary = "adaptive rtmutex: top waiter spins on a running owner within a budget",
	.source = "G. Haskins et al., adaptive real-time locks, LKML 2008; kernel rtmutex "
		  "spin-on-owner (2021)",
	.flags = LOCK_SPINS | LOCK_SLEEPS | LOCK_PRIO_INHERIT,
	.lock_size = sizeof(struct rtmutex),
	.tunables = adaptive_tunables,
	.init = rtmutex_adaptive_init,
	.lock = rtmutex_lock,
	.unlock = rtmutex_unlock,
	.trylock = rtmutex_trylock,
};
