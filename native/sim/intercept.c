/* SPDX-License-Identifier: MIT */
/*
 * intercept.c - the C library's functions whose meaning is time or threads, made virtual.
 *
 * Defined in the simulator's executable, these come before the C library's in every lookup
 * (the engine's, a plugin's, a kernel lock's shim), as libtsan's interceptors do:
 *
 *   clock_gettime     the calling CPU's clock (CLOCK_MONOTONIC_RAW stays the host's, for the
 *                     runtime's own wall time);
 *   nanosleep         sleeps in virtual time;
 *   sched_yield       a system call; the next thread waiting for the CPU runs, if any;
 *   syscall(gettid)   the program thread's own host thread's id, whichever host thread runs it;
 *   syscall(futex)    FUTEX_WAIT and FUTEX_WAKE (and their bitset forms) on virtual threads,
 *                     woken first come first served as the kernel's futex queue does for
 *                     equal priorities; every other futex operation is refused in one line;
 *   pthread_create    a new thread where the kernel's fork balancing puts it (placement.c),
 *                     which it may share (runqueue.c), until it pins itself;
 *   pthread_join, pthread_timedjoin_np, pthread_barrier_*   waits in virtual time;
 *   getcpu            its virtual CPU and that CPU's node (CNA's numa_node_id(), unpinned);
 *   sched_setaffinity the thread moves to that virtual CPU, which it may share;
 *   getrusage(RUSAGE_THREAD)  virtual CPU time, the futex sleeps as voluntary switches and
 *                     the preemptions and yields to another thread as involuntary ones;
 *   pthread_setschedparam, sched_setscheduler and their get forms   the thread's policy in
 *                     the scheduler model (runqueue.c): SCHED_FIFO 1 to 99, or SCHED_OTHER;
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

/* Virtual CLOCK_REALTIME starts here, so timestamps look like dates (2025-01-01). */
#define SIM_EPOCH_S 1735689600ull

static void *real(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);
	if (fn == NULL)
		sim_fatal("cannot find the C library's %s()", name);
	return fn;
}

static uint64_t timespec_cycles(const struct timespec *ts)
{
	return sim_ns_to_cycles((double)ts->tv_sec * 1e9 + (double)ts->tv_nsec);
}

static void cycles_timespec(uint64_t cycles, struct timespec *ts)
{
	double ns = sim_cycles_to_ns(cycles);
	ts->tv_sec = (time_t)(ns * 1e-9);
	ts->tv_nsec = (long)(ns - (double)ts->tv_sec * 1e9);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*host)(clockid_t, struct timespec *);
	if (sim_self == NULL || id == CLOCK_MONOTONIC_RAW) {
		if (host == NULL)
			host = (int (*)(clockid_t, struct timespec *))real("clock_gettime");
		return host(id, ts);
	}
	sim_spin_clock_read();
	cycles_timespec(sim_self->clock, ts);
	if (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)
		ts->tv_sec += (time_t)SIM_EPOCH_S;
	return 0;
}

static void sleep_until(uint64_t wake_at)
{
	struct sim_thread *self = sim_self;
	sim_spin_dirty();
	if (wake_at <= self->clock)
		return;
	self->state = SIM_SLEEPING;
	self->wake_at = wake_at;
	self->voluntary_switches++;
	sim_block();
}

int nanosleep(const struct timespec *request, struct timespec *remaining)
{
	if (sim_self == NULL)
		sim_fatal("nanosleep outside a simulated thread");
	sleep_until(sim_self->clock + timespec_cycles(request));
	if (remaining != NULL)
		remaining->tv_sec = remaining->tv_nsec = 0;
	return 0;
}

int sched_yield(void)
{
	if (sim_self != NULL) {
		sim_spin_dirty();
		sim_self->clock += sim_machine.costs.futex_wake;
		sim_rq_yield(sim_self);
	}
	return 0;
}

