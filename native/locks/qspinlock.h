/* SPDX-License-Identifier: MIT */
/*
 * qspinlock.h - the Linux 6.1 queued spinlock's word, transitions and slow path, shared by
 * qspinlock.c (the qspinlock and CNA locks) and raw_spinlock.h (the `wait_lock` of the 6.1
 * sleeping ports, which in 6.1 on x86 and arm64 is this same lock). The algorithm, its state
 * table and its orderings are described at the top of qspinlock.c; sources there.
 *
 * CNA hooks: the slow path calls CNA's functions only for cna != CNA_NONE, a compile-time
 * constant at every call. qspinlock.c defines QSPINLOCK_CNA and the functions; any other file
 * gets no-op stand-ins that are never reached.
 *
 * Waiting policy: qspinlock.c also defines QSPINLOCK_WAIT_POLICY, which gives its locks a
 * `struct lock_wait` (wait.h) and the parked counts. A queued waiter parks on its node's
 * `locked` and the hand-over wakes it; the pending waiter and the queue head park on the lock
 * word and unlock wakes them, as does the one other store that can end their wait (a pending
 * bit given back). The new owner's wait for its successor to link, which no store ends,
 * yields under yield and spin-then-park instead (q_wait_link), as MCS's does. The paravirt qspinlock (qspinlock_paravirt.h: pv_wait_node, pv_kick_node,
 * pv_wait_head_or_lock) is the kernel's own form of this for preempted vCPUs; ours is simpler
 * (no _Q_SLOW_VAL hash, a count beside the word instead). raw_spinlock.h's wait_lock spins,
 * as the kernel's does with preemption off.
 *
 * Queue nodes: `base` is the first slot of struct lock_thread's qnode[] the caller queues in,
 * and the tail's 2-bit idx counts nesting from it, as the kernel's idx counts its 4 per-CPU
 * nodes (MAX_NODES, task/softirq/hardirq/NMI).
 */
#ifndef LOCKLAB_QSPINLOCK_H
#define LOCKLAB_QSPINLOCK_H

#include <stddef.h>

#include <limits.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>
#include <locklab/wait.h>

/* ---- the word: include/asm-generic/qspinlock_types.h ---------------------------------------- */

#define _Q_SET_MASK(type) (((1U << _Q_##type##_BITS) - 1) << _Q_##type##_OFFSET)

/* NR_CPUS < 16K, the x86 layout: the kernel's names. */
#define _Q_LOCKED_OFFSET 0
#define _Q_LOCKED_BITS 8
#define _Q_PENDING_OFFSET (_Q_LOCKED_OFFSET + _Q_LOCKED_BITS)
#define _Q_PENDING_BITS 8
#define _Q_TAIL_IDX_OFFSET (_Q_PENDING_OFFSET + _Q_PENDING_BITS)
#define _Q_TAIL_IDX_BITS 2
#define _Q_TAIL_CPU_OFFSET (_Q_TAIL_IDX_OFFSET + _Q_TAIL_IDX_BITS)
#define _Q_TAIL_CPU_BITS (32 - _Q_TAIL_CPU_OFFSET)
#define _Q_TAIL_OFFSET _Q_TAIL_IDX_OFFSET

#define _Q_LOCKED_MASK _Q_SET_MASK(LOCKED)
#define _Q_PENDING_MASK _Q_SET_MASK(PENDING)
#define _Q_TAIL_IDX_MASK _Q_SET_MASK(TAIL_IDX)
#define _Q_TAIL_CPU_MASK _Q_SET_MASK(TAIL_CPU)
#define _Q_TAIL_MASK (_Q_TAIL_IDX_MASK | _Q_TAIL_CPU_MASK)

#define _Q_LOCKED_VAL (1U << _Q_LOCKED_OFFSET)
#define _Q_PENDING_VAL (1U << _Q_PENDING_OFFSET)

/* NR_CPUS >= 16K: the same offsets computed with _Q_PENDING_BITS = 1. */
#define _Q16K_PENDING_BITS 1
#define _Q16K_PENDING_MASK (((1U << _Q16K_PENDING_BITS) - 1) << _Q_PENDING_OFFSET)
#define _Q16K_TAIL_IDX_OFFSET (_Q_PENDING_OFFSET + _Q16K_PENDING_BITS)
#define _Q16K_TAIL_CPU_OFFSET (_Q16K_TAIL_IDX_OFFSET + _Q_TAIL_IDX_BITS)
#define _Q16K_TAIL_IDX_MASK (((1U << _Q_TAIL_IDX_BITS) - 1) << _Q16K_TAIL_IDX_OFFSET)
#define _Q16K_TAIL_MASK (~0U << _Q16K_TAIL_IDX_OFFSET)

