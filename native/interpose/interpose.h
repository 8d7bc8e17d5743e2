/* SPDX-License-Identifier: MIT */
/*
 * liblocklab-interpose.so - run an unmodified program with any lock of the catalogue (or a
 * plugin) in place of its pthread mutexes (and reader-writer locks), loaded with LD_PRELOAD.
 *
 * The idea is LiTL's (Guiroux, Lachaize, Quema, "Multicore Locks: The Case Is Not Closed Yet",
 * USENIX ATC 2016): interpose pthread_mutex_* and pthread_cond_*, keep the program's
 * pthread_mutex_t untouched and put the lab's lock beside it, and give condition variables an
 * implementation that works with whatever lock the mutex now is.
 *
 * Environment (read once, before main):
 *   LOCKLAB_LOCK=name       a lock of the catalogue (locklab-bench --list) or of the plugin;
 *                           pthread_mutex (or unset) forwards every call to the C library
 *   LOCKLAB_PARAMS=n=v,...  the lock's tunables, as --param
 *   LOCKLAB_WAIT=policy     spin, yield or spin-then-park: the waiting policy (wait.h) of a lock
 *                           that has one. Default here spin-then-park, not the engine's spin:
 *                           programs run more threads than CPUs. LOCKLAB_PARAMS may set `wait`
 *                           too, and is read after.
 *   LOCKLAB_PLUGIN=path.so  an out-of-tree lock (exports locklab_plugin_lock, see lock.h)
 *   LOCKLAB_STATS=file.json per-mutex statistics written at exit ("%p": the pid), by a
 *                           process that used at least one mutex
 *   LOCKLAB_MAX_THREADS=N   lock contexts at once (default 512): the `nthreads` locks are
 *                           initialised for (array and queue locks size their state by it)
 *   LOCKLAB_RWLOCK=name     the lock behind pthread_rwlock_t. A reader-writer lock of the
 *                           catalogue or plugin (rwsem, ...) serves readers shared; any other
 *                           lock serves readers exclusively (one holder at a time); the name
 *                           pthread_rwlock forwards to the C library. Unset: LOCKLAB_LOCK's lock
 *                           (and LOCKLAB_PARAMS) when that is a reader-writer lock, otherwise
 *                           the C library's rwlocks (counted in the statistics).
 *   LOCKLAB_RWLOCK_PARAMS=n=v,...  its tunables (needs LOCKLAB_RWLOCK)
 * A bad value prints one line on stderr and the program exits with status 2.
 *
 * State:
 *   - A side table (open hash on the mutex's address, chains never unlinked) maps each
 *     pthread_mutex_t to an entry holding the lab's lock. Mutexes initialised statically
 *     (PTHREAD_MUTEX_INITIALIZER) get their entry on first use; the pthread_mutex_t is only
 *     read (its kind), never written. Readers walk chains without locks: an entry is published
 *     with a release store of the bucket head, which pairs with the acquire load in lookup.
 *   - Recursive, error-checking, robust, priority-inheritance/protect and process-shared
 *     mutexes are passed through to the C library (their semantics are not a lock's) and
 *     counted.
 *   - A thread's lock context (struct lock_thread: index, queue nodes) is a "slot". A thread
 *     takes one slot per lock it holds at once (a queue lock's node must stay put from lock to
 *     unlock, and one thread may hold several locks), so nesting works for every lock. The
 *     holder's slot is recorded in the entry, so unlock finds the node lock() used. Slots come
 *     from a pool on a thread's first lock (with glibc >= 2.34 pthread_create cannot be relied
 *     on to be interposed) and go back to it at thread exit (pthread key destructor). Slots are
 *     recycled, never freed: a CLH node migrates to the successor's slot, so a slot's memory
 *     may still be in a queue after its thread is gone.
 *   - Locks without trylock get one through an occupancy gate (a count of threads in lock(),
 *     holding or in unlock()): trylock takes the lock only when the count goes 0 -> 1, when
 *     the lock is sure to be free. Timed locks poll trylock with a bounded sleeping backoff and
 *     return ETIMEDOUT only once the deadline has passed on the caller's clock.
 *   - Reader-writer locks: a second side table, the same way (PTHREAD_RWLOCK_INITIALIZER found
 *     on first use, the pthread_rwlock_t only read). The lab lock's policy replaces the
 *     rwlock's kind (PTHREAD_RWLOCK_PREFER_*_NP); process-shared rwlocks stay the C library's.
 *     Each thread keeps a list of the rwlocks it holds (mode and slot), so unlock knows a
 *     writer from a reader and a reader's unlock gets the slot its read_lock used; a read lock
 *     taken again by a thread that already reads is only counted (recursive readers, which
 *     POSIX allows, never queue behind a waiting writer). struct lock_ops has no read trylock,
 *     so every acquisition goes through a gate word (readers, writers, pending tries): a try
 *     succeeds only when no conflicting holder is in the gate, and entrants that come after a
 *     successful try wait for it to finish its lock call, so a try never waits in the lock.
 *   - Condition variables: a futex sequence word in the pthread_cond_t (not the mutex): a
 *     waiter reads the sequence before it unlocks, a signal bumps it, so a wake-up between
 *     unlock and sleep is never lost (the futex returns at once when the word moved).
 *   - fork(): pthread_atfork handlers hold the table and pool locks across fork; in the child,
 *     a lab lock the forking thread holds is rebuilt held (its queued waiters are threads that
 *     no longer exist), so the program's own atfork child handler can unlock it.
 *   - Symbols carry glibc's versions (pthread_mutex_trylock@GLIBC_2.2.5 and @@GLIBC_2.34,
 *     pthread_cond_wait@GLIBC_2.2.5 and @@GLIBC_2.3.2, ...), so programs linked against any of
 *     them bind here, and pass-through calls reach the same version in the C library.
 *
 * Files (one library: each .c is its own translation unit, linked together):
 *   interpose.h   what the files share: types, state, the hot-path helpers (static inline, so
 *                 the lock and unlock paths stay inlined in each file) and this overview
 *   config.c      the environment above, the catalogue and plugin, the C library's functions
 *                 (dlsym/dlvsym), initialise() and fatal()
 *   side_table.c  the address-keyed side tables, and the slots and thread contexts
 *   mutex.c       pthread_mutex_*: the lab lock as a mutex, the trylock gate, timed locks
 *   cond.c        pthread_cond_*, both symbol versions
 *   rwlock.c      pthread_rwlock_*
 *   fork.c        the pthread_atfork handlers
 *   stats.c       the statistics written at exit (LOCKLAB_STATS)
 * What the files share is hidden (visibility below), and interpose.map exports only the
 * pthread symbols, so nothing here can bind a program's or another library's symbol.
 */
