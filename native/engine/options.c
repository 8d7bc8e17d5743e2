/* SPDX-License-Identifier: MIT */
/*
 * options.c - command line of locklab-bench. Names follow locktorture where they overlap
 * (nwriters, nreaders, stat-interval, stutter, shuffle-interval, long-hold).
 * Any bad input ends in usage_error() (diagnostics.c): one line, exit status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <locklab/tunable.h>

#include "engine.h"

#define MAX_THREADS 4096
#define MAX_PARAMS_GIVEN 64

static const char usage_text[] =
	"usage: locklab-bench --lock NAME [options]\n"
	"       locklab-bench --list [--json FILE]   |   locklab-bench --topology\n"
	"       locklab-bench --engine-layout   (what a plugin's own writer loop is built for)\n"
	"\n"
	"what to run\n"
	"  --lock NAME            lock to measure (see --list)\n"
	"  --plugin PATH.so       load an out-of-tree lock (exports locklab_plugin_lock)\n"
	"  --param NAME=VALUE     set a lock tunable (repeatable)\n"
	"  --nwriters N           writer (exclusive) threads, default 1\n"
	"  --nreaders N           reader threads, reader-writer locks only, default 0\n"
	"how long\n"
	"  --duration S           measured seconds (default 5 unless --ops is given)\n"
	"  --ops N                stop after N measured write acquisitions (with --duration: "
	"whichever first)\n"
	"  --warmup S             seconds run and discarded before measuring, default 0\n"
	"workload\n"
	"  --hold-ns N            busy time inside the critical section (calibrated loop)\n"
	"  --gap-ns N             busy time between acquisitions\n"
	"  --cs-lines N           shared cache lines read and written in the critical section\n"
	"  --long-hold MS         occasionally hold for MS milliseconds, as locktorture does\n"
	"  --stutter S            all threads run S seconds, pause S seconds, and so on\n"
	"  --shuffle-interval S   re-pin every thread to the next CPU every S seconds\n"
	"  --torture-delays TYPE  hold times drawn as Linux 6.1's locktorture draws them for\n"
	"                         torture_type TYPE (spin_lock, rtmutex_lock, mutex_lock,\n"
	"                         rwsem_lock, rw_lock, ...), rtmutex_lock's SCHED_FIFO boosts too\n"
	"  --churn N              a fork-like load: each writer makes a thread per turn that\n"
	"                         takes the lock N times (--gap-ns apart) and ends, and waits for\n"
	"                         it (seed 001's fork and exit taking the anon_vma lock: N = 2)\n"
	"placement\n"
	"  --pin MODE             none | compact | cores | scatter | CPU list like 0,2,4-7\n"
	"                         (default none); cores: a core each, a node's before the next's\n"
	"  --numa-nodes N         split the CPUs into N virtual NUMA nodes (for NUMA-aware locks\n"
	"                         on a machine with fewer real nodes); a thread's node is its CPU's\n"
	"  --numa-remote-ns N     emulated remote-node cost: a writer whose predecessor ran on\n"
	"                         another node busy-waits N ns more in its critical section\n"
	"  --no-checks            measure the bare loop's section only (one counter increment,\n"
	"                         checked once at the end): no owner word, no hand-over count;\n"
	"                         for figures comparable to lockhammer's (writers only, no hold)\n"
	"scenarios\n"
	"  --scenario pi-inversion  low-priority owner, medium-priority CPU hog, high-priority\n"
	"                         waiter on one CPU (SCHED_FIFO); --ops iterations (default 20),\n"
	"                         --hold-ns the owner's critical section (default 1 ms)\n"
	"output\n"
	"  --stat-interval S      print locktorture-style 'Writes: Total:' lines every S seconds\n"
	"  --interval S           period of the throughput series in the JSON, default 0.1\n"
	"  --latency-every N|auto time one acquisition in N (1 = all); default auto: the N that\n"
	"                         keeps timing under 0.5% of a thread's time at the warm-up's\n"
	"                         rate (64 without a warm-up)\n"
	"  --json FILE            write the result as JSON ('-' for stdout)\n"
	"safety\n"
	"  --watchdog S           fail (exit 3) when no lock is acquired for S seconds; 0 = off, "
	"default 10\n"
	"  --seed N               seed for the random choices (long holds, backoff), default 1\n"
	"\n"
	"exit status: 0 fine, 1 correctness violation, 2 usage error, 3 watchdog (deadlock)\n";

enum option_id {
	OPT_LIST = 256,
	OPT_ENGINE_LAYOUT,
	OPT_TOPOLOGY,
	OPT_SCENARIO,
	OPT_LOCK,
	OPT_PLUGIN,
	OPT_PARAM,
	OPT_NWRITERS,
	OPT_NREADERS,
	OPT_DURATION,
	OPT_OPS,
	OPT_WARMUP,
	OPT_HOLD_NS,
	OPT_GAP_NS,
	OPT_CS_LINES,
	OPT_LONG_HOLD,
	OPT_STUTTER,
	OPT_SHUFFLE,
	OPT_PIN,
	OPT_NUMA_NODES,
	OPT_STAT_INTERVAL,
	OPT_INTERVAL,
	OPT_LATENCY_EVERY,
	OPT_JSON,
	OPT_WATCHDOG,
	OPT_SEED,
	OPT_TORTURE_DELAYS,
	OPT_NUMA_REMOTE_NS,
	OPT_CHURN,
	OPT_NO_CHECKS,
};

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "engine-layout", no_argument, NULL, OPT_ENGINE_LAYOUT },
	{ "topology", no_argument, NULL, OPT_TOPOLOGY },
	{ "scenario", required_argument, NULL, OPT_SCENARIO },
	{ "lock", required_argument, NULL, OPT_LOCK },
	{ "plugin", required_argument, NULL, OPT_PLUGIN },
	{ "param", required_argument, NULL, OPT_PARAM },
	{ "nwriters", required_argument, NULL, OPT_NWRITERS },
	{ "nreaders", required_argument, NULL, OPT_NREADERS },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "ops", required_argument, NULL, OPT_OPS },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "hold-ns", required_argument, NULL, OPT_HOLD_NS },
	{ "gap-ns", required_argument, NULL, OPT_GAP_NS },
	{ "cs-lines", required_argument, NULL, OPT_CS_LINES },
	{ "long-hold", required_argument, NULL, OPT_LONG_HOLD },
	{ "stutter", required_argument, NULL, OPT_STUTTER },
	{ "shuffle-interval", required_argument, NULL, OPT_SHUFFLE },
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "numa-nodes", required_argument, NULL, OPT_NUMA_NODES },
	{ "stat-interval", required_argument, NULL, OPT_STAT_INTERVAL },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "latency-every", required_argument, NULL, OPT_LATENCY_EVERY },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "watchdog", required_argument, NULL, OPT_WATCHDOG },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "torture-delays", required_argument, NULL, OPT_TORTURE_DELAYS },
	{ "numa-remote-ns", required_argument, NULL, OPT_NUMA_REMOTE_NS },
	{ "churn", required_argument, NULL, OPT_CHURN },
	{ "no-checks", no_argument, NULL, OPT_NO_CHECKS },
	{ NULL, 0, NULL, 0 },
};

static const char *current_option;

/* Seconds: a finite, non-negative decimal number, at most a day. */
static double parse_seconds(const char *text)
{
	char *end;
	errno = 0;
	double value = strtod(text, &end);
	if (errno || end == text || *end != '\0' || !isfinite(value))
		usage_error("--%s: '%s' is not a number of seconds", current_option, text);
	if (value < 0)
		usage_error("--%s: must not be negative (got %s)", current_option, text);
	if (value > 86400)
		usage_error("--%s: %s s is more than a day", current_option, text);
	return value;
}