static long futex(long *args)
{
	uintptr_t addr = (uintptr_t)args[0];
	int op = (int)args[1] & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
	const struct timespec *timeout = (const struct timespec *)args[3];
	switch (op) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET: {
		uint64_t limit = SIM_FOREVER;
		if (timeout != NULL) {
			limit = timespec_cycles(timeout);
			if (op == FUTEX_WAIT_BITSET) { /* an absolute time on the futex's clock */
				uint64_t now = sim_self->clock;
				uint64_t at = limit - ((int)args[1] & FUTEX_CLOCK_REALTIME
						       ? sim_ns_to_cycles(SIM_EPOCH_S * 1e9) : 0);
				limit = at > now ? at - now : 0;
			}
		}
		return sim_futex_wait(addr, (uint32_t)args[2], limit);
	}
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET:
		sim_spin_dirty();
		sim_self->clock += sim_machine.costs.futex_wake;
		return sim_futex_wake(addr, (int)args[2]);
	default:
		sim_fatal("futex operation %d is not simulated (only wait and wake: a lock whose "
			  "waiting is the kernel's own, a PI futex, cannot run here)", op);
	}
}

long syscall(long number, ...)
{
	static long (*host)(long, ...);
	long args[6];
	va_list ap;
	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		args[i] = va_arg(ap, long);
	va_end(ap);
	if (sim_self != NULL && number == SYS_futex)
		return futex(args);
	if (sim_self != NULL && number == SYS_gettid)
		return sim_self->host_tid; /* with contexts, every thread's code runs on one */
	if (sim_self != NULL && number == SYS_perf_event_open) {
		errno = ENOSYS; /* a simulated run has no hardware counters to read */
		return -1;
	}
	if (host == NULL)
		host = (long (*)(long, ...))real("syscall");
	return host(number, args[0], args[1], args[2], args[3], args[4], args[5]);
}

/* ---- threads --------------------------------------------------------------------------------- */
static void *thread_start(void *arg)
{
	struct sim_thread *t = arg;
	sim_thread_begin(t);
	void *result = t->start(t->arg);
	sim_thread_exit(t, result);
	/* What runs after the start routine, the C library's thread-specific data destructors
	 * (the kernel shim's task records), is teardown: unordered, and free. */
	sim_self = NULL;
	return result;
}

/* The real-time priority a policy and parameter ask for, or -1 if they are invalid. */
static int rt_priority_of(int policy, const struct sched_param *param)
{
	int asked = param != NULL ? param->sched_priority : -1;
	if (policy == SCHED_FIFO || policy == SCHED_RR)
		return asked >= 1 && asked <= 99 ? asked : -1;
	if (policy == SCHED_OTHER || policy == SCHED_BATCH || policy == SCHED_IDLE)
		return asked == 0 ? 0 : -1;
	return -1;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
		   void *arg)
{
	static int (*host)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (host == NULL)
		host = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))real(
			"pthread_create");
	sim_runtime_init();
	/* What the attributes say of scheduling goes to the model; the host thread, which only
	 * parks or runs the code when its turn comes, gets the rest (its stack). */
	int rt_priority = sim_self->rt_priority, inherit = PTHREAD_INHERIT_SCHED, pinned_to = -1;
	pthread_attr_t plain;
	pthread_attr_init(&plain);
	if (attr != NULL) {
		int policy;
		struct sched_param param;
		size_t stack = 0;
		cpu_set_t set;
		pthread_attr_getinheritsched(attr, &inherit);
		if (inherit == PTHREAD_EXPLICIT_SCHED && pthread_attr_getschedpolicy(attr, &policy) == 0 &&
		    pthread_attr_getschedparam(attr, &param) == 0) {
			rt_priority = rt_priority_of(policy, &param);
			if (rt_priority < 0) {
				pthread_attr_destroy(&plain);
				return EINVAL;
			}
		}
		if (pthread_attr_getaffinity_np(attr, sizeof(set), &set) == 0 &&
		    CPU_COUNT(&set) == 1)
			for (int c = 0; c < sim_machine.cpus && pinned_to < 0; c++)
				pinned_to = CPU_ISSET(c, &set) ? c : -1;
		if (pthread_attr_getstacksize(attr, &stack) == 0 && stack != 0)
			pthread_attr_setstacksize(&plain, stack);
	}
	/* Linux: a new thread inherits its creator's affinity (one CPU here, when pinned). */
	if (pinned_to < 0 && sim_self->counted && sim_self->pinned)
		pinned_to = sim_self->cpu;
	int cpu = pinned_to >= 0 ? pinned_to : sim_place_new(sim_self);
	struct sim_thread *t = sim_thread_new();
	t->pinned = pinned_to >= 0;
	t->recent_used_cpu = cpu; /* wake_up_new_task() */
	sim_rq_set_cpu(t, cpu);
	t->rt_priority = rt_priority;
	t->start = start;
	t->arg = arg;
	sim_rq_arrive(t, sim_self->clock + sim_machine.costs.context_switch, true);
	/* With contexts, the new host thread only parks: it takes no signal meant for the
	 * process (Ctrl-C), which the first host thread, running every context, handles. */
	sigset_t every, before;
	sigfillset(&every);
	if (sim_use_contexts)
		pthread_sigmask(SIG_SETMASK, &every, &before);
	int err = host(thread, &plain, thread_start, t);
	pthread_attr_destroy(&plain);
	if (sim_use_contexts)
		pthread_sigmask(SIG_SETMASK, &before, NULL);
	if (err != 0) {
		sim_rq_forget(t, sim_self->clock);
		sim_thread_requeue(t);
		return err;
	}
	t->host = *thread;
	sim_thread_await_start(t);
	return 0;
}

