/* SPDX-License-Identifier: MIT */
/*
 * The pthread_atfork handlers: the table and pool locks held across fork(), and in the child
 * the lab locks the forking thread holds rebuilt without the threads that are gone.
 */
#include <stdlib.h>

#include "interpose.h"

void atfork_prepare(void)
{
	real.mutex_lock(&table_mutex);
	real.mutex_lock(&pool_mutex);
}

void atfork_parent(void)
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

void atfork_child(void)
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
			mutex_rebuild_for_child(e);
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
