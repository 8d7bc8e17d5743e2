/* SPDX-License-Identifier: MIT */
/*
 * pthread_cond_*, both symbol versions: condition variables that work with whatever lock the
 * mutex now is (a futex sequence word in the pthread_cond_t, see interpose.h).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "interpose.h"

/* ---- interposed: condition variables -------------------------------------------------------- */

/* Lives in the pthread_cond_t (48 bytes; PTHREAD_COND_INITIALIZER zeroes it: CLOCK_REALTIME). */
struct lab_cond {
	u32 seq;     /* bumped by every signal and broadcast: the futex word */
	u32 waiters; /* threads between their seq read and their wake-up */
	u32 clock;   /* pthread_condattr_setclock */
};
_Static_assert(sizeof(struct lab_cond) <= sizeof(pthread_cond_t), "fits a pthread_cond_t");

static int lab_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
			 const struct timespec *deadline)
{
	struct lab_cond *cv = (struct lab_cond *)(void *)c;
	if (deadline != NULL && !timespec_valid(deadline))
		return EINVAL;
	/*
	 * waiters++ then read seq; a signaller bumps seq then reads waiters. Both seq_cst, so a
	 * signaller that misses our count bumped seq after our read: the futex will not sleep.
	 */
	__atomic_fetch_add(&cv->waiters, 1, __ATOMIC_SEQ_CST);
	u32 seq = __atomic_load_n(&cv->seq, __ATOMIC_SEQ_CST);
	int err = do_unlock(m);
	if (err != 0) {
		__atomic_fetch_sub(&cv->waiters, 1, __ATOMIC_SEQ_CST);
		return err;
	}
	int saved_errno = errno, result = 0;
	long rc;
	if (deadline == NULL) {
		rc = syscall(SYS_futex, &cv->seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
	} else {
		int op = FUTEX_WAIT_BITSET_PRIVATE | (clock == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0);
		rc = syscall(SYS_futex, &cv->seq, op, seq, deadline, NULL, FUTEX_BITSET_MATCH_ANY);
	}
	if (rc == -1 && errno == ETIMEDOUT)
		result = ETIMEDOUT;
	errno = saved_errno;
	__atomic_fetch_sub(&cv->waiters, 1, __ATOMIC_SEQ_CST);
	do_lock(m, CLOCK_REALTIME, NULL);
	return result;
}

static void lab_cond_wake(pthread_cond_t *c, int how_many)
{
	struct lab_cond *cv = (struct lab_cond *)(void *)c;
	__atomic_fetch_add(&cv->seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&cv->waiters, __ATOMIC_SEQ_CST) != 0)
		syscall(SYS_futex, &cv->seq, FUTEX_WAKE_PRIVATE, how_many, NULL, NULL, 0);
}

/* Our condition variables unless every mutex is the C library's (pure passthrough). */
static inline bool lab_conds(void) { return mode == MODE_LAB || stats_wanted; }

static int ll_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	if (!ensure_ready() || !lab_conds())
		return real.cond_init ? real.cond_init(c, attr) : 0;
	clockid_t clock = CLOCK_REALTIME;
	if (attr != NULL)
		pthread_condattr_getclock(attr, &clock);
	memset(c, 0, sizeof(*c));
	((struct lab_cond *)(void *)c)->clock = (u32)clock;
	return 0;
}

static int ll_cond_destroy(pthread_cond_t *c)
{
	if (!ensure_ready() || !lab_conds())
		return real.cond_destroy ? real.cond_destroy(c) : 0;
	return 0;
}

static int ll_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (!ensure_ready())
		return 0;
	if (!lab_conds())
		return real.cond_wait(c, m);
	return lab_cond_wait(c, m, CLOCK_REALTIME, NULL);
}

static int ll_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	if (!ensure_ready())
		return 0;
	if (!lab_conds())
		return real.cond_timedwait(c, m, t);
	clockid_t clock = (clockid_t)((struct lab_cond *)(void *)c)->clock;
	return lab_cond_wait(c, m, clock, t);
}

static int ll_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
			     const struct timespec *t)
{
	if (!ensure_ready())
		return 0;
	if (!lab_conds())
		return real.cond_clockwait(c, m, clock, t);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return lab_cond_wait(c, m, clock, t);
}

static int ll_cond_signal(pthread_cond_t *c)
{
	if (!ensure_ready())
		return 0;
	if (!lab_conds())
		return real.cond_signal(c);
	lab_cond_wake(c, 1);
	return 0;
}

