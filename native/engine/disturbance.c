/* SPDX-License-Identifier: MIT */
/*
 * disturbance.c - what the machine did to a run besides the lock: the hypervisor's steal time
 * on the CPUs the run used, and the hardware cache misses of the measuring threads.
 *
 * Both are read outside the measured loop: steal by the control loop when it opens and closes
 * the window, the cache-miss counter by each thread when it sees the window open and the stop
 * (worker_handle_control), next to its rusage snapshot.
 *
 * Steal: the eighth value of each "cpuN" line of /proc/stat, in USER_HZ ticks (proc(5)): time
 * the hypervisor ran something else while this virtual CPU wanted to run. Its increase over the
 * window, summed over the CPUs the threads ran on (pinned: their CPUs; unpinned: every CPU this
 * process may use), divided by window x those CPUs, is the share of the run's CPU time taken.
 *
 * Cache misses: perf_event_open(2), PERF_TYPE_HARDWARE / PERF_COUNT_HW_CACHE_MISSES, one counter
 * per thread (pid 0, any CPU), user and kernel as permitted. Where the machine has no PMU (many
 * VMs: the call fails with ENOENT) or perf_event_paranoid forbids it, the figure is null and
 * the reason is the failing call and its error.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine.h"

static bool run_uses_cpu(const struct run_state *run, int cpu)
{
	bool pinned = false;
	for (int i = 0; i < run->cpu_slot_count; i++) {
		if (run->cpu_of_slot[i] >= 0)
			pinned = true;
		if (run->cpu_of_slot[i] == cpu)
			return true;
	}
	if (pinned)
		return false;
	for (int i = 0; i < run->facts->cpus_allowed; i++)
		if (run->facts->allowed[i].cpu == cpu)
			return true;
	return false;
}

bool steal_read(const struct run_state *run, struct steal_sample *out)
{
	memset(out, 0, sizeof(*out));
#ifdef LOCKLAB_SIM
	(void)run;
	return false; /* the host's steal says nothing of virtual CPUs */
#endif
	FILE *f = fopen("/proc/stat", "r");
	char line[512];
	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f)) {
		int cpu;
		unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
		if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
			continue;
		/* Kernels before 2.6.11 have no steal column: then the line does not count. */
		if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice,
			   &system, &idle, &iowait, &irq, &softirq, &steal) != 9)
			continue;
		if (!run_uses_cpu(run, cpu))
			continue;
		out->ticks += steal;
		out->cpus++;
	}
	fclose(f);
	return out->cpus > 0;
}

double steal_fraction(const struct steal_sample *start, const struct steal_sample *end,
		      double window_s)
{
	long hz = sysconf(_SC_CLK_TCK);
	if (start->cpus == 0 || end->cpus != start->cpus || window_s <= 0 || hz <= 0)
		return -1;
	double stolen_s = (double)(end->ticks - start->ticks) / (double)hz;
	double fraction = stolen_s / (window_s * start->cpus);
	return fraction > 1 ? 1 : fraction;
}

int cache_miss_counter_open(char *reason, size_t size)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_CACHE_MISSES;
	attr.exclude_hv = 1;
	/* pid 0, cpu -1: this thread, wherever it runs. No glibc wrapper exists (the man page). */
	long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		attr.exclude_kernel = 1; /* perf_event_paranoid 2: user space only */
		fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	}
	if (fd < 0) {
		snprintf(reason, size, "perf_event_open: %s", strerror(errno));
		return -1;
	}
	return (int)fd;
}

bool cache_miss_counter_read(int fd, uint64_t *value)
{
	return fd >= 0 && read(fd, value, sizeof(*value)) == (ssize_t)sizeof(*value);
}
