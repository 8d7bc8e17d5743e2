/* SPDX-License-Identifier: MIT */
/*
 * sched.c - the scheduler calls the tree's sleeping locks make, on the kshim task
 * (kshim/sched.h), written from their documented behaviour in Linux 6.1 and 6.12
 * (kernel/sched/core.c: try_to_wake_up(), wake_q_add(), wake_up_q(), rt_mutex_setprio()).
 * Compiled in the kernel environment; the host side (futexes, threads) is host.c.
 */
#include <linux/sched.h>
#include <linux/sched/wake_q.h>

#ifdef LOCKLAB_SIM
/* locklab/sim.h's, declared here: the shim's kernel-side files include no C library header. */
void locklab_sim_on_cpu_word(int *word, int off);
void locklab_sim_boost(int *on_cpu_word, int prio);
#endif

/*
 * Sleep until a waker sets TASK_RUNNING: at once if one already has (__schedule_loop()).
 * A task about to sleep sets on_cpu to 0, then reads the state again, both sequentially
 * consistent, and a waker sets the state before it reads on_cpu, the same way round
 * (wake_up_state()): either that read sees TASK_RUNNING and the task does not sleep, or the
 * waker sees on_cpu 0 and makes the system call. A waker that finds the task still on its CPU
 * only flips the state, as the kernel's ttwu_runnable() does for a task still on its run
 * queue. on_cpu stays 1 when the task was woken before it got here: owner spinners poll it,
 * and the kernel clears it only when it switches the task out.
 */
static void schedule_loop(struct task_struct *self)
{
	if (smp_load_acquire(&self->__state) == TASK_RUNNING)
		return;
	for (;;) {
		__atomic_store_n(&self->on_cpu, 0, __ATOMIC_SEQ_CST);
		unsigned int state = __atomic_load_n(&self->__state, __ATOMIC_SEQ_CST);
		if (state == TASK_RUNNING)
			break;
		kshim_futex_wait(&self->__state, state);
	}
	WRITE_ONCE(self->on_cpu, 1);
}

/*
 * schedule(): the kernel's first calls sched_submit_work() (flush the task's plugged block I/O,
 * tell the workqueue or io_uring pool that a worker sleeps) and afterwards sched_update_worker();
 * a userspace thread has neither a plug nor a worker pool, so only the sleep is left.
 */
void schedule(void)
{
	schedule_loop(current);
}

void schedule_preempt_disabled(void)
{
	schedule();
}

void schedule_rtlock(void)
{
	schedule();
}

long schedule_timeout(long timeout)
{
	schedule();
	return timeout;
}

/*
 * 6.12's rtmutex (and rwbase_rt) brackets its whole slow path with these, so that the work
 * schedule() would submit first (sched_submit_work(), which may itself take sleeping locks on
 * PREEMPT_RT) is done once before the task queues as a waiter, and each sleep inside is
 * rt_mutex_schedule(), the bare sleep. sched_rt_mutex marks the bracket: the kernel sets and
 * checks it only under lockdep; it is kept here in every build, a WARN when the bracket nests or
 * is left unopened, since the check costs a plain store per slow path. The _futex_ pair is for
 * the futex syscall's PI path, which has no work to submit.
 */
void rt_mutex_pre_schedule(void)
{
	struct task_struct *self = current;

	WARN_ON_ONCE(self->sched_rt_mutex);
	self->sched_rt_mutex = 1;
	sched_submit_work(self); /* nothing to submit in userspace: see schedule() */
}

void rt_mutex_futex_pre_schedule(void)
{
	struct task_struct *self = current;

	WARN_ON_ONCE(self->sched_rt_mutex);
	self->sched_rt_mutex = 1;
}

void rt_mutex_schedule(void)
{
	struct task_struct *self = current;

	WARN_ON_ONCE(!self->sched_rt_mutex);
	schedule_loop(self);
}

void rt_mutex_post_schedule(void)
{
	struct task_struct *self = current;

	/* sched_update_worker(): no worker pool to tell that it runs again. */
	WARN_ON_ONCE(!self->sched_rt_mutex);
	self->sched_rt_mutex = 0;
}

void rt_mutex_futex_post_schedule(void)
{
	struct task_struct *self = current;

	WARN_ON_ONCE(!self->sched_rt_mutex);
	self->sched_rt_mutex = 0;
}

void kshim_yield(void)
{
	kshim_host_yield();
}

/*
 * Each CPU's run-queue lock, which try_to_wake_up() takes for the woken task's CPU (in
 * ttwu_runnable() when the task is still queued, in ttwu_queue() otherwise): here only its
 * cost, the line every waker of a task on that CPU takes. One line each, as the kernel's
 * per-CPU run queues are apart.
 */
static struct {
	raw_spinlock_t lock;
} ____cacheline_aligned runqueue[NR_CPUS];

/*
 * try_to_wake_up(): wake @p if its state is one of @state, under @p's pi_lock (which
 * serialises wakers of one task) and then its CPU's run-queue lock, as the kernel does. Fully
 * ordered when it wakes (a seq_cst exchange of the state word), as the kernel's is: what the
 * waker stored before is seen by the woken task after its schedule() returns. The system call
 * only for a task that may be asleep in the futex (schedule_loop() says why on_cpu tells); a
 * task still on its CPU only has its state flipped, as ttwu_runnable() does.
 */
