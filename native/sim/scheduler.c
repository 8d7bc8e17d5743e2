/* SPDX-License-Identifier: MIT */
/*
 * scheduler.c - virtual time: one host thread runs at a time, the one whose clock is lowest.
 *
 * Every program thread is a host thread (its thread-local storage, its stack and the C
 * library's view of it stay real), but it runs only while it holds the baton, a futex word of
 * its own. Before an access to a shared line a thread compares its clock with the horizon,
 * the lowest clock among the others (the time of the next timed wake-up counts too); if it is
 * ahead, it hands the baton to the thread that is behind and sleeps. So shared accesses happen
 * in the order of their virtual times, ties broken by a hash of the seed, the thread and the
 * clock: the same binary, machine and seed replay the same interleaving, and another seed
 * breaks the ties otherwise.
 *
 * Spinning. A spin loop polls lines and pauses. When two successive iterations (each ended by
 * a cpu_relax()) polled the same words, saw the same values, all hit in the CPU's own cache
 * and did nothing else (no store, no miss, no clock read, no system call), the thread is
 * parked: it is not run again until another CPU takes one of those lines away, at which point
 * its clock jumps to its first poll after that moment (whole iterations of the period it had)
 * and it goes on. A spinner on an unchanged line costs the host nothing, and what it would have
 * done meanwhile was hit in its own cache. What this assumes: the loop's exit depends only on
 * the words it polls. A loop that also counts its iterations (qspinlock's pending wait, 512
 * pauses on x86) waits for the line to change instead, as smp_cond_load does on arm64;
 * LOCKLAB_SIM_SPIN=exact runs every iteration instead, to check that it matters not.
 *
 * Contexts. A hand-over between host threads costs two system calls and the host's context
 * switch, microseconds in a virtual machine, and a contended run makes tens of hand-overs per
 * acquisition. So by default every program thread's code runs on the first host thread as a
 * context of its own (context.c), swapped in tens of nanoseconds: its host thread, made by
 * pthread_create as before, saves its registers where it would have waited for the baton and
 * parks on a small stack of its own; when its start routine has returned, it is released to
 * return from it on its own stack and exit (its thread-local destructors run there, as
 * before). The order of the threads is the same either way, decided here, so the figures are
 * too; the stacks and thread-local blocks are the same host threads' own.
 * LOCKLAB_SIM_SWITCH=threads hands the baton between host threads instead.
 */
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

__thread struct sim_thread *sim_self;
bool sim_spin_parking = true;
bool sim_use_contexts;
uint64_t sim_lookahead;

/* Not from the C library's heap: the program's own allocations keep their addresses, and so
 * their lines, whatever this structure holds. */
static struct sim_thread threads[SIM_MAX_THREADS];
static int nthreads;
static struct sim_thread *running; /* the thread whose code runs now */
static uint64_t seed;
static uint64_t futex_arrivals;

/* The order of sleeping: futex waiters and barrier waiters are woken in it. */
uint64_t sim_next_sleep_order(void) { return ++futex_arrivals; }
static uint64_t host_switches;
static bool horizon_valid;
static uint64_t horizon_clock;
static uint32_t horizon_tie;
static int horizon_id;
static struct timespec host_start;
static long (*real_syscall)(long, ...);
static bool one_host_cpu; /* then polling for the baton only delays its holder */

/*
 * A spin that reads the clock now and then (a spin budget: wait.h reads it every 32 polls,
 * rtmutex's spin_on_owner every 64) has identical iterations in between, yet ends on time,
 * not on a line: it runs every iteration while it has read the clock within this many, twice
 * the longest period known. A longer span kept spins unparked that read the clock once before
 * they began (a timed acquisition reads it before lock()): at 1,024, half of MCS's 96 waiters
 * ran every iteration, and a hand-over came at nearly every one of their polls. Over 20 seeds
 * the regimes of arrival order stayed the same (bench/sim_same_answers.py; tests/
 * test_sim_seed_spread.py). LOCKLAB_SIM_CLOCK_QUIET=N sets N (1024: the rule before).
 */
#define SIM_CLOCK_QUIET_ITERATIONS 128
static uint64_t clock_quiet_iterations = SIM_CLOCK_QUIET_ITERATIONS;

const char *const locklab_sim_distance_names[SIM_DISTANCES] = {
	"smt_sibling", "same_llc", "same_socket", "other_socket", "memory",
};

