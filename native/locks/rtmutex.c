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
 * waiter tree (ordered by priority, FIFO among equals) and the priority-inheritance state.
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
 * The bookkeeping is 6.1's, step for step, since it is what a hand-over moves between CPUs:
 * the lock's waiters and each task's pi_waiters (the top waiter of each lock it holds) in
 * red-black trees with the leftmost cached (rbtree.h), on the waiters' stacks; pi_blocked_on
 * set and cleared under the task's own pi_lock (task_blocks_on_rt_mutex(),
 * try_to_take_rt_mutex()); the owner's top pi waiter swapped and its priority adjusted under
 * the owner's pi_lock, and the scheduler's part (rt_mutex_setprio()) under the owner's
 * run-queue lock whenever its top donor changes (a waiter becomes the top waiter of an owner
 * that had none, and that owner unlocks: at every hand-over with one waiter, seldom with a
 * standing queue, since a new owner takes over the top waiter without adjusting); the woken
 * task queued on a wake_q under pi_lock and woken once wait_lock is dropped, by the steps of
 * try_to_wake_up() that touch shared lines here (its pi_lock, its state, its run-queue lock;
 * not on_rq, TASK_WAKING or the choice of a CPU); and unlock_rt_mutex_safe()'s release. Left
 * out, here as in the shim the tree's code runs on: the reference wake_q takes on the task
 * (get_task_struct(), an atomic on the line of __state). The 2.6.24-rt locks differ where
 * their kernel's scheduler did: no pi_top_task or wake_q, and a wake-up under the run-queue
 * lock alone; the order of the wake-up, the de-boost and wait_lock's release is 6.1's for
 * them too. They keep the trees, where 2.6.24 had plists (the trees came with SCHED_DEADLINE
 * in 3.14, "rtmutex: Turn the plist into an rb-tree"): seed 003 compares the two locks with
 * each other, and both have the same. Without all this, the
 * port handed over with 15 to 20 lines moved per acquisition where the tree's code moved 30
 * to 40, and ran 1.2 to 1.8 times as fast at 2 to 16 simulated writers (docs/locks.md).
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
#include "rbtree.h"
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
struct rt_waiter;

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

/* Whose bookkeeping around the lock a variant does: rt_wake_up_process(), rt_adjust_prio(). */
enum rt_kernel {
	RT_KERNEL_6_1,    /* k0..k5 */
	RT_KERNEL_2_6_24, /* seed 003's baseline and the adaptive series */
};

/*
 * What the lock needs of a task_struct; lives in the thread's LOCK_QNODE_TASK node, in two
 * lines as the kernel's task_struct keeps them apart: what the top waiter of a lock this task
 * holds polls while it spins (whether the task runs) with the state a waker sets, and what
 * every waiter of a lock the task holds writes (pi_lock and what it protects). Sharing one
 * line, a new waiter taking the owner's pi_lock would take the line from under each spinner's
 * poll. prio is on the first line here and on the next in 6.1's; it is written only when it
 * changes (never between equal priorities).
 */
struct rt_task {
	struct lock_task base; /* first: whether it is asleep in a lock (on_cpu, __state) */
	pid_t tid;             /* 0 until the thread first uses an rtmutex */
	int normal_prio;       /* its own SCHED_FIFO priority, 0 for SCHED_OTHER */
	int prio;              /* effective priority, after inheritance; written under pi_lock */
	unsigned int cpu;      /* its run queue (task_cpu()): one per thread, as one per CPU */
	alignas(64) struct rt_raw_spinlock pi_lock; /* protects the fields below, and prio */
	struct rb_root_cached pi_waiters; /* the top waiter of each lock it holds */
	struct rt_task *pi_top_task;  /* whose priority it was last set to run at (6.1) */
	struct rt_waiter *pi_blocked_on;
	struct rt_task *wake_q_next;  /* its wake_q node: NULL, or queued for one wake-up (6.1) */
};

/* A waiter's place in one tree: the kernel's struct rt_waiter_node. */
struct rt_waiter_node {
	struct rb_node entry;
	int prio;
	u64 deadline; /* SCHED_DEADLINE's order in the kernel; never such a task here, kept so
		       * that a waiter spans the lines the kernel's does */
};

