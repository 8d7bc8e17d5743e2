/* SPDX-License-Identifier: MIT */
/*
 * events.c - the kernel's own lock event counters (kernel/locking/lock_events.h, since 5.1),
 * for the engine: the tree's locks are built with CONFIG_LOCK_EVENT_COUNTS where the tree has
 * them, as a kernel built to count them is (one per-CPU increment on each counted path), and
 * the engine reads the sums at its window's open and close (LOCKLAB_PLUGIN_EVENTS_SYMBOL). The
 * names are the tree's own list, lock_events_list.h, included here as the kernel's
 * lock_events.c includes it. A tree without them (3.10) counts nothing.
 */
#include <linux/kernel.h>
#include <linux/percpu.h>

#include <stdint.h>

#ifdef CONFIG_LOCK_EVENT_COUNTS
#include "lock_events.h"

DEFINE_PER_CPU(unsigned long, lockevents[lockevent_num]);

static const char *const lock_event_names[lockevent_num] = {
#undef LOCK_EVENT
#define LOCK_EVENT(name) [LOCKEVENT_##name] = #name,
#include "lock_events_list.h"
};
#endif

extern long kshim_percpu_offset[KSHIM_NR_CPUS];

/*
 * Not instrumented: under the simulator the engine's control thread reads the counts while
 * the threads run, and those reads must not move the threads' lines.
 */
__attribute__((visibility("default"), no_sanitize_thread)) unsigned int
locklab_plugin_events(const char **names, uint64_t *counts, unsigned int most)
{
#ifdef CONFIG_LOCK_EVENT_COUNTS
	unsigned int n = lockevent_num < most ? lockevent_num : most;
	for (unsigned int e = 0; e < n; e++) {
		names[e] = lock_event_names[e];
		counts[e] = 0;
		for (int cpu = 0; cpu < KSHIM_NR_CPUS; cpu++)
			if (kshim_percpu_offset[cpu] != 0) /* an id some thread has had */
				counts[e] += *(volatile unsigned long *)per_cpu_ptr(&lockevents[e], cpu);
	}
	return n;
#else
	(void)names;
	(void)counts;
	(void)most;
	return 0;
#endif
}
