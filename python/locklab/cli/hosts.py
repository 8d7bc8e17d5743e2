"""--hosts on run, campaign and exec: the same command on each host (run/remote.py), the hosts
in parallel but never two measurements on one machine at once, one progress display, each
host's runs stored here as they finish, as one experiment per host ("NAME@ALIAS"), then one
table per host and the hosts side by side (each against its own baseline, as places are).

A host that fails (unreachable, a refused key, an unknown host key, a failed build, a dropped
connection) is one line naming it; the other hosts go on, and what it finished is kept.
`locklab run --resume EXP` finishes a host's experiment on that host only.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from locklab.analysis.cells import Settings, analyse_experiment
from locklab.analysis.model import Analysis
from locklab.analysis.places import combine
from locklab.cli.common import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_RUN_FAILED
from locklab.cli.host_plans import Plan, kernel_plans, remote_command
from locklab.errors import LocklabError
from locklab.output import listing
from locklab.printable import printable
from locklab.run.remote import DEFAULT_REMOTE_DIR, Host, HostFailure, Report
from locklab.run.ssh import Ssh, check_aliases
from locklab.store import Experiment, Run, Store

STOP_WAIT_S = 60.0  # after Ctrl-C, how long the hosts get to stop and say what they kept


def hosts_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("hosts (the same experiment on other machines, over ssh)")
    group.add_argument(
        "--hosts", metavar="A,B",
        help="run it on each of these ssh hosts (aliases of your ssh config; localhost: here) "
        "in parallel, one experiment per host, side by side",
    )  # fmt: skip
    group.add_argument("--ssh-config", type=Path, metavar="FILE",
                       help="ssh's -F: this config file instead of ~/.ssh/config")  # fmt: skip
    group.add_argument(
        "--remote-dir", default=DEFAULT_REMOTE_DIR, metavar="DIR",
        help=f"each host's work folder, DIR/ALIAS (default ~/{DEFAULT_REMOTE_DIR})",
    )  # fmt: skip
    group.add_argument(
        "--install-deps", action="store_true",
        help="run 'make deps' on a host that lacks Debian packages, where the ssh user is root",
    )  # fmt: skip


@dataclass
class _HostState:
    """What the main thread knows of one host, from its events."""

    host: Host
    facts: dict = field(default_factory=dict)  # the host thread's latest copy
    experiments: dict[str, Experiment] = field(default_factory=dict)  # by UUID
    planned: int = 0
    received: int = 0
    status: int | None = None
    failure: str | None = None


def measure_on_hosts(
    args: argparse.Namespace, chosen: Settings, aliases: list[str], arguments: list[str],
    inputs: dict[Path, str], report_page: Path | None = None,
) -> int:  # fmt: skip
    """Run `arguments` on every host (see measure_plans)."""
    plans = {alias: (arguments, inputs) for alias in aliases}
    return measure_plans(args, chosen, plans, report_page)


def measure_plans(
    args: argparse.Namespace, chosen: Settings, plans: dict[str, Plan],
    report_page: Path | None = None, failed: int = 0,
) -> int:  # fmt: skip
    """Run each host's plan, storing its runs as they come; print the tables (and write the
    report to `report_page`). The exit status: 130 when interrupted, else 1 if a host failed
    (`failed`: before the plans were made) or a variant's runs failed, else 0."""
    aliases = list(plans)
    store = Store(Path(args.store))
    events: queue.Queue[tuple[str, str, object]] = queue.Queue()
    ssh = Ssh(args.ssh_config.resolve() if args.ssh_config else None)
    logs = store.path.parent.resolve() / "hosts"
    states = {
        alias: _HostState(
            Host(alias, ssh, args.remote_dir, logs, _put(events), args.install_deps)
        )  # fmt: skip
        for alias in aliases
    }
    machines: dict[str, threading.Lock] = {}
    machines_lock = threading.Lock()
    threads = [
        threading.Thread(
            target=_work,
            args=(state.host, *plans[alias], machines, machines_lock, logs),
            daemon=True,
        )  # fmt: skip
        for alias, state in states.items()
    ]
    interrupted = False
    with _progress() as progress:
        tasks = {alias: progress.add_task(alias, total=None, step="waiting", runs="")
                 for alias in aliases}  # fmt: skip
        for thread in threads:
            thread.start()
        while any(state.status is None for state in states.values()):
            try:  # Ctrl-C anywhere in here stops the hosts, which then say what they kept
                try:
                    alias, kind, payload = events.get(timeout=STOP_WAIT_S if interrupted else 1)
                except queue.Empty:
                    if interrupted:
                        break
                    continue
                state = states[alias]
                _take(store, state, kind, payload)
                step = _step_text(state, kind, payload)
                shown = {"step": step} if step else {}
                progress.update(tasks[alias], runs=_runs_text(state), total=state.planned or None,
                                completed=state.received, **shown)  # fmt: skip
                progress.refresh()
            except KeyboardInterrupt:
                if not interrupted:
                    interrupted = True
                    for state in states.values():
                        state.host.stop()
    status = _conclude(args, chosen, store, states, interrupted, report_page)
    return EXIT_RUN_FAILED if failed and status == 0 else status


