"""Places campaigns (`kind = "places"`, like campaigns/seed-000-places.toml): one set of patch
files measured in up to three places, each a campaign of its own kind, read by its own reader:

- [engine]   the lock compiled from the kernel tree with each patch set, in the engine;
- [sim]      the same code compiled for the simulator, on a machine profile (machine = "x5-4"):
             the writer counts a small machine cannot reach (docs/simulator.md);
- [kernel]   a kernel built from the same tree and patches, booted, running locktorture;
- [program]  a real program whose pthread mutexes are the lock compiled from the tree.

The file names the patch sets once ([[patch]]: a label and its files), the lock, the baseline
label, the repeats and the writer counts; each place's table holds only what is its own. This
reader turns the file into the tables the engine and kernel campaign readers take, so every key
of a place means what it means in a campaign of that kind.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel import campaign as kernel_campaign
from locklab.kernel.campaign import KernelCampaign
from locklab.kernel.from_source import TORTURE_TYPE, check_name, is_source_lock
from locklab.model.campaign import campaign_from_data
from locklab.model.spec import ExperimentSpec

PLACES = ("engine", "sim", "kernel", "program")
TOP_KEYS = {"name", "kind", "lock", "baseline", "repeat", "source", "sweep", "patch", "full",
            *PLACES}  # fmt: skip
# What the top level says for every place; a place's table may not say it again (but repeat:
# a booted kernel's run costs more than an engine's).
SHARED = ("name", "kind", "lock", "baseline", "sweep", "patch", "variant", "full", "source")
# A [program] table's own names for the program campaign keys.
PROGRAM_KEYS = {
    "command": "program", "timeout": "program_timeout", "metric_regex": "metric_regex",
    "work": "work", "duration": "duration", "repeat": "repeat",
}  # fmt: skip


@dataclass
class PlacesCampaign:
    name: str
    path: Path
    lock: str
    baseline: str
    labels: list[str]
    engine: ExperimentSpec | None
    sim: ExperimentSpec | None
    program: ExperimentSpec | None
    kernel: KernelCampaign | None

    @property
    def places(self) -> list[str]:
        return [place for place in PLACES if getattr(self, place) is not None]


def load(path: Path, full: bool = False) -> PlacesCampaign:
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise LocklabError(f"{path}: {error}") from None
    return _Reader(path, text).campaign(data, full)


def _merged(base: dict, overrides: dict) -> dict:
    """`base` with [full]'s tables merged in, key by key (a list replaces a list)."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = path, text

    def fail(self, message: str) -> LocklabError:
        return LocklabError(f"{self.path}: {message}")

    def campaign(self, data: dict, full: bool) -> PlacesCampaign:
        unknown = sorted(set(data) - TOP_KEYS)
        if unknown:
            raise self.fail(f"unknown key '{unknown[0]}' (known: {', '.join(sorted(TOP_KEYS))})")
        name = data.get("name", self.path.stem)
        if full:
            overrides = data.get("full")
            if not isinstance(overrides, dict):
                raise self.fail("--full: this campaign has no [full] table")
            data = _merged(data, overrides)
            name = f"{name}-full"
        lock = data.get("lock")
        if not isinstance(lock, str) or not is_source_lock(lock):
            raise self.fail("'lock' must name a lock compiled from the tree, like "
                            '"kernel:rtmutex"')  # fmt: skip
        check_name(lock)
        labels, patches = self.patch_sets(data.get("patch"))
        baseline = data.get("baseline", labels[0])
        if baseline not in labels:
            raise self.fail(f"baseline '{baseline}' is not a [[patch]] label")
        sweep = data.get("sweep", {})
        if not isinstance(sweep, dict) or set(sweep) != {"nwriters"}:
            raise self.fail("[sweep] takes nwriters only (threads in the engine and the "
                            "program, nwriters_stress in the kernel)")  # fmt: skip
        if not any(place in data for place in PLACES):
            raise self.fail("no place: give at least one of [engine], [sim], [kernel], [program]")
        common = {"name": name, "baseline": baseline, "repeat": data.get("repeat", 3)}
        # The engine's and the program's variants: the lock with each patch set.
        variants = [{"label": label, "lock": lock, "patches": files}
                    for label, files in patches.items()]  # fmt: skip
        if "source" in data:  # the tree, for every place
            common["source"] = data["source"]
        return PlacesCampaign(
            name=name, path=self.path, lock=lock, baseline=baseline, labels=labels,
            engine=self.engine(data, common, variants, sweep),
            sim=self.sim(data, common, variants, sweep),
            program=self.program(data, common, variants, sweep),
            kernel=self.kernel(data, common, lock, patches, sweep),
        )  # fmt: skip

    def patch_sets(self, raw: object) -> tuple[list[str], dict[str, list[str]]]:
        if not isinstance(raw, list) or not raw:
            raise self.fail("no [[patch]]: name each patch set once, with a label (a label "
                            "without patches is the stock tree)")  # fmt: skip
        patches: dict[str, list[str]] = {}
        for index, table in enumerate(raw, 1):
            if not isinstance(table, dict) or set(table) - {"label", "patches"}:
                raise self.fail(f"patch {index}: a [[patch]] takes a label and patches")
            label, files = table.get("label"), table.get("patches", [])
            if not isinstance(label, str) or not label or label in patches:
                raise self.fail(f"patch {index}: each [[patch]] needs a label of its own")
            if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                raise self.fail(f"patch {index}: patches must be a list of file names")
            patches[label] = files
        return list(patches), patches

    def place(self, data: dict, place: str) -> dict | None:
        table = data.get(place)
        if table is None:
            return None
        if not isinstance(table, dict):
            raise self.fail(f"'{place}' must be a table, written [{place}]")
        shared = sorted(set(table) & set(SHARED))
        if shared:
            raise self.fail(f"{place}: '{shared[0]}' is said once, at the top of the file")
        return table

    def engine(self, data: dict, common: dict, variants: list[dict],
               sweep: dict) -> ExperimentSpec | None:  # fmt: skip
        table = self.place(data, "engine")
        if table is None:
            return None
        if "program" in table:
            raise self.fail("engine: 'program' belongs in [program], as command")
        tables = {**common, **table, "name": f"{common['name']}-engine", "sweep": sweep,
                  "variant": variants}  # fmt: skip
        return campaign_from_data(self.path, self.text, tables)

    def sim(self, data: dict, common: dict, variants: list[dict],
            sweep: dict) -> ExperimentSpec | None:  # fmt: skip
        """[sim]: the engine's campaign keys in virtual seconds, on `machine`."""
        table = self.place(data, "sim")
        if table is None:
            return None
        machine = table.get("machine")
        if not isinstance(machine, str) or not machine:
            raise self.fail('sim: give its machine, like machine = "x5-4" (locklab machines)')
        if "sim" in table or "program" in table:
            raise self.fail("sim: the machine is 'machine'; a program runs in [program]")
        own = {key: value for key, value in table.items() if key != "machine"}
        tables = {**common, **own, "name": f"{common['name']}-sim", "sweep": sweep,
                  "variant": variants, "sim": machine}  # fmt: skip
        return campaign_from_data(self.path, self.text, tables)

    def program(self, data: dict, common: dict, variants: list[dict],
                sweep: dict) -> ExperimentSpec | None:  # fmt: skip
        table = self.place(data, "program")
        if table is None:
            return None
        unknown = sorted(set(table) - set(PROGRAM_KEYS))
        if unknown:
            known = ", ".join(sorted(PROGRAM_KEYS))
            raise self.fail(f"program: unknown key '{unknown[0]}' (known: {known})")
        if "command" not in table:
            raise self.fail('program: give its command, like command = ["kccachetest", '
                            '"wicked", "-th", "{threads}", "10000"]')  # fmt: skip
        own = {PROGRAM_KEYS[key]: value for key, value in table.items()}
        tables = {**common, "warmup": 0, **own, "name": f"{common['name']}-program",
                  "sweep": sweep, "variant": variants}  # fmt: skip
        return campaign_from_data(self.path, self.text, tables)

    def kernel(self, data: dict, common: dict, lock: str, patches: dict[str, list[str]],
               sweep: dict) -> KernelCampaign | None:  # fmt: skip
        table = self.place(data, "kernel")
        if table is None:
            return None
        torture_type = TORTURE_TYPE[check_name(lock)]
        if table.get("torture_type", torture_type) != torture_type:
            raise self.fail(f"kernel: torture_type must be {torture_type}, which runs the code "
                            f"{lock} is compiled from")  # fmt: skip
        kernels = [{"label": label, "patches": files} for label, files in patches.items()]
        tables = {**common, "torture_type": torture_type, **table, "kind": "kernel",
                  "name": f"{common['name']}-kernel", "kernel": kernels,
                  "sweep": {"nwriters_stress": sweep["nwriters"]}}  # fmt: skip
        return kernel_campaign.from_data(self.path, tables)
