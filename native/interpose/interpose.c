/* SPDX-License-Identifier: MIT */
/*
 * liblocklab-interpose.so - run an unmodified program with any lock of the catalogue (or a
 * plugin) in place of its pthread mutexes, loaded with LD_PRELOAD.
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
} real;

/* ---- state ---------------------------------------------------------------------------------- */

struct slot {
	struct lock_thread lt; /* first: a struct lock_thread * is a struct slot * */
	u32 busy;              /* held by a lock (cleared by the unlocker, maybe another thread) */
};

struct thread_ctx {
	struct slot *slots[MAX_DEPTH];
	unsigned int nslots;
	struct thread_ctx *next, *prev; /* all live contexts, for fork */
};

struct mutex_entry {
	struct mutex_entry *next; /* bucket chain; immutable once published */
	const void *addr;
	u32 live;                 /* 0 after pthread_mutex_destroy, until reused */
	u32 kind;                 /* enum entry_kind */
	int glibc_kind;           /* __data.__kind when first seen */
	u32 occupancy;            /* the trylock gate, for locks without trylock */
	struct lock_thread *owner; /* the slot holding the lab lock (written under it) */
	u64 acquisitions;         /* written under the lock (relaxed stores: read at exit) */
	u64 contended;
	void *lab; /* ops->lock_size bytes, cache-line aligned */
};

static int mode;
static bool stats_wanted;
static const char *stats_path;
static const struct lock_ops *ops;
static long params[MAX_TUNABLES_HERE];
static struct lock_init_args init_args;
static pthread_key_t ctx_key;

static struct mutex_entry *table[1u << TABLE_BITS];
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
	if (!real.mutex_init || !real.mutex_destroy || !real.mutex_lock || !real.mutex_trylock ||
	    !real.mutex_timedlock || !real.mutex_unlock || !real.cond_init || !real.cond_destroy ||
	    !real.cond_wait || !real.cond_timedwait || !real.cond_signal || !real.cond_broadcast)
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

static void parse_params(const char *text)
{
	size_t n = tunable_count(ops);
	if (n > MAX_TUNABLES_HERE)
		fatal("lock '%s' has too many tunables", ops->name);
	for (size_t i = 0; i < n; i++)
		params[i] = ops->tunables[i].default_value;
	if (text == NULL || *text == '\0')
		return;
	char *copy = strdup(text), *save = NULL;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (eq == NULL)
			fatal("LOCKLAB_PARAMS: '%s' is not name=value", item);
		*eq = '\0';
		size_t i = 0;
		while (i < n && strcmp(ops->tunables[i].name, item) != 0)
			i++;
		if (i == n)
			fatal("LOCKLAB_PARAMS: the lock has no tunable '%s'", item);
		char *end;
		errno = 0;
		long value = strtol(eq + 1, &end, 0);
		if (errno || end == eq + 1 || *end != '\0' || value < ops->tunables[i].min_value ||
		    value > ops->tunables[i].max_value)
			fatal("LOCKLAB_PARAMS: bad or out-of-range value for '%s'", item);
		params[i] = value;
	}
	free(copy);
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
	if (from_plugin && strcmp(from_plugin->name, name) == 0)
		ops = from_plugin;
	for (size_t i = 0; ops == NULL && i < sizeof(catalogue) / sizeof(catalogue[0]); i++)
		if (strcmp(catalogue[i]->name, name) == 0)
			ops = catalogue[i];
	if (ops == NULL)
		fatal("unknown lock '%s' in LOCKLAB_LOCK (locklab-bench --list shows them)", name);
	if (ops->lock == NULL || ops->unlock == NULL || ops->lock_size == 0)
		fatal("lock '%s' cannot stand in for a mutex (needs lock, unlock, a size)", name);
	parse_params(getenv("LOCKLAB_PARAMS"));

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

	if (strcmp(ops->name, "pthread_mutex") == 0 && ops != from_plugin) {
		mode = MODE_PASS; /* forward everything; the table only when statistics are asked */
		return;
	}
	/* Try the lock once now, so a bad parameter fails before main, not in the middle. */
	void *probe = aligned_alloc(LOCKLAB_CACHELINE,
				    (ops->lock_size + LOCKLAB_CACHELINE - 1) & ~(size_t)(LOCKLAB_CACHELINE - 1));
	memset(probe, 0, ops->lock_size);
	int err = ops->init ? ops->init(probe, &init_args) : 0;
	if (err != 0)
		fatal("lock '%s' refused its parameters or LOCKLAB_MAX_THREADS", ops->name);
	if (ops->destroy)
		ops->destroy(probe);
	free(probe);
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