def _put(events: queue.Queue[tuple[str, str, object]]) -> Report:
    return lambda alias, kind, payload: events.put((alias, kind, payload))


def _progress() -> Progress:
    columns = (
        TextColumn("{task.description:<14}", markup=False),
        TextColumn("{task.fields[step]:<40.40}", markup=False),
        BarColumn(),
        TextColumn("{task.fields[runs]}", markup=False),
        TimeElapsedColumn(),
    )
    return Progress(*columns, console=listing.stderr_console(), auto_refresh=False)


def _work(
    host: Host, arguments: list[str], inputs: dict[Path, str],
    machines: dict[str, threading.Lock], machines_lock: threading.Lock, logs: Path,
) -> None:  # fmt: skip
    """One host's steps, in its own thread; the last event is always "done". What the host's
    store holds beside its runs (kernel consoles) is fetched once its run has begun, even when
    the run failed: that is when the consoles matter."""
    status, failure = EXIT_INTERNAL, "ended without a word"
    ran = False
    try:
        host.probe()
        host.ship(inputs)
        host.build()
        host.doctor()
        with machines_lock:  # two aliases of one machine measure one after the other
            machine = machines.setdefault(str(host.facts.get("machine_id")), threading.Lock())
        if not machine.acquire(blocking=False):
            host.report(host.alias, "step", "waiting: another alias of this machine measures")
            machine.acquire()
        try:
            ran = True
            status, failure = host.run(arguments), None
        finally:
            machine.release()
    except HostFailure as error:
        status, failure = EXIT_RUN_FAILED, str(error)
    except KeyboardInterrupt:
        status, failure = EXIT_INTERRUPTED, "interrupted"
    except Exception as error:  # a bug: said as one line, the other hosts go on
        status, failure = EXIT_INTERNAL, f"internal error: {type(error).__name__}: {error}"
    finally:
        if ran and status != EXIT_INTERRUPTED:
            try:
                host.fetch(logs / host.alias / "fetched")
            except (HostFailure, KeyboardInterrupt) as error:
                if failure is None:
                    status, failure = EXIT_RUN_FAILED, f"fetching its logs: {error}"
        host.report(host.alias, "done", (status, failure))


def _take(store: Store, state: _HostState, kind: str, payload: object) -> None:
    """One event of a host, into the store and the host's state. A mirrored event this side
    cannot place is left: the host's store has it, and a resume replays it."""
    alias = state.host.alias
    if kind == "facts":
        assert isinstance(payload, dict)
        state.facts = payload
        for experiment in state.experiments.values():
            store.set_host_facts(experiment, alias, state.facts)
    elif kind == "mirror":
        assert isinstance(payload, dict)
        try:
            if payload["event"] == "experiment":
                experiment = store.mirrored_experiment(payload, alias)
                state.experiments[payload["uuid"]] = experiment
                store.set_host_facts(experiment, alias, state.facts)
                if payload.get("planned"):
                    state.planned = int(payload["planned"])
                    state.received = len(store.finished(experiment))
            elif payload["experiment"] in state.experiments:
                if store.mirrored_run(state.experiments[payload["experiment"]], payload):
                    state.received += payload["status"] == "ok"
        except (KeyError, TypeError, ValueError):
            pass
    elif kind == "done":
        assert isinstance(payload, tuple)
        state.status, state.failure = payload


def _step_text(state: _HostState, kind: str, payload: object) -> str | None:
    """The host's step as the progress display shows it (None: no change)."""
    if kind == "step":
        return printable(str(payload))
    if kind == "done":
        return "done" if state.failure is None else "failed"
    return "run" if kind == "mirror" else None


def _runs_text(state: _HostState) -> str:
    if not state.planned:
        return f"{state.received} runs" if state.received else ""
    return f"{state.received}/{state.planned} runs"


def _conclude(
    args: argparse.Namespace, chosen: Settings, store: Store, states: dict[str, _HostState],
    interrupted: bool, report_page: Path | None,
) -> int:  # fmt: skip
    """Each host's table, the hosts side by side, the report; a line per host that failed."""
    shown: list[tuple[str, Experiment, list[Run], Analysis]] = []
    for alias, state in states.items():
        for experiment in state.experiments.values():
            runs = store.runs(experiment)
            if not runs:
                continue
            analysis = analyse_experiment(experiment, runs, chosen)
            print(f"\nhost {printable(alias)}: {host_line(state.facts)}")
            listing.print_analysis(analysis, args.plain, args.wide)
            shown.append((alias, experiment, runs, analysis))
    combined = side_by_side([(alias, analysis) for alias, _, _, analysis in shown])
    if combined is not None:
        print("\nhosts side by side:")
        listing.print_analysis(combined, args.plain, args.wide)
    if report_page is not None and shown and not interrupted:
        from locklab.cli import figures

        figures.write_report([(e, r, a) for _, e, r, a in shown], chosen, report_page, combined)
    status = 0
    for alias, state in states.items():
        if state.status is None:  # still stopping when the wait ended
            state.failure = f"still stopping after {STOP_WAIT_S:g} s"
        kept = _kept(store, state)
        if state.failure is not None:
            print(f"locklab: error: host {printable(alias)}: {printable(state.failure)}{kept}",
                  file=sys.stderr)  # fmt: skip
        _relay_errors(state)
        status = max(status, state.status if state.status is not None else EXIT_INTERRUPTED)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_RUN_FAILED if status not in (0, EXIT_INTERRUPTED) else status


