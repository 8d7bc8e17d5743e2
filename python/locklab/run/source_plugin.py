"""A plugin given as C source (`--plugin mylock.c`): compiled, unmodified, with a writer loop of
its own (the Makefile's source-plugin rule, native/engine/source_plugin/loop.c), so the lock
inlines into the measured loop as the engine's own locks do; a .so keeps the engine's
indirect-call loop. Each (file's bytes, build, engine layout, loop) is compiled once, under
build/plugins/KEY/, with a provenance.json saying what it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.build import ROOT
from locklab.kernel.from_source import engine_layout

CACHE = ROOT / "build" / "plugins"
LOOP = ROOT / "native" / "engine" / "source_plugin" / "loop.c"
# Bumped when the way a plugin is made changes, so older ones are not reused.
RECIPE = "locklab-source-plugin-1"
_ERROR = re.compile(r"^(\S+:\d+:\d+: error: .*)$", re.M)


def is_source(plugin: str) -> bool:
    return plugin.endswith(".c")


def compiled(source: Path, build: str, engine: Path) -> Path:
    """The .so of `source` with its own writer loop, for `engine` (whose build and layout it
    must match); compiled unless cached. A file that does not compile is one line: its first
    error."""
    try:
        text = source.read_bytes()
    except OSError as error:
        raise LocklabError(f"--plugin {source}: cannot read: {error.strerror}") from None
    digest = hashlib.sha256()
    for part in (RECIPE.encode(), text, build.encode(), engine_layout(engine).encode(),
                 LOOP.read_bytes()):  # fmt: skip
        digest.update(part + b"\0")
    target = CACHE / digest.hexdigest()[:24]
    plugin = target / f"{source.stem}.so"
    if plugin.is_file():
        return plugin
    target.mkdir(parents=True, exist_ok=True)
    partial = target / f"{source.stem}.so.partial"
    command = ["make", "--no-print-directory", "-s", "-C", str(ROOT), "source-plugin",
               f"SOURCE_PLUGIN={source.resolve()}", f"SOURCE_PLUGIN_BUILD={build}",
               f"SOURCE_PLUGIN_OUT={partial}"]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    (target / "build.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        found = _ERROR.search(proc.stderr)
        last = (proc.stderr.strip().splitlines() or ["make failed"])[-1]
        detail = (found.group(1) if found else last)[:240]
        raise LocklabError(f"--plugin {source}: does not compile: {detail}")
    partial.rename(plugin)
    record = {"source_file": str(source.resolve()), "build": build, "loop": "own"}
    (target / "provenance.json").write_text(json.dumps(record, indent=2) + "\n")
    return plugin


def built_plugins(plugins: list[str], build: str, engine: Path) -> list[str]:
    """--plugin values, each C file replaced by its compiled .so."""
    return [str(compiled(Path(p), build, engine)) if is_source(p) else p for p in plugins]
