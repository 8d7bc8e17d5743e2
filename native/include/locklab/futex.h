/* SPDX-License-Identifier: MIT */
/*
 * futex.h - sleeping and waking on a 32-bit word, for the sleeping locks and parked
 * spinners (private futexes:
 * every lock lives in one process).
 */
#ifndef LOCKLAB_FUTEX_H
#define LOCKLAB_FUTEX_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Returns at once if *word != expected (EAGAIN); spurious wakeups are fine: callers loop.
 * 0 when a FUTEX_WAKE woke us, -1 otherwise (EAGAIN, EINTR).
 */
static inline long futex_wait(uint32_t *word, uint32_t expected)
{
	return syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static inline void futex_wake_one(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Returns how many waiters it woke. */
static inline long futex_wake(uint32_t *word, int count)
{
	return syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

#endif /* LOCKLAB_FUTEX_H */
