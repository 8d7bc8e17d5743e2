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
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <locklab/kernel.h>
#include <locklab/lock.h>

#define LOCK(ops) extern const struct lock_ops ops;
#include "../locks/registry.def"
#undef LOCK

static const struct lock_ops *const catalogue[] = {
#define LOCK(ops) &ops,
#include "../locks/registry.def"
#undef LOCK
};

#define MAX_TUNABLES_HERE 16
#define MAX_DEPTH 32 /* locks one thread holds at once */
#define DEFAULT_MAX_THREADS 512
#define TABLE_BITS 16
#define HOTTEST 10

/* glibc's mutex kind bits (nptl/pthreadP.h): what we pass through. */
#define KIND_TYPE_MASK 3
#define KIND_ROBUST 16
#define KIND_PRIO_INHERIT 32
#define KIND_PRIO_PROTECT 64
#define KIND_PSHARED 128

enum mode { MODE_UNINIT = 0, MODE_PASS = 1, MODE_LAB = 2 };
enum entry_kind { ENTRY_LAB, ENTRY_PASS };

/* ---- the C library's functions ---------------------------------------------------------- */

static struct {
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
} real;

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

static int mode;
static bool stats_wanted;
static const char *stats_path;
static const struct lock_ops *ops;
static long params[MAX_TUNABLES_HERE];
static struct lock_init_args init_args;
static pthread_key_t ctx_key;

/* What serves pthread_rwlock_t: the C library, a reader-writer lock, or any lock exclusively. */
enum rw_mode { RW_PASS = 1, RW_SHARED = 2, RW_EXCLUSIVE = 3 };
static int rw_mode;
static const struct lock_ops *rw_ops;
static long rw_params[MAX_TUNABLES_HERE];
static struct lock_init_args rw_init_args;
/* The mutex lock is the C library's rwlock (pthread_rwlock): its calls must reach glibc. */
static bool mutex_lock_is_libc_rwlock;

static pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER; /* insertion and revival */
static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;  /* slots and contexts */
/*
 * All slots, made before main: a sleeping lock's spinner reads its owner's task through the
 * owner word, which is stored without release (as the kernel's), so a slot's memory must
 * be initialised before any thread that could read it starts (pthread_create orders that).
 */
static struct slot *all_slots;
static struct slot **free_slots;
static unsigned int nfree_slots, nslots_made, max_slots;
static struct thread_ctx *all_ctx;
static __thread struct thread_ctx *my_ctx __attribute__((tls_model("initial-exec")));

static void fatal(const char *fmt, const char *arg) __attribute__((noreturn));
static void fatal(const char *fmt, const char *arg)
{
	fputs("locklab-interpose: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	_exit(2);
}

/* ---- finding the C library's functions -------------------------------------------------- */

/*
 * The next definition's default version: glibc's current one (pthread_mutex_trylock@@GLIBC_2.34,
 * pthread_cond_wait@@GLIBC_2.3.2), or a sanitizer's interceptor loaded after us. Only the
 * old 2.2.5 condition variables are asked for by version.
 */
static void *next_symbol(const char *name, const char *version)
{
	void *fn = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
	return fn;
}

static void find_real_functions(void)
{
	real.mutex_init = next_symbol("pthread_mutex_init", NULL);
	real.mutex_destroy = next_symbol("pthread_mutex_destroy", NULL);
	real.mutex_lock = next_symbol("pthread_mutex_lock", NULL);
	real.mutex_trylock = next_symbol("pthread_mutex_trylock", NULL);
	real.mutex_timedlock = next_symbol("pthread_mutex_timedlock", NULL);
	real.mutex_clocklock = next_symbol("pthread_mutex_clocklock", NULL);
	real.mutex_unlock = next_symbol("pthread_mutex_unlock", NULL);
	real.cond_init = next_symbol("pthread_cond_init", NULL);
	real.cond_destroy = next_symbol("pthread_cond_destroy", NULL);
	real.cond_wait = next_symbol("pthread_cond_wait", NULL);
	real.cond_timedwait = next_symbol("pthread_cond_timedwait", NULL);
	real.cond_clockwait = next_symbol("pthread_cond_clockwait", NULL);
	real.cond_signal = next_symbol("pthread_cond_signal", NULL);
	real.cond_broadcast = next_symbol("pthread_cond_broadcast", NULL);
	real.old_cond_init = next_symbol("pthread_cond_init", "GLIBC_2.2.5");
	real.old_cond_destroy = next_symbol("pthread_cond_destroy", "GLIBC_2.2.5");
	real.old_cond_wait = next_symbol("pthread_cond_wait", "GLIBC_2.2.5");
	real.old_cond_timedwait = next_symbol("pthread_cond_timedwait", "GLIBC_2.2.5");
	real.old_cond_signal = next_symbol("pthread_cond_signal", "GLIBC_2.2.5");
	real.old_cond_broadcast = next_symbol("pthread_cond_broadcast", "GLIBC_2.2.5");
	real.rwlock_init = next_symbol("pthread_rwlock_init", NULL);
	real.rwlock_destroy = next_symbol("pthread_rwlock_destroy", NULL);
	real.rwlock_rdlock = next_symbol("pthread_rwlock_rdlock", NULL);
	real.rwlock_tryrdlock = next_symbol("pthread_rwlock_tryrdlock", NULL);
	real.rwlock_timedrdlock = next_symbol("pthread_rwlock_timedrdlock", NULL);
	real.rwlock_clockrdlock = next_symbol("pthread_rwlock_clockrdlock", NULL);
	real.rwlock_wrlock = next_symbol("pthread_rwlock_wrlock", NULL);
	real.rwlock_trywrlock = next_symbol("pthread_rwlock_trywrlock", NULL);
	real.rwlock_timedwrlock = next_symbol("pthread_rwlock_timedwrlock", NULL);
	real.rwlock_clockwrlock = next_symbol("pthread_rwlock_clockwrlock", NULL);
	real.rwlock_unlock = next_symbol("pthread_rwlock_unlock", NULL);
	if (!real.mutex_init || !real.mutex_destroy || !real.mutex_lock || !real.mutex_trylock ||
	    !real.mutex_timedlock || !real.mutex_unlock || !real.cond_init || !real.cond_destroy ||
	    !real.cond_wait || !real.cond_timedwait || !real.cond_signal || !real.cond_broadcast ||
	    !real.rwlock_init || !real.rwlock_destroy || !real.rwlock_rdlock ||
	    !real.rwlock_tryrdlock || !real.rwlock_timedrdlock || !real.rwlock_wrlock ||
	    !real.rwlock_trywrlock || !real.rwlock_timedwrlock || !real.rwlock_unlock)
		fatal("cannot find the C library's pthread functions: %s", dlerror());
}

/* ---- configuration ------------------------------------------------------------------------- */

static size_t tunable_count(const struct lock_ops *o)
{
	size_t n = 0;
	while (o->tunables != NULL && o->tunables[n].name != NULL)
		n++;
	return n;
}

static const struct lock_ops *load_plugin(const char *path)
{
	void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL)
		fatal("cannot load LOCKLAB_PLUGIN: %s", dlerror());
	const struct lock_ops *p = dlsym(handle, LOCKLAB_PLUGIN_SYMBOL);
	if (p == NULL)
		fatal("LOCKLAB_PLUGIN %s does not export locklab_plugin_lock", path);
	if (p->abi_version != LOCKLAB_ABI_VERSION)
		fatal("LOCKLAB_PLUGIN %s was built for another lock ABI: rebuild it", path);
	return p;
}

