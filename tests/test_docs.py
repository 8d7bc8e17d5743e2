"""Every `locklab` command shown in README.md and docs/ works, so no page can go stale.

Each command in a code block parses as the command line it is, with every file it names
present. Each page's commands then run in order at a tiny scale, in a store of the page's own
(so `locklab table spin` finds the `--name spin` run above it): runs, repeats and durations
cut (the options a command has, replaced; lists of thread counts to their first two), outputs
written under the test's folder. A command may end with exit 1, a finding of its runs
(ThreadSanitizer's report of seed 000's race is one), never with a usage error or a crash.
What a test machine cannot do in a tiny run (build or boot kernels, read logs or stores it
does not have, reach other machines) is parsed only; test_kernel_build.py,
test_kernel_revisions.py, test_places.py and test_hosts.py run those paths.
"""

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, bench_path, make_kernel_repo
from locklab.cli.main import build_parser

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PARSED_ONLY = {"kernel", "kernel-build", "import-locktorture", "merge"}
# Each replaced where the command has the option, or added where it has it and lacks it.
TINY = {"--repeat": "2", "--duration": "0.05", "--warmup": "0", "--cells": "2", "--grid": "2",
        "--rounds": "1"}  # fmt: skip
# A simulated command's seconds are virtual: milliseconds of a many-core machine already hold
# thousands of acquisitions, and a repeat replays the same model (docs/simulator.md).
SIM_TINY = {"--duration": "0.001", "--repeat": "1"}
# A list of thread counts keeps its first two: the same paths, a fraction of the runs. (Locks
# stay: a page's --param or baseline names one of them.)
LISTS_CUT_TO_TWO = ("--nwriters", "--threads")
OUTPUTS = ("-o", "--output", "--report")
COMMAND_TIMEOUT_S = 600


def commands(page: Path) -> list[tuple[int, list[str]]]:
    """(line, argv after `locklab`) of each command in the page's code blocks, continuation
    lines joined and trailing comments dropped."""
    found, in_block, pending, start = [], False, "", 0
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_block = not in_block
            continue
        text = line.strip()
        if not in_block or not (pending or text.startswith("locklab ")):
            continue
        if not pending:
            start = number
        text = f"{pending} {text}" if pending else text
        if text.endswith("\\"):
            pending = text[:-1].strip()
            continue
        pending = ""
        argv = shlex.split(re.sub(r"\s+#\s.*$", "", text))[1:]
        if argv[:2] == ["kernel", "build"]:
            argv = ["kernel-build", *argv[2:]]
        found.append((start, argv))
    return found


def _parse(argv: list[str]):
    parser = build_parser()
    return parser, parser.parse_args(argv)


def _campaign_kind(path: str) -> str:
    return tomllib.loads((ROOT / path).read_text()).get("kind", "engine")


def runs_at_tiny_scale(argv: list[str]) -> bool:
    if argv[0] in PARSED_ONLY:
        return False
    if "--hosts" in argv and argv[argv.index("--hosts") + 1] != "localhost":
        return False  # other machines: test_hosts.py runs that path against its own sshd
    if argv[0] == "campaign":
        return _campaign_kind(argv[1]) == "engine"
    # Whole kernels booted are not tiny: test_kernel_revisions.py boots them (make test-slow).
    return not (argv[0] in ("bisect", "history") and "--kernel" in argv)


def simulated(argv: list[str]) -> bool:
    """A command that runs in the simulator: --sim, or a campaign file that says sim = ..."""
    if "--sim" in argv:
        return True
    return argv[0] == "campaign" and bool(
        re.search(r"^sim = ", (ROOT / argv[1]).read_text(), re.MULTILINE)
    )


def tiny(argv: list[str], options: set[str], out: Path) -> list[str]:
    argv = list(argv)
    program = argv.index("--") if "--" in argv else len(argv)
    own, rest = argv[:program], argv[program:]
    scale = {**TINY, **SIM_TINY} if simulated(argv) else TINY
    for option, value in scale.items():
        if option not in options:
            continue
        if option in own:
            own[own.index(option) + 1] = value
        else:
            own += [option, value]
    for option in LISTS_CUT_TO_TWO:
        if option in own:
            index = own.index(option) + 1
            own[index] = ",".join(own[index].split(",")[:2])
    for option in OUTPUTS:
        if option in own:
            index = own.index(option) + 1
            own[index] = str(out / Path(own[index]).name)
    if "--store" in options:
        own += ["--store", str(out / "store")]
    return own + rest


def with_example_tree(argv: list[str], out: Path) -> list[str]:
    """The pages' kernel git tree (~/linux) and mailed series (~/series.mbox): a small tree
    made from the installed 6.1 one (conftest.make_kernel_repo), with the same tag, branch
    and series."""
    if not (out / "linux").is_dir():
        make_kernel_repo(out)
    return [word.replace("~/linux", str(out / "linux")).replace("~/series.mbox",
                                                                str(out / "series.mbox"))
            for word in argv]  # fmt: skip


PAGE_COMMANDS = [(page, line, argv) for page in PAGES for line, argv in commands(page)]


@pytest.mark.parametrize(
    ("page", "line", "argv"), PAGE_COMMANDS,
    ids=[f"{page.name}:{line}" for page, line, _ in PAGE_COMMANDS],
)  # fmt: skip
def test_each_command_parses_and_names_files_that_exist(page, line, argv):
    _, args = _parse(argv)
    assert args.command == argv[0]
    for word in argv:
        path = word.partition("=")[2] if "=" in word and word[0] != "-" else word
        if re.match(r"^(campaigns|examples|build)/", path):
            assert (ROOT / path).exists(), f"{page}:{line}: {path}"


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_each_page_runs_at_a_tiny_scale(page, tmp_path):
    for line, argv in commands(page):
        if not runs_at_tiny_scale(argv):
            continue
        parser, _ = _parse(argv)
        subparser = parser._subparsers._group_actions[0].choices[argv[0]]  # type: ignore[union-attr]
        command = tiny(argv, set(subparser._option_string_actions), tmp_path)
        if any("~/linux" in word or "~/series.mbox" in word for word in command):
            command = with_example_tree(command, tmp_path)
        proc = subprocess.run(
            [sys.executable, "-m", "locklab.cli", *command], capture_output=True, text=True,
            timeout=COMMAND_TIMEOUT_S, check=False, cwd=ROOT,
            env={**os.environ, "LOCKLAB_ENGINE": str(bench_path("opt"))},
        )  # fmt: skip
        where = f"{page.name}:{line}: locklab {shlex.join(command)}"
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, where
        assert proc.returncode in (0, 1), f"{where}\n{proc.stderr[-2000:]}"
