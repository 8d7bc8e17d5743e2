"""What the commands that measure share: kernel: variants compiled before a sweep, a sweep of
the store's experiment measured and tabulated (`execute`), and a kernel campaign's kernels
built and booted (`KernelPlan`)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from locklab.analysis.cells import Analysis, Settings, analyse_experiment
from locklab.cli.common import EXIT_INTERRUPTED, EXIT_RUN_FAILED
from locklab.kernel import campaign as kernel_campaign
from locklab.kernel.campaign import KernelCampaign
from locklab.kernel.from_source import SIM_BUILD, TREE_PARTS, build_source_lock, is_source_lock
from locklab.kernel.revisions import git_tree, range_revisions
from locklab.kernel.series import split_series
from locklab.kernel.sweep import Target
from locklab.model.spec import ExperimentSpec, Variant
from locklab.output import listing
from locklab.printable import printable
from locklab.run import adaptive, settle
from locklab.run.engine import Engine
from locklab.run.estimate import duration_text, estimate_text
from locklab.run.source_plugin import compiled, is_source
from locklab.run.sweep import SweepOutcome, describe, run_sweep, runs_at_once, swept_axes
from locklab.store import Experiment, Run, Store


def compile_variants(spec: ExperimentSpec, engine: Engine) -> None:
    """A campaign's compiled variants: a plugin given as C source, and each kernel: lock from the
    spec's tree with the variant's patches, in the engine's build, or the simulator's for a
    simulated campaign (cached)."""
    tree = Path(spec.kernel_tree) if spec.kernel_tree else None
    build = SIM_BUILD if spec.sim_machine else engine.build()
    spec.variants = [
        replace(variant, plugin=str(compiled(Path(variant.plugin), build, engine.path)))
        if variant.plugin and is_source(variant.plugin) else variant
        for variant in spec.variants
    ]  # fmt: skip
    spec.variants = [one for variant in spec.variants for one in _revision_range(spec, variant)]
    spec.variants = [
        _compiled_source_lock(variant, tree, build, engine, spec.sim_machine)
        if is_source_lock(variant.lock) and variant.plugin is None else variant
        for variant in spec.variants
    ]  # fmt: skip


def _revision_range(spec: ExperimentSpec, variant: Variant) -> list[Variant]:
    """`revs = "A..B"`: the variant once per commit of the range that touches the locking
    files, A first (as --revs takes them), labelled LABEL@A, LABEL@SHORT; a baseline named by
    the variant's label becomes its first. Any other variant as it is."""
    if ".." not in variant.revision:
        return [variant]
    top = git_tree(Path(spec.kernel_tree) if spec.kernel_tree else None)
    commits = range_revisions(top, variant.revision, TREE_PARTS)
    expanded = [replace(variant, label=f"{variant.label}@{label}", revision=commit)
                for label, commit in commits]  # fmt: skip
    if spec.baseline == variant.label:
        spec.baseline = expanded[0].label
    return expanded


def _compiled_source_lock(
    variant: Variant, tree: Path | None, build: str, engine: Engine, sim_machine: str
) -> Variant:
    """A campaign's kernel: variant, built: its patches (a mailed series as its patches) on
    the tree, or on the revision `rev` of the git tree `source`, stored as commit and subject."""
    patches = [patch for name in variant.patches for patch in split_series(Path(name))]
    built = build_source_lock(variant.lock, variant.label, patches, build, engine.path, tree,
                              sim_machine, variant.revision)  # fmt: skip
    return replace(variant, plugin=str(built.plugin), revision=built.revision)


def plan_line(spec: ExperimentSpec) -> str:
    """An engine or program experiment's plan in one line, for --dry-run."""
    configs = len(spec.configurations())
    runs = configs * spec.repeat
    timing = (f"about {runs * spec.expected_run_s() / 60:.1f} min" if not spec.sim else
              "host time from the store's earlier runs when it starts (simulated)")  # fmt: skip
    return (f'"{printable(spec.name)}": {len(spec.variants)} variants x '
            f"{configs // len(spec.variants)} points x {spec.repeat} repeats = {runs} runs, "
            f"{timing}")  # fmt: skip