/* `text` (from the variable `var`) as o's tunables into `out`, defaults for the rest. */
static void parse_params(const struct lock_ops *o, long *out, const char *text, const char *var)
{
	char line[512];
	size_t n = tunable_count(o);
	if (n > MAX_TUNABLES_HERE)
		fatal("lock '%s' has too many tunables", o->name);
	for (size_t i = 0; i < n; i++)
		out[i] = o->tunables[i].default_value;
	if (text == NULL || *text == '\0')
		return;
	char *copy = strdup(text), *save = NULL;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (eq == NULL) {
			snprintf(line, sizeof(line), "%s: '%s' is not name=value", var, item);
			fatal("%s", line);
		}
		*eq = '\0';
		size_t i = 0;
		while (i < n && strcmp(o->tunables[i].name, item) != 0)
			i++;
		if (i == n) {
			snprintf(line, sizeof(line), "%s: the lock has no tunable '%s'", var, item);
			fatal("%s", line);
		}
		char *end;
		errno = 0;
		long value = strtol(eq + 1, &end, 0);
		if (errno || end == eq + 1 || *end != '\0' || value < o->tunables[i].min_value ||
		    value > o->tunables[i].max_value) {
			snprintf(line, sizeof(line), "%s: bad or out-of-range value for '%s'", var, item);
			fatal("%s", line);
		}
		out[i] = value;
	}
	free(copy);
}

static const struct lock_ops *find_lock(const char *name, const struct lock_ops *from_plugin)
{
	if (from_plugin && strcmp(from_plugin->name, name) == 0)
		return from_plugin;
	for (size_t i = 0; i < sizeof(catalogue) / sizeof(catalogue[0]); i++)
		if (strcmp(catalogue[i]->name, name) == 0)
			return catalogue[i];
	return NULL;
}

/* Initialise a lock once now, so a bad parameter fails before main, not in the middle. */
static void probe_lock(const struct lock_ops *o, const struct lock_init_args *args)
{
	void *probe = aligned_alloc(LOCKLAB_CACHELINE,
				    (o->lock_size + LOCKLAB_CACHELINE - 1) & ~(size_t)(LOCKLAB_CACHELINE - 1));
	memset(probe, 0, o->lock_size);
	int err = o->init ? o->init(probe, args) : 0;
	if (err != 0)
		fatal("lock '%s' refused its parameters or LOCKLAB_MAX_THREADS", o->name);
	if (o->destroy)
		o->destroy(probe);
	free(probe);
}

static bool is_reader_writer(const struct lock_ops *o)
{
	return (o->flags & LOCK_READER_WRITER) && o->read_lock != NULL && o->read_unlock != NULL;
}

/* LOCKLAB_RWLOCK and its default (see the top of this file). */
static void configure_rwlock(const struct lock_ops *from_plugin)
{
	const char *name = getenv("LOCKLAB_RWLOCK");
	const char *text = getenv("LOCKLAB_RWLOCK_PARAMS");
	rw_init_args.params = rw_params;
	rw_init_args.nthreads = max_slots;
	if (name == NULL || *name == '\0') {
		if (text != NULL && *text != '\0')
			fatal("%s", "LOCKLAB_RWLOCK_PARAMS needs LOCKLAB_RWLOCK");
		if (!is_reader_writer(ops)) {
			rw_mode = RW_PASS;
			return;
		}
		rw_ops = ops;
		memcpy(rw_params, params, sizeof(rw_params));
	} else {
		rw_ops = find_lock(name, from_plugin);
		if (rw_ops == NULL)
			fatal("unknown lock '%s' in LOCKLAB_RWLOCK (locklab-bench --list shows them)", name);
		if (rw_ops->lock == NULL || rw_ops->unlock == NULL || rw_ops->lock_size == 0)
			fatal("lock '%s' cannot stand in for a rwlock (needs lock, unlock, a size)", name);
		parse_params(rw_ops, rw_params, text, "LOCKLAB_RWLOCK_PARAMS");
	}
	if (strcmp(rw_ops->name, "pthread_rwlock") == 0 && rw_ops != from_plugin) {
		rw_mode = RW_PASS; /* the C library's own: forward (its ops would call us back) */
		return;
	}
	probe_lock(rw_ops, &rw_init_args);
	rw_mode = is_reader_writer(rw_ops) ? RW_SHARED : RW_EXCLUSIVE;
}

static void configure(void)
{
	const char *name = getenv("LOCKLAB_LOCK");
	const char *plugin = getenv("LOCKLAB_PLUGIN");
	const struct lock_ops *from_plugin = plugin && *plugin ? load_plugin(plugin) : NULL;

	stats_path = getenv("LOCKLAB_STATS");
	stats_wanted = stats_path != NULL && *stats_path != '\0';
	if (name == NULL || *name == '\0')
		name = from_plugin ? from_plugin->name : "pthread_mutex";
	ops = find_lock(name, from_plugin);
	if (ops == NULL)
		fatal("unknown lock '%s' in LOCKLAB_LOCK (locklab-bench --list shows them)", name);
	if (ops->lock == NULL || ops->unlock == NULL || ops->lock_size == 0)
		fatal("lock '%s' cannot stand in for a mutex (needs lock, unlock, a size)", name);
	parse_params(ops, params, getenv("LOCKLAB_PARAMS"), "LOCKLAB_PARAMS");

	const char *max_text = getenv("LOCKLAB_MAX_THREADS");
	max_slots = DEFAULT_MAX_THREADS;
	if (max_text && *max_text) {
		char *end;
		long v = strtol(max_text, &end, 10);
		if (*end != '\0' || v < 1 || v > 4096)
			fatal("LOCKLAB_MAX_THREADS must be 1..4096, not '%s'", max_text);
		max_slots = (unsigned int)v;
	}
	init_args.params = params;
	init_args.nthreads = max_slots;
	free_slots = calloc(max_slots, sizeof(*free_slots));
	all_slots = aligned_alloc(LOCKLAB_CACHELINE, max_slots * sizeof(*all_slots));
	if (free_slots == NULL || all_slots == NULL)
		fatal("%s", "out of memory for the lock contexts");
	memset(all_slots, 0, max_slots * sizeof(*all_slots));
	for (unsigned int i = 0; i < max_slots; i++) {
		all_slots[i].lt.index = i;
		all_slots[i].lt.cpu = -1;
		all_slots[i].lt.numa_node = -1;
	}
	configure_rwlock(from_plugin); /* before `mode` is set: other threads wait for that */

	if (strcmp(ops->name, "pthread_mutex") == 0 && ops != from_plugin) {
		mode = MODE_PASS; /* forward everything; the table only when statistics are asked */
		return;
	}
	probe_lock(ops, &init_args);
	mutex_lock_is_libc_rwlock = strcmp(ops->name, "pthread_rwlock") == 0 && ops != from_plugin;
	mode = MODE_LAB;
}

static void ctx_release(void *arg);
static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

static u32 init_state; /* 0 not started, 1 in progress, 2 done */
static __thread bool initialising;

