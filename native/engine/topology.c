/* SPDX-License-Identifier: MIT */
/*
 * topology.c - what machine this is, and where each thread is pinned.
 *
 * Everything comes from sysfs and procfs (no library needed for this much): package, core id
 * and the core's hardware threads from /sys/devices/system/cpu/cpuN/topology, the NUMA node
 * from the cpuN/nodeM link, the frequency governor from cpufreq. Only the CPUs this process
 * may run on (sched_getaffinity) are used for pinning, so a run inside a cpuset or container
 * behaves. $LOCKLAB_SYSFS names another tree to read in place of /sys, for tests of machines
 * this one is not.
 */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "engine.h"

static int read_int_file(const char *path, int fallback)
{
	FILE *f = fopen(path, "r");
	int value = fallback;
	if (f == NULL)
		return fallback;
	if (fscanf(f, "%d", &value) != 1)
		value = fallback;
	fclose(f);
	return value;
}

static void read_line_file(const char *path, char *out, size_t size, const char *fallback)
{
	FILE *f = fopen(path, "r");
	snprintf(out, size, "%s", fallback);
	if (f == NULL)
		return;
	if (fgets(out, (int)size, f) != NULL)
		out[strcspn(out, "\n")] = '\0';
	else
		snprintf(out, size, "%s", fallback);
	fclose(f);
}

/* The path of `leaf` in cpuN's sysfs folder, under /sys or $LOCKLAB_SYSFS. */
static void cpu_sysfs_path(char *out, size_t size, int cpu, const char *leaf)
{
	const char *root = getenv("LOCKLAB_SYSFS");
	snprintf(out, size, "%s/devices/system/cpu/cpu%d/%s",
		 root != NULL && *root != '\0' ? root : "/sys", cpu, leaf);
}

static int node_from_sysfs(int cpu)
{
	char path[PATH_MAX];
	cpu_sysfs_path(path, sizeof(path), cpu, "");
	DIR *dir = opendir(path);
	int node = 0; /* no nodeM link: a machine without NUMA is one node */
	if (dir == NULL)
		return node;
	for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
		int n;
		if (sscanf(entry->d_name, "node%d", &n) == 1) {
			node = n;
			break;
		}
	}
	closedir(dir);
	return node;
}

static void read_cpu_model(char *out, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	char implementer[32] = "", part[32] = "";
	snprintf(out, size, "unknown");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *value = strchr(line, ':');
		if (value == NULL)
			continue;
		value += 2;
		value[strcspn(value, "\n")] = '\0';
		if (strncmp(line, "model name", 10) == 0) {
			snprintf(out, size, "%s", value);
			fclose(f);
			return;
		}
		/* arm64 has no model name: report the implementer and part numbers instead. */
		if (strncmp(line, "CPU implementer", 15) == 0 && !implementer[0])
			snprintf(implementer, sizeof(implementer), "%s", value);
		if (strncmp(line, "CPU part", 8) == 0 && !part[0])
			snprintf(part, sizeof(part), "%s", value);
	}
	fclose(f);
	if (implementer[0])
		snprintf(out, size, "arm64 implementer %s part %s", implementer, part);
}

static int count_distinct(const int *values, int n)
{
	int distinct = 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = values[j] == values[i];
		distinct += !seen;
	}
	return distinct;
}

/* A core's key where sysfs gives no list of its hardware threads: its package and core id. */
static int core_key_from_ids(int package, int core) { return package * 65536 + core; }

/*
 * The first CPU of `cpu`'s core, from the core's list of hardware threads
 * (topology/thread_siblings_list: "0,72", "0-1"), which names the core: core ids cannot tell
 * cores apart alone, since they repeat across the dies of one package on some machines. -1
 * when the list is missing, is not an ascending list of CPU numbers, or does not hold `cpu`.
 */
static int first_sibling(int cpu)
{
	char path[PATH_MAX], text[1024];
	cpu_sysfs_path(path, sizeof(path), cpu, "topology/thread_siblings_list");
	read_line_file(path, text, sizeof(text), "");
	size_t length = strlen(text);
	while (length > 0 && isspace((unsigned char)text[length - 1]))
		text[--length] = '\0';
	int first_cpu = -1;
	long previous = -1;
	bool holds_cpu = false;
	for (const char *p = text; *p != '\0';) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return -1;
		long first = strtol(p, &end, 10), last = first;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return -1;
			last = strtol(p, &end, 10);
		}
		if (first <= previous || last < first || last >= CPU_SETSIZE ||
		    (*end != ',' && *end != '\0'))
			return -1;
		if (first_cpu < 0)
			first_cpu = (int)first;
		holds_cpu = holds_cpu || (cpu >= first && cpu <= last);
		previous = last;
		p = *end == ',' ? end + 1 : end;
	}
	return holds_cpu ? first_cpu : -1;
}

