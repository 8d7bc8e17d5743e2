/* SPDX-License-Identifier: MIT */
/*
 * watchdog.c - when a run has made no acquisition for --watchdog seconds, and what the host did
 * to its threads meanwhile.
 *
 * The rule, once (progress_stalled): the count of acquisitions has not changed for the limit; a
 * --stutter pause counts as progress. A measured run checks it in a timer signal's handler, not
 * in the control thread's loop: on a loaded host the control thread waits for a CPU like any
 * other, and its own sleep would add to the delay. A POSIX timer (CLOCK_MONOTONIC) raises
 * SIGALRM every WATCHDOG_PERIOD_S (a twentieth of the watchdog, at most 0.1 s). The control
 * thread blocks the signal, so the kernel hands it to a worker, which while a lock spins is on
 * a CPU. The handler only reads the counters and the clock; past the limit it raises the alarm
 * word and wakes the control thread, which writes the report. If the control thread has not
 * answered WATCHDOG_GRACE_S later, the handler writes the watchdog's line itself (write(2)) and
 * ends the process with exit status 3, losing the JSON rather than the verdict. So the watchdog
 * fires within one period of its time whenever the control thread gets a CPU, and within one
 * period plus the grace whenever any thread of the run does.
 *
 * Starved or deadlocked: when the count stops, the control thread notes each worker's CPU time
 * and run-queue wait (/proc/self/task/TID/schedstat: time on a CPU, time runnable but waiting
 * for one). When the watchdog fires it reads them again: a worker that waited for a CPU more
 * than half that span and ran less than STARVED_RAN_SHARE of it may be a preempted holder on a
 * loaded host, so the run is reported as starved, not as a deadlock. Either way the line says
 * how much of the span the threads ran and waited.
 *
 * A simulated run checks the same rule in the control loop in virtual time (run.c): the
 * simulator has no host signals to give.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#define WATCHDOG_PERIOD_MAX_S 0.1
#define WATCHDOG_GRACE_S 1.0
#define STARVED_WAIT_SHARE 0.5
#define STARVED_RAN_SHARE 0.05

bool progress_stalled(struct progress_watch *watch, uint64_t progress, bool paused, double now_s,
		      double limit_s, double *idle_s)
{
	if (paused || progress != watch->seen) {
		watch->seen = progress;
		watch->seen_at_s = now_s;
	}
	*idle_s = now_s - watch->seen_at_s;
	return limit_s > 0 && *idle_s >= limit_s;
}

/* ---- the host's share: schedstat (measured runs) --------------------------------------------- */
#ifndef LOCKLAB_SIM
static bool thread_schedstat(pid_t tid, double *ran_s, double *waited_s)
{
	char path[64], text[128];
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	unsigned long long ran_ns, waited_ns;
	if (got <= 0)
		return false;
	text[got] = '\0';
	if (sscanf(text, "%llu %llu", &ran_ns, &waited_ns) != 2)
		return false;
	*ran_s = (double)ran_ns * 1e-9;
	*waited_s = (double)waited_ns * 1e-9;
	return true;
}

void watchdog_note_tick(struct run_state *run, uint64_t progress)
{
	if (progress != run->stall_progress) {
		run->stall_progress = progress;
		run->stall_noted = false;
		return;
	}
	if (run->stall_noted)
		return;
	run->stall_at_s = monotonic_s();
	run->stall_noted = true;
	for (unsigned int i = 0; i < run->nthreads && run->stall_noted; i++) {
		struct worker *w = run->workers[i];
		run->stall_noted = thread_schedstat(w->tid, &w->stall_ran_s, &w->stall_waited_s);
	}
}

void watchdog_describe_host(struct run_state *run)
{
	double span = monotonic_s() - run->stall_at_s;
	if (!run->stall_noted || span <= 0 || run->nthreads == 0)
		return;
	double ran = 0, waited = 0, worst_waited = -1, worst_ran = 0;
	unsigned int worst = 0;
	for (unsigned int i = 0; i < run->nthreads; i++) {
		const struct worker *w = run->workers[i];
		double r, q;
		if (!thread_schedstat(w->tid, &r, &q))
			return;
		r -= w->stall_ran_s;
		q -= w->stall_waited_s;
		ran += r;
		waited += q;
		if (q > worst_waited) {
			worst = i;
			worst_waited = q;
			worst_ran = r;
		}
	}
	run->watchdog_starved = worst_waited > STARVED_WAIT_SHARE * span &&
				worst_ran < STARVED_RAN_SHARE * span;
	snprintf(run->watchdog_host, sizeof(run->watchdog_host),
		 "in the last %.1f s its threads ran %.0f%% and waited for a CPU %.0f%% of the time, "
		 "thread %u the longest: %.2f s waiting, %.2f s on a CPU",
		 span, 100 * ran / (span * run->nthreads), 100 * waited / (span * run->nthreads),
		 worst, worst_waited, worst_ran);
}

