/* SPDX-License-Identifier: MIT */
/*
 * qspinlock, the Linux queued spinlock, and CNA, the compact NUMA-aware lock, as its slow path.
 *
 * Sources:
 *   qspinlock  W. Long and P. Zijlstra, Linux 4.2 (2015), kernel/locking/qspinlock.c and
 *              include/asm-generic/qspinlock_types.h; built on the MCS lock (Mellor-Crummey &
 *              Scott, ACM TOCS 9(1) 1991).
 *   CNA        D. Dice and A. Kogan, "Compact NUMA-aware Locks", EuroSys 2019
 *              (arXiv:1810.05600), and A. Kogan's "Add NUMA-awareness to qspinlock" series on
 *              LKML (v1 2019 to v15 2021): the fairness threshold went from 1<<16 handoffs to
 *              10 ms, then to 1 ms (numa_spinlock_threshold_ns), plus shuffle reduction.
 * Written from those descriptions (see shared/notes/algorithms.md (d), (e)).
 *
 * The lock word, 32 bits, with the one-bit pending layout the kernel uses when NR_CPUS >= 16K
 * (C11 has no mixed-size atomics, so every update is a 32-bit RMW on the whole word):
 *
 *    31            11 10  9  8  7        0
 *   +----------------+-----+--+----------+
 *   | tail cpu + 1   | idx |P |  locked  |
 *   +----------------+-----+--+----------+
 *
 *   locked   the owner's byte: 0 free, 1 held;
 *   P        pending: the one waiter that spins on the word itself instead of queueing;
 *   tail     the last queued waiter: its thread index + 1 (0: no queue) and which of its 4
 *            queue nodes (the kernel's nesting levels task/softirq/hardirq/NMI; here always 0,
 *            but the encoding is kept).
 *
 * Paths:
 *   fast     CAS 0 -> locked (ACQUIRE).
 *   pending  no queue and no pending: set P, wait for the owner's byte to clear, then
 *            P -> locked in one RMW. A second contender queues, so at most two spin on the word.
 *   queue    MCS: publish my node in the tail (the old tail is my predecessor), link behind it
 *            and spin on my own node until it makes me the head. The head spins on the word
 *            until locked and P are clear, takes the lock, and hands headship to its successor.
 *   unlock   clear the locked byte, RELEASE (a fetch-and-not here, a byte store in the kernel).
 *
 * CNA replaces only the hand-over of headship. Waiters from other NUMA nodes that the head
 * skips over go to a secondary queue, which travels with the lock: it is encoded in the value
 * the head writes into its successor's `locked` field (1: no secondary queue; otherwise the
 * encoded tail of the secondary queue, a circular list whose tail->next is its head). At a
 * hand-over the new owner looks for the first waiter on its own node:
 *   found    move the waiters before it to the secondary queue, pass to it;
 *   none     splice the secondary queue back in front of the primary one and pass to its head;
 * and when the lock has stayed on one node for the fairness threshold (time, default 1 ms, or
 * a count of hand-overs), it splices the secondary queue back whatever the nodes, which bounds
 * how long a remote waiter can starve. Shuffle reduction: while the secondary queue is empty,
 * scan only once in 2^shuffle_reduction hand-overs (default 1/128): at low contention the
 * queue is short and the scan is pure cost, the regression seed 002's reviewers objected to.
 * The kernel's later versions scan while the head waits for the word (cna_wait_head_or_lock);
 * this file scans at the hand-over, as the paper's unlock does.
 *
 * Userspace caveat: the kernel runs with preemption disabled here; we cannot. A preempted
 * queued waiter stalls everyone behind it (worse under oversubscription). It is measured, not
 * hidden.
 */
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

#define _Q_LOCKED_OFFSET 0
#define _Q_LOCKED_BITS 8
#define _Q_PENDING_OFFSET (_Q_LOCKED_OFFSET + _Q_LOCKED_BITS)
#define _Q_PENDING_BITS 1
#define _Q_TAIL_IDX_OFFSET (_Q_PENDING_OFFSET + _Q_PENDING_BITS)
#define _Q_TAIL_IDX_BITS 2
#define _Q_TAIL_CPU_OFFSET (_Q_TAIL_IDX_OFFSET + _Q_TAIL_IDX_BITS)
#define _Q_TAIL_CPU_BITS (32 - _Q_TAIL_CPU_OFFSET)