/* A non-negative integer in [min, max], decimal only; '-', '+', spaces and suffixes are refused. */
static uint64_t parse_count(const char *text, uint64_t min, uint64_t max)
{
	char *end;
	if (text[0] < '0' || text[0] > '9')
		usage_error("--%s: '%s' is not a non-negative integer", current_option, text);
	errno = 0;
	unsigned long long value = strtoull(text, &end, 10);
	if (errno || *end != '\0')
		usage_error("--%s: '%s' is not a non-negative integer", current_option, text);
	if (value < min || value > max)
		usage_error("--%s: %llu is out of range [%llu, %llu]", current_option, value,
			    (unsigned long long)min, (unsigned long long)max);
	return value;
}

static void parse_pin(struct bench_config *config, const char *text)
{
	config->pin_text = text;
	if (strcmp(text, "none") == 0) {
		config->pin = PIN_NONE;
		return;
	}
	if (strcmp(text, "compact") == 0) {
		config->pin = PIN_COMPACT;
		return;
	}
	if (strcmp(text, "cores") == 0) {
		config->pin = PIN_CORES;
		return;
	}
	if (strcmp(text, "scatter") == 0) {
		config->pin = PIN_SCATTER;
		return;
	}
	config->pin = PIN_LIST;
	config->pin_list_len = 0;
	const char *p = text;
	while (*p) {
		char *end;
		if (*p < '0' || *p > '9')
			usage_error("--pin: expected none, compact, cores, scatter or a CPU list like 0,2,4-7; "
				    "got '%s'", text);
		long first = strtol(p, &end, 10), last = first;
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				usage_error("--pin: bad CPU range in '%s'", text);
			last = strtol(end + 1, &end, 10);
		}
		if (last < first || last >= MAX_CPUS)
			usage_error("--pin: bad CPU range in '%s'", text);
		for (long cpu = first; cpu <= last; cpu++) {
			if (config->pin_list_len == MAX_CPUS)
				usage_error("--pin: too many CPUs");
			config->pin_list[config->pin_list_len++] = (int)cpu;
		}
		if (*end == ',')
			end++;
		else if (*end != '\0')
			usage_error("--pin: bad CPU list '%s'", text);
		p = end;
	}
	if (config->pin_list_len == 0)
		usage_error("--pin: empty CPU list");
}

