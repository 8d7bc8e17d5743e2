"""Kernel locks compiled from a kernel tree into the engine: `kernel:rtmutex`, `kernel:mutex`,
`kernel:rwsem`, `kernel:qspinlock`.

The tree's own files (kernel/locking/ and lib/rbtree.c) are copied, the user's patches applied
to the copy (the same patch files and labels as `locklab kernel --patch`), and the Makefile's
`kshim-plugin` rule compiles them unmodified against locklab's shim (native/kshim) into one
plugin per (lock, tree, patches, build), with a writer loop of its own. Each is built once:
its key hashes the tree, the patches, the shim, the build and the engine's layout.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.build import (
    ROOT,
    SOURCE_TARBALL,
    _progress,
    source_identity,
    unpack_default_source,
)
from locklab.kernel.build_inputs import (
    apply_patch,
    check_patches,
    parse_patch_options,
    patch_failure,
    patched_files,
)
from locklab.kernel.revisions import (
    Revision,
    commit_of,
    git_tree,
    parse_rev_options,
    read_revision,
)
from locklab.kernel.series import display_name
from locklab.run.compiler_output import first_errors
from locklab.run.simulator import engine_invocation

PREFIX = "kernel:"
# What each lock is compiled from (the Makefile's KSHIM_FILES_*; qspinlock.c and rbtree.c
# are in every one: the raw spinlock and the waiter trees).
LOCK_FILES = {
    "rtmutex": "kernel/locking/rtmutex_api.c (with rtmutex.c): both paths, PI, spin on owner",
    "mutex": "kernel/locking/mutex.c, osq_lock.c: optimistic spinning, hand-off",
    "rwsem": "kernel/locking/rwsem.c, osq_lock.c: reader-writer semaphore, writer spinning",
    "qspinlock": "kernel/locking/qspinlock.c (no paravirt): the queued spinlock",
}
LOCKS = tuple(LOCK_FILES)
# locktorture's torture_type that runs the same file in a booted kernel (spin_lock is the
# queued spinlock on a kernel without PREEMPT_RT).
TORTURE_TYPE = {
    "rtmutex": "rtmutex_lock", "mutex": "mutex_lock", "rwsem": "rwsem_lock",
    "qspinlock": "spin_lock",
}  # fmt: skip
BUILDS = ("opt", "tsan", "asan")
SIM_BUILD = "sim"  # the simulator's instrumented build (docs/simulator.md), chosen by --sim
CACHE = ROOT / "build" / "kshim"
SHIM = ROOT / "native" / "kshim"
# Bumped when the way a plugin is made changes, so older ones are not reused.
RECIPE = "locklab-kshim-2"
# What is copied from the tree: the locking files and their includes, and the rbtree code.
TREE_PARTS = ("kernel/locking", "lib/rbtree.c", "include")

# The compiler runs with LC_ALL=C, so it quotes with ASCII.
_UNDECLARED = re.compile(r"implicit declaration of function '(\w+)'")
_UNDEFINED = re.compile(r"undefined reference to `(\w+)'")
_UNRESOLVED = re.compile(r"undefined symbol: (\w+)")
_NO_HEADER = re.compile(r"fatal error: ([\w/.-]+\.h): No such file")


@dataclass(frozen=True)
class SourceLock:
    """One lock of a tree, with a patch set, in one build: where its plugin is."""

    lock: str  # kernel:rtmutex
    label: str  # the patch set's label, as `locklab kernel --patch` names it
    plugin: Path
    key: str
    cached: bool
    patches: tuple[str, ...] = ()  # the patch files, resolved
    revision: str = ""  # "COMMIT SUBJECT" when the tree is a git revision (--rev)


def is_source_lock(name: str) -> bool:
    return name.startswith(PREFIX)


def check_name(name: str) -> str:
    """The family of kernel:NAME, or one error line naming the known ones."""
    family = name.removeprefix(PREFIX)
    if family not in LOCKS:
        known = ", ".join(PREFIX + lock for lock in LOCKS)
        raise LocklabError(f"unknown kernel lock '{name}' (known: {known})")
    return family


def engine_layout(engine: Path) -> str:
    """The layout hash of the engine's structures a plugin's own loop is compiled against."""
    proc = subprocess.run([str(engine), "--engine-layout"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    if proc.returncode != 0 or not proc.stdout.strip():
        raise LocklabError(f"{engine} does not say its layout: rebuild it ('make build-all')")
    return proc.stdout.strip()


def _shim_digest() -> str:
    digest = hashlib.sha256()
    for path in [*sorted(SHIM.rglob("*")), ROOT / "Makefile"]:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def build_key(source_key: str, patches: list[Path], family: str, build: str, layout: str) -> str:
    recipe = {
        "recipe": RECIPE,
        "source": source_key,
        "patches": [[p.name, hashlib.sha256(p.read_bytes()).hexdigest()] for p in patches],
        "lock": family,
        "build": build,
        "shim": _shim_digest(),
        "engine_layout": layout,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def _link_or_copy(origin: str, target: str) -> None:
    """A hard link where the tree is on the same file system (the include/ tree is large and
    is only read), else a copy."""
    try:
        os.link(origin, target)
    except OSError:
        shutil.copy2(origin, target)


def _copy_tree(source: Path, work: Path, patches: list[Path]) -> None:
    """The parts of the tree the build compiles, linked, and every file a patch touches as a
    private copy (so patching never writes the tree), patched."""
    partial = work.with_name(work.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for part in TREE_PARTS:
        origin = source / part
        target = partial / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(origin), str(target))
    for name in {name for patch in patches for name in patched_files(patch)}:
        origin, target = source / name, partial / name
        target.unlink(missing_ok=True)
        if origin.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target)
    for patch in patches:
        proc = apply_patch(partial, patch)
        if proc.returncode != 0:
            raise LocklabError(patch_failure(patch, proc.stdout + proc.stderr))
    shutil.rmtree(work, ignore_errors=True)
    partial.rename(work)


def compile_failure(output: str, lock: str, label: str) -> str:
    """One line for a build that failed: the kernel function or header the shim lacks, else
    the compiler's first error."""
    for pattern, what in ((_UNDECLARED, "kernel function"), (_UNDEFINED, "kernel function"),
                          (_UNRESOLVED, "kernel function"),
                          (_NO_HEADER, "header")):  # fmt: skip
        found = pattern.search(output)
        if found:
            return (f"{lock} ({label}): the {what} {found.group(1)} is not in locklab's "
                    "kernel shim (native/kshim): the patch uses what the shim lacks")  # fmt: skip
    lines = first_errors(output) or output.strip().splitlines()[-1:] or ["no output"]
    return f"{lock} ({label}): compiling from the tree failed: {lines[0][:240]}"


