"""Campaign files: an experiment described in TOML (see examples/campaigns/)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from locklab.errors import LocklabError
from locklab.model.machine_profile import MachineProfile, find_profile, with_sched
from locklab.model.spec import AutoRepeat, ExperimentSpec, Variant, Workload, default, run_times
from locklab.model.values import AXES

TOP_KEYS = {
    "name",
    "kind",
    "repeat",
    "duration",
    "warmup",
    "baseline",
    "pin",
    "seed",
    "interval",
    "long_hold_ms",
    "stutter",
    "numa_nodes",
    "torture_delays",
    "churn",
    "numa_remote_ns",
    "program",
    "metric_regex",
    "work",
    "program_timeout",
    "sweep",
    "variant",
    "workload",
    "full",
    "min_repeat",
    "max_repeat",
    "precision",
    "source",
    "checks",
    "hosts",
    "sim",
    "sched",
}
VARIANT_KEYS = {"label", "lock", "params", "plugin", "patches", "rev", "revs"}
# What [full] may override: the seed's own scale, run with `locklab campaign FILE --full`.
FULL_KEYS = {
    "repeat", "duration", "warmup", "long_hold_ms", "numa_nodes", "pin", "sweep",
    "torture_delays", "numa_remote_ns",
}  # fmt: skip


def load_campaign(
    path: Path, full: bool = False, sim: str | None = None, sched: str | None = None
) -> ExperimentSpec:
    """Parse and shape-check a campaign file (with its [full] overrides when `full`, and on the
    simulated machine `sim` when given, as if the file said sim = ...; a file that measures gets
    the simulator's times, since its own would be as many virtual seconds, hours of simulation);
    lock names and params are checked later, against the engine's catalogue, by
    ExperimentSpec.validate."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise LocklabError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise LocklabError(
            f"{path}: not a campaign file: byte {error.start} is not UTF-8 text (TOML is UTF-8)"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        # tomllib's message ends with "(at line N, column M)", or "(at end of document)".
        last_line = len(text.splitlines())
        message = str(error).replace(
            "(at end of document)", f"(at end of document, line {last_line})"
        )
        raise LocklabError(f"{path}: malformed TOML: {message}") from None
    machine = None
    if sim:  # the command line's machine: its errors name --sim, its path is the shell's
        machine = find_profile(sim, "--sim")
        if "sim" not in data:  # a measured campaign's seconds are real ones, not virtual ones
            for table in (data, data.get("full")):
                if isinstance(table, dict):
                    table.pop("duration", None)
                    table.pop("warmup", None)
        if data.get("sim") != sim:
            # The machine is part of what was run: another one's experiment is another name
            # (seed-000-sim and seed-000-sim-on-gigabyte-96c), and another report page.
            own = data.get("name") if isinstance(data.get("name"), str) else path.stem
            data["name"] = f"{own}-on-{Path(sim).stem}"
        data["sim"] = sim
    if sched and data.get("sched") != sched:  # another kernel's placement: another experiment
        own = data.get("name") if isinstance(data.get("name"), str) else path.stem
        data["name"], data["sched"] = f"{own}-{sched}", sched
    return _CampaignReader(path, text, machine).spec(data, full)


def campaign_kind(path: Path) -> str:
    """What a campaign file measures: "engine" (the default), "kernel" (booted kernels, read by
    kernel/campaign.py) or "places" (one patch in the engine, a kernel and a program, read by
    model/places.py). Anything unreadable is "engine", whose reader says why in one line."""
    try:
        kind = tomllib.loads(path.read_text(encoding="utf-8")).get("kind", "engine")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "engine"
    return kind if isinstance(kind, str) else "engine"


def campaign_hosts(path: Path) -> list[str]:
    """The file's `hosts = ["a", "b"]`: the ssh hosts it runs on (see cli/hosts.py); [] for
    here. An unreadable file has none: its reader says why in one line."""
    try:
        hosts = tomllib.loads(path.read_text(encoding="utf-8")).get("hosts", [])
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise LocklabError(f'{path}: hosts must be a list of ssh host names, like ["a", "b"]')
    return hosts


def campaign_from_data(path: Path, text: str, data: dict, full: bool = False) -> ExperimentSpec:
    """An engine or program campaign from tables another reader made (model/places.py); `text`
    is the file the keys came from, for the line numbers of errors."""
    return _CampaignReader(path, text).spec(data, full)


def locate_error(path: Path, error: LocklabError) -> LocklabError:
    """Prefix a validation error about a campaign with the file and the line it points at: the
    first line holding the error's first quoted name (an unknown lock, a bad param)."""
    quoted = re.search(r"'([^']+)'", str(error))
    line = None
    if quoted:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        word = re.compile(rf"(?<![\w.-]){re.escape(quoted.group(1))}(?![\w.-])")
        line = next((n for n, text in enumerate(lines, 1) if word.search(text)), None)
    where = f"{path}:{line}" if line else str(path)
    return LocklabError(f"{where}: {error}", error.exit_code)


class _CampaignReader:
    def __init__(self, path: Path, text: str, given_machine: MachineProfile | None = None) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.given_machine = given_machine  # --sim's, found already; else the file's sim =

    def fail(self, message: str, key: str | None = None) -> LocklabError:
        line = self._line_of(key) if key else None
        where = f"{self.path}:{line}" if line else f"{self.path}"
        return LocklabError(f"{where}: {message}")

    def _line_of(self, key: str) -> int | None:
        """The first line that assigns ``key`` or opens table ``key``: tomllib does not report
        positions for well-formed files, and an error without a line is hard to act on."""
        pattern = re.compile(rf"^\s*(\[\[?\s*{re.escape(key)}\s*\]\]?|\"?{re.escape(key)}\"?\s*=)")
        return next((n for n, line in enumerate(self.lines, 1) if pattern.match(line)), None)

    def spec(self, data: dict, full: bool = False) -> ExperimentSpec:
        unknown = sorted(set(data) - TOP_KEYS)
        if unknown:
            raise self.fail(
                f"unknown key '{unknown[0]}' (known: {', '.join(sorted(TOP_KEYS))})", unknown[0]
            )
        overrides = data.get("full", {})
        if not isinstance(overrides, dict):
            raise self.fail("'full' must be a table, written [full]", "full")
        unknown = sorted(set(overrides) - FULL_KEYS)
        if unknown:
            raise self.fail(
                f"full: unknown key '{unknown[0]}' (known: {', '.join(sorted(FULL_KEYS))})",
                unknown[0],
            )
        name = self.typed(data, "name", str, self.path.stem)
        if full:
            if not overrides:
                raise self.fail("--full: this campaign has no [full] table")
            sweep = {**data.get("sweep", {}), **overrides.get("sweep", {})}
            data = {**data, **overrides, "sweep": sweep}
            name += "-full"
        variants = self.variants(data.get("variant"))
        sweep = self.sweep(data.get("sweep", {}))
        sim = self.typed(data, "sim", str, "")
        # A simulated campaign's times are virtual seconds: its own defaults (docs/simulator.md).
        duration, warmup, pin = run_times(bool(sim), ExperimentSpec)
        spec = ExperimentSpec(
            name=name,
            variants=variants,
            sweep=sweep,
            repeat=self.repeat(data),
            repeat_auto=data.get("repeat") == "auto",
            min_repeat=self.typed(data, "min_repeat", int, _default("min_repeat")),
            precision=self.number(data, "precision", _default("precision")),
            duration_s=self.number(data, "duration", duration),
            warmup_s=self.number(data, "warmup", warmup),
            baseline=self.typed(data, "baseline", str, _default("baseline")),
            pin=self.typed(data, "pin", str, pin),
            seed=self.typed(data, "seed", int, _default("seed")),
            interval_s=self.number(data, "interval", _default("interval_s")),
            long_hold_ms=self.typed(data, "long_hold_ms", int, _default("long_hold_ms")),
            stutter_s=self.number(data, "stutter", _default("stutter_s")),
            numa_nodes=self.typed(data, "numa_nodes", int, _default("numa_nodes")),
            torture_delays=self.typed(data, "torture_delays", str, _default("torture_delays")),
            numa_remote_ns=self.typed(data, "numa_remote_ns", int, _default("numa_remote_ns")),
            churn=self.typed(data, "churn", int, _default("churn")),
            workloads=self.workloads(data.get("workload", [])),
            kernel_tree=self.tree(data),
            checks=self.typed(data, "checks", bool, True),
        )
        if "program" in data:  # a real program under each lock, as `locklab exec` runs it
            program = data["program"]
            if (
                not isinstance(program, list)
                or not program
                or not all(isinstance(arg, str) for arg in program)
            ):
                raise self.fail("'program' must be a list of strings, like [\"kccachetest\"]")
            spec.source, spec.program = "program", list(program)
            spec.program_metric = self.typed(data, "metric_regex", str, "time")
            spec.program_work = self.typed(data, "work", str, _default("program_work"))
            spec.program_timeout_s = self.number(
                data, "program_timeout", _default("program_timeout_s")
            )
        if sim:
            self.simulated(spec, sim, data)
        return spec

    def simulated(self, spec: ExperimentSpec, sim: str, data: dict) -> None:
        """sim = "x5-4" (or a profile file, relative to the campaign's): the simulator's runs;
        plugins and kernel: locks are compiled for it when the campaign runs (docs/simulator.md)."""
        if spec.program:
            raise self.fail("sim: a program runs on this machine, not in the simulator", "sim")
        machine = self.given_machine
        if machine is None:
            relative = sim.endswith(".toml") or "/" in sim
            try:
                machine = find_profile(str(self.path.parent / sim) if relative else sim, "sim")
            except LocklabError as error:
                raise self.fail(str(error), "sim") from None
        sched = self.typed(data, "sched", str, "") or None
        try:
            machine = with_sched(machine, sched, "sched")
        except LocklabError as error:
            raise self.fail(str(error), "sched") from None
        spec.sim, spec.sim_machine = sim, machine.flat_text()

    def variants(self, raw: object) -> list[Variant]:
        if raw is None:
            raise self.fail("no [[variant]] tables: a campaign needs at least one lock")
        if not isinstance(raw, list):
            raise self.fail("'variant' must be an array of tables, written [[variant]]", "variant")
        variants = []
        for index, table in enumerate(raw, 1):
            if not isinstance(table, dict):
                raise self.fail(f"variant {index} is not a table", "variant")
            unknown = sorted(set(table) - VARIANT_KEYS)
            if unknown:
                raise self.fail(
                    f"variant {index}: unknown key '{unknown[0]}' "
                    f"(known: {', '.join(sorted(VARIANT_KEYS))})",
                    unknown[0],
                )
            lock = self.typed(table, "lock", str, None)
            if lock is None:
                raise self.fail(f"variant {index} has no 'lock'", "variant")
            params = table.get("params", {})
            if not isinstance(params, dict) or not all(
                isinstance(v, int | str) and not isinstance(v, bool) for v in params.values()
            ):
                raise self.fail(
                    f"variant {index}: params must be a table of integers or names, "
                    'like params = {{ backoff_max = 64, wait = "spin-then-park" }}',
                    "params",
                )
            plugin = self.typed(table, "plugin", str, None)
            if plugin is not None and not Path(plugin).is_absolute():
                plugin = str((self.path.parent / plugin).resolve())
            label = self.typed(table, "label", str, lock)
            patches = table.get("patches", [])
            if not isinstance(patches, list) or not all(isinstance(p, str) for p in patches):
                raise self.fail(f"variant {index}: patches must be a list of file names", "patches")
            if patches and not lock.startswith("kernel:"):
                raise self.fail(
                    f"variant {index}: patches are for locks compiled from a kernel tree "
                    f"(kernel:rtmutex, ...), not '{lock}'", "patches",
                )  # fmt: skip
            files = tuple(str((self.path.parent / p).resolve()) for p in patches)
            revision = self.typed(table, "rev", str, "")
            revision_range = self.typed(table, "revs", str, "")
            if (revision or revision_range) and not lock.startswith("kernel:"):
                key = "rev" if revision else "revs"
                raise self.fail(
                    f"variant {index}: {key} is for locks compiled from a kernel tree "
                    f"(kernel:rtmutex, ...), not '{lock}'", key,
                )  # fmt: skip
            if revision and revision_range:
                raise self.fail(f"variant {index}: give rev or revs, not both", "revs")
            if revision_range and (".." not in revision_range or "..." in revision_range):
                raise self.fail(f"variant {index}: revs = {revision_range!r}: give "
                                '"A..B" (two revisions)', "revs")  # fmt: skip
            if ".." in revision:
                raise self.fail(f"variant {index}: rev = {revision!r} is one revision; a "
                                'range is revs = "A..B"', "rev")  # fmt: skip
            # A range stays A..B until the campaign compiles it into a variant per commit.
            revision = revision or revision_range
            variants.append(Variant(label, lock, tuple(params.items()), plugin, files, revision))
        return variants

    def tree(self, data: dict) -> str:
        """`source`, the kernel tree of the kernel: locks, as a path (relative: to this file)."""
        source = self.typed(data, "source", str, "")
        return str((self.path.parent / source).resolve()) if source else ""

    def workloads(self, raw: object) -> list[Workload]:
        if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
            raise self.fail(
                "'workload' must be an array of tables, written [[workload]]", "workload"
            )
        workloads = []
        for index, table in enumerate(raw, 1):
            name = self.typed(table, "name", str, f"workload-{index}")
            axes = []
            for axis, value in table.items():
                if axis == "name":
                    continue
                if axis not in AXES:
                    raise self.fail(
                        f"workload {index}: unknown axis '{axis}' (axes: {', '.join(AXES)})", axis
                    )
                if isinstance(value, bool) or not isinstance(value, int):
                    raise self.fail(f"workload {index}: {axis} must be an integer", axis)
                axes.append((axis, value))
            workloads.append(Workload(name, tuple(axes)))
        return workloads

    def sweep(self, raw: object) -> dict[str, list[int]]:
        if not isinstance(raw, dict):
            raise self.fail("'sweep' must be a table, written [sweep]", "sweep")
        sweep: dict[str, list[int]] = {}
        for axis, values in raw.items():
            if axis not in AXES:
                raise self.fail(f"sweep: unknown axis '{axis}' (axes: {', '.join(AXES)})", axis)
            if isinstance(values, int) and not isinstance(values, bool):
                values = [values]
            if not isinstance(values, list) or not values:
                raise self.fail(f"sweep.{axis} must be a non-empty array of integers", axis)
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                raise self.fail(f"sweep.{axis} must hold integers only (got {values})", axis)
            sweep[axis] = list(values)
        return sweep

    def typed(self, data: dict, key: str, kind: type, default: Any) -> Any:
        value = data.get(key, default)
        if value is default:
            return value
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            raise self.fail(f"'{key}' must be {_kind_name(kind)} (got {value!r})", key)
        return value

    def repeat(self, data: dict) -> int:
        """repeat = 5, or repeat = "auto" with max_repeat (default 10) as the most runs."""
        if data.get("repeat") == "auto":
            return self.typed(data, "max_repeat", int, default(AutoRepeat, "max_repeat"))
        return self.typed(data, "repeat", int, _default("repeat"))

    def number(self, data: dict, key: str, default: float) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"'{key}' must be a number of seconds (got {value!r})", key)
        return float(value)


def _kind_name(kind: type) -> str:
    return {str: "a string", int: "an integer"}.get(kind, kind.__name__)


def _default(name: str) -> Any:
    return default(ExperimentSpec, name)
