/* SPDX-License-Identifier: MIT */
/*
 * qspinlock, the Linux queued spinlock, and CNA, the compact NUMA-aware lock, as its slow path.
 *
 * Sources (read, not copied; every line here is written from their description):
 *   qspinlock   Linux 6.1: include/asm-generic/qspinlock_types.h (the word),
 *               include/asm-generic/qspinlock.h (fast path, unlock), kernel/locking/qspinlock.c
 *               (slow path), arch/x86/include/asm/qspinlock.h (x86: _Q_PENDING_LOOPS = 1 << 9
 *               and queued_fetch_set_pending_acquire() as `lock btsl` + a reload). Waiman Long
 *               and Peter Zijlstra, merged in 4.2; the MCS queue is Mellor-Crummey & Scott, ACM
 *               TOCS 9(1), 1991.
 *   CNA         D. Dice and A. Kogan, "Compact NUMA-aware Locks", EuroSys 2019
 *               (arXiv:1810.05600), and A. Kogan's LKML series "Add NUMA-awareness to
 *               qspinlock":
 *                 v1   [PATCH 0/3], 30 Jan 2019 (the thread of seed 002, measured on 4.20-rc4);
 *                 v15  [PATCH v15 0/6], 14 May 2021 (the last revision posted).
 *
 * Variants (one slow path, specialised at compile time by constant arguments):
 *   qspinlock        the word as every x86 kernel builds it (NR_CPUS < 16K, Linux 6.1).
 *   qspinlock_nr16k  the same code with the layout the generic header selects for NR_CPUS >= 16K:
 *                    one pending bit and a 23-bit tail, so clear_pending, the pending -> locked
 *                    move and xchg_tail become 32-bit RMWs (atomic_andnot, atomic_add, a cmpxchg
 *                    loop). Unlock, set_locked and the pending set stay as on x86 in both
 *                    layouts, as in the kernel: only those three helpers depend on the layout.
 *   cna              CNA as in v15: the queue head sorts the queue while it waits for the owner
 *                    (cna_wait_head_or_lock), fairness by time (1 ms, numa_spinlock_threshold_ns)
 *                    measured from the creation of the secondary queue, shuffle reduction 1/2^7.
 *                    Tunable: threshold_handoffs > 0 replaces the time rule by the count rule of
 *                    the revisions around v9 (14 Jan 2020: intra_node_handoff_threshold = 1 << 16,
 *                    "64k lock hold times seems like a giant number", PeterZ). v9 counted
 *                    consecutive same-node hand-overs; here the count starts with the secondary
 *                    queue, like v15's clock (with no secondary queue a flush moves nobody).
 *   cna_v1           CNA as in v1, what seed 002 measured: the new owner scans the whole queue
 *                    after it has taken the lock (find_successor), fairness by chance (the scan is
 *                    skipped with probability 1/0x10000, INTRA_SOCKET_HANDOFF_PROB_ARG), no
 *                    shuffle reduction and no clock at all. v1's numbers are for all three
 *                    patches, so they include this fairness rule.
 *
 * The lock word, 32 bits (little-endian shown; big-endian mirrors it, as in the kernel's union):
 *
 *   NR_CPUS < 16K (x86):                         NR_CPUS >= 16K:
 *    31         18 17 16 15      8 7       0      31          11 10 9  8  7       0
 *   +-------------+-----+---------+---------+    +--------------+----+--+---------+
 *   | tail cpu+1  | idx | pending | locked  |    | tail cpu+1   |idx |P | locked  |
 *   +-------------+-----+---------+---------+    +--------------+----+--+---------+
 *   `---- u16 tail ----'`- u16 locked_pending -'
 *
 *   locked   the owner's byte: 0 free, 1 held. Unlock is a RELEASE store of 0 to this byte.
 *   pending  the one waiter that spins on the word itself instead of queueing (only bit 8 is
 *            ever set; the byte lets the pending -> locked move be one 16-bit store).
 *   tail     the last queued waiter: its thread index + 1 (0: no queue) and which of its 4 queue
 *            nodes (the kernel's nesting levels task/softirq/hardirq/NMI; always 0 here).
 *
 * Mixed-size atomics. The word is a union of an atomic_t, two bytes and two u16 halves, and every
 * access is a GCC __atomic builtin on one of those members, as the kernel's READ_ONCE/xchg are on
 * its union. C11 has no semantics for atomics of different sizes on overlapping memory; GCC emits
 * exactly the kernel's instructions (movb, movw, xchgw, lock btsl, lock cmpxchgl) and the
 * hardware orders them as it orders the kernel's. The u16 members are may_alias so that no
 * type-based alias analysis can separate them from the int counter (the kernel builds with
 * -fno-strict-aliasing). ThreadSanitizer: it instruments each builtin with its size; two atomic
 * accesses never form a data race, whatever their sizes, so mixed sizes cause no report. Its
 * happens-before edges are keyed by address, though: a RELEASE on the tail half (address + 2)
 * and an ACQUIRE of the whole word (address + 0) do not synchronise in TSAN's view. This file
 * never relies on such a pair: the tail is only decoded from the value xchg_tail returned (same
 * half, same address), and the lock is only acquired through accesses at the word's address
 * (unlock's byte store, the CAS and loads of the word). The TSAN torture of qspinlock, cna and
 * cna_v1 is clean with the same code as the optimised build. qspinlock_nr16k needs one TSAN-only
 * path, its unlock (see qspinlock_nr16k_unlock(): a byte store into a word that cmpxchg's publish
 * the tail through is beyond both C11 and TSAN). TSAN also found one real C11 gap on the way:
 * x86's relaxed reload after `lock btsl`, made ACQUIRE here (the same mov on x86).
 *
 * Orderings, and where C11 asks for more than the kernel:
 *   fast path / trylock  CAS 0 -> LOCKED, ACQUIRE: pairs with unlock's RELEASE.
 *   unlock               RELEASE byte store (x86: plain movb, as the kernel's smp_store_release).
 *   pending path         the wait for !locked is an ACQUIRE load (pairs with unlock); the pending
 *                        set is ACQUIRE (kernel: atomic_fetch_or_acquire; x86 lock btsl), and so
 *                        is x86's reload of the word after the btsl (relaxed in the kernel, which
 *                        relies on x86-TSO; see queued_fetch_set_pending_acquire()).
 *   xchg_tail            ACQ_REL here, RELAXED after an smp_wmb() in the kernel: TSAN does not
 *                        see fences, and C11 has no address dependency to order my link into the
 *                        predecessor's node after its initialisation. On x86 the instruction is the
 *                        same (xchg is always locked).
 *   prev->next, ->locked RELEASE stores and ACQUIRE loads (kernel: WRITE_ONCE and READ_ONCE for the
 *                        link, release/acquire for the MCS hand-over): CNA reads the fields of
 *                        nodes it reached through ->next.
 *   queue head           waits for !(locked | pending) with ACQUIRE (pairs with unlock / the
 *                        pending owner's unlock), then CAS-clears the tail or sets locked (byte).
 *
 * CNA keeps a secondary queue of waiters from other NUMA nodes, encoded in the value the head
 * writes into its successor's `locked` (1: no secondary queue; otherwise the encoded tail of the
 * secondary queue, a circular list whose tail->next is its head), so it travels with the lock.
 * Only the primary queue's linked part is ever rearranged: a node whose ->next is NULL may be the
 * lock's tail, and a new waiter is about to link behind it.
 *
 * What still differs from the kernel, and why:
 *   - Preemption: the kernel runs this with preemption disabled; userspace cannot. A preempted
 *     queued waiter stalls everyone behind it (worse under oversubscription). Measured, not hidden.
 *   - No paravirt: no pv_wait/pv_kick, and no virt_spin_lock() test-and-set fallback that an x86
 *     guest without PV spinlocks uses (seed 002 ran on bare metal).
 *   - Queue nodes are per thread and the tail holds a thread index, not a CPU number; no nesting
 *     (the idx >= 4 fallback is unreachable), no prefetchw(next), no lock events or tracepoints.
 *   - The slow path is inlined into each variant's lock function (the kernel calls it out of line
 *     from the inline fast path); the instructions of each path are the kernel's.
 *   - Orderings stronger than the kernel's where C11 or TSAN need them (listed above): the same
 *     instructions on x86, stronger ones (e.g. swpal for swp) on arm64.
 *   - CNA v15: no priority waiters (v15 5/6 never moves irq-context or RT waiters to the secondary
 *     queue; there are no irq contexts here); the clock is clock_gettime(CLOCK_MONOTONIC) (vDSO),
 *     not local_clock(); coins are a per-thread xorshift, not a per-CPU one; CNA is always on
 *     (v15 patched it in at boot only on multi-node machines).
 *   - CNA v1: the secondary queue is encoded as in later revisions (an encoded tail in ->locked, a
 *     circular list) where v1 kept a pointer to its head and the tail in that node: same order,
 *     same moves. v1's own base was 4.20-rc4's qspinlock; its x86 word operations are those above.
 */
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

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
	/* CNA's tunables, copied here by init (read-only during the run). */
	u64 threshold_ns;	/* cna: flush after the secondary queue is this old */
	u32 threshold_handoffs; /* cna: if not 0, after this many hand-overs instead */
	u32 shuffle_bits;       /* cna: with no secondary queue, sort once in 2^N */
	u32 fairness_bits;      /* cna_v1: skip the scan once in 2^N hand-overs */
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
	int count;  /* in node 0: how many of this thread's nodes are in use (nesting) */
	/* CNA only */
	int numa_node;      /* the node this waiter sorts for (v15: may be inherited) */
	int real_numa_node; /* the node of this waiter's CPU */
	u32 encoded_tail;   /* this node's own tail code */
	u32 handoffs;       /* hand-overs since the secondary queue was created (count rule) */
	u64 start_time;     /* v15: when the secondary queue was created; 0 none; 1 flush now */
	u32 random;         /* xorshift state for the coin flips */
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

