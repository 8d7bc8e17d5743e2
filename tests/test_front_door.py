"""What a newcomer sees first: bare `locklab` lists the commands, listings that read as a
person would lay them out, and read-only commands that leave nothing beside the store."""

import re
import subprocess
import sys

from conftest import ROOT


def locklab(*args: str, columns: int = 100) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "locklab.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False, cwd=ROOT,
                          env={"COLUMNS": str(columns), "PATH": "/usr/bin:/bin"})  # fmt: skip


def test_bare_locklab_lists_the_commands():
    proc = locklab()
    assert proc.returncode == 2 and "error" not in proc.stderr, proc.stderr
    for command in ("run", "campaign", "table", "report", "machines"):
        assert re.search(rf"^    {command} ", proc.stdout, re.M), command


def test_the_lock_list_breaks_no_word():
    """At a mail's 100 columns no identifier is cut in two ('spinlock_de' / 'lay')."""
    words = set(re.findall(r"[\w*()-]+", locklab("list", "--json").stdout))
    listed = locklab("list").stdout.split("\n\n")[0]  # the table, not the kernel: locks after it
    assert max(len(line) for line in listed.splitlines()) <= 100
    cut = [w for w in re.findall(r"[\w*()-]+", listed) if w not in words and len(w) > 3]
    assert not cut, cut


def test_machines_line_up():
    lines = [line for line in locklab("machines").stdout.splitlines() if " CPUs " in line]
    assert len({line.index(" GHz") for line in lines}) == 1, lines


def test_read_only_commands_leave_no_wal_beside_the_store(tmp_path):
    """Each command a process of its own, as a user runs them: a writer that has closed leaves
    the store alone, and reading it adds nothing beside it."""
    store = tmp_path / "store"
    args = ["run", "--lock", "tas", "--nwriters", "1", "--repeat", "1", "--duration", "0.05",
            "--warmup", "0", "--store", str(store), "--plain",
            "--engine", str(ROOT / "build" / "opt" / "locklab-bench")]  # fmt: skip
    assert locklab(*args).returncode == 0
    for command in (["results"], ["table", "1"], ["export", "1", "--format", "csv"]):
        assert locklab(*command, "--store", str(store)).returncode == 0, command
    assert sorted(p.name for p in store.iterdir()) == ["locklab.db"]
