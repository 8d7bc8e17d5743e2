/* SPDX-License-Identifier: MIT */
/*
 * runtime.h - locklab's simulation runtime, inside (see docs/simulator.md for the model).
 *
 * The simulated program is compiled with GCC's -fsanitize=thread, which calls a hook before
 * every load and store and instead of every atomic, with the address and size. This runtime
 * defines those hooks (tsan_hooks.c) instead of libtsan. Each program thread runs on a virtual
 * CPU of the machine profile (machine.c), which it may share with others as the kernel's
 * scheduler shares one (runqueue.c), with a clock of its own, in cycles. A thread runs only
 * while it holds the baton (scheduler.c): one host thread runs at a time, the one whose clock
 * is lowest, so accesses to shared lines happen in the order of their virtual times, and the
 * same binary, machine and seed give the same interleaving. Each access costs what the line's
 * coherence state says (coherence.c); a line serves one transfer at a time.
 *
 * Nothing here is compiled with -fsanitize=thread: the runtime's own accesses are not seen.
 */
#ifndef LOCKLAB_SIM_RUNTIME_H
#define LOCKLAB_SIM_RUNTIME_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <locklab/sim.h>

#define SIM_MAX_CPUS 512
#define SIM_MAX_THREADS (SIM_MAX_CPUS + 8)
#define SIM_MAX_SOCKETS 16
#define SIM_MAX_HOPS 4
#define SIM_MAX_NODES 64
#define SIM_MAX_IDLE_STATES 8
/* The most store misses a profile may let a core keep in flight (its fill buffers). */
#define SIM_MAX_FILL_BUFFERS 64
#define SIM_FOREVER UINT64_MAX

/* The value of the word of `size` bytes at `p`, as the access about to be made will read it
 * (wider than 8 bytes: its first 8). */
static inline uint64_t sim_peek(const volatile void *p, unsigned int size)
{
	switch (size) {
	case 1:
		return *(const volatile uint8_t *)p;
	case 2:
		return *(const volatile uint16_t *)p;
	case 4:
		return *(const volatile uint32_t *)p;
	default:
		return *(const volatile uint64_t *)p;
	}
}

/* ---- the machine (machine.c) ---------------------------------------------------------------- */
struct sim_cpu {
	int package;
	int core;     /* within the package */
	int core_key; /* unique over the machine: SMT siblings share it */
	int node;
	int smt_rank;
	int llc; /* unique over the machine */
};

enum sim_sched_rules { SIM_SCHED_LINUX_4_20, SIM_SCHED_LINUX_6_1 };

struct sim_costs {
	uint64_t hit;
	uint64_t atomic;
	uint64_t smt_sibling;
	uint64_t same_llc;
	uint64_t same_socket;
	uint64_t other_socket[SIM_MAX_HOPS]; /* by hops - 1 */
	uint64_t memory_local;
	uint64_t memory_same_socket;
	uint64_t memory_remote[SIM_MAX_HOPS];
	uint64_t cpu_relax;
	uint64_t futex_wait;
	uint64_t futex_wake;
	uint64_t context_switch;
};

struct sim_machine {
	char name[64];
	char summary[256];
	char arch[16];
	double ghz;
	int line_shift;
	struct sim_costs costs;
	/* Store misses one core keeps in flight at once; 0: each waits for the one before
	 * (no fill_buffers in the profile, or LOCKLAB_SIM_STORES=in-turn). */
	int fill_buffers;
	/* A woken thread's start on an idle CPU, from the wake to its running, in its shallowest
	 * idle state (0: context_switch, for every wake-up, as before); and the idle states the
	 * CPU may be in, shallowest first: exit latency and target residency. */
	uint64_t wake_to_run;
	int idle_states;
	uint64_t idle_exit[SIM_MAX_IDLE_STATES], idle_residency[SIM_MAX_IDLE_STATES];
	int sockets;
	int hops[SIM_MAX_SOCKETS][SIM_MAX_SOCKETS];
	int max_hops;
	/* The ACPI SLIT's node distances (10 local); the kernel's default without one: 20 apart. */
	int nodes;
	int node_distance[SIM_MAX_NODES][SIM_MAX_NODES];
	int node_reclaim_distance; /* 6.1's, where the profile sets it (AMD Zen: 32); 0: 30 */
	/* Whose placement rules place unpinned threads (placement.c). */
	enum sim_sched_rules sched;
	int cpus;
	/* cpus + 1 entries: the last is where the control thread (the engine's main) runs. */
	struct sim_cpu cpu[SIM_MAX_CPUS + 1];
};

