/* SPDX-License-Identifier: MIT */
/*
 * Unit test of native/locks/rtmutex.c's waiting, single-threaded and deterministic: does the
 * top waiter spin on a running owner before it sleeps, or sleep at once?
 *
 * A fake owner X holds the lock and counts as running (it never sleeps), and never lets go
 * while the waiter spins, so a waiter that spins at all polls X until its own limit. READ_ONCE
 * and WRITE_ONCE are wrapped (before the lock's source is included) to count the waiter's
 * looks at whether X runs (reads of X's `sleeping`, which only the spin makes) before it first
 * goes to sleep (it marks itself asleep); there X releases the lock and wakes it, and the
 * waiter takes the lock. Zero looks: it slept at once. Seed 003's baseline (2.6.24-rt) and
 * rtmutex_adaptive with spin_budget_ns=0 must read zero; the stock and adaptive locks must spin.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <locklab/kernel.h>

#include <stdio.h>

#include "access_hooks.h"

#include "../../native/locks/rtmutex.c"

/* Declared weak so that this test also builds, and fails, without the baseline. */
extern const struct lock_ops rtmutex_rt_2_6_24_ops __attribute__((weak));

#include "check.h"


static struct lock_thread waiter_thread, owner_thread;
static unsigned char lock_memory[sizeof(struct rtmutex)]
	__attribute__((aligned(LOCKLAB_CACHELINE)));
static struct rtmutex *const test_lock = (struct rtmutex *)(void *)lock_memory;

static long owner_polls; /* the waiter's looks at whether X runs, before it first sleeps */
static int sleeps;

static void after_read(const void *addr)
{
	if (sleeps == 0 && addr == &lock_task_of(&owner_thread)->sleeping)
		owner_polls++;
}

static void after_write(const void *addr)
{
	struct lock_task *me = lock_task_of(&waiter_thread);

	if (addr == &me->sleeping && __atomic_load_n(&me->sleeping, __ATOMIC_RELAXED) == 1) {
		sleeps++;
		/*
		 * X unlocks as its slow path would: the top waiter leaves X's pi_waiters, the
		 * lock is left (NULL, HAS_WAITERS), and the waiter is woken.
		 */
		dequeue_pi((struct rt_task *)lock_task_of(&owner_thread), rt_top_waiter(test_lock));
		__atomic_store_n(&test_lock->owner, RT_MUTEX_HAS_WAITERS, __ATOMIC_RELEASE);
		__atomic_store_n(&me->state, LOCK_TASK_RUNNING, __ATOMIC_RELAXED);
	}
}

/* Reads of the owner word the waiter made on a running owner before it first slept. */
static long owner_polls_before_sleeping(const struct lock_ops *ops, const long *params)
{
	struct rt_task *x = (struct rt_task *)lock_task_of(&owner_thread);
	struct lock_init_args args = { params, 2 };

	memset(lock_memory, 0, sizeof(lock_memory));
	CHECK(ops->init(test_lock, &args) == 0, "%s: init", ops->name);
	owner_polls = 0;
	sleeps = 0;
	test_lock->owner = (uintptr_t)x; /* X holds the lock and runs (it never sleeps) */

	ops->lock(test_lock, &waiter_thread);

	CHECK(sleeps == 1, "%s: the waiter slept once, then took the lock (slept %d times)",
	      ops->name, sleeps);
	CHECK(rt_mutex_owner(test_lock) == (struct rt_task *)lock_task_of(&waiter_thread),
	      "%s: the waiter holds the lock", ops->name);
	ops->unlock(test_lock, &waiter_thread);
	CHECK(test_lock->owner == 0, "%s: unlocked (owner %#lx)", ops->name,
	      (unsigned long)test_lock->owner);
	return owner_polls;
}

static void test_baseline_never_spins(void)
{
	const struct lock_ops *volatile baseline = &rtmutex_rt_2_6_24_ops;
	if (baseline == NULL) {
		CHECK(false, "no rtmutex_rt_2_6_24: seed 003's non-spinning baseline is missing");
		return;
	}
	long params[1] = { 0 };
	long polls = owner_polls_before_sleeping(baseline, params);
	CHECK(polls == 0, "rtmutex_rt_2_6_24 polled a running owner %ld times before sleeping",
	      polls);
}

static void test_adaptive_zero_budget_never_spins(void)
{
	long params[2] = { 0, 1 }; /* spin_budget_ns=0, lateral_steal=1 */
	long polls = owner_polls_before_sleeping(&rtmutex_adaptive_ops, params);
	CHECK(polls == 0,
	      "rtmutex_adaptive spin_budget_ns=0 polled a running owner %ld times before sleeping",
	      polls);
}

/* The counter sees spinning where there is some: the budgeted and the stock locks spin. */
static void test_spinning_locks_spin(void)
{
	long params[2] = { 20000, 1 };
	long polls = owner_polls_before_sleeping(&rtmutex_adaptive_ops, params);
	CHECK(polls >= 64, "rtmutex_adaptive spin_budget_ns=20000 polled only %ld times", polls);
	polls = owner_polls_before_sleeping(&rtmutex_k0_ops, params);
	CHECK(polls >= 64, "rtmutex_k0 polled a running owner only %ld times", polls);
}

/*
 * Seed 003's two kernels differ in wait_lock as the thread's did: 2.6.24's unfair decrement
 * lock for the baseline, the ticket lock the series carried for the adaptive lock; 6.1's
 * stock takes the queued lock. Each lock's wait_lock is taken and released in its own form,
 * and the other words stay untouched.
 */