enum q_layout {
	Q_PENDING_BYTE, /* NR_CPUS < 16K: every x86 (and arm64) kernel */
	Q_PENDING_BIT,  /* NR_CPUS >= 16K */
};

static inline u32 q_pending_mask(enum q_layout l)
{
	return l == Q_PENDING_BYTE ? _Q_PENDING_MASK : _Q16K_PENDING_MASK;
}
static inline u32 q_locked_pending_mask(enum q_layout l)
{
	return _Q_LOCKED_MASK | q_pending_mask(l);
}
static inline unsigned int q_tail_idx_offset(enum q_layout l)
{
	return l == Q_PENDING_BYTE ? _Q_TAIL_IDX_OFFSET : _Q16K_TAIL_IDX_OFFSET;
}
static inline unsigned int q_tail_cpu_offset(enum q_layout l)
{
	return l == Q_PENDING_BYTE ? _Q_TAIL_CPU_OFFSET : _Q16K_TAIL_CPU_OFFSET;
}
static inline u32 q_tail_idx_mask(enum q_layout l)
{
	return l == Q_PENDING_BYTE ? _Q_TAIL_IDX_MASK : _Q16K_TAIL_IDX_MASK;
}
static inline u32 q_tail_mask(enum q_layout l)
{
	return l == Q_PENDING_BYTE ? _Q_TAIL_MASK : _Q16K_TAIL_MASK;
}

/*
 * How many times a would-be pending waiter re-reads a word that shows an in-progress
 * pending -> locked move before it queues: 1 << 9 on x86 (arch/x86/include/asm/qspinlock.h), the
 * generic 1 elsewhere. An architecture constant, so both layouts use it.
 */
#if defined(__x86_64__) || defined(__i386__)
#define _Q_PENDING_LOOPS (1 << 9)
#else
#define _Q_PENDING_LOOPS 1
#endif

/* The tail has 14 bits of thread index (x86 layout); the per-thread table bounds us first. */
#define QSPIN_MAX_THREADS 4096

typedef u16 __attribute__((__may_alias__)) q_u16;

struct qspinlock {
	union {
		atomic_t val;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		struct {
			u8 locked;
			u8 pending;
		};
		struct {
			q_u16 locked_pending;
			q_u16 tail;
		};
#else
		struct {
			q_u16 tail;
			q_u16 locked_pending;
		};
		struct {
			u8 reserved[2];
			u8 pending;
			u8 locked;
		};
#endif
	};
#ifdef QSPINLOCK_CNA
	/* CNA's tunables, copied here by init (read-only during the run). */
	u64 threshold_ns;	/* cna: flush after the secondary queue is this old */
	u32 threshold_handoffs; /* cna: if not 0, after this many hand-overs instead */
	u32 shuffle_bits;       /* cna: with no secondary queue, sort once in 2^N */
	u32 fairness_bits;      /* cna_v1: skip the scan once in 2^N hand-overs */
#endif
#ifdef QSPINLOCK_WAIT_POLICY
	u32 parked; /* waiters asleep on `val`: the pending waiter and the queue head */
	struct lock_wait wait;
#endif
	/* Elsewhere (raw_spinlock.h's wait_lock) the word alone: 4 bytes, as the kernel's. */
};

_Static_assert(offsetof(struct qspinlock, locked) == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 3),
	       "the locked byte is the word's least significant byte");
_Static_assert(sizeof(((struct qspinlock *)0)->val) == 4, "one 32-bit word");

/*
 * A queue node: the kernel's struct mcs_spinlock, extended as CNA's struct cna_node. Lives in
 * the thread's lock_thread queue-node memory (4 per thread, like the kernel's per-CPU qnodes).
 */
struct qnode {
	struct qnode *next;
	u32 locked; /* 0: wait; 1: head now; CNA: >1 also head now, = encoded secondary tail */
	u32 parked; /* 1 while the waiter sleeps on `locked` (spin-then-park) */
	int count;  /* in node 0: how many of this thread's nodes are in use (nesting) */
	/* CNA only */
	int numa_node;      /* the node this waiter sorts for (v15: may be inherited) */
	int real_numa_node; /* the node of this waiter's CPU */
	u32 encoded_tail;   /* this node's own tail code */
	u32 handoffs;       /* hand-overs since the secondary queue was created (count rule) */
	u64 start_time;     /* v15: when the secondary queue was created; 0 none; 1 flush now */
};

_Static_assert(sizeof(struct qnode) <= LOCK_QNODE_BYTES, "qnode must fit a lock_thread qnode");