extern struct sim_machine sim_machine;
void sim_machine_load(void); /* from $LOCKLAB_SIM_MACHINE; one line and exit 2 if bad */
/* The cost of moving a line to `to` from a copy at `from`, and which distance that is. */
uint64_t sim_transfer_cost(int to, int from, enum locklab_sim_distance *distance);
uint64_t sim_memory_cost(int to, int home_node);
/* The cheapest line transfer this machine has (SMT siblings counted where there are any). */
uint64_t sim_cheapest_transfer(void);
int sim_service_cpu(void); /* the control thread's place */
bool sim_machine_is_arm64(void);

/* ---- contexts (context.c) -------------------------------------------------------------------- */
struct sim_context {
	void *stack_pointer;  /* the callee-saved registers are pushed below it */
	void *thread_pointer; /* the thread-local storage it runs with */
};
/* Whether hand-overs can swap contexts on this machine; if not, why not. */
bool sim_contexts_supported(const char **why);
/* Saves the caller's registers and stack pointer in `save`, then resumes `load`. */
void sim_context_swap(struct sim_context *save, const struct sim_context *load);
/* A context that starts function(argument) on `stack`, with the caller's thread pointer. */
void sim_context_prepare(struct sim_context *context, void *stack, size_t size,
			 void (*function)(void *), void *argument);
void *sim_park_stack_new(size_t size);
extern bool sim_use_contexts; /* $LOCKLAB_SIM_SWITCH: contexts (the default) or threads */

/* ---- threads and the baton (scheduler.c) ---------------------------------------------------- */
enum sim_state {
	SIM_RUNNABLE,
	SIM_SPIN_PARKED, /* spinning on lines that have not changed: woken when one is taken */
	SIM_FUTEX_WAIT,
	SIM_SLEEPING,
	SIM_BARRIER_WAIT,
	SIM_JOIN_WAIT,
	SIM_CPU_WAIT, /* ready, waiting for its CPU, which another thread has (runqueue.c) */
	SIM_DONE,
};

#define SIM_POLLS 4 /* loads one spin iteration may poll and still be recognised */

struct sim_poll {
	uintptr_t addr;
	uint64_t value;
	unsigned int size;
};

/* A parked spinner's place in a line's list of them (coherence.c keeps the lists). */
struct sim_park_link {
	struct sim_thread *thread;
	struct sim_park_link *next, **pprev;
};

struct sim_thread {
	int id;
	int cpu; /* virtual CPU; the service CPU until it pins itself */
	bool pinned;  /* placed by sched_setaffinity, not provisionally */
	bool counted; /* a program thread (not the control thread): its traffic is reported */
	enum sim_state state;
	uint64_t clock;
	uint64_t wake_at; /* SIM_FOREVER: no timeout */
	bool timed_out;
	uint32_t baton; /* host futex word: 1 = run */
	pthread_t host;
	void *(*start)(void *);
	void *arg;
	void *result;
	int host_tid; /* gettid() answers it, whichever host thread runs the code */

	/* Contexts (scheduler.c): where its code resumes, and its host thread's own, parked. */
	struct sim_context context, park_context;
	void *park_stack;
	uint32_t host_parked, host_released; /* host futex words */
	int heap_index; /* its place in the ready queue (scheduler.c), -1 when out */

	/* What it waits on. */
	uintptr_t futex_addr;
	uint64_t futex_order; /* FIFO among a futex's waiters */
	struct sim_thread *join_target;

	/* Spin recognition: the loads of this iteration and of the last, and whether either
	 * did anything but hit (a miss, a write, a clock read or a system call). */
	struct sim_poll polls[SIM_POLLS], last_polls[SIM_POLLS];
	unsigned int npolls, last_npolls;
	bool iteration_dirty;
	unsigned int identical_iterations;
	uint64_t iteration_start;
	uint64_t spin_period;
	uint64_t parked_at;
	uintptr_t parked_lines[SIM_POLLS];
	struct sim_park_link park_links[SIM_POLLS];
	unsigned int nparked_lines;
	uint64_t iterations;            /* spin iterations ended (cpu_relax calls) */
	uint64_t clock_read_iteration;  /* the iteration in which it last read the clock */
	bool joined;                    /* its pthread_join has returned: the pthread_t may be reused */
	uint64_t blocked_cycles;        /* asleep: futex, nanosleep, barrier, join */
	uint64_t stores_done_at;        /* when its buffered stores have all completed */
	/* Overlapped misses (coherence.c): how far its clock has run ahead of its core waiting
	 * for misses in flight, when each of the last fill_buffers of them completes, the lines
	 * its loads missed in this run, and the lines its 8-byte loads returned (pointers). */
	uint64_t miss_lag;
	uint64_t loads_done_at; /* when the run's load misses have their data */
	bool spin_polling;      /* a spin iteration ended: its next load miss is a poll */
	uint64_t fills_done_at[SIM_MAX_FILL_BUFFERS];
	unsigned int fill_next;
	uintptr_t run_lines[SIM_MAX_FILL_BUFFERS];
	unsigned int nrun_lines;
	uintptr_t pointer_lines[SIM_MAX_FILL_BUFFERS];
	unsigned int npointer_lines;
	const void *pc;                 /* the instrumented code's access now charged */
	uint64_t latency_random;        /* its stream of transfer latencies (coherence.c); 0: unset */