/*
 * On the waiting thread's stack, as the kernel's: the unlocker reads it, and the thread's next
 * calls write over it once it has the lock. Its wake-up is by task (rt_wake_up_process()).
 */
struct rt_waiter {
	struct rt_waiter_node tree;    /* in lock->waiters, under wait_lock */
	struct rt_waiter_node pi_tree; /* in the owner's pi_waiters while this is the top waiter */
	struct rt_task *task;
	struct rtmutex *lock;
};

typedef void rt_mutex_slowlock_fn(struct rtmutex *lock, struct rt_task *task);

struct rtmutex {
	uintptr_t owner;           /* struct rt_task * | RT_MUTEX_HAS_WAITERS */
	struct rt_raw_spinlock wait_lock; /* protects everything below */
	struct rb_root_cached waiters; /* highest priority first, FIFO among equals */
	/* configuration, set by init */
	rt_mutex_slowlock_fn *slowlock; /* the variant's slow path, for `rtmutex --param variant` */
	bool lateral_steal;
	enum rt_raw_kind raw_kind; /* the raw spinlock of the variant's kernel */
	enum rt_kernel kernel;     /* and its scheduler's bookkeeping */
	u64 spin_budget_ns; /* how long the top waiter spins on a running owner; 0: it never does */
};

_Static_assert(sizeof(struct rt_task) <= LOCK_QNODE_BYTES, "rt_task fits a queue node");

/* The thread whose task this is (the task lives in its LOCK_QNODE_TASK slot). */
static inline struct lock_thread *rt_thread_of(struct rt_task *task)
{
	return (struct lock_thread *)(void *)((char *)task -
					      offsetof(struct lock_thread, qnode[LOCK_QNODE_TASK]));
}

/*
 * Take a raw spinlock of `lock`'s kernel; `me` is the calling thread's task (its queue nodes).
 * Out of line, as x86's raw_spin_lock() calls _raw_spin_lock() (no ARCH_INLINE_SPIN_LOCK), so
 * that try_to_take's own instructions are the kernel's (tests/test_rtmutex.py reads them).
 */
static __attribute__((noinline)) void rt_raw_lock(const struct rtmutex *lock,
						  struct rt_raw_spinlock *raw, struct rt_task *me)
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

/* Run queues, one per thread as one per CPU: the lock of the woken or re-prioritised task's. */
#define RT_RUNQUEUES 256
static struct {
	alignas(64) struct rt_raw_spinlock lock;
} rt_runqueue[RT_RUNQUEUES];

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
		WRITE_ONCE(task->cpu, self->index % RT_RUNQUEUES);
		WRITE_ONCE(task->tid, (pid_t)syscall(SYS_gettid));
	}
	return task;
}