static inline struct qnode *decode_tail(u32 tail, enum q_layout l)
{
	unsigned int index = (tail >> q_tail_cpu_offset(l)) - 1;
	int idx = (int)((tail & q_tail_idx_mask(l)) >> q_tail_idx_offset(l));
	return lock_qnode(READ_ONCE(qspin_threads[index]), idx, struct qnode);
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

/* ---- CNA: shared pieces --------------------------------------------------------------------- */

enum cna_revision {
	CNA_NONE, /* plain qspinlock */
	CNA_V1,   /* Jan 2019 */
	CNA_V15,  /* May 2021 */
};

#define CNA_NO_SECONDARY 1u

static inline u64 now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

/*
 * The fairness clock (the kernel's local_clock()). A unit test may define cna_clock_ns() before
 * including this file, to count the reads; likewise cna_lock_is_busy().
 */
#ifndef cna_clock_ns
#define cna_clock_ns() now_ns()
#endif

static void cna_init_node(struct qnode *node, struct lock_thread *self, u32 tail)
{
	node->real_numa_node = self->numa_node < 0 ? 0 : self->numa_node;
	node->numa_node = node->real_numa_node;
	node->encoded_tail = tail;
	node->start_time = 0;
	node->handoffs = 0;
	if (node->random == 0)
		node->random = 2463534242u ^ (self->index * 2654435761u);
}

/* False with probability 1 / 2^bits (the series' probably(); per-thread xorshift here). */
static bool cna_probably(struct qnode *node, unsigned int bits)
{
	u32 x = node->random;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	node->random = x;
	return (x & ((1u << bits) - 1)) != 0;
}

static inline struct qnode *cna_secondary_tail(u32 secondary)
{
	return decode_tail(secondary, Q_PENDING_BYTE);
}

/*
 * I am the head and the last in the primary queue; the lock word shows `*val`. With an empty
 * secondary queue, do what MCS does: CAS the tail away. Otherwise the secondary queue becomes
 * the primary one: its tail becomes the lock's tail and its head the next head. Both revisions
 * do this. Returns false when the word changed (a waiter arrived or went pending).
 */
static bool cna_try_clear_tail(struct qspinlock *lock, struct qnode *node, u32 val)
{
	u32 secondary = READ_ONCE(node->locked);
	int expected = (int)val;

	if (secondary <= CNA_NO_SECONDARY)
		return atomic_try_cmpxchg_relaxed(&lock->val, &expected, (int)_Q_LOCKED_VAL);

	struct qnode *tail_2nd = cna_secondary_tail(secondary);
	struct qnode *head_2nd = READ_ONCE(tail_2nd->next);
	/* Open the circle before publishing its tail: a new waiter links behind it. */
	WRITE_ONCE(tail_2nd->next, NULL);
	if (!atomic_try_cmpxchg_release(&lock->val, &expected,
					(int)(tail_2nd->encoded_tail | _Q_LOCKED_VAL))) {
		WRITE_ONCE(tail_2nd->next, head_2nd); /* not published: close it again */
		return false;
	}
	smp_store_release(&head_2nd->locked, CNA_NO_SECONDARY);
	return true;
}

/* ---- CNA v1 (30 Jan 2019): the new owner scans at hand-over ------------------------------------ */

/*
 * v1's find_successor(): the first waiter on my node, starting at `next`. The waiters skipped
 * before it move to the tail of the secondary queue; returns NULL (and moves nobody) when there
 * is none. Only the linked part is scanned: a node whose ->next is NULL may be the lock's tail.
 */
static struct qnode *cna_v1_find_successor(struct qnode *node, struct qnode *next)
{
	struct qnode *scan, *last_skipped = next;

	if (next->numa_node == node->numa_node)
		return next;
	for (scan = smp_load_acquire(&next->next); scan; scan = smp_load_acquire(&scan->next)) {
		if (scan->numa_node == node->numa_node)
			break;
		last_skipped = scan;
	}
	if (scan == NULL)
		return NULL;

	u32 secondary = READ_ONCE(node->locked);
	if (secondary > CNA_NO_SECONDARY) {
		struct qnode *tail_2nd = cna_secondary_tail(secondary);
		WRITE_ONCE(last_skipped->next, READ_ONCE(tail_2nd->next));
		WRITE_ONCE(tail_2nd->next, next);
	} else {
		WRITE_ONCE(last_skipped->next, next); /* a circle of its own */
	}
	WRITE_ONCE(node->locked, last_skipped->encoded_tail);
	return scan;
}

/*
 * I own the lock; make one waiter the head. With probability 1 - 1/2^fairness_bits look for a
 * local one; if there is none (or the coin said no), the secondary queue goes first, spliced in
 * front of the primary queue; with no secondary queue, FIFO.
 */
static void cna_v1_pass_lock(struct qspinlock *lock, struct qnode *node, struct qnode *next)
{
	struct qnode *succ = NULL;

	if (cna_probably(node, lock->fairness_bits))
		succ = cna_v1_find_successor(node, next);

	u32 secondary = READ_ONCE(node->locked);
	if (succ) {
		smp_store_release(&succ->locked, secondary > CNA_NO_SECONDARY ? secondary
									     : CNA_NO_SECONDARY);
	} else if (secondary > CNA_NO_SECONDARY) {
		struct qnode *tail_2nd = cna_secondary_tail(secondary);
		struct qnode *head_2nd = READ_ONCE(tail_2nd->next);
		WRITE_ONCE(tail_2nd->next, next);
		smp_store_release(&head_2nd->locked, CNA_NO_SECONDARY);
	} else {
		smp_store_release(&next->locked, CNA_NO_SECONDARY);
	}
}

/* ---- CNA v15 (14 May 2021): the head sorts while it waits ------------------------------------ */

#define CNA_FLUSH_SECONDARY 1u /* start_time value: the head decided to flush */

#ifndef cna_lock_is_busy
#define cna_lock_is_busy(lock)                                                                 \
	((u32)atomic_read(&(lock)->val) & q_locked_pending_mask(Q_PENDING_BYTE))
#endif

/* Has the secondary queue waited long enough (time, or count of hand-overs) to be flushed? */
static bool cna_threshold_reached(const struct qspinlock *lock, const struct qnode *node)
{
	if (lock->threshold_handoffs)
		return node->handoffs >= lock->threshold_handoffs;
	return cna_clock_ns() - node->start_time >= lock->threshold_ns;
}

/* Move `next` (not the primary tail: `nnext` follows it) to the secondary queue's tail. */
static void cna_splice_next(struct qnode *node, struct qnode *next, struct qnode *nnext)
{
	u32 secondary = READ_ONCE(node->locked);

	WRITE_ONCE(node->next, nnext);
	if (secondary <= CNA_NO_SECONDARY) {
		/* Create the secondary queue; the fairness clock starts now. */
		WRITE_ONCE(next->next, next);
		u64 now = cna_clock_ns();
		node->start_time = now > CNA_FLUSH_SECONDARY ? now : CNA_FLUSH_SECONDARY + 1;
		node->handoffs = 0;
	} else {
		struct qnode *tail_2nd = cna_secondary_tail(secondary);
		WRITE_ONCE(next->next, READ_ONCE(tail_2nd->next));
		WRITE_ONCE(tail_2nd->next, next);
	}
	WRITE_ONCE(node->locked, next->encoded_tail);
}

/*
 * One sorting step: returns true when my successor is on the node I sort for (stop); else moves
 * it to the secondary queue if it is not the tail, and returns false.
 */
static bool cna_order_queue(struct qnode *node)
{
	struct qnode *next = smp_load_acquire(&node->next);

	if (!next)
		return false;
	if (next->numa_node == node->numa_node)
		return true;
	struct qnode *nnext = smp_load_acquire(&next->next);
	if (nnext)
		cna_splice_next(node, next, nnext);
	return false;
}

/*
 * The queue head, before it waits for the owner and the pending waiter to leave: sort the queue
 * while the lock is busy (this time would be spent spinning anyway), or decide to flush the
 * secondary queue. The clock is read only here and in cna_splice_next(), and only when a
 * secondary queue exists or is being created: never on the new owner's critical path.
 */
static void cna_wait_head_or_lock(struct qspinlock *lock, struct qnode *node)
{
	u32 secondary = READ_ONCE(node->locked);

	/* Shuffle reduction: with no secondary queue, usually do not sort at all. */
	if (secondary <= CNA_NO_SECONDARY && cna_probably(node, lock->shuffle_bits))
		return;
	if (node->start_time == 0 || !cna_threshold_reached(lock, node)) {
		while (cna_lock_is_busy(lock) && !cna_order_queue(node))
			cpu_relax();
	} else {
		node->start_time = CNA_FLUSH_SECONDARY;
	}
}

/*
 * I own the lock; make one waiter the head. `next` is the successor read before sorting; after
 * a sort it is reloaded. The secondary queue and its age travel with the lock, with the node
 * preference, so the next head keeps sorting for the same node.
 */
static void cna_lock_handoff(struct qnode *node, struct qnode *next)
{
	u32 secondary = READ_ONCE(node->locked);
	u32 val = CNA_NO_SECONDARY;

	if (node->start_time != CNA_FLUSH_SECONDARY) {
		if (secondary > CNA_NO_SECONDARY) {
			val = secondary;
			next = smp_load_acquire(&node->next);
			next->numa_node = node->numa_node;
			next->start_time = node->start_time;
			next->handoffs = node->handoffs + 1;
		}
	} else {
		/* Flush: splice the secondary queue in front of `next`, its head goes first. */
		struct qnode *tail_2nd = cna_secondary_tail(secondary);
		struct qnode *head_2nd = READ_ONCE(tail_2nd->next);
		WRITE_ONCE(tail_2nd->next, next);
		next = head_2nd;
	}
	smp_store_release(&next->locked, val); /* pairs with the ACQUIRE spin on ->locked */
}

/* ---- the slow path: kernel/locking/qspinlock.c -------------------------------------------------- */

static inline __attribute__((always_inline)) void
queued_spin_lock_slowpath(struct qspinlock *lock, u32 val, struct lock_thread *self,
			  enum q_layout layout, enum cna_revision cna)
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
		if (!(val & q_pending_mask(layout)))
			clear_pending(lock, layout);
		goto queue;
	}
	/* 0,1,1 -> 0,1,0: wait for the owner to leave (ACQUIRE pairs with unlock), then take it. */
	if (val & _Q_LOCKED_MASK)
		smp_cond_load_acquire(&lock->val.counter, !(VAL & (int)_Q_LOCKED_MASK));
	clear_pending_set_locked(lock, layout);
	return;

