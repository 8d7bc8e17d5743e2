/* SPDX-License-Identifier: MIT */
/*
 * host.c - the userspace side of the kernel shim: each thread's task and CPU id, per-CPU
 * copies, futexes, the clock, and what a WARN or BUG prints. Compiled against libc, never
 * against the kernel headers (their names would collide); it reaches the kernel side only
 * through kshim/host.h.
 *
 * Per-CPU data: the linker gathers every DEFINE_PER_CPU variable in the kshim_percpu section;
 * each CPU id gets a copy of it and per_cpu_ptr() adds the copy's offset (the kernel's scheme).
 *
 * CPU ids: a thread gets the lowest id no live thread has when it first uses a kernel lock,
 * and gives it back when it exits, so per-CPU data (qspinlock's queue nodes) is never used by
 * two threads at once, as preemption being off guarantees in the kernel.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "host.h"

__thread struct task_struct *kshim_current_task __attribute__((tls_model("initial-exec")));
long kshim_percpu_offset[KSHIM_NR_CPUS];
/* The per-CPU section: the linker names its bounds. DEFINE_PER_CPU variables are its first copy. */
extern char __start_kshim_percpu[] __attribute__((weak));
extern char __stop_kshim_percpu[] __attribute__((weak));

/*
 * Guards the id table. Not a pthread mutex: under locklab exec those are the lab's lock, which
 * may be this very kernel lock, whose first use by a thread comes here.
 */
static int ids_lock;

static void ids_lock_take(void)
{
	while (__atomic_exchange_n(&ids_lock, 1, __ATOMIC_ACQUIRE) != 0)
		sched_yield();
}

static void ids_lock_drop(void)
{
	__atomic_store_n(&ids_lock, 0, __ATOMIC_RELEASE);
}
static unsigned char id_taken[KSHIM_NR_CPUS];
static char *percpu_copy[KSHIM_NR_CPUS]; /* made once per id, kept: ids are reused */
static struct host_task *kept_tasks; /* under ids_lock; reachable, so no leak is reported */
static pthread_key_t task_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

struct host_task {
	struct host_task *kept_next; /* every task made, kept (see release_task()) */
	unsigned int cpu;
	/* the task follows, aligned for it */
	_Alignas(128) unsigned char task[];
};

static void fatal(const char *what)
{
	fprintf(stderr, "locklab: kernel shim: %s\n", what);
	exit(2);
}

/*
 * A thread that exits gives its CPU id back but not its task: a waker may still be waking it
 * (wake_up_q()) and a spinner reading its on_cpu, which the kernel covers with a reference and
 * an RCU grace period. Without grace periods here, tasks are kept until the process exits:
 * memory in proportion to the threads a process ever had that used a kernel lock.
 */
static void release_task(void *record)
{
	struct host_task *host = record;
	ids_lock_take();
	id_taken[host->cpu] = 0;
	ids_lock_drop();
	kshim_current_task = NULL;
}

static void make_key(void)
{
	if (pthread_key_create(&task_key, release_task) != 0)
		fatal("pthread_key_create failed");
}

static unsigned int take_cpu_id(void)
{
	size_t section = (size_t)(__stop_kshim_percpu - __start_kshim_percpu);
	ids_lock_take();
	unsigned int cpu = 0;
	while (cpu < KSHIM_NR_CPUS && id_taken[cpu])
		cpu++;
	if (cpu == KSHIM_NR_CPUS) {
		ids_lock_drop();
		fatal("more than 4096 threads use kernel locks at once");
	}
	id_taken[cpu] = 1;
	/*
	 * Each id gets a copy of the section, made once, from the section itself, which no CPU
	 * uses: it stays as DEFINE_PER_CPU left it, as the kernel's template does.
	 */
	if (section != 0 && percpu_copy[cpu] == NULL) {
		char *copy = aligned_alloc(128, (section + 127) / 128 * 128);
		if (copy == NULL)
			fatal("out of memory for per-CPU data");
		memcpy(copy, __start_kshim_percpu, section);
		percpu_copy[cpu] = copy;
		__atomic_store_n(&kshim_percpu_offset[cpu], copy - __start_kshim_percpu,
				 __ATOMIC_RELEASE);
	}
	ids_lock_drop();
	return cpu;
}

struct task_struct *kshim_attach_current(void)
{
	pthread_once(&key_once, make_key);
	struct host_task *host = aligned_alloc(128, (sizeof(*host) + kshim_task_size + 127) / 128 * 128);
	if (host == NULL)
		fatal("out of memory for a task");
	memset(host, 0, sizeof(*host) + kshim_task_size);
	host->cpu = take_cpu_id();
	ids_lock_take();
	host->kept_next = kept_tasks;
	kept_tasks = host;
	ids_lock_drop();
	struct sched_param param = { 0 };
	int policy = SCHED_OTHER;
	pthread_getschedparam(pthread_self(), &policy, &param);
	struct task_struct *task = (struct task_struct *)(void *)host->task;
	kshim_task_init(task, host->cpu, (int)syscall(SYS_gettid), policy, param.sched_priority);
	pthread_setspecific(task_key, host);
	kshim_current_task = task;
	return task;
}

void kshim_futex_wait(unsigned int *word, unsigned int expected)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void kshim_futex_wake(unsigned int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void kshim_host_yield(void)
{
	sched_yield();
}

uint64_t kshim_clock_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* jiffies at HZ = 250, from the same clock. */
unsigned long kshim_jiffies(void)
{
	return (unsigned long)(kshim_clock_ns() / 4000000ull);
}

void kshim_warn(const char *file, int line, const char *condition)
{
	fprintf(stderr, "locklab: kernel WARNING at %s:%d: %s\n", file, line, condition);
}

void kshim_bug(const char *file, int line, const char *condition)
{
	fprintf(stderr, "locklab: kernel BUG at %s:%d: %s\n", file, line, condition);
	abort();
}