static int join(pthread_t thread, void **result, uint64_t wake_at)
{
	static int (*host)(pthread_t, void **);
	if (host == NULL)
		host = (int (*)(pthread_t, void **))real("pthread_join");
	struct sim_thread *self = sim_self, *target = sim_thread_of_host(thread);
	if (target == NULL)
		return ESRCH;
	if (target->state != SIM_DONE) { /* a futex wait in the C library: a voluntary switch */
		self->voluntary_switches++;
		self->state = SIM_JOIN_WAIT;
		self->join_target = target;
		self->wake_at = wake_at;
		self->timed_out = false;
		sim_block();
		if (self->timed_out)
			return ETIMEDOUT;
	}
	target->joined = true;
	return host(thread, result); /* the host thread is leaving, or gone */
}

int pthread_join(pthread_t thread, void **result) { return join(thread, result, SIM_FOREVER); }

int pthread_timedjoin_np(pthread_t thread, void **result, const struct timespec *abstime)
{
	uint64_t at = timespec_cycles(abstime);
	uint64_t epoch = sim_ns_to_cycles(SIM_EPOCH_S * 1e9);
	return join(thread, result, at > epoch ? at - epoch : 0);
}

/* A barrier lives in the pthread_barrier_t it is given: every call on it comes here. */
struct sim_barrier {
	unsigned int count;
	unsigned int arrived;
};
_Static_assert(sizeof(struct sim_barrier) <= sizeof(pthread_barrier_t), "barrier fits");

int pthread_barrier_init(pthread_barrier_t *barrier, const pthread_barrierattr_t *attr,
			 unsigned int count)
{
	(void)attr;
	if (count == 0)
		return EINVAL;
	*(struct sim_barrier *)barrier = (struct sim_barrier){ count, 0 };
	return 0;
}

int pthread_barrier_destroy(pthread_barrier_t *barrier)
{
	(void)barrier;
	return 0;
}

/*
 * The last to arrive wakes the others as glibc's barrier does, with one FUTEX_WAKE of all:
 * one after another in the order they arrived (sim_wake_sleepers).
 */
int pthread_barrier_wait(pthread_barrier_t *barrier)
{
	struct sim_barrier *b = (struct sim_barrier *)barrier;
	struct sim_thread *self = sim_self;
	sim_spin_dirty();
	if (++b->arrived < b->count) {
		self->state = SIM_BARRIER_WAIT;
		self->futex_addr = (uintptr_t)barrier;
		self->futex_order = sim_next_sleep_order();
		sim_block();
		return 0;
	}
	int others = (int)b->arrived - 1;
	b->arrived = 0;
	self->clock += sim_machine.costs.futex_wake;
	sim_wake_sleepers(SIM_BARRIER_WAIT, (uintptr_t)barrier, others);
	return PTHREAD_BARRIER_SERIAL_THREAD;
}

/* The CPU and node the thread runs on, as the vDSO's getcpu() reads them: a per-CPU word, a
 * hit (the kernel's numa_node_id() is a per-CPU read too). */
