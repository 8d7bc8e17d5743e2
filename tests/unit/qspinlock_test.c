/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of native/locks/qspinlock.c, single-threaded and deterministic: the lock word's
 * layout, and CNA's hand-over decisions driven on a synthetic queue (the real cna_handoff()
 * code, with waiters that re-queue at once, as under saturation).
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include "../../native/locks/qspinlock.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                       \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			failures++;                                                            \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                            \
			printf(__VA_ARGS__);                                                   \
			printf("\n");                                                          \
		}                                                                              \
	} while (0)

static void test_word_layout(void)
{
	CHECK(_Q_LOCKED_MASK == 0x000000ffu, "locked byte is bits 0-7: %#x", _Q_LOCKED_MASK);
	CHECK(_Q_PENDING_MASK == 0x00000100u, "pending is bit 8: %#x", _Q_PENDING_MASK);
	CHECK(_Q_TAIL_IDX_MASK == 0x00000600u, "tail idx is bits 9-10: %#x", _Q_TAIL_IDX_MASK);
	CHECK(_Q_TAIL_CPU_MASK == 0xfffff800u, "tail cpu is bits 11-31: %#x", _Q_TAIL_CPU_MASK);
	CHECK((_Q_LOCKED_MASK | _Q_PENDING_MASK | _Q_TAIL_MASK) == 0xffffffffu &&
		      !(_Q_LOCKED_MASK & _Q_PENDING_MASK) && !(_Q_PENDING_MASK & _Q_TAIL_MASK),
	      "the fields tile the word without overlap");
	CHECK(_Q_LOCKED_VAL == 1 && _Q_PENDING_VAL == 0x100, "locked and pending values");
	/* Thread 0 must not encode as 0 (no tail): the index is stored + 1. */
	CHECK(encode_tail(0, 0) == 1u << 11, "thread 0 idx 0 -> %#x", encode_tail(0, 0));
	CHECK(encode_tail(5, 3) == ((6u << 11) | (3u << 9)), "thread 5 idx 3 -> %#x",
	      encode_tail(5, 3));
	CHECK(encode_tail((1u << 21) - 2, 3) == (_Q_TAIL_CPU_MASK | _Q_TAIL_IDX_MASK),
	      "the largest index fills the tail");
	/* Every encoded tail is above 1, so it can stand for a secondary queue in ->locked. */
	CHECK(encode_tail(0, 0) > 1, "encoded tails are > 1");

	static struct lock_thread threads[3];
	for (unsigned int i = 0; i < 3; i++) {
		threads[i].index = i;
		qspin_threads[i] = &threads[i];
	}
	for (unsigned int i = 0; i < 3; i++)
		for (int idx = 0; idx < LOCK_QNODES_PER_THREAD; idx++)
			CHECK(decode_tail(encode_tail(i, idx)) ==
				      lock_qnode(&threads[i], idx, struct qnode),
			      "decode(encode(%u, %d)) is that thread's node", i, idx);
}

static void test_word_transitions(void)
{
	struct qspinlock lock = { ATOMIC_INIT(0), 0, 0, 0 };
	CHECK(queued_spin_trylock(&lock), "trylock of a free lock");
	CHECK(atomic_read(&lock.val) == (int)_Q_LOCKED_VAL, "0,0,0 -> 0,0,1");
	CHECK(!queued_spin_trylock(&lock), "trylock of a held lock fails");
	atomic_or((int)_Q_PENDING_VAL, &lock.val);
	u32 tail = encode_tail(7, 0);
	u32 old = xchg_tail(&lock, tail);
	CHECK(old == (_Q_PENDING_VAL | _Q_LOCKED_VAL), "xchg_tail returns the old word %#x", old);
	CHECK((u32)atomic_read(&lock.val) == (tail | _Q_PENDING_VAL | _Q_LOCKED_VAL),
	      "xchg_tail keeps locked and pending");
	atomic_fetch_andnot_release((int)_Q_LOCKED_MASK, &lock.val);
	clear_pending_set_locked(&lock);
	CHECK((u32)atomic_read(&lock.val) == (tail | _Q_LOCKED_VAL), "*,1,0 -> *,0,1");
	clear_pending(&lock);
	set_locked(&lock);
	CHECK((u32)atomic_read(&lock.val) == (tail | _Q_LOCKED_VAL), "set_locked is idempotent");
}

/*
 * A saturated queue: N waiters of alternating nodes; the head is handed the lock, its
 * successor is chosen by the lock's policy, and the old holder re-queues at the tail at once.
 */
#define WAITERS 8
#define ROUNDS 20000

struct simulation {
	struct lock_thread threads[WAITERS];
	struct qnode *tail; /* last node of the primary queue */
	unsigned long handoffs, same_node;
	unsigned long waited[WAITERS]; /* hand-overs since this waiter queued */
	unsigned long max_waited;
	unsigned long served[WAITERS];
};

static struct qnode *node_of(struct simulation *s, unsigned int i)
{
	return lock_qnode(&s->threads[i], 0, struct qnode);
}

static unsigned int index_of(struct simulation *s, const struct qnode *node)
{
	for (unsigned int i = 0; i < WAITERS; i++)
		if (node_of(s, i) == node)
			return i;
	abort();
}

