"""`locklab machines`: the simulator's machine profiles (machines/*.toml), or one in full."""

from __future__ import annotations

import argparse

from locklab.cli.common import Commands
from locklab.model.machine_profile import (
    PER_HOP_COSTS,
    SCALAR_COSTS,
    MachineProfile,
    find_profile,
    profile_names,
)


def register(commands: Commands) -> None:
    machines = commands.add_parser(
        "machines", help="the simulator's machine profiles (locklab run --sim NAME)"
    )
    machines.add_argument("machine", nargs="?", help="one profile in full: its costs and sources")
    machines.set_defaults(handler=cmd_machines)


def cmd_machines(args: argparse.Namespace) -> int:
    if args.machine:
        print("\n".join(profile_lines(find_profile(args.machine))))
        return 0
    profiles = [find_profile(name) for name in profile_names()]
    width = max(len(p.name) for p in profiles)
    for p in profiles:
        seeds = f"seed {', '.join(p.seeds)}" if p.seeds else ""
        print(f"{p.name:<{width}}  {p.cpus:>3} CPUs  {p.shape():<44} {p.ghz:g} GHz  {seeds}")
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
    estimates = p.estimates()
    lines.append(f"  estimates: {', '.join(estimates) if estimates else 'none'}")
    return lines