def _kept(store: Store, state: _HostState) -> str:
    """What a failed or interrupted host leaves: its runs kept, and how to finish."""
    parts = []
    for experiment in state.experiments.values():
        done = len(store.finished(experiment))
        planned = len(experiment.spec.schedule())
        if done < planned:
            parts.append(
                f"{done} of {planned} runs of #{experiment.id} are kept; finish with: "
                f"locklab run --store {store.path.parent} --resume {experiment.id}"
            )
    return f"; {'; '.join(parts)}" if parts else ""


def _relay_errors(state: _HostState) -> None:
    """The host locklab's own error lines (a variant's failed runs), prefixed with the host."""
    log = state.host.logs / "run.log"
    if not log.exists():
        return
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("locklab: error: ") and state.failure is None:
            message = line.removeprefix("locklab: error: ")
            print(f"locklab: error: host {printable(state.host.alias)}: {printable(message)}",
                  file=sys.stderr)  # fmt: skip


def side_by_side(analysed: list[tuple[str, Analysis]], noun: str = "hosts") -> Analysis | None:
    """The hosts' tables as one, each column against its own host's baseline, when there are
    several hosts and each experiment sweeps one axis (else None: the tables stand alone)."""
    names = {alias for alias, _ in analysed}
    if len(names) < 2 or len(names) != len(analysed):  # several, each named once
        return None
    if any(len(analysis.sections) != 1 for _, analysis in analysed):
        return None
    return combine(analysed, noun=noun)


def host_line(facts: dict) -> str:
    """A host's facts in one line: what it is, what its doctor said, each step's time."""
    numa = facts.get("numa_nodes")
    what = [
        str(facts.get("arch", "?")), f"{facts.get('cpus', '?')} CPUs",
        str(facts.get("cpu") or "CPU model unknown"),
        f"{numa} NUMA node{'s' if numa != 1 else ''}", f"Linux {facts.get('kernel', '?')}",
    ]  # fmt: skip
    if facts.get("as_root"):
        what.append("as root (its ssh configuration says so)")
    line = ", ".join(what)
    if facts.get("doctor"):
        line += f"; doctor: {facts['doctor']}"
    steps = facts.get("steps") or {}
    if steps:
        line += "; steps: " + ", ".join(
            f"{name.removesuffix('_s')} {seconds:.1f} s" for name, seconds in steps.items()
        )
    return printable(line)


def resume_host(store: Store, experiment: Experiment, args: argparse.Namespace) -> str | None:
    """The host an experiment was measured on (None: this machine, or a merged store); its
    ssh config and work folder become the options' defaults, as that host was reached so."""
    found = store.host_facts(experiment)
    if found is None:
        return None
    alias, facts = found
    if args.remote_dir == DEFAULT_REMOTE_DIR and facts.get("remote_dir"):
        args.remote_dir = facts["remote_dir"]
    if args.ssh_config is None and facts.get("ssh_config"):
        args.ssh_config = Path(facts["ssh_config"])
    return alias


def kernel_on_hosts(args: argparse.Namespace, chosen: Settings) -> int:
    """`locklab kernel --hosts`: the kernels of --patch built here and booted on each host
    (host_plans.kernel_plans), under KVM where it works there and with the vCPUs pinned as
    --pin-cpus says; --host-kernel runs each host's own kernel's locktorture instead."""
    aliases = check_aliases(args.hosts)
    if args.exec is not None:
        raise LocklabError("--exec with --hosts: programs in kernels run on this machine only")
    if args.kernel or args.images:
        raise LocklabError("--hosts: give --patch (kernels built here, shipped) or "
                           "--host-kernel, not --kernel or --images")  # fmt: skip
    if args.host_kernel:
        return measure_on_hosts(args, chosen, aliases, *remote_command(args))
    if not (args.patch or args.rev):
        raise LocklabError("--hosts: give --patch LABEL=... (or --rev) or --host-kernel")
    plans, failed = kernel_plans(args, aliases)
    if not plans:
        return EXIT_RUN_FAILED
    return measure_plans(args, chosen, plans, failed=failed)
