/* SPDX-License-Identifier: MIT */
/*
 * machine.c - the simulated machine: read from the flat file the front end writes from a
 * profile (the TOML files in machines/, python/locklab/model/machine_profile.py), and the distances
 * between its CPUs that the coherence model charges.
 *
 * The file is one fact a line, "key values...", so this reader stays small; the profile's
 * checks (sources, sizes) are the front end's. Costs are in the profile's cycles.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

struct sim_machine sim_machine;

static const struct {
	const char *key;
	size_t offset;
} cost_keys[] = {
	{ "hit", offsetof(struct sim_costs, hit) },
	{ "atomic", offsetof(struct sim_costs, atomic) },
	{ "smt_sibling", offsetof(struct sim_costs, smt_sibling) },
	{ "same_llc", offsetof(struct sim_costs, same_llc) },
	{ "same_socket", offsetof(struct sim_costs, same_socket) },
	{ "memory_local", offsetof(struct sim_costs, memory_local) },
	{ "memory_same_socket", offsetof(struct sim_costs, memory_same_socket) },
	{ "cpu_relax", offsetof(struct sim_costs, cpu_relax) },
	{ "futex_wait", offsetof(struct sim_costs, futex_wait) },
	{ "futex_wake", offsetof(struct sim_costs, futex_wake) },
	{ "context_switch", offsetof(struct sim_costs, context_switch) },
};

/* "v1 v2 ..." into a per-hop table; returns how many. */
static int read_hop_costs(const char *text, uint64_t *table, const char *path, int line)
{
	int n = 0;
	char *end;
	for (;;) {
		while (*text == ' ')
			text++;
		if (*text == '\0' || *text == '\n')
			return n;
		if (n == SIM_MAX_HOPS)
			sim_fatal("%s:%d: more than %d hop costs", path, line, SIM_MAX_HOPS);
		table[n++] = strtoull(text, &end, 10);
		if (end == text)
			sim_fatal("%s:%d: not a number: %s", path, line, text);
		text = end;
	}
}

