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
static enum which which;

static ck_spinlock_fas_t fas = CK_SPINLOCK_FAS_INITIALIZER;
static ck_spinlock_ticket_t ticket = CK_SPINLOCK_TICKET_INITIALIZER;
static ck_spinlock_mcs_t mcs_queue = CK_SPINLOCK_MCS_INITIALIZER;
static _Alignas(64) struct ck_spinlock_mcs mcs_nodes[BARE_MAX_THREADS][2];
static ck_spinlock_clh_t *clh_queue;
static _Alignas(64) struct ck_spinlock_clh clh_unowned;
static _Alignas(64) struct ck_spinlock_clh clh_nodes[BARE_MAX_THREADS][2];
static ck_spinlock_clh_t *clh_mine[BARE_MAX_THREADS];
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static bool bare_lock_setup(const char *name)
{
	static const char *const names[] = { "ck_fas", "ck_ticket", "ck_mcs", "ck_clh",
					     "pthread_mutex" };
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0) {
			which = (enum which)i;
			ck_spinlock_clh_init(&clh_queue, &clh_unowned);
			for (unsigned int t = 0; t < BARE_MAX_THREADS; t++)
				clh_mine[t] = &clh_nodes[t][0];
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
		struct ck_spinlock_mcs *node = &mcs_nodes[thread][0];
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
