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

# Adaptive repeats: 3 runs a cell, more (up to 8) where the verdict is not settled yet, so the
# cells that 2 shared CPUs can settle end with a verdict instead of "inconclusive".
"$locklab" run --name demo --lock pthread_mutex,futex_mutex,tas,ticket,mcs \
    --nwriters "$writers" --hold-ns 100 --gap-ns 100 --repeat auto --min-repeat 3 \
    --max-repeat 8 --duration 0.5 --warmup 0.2
"$locklab" export demo --format markdown --output locklab-results/demo-report.md
echo
echo "stored in locklab-results/ ('.venv/bin/locklab results'); table: locklab-results/demo-report.md"

# What these CPUs cannot show: the same locks (glibc's mutex aside, whose code locklab does
# not compile) on 96 simulated CPUs of seed 000's 2-socket EPYC, in virtual time
# (docs/simulator.md). A repeat is another seed, which draws other transfer latencies, so
# simulated cells vary too: adaptive repeats, 3 to 6 a cell, each a quarter of a virtual
# second (the simulator's default). About a minute on a 2-vCPU VM.
echo
echo "The same locks on a simulated 96-CPU machine (locklab run --sim gigabyte-96c):"
"$locklab" run --name demo-sim --sim gigabyte-96c --lock futex_mutex,tas,ticket,mcs \
    --nwriters 1,4,16,48,96 --hold-ns 100 --gap-ns 100 --repeat auto --min-repeat 3 \
    --max-repeat 6
# One page with both, side by side: the curve two CPUs cannot give is the one to look at.
"$locklab" report demo demo-sim --output locklab-results/demo-report.html
