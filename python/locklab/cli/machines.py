"""`locklab machines`: the simulator's machine profiles (machines/*.toml), or one in full."""

from __future__ import annotations

import argparse
import re
from dataclasses import replace
from pathlib import Path

from locklab.cli.common import Commands
from locklab.errors import LocklabError
from locklab.model.machine_profile import (
    PER_HOP_COSTS,
    SCALAR_COSTS,
    MachineProfile,
    find_profile,
    load_profile,
    profile_names,
)
from locklab.run.engine import Engine, find_engine
from locklab.run.machine_measure import profile_text


def register(commands: Commands) -> None:
    machines = commands.add_parser(
        "machines", help="the simulator's machine profiles (locklab run --sim NAME)"
    )
    machines.add_argument("machine", nargs="?", help="one profile in full: its costs and sources")
    machines.add_argument(
        "--measure", metavar="NAME",
        help="write a profile of this machine, named NAME, from measurements (line transfers "
        "between CPUs, cpu_relax, the shape), to check the simulator against this machine",
    )  # fmt: skip
    machines.add_argument(
        "-o", "--output", type=Path, help="with --measure: the file (default NAME.toml here)"
    )
    machines.set_defaults(handler=cmd_machines)


def cmd_machines(args: argparse.Namespace) -> int:
    if args.measure:
        return measure(args)
    if args.output:
        raise LocklabError("-o is for --measure")
    if args.machine:
        print("\n".join(profile_lines(find_profile(args.machine))))
        return 0
    profiles = [find_profile(name) for name in profile_names()]
    width = max(len(p.name) for p in profiles)
    shape_width = max(len(p.shape()) for p in profiles)
    for p in profiles:
        seeds = f"seed {', '.join(p.seeds)}" if p.seeds else ""
        line = (f"{p.name:<{width}}  {p.cpus:>3} CPUs  {p.shape():<{shape_width}}  "
                f"{p.ghz:>5g} GHz  {seeds}")  # fmt: skip
        print(line.rstrip())
    print("\n'locklab machines NAME' shows a profile's costs and their sources; --sim also takes "
          "the path of a profile file of your own (docs/simulator.md)")  # fmt: skip
    return 0


def profile_lines(p: MachineProfile) -> list[str]:
    lines = [
        f"{p.name}: {p.summary}",
        f"  shape:   {p.shape()}, {p.topology['cores_per_llc']} cores per last-level cache, "
        f"{p.arch}, {p.ghz:g} GHz",
        f"  file:    {p.path}",
        "  costs, in cycles at that clock:",
    ]
    for key in (*SCALAR_COSTS, *PER_HOP_COSTS):
        value = p.costs[key]
        shown = " ".join(str(v) for v in value) if isinstance(value, tuple) else str(value)
        if isinstance(value, tuple):
            shown += " (by hops)"
        lines.append(f"    {key:<19} {shown:<14} {p.sources.get(key, '')}")
    misses = (f"{p.fill_buffers} in flight per core" if p.fill_buffers else
              "each waits for the one before (no fill_buffers in the profile)")  # fmt: skip
    lines.append(f"  misses: {misses}  {p.sources.get('fill_buffers', '')}".rstrip())
    rows = p.node_distance or ()
    distances = " / ".join(" ".join(str(d) for d in row) for row in rows)
    if not distances:
        distances = "the kernel's default without a SLIT (10, 20 apart)"
    lines.append(f"  nodes:   distances {distances}  {p.sources.get('node_distance', '')}".rstrip())
    reclaim = f"{p.node_reclaim_distance or 30}  {p.sources.get('node_reclaim_distance', '')}"
    lines.append(f"  threads placed by {p.sched}'s rules (--sched changes them); "
                 f"node_reclaim_distance {reclaim}".rstrip())  # fmt: skip
    estimates = p.estimates()
    lines.append(f"  estimates: {', '.join(estimates) if estimates else 'none'}")
    return lines


def measure(args: argparse.Namespace) -> int:
    if args.machine:
        raise LocklabError("--measure writes a new profile: drop the machine name")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", args.measure):
        raise LocklabError(f"--measure {args.measure}: a name is letters, digits, '.', '_' or '-'")
    target = args.output or Path(f"{args.measure}.toml")
    text = profile_text(args.measure, Engine(find_engine()))
    partial = target.with_name(target.name + ".partial")
    try:
        partial.write_text(text)
        profile = load_profile(partial)  # what --sim will read, checked before it is kept
        partial.replace(target)
    except OSError as error:
        raise LocklabError(f"--measure: cannot write {target}: {error.strerror}") from None
    print("\n".join(profile_lines(replace(profile, path=target))))
    print(f"\nwritten: {target} (--sim {target} runs on it)")
    return 0