#define _Q_SET_MASK(type) (((1U << _Q_##type##_BITS) - 1) << _Q_##type##_OFFSET)
#define _Q_LOCKED_MASK _Q_SET_MASK(LOCKED)
#define _Q_PENDING_MASK _Q_SET_MASK(PENDING)
#define _Q_TAIL_IDX_MASK _Q_SET_MASK(TAIL_IDX)
#define _Q_TAIL_CPU_MASK _Q_SET_MASK(TAIL_CPU)
#define _Q_TAIL_MASK (_Q_TAIL_IDX_MASK | _Q_TAIL_CPU_MASK)
#define _Q_LOCKED_PENDING_MASK (_Q_LOCKED_MASK | _Q_PENDING_MASK)

#define _Q_LOCKED_VAL (1U << _Q_LOCKED_OFFSET)
#define _Q_PENDING_VAL (1U << _Q_PENDING_OFFSET)

/* How long a would-be pending waiter lets an in-progress pending -> locked move finish. */
#define _Q_PENDING_LOOPS 1

/* The tail has 21 bits of thread index; the per-thread table below bounds us first. */
#define QSPIN_MAX_THREADS 4096

struct qspinlock {
	atomic_t val;
	/* CNA's tunables, copied here by init (read-only during the run). */
	u64 threshold_ns;
	u32 threshold_handoffs;
	u32 shuffle_mask;
};

/*
 * A queue node: the kernel's struct mcs_spinlock, extended as CNA's struct cna_node. Lives in
 * the thread's lock_thread queue-node memory (4 per thread, like the kernel's per-CPU qnodes).
 */
struct qnode {
	struct qnode *next;
	u32 locked;  /* 0: wait; 1: head now; CNA: >1 also head now, = encoded secondary tail */
	int count;   /* in node 0: how many of this thread's nodes are in use (nesting) */
	/* CNA only */
	int numa_node;
	u32 encoded_tail;  /* this node's own tail code */
	u64 local_since_ns; /* when the lock started staying on this node (0: not yet) */
	u32 local_handoffs; /* hand-overs within the node since then */
	u32 random;         /* xorshift state for shuffle reduction */
};

_Static_assert(sizeof(struct qnode) <= LOCK_QNODE_BYTES, "qnode must fit a lock_thread qnode");

/*
 * decode_tail() needs any thread's nodes from its index, as the kernel finds any CPU's
 * per-CPU qnodes from the CPU number. Each thread registers itself before it can appear in a
 * tail; the RELEASE of the tail exchange publishes the entry.
 */
static struct lock_thread *qspin_threads[QSPIN_MAX_THREADS];

static inline u32 encode_tail(unsigned int index, int idx)
{
	return ((u32)(index + 1) << _Q_TAIL_CPU_OFFSET) | ((u32)idx << _Q_TAIL_IDX_OFFSET);
}

static inline struct qnode *decode_tail(u32 tail)
{
	unsigned int index = (tail >> _Q_TAIL_CPU_OFFSET) - 1;
	int idx = (int)((tail & _Q_TAIL_IDX_MASK) >> _Q_TAIL_IDX_OFFSET);
	return lock_qnode(READ_ONCE(qspin_threads[index]), idx, struct qnode);
}

/* ---- the word ------------------------------------------------------------------------------ */

static inline bool queued_spin_trylock(struct qspinlock *lock)
{
	int val = atomic_read(&lock->val);
	if (unlikely(val))
		return false;
	return atomic_try_cmpxchg_acquire(&lock->val, &val, _Q_LOCKED_VAL);
}

/* *,1,0 -> *,0,1: the pending waiter becomes the owner. */
static inline void clear_pending_set_locked(struct qspinlock *lock)
{
	atomic_add((int)(_Q_LOCKED_VAL - _Q_PENDING_VAL), &lock->val);
}

static inline void clear_pending(struct qspinlock *lock)
{
	atomic_andnot((int)_Q_PENDING_VAL, &lock->val);
}

/* The queue head takes the lock while others are queued behind it: *,*,* -> *,*,1 */
static inline void set_locked(struct qspinlock *lock)
{
	atomic_or((int)_Q_LOCKED_VAL, &lock->val);
}