static void initialise(void)
{
	u32 expected = 0;
	if (__atomic_compare_exchange_n(&init_state, &expected, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		initialising = true;
		find_real_functions();
		configure();
		pthread_key_create(&ctx_key, ctx_release);
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		initialising = false;
		__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
}

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

__attribute__((constructor)) static void interpose_start(void) { (void)ensure_ready(); }

/* ---- slots and thread contexts -------------------------------------------------------------- */

/*
 * A slot handed to a new thread forgets what the old one cached in queue nodes 0..2
 * (pi_futex's tid in node 0): nobody reads those once the old thread's locks are released.
 * Node 3 (the task: sleeping flag, rtmutex's PI state) is kept: another thread may still
 * reach it through a stale owner pointer, as the kernel's chain walk holds a reference to a
 * task_struct; so a recycled slot keeps the old thread's tid for rtmutex's boosting (which
 * only acts on SCHED_FIFO threads). Not at all where a CLH lock left its nodes
 * (lock_private set): its node 0 may be in another thread's queue now.
 */
static void slot_forget(struct slot *s)
{
	if (s->lt.lock_private == NULL)
		memset(s->lt.qnode, 0, 3 * LOCK_QNODE_BYTES);
}

static struct slot *slot_from_pool(void)
{
	struct slot *s = NULL;
	real.mutex_lock(&pool_mutex);
	if (nfree_slots > 0) {
		s = free_slots[--nfree_slots];
		slot_forget(s);
	} else if (nslots_made < max_slots) {
		s = &all_slots[nslots_made++];
	}
	real.mutex_unlock(&pool_mutex);
	if (s == NULL)
		fatal("more than %s lock contexts at once: raise LOCKLAB_MAX_THREADS",
		      getenv("LOCKLAB_MAX_THREADS") ? getenv("LOCKLAB_MAX_THREADS") : "512");
	return s;
}

static struct thread_ctx *thread_ctx(void)
{
	struct thread_ctx *ctx = my_ctx;
	if (likely(ctx != NULL))
		return ctx;
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL)
		fatal("%s", "out of memory for a thread context");
	real.mutex_lock(&pool_mutex);
	ctx->next = all_ctx;
	if (all_ctx)
		all_ctx->prev = ctx;
	all_ctx = ctx;
	real.mutex_unlock(&pool_mutex);
	my_ctx = ctx;
	pthread_setspecific(ctx_key, ctx); /* ctx_release runs at thread exit */
	return ctx;
}

/* At thread exit: the slots go back to the pool (a slot still held is leaked, not reused). */
static void ctx_release(void *arg)
{
	struct thread_ctx *ctx = arg;
	real.mutex_lock(&pool_mutex);
	for (unsigned int i = 0; i < ctx->nslots; i++)
		if (!__atomic_load_n(&ctx->slots[i]->busy, __ATOMIC_ACQUIRE))
			free_slots[nfree_slots++] = ctx->slots[i];
	if (ctx->prev)
		ctx->prev->next = ctx->next;
	else
		all_ctx = ctx->next;
	if (ctx->next)
		ctx->next->prev = ctx->prev;
	real.mutex_unlock(&pool_mutex);
	if (my_ctx == ctx)
		my_ctx = NULL;
	free(ctx);
}

static struct slot *slot_take(void)
{
	struct thread_ctx *ctx = thread_ctx();
	for (unsigned int i = 0; i < ctx->nslots; i++) {
		struct slot *s = ctx->slots[i];
		/* Acquire: pairs with the release in slot_put, after the lock's unlock used it. */
		if (!__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&s->busy, 1, __ATOMIC_RELAXED);
			return s;
		}
	}
	if (ctx->nslots == MAX_DEPTH)
		fatal("a thread holds more than %s lab locks at once", "32");
	struct slot *s = slot_from_pool();
	s->busy = 1;
	ctx->slots[ctx->nslots++] = s;
	return s;
}

static inline void slot_put(struct lock_thread *lt)
{
	__atomic_store_n(&((struct slot *)lt)->busy, 0, __ATOMIC_RELEASE);
}

/* ---- the side table ------------------------------------------------------------------------- */

static inline size_t table_hash(const void *addr)
{
	u64 x = (u64)(uintptr_t)addr;
	return (size_t)((x * 0x9e3779b97f4a7c15ull) >> (64 - TABLE_BITS));
}

/*
 * A side-table entry: its header zeroed, then the lab lock's own bytes, each part on its own
 * cache lines (the lock's bytes are initialised by its init). Entries are never freed:
 * the lock-free lookup may still be reading one (and a destroyed mutex may be initialised again).
 */
