"""The table fits where it goes: the terminal's width, or a mail's 100 columns outside one, in
blocks of locks that each repeat the row labels; --wide keeps each row on one line; the
plain-text export is what a mail carries."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from locklab import cli

LOCKS = "ticket,mcs,qspinlock,cna,tas"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("width") / "store"
    args = ["run", "--sim", "mach1", "--lock", LOCKS, "--nwriters", "1,2", "--repeat", "2",
            "--duration", "0.001", "--warmup", "0", "--store", str(store), "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    return store


def locklab(*args: str, columns: int) -> str:
    proc = subprocess.run([sys.executable, "-m", "locklab.cli", *args], capture_output=True,
                          text=True, timeout=120, check=True, cwd=ROOT,
                          env={"COLUMNS": str(columns), "PATH": "/usr/bin:/bin"})  # fmt: skip
    return proc.stdout


def longest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", [72, 100, 300])
def test_the_table_fits_the_width_in_blocks_of_locks(store, columns):
    text = locklab("table", "1", "--store", str(store), columns=columns)
    assert longest(text) <= columns
    blocks = text.count("\nLock: ")
    assert blocks > 1 if columns <= 100 else blocks == 1
    assert text.count("\nnwriters:\n") == blocks  # each block its own row labels
    for lock in LOCKS.split(","):
        assert f"  {lock}" in text


def test_wide_keeps_each_row_on_one_line(store):
    text = locklab("table", "1", "--store", str(store), "--wide", columns=72)
    assert text.count("\nLock: ") == 1 and longest(text) > 200


def test_the_text_export_is_a_mails_table_with_its_verdicts(store):
    text = locklab("export", "1", "--store", str(store), "--format", "text", columns=300)
    assert longest(text) <= 100 and "Verdict against ticket:" in text
    assert "**" not in text and "\\~" not in text


def test_the_markdown_export_has_no_markup_a_plain_mail_shows(store):
    text = locklab("export", "1", "--store", str(store), "--format", "markdown", columns=100)
    assert "| nwriters" in text and "**" not in text and "\\~" not in text
    assert "\n_" not in text


def test_a_table_that_cannot_answer_says_so(tmp_path):
    """One run a cell tests nothing: the table says it ranks nothing, under its verdicts."""
    store = str(tmp_path / "store")
    args = ["run", "--sim", "mach1", "--lock", "ticket,mcs", "--nwriters", "1,2", "--repeat",
            "1", "--duration", "0.001", "--warmup", "0", "--store", store, "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    text = locklab("table", "1", "--store", store, columns=200)
    assert "This table cannot answer yet: no comparison in it is settled" in text
