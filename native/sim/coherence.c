/* SPDX-License-Identifier: MIT */
/*
 * coherence.c - what an access costs: each line is held by its cores in a state, as an
 * invalidation protocol (MESI and its relatives) keeps it:
 *
 *   owner >= 0        one core holds it exclusive or modified: its loads and stores hit;
 *   sharers           cores holding a read-only copy: their loads hit;
 *   a load miss       copies the line from the owner (which keeps a shared copy), else from
 *                     the nearest sharer, else from memory at the line's home node;
 *   a store or RMW    takes the line exclusive: the data comes from the owner or nearest
 *                     sharer, and every other copy is invalidated; it completes when the
 *                     farthest copy has been invalidated (the acknowledgements' round trip);
 *   an RMW            costs the profile's `atomic` on top (a locked instruction, an LSE atomic).
 *
 * A miss's request travels half the transfer to the line's holder, and the access takes effect
 * when it arrives: a load reads, and a store or RMW takes the line, after whatever other CPUs
 * did in the meantime (a holder that re-takes a lock before a spinner's request arrives still
 * finds the line its own, as on real hardware). The answer travels the other half. A line
 * answers one transfer at a time (busy_until), each occupying it for the answer's half, so
 * waiters that all miss on a line held exclusive queue behind each other; a line already
 * shared (clean) answers each reader in a shorter share of that (a fitted constant, below),
 * as a shared cache serves many readers of one line. A line's home is the node of the CPU that touched it first (Linux's first-touch
 * policy). Lines never leave a cache for lack of room: there are no capacity or conflict
 * misses, and nothing is prefetched.
 *
 * A line only ever touched by one CPU is private: its accesses hit (after the first touch's
 * memory fetch), and only its loads past the lookahead are ordered against other CPUs, which
 * is what keeps the engine's own per-thread bookkeeping cheap to simulate. The first access
 * by a second CPU makes it shared for good.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runtime.h"

#define SHARER_WORDS ((SIM_MAX_CPUS + 1 + 63) / 64)

/*
 * What every access reads comes first, with the sharers of the first 192 CPUs, in one cache
 * line of the host's: a look-up is one miss at most on machines up to that size (it was the
 * costliest step of a contended run at 96 CPUs, three lines per entry).
 */
struct sim_line {
	_Alignas(64) uintptr_t key; /* line number + 1; 0: an empty slot */
	uint64_t busy_until;
	int owner; /* -1: none */
	int last_cpu;
	int home_node;
	bool shared;
	struct sim_park_link *parked; /* the spinners parked on it */
	uint64_t sharers[SHARER_WORDS]; /* only the first sharer_words are ever set */
	/* For the report of the costliest lines: transfers by distance, and the code that last
	 * caused one by a load and by a store or RMW. */
	uint32_t transfers[SIM_DISTANCES];
	const void *last_load_pc, *last_write_pc;
};
_Static_assert(offsetof(struct sim_line, sharers) + 3 * sizeof(uint64_t) <= 64,
	       "the hot part in one line");

static struct sim_line *table;
static size_t table_size; /* a power of two */
static size_t table_used;
static int sharer_words; /* enough for the machine's CPUs and the service CPU */

/* Slots to start with: a table grows when half full. */
#define INITIAL_TABLE_SLOTS (1u << 16)

static inline size_t slot_of(uintptr_t key) { return (key * 0x9e3779b97f4a7c15ull) >> 20; }

/*
 * Fresh anonymous pages, which the kernel zeroes when first touched: a table cleared up front
 * was 12 MB of page faults before the first access, most of a short run's start.
 */
