"""The lines above a table: what the experiment ran, on which machines, and what each column
label stands for."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from locklab.kernel.findings import from_records, summary
from locklab.model.ports import differences_note
from locklab.model.spec import ExperimentSpec
from locklab.store import Experiment, Run

# What a lock compiled from a kernel tree cannot reproduce in userspace (kernel/from_source.py),
# and in the simulator, whose scheduler model sets a preempted task's on_cpu (docs/scheduler.md).
FROM_SOURCE_NOTE = (
    "kernel: locks run the tree's own code in userspace: preemption and interrupts cannot be "
    "disabled, so a preempted holder or queued waiter stalls the others and points with more "
    "threads than CPUs differ from the kernel's; a preempted owner reads as running"
)
FROM_SOURCE_SIM_NOTE = (
    "kernel: locks run the tree's own code on the simulated CPUs, whose scheduler model keeps "
    "a task with preemption off (preempt_disable(), a raw spinlock) on its CPU, answers "
    "need_resched() and shows an owner off its CPU (task->on_cpu), as the kernel does"
)


# The sleeping hand ports whose waiters spin on a running owner (native/locks/osq.h's
# OSQ_SPIN_NS, rtmutex.c's RESCHED_NS; lock_task.h's running flag), and what that means.
OWNER_SPINNING_PORTS = frozenset(
    {"mutex", "rwsem", "mutex_3_10", "rwsem_xadd_3_10", "rtmutex"}
    | {f"rtmutex_k{k}" for k in range(6)}
)
HAND_PORT_CAP = (
    "the sleeping hand ports cap an owner spin at 1 ms (the kernel has no time cap: it stops "
    "when the owner sleeps or it must reschedule)"
)
HAND_PORT_NOTE = (
    f"{HAND_PORT_CAP} and take a preempted owner as running; the kernel: locks beside them "
    "measure what that changes"
)
HAND_PORT_SIM_NOTE = (
    f"{HAND_PORT_CAP}; simulated, an owner off its CPU reads as not running, as in the kernel"
)


# What --no-checks leaves out, said in the table's first line.
UNCHECKED = (
    "unchecked (--no-checks): the bare loop's section, one counter checked at the end; no "
    "owner word or hand-over test per acquisition"
)


def _origin(plugin: str) -> str:
    """Where a plugin's lock comes from and which loop measured it: a kernel: lock's tree and
    patches, a C file compiled with its own loop, or a .so through the indirect call."""
    record = Path(plugin).with_name("provenance.json")
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return f"{plugin} (a .so: one indirect call per acquisition)"
    try:
        if "source_file" in data:
            return f"{data['source_file']}, compiled with a loop of its own ({data['build']})"
        patches = " + ".join(data["patches"]) or "no patches"
        return f"{data['source']} with {patches} ({data['build']})"
    except (KeyError, TypeError):
        return plugin


def _kernel_origin(image: str) -> str:
    """A built kernel, from the provenance.json beside its image: version, patches, checkers."""
    try:
        data = json.loads(Path(image).with_name("provenance.json").read_text())
        patches = " + ".join(p["name"] for p in data["patches"]) or "no patch"
        debug = f", checkers {'+'.join(data['debug'])}" if data.get("debug") else ""
        return f"Linux {data['version']} + {patches} (config {data['config_sha256'][:12]}{debug})"
    except (OSError, ValueError, KeyError, TypeError):
        return image


def variant_lines(spec: ExperimentSpec) -> list[str]:
    """What each column label runs, where the label alone does not say it."""
    if spec.source == "guest":
        kernels = "; ".join(f"{v.label} = {_kernel_origin(v.plugin or '')}" for v in spec.variants)
        return [f"kernels: {kernels}"]
    described = [
        f"{v.label} = {v.describe()}" + (f" from {_origin(v.plugin)}" if v.plugin else "")
        for v in spec.variants
        if v.label != v.describe() or v.plugin
    ]
    lines = [f"variants: {'; '.join(described)}"] if described else []
    if any(v.lock.startswith("kernel:") for v in spec.variants):
        lines.append(f"note: {FROM_SOURCE_SIM_NOTE if spec.sim else FROM_SOURCE_NOTE}")
    if any(v.lock in OWNER_SPINNING_PORTS for v in spec.variants):
        lines.append(f"note: {HAND_PORT_SIM_NOTE if spec.sim else HAND_PORT_NOTE}")
    ports = differences_note([v.lock for v in spec.variants])
    if ports:
        lines.append(f"note: {ports}")
    return lines


def _runs_per_cell(spec: ExperimentSpec, runs: list[Run]) -> str:
    """'3 runs per cell', 'auto 3-8 runs per cell', or with a campaign's runs past its plan
    (run/settle.py) '3 runs per cell, up to 5 where a verdict asked for more'."""
    if spec.repeat_auto:
        return f"auto {spec.min_repeat}-{spec.repeat} runs per cell"
    most = max((run.repeat + 1 for run in runs if run.status == "ok"), default=0)
    past = f", up to {most} where a verdict asked for more" if most > spec.repeat else ""
    return f"{spec.repeat} runs per cell{past}"


def experiment_line(experiment: Experiment, runs: list[Run]) -> str:
    spec = experiment.spec
    if spec.source == "locktorture":
        return (
            f'experiment #{experiment.id} "{experiment.name}": kernel locktorture logs, '
            f"up to {spec.repeat} runs per cell, throughput after the dropped warm-up reports"
        )
    if spec.source in ("guest", "program"):
        how = (
            f"({spec.program_work} work) / wall time"
            + (" in the guest" if spec.source == "guest" else "")
            if spec.program_metric == "time"
            else f"its output /{spec.program_metric}/"
        )
        where = (
            f"inside each kernel (QEMU, {spec.guest_cpus} vCPUs, the host's root over 9p)"
            if spec.source == "guest"
            else "under each lock (LD_PRELOAD)"
        )
        return (
            f'experiment #{experiment.id} "{experiment.name}": {" ".join(spec.program)} {where}, '
            f"{spec.repeat} runs per cell, throughput from {how}; nwriters = {{threads}}"
        )
    return (
        f'experiment #{experiment.id} "{experiment.name}": {_runs_per_cell(spec, runs)}, '
        f"{spec.duration_s:g} s measured after {spec.warmup_s:g} s warm-up, pin {spec.pin}, "
        f"locklab {experiment.locklab_commit or experiment.locklab_version}"
        + ("" if spec.checks else f"; {UNCHECKED}")
    )


def figure_caption(experiment: Experiment, runs: list[Run]) -> str:
    """The line a figure carries, so that a copy of it pasted into a mail still says what it
    shows: the experiment, and the machine; a simulated one says so, and that it is a model."""
    machine = next((run.machine for run in runs if run.machine), None) or {}
    where = "machine unknown (no finished run)"
    if machine.get("simulated"):
        where = (f"simulated: {machine.get('hostname')} (model, not hardware), "
                 f"{machine.get('cpus_online')} virtual CPUs")  # fmt: skip
    elif machine:
        facts = [machine.get("hostname"), machine.get("cpu_model"),
                 machine.get("cpus_online") and f"{machine.get('cpus_online')} CPUs"]  # fmt: skip
        where = "measured on " + ", ".join(str(fact) for fact in facts if fact)
    return f'#{experiment.id} "{experiment.name}", {where}'


def _first_word(text: object) -> str:
    words = str(text or "?").split()
    return words[0] if words else "?"


def machine_lines(runs: list[Run]) -> list[str]:
    """The machines the runs report (one line each; more than one only after a mistake). Each
    run measures its own pause, which moves a little from run to run: one machine is one line,
    with the median pause and its range."""
    pauses: dict[str, list[float]] = {}
    for run in runs:
        m = run.machine
        if not m:
            continue
        nodes = m.get("numa_nodes")
        if m.get("simulated"):  # never to be mistaken for a measured machine
            line = (
                f"simulated: {m.get('hostname')} ({m.get('cpu_model')}), {m.get('arch')}, "
                f"{m.get('cpus_online')} virtual CPUs, {nodes} NUMA nodes, virtual time "
                "(model: docs/simulator.md)"
            )
            pauses.setdefault(line, [])
            continue
        facts = [
            m.get("hostname"),
            m.get("arch"),
            m.get("cpu_model"),
            m.get("cpus_online") and f"{m.get('cpus_online')} CPUs",
            nodes and f"{nodes} NUMA node{'s' if nodes != 1 else ''}",
            m.get("governor") and f"governor {m.get('governor')}",
            m.get("kernel") and f"kernel {_first_word(m.get('kernel'))}",
            m.get("source") and f"from {m.get('source')}",
            m.get("remote_node_cost"),
        ]
        line = "machine: " + ", ".join(str(fact) for fact in facts if fact)
        pause = m.get("cpu_relax_ns")
        pauses.setdefault(line, []).extend([pause] if pause else [])
    return [line + _pause_fact(values) for line, values in pauses.items()] or [
        "machine: unknown (no finished run)"
    ]


def _pause_fact(values: list[float]) -> str:
    if not values:
        return ""
    fact = f", cpu_relax {statistics.median(values):.1f} ns"
    low, high = min(values), max(values)
    if f"{low:.1f}" != f"{high:.1f}":
        fact += f" ({low:.1f}-{high:.1f} over {len(values)} runs)"
    return fact


def finding_lines(spec: ExperimentSpec, runs: list[Run]) -> list[str]:
    """The kernel's checkers' findings (KCSAN, lockdep, KASAN, WARNING), per kernel, under the
    table: "k0: 3 KCSAN data-race: a vs b (in 2 of 5 runs)". Only for runs that kept them."""
    lines: list[str] = []
    for variant in spec.variants:
        kept = [
            from_records(r.result["kernel_findings"])
            for r in runs
            if r.config_key.label == variant.label and "kernel_findings" in (r.result or {})
        ]
        with_any = [found for found in kept if found]
        if with_any:
            every = [finding for found in with_any for finding in found]
            lines.append(f"{variant.label}: {summary(every)} (in {len(with_any)} of "
                         f"{len(kept)} runs)")  # fmt: skip
    return ["Kernel checkers' findings:", *lines] if lines else []
