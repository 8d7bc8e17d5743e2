/* SPDX-License-Identifier: MIT */
/*
 * ck_loop - P1's independent reference: Concurrency Kit's spinlocks (libck-dev's headers, as
 * written, inlined) and glibc's pthread_mutex in the same bare loop (bare_loop.h), sharing no
 * code with the engine or its locks.
 * Usage: ck_loop LOCK SECONDS NTHREADS   LOCK: ck_fas ck_ticket ck_mcs ck_clh pthread_mutex
 */
#include <ck_spinlock.h>

#include "bare_loop.h"

enum which { FAS, TICKET, MCS, CLH, PTHREAD };

/*
 * Each lock word and each thread's queue node in a line of its own, 128 bytes as the engine
 * aligns them (LOCKLAB_CACHELINE: x86 fetches lines in pairs). Packed, the CLH tail shared its
 * line with the first node, and the two threads' MCS nodes shared one: a hand-over then moved
 * other lines than in the engine, and at 2 threads on an Intel VM this loop's ck_clh ran at
 * 1.2 times the engine's.
 */
#define OWN_LINE _Alignas(128)
struct mcs_slot {
	OWN_LINE struct ck_spinlock_mcs node;
};
struct clh_slot {
	OWN_LINE struct ck_spinlock_clh node;
};

static OWN_LINE enum which which; /* read once a batch, in no line a lock writes */
static OWN_LINE ck_spinlock_fas_t fas = CK_SPINLOCK_FAS_INITIALIZER;
static OWN_LINE ck_spinlock_ticket_t ticket = CK_SPINLOCK_TICKET_INITIALIZER;
static OWN_LINE ck_spinlock_mcs_t mcs_queue = CK_SPINLOCK_MCS_INITIALIZER;
static struct mcs_slot mcs_nodes[BARE_MAX_THREADS];
static OWN_LINE ck_spinlock_clh_t *clh_queue;
static struct clh_slot clh_unowned;
static struct clh_slot clh_nodes[BARE_MAX_THREADS];
static OWN_LINE ck_spinlock_clh_t *clh_mine[BARE_MAX_THREADS];
static OWN_LINE pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static bool bare_lock_setup(const char *name)
{
	static const char *const names[] = { "ck_fas", "ck_ticket", "ck_mcs", "ck_clh",
					     "pthread_mutex" };
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0) {
			which = (enum which)i;
			ck_spinlock_clh_init(&clh_queue, &clh_unowned.node);
			for (unsigned int t = 0; t < BARE_MAX_THREADS; t++)
				clh_mine[t] = &clh_nodes[t].node;
			return true;
		}
	return false;
}

/* One loop per lock: the lock is chosen once per batch, not per acquisition. */
#define BARE_LOOP(body)                                        \
	for (int i = 0; i < BARE_BATCH; i++) {                 \
		body;                                          \
	}

static void bare_batch(unsigned int thread)
{
	switch (which) {
	case FAS:
		BARE_LOOP(ck_spinlock_fas_lock(&fas); shared_line.counter = shared_line.counter + 1;
			  ck_spinlock_fas_unlock(&fas));
		break;
	case TICKET:
		BARE_LOOP(ck_spinlock_ticket_lock(&ticket);
			  shared_line.counter = shared_line.counter + 1;
			  ck_spinlock_ticket_unlock(&ticket));
		break;
	case MCS: {
		struct ck_spinlock_mcs *node = &mcs_nodes[thread].node;
		BARE_LOOP(ck_spinlock_mcs_lock(&mcs_queue, node);
			  shared_line.counter = shared_line.counter + 1;
			  ck_spinlock_mcs_unlock(&mcs_queue, node));
		break;
	}
	case CLH: {
		/* The node handed back by unlock is the one to use next. */
		ck_spinlock_clh_t *node = clh_mine[thread];
		BARE_LOOP(ck_spinlock_clh_lock(&clh_queue, node);
			  shared_line.counter = shared_line.counter + 1; ck_spinlock_clh_unlock(&node));
		clh_mine[thread] = node;
		break;
	}
	case PTHREAD:
		BARE_LOOP(pthread_mutex_lock(&mutex); shared_line.counter = shared_line.counter + 1;
			  pthread_mutex_unlock(&mutex));
		break;
	}
}