	/* Its share of its CPU (runqueue.c): when it took the CPU, its virtual runtime, when its
	 * slice ends (SIM_FOREVER while no other thread waits for the CPU), its place among the
	 * waiters, and whether a move between CPUs took it out of a queue. */
	uint64_t on_cpu_since;
	uint64_t vruntime;
	uint64_t slice_end; /* when it next looks at its turn: its end, or a balancing tick */
	uint64_t resched_at; /* when its turn ends (need_resched()) */
	uint64_t cpu_arrival;
	bool rq_attached;
	bool rq_placed; /* counted among its CPU's threads */
	int *on_cpu_word; /* locklab_sim_on_cpu_word(): stored `on_cpu_off` while switched out */
	int on_cpu_off;
	int on_cpu_held;    /* what the word held before */
	bool on_cpu_stored; /* it holds on_cpu_off now */
	int preempt_count; /* locklab_sim_preempt_count_add(): not preempted while above 0 */
	int rt_priority; /* SCHED_FIFO's 1 to 99; 0: SCHED_OTHER (the fair class) */
	int rt_boost;    /* a priority-inheritance boost's level (locklab_sim_boost), or 0 */

	/* Where it runs (placement.c): its PELT averages (1024: runnable, or running, all the
	 * time), the CPU it used before its last, when it last left a CPU (task_hot), whom it
	 * woke last and how often it woke another (wake_wide), and its moves. */
	double load_avg, util_avg;
	uint64_t pelt_at;
	bool pelt_attached;
	int recent_used_cpu;
	uint64_t left_cpu_at;
	const struct sim_thread *last_wakee;
	unsigned int wakee_flips;
	uint64_t wakee_flip_decay_at;
	uint64_t migrations;

	/* Counted for the report. */
	uint64_t transfers[SIM_DISTANCES];
	uint64_t spin_parks;
	uint64_t futex_sleeps;
	uint64_t voluntary_switches;
	uint64_t involuntary_switches; /* preempted at its slice's end or by a wake-up, or yielded */
};

extern __thread struct sim_thread *sim_self;
extern bool sim_spin_parking; /* $LOCKLAB_SIM_SPIN=exact turns it off */
/* How far past the horizon a load hit may run unordered: half the cheapest line transfer at
 * its least (coherence.c draws each transfer within this span of its cost). */
extern uint64_t sim_lookahead;
/* How far a transfer's latency may stray from `cost` either way: 10%, an estimate
 * (docs/simulator.md, "Phase"). */
static inline uint64_t sim_transfer_jitter_span(uint64_t cost) { return cost * 10 / 100; }

void sim_runtime_init(void);
struct sim_thread *sim_thread_new(void);
/* After a change to another thread's state, clock or timeout: its place in the order. */
void sim_thread_requeue(struct sim_thread *t);
struct sim_thread *sim_thread_of_host(pthread_t host);
/* A new thread's first step on its host thread: it returns when the thread first runs. */
void sim_thread_begin(struct sim_thread *t);
/* The creator's wait until the new host thread is ready to be handed over to. */
void sim_thread_await_start(struct sim_thread *t);
void sim_thread_exit(struct sim_thread *t, void *result);
/* Before an ordered access (any on a shared line, a late load on a private one): let every
 * thread whose clock is lower go first. */
void sim_order_access(void);
/* Whether a load hit may go now without ordering (within sim_lookahead of the horizon). */
bool sim_may_run_ahead(void);
/* Give the baton to the next thread; returns when this one runs again. */
void sim_reschedule(void);
void sim_make_runnable(struct sim_thread *t, uint64_t clock);
void sim_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
uint64_t sim_ns_to_cycles(double ns);
double sim_cycles_to_ns(uint64_t cycles);
/* The next place in the order of sleeping, in which futex and barrier sleepers are woken. */
uint64_t sim_next_sleep_order(void);
/* FUTEX_WAIT: sleeps while *addr == expected, at most timeout_cycles (SIM_FOREVER: none). */
long sim_futex_wait(uintptr_t addr, uint32_t expected, uint64_t timeout_cycles);
/* Wakes up to `count` futex waiters on addr, first come first served, one after another;
 * returns how many. */