void sim_fatal(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fputs("locklab-sim: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(2);
}

static void host_futex(uint32_t *word, int op, uint32_t value)
{
	real_syscall(SYS_futex, word, op, value, NULL, NULL, 0);
}

/*
 * Every thread of the simulation on the host CPU it started on (threads inherit it): one runs
 * at a time anyway, and a hand-over between two threads of one CPU is a plain context switch,
 * where waking a thread on an idle CPU costs an interrupt to it (tens of microseconds in a
 * virtual machine, where that CPU is halted). LOCKLAB_SIM_HOST_CPUS=all leaves them free.
 */
static void keep_to_one_host_cpu(void)
{
	const char *choice = getenv("LOCKLAB_SIM_HOST_CPUS");
	if (choice != NULL && strcmp(choice, "all") == 0)
		return;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	if (real_syscall(SYS_sched_setaffinity, 0, sizeof(one), &one) == 0)
		one_host_cpu = true;
}

/*
 * A lock that corrupts its state may crash the run (the deliberately broken rtmutex patch
 * does, as it oopses a booted kernel): the crash says which seed replays it, then ends as it
 * would have. Only async-signal-safe calls here.
 */
static void append(char *line, size_t *used, size_t size, const char *text)
{
	while (*text != '\0' && *used + 1 < size)
		line[(*used)++] = *text++;
}

static void on_crash(int signal_number)
{
	char line[256], digits[24];
	size_t used = 0;
	int count = 0;
	uint64_t value = seed;
	do
		digits[count++] = (char)('0' + value % 10);
	while ((value /= 10) != 0 && count < 21);
	char number[24];
	for (int i = 0; i < count; i++)
		number[i] = digits[count - 1 - i];
	number[count] = '\0';
	append(line, &used, sizeof(line), "locklab-sim: the same command with --seed ");
	append(line, &used, sizeof(line), number);
	append(line, &used, sizeof(line), " on ");
	append(line, &used, sizeof(line), sim_machine.name);
	append(line, &used, sizeof(line), " replays this interleaving exactly\n");
	if (write(STDERR_FILENO, line, used) < 0)
		signal_number += 0; /* nothing more can be said */
	raise(signal_number); /* SA_RESETHAND: the default action, a crash as before */
}

static void say_the_seed_on_crashes(void)
{
	struct sigaction action;
	memset(&action, 0, sizeof(action));
	action.sa_handler = on_crash;
	action.sa_flags = (int)SA_RESETHAND;
	sigemptyset(&action.sa_mask);
	const int crashes[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	for (size_t i = 0; i < sizeof(crashes) / sizeof(crashes[0]); i++)
		sigaction(crashes[i], &action, NULL);
}

static void choose_switching(void)
{
	const char *choice = getenv("LOCKLAB_SIM_SWITCH");
	const char *why = NULL;
	if (choice != NULL && *choice != '\0' && strcmp(choice, "contexts") != 0) {
		if (strcmp(choice, "threads") != 0)
			sim_fatal("LOCKLAB_SIM_SWITCH is contexts or threads, not '%s'", choice);
		return;
	}
	sim_use_contexts = sim_contexts_supported(&why);
	if (!sim_use_contexts && choice != NULL && *choice != '\0')
		sim_fatal("LOCKLAB_SIM_SWITCH=contexts: %s", why);
}

void sim_runtime_init(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (real_syscall == NULL)
		sim_fatal("cannot find the C library's syscall()");
	clock_gettime(CLOCK_MONOTONIC_RAW, &host_start);
	keep_to_one_host_cpu();
	sim_machine_load();
	const char *spin = getenv("LOCKLAB_SIM_SPIN");
	if (spin != NULL && strcmp(spin, "exact") == 0)
		sim_spin_parking = false;
	else if (spin != NULL && *spin != '\0' && strcmp(spin, "park") != 0)
		sim_fatal("LOCKLAB_SIM_SPIN is park or exact, not '%s'", spin);
	const char *quiet = getenv("LOCKLAB_SIM_CLOCK_QUIET");
	if (quiet != NULL && *quiet != '\0') {
		char *end;
		unsigned long long value = strtoull(quiet, &end, 10);
		if (*end != '\0' || *quiet == '-' || value < 1 || value > 1000000)
			sim_fatal("LOCKLAB_SIM_CLOCK_QUIET is spin iterations, 1 to 1000000, not '%s'",
				  quiet);
		clock_quiet_iterations = value;
	}
	choose_switching();
	sim_coherence_init();
	sim_rq_init();
	sim_place_init();
	sim_progress_init();
	say_the_seed_on_crashes();
	/* No access by another CPU takes effect sooner than half the cheapest transfer, at its
	 * least draw, after it is issued (coherence.c, request_travels): a load hit within that of
	 * the horizon reads what it would have read in order. */
	uint64_t cheapest = sim_cheapest_transfer();
	sim_lookahead = (cheapest - sim_transfer_jitter_span(cheapest)) / 2;
	/* The first thread: the control thread (progress.c wakes it at a stall). */
	struct sim_thread *main_thread = sim_thread_new();
	main_thread->cpu = sim_service_cpu();
	main_thread->counted = false;
	main_thread->host = pthread_self();
	main_thread->host_tid = (int)real_syscall(SYS_gettid);
	main_thread->context.thread_pointer = __builtin_thread_pointer();
	sim_self = running = main_thread;
	sim_thread_requeue(main_thread);
}

void locklab_sim_set_seed(uint64_t value) { seed = value; }
uint64_t locklab_sim_seed(void) { return seed; }

/* What the threads whose places were taken by new ones counted (sim_thread_new). */
static struct locklab_sim_counts retired;

/* A place for a new thread: a program thread's that has ended and been joined (its host
 * thread is gone), its counts kept for the report, else a new one. A program that makes a
 * thread per turn (--churn) so runs as long as it likes. */
static struct sim_thread *free_place(void)
{
	for (int i = 0; i < nthreads; i++) {
		struct sim_thread *t = &threads[i];
		if (t->state != SIM_DONE || !t->joined || !t->counted)
			continue;
		for (int d = 0; d < SIM_DISTANCES; d++)
			retired.transfers[d] += t->transfers[d];
		retired.spin_parks += t->spin_parks;
		retired.futex_sleeps += t->futex_sleeps;
		if (t->clock > retired.virtual_cycles)
			retired.virtual_cycles = t->clock;
		uint64_t stream = t->latency_random; /* the next thread here draws on from it */
		memset(t, 0, sizeof(*t));
		t->id = i;
		t->latency_random = stream;
		return t;
	}
	if (nthreads == SIM_MAX_THREADS)
		sim_fatal("more than %d threads at once", SIM_MAX_THREADS);
	struct sim_thread *t = &threads[nthreads];
	t->id = nthreads++;
	return t;
}

struct sim_thread *sim_thread_new(void)
{
	struct sim_thread *t = free_place();
	t->counted = true;
	t->state = SIM_RUNNABLE;
	t->wake_at = SIM_FOREVER;
	t->slice_end = t->resched_at = SIM_FOREVER;
	t->recent_used_cpu = -1;
	t->clock = sim_self ? sim_self->clock : 0;
	t->heap_index = -1;
	sim_thread_requeue(t);
	return t;
}

struct sim_thread *sim_thread_at(int i) { return &threads[i]; }
int sim_thread_count(void) { return nthreads; }

struct sim_thread *sim_thread_of_host(pthread_t host)
{
	/* Newest first, joined ones skipped: the C library reuses a joined thread's pthread_t. */
	for (int i = nthreads - 1; i >= 0; i--)
		if (!threads[i].joined && pthread_equal(threads[i].host, host))
			return &threads[i];
	return NULL;
}

/* ---- the order ----------------------------------------------------------------------------- */
static uint32_t tie_of(const struct sim_thread *t, uint64_t clock)
{
	uint64_t x = seed ^ ((uint64_t)t->id * 0x9e3779b97f4a7c15ull) ^ (clock * 0xbf58476d1ce4e5b9ull);
	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 29;
	return (uint32_t)x;
}

/* When the thread can next run: its clock, its timeout, or never. */
static uint64_t ready_at(const struct sim_thread *t)
{
	switch (t->state) {
	case SIM_RUNNABLE:
		return t->clock;
	case SIM_SPIN_PARKED: /* a timeout only at its slice's end, on a shared CPU */
	case SIM_FUTEX_WAIT:
	case SIM_SLEEPING:
	case SIM_JOIN_WAIT:
		return t->wake_at;
	default:
		return SIM_FOREVER;
	}
}

static bool before(uint64_t clock_a, uint32_t tie_a, int id_a, uint64_t clock_b, uint32_t tie_b,
		   int id_b)
{
	if (clock_a != clock_b)
		return clock_a < clock_b;
	if (tie_a != tie_b)
		return tie_a < tie_b;
	return id_a < id_b;
}

/* The first thread in the order, `skip` left out; NULL if none can ever run: a scan of every
 * thread, the threads path's way (LOCKLAB_SIM_SWITCH=threads), kept to check the queue's. */
static struct sim_thread *first_ready_scan(const struct sim_thread *skip)
{
	struct sim_thread *best = NULL;
	uint64_t best_at = SIM_FOREVER;
	uint32_t best_tie = 0;
	for (int i = 0; i < nthreads; i++) {
		struct sim_thread *t = &threads[i];
		if (t == skip)
			continue;
		uint64_t at = ready_at(t);
		if (at == SIM_FOREVER)
			continue;
		uint32_t tie = tie_of(t, at);
		if (best == NULL || before(at, tie, t->id, best_at, best_tie, best->id)) {
			best = t;
			best_at = at;
			best_tie = tie;
		}
	}
	return best;
}

/*
 * The ready queue: a binary heap of every thread but the running one that can ever run, in
 * the order (ready_at, tie, id), so that finding the next costs log n, not a scan of 142
 * threads at every hand-over. The running thread's clock moves at every access and it is
 * never in the heap; every change to another thread's state, clock or timeout goes through
 * sim_thread_requeue.
 */
struct queued {
	uint64_t at;
	uint32_t tie;
	int id;
};
static struct queued heap[SIM_MAX_THREADS]; /* the keys inline: a sift reads one array */
static int heap_size;

static inline bool heap_before(const struct queued *a, const struct queued *b)
{
	return before(a->at, a->tie, a->id, b->at, b->tie, b->id);
}

static inline void heap_place(struct queued entry, int i)
{
	heap[i] = entry;
	threads[entry.id].heap_index = i;
}

static void heap_sift_up(int i)
{
	struct queued entry = heap[i];
	while (i > 0 && heap_before(&entry, &heap[(i - 1) / 2])) {
		heap_place(heap[(i - 1) / 2], i);
		i = (i - 1) / 2;
	}
	heap_place(entry, i);
}

static void heap_sift_down(int i)
{
	struct queued entry = heap[i];
	for (;;) {
		int child = 2 * i + 1;
		if (child >= heap_size)
			break;
		if (child + 1 < heap_size && heap_before(&heap[child + 1], &heap[child]))
			child++;
		if (!heap_before(&heap[child], &entry))
			break;
		heap_place(heap[child], i);
		i = child;
	}
	heap_place(entry, i);
}

/* Puts `entry` (another thread's, or nothing: id < 0) where `t` was. */
static void heap_replace(struct sim_thread *t, struct queued entry)
{
	int i = t->heap_index;
	t->heap_index = -1;
	if (entry.id < 0) {
		entry = heap[--heap_size];
		if (i == heap_size)
			return;
	}
	heap_place(entry, i);
	heap_sift_up(i);
	heap_sift_down(threads[entry.id].heap_index);
}

/* Its key now: id -1 when it is running or can never run. */
static struct queued key_of(const struct sim_thread *t)
{
	uint64_t at = t == running ? SIM_FOREVER : ready_at(t);
	if (at == SIM_FOREVER)
		return (struct queued){ 0, 0, -1 };
	return (struct queued){ at, tie_of(t, at), t->id };
}

void sim_thread_requeue(struct sim_thread *t)
{
	horizon_valid = false;
	struct queued entry = key_of(t);
	if (t->heap_index >= 0) {
		heap_replace(t, entry);
	} else if (entry.id >= 0) {
		heap_place(entry, heap_size++);
		heap_sift_up(heap_size - 1);
	}
}

static struct sim_thread *first_ready_queued(void) { return heap_size ? &threads[heap[0].id] : NULL; }

static void horizon_update(const struct sim_thread *self)
{
	struct sim_thread *next = sim_use_contexts ? first_ready_queued() : first_ready_scan(self);
	horizon_clock = next ? ready_at(next) : SIM_FOREVER;
	horizon_tie = next ? tie_of(next, horizon_clock) : 0;
	horizon_id = next ? next->id : 0;
	horizon_valid = true;
}

bool sim_may_run_ahead(void)
{
	const struct sim_thread *self = sim_self;
	if (!horizon_valid)
		horizon_update(self);
	return horizon_clock == SIM_FOREVER || self->clock < horizon_clock + sim_lookahead;
}

void sim_order_access(void)
{
	struct sim_thread *self = sim_self;
	if (!horizon_valid)
		horizon_update(self);
	if (self->clock < horizon_clock)
		return;
	if (!before(self->clock, tie_of(self, self->clock), self->id, horizon_clock, horizon_tie,
		    horizon_id))
		sim_reschedule();
}

/*
 * The baton: BATON_RUN lets a thread run; one that sleeps in the host's futex says so first
 * (BATON_ASLEEP), so a hand-over to a thread still polling costs no system call. A thread
 * that passed the baton polls a while before sleeping: the baton often comes straight back.
 */
enum { BATON_WAIT, BATON_RUN, BATON_ASLEEP };

static inline void host_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}
#define BATON_POLLS 4000

static void pass_baton(struct sim_thread *to)
{
	host_switches++;
	if (__atomic_exchange_n(&to->baton, BATON_RUN, __ATOMIC_ACQ_REL) == BATON_ASLEEP)
		host_futex(&to->baton, FUTEX_WAKE_PRIVATE, 1);
}

/* The one thread allowed to poll: on a host of two cores, a second poller would take the
 * core the woken thread needs. */
static int poller = -1;

static void sim_thread_wait_for_baton(struct sim_thread *t)
{
	__atomic_store_n(&poller, t->id, __ATOMIC_RELAXED);
	for (int polls = 0;; polls++) {
		uint32_t seen = __atomic_load_n(&t->baton, __ATOMIC_ACQUIRE);
		if (seen == BATON_RUN && __atomic_compare_exchange_n(&t->baton, &seen, BATON_WAIT,
								       false, __ATOMIC_ACQUIRE,
								       __ATOMIC_RELAXED))
			break;
		if (!one_host_cpu && polls < BATON_POLLS &&
		    __atomic_load_n(&poller, __ATOMIC_RELAXED) == t->id) {
			host_pause();
			continue;
		}
		seen = BATON_WAIT;
		if (__atomic_compare_exchange_n(&t->baton, &seen, BATON_ASLEEP, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED) ||
		    seen == BATON_ASLEEP)
			host_futex(&t->baton, FUTEX_WAIT_PRIVATE, BATON_ASLEEP);
	}
	sim_self = t;
}

/* Picks who runs next; a thread whose timeout came runs with the time it had waited for. */
static struct sim_thread *choose_next(void)
{
	sim_progress_check();
	struct sim_thread *next;
	if (!sim_use_contexts) {
		next = first_ready_scan(NULL);
	} else {
		next = first_ready_queued();
		uint64_t running_at = ready_at(running);
		if (running_at != SIM_FOREVER &&
		    (next == NULL || before(running_at, tie_of(running, running_at), running->id,
					    heap[0].at, heap[0].tie, heap[0].id)))
			next = running;
	}
	if (next == NULL)
		sim_fatal("every thread waits forever (a deadlock at %.6f virtual seconds)",
			  sim_cycles_to_ns(sim_self->clock) * 1e-9);
	if (next->state != SIM_RUNNABLE) {
		uint64_t at = next->wake_at;
		next->timed_out = true;
		next->wake_at = SIM_FOREVER;
		if (next->state == SIM_SPIN_PARKED || sim_rq_is_current(next)) {
			next->state = SIM_RUNNABLE;
			if (at > next->clock)
				next->clock = at;
		} else {
			sim_place_woken(next, NULL); /* a timer's wake: it may move to an idle CPU */
			sim_rq_arrive(next, at, false); /* its CPU may be another thread's now */
			if (next->state != SIM_RUNNABLE)
				return choose_next();
		}
	}
	horizon_valid = false;
	if (next != running) {
		/* The one sift a hand-over needs: the thread that ran takes the next one's place. */
		struct sim_thread *previous = running;
		running = next;
		if (next->heap_index >= 0)
			heap_replace(next, key_of(previous));
		else
			sim_thread_requeue(previous);
	}
	return next;
}

/* ---- contexts ------------------------------------------------------------------------------- */
#define PARK_STACK_BYTES (64 * 1024)

/* A thread whose code has ended: its host thread is released once the swap has left its stack. */
static struct sim_thread *finished;

static void release_finished(void)
{
	struct sim_thread *t = finished;
	if (t == NULL)
		return;
	finished = NULL;
	__atomic_store_n(&t->host_released, 1, __ATOMIC_RELEASE);
	host_futex(&t->host_released, FUTEX_WAKE_PRIVATE, 1);
}

static void swap_to(struct sim_thread *from, struct sim_thread *to)
{
	host_switches++;
	sim_context_swap(&from->context, &to->context);
	release_finished();
}

/* On the park stack, on the thread's own host thread: until its code has ended. */
static void park_host_thread(void *argument)
{
	struct sim_thread *t = argument;
	__atomic_store_n(&t->host_parked, 1, __ATOMIC_RELEASE);
	host_futex(&t->host_parked, FUTEX_WAKE_PRIVATE, 1);
	while (__atomic_load_n(&t->host_released, __ATOMIC_ACQUIRE) == 0)
		host_futex(&t->host_released, FUTEX_WAIT_PRIVATE, 0);
	struct sim_context left;
	sim_context_swap(&left, &t->context); /* into sim_thread_exit, on its own stack */
	__builtin_unreachable();
}

void sim_thread_begin(struct sim_thread *t)
{
	t->host_tid = (int)real_syscall(SYS_gettid);
	if (!sim_use_contexts) {
		sim_thread_wait_for_baton(t);
		return;
	}
	t->park_stack = sim_park_stack_new(PARK_STACK_BYTES);
	sim_context_prepare(&t->park_context, t->park_stack, PARK_STACK_BYTES, park_host_thread, t);
	t->context.thread_pointer = t->park_context.thread_pointer;
	sim_context_swap(&t->context, &t->park_context);
	/* Here on the first host thread, handed over to for the first time. */
	sim_self = t;
	release_finished();
}

void sim_thread_await_start(struct sim_thread *t)
{
	if (!sim_use_contexts)
		return;
	while (__atomic_load_n(&t->host_parked, __ATOMIC_ACQUIRE) == 0)
		host_futex(&t->host_parked, FUTEX_WAIT_PRIVATE, 0);
}

void sim_reschedule(void)
{
	struct sim_thread *self = sim_self;
	struct sim_thread *next = choose_next();
	if (next == self)
		return;
	if (sim_use_contexts) {
		swap_to(self, next);
	} else {
		pass_baton(next);
		sim_thread_wait_for_baton(self);
	}
	horizon_valid = false;
}

void sim_make_runnable(struct sim_thread *t, uint64_t clock)
{
	t->wake_at = SIM_FOREVER;
	t->timed_out = false;
	if (t->state != SIM_SPIN_PARKED && !sim_rq_is_current(t)) {
		if (t->state != SIM_CPU_WAIT && t->state != SIM_RUNNABLE)
			sim_place_woken(t, sim_self); /* select_task_rq(): it may move */
		sim_rq_arrive(t, clock, false); /* it slept: it runs when its CPU is free */
		return;
	}
	t->state = SIM_RUNNABLE;
	if (clock > t->clock)
		t->clock = clock;
	sim_thread_requeue(t);
}

void sim_thread_exit(struct sim_thread *t, void *result)
{
	t->result = result;
	t->state = SIM_DONE;
	/* Its joiner is woken while it still has its CPU (do_exit() wakes it, then schedules). */
	for (int i = 0; i < nthreads; i++)
		if (threads[i].state == SIM_JOIN_WAIT && threads[i].join_target == t)
			sim_make_runnable(&threads[i], t->clock);
	sim_rq_release(t);
	struct sim_thread *next = choose_next();
	if (!sim_use_contexts) {
		pass_baton(next);
		return;
	}
	finished = t;
	host_switches++;
	sim_context_swap(&t->context, &next->context);
	/* Here on its own host thread, released: it returns from its start routine and exits. */
	munmap(t->park_stack, PARK_STACK_BYTES);
}

/* ---- futexes --------------------------------------------------------------------------------- */
/*
 * The waker has paid one futex_wake (the system call and the first wake-up). The kernel wakes
 * sleepers one after another, in the order they slept (wake_up_q() after the hash bucket's
 * walk): each further one costs the waker another futex_wake, and each woken thread runs
 * context_switch after its own wake-up. So threads woken together start in turn, as on a real
 * machine, not at one instant that leaves their order to the line nearest each.
 */
int sim_wake_sleepers(enum sim_state state, uintptr_t addr, int count)
{
	int woken = 0;
	while (woken < count) {
		struct sim_thread *first = NULL;
		for (int i = 0; i < nthreads; i++) {
			struct sim_thread *t = &threads[i];
			if (t->state == state && t->futex_addr == addr &&
			    (first == NULL || t->futex_order < first->futex_order))
				first = t;
		}
		if (first == NULL)
			break;
		if (woken > 0)
			sim_self->clock += sim_machine.costs.futex_wake;
		/* its start: context_switch after the wake, or the profile's wake_to_run on an idle
		 * CPU (runqueue.c, sim_rq_arrive) */
		sim_make_runnable(first, sim_self->clock + (sim_machine.wake_to_run
								    ? 0
								    : sim_machine.costs.context_switch));
		woken++;
	}
	return woken;
}

int sim_futex_wake(uintptr_t addr, int count) { return sim_wake_sleepers(SIM_FUTEX_WAIT, addr, count); }

long sim_futex_wait(uintptr_t addr, uint32_t expected, uint64_t timeout_cycles)
{
	struct sim_thread *self = sim_self;
	sim_spin_dirty();
	sim_access(addr, sizeof(uint32_t), SIM_LOAD); /* the kernel reads the word */
	if (__atomic_load_n((uint32_t *)addr, __ATOMIC_RELAXED) != expected) {
		errno = EAGAIN;
		return -1;
	}
	self->clock += sim_machine.costs.futex_wait;
	self->state = SIM_FUTEX_WAIT;
	self->futex_addr = addr;
	self->futex_order = sim_next_sleep_order();
	self->wake_at = timeout_cycles == SIM_FOREVER ? SIM_FOREVER : self->clock + timeout_cycles;
	self->timed_out = false;
	self->futex_sleeps++;
	self->voluntary_switches++;
	sim_block();
	if (self->timed_out) {
		errno = ETIMEDOUT;
		return -1;
	}
	return 0;
}

/* ---- spin recognition ------------------------------------------------------------------------ */
void sim_spin_load(uintptr_t addr, unsigned int size, uint64_t value, bool hit)
{
	struct sim_thread *self = sim_self;
	if (!hit)
		self->iteration_dirty = true;
	if (self->npolls == SIM_POLLS) {
		self->iteration_dirty = true;
		return;
	}
	self->polls[self->npolls++] = (struct sim_poll){ addr, value, size };
}

void sim_spin_dirty(void)
{
	if (sim_self != NULL)
		sim_self->iteration_dirty = true;
}

void sim_spin_clock_read(void)
{
	if (sim_self == NULL)
		return;
	sim_self->iteration_dirty = true;
	sim_self->clock_read_iteration = sim_self->iterations;
}

void sim_block(void)
{
	struct sim_thread *self = sim_self;
	uint64_t asleep_from = self->clock;
	sim_end_overlap(self); /* what its core does next comes after the wake */
	if (self->state != SIM_CPU_WAIT)
		sim_rq_release(self); /* asleep, it leaves its CPU to whoever waits */
	horizon_valid = false;
	sim_reschedule();
	self->blocked_cycles += self->clock - asleep_from;
	sim_rq_resumed(self);
}

/*
 * Whether every word the last iteration polled still holds what it saw. A poll that hit ran
 * ahead of slower clocks, and a later poll of the same iteration may have waited for them:
 * a writer among them can have changed an earlier word, and woken nobody, since this thread
 * was not parked yet. Parking on that stale value would sleep through the change for good.
 */
static bool polls_still_current(const struct sim_thread *self)
{
	for (unsigned int i = 0; i < self->last_npolls; i++) {
		const struct sim_poll *poll = &self->last_polls[i];
		/* Wider polls keep no value (tsan_hooks.c's load()). */
		if (poll->size <= 8 && sim_peek((const void *)poll->addr, poll->size) != poll->value)
			return false;
	}
	return true;
}

static void park(struct sim_thread *self, uint64_t period)
{
	if (!polls_still_current(self)) {
		self->identical_iterations = 0;
		self->last_npolls = 0;
		return;
	}
	self->nparked_lines = 0;
	for (unsigned int i = 0; i < self->last_npolls; i++) { /* the iteration just ended */
		uintptr_t key = sim_line_of(self->last_polls[i].addr);
		bool seen = false;
		for (unsigned int j = 0; j < self->nparked_lines; j++)
			seen |= self->parked_lines[j] == key;
		if (seen)
			continue;
		struct sim_park_link *link = &self->park_links[self->nparked_lines];
		link->thread = self;
		self->parked_lines[self->nparked_lines++] = key;
		sim_line_park(key, link);
	}
	self->state = SIM_SPIN_PARKED;
	/* On a shared CPU it spins until its slice ends; with preemption off and the slice over
	 * already, until the line changes (need_resched() has been true since). */
	self->wake_at = self->preempt_count > 0 && self->slice_end <= self->clock ? SIM_FOREVER
										   : self->slice_end;
	self->parked_at = self->clock;
	sim_end_overlap(self); /* spin_polling stays set: its first miss after the wake is a poll */
	self->spin_period = period ? period : 1;
	self->spin_parks++;
	horizon_valid = false;
	sim_reschedule();
	self->identical_iterations = 0;
	self->last_npolls = 0;
	if (self->nparked_lines != 0) { /* its slice ended while it spun: it leaves the lines */
		sim_spin_unpark(self);
		sim_rq_check(self);
	}
}

void sim_spin_unpark(struct sim_thread *t)
{
	for (unsigned int j = 0; j < t->nparked_lines; j++)
		sim_line_unpark(&t->park_links[j]);
	t->nparked_lines = 0;
}

void sim_spin_iteration_end(void)
{
	struct sim_thread *self = sim_self;
	bool same = !self->iteration_dirty && self->npolls != 0 &&
		    self->npolls == self->last_npolls &&
		    memcmp(self->polls, self->last_polls, self->npolls * sizeof(self->polls[0])) == 0;
	self->identical_iterations = same ? self->identical_iterations + 1 : 0;
	uint64_t period = self->clock - self->iteration_start;
	self->last_npolls = self->iteration_dirty ? 0 : self->npolls;
	memcpy(self->last_polls, self->polls, self->npolls * sizeof(self->polls[0]));
	self->npolls = 0;
	self->iteration_dirty = false;
	self->iteration_start = self->clock;
	self->iterations++;
	self->spin_polling = true;
	sim_rq_check(self);
	if (same && sim_spin_parking &&
	    self->iterations - self->clock_read_iteration > clock_quiet_iterations)
		park(self, period);
}

void sim_wake_spinners(struct sim_park_link **parked, uint64_t when)
{
	/* Each woken thread leaves every line it parked on, this one's list too: the list
	 * shrinks from its head. The order of waking is no order: the ready queue sorts them. */
	while (*parked != NULL) {
		struct sim_thread *t = (*parked)->thread;
		sim_spin_unpark(t);
		/* Its next poll after the line left: whole iterations of the period it spun at. */
		uint64_t resume = t->parked_at;
		if (when > resume)
			resume += (when - resume + t->spin_period - 1) / t->spin_period * t->spin_period;
		sim_make_runnable(t, resume);
	}
}

/* ---- what the report reads ------------------------------------------------------------------- */
void locklab_sim_counts(struct locklab_sim_counts *out)
{
	*out = retired;
	for (int i = 0; i < nthreads; i++) {
		const struct sim_thread *t = &threads[i];
		if (t->clock > out->virtual_cycles)
			out->virtual_cycles = t->clock;
		if (!t->counted)
			continue;
		for (int d = 0; d < SIM_DISTANCES; d++)
			out->transfers[d] += t->transfers[d];
		out->spin_parks += t->spin_parks;
		out->futex_sleeps += t->futex_sleeps;
	}
	out->switches = host_switches;
}

double locklab_sim_host_seconds(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_RAW, &now);
	return (double)(now.tv_sec - host_start.tv_sec) +
	       (double)(now.tv_nsec - host_start.tv_nsec) * 1e-9;
}