static void test_each_kernel_takes_its_own_wait_lock(void)
{
	const struct {
		const struct lock_ops *ops;
		enum rt_raw_kind kind;
	} kernels[] = {
		{ &rtmutex_rt_2_6_24_ops, RT_RAW_DEC },
		{ &rtmutex_adaptive_ops, RT_RAW_TICKET },
		{ &rtmutex_k0_ops, RT_RAW_QUEUED },
	};
	long params[2] = { 0, 0 };
	struct lock_init_args args = { params, 2 };
	struct rt_task *me = (struct rt_task *)lock_task_of(&waiter_thread);

	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++) {
		memset(lock_memory, 0, sizeof(lock_memory));
		CHECK(kernels[i].ops->init(test_lock, &args) == 0, "%s: init", kernels[i].ops->name);
		CHECK(test_lock->raw_kind == kernels[i].kind, "%s: wait_lock of kind %d, not %d",
		      kernels[i].ops->name, (int)test_lock->raw_kind, (int)kernels[i].kind);
		rt_raw_lock(test_lock, &test_lock->wait_lock, me);
		CHECK(!rt_raw_trylock(test_lock, &test_lock->wait_lock),
		      "%s: a held wait_lock was taken again", kernels[i].ops->name);
		rt_raw_unlock(test_lock, &test_lock->wait_lock);
		CHECK(rt_raw_trylock(test_lock, &test_lock->wait_lock),
		      "%s: a released wait_lock could not be taken", kernels[i].ops->name);
		rt_raw_unlock(test_lock, &test_lock->wait_lock);
	}
}

/*
 * The waiter trees (rbtree.h): after each of many random insertions and removals, the tree is
 * a red-black tree (a black root, no red node with a red child, one black count on every path,
 * children pointing back at their parents), in the kernel's order (the more important first,
 * FIFO among equals), and its cached leftmost is its first node.
 */
struct tree_item {
	struct rt_waiter_node node;
	unsigned long arrival; /* when it was inserted: equal priorities leave in this order */
	bool in_tree;
};

static int tree_walk(const struct rb_node *node, const struct rb_node *parent,
		     const struct tree_item **previous, int *count, bool *ok)
{
	if (node == NULL)
		return 1;
	if (rb_parent(node) != parent)
		*ok = false;
	if (rb_is_red(node) && (rb_is_red(node->left) || rb_is_red(node->right)))
		*ok = false;
	int left = tree_walk(node->left, node, previous, count, ok);
	const struct tree_item *item = rb_entry(node, struct tree_item, node.entry);
	if (*previous && ((*previous)->node.prio < item->node.prio ||
			  ((*previous)->node.prio == item->node.prio &&
			   (*previous)->arrival > item->arrival)))
		*ok = false;
	*previous = item;
	(*count)++;
	int right = tree_walk(node->right, node, previous, count, ok);
	if (left != right)
		*ok = false;
	return left + (rb_is_black(node) ? 1 : 0);
}

static void test_waiter_tree_stays_a_red_black_tree_in_the_kernels_order(void)
{
	enum { ITEMS = 48, STEPS = 20000 };
	static struct tree_item items[ITEMS];
	struct rb_root_cached tree = { NULL, NULL };
	unsigned long random = 12345, arrivals = 0;
	int in_tree = 0, broken_at = -1;

	for (int step = 0; step < STEPS && broken_at < 0; step++) {
		random = random * 6364136223846793005UL + 1442695040888963407UL;
		struct tree_item *item = &items[(random >> 33) % ITEMS];
		if (item->in_tree) {
			rb_erase_cached(&item->node.entry, &tree);
			rb_clear_node(&item->node.entry);
			item->in_tree = false;
			in_tree--;
		} else {
			item->node.prio = (int)((random >> 50) % 3); /* many equals */
			item->arrival = ++arrivals;
			rb_add_cached(&item->node.entry, &tree, waiter_less);
			item->in_tree = true;
			in_tree++;
		}
		const struct tree_item *previous = NULL;
		int count = 0;
		bool ok = rb_is_black(tree.root);
		tree_walk(tree.root, NULL, &previous, &count, &ok);
		struct rb_node *first = tree.root;
		while (first && first->left)
			first = first->left;
		if (!ok || count != in_tree || tree.leftmost != first)
			broken_at = step;
	}
	CHECK(broken_at < 0, "the waiter tree broke at step %d of %d", broken_at, STEPS);
}

/* 2.6.24's lock word: free when zeroed, a failed decrement leaves it taken until the store. */
static void test_decrement_lock(void)
{
	struct raw_dec_spinlock lock = { 0 };

	raw_dec_spin_lock(&lock);
	CHECK(lock.taken == 1, "held: taken %d (slock 0)", (int)lock.taken);
	CHECK(!raw_dec_spin_trylock(&lock), "trylock took a held decrement lock");
	raw_dec_spin_unlock(&lock);
	CHECK(lock.taken == 0, "released: taken %d (slock 1)", (int)lock.taken);
	CHECK(raw_dec_spin_trylock(&lock), "trylock failed on a free decrement lock");
	raw_dec_spin_unlock(&lock);
}

int main(void)
{
	waiter_thread.index = 0;
	owner_thread.index = 1;
	test_each_kernel_takes_its_own_wait_lock();
	test_waiter_tree_stays_a_red_black_tree_in_the_kernels_order();
	test_decrement_lock();
	test_baseline_never_spins();
	test_adaptive_zero_budget_never_spins();
	test_spinning_locks_spin();
	return check_summary();
}