int getcpu(unsigned int *cpu, unsigned int *node)
{
	struct sim_thread *self = sim_self;
	if (self == NULL || !self->counted || self->cpu >= sim_machine.cpus) {
		if (cpu != NULL)
			*cpu = 0;
		if (node != NULL)
			*node = 0;
		return 0;
	}
	self->clock += sim_machine.costs.hit;
	if (cpu != NULL)
		*cpu = (unsigned int)self->cpu;
	if (node != NULL)
		*node = (unsigned int)sim_machine.cpu[self->cpu].node;
	return 0;
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	struct sim_thread *self = sim_self;
	if (self == NULL || pid != 0) {
		errno = EINVAL;
		return -1;
	}
	if (!self->counted)
		return 0; /* the control thread keeps to its own CPU (sim_service_cpu()) */
	int cpu = -1;
	for (int i = 0; i < sim_machine.cpus && i < (int)(size * 8); i++)
		if (CPU_ISSET_S(i, size, set)) {
			if (cpu >= 0)
				sim_fatal("a thread pinned to several CPUs: the simulator places "
					  "each thread on one");
			cpu = i;
		}
	if (cpu < 0)
		sim_fatal("a thread pinned to no CPU of %s", sim_machine.name);
	int old = self->cpu;
	if (old == cpu) {
		self->pinned = true;
		return 0;
	}
	/* A provisional place gives way: a thread not pinned yet takes this one's; a pinned one
	 * shares its CPU (runqueue.c). */
	sim_rq_detach(self);
	for (int i = 0; i < sim_thread_count(); i++) {
		struct sim_thread *t = sim_thread_at(i);
		if (t != self && t->counted && t->state != SIM_DONE && t->cpu == cpu && !t->pinned) {
			sim_rq_detach(t);
			sim_rq_set_cpu(t, old);
			sim_rq_attach(t);
		}
	}
	sim_rq_set_cpu(self, cpu);
	self->pinned = true;
	sim_rq_attach(self);
	sim_rq_settle(old, self->clock);
	sim_rq_settle(cpu, self->clock);
	if (self->state == SIM_CPU_WAIT)
		sim_block();
	return 0;
}

int getrusage(int who, struct rusage *usage)
{
	static int (*host)(int, struct rusage *);
	if (sim_self == NULL || who != RUSAGE_THREAD) {
		if (host == NULL)
			host = (int (*)(int, struct rusage *))real("getrusage");
		return host(who, usage);
	}
	memset(usage, 0, sizeof(*usage));
	double ns = sim_cycles_to_ns(sim_self->clock - sim_self->blocked_cycles);
	usage->ru_utime.tv_sec = (time_t)(ns * 1e-9);
	usage->ru_utime.tv_usec = (long)((ns - (double)usage->ru_utime.tv_sec * 1e9) * 1e-3);
	usage->ru_nvcsw = (long)sim_self->voluntary_switches;
	usage->ru_nivcsw = (long)sim_self->involuntary_switches;
	return 0;
}

/* ---- priorities: SCHED_FIFO (SCHED_RR taken as FIFO) and SCHED_OTHER (runqueue.c) ---------- */

static int set_priority(struct sim_thread *t, int policy, const struct sched_param *param)
{
	int level = rt_priority_of(policy, param);
	if (level < 0)
		return EINVAL;
	sim_spin_dirty();
	sim_self->clock += sim_machine.costs.futex_wake; /* a system call on a run queue, as yield */
	sim_rq_set_priority(t, level, sim_self->clock);
	sim_rq_check(sim_self); /* a thread that lowered itself may give its CPU up now */
	return 0;
}

static int policy_of(const struct sim_thread *t)
{
	return t->rt_priority > 0 ? SCHED_FIFO : SCHED_OTHER;
}

/* pid 0: the caller; else the program thread whose gettid() that is. */
static struct sim_thread *thread_of_pid(pid_t pid)
{
	if (pid == 0)
		return sim_self;
	for (int i = 0; i < sim_thread_count(); i++) {
		struct sim_thread *t = sim_thread_at(i);
		if (t->host_tid == pid && t->state != SIM_DONE)
			return t;
	}
	return NULL;
}

int pthread_setschedparam(pthread_t thread, int policy, const struct sched_param *param)
{
	struct sim_thread *t = sim_self != NULL ? sim_thread_of_host(thread) : NULL;
	return t == NULL ? ESRCH : set_priority(t, policy, param);
}