/*
 * Put `tail` in the word, keeping locked and pending; return the old word. A CAS loop, as the
 * kernel does for this layout (with the pending byte layout it is a 16-bit xchg). ACQ_REL:
 * RELEASE publishes my node and my qspin_threads entry before anyone can decode the tail;
 * ACQUIRE orders my link into the predecessor's node after its initialisation.
 */
static inline u32 xchg_tail(struct qspinlock *lock, u32 tail)
{
	int old = atomic_read(&lock->val);
	int new;
	do {
		new = (int)(((u32)old & _Q_LOCKED_PENDING_MASK) | tail);
	} while (!__atomic_compare_exchange_n(&lock->val.counter, &old, new, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return (u32)old;
}

/* ---- CNA ----------------------------------------------------------------------------------- */

static u64 now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

static void cna_init_node(struct qnode *node, struct lock_thread *self, u32 tail)
{
	node->numa_node = self->numa_node < 0 ? 0 : self->numa_node;
	node->encoded_tail = tail;
	node->local_since_ns = 0;
	node->local_handoffs = 0;
	if (node->random == 0)
		node->random = 2463534242u ^ (self->index * 2654435761u);
}

/* Has the lock stayed on this node long enough that remote waiters must get their turn? */
static bool cna_threshold_reached(const struct qspinlock *lock, const struct qnode *node)
{
	if (lock->threshold_handoffs)
		return node->local_handoffs >= lock->threshold_handoffs;
	return node->local_since_ns && now_ns() - node->local_since_ns >= lock->threshold_ns;
}

static bool cna_skip_scan(const struct qspinlock *lock, struct qnode *node)
{
	u32 x = node->random;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	node->random = x;
	return (x & lock->shuffle_mask) != 0;
}

/*
 * Pass headship to `to`, telling it the secondary queue (`secondary`: 1 or an encoded tail)
 * and how long the lock has been on this node. RELEASE pairs with the ACQUIRE spin on locked.
 */
static void cna_pass(struct qnode *from, struct qnode *to, u32 secondary, bool local)
{
	if (local) {
		to->local_since_ns = from->local_since_ns ? from->local_since_ns : now_ns();
		to->local_handoffs = from->local_handoffs + 1;
	}
	/* else: `to` was initialised with 0 and 0, a fresh start on its node */
	smp_store_release(&to->locked, secondary);
}

/* Splice the whole secondary queue in front of `next` and pass to its head. */
static void cna_flush_secondary(struct qnode *node, struct qnode *next, u32 secondary)
{
	struct qnode *secondary_tail = decode_tail(secondary);
	struct qnode *secondary_head = secondary_tail->next;

	WRITE_ONCE(secondary_tail->next, next);
	cna_pass(node, secondary_head, 1, false);
}

/*
 * Hand headship over from `node` (which now owns the lock) to the primary queue that starts at
 * `next`. Returns nothing; exactly one waiter is told it is the head.
 */
static void cna_handoff(struct qspinlock *lock, struct qnode *node, struct qnode *next)
{
	u32 secondary = node->locked > 1 ? node->locked : 1;
	struct qnode *scan, *last_skipped = NULL;

	if (cna_threshold_reached(lock, node)) {
		if (secondary > 1)
			cna_flush_secondary(node, next, secondary);
		else
			cna_pass(node, next, 1, false);
		return;
	}
	if (secondary == 1 && cna_skip_scan(lock, node)) {
		cna_pass(node, next, 1, next->numa_node == node->numa_node);
		return;
	}
	/*
	 * Find the first waiter on my node. Only the linked part of the queue is scanned: a node
	 * whose ->next is still NULL may be the tail, and what is behind it is not ours to move.
	 */
	for (scan = next; scan; scan = smp_load_acquire(&scan->next)) {
		if (scan->numa_node == node->numa_node)
			break;
		last_skipped = scan;
	}
	if (scan == NULL) {
		/* Nobody local: the remote waiters get the lock, secondary queue first. */
		if (secondary > 1)
			cna_flush_secondary(node, next, secondary);
		else
			cna_pass(node, next, 1, false);
		return;
	}
	if (last_skipped) {
		/*
		 * Move next..last_skipped to the secondary queue's tail. Their ->next fields are
		 * ours to rewrite: each already has its successor linked (we walked through it).
		 */
		if (secondary > 1) {
			struct qnode *old_tail = decode_tail(secondary);
			struct qnode *old_head = old_tail->next;
			WRITE_ONCE(old_tail->next, next);
			WRITE_ONCE(last_skipped->next, old_head);
		} else {
			WRITE_ONCE(last_skipped->next, next); /* a circle of its own */
		}
		secondary = last_skipped->encoded_tail;
	}
	cna_pass(node, scan, secondary, true);
}

/*
 * I own the lock and I am the last in the primary queue. Without CNA (or with an empty
 * secondary queue): the queue ends, CAS the tail away. With a secondary queue: it becomes the
 * primary queue, its tail the lock's tail, and its head the next head. Returns false when a
 * new waiter appeared meanwhile (then `*val` holds the word that showed it).
 */
static bool queue_end(struct qspinlock *lock, struct qnode *node, u32 *val, bool numa)
{
	u32 secondary = numa && node->locked > 1 ? node->locked : 1;
	int expected = (int)*val;

	if (secondary == 1) {
		if (atomic_try_cmpxchg_relaxed(&lock->val, &expected, (int)_Q_LOCKED_VAL))
			return true;
		*val = (u32)expected;
		return false;
	}
	struct qnode *secondary_tail = decode_tail(secondary);
	struct qnode *secondary_head = secondary_tail->next;
	/* Open the circle before publishing its tail: new waiters link behind it. */
	WRITE_ONCE(secondary_tail->next, NULL);
	if (atomic_try_cmpxchg_release(&lock->val, &expected, (int)(secondary | _Q_LOCKED_VAL))) {
		cna_pass(node, secondary_head, 1, false);
		return true;
	}
	WRITE_ONCE(secondary_tail->next, secondary_head); /* not published: close it again */
	*val = (u32)expected;
	return false;
}

/* ---- the slow path ------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) void
queued_spin_lock_slowpath(struct qspinlock *lock, u32 val, struct lock_thread *self, bool numa)
{
	struct qnode *node, *prev, *next;
	u32 old, tail;
	int idx;

	/* A pending -> locked hand-over is in progress: give it a moment to finish. */
	if (val == _Q_PENDING_VAL) {
		int loops = _Q_PENDING_LOOPS;
		val = (u32)smp_cond_load_relaxed(&lock->val.counter,
						 (u32)VAL != _Q_PENDING_VAL || !loops--);
	}
	/* Anyone pending or queued: queue too. */
	if (val & ~_Q_LOCKED_MASK)
		goto queue;

	/* Become the pending waiter: 0,0,* -> 0,1,* */
	val = (u32)atomic_fetch_or_acquire((int)_Q_PENDING_VAL, &lock->val);
	if (unlikely(val & ~_Q_LOCKED_MASK)) {
		/* Someone queued or went pending first; undo our bit if we set it. */
		if (!(val & _Q_PENDING_MASK))
			clear_pending(lock);
		goto queue;
	}
	/* Pending: wait for the owner to leave, then take over (ACQUIRE pairs with unlock). */
	if (val & _Q_LOCKED_MASK)
		smp_cond_load_acquire(&lock->val.counter, !(VAL & (int)_Q_LOCKED_MASK));
	clear_pending_set_locked(lock);
	return;

queue:
	node = lock_qnode(self, 0, struct qnode);
	idx = node->count++;
	tail = encode_tail(self->index, idx);
	node = lock_qnode(self, idx, struct qnode);
	WRITE_ONCE(qspin_threads[self->index], self);

	node->locked = 0;
	node->next = NULL;
	if (numa)
		cna_init_node(node, self, tail);

	/* The lock may have come free while we set up: the kernel tries once more here. */
	if (queued_spin_trylock(lock))
		goto release;

	old = xchg_tail(lock, tail);
	next = NULL;

	if (old & _Q_TAIL_MASK) {
		prev = decode_tail(old);
		smp_store_release(&prev->next, node); /* pairs with the ACQUIRE read of ->next */
		smp_cond_load_acquire(&node->locked, VAL);
		next = smp_load_acquire(&node->next);
	}

	/* Head of the queue: wait for the owner and any pending waiter to leave. */
	val = (u32)smp_cond_load_acquire(&lock->val.counter, !(VAL & (int)_Q_LOCKED_PENDING_MASK));

	for (;;) {
		if ((val & _Q_TAIL_MASK) == tail) {
			if (queue_end(lock, node, &val, numa))
				goto release;
			continue; /* a waiter arrived: it will link behind us */
		}
		break;
	}
	/* Others are queued behind us: take the lock, then make the next one head. */
	set_locked(lock);
	if (!next)
		next = smp_cond_load_acquire(&node->next, VAL != NULL);
	if (numa)
		cna_handoff(lock, node, next);
	else
		smp_store_release(&next->locked, 1);

release:
	lock_qnode(self, 0, struct qnode)->count--;
}

/* ---- lock ops ------------------------------------------------------------------------------ */

static inline __attribute__((always_inline)) void queued_spin_lock(void *lockp,
								 struct lock_thread *self,
								 bool numa)
{
	struct qspinlock *lock = lockp;
	int val = 0;

	if (likely(atomic_try_cmpxchg_acquire(&lock->val, &val, (int)_Q_LOCKED_VAL)))
		return;
	queued_spin_lock_slowpath(lock, (u32)val, self, numa);
}

static void qspinlock_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, false);
}

