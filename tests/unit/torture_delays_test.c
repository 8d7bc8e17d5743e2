/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of native/engine/torture_delays.c (--torture-delays): torture_random() is
 * kernel/torture.c's generator, and every torture type's drawn delays come with the
 * probabilities of Linux 6.1's kernel/locking/locktorture.c, for several numbers of threads.
 *
 * Statistical checks draw millions of times and allow 6 standard deviations of a binomial
 * count (plus one), so a correct draw fails about once in 10^9 runs; the mistakes they are
 * meant to catch (a factor 2 in a probability, a wrong branch) are off by far more.
 *
 * Exit status 0 when every check holds; each failure prints one line.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../native/engine/torture_delays.c"

#include "check.h"

static uint64_t no_refresh(void) { return 0; }

/* kernel/torture.c: the LCG, swahw32(), and the refresh every 10000 draws. */
static void test_torture_random_is_the_kernels(void)
{
	struct torture_random_state trs = { 0, 0, no_refresh };
	uint64_t state = 0;
	for (int i = 0; i < 25000; i++) {
		state = state * 39916801ul + 479001701ul;
		uint32_t low = (uint32_t)state;
		uint32_t expected = ((low & 0xffff) << 16) | ((low & 0xffff0000) >> 16);
		uint32_t got = torture_random(&trs);
		if (got != expected) {
			CHECK(got == expected, "draw %d: %u, expected %u", i, got, expected);
			return;
		}
	}
	/* A NULL refresh hook adds nothing, as a refresh returning 0. */
	struct torture_random_state a = { 7, 0, no_refresh }, b = { 7, 0, NULL };
	for (int i = 0; i < 30000; i++)
		CHECK(torture_random(&a) == torture_random(&b), "a NULL hook must add nothing");
}

static unsigned int refreshes;
static uint64_t counting_refresh(void)
{
	refreshes++;
	return 12345;
}

static void test_refresh_period(void)
{
	struct torture_random_state trs = { 0, 0, counting_refresh };
	refreshes = 0;
	for (int i = 0; i < 30001; i++)
		torture_random(&trs);
	/* Draws 1, 10002, 20003: count starts at 0, goes below 0 at the first draw. */
	CHECK(refreshes == 3, "%u refreshes in 30001 draws, expected 3 (one per 10000 + 1)",
	      refreshes);
}

static void check_count(const char *what, const char *type, unsigned int n, uint64_t count,
			uint64_t draws, double p)
{
	double mean = (double)draws * p;
	double sigma = sqrt((double)draws * p * (1 - p));
	double deviation = fabs((double)count - mean);
	CHECK(deviation <= 6 * sigma + 1,
	      "%s n=%u: %llu %s in %llu draws, expected %.1f +- %.1f (6 sigma)", type, n,
	      (unsigned long long)count, what, (unsigned long long)draws, mean, 6 * sigma);
}

/* One role of one type: the shares of long, short and preempt, and their independence. */
static void check_distribution(const char *type, const struct torture_delay_spec *spec,
			       unsigned int n, uint64_t draws)
{
	struct torture_random_state trs;
	torture_random_init(&trs, 1, n);
	uint64_t n_long = 0, n_short = 0, n_preempt = 0, n_both = 0, bad_delay = 0;
	for (uint64_t i = 0; i < draws; i++) {
		struct torture_draw d = torture_draw_delay(spec, &trs, n);
		n_long += d.long_delay;
		n_short += d.short_delay;
		n_preempt += d.preempt;
		n_both += d.long_delay && d.short_delay;
		uint64_t expected = (d.long_delay ? spec->long_ns : 0) +
				    (d.short_delay ? spec->short_ns : 0);
		bad_delay += d.delay_ns != expected;
	}
	CHECK(bad_delay == 0, "%s: %llu draws whose delay is not the sum of their branches", type,
	      (unsigned long long)bad_delay);
	double p_long = torture_long_probability(spec, n);
	double p_short = torture_short_probability(spec, n);
	check_count("long delays", type, n, n_long, draws, p_long);
	check_count("short delays", type, n, n_short, draws, p_short);
	check_count("preemption points", type, n, n_preempt, draws,
		    torture_preempt_probability(spec, n));
	if (spec->short_one_in) /* independent draws: both happen together too */
		check_count("long+short", type, n, n_both, draws, p_long * p_short);
	else
		CHECK(n_both == 0, "%s: the short delay is the else branch, never with the long",
		      type);
}

