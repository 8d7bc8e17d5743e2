/* SPDX-License-Identifier: MIT */
/*
 * lock.h - the interface between a lock and the locklab engine. Plugins compile against this.
 *
 * A lock family is one C file that defines one `struct lock_ops` per lock and registers each
 * with one line in native/locks/registry.def (built in) or exports it as
 * `locklab_plugin_lock` from a shared object (out of tree, see examples/plugin/).
 *
 * The engine allocates `lock_size` bytes aligned to LOCKLAB_CACHELINE, zeroed, calls init()
 * once, runs threads that call lock/unlock (and read_lock/read_unlock for reader-writer locks),
 * then calls destroy(). Each call receives the calling thread's `struct lock_thread`, which
 * holds the thread's identity and its queue nodes, so queue locks never allocate in the hot path.
 */
#ifndef LOCKLAB_LOCK_H
#define LOCKLAB_LOCK_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheline.h"

/* Bump when struct lock_ops or struct lock_thread changes; plugins are checked against it. */
#define LOCKLAB_ABI_VERSION 4

enum lock_flags {
	LOCK_SPINS = 1u << 0,        /* waiters busy-wait (at least for a while) */
	LOCK_SLEEPS = 1u << 1,       /* waiters may block in the kernel */
	LOCK_READER_WRITER = 1u << 2, /* read_lock/read_unlock are provided */
	LOCK_PRIO_INHERIT = 1u << 3, /* boosts the owner's priority */
	LOCK_EXTERNAL = 1u << 4,     /* a peer from another project (ck, glibc): not ours to patch */
	LOCK_TSAN_OPAQUE = 1u << 5,  /* synchronises where ThreadSanitizer cannot see (inline asm, kernel) */
};

/*
 * One tunable: `--param name=value`. Values are integers, or with `choices` the names of
 * integers; the meaning says the unit. A tunable counted in cpu_relax() pauses says "pauses"
 * in its meaning: the engine then reports its equivalent in ns on the machine that ran it (a
 * pause costs 10x more on some cores).
 */
struct lock_tunable {
	const char *name;
	long default_value;
	long min_value;
	long max_value;
	const char *meaning;
	/* NULL, or the names of the values min_value..max_value (NULL-terminated): `wait=yield` */
	const char *const *choices;
};

/* What init() is told about the run. */
struct lock_init_args {
	const long *params;    /* one value per tunable, in the order of ops->tunables */
	unsigned int nthreads; /* threads that will use the lock, readers and writers together */
};

#define LOCK_QNODE_BYTES 128
#define LOCK_QNODES_PER_THREAD 5

/*
 * Rare events a lock counts, per thread: each has a time constant as long as a short window or
 * longer, so how many a run drew says whether its window was long enough (the engine reports
 * them for the window alone, and the kernel's own lock event counters beside them).
 */
enum lock_event {
	LOCK_EVENT_SPIN_EXPIRED, /* a time-bounded spin ran out of its budget */
	LOCK_EVENT_QUEUE_FLUSH,  /* CNA: the secondary queue went back, its threshold reached */
	LOCK_EVENTS,
};

/*
 * A thread's context. `index` is dense (0..nthreads-1) so array locks and encoded queue tails
 * (index + 1, 0 meaning none, as the kernel's tail encoding) can use it directly.
 * `cpu` and `numa_node` are -1 when the thread is not pinned. Queue nodes are per thread and
 * live as long as the run, so a lock may leave a pointer to one in a queue (CLH recycles them).
 */
