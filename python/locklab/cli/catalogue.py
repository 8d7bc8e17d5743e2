"""`locklab list` and `locklab topology`: what the engine offers and what it detects."""

from __future__ import annotations

import argparse
import json
import sys

from locklab.cli.common import Commands, chosen_engine, engine_option
from locklab.errors import LocklabError
from locklab.kernel import from_source
from locklab.model.catalogue import Catalogue
from locklab.output import listing
from locklab.run.engine import Engine


def register(commands: Commands) -> None:
    locks = commands.add_parser("list", help="every lock, with family, summary and tunables")
    locks.add_argument("lock", nargs="?", help="one lock's details: source, flags, tunables")
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
    if args.lock:
        print("\n".join(_one_lock(args.lock, catalogue)))
        return 0
    if args.json:
        print(json.dumps(listing.locks_json(catalogue), indent=2))
        return 0
    console = listing.stdout_console(listing.LIST_WIDTH)
    console.print(listing.locks(catalogue))
    console.print(
        "\nCompiled from a kernel tree: --lock kernel:NAME [--patch LABEL=FILE[,FILE...]] "
        "[--source DIR] [--build opt|tsan|asan]; 'locklab list kernel:NAME' for details",
        markup=False,
    )
    for name, files in from_source.LOCK_FILES.items():
        console.print(f"  {from_source.PREFIX}{name:<10} {files}", markup=False, highlight=False)
    return 0


def _one_lock(name: str, catalogue: Catalogue) -> list[str]:
    if from_source.is_source_lock(name):
        family = from_source.check_name(name)
        return [
            f"{name}: the kernel tree's own code, compiled into the engine against locklab's "
            "shim (native/kshim)",
            f"  files:    {from_source.LOCK_FILES[family]}",
            "  tree:     Debian's linux-source-6.1 by default; --source DIR (6.1 and 6.12 "
            "are tested)",
            "  patches:  --patch LABEL=FILE[,FILE...], one variant per label",
            f"  kernel:   the same code booted: locklab kernel --type "
            f"{from_source.TORTURE_TYPE[family]} --patch ...",
        ]  # fmt: skip
    if name not in catalogue:
        raise LocklabError(f"unknown lock '{name}' (see 'locklab list')")
    return listing.lock_lines(catalogue[name])


def cmd_topology(args: argparse.Namespace) -> int:
    sys.stdout.write(Engine(chosen_engine(args)).topology(args.numa_nodes))
    return 0