/* Cores, packages, nodes and SMT width of the first n allowed CPUs. */
static void count_topology(struct machine_facts *facts, int n)
{
	static int core_keys[MAX_CPUS], packages[MAX_CPUS], nodes[MAX_CPUS];
	for (int i = 0; i < n; i++) {
		core_keys[i] = facts->allowed[i].core_key;
		packages[i] = facts->allowed[i].package;
		nodes[i] = facts->allowed[i].node;
	}
	facts->cpus_allowed = n;
	facts->cores = count_distinct(core_keys, n);
	facts->packages = count_distinct(packages, n);
	facts->numa_nodes = count_distinct(nodes, n);
	facts->numa_nodes_real = facts->numa_nodes;
	facts->threads_per_core = facts->cores ? n / facts->cores : 1;
}

#ifdef LOCKLAB_SIM
/* The simulated machine's CPUs (native/sim/machine.c), every one of them allowed. */
static void simulated_facts(struct machine_facts *facts)
{
	int n = locklab_sim_cpu_count();
	if (n > MAX_CPUS)
		usage_error("the simulated machine has %d CPUs, more than %d", n, MAX_CPUS);
	snprintf(facts->hostname, sizeof(facts->hostname), "%s", locklab_sim_machine_name());
	snprintf(facts->cpu_model, sizeof(facts->cpu_model), "%s", locklab_sim_machine_summary());
	snprintf(facts->kernel, sizeof(facts->kernel), "simulated");
	snprintf(facts->governor, sizeof(facts->governor), "none");
	facts->arch = locklab_sim_machine_arch();
	facts->cpus_online = n;
	for (int cpu = 0; cpu < n; cpu++) {
		struct locklab_sim_cpu c;
		locklab_sim_cpu_at(cpu, &c);
		facts->allowed[cpu] = (struct cpu_info){ cpu, c.package, c.core, c.node, c.smt_rank,
							 core_key_from_ids(c.package, c.core) };
	}
	count_topology(facts, n);
}
#endif

void machine_facts_read(struct machine_facts *facts)
{
	struct utsname uts;
	cpu_set_t allowed;
	char path[PATH_MAX];

	memset(facts, 0, sizeof(*facts));
#ifdef LOCKLAB_SIM
	simulated_facts(facts);
	return;
#endif
	if (gethostname(facts->hostname, sizeof(facts->hostname)) != 0)
		snprintf(facts->hostname, sizeof(facts->hostname), "unknown");
	read_cpu_model(facts->cpu_model, sizeof(facts->cpu_model));
	if (uname(&uts) == 0)
		snprintf(facts->kernel, sizeof(facts->kernel), "%s %s", uts.release, uts.version);
	cpu_sysfs_path(path, sizeof(path), 0, "cpufreq/scaling_governor");
	read_line_file(path, facts->governor, sizeof(facts->governor), "none");
	facts->arch = LOCKLAB_ARCH;
	facts->cpus_online = (int)sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		for (int cpu = 0; cpu < facts->cpus_online && cpu < MAX_CPUS; cpu++)
			CPU_SET(cpu, &allowed);

	int n = 0;
	for (int cpu = 0; cpu < MAX_CPUS && cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		struct cpu_info *info = &facts->allowed[n];
		info->cpu = cpu;
		cpu_sysfs_path(path, sizeof(path), cpu, "topology/physical_package_id");
		info->package = read_int_file(path, 0);
		cpu_sysfs_path(path, sizeof(path), cpu, "topology/core_id");
		info->core = read_int_file(path, cpu);
		info->node = node_from_sysfs(cpu);
		info->core_key = first_sibling(cpu);
		n++;
	}
	/* Cores named by their first CPU where every CPU's list says it, else by their ids: one
	 * rule for the whole machine, so that the two kinds of key never meet. */
	bool all_listed = true;
	for (int i = 0; i < n; i++)
		all_listed = all_listed && facts->allowed[i].core_key >= 0;
	for (int i = 0; i < n; i++) {
		struct cpu_info *info = &facts->allowed[i];
		if (!all_listed)
			info->core_key = core_key_from_ids(info->package, info->core);
		/* Ranked among the CPUs this process may use: a core whose first thread is outside
		 * the cpuset still gets a thread of rank 0. */
		info->smt_rank = 0;
		for (int j = 0; j < i; j++)
			info->smt_rank += facts->allowed[j].core_key == info->core_key;
	}
	count_topology(facts, n);
}

void topology_split_nodes(struct machine_facts *facts, unsigned int nodes)
{
	if ((int)nodes > facts->cpus_allowed)
		usage_error("--numa-nodes: %u nodes but only %d CPUs", nodes, facts->cpus_allowed);
	/* Consecutive CPU numbers share a node, as on most real machines. */
	for (int i = 0; i < facts->cpus_allowed; i++)
		facts->allowed[i].node = (int)((unsigned int)i * nodes / (unsigned int)facts->cpus_allowed);
	facts->numa_nodes = (int)nodes;
}

int node_of_cpu(const struct machine_facts *facts, int cpu)
{
	for (int i = 0; i < facts->cpus_allowed; i++)
		if (facts->allowed[i].cpu == cpu)
			return facts->allowed[i].node;
	return -1;
}