#ifndef LOCKLAB_INTERPOSE_H
#define LOCKLAB_INTERPOSE_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

/* Hidden: reached directly (no GOT), as file statics are, and never exported. */
#pragma GCC visibility push(hidden)

#define MAX_DEPTH 32 /* locks one thread holds at once */
#define TABLE_BITS 16

/* glibc's mutex kind bits (nptl/pthreadP.h): what we pass through. */
#define KIND_TYPE_MASK 3
#define KIND_ROBUST 16
#define KIND_PRIO_INHERIT 32
#define KIND_PRIO_PROTECT 64
#define KIND_PSHARED 128

enum mode { MODE_UNINIT = 0, MODE_PASS = 1, MODE_LAB = 2 };
enum entry_kind { ENTRY_LAB, ENTRY_PASS };
/* What serves pthread_rwlock_t: the C library, a reader-writer lock, or any lock exclusively. */
enum rw_mode { RW_PASS = 1, RW_SHARED = 2, RW_EXCLUSIVE = 3 };

/* ---- the C library's functions (config.c finds them) ---------------------------------------- */

struct real_functions {
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
	int (*mutex_destroy)(pthread_mutex_t *);
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);
	int (*cond_destroy)(pthread_cond_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			      const struct timespec *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
	/* glibc 2.2.5's condition variables (binaries older than 2.3.2) */
	int (*old_cond_init)(pthread_cond_t *, const pthread_condattr_t *);
	int (*old_cond_destroy)(pthread_cond_t *);
	int (*old_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*old_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*old_cond_signal)(pthread_cond_t *);
	int (*old_cond_broadcast)(pthread_cond_t *);
	int (*rwlock_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
	int (*rwlock_destroy)(pthread_rwlock_t *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
	int (*rwlock_unlock)(pthread_rwlock_t *);
};
extern struct real_functions real;

/* ---- state ---------------------------------------------------------------------------------- */

struct slot {
	struct lock_thread lt; /* first: a struct lock_thread * is a struct slot * */
	u32 busy;              /* held by a lock (cleared by the unlocker, maybe another thread) */
};

struct rwlock_entry;

/* A reader-writer lock the thread holds: slot NULL for a read lock taken again (nested). */
struct rw_hold {
	struct rwlock_entry *e;
	struct slot *slot;
	bool write;
};

struct thread_ctx {
	struct slot *slots[MAX_DEPTH];
	unsigned int nslots;
	struct rw_hold rw_holds[MAX_DEPTH]; /* in acquisition order */
	unsigned int n_rw_holds;
	struct thread_ctx *next, *prev; /* all live contexts, for fork */
};

/* What a mutex's and a rwlock's entries in their side tables share: the table's part. */
struct side_entry {
	struct side_entry *next; /* bucket chain; immutable once published */
	const void *addr;
	u32 live;                /* 0 after the object's destroy, until it is initialised again */
	u32 kind;                /* enum entry_kind */
	void *lab;               /* the lab lock's bytes, cache-line aligned */
};

/*
 * A side table: the mutexes', or the rwlocks'. Entries are found without a lock and built,
 * rebuilt and retired under table_mutex; the two callbacks are the kind's own part of that.
 */
struct side_table {
	struct side_entry *buckets[1u << TABLE_BITS];
	const char *what;                 /* "a mutex": for the out-of-memory line */
	size_t entry_size;                /* the whole entry, side_entry first */
	const struct lock_ops *const *ops; /* the lab lock, sizing its bytes (*ops NULL: none) */
	/* Classify the object anew (sets kind) and, for ENTRY_LAB, initialise the lab lock. */
	void (*start)(struct side_entry *, const void *addr);
	/*
	 * Set once the lab lock leaves a node in a thread's lock_private after unlock (CLH,
	 * ck_clh: the predecessor's node, which may be the one the lock allocated at init). Its
	 * destroy would then free a node a thread now owns, so it is skipped: one node leaks per
	 * destroyed mutex or rwlock.
	 */
	bool nodes_migrate;
};

struct mutex_entry {
	struct side_entry side;   /* first: a side_entry * of the mutexes' table is one of these */
	int glibc_kind;           /* __data.__kind when first seen */
	u32 occupancy;            /* the trylock gate, for locks without trylock */
	struct lock_thread *owner; /* the slot holding the lab lock (written under it) */
	u64 acquisitions;         /* written under the lock (relaxed stores: read at exit) */
	u64 contended;
};

struct rwlock_entry {
	struct side_entry side; /* first, as in mutex_entry; kind is ENTRY_PASS for pshared ones */
	int pshared;
	/*
	 * The gate: readers, writers and pending tries in (or waiting for) the lab lock. Readers
	 * and writers count from entry to the end of their unlock; a try is pending from its
	 * successful check until its lock call has returned.
	 */
	u64 gate;
	u64 reads, writes, contended_reads, contended_writes; /* relaxed atomic adds */
};

/* config.c: what LOCKLAB_* chose, set before `mode` is published. */
extern int mode;
extern bool stats_wanted;
extern const char *stats_path;
extern const struct lock_ops *ops;
extern struct lock_init_args init_args;
extern int rw_mode;
extern const struct lock_ops *rw_ops;
extern struct lock_init_args rw_init_args;
/* The mutex lock is the C library's rwlock (pthread_rwlock): its calls must reach glibc. */
extern bool mutex_lock_is_libc_rwlock;
extern u32 init_state; /* 0 not started, 1 in progress, 2 done */
/* This thread runs initialise(). local-dynamic: the cheaper model a file static would get. */
extern __thread bool initialising __attribute__((tls_model("local-dynamic")));

/* side_table.c: the tables' and the pool's locks, and the pool fork.c and stats.c read. */
extern pthread_mutex_t table_mutex; /* insertion and revival */
extern pthread_mutex_t pool_mutex;  /* slots and contexts */
extern struct slot **free_slots;
extern unsigned int nfree_slots, nslots_made;
extern struct thread_ctx *all_ctx;
extern __thread struct thread_ctx *my_ctx __attribute__((tls_model("initial-exec")));
/*
 * Set while a lock's init or destroy runs (under table_mutex): a lock built on the C library's
 * (pthread_mutex_pi) calls pthread_mutex_init/destroy, which must then go straight to glibc.
 */
extern __thread bool in_lab_setup __attribute__((tls_model("initial-exec")));

/* The two side tables (mutex.c, rwlock.c). */
extern struct side_table mutexes;
extern struct side_table rwlocks;

/* ---- functions shared between the files ----------------------------------------------------- */

/* config.c */
void fatal(const char *fmt, const char *arg) __attribute__((noreturn));
void initialise(void);

/* side_table.c */
void slot_pool_create(unsigned int n);
void slot_wait_counts(unsigned long *parks, unsigned long *wakes);
long configured_wait_policy(void);
void ctx_key_create(void);
struct thread_ctx *thread_ctx_create(void);
struct slot *slot_take(void);
void side_lab_destroy(struct side_table *t, struct side_entry *e);
struct side_entry *side_build(struct side_table *t, const void *addr, bool fresh);
void side_retire(struct side_table *t, struct side_entry *e);
void lab_lock_init(const struct lock_ops *o, const struct lock_init_args *args, void *lab,
		   const char *failure_format);

/* mutex.c */
bool poll_until(clockid_t clock, const struct timespec *deadline, bool (*attempt)(void *),
		void *arg);
int do_lock(pthread_mutex_t *m, clockid_t clock, const struct timespec *deadline);
int do_unlock(pthread_mutex_t *m);
void mutex_rebuild_for_child(struct mutex_entry *e);

/* rwlock.c */
struct rw_hold *rw_held(struct thread_ctx *ctx, const struct rwlock_entry *e);
void rw_rebuild_for_child(struct rwlock_entry *e);

/* fork.c */
void atfork_prepare(void);
void atfork_parent(void);
void atfork_child(void);

/* ---- hot-path helpers, inline in every file that calls them --------------------------------- */

/* True when the call must be forwarded untouched (or, during our own start, ignored). */
static inline bool ensure_ready(void)
{
	if (unlikely(__atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_UNINIT)) {
		if (initialising)
			return false;
		initialise();
	}
	return true;
}

/* The calling thread's context, made on its first lock (thread_ctx_create). */
static inline struct thread_ctx *thread_ctx(void)
{
	struct thread_ctx *ctx = my_ctx;
	if (likely(ctx != NULL))
		return ctx;
	return thread_ctx_create();
}

static inline void slot_put(struct lock_thread *lt)
{
	__atomic_store_n(&((struct slot *)lt)->busy, 0, __ATOMIC_RELEASE);
}

static inline size_t table_hash(const void *addr)
{
	u64 x = (u64)(uintptr_t)addr;
	return (size_t)((x * 0x9e3779b97f4a7c15ull) >> (64 - TABLE_BITS));
}

/* The first entry of a bucket. Acquire: pairs with the release that published it. */
static inline struct side_entry *side_bucket(struct side_table *t, size_t b)
{
	return __atomic_load_n(&t->buckets[b], __ATOMIC_ACQUIRE);
}

static inline struct side_entry *side_lookup(struct side_table *t, const void *addr)
{
	for (struct side_entry *e = side_bucket(t, table_hash(addr)); e != NULL; e = e->next)
		if (e->addr == addr)
			return e;
	return NULL;
}

/* The entry of `addr`; (re)built when `fresh` (the object's init) or after its destroy. */
static inline struct side_entry *side_get(struct side_table *t, const void *addr, bool fresh)
{
	struct side_entry *e = side_lookup(t, addr);
	if (likely(e != NULL && !fresh && __atomic_load_n(&e->live, __ATOMIC_ACQUIRE)))
		return e;
	return side_build(t, addr, fresh);
}

/* After an unlock: does the lock leave nodes with the threads (side_table.nodes_migrate)? */
static inline void note_nodes_migrate(const struct lock_thread *unlocker, bool *migrated)
{
	if (unlikely(unlocker->lock_private != NULL) && !__atomic_load_n(migrated, __ATOMIC_RELAXED))
		__atomic_store_n(migrated, true, __ATOMIC_RELAXED);
}

static inline int timespec_valid(const struct timespec *t)
{
	return t != NULL && t->tv_nsec >= 0 && t->tv_nsec < 1000000000L;
}

#pragma GCC visibility pop

/* ---- symbols, with glibc's versions (see interpose.map) ------------------------------------- */

/*
 * In the file that defines `impl` (an alias must be): `name` is exported, and the .symver line
 * gives it its glibc name and version.
 */
#define ALIAS(impl, name) \
	extern __typeof__(impl) name __attribute__((alias(#impl), visibility("default")));
#define VERSION(name, symbol_at_version) __asm__(".symver " #name "," symbol_at_version);

#endif