/* locktorture.c's constants, written out once more, independently of the table. */
static void test_probabilities_are_locktortures(void)
{
	const struct torture_profile *spin = torture_profile_find("spin_lock");
	const struct torture_profile *rt = torture_profile_find("rtmutex_lock");
	const struct torture_profile *mutex = torture_profile_find("mutex_lock");
	const struct torture_profile *rwsem = torture_profile_find("rwsem_lock");
	CHECK(spin && rt && mutex && rwsem, "a torture type is missing");
	if (!(spin && rt && mutex && rwsem))
		return;
	for (unsigned int n = 1; n <= 8; n *= 2) {
		CHECK(torture_long_probability(spin->writer, n) == 1.0 / (n * 2000.0 * 100),
		      "spin_lock long");
		CHECK(torture_short_probability(spin->writer, n) == 1.0 / (n * 2.0 * 2),
		      "spin_lock short");
		CHECK(torture_preempt_probability(spin->writer, n) == 1.0 / (n * 20000.0),
		      "spin_lock preempt");
		CHECK(torture_long_probability(mutex->writer, n) == 1.0 / (n * 200000.0),
		      "mutex_lock long");
		CHECK(torture_short_probability(mutex->writer, n) == 1.0 - 1.0 / (n * 200000.0),
		      "mutex_lock short");
		CHECK(torture_long_probability(rwsem->reader, n) == 1.0 / (n * 200000.0),
		      "rwsem_lock reader long");
	}
	CHECK(spin->writer->long_ns == 100000000 && spin->writer->short_ns == 2000,
	      "spin_lock: mdelay(100), udelay(2)");
	CHECK(rt->writer == spin->writer && rt->rt_boost && !spin->rt_boost,
	      "rtmutex_lock: spin_lock's delays, and the boost");
	CHECK(mutex->writer->long_ns == 500000000 && mutex->writer->short_ns == 20000000,
	      "mutex_lock: mdelay(500) else mdelay(20)");
	CHECK(rwsem->writer->long_ns == 1000000000 && rwsem->writer->short_ns == 10000000,
	      "rwsem_lock writer: mdelay(1000) else mdelay(10)");
	CHECK(rwsem->reader->long_ns == 200000000 && rwsem->reader->short_ns == 50000000,
	      "rwsem_lock reader: mdelay(200) else mdelay(50)");
	CHECK(spin->reader == NULL && mutex->reader == NULL, "spin_lock, mutex_lock: no readers");
	CHECK(torture_profile_find("spin") == NULL && torture_profile_find("") == NULL,
	      "only whole type names");
}

/* torture_rtmutex_boost(): one in n*50000 up, one in n*100000 back down. */
static void test_boost(void)
{
	const uint64_t draws = 20000000;
	for (unsigned int n = 1; n <= 2; n++) {
		struct torture_random_state trs;
		torture_random_init(&trs, 3, n);
		uint64_t up = 0, down = 0;
		for (uint64_t i = 0; i < draws; i++) {
			up += torture_draw_boost(&trs, n, false) == 1;
			down += torture_draw_boost(&trs, n, true) == -1;
		}
		check_count("boosts", "rtmutex_lock", n, up, draws, 1.0 / (n * 50000.0));
		check_count("unboosts", "rtmutex_lock", n, down, draws, 1.0 / (n * 100000.0));
	}
	struct torture_random_state trs;
	torture_random_init(&trs, 3, 0);
	uint64_t sleeps = 0;
	for (uint64_t i = 0; i < draws; i++)
		sleeps += torture_draw_sleep(&trs);
	check_count("jiffy sleeps", "writer loop", 1, sleeps, draws, 1.0 / 1048576.0);
}

/* torture_count_hold(): the window's holds, and a long one begun in the warm-up and still
 * held when the window opened (once, not its acquisition); none begun after the stop. */
static void test_a_long_hold_into_the_window_counts(void)
{
	const struct torture_draw held = { 100 * MS, true, false, false };
	struct worker w;
	memset(&w, 0, sizeof(w));
	torture_count_hold(&w, &held, false, 0, CONTROL_MEASURE);
	CHECK(w.torture_long == 1 && w.torture_long_before_window == 1 && w.torture_draws == 0,
	      "a hold from the warm-up into the window: %llu long (%llu before), %llu draws, "
	      "expected 1 (1), 0", (unsigned long long)w.torture_long,
	      (unsigned long long)w.torture_long_before_window, (unsigned long long)w.torture_draws);
	memset(&w, 0, sizeof(w));
	torture_count_hold(&w, &held, false, 0, CONTROL_MEASURE | CONTROL_STOP);
	CHECK(w.torture_long == 1, "a hold over the whole window must count, once");
	memset(&w, 0, sizeof(w));
	torture_count_hold(&w, &held, false, 0, 0);
	torture_count_hold(&w, &held, false, CONTROL_MEASURE | CONTROL_STOP,
			   CONTROL_MEASURE | CONTROL_STOP);
	CHECK(w.torture_long == 0, "a hold that ends in the warm-up or begins after the stop "
	      "must not count (%llu long)", (unsigned long long)w.torture_long);
	torture_count_hold(&w, &held, true, CONTROL_MEASURE, CONTROL_MEASURE);
	CHECK(w.torture_long == 1 && w.torture_draws == 1 && w.torture_long_before_window == 0,
	      "a hold begun in the window counts as before");
}

int main(void)
{
	test_a_long_hold_into_the_window_counts();
	test_torture_random_is_the_kernels();
	test_refresh_period();
	test_probabilities_are_locktortures();
	const char *types[] = { "spin_lock", "lock_busted", "rw_lock", "mutex_lock",
				"rwsem_lock" };
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		const struct torture_profile *p = torture_profile_find(types[t]);
		for (unsigned int n = 1; n <= 4; n *= 2) {
			/* The long delay is the rarest branch: 40 M draws see ~200/n of them. */
			uint64_t draws = n == 1 ? 40000000 : 8000000;
			check_distribution(p->name, p->writer, n, draws);
			if (p->reader)
				check_distribution(p->name, p->reader, n, draws / 4);
		}
	}
	test_boost();
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	printf("torture_delays: all checks passed\n");
	return 0;
}
