/* SPDX-License-Identifier: MIT */
/*
 * report_sim.c - what a simulated run adds to the report (the simulator's build only): the
 * coherence transfers the window's acquisitions cost, split by where each line came from,
 * and how much host time the simulation took. Counted from the window's opening (run.c
 * takes the snapshot while the control thread alone runs) to the end of the run.
 */
#ifdef LOCKLAB_SIM
#include <math.h>

#include "engine.h"

static uint64_t window_acquisitions(const struct run_state *run)
{
	return acquisitions_since_start(run) - run->sim_acquisitions_at_window;
}

static void window_counts(const struct run_state *run, struct locklab_sim_counts *out)
{
	locklab_sim_counts(out);
	for (int d = 0; d < SIM_DISTANCES; d++)
		out->transfers[d] -= run->sim_at_window.transfers[d];
	out->spin_parks -= run->sim_at_window.spin_parks;
	out->futex_sleeps -= run->sim_at_window.futex_sleeps;
}

static double per_acquisition(uint64_t count, uint64_t acquisitions)
{
	return acquisitions ? (double)count / (double)acquisitions : NAN;
}

void json_simulation(struct json_writer *j, const struct run_state *run)
{
	struct locklab_sim_counts c;
	uint64_t acquisitions = window_acquisitions(run);
	uint64_t total = 0;
	window_counts(run, &c);
	json_begin_object(j, "simulation");
	json_string(j, "machine", locklab_sim_machine_name());
	json_string(j, "sched", locklab_sim_sched_rules());
	json_uint(j, "seed", locklab_sim_seed());
	json_uint(j, "acquisitions", acquisitions);
	json_begin_object(j, "transfers_per_acquisition");
	for (int d = 0; d < SIM_DISTANCES; d++) {
		json_double(j, locklab_sim_distance_names[d],
			    per_acquisition(c.transfers[d], acquisitions));
		total += c.transfers[d];
	}
	json_double(j, "total", per_acquisition(total, acquisitions));
	json_end_object(j);
	json_double(j, "spin_parks_per_acquisition", per_acquisition(c.spin_parks, acquisitions));
	json_double(j, "futex_sleeps_per_acquisition",
		    per_acquisition(c.futex_sleeps, acquisitions));
	json_double(j, "virtual_s", (double)c.virtual_cycles / locklab_sim_cycles_per_ns() * 1e-9);
	json_double(j, "host_s", locklab_sim_host_seconds());
	json_uint(j, "host_switches", c.switches);
	json_end_object(j);
}

void print_simulation(FILE *out, const struct run_state *run)
{
	struct locklab_sim_counts c;
	uint64_t acquisitions = window_acquisitions(run);
	uint64_t total = 0;
	window_counts(run, &c);
	for (int d = 0; d < SIM_DISTANCES; d++)
		total += c.transfers[d];
	fprintf(out, "  transfers    %.2f per acquisition:", per_acquisition(total, acquisitions));
	for (int d = 0; d < SIM_DISTANCES; d++)
		fprintf(out, " %s %.2f", locklab_sim_distance_names[d],
			per_acquisition(c.transfers[d], acquisitions));
	fprintf(out, "\n  simulated    %s, seed %llu: %.2f host s, %llu switches\n",
		locklab_sim_machine_name(), (unsigned long long)locklab_sim_seed(),
		locklab_sim_host_seconds(), (unsigned long long)c.switches);
}
#endif
