#!/usr/bin/env python3
"""A stand-in for locklab-bench, for tests of the front end's decisions (adaptive repetition):
each "lock" returns throughput with a known mean and spread, seeded by --seed, instantly.

  quiet   1000 ops/s +- 0.1% (random)    quiet2   2000 ops/s +- 0.1% (random)
  near    1100 ops/s +- 8% (random): 10% above quiet, which 3 runs leave open and a few more
          settle (a campaign's extra runs, run/settle.py)
  noisy   1000 ops/s, +30% and -30% in turn (by the parity of --seed, which locklab changes
          with each repeat): a mean that never separates from quiet's, an interval that
          never narrows
  tuned   a tunable `delay` (0..1000) whose best value is 100 x nwriters, with no noise at
          all: the tuner's choice is a function of the plan alone
"""

import json
import random
import sys

LOCKS = {"quiet": (1000.0, 0.001), "quiet2": (2000.0, 0.001), "noisy": (1000.0, 0.30),
         "near": (1100.0, 0.08)}  # fmt: skip


def main(argv: list[str]) -> int:
    if "--list" in argv:
        locks = [
            {"name": name, "family": "fake", "summary": f"mean {mean:g}, spread {spread:g}",
             "source": "tests/fakes", "flags": [], "tunables": []}
            for name, (mean, spread) in LOCKS.items()
        ]  # fmt: skip
        delay = {"name": "delay", "default": 0, "min": 0, "max": 1000, "meaning": "fake"}
        locks.append({"name": "tuned", "family": "fake", "summary": "best delay 100 x nwriters",
                      "source": "tests/fakes", "flags": [], "tunables": [delay]})  # fmt: skip
        print(json.dumps({"schema": 1, "locks": locks}))
        return 0
    options = dict(zip(argv[::2], argv[1::2], strict=False))
    if options["--lock"] == "tuned":
        delay = int(options["--param"].split("=")[1])
        best = 100 * int(options.get("--nwriters", "1"))
        throughput = 1000.0 / (1 + abs(delay - best) / 100)
        print(json.dumps({"status": "ok", "error": None, "throughput_ops_per_s": throughput,
                          "machine": {"hostname": "fake"}, "intervals": []}))  # fmt: skip
        return 0
    mean, spread = LOCKS[options["--lock"]]
    seed = int(options.get("--seed", "0"))
    if options["--lock"] == "noisy":
        throughput = mean * (1 + (spread if seed % 2 else -spread))
    else:
        rng = random.Random(f"{options['--lock']}/{seed}/{options.get('--nwriters')}")
        throughput = mean * (1 + rng.uniform(-spread, spread))
    machine = {"hostname": "fake", "arch": "x86_64", "cpu_model": "fake", "cpus_online": 2}
    print(json.dumps({"status": "ok", "error": None, "throughput_ops_per_s": throughput,
                      "machine": machine, "intervals": []}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
