"""Building kernels with locktorture built in, one image per label, from a source tree plus the
user's patches plus a config fragment, for `locklab kernel` to boot.

- Source: by default Debian's linux-source-6.1 tarball, unpacked once into
  build/kernel/src-6.1 (kept pristine); `source_dir` takes any tree, including a git checkout.
- Work tree: a hard-linked copy of the source (build/kernel/work-SOURCEKEY). Files a patch
  touches are first replaced by private copies, so the pristine tree is never written; before
  the next build they are restored from the source (a revision's: from its work tree's
  base). make then rebuilds only what changed, and ccache (cache in build/kernel/ccache)
  makes a rebuild of anything seen before cheap.
  The revisions of one git tree (--rev, bisect, history) share one work tree
  (build/kernel/work-repo-REPOKEY), linked from the first revision built there (its base):
  the files another revision has otherwise (`git diff`) are put in as a patch's are, and put
  back from the base after, each written only when its content changes, so a step between
  nearby commits is an incremental build, not a cold one.
- Patches: all of them are tried with `patch -p1 --dry-run` first; one that does not apply is
  one LocklabError line naming the file and the failing hunk, and nothing is built.
- Config: `make tinyconfig`, then the options of the kernel's own lock-torture scenarios
  (tools/testing/selftests/rcutorture/configs/lock/CFcommon and LOCK01..LOCK07 in 6.1), the
  few a QEMU guest with a serial console and an initramfs needs, then the user's fragment
  (which wins), then `make olddefconfig`. Every option asked for must be in the final .config
  with the value asked for, else the build stops naming the first one missing.
- Cache: each (source, patches, config, architecture) is built once; its image and provenance
  are kept in build/kernel/images/KEY/, KEY being a hash of all four.
- Architecture (arch.py): x86_64 or arm64 (`make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-`
  on an x86_64 host), each with its own work tree and config options.
"""

from __future__ import annotations

import fcntl
import filecmp
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from locklab.errors import LocklabError
from locklab.kernel.arch import X86_64, Arch, resolve
from locklab.kernel.build_inputs import (
    BASE_OPTIONS,
    apply_patch,
    check_config,
    check_patches,
    debug_options,
    parse_fragment,
    patch_failure,
    patched_files,
    read_config,
)
from locklab.kernel.revisions import INDEX, changed_paths, commit_of, git_tree, read_revision
from locklab.kernel.series import display_name

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "build" / "kernel"
SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
DEFAULT_SOURCE = BUILD / "src-6.1"
CCACHE_DIR = BUILD / "ccache"
IMAGES = BUILD / "images"
# Bumped whenever the way a kernel is configured or built changes, so old images are not reused.
RECIPE = "locklab-kernel-build-2"

_MAKE_STEP = re.compile(r"^\s+([A-Z][A-Z0-9_]*)\s+(\S+)")


@dataclass
class Built:
    label: str
    image: Path
    key: str
    source: str  # where the tree came from
    version: str  # `make kernelversion`
    patches: list[dict[str, str]] = field(default_factory=list)  # name, sha256
    config_sha256: str = ""
    debug: list[str] = field(default_factory=list)  # the kernel's checkers built in (--debug)
    arch: str = X86_64.name  # images built before --arch existed are x86_64's
    cached: bool = False
    seconds: float = 0.0

    def provenance(self) -> dict[str, object]:
        data = asdict(self)
        data["image"] = str(self.image)
        return data


# What `locklab kernel --hosts` ships beside the images it built: each label's provenance,
# its image named relative to this file (read by `locklab kernel --images` on the host).
MANIFEST = "kernels.json"


def manifest(built: dict[str, Built], image_places: dict[str, str]) -> str:
    """The manifest of these kernels, each image at its place relative to the manifest."""
    return json.dumps(
        {label: {**b.provenance(), "image": image_places[label]} for label, b in built.items()},
        indent=2,
    )