static struct rt_raw_spinlock *rt_runqueue_of(const struct rt_task *task)
{
	return &rt_runqueue[READ_ONCE(task->cpu)].lock;
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

/*
 * The waiter trees, ordered as the kernel's: the more important first, FIFO among equals
 * (`prio` is the SCHED_FIFO priority here, higher is more important, where the kernel's lower
 * number is). lock->waiters under wait_lock; a task's pi_waiters, the top waiter of each lock
 * it holds, under its pi_lock.
 */
static bool waiter_less(const struct rb_node *a, const struct rb_node *b)
{
	return rb_entry(a, struct rt_waiter_node, entry)->prio >
	       rb_entry(b, struct rt_waiter_node, entry)->prio;
}

/* rt_mutex_top_waiter(); NULL when there is none. Read without wait_lock by a spinner. */
static inline struct rt_waiter *rt_top_waiter(const struct rtmutex *lock)
{
	struct rb_node *leftmost = rb_first_cached(&lock->waiters);
	return leftmost ? rb_entry(leftmost, struct rt_waiter, tree.entry) : NULL;
}

static inline bool rt_has_waiters(const struct rtmutex *lock)
{
	return lock->waiters.root != NULL;
}

static struct rt_waiter *top_pi_waiter(const struct rt_task *task)
{
	struct rb_node *leftmost = rb_first_cached(&task->pi_waiters);
	return leftmost ? rb_entry(leftmost, struct rt_waiter, pi_tree.entry) : NULL;
}

static void enqueue_pi(struct rt_task *task, struct rt_waiter *waiter)
{
	waiter->pi_tree.prio = waiter->tree.prio; /* waiter_clone_prio() */
	rb_add_cached(&waiter->pi_tree.entry, &task->pi_waiters, waiter_less);
}

static void dequeue_pi(struct rt_task *task, struct rt_waiter *waiter)
{
	rb_erase_cached_clear(&waiter->pi_tree.entry, &task->pi_waiters);
}

/*
 * rt_mutex_adjust_prio(): `task` runs at its top pi waiter's priority if that is higher than
 * its own. The scheduler's part (rt_mutex_setprio()) is done under the task's run-queue lock,
 * and in 6.1 whenever its top donor changes (pi_top_task, even between equal priorities), in
 * 2.6.24 only when its priority does. Holds task->pi_lock.
 * Returns whether the priority dropped and `defer_drop` kept the scheduler from being told.
 */
static bool rt_adjust_prio(const struct rtmutex *lock, struct rt_task *task, struct rt_task *me,
			   bool defer_drop)
{
	struct rt_waiter *top = top_pi_waiter(task);
	struct rt_task *donor = top ? top->task : NULL;
	int prio = READ_ONCE(task->normal_prio);
	if (donor && READ_ONCE(donor->prio) > prio)
		prio = READ_ONCE(donor->prio);
	int old_prio = READ_ONCE(task->prio); /* see rt_task_of(): marked, as another's */
	bool prio_changes = prio != old_prio;
	bool donor_changes = lock->kernel == RT_KERNEL_6_1 && donor != task->pi_top_task;
	if (!prio_changes && !donor_changes)
		return false;
	struct rt_raw_spinlock *runqueue = rt_runqueue_of(task);
	bool deferred = false;
	rt_raw_lock(lock, runqueue, me);
	if (donor_changes)
		WRITE_ONCE(task->pi_top_task, donor);
	if (prio_changes) {
		deferred = defer_drop && prio < old_prio;
		WRITE_ONCE(task->prio, prio);
		if (!deferred)
			apply_prio(task, prio);
	}
	rt_raw_unlock(lock, runqueue);
	return deferred;
}

/*
 * try_to_wake_up() of a task, after the caller has stored what it waits for: BLOCKED ->
 * RUNNING (nothing if the task is not blocked: it has not looked yet, and will see the
 * caller's stores), then under its CPU's run-queue lock the system call only if it is asleep
 * or about to be (lock_task_schedule()); a task still on its CPU only has its state flipped,
 * as ttwu_runnable() does. Since Linux 3.0 the woken task's pi_lock serialises its wakers and
 * comes first ("sched: Serialize p->cpus_allowed and ttwu() using p->pi_lock"); 2.6.24 took the
 * run-queue lock alone, and read the state under it. The full barriers are the kernel's
 * smp_mb__after_spinlock() and the lock's own on x86.
 */
static void rt_wake_up_process(const struct rtmutex *lock, struct rt_task *task,
			       struct rt_task *me)
{
	struct rt_raw_spinlock *runqueue = rt_runqueue_of(task);