/*
 * decode_tail() needs any thread's nodes from its index, as the kernel finds any CPU's
 * per-CPU qnodes from the CPU number (per_cpu_ptr(): arithmetic on a per-CPU base, no shared
 * store). Our lock_threads are allocated by whoever runs the threads (the engine one by one,
 * the interposition library in an array of its slots, unit tests as they like), so there is no
 * base to compute from, and this table maps index -> lock_thread. A thread registers itself the
 * first time it queues, before it can appear in a tail; the RELEASE of the tail exchange
 * publishes the entry. After that it only reads its entry: the line (16 entries) stays shared in
 * every cache, so queueing costs no line transfer for it (an unconditional store did, on every
 * queueing). A new thread that takes over an index (a new run in the same process, an
 * interposition slot) re-registers, as the check fails for it.
 */
static struct lock_thread *qspin_threads[QSPIN_MAX_THREADS];

static inline void qspin_register(struct lock_thread *self)
{
	if (unlikely(READ_ONCE(qspin_threads[self->index]) != self))
		WRITE_ONCE(qspin_threads[self->index], self);
}

static inline u32 encode_tail(unsigned int index, int idx, enum q_layout l)
{
	return ((u32)(index + 1) << q_tail_cpu_offset(l)) | ((u32)idx << q_tail_idx_offset(l));
}

/*
 * The node a tail names. `base` is the first of the queue-node slots this kind of lock nests
 * in (the tail's idx counts from it): LOCK_QNODE_QUEUE for the qspinlock and CNA locks,
 * LOCK_QNODE_RAW_SPIN for raw_spinlock.h's wait_locks. A lock word is only ever taken with one
 * base, so a tail never names another kind's node.
 */
static inline struct qnode *decode_tail_at(u32 tail, enum q_layout l, int base)
{
	unsigned int index = (tail >> q_tail_cpu_offset(l)) - 1;
	int idx = (int)((tail & q_tail_idx_mask(l)) >> q_tail_idx_offset(l));
	return lock_qnode(READ_ONCE(qspin_threads[index]), base + idx, struct qnode);
}

static inline struct qnode *decode_tail(u32 tail, enum q_layout l)
{
	return decode_tail_at(tail, l, LOCK_QNODE_QUEUE);
}

/* ---- word transitions: kernel/locking/qspinlock.c, per layout --------------------------------- */

static inline bool queued_spin_trylock(struct qspinlock *lock)
{
	int val = atomic_read(&lock->val);
	if (unlikely(val))
		return false;
	return atomic_try_cmpxchg_acquire(&lock->val, &val, (int)_Q_LOCKED_VAL);
}

/* *,1,* -> *,0,* */
static inline __attribute__((always_inline)) void clear_pending(struct qspinlock *lock,
								enum q_layout l)
{
	if (l == Q_PENDING_BYTE)
		WRITE_ONCE(lock->pending, 0);
	else
		atomic_andnot((int)_Q_PENDING_VAL, &lock->val);
}

/* *,1,0 -> *,0,1: the pending waiter becomes the owner (no one can steal in between). */
static inline __attribute__((always_inline)) void clear_pending_set_locked(struct qspinlock *lock,
									   enum q_layout l)
{
	if (l == Q_PENDING_BYTE)
		WRITE_ONCE(lock->locked_pending, (q_u16)_Q_LOCKED_VAL);
	else
		atomic_add((int)(_Q_LOCKED_VAL - _Q_PENDING_VAL), &lock->val);
}

/*
 * p,*,* -> n,*,*: put `tail` in the word, keeping locked and pending; return the old tail (in
 * word position; the other bits of the result are not meaningful for the byte layout). ACQ_REL:
 * RELEASE publishes my node and my qspin_threads entry before anyone can decode the tail; ACQUIRE
 * orders my link into the predecessor's node after its initialisation.
 */
static inline __attribute__((always_inline)) u32 xchg_tail(struct qspinlock *lock, u32 tail,
							   enum q_layout l)
{
	if (l == Q_PENDING_BYTE)
		return (u32)__atomic_exchange_n(&lock->tail, (q_u16)(tail >> _Q_TAIL_OFFSET),
						__ATOMIC_ACQ_REL)
		       << _Q_TAIL_OFFSET;

