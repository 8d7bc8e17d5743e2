/* SPDX-License-Identifier: MIT */
/*
 * access_hooks.h - READ_ONCE and WRITE_ONCE that call the test's after_read()/after_write()
 * once the access is done, so a unit test can act between two steps of a lock (an owner that
 * releases between a waiter's read and its update). Include before the lock's source.
 */
#ifndef LOCKLAB_UNIT_ACCESS_HOOKS_H
#define LOCKLAB_UNIT_ACCESS_HOOKS_H

#include <locklab/kernel.h>

static void after_read(const void *addr);
static void after_write(const void *addr);

#undef READ_ONCE
#undef WRITE_ONCE
#define READ_ONCE(x)                                                                           \
	({                                                                                     \
		__typeof__(x) read_value_ = __atomic_load_n(&(x), __ATOMIC_RELAXED);           \
		after_read((const void *)&(x));                                                \
		read_value_;                                                                   \
	})
#define WRITE_ONCE(x, val)                                                                     \
	({                                                                                     \
		__atomic_store_n(&(x), (val), __ATOMIC_RELAXED);                               \
		after_write((const void *)&(x));                                               \
	})

#endif /* LOCKLAB_UNIT_ACCESS_HOOKS_H */
