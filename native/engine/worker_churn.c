/* SPDX-License-Identifier: MIT */
/*
 * worker_churn.c - --churn N: a fork-like load. Each writer stands for a client of a mail
 * server that forks a process per mail (seed 001: exim on 3.10, where the anon_vma lock that
 * fork and exit take turned from a mutex into an rw-semaphore). Per mail, the writer creates
 * a thread that takes the lock N times for writing (fork's anon_vma_clone(), then exit's
 * unlink_anon_vmas(), for N = 2), with --gap-ns of its own work between, and ends; the writer
 * waits for it (pthread_join) and starts the next. The thread borrows its writer's context
 * (queue nodes, index): the writer sleeps while it runs, as exim's master waits, so the two
 * never take the lock together. Its acquisitions, context switches and CPU time count as its
 * writer's; a mail under way when --ops is reached ends first.
 */
#include <pthread.h>
#include <sys/resource.h>

#include <locklab/kernel.h>

#include "engine.h"
#include "worker_hot.h"

static void *mail(void *arg)
{
	struct worker *w = arg;
	struct run_state *run = w->run;
	const struct bench_config *config = run->config;
	const struct lock_ops *ops = config->lock;
	struct rusage before, after;
#ifdef LOCKLAB_SIM
	locklab_sim_on_cpu_word(&w->ctx.off_cpu, 1); /* its owner words are this thread's now */
#endif
	getrusage(RUSAGE_THREAD, &before);
	for (unsigned int i = 0; i < config->churn; i++) {
		if (i > 0 && run->calibration->gap_iterations)
			busy_loop(run->calibration->gap_iterations);
		ops->lock(run->lock, &w->ctx);
		__atomic_store_n(&run->cs.writes, run->cs.writes + 1, __ATOMIC_RELAXED);
		bool measuring = control_measuring(__atomic_load_n(&run->control, __ATOMIC_ACQUIRE));
		if (config->ops && measuring && ++run->cs.window_writes == config->ops)
			worker_stop_at_target(run); /* --ops: under the lock, so the count is exact */
		if (run->calibration->hold_iterations)
			busy_loop(run->calibration->hold_iterations);
		ops->unlock(run->lock, &w->ctx);
		worker_count_acquisition(w, measuring);
	}
	getrusage(RUSAGE_THREAD, &after);
	if (control_measuring(__atomic_load_n(&run->control, __ATOMIC_ACQUIRE))) {
		w->churn_voluntary += after.ru_nvcsw - before.ru_nvcsw;
		w->churn_involuntary += after.ru_nivcsw - before.ru_nivcsw;
		w->churn_user_s += (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
				   (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec) * 1e-6;
		w->churn_mails++;
	}
	return NULL;
}

void writer_churn_loop(struct worker *w, uint32_t control_seen)
{
	struct run_state *run = w->run;
	for (;;) {
		pthread_t child;
		int err = pthread_create(&child, NULL, mail, w);
		if (err != 0) {
			w->churn_failed = err;
			return;
		}
		pthread_join(child, NULL);
#ifdef LOCKLAB_SIM
		locklab_sim_on_cpu_word(&w->ctx.off_cpu, 1);
#endif
		uint32_t control = __atomic_load_n(&run->control, __ATOMIC_ACQUIRE);
		if (control != control_seen && !worker_handle_control(w, control, &control_seen))
			return;
	}
}