struct lock_thread {
	unsigned int index;
	int cpu;
	int numa_node;
	/* A lock's pseudo-random state, as the kernel's per-CPU `seed` of CNA's coin flips: here,
	 * in a line no other thread writes, not in a queue node other threads read. 0: unset. */
	unsigned int random_seed;
	/* For locks that hold per-thread state between lock() and unlock() (array slot, CLH node). */
	void *lock_private;
	/* Counted by the waiting policies (wait.h): futex sleeps, and wake-ups this thread sent. */
	unsigned long parks;
	unsigned long wakes;
	unsigned long events[LOCK_EVENTS]; /* lock_event() */
	/* 1 while the simulator's scheduler model has the thread switched out for another on its
	 * CPU (docs/scheduler.md), which a lock's owner spinning reads as the kernel reads
	 * owner->on_cpu (lock_task.h); always 0 on a real machine, which userspace cannot ask. */
	int off_cpu;
	alignas(LOCKLAB_CACHELINE) unsigned char qnode[LOCK_QNODES_PER_THREAD][LOCK_QNODE_BYTES];
};

/* One more of a thread's counts (parks, wakes, events): a relaxed store, as the engine reads
 * them while the threads run. */
static inline void lock_count(unsigned long *counter)
{
	__atomic_store_n(counter, *counter + 1, __ATOMIC_RELAXED);
}

/* One more of a rare event. */
static inline void lock_event(struct lock_thread *self, enum lock_event event)
{
	lock_count(&self->events[event]);
}

/*
 * What each of a thread's queue nodes holds, by the convention the built-in locks share, so
 * that locks built on each other (a mutex on OSQ, an rtmutex on lock_task.h) never reuse the
 * same bytes for two purposes. A lock uses only the slots it needs; plugins may use any.
 */
enum lock_qnode_slot {
	LOCK_QNODE_QUEUE = 0,   /* a queue lock's node: MCS, CLH, qspinlock/CNA, OSQ, Anderson */
	LOCK_QNODE_BACKOFF = 1, /* ticket backoff's delay table */
	LOCK_QNODE_TASK = 2,    /* the thread as a task (lock_task.h): priority, state, wake-up */
	/*
	 * No slot for a sleeping lock's waiter: it lives on its thread's stack, as the kernel's.
	 * 3 and 4: a sleeping lock's own raw spinlocks when they are queued spinlocks
	 * (raw_spinlock.h: the 6.1 ports' wait_lock, rtmutex's pi_lock nested inside it). Not
	 * slot 0: the mutex's and rwsem's OSQ node lives there and another spinner may still read
	 * it after we leave the OSQ (osq.h, step A); the kernel keeps osq_node and qnodes apart too.
	 */
	LOCK_QNODE_RAW_SPIN = 3,
	LOCK_QNODE_RAW_SPIN_NESTED = 4,
};

/* A queue node of the thread, as a typed pointer: lock_qnode(self, LOCK_QNODE_QUEUE, struct
 * mcs_node). */
#define lock_qnode(self, i, type) ((type *)(void *)(self)->qnode[(i)])

struct lock_ops {
	unsigned int abi_version; /* LOCKLAB_ABI_VERSION */
	const char *name;         /* --lock NAME; lower case, digits, '-' and '_' */
	const char *family;       /* e.g. "spin-queue", "sleeping", "peer-ck" */
	const char *summary;      /* one line */
	const char *source;       /* paper, commit or mail the algorithm comes from */
	unsigned int flags;       /* enum lock_flags */
	size_t lock_size;
	const struct lock_tunable *tunables; /* terminated by an entry with name == NULL */

	/* Return 0, or a negative errno (the engine reports it and exits 2). May be NULL. */
	int (*init)(void *lock, const struct lock_init_args *args);
	void (*destroy)(void *lock); /* may be NULL */

	void (*lock)(void *lock, struct lock_thread *self);
	void (*unlock)(void *lock, struct lock_thread *self);
	bool (*trylock)(void *lock, struct lock_thread *self); /* may be NULL */

	/* Reader-writer locks only (LOCK_READER_WRITER). */
	void (*read_lock)(void *lock, struct lock_thread *self);
	void (*read_unlock)(void *lock, struct lock_thread *self);
};

/* A plugin exports exactly this symbol. */
#define LOCKLAB_PLUGIN_SYMBOL "locklab_plugin_lock"

/* Terminator for tunable tables. */
#define LOCK_TUNABLES_END { NULL, 0, 0, 0, NULL, NULL }

#endif /* LOCKLAB_LOCK_H */
