/* SPDX-License-Identifier: MIT */
/* main.c - locklab-bench: measure one lock, one configuration, one run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"

/*
 * The JSON result is written at the end of a run: a path that cannot be written must fail
 * before the measurement, not after it. Opened for append, so nothing there is lost yet; a file
 * this check created is removed again.
 */
static void check_json_destination(const char *path)
{
	if (path == NULL || strcmp(path, "-") == 0)
		return;
	bool existed = access(path, F_OK) == 0;
	FILE *probe = fopen(path, "a");
	if (probe == NULL)
		usage_error("cannot write the JSON result to %s: %s", path, strerror(errno));
	fclose(probe);
	if (!existed)
		unlink(path);
}

int main(int argc, char **argv)
{
	static struct bench_config config;
	static struct machine_facts facts;

	options_parse(argc, argv, &config);
	if (config.list) {
		list_locks(config.json_path);
		return EXIT_FINE;
	}
#ifdef LOCKLAB_SIM
	locklab_sim_set_seed(config.seed);
	const char *not_simulated =
		config.lock ? locklab_sim_unsupported_lock(config.lock->name) : NULL;
	if (not_simulated != NULL)
		usage_error("%s cannot run in the simulator: %s", config.lock->name, not_simulated);
	if (config.shuffle_interval_s > 0)
		usage_error("--shuffle-interval is not simulated: one thread runs per virtual CPU");
#endif
	check_json_destination(config.json_path);
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