static void table_grow(void)
{
	size_t old_size = table_size;
	struct sim_line *old = table;
	table_size = old_size ? old_size * 2 : INITIAL_TABLE_SLOTS;
	table = mmap(NULL, table_size * sizeof(*table), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (table == MAP_FAILED)
		sim_fatal("out of memory for the line table (%zu lines)", table_used);
	for (size_t i = 0; i < old_size; i++) {
		if (old[i].key == 0)
			continue;
		size_t j = slot_of(old[i].key) & (table_size - 1);
		while (table[j].key != 0)
			j = (j + 1) & (table_size - 1);
		table[j] = old[i];
		if (table[j].parked != NULL) /* the list's first link points at its head */
			table[j].parked->pprev = &table[j].parked;
	}
	if (old != NULL)
		munmap(old, old_size * sizeof(*old));
}

/* The line's entry; a new one is created in the state of a first touch by `cpu`. */
static struct sim_line *line_find(uintptr_t key, int cpu, bool *created)
{
	size_t j = slot_of(key) & (table_size - 1);
	while (table[j].key != key) {
		if (table[j].key == 0) {
			if (table_used * 2 >= table_size) { /* grow only to insert: found lines stay */
				table_grow();
				return line_find(key, cpu, created);
			}
			struct sim_line *line = &table[j];
			memset(line, 0, sizeof(*line));
			line->key = key;
			line->owner = cpu;
			line->last_cpu = cpu;
			line->home_node = sim_machine.cpu[cpu].node;
			table_used++;
			*created = true;
			return line;
		}
		j = (j + 1) & (table_size - 1);
	}
	*created = false;
	return &table[j];
}

uintptr_t sim_line_of(uintptr_t addr) { return (addr >> sim_machine.line_shift) + 1; }

static inline bool is_sharer(const struct sim_line *l, int cpu)
{
	return (l->sharers[cpu / 64] >> (cpu % 64)) & 1;
}

static inline void add_sharer(struct sim_line *l, int cpu)
{
	l->sharers[cpu / 64] |= 1ull << (cpu % 64);
}

/*
 * The cheapest and the dearest transfer from any other CPU to each, the service CPU's
 * included: a search over the sharers stops once it meets one, as no other can beat it.
 */
static uint64_t cheapest_to[SIM_MAX_CPUS + 1], dearest_to[SIM_MAX_CPUS + 1];

static void transfer_bounds_init(void)
{
	enum locklab_sim_distance ignored;
	for (int to = 0; to <= sim_machine.cpus; to++) {
		cheapest_to[to] = SIM_FOREVER;
		dearest_to[to] = 0;
		for (int from = 0; from <= sim_machine.cpus; from++) {
			if (from == to)
				continue;
			uint64_t c = sim_transfer_cost(to, from, &ignored);
			cheapest_to[to] = c < cheapest_to[to] ? c : cheapest_to[to];
			dearest_to[to] = c > dearest_to[to] ? c : dearest_to[to];
		}
	}
}

/* The nearest copy other than `cpu`'s, or -1 when no cache holds one: the first in CPU
 * order among the nearest. */
static int nearest_copy(const struct sim_line *l, int cpu, uint64_t *cost,
			enum locklab_sim_distance *distance)
{
	if (l->owner >= 0 && l->owner != cpu) {
		*cost = sim_transfer_cost(cpu, l->owner, distance);
		return l->owner;
	}
	int best = -1;
	for (int w = 0; w < sharer_words; w++)
		for (uint64_t bits = l->sharers[w]; bits != 0; bits &= bits - 1) {
			int other = w * 64 + __builtin_ctzll(bits);
			if (other == cpu)
				continue;
			enum locklab_sim_distance d;
			uint64_t c = sim_transfer_cost(cpu, other, &d);
			if (best < 0 || c < *cost) {
				best = other;
				*cost = c;
				*distance = d;
				if (c == cheapest_to[cpu])
					return best;
			}
		}
	return best;
}

/* The slowest invalidation acknowledgement among the copies other than `cpu`'s. */
static uint64_t farthest_copy_cost(const struct sim_line *l, int cpu)
{
	uint64_t worst = 0;
	enum locklab_sim_distance ignored;
	for (int w = 0; w < sharer_words; w++)
		for (uint64_t bits = l->sharers[w]; bits != 0; bits &= bits - 1) {
			int other = w * 64 + __builtin_ctzll(bits);
			if (other == cpu)
				continue;
			uint64_t c = sim_transfer_cost(cpu, other, &ignored);
			if (c > worst)
				worst = c;
			if (worst == dearest_to[cpu])
				return worst;
		}
	return worst;
}

/* LOCKLAB_SIM_TRACE=FROM:TO: each transfer answered in that window of virtual time, as it
 * happens (docs/simulator.md, "Which lines cost the transfers"). */
static uint64_t trace_from, trace_to; /* cycles; an empty window when unset */

static void print_code_place(const void *address);

/* A transfer to a program thread, starting at `start`: counted by distance, for the thread and
 * the line, with the code that caused it; printed if it falls in the trace's window. */
static void count_transfer(struct sim_thread *self, struct sim_line *l, uint64_t start,
			   enum locklab_sim_distance distance, bool write)
{
	if (!self->counted)
		return;
	self->transfers[distance]++;
	l->transfers[distance]++;
	*(write ? &l->last_write_pc : &l->last_load_pc) = self->pc;
	if (start < trace_from || start >= trace_to)
		return;
	void *address = (void *)((l->key - 1) << sim_machine.line_shift);
	fprintf(stderr, "locklab-sim: transfer %.1f ns cpu%d line %p %s %s ",
		sim_cycles_to_ns(start), self->cpu, address, write ? "store" : "load",
		locklab_sim_distance_names[distance]);
	print_code_place(self->pc);
	fputc('\n', stderr);
}

/*
 * The answer to a request that has reached the line: it takes `cost` to arrive, queued behind
 * the answer the line is serving, and occupies the line for `occupancy`. Returns when it
 * arrives.
 */
static uint64_t answer_from(struct sim_thread *self, struct sim_line *l, uint64_t from,
			    uint64_t cost, uint64_t occupancy, enum locklab_sim_distance distance,
			    bool write)
{
	uint64_t start = from > l->busy_until ? from : l->busy_until;
	l->busy_until = start + occupancy;
	count_transfer(self, l, start, distance, write);
	return start + cost;
}

static uint64_t answer(struct sim_thread *self, struct sim_line *l, uint64_t cost,
		       uint64_t occupancy, enum locklab_sim_distance distance, bool write)
{
	return answer_from(self, l, self->clock, cost, occupancy, distance, write);
}

/*
 * A miss's request travels half the transfer before it reaches the line's holder, and the
 * access takes effect there and then: what a load reads, and who owns the line, is decided
 * half a transfer after the access was issued, after everything other CPUs did meanwhile (a
 * holder that re-takes a lock in that time still finds the line its own). Only the answer's
 * half occupies the line. The state is decided when the request arrives; a write's
 * invalidations are charged as one transfer, the slower of the data and the farthest ack.
 */
static struct sim_line *request_travels(struct sim_thread *self, uintptr_t key, uint64_t cost)
{
	bool created;
	self->clock += cost / 2;
	sim_order_access();
	return line_find(key, self->cpu, &created);
}

/*
 * A plain store that misses waits in the store buffer: its thread goes on once the store has
 * taken effect, and the answer completes behind it. A locked instruction or a full barrier
 * drains the buffer first (sim_drain_stores), as on x86.
 */
static void buffer_store(struct sim_thread *self, uint64_t done)
{
	if (done > self->stores_done_at)
		self->stores_done_at = done;
}

void sim_end_overlap(struct sim_thread *self)
{
	self->miss_lag = 0;
	self->loads_done_at = 0;
	self->nrun_lines = 0;
	self->npointer_lines = 0;
}

void sim_drain_stores(struct sim_thread *self)
{
	if (self->stores_done_at > self->clock)
		self->clock = self->stores_done_at;
	sim_end_overlap(self);
}

/*
 * Overlapped misses, with the profile's fill buffers: a core sends the request of each miss
 * when it reaches the access, without waiting for the misses before it, up to one miss per
 * fill buffer (Intel's and AMD's optimisation guides, cited in each profile). The thread's
 * clock waits for a miss; its core did not: miss_lag is how far the clock has run ahead of
 * the core since the run of overlapped misses began, and a miss's request left at the clock
 * less that lag, or when the oldest miss in flight completed if every buffer is taken. It
 * takes effect when the request arrives and never before the thread's clock, so that a
 * thread's accesses keep their order (x86's TSO keeps stores in order and loads in order;
 * the hooks see an access before it is made, so its effect cannot wait): a store's value is
 * seen, and a load reads, at that later time, by at most the lag. The answer comes back from
 * the arrival, so independent misses cost about one transfer together. A store's request
 * leaves only once the run's loads have their data (overlapped_request).
 *
 * The hooks see addresses, not what an address was computed from. The stated rule: a miss
 * depends on the run before it, and waits in turn, if its line is one a load of this run
 * missed already (a spin polling its flag again), or one that an 8-byte load of this run
 * returned as a value (a pointer followed: MCS's node->next); an address computed from a
 * loaded index is not seen, and goes as independent. A spin's poll that misses waits in
 * turn, and nothing after it overlaps it: the loop's exit is a branch the core predicted
 * the other way, and what follows runs once the poll's data is back. A poll is the first
 * load miss after a spin iteration ended (cpu_relax) or a parked spin woke. An RMW, a
 * barrier, a sleep or a parked spin ends the run (sim_end_overlap), as does a miss that
 * waits in turn.
 */
static bool line_in(const uintptr_t *lines, unsigned int n, uintptr_t key)
{
	for (unsigned int i = 0; i < n; i++)
		if (lines[i] == key)
			return true;
	return false;
}

static bool may_overlap(const struct sim_thread *self, uintptr_t key, bool load)
{
	unsigned int most = (unsigned int)sim_machine.fill_buffers;
	if (most == 0 || line_in(self->pointer_lines, self->npointer_lines, key))
		return false;
	return !load || (self->nrun_lines < most && !line_in(self->run_lines, self->nrun_lines, key));
}

void sim_note_loaded(struct sim_thread *self, uint64_t value)
{
	uintptr_t key = sim_line_of((uintptr_t)value);
	if (line_in(self->pointer_lines, self->npointer_lines, key))
		return;
	if (self->npointer_lines == (unsigned int)sim_machine.fill_buffers)
		sim_end_overlap(self); /* too many to follow: the next miss starts a run */
	else
		self->pointer_lines[self->npointer_lines++] = key;
}

struct overlapped {
	uint64_t core;    /* where the core is once it has sent the request */
	uint64_t arrives; /* when the request reaches the line */
};

static uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* A store's request also waits for the data of the run's loads: the store may depend on them
 * (by its value, or by a branch: a spin's exit), and x86 commits it after them. The core goes
 * on meanwhile, as it leaves the store in its buffer. */
static struct sim_line *overlapped_request(struct sim_thread *self, uintptr_t key, uint64_t cost,
					   bool load, struct overlapped *miss)
{
	uint64_t reached = self->clock - self->miss_lag;
	miss->core = later(reached, self->fills_done_at[self->fill_next]);
	uint64_t issued = load ? miss->core : later(miss->core, self->loads_done_at);
	miss->arrives = issued + cost / 2;
	self->clock = later(self->clock, miss->arrives);
	bool created;
	sim_order_access();
	return line_find(key, self->cpu, &created);
}

/* The miss's answer is back at `done`: its fill buffer is free from then on. */
static void overlapped_done(struct sim_thread *self, const struct overlapped *miss, uint64_t done)
{
	self->fills_done_at[self->fill_next] = done;
	self->fill_next = (self->fill_next + 1) % (unsigned int)sim_machine.fill_buffers;
	self->miss_lag = self->clock - miss->core;
}

/*
 * How long a clean line's answer to one reader occupies it, as a share of the answer's
 * travel. Fitted, the model's one fitted constant: on the only many-core machine locklab has
 * run on (machines/lent-xeon-16.toml, docs/simulator.md), 40% put ticket and TTAS from 4 to
 * 16 writers within 0.73 to 1.59 of real, where one hit (0%) left them 1.6 to 2 times high
 * and 80% made ticket fall faster than real. Measured there since (line-latency --fanout):
 * about 20% per further reader, after a first answer about twice the model's half transfer
 * (docs/simulator.md, "A second lease"); the fit stands for both until both are modelled.
 */
#define SHARED_READ_OCCUPANCY_PERCENT 40

static bool line_has_copies(const struct sim_line *l)
{
	for (int w = 0; w < sharer_words; w++)
		if (l->sharers[w] != 0)
			return true;
	return false;
}

/* Vigna's splitmix64 step: a well-mixed 64-bit value from any seed, 0 included. */
static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * A transfer costs its profile figure give or take sim_transfer_jitter_span(), drawn uniformly
 * from a stream per thread that the seed fixes. Real transfers vary (the interconnect's other
 * traffic, which slice of the shared cache answers); with every transfer the same, a few CPUs'
 * loops lock into one phase of each other for a whole run, and the figure then depends on a
 * few nanoseconds of the loop (docs/simulator.md, "Phase"). The same seed draws the same
 * latencies; another seed, others, so repeats are samples of the phases. The span (runtime.h)
 * is an estimate; the scheduler's lookahead allows for the cheapest transfer's least draw.
 */
static uint64_t jittered(struct sim_thread *self, uint64_t cost)
{
	if (self->latency_random == 0) /* the seed and the thread, mixed; never 0 */
		self->latency_random =
			splitmix64(splitmix64(locklab_sim_seed()) ^ (uint64_t)self->id) | 1;
	uint64_t x = self->latency_random; /* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	self->latency_random = x;
	uint64_t draw = (x * 0x2545f4914f6cdd1dull) >> 32;
	uint64_t span = sim_transfer_jitter_span(cost);
	return cost - span + draw % (2 * span + 1);
}

/* How long a clean line's answer of `cost` occupies it (at least a hit): a shared cache
 * serves many readers of one line faster than a holder hands the line over. */
static uint64_t shared_read_occupancy(uint64_t cost)
{
	uint64_t occupancy = cost * SHARED_READ_OCCUPANCY_PERCENT / 100;
	return occupancy > sim_machine.costs.hit ? occupancy : sim_machine.costs.hit;
}

bool sim_access(uintptr_t addr, unsigned int size, enum sim_access kind)
{
	struct sim_thread *self = sim_self;
	const struct sim_costs *costs = &sim_machine.costs;
	uint64_t rmw = kind == SIM_RMW ? costs->atomic : 0;
	uintptr_t key = sim_line_of(addr);
	bool created;

	sim_rq_check(self); /* first, as the CPU it runs on may be another thread's now */
	int cpu = self->cpu;
	/* An access that straddles two lines is charged as one to the first: rare, and only in
	 * code that does not care (copies of unaligned structures). */
	(void)size;
	struct sim_line *l = line_find(key, cpu, &created);
	if (!self->counted && (created || (!l->shared && l->last_cpu == cpu))) {
		/*
		 * The control thread's private lines (its stack, mostly) cost nothing: it is the
		 * harness, not the workload, and Linux places the main stack at a random offset
		 * within a page, so what its lines cost would differ from run to run.
		 */
		return true;
	}
	if (created) {
		count_transfer(self, l, self->clock, SIM_FROM_MEMORY, kind != SIM_LOAD);
		self->clock += jittered(self, sim_memory_cost(cpu, l->home_node)) + rmw;
		return false;
	}
	/*
	 * A line no other CPU has touched yet: a hit. A load past the lookahead waits, as on a
	 * shared line, since another CPU's first touch may come earlier in virtual time: a queue
	 * waiter spinning on its node's first use would otherwise spin its whole budget ahead of
	 * its predecessor's hand-over. Stores and RMWs do not wait (a spin polls with loads).
	 */
	if (!l->shared) {
		if (l->last_cpu == cpu && (kind != SIM_LOAD || sim_may_run_ahead())) {
			self->clock += costs->hit + rmw;
			return true;
		}
		if (l->last_cpu != cpu)
			l->shared = true;
	}
	/*
	 * A load that hits changes nothing: within the lookahead (less than the cheapest transfer)
	 * it goes unordered, so the worst it can do is read a word that a writer behind it in time
	 * is about to change, less than one transfer early. Anything else, stores included, waits
	 * until every thread whose clock is lower has gone first (the table may grow meanwhile).
	 */
	bool holds = kind == SIM_LOAD && (l->owner == cpu || is_sharer(l, cpu));
	if (holds && sim_may_run_ahead()) {
		self->clock += costs->hit;
		return true;
	}
	sim_order_access();
	l = line_find(key, cpu, &created);
	l->last_cpu = cpu;

	if (kind == SIM_LOAD) {
		if (l->owner == cpu || is_sharer(l, cpu)) {
			self->clock += costs->hit;
			return true;
		}
		uint64_t cost = 0;
		enum locklab_sim_distance distance = SIM_FROM_MEMORY;
		if (nearest_copy(l, cpu, &cost, &distance) < 0)
			cost = sim_memory_cost(cpu, l->home_node);
		cost = jittered(self, cost);
		uint64_t half = cost - cost / 2;
		bool poll = self->spin_polling;
		self->spin_polling = false;
		if (!poll && may_overlap(self, key, true)) {
			struct overlapped miss;
			l = overlapped_request(self, key, cost, true, &miss);
			bool clean = l->owner < 0 && line_has_copies(l);
			uint64_t done = answer_from(self, l, miss.arrives, half,
						    clean ? shared_read_occupancy(half) : half,
						    distance, false);
			self->clock = later(self->clock, done);
			self->loads_done_at = later(self->loads_done_at, done);
			overlapped_done(self, &miss, done);
			self->run_lines[self->nrun_lines++] = key;
		} else {
			sim_end_overlap(self);
			l = request_travels(self, key, cost);
			bool clean = l->owner < 0 && line_has_copies(l);
			self->clock = answer(self, l, half, clean ? shared_read_occupancy(half) : half,
					     distance, false);
		}
		if (l->owner >= 0)
			add_sharer(l, l->owner);
		l->owner = -1;
		add_sharer(l, cpu);
		return false;
	}

	if (kind == SIM_RMW)
		sim_drain_stores(self);
	if (l->owner == cpu) {
		self->clock += costs->hit + rmw;
		return true;
	}
	uint64_t cost = 0;
	enum locklab_sim_distance distance = SIM_FROM_MEMORY;
	bool had_copy = is_sharer(l, cpu);
	int source = nearest_copy(l, cpu, &cost, &distance);
	bool hit = false;
	uint64_t taken_at = self->clock; /* when the other copies are gone */
	if (source < 0) {
		/* Ours was the only copy: an upgrade from shared to exclusive, no other cache. */
		self->clock += costs->hit;
		hit = had_copy;
	} else {
		uint64_t acks = farthest_copy_cost(l, cpu);
		uint64_t slowest = jittered(self, acks > cost ? acks : cost);
		uint64_t half = slowest - slowest / 2;
		if (kind == SIM_STORE && may_overlap(self, key, false)) {
			struct overlapped miss;
			l = overlapped_request(self, key, slowest, false, &miss);
			taken_at = self->clock;
			uint64_t done = answer_from(self, l, miss.arrives, half, half, distance, true);
			buffer_store(self, done);
			overlapped_done(self, &miss, done);
		} else {
			if (kind == SIM_STORE)
				sim_end_overlap(self);
			l = request_travels(self, key, slowest);
			taken_at = self->clock;
			uint64_t done = answer(self, l, half, half, distance, true);
			if (kind == SIM_STORE)
				buffer_store(self, done);
			else
				self->clock = done;
		}
	}
	self->clock += rmw;
	memset(l->sharers, 0, (size_t)sharer_words * sizeof(l->sharers[0]));
	l->owner = cpu;
	if (l->parked != NULL)
		sim_wake_spinners(&l->parked, taken_at);
	return hit;
}

void sim_line_park(uintptr_t key, struct sim_park_link *link)
{
	bool created;
	struct sim_line *l = line_find(key, sim_self->cpu, &created);
	link->next = l->parked;
	if (link->next != NULL)
		link->next->pprev = &link->next;
	link->pprev = &l->parked;
	l->parked = link;
}

void sim_line_unpark(struct sim_park_link *link)
{
	*link->pprev = link->next;
	if (link->next != NULL)
		link->next->pprev = link->pprev;
	link->next = NULL;
	link->pprev = NULL;
}

/* ---- $LOCKLAB_SIM_LINES=N: the N lines that cost the most transfers, at exit --------------- */

static uint64_t line_total(const struct sim_line *l)
{
	uint64_t sum = 0;
	for (int d = 0; d < SIM_DISTANCES; d++)
		sum += l->transfers[d];
	return sum;
}

static int by_total_descending(const void *a, const void *b)
{
	uint64_t x = line_total(*(struct sim_line *const *)a);
	uint64_t y = line_total(*(struct sim_line *const *)b);
	return (x < y) - (x > y);
}

/* A code or data address as its object's file and offset (what addr2line -e FILE reads), with
 * the symbol where one covers it. */
static void print_code_place(const void *address)
{
	Dl_info info;
	if (address == NULL) {
		fputc('-', stderr);
	} else if (dladdr(address, &info) && info.dli_fname != NULL) {
		fprintf(stderr, "%s+0x%lx", info.dli_fname,
			(unsigned long)((uintptr_t)address - (uintptr_t)info.dli_fbase));
		if (info.dli_sname != NULL)
			fprintf(stderr, " (%s+0x%lx)", info.dli_sname,
				(unsigned long)((uintptr_t)address - (uintptr_t)info.dli_saddr));
	} else {
		fprintf(stderr, "%p (heap or stack)", address);
	}
}

static void print_place(const char *what, const void *address)
{
	fprintf(stderr, "    %s: ", what);
	print_code_place(address);
	fputc('\n', stderr);
}

static unsigned int lines_to_report;

static void report_costliest_lines(void)
{
	struct sim_line **lines = calloc(table_used + 1, sizeof(*lines));
	size_t n = 0;
	if (lines == NULL)
		return;
	for (size_t i = 0; i < table_size; i++)
		if (table[i].key != 0 && line_total(&table[i]) > 0)
			lines[n++] = &table[i];
	qsort(lines, n, sizeof(*lines), by_total_descending);
	fprintf(stderr, "locklab-sim: the %u lines with the most transfers (program threads, "
			"warm-up included)\n", lines_to_report);
	for (size_t i = 0; i < n && i < lines_to_report; i++) {
		const struct sim_line *l = lines[i];
		void *address = (void *)((l->key - 1) << sim_machine.line_shift);
		fprintf(stderr, "  %p: %llu transfers:", address, (unsigned long long)line_total(l));
		for (int d = 0; d < SIM_DISTANCES; d++)
			if (l->transfers[d] != 0)
				fprintf(stderr, " %s %u", locklab_sim_distance_names[d], l->transfers[d]);
		fputc('\n', stderr);
		print_place("line", address);
		print_place("last load that missed", l->last_load_pc);
		print_place("last store or RMW that missed", l->last_write_pc);
	}
	free(lines);
}

void sim_coherence_init(void)
{
	sharer_words = (sim_machine.cpus + 1 + 63) / 64;
	table_grow();
	transfer_bounds_init();
	const char *report = getenv("LOCKLAB_SIM_LINES");
	if (report != NULL && atoi(report) > 0) {
		lines_to_report = (unsigned int)atoi(report);
		atexit(report_costliest_lines);
	}
	const char *trace = getenv("LOCKLAB_SIM_TRACE");
	if (trace != NULL) {
		double from_us, to_us;
		char end;
		if (sscanf(trace, "%lf:%lf%c", &from_us, &to_us, &end) != 2 || !(from_us >= 0) ||
		    !(to_us > from_us))
			sim_fatal("LOCKLAB_SIM_TRACE=%s: give FROM:TO, virtual microseconds since the "
				  "program started, FROM below TO (e.g. 28000:28002)", trace);
		trace_from = sim_ns_to_cycles(from_us * 1000);
		trace_to = sim_ns_to_cycles(to_us * 1000);
	}
}