def read_manifest(path: Path) -> dict[str, Built]:
    """The kernels a manifest lists; a missing or malformed one, or a missing image, is one
    line."""
    try:
        data = json.loads(path.read_text())
        kernels = {
            label: Built(
                **{**fields, "label": label, "image": path.parent / fields["image"], "cached": True}
            )  # fmt: skip
            for label, fields in data.items()
        }
    except OSError as error:
        raise LocklabError(f"--images {path}: cannot read: {error.strerror}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise LocklabError(f"--images {path}: not a kernels manifest ({error})") from None
    for label, kernel in kernels.items():
        if not kernel.image.is_file():
            raise LocklabError(f"--images {path}: {label}'s image {kernel.image} is missing")
    return kernels


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def debian_source(version: str) -> tuple[Path, Path]:
    """Debian's linux-source-VERSION: its tarball, and where locklab unpacks it."""
    return Path(f"/usr/src/linux-source-{version}.tar.xz"), BUILD / f"src-{version}"


def unpack_debian_source(version: str = "6.1") -> Path:
    """Debian's linux-source-VERSION, unpacked once (into a temporary folder, then renamed, so
    an interrupted unpack is never taken for a tree)."""
    tarball, tree = debian_source(version)
    if (tree / "Makefile").exists():
        return tree
    if not tarball.exists():
        raise LocklabError(f"{tarball} is missing: install linux-source-{version}")
    _progress(f"unpacking {tarball} into {tree}")
    partial = tree.with_name(tree.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    proc = subprocess.run(["tar", "-xJf", str(tarball), "-C", str(partial)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise LocklabError(f"unpacking {tarball} failed: {proc.stderr.strip()[:200]}")
    (top,) = list(partial.iterdir())  # linux-source-VERSION/
    top.rename(tree)
    partial.rmdir()
    return tree


def unpack_default_source() -> Path:
    return unpack_debian_source("6.1")


def debian_version(source_dir: Path) -> str | None:
    """The VERSION of a `--source linux-source-VERSION` that names a Debian package, not a
    folder (a campaign's `source = "linux-source-6.12"`), else None."""
    match = re.fullmatch(r"linux-source-(\d+\.\d+)", source_dir.name)
    return match.group(1) if match and not source_dir.is_dir() else None


def source_identity(source: Path) -> str:
    """A hash that changes when the tree's content does: the tarball's for the default tree,
    HEAD plus uncommitted changes for a git checkout, else every file's path, size and mtime."""
    if source.parent == BUILD and source.name.startswith("src-"):  # a Debian tarball's
        tarball, _ = debian_source(source.name.removeprefix("src-"))
        stat = tarball.stat()
        return _sha256(f"{tarball}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    if (source / INDEX).is_file():  # a revision of a git tree, exported: its tree's object id
        return _sha256(f"revision:{json.loads((source / INDEX).read_text())['key']}".encode())
    if (source / ".git").exists():
        git = ["git", "-C", str(source)]
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, check=False)
        diff = subprocess.run([*git, "diff", "HEAD"], capture_output=True, check=False)
        untracked = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=all"], capture_output=True,
            check=False,
        )  # fmt: skip
        if head.returncode == 0:
            return _sha256(head.stdout + diff.stdout + untracked.stdout)
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(directory, name)
            stat = path.lstat()
            digest.update(
                f"{path.relative_to(source)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode()
            )
    return digest.hexdigest()


def _progress(text: str) -> None:
    end = "\r" if sys.stderr.isatty() else "\n"
    if sys.stderr.isatty():
        text = text[:150].ljust(150)
    print(f"locklab: {text}", end=end, file=sys.stderr, flush=True)


class _Lock:
    """An exclusive lock on a work tree, so two locklab processes never build in it at once."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> _Lock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = self.path.open("w")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def _flavour(debug: list[str], arch: Arch) -> str:
    """One work tree per architecture and set of checkers: either changes every object, so
    kernels that differ in them share no objects."""
    return arch.distinct + "".join(f"-{name}" for name in sorted(debug))


LEDGER = ".locklab-patched"  # the files of a work tree that differ from its source (or base)
BASE_RECORD = ".locklab-base"  # a revision work tree's base: its exported tree and commit


def _link_work_tree(source: Path, work: Path, base: dict[str, str] | None) -> None:
    """A hard-linked copy of `source` at `work` (cheap; sources are never written there: files
    to patch are replaced by private copies first), with its base record if it has one."""
    _progress(f"linking a work tree for {source} at {work}")
    partial = work.with_name(work.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(["cp", "-al", str(source), str(partial)], check=True)
    shutil.rmtree(partial / ".git", ignore_errors=True)  # a link to a checkout's history
    if base is not None:
        (partial / BASE_RECORD).write_text(json.dumps(base) + "\n")
    partial.rename(work)


# A revision of a git tree: the repository (resolved) and the commit.
RevisionOf = tuple[Path, str]


def _work_tree_path(source_key: str, debug: list[str], arch: Arch,
                    revision: RevisionOf | None) -> Path:  # fmt: skip
    if revision is None:
        return BUILD / f"work-{source_key[:16]}{_flavour(debug, arch)}"
    repository_key = _sha256(str(revision[0]).encode())
    return BUILD / f"work-repo-{repository_key[:16]}{_flavour(debug, arch)}"


def _prepare_work_tree(work: Path, source: Path,
                       revision: RevisionOf | None) -> tuple[Path, list[str]]:  # fmt: skip
    """Make `work` ready to take `source` (under the work tree's lock): the tree it was linked
    from (its base), and the files `source` has otherwise. A revision in its repository's
    work tree: the base revision's export, and the files `git diff` lists between the two;
    anything else: `source` itself, and none."""
    if revision is not None and (work / "Makefile").exists():
        try:
            base = json.loads((work / BASE_RECORD).read_text())
            base_tree, base_commit = Path(base["tree"]), str(base["commit"])
        except (OSError, ValueError, KeyError, TypeError):
            base_tree, base_commit = work, ""  # no usable record: start again below
        if (base_tree / INDEX).is_file():
            differing = changed_paths(revision[0], base_commit, revision[1])
            if differing is not None:
                return base_tree, differing
        shutil.rmtree(work)  # its base export was removed, or its commit is gone: start again
    if not (work / "Makefile").exists():
        base = {"tree": str(source), "commit": revision[1]} if revision is not None else None
        _link_work_tree(source, work, base)
    return source, []


def _sync_work_tree(work: Path, base: Path, tree: Path, differing: list[str]) -> list[str]:
    """Make `work` hold `tree`'s files over `base`'s: each file an earlier build changed (the
    ledger) as `base` has it, or as `tree` has it where `tree` differs (`differing`). A file
    is written only when its content changes, so make rebuilds what changed since the last
    build, not since the base. Returns the files written."""
    earlier = _read_ledger(work)
    wanted = set(differing)
    _write_ledger(work, earlier | wanted)  # before any file changes: a superset is safe
    written = [name for name in sorted(earlier | wanted)
               if _put((tree if name in wanted else base) / name, work / name)]  # fmt: skip
    _write_ledger(work, wanted)
    return written


def _read_ledger(work: Path) -> set[str]:
    ledger = work / LEDGER
    return set(ledger.read_text().split("\n")) - {""} if ledger.exists() else set()


def _write_ledger(work: Path, names: set[str]) -> None:
    (work / LEDGER).write_text("".join(f"{name}\n" for name in sorted(names)))


def _put(origin: Path, target: Path) -> bool:
    """Make `target` as `origin` is (a private copy, or the same link), removed where `origin`
    is absent; a copy is newer than its objects, so make rebuilds what it touches. Whether it
    had to change."""
    if _same(origin, target):
        return False
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)  # a folder in one revision, a file in another
    else:
        target.unlink(missing_ok=True)
    if origin.is_symlink():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.readlink(origin), target)
    elif origin.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target)
        os.utime(target)
    return True


def _same(origin: Path, target: Path) -> bool:
    if origin.is_symlink() or target.is_symlink():
        return (origin.is_symlink() and target.is_symlink()
                and os.readlink(origin) == os.readlink(target))  # fmt: skip
    if not origin.is_file():
        return not target.exists()
    return target.is_file() and filecmp.cmp(origin, target, shallow=False)


def _apply(work: Path, patches: list[Path]) -> list[str]:
    """Apply `patches` in order; the files they touch."""
    touched = sorted({name for patch in patches for name in patched_files(patch)})
    _write_ledger(work, _read_ledger(work) | set(touched))  # before any file changes
    for name in touched:  # break the hard link to the pristine source
        target = work / name
        if target.exists():
            data = target.read_bytes()
            target.unlink()
            target.write_bytes(data)
    for patch in patches:
        proc = apply_patch(work, patch)
        if proc.returncode != 0:
            raise LocklabError(patch_failure(patch, proc.stdout + proc.stderr))
    return touched


def _make_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        CCACHE_DIR=str(CCACHE_DIR),
        CCACHE_BASEDIR=str(BUILD),  # relative paths: hits across work trees
        CCACHE_NOHASHDIR="1",
        CCACHE_MAXSIZE="5G",
        # A fixed build identity: the same inputs give the same image (and ccache hits).
        KBUILD_BUILD_TIMESTAMP="locklab",
        KBUILD_BUILD_USER="locklab",
        KBUILD_BUILD_HOST="locklab",
        KBUILD_BUILD_VERSION="1",
        LC_ALL="C",
    )
    return env


def _make_arch(arch: Arch) -> list[str]:
    """make's ARCH (and CROSS_COMPILE, building for another architecture than the host's)."""
    prefix = arch.compiler_prefix()
    return [f"ARCH={arch.make_arch}", *([f"CROSS_COMPILE={prefix}"] if prefix else [])]


def _make(work: Path, targets: list[str], label: str, log: Path, arch: Arch) -> None:
    """make, with a progress line (the step it is at) and its output kept in `log`; a failure
    is one error line with make's first error and the log's path."""
    jobs = str(os.cpu_count() or 1)
    ccache = "ccache " if shutil.which("ccache") else ""
    command = ["make", "-C", str(work), f"-j{jobs}", *_make_arch(arch),
               f"CC={ccache}{arch.compiler_prefix()}gcc", f"HOSTCC={ccache}gcc",
               *targets]  # fmt: skip
    start = time.monotonic()
    last_shown = 0.0
    steps = 0
    errors: list[str] = []
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=_make_env())  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            out.write(line)
            step = _MAKE_STEP.match(line)
            if step:
                steps += 1
                now = time.monotonic()
                if now - last_shown > (0.5 if sys.stderr.isatty() else 30):
                    last_shown = now
                    _progress(f"building {label}: {now - start:.0f} s, {steps} steps, "
                              f"{step.group(1)} {step.group(2)}")  # fmt: skip
            elif " error" in line.lower() or line.startswith("make") and "Error" in line:
                errors.append(line.strip())
        proc.wait()
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if proc.returncode != 0:
        first = errors[0] if errors else f"make {' '.join(targets)} exited {proc.returncode}"
        raise LocklabError(f"building {label} failed: {first[:200]} (log: {log})")


def _configure(
    work: Path, options: dict[str, str], label: str, log: Path, arch: Arch
) -> dict[str, str]:
    _make(work, ["tinyconfig"], label, log, arch)
    config = work / ".config"
    lines = config.read_text().splitlines()
    drop = {f"CONFIG_{name}" for name in options}
    kept = [line for line in lines
            if line.split("=")[0] not in drop and not any(
                line == f"# {name} is not set" for name in drop)]  # fmt: skip
    for name, value in options.items():
        kept.append(f"# CONFIG_{name} is not set" if value == "n" else f"CONFIG_{name}={value}")
    config.write_text("\n".join(kept) + "\n")
    _make(work, ["olddefconfig"], label, log, arch)
    final = read_config(config)
    check_config(final, options, arch.needed)
    return final


def build_key(
    source_key: str, patches: list[Path], options: dict[str, str], arch: Arch = X86_64
) -> str:
    recipe: dict[str, object] = {
        "recipe": RECIPE,
        "source": source_key,
        "patches": [[patch.name, _sha256(patch.read_bytes())] for patch in patches],
        "config": options,
    }
    if arch.distinct:  # x86_64's keys predate --arch (Arch.distinct)
        recipe["arch"] = arch.name
    return _sha256(json.dumps(recipe, sort_keys=True).encode())


def kernel_labels(patches: dict[str, list[Path]],
                  revisions: dict[str, str]) -> dict[str, list[Path]]:  # fmt: skip
    """Each kernel's patches, by label: a label of --rev alone is a kernel with no patches of
    its own."""
    return {**{label: [] for label in revisions}, **patches}


def build(
    patches: dict[str, list[Path]],
    source_dir: Path | None = None,
    config_fragment: Path | None = None,
    debug: list[str] | None = None,
    arch: str | None = None,
    revisions: dict[str, str] | None = None,
) -> dict[str, Built]:
    """One image per label (a label with no patches is the stock kernel), for `arch` (default:
    this machine's). A label in `revisions` builds that revision of the git tree `source_dir`
    (its whole tree exported with git, the checkout untouched), its patches on top. Every
    input is checked first, every patch tried against its source: any problem is one
    LocklabError and nothing is built. An image built before from the same source, patches,
    config and architecture is reused at once."""
    revisions = revisions or {}
    patches = kernel_labels(patches, revisions)
    for label in patches:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", label):
            raise LocklabError(f"kernel label {label!r}: use letters, digits and _ . + -")
    target = resolve(arch)
    target.require_compiler()
    debug = sorted(set(debug or []))
    options = {**BASE_OPTIONS, **target.options, **debug_options(debug)}
    if config_fragment is not None:
        if not config_fragment.is_file():
            raise LocklabError(f"config fragment {config_fragment}: no such file")
        options.update(parse_fragment(config_fragment.read_text(), str(config_fragment)))
    sources = _sources(patches, source_dir, revisions)
    for label, files in patches.items():
        try:
            check_patches(sources[label][0], files)
        except LocklabError as error:
            raise LocklabError(f"{label}: {error}") from None
    keys = {source: source_identity(source) for source, _, _ in sources.values()}
    plans = {label: build_key(keys[sources[label][0]], files, options, target)
             for label, files in patches.items()}  # fmt: skip
    results: dict[str, Built] = {}
    for label, files in patches.items():
        key = plans[label]
        source, origin, revision = sources[label]
        cached = _cached(key, label, target, origin)
        if cached is None:
            cached = _build_one(label, key, source, keys[source], origin, files, options, debug,
                                target, revision)  # fmt: skip
        results[label] = cached
    return results


Sources = dict[str, tuple[Path, str, RevisionOf | None]]  # label: tree, origin, revision


def _sources(patches: dict[str, list[Path]], source_dir: Path | None,
             revisions: dict[str, str]) -> Sources:  # fmt: skip
    """Each label's tree, where it came from, and the repository and commit it is a revision
    of: its revision of the git tree `source_dir`, exported whole (checked before any is
    exported), or the one tree every other label builds (Debian's 6.1 by default)."""
    trees: Sources = {}
    if revisions:
        top = git_tree(source_dir)
        for label, revision in revisions.items():
            commit_of(top, revision, f"--rev {label}={revision}")
        for label, revision in revisions.items():
            _progress(f"reading {revision} of {top} (its whole tree, with git archive)")
            exported = read_revision(top, revision, ())
            trees[label] = (exported.tree, exported.describe(), (top.resolve(), exported.commit))
    others = [label for label in patches if label not in revisions]
    if not others:
        return trees
    version = "6.1" if source_dir is None else debian_version(source_dir)
    if version is not None:
        tree, origin = (
            unpack_debian_source(version),
            f"{debian_source(version)[0]} (Debian linux-source-{version})",
        )
    else:
        assert source_dir is not None
        tree, origin = source_dir.resolve(), str(source_dir.resolve())
        if not (tree / "Makefile").is_file() or not (tree / "kernel" / "locking").is_dir():
            raise LocklabError(f"--source {source_dir}: not a kernel source tree")
    return {**trees, **{label: (tree, origin, None) for label in others}}


def _cached(key: str, label: str, arch: Arch, origin: str) -> Built | None:
    """The image built before from the same inputs, said to come from this request's tree: a
    revision of another clone, or another commit with the same files, builds the same kernel."""
    record = IMAGES / key / "provenance.json"
    image = IMAGES / key / arch.image_name
    if not (record.exists() and image.exists()):
        return None
    data = json.loads(record.read_text())
    data.update(label=label, image=image, cached=True, source=origin)
    return Built(**data)


def _build_one(label: str, key: str, source: Path, source_key: str, origin: str,
               files: list[Path], options: dict[str, str], debug: list[str], arch: Arch,
               revision: RevisionOf | None) -> Built:  # fmt: skip
    start = time.monotonic()
    work = _work_tree_path(source_key, debug, arch, revision)
    target = IMAGES / key
    target.mkdir(parents=True, exist_ok=True)
    log = target / "build.log"
    log.write_text("")
    with _Lock(work.with_name(work.name + ".lock")):
        base, differing = _prepare_work_tree(work, source, revision)
        changed = _sync_work_tree(work, base, source, differing) + _apply(work, files)
        # The same options as the work tree's last build: keep its .config, so make rebuilds
        # only what the patches changed; configured again where the options' Kconfig changed,
        # so every option asked for is checked against it.
        stamp = work / ".locklab-config"
        wanted = json.dumps(options, sort_keys=True)
        kconfig_changed = any(Path(name).name.startswith("Kconfig") for name in changed)
        if kconfig_changed or not (stamp.exists() and stamp.read_text() == wanted
                                   and (work / ".config").exists()):  # fmt: skip
            stamp.unlink(missing_ok=True)
            _configure(work, options, label, log, arch)
            stamp.write_text(wanted)
        _make(work, [arch.image_name], label, log, arch)
        version = subprocess.run(
            ["make", "-s", "-C", str(work), *_make_arch(arch), "kernelversion"],
            capture_output=True, text=True, check=True, env=_make_env(),
        ).stdout.strip()  # fmt: skip
        config = (work / ".config").read_bytes()
        partial = target / f"{arch.image_name}.partial"
        shutil.copy2(work / arch.image, partial)
        (target / "config").write_bytes(config)
    built = Built(
        label=label, image=target / arch.image_name, key=key, source=origin, version=version,
        patches=[{"name": display_name(f), "sha256": _sha256(f.read_bytes())} for f in files],
        config_sha256=_sha256(config), debug=debug, arch=arch.name,
        seconds=round(time.monotonic() - start, 1),
    )  # fmt: skip
    record = built.provenance()
    for transient in ("label", "image", "cached"):
        record.pop(transient)
    (target / "provenance.json").write_text(json.dumps(record, indent=2) + "\n")
    partial.rename(built.image)  # last: the image marks it done
    _progress(f"built {label} ({version}) in {built.seconds:.0f} s: {built.image}")
    return built