/* ---- the timer ----------------------------------------------------------------------------- */
static struct run_state *watched;
static timer_t timer;
static bool armed;

static char last_words[256]; /* written before the timer starts: the handler only writes it out */
static size_t last_words_length;

static void say_and_leave(void)
{
	if (write(STDERR_FILENO, last_words, last_words_length) < 0)
		_exit(EXIT_WATCHDOG);
	_exit(EXIT_WATCHDOG);
}

static void on_timer(int signal_number)
{
	static int busy;
	(void)signal_number;
	if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		return; /* another thread is in here (a handler preempted for a whole period) */
	int saved_errno = errno;
	struct run_state *run = __atomic_load_n(&watched, __ATOMIC_ACQUIRE);
	if (run == NULL) { /* answered, or over */
		__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
		return;
	}
	uint64_t progress = acquisitions_since_start(run);
	bool paused = __atomic_load_n(&run->control, __ATOMIC_ACQUIRE) & CONTROL_PAUSE;
	double now = monotonic_s(), idle;
	if (progress_stalled(&run->watch, progress, paused, now, run->config->watchdog_s, &idle)) {
		if (!__atomic_load_n(&run->alarm, __ATOMIC_ACQUIRE)) {
			run->alarm_idle_s = idle;
			run->alarm_at_s = now;
			__atomic_store_n(&run->alarm, 1, __ATOMIC_RELEASE);
			syscall(SYS_futex, &run->alarm, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		} else if (now - run->alarm_at_s >= WATCHDOG_GRACE_S) {
			say_and_leave();
		}
	}
	errno = saved_errno;
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

void watchdog_arm(struct run_state *run)
{
	double limit = run->config->watchdog_s;
	run->watch = (struct progress_watch){ acquisitions_since_start(run), monotonic_s() };
	if (limit <= 0)
		return;
	int length = snprintf(last_words, sizeof(last_words),
			      "locklab-bench: watchdog: no acquisition in %g s with lock '%s', and the "
			      "control thread got no CPU to write the report in %g s more: ended "
			      "without it\n",
			      limit, run->config->lock->name, WATCHDOG_GRACE_S);
	last_words_length = length < 0 ? 0
			    : (size_t)length < sizeof(last_words) ? (size_t)length
								   : sizeof(last_words) - 1;
	__atomic_store_n(&watched, run, __ATOMIC_RELEASE);
	struct sigaction action;
	memset(&action, 0, sizeof(action));
	action.sa_handler = on_timer;
	action.sa_flags = SA_RESTART; /* the workers' futex waits and sleeps go on unseen */
	sigemptyset(&action.sa_mask);
	struct sigevent event;
	memset(&event, 0, sizeof(event));
	event.sigev_notify = SIGEV_SIGNAL;
	event.sigev_signo = SIGALRM;
	if (sigaction(SIGALRM, &action, NULL) != 0 ||
	    timer_create(CLOCK_MONOTONIC, &event, &timer) != 0)
		usage_error("the watchdog's timer: %s", strerror(errno));
	double period = limit / 20 < WATCHDOG_PERIOD_MAX_S ? limit / 20 : WATCHDOG_PERIOD_MAX_S;
	struct timespec every = { (time_t)period, (long)((period - (double)(time_t)period) * 1e9) };
	struct itimerspec spec = { every, every };
	if (timer_settime(timer, 0, &spec, NULL) != 0)
		usage_error("the watchdog's timer: %s", strerror(errno));
	armed = true;
	/* The control thread (this one) leaves the signal to the workers, created by now. */
	sigset_t alarm_only;
	sigemptyset(&alarm_only);
	sigaddset(&alarm_only, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alarm_only, NULL);
}

void watchdog_disarm(void)
{
	__atomic_store_n(&watched, NULL, __ATOMIC_RELEASE);
	if (armed)
		timer_delete(timer);
	armed = false;
}

bool watchdog_alarm(struct run_state *run, double *idle_s)
{
	if (!__atomic_load_n(&run->alarm, __ATOMIC_ACQUIRE))
		return false;
	*idle_s = run->alarm_idle_s + (monotonic_s() - run->alarm_at_s);
	return true;
}
#endif