int wake_up_state(struct task_struct *p, unsigned int state)
{
	unsigned long flags;
	int woken = 0;

	raw_spin_lock_irqsave(&p->pi_lock, flags);
	smp_mb__after_spinlock();
	unsigned int seen = READ_ONCE(p->__state);
	while (seen & state) {
		if (__atomic_compare_exchange_n(&p->__state, &seen, TASK_RUNNING, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			woken = 1;
			break;
		}
	}
	if (woken) {
		raw_spinlock_t *rq_lock = &runqueue[task_cpu(p) % NR_CPUS].lock;
		raw_spin_lock(rq_lock);
		if (!__atomic_load_n(&p->on_cpu, __ATOMIC_SEQ_CST))
			kshim_futex_wake(&p->__state);
		raw_spin_unlock(rq_lock);
	}
	raw_spin_unlock_irqrestore(&p->pi_lock, flags);
	return woken;
}

int wake_up_process(struct task_struct *p)
{
	return wake_up_state(p, TASK_NORMAL);
}

/*
 * wake_q: a task is queued at most once (its wake_q node's next goes from NULL to the list's
 * tail marker atomically); wake_up_q() wakes each and clears the node first, so the task can
 * be queued again by anyone once it is woken.
 */
static bool wake_q_queue(struct wake_q_head *head, struct task_struct *task)
{
	struct wake_q_node *node = &task->wake_q;

	smp_mb__before_atomic();
	if (unlikely(cmpxchg_relaxed(&node->next, NULL, WAKE_Q_TAIL)))
		return false;
	*head->lastp = node;
	head->lastp = &node->next;
	return true;
}

void wake_q_add(struct wake_q_head *head, struct task_struct *task)
{
	if (wake_q_queue(head, task))
		get_task_struct(task);
}

void wake_q_add_safe(struct wake_q_head *head, struct task_struct *task)
{
	if (!wake_q_queue(head, task))
		put_task_struct(task);
}

void wake_up_q(struct wake_q_head *head)
{
	struct wake_q_node *node = head->first;

	while (node != WAKE_Q_TAIL) {
		struct task_struct *task = container_of(node, struct task_struct, wake_q);

		/* Marked: another waker's failed cmpxchg in wake_q_queue() may read it meanwhile. */
		node = READ_ONCE(node->next);
		/* The task may be queued again from here on: clear before waking (pairs with
		 * the cmpxchg in wake_q_queue()). */
		WRITE_ONCE(task->wake_q.next, NULL);
		wake_up_process(task);
		put_task_struct(task);
	}
}

/*
 * Priority inheritance's effect on the boosted task: its effective priority becomes its top
 * donor's if that is more important. As the kernel's, nothing is written when neither the
 * donor nor the priority changes, and otherwise under the task's run-queue lock (6.1 sets
 * pi_top_task there even when the priority stays, between equal priorities). The host's
 * scheduler is not told (that needs privilege and is the hand ports' job,
 * native/locks/lock_task.h); the simulator's scheduler model is (docs/scheduler.md). The
 * locks' own decisions (waiter order, stealing, the top
 * waiter's spin) follow prio as in the kernel. No deadline tasks here, so no dl_prio() case.
 */
void rt_mutex_setprio(struct task_struct *p, struct task_struct *pi_task)
{
	int prio = p->normal_prio;

	if (pi_task && pi_task->prio < prio)
		prio = pi_task->prio;
	if (p->pi_top_task == pi_task && prio == p->prio)
		return;
	raw_spinlock_t *rq_lock = &runqueue[task_cpu(p) % NR_CPUS].lock;
	raw_spin_lock(rq_lock);
	WRITE_ONCE(p->pi_top_task, pi_task);
	if (prio != p->prio) {
		WRITE_ONCE(p->prio, prio);
#ifdef LOCKLAB_SIM
		locklab_sim_boost(&p->on_cpu, prio); /* the scheduler model runs it at that priority */
#endif
	}
	raw_spin_unlock(rq_lock);
}

int sched_setscheduler(struct task_struct *p, int policy, const void *param)
{
	(void)p, (void)policy, (void)param;
	return 0;
}

/* A new task: what the kernel's fork gives the locks' fields (sched_fork(), rt_mutex_init_task()). */
void kshim_task_init(struct task_struct *task, unsigned int cpu, pid_t pid, int policy,
		     int rt_priority)
{
	task->__state = TASK_RUNNING;
	task->on_cpu = 1;
#ifdef LOCKLAB_SIM
	/* Called by the task's own thread: on_cpu reads 0 while the scheduler model has switched
	 * it out for another thread (docs/scheduler.md), as owner_on_cpu() expects. */
	locklab_sim_on_cpu_word(&task->on_cpu, 0);
#endif
	task->cpu = cpu;
	task->pid = pid;
	task->policy = (unsigned int)policy;
	task->rt_priority = (unsigned int)rt_priority;
	task->static_prio = DEFAULT_PRIO;
	task->normal_prio = policy == SCHED_FIFO || policy == SCHED_RR
				    ? MAX_RT_PRIO - 1 - rt_priority
				    : DEFAULT_PRIO;
	task->prio = task->normal_prio;
	raw_spin_lock_init(&task->pi_lock);
	task->pi_waiters = RB_ROOT_CACHED;
	task->pi_top_task = NULL;
	task->pi_blocked_on = NULL;
	task->wake_q.next = NULL;
	task->sched_rt_mutex = 0;
}

const size_t kshim_task_size = sizeof(struct task_struct);
_Static_assert(offsetof(struct task_struct, on_cpu) / KSHIM_TASK_GROUP_ALIGN !=
		       offsetof(struct task_struct, pi_lock) / KSHIM_TASK_GROUP_ALIGN,
	       "on_cpu and pi_lock share a prefetch pair");
