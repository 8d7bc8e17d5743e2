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
import subprocess
import sys
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.build import ROOT
from locklab.kernel.from_source import engine_layout
from locklab.run.compiler_output import diagnostics, first_errors

CACHE = ROOT / "build" / "plugins"
LOOP = ROOT / "native" / "engine" / "source_plugin" / "loop.c"
# Bumped when the way a plugin is made changes, so older ones are not reused.
RECIPE = "locklab-source-plugin-2"


def is_source(plugin: str) -> bool:
    return plugin.endswith(".c")


def compiled(source: Path, build: str, engine: Path) -> Path:
    """The .so of `source` with its own writer loop, for `engine` (whose build and layout it
    must match); compiled unless cached. A file that does not compile is one line, the
    compiler's first error, with its further errors and the build log's path under it."""
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
        say_what_tsan_cannot_see(source, target)
        return plugin
    target.mkdir(parents=True, exist_ok=True)
    partial = target / f"{source.stem}.so.partial"
    command = ["make", "--no-print-directory", "-s", "-C", str(ROOT), "source-plugin",
               f"SOURCE_PLUGIN={source.resolve()}", f"SOURCE_PLUGIN_BUILD={build}",
               f"SOURCE_PLUGIN_OUT={partial}"]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    log = target / "build.log"
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        errors = first_errors(proc.stderr, source, str(source))
        last = (proc.stderr.strip().splitlines() or ["make failed"])[-1]
        raise LocklabError(
            f"--plugin {source}: does not compile: {(errors or [last])[0]}",
            details=(*errors[1:], f"the compiler's whole output: {log}"),
        )
    partial.rename(plugin)
    unmodelled = unmodelled_fences(proc.stderr)
    record = {"source_file": str(source.resolve()), "build": build, "loop": "own",
              "tsan_unmodelled_fences": unmodelled}  # fmt: skip
    (target / "provenance.json").write_text(json.dumps(record, indent=2) + "\n")
    say_what_tsan_cannot_see(source, target)
    return plugin


def unmodelled_fences(compiler_output: str) -> list[str]:
    """The C11 fences GCC warned that ThreadSanitizer does not model (-Wtsan), file:line each:
    the fence is compiled and runs, but orders nothing TSAN can see."""
    return sorted({f"{Path(d.file).name}:{d.line}" for d in diagnostics(compiler_output)
                   if d.kind == "warning" and d.text.endswith("[-Wtsan]")})  # fmt: skip


def say_what_tsan_cannot_see(source: Path, target: Path) -> None:
    """One line, as often as the plugin is used under ThreadSanitizer: its reports may include
    what a fence orders (as a lock flagged LOCK_TSAN_OPAQUE synchronises where TSAN cannot see)."""
    record = json.loads((target / "provenance.json").read_text())
    fences = record.get("tsan_unmodelled_fences") or []
    if fences:
        where = ", ".join(fences[:3]) + (", ..." if len(fences) > 3 else "")
        note = (f"locklab: note: --plugin {source}: ThreadSanitizer does not model C11 fences "
                f"({where}): its reports may include races that a fence orders")  # fmt: skip
        print(note, file=sys.stderr)


def built_plugins(plugins: list[str], build: str, engine: Path) -> list[str]:
    """--plugin values, each C file replaced by its compiled .so."""
    return [str(compiled(Path(p), build, engine)) if is_source(p) else p for p in plugins]
