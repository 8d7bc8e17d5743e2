"""The kernel's own locktorture: `locklab kernel` (boot kernels in QEMU, or the host, and
store their runs) and `locklab import-locktorture` (store the runs of logs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from locklab.analysis.cells import analyse_experiment
from locklab.cli.common import (
    Commands,
    host,
    number,
    patch_option,
    rev_option,
    settings,
    statistics_options,
)
from locklab.cli.guest import (
    arch_option,
    cmd_kernel_exec,
    debug_list,
    debug_option,
    guest_program_options,
)
from locklab.cli.hosts import hosts_options
from locklab.errors import LocklabError
from locklab.kernel.revisions import parse_rev_options
from locklab.kernel.sweep import LocktortureSweep
from locklab.model.spec import default
from locklab.output import listing
from locklab.printable import printable
from locklab.store import Store


def _sweep(name: str) -> object:
    """The defaults of both commands: LocktortureSweep's field defaults."""
    return default(LocktortureSweep, name)


def register(commands: Commands) -> None:
    imports = commands.add_parser(
        "import-locktorture", help="store the runs of kernel locktorture logs (dmesg, console)"
    )
    imports.add_argument(
        "logs",
        nargs="+",
        metavar="[LABEL=]LOG",
        help="a log, or LABEL=LOG to name its variant (say k0-stock=k0.log); "
        "default: the torture type",
    )
    imports.add_argument("--name", help="experiment name (default: the first log's name)")
    imports.add_argument("--host", default="kernel", help="the machine the logs come from")
    imports.add_argument(
        "--warmup-reports",
        type=int,
        default=_sweep("warmup_reports"),
        help="statistics reports dropped at the start of each run "
        f"(default {_sweep('warmup_reports')})",
    )
    statistics_options(imports)
    imports.set_defaults(handler=cmd_import_locktorture)

    kernel = commands.add_parser("kernel", help="run the kernel's locktorture in QEMU")
    kernel.add_argument("--kernel", help="kernel images, comma-separated (or --host-kernel)")
    kernel.add_argument(
        "--host-kernel", action="store_true",
        help="bare metal: modprobe the running kernel's locktorture and pin its kthreads "
        "(with --hosts: each host's own kernel)",
    )  # fmt: skip
    kernel.add_argument(
        "--images", type=Path, metavar="MANIFEST",
        help="kernels built elsewhere, from the kernels.json that lists them (what --hosts "
        "ships to each host with the images it built here)",
    )  # fmt: skip
    kernel.add_argument(
        "--pin-cpus", default=_sweep("pin_cpus"), metavar="LIST",
        help="host CPUs, like 0-7: in QEMU vCPU i is pinned to the i-th (at least --cpus of "
        "them; default: no pinning); with --host-kernel, the kthreads' CPUs",
    )  # fmt: skip
    kernel.add_argument("--label", help="a label per kernel, comma-separated (default: version)")
    kernel.add_argument(
        "--type",
        default=_sweep("torture_type"),
        help=f"torture_type (default {_sweep('torture_type')})",
    )
    kernel.add_argument(
        "--nwriters", default=_sweep("nwriters"), help="nwriters_stress values, like 1,2,4"
    )
    kernel.add_argument("--repeat", type=int, default=_sweep("repeat"))
    kernel.add_argument(
        "--duration", type=number, default=_sweep("duration_s"), help="seconds per run"
    )
    kernel.add_argument(
        "--stat-interval", type=int, default=_sweep("stat_interval"), help="seconds between reports"
    )
    kernel.add_argument("--warmup-reports", type=int, default=_sweep("warmup_reports"))
    kernel.add_argument("--cpus", type=int, default=_sweep("cpus"), help="virtual CPUs")
    kernel.add_argument("--accel", choices=("auto", "kvm", "tcg"), default=_sweep("accel"))
    kernel.add_argument("--name", help="experiment name")
    patch_option(
        kernel,
        "build (cached) and run this kernel, locktorture built in: its label and patches "
        "(a label alone: the stock kernel); repeatable, instead of --kernel",
    )
    rev_option(
        kernel,
        "build (cached) and run this revision (tag, branch, commit) of the git tree --source, "
        "its whole tree read with git, the checkout untouched; --patch of the same label goes "
        "on top; repeatable",
    )
    kernel.add_argument("--source", type=Path, help="--patch: kernel tree (default: 6.1's)")
    kernel.add_argument("--config", type=Path, metavar="FRAGMENT", help="--patch: config lines")
    kernel.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE",
        help="--patch: any other locktorture parameter of that kernel (stutter=0, ...)",
    )  # fmt: skip
    debug_option(kernel, "--patch: ")
    arch_option(kernel, "--patch: ")
    guest_program_options(kernel)
    statistics_options(kernel)
    hosts_options(kernel)
    kernel.set_defaults(handler=cmd_kernel)  # fmt: skip

    build = commands.add_parser(
        "kernel-build", help="build kernels with locktorture built in (also: locklab kernel build)"
    )
    build.add_argument("--source", type=Path, help="kernel tree (default: linux-source-6.1)")
    rev_option(
        build,
        "a kernel from this revision (tag, branch, commit) of the git tree --source, read with "
        "git, the checkout untouched; --patch of the same label goes on top; repeatable",
    )
    patch_option(
        build,
        "a kernel: its label and patches, applied in order (a label alone: the stock "
        "kernel); repeat for more kernels (default: one stock kernel)",
    )
    build.add_argument(
        "--config", type=Path, metavar="FRAGMENT",
        help="config lines (CONFIG_X=y, # CONFIG_X is not set) over locklab's guest options",
    )  # fmt: skip
    debug_option(build)
    arch_option(build)
    build.set_defaults(handler=cmd_kernel_build)