queue:
	node = lock_qnode(self, LOCK_QNODE_QUEUE, struct qnode);
	idx = node->count++;
	tail = encode_tail(self->index, idx, layout);
	node = lock_qnode(self, idx, struct qnode);
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
		prev = decode_tail(old, layout);
		smp_store_release(&prev->next, node); /* pairs with the ACQUIRE read of ->next */
		smp_cond_load_acquire(&node->locked, VAL);
		next = smp_load_acquire(&node->next);
	}

	if (cna == CNA_V15)
		cna_wait_head_or_lock(lock, node);

	/* *,x,y -> *,0,0: head of the queue, wait for the owner and any pending waiter to leave. */
	val = (u32)smp_cond_load_acquire(&lock->val.counter,
					 !(VAL & (int)q_locked_pending_mask(layout)));

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
		} else if (cna_try_clear_tail(lock, node, val)) {
			goto release;
		}
	}
	/* *,*,0 -> *,*,1: take the lock, then make the next waiter the head. */
	set_locked(lock);
	if (!next)
		next = smp_cond_load_acquire(&node->next, VAL != NULL);
	if (cna == CNA_V15)
		cna_lock_handoff(node, next);
	else if (cna == CNA_V1)
		cna_v1_pass_lock(lock, node, next);
	else
		smp_store_release(&next->locked, 1);