static void cna_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, true);
}

static bool qspinlock_trylock(void *lockp, struct lock_thread *self)
{
	(void)self;
	return queued_spin_trylock(lockp);
}

static void qspinlock_unlock(void *lockp, struct lock_thread *self)
{
	struct qspinlock *lock = lockp;
	(void)self;
	/* The kernel stores 0 to the locked byte; one word, one RMW here (see the header). */
	atomic_fetch_andnot_release((int)_Q_LOCKED_MASK, &lock->val);
}

static int qspinlock_init(void *lockp, const struct lock_init_args *args)
{
	(void)lockp;
	return args->nthreads > QSPIN_MAX_THREADS ? -EINVAL : 0;
}

enum { CNA_THRESHOLD_NS, CNA_THRESHOLD_HANDOFFS, CNA_SHUFFLE_REDUCTION };

static int cna_init(void *lockp, const struct lock_init_args *args)
{
	struct qspinlock *lock = lockp;
	if (args->nthreads > QSPIN_MAX_THREADS)
		return -EINVAL;
	lock->threshold_ns = (u64)args->params[CNA_THRESHOLD_NS];
	lock->threshold_handoffs = (u32)args->params[CNA_THRESHOLD_HANDOFFS];
	lock->shuffle_mask = (1u << args->params[CNA_SHUFFLE_REDUCTION]) - 1;
	return 0;
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

static const struct lock_tunable cna_tunables[] = {
	[CNA_THRESHOLD_NS] = { "threshold_ns", 1000000, 0, 1000000000,
			       "fairness: flush the secondary queue after the lock stayed this long "
			       "on one node (ns; numa_spinlock_threshold_ns)" },
	[CNA_THRESHOLD_HANDOFFS] = { "threshold_handoffs", 0, 0, 1L << 30,
				     "if not 0: flush after this many same-node hand-overs instead "
				     "(the first series used 65536)" },
	[CNA_SHUFFLE_REDUCTION] = { "shuffle_reduction", 7, 0, 30,
				    "with an empty secondary queue, scan for a local waiter once in "
				    "2^N hand-overs (0: always)" },
	LOCK_TUNABLES_END,
};

const struct lock_ops qspinlock_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "qspinlock",
	.family = "spin-kernel",
	.summary = "Linux queued spinlock: fast path, pending bit, MCS queue in one 32-bit word",
	.source = "Long & Zijlstra, Linux 4.2 kernel/locking/qspinlock.c (2015)",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct qspinlock),
	.tunables = no_tunables,
	.init = qspinlock_init,
	.lock = qspinlock_lock,
	.unlock = qspinlock_unlock,
	.trylock = qspinlock_trylock,
};

const struct lock_ops cna_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "cna",
	.family = "spin-kernel",
	.summary = "qspinlock with the CNA slow path: same-node hand-over, secondary queue",
	.source = "Dice & Kogan, EuroSys 2019 (arXiv:1810.05600); Kogan's qspinlock CNA series, "
		  "LKML 2019-2021",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct qspinlock),
	.tunables = cna_tunables,
	.init = cna_init,
	.lock = cna_lock,
	.unlock = qspinlock_unlock,
	.trylock = qspinlock_trylock,
};
