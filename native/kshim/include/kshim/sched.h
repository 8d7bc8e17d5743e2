/* SPDX-License-Identifier: MIT */
/*
 * kshim/sched.h - tasks, sleeping and waking, for the tree's sleeping locks.
 *
 * Every thread that touches a kernel lock is a task: `current` is a per-thread pointer to the
 * thread's struct task_struct, made when the thread first needs it (runtime.c). A task has the
 * fields the locking files read and write, under the kernel's names and types, and a CPU id
 * of its own (smp_processor_id()), unique among the threads alive, so per-CPU data is never
 * shared by two threads running at once (qspinlock's queue nodes rely on preemption being off
 * for that in the kernel; here each thread is its own CPU).
 *
 * schedule() and wake_up_process() follow the kernel's protocol (Documentation/ and the
 * comment above try_to_wake_up() in kernel/sched/core.c): a sleeper sets its state, checks its
 * condition, then calls schedule(), which returns at once if a waker already set the state
 * back to TASK_RUNNING; a waker sets TASK_RUNNING with a full barrier and wakes the thread.
 * Userspace sleeps on the state word with a futex. on_cpu is 0 while a task sleeps in
 * schedule() and 1 otherwise: owner spinning (owner_on_cpu()) stops when the owner sleeps. A
 * thread the host preempted still reads as on a CPU (userspace cannot see preemption), and
 * preempt_disable() cannot keep a holder on its CPU: oversubscribed runs differ from the
 * kernel's there. In the simulator both hold as in the kernel: its scheduler model stores
 * on_cpu and counts preempt_disable() (docs/scheduler.md).
 */
#ifndef KSHIM_SCHED_H
#define KSHIM_SCHED_H

#include <kshim/base.h>
#include <linux/rbtree.h>
#include <linux/spinlock_types_raw.h>

#define TASK_RUNNING 0x0000
#define TASK_INTERRUPTIBLE 0x0001
#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_WAKEKILL 0x0100
#define TASK_RTLOCK_WAIT 0x1000
#define TASK_KILLABLE (TASK_WAKEKILL | TASK_UNINTERRUPTIBLE)
#define TASK_NORMAL (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)

/* Priorities as the kernel numbers them: lower is more important (include/linux/sched/prio.h). */
#define MAX_RT_PRIO 100
#define MAX_DL_PRIO 0
#define DEFAULT_PRIO (MAX_RT_PRIO + 20)
#define MAX_PRIO (MAX_RT_PRIO + 40)
#define SCHED_NORMAL 0
#define SCHED_FIFO 1
#define SCHED_RR 2
#define SCHED_DEADLINE 6
#define TASK_COMM_LEN 16

struct wake_q_node {
	struct wake_q_node *next;
};

struct sched_dl_entity {
	u64 deadline;
};

/* Timed waits: the struct the slow paths look at; locklab never passes a timeout. */
struct hrtimer_sleeper {
	struct task_struct *task;
};
#define hrtimer_sleeper_start_expires(t, mode) ((void)(t))
#define hrtimer_cancel(t) 0
#define destroy_hrtimer_on_stack(t) ((void)(t))

struct rt_mutex_waiter;
struct mutex_waiter;

/*
 * Two groups, on lines of their own, as 6.1's task_struct keeps them apart (include/linux/
 * sched.h: __state and on_cpu in its first lines, pi_lock about 2.9 KB further on): spinners
 * poll the owner's on_cpu while each new waiter takes the owner's pi_lock. 128 bytes, not 64,
 * keeps the two out of one adjacent-line prefetch pair, as the kernel's distance does.
 */
#define KSHIM_TASK_GROUP_ALIGN 128

struct task_struct {
	/* What the scheduler and owner spinners read: the kernel's first lines. */
	unsigned int __state;    /* the futex word schedule() sleeps on */
	int on_cpu;              /* 0 while asleep in schedule(), or about to be */
	unsigned int cpu;        /* this thread's CPU id: per-CPU data, unique among live threads */
	int prio;                /* effective: normal_prio, or a PI donor's if more important */
	int static_prio;
	int normal_prio;
	unsigned int policy;
	unsigned int rt_priority;
	unsigned int flags;
	pid_t pid;
	struct sched_dl_entity dl;
	/* Priority inheritance, written by every waiter of a lock this task holds. */
	raw_spinlock_t pi_lock __attribute__((__aligned__(KSHIM_TASK_GROUP_ALIGN)));
	struct wake_q_node wake_q;
	struct rb_root_cached pi_waiters; /* rtmutex waiters blocked on locks this task holds */
	struct task_struct *pi_top_task;
	struct rt_mutex_waiter *pi_blocked_on;
	struct mutex_waiter *blocked_on;
	/* The rest: read once per slow path, or never by another task. */
	int saved_state __attribute__((__aligned__(KSHIM_TASK_GROUP_ALIGN)));
	unsigned int sched_rt_mutex; /* between rt_mutex_pre_schedule() and _post_schedule() (6.12) */
	char comm[TASK_COMM_LEN];
	void *host_thread;       /* the runtime's record of the thread (runtime.c) */
};