release:
	lock_qnode(self, LOCK_QNODE_QUEUE, struct qnode)->count--;
}

/* ---- lock ops ------------------------------------------------------------------------------ */

static inline __attribute__((always_inline)) void
queued_spin_lock(void *lockp, struct lock_thread *self, enum q_layout layout,
		 enum cna_revision cna)
{
	struct qspinlock *lock = lockp;
	int val = 0;

	if (likely(atomic_try_cmpxchg_acquire(&lock->val, &val, (int)_Q_LOCKED_VAL)))
		return;
	queued_spin_lock_slowpath(lock, (u32)val, self, layout, cna);
}

/* The disassembly test (tests/test_spinlocks.py) reads these functions by name. */
static void qspinlock_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BYTE, CNA_NONE);
}

static void qspinlock_nr16k_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BIT, CNA_NONE);
}

static void cna_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BYTE, CNA_V15);
}

static void cna_v1_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BYTE, CNA_V1);
}

static bool qspinlock_trylock(void *lockp, struct lock_thread *self)
{
	(void)self;
	return queued_spin_trylock(lockp);
}

/* RELEASE store of 0 to the locked byte, in both layouts (asm-generic/qspinlock.h). */
static void qspinlock_unlock(void *lockp, struct lock_thread *self)
{
	struct qspinlock *lock = lockp;
	(void)self;
	smp_store_release(&lock->locked, 0);
}