int sim_futex_wake(uintptr_t addr, int count);
/* The same for the sleepers in `state` (a futex's, a barrier's) on addr. */
int sim_wake_sleepers(enum sim_state state, uintptr_t addr, int count);
struct sim_thread *sim_thread_at(int i);
int sim_thread_count(void);
/* Spin recognition, fed by every load and by cpu_relax(). */
void sim_spin_load(uintptr_t addr, unsigned int size, uint64_t value, bool hit);
void sim_spin_dirty(void);
/* A read of the clock: a loop that reads it may be bounded by time, and is never parked. */
void sim_spin_clock_read(void);
/* Sleep in `state` (set by the caller) until woken; the time asleep is not CPU time. */
void sim_block(void);
void sim_spin_iteration_end(void);
/* A parked spinner leaves the lines it parked on (its wait ends another way). */
void sim_spin_unpark(struct sim_thread *t);
/* A line was taken from its other holders: the spinners parked on it (its list) run again. */
void sim_wake_spinners(struct sim_park_link **parked, uint64_t when);

/* ---- more threads than CPUs (runqueue.c) ---------------------------------------------------- */
void sim_rq_init(void); /* after the machine is loaded */
/* Whether `t` has its CPU (running or spinning); always, for the control thread. */
bool sim_rq_is_current(const struct sim_thread *t);
/* `t` is ready from `at` (woken, or new if `fresh`): it runs if its CPU is idle, else waits. */
void sim_rq_arrive(struct sim_thread *t, uint64_t at, bool fresh);
/* The thread leaves its CPU (it sleeps or ends): the first waiting thread, if any, runs. */
void sim_rq_release(struct sim_thread *self);
/* Its slice is over (self->clock >= self->slice_end): it gives the CPU up if others wait. */
void sim_rq_tick(struct sim_thread *self);
void sim_rq_yield(struct sim_thread *self);
void sim_rq_resumed(struct sim_thread *self); /* after a wait that may have been for its CPU */
/* ---- where unpinned threads run (placement.c) ------------------------------------------------ */
void sim_place_init(void); /* after the machine and the run queues */
/* A new thread's CPU, as fork balancing chooses it from its creator's. */
int sim_place_new(const struct sim_thread *parent);
/* A sleeping thread about to be woken by `waker` (NULL: a timer) may move (select_task_rq). */
void sim_place_woken(struct sim_thread *t, struct sim_thread *waker);
void sim_rq_set_cpu(struct sim_thread *t, int cpu); /* every change of a program thread's CPU */
void sim_rq_detach(struct sim_thread *t);
void sim_rq_attach(struct sim_thread *t);
void sim_rq_attach_at(struct sim_thread *t, uint64_t at);
void sim_rq_settle(int cpu, uint64_t at);
/* A thread whose host thread could not be made: it leaves its CPU's queue, never having run. */
void sim_rq_forget(struct sim_thread *t, uint64_t at);
/* SCHED_FIFO at 1 to 99, or 0 for SCHED_OTHER: who runs is decided again from `at`. */
void sim_rq_set_priority(struct sim_thread *t, int rt_priority, uint64_t at);
/* The check every access, pause and busy loop makes: one comparison while a CPU is not shared. */
static inline void sim_rq_check(struct sim_thread *self)
{
	if (__builtin_expect(self->clock >= self->slice_end, 0))
		sim_rq_tick(self);
}

/* ---- the limit on host time without progress (progress.c) -------------------------------- */
void sim_progress_init(void); /* reads LOCKLAB_SIM_PROGRESS_S; one line and exit 2 if bad */
/* At every hand-over: past the limit, the control thread is woken to end the run. */
void sim_progress_check(void);

/* ---- the coherence model (coherence.c) ------------------------------------------------------ */
enum sim_access { SIM_LOAD, SIM_STORE, SIM_RMW };
/* Charge the calling thread for one access; returns whether it hit in its own cache. */
/* A locked instruction or full barrier waits for the thread's buffered stores. */
void sim_drain_stores(struct sim_thread *self);
/* The thread's core waits for whatever it has in flight (a sleep, a drain): no overlap
 * across it. */
void sim_end_overlap(struct sim_thread *self);
/* An 8-byte value a load returned: a miss on its line later in the run depends on it. */
void sim_note_loaded(struct sim_thread *self, uint64_t value);
bool sim_access(uintptr_t addr, unsigned int size, enum sim_access kind);
uintptr_t sim_line_of(uintptr_t addr);
/* A spinner parks on the line with this key (its link joins the line's list), or leaves it. */
void sim_line_park(uintptr_t key, struct sim_park_link *link);
void sim_line_unpark(struct sim_park_link *link);
void sim_coherence_init(void);

#endif /* LOCKLAB_SIM_RUNTIME_H */