def cmd_import_locktorture(args: argparse.Namespace) -> int:
    from locklab.kernel import locktorture

    chosen = settings(args)
    if args.warmup_reports < 0:
        raise LocklabError("--warmup-reports must not be negative")
    labelled: list[tuple[str | None, Path]] = []
    for text in args.logs:
        label, equals, path = text.rpartition("=")
        labelled.append((label if equals and label else None, Path(path if equals else text)))
    name = args.name or labelled[0][1].stem
    imported = locktorture.convert(labelled, name, args.host, args.warmup_reports)
    store = Store(Path(args.store))
    experiment, problems = locktorture.store_imported(store, imported, args.host)
    for line in problems:
        print(f"locklab: warning: {printable(line)}", file=sys.stderr)
    runs = store.runs(experiment)
    listing.print_analysis(analyse_experiment(experiment, runs, chosen), args.plain, args.wide)
    print(f'imported {len(runs)} runs as #{experiment.id} "{printable(experiment.name)}"')
    return 0


def cmd_kernel(args: argparse.Namespace) -> int:
    chosen = settings(args)
    if args.hosts:
        from locklab.cli.hosts import kernel_on_hosts

        return kernel_on_hosts(args, chosen)
    if args.exec is not None:
        return cmd_kernel_exec(args, chosen)
    if args.threads or args.metric_regex:
        raise LocklabError("--threads and --metric-regex: only with --exec")
    sweep = LocktortureSweep(
        args.type, args.nwriters, args.repeat, args.duration, args.stat_interval,
        args.warmup_reports, args.cpus, args.accel, args.pin_cpus or "", args.arch or "",
    )  # fmt: skip
    sweep.check(host=args.host_kernel)
    built_here = bool(args.patch or args.rev)
    if sum(map(bool, (args.kernel, built_here, args.images, args.host_kernel))) > 1:
        raise LocklabError(
            "kernel: give one of --kernel, --patch/--rev, --images and --host-kernel"
        )
    if args.debug and not built_here:
        raise LocklabError("--debug: only for kernels built here (--patch, --rev)")
    if args.param and not (built_here or args.images):
        raise LocklabError("--param: only for kernels built with locktorture in (--patch, --rev)")
    if args.host_kernel:
        targets, machine, name = sweep.host_targets(args.label), host, "host"
    elif built_here:
        targets = sweep.built_targets(args.patch, args.source, args.config, args.param,
                                      debug_list(args.debug), args.rev)  # fmt: skip
        machine, name = sweep.qemu_machine, "kernel"
    elif args.images:
        targets = sweep.prebuilt_targets(args.images, args.param)
        machine, name = sweep.qemu_machine, "kernel"
    else:
        targets, machine, name = (
            sweep.qemu_targets(args.kernel, args.label),
            sweep.qemu_machine,
            "kernel",
        )
    store = Store(Path(args.store))
    experiment, problems, logs = sweep.run(
        store, args.name or f"{name}-{args.type}", targets, machine
    )
    for line in problems:
        print(f"locklab: warning: {printable(line)}", file=sys.stderr)
    listing.print_analysis(analyse_experiment(experiment, store.runs(experiment), chosen),
                           args.plain, args.wide)  # fmt: skip
    print(f"console logs: {logs}")
    for log, outcome in sweep.failed_runs.items():
        print(f"locklab: failed run: {printable(Path(log).stem)}: {printable(outcome)}",
              file=sys.stderr)  # fmt: skip
    return 1 if sweep.failed_runs else 0


def cmd_kernel_build(args: argparse.Namespace) -> int:
    from locklab.kernel import build, build_inputs

    revisions = parse_rev_options(args.rev)
    patches = build_inputs.parse_patch_options(args.patch or ([] if revisions else ["stock"]))
    built_kernels = build.build(patches, args.source, args.config, debug_list(args.debug),
                                args.arch, revisions)  # fmt: skip
    for label, built in built_kernels.items():
        how = "cached" if built.cached else f"built in {built.seconds:.0f} s"
        names = ", ".join(patch["name"] for patch in built.patches) or "none (stock)"
        print(f"{printable(label)}: {built.image} (Linux {built.version} {built.arch}, {how}; "
              f"from {printable(built.source)}; patches: {printable(names)}; "
              f"config sha256 {built.config_sha256[:12]})")  # fmt: skip
    return 0