	int old = atomic_read(&lock->val);
	int new;
	do {
		new = (int)(((u32)old & q_locked_pending_mask(l)) | tail);
	} while (!__atomic_compare_exchange_n(&lock->val.counter, &old, new, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	return (u32)old;
}

/*
 * *,*,* -> *,1,*: set pending, return the word as it was. x86 overrides the generic
 * atomic_fetch_or_acquire() with `lock btsl` for the pending bit and a separate load of the rest
 * of the word; GCC emits exactly that for a one-bit fetch_or whose result is only tested on that
 * bit. Both layouts: the pending bit is bit 8 in each.
 * The reload is ACQUIRE here, a plain atomic_read() in the kernel: it may be the load that sees
 * the owner's unlock (then the pending waiter skips its ACQUIRE wait for !locked), and x86-TSO
 * makes every load an acquire, C11 does not. Same `mov` on x86; without it TSAN rightly reports
 * the critical sections as racing.
 */
static inline __attribute__((always_inline)) u32
queued_fetch_set_pending_acquire(struct qspinlock *lock, enum q_layout l)
{
#if defined(__x86_64__) || defined(__i386__)
	u32 val = (u32)atomic_fetch_or_acquire((int)_Q_PENDING_VAL, &lock->val) & _Q_PENDING_VAL;
	val |= (u32)atomic_read_acquire(&lock->val) & ~q_pending_mask(l);
	return val;
#else
	(void)l;
	return (u32)atomic_fetch_or_acquire((int)_Q_PENDING_VAL, &lock->val);
#endif
}

/* *,*,0 -> *,0,1: the queue head takes the lock while others are queued behind it. */
static inline void set_locked(struct qspinlock *lock)
{
	WRITE_ONCE(lock->locked, (u8)_Q_LOCKED_VAL);
}

/* ---- waiting: spin, or the lock's waiting policy (QSPINLOCK_WAIT_POLICY) ------------------- */

#ifdef QSPINLOCK_WAIT_POLICY
/* A queued waiter's wait for the hand-over. */
#define q_wait_node(lock, self, node)                                                          \
	lock_wait_node_load_acquire(&(lock)->wait, self, &(node)->locked, &(node)->parked, VAL)
/* The pending waiter's and the head's wait on the word, until no bit of `mask` is set. */
#define q_wait_word(lock, self, mask)                                                          \
	lock_wait_cond_load_acquire(&(lock)->wait, self, (u32 *)&(lock)->val.counter,          \
				    &(lock)->parked, !(VAL & (mask)))
/* After a store that may end a wait on the word. */
#define q_word_changed(lock, self)                                                             \
	lock_unpark(&(lock)->wait, self, (u32 *)&(lock)->val.counter, &(lock)->parked, INT_MAX)
#define q_hand_over(lock, self, next, val)                                                     \
	do {                                                                                   \
		smp_store_release(&(next)->locked, (val));                                     \
		lock_unpark_node(&(lock)->wait, self, &(next)->locked, &(next)->parked);         \
	} while (0)
/* The owner's wait for its successor to link itself. */
#define q_wait_link(lock, node)                                                                \
	({                                                                                     \
		struct lock_wait_budget __link_budget = LOCK_WAIT_BUDGET_INIT;                 \
		struct qnode *__next;                                                          \
		while ((__next = smp_load_acquire(&(node)->next)) == NULL)                      \
			lock_wait_pause_unwoken(&(lock)->wait, &__link_budget);                \
		__next;                                                                        \
	})
#else
#define q_wait_node(lock, self, node) smp_cond_load_acquire(&(node)->locked, VAL)
#define q_wait_word(lock, self, mask) ((u32)smp_cond_load_acquire(&(lock)->val.counter,        \
									  !(VAL & (int)(mask))))
#define q_word_changed(lock, self) ((void)0)
#define q_hand_over(lock, self, next, val) smp_store_release(&(next)->locked, (val))
#define q_wait_link(lock, node) smp_cond_load_acquire(&(node)->next, VAL != NULL)
#endif

/* ---- CNA: which revision the slow path is specialised for ------------------------------------ */

enum cna_revision {
	CNA_NONE, /* plain qspinlock */
	CNA_V1,   /* Jan 2019 */
	CNA_V15,  /* May 2021 */
};

#define CNA_NO_SECONDARY 1u

#ifdef QSPINLOCK_CNA
static void cna_init_node(struct qnode *node, struct lock_thread *self, u32 tail);
static bool cna_try_clear_tail(struct qspinlock *lock, struct lock_thread *self, struct qnode *node,
			       u32 val);
static void cna_v1_pass_lock(struct qspinlock *lock, struct lock_thread *self, struct qnode *node,
			     struct qnode *next);
static void cna_wait_head_or_lock(struct qspinlock *lock, struct lock_thread *self,
				  struct qnode *node);
static void cna_lock_handoff(struct qspinlock *lock, struct lock_thread *self, struct qnode *node,
			     struct qnode *next);