	if (lock->kernel == RT_KERNEL_6_1) {
		rt_raw_lock(lock, &task->pi_lock, me);
		smp_mb();
		if (lock_task_set_running(&task->base)) {
			rt_raw_lock(lock, runqueue, me);
			lock_task_kick(&task->base);
			rt_raw_unlock(lock, runqueue);
		}
		rt_raw_unlock(lock, &task->pi_lock);
		return;
	}
	rt_raw_lock(lock, runqueue, me);
	smp_mb();
	if (lock_task_set_running(&task->base))
		lock_task_kick(&task->base);
	rt_raw_unlock(lock, runqueue);
}

/*
 * 6.1's wake_q, for the one task an unlock wakes: wake_q_add() marks the task queued (a task
 * is queued for one wake-up at most: a waker that finds it queued leaves the wake-up to the
 * one that queued it), wake_up_q() clears the mark and wakes it once wait_lock is dropped.
 */
#define RT_WAKE_Q_TAIL ((struct rt_task *)1)

static bool rt_wake_q_add(struct rt_task *task)
{
	struct rt_task *unqueued = NULL;
	smp_mb__before_atomic();
	return __atomic_compare_exchange_n(&task->wake_q_next, &unqueued, RT_WAKE_Q_TAIL, false,
					   MB_ATOMIC_ORDER, __ATOMIC_RELAXED);
}

static void rt_wake_up_q(const struct rtmutex *lock, struct rt_task *task, struct rt_task *me)
{
	WRITE_ONCE(task->wake_q_next, NULL); /* may be queued again from here on */
	rt_wake_up_process(lock, task, me);
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

/* ---- the lock's waiters -------------------------------------------------------------------- */

static void enqueue_waiter(struct rtmutex *lock, struct rt_waiter *waiter)
{
	rb_add_cached(&waiter->tree.entry, &lock->waiters, waiter_less);
}

static void dequeue_waiter(struct rtmutex *lock, struct rt_waiter *waiter)
{
	rb_erase_cached_clear(&waiter->tree.entry, &lock->waiters);
}

/*
 * fixup_rt_mutex_waiters(): once a slow path has the lock and no waiter is left, HAS_WAITERS
 * must not stay set, or every unlock would take the slow path. set_owner() has already encoded
 * it from the waiters, so this is a read of the owner word, as in the kernel.
 */
static void fixup_waiters(struct rtmutex *lock)
{
	if (rt_has_waiters(lock))
		return;
	uintptr_t owner = READ_ONCE(lock->owner);
	if (owner & RT_MUTEX_HAS_WAITERS)
		(void)xchg_acquire(&lock->owner, owner & ~RT_MUTEX_HAS_WAITERS);
}

/* May a task of priority `prio` take the free lock ahead of the top waiter? */
static bool may_steal(const struct rtmutex *lock, int prio, const struct rt_waiter *top)
{
	if (prio > top->tree.prio)
		return true;
	/* Lateral steal: equal priority, never between real-time tasks (unbounded latency). */
	return lock->lateral_steal && prio == top->tree.prio && prio == 0;
}

/* Caller holds wait_lock. `waiter` is NULL on the first try, before enqueueing. */
static __attribute__((always_inline)) inline bool
try_to_take(struct rtmutex *lock, struct rt_task *task, struct rt_waiter *waiter,
	    unsigned int variant)
{
	mark_waiters(lock, variant);
	if (rt_mutex_owner(lock) != NULL)
		return false;
	struct rt_waiter *top = rt_top_waiter(lock);
	if (waiter) {
		if (waiter != top && !may_steal(lock, waiter->tree.prio, top))
			return false;
		dequeue_waiter(lock, waiter);
	} else if (!top) {
		set_owner(lock, task, false, variant); /* the kernel's `takeit` */
		return true;
	} else if (!may_steal(lock, READ_ONCE(task->prio), top)) {
		return false;
	}
	/*
	 * No longer blocked; the remaining top waiter joins our pi_waiters. Our priority is not
	 * adjusted here, as in the kernel: the top waiter was at most as important as we are.
	 */
	rt_raw_lock(lock, &task->pi_lock, task);
	task->pi_blocked_on = NULL;
	if (rt_has_waiters(lock))
		enqueue_pi(task, rt_top_waiter(lock));
	rt_raw_unlock(lock, &task->pi_lock);
	set_owner(lock, task, rt_has_waiters(lock), variant);
	return true;
}

/*
 * The owner of a lock we just became the top waiter of is itself blocked on `next`: carry the
 * boost along the chain (rt_mutex_adjust_prio_chain()). Simplified, and said so: the kernel
 * drops wait_lock and walks with each lock taken in turn; here each further wait_lock is only
 * tried, never waited for, with `lock`'s still held, so the walk cannot deadlock, and a busy
 * lock ends it, as does MAX_LOCK_DEPTH. In locklab-bench every thread uses one lock: the walk
 * never starts. Out of line, so that each variant's slow path does not compile a copy of it.
 */
static __attribute__((noinline)) void boost_chain(struct rtmutex *lock, struct rt_task *owner,
						  struct rtmutex *next, struct rt_task *me)
{
	struct rtmutex *held = NULL; /* the last further lock whose wait_lock the walk took */
	for (int depth = 1; next && next != lock && depth < MAX_LOCK_DEPTH; depth++) {
		if (!rt_raw_trylock(next, &next->wait_lock))
			break;
		if (held)
			rt_raw_unlock(held, &held->wait_lock);
		held = next;
		/*
		 * The owner's waiter, checked and requeued at its new priority under the owner's
		 * pi_lock, as 6.1 does: only while it waits for `next`, whose wait_lock we hold,
		 * does its frame stay put.
		 */
		rt_raw_lock(next, &owner->pi_lock, me);
		struct rt_waiter *waiter = owner->pi_blocked_on;
		struct rt_task *next_owner = rt_mutex_owner(next);
		int prio = READ_ONCE(owner->prio);
		if (waiter == NULL || waiter->lock != next || waiter->tree.prio == prio ||
		    !next_owner) {
			rt_raw_unlock(next, &owner->pi_lock);
			break;
		}
		struct rt_waiter *old_top = rt_top_waiter(next);
		dequeue_waiter(next, waiter);
		waiter->tree.prio = prio;
		enqueue_waiter(next, waiter);
		rt_raw_unlock(next, &owner->pi_lock);
		struct rtmutex *further = NULL;
		rt_raw_lock(next, &next_owner->pi_lock, me);
		if (rt_top_waiter(next) != old_top || rt_top_waiter(next) == waiter) {
			dequeue_pi(next_owner, old_top);
			dequeue_pi(next_owner, waiter);
			enqueue_pi(next_owner, rt_top_waiter(next));
			rt_adjust_prio(next, next_owner, me, false);
			if (next_owner->pi_blocked_on)
				further = next_owner->pi_blocked_on->lock;
		}
		rt_raw_unlock(next, &next_owner->pi_lock);
		lock = next;
		owner = next_owner;
		next = further;
	}
	if (held)
		rt_raw_unlock(held, &held->wait_lock);
}

/*
 * task_blocks_on_rt_mutex(): queue `waiter` under our own pi_lock, and if it is now the top
 * waiter, replace the previous top waiter in the owner's pi_waiters and adjust the owner's
 * priority. Called with lock->wait_lock held.
 */
static void task_blocks_on(struct rtmutex *lock, struct rt_waiter *waiter, struct rt_task *task)
{
	struct rt_task *owner = rt_mutex_owner(lock);
	struct rt_waiter *top = rt_has_waiters(lock) ? rt_top_waiter(lock) : waiter;

	rt_raw_lock(lock, &task->pi_lock, task);
	waiter->task = task;
	waiter->lock = lock;
	waiter->tree.prio = READ_ONCE(task->prio); /* waiter_update_prio() */
	enqueue_waiter(lock, waiter);
	task->pi_blocked_on = waiter;
	rt_raw_unlock(lock, &task->pi_lock);
	if (owner == NULL)
		return;

	struct rtmutex *next = NULL;
	rt_raw_lock(lock, &owner->pi_lock, task);
	if (rt_top_waiter(lock) == waiter) {
		dequeue_pi(owner, top);
		enqueue_pi(owner, waiter);
		rt_adjust_prio(lock, owner, task, false);
		if (owner->pi_blocked_on)
			next = owner->pi_blocked_on->lock;
	}
	rt_raw_unlock(lock, &owner->pi_lock);
	if (next)
		boost_chain(lock, owner, next, task);
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
		if (!lock_task_running(&owner->base) || rt_top_waiter(lock) != waiter)
			return false;
		if ((i & 63) == 0 && now_ns() >= deadline) {
			lock_event(rt_thread_of(waiter->task), LOCK_EVENT_SPIN_EXPIRED);
			return false;
		}
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
	/* rt_mutex_init_waiter(): in neither tree yet. */
	rb_clear_node(&waiter.tree.entry);
	rb_clear_node(&waiter.pi_tree.entry);
	waiter.task = NULL;
	if (take(lock, task, NULL)) {
		rt_raw_unlock(lock, &lock->wait_lock);
		return;
	}
	lock_task_block(&task->base);
	task_blocks_on(lock, &waiter, task);

	for (;;) {
		if (take(lock, task, &waiter))
			break;
		struct rt_task *owner = rt_mutex_owner(lock);
		bool spin = rt_top_waiter(lock) == &waiter && owner && lock->spin_budget_ns;
		rt_raw_unlock(lock, &lock->wait_lock);

		if (!(spin && spin_on_owner(lock, &waiter, owner)))
			lock_task_schedule(&task->base);
		rt_raw_lock(lock, &lock->wait_lock, task);
		lock_task_block(&task->base);
	}
	lock_task_unblock(&task->base);
	fixup_waiters(lock);
	rt_raw_unlock(lock, &lock->wait_lock);
}

/*
 * unlock_rt_mutex_safe(): no waiters, but HAS_WAITERS set: clear the bit, drop wait_lock, and
 * release with a CAS, which fails if a new waiter marked the lock meanwhile. Returns with
 * wait_lock held only on failure. In the kernel a waiter that left on a timeout or a signal
 * leaves the bit set; this port's waiters never leave, and a taker with none behind it clears
 * the bit in set_owner(), so the loop is kept for the kernel's order, not reached here.
 */
static bool unlock_safe(struct rtmutex *lock, struct rt_task *task)
{
	uintptr_t owner = (uintptr_t)task;
	WRITE_ONCE(lock->owner, owner);
	rt_raw_unlock(lock, &lock->wait_lock);
	if (__atomic_compare_exchange_n(&lock->owner, &owner, 0, false, __ATOMIC_RELEASE,
					__ATOMIC_RELAXED))
		return true;
	rt_raw_lock(lock, &lock->wait_lock, task);
	return false;
}

/* Out of line, as the kernel's: each writer loop inlines the unlock's fast path only. */
static __attribute__((noinline)) void rt_mutex_slowunlock(struct rtmutex *lock,
							  struct rt_task *task)
{
	rt_raw_lock(lock, &lock->wait_lock, task);
	while (!rt_has_waiters(lock)) {
		if (unlock_safe(lock, task))
			return;
	}
	/*
	 * mark_wakeup_next_waiter(): the top waiter leaves our pi_waiters, our priority is
	 * adjusted, and the lock is left free with waiters, (NULL, 1): fast paths still fail, and
	 * the top waiter takes it. The kernel lowers our priority here, under wait_lock, with
	 * preemption off until the wake-up is done. Userspace cannot turn preemption off:
	 * telling the scheduler of a drop before the top waiter is awake would let a
	 * medium-priority thread preempt us between the two, the very inversion this lock exists
	 * to prevent, so a drop reaches the scheduler only after the wake-up.
	 */
	rt_raw_lock(lock, &task->pi_lock, task);
	struct rt_waiter *top = rt_top_waiter(lock);
	struct rt_task *woken = top->task; /* the waiter itself may be gone after unlock */
	dequeue_pi(task, top);
	bool dropped = rt_adjust_prio(lock, task, task, true);
	smp_store_release(&lock->owner, RT_MUTEX_HAS_WAITERS);
	bool queued = lock->kernel == RT_KERNEL_6_1 && rt_wake_q_add(woken);
	rt_raw_unlock(lock, &task->pi_lock);
	rt_raw_unlock(lock, &lock->wait_lock);
	if (lock->kernel != RT_KERNEL_6_1)
		rt_wake_up_process(lock, woken, task);
	else if (queued)
		rt_wake_up_q(lock, woken, task);
	if (dropped) {
		rt_raw_lock(lock, &task->pi_lock, task);
		apply_prio(task, READ_ONCE(task->prio));
		rt_raw_unlock(lock, &task->pi_lock);
	}
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
	static kernel_out_of_line void rtmutex_lock_##name(void *lockp,                        \
							    struct lock_thread *self)          \
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

static kernel_out_of_line void rtmutex_unlock(void *lockp, struct lock_thread *self)
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
	lock->kernel = RT_KERNEL_6_1;
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
	lock->kernel = RT_KERNEL_2_6_24;
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
	lock->kernel = RT_KERNEL_2_6_24;
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