int pthread_getschedparam(pthread_t thread, int *policy, struct sched_param *param)
{
	const struct sim_thread *t = sim_self != NULL ? sim_thread_of_host(thread) : NULL;
	if (t == NULL)
		return ESRCH;
	*policy = policy_of(t);
	param->sched_priority = t->rt_priority;
	return 0;
}

int sched_setscheduler(pid_t pid, int policy, const struct sched_param *param)
{
	struct sim_thread *t = sim_self != NULL ? thread_of_pid(pid) : NULL;
	int err = t == NULL ? ESRCH : set_priority(t, policy & ~SCHED_RESET_ON_FORK, param);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

int sched_getscheduler(pid_t pid)
{
	const struct sim_thread *t = sim_self != NULL ? thread_of_pid(pid) : NULL;
	if (t == NULL) {
		errno = ESRCH;
		return -1;
	}
	return policy_of(t);
}

int sched_getparam(pid_t pid, struct sched_param *param)
{
	const struct sim_thread *t = sim_self != NULL ? thread_of_pid(pid) : NULL;
	if (t == NULL) {
		errno = ESRCH;
		return -1;
	}
	param->sched_priority = t->rt_priority;
	return 0;
}

/* ---- what cannot run here ---------------------------------------------------------------------- */

/*
 * Whether a shared object's code calls the simulator's hooks: built with GCC's
 * -fsanitize=thread, it has undefined __tsan_* symbols in its dynamic symbol table. This is
 * the one place the rule lives (`locklab run --sim` meets it here, when it lists the spec's
 * locks). Read from the file, as ELF lays it out; a file this does not read (not 64-bit ELF)
 * passes, since dlopen has already taken it.
 */
static bool calls_the_hooks(const unsigned char *image, size_t size)
{
	const Elf64_Ehdr *header = (const void *)image;
	if (size < sizeof(*header) || memcmp(image, ELFMAG, SELFMAG) != 0 ||
	    image[EI_CLASS] != ELFCLASS64 || header->e_shoff == 0 ||
	    header->e_shoff + (size_t)header->e_shnum * sizeof(Elf64_Shdr) > size)
		return true;
	const Elf64_Shdr *sections = (const void *)(image + header->e_shoff);
	for (unsigned int i = 0; i < header->e_shnum; i++) {
		const Elf64_Shdr *symbols = &sections[i];
		if (symbols->sh_type != SHT_DYNSYM || symbols->sh_link >= header->e_shnum)
			continue;
		const Elf64_Shdr *names = &sections[symbols->sh_link];
		if (symbols->sh_offset + symbols->sh_size > size ||
		    names->sh_offset + names->sh_size > size)
			return true;
		const Elf64_Sym *symbol = (const void *)(image + symbols->sh_offset);
		for (size_t j = 0; j < symbols->sh_size / sizeof(Elf64_Sym); j++) {
			if (symbol[j].st_shndx != SHN_UNDEF || symbol[j].st_name >= names->sh_size)
				continue;
			const char *name = (const char *)image + names->sh_offset + symbol[j].st_name;
			if (strncmp(name, "__tsan_", 7) == 0)
				return true;
		}
		return false;
	}
	return false;
}

const char *locklab_sim_uninstrumented_plugin(const char *path)
{
	struct stat status;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &status) != 0 || status.st_size <= 0) {
		close(fd);
		return NULL;
	}
	size_t size = (size_t)status.st_size;
	void *image = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (image == MAP_FAILED)
		return NULL;
	bool instrumented = calls_the_hooks(image, size);
	munmap(image, size);
	return instrumented ? NULL
			    : "it was built without the simulator's instrumentation, so a thread "
			      "spinning in it would never yield to the model; build it for the "
			      "simulator (locklab run --sim compiles a C source, make build puts the "
			      "built-in plugins in build/sim/plugins/)";
}

const char *locklab_sim_unsupported_lock(const char *name)
{
	if (strncmp(name, "pthread_", 8) == 0)
		return "it is the C library's code, which locklab does not compile, and it waits in "
		       "system calls the simulator cannot see";
	if (strcmp(name, "pi_futex") == 0)
		return "its waiting is the kernel's PI futex, not code locklab compiles";
	return NULL;
}
