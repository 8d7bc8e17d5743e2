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
 *     (the idx >= 4 fallback is unreachable), no lock events or tracepoints.
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
 *
 * A port beside the tree's own code (kernel:qspinlock, compiled from 6.1): kept, since it carries
 * CNA (v1 and v15) as its slow path, which 6.1 does not have; tests/test_ports.py holds it to the
 * tree's code (docs/locks.md, "Ports and the tree").
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <time.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

#define QSPINLOCK_CNA /* this file defines the CNA hooks qspinlock.h declares */
#define QSPINLOCK_WAIT_POLICY /* and its locks take a waiting policy (wait.h) */
#include "qspinlock.h"

/* ---- CNA: shared pieces --------------------------------------------------------------------- */


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

/*
 * The node the thread runs on: its own when pinned, else the kernel's numa_node_id() of the CPU
 * it is on now, as getcpu(2) tells it (an unpinned thread may move between acquisitions).
 */
static int current_numa_node(const struct lock_thread *self)
{
	unsigned int cpu, node;
	if (self->numa_node >= 0)
		return self->numa_node;
	return getcpu(&cpu, &node) == 0 ? (int)node : 0;
}

static void cna_init_node(struct qnode *node, struct lock_thread *self, u32 tail)
{
	node->real_numa_node = current_numa_node(self);
	node->numa_node = node->real_numa_node;
	node->encoded_tail = tail;
	node->start_time = 0;
	node->handoffs = 0;
}

/*
 * False with probability 1 / 2^bits: the series' probably(), on a per-CPU seed in every
 * revision; per thread here (xorshift), beside the thread's other private fields, not in the
 * queue node, whose line the waiters around it write (->locked, ->next).
 */
static bool cna_probably(struct lock_thread *self, unsigned int bits)
{
	u32 x = self->random_seed;
	if (x == 0)
		x = 2463534242u ^ (self->index * 2654435761u);
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	self->random_seed = x;
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
static bool cna_try_clear_tail(struct qspinlock *lock, struct lock_thread *self, struct qnode *node,
			       u32 val)
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
	q_hand_over(lock, self, head_2nd, CNA_NO_SECONDARY);
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
static void cna_v1_pass_lock(struct qspinlock *lock, struct lock_thread *self, struct qnode *node,
			     struct qnode *next)
{
	struct qnode *succ = NULL;

	if (cna_probably(self, lock->fairness_bits))
		succ = cna_v1_find_successor(node, next);

	u32 secondary = READ_ONCE(node->locked);
	if (succ) {
		q_hand_over(lock, self, succ,
			    secondary > CNA_NO_SECONDARY ? secondary : CNA_NO_SECONDARY);
	} else if (secondary > CNA_NO_SECONDARY) {
		struct qnode *tail_2nd = cna_secondary_tail(secondary);
		struct qnode *head_2nd = READ_ONCE(tail_2nd->next);
		WRITE_ONCE(tail_2nd->next, next);
		q_hand_over(lock, self, head_2nd, CNA_NO_SECONDARY);
	} else {
		q_hand_over(lock, self, next, CNA_NO_SECONDARY);
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
static void cna_wait_head_or_lock(struct qspinlock *lock, struct lock_thread *self,
				  struct qnode *node)
{
	u32 secondary = READ_ONCE(node->locked);

	/* Shuffle reduction: with no secondary queue, usually do not sort at all. */
	if (secondary <= CNA_NO_SECONDARY && cna_probably(self, lock->shuffle_bits))
		return;
	if (node->start_time == 0 || !cna_threshold_reached(lock, node)) {
		struct lock_wait_budget budget = LOCK_WAIT_BUDGET_INIT;
		while (cna_lock_is_busy(lock) && !cna_order_queue(node))
			lock_wait_pause_unwoken(&lock->wait, &budget); /* a preempted owner: yield */
	} else {
		node->start_time = CNA_FLUSH_SECONDARY;
		lock_event(self, LOCK_EVENT_QUEUE_FLUSH);
	}
}

/*
 * I own the lock; make one waiter the head. `next` is the successor read before sorting; after
 * a sort it is reloaded. The secondary queue and its age travel with the lock, with the node
 * preference, so the next head keeps sorting for the same node.
 */
static void cna_lock_handoff(struct qspinlock *lock, struct lock_thread *self, struct qnode *node,
			     struct qnode *next)
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
	q_hand_over(lock, self, next, val); /* pairs with the ACQUIRE spin on ->locked */
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
	queued_spin_lock_slowpath(lock, (u32)val, self, layout, cna, LOCK_QNODE_QUEUE);
}

/* The disassembly test (tests/test_spinlocks.py) reads these functions by name. */
static kernel_out_of_line void qspinlock_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BYTE, CNA_NONE);
}