/* `current`: the calling thread's task, made on first use (runtime.c). */
static __always_inline struct task_struct *kshim_get_current(void)
{
	struct task_struct *task = kshim_current_task;
	return likely(task) ? task : kshim_attach_current();
}
#define current kshim_get_current()
#define get_current() kshim_get_current()

#define smp_processor_id() (current->cpu)
#define raw_smp_processor_id() smp_processor_id()
#define task_cpu(p) (READ_ONCE((p)->cpu))
#define task_pid_nr(p) ((p)->pid)
#define task_pid_vnr(p) ((p)->pid)

#define __set_current_state(state) WRITE_ONCE(current->__state, (state))
#define set_current_state(state) smp_store_mb(current->__state, (state))
#define READ_ONCE_TASK_STATE(p) READ_ONCE((p)->__state)
#define task_is_running(p) (READ_ONCE((p)->__state) == TASK_RUNNING)

void schedule(void);
void schedule_preempt_disabled(void);
void schedule_rtlock(void);
long schedule_timeout(long timeout);
int wake_up_process(struct task_struct *p);
int wake_up_state(struct task_struct *p, unsigned int state);
void rt_mutex_setprio(struct task_struct *p, struct task_struct *pi_task);
/* 6.12's rtmutex sleeps through these (linux/sched/rt.h, kernel/sched/core.c); 6.1's does not. */
void rt_mutex_pre_schedule(void);
void rt_mutex_schedule(void);
void rt_mutex_post_schedule(void);
void rt_mutex_futex_pre_schedule(void);
void rt_mutex_futex_post_schedule(void);
int sched_setscheduler(struct task_struct *p, int policy, const void *param);
void kshim_yield(void);
/* I/O accounting around a sleep: nothing to account here. */
static inline int io_schedule_prepare(void) { return 0; }
static inline void io_schedule_finish(int token) { (void)token; }
#define yield() kshim_yield()
#define cond_resched() ((void)0)
/* Nothing asks a userspace thread to give up its CPU; in the simulator, the scheduler model. */
#ifdef LOCKLAB_SIM
int locklab_sim_need_resched(void); /* locklab/sim.h's: the scheduler model's answer */
#define need_resched() (locklab_sim_need_resched() != 0)
#else
#define need_resched() false
#endif
#define signal_pending(p) 0
#define signal_pending_state(state, p) 0
#define fatal_signal_pending(p) 0
/* schedule()'s first step: no plugged I/O or worker pool in userspace (sched.c). */
#define sched_submit_work(p) ((void)(p))
/* Tasks live as long as their threads, and no lock outlives the threads that use it. */
static inline struct task_struct *get_task_struct(struct task_struct *t) { return t; }
static inline void put_task_struct(struct task_struct *t) { (void)t; }

static inline bool vcpu_is_preempted(unsigned int cpu)
{
	(void)cpu;
	return false;
}

/* linux/sched.h (6.1): spin on an owner only while it is on a CPU. */
static inline bool owner_on_cpu(struct task_struct *owner)
{
	return READ_ONCE(owner->on_cpu) && !vcpu_is_preempted(task_cpu(owner));
}

/*
 * rt_prio() as 6.1 defines it: RT or deadline. 6.12 renamed that test rt_or_dl_prio() (and
 * rt_task() rt_or_dl_task()) and narrowed rt_prio() to RT alone; its lock files call only the
 * rt_or_dl_ names, so both trees get the meaning they were written for without a version test.
 */
static inline int rt_prio(int prio) { return unlikely(prio < MAX_RT_PRIO); }
static inline bool rt_or_dl_prio(int prio) { return unlikely(prio < MAX_RT_PRIO); }
static inline int dl_prio(int prio) { return unlikely(prio < MAX_DL_PRIO); }
static inline int rt_task(struct task_struct *p) { return rt_prio(p->prio); }
static inline int dl_task(struct task_struct *p) { return dl_prio(p->prio); }
static inline bool rt_or_dl_task(struct task_struct *p) { return rt_or_dl_prio(p->prio); }
static inline bool rt_or_dl_task_policy(struct task_struct *p)
{
	return p->policy == SCHED_FIFO || p->policy == SCHED_RR || p->policy == SCHED_DEADLINE;
}
static inline bool task_is_realtime(struct task_struct *p) { return rt_or_dl_task_policy(p); }
static inline bool dl_time_before(u64 a, u64 b) { return (s64)(a - b) < 0; }
static inline bool dl_entity_preempt(const struct sched_dl_entity *a,
				     const struct sched_dl_entity *b)
{
	return (s64)(a->deadline - b->deadline) < 0;
}

/* The clock the sleeping locks time their spins and hand-offs with (host.c). */
#define sched_clock() kshim_clock_ns()
#define local_clock() kshim_clock_ns()
#define HZ 250
#define jiffies kshim_jiffies()
#define time_after(a, b) ((long)((b) - (a)) < 0)
#define time_before(a, b) time_after(b, a)
#define time_after_eq(a, b) ((long)((a) - (b)) >= 0)
#define time_before_eq(a, b) time_after_eq(b, a)
#define NSEC_PER_USEC 1000L
#define NSEC_PER_MSEC 1000000L
#define NSEC_PER_SEC 1000000000L

#endif /* KSHIM_SCHED_H */