/* "1 core", "2 cores": the count's noun as a person writes it. */
static const char *plural(int count)
{
	return count == 1 ? "" : "s";
}

void topology_print(const struct machine_facts *facts)
{
	printf("machine:  %s (%s)\n", facts->hostname, facts->arch);
	printf("cpu:      %s\n", facts->cpu_model);
	printf("kernel:   %s\n", facts->kernel);
	printf("governor: %s\n", facts->governor);
	printf("cpus:     %d online, %d allowed; %d core%s, %d package%s, %d NUMA node%s%s, "
	       "%d thread%s per core\n",
	       facts->cpus_online, facts->cpus_allowed, facts->cores, plural(facts->cores),
	       facts->packages, plural(facts->packages), facts->numa_nodes,
	       plural(facts->numa_nodes),
	       facts->numa_nodes != facts->numa_nodes_real ? " (virtual)" : "",
	       facts->threads_per_core, plural(facts->threads_per_core));
	printf("%5s %8s %5s %5s %4s\n", "cpu", "package", "core", "node", "smt");
	for (int i = 0; i < facts->cpus_allowed; i++) {
		const struct cpu_info *c = &facts->allowed[i];
		printf("%5d %8d %5d %5d %4d\n", c->cpu, c->package, c->core, c->node, c->smt_rank);
	}
}

/* Sort keys for pinning: compact fills a core's siblings, then a package, then a node. */
static int compare_compact(const void *a, const void *b)
{
	const struct cpu_info *x = a, *y = b;
	if (x->node != y->node)
		return x->node - y->node;
	if (x->package != y->package)
		return x->package - y->package;
	if (x->core_key != y->core_key)
		return x->core_key - y->core_key;
	return x->smt_rank - y->smt_rank;
}

/*
 * Cores fills one node at a time, a core each: the first hardware thread of every core of a
 * node before any core of the next node, and SMT siblings only once every core has a thread.
 * Few threads thus share a node without sharing a core, as a program's first threads often
 * start (docs/simulator.md, "Seed 002's own table").
 */
static int compare_cores(const void *a, const void *b)
{
	const struct cpu_info *x = a, *y = b;
	if (x->smt_rank != y->smt_rank)
		return x->smt_rank - y->smt_rank;
	return compare_compact(a, b);
}

/*
 * Scatter spreads: first one hardware thread per core, alternating nodes (the i-th core of
 * each node before the (i+1)-th of any), and SMT siblings only once every core has a thread.
 */
struct scatter_key {
	int smt_rank;
	int rank_in_node; /* position among the node's CPUs of the same smt_rank, compact order */
	int node;
	int cpu;
};

static int compare_scatter(const void *a, const void *b)
{
	const struct scatter_key *x = a, *y = b;
	if (x->smt_rank != y->smt_rank)
		return x->smt_rank - y->smt_rank;
	if (x->rank_in_node != y->rank_in_node)
		return x->rank_in_node - y->rank_in_node;
	if (x->node != y->node)
		return x->node - y->node;
	return x->cpu - y->cpu;
}

void pin_plan(const struct machine_facts *facts, enum pin_mode mode, const int *list,
	      int list_len, unsigned int nthreads, int *cpu_of_slot)
{
	static struct cpu_info order[MAX_CPUS];
	static struct scatter_key keys[MAX_CPUS];
	int n = facts->cpus_allowed;

	if (mode == PIN_NONE) {
		for (unsigned int i = 0; i < nthreads; i++)
			cpu_of_slot[i] = -1;
		return;
	}
	if (mode == PIN_LIST) {
		for (int i = 0; i < list_len; i++)
			if (node_of_cpu(facts, list[i]) < 0)
				usage_error("--pin: CPU %d is not online or not allowed for this process",
					    list[i]);
		for (unsigned int i = 0; i < nthreads; i++)
			cpu_of_slot[i] = list[i % (unsigned int)list_len];
		return;
	}
	memcpy(order, facts->allowed, (size_t)n * sizeof(order[0]));
	qsort(order, (size_t)n, sizeof(order[0]), mode == PIN_CORES ? compare_cores : compare_compact);
	if (mode == PIN_COMPACT || mode == PIN_CORES) {
		for (unsigned int i = 0; i < nthreads; i++)
			cpu_of_slot[i] = order[i % (unsigned int)n].cpu;
		return;
	}
	for (int i = 0; i < n; i++) {
		int rank = 0;
		for (int j = 0; j < i; j++)
			rank += order[j].node == order[i].node && order[j].smt_rank == order[i].smt_rank;
		keys[i] = (struct scatter_key){ order[i].smt_rank, rank, order[i].node, order[i].cpu };
	}
	qsort(keys, (size_t)n, sizeof(keys[0]), compare_scatter);
	for (unsigned int i = 0; i < nthreads; i++)
		cpu_of_slot[i] = keys[i % (unsigned int)n].cpu;
}
