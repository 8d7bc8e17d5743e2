/* SPDX-License-Identifier: MIT */
/*
 * The side tables that map a pthread object's address to its lab lock, and the pool of slots
 * (a thread's lock contexts) and thread contexts those locks are taken with.
 */
#include <stdlib.h>
#include <string.h>

#include "interpose.h"

pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
/*
 * All slots, made before main: a sleeping lock's spinner reads its owner's task through the
 * owner word, which is stored without release (as the kernel's), so a slot's memory must
 * be initialised before any thread that could read it starts (pthread_create orders that).
 */
static struct slot *all_slots;
struct slot **free_slots;
unsigned int nfree_slots, nslots_made;
static unsigned int max_slots;
struct thread_ctx *all_ctx;
__thread struct thread_ctx *my_ctx __attribute__((tls_model("initial-exec")));
static pthread_key_t ctx_key;

/* ---- slots and thread contexts -------------------------------------------------------------- */

/* configure(): the pool of `n` slots (LOCKLAB_MAX_THREADS), all made now (see all_slots). */
void slot_pool_create(unsigned int n)
{
	max_slots = n;
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
}

/* The waiting policy's counts (wait.h), summed over every slot the pool has. */
void slot_wait_counts(unsigned long *parks, unsigned long *wakes)
{
	*parks = *wakes = 0;
	for (unsigned int i = 0; all_slots != NULL && i < max_slots; i++) {
		*parks += __atomic_load_n(&all_slots[i].lt.parks, __ATOMIC_RELAXED);
		*wakes += __atomic_load_n(&all_slots[i].lt.wakes, __ATOMIC_RELAXED);
	}
}

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

/* thread_ctx()'s slow path: the thread's first lock. */
struct thread_ctx *thread_ctx_create(void)
{
	struct thread_ctx *ctx = calloc(1, sizeof(*ctx));
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

/* initialise(): ctx_release runs at each thread's exit. */
void ctx_key_create(void) { pthread_key_create(&ctx_key, ctx_release); }

struct slot *slot_take(void)
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

/* ---- the side table ------------------------------------------------------------------------- */

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

__thread bool in_lab_setup __attribute__((tls_model("initial-exec"))); /* see interpose.h */

/* A live ENTRY_LAB's lab lock, destroyed by the catalogue lock's own destroy. */
void side_lab_destroy(struct side_table *t, struct side_entry *e)
{
	const struct lock_ops *o = *t->ops;
	if (o->destroy && !__atomic_load_n(&t->nodes_migrate, __ATOMIC_RELAXED)) {
		in_lab_setup = true;
		o->destroy(e->lab);
		in_lab_setup = false;
	}
}

/* side_get's slow path: build the entry, or start it afresh. */
struct side_entry *side_build(struct side_table *t, const void *addr, bool fresh)
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

/* The object's destroy: its lab lock goes, and the entry waits to be initialised again. */
void side_retire(struct side_table *t, struct side_entry *e)
{
	real.mutex_lock(&table_mutex);
	if (e->kind == ENTRY_LAB)
		side_lab_destroy(t, e);
	__atomic_store_n(&e->live, 0, __ATOMIC_RELEASE);
	real.mutex_unlock(&table_mutex);
}

/* A catalogue lock's own init, for a mutex's or a rwlock's entry. */
void lab_lock_init(const struct lock_ops *o, const struct lock_init_args *args, void *lab,
		   const char *failure_format)
{
	memset(lab, 0, o->lock_size);
	in_lab_setup = true;
	int err = o->init ? o->init(lab, args) : 0;
	in_lab_setup = false;
	if (err != 0)
		fatal(failure_format, o->name);
}