static inline struct mutex_entry *entry_lookup(const void *addr)
{
	/* Acquire: pairs with the release that published the entry (entry_get). */
	for (struct mutex_entry *e = __atomic_load_n(&table[table_hash(addr)], __ATOMIC_ACQUIRE);
	     e != NULL; e = e->next)
		if (e->addr == addr)
			return e;
	return NULL;
}

static u32 classify(const pthread_mutex_t *m, int *glibc_kind)
{
	int kind = m->__data.__kind;
	*glibc_kind = kind;
	if (mode == MODE_PASS)
		return ENTRY_PASS;
	if ((kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE ||
	    (kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_ERRORCHECK ||
	    (kind & (KIND_ROBUST | KIND_PRIO_INHERIT | KIND_PRIO_PROTECT | KIND_PSHARED)))
		return ENTRY_PASS;
	return ENTRY_LAB; /* normal, default and adaptive mutexes */
}

/*
 * Set while a lock's init or destroy runs (under table_mutex): a lock built on the C library's
 * (pthread_mutex_pi) calls pthread_mutex_init/destroy, which must then go straight to glibc.
 */
static __thread bool in_lab_setup __attribute__((tls_model("initial-exec")));

/*
 * Set once a lock leaves a node in a thread's lock_private after unlock (CLH, ck_clh: the
 * predecessor's node, which may be the one the lock allocated at init). Such a lock's destroy
 * would free a node a thread now owns, so it is skipped: one node leaks per destroyed mutex.
 */
static bool nodes_migrate;

static void lab_destroy(struct mutex_entry *e)
{
	if (ops->destroy && !__atomic_load_n(&nodes_migrate, __ATOMIC_RELAXED)) {
		in_lab_setup = true;
		ops->destroy(e->lab);
		in_lab_setup = false;
	}
}

static void lab_init(struct mutex_entry *e)
{
	memset(e->lab, 0, ops->lock_size);
	e->occupancy = 0;
	e->owner = NULL;
	in_lab_setup = true;
	int err = ops->init ? ops->init(e->lab, &init_args) : 0;
	in_lab_setup = false;
	if (err != 0)
		fatal("lock '%s' failed to initialise a mutex", ops->name);
}

/* The entry of `m`; (re)built when `fresh` (pthread_mutex_init) or after a destroy. */
static struct mutex_entry *entry_get(pthread_mutex_t *m, bool fresh)
{
	struct mutex_entry *e = entry_lookup(m);
	if (likely(e != NULL && !fresh && __atomic_load_n(&e->live, __ATOMIC_ACQUIRE)))
		return e;
	real.mutex_lock(&table_mutex);
	e = entry_lookup(m);
	if (e == NULL) {
		size_t head = (sizeof(*e) + LOCKLAB_CACHELINE - 1) & ~(size_t)(LOCKLAB_CACHELINE - 1);
		size_t body = (ops->lock_size + LOCKLAB_CACHELINE - 1) &
			      ~(size_t)(LOCKLAB_CACHELINE - 1);
		e = aligned_alloc(LOCKLAB_CACHELINE, head + body);
		if (e == NULL)
			fatal("%s", "out of memory for a mutex");
		memset(e, 0, head);
		e->addr = m;
		e->lab = (char *)e + head;
		e->kind = classify(m, &e->glibc_kind);
		if (e->kind == ENTRY_LAB)
			lab_init(e);
		e->live = 1;
		size_t b = table_hash(m);
		e->next = table[b];
		__atomic_store_n(&table[b], e, __ATOMIC_RELEASE);
	} else if (fresh || !e->live) {
		/* pthread_mutex_init again (memory reused) or use after destroy: start afresh. */
		if (e->kind == ENTRY_LAB && e->live)
			lab_destroy(e);
		e->kind = classify(m, &e->glibc_kind);
		if (e->kind == ENTRY_LAB)
			lab_init(e);
		__atomic_store_n(&e->live, 1, __ATOMIC_RELEASE);
	}
	real.mutex_unlock(&table_mutex);
	return e;
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

static inline void lab_lock(struct mutex_entry *e, struct lock_thread *self)
{
	if (ops->trylock == NULL)
		__atomic_fetch_add(&e->occupancy, 1, __ATOMIC_SEQ_CST);
	ops->lock(e->lab, self);
}

static inline bool lab_trylock(struct mutex_entry *e, struct lock_thread *self)
{
	if (ops->trylock != NULL)
		return ops->trylock(e->lab, self);
	/* Nobody is in lock(), holds, or is in unlock(): the lock is free and lock() won't wait. */
	u32 zero = 0;
	if (!__atomic_compare_exchange_n(&e->occupancy, &zero, 1, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_RELAXED))
		return false;
	ops->lock(e->lab, self);
	return true;
}

static inline void lab_unlock(struct mutex_entry *e, struct lock_thread *self)
{
	ops->unlock(e->lab, self);
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

/* Lock `m` (deadline NULL: wait for ever). Returns 0, ETIMEDOUT or EINVAL. */
static int do_lock(pthread_mutex_t *m, clockid_t clock, const struct timespec *deadline)
{
	struct mutex_entry *e = entry_get(m, false);
	if (e->kind == ENTRY_PASS) {
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
			long left_ns = 0, backoff_ns = 1000;
			contended = true;
			if (!timespec_valid(deadline)) {
				slot_put(&s->lt);
				return EINVAL;
			}
			for (;;) {
				if (deadline_passed(clock, deadline, &left_ns)) {
					if (lab_trylock(e, &s->lt))
						break;
					slot_put(&s->lt);
					return ETIMEDOUT;
				}
				struct timespec nap = { 0, backoff_ns < left_ns ? backoff_ns : left_ns };
				nanosleep(&nap, NULL);
				if (backoff_ns < 1000000)
					backoff_ns *= 2;
				if (lab_trylock(e, &s->lt))
					break;
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
	if (e == NULL || e->kind == ENTRY_PASS)
		return real.mutex_unlock(m);
	struct lock_thread *owner = e->owner;
	if (owner == NULL)
		return EPERM; /* not locked */
	e->owner = NULL;
	lab_unlock(e, owner);
	if (unlikely(owner->lock_private != NULL) && !__atomic_load_n(&nodes_migrate, __ATOMIC_RELAXED))
		__atomic_store_n(&nodes_migrate, true, __ATOMIC_RELAXED);
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
		if (e != NULL && e->live) {
			if (e->kind == ENTRY_LAB && e->owner != NULL)
				return EBUSY;
			real.mutex_lock(&table_mutex);
			if (e->kind == ENTRY_LAB)
				lab_destroy(e);
			__atomic_store_n(&e->live, 0, __ATOMIC_RELEASE);
			real.mutex_unlock(&table_mutex);
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
	if (e->kind == ENTRY_PASS) {
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

static void atfork_child(void)
{
	real.mutex_init(&pool_mutex, NULL);
	real.mutex_init(&table_mutex, NULL);
	if (mode != MODE_LAB)
		return;
	/*
	 * The other threads are gone. A lab lock this thread holds may have their queue nodes
	 * behind it: rebuild it, held by us again, so unlocking it in the child cannot hand it to
	 * a thread that does not exist. (A lock another thread held stays held, as glibc's does.)
	 */
	for (size_t b = 0; b < (1u << TABLE_BITS); b++)
		for (struct mutex_entry *e = table[b]; e != NULL; e = e->next) {
			struct lock_thread *owner = e->owner;
			if (!e->live || e->kind != ENTRY_LAB || owner == NULL || !slot_is_mine(owner))
				continue;
			lab_destroy(e);
			lab_init(e);
			lab_lock(e, owner);
			e->owner = owner;
		}
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
	if (e->kind == ENTRY_LAB)
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

__attribute__((destructor)) static void interpose_stats(void)
{
	if (!stats_wanted || __atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
		return;
	size_t n = 0, cap = 1024;
	struct mutex_entry **all = malloc(cap * sizeof(*all));
	u64 seen = 0, acq = 0, cont = 0, pass_seen = 0, pass_acq = 0, recursive = 0, errorcheck = 0;
	for (size_t b = 0; b < (1u << TABLE_BITS); b++)
		for (struct mutex_entry *e = __atomic_load_n(&table[b], __ATOMIC_ACQUIRE); e;
		     e = e->next) {
			u64 a = __atomic_load_n(&e->acquisitions, __ATOMIC_RELAXED);
			if (e->kind == ENTRY_PASS) {
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
	/*
	 * A process that used no mutex (a wrapper such as timeout(1), which inherits LD_PRELOAD)
	 * writes nothing, so it cannot overwrite the program's file; "%p" in the path is the pid.
	 */
	if (n == 0) {
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
	fprintf(out, "  \"lock_contexts\": %u,\n  \"hottest\": [", nslots_made);
	for (size_t i = 0; i < n && i < HOTTEST; i++)
		fprintf(out, "%s\n    {\"address\": \"%p\", \"kind\": \"%s\", \"acquisitions\": %llu, "
			     "\"contended_acquisitions\": %llu}",
			i ? "," : "", all[i]->addr, kind_name(all[i]),
			(unsigned long long)__atomic_load_n(&all[i]->acquisitions, __ATOMIC_RELAXED),
			(unsigned long long)__atomic_load_n(&all[i]->contended, __ATOMIC_RELAXED));
	fprintf(out, "\n  ]\n}\n");
	fclose(out);
	free(all);
}
