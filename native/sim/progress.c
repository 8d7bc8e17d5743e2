/* SPDX-License-Identifier: MIT */
/*
 * progress.c - the simulator's limit on host time without progress.
 *
 * Virtual time can crawl: waiters that keep a line bouncing make every poll a transfer, and
 * every transfer costs hand-overs of host time, so the virtual watchdog (--watchdog, in
 * virtual seconds) can lie hours of host time away. So the runtime also bounds the host time
 * a run may spend without an acquisition. The engine's control thread says how many
 * acquisitions it has seen at each of its ticks (locklab_sim_progress); the runtime reads the
 * host clock every SIM_PROGRESS_CHECK_EVERY hand-overs, a cost lost among theirs. Once the
 * limit has passed it wakes the control thread, whose watchdog ends the run with this
 * runtime's line as its reason (a run whose virtual time stands still ends the same way).
 *
 * The rule: no acquisition for SIM_PROGRESS_BASE_S host CPU seconds plus
 * SIM_PROGRESS_PER_THREAD_S per simulated thread (each virtual CPU adds hand-overs to every
 * transfer); LOCKLAB_SIM_PROGRESS_S=N sets N seconds instead, and 0 turns the limit off.
 * CPU time, not the wall clock: a sweep runs several simulations side by side, and a host
 * loaded by others gives each less of a CPU, which must not read as a stall.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime.h"

#define SIM_PROGRESS_BASE_S 30.0
#define SIM_PROGRESS_PER_THREAD_S 1.0
#define SIM_PROGRESS_CHECK_EVERY 4096

static double limit_override_s = -1; /* < 0: none, the rule applies */
static bool armed;                   /* from the control thread's first tick */
static bool stalled;
static uint64_t acquisitions_seen;
static double seen_at_s; /* host CPU seconds when the count last changed */
static unsigned int handovers;
static char reason[256];

void sim_progress_init(void)
{
	const char *text = getenv("LOCKLAB_SIM_PROGRESS_S");
	if (text == NULL || *text == '\0')
		return;
	char *end;
	double value = strtod(text, &end);
	if (*end != '\0' || !(value >= 0) || value > 1e9)
		sim_fatal("LOCKLAB_SIM_PROGRESS_S is host seconds without an acquisition (0: no "
			  "limit), not '%s'", text);
	limit_override_s = value;
}

static double host_cpu_s(void)
{
	/* The C library's own: clock_gettime() here is the virtual clock (intercept.c). */
	static int (*host)(clockid_t, struct timespec *);
	if (host == NULL)
		host = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	struct timespec now;
	if (host == NULL || host(CLOCK_PROCESS_CPUTIME_ID, &now) != 0)
		sim_fatal("cannot read the process's CPU time");
	return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static double limit_s(void)
{
	if (limit_override_s >= 0)
		return limit_override_s;
	int simulated = 0;
	for (int i = 0; i < sim_thread_count(); i++)
		simulated += sim_thread_at(i)->counted;
	return SIM_PROGRESS_BASE_S + SIM_PROGRESS_PER_THREAD_S * simulated;
}

const char *locklab_sim_progress(uint64_t acquisitions)
{
	if (stalled)
		return reason;
	if (!armed || acquisitions != acquisitions_seen) {
		armed = true;
		acquisitions_seen = acquisitions;
		seen_at_s = host_cpu_s();
	}
	return NULL;
}

/* The control thread (the first, sim_runtime_init's), woken now from a timed wait. */
static void wake_the_control_thread(void)
{
	struct sim_thread *control = sim_thread_at(0);
	bool timed = control->state == SIM_SLEEPING || control->state == SIM_JOIN_WAIT ||
		     control->state == SIM_FUTEX_WAIT;
	if (!timed || control->wake_at == SIM_FOREVER)
		return; /* running, or waiting without a timeout: it sees the stall when it looks */
	uint64_t now = sim_self->clock > control->clock ? sim_self->clock : control->clock;
	if (control->wake_at > now) {
		control->wake_at = now;
		sim_thread_requeue(control);
	}
}

void sim_progress_check(void)
{
	if (!armed || stalled || ++handovers % SIM_PROGRESS_CHECK_EVERY != 0)
		return;
	double limit = limit_s();
	double idle = host_cpu_s() - seen_at_s;
	if (limit == 0 || idle < limit)
		return;
	stalled = true;
	int used = snprintf(reason, sizeof(reason),
			    "no progress for %.3g host s at virtual time %.6f s (the simulator's "
			    "limit: %g host CPU s without an acquisition, ",
			    idle, sim_cycles_to_ns(sim_self->clock) * 1e-9, limit);
	if (limit_override_s >= 0)
		snprintf(reason + used, sizeof(reason) - (size_t)used, "LOCKLAB_SIM_PROGRESS_S)");
	else
		snprintf(reason + used, sizeof(reason) - (size_t)used,
			 "%g s + %g s per simulated thread)", SIM_PROGRESS_BASE_S,
			 SIM_PROGRESS_PER_THREAD_S);
	wake_the_control_thread();
}
