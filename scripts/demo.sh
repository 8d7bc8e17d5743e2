#!/usr/bin/env bash
# The quick default experiment, through locklab: a few locks at 1, 2, 4, ... writers up to this
# machine's CPUs (never more threads than CPUs: that measures the scheduler, and is asked for
# with --nwriters), short runs, 3 interleaved repeats. Prints the table and verdicts, stores
# every run in locklab-results/, and writes the interactive report (and the table as Markdown)
# beside it.
set -euo pipefail
locklab=.venv/bin/locklab

cpus=$(nproc)
writers=1
for ((n = 2; n <= cpus; n *= 2)); do writers+=",$n"; done
if ((cpus > 1 && (cpus & (cpus - 1)) != 0)); then writers+=",$cpus"; fi

"$locklab" run --name demo --lock pthread_mutex,futex_mutex,tas,ticket,mcs \
    --nwriters "$writers" --hold-ns 100 --gap-ns 100 --repeat 3 --duration 0.5 --warmup 0.2
"$locklab" export demo --format markdown --output locklab-results/demo-report.md
echo
echo "stored in locklab-results/ ('.venv/bin/locklab results'); table: locklab-results/demo-report.md"
"$locklab" report demo --output locklab-results/demo-report.html
