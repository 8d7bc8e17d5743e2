/* SPDX-License-Identifier: MIT */
/*
 * Configuration and start-up: LOCKLAB_* read once before main, the lock found in the catalogue
 * or a plugin, the C library's own pthread functions found, fatal() for a bad value.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <locklab/tunable.h>
#include <locklab/wait.h>

#include "interpose.h"

#define LOCK(ops) extern const struct lock_ops ops;
#include "../locks/registry.def"
#undef LOCK

static const struct lock_ops *const catalogue[] = {
#define LOCK(ops) &ops,
#include "../locks/registry.def"
#undef LOCK
};

#define MAX_TUNABLES_HERE 16
#define DEFAULT_MAX_THREADS 512

struct real_functions real;

/* What LOCKLAB_* chose (interpose.h); `mode` is set last, and other threads wait for it. */
int mode;
bool stats_wanted;
const char *stats_path;
const struct lock_ops *ops;
static long params[MAX_TUNABLES_HERE];
struct lock_init_args init_args;

int rw_mode;
const struct lock_ops *rw_ops;
static long rw_params[MAX_TUNABLES_HERE];
struct lock_init_args rw_init_args;
bool mutex_lock_is_libc_rwlock;

void fatal(const char *fmt, const char *arg)
{
	fputs("locklab-interpose: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	_exit(2);
}

/* ---- finding the C library's functions ------------------------------------------------------ */

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

/* ---- configuration -------------------------------------------------------------------------- */

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

/* The index of o's tunable `name`, or -1. */
static long tunable_index(const struct lock_ops *o, const char *name)
{
	for (size_t i = 0; i < tunable_count(o); i++)
		if (strcmp(o->tunables[i].name, name) == 0)
			return (long)i;
	return -1;
}

/*
 * The waiting policy (wait.h) of a lock that has one: spin-then-park unless LOCKLAB_WAIT
 * names another, because real programs run more threads than CPUs and a spinning waiter
 * then burns the time slice its lock's owner needs. LOCKLAB_PARAMS, read after, may set it too.
 * LOCKLAB_WAIT names the mutexes' policy: a lock without one there is an error, while the
 * rwlocks' lock (LOCKLAB_RWLOCK) may be one that sleeps.
 */
static void configure_wait(const struct lock_ops *o, long *out, bool for_mutexes)
{
	const char *text = getenv("LOCKLAB_WAIT");
	long i = tunable_index(o, "wait");
	char line[512];

	if (i < 0) {
		if (for_mutexes && text != NULL && *text != '\0') {
			snprintf(line, sizeof(line), "LOCKLAB_WAIT: lock '%s' has no waiting policy "
				 "(its waiters sleep, or it is not ours)", o->name);
			fatal("%s", line);
		}
		return;
	}
	out[i] = LOCK_WAIT_PARK;
	if (text != NULL && *text != '\0' && lock_tunable_parse(&o->tunables[i], text, &out[i])) {
		snprintf(line, sizeof(line), "LOCKLAB_WAIT: '%s' is not spin, yield or spin-then-park",
			 text);
		fatal("%s", line);
	}
}

/* The mutexes' lock's waiting policy (enum lock_wait_policy), or -1 when it has none. */
long configured_wait_policy(void)
{
	long i = tunable_index(ops, "wait");
	return mode == MODE_LAB && i >= 0 ? params[i] : -1;
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
	configure_wait(o, out, strcmp(var, "LOCKLAB_PARAMS") == 0);
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
		long i = tunable_index(o, item);
		if (i < 0) {
			snprintf(line, sizeof(line), "%s: the lock has no tunable '%s'", var, item);
			fatal("%s", line);
		}
		if (lock_tunable_parse(&o->tunables[i], eq + 1, &out[i]) != 0) {
			snprintf(line, sizeof(line), "%s: bad or out-of-range value for '%s'", var, item);
			fatal("%s", line);
		}
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

/* LOCKLAB_RWLOCK and its default (see interpose.h). */
static void configure_rwlock(const struct lock_ops *from_plugin)
{
	const char *name = getenv("LOCKLAB_RWLOCK");
	const char *text = getenv("LOCKLAB_RWLOCK_PARAMS");
	rw_init_args.params = rw_params;
	rw_init_args.nthreads = init_args.nthreads;
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
	unsigned int max_threads = DEFAULT_MAX_THREADS;
	if (max_text && *max_text) {
		char *end;
		long v = strtol(max_text, &end, 10);
		if (*end != '\0' || v < 1 || v > 4096)
			fatal("LOCKLAB_MAX_THREADS must be 1..4096, not '%s'", max_text);
		max_threads = (unsigned int)v;
	}
	init_args.params = params;
	init_args.nthreads = max_threads;
	slot_pool_create(max_threads);
	configure_rwlock(from_plugin); /* before `mode` is set: other threads wait for that */

	if (strcmp(ops->name, "pthread_mutex") == 0 && ops != from_plugin) {
		mode = MODE_PASS; /* forward everything; the table only when statistics are asked */
		return;
	}
	probe_lock(ops, &init_args);
	mutex_lock_is_libc_rwlock = strcmp(ops->name, "pthread_rwlock") == 0 && ops != from_plugin;
	mode = MODE_LAB;
}

u32 init_state; /* 0 not started, 1 in progress, 2 done */
__thread bool initialising __attribute__((tls_model("local-dynamic")));

void initialise(void)
{
	u32 expected = 0;
	if (__atomic_compare_exchange_n(&init_state, &expected, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_ACQUIRE)) {
		initialising = true;
		find_real_functions();
		configure();
		ctx_key_create();
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		initialising = false;
		__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
}

__attribute__((constructor)) static void interpose_start(void) { (void)ensure_ready(); }