static void enqueue(struct simulation *s, unsigned int i)
{
	struct qnode *node = node_of(s, i);
	node->next = NULL;
	node->locked = 0;
	cna_init_node(node, &s->threads[i], encode_tail(i, 0));
	if (s->tail)
		s->tail->next = node;
	s->tail = node;
	s->waited[i] = 0;
}

/* Which waiter was told it is the head (exactly one must be). */
static struct qnode *new_head(struct simulation *s, struct qnode *holder)
{
	struct qnode *head = NULL;
	for (unsigned int i = 0; i < WAITERS; i++) {
		struct qnode *n = node_of(s, i);
		if (n != holder && n->locked != 0) {
			CHECK(head == NULL, "two waiters were made head");
			head = n;
		}
	}
	return head;
}

static void simulate(struct simulation *s, struct qspinlock *lock, bool numa)
{
	memset(s, 0, sizeof(*s));
	for (unsigned int i = 0; i < WAITERS; i++) {
		s->threads[i].index = i;
		s->threads[i].numa_node = (int)(i % 2); /* arrival order alternates nodes */
		qspin_threads[i] = &s->threads[i];
	}
	for (unsigned int i = 0; i < WAITERS; i++)
		enqueue(s, i);
	struct qnode *holder = node_of(s, 0);
	holder->locked = 1;
	for (unsigned long round = 0; round < ROUNDS; round++) {
		unsigned int h = index_of(s, holder);
		struct qnode *next = holder->next;
		s->served[h]++;
		for (unsigned int i = 0; i < WAITERS; i++)
			if (i != h && ++s->waited[i] > s->max_waited)
				s->max_waited = s->waited[i];
		/* The holder leaves the primary queue; the tail is never the holder here. */
		if (numa)
			cna_handoff(lock, holder, next);
		else
			smp_store_release(&next->locked, 1);
		struct qnode *head = new_head(s, holder);
		CHECK(head != NULL, "nobody was made head in round %lu", round);
		if (head == NULL)
			return;
		s->handoffs++;
		s->same_node += head->numa_node == holder->numa_node;
		/* The secondary queue may have rearranged the list: find the primary tail again. */
		u32 secondary = head->locked > 1 ? head->locked : 0;
		struct qnode *last = head;
		while (last->next && last->next != holder)
			last = last->next;
		s->tail = last;
		holder->locked = 0;
		enqueue(s, h);
		/* Keep the secondary queue's circle intact: enqueue() only touched the primary. */
		if (secondary)
			CHECK(decode_tail(secondary)->next != NULL, "secondary queue is a circle");
		holder = head;
	}
}

static void test_cna_keeps_the_lock_on_a_node(void)
{
	static struct simulation fifo, cna, cna_time;
	struct qspinlock lock = { ATOMIC_INIT(0), 1000000000, 64, 0 }; /* always scan */

	simulate(&fifo, &lock, false);
	simulate(&cna, &lock, true);
	double fifo_fraction = (double)fifo.same_node / (double)fifo.handoffs;
	double cna_fraction = (double)cna.same_node / (double)cna.handoffs;
	printf("same-node hand-overs: FIFO (MCS, qspinlock) %.3f, CNA %.3f; longest wait in "
	       "hand-overs: FIFO %lu, CNA (threshold 64) %lu\n",
	       fifo_fraction, cna_fraction, fifo.max_waited, cna.max_waited);
	CHECK(fifo_fraction == 0.0, "alternating arrivals: FIFO never stays on a node (%.3f)",
	      fifo_fraction);
	CHECK(cna_fraction > 0.9, "CNA keeps the lock on one node (%.3f)", cna_fraction);
	CHECK(fifo.max_waited == WAITERS - 1, "FIFO: each waits for the others once (%lu)",
	      fifo.max_waited);
	/* The count threshold bounds starvation: 64 local hand-overs, then the others. */
	CHECK(cna.max_waited <= 64 + 2 * WAITERS, "CNA's threshold bounds the wait (%lu)",
	      cna.max_waited);
	for (unsigned int i = 0; i < WAITERS; i++)
		CHECK(cna.served[i] > 0, "waiter %u was served", i);

	/* With the threshold off, the remote node starves for the whole simulation. */
	struct qspinlock unfair = { ATOMIC_INIT(0), 1000000000, 1u << 30, 0 };
	simulate(&cna_time, &unfair, true);
	CHECK(cna_time.max_waited > ROUNDS / 2, "no threshold, remote waiters starve (%lu)",
	      cna_time.max_waited);
}

static void test_shuffle_reduction(void)
{
	static struct simulation s;
	/* Scan once in 2^30: practically never, so CNA behaves as FIFO. */
	struct qspinlock lock = { ATOMIC_INIT(0), 1000000000, 64, (1u << 30) - 1 };
	simulate(&s, &lock, true);
	CHECK(s.same_node * 100 < s.handoffs, "without scans CNA hands over like FIFO (%lu/%lu)",
	      s.same_node, s.handoffs);
}

int main(void)
{
	test_word_layout();
	test_word_transitions();
	test_cna_keeps_the_lock_on_a_node();
	test_shuffle_reduction();
	if (failures) {
		printf("%d checks failed\n", failures);
		return 1;
	}
	printf("all checks passed\n");
	return 0;
}