#else
/* Never reached: without QSPINLOCK_CNA every caller passes CNA_NONE. */
#define cna_init_node(node, self, tail) ((void)0)
#define cna_try_clear_tail(lock, self, node, val) false
#define cna_v1_pass_lock(lock, self, node, next) ((void)0)
#define cna_wait_head_or_lock(lock, self, node) ((void)0)
#define cna_lock_handoff(lock, self, node, next) ((void)0)
#endif

/* ---- the slow path: kernel/locking/qspinlock.c -------------------------------------------------- */

static inline __attribute__((always_inline)) void
queued_spin_lock_slowpath(struct qspinlock *lock, u32 val, struct lock_thread *self,
			  enum q_layout layout, enum cna_revision cna, int base)
{
	struct qnode *node, *prev, *next;
	u32 old, tail;
	int idx;

	/* 0,1,0 -> 0,0,1 in progress: give the pending waiter a bounded moment to finish. */
	if (val == _Q_PENDING_VAL) {
		int loops = _Q_PENDING_LOOPS;
		val = (u32)smp_cond_load_relaxed(&lock->val.counter,
						 (u32)VAL != _Q_PENDING_VAL || !loops--);
	}
	/* Anyone pending or queued: queue too. */
	if (val & ~_Q_LOCKED_MASK)
		goto queue;

	/* 0,0,* -> 0,1,*: become the pending waiter. */
	val = queued_fetch_set_pending_acquire(lock, layout);
	if (unlikely(val & ~_Q_LOCKED_MASK)) {
		/* Someone queued or went pending first; undo our bit if we set it. */
		if (!(val & q_pending_mask(layout))) {
			clear_pending(lock, layout);
			q_word_changed(lock, self); /* a parked head may now go */
		}
		goto queue;
	}
	/* 0,1,1 -> 0,1,0: wait for the owner to leave (ACQUIRE pairs with unlock), then take it. */
	if (val & _Q_LOCKED_MASK)
		q_wait_word(lock, self, _Q_LOCKED_MASK);
	clear_pending_set_locked(lock, layout);
	return;

queue:
	node = lock_qnode(self, base, struct qnode);
	idx = node->count++;
	tail = encode_tail(self->index, idx, layout);
	node = lock_qnode(self, base + idx, struct qnode);
	qspin_register(self); /* a read once registered: no shared store per queueing */

	node->locked = 0;
	node->next = NULL;
	if (cna != CNA_NONE)
		cna_init_node(node, self, tail);

	/* The lock may have come free while we set up: the kernel tries once more here. */
	if (queued_spin_trylock(lock))
		goto release;

	old = xchg_tail(lock, tail, layout);
	next = NULL;

	if (old & q_tail_mask(layout)) {
		prev = decode_tail_at(old, layout, base);
		smp_store_release(&prev->next, node); /* pairs with the ACQUIRE read of ->next */
		q_wait_node(lock, self, node);
		/* The successor, if linked by now, gets our store to its ->locked: fetch its line
		 * for writing while we wait at the head (6.1's prefetchw(next)). */
		next = smp_load_acquire(&node->next);
		if (next)
			arch_prefetchw(next);
	}

	if (cna == CNA_V15)
		cna_wait_head_or_lock(lock, self, node);

	/* *,x,y -> *,0,0: head of the queue, wait for the owner and any pending waiter to leave. */
	val = q_wait_word(lock, self, q_locked_pending_mask(layout));

	/*
	 * n,0,0 -> 0,0,1: the last waiter takes the lock and empties the queue. If the CAS fails,
	 * a waiter queued behind us or someone went pending (and will queue behind us): either way
	 * a successor will link, as in the kernel.
	 */
	if ((val & q_tail_mask(layout)) == tail) {
		if (cna == CNA_NONE) {
			int expected = (int)val;
			if (atomic_try_cmpxchg_relaxed(&lock->val, &expected, (int)_Q_LOCKED_VAL))
				goto release;
		} else if (cna_try_clear_tail(lock, self, node, val)) {
			goto release;
		}
	}
	/* *,*,0 -> *,*,1: take the lock, then make the next waiter the head. */
	set_locked(lock);
	if (!next)
		next = q_wait_link(lock, node);
	if (cna == CNA_V15)
		cna_lock_handoff(lock, self, node, next);
	else if (cna == CNA_V1)
		cna_v1_pass_lock(lock, self, node, next);
	else
		q_hand_over(lock, self, next, 1);

release:
	lock_qnode(self, base, struct qnode)->count--;
}

#endif /* LOCKLAB_QSPINLOCK_H */