static kernel_out_of_line void qspinlock_nr16k_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BIT, CNA_NONE);
}

static kernel_out_of_line void cna_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BYTE, CNA_V15);
}

static kernel_out_of_line void cna_v1_lock(void *lockp, struct lock_thread *self)
{
	queued_spin_lock(lockp, self, Q_PENDING_BYTE, CNA_V1);
}

static bool qspinlock_trylock(void *lockp, struct lock_thread *self)
{
	(void)self;
	return queued_spin_trylock(lockp);
}

/* RELEASE store of 0 to the locked byte, in both layouts (asm-generic/qspinlock.h). */
static kernel_out_of_line void qspinlock_unlock(void *lockp, struct lock_thread *self)
{
	struct qspinlock *lock = lockp;
	smp_store_release(&lock->locked, 0);
	q_word_changed(lock, self);
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
	struct qspinlock *lock = lockp;
	atomic_fetch_andnot_release((int)_Q_LOCKED_MASK, &lock->val);
	q_word_changed(lock, self);
#else
	qspinlock_unlock(lockp, self);
#endif
}

static int qspinlock_init(void *lockp, const struct lock_init_args *args)
{
	struct qspinlock *lock = lockp;
	lock_wait_configure(&lock->wait, args);
	return args->nthreads > QSPIN_MAX_THREADS ? -EINVAL : 0;
}

/* After the waiting policy's two. */
enum { CNA_THRESHOLD_NS = 2, CNA_THRESHOLD_HANDOFFS, CNA_SHUFFLE_REDUCTION };

static int cna_init(void *lockp, const struct lock_init_args *args)
{
	struct qspinlock *lock = lockp;
	if (args->nthreads > QSPIN_MAX_THREADS)
		return -EINVAL;
	lock_wait_configure(&lock->wait, args);
	lock->threshold_ns = (u64)args->params[CNA_THRESHOLD_NS];
	lock->threshold_handoffs = (u32)args->params[CNA_THRESHOLD_HANDOFFS];
	lock->shuffle_bits = (u32)args->params[CNA_SHUFFLE_REDUCTION];
	return 0;
}

enum { CNA_V1_FAIRNESS_BITS = 2 };

static int cna_v1_init(void *lockp, const struct lock_init_args *args)
{
	struct qspinlock *lock = lockp;
	if (args->nthreads > QSPIN_MAX_THREADS)
		return -EINVAL;
	lock_wait_configure(&lock->wait, args);
	lock->fairness_bits = (u32)args->params[CNA_V1_FAIRNESS_BITS];
	return 0;
}

static const struct lock_tunable wait_tunables[] = { LOCK_WAIT_TUNABLES, LOCK_TUNABLES_END };

static const struct lock_tunable cna_tunables[] = {
	LOCK_WAIT_TUNABLES,
	[CNA_THRESHOLD_NS] = { "threshold_ns", 1000000, 0, 1000000000,
			       "fairness: flush the secondary queue once it is this old (ns; v15's "
			       "numa_spinlock_threshold_ns)", NULL },
	[CNA_THRESHOLD_HANDOFFS] = { "threshold_handoffs", 0, 0, 1L << 30,
				     "if not 0: flush after this many hand-overs with a secondary "
				     "queue instead (the count rule of v9, Jan 2020: 65536)", NULL },
	[CNA_SHUFFLE_REDUCTION] = { "shuffle_reduction", 7, 0, 30,
				    "with an empty secondary queue, the head sorts the queue once in "
				    "2^N acquisitions (0: always; v1 had none)", NULL },
	LOCK_TUNABLES_END,
};

static const struct lock_tunable cna_v1_tunables[] = {
	LOCK_WAIT_TUNABLES,
	[CNA_V1_FAIRNESS_BITS] = { "fairness_bits", 16, 0, 30,
				   "fairness: skip the scan for a local waiter (secondary queue "
				   "first) once in 2^N hand-overs (v1: 0x10000)", NULL },
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
	.tunables = wait_tunables,
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
	.tunables = wait_tunables,
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