/*
 * The NR_CPUS >= 16K layout's unlock: the same byte store, except under ThreadSanitizer. In this
 * layout the tail is published by RELEASE cmpxchg's of the whole word (xchg_tail above), at the
 * address unlock's byte store also writes. TSAN keeps one release history per address and lets a
 * RELEASE store replace it (C11: a store ends the release sequence of the RMWs before it; C11
 * has no rule for a byte store into a word), so after an unlock a waiter's node initialisation
 * no longer happens-before its successor's link in TSAN's view, and TSAN reports the two
 * threads' node accesses as racing. The hardware orders them as in the kernel: the successor's
 * cmpxchg reads the tail that the waiter's cmpxchg wrote. So under TSAN only this variant
 * unlocks with a RELEASE fetch_and of the word, an RMW, which continues the history. The x86
 * layout needs no such path: its tail has its own half-word, written only by xchg_tail's RMWs.
 */
static void qspinlock_nr16k_unlock(void *lockp, struct lock_thread *self)
{
#if defined(__SANITIZE_THREAD__)
	(void)self;
	atomic_fetch_andnot_release((int)_Q_LOCKED_MASK, &((struct qspinlock *)lockp)->val);
#else
	qspinlock_unlock(lockp, self);
#endif
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
	lock->shuffle_bits = (u32)args->params[CNA_SHUFFLE_REDUCTION];
	return 0;
}

