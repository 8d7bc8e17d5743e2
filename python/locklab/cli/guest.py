"""`locklab kernel --patch ... --exec 'PROGRAM ARGS'`: a program inside each built kernel, with
the options of `locklab exec` ({threads}, --metric-regex, --work, --timeout, repeats), its runs
interleaved, stored and resumable like any sweep (run/guest_program.py)."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, replace
from pathlib import Path

from locklab import provenance
from locklab.analysis.cells import Settings, analyse_experiment
from locklab.analysis.model import Analysis
from locklab.analysis.places import combine
from locklab.cli.common import host, program_figure_options
from locklab.cli.measure import execute
from locklab.errors import LocklabError
from locklab.kernel import build, build_inputs, qemu
from locklab.kernel.arch import ARCHES, host_arch, resolve
from locklab.kernel.campaign import GuestProgram
from locklab.kernel.guest import BOOT_ALLOWANCE_S
from locklab.kernel.revisions import parse_rev_options
from locklab.kernel.vcpu_pin import parse_pin_cpus
from locklab.model.spec import ExperimentSpec, Variant, default
from locklab.model.values import parse_int_list, validate_axis
from locklab.output import listing
from locklab.run.engine import Engine, find_engine
from locklab.run.guest_program import GUEST_LOCK
from locklab.run.program import check_program
from locklab.store import Experiment, Run, Store


def _spec(name: str) -> object:
    return default(ExperimentSpec, name)


def guest_program_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("a program inside each built kernel (--patch ... --exec)")
    group.add_argument(
        "--exec", metavar="'PROGRAM ARGS'",
        help="run this installed program inside each kernel (the host's root, read-only) "
        "instead of locktorture; {threads} in ARGS takes each --threads value",
    )  # fmt: skip
    group.add_argument("--threads", help="--exec: values of {threads}, like 1,2,4 (the rows)")
    program_figure_options(group, "--exec: ", f", plus {BOOT_ALLOWANCE_S:.0f} s to boot")
    group.add_argument("--seed", type=int, default=_spec("seed"), help="seed of the run order")


def debug_option(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """--debug, on `kernel` and `kernel build` (read with debug_list)."""
    parser.add_argument(
        "--debug", metavar="CHECKERS", default="",
        help=f"{prefix}build with the kernel's checkers, comma-separated: kcsan, lockdep, kasan "
        "(each set a cached build of its own); their reports are listed under the table",
    )  # fmt: skip


def arch_option(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """--arch, on `kernel` and `kernel build` (None: this machine's, arch.resolve)."""
    host = host_arch()
    parser.add_argument(
        "--arch", choices=tuple(ARCHES), metavar="ARCH",
        help=f"{prefix}the kernels' architecture: {' or '.join(ARCHES)} (default: this "
        f"machine's{f', {host.name}' if host else ''}); arm64 is cross-built and, on another "
        "host, booted under emulation",
    )  # fmt: skip


def debug_list(text: str) -> list[str]:
    """--debug kcsan,lockdep: checked (build_inputs.debug_options)."""
    names = [name for name in text.split(",") if name]
    build_inputs.debug_options(names)
    return names


def cmd_kernel_exec(args: argparse.Namespace, chosen: Settings) -> int:
    if not (args.patch or args.rev):
        raise LocklabError("--exec: give the kernels to build and boot with --patch LABEL[=FILES] "
                           "or --rev LABEL=REV")  # fmt: skip
    if args.kernel or args.host_kernel or args.images:
        raise LocklabError(
            "--exec runs in kernels built here (--patch), not --kernel, --images or --host-kernel"
        )
    if args.param:
        raise LocklabError("--param is locktorture's; --exec runs a program instead")
    if args.arch and not resolve(args.arch).runs_programs:
        raise LocklabError(f"--exec runs programs in x86_64 guests only (the host's root over "
                           f"virtio-9p): --arch {args.arch} runs locktorture alone")  # fmt: skip
    patches = build_inputs.parse_patch_options(args.patch)
    revisions = parse_rev_options(args.rev)
    threads = parse_int_list("threads", args.threads or "1")
    program = GuestProgram(args.exec, threads, args.metric_regex, args.work, args.timeout)
    plan = GuestPlan(
        program, patches, args.source, args.config, debug_list(args.debug), args.repeat,
        args.seed, args.cpus, args.accel, args.pin_cpus or "", args.arch, revisions,
    )  # fmt: skip
    store = Store(Path(args.store))
    name = args.name or f"{Path(plan.first_word).name}-in-kernel"
    status, _ = plan.measure(args, chosen, store, name)
    return status


class GuestPlan:
    """A program to run inside each of some kernels: checked at once, built and measured by
    measure() (for `locklab kernel --exec` and kernel campaigns with a [program])."""

    def __init__(
        self, program: GuestProgram, patches: dict[str, list[Path]], source: Path | None,
        config: Path | None, debug: list[str], repeat: int, seed: int, cpus: int, accel: str,
        pin: str, arch: str | None = None, revisions: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        if not 1 <= cpus <= qemu.MAX_GUEST_CPUS:
            raise LocklabError(f"--cpus must be from 1 to {qemu.MAX_GUEST_CPUS} (got {cpus})")
        if pin:
            parse_pin_cpus(pin, cpus)
        self.arch = resolve(arch)
        if not self.arch.runs_programs:
            raise LocklabError(f"a program runs in x86_64 guests only (the host's root over "
                               f"virtio-9p), not in {self.arch.name} ones")  # fmt: skip
        try:
            words = shlex.split(program.command)
        except ValueError as error:
            raise LocklabError(f"--exec: {error}") from None
        if not words:
            raise LocklabError("--exec: give a command line, like 'pi-futex-load {threads} 1000'")
        self.first_word = words[0]
        validate_axis("nwriters", program.threads)
        self.revisions = revisions or {}
        patches = build.kernel_labels(patches, self.revisions)
        self.program, self.patches, self.source, self.config = program, patches, source, config
        self.debug, self.repeat, self.seed = debug, repeat, seed
        self.cpus, self.accel, self.pin = cpus, accel, pin
        check_program(self.spec("check", ""), interposed=False)

    def spec(self, name: str, logs: str) -> ExperimentSpec:
        program = self.program
        return ExperimentSpec(
            name=name, variants=[Variant(label, GUEST_LOCK) for label in self.patches],
            sweep={"nwriters": program.threads}, repeat=self.repeat, seed=self.seed,
            source="guest", program=[program.command],
            program_metric=program.metric_regex or "time", program_work=program.work,
            program_timeout_s=program.timeout, duration_s=1.0, warmup_s=0.0,
            guest_cpus=self.cpus, guest_accel=self.accel, guest_pin=self.pin,
            guest_logs=logs,
        )  # fmt: skip

    def measure(
        self, args: argparse.Namespace, chosen: Settings, store: Store, name: str,
        baseline: str | None = None,
    ) -> tuple[int, GuestTables | None]:  # fmt: skip
        """Build the kernels (cached), run the program in each, print one table of its
        figures (guest_tables): the exit status, and the tables (None when interrupted)."""
        spec = self.spec(name, str(store.path.parent / "kernel-logs" / name))
        built = build.build(self.patches, self.source, self.config, self.debug, self.arch.name,
                            self.revisions)  # fmt: skip
        spec.variants = [
            Variant(label, GUEST_LOCK, patches=tuple(str(p) for p in self.patches[label]),
                    plugin=str(built[label].image))
            for label in self.patches
        ]  # fmt: skip
        if baseline:
            spec.baseline = baseline
        engine = Engine(find_engine(None))
        engine.check(spec)
        experiment = store.create_experiment(spec, host(), provenance.version(),
                                             provenance.commit())  # fmt: skip
        hint = f"locklab run --store {store.path} --resume {experiment.id}"
        status, shown = execute(args, chosen, engine, store, experiment, hint, print_table=False)
        if shown is None:
            return status, None
        tables = guest_tables(experiment, shown[0], chosen)
        listing.print_analysis(tables.combined, args.plain, args.wide)
        print(f"console logs: {spec.guest_logs}")
        return status, tables


@dataclass
class GuestTables:
    """A program's runs in kernels: one analysis per figure, and all of them in one table."""

    experiment: Experiment
    runs: list[Run]
    analyses: list[Analysis]
    combined: Analysis


def guest_tables(experiment: Experiment, runs: list[Run], chosen: Settings) -> GuestTables:
    """Throughput (or the metric asked for) and the guest's context switches per operation,
    and cyclictest's p99 and max latency when the program printed its histogram, side by side
    in one table (seeds 001 and 003 read them together), each column group in its unit."""
    latency = any((r.result or {}).get("guest", {}).get("cyclictest") for r in runs)
    metrics = [chosen.metric, "ctxsw-op", *(("rt-p99", "rt-max") if latency else ())]
    metrics = list(dict.fromkeys(metrics))
    analyses = [analyse_experiment(experiment, runs, replace(chosen, metric=m)) for m in metrics]
    combined = combine(list(zip(metrics, analyses, strict=True)))
    combined.title = analyses[0].title  # one experiment: its lines once, not per figure
    combined.baseline_name = analyses[0].baseline_name
    combined.footer = analyses[0].footer  # the checkers' findings
    return GuestTables(experiment, runs, analyses, combined)
