"""`locklab list` and `locklab topology`: what the engine offers and what it detects."""

from __future__ import annotations

import argparse
import json
import sys

from locklab.cli.common import Commands, chosen_engine, engine_option
from locklab.kernel import from_source
from locklab.output import listing
from locklab.run.engine import Engine


def register(commands: Commands) -> None:
    locks = commands.add_parser("list", help="every lock, with family, summary and tunables")
    engine_option(locks)
    locks.add_argument("--plugin", action="append", default=[], help="also list this plugin")
    locks.add_argument("--json", action="store_true", help="the engine's JSON catalogue")
    locks.set_defaults(handler=cmd_list)

    topology = commands.add_parser("topology", help="CPUs, cores, SMT and NUMA nodes, as detected")
    engine_option(topology)
    topology.add_argument("--numa-nodes", type=int, help="show a split into N virtual nodes")
    topology.set_defaults(handler=cmd_topology)


def cmd_list(args: argparse.Namespace) -> int:
    catalogue = Engine(chosen_engine(args)).catalogue(tuple(args.plugin))
    if args.json:
        print(json.dumps(listing.locks_json(catalogue), indent=2))
    else:
        console = listing.stdout_console()
        console.print(listing.locks(catalogue))
        console.print(
            "\nCompiled from a kernel tree (--lock kernel:NAME, with --patch LABEL=FILE[,FILE...], "
            "--source DIR, --build opt|tsan|asan; default tree: Debian's linux-source-6.1):",
            markup=False,
        )
        for name, files in from_source.LOCK_FILES.items():
            console.print(
                f"  {from_source.PREFIX}{name:<10} {files}", markup=False, highlight=False
            )
    return 0


def cmd_topology(args: argparse.Namespace) -> int:
    sys.stdout.write(Engine(chosen_engine(args)).topology(args.numa_nodes))
    return 0