static void apply_param(struct bench_config *config, const char *text)
{
	const struct lock_ops *ops = config->lock;
	const char *equals = strchr(text, '=');
	if (equals == NULL || equals == text)
		usage_error("--param: expected NAME=VALUE, got '%s'", text);
	size_t name_len = (size_t)(equals - text);
	for (size_t i = 0; i < lock_tunable_count(ops); i++) {
		const struct lock_tunable *t = &ops->tunables[i];
		if (strlen(t->name) != name_len || strncmp(t->name, text, name_len) != 0)
			continue;
		const char *value_text = equals + 1;
		long value;
		int error = lock_tunable_parse(t, value_text, &value);
		if (error == -EINVAL && t->choices != NULL)
			usage_error("--param %s: '%s' is not one of its values (%s)", t->name,
				    value_text, t->meaning);
		if (error == -EINVAL)
			usage_error("--param %.*s: '%s' is not an integer", (int)name_len, text,
				    value_text);
		if (error == -ERANGE)
			usage_error("--param %s: %s is out of range [%ld, %ld] (%s)", t->name,
				    value_text, t->min_value, t->max_value, t->meaning);
		config->params[i] = value;
		return;
	}
	if (lock_tunable_count(ops) == 0)
		usage_error("--param: lock '%s' has no tunables", ops->name);
	usage_error("--param: lock '%s' has no tunable '%.*s' (see --list)", ops->name,
		    (int)name_len, text);
}

