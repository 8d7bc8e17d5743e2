"""A failed simulated run, replayed alone. The simulator is deterministic: the same binary,
plugin, machine profile, command line and seed give the same interleaving, so the same
violation and the same counts. Each engine run's store entry keeps what made it (its engine
seed, the sha256 of the binary that ran and of the plugin it loaded), and a failed simulated
run prints the `locklab run` command that replays it: its lock, point, window and placement,
its engine seed (--engine-seed) and its build (--same-build), which the replay compares with
its own and names when they differ."""

from __future__ import annotations

import hashlib
import re
import shlex
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

from locklab.errors import LocklabError
from locklab.model.spec import Configuration, ExperimentSpec
from locklab.printable import printable

# How much of each sha256 the replay command carries: enough to tell two builds apart.
SHOWN_HASH_DIGITS = 16
_SAME_BUILD = re.compile(r"^[0-9a-f]{8,64}(,[0-9a-f]{8,64})?$")


def build_identity(command: list[str]) -> dict[str, object]:
    """What an engine run's command ran: its engine seed, and the sha256 of its binary and of
    the plugin it loaded (absent when it loaded none; None where the file is gone since: the
    run is kept all the same)."""
    identity: dict[str, object] = {"engine_sha256": _sha256(Path(command[0]))}
    if "--seed" in command:
        identity["seed"] = int(command[command.index("--seed") + 1])
    if "--plugin" in command:
        identity["plugin_sha256"] = _sha256(Path(command[command.index("--plugin") + 1]))
    return identity


def replay_command(spec: ExperimentSpec, config: Configuration, repeat: int,
                   identity: dict[str, object], store: Path) -> str:  # fmt: skip
    """The `locklab run` command that runs this simulated run alone, as it ran, into `store`."""
    sim = Path(spec.sim)
    args = ["locklab", "run", "--sim", str(sim.resolve()) if sim.is_file() else spec.sim]
    plugin = config.variant.plugin
    if plugin:  # wherever the replay runs from
        config = replace(
            config, variant=replace(config.variant, plugin=str(Path(plugin).resolve()))
        )
    args += spec.lock_options(config)
    # repr(): the very float the spec holds, which the engine is given as engine_args gives it.
    args += ["--duration", repr(spec.duration_s), "--warmup", repr(spec.warmup_s),
             "--pin", spec.pin, "--interval", repr(spec.interval_s)]  # fmt: skip
    args += spec.workload_options()
    args += ["--repeat", "1", "--engine-seed", str(spec.run_seed(repeat))]
    build = [identity[key] for key in ("engine_sha256", "plugin_sha256") if key in identity]
    if all(isinstance(digest, str) for digest in build):
        args += ["--same-build", ",".join(str(digest)[:SHOWN_HASH_DIGITS] for digest in build)]
    return shlex.join([*args, "--store", str(store)])


def replayable(spec: ExperimentSpec) -> bool:
    """Whether the spec's runs replay exactly from a `locklab run` command: simulated engine
    runs, without a campaign's settings that `locklab run` has no option for."""
    return bool(spec.sim) and not (spec.program or spec.long_hold_ms or spec.stutter_s)


def say_if_another_build(same_build: str, binary: Path, spec: ExperimentSpec) -> None:
    """--same-build ENGINE[,PLUGIN] (sha256 prefixes): one line on stderr when this replay runs
    another simulator or plugin than the run it replays, whose figures it may then not repeat."""
    if not _SAME_BUILD.match(same_build):
        raise LocklabError(
            f"--same-build: give the engine's sha256 (and the plugin's) as a replay command "
            f"names them, HEX[,HEX] (got '{printable(same_build)}')"
        )
    expected = same_build.split(",")
    plugins = spec.plugins()
    if len(expected) == 2 and len(plugins) != 1:
        raise LocklabError(f"--same-build names one plugin; this run loads {len(plugins)}")
    now = [("engine", binary)] + ([("plugin", Path(plugins[0]))] if len(expected) == 2 else [])
    changed = [f"the {what} {path} is {(_sha256(path) or 'unreadable')[: len(want)]}, the "
               f"run's was {want}" for (what, path), want in zip(now, expected, strict=True)
               if not (_sha256(path) or "").startswith(want)]  # fmt: skip
    if changed:
        print(f"locklab: note: replayed with another build than the run's ({'; '.join(changed)}):"
              " it may not repeat its figures", file=sys.stderr)  # fmt: skip


def _sha256(path: Path) -> str | None:
    """A file's sha256; None where it cannot be read."""
    try:
        stat = path.stat()
        return _sha256_of(path, stat.st_size, stat.st_mtime_ns)
    except OSError:
        return None


@cache
def _sha256_of(path: Path, size: int, mtime_ns: int) -> str:
    """A file's sha256, read once per content (its size and time stand for it: a rebuild
    changes them)."""
    del size, mtime_ns  # the cache's key only
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
