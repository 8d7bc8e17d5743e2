/* SPDX-License-Identifier: MIT */
/*
 * The statistics written at exit (LOCKLAB_STATS): per-mutex counts from the side tables, the
 * rwlocks' totals, and the hottest mutexes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <locklab/wait.h>

#include "interpose.h"

#define HOTTEST 10 /* mutexes listed one by one, most acquired first */

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

/* The waiting policy, and the parks and wake-ups of every lock context (wait.h counts them). */
static void write_wait_stats(FILE *out)
{
	unsigned long parks, wakes;
	long policy = configured_wait_policy();
	slot_wait_counts(&parks, &wakes);
	if (policy < 0)
		fprintf(out, "  \"waiting\": {\"policy\": null, ");
	else
		fprintf(out, "  \"waiting\": {\"policy\": \"%s\", ", lock_wait_policy_names[policy]);
	fprintf(out, "\"parks\": %lu, \"wakes\": %lu},\n", parks, wakes);
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
	write_wait_stats(out);
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