void options_parse(int argc, char **argv, struct bench_config *config)
{
	const char *lock_name = NULL;
	const char *params_given[MAX_PARAMS_GIVEN];
	int nparams = 0;
	bool duration_given = false;

	memset(config, 0, sizeof(*config));
	config->nwriters = 1;
	config->watchdog_s = 10;
	config->latency_every = LATENCY_EVERY_AUTO;
	config->interval_s = 0.1;
	config->seed = 1;
	config->pin = PIN_NONE;
	config->pin_text = "none";

	opterr = 0; /* we print our own one-line errors */
	for (;;) {
		int index = -1;
		int id = getopt_long(argc, argv, ":h", long_options, &index);
		if (id == -1)
			break;
		if (index >= 0)
			current_option = long_options[index].name;
		switch (id) {
		case 'h': fputs(usage_text, stdout); exit(EXIT_FINE);
		case OPT_LIST: config->list = true; break;
		case OPT_ENGINE_LAYOUT: puts(LOCKLAB_ENGINE_LAYOUT); exit(EXIT_FINE);
		case OPT_TOPOLOGY: config->topology = true; break;
		case OPT_SCENARIO:
			if (strcmp(optarg, "pi-inversion") != 0)
				usage_error("--scenario: unknown scenario '%s' (known: pi-inversion)",
					    optarg);
			config->scenario = optarg;
			break;
		case OPT_LOCK: lock_name = optarg; break;
		case OPT_PLUGIN:
			config->plugin_path = optarg;
			registry_load_plugin(optarg);
			break;
		case OPT_PARAM:
			if (nparams == MAX_PARAMS_GIVEN)
				usage_error("--param: given too many times");
			params_given[nparams++] = optarg;
			break;
		case OPT_NWRITERS: config->nwriters = (unsigned int)parse_count(optarg, 0, MAX_THREADS); break;
		case OPT_NREADERS: config->nreaders = (unsigned int)parse_count(optarg, 0, MAX_THREADS); break;
		case OPT_DURATION:
			config->duration_s = parse_seconds(optarg);
			duration_given = true;
			break;
		case OPT_OPS: config->ops = parse_count(optarg, 1, UINT64_MAX / 2); break;
		case OPT_WARMUP: config->warmup_s = parse_seconds(optarg); break;
		case OPT_HOLD_NS: config->hold_ns = parse_count(optarg, 0, 1000000000); break;
		case OPT_GAP_NS: config->gap_ns = parse_count(optarg, 0, 1000000000); break;
		case OPT_CS_LINES: config->cs_lines = (unsigned int)parse_count(optarg, 0, 4096); break;
		case OPT_LONG_HOLD: config->long_hold_ms = (unsigned int)parse_count(optarg, 0, 10000); break;
		case OPT_STUTTER: config->stutter_s = parse_seconds(optarg); break;
		case OPT_SHUFFLE: config->shuffle_interval_s = parse_seconds(optarg); break;
		case OPT_PIN: parse_pin(config, optarg); break;
		case OPT_NUMA_NODES:
			config->numa_nodes = (unsigned int)parse_count(optarg, 1, MAX_CPUS);
			break;
		case OPT_STAT_INTERVAL: config->stat_interval_s = parse_seconds(optarg); break;
		case OPT_INTERVAL: config->interval_s = parse_seconds(optarg); break;
		case OPT_LATENCY_EVERY:
			if (strcmp(optarg, "auto") == 0)
				config->latency_every = LATENCY_EVERY_AUTO;
			else if (optarg[0] < '0' || optarg[0] > '9')
				usage_error("--latency-every: '%s' is neither a count nor auto", optarg);
			else
				config->latency_every = (unsigned int)parse_count(optarg, 1, 1u << 30);
			break;
		case OPT_JSON: config->json_path = optarg; break;
		case OPT_WATCHDOG: config->watchdog_s = parse_seconds(optarg); break;
		case OPT_SEED: config->seed = parse_count(optarg, 0, UINT64_MAX); break;
		case OPT_TORTURE_DELAYS:
			config->torture = torture_profile_find(optarg);
			if (config->torture == NULL)
				usage_error("--torture-delays: unknown torture type '%s' (known: %s)",
					    optarg, torture_profile_names());
			break;
		case OPT_NUMA_REMOTE_NS:
			config->numa_remote_ns = parse_count(optarg, 0, 1000000000);
			break;
		case OPT_CHURN:
			config->churn = (unsigned int)parse_count(optarg, 1, 1000000);
			break;
		case OPT_NO_CHECKS:
			config->no_checks = true;
			break;
		case ':':
			usage_error("option %s needs a value", argv[optind - 1]);
		default:
			usage_error("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s' (see --help)", argv[optind]);
	if (config->list || config->topology)
		return;

	if (lock_name == NULL) {
		config->lock = registry_last_plugin();
		if (config->lock == NULL)
			usage_error("--lock is required (see --list)");
	} else {
		config->lock = registry_find(lock_name);
		if (config->lock == NULL)
			usage_error("unknown lock '%s' (see --list)", lock_name);
	}
	for (size_t i = 0; i < lock_tunable_count(config->lock); i++)
		config->params[i] = config->lock->tunables[i].default_value;
	for (int i = 0; i < nparams; i++)
		apply_param(config, params_given[i]);

	if (config->nwriters + config->nreaders == 0)
		usage_error("no threads: give --nwriters or --nreaders of at least 1");
	if (config->nwriters + config->nreaders > MAX_THREADS)
		usage_error("at most %d threads in all", MAX_THREADS);
	if (config->nreaders > 0 && !(config->lock->flags & LOCK_READER_WRITER))
		usage_error("--nreaders: lock '%s' is not a reader-writer lock", config->lock->name);
	if (config->ops > 0 && config->nwriters == 0)
		usage_error("--ops counts write acquisitions: it needs --nwriters of at least 1");
	if (!duration_given && config->ops == 0)
		config->duration_s = 5;
	if (config->duration_s == 0 && config->ops == 0)
		usage_error("--duration must be above 0 (or give --ops)");
	if (config->interval_s < 0.001)
		usage_error("--interval: at least 0.001 s");
	if (config->stat_interval_s > 0 && config->stat_interval_s < 0.01)
		usage_error("--stat-interval: at least 0.01 s");
	if (config->stutter_s > 0 && config->stutter_s < 0.01)
		usage_error("--stutter: at least 0.01 s");
	if (config->shuffle_interval_s > 0 && config->shuffle_interval_s < 0.01)
		usage_error("--shuffle-interval: at least 0.01 s");
	if (config->torture && (config->hold_ns || config->long_hold_ms))
		usage_error("--torture-delays draws the hold times itself: drop --hold-ns and "
			    "--long-hold");
	if (config->torture && config->nreaders > 0 && config->torture->reader == NULL)
		usage_error("--torture-delays %s: locktorture has no readers for this type",
			    config->torture->name);
	if (config->numa_remote_ns && config->pin == PIN_NONE)
		usage_error("--numa-remote-ns needs pinned threads (--pin): a thread's node is its "
			    "CPU's");
	if (config->no_checks && (config->nreaders || config->hold_ns || config->gap_ns ||
				  config->cs_lines || config->ops || config->long_hold_ms ||
				  config->torture || config->numa_remote_ns || config->scenario))
		usage_error("--no-checks measures the bare loop: writers only, without readers, "
			    "--hold-ns, --gap-ns, --cs-lines, --ops, --long-hold, --torture-delays, "
			    "--numa-remote-ns or a scenario");
	if (config->churn && (config->nreaders || config->cs_lines ||
			      config->long_hold_ms || config->torture || config->numa_remote_ns ||
			      config->no_checks || config->scenario || config->shuffle_interval_s))
		usage_error("--churn runs writers that make a thread per turn: without readers, "
			    "--cs-lines, --long-hold, --torture-delays, --numa-remote-ns, "
			    "--no-checks, --shuffle-interval or a scenario");
	if (config->watchdog_s > 0 && config->watchdog_s < 0.1)
		usage_error("--watchdog: at least 0.1 s (or 0 to turn it off)");
}