static void parse_line(char *text, const char *path, int line, int *cpus_seen)
{
	struct sim_machine *m = &sim_machine;
	char key[64];
	int used = 0;
	if (sscanf(text, "%63s %n", key, &used) != 1 || key[0] == '#')
		return;
	char *rest = text + used;
	rest[strcspn(rest, "\n")] = '\0';
	if (strcmp(key, "locklab-sim-machine") == 0) {
		if (atoi(rest) != 1)
			sim_fatal("%s: machine file version %s, this runtime reads 1", path, rest);
	} else if (strcmp(key, "name") == 0) {
		snprintf(m->name, sizeof(m->name), "%s", rest);
	} else if (strcmp(key, "summary") == 0) {
		snprintf(m->summary, sizeof(m->summary), "%s", rest);
	} else if (strcmp(key, "arch") == 0) {
		snprintf(m->arch, sizeof(m->arch), "%s", rest);
	} else if (strcmp(key, "ghz") == 0) {
		m->ghz = strtod(rest, NULL);
	} else if (strcmp(key, "line_bytes") == 0) {
		unsigned long bytes = strtoul(rest, NULL, 10);
		m->line_shift = 0;
		while ((1ul << m->line_shift) < bytes)
			m->line_shift++;
		if ((1ul << m->line_shift) != bytes)
			sim_fatal("%s:%d: line_bytes %lu is not a power of two", path, line, bytes);
	} else if (strcmp(key, "cost") == 0) {
		char name[64];
		unsigned long long cycles;
		if (sscanf(rest, "%63s %llu", name, &cycles) != 2)
			sim_fatal("%s:%d: expected 'cost NAME CYCLES'", path, line);
		for (size_t i = 0; i < sizeof(cost_keys) / sizeof(cost_keys[0]); i++)
			if (strcmp(cost_keys[i].key, name) == 0) {
				*(uint64_t *)((char *)&m->costs + cost_keys[i].offset) = cycles;
				return;
			}
		sim_fatal("%s:%d: unknown cost '%s'", path, line, name);
	} else if (strcmp(key, "other_socket") == 0) {
		m->max_hops = read_hop_costs(rest, m->costs.other_socket, path, line);
	} else if (strcmp(key, "memory_remote") == 0) {
		read_hop_costs(rest, m->costs.memory_remote, path, line);
	} else if (strcmp(key, "fill_buffers") == 0) {
		m->fill_buffers = atoi(rest);
		if (m->fill_buffers < 0 || m->fill_buffers > SIM_MAX_FILL_BUFFERS)
			sim_fatal("%s:%d: fill_buffers must be 0 to %d", path, line,
				  SIM_MAX_FILL_BUFFERS);
	} else if (strcmp(key, "sockets") == 0) {
		m->sockets = atoi(rest);
		if (m->sockets < 1 || m->sockets > SIM_MAX_SOCKETS)
			sim_fatal("%s:%d: sockets must be 1 to %d", path, line, SIM_MAX_SOCKETS);
	} else if (strcmp(key, "hops") == 0) {
		int from, consumed;
		if (sscanf(rest, "%d%n", &from, &consumed) != 1 || from < 0 || from >= m->sockets)
			sim_fatal("%s:%d: expected 'hops SOCKET H0 H1 ...'", path, line);
		char *p = rest + consumed;
		for (int to = 0; to < m->sockets; to++) {
			char *end;
			m->hops[from][to] = (int)strtol(p, &end, 10);
			if (end == p)
				sim_fatal("%s:%d: %d hop counts expected", path, line, m->sockets);
			p = end;
		}
	} else if (strcmp(key, "node_distance") == 0) {
		int from, consumed;
		if (sscanf(rest, "%d%n", &from, &consumed) != 1 || from < 0 || from >= SIM_MAX_NODES)
			sim_fatal("%s:%d: expected 'node_distance NODE D0 D1 ...'", path, line);
		char *p = rest + consumed;
		for (int to = 0;; to++) {
			char *end;
			long distance = strtol(p, &end, 10);
			if (end == p)
				break;
			if (to >= SIM_MAX_NODES || distance < 10 || distance > 254)
				sim_fatal("%s:%d: node distances are 10 to 254, at most %d", path, line,
					  SIM_MAX_NODES);
			m->node_distance[from][to] = (int)distance;
			p = end;
		}
	} else if (strcmp(key, "wake_to_run") == 0) {
		m->wake_to_run = strtoull(rest, NULL, 10);
	} else if (strcmp(key, "idle_state") == 0) {
		unsigned long long exit_cycles, residency;
		if (sscanf(rest, "%llu %llu", &exit_cycles, &residency) != 2 ||
		    m->idle_states == SIM_MAX_IDLE_STATES)
			sim_fatal("%s:%d: expected 'idle_state EXIT RESIDENCY', at most %d", path, line,
				  SIM_MAX_IDLE_STATES);
		m->idle_exit[m->idle_states] = exit_cycles;
		m->idle_residency[m->idle_states++] = residency;
	} else if (strcmp(key, "node_reclaim_distance") == 0) {
		m->node_reclaim_distance = atoi(rest);
		if (m->node_reclaim_distance < 10 || m->node_reclaim_distance > 254)
			sim_fatal("%s:%d: node_reclaim_distance must be 10 to 254", path, line);
	} else if (strcmp(key, "sched") == 0) {
		if (strcmp(rest, "linux-4.20") == 0)
			m->sched = SIM_SCHED_LINUX_4_20;
		else if (strcmp(rest, "linux-6.1") == 0)
			m->sched = SIM_SCHED_LINUX_6_1;
		else
			sim_fatal("%s:%d: sched must be linux-4.20 or linux-6.1, not '%s'", path, line,
				  rest);
	} else if (strcmp(key, "cpus") == 0) {
		m->cpus = atoi(rest);
		if (m->cpus < 1 || m->cpus > SIM_MAX_CPUS)
			sim_fatal("%s:%d: cpus must be 1 to %d", path, line, SIM_MAX_CPUS);
	} else if (strcmp(key, "cpu") == 0) {
		int cpu;
		struct sim_cpu c;
		if (sscanf(rest, "%d %d %d %d %d %d %d", &cpu, &c.package, &c.core, &c.core_key,
			   &c.node, &c.smt_rank, &c.llc) != 7 || cpu < 0 || cpu >= m->cpus)
			sim_fatal("%s:%d: expected 'cpu N PACKAGE CORE CORE_KEY NODE SMT LLC'", path,
				  line);
		m->cpu[cpu] = c;
		(*cpus_seen)++;
	} else {
		sim_fatal("%s:%d: unknown key '%s'", path, line, key);
	}
}