static int ll_cond_broadcast(pthread_cond_t *c)
{
	if (!ensure_ready())
		return 0;
	if (!lab_conds())
		return real.cond_broadcast(c);
	lab_cond_wake(c, INT_MAX);
	return 0;
}

/* glibc 2.2.5's condition variables: ours in lab mode, the C library's old ones otherwise. */

static int ll_old_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
	if (!ensure_ready())
		return 0;
	return lab_conds() || !real.old_cond_init ? ll_cond_init(c, a) : real.old_cond_init(c, a);
}
static int ll_old_cond_destroy(pthread_cond_t *c)
{
	if (!ensure_ready())
		return 0;
	return lab_conds() || !real.old_cond_destroy ? ll_cond_destroy(c) : real.old_cond_destroy(c);
}
static int ll_old_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (!ensure_ready())
		return 0;
	return lab_conds() || !real.old_cond_wait ? ll_cond_wait(c, m) : real.old_cond_wait(c, m);
}
static int ll_old_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	if (!ensure_ready())
		return 0;
	return lab_conds() || !real.old_cond_timedwait ? ll_cond_timedwait(c, m, t)
						       : real.old_cond_timedwait(c, m, t);
}
static int ll_old_cond_signal(pthread_cond_t *c)
{
	if (!ensure_ready())
		return 0;
	return lab_conds() || !real.old_cond_signal ? ll_cond_signal(c) : real.old_cond_signal(c);
}
static int ll_old_cond_broadcast(pthread_cond_t *c)
{
	if (!ensure_ready())
		return 0;
	return lab_conds() || !real.old_cond_broadcast ? ll_cond_broadcast(c)
						       : real.old_cond_broadcast(c);
}

/* ---- symbols, with glibc's versions (see interpose.map) ------------------------------------- */

ALIAS(ll_cond_init, ll_cond_init_v232)
VERSION(ll_cond_init_v232, "pthread_cond_init@@GLIBC_2.3.2")
ALIAS(ll_cond_destroy, ll_cond_destroy_v232)
VERSION(ll_cond_destroy_v232, "pthread_cond_destroy@@GLIBC_2.3.2")
ALIAS(ll_cond_wait, ll_cond_wait_v232)
VERSION(ll_cond_wait_v232, "pthread_cond_wait@@GLIBC_2.3.2")
ALIAS(ll_cond_timedwait, ll_cond_timedwait_v232)
VERSION(ll_cond_timedwait_v232, "pthread_cond_timedwait@@GLIBC_2.3.2")
ALIAS(ll_cond_signal, ll_cond_signal_v232)
VERSION(ll_cond_signal_v232, "pthread_cond_signal@@GLIBC_2.3.2")
ALIAS(ll_cond_broadcast, ll_cond_broadcast_v232)
VERSION(ll_cond_broadcast_v232, "pthread_cond_broadcast@@GLIBC_2.3.2")
ALIAS(ll_cond_clockwait, ll_cond_clockwait_v230)
VERSION(ll_cond_clockwait_v230, "pthread_cond_clockwait@GLIBC_2.30")
ALIAS(ll_cond_clockwait, ll_cond_clockwait_v234)
VERSION(ll_cond_clockwait_v234, "pthread_cond_clockwait@@GLIBC_2.34")
ALIAS(ll_old_cond_init, ll_cond_init_v225)
VERSION(ll_cond_init_v225, "pthread_cond_init@GLIBC_2.2.5")
ALIAS(ll_old_cond_destroy, ll_cond_destroy_v225)
VERSION(ll_cond_destroy_v225, "pthread_cond_destroy@GLIBC_2.2.5")
ALIAS(ll_old_cond_wait, ll_cond_wait_v225)
VERSION(ll_cond_wait_v225, "pthread_cond_wait@GLIBC_2.2.5")
ALIAS(ll_old_cond_timedwait, ll_cond_timedwait_v225)
VERSION(ll_cond_timedwait_v225, "pthread_cond_timedwait@GLIBC_2.2.5")
ALIAS(ll_old_cond_signal, ll_cond_signal_v225)
VERSION(ll_cond_signal_v225, "pthread_cond_signal@GLIBC_2.2.5")
ALIAS(ll_old_cond_broadcast, ll_cond_broadcast_v225)
VERSION(ll_cond_broadcast_v225, "pthread_cond_broadcast@GLIBC_2.2.5")