def execute(
    args: argparse.Namespace,
    chosen: Settings,
    engine: Engine,
    store: Store,
    experiment: Experiment,
    resume_hint: str | None = None,
    print_table: bool = True,
    settle_cells: bool = False,
) -> tuple[int, tuple[list[Run], Analysis] | None]:
    """Measure what is missing of the experiment and print its table (unless another table
    shows it): the exit status, and the runs and the analysis the table came from (None when
    interrupted). With `settle_cells`, the cells a few more runs would settle get them first."""
    spec = experiment.spec
    errors = listing.stderr_console()
    runs_planned = len(spec.schedule())
    errors.print(
        f'experiment #{experiment.id} "{printable(experiment.name)}" in {store.path}: '
        f"{runs_planned} runs, {estimate_text(spec, store, runs_at_once(spec))}"
    )
    store.announce(experiment, runs_planned)
    try:
        outcome = run_sweep(engine, store, experiment, errors)
    except KeyboardInterrupt:
        kept = len(store.finished(experiment))
        print(
            f"locklab: interrupted: {kept} of {runs_planned} runs of #{experiment.id} are kept; "
            "finish with: "
            + (resume_hint or f"locklab run --store {args.store} --resume {experiment.id}"),
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED, None
    if outcome.taken:
        errors.print(
            f"{outcome.taken} runs were left to another locklab working on #{experiment.id} at "
            "the same time"
        )
    runs = store.runs(experiment)
    analysis = analyse_experiment(experiment, runs, chosen)
    if settle_cells and not spec.repeat_auto:
        try:
            more = _settle(engine, store, experiment, runs, analysis, errors)
        except KeyboardInterrupt:  # the planned runs are in: the table is theirs and these
            print(f"locklab: interrupted while settling; #{experiment.id}'s planned runs are "
                  f"complete: locklab table {experiment.id} --store {args.store}",
                  file=sys.stderr)  # fmt: skip
            return EXIT_INTERRUPTED, None
        if more is not None:
            outcome.failures += more.failures
            outcome.replays += more.replays
            runs = store.runs(experiment)
            analysis = analyse_experiment(experiment, runs, chosen)
    if print_table:
        listing.print_analysis(analysis, args.plain, args.wide)
    if spec.repeat_auto:
        errors.print(adaptive.summary(spec, runs, outcome.settled))
    for line in outcome.failures:
        print(f"locklab: error: {printable(line)}", file=sys.stderr)
    for command in outcome.replays:  # a simulated failure, deterministic: one command each
        print(f"locklab: replay it alone: {printable(command)}", file=sys.stderr)
    return (EXIT_RUN_FAILED if outcome.failures else 0), (runs, analysis)


def _settle(
    engine: Engine,
    store: Store,
    experiment: Experiment,
    runs: list[Run],
    analysis: Analysis,
    errors: Console,
) -> SweepOutcome | None:
    """The few more runs the verdicts ask for (run/settle.py), said before they run; None when
    no cell asks."""
    spec = experiment.spec
    configs = {config.key: config for config in spec.configurations()}
    swept = swept_axes(spec)
    at_once = runs_at_once(spec)
    wanted = settle.plan(analysis, spec, runs, at_once,
                         lambda key: describe(configs[key], swept))  # fmt: skip
    for line in wanted.no_time:
        errors.print(
            f"not settled: {line} would take more than {settle.TIME_SHARE:.0%} of the "
            "time its planned runs took"
        )
    if not wanted.wanted:
        return None
    errors.print(
        f"settling {len(wanted.settling)} inconclusive cell"
        f"{'s' if len(wanted.settling) != 1 else ''} that asked for a few more runs (at most "
        f"{settle.FEW_RUNS_FACTOR * spec.repeat} per cell): {wanted.extra_runs} more runs, the "
        f"cells' and their baselines', about {duration_text(wanted.extra_s)}; "
        + "; ".join(wanted.settling)
    )
    return run_sweep(engine, store, experiment, errors, wanted.todo(spec))


# A guest's boot and power-off around each locktorture run, under emulation, for the estimate.
KERNEL_BOOT_S = 5.0


class KernelPlan:
    """A kernel campaign, checked: its kernels built (cached) by build(), then booted by run()."""

    def __init__(self, campaign: KernelCampaign) -> None:
        self.campaign = campaign
        self.sweep, self.patches, self.params = kernel_campaign.sweep_of(campaign)
        self.sweep.check()
        self.targets: list[Target] = []

    def line(self) -> str:
        """The plan, for --dry-run."""
        campaign = self.campaign
        runs = len(campaign.kernels) * len(campaign.nwriters) * campaign.repeat
        minutes = runs * (campaign.duration + KERNEL_BOOT_S) / 60
        return (f'"{printable(campaign.name)}": {len(campaign.kernels)} kernels x '
                f"{len(campaign.nwriters)} points x {campaign.repeat} repeats = {runs} runs, "
                f"about {minutes:.1f} min, builds not counted")  # fmt: skip

    def build(self) -> None:
        self.targets = self.sweep.built_targets(
            self.patches, self.campaign.source, self.campaign.config, self.params,
            self.campaign.debug,
        )  # fmt: skip

    def run(self, store: Store) -> tuple[Experiment, Path]:
        """Boot every run into the store: the experiment and the folder of its consoles."""
        experiment, problems, logs = self.sweep.run(
            store, self.campaign.name, self.targets, self.sweep.qemu_machine
        )
        for line in problems:
            print(f"locklab: warning: {printable(line)}", file=sys.stderr)
        return experiment, logs

    def emulated(self) -> bool:
        """Whether any boot ran under emulation (TCG), where timings are not representative."""
        return self.sweep.accels != {"kvm"}

    def failures(self) -> int:
        """Each failed boot's line; the exit status they make."""
        for log, outcome in self.sweep.failed_runs.items():
            print(f"locklab: failed run: {printable(Path(log).stem)}: {printable(outcome)}",
                  file=sys.stderr)  # fmt: skip
        return 1 if self.sweep.failed_runs else 0