void sim_machine_load(void)
{
	const char *path = getenv("LOCKLAB_SIM_MACHINE");
	if (path == NULL || *path == '\0')
		sim_fatal("LOCKLAB_SIM_MACHINE names no machine file (locklab run --sim PROFILE "
			  "writes one)");
	FILE *in = fopen(path, "r");
	if (in == NULL)
		sim_fatal("cannot read the machine file %s: %s", path, strerror(errno));
	struct sim_machine *m = &sim_machine;
	memset(m, 0, sizeof(*m));
	m->line_shift = 6;
	m->sched = SIM_SCHED_LINUX_6_1;
	char text[1024];
	int line = 0, cpus_seen = 0;
	while (fgets(text, sizeof(text), in) != NULL)
		parse_line(text, path, ++line, &cpus_seen);
	fclose(in);
	if (m->cpus == 0 || cpus_seen != m->cpus)
		sim_fatal("%s: %d cpu lines for %d CPUs", path, cpus_seen, m->cpus);
	if (!(m->ghz > 0))
		sim_fatal("%s: no ghz", path);
	if (m->sockets > 1 && m->max_hops == 0)
		sim_fatal("%s: %d sockets but no other_socket costs", path, m->sockets);
	for (int i = 0; i < m->cpus; i++)
		if (m->cpu[i].package < 0 || m->cpu[i].package >= m->sockets)
			sim_fatal("%s: CPU %d is on package %d of %d", path, i, m->cpu[i].package,
				  m->sockets);
	for (int a = 0; a < m->sockets; a++)
		for (int b = 0; b < m->sockets; b++)
			if (a != b && (m->hops[a][b] < 1 || m->hops[a][b] > m->max_hops))
				sim_fatal("%s: sockets %d and %d are %d hops apart; costs are given "
					  "for 1 to %d", path, a, b, m->hops[a][b], m->max_hops);
	for (int i = 0; i < m->cpus; i++) {
		if (m->cpu[i].node < 0 || m->cpu[i].node >= SIM_MAX_NODES)
			sim_fatal("%s: CPU %d is on node %d; nodes are 0 to %d", path, i,
				  m->cpu[i].node, SIM_MAX_NODES - 1);
		if (m->cpu[i].node >= m->nodes)
			m->nodes = m->cpu[i].node + 1;
	}
	for (int a = 0; a < m->nodes; a++) /* without a table: LOCAL_DISTANCE, REMOTE_DISTANCE */
		for (int b = 0; b < m->nodes; b++)
			if (m->node_distance[a][b] == 0)
				m->node_distance[a][b] = a == b ? 10 : 20;
			else if ((a == b) != (m->node_distance[a][b] == 10))
				sim_fatal("%s: node distance %d to %d is %d; 10 is a node's own only",
					  path, a, b, m->node_distance[a][b]);
	const char *stores = getenv("LOCKLAB_SIM_STORES");
	if (stores != NULL && strcmp(stores, "in-turn") == 0)
		m->fill_buffers = 0; /* the rule before overlapped misses, to compare with */
	else if (stores != NULL && *stores != '\0' && strcmp(stores, "overlapped") != 0)
		sim_fatal("LOCKLAB_SIM_STORES must be overlapped or in-turn, not '%s'", stores);
	/* The control thread: a core of its own on socket 0, sharing no cache with anyone. */
	m->cpu[m->cpus] = (struct sim_cpu){ .package = 0, .core = -1, .core_key = -1,
					    .node = m->cpu[0].node, .smt_rank = 0, .llc = -1 };
}

