#!/usr/bin/env bash
# On a lent many-core machine, what the simulator is checked against (docs/simulator.md,
# "Checked against a real machine"): the machine's topology, its cache-line transfer costs,
# how one line reaches many readers, and what a futex wake-up costs (line-latency), and the
# engine's writer sweep of a few locks, pinned, interleaved.
#
# Needs only `make static` run beforehand (the machine may have no compiler or Python).
# Writes under OUT (default ./many-cores): topology.txt, latency.txt, one JSON per run, named
# LOCK-WORKLOAD-NWRITERS-REPEAT.json, and errors.txt (what line-latency and the engine said on
# failing), then packs them into OUT.tgz;
# bench/sim_vs_real.py reads the folder.
#   bench/many_cores.sh [OUT] [SECONDS] [WORKLOADS]   (WORKLOADS: "bare torture", the default)
set -uo pipefail
out=${1:-many-cores}
seconds=${2:-1}
workloads=${3:-bare torture}
bin=build/static
mkdir -p "$out"
cpus=$(nproc)

{
	uname -srm
	grep -m1 "model name" /proc/cpuinfo
	lscpu
	for cpu in /sys/devices/system/cpu/cpu[0-9]*; do
		topo=$cpu/topology
		echo "$(basename "$cpu") package $(cat "$topo/physical_package_id") core $(cat "$topo/core_id")" \
			"siblings $(cat "$topo/thread_siblings_list")" \
			"llc $(cat "$cpu/cache/index3/shared_cpu_list" 2>/dev/null || echo -)"
	done
	ls -d /sys/devices/system/node/node* 2>/dev/null
	"$bin/locklab-bench" --topology
} >"$out/topology.txt" 2>&1

readers=""
for ((k = 1; k < cpus - 1; k *= 2)); do readers+="$k,"; done
readers+=$((cpus - 1))
# Every CPU from CPU 0, then every CPU from the middle one (another LLC or socket, if any);
# one writer's line read by 1 to all other CPUs; a futex wake-up next door and far away.
{
	"$bin/line-latency" --trials 5
	"$bin/line-latency" --trials 5 --from $((cpus / 2))
	"$bin/line-latency" --fanout "$readers"
	"$bin/line-latency" --futex 1
	"$bin/line-latency" --futex $((cpus / 2))
} >"$out/latency.txt" 2>>"$out/errors.txt"

counts="1 2 4 8 12 $cpus"
locks="ticket mcs qspinlock ttas cna futex_mutex"
for repeat in 1 2 3; do
	for workload in $workloads; do
		extra=()
		[ "$workload" = torture ] && extra=(--torture-delays spin_lock)
		for lock in $locks; do
			for n in $counts; do
				"$bin/locklab-bench" --lock "$lock" --nwriters "$n" --duration "$seconds" \
					--warmup 0.2 --pin compact "${extra[@]}" \
					--json "$out/$lock-$workload-$n-$repeat.json" >/dev/null 2>>"$out/errors.txt" ||
					echo "$lock $workload $n $repeat: exit $?" >>"$out/errors.txt"
			done
		done
	done
done
echo "done: $(ls "$out"/*.json | wc -l) runs"
# One file to bring back (the device tool returns a few files, not hundreds).
tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")" && echo "packed: $out.tgz"