enum { CNA_V1_FAIRNESS_BITS };

static int cna_v1_init(void *lockp, const struct lock_init_args *args)
{
	struct qspinlock *lock = lockp;
	if (args->nthreads > QSPIN_MAX_THREADS)
		return -EINVAL;
	lock->fairness_bits = (u32)args->params[CNA_V1_FAIRNESS_BITS];
	return 0;
}

static const struct lock_tunable no_tunables[] = { LOCK_TUNABLES_END };

static const struct lock_tunable cna_tunables[] = {
	[CNA_THRESHOLD_NS] = { "threshold_ns", 1000000, 0, 1000000000,
			       "fairness: flush the secondary queue once it is this old (ns; v15's "
			       "numa_spinlock_threshold_ns)" },
	[CNA_THRESHOLD_HANDOFFS] = { "threshold_handoffs", 0, 0, 1L << 30,
				     "if not 0: flush after this many hand-overs with a secondary "
				     "queue instead (the count rule of v9, Jan 2020: 65536)" },
	[CNA_SHUFFLE_REDUCTION] = { "shuffle_reduction", 7, 0, 30,
				    "with an empty secondary queue, the head sorts the queue once in "
				    "2^N acquisitions (0: always; v1 had none)" },
	LOCK_TUNABLES_END,
};