int sim_service_cpu(void) { return sim_machine.cpus; }
bool sim_machine_is_arm64(void) { return strcmp(sim_machine.arch, "arm64") == 0; }

uint64_t sim_transfer_cost(int to, int from, enum locklab_sim_distance *distance)
{
	const struct sim_cpu *a = &sim_machine.cpu[to], *b = &sim_machine.cpu[from];
	const struct sim_costs *c = &sim_machine.costs;
	if (a->package != b->package) {
		*distance = SIM_FROM_OTHER_SOCKET;
		return c->other_socket[sim_machine.hops[a->package][b->package] - 1];
	}
	if (a->core_key == b->core_key && a->core_key >= 0) {
		*distance = SIM_FROM_SMT_SIBLING;
		return c->smt_sibling;
	}
	if (a->llc == b->llc && a->llc >= 0) {
		*distance = SIM_FROM_SAME_LLC;
		return c->same_llc;
	}
	*distance = SIM_FROM_SAME_SOCKET;
	return c->same_socket;
}

uint64_t sim_cheapest_transfer(void)
{
	const struct sim_costs *c = &sim_machine.costs;
	uint64_t cheapest = c->same_llc < c->same_socket ? c->same_llc : c->same_socket;
	bool smt = false;
	for (int i = 0; i < sim_machine.cpus && !smt; i++)
		smt = sim_machine.cpu[i].smt_rank > 0;
	if (smt && c->smt_sibling < cheapest)
		cheapest = c->smt_sibling;
	for (int h = 0; h < sim_machine.max_hops; h++)
		if (c->other_socket[h] < cheapest)
			cheapest = c->other_socket[h];
	return cheapest;
}

uint64_t sim_memory_cost(int to, int home_node)
{
	const struct sim_cpu *a = &sim_machine.cpu[to];
	const struct sim_costs *c = &sim_machine.costs;
	if (a->node == home_node)
		return c->memory_local;
	int home_package = -1;
	for (int i = 0; i < sim_machine.cpus && home_package < 0; i++)
		if (sim_machine.cpu[i].node == home_node)
			home_package = sim_machine.cpu[i].package;
	if (home_package < 0 || home_package == a->package)
		return c->memory_same_socket;
	return c->memory_remote[sim_machine.hops[a->package][home_package] - 1];
}

/* ---- what the engine's topology reads ------------------------------------------------------ */
int locklab_sim_cpu_count(void)
{
	sim_runtime_init();
	return sim_machine.cpus;
}

void locklab_sim_cpu_at(int cpu, struct locklab_sim_cpu *out)
{
	const struct sim_cpu *c = &sim_machine.cpu[cpu];
	*out = (struct locklab_sim_cpu){ c->package, c->core, c->node, c->smt_rank };
}

const char *locklab_sim_machine_name(void) { return sim_machine.name; }
const char *locklab_sim_machine_summary(void) { return sim_machine.summary; }
const char *locklab_sim_machine_arch(void) { return sim_machine.arch; }
double locklab_sim_cycles_per_ns(void) { return sim_machine.ghz; }

uint64_t sim_ns_to_cycles(double ns) { return (uint64_t)(ns * sim_machine.ghz + 0.5); }
double sim_cycles_to_ns(uint64_t cycles) { return (double)cycles / sim_machine.ghz; }
