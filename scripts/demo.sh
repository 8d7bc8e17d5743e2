#!/usr/bin/env bash
# The quick default experiment: a few locks at 1, 2 and 4 writers, short runs, on this machine.
# Prints one line per run and writes the engine's JSON for each under locklab-results/demo/.
set -euo pipefail
bench=.venv/bin/locklab-bench
out=locklab-results/demo
mkdir -p "$out"

"$bench" --topology | head -5
echo
printf '%-14s %8s %14s %12s %12s %10s\n' lock nwriters "ops/s" "p50 wait ns" "p99 wait ns" "ctxsw/1k"
for lock in tas ticket mcs futex_mutex pthread_mutex; do
    for nwriters in 1 2 4; do
        json="$out/$lock-$nwriters.json"
        "$bench" --lock "$lock" --nwriters "$nwriters" --duration 1 --warmup 0.2 \
            --hold-ns 100 --gap-ns 100 --json "$json" >/dev/null
        .venv/bin/python - "$json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
lat = r["latency_ns"]["write"] or {}
cs = r["context_switches"]["voluntary_per_1000_acquisitions"] or 0.0
print(f"{r['config']['lock']:<14} {r['config']['nwriters']:>8} {r['throughput_ops_per_s']:>14,.0f} "
      f"{lat.get('p50', 0):>12,.0f} {lat.get('p99', 0):>12,.0f} {cs:>10.2f}")
PY
    done
done
echo
echo "results: $out/ (one engine JSON per run)"
