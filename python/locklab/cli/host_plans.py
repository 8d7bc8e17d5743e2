"""What each host of --hosts runs: this command line without this machine's own options, with
the files it names as the host sees them, and the inputs to ship there (cli/hosts.py runs
the plans). For `locklab kernel`, the kernels are built here, once per architecture among the
hosts, and shipped with their manifest.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from locklab.errors import LocklabError
from locklab.model.campaign import load_campaign
from locklab.printable import printable
from locklab.run.remote import ROOT, WORK, HostFailure, host_architecture, remote_input
from locklab.run.ssh import Ssh

Plan = tuple[list[str], dict[Path, str]]  # a host's command line; local file -> place there

# Options of this machine's locklab only: each host's command line goes without them.
_LOCAL_VALUED = {"--hosts", "--ssh-config", "--remote-dir", "--store", "--engine", "--report"}
_LOCAL_FLAGS = {"--install-deps", "--plain"}
# What builds a kernel: done here, so a host's command line goes without them.
_KERNEL_BUILD_OPTIONS = frozenset({"--patch", "--rev", "--source", "--config", "--debug",
                                   "--arch"})  # fmt: skip


def remote_command(args: argparse.Namespace, dropped: frozenset[str] = frozenset()) -> Plan:
    """The command line each host runs (without this machine's options, nor the `dropped`
    ones; the files it names from outside the project under WORK, the host's work folder),
    and the inputs to ship: local path -> place in the work folder."""
    argv: list[str] = args.argv
    program: list[str] = list(getattr(args, "program", None) or [])  # exec's, as given
    own = argv[: len(argv) - len(program)] if program else argv
    inputs: dict[Path, str] = {}

    def mapped(text: str) -> str:
        path = Path(text)
        if not path.is_file():
            return text  # the host's locklab says what is wrong with it
        place = remote_input(path)
        if place is None:
            return str(path.resolve().relative_to(ROOT))
        inputs[path.resolve()] = place
        return f"{WORK}/{place}"

    out: list[str] = []
    tokens = iter(enumerate(own))
    for index, token in tokens:
        name, equals, value = token.partition("=")
        if name in _LOCAL_VALUED or name in dropped:
            if not equals:
                next(tokens, None)
            continue
        if token in _LOCAL_FLAGS:
            continue
        if name == "--source":
            raise LocklabError("--source: not with --hosts (a kernel tree is not shipped; the "
                               "hosts use Debian's linux-source-6.1)")  # fmt: skip
        if name in ("--plugin", "--config", "--patch", "--sim"):  # --sim: a profile file too
            text = value if equals else next(tokens, (0, ""))[1]
            if name == "--patch":
                label, eq, files = text.partition("=")
                text = label + eq + ",".join(mapped(f) for f in files.split(",")) if eq else text
            else:
                text = mapped(text)
            out += [name, text]
            continue
        if own[0] == "campaign" and index > 0 and Path(token) == args.file:
            out.append(_campaign(token, mapped, inputs, getattr(args, "sim", None)))
            continue
        out.append(token)
    if program:
        out += ["--", *(program[1:] if program[0] == "--" else program)]
    return out, inputs


def _campaign(
    text: str, mapped: Callable[[str], str], inputs: dict[Path, str], sim: str | None
) -> str:
    """The campaign file and, when it comes from outside the project, the plugins, patches and
    machine profile (sim = "FILE.toml") it names beside it; not that profile when the command
    line's --sim (`sim`, shipped on its own) replaces it."""
    shown = mapped(text)
    if not shown.startswith(WORK):
        return shown
    folder = Path(text).resolve().parent
    place = shown.removeprefix(f"{WORK}/").rsplit("/", 1)[0]
    spec = load_campaign(Path(text), sim=sim)
    is_file = not sim and (spec.sim.endswith(".toml") or "/" in spec.sim)  # as find_profile
    profile = (folder / spec.sim).resolve() if is_file else None
    named_files = [profile, *(f for v in spec.variants for f in (v.plugin, *v.patches))]
    for named in named_files:
        if named is None:
            continue
        if not Path(named).is_relative_to(folder):
            raise LocklabError(
                f"{text}: --hosts ships a campaign's own folder only: {named} is outside "
                "it (move it beside the campaign, or into the project)"
            )
        inputs[Path(named)] = f"{place}/{Path(named).relative_to(folder)}"
    return shown


def kernel_plans(args: argparse.Namespace, aliases: list[str]) -> tuple[dict[str, Plan], int]:
    """`locklab kernel --patch ... --hosts`: the kernels built here, once per architecture
    among the hosts (arm64 cross-built), each host's plan booting its architecture's from
    their manifest (--images); and how many hosts could not be asked theirs (a line each)."""
    from locklab.cli.guest import debug_list
    from locklab.kernel import build, build_inputs
    from locklab.kernel.arch import resolve
    from locklab.kernel.revisions import parse_rev_options

    patches = build_inputs.parse_patch_options(args.patch)
    revisions = parse_rev_options(args.rev)
    arches, failed = _architectures(aliases, Ssh(args.ssh_config))
    plans: dict[str, Plan] = {}
    shipped = Path(args.store).resolve() / "hosts"
    shipped.mkdir(parents=True, exist_ok=True)
    for arch in sorted(set(arches.values())):
        built = build.build(patches, args.source, args.config, debug_list(args.debug), arch,
                            revisions)  # fmt: skip
        folder = f"inputs/kernels-{arch}"
        places = {label: f"{b.key}/{b.image.name}" for label, b in built.items()}
        manifest = shipped / f"kernels-{arch}.json"
        manifest.write_text(build.manifest(built, places))
        inputs = {b.image: f"{folder}/{places[label]}" for label, b in built.items()}
        inputs[manifest] = f"{folder}/{build.MANIFEST}"
        guest_init = resolve(arch).torture_init
        if guest_init is not None:  # cross-built here too, as the host may lack the compiler
            inputs[ROOT / guest_init] = f"src/{guest_init}"
        arguments, _ = remote_command(args, _KERNEL_BUILD_OPTIONS)
        arguments += ["--images", f"{WORK}/{folder}/{build.MANIFEST}"]
        plans.update({alias: (arguments, inputs) for alias in aliases if arches.get(alias) == arch})
    return plans, failed


def _architectures(aliases: list[str], ssh: Ssh) -> tuple[dict[str, str], int]:
    """Each reachable host's architecture (asked in parallel); a line for each other host."""
    found: dict[str, str] = {}
    faults: dict[str, str] = {}

    def ask(alias: str) -> None:
        try:
            found[alias] = host_architecture(alias, ssh)
        except HostFailure as error:
            faults[alias] = str(error)

    askers = [threading.Thread(target=ask, args=(alias,), daemon=True) for alias in aliases]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    for alias, fault in faults.items():
        print(f"locklab: error: host {printable(alias)}: {printable(fault)}", file=sys.stderr)
    return found, len(faults)
