/* SPDX-License-Identifier: MIT */
/* main.c - locklab-bench: measure one lock, one configuration, one run. */
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

int main(int argc, char **argv)
{
	static struct bench_config config;
	static struct machine_facts facts;

	options_parse(argc, argv, &config);
	if (config.list) {
		list_locks(config.json_path);
		return EXIT_FINE;
	}
	machine_facts_read(&facts);
	if (config.numa_nodes)
		topology_split_nodes(&facts, config.numa_nodes);
	if (config.topology) {
		topology_print(&facts);
		return EXIT_FINE;
	}
	if (config.scenario)
		return run_pi_scenario(&config, &facts);
	return run_benchmark(&config, &facts);
}