static const struct lock_tunable cna_v1_tunables[] = {
	[CNA_V1_FAIRNESS_BITS] = { "fairness_bits", 16, 0, 30,
				   "fairness: skip the scan for a local waiter (secondary queue "
				   "first) once in 2^N hand-overs (v1: 0x10000)" },
	LOCK_TUNABLES_END,
};

const struct lock_ops qspinlock_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "qspinlock",
	.family = "spin-kernel",
	.summary = "Linux 6.1 queued spinlock as x86 builds it: byte unlock, pending byte, 16-bit "
		   "tail xchg",
	.source = "Linux 6.1 kernel/locking/qspinlock.c, include/asm-generic/qspinlock_types.h "
		  "(NR_CPUS < 16K), arch/x86/include/asm/qspinlock.h; Long & Zijlstra (4.2)",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct qspinlock),
	.tunables = no_tunables,
	.init = qspinlock_init,
	.lock = qspinlock_lock,
	.unlock = qspinlock_unlock,
	.trylock = qspinlock_trylock,
};

const struct lock_ops qspinlock_nr16k_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "qspinlock_nr16k",
	.family = "spin-kernel",
	.summary = "Linux 6.1 qspinlock, NR_CPUS >= 16K layout: 1-bit pending, tail by cmpxchg loop",
	.source = "Linux 6.1 kernel/locking/qspinlock.c, include/asm-generic/qspinlock_types.h "
		  "(NR_CPUS >= 16K)",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct qspinlock),
	.tunables = no_tunables,
	.init = qspinlock_init,
	.lock = qspinlock_nr16k_lock,
	.unlock = qspinlock_nr16k_unlock,
	.trylock = qspinlock_trylock,
};

const struct lock_ops cna_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "cna",
	.family = "spin-kernel",
	.summary = "CNA series v15 (May 2021): head sorts while waiting, 1 ms fairness, shuffle "
		   "reduction",
	.source = "Dice & Kogan, EuroSys 2019 (arXiv:1810.05600); A. Kogan, [PATCH v15 0/6] Add "
		  "NUMA-awareness to qspinlock, LKML 14 May 2021",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct qspinlock),
	.tunables = cna_tunables,
	.init = cna_init,
	.lock = cna_lock,
	.unlock = qspinlock_unlock,
	.trylock = qspinlock_trylock,
};

const struct lock_ops cna_v1_ops = {
	.abi_version = LOCKLAB_ABI_VERSION,
	.name = "cna_v1",
	.family = "spin-kernel",
	.summary = "CNA series v1 (Jan 2019, seed 002): owner scans at hand-over, 1/2^16 fairness, "
		   "no shuffle reduction",
	.source = "Dice & Kogan, EuroSys 2019 (arXiv:1810.05600); A. Kogan, [PATCH 0/3] Add "
		  "NUMA-awareness to qspinlock, LKML 30 Jan 2019",
	.flags = LOCK_SPINS,
	.lock_size = sizeof(struct qspinlock),
	.tunables = cna_v1_tunables,
	.init = cna_v1_init,
	.lock = cna_v1_lock,
	.unlock = qspinlock_unlock,
	.trylock = qspinlock_trylock,
};