void locklab_sim_describe_threads(void)
{
	static const char *const names[] = {
		[SIM_RUNNABLE] = "runnable",         [SIM_SPIN_PARKED] = "spinning",
		[SIM_FUTEX_WAIT] = "futex wait",     [SIM_SLEEPING] = "sleeping",
		[SIM_BARRIER_WAIT] = "barrier wait", [SIM_JOIN_WAIT] = "join wait",
		[SIM_CPU_WAIT] = "waiting for its CPU", [SIM_DONE] = "done",
	};
	fprintf(stderr, "locklab-sim: the threads at %.6f virtual s (seed %llu replays this):\n",
		sim_cycles_to_ns(sim_self->clock) * 1e-9, (unsigned long long)seed);
	for (int i = 0; i < nthreads; i++) {
		const struct sim_thread *t = &threads[i];
		fprintf(stderr, "  thread %d on %s %d: %s at %.6f s", t->id,
			t->counted ? "CPU" : "the control CPU", t->counted ? t->cpu : 0,
			names[t->state], sim_cycles_to_ns(t->clock) * 1e-9);
		if (t->state == SIM_FUTEX_WAIT)
			fprintf(stderr, ", on futex %#lx", (unsigned long)t->futex_addr);
		for (unsigned int j = 0; t->state == SIM_SPIN_PARKED && j < t->nparked_lines; j++)
			fprintf(stderr, "%s%#lx", j ? ", " : ", on line ",
				(unsigned long)((t->parked_lines[j] - 1) << sim_machine.line_shift));
		fputc('\n', stderr);
	}
}
