/* SPDX-License-Identifier: MIT */
/*
 * host.h - the calls between the kernel side of the shim (the tree's files, sched.c) and the
 * userspace host (host.c). Plain C types only: both sides include it, and neither sees the
 * other's headers (the kernel's names would collide with libc's).
 */
#ifndef KSHIM_HOST_H
#define KSHIM_HOST_H

#include <stdint.h>

#define KSHIM_NR_CPUS 4096 /* the engine's MAX_THREADS: one CPU id per live thread */

struct task_struct;

/* The calling thread's task (kshim/sched.h's `current`); made by kshim_attach_current(). */
extern __thread struct task_struct *kshim_current_task __attribute__((tls_model("initial-exec")));
struct task_struct *kshim_attach_current(void);
/* per_cpu_ptr()'s offsets, one per CPU id (kshim/kernel.h). */
extern long kshim_percpu_offset[KSHIM_NR_CPUS];

/* Sleep while *word == expected (or until woken); wake one sleeper on word. */
void kshim_futex_wait(unsigned int *word, unsigned int expected);
void kshim_futex_wake(unsigned int *word);
void kshim_host_yield(void);
uint64_t kshim_clock_ns(void);
unsigned long kshim_jiffies(void); /* at HZ = 250 */
/* A WARN: one line, and on. A BUG: one line, and the process aborts, as an oops ends a task. */
void kshim_warn(const char *file, int line, const char *condition);
__attribute__((noreturn)) void kshim_bug(const char *file, int line, const char *condition);

/* sched.c: fill in a new task; its size, for the host to allocate. */
void kshim_task_init(struct task_struct *task, unsigned int cpu, int pid, int policy,
		     int rt_priority);
extern const unsigned long kshim_task_size;

#endif /* KSHIM_HOST_H */
