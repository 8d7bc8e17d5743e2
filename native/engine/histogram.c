/* SPDX-License-Identifier: MIT */
/*
 * histogram.c - log-linear latency histogram (HdrHistogram-like).
 *
 * Values below 2^HIST_SUB_BITS get a bucket each; above, every power of two is split into
 * 2^HIST_SUB_BITS equal sub-buckets, so a percentile is within 1/32 (~3%) of the true value,
 * at a fixed 15 KiB per thread and an O(1) record with no allocation.
 */
#include <string.h>

#include "engine.h"

static unsigned int bucket_of(uint64_t value)
{
	if (value < (1u << HIST_SUB_BITS))
		return (unsigned int)value;
	unsigned int top_bit = 63u - (unsigned int)__builtin_clzll(value);
	unsigned int shift = top_bit - HIST_SUB_BITS;
	unsigned int sub = (unsigned int)(value >> shift) & ((1u << HIST_SUB_BITS) - 1);
	return ((shift + 1) << HIST_SUB_BITS) + sub;
}

/* The smallest value that falls in bucket b (its lower bound). */
static uint64_t bucket_floor(unsigned int b)
{
	if (b < (1u << HIST_SUB_BITS))
		return b;
	unsigned int shift = (b >> HIST_SUB_BITS) - 1;
	uint64_t sub = b & ((1u << HIST_SUB_BITS) - 1);
	return ((1ull << HIST_SUB_BITS) | sub) << shift;
}

void histogram_record(struct histogram *h, uint64_t value)
{
	h->bucket[bucket_of(value)]++;
	h->count++;
	h->sum += (double)value;
	if (value > h->max)
		h->max = value;
}

/* Merge and percentile run only in the report, after the run: the simulator leaves them out of
 * its model, as it does the report's own files (Makefile, SIM_UNMODELLED_SRC). */
__attribute__((no_sanitize_thread)) void histogram_merge(struct histogram *into,
							 const struct histogram *from)
{
	for (unsigned int b = 0; b < HIST_BUCKETS; b++)
		into->bucket[b] += from->bucket[b];
	into->count += from->count;
	into->sum += from->sum;
	if (from->max > into->max)
		into->max = from->max;
}

/* The value at percentile pct (0-100), as the midpoint of its bucket, capped at the max. */
__attribute__((no_sanitize_thread)) uint64_t histogram_percentile(const struct histogram *h,
							    double pct)
{
	if (h->count == 0)
		return 0;
	uint64_t rank = (uint64_t)(pct / 100.0 * (double)h->count + 0.5);
	if (rank < 1)
		rank = 1;
	uint64_t seen = 0;
	for (unsigned int b = 0; b < HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank) {
			uint64_t low = bucket_floor(b);
			uint64_t high = b + 1 < HIST_BUCKETS ? bucket_floor(b + 1) : low;
			uint64_t mid = low + (high - low) / 2;
			return mid < h->max ? mid : h->max;
		}
	}
	return h->max;
}