def build_source_lock(
    name: str,
    label: str,
    patches: list[Path],
    build: str,
    engine: Path,
    source_dir: Path | None = None,
    sim_machine: str = "",
    revision: str = "",
) -> SourceLock:
    """The plugin of kernel:NAME with these patches in this build, built unless cached; the
    "sim" build is the simulator's (its runs' machine, `sim_machine`, loads it once). With
    `revision`, the tree is that revision of the git tree `source_dir` (revisions.py): builds
    are shared between revisions whose files are the same, each revision's plugin a link of
    its own beside the shared one, with its own provenance."""
    family = check_name(name)
    if build not in (*BUILDS, SIM_BUILD):
        raise LocklabError(f"--build {build}: use one of {', '.join(BUILDS)}")
    read: Revision | None = None
    if revision:
        try:
            read = read_revision(source_dir, revision, TREE_PARTS)
        except LocklabError as error:
            raise LocklabError(f"{label}: {error}") from None
        source, origin = read.tree, read.describe()
    elif source_dir is None:
        source = unpack_default_source()
        origin = f"{SOURCE_TARBALL.name}"
    else:
        source = source_dir.resolve()
        if not (source / "kernel" / "locking" / "rtmutex_api.c").is_file():
            raise LocklabError(f"--source {source_dir}: not a kernel tree with kernel/locking/")
        origin = str(source)
    try:
        check_patches(source, patches)
    except LocklabError as error:
        raise LocklabError(f"{label}: {error}") from None
    layout = engine_layout(engine)
    key = build_key(source_identity(source), patches, family, build, layout)
    target = CACHE / key[:24]
    plugin = target / f"kernel-{family}.so"
    applied_files = tuple(str(p.resolve()) for p in patches)
    if plugin.is_file():
        return _of_revision(SourceLock(name, label, plugin, key, cached=True,
                                       patches=applied_files), read, build, patches)  # fmt: skip
    start = time.monotonic()
    _progress(f"building {name} ({label}, {build}) from {origin}")
    work = target / "tree"
    _copy_tree(source, work, patches)
    applied = " + ".join(display_name(p) for p in patches) or "no patches"
    note = f"{origin}, {applied}".replace("'", "").replace('"', "")
    partial = target / f"kernel-{family}.so.partial"
    jobs = f"-j{os.cpu_count() or 1}"
    command = ["make", "--no-print-directory", "-s", "-C", str(ROOT), jobs, "kshim-plugin",
               f"KSHIM_TREE={work}", f"KSHIM_LOCK={family}", f"KSHIM_BUILD={build}",
               f"KSHIM_OUT={partial}", f"KSHIM_SOURCE={note}"]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    (target / "build.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise LocklabError(compile_failure(proc.stdout + proc.stderr, name, label))
    # Loaded once by the engine it is for: a kernel function the tree declares but the shim
    # does not define is an unresolved symbol there (the link of a shared object allows it).
    machine = sim_machine if build == SIM_BUILD else ""
    loader, env = engine_invocation(engine, machine, dict(os.environ))
    loaded = subprocess.run([str(loader), "--plugin", str(partial), "--list"],
                            capture_output=True, text=True, check=False, env=env)  # fmt: skip
    if loaded.returncode != 0:
        raise LocklabError(compile_failure(loaded.stderr, name, label))
    partial.rename(plugin)
    (target / "provenance.json").write_text(json.dumps({
        "lock": name, "label": label, "build": build, "source": origin,
        "patches": [display_name(p) for p in patches], "key": key,
        "seconds": round(time.monotonic() - start, 1),
    }, indent=2) + "\n")  # fmt: skip
    _progress(f"built {name} ({label}, {build}) in {time.monotonic() - start:.1f} s")
    return _of_revision(SourceLock(name, label, plugin, key, cached=False,
                                   patches=applied_files), read, build, patches)  # fmt: skip


def _of_revision(
    built: SourceLock, read: Revision | None, build: str, patches: list[Path]
) -> SourceLock:
    """The plugin as the revision's own: a hard link in a folder of the revision's commit,
    beside the shared build, with a provenance that names that commit and its subject."""
    if read is None:
        return built
    folder = built.plugin.parent / f"rev-{read.commit[:16]}"
    own = folder / built.plugin.name
    if not own.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = own.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        try:
            os.link(built.plugin, partial)
        except OSError:
            shutil.copy2(built.plugin, partial)
        partial.rename(own)
    (folder / "provenance.json").write_text(json.dumps({
        "lock": built.lock, "label": built.label, "build": build, "source": read.describe(),
        "commit": read.commit, "subject": read.subject,
        "patches": [display_name(p) for p in patches], "key": built.key,
    }, indent=2) + "\n")  # fmt: skip
    return replace(built, plugin=own, revision=f"{read.commit} {read.subject}")


def build_source_locks(
    names: list[str],
    patch_texts: list[str],
    build: str,
    engine: Path,
    source_dir: Path | None = None,
    sim_machine: str = "",
    rev_texts: tuple[str, ...] = (),
) -> dict[str, list[SourceLock]]:
    """Each kernel: lock named, once per label: --rev LABEL=REV (that revision of the git tree
    --source), --patch LABEL=FILE[,FILE...] (these patches), both for one label (the revision
    with the patches on top), none (the stock tree, labelled "stock"); in `build`. Every name,
    revision and patch is checked before anything is built."""
    for name in names:
        check_name(name)
    revisions = parse_rev_options(list(rev_texts))
    if revisions:
        top = git_tree(source_dir)
        for label, revision in revisions.items():
            commit_of(top, revision, f"--rev {label}={revision}")
    patches = parse_patch_options(patch_texts or ([] if revisions else ["stock"]))
    labels = [*revisions, *(label for label in patches if label not in revisions)]
    return {
        name: [build_source_lock(name, label, patches.get(label, []), build, engine,
                                 source_dir, sim_machine, revisions.get(label, ""))
               for label in labels]
        for name in names
    }  # fmt: skip