static void *side_entry_alloc(size_t header_size, size_t lock_size, const char *what, void **lab)
{
	size_t head = (header_size + LOCKLAB_CACHELINE - 1) & ~(size_t)(LOCKLAB_CACHELINE - 1);
	size_t body = (lock_size + LOCKLAB_CACHELINE - 1) & ~(size_t)(LOCKLAB_CACHELINE - 1);
	char *entry = aligned_alloc(LOCKLAB_CACHELINE, head + body);
	if (entry == NULL)
		fatal("out of memory for %s", what);
	memset(entry, 0, head);
	*lab = entry + head;
	return entry;
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

/*
 * Set while a lock's init or destroy runs (under table_mutex): a lock built on the C library's
 * (pthread_mutex_pi) calls pthread_mutex_init/destroy, which must then go straight to glibc.
 */
static __thread bool in_lab_setup __attribute__((tls_model("initial-exec")));

/* A live ENTRY_LAB's lab lock, destroyed by the catalogue lock's own destroy. */
static void side_lab_destroy(struct side_table *t, struct side_entry *e)
{
	const struct lock_ops *o = *t->ops;
	if (o->destroy && !__atomic_load_n(&t->nodes_migrate, __ATOMIC_RELAXED)) {
		in_lab_setup = true;
		o->destroy(e->lab);
		in_lab_setup = false;
	}
}

/* side_get's slow path: build the entry, or start it afresh. */
static struct side_entry *side_build(struct side_table *t, const void *addr, bool fresh)
{
	real.mutex_lock(&table_mutex);
	struct side_entry *e = side_lookup(t, addr);
	if (e == NULL) {
		void *lab;
		e = side_entry_alloc(t->entry_size, *t->ops ? (*t->ops)->lock_size : 0, t->what,
				     &lab);
		e->addr = addr;
		e->lab = lab;
		t->start(e, addr);
		e->live = 1;
		size_t b = table_hash(addr);
		e->next = t->buckets[b];
		__atomic_store_n(&t->buckets[b], e, __ATOMIC_RELEASE);
	} else if (fresh || !e->live) {
		/* Initialised again (memory reused) or used after its destroy: start afresh. */
		if (e->kind == ENTRY_LAB && e->live)
			side_lab_destroy(t, e);
		t->start(e, addr);
		__atomic_store_n(&e->live, 1, __ATOMIC_RELEASE);
	}
	real.mutex_unlock(&table_mutex);
	return e;
}

/* The entry of `addr`; (re)built when `fresh` (the object's init) or after its destroy. */
static inline struct side_entry *side_get(struct side_table *t, const void *addr, bool fresh)
{
	struct side_entry *e = side_lookup(t, addr);
	if (likely(e != NULL && !fresh && __atomic_load_n(&e->live, __ATOMIC_ACQUIRE)))
		return e;
	return side_build(t, addr, fresh);
}

/* The object's destroy: its lab lock goes, and the entry waits to be initialised again. */
static void side_retire(struct side_table *t, struct side_entry *e)
{
	real.mutex_lock(&table_mutex);
	if (e->kind == ENTRY_LAB)
		side_lab_destroy(t, e);
	__atomic_store_n(&e->live, 0, __ATOMIC_RELEASE);
	real.mutex_unlock(&table_mutex);
}

static u32 classify(const void *addr, int *glibc_kind)
{
	int kind = ((const pthread_mutex_t *)addr)->__data.__kind;
	*glibc_kind = kind;
	if (mode == MODE_PASS)
		return ENTRY_PASS;
	if ((kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE ||
	    (kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_ERRORCHECK ||
	    (kind & (KIND_ROBUST | KIND_PRIO_INHERIT | KIND_PRIO_PROTECT | KIND_PSHARED)))
		return ENTRY_PASS;
	return ENTRY_LAB; /* normal, default and adaptive mutexes */
}

/* A catalogue lock's own init, for a mutex's or a rwlock's entry. */
static void lab_lock_init(const struct lock_ops *o, const struct lock_init_args *args, void *lab,
			  const char *failure_format)
{
	memset(lab, 0, o->lock_size);
	in_lab_setup = true;
	int err = o->init ? o->init(lab, args) : 0;
	in_lab_setup = false;
	if (err != 0)
		fatal(failure_format, o->name);
}

/* After an unlock: does the lock leave nodes with the threads (side_table.nodes_migrate)? */
static inline void note_nodes_migrate(const struct lock_thread *unlocker, bool *migrated)
{
	if (unlikely(unlocker->lock_private != NULL) && !__atomic_load_n(migrated, __ATOMIC_RELAXED))
		__atomic_store_n(migrated, true, __ATOMIC_RELAXED);
}

static void lab_init(struct mutex_entry *e)
{
	e->occupancy = 0;
	e->owner = NULL;
	lab_lock_init(ops, &init_args, e->side.lab, "lock '%s' failed to initialise a mutex");
}

static void mutex_entry_start(struct side_entry *side, const void *addr)
{
	struct mutex_entry *e = (struct mutex_entry *)side;
	side->kind = classify(addr, &e->glibc_kind);
	if (side->kind == ENTRY_LAB)
		lab_init(e);
}

static struct side_table mutexes = {
	.what = "a mutex",
	.entry_size = sizeof(struct mutex_entry),
	.ops = &ops,
	.start = mutex_entry_start,
};
_Static_assert(offsetof(struct mutex_entry, side) == 0, "a side_entry * is a mutex_entry *");

static inline struct mutex_entry *entry_lookup(const pthread_mutex_t *m)
{
	return (struct mutex_entry *)side_lookup(&mutexes, m);
}

/* The entry of `m`; (re)built when `fresh` (pthread_mutex_init) or after a destroy. */
static inline struct mutex_entry *entry_get(pthread_mutex_t *m, bool fresh)
{
	return (struct mutex_entry *)side_get(&mutexes, m, fresh);
}

/* Counters live in the entry and are written by the holder only: no atomic RMW needed. */
static inline void count(struct mutex_entry *e, bool contended)
{
	if (!stats_wanted)
		return;
	__atomic_store_n(&e->acquisitions, __atomic_load_n(&e->acquisitions, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	if (contended)
		__atomic_store_n(&e->contended,
				 __atomic_load_n(&e->contended, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

/* ---- the lab lock as a mutex ---------------------------------------------------------------- */

/*
 * The catalogue's pthread_rwlock as the mutex lock calls pthread_rwlock_*, which are ours now:
 * in_lab_setup sends those calls straight to the C library.
 */
static void libc_rwlock_call(void (*fn)(void *, struct lock_thread *), void *lab,
			     struct lock_thread *self)
{
	in_lab_setup = true;
	fn(lab, self);
	in_lab_setup = false;
}

static inline void lab_lock(struct mutex_entry *e, struct lock_thread *self)
{
	if (ops->trylock == NULL)
		__atomic_fetch_add(&e->occupancy, 1, __ATOMIC_SEQ_CST);
	if (unlikely(mutex_lock_is_libc_rwlock))
		libc_rwlock_call(ops->lock, e->side.lab, self);
	else
		ops->lock(e->side.lab, self);
}

static inline bool lab_trylock(struct mutex_entry *e, struct lock_thread *self)
{
	if (unlikely(mutex_lock_is_libc_rwlock)) {
		in_lab_setup = true;
		bool taken = ops->trylock(e->side.lab, self);
		in_lab_setup = false;
		return taken;
	}
	if (ops->trylock != NULL)
		return ops->trylock(e->side.lab, self);
	/* Nobody is in lock(), holds, or is in unlock(): the lock is free and lock() won't wait. */
	u32 zero = 0;
	if (!__atomic_compare_exchange_n(&e->occupancy, &zero, 1, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_RELAXED))
		return false;
	ops->lock(e->side.lab, self);
	return true;
}

static inline void lab_unlock(struct mutex_entry *e, struct lock_thread *self)
{
	if (unlikely(mutex_lock_is_libc_rwlock))
		libc_rwlock_call(ops->unlock, e->side.lab, self);
	else
		ops->unlock(e->side.lab, self);
	if (ops->trylock == NULL)
		__atomic_fetch_sub(&e->occupancy, 1, __ATOMIC_SEQ_CST);
}

static int timespec_valid(const struct timespec *t)
{
	return t != NULL && t->tv_nsec >= 0 && t->tv_nsec < 1000000000L;
}

static bool deadline_passed(clockid_t clock, const struct timespec *deadline, long *left_ns)
{
	struct timespec now;
	clock_gettime(clock, &now);
	if (now.tv_sec > deadline->tv_sec ||
	    (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec))
		return true;
	long long left = (long long)(deadline->tv_sec - now.tv_sec) * 1000000000LL +
			 (deadline->tv_nsec - now.tv_nsec);
	*left_ns = left > 1000000000LL ? 1000000000L : (long)left;
	return false;
}

/*
 * Retry attempt(arg) with a bounded sleeping backoff until it succeeds (true) or the deadline
 * has passed on `clock` (false; one last attempt once it has). The deadline must be valid.
 */
static bool poll_until(clockid_t clock, const struct timespec *deadline, bool (*attempt)(void *),
		       void *arg)
{
	long left_ns = 0, backoff_ns = 1000;
	for (;;) {
		if (deadline_passed(clock, deadline, &left_ns))
			return attempt(arg);
		struct timespec nap = { 0, backoff_ns < left_ns ? backoff_ns : left_ns };
		nanosleep(&nap, NULL);
		if (backoff_ns < 1000000)
			backoff_ns *= 2;
		if (attempt(arg))
			return true;
	}
}

struct mutex_attempt {
	struct mutex_entry *e;
	struct lock_thread *self;
};

static bool mutex_attempt(void *arg)
{
	struct mutex_attempt *a = arg;
	return lab_trylock(a->e, a->self);
}

/* Lock `m` (deadline NULL: wait for ever). Returns 0, ETIMEDOUT or EINVAL. */
static int do_lock(pthread_mutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	struct mutex_entry *e = entry_get(m, false);
	if (e->side.kind == ENTRY_PASS) {
		int err = deadline == NULL ? real.mutex_lock(m)
			  : clock == CLOCK_REALTIME || real.mutex_clocklock == NULL
				  ? real.mutex_timedlock(m, deadline)
				  : real.mutex_clocklock(m, clock, deadline);
		if (err == 0)
			count(e, false);
		return err;
	}
	struct slot *s = slot_take();
	bool contended = false;
	if (deadline != NULL) {
		if (!lab_trylock(e, &s->lt)) {
			contended = true;
			if (!timespec_valid(deadline)) {
				slot_put(&s->lt);
				return EINVAL;
			}
			struct mutex_attempt a = { e, &s->lt };
			if (!poll_until(clock, deadline, mutex_attempt, &a)) {
				slot_put(&s->lt);
				return ETIMEDOUT;
			}
		}
	} else if (stats_wanted) {
		if (!lab_trylock(e, &s->lt)) {
			contended = true;
			lab_lock(e, &s->lt);
		}
	} else {
		lab_lock(e, &s->lt);
	}
	e->owner = &s->lt;
	count(e, contended);
	return 0;
}

static int do_unlock(pthread_mutex_t *m)
{
	struct mutex_entry *e = entry_lookup(m);
	if (e == NULL || e->side.kind == ENTRY_PASS)
		return real.mutex_unlock(m);
	struct lock_thread *owner = e->owner;
	if (owner == NULL)
		return EPERM; /* not locked */
	e->owner = NULL;
	lab_unlock(e, owner);
	note_nodes_migrate(owner, &mutexes.nodes_migrate);
	slot_put(owner);
	return 0;
}

/* ---- interposed: mutexes -------------------------------------------------------------------- */

static int ll_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
	if (!ensure_ready())
		return 0;
	int err = real.mutex_init(m, attr);
	if (err == 0 && (mode == MODE_LAB || stats_wanted) && !in_lab_setup)
		entry_get(m, true);
	return err;
}

static int ll_mutex_destroy(pthread_mutex_t *m)
{
	if (!ensure_ready())
		return 0;
	if ((mode == MODE_LAB || stats_wanted) && !in_lab_setup) {
		struct mutex_entry *e = entry_lookup(m);
		if (e != NULL && e->side.live) {
			if (e->side.kind == ENTRY_LAB && e->owner != NULL)
				return EBUSY;
			side_retire(&mutexes, &e->side);
		}
	}
	return real.mutex_destroy(m);
}

static int ll_mutex_lock(pthread_mutex_t *m)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_lock(m);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_lock(m);
	return do_lock(m, CLOCK_REALTIME, NULL);
}

static int ll_mutex_trylock(pthread_mutex_t *m)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_trylock(m);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_trylock(m);
	struct mutex_entry *e = entry_get(m, false);
	if (e->side.kind == ENTRY_PASS) {
		int err = real.mutex_trylock(m);
		if (err == 0)
			count(e, false);
		return err;
	}
	struct slot *s = slot_take();
	if (!lab_trylock(e, &s->lt)) {
		slot_put(&s->lt);
		return EBUSY;
	}
	e->owner = &s->lt;
	count(e, false);
	return 0;
}

static int ll_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *t)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_clocklock(m, clock, t);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_clocklock(m, clock, t);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return do_lock(m, clock, t);
}

static int ll_mutex_timedlock(pthread_mutex_t *m, const struct timespec *t)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_timedlock(m, t);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_timedlock(m, t);
	return do_lock(m, CLOCK_REALTIME, t);
}

static int ll_mutex_unlock(pthread_mutex_t *m)
{
	if (likely(mode == MODE_PASS && !stats_wanted))
		return real.mutex_unlock(m);
	if (!ensure_ready())
		return 0;
	if (mode == MODE_PASS && !stats_wanted)
		return real.mutex_unlock(m);
	return do_unlock(m);
}

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

/* ---- interposed: reader-writer locks -------------------------------------------------------- */

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

#define GATE_FIELD_BITS 21
#define GATE_READER 1ull
#define GATE_WRITER (1ull << GATE_FIELD_BITS)
#define GATE_TRY (1ull << (2 * GATE_FIELD_BITS))
#define GATE_FIELD_MASK (GATE_WRITER - 1)

static inline u64 gate_readers(u64 g) { return g & GATE_FIELD_MASK; }
static inline u64 gate_writers(u64 g) { return (g >> GATE_FIELD_BITS) & GATE_FIELD_MASK; }
static inline u64 gate_tries(u64 g) { return g >> (2 * GATE_FIELD_BITS); }

/* Whether a holder counted in `g` keeps a reader (or writer) out. */
static inline bool gate_conflicts(u64 g, bool write)
{
	if (write || rw_mode == RW_EXCLUSIVE)
		return gate_readers(g) != 0 || gate_writers(g) != 0;
	return gate_writers(g) != 0;
}

static u32 rw_classify(const void *addr, int *pshared)
{
	*pshared = ((const pthread_rwlock_t *)addr)->__data.__shared != 0;
	return rw_mode == RW_PASS || *pshared ? ENTRY_PASS : ENTRY_LAB;
}

static void rw_lab_init(struct rwlock_entry *e)
{
	e->gate = 0;
	lab_lock_init(rw_ops, &rw_init_args, e->side.lab, "lock '%s' failed to initialise a rwlock");
}

static void rwlock_entry_start(struct side_entry *side, const void *addr)
{
	struct rwlock_entry *e = (struct rwlock_entry *)side;
	side->kind = rw_classify(addr, &e->pshared);
	if (side->kind == ENTRY_LAB)
		rw_lab_init(e);
}

static struct side_table rwlocks = {
	.what = "a rwlock",
	.entry_size = sizeof(struct rwlock_entry),
	.ops = &rw_ops,
	.start = rwlock_entry_start,
};
_Static_assert(offsetof(struct rwlock_entry, side) == 0, "a side_entry * is a rwlock_entry *");

static inline struct rwlock_entry *rw_entry_lookup(const pthread_rwlock_t *rw)
{
	return (struct rwlock_entry *)side_lookup(&rwlocks, rw);
}

/* The entry of `rw`; (re)built when `fresh` (pthread_rwlock_init) or after a destroy. */
static inline struct rwlock_entry *rw_entry_get(pthread_rwlock_t *rw, bool fresh)
{
	return (struct rwlock_entry *)side_get(&rwlocks, rw, fresh);
}

static inline void rw_count(struct rwlock_entry *e, bool write, bool contended)
{
	if (!stats_wanted)
		return;
	__atomic_fetch_add(write ? &e->writes : &e->reads, 1, __ATOMIC_RELAXED);
	if (contended)
		__atomic_fetch_add(write ? &e->contended_writes : &e->contended_reads, 1,
				   __ATOMIC_RELAXED);
}

/* The lab lock's own calls; in exclusive mode a reader takes the lock as a writer does. */
static inline void rw_lab_acquire(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	if (write || rw_mode == RW_EXCLUSIVE)
		rw_ops->lock(e->side.lab, self);
	else
		rw_ops->read_lock(e->side.lab, self);
}

static inline void rw_lab_release(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	if (write || rw_mode == RW_EXCLUSIVE)
		rw_ops->unlock(e->side.lab, self);
	else
		rw_ops->read_unlock(e->side.lab, self);
}

/* Blocking entry. Returns whether a conflicting holder or waiter was there (contended). */
static bool rw_enter(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	u64 g = __atomic_fetch_add(&e->gate, write ? GATE_WRITER : GATE_READER, __ATOMIC_SEQ_CST);
	/*
	 * A try that succeeded before us must not find us queued in the lab lock ahead of it
	 * (a writer-preferring lock would make a try-reader wait for us): wait for it to be in.
	 * A reader of a shared lock with no writer counted waits for nothing: only try-readers
	 * can be pending then, and readers never keep readers out.
	 */
	if (gate_tries(g) != 0 && (write || rw_mode == RW_EXCLUSIVE || gate_writers(g) != 0)) {
		unsigned int spins = 0;
		while (gate_tries(__atomic_load_n(&e->gate, __ATOMIC_SEQ_CST)) != 0)
			if (++spins % 64 == 0)
				sched_yield();
			else
				cpu_relax();
	}
	rw_lab_acquire(e, self, write);
	return gate_conflicts(g, write);
}

/* Never waits: the gate says whether the lab lock can be taken at once, and then takes it. */
static bool rw_try(struct rwlock_entry *e, struct lock_thread *self, bool write)
{
	u64 g = __atomic_load_n(&e->gate, __ATOMIC_SEQ_CST);
	do {
		if (gate_conflicts(g, write))
			return false;
	} while (!__atomic_compare_exchange_n(&e->gate, &g,
					      g + (write ? GATE_WRITER : GATE_READER) + GATE_TRY,
					      false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	rw_lab_acquire(e, self, write);
	__atomic_fetch_sub(&e->gate, GATE_TRY, __ATOMIC_SEQ_CST);
	return true;
}

struct rw_attempt {
	struct rwlock_entry *e;
	struct lock_thread *self;
	bool write;
};

static bool rw_attempt(void *arg)
{
	struct rw_attempt *a = arg;
	return rw_try(a->e, a->self, a->write);
}

/* The calling thread's latest hold of `e`, or NULL. */
static struct rw_hold *rw_held(struct thread_ctx *ctx, const struct rwlock_entry *e)
{
	for (unsigned int i = ctx->n_rw_holds; i-- > 0;)
		if (ctx->rw_holds[i].e == e)
			return &ctx->rw_holds[i];
	return NULL;
}

static void rw_hold_push(struct thread_ctx *ctx, struct rwlock_entry *e, struct slot *s, bool write)
{
	if (ctx->n_rw_holds == MAX_DEPTH)
		fatal("a thread holds more than %s rwlocks at once", "32");
	ctx->rw_holds[ctx->n_rw_holds++] = (struct rw_hold){ e, s, write };
}

static int rw_pass_acquire(pthread_rwlock_t *rw, bool write, bool try, clockid_t clock,
			   const struct timespec *deadline)
{
	if (try)
		return write ? real.rwlock_trywrlock(rw) : real.rwlock_tryrdlock(rw);
	if (deadline == NULL)
		return write ? real.rwlock_wrlock(rw) : real.rwlock_rdlock(rw);
	if (clock == CLOCK_REALTIME)
		return write ? real.rwlock_timedwrlock(rw, deadline)
			     : real.rwlock_timedrdlock(rw, deadline);
	int (*clocked)(pthread_rwlock_t *, clockid_t, const struct timespec *) =
		write ? real.rwlock_clockwrlock : real.rwlock_clockrdlock;
	return clocked ? clocked(rw, clock, deadline) : EINVAL;
}

/*
 * Take `rw` for reading or writing: blocking, `try` (EBUSY), or by a deadline on `clock`
 * (ETIMEDOUT, EINVAL for a bad deadline when it has to wait). EDEADLK when the thread holds
 * it for writing, or asks to write while it reads (glibc's and POSIX's answers).
 */
static int rw_acquire(pthread_rwlock_t *rw, bool write, bool try, clockid_t clock,
		      const struct timespec *deadline)
{
	struct rwlock_entry *e = rw_entry_get(rw, false);
	if (e->side.kind == ENTRY_PASS) {
		int err = rw_pass_acquire(rw, write, try, clock, deadline);
		if (err == 0)
			rw_count(e, write, false);
		return err;
	}
	struct thread_ctx *ctx = thread_ctx();
	struct rw_hold *held = rw_held(ctx, e);
	if (held != NULL && (held->write || write))
		return try ? EBUSY : EDEADLK;
	if (held != NULL) { /* a read lock taken again: the outer one already keeps writers out */
		rw_hold_push(ctx, e, NULL, false);
		rw_count(e, false, false);
		return 0;
	}
	struct slot *s = slot_take();
	bool contended = false;
	if (try || deadline != NULL) {
		if (!rw_try(e, &s->lt, write)) {
			contended = true;
			struct rw_attempt a = { e, &s->lt, write };
			int err = try ? EBUSY
				  : !timespec_valid(deadline) ? EINVAL
				  : poll_until(clock, deadline, rw_attempt, &a) ? 0
									  : ETIMEDOUT;
			if (err != 0) {
				slot_put(&s->lt);
				return err;
			}
		}
	} else {
		contended = rw_enter(e, &s->lt, write);
	}
	rw_hold_push(ctx, e, s, write);
	rw_count(e, write, contended);
	return 0;
}

static int rw_release(pthread_rwlock_t *rw)
{
	struct rwlock_entry *e = rw_entry_lookup(rw);
	if (e == NULL || e->side.kind == ENTRY_PASS)
		return real.rwlock_unlock(rw);
	struct thread_ctx *ctx = my_ctx;
	struct rw_hold *held = ctx ? rw_held(ctx, e) : NULL;
	if (held == NULL)
		return EPERM; /* not held by this thread */
	struct rw_hold h = *held;
	for (struct rw_hold *next = held + 1; next < ctx->rw_holds + ctx->n_rw_holds; next++)
		next[-1] = *next;
	ctx->n_rw_holds--;
	if (h.slot == NULL)
		return 0; /* a nested read lock */
	rw_lab_release(e, &h.slot->lt, h.write);
	__atomic_fetch_sub(&e->gate, h.write ? GATE_WRITER : GATE_READER, __ATOMIC_SEQ_CST);
	note_nodes_migrate(&h.slot->lt, &rwlocks.nodes_migrate);
	slot_put(&h.slot->lt);
	return 0;
}

/*
 * True when the call goes straight to the C library: the lab's own calls (a lock built on
 * glibc's rwlock), our start-up, or no lab lock and no statistics.
 */
static inline bool rw_forward(void)
{
	if (unlikely(in_lab_setup) || !ensure_ready())
		return true;
	return rw_mode == RW_PASS && !stats_wanted;
}

static int ll_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr)
{
	bool forward = rw_forward();
	int err = real.rwlock_init ? real.rwlock_init(rw, attr) : 0;
	if (err == 0 && !forward)
		rw_entry_get(rw, true);
	return err;
}

static int ll_rwlock_destroy(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_destroy ? real.rwlock_destroy(rw) : 0;
	struct rwlock_entry *e = rw_entry_lookup(rw);
	if (e != NULL && e->side.live) {
		if (e->side.kind == ENTRY_LAB && __atomic_load_n(&e->gate, __ATOMIC_SEQ_CST) != 0)
			return EBUSY;
		side_retire(&rwlocks, &e->side);
	}
	return real.rwlock_destroy(rw);
}

static int ll_rwlock_rdlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_rdlock ? real.rwlock_rdlock(rw) : 0;
	return rw_acquire(rw, false, false, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_wrlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_wrlock ? real.rwlock_wrlock(rw) : 0;
	return rw_acquire(rw, true, false, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_tryrdlock ? real.rwlock_tryrdlock(rw) : 0;
	return rw_acquire(rw, false, true, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_trywrlock ? real.rwlock_trywrlock(rw) : 0;
	return rw_acquire(rw, true, true, CLOCK_REALTIME, NULL);
}

static int ll_rwlock_timedrdlock(pthread_rwlock_t *rw, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_timedrdlock ? real.rwlock_timedrdlock(rw, t) : 0;
	return rw_acquire(rw, false, false, CLOCK_REALTIME, t);
}

static int ll_rwlock_timedwrlock(pthread_rwlock_t *rw, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_timedwrlock ? real.rwlock_timedwrlock(rw, t) : 0;
	return rw_acquire(rw, true, false, CLOCK_REALTIME, t);
}

static int ll_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t clock, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_clockrdlock ? real.rwlock_clockrdlock(rw, clock, t) : EINVAL;
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return rw_acquire(rw, false, false, clock, t);
}

static int ll_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t clock, const struct timespec *t)
{
	if (rw_forward())
		return real.rwlock_clockwrlock ? real.rwlock_clockwrlock(rw, clock, t) : EINVAL;
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	return rw_acquire(rw, true, false, clock, t);
}

static int ll_rwlock_unlock(pthread_rwlock_t *rw)
{
	if (rw_forward())
		return real.rwlock_unlock ? real.rwlock_unlock(rw) : 0;
	return rw_release(rw);
}

/* ---- symbols, with glibc's versions (see interpose.map) ------------------------------------ */

#define ALIAS(impl, name) \
	extern __typeof__(impl) name __attribute__((alias(#impl), visibility("default")));
#define VERSION(name, symbol_at_version) __asm__(".symver " #name "," symbol_at_version);

ALIAS(ll_mutex_init, ll_mutex_init_v225)
VERSION(ll_mutex_init_v225, "pthread_mutex_init@@GLIBC_2.2.5")
ALIAS(ll_mutex_destroy, ll_mutex_destroy_v225)
VERSION(ll_mutex_destroy_v225, "pthread_mutex_destroy@@GLIBC_2.2.5")
ALIAS(ll_mutex_lock, ll_mutex_lock_v225)
VERSION(ll_mutex_lock_v225, "pthread_mutex_lock@@GLIBC_2.2.5")
ALIAS(ll_mutex_unlock, ll_mutex_unlock_v225)
VERSION(ll_mutex_unlock_v225, "pthread_mutex_unlock@@GLIBC_2.2.5")
ALIAS(ll_mutex_trylock, ll_mutex_trylock_v225)
VERSION(ll_mutex_trylock_v225, "pthread_mutex_trylock@GLIBC_2.2.5")
ALIAS(ll_mutex_trylock, ll_mutex_trylock_v234)
VERSION(ll_mutex_trylock_v234, "pthread_mutex_trylock@@GLIBC_2.34")
ALIAS(ll_mutex_timedlock, ll_mutex_timedlock_v225)
VERSION(ll_mutex_timedlock_v225, "pthread_mutex_timedlock@GLIBC_2.2.5")
ALIAS(ll_mutex_timedlock, ll_mutex_timedlock_v234)
VERSION(ll_mutex_timedlock_v234, "pthread_mutex_timedlock@@GLIBC_2.34")
ALIAS(ll_mutex_clocklock, ll_mutex_clocklock_v230)
VERSION(ll_mutex_clocklock_v230, "pthread_mutex_clocklock@GLIBC_2.30")
ALIAS(ll_mutex_clocklock, ll_mutex_clocklock_v234)
VERSION(ll_mutex_clocklock_v234, "pthread_mutex_clocklock@@GLIBC_2.34")
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

/* rwlocks: every one is @GLIBC_2.2.5 (clock ones @GLIBC_2.30) and @@GLIBC_2.34 */
ALIAS(ll_rwlock_init, ll_rwlock_init_v225)
VERSION(ll_rwlock_init_v225, "pthread_rwlock_init@GLIBC_2.2.5")
ALIAS(ll_rwlock_init, ll_rwlock_init_v234)
VERSION(ll_rwlock_init_v234, "pthread_rwlock_init@@GLIBC_2.34")
ALIAS(ll_rwlock_destroy, ll_rwlock_destroy_v225)
VERSION(ll_rwlock_destroy_v225, "pthread_rwlock_destroy@GLIBC_2.2.5")
ALIAS(ll_rwlock_destroy, ll_rwlock_destroy_v234)
VERSION(ll_rwlock_destroy_v234, "pthread_rwlock_destroy@@GLIBC_2.34")
ALIAS(ll_rwlock_rdlock, ll_rwlock_rdlock_v225)
VERSION(ll_rwlock_rdlock_v225, "pthread_rwlock_rdlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_rdlock, ll_rwlock_rdlock_v234)
VERSION(ll_rwlock_rdlock_v234, "pthread_rwlock_rdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_tryrdlock, ll_rwlock_tryrdlock_v225)
VERSION(ll_rwlock_tryrdlock_v225, "pthread_rwlock_tryrdlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_tryrdlock, ll_rwlock_tryrdlock_v234)
VERSION(ll_rwlock_tryrdlock_v234, "pthread_rwlock_tryrdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_timedrdlock, ll_rwlock_timedrdlock_v225)
VERSION(ll_rwlock_timedrdlock_v225, "pthread_rwlock_timedrdlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_timedrdlock, ll_rwlock_timedrdlock_v234)
VERSION(ll_rwlock_timedrdlock_v234, "pthread_rwlock_timedrdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_wrlock, ll_rwlock_wrlock_v225)
VERSION(ll_rwlock_wrlock_v225, "pthread_rwlock_wrlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_wrlock, ll_rwlock_wrlock_v234)
VERSION(ll_rwlock_wrlock_v234, "pthread_rwlock_wrlock@@GLIBC_2.34")
ALIAS(ll_rwlock_trywrlock, ll_rwlock_trywrlock_v225)
VERSION(ll_rwlock_trywrlock_v225, "pthread_rwlock_trywrlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_trywrlock, ll_rwlock_trywrlock_v234)
VERSION(ll_rwlock_trywrlock_v234, "pthread_rwlock_trywrlock@@GLIBC_2.34")
ALIAS(ll_rwlock_timedwrlock, ll_rwlock_timedwrlock_v225)
VERSION(ll_rwlock_timedwrlock_v225, "pthread_rwlock_timedwrlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_timedwrlock, ll_rwlock_timedwrlock_v234)
VERSION(ll_rwlock_timedwrlock_v234, "pthread_rwlock_timedwrlock@@GLIBC_2.34")
ALIAS(ll_rwlock_unlock, ll_rwlock_unlock_v225)
VERSION(ll_rwlock_unlock_v225, "pthread_rwlock_unlock@GLIBC_2.2.5")
ALIAS(ll_rwlock_unlock, ll_rwlock_unlock_v234)
VERSION(ll_rwlock_unlock_v234, "pthread_rwlock_unlock@@GLIBC_2.34")
ALIAS(ll_rwlock_clockrdlock, ll_rwlock_clockrdlock_v230)
VERSION(ll_rwlock_clockrdlock_v230, "pthread_rwlock_clockrdlock@GLIBC_2.30")
ALIAS(ll_rwlock_clockrdlock, ll_rwlock_clockrdlock_v234)
VERSION(ll_rwlock_clockrdlock_v234, "pthread_rwlock_clockrdlock@@GLIBC_2.34")
ALIAS(ll_rwlock_clockwrlock, ll_rwlock_clockwrlock_v230)
VERSION(ll_rwlock_clockwrlock_v230, "pthread_rwlock_clockwrlock@GLIBC_2.30")
ALIAS(ll_rwlock_clockwrlock, ll_rwlock_clockwrlock_v234)
VERSION(ll_rwlock_clockwrlock_v234, "pthread_rwlock_clockwrlock@@GLIBC_2.34")

/* ---- fork ----------------------------------------------------------------------------------- */

static void atfork_prepare(void)
{
	real.mutex_lock(&table_mutex);
	real.mutex_lock(&pool_mutex);
}

static void atfork_parent(void)
{
	real.mutex_unlock(&pool_mutex);
	real.mutex_unlock(&table_mutex);
}

static bool slot_is_mine(const struct lock_thread *lt)
{
	struct thread_ctx *ctx = my_ctx;
	for (unsigned int i = 0; ctx != NULL && i < ctx->nslots; i++)
		if (&ctx->slots[i]->lt == lt)
			return true;
	return false;
}

/* A rwlock this thread holds, rebuilt with only its own holds (see atfork_child). */
static void rw_rebuild_for_child(struct rwlock_entry *e)
{
	side_lab_destroy(&rwlocks, &e->side);
	rw_lab_init(e);
	for (unsigned int i = 0; i < my_ctx->n_rw_holds; i++) {
		struct rw_hold *h = &my_ctx->rw_holds[i];
		if (h->e != e || h->slot == NULL)
			continue;
		e->gate += h->write ? GATE_WRITER : GATE_READER;
		rw_lab_acquire(e, &h->slot->lt, h->write);
	}
}

static void atfork_child(void)
{
	real.mutex_init(&pool_mutex, NULL);
	real.mutex_init(&table_mutex, NULL);
	/*
	 * The other threads are gone. A lab lock this thread holds may have their queue nodes
	 * behind it: rebuild it, held by us again, so unlocking it in the child cannot hand it to
	 * a thread that does not exist. (A lock another thread held stays held, as glibc's does.)
	 */
	for (size_t b = 0; mode == MODE_LAB && b < (1u << TABLE_BITS); b++)
		for (struct side_entry *side = mutexes.buckets[b]; side; side = side->next) {
			struct mutex_entry *e = (struct mutex_entry *)side;
			struct lock_thread *owner = e->owner;
			if (!side->live || side->kind != ENTRY_LAB || owner == NULL ||
			    !slot_is_mine(owner))
				continue;
			side_lab_destroy(&mutexes, &e->side);
			lab_init(e);
			lab_lock(e, owner);
			e->owner = owner;
		}
	/* Rwlocks this thread holds: the other threads' read holds go with them. */
	for (size_t b = 0; rw_mode != RW_PASS && my_ctx != NULL && b < (1u << TABLE_BITS); b++)
		for (struct side_entry *side = rwlocks.buckets[b]; side; side = side->next)
			if (side->live && side->kind == ENTRY_LAB &&
			    rw_held(my_ctx, (struct rwlock_entry *)side) != NULL)
				rw_rebuild_for_child((struct rwlock_entry *)side);
	if (mode != MODE_LAB && rw_mode == RW_PASS)
		return;
	/* The other threads' contexts: their free slots return to the pool. */
	for (struct thread_ctx *ctx = all_ctx, *next; ctx != NULL; ctx = next) {
		next = ctx->next;
		if (ctx == my_ctx)
			continue;
		for (unsigned int i = 0; i < ctx->nslots; i++)
			if (!ctx->slots[i]->busy)
				free_slots[nfree_slots++] = ctx->slots[i];
		free(ctx);
	}
	all_ctx = my_ctx;
	if (my_ctx)
		my_ctx->next = my_ctx->prev = NULL;
}

/* ---- statistics at exit --------------------------------------------------------------------- */

static int by_acquisitions(const void *a, const void *b)
{
	u64 x = __atomic_load_n(&(*(struct mutex_entry *const *)a)->acquisitions, __ATOMIC_RELAXED);
	u64 y = __atomic_load_n(&(*(struct mutex_entry *const *)b)->acquisitions, __ATOMIC_RELAXED);
	return x < y ? 1 : x > y ? -1 : 0;
}

static const char *kind_name(const struct mutex_entry *e)
{
	if (e->side.kind == ENTRY_LAB)
		return "lab";
	switch (e->glibc_kind & KIND_TYPE_MASK) {
	case PTHREAD_MUTEX_RECURSIVE:
		return "recursive";
	case PTHREAD_MUTEX_ERRORCHECK:
		return "errorcheck";
	default:
		return mode == MODE_PASS ? "normal" : "robust-pi-or-pshared";
	}
}

struct rw_totals {
	u64 seen, reads, writes, contended_reads, contended_writes;
	u64 pass_seen, pass_reads, pass_writes, pshared;
};

static struct rw_totals rw_totals(void)
{
	struct rw_totals t = { 0 };
	for (size_t b = 0; b < (1u << TABLE_BITS); b++)
		for (struct side_entry *side = side_bucket(&rwlocks, b); side; side = side->next) {
			const struct rwlock_entry *e = (const struct rwlock_entry *)side;
			u64 reads = __atomic_load_n(&e->reads, __ATOMIC_RELAXED);
			u64 writes = __atomic_load_n(&e->writes, __ATOMIC_RELAXED);
			if (side->kind == ENTRY_PASS) {
				t.pass_seen++;
				t.pass_reads += reads;
				t.pass_writes += writes;
				t.pshared += (u64)e->pshared;
			} else {
				t.seen++;
				t.reads += reads;
				t.writes += writes;
				t.contended_reads += __atomic_load_n(&e->contended_reads, __ATOMIC_RELAXED);
				t.contended_writes +=
					__atomic_load_n(&e->contended_writes, __ATOMIC_RELAXED);
			}
		}
	return t;
}

static void write_rw_stats(FILE *out, const struct rw_totals *t)
{
	static const char *const mode_names[] = { [RW_PASS] = "passthrough", [RW_SHARED] = "lab",
						  [RW_EXCLUSIVE] = "exclusive" };
	fprintf(out, "  \"rwlocks\": {\"lock\": \"%s\", \"mode\": \"%s\", \"seen\": %llu, "
		     "\"read_acquisitions\": %llu, \"write_acquisitions\": %llu, "
		     "\"contended_read_acquisitions\": %llu, \"contended_write_acquisitions\": %llu,\n"
		     "    \"passthrough\": {\"rwlocks\": %llu, \"read_acquisitions\": %llu, "
		     "\"write_acquisitions\": %llu, \"pshared\": %llu}},\n",
		rw_mode == RW_PASS || rw_ops == NULL ? "pthread_rwlock" : rw_ops->name,
		mode_names[rw_mode], (unsigned long long)t->seen, (unsigned long long)t->reads,
		(unsigned long long)t->writes, (unsigned long long)t->contended_reads,
		(unsigned long long)t->contended_writes, (unsigned long long)t->pass_seen,
		(unsigned long long)t->pass_reads, (unsigned long long)t->pass_writes,
		(unsigned long long)t->pshared);
}

__attribute__((destructor)) static void interpose_stats(void)
{
	if (!stats_wanted || __atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
		return;
	size_t n = 0, cap = 1024;
	struct mutex_entry **all = malloc(cap * sizeof(*all));
	u64 seen = 0, acq = 0, cont = 0, pass_seen = 0, pass_acq = 0, recursive = 0, errorcheck = 0;
	for (size_t b = 0; b < (1u << TABLE_BITS); b++)
		for (struct side_entry *side = side_bucket(&mutexes, b); side; side = side->next) {
			struct mutex_entry *e = (struct mutex_entry *)side;
			u64 a = __atomic_load_n(&e->acquisitions, __ATOMIC_RELAXED);
			if (side->kind == ENTRY_PASS) {
				pass_seen++;
				pass_acq += a;
				recursive += (e->glibc_kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE;
				errorcheck += (e->glibc_kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_ERRORCHECK;
			} else {
				seen++;
				acq += a;
				cont += __atomic_load_n(&e->contended, __ATOMIC_RELAXED);
			}
			if (n == cap && (all = realloc(all, (cap *= 2) * sizeof(*all))) == NULL)
				return;
			all[n++] = e;
		}
	struct rw_totals rw = rw_totals();
	/*
	 * A process that used no mutex or rwlock (a wrapper such as timeout(1), which inherits
	 * LD_PRELOAD) writes nothing, so it cannot overwrite the program's file; "%p" in the path
	 * is the pid.
	 */
	if (n == 0 && rw.seen == 0 && rw.pass_seen == 0) {
		free(all);
		return;
	}
	char path[4096];
	const char *pid_mark = strstr(stats_path, "%p");
	if (pid_mark != NULL)
		snprintf(path, sizeof(path), "%.*s%d%s", (int)(pid_mark - stats_path), stats_path,
			 (int)getpid(), pid_mark + 2);
	else
		snprintf(path, sizeof(path), "%s", stats_path);
	FILE *out = fopen(path, "w");
	if (out == NULL) {
		fprintf(stderr, "locklab-interpose: cannot write LOCKLAB_STATS file %s\n", path);
		free(all);
		return;
	}
	qsort(all, n, sizeof(*all), by_acquisitions);
	fprintf(out, "{\n  \"lock\": \"%s\",\n  \"mode\": \"%s\",\n", ops->name,
		mode == MODE_LAB ? "lab" : "passthrough");
	fprintf(out, "  \"mutexes_seen\": %llu,\n  \"acquisitions\": %llu,\n"
		     "  \"contended_acquisitions\": %llu,\n",
		(unsigned long long)seen, (unsigned long long)acq, (unsigned long long)cont);
	fprintf(out, "  \"passthrough\": {\"mutexes\": %llu, \"acquisitions\": %llu, "
		     "\"recursive\": %llu, \"errorcheck\": %llu},\n",
		(unsigned long long)pass_seen, (unsigned long long)pass_acq,
		(unsigned long long)recursive, (unsigned long long)errorcheck);
	write_rw_stats(out, &rw);
	fprintf(out, "  \"lock_contexts\": %u,\n  \"hottest\": [", nslots_made);
	for (size_t i = 0; i < n && i < HOTTEST; i++)
		fprintf(out, "%s\n    {\"address\": \"%p\", \"kind\": \"%s\", \"acquisitions\": %llu, "
			     "\"contended_acquisitions\": %llu}",
			i ? "," : "", all[i]->side.addr, kind_name(all[i]),
			(unsigned long long)__atomic_load_n(&all[i]->acquisitions, __ATOMIC_RELAXED),
			(unsigned long long)__atomic_load_n(&all[i]->contended, __ATOMIC_RELAXED));
	fprintf(out, "\n  ]\n}\n");
	fclose(out);
	free(all);
}
