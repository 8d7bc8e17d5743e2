"""The kernel developer's own tree: kernel: locks compiled from revisions of a git tree
(--source DIR --rev LABEL=REV), and mailed series (an mbox of several patches) applied patch
by patch. The tests make a small git repository from the installed 6.1 tree, only the files
the from-source build compiles, with a few commits and a two-patch series mailed as an mbox;
the user's checkout must be as it was afterwards."""

import subprocess
from pathlib import Path

import pytest
from conftest import RTMUTEX_C as RTMUTEX
from conftest import SLOW_SUBJECT, git, locklab_cli
from locklab.errors import LocklabError
from locklab.kernel import series
from locklab.kernel.from_source import TREE_PARTS
from locklab.kernel.revisions import parse_rev_options, read_revision

pytestmark = pytest.mark.skipif(
    not Path("/usr/src/linux-source-6.1.tar.xz").exists(),
    reason="linux-source-6.1 is not installed (make deps installs it)",
)


def state(repository: Path) -> tuple[str, str, str, str]:
    return (git(repository, "status", "--porcelain", "--untracked-files=all"),
            git(repository, "rev-parse", "HEAD"), git(repository, "stash", "list"),
            git(repository, "branch", "--list"))  # fmt: skip


def run_cli(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    return locklab_cli(args[0], "--store", str(store), *args[1:], timeout=600)


def test_revisions_are_columns_with_their_commits_and_share_a_build(kernel_repo, tmp_path):
    before = state(kernel_repo)
    proc = run_cli(
        "run", "--lock", "kernel:rtmutex", "--source", str(kernel_repo), "--rev", "base=v6.1",
        "--rev", "docs=docs", "--rev", "comment=master", "--nwriters", "1", "--repeat", "1",
        "--duration", "0.05", "--warmup", "0", store=tmp_path / "s.db",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert state(kernel_repo) == before, "the user's checkout changed"
    header = proc.stdout.split("Lock:")[0]
    for label, tag in (("base", "v6.1"), ("docs", "docs"), ("comment", "master")):
        commit = git(kernel_repo, "rev-parse", tag).strip()
        assert f"{label} = kernel:rtmutex from {kernel_repo} {tag} ({commit[:12]}" in header
    assert "'README: say more'" in header and "'locking/rtmutex: add a comment'" in header
    # v6.1 and docs differ only outside the files compiled: one build, two revisions' links.
    built = {read_revision(kernel_repo, tag, TREE_PARTS).tree for tag in ("v6.1", "docs", "master")}
    assert len(built) == 2
    assert "building kernel:rtmutex (docs" not in proc.stderr


def test_a_range_of_revisions_is_a_column_per_commit_that_touches_the_lock(kernel_repo, tmp_path):
    proc = run_cli(
        "run", "--lock", "kernel:rtmutex", "--source", str(kernel_repo), "--revs",
        "v6.1..regress~1", "--nwriters", "1", "--repeat", "1", "--sim", "lent-xeon-16",
        store=tmp_path / "s.db",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    header = proc.stdout.split("Lock:")[0]
    start = git(kernel_repo, "rev-parse", "v6.1").strip()
    assert f"v6.1 = kernel:rtmutex from {kernel_repo} {start} (" in header
    # The README commit (docs) touches nothing compiled: no column.
    touched = git(kernel_repo, "rev-list", "--reverse", "v6.1..regress~1", "--", *TREE_PARTS)
    assert len(touched.split()) == 4 and "'README: say more'" not in header
    for commit in touched.split():
        short = git(kernel_repo, "rev-parse", "--short", commit).strip()
        assert f"{short} = kernel:rtmutex from {kernel_repo} {commit} (" in header, header
    # The report reads the columns as a history: each commit against the one before.
    page = tmp_path / "r.html"
    report = run_cli("report", "--latest", "-o", str(page), store=tmp_path / "s.db")
    assert report.returncode == 0, report.stderr[-2000:]
    text = page.read_text()
    assert "kernel:rtmutex over the commits, each against the one before" in text
    slow = git(kernel_repo, "rev-parse", "regress~3").strip()
    row = text[text.index(f"{slow[:12]} {SLOW_SUBJECT}") :].split("</tr>")[0]
    assert "% lower)" in row, row
    assert text.count("% equal)") == 3, "the comments and, at one writer, the broken commit"
    empty = run_cli("run", "--lock", "kernel:rtmutex", "--source", str(kernel_repo), "--revs",
                    "v6.1..docs", "--sim", "lent-xeon-16", store=tmp_path / "t.db")  # fmt: skip
    assert empty.returncode == 2 and "Traceback" not in empty.stderr
    assert "--revs v6.1..docs: no commit in it touches" in empty.stderr.strip().splitlines()[-1]


def test_a_mailed_series_applies_patch_by_patch_on_a_revision(kernel_repo, tmp_path):
    mbox = kernel_repo.parent / "series.mbox"
    patches = series.split_series(mbox)
    assert [p.name for p in patches] == [
        "0001-locking-rtmutex-first-of-two.patch",
        "0002-locking-rtmutex-second-of-two-on-the-first.patch",
    ]
    proc = run_cli(
        "run", "--lock", "kernel:rtmutex", "--source", str(kernel_repo), "--rev", "mine=v6.1",
        "--patch", f"mine={mbox}", "--nwriters", "1", "--repeat", "1", "--duration", "0.05",
        "--warmup", "0", store=tmp_path / "s.db",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert ("with [PATCH 1/2] locking/rtmutex: first of two + "
            "[PATCH 2/2] locking/rtmutex: second of two, on the first") in proc.stdout  # fmt: skip
    # On master, whose rtmutex.c has the comment in the way, the second patch cannot apply.
    shifted = run_cli(
        "run", "--lock", "kernel:rtmutex", "--source", str(kernel_repo), "--rev", "x=master",
        "--patch", f"x={mbox}", "--nwriters", "1", store=tmp_path / "t.db",
    )  # fmt: skip
    assert shifted.returncode == 2 and "Traceback" not in shifted.stderr
    line = shifted.stderr.strip().splitlines()[-1]
    assert line.startswith("locklab: error: x: patch ") and f"of {mbox}" in line, line
    assert RTMUTEX in line and "does not apply" in line, line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rev", "a=v9.9"], "--rev a=v9.9: no such revision v9.9 in"),
        (["--rev", "a"], "give LABEL=REV"),
        (["--rev", "a=v6.1", "--rev", "a=docs"], "label 'a' given twice"),
    ],
)
def test_bad_revisions_are_one_line(kernel_repo, tmp_path, args, message):
    proc = run_cli("run", "--lock", "kernel:rtmutex", "--source", str(kernel_repo), *args,
                   store=tmp_path / "s.db")  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_a_revision_needs_a_git_tree(tmp_path):
    proc = run_cli("run", "--lock", "kernel:rtmutex", "--source", str(tmp_path), "--rev",
                   "a=v6.1", store=tmp_path / "s.db")  # fmt: skip
    assert proc.returncode == 2 and "not a git tree" in proc.stderr
    with pytest.raises(LocklabError, match="needs --source"):
        read_revision(None, "v6.1", TREE_PARTS)
    assert parse_rev_options(["a=v6.1", "b=HEAD~2"]) == {"a": "v6.1", "b": "HEAD~2"}


def test_an_mbox_of_one_patch_or_a_plain_patch_is_taken_as_it_is(tmp_path):
    plain = tmp_path / "one.patch"
    plain.write_text("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    assert series.split_series(plain) == [plain]
    assert series.split_series(tmp_path / "missing.patch") == [tmp_path / "missing.patch"]


def test_a_campaign_names_revisions_and_series_in_its_variants(kernel_repo, tmp_path):
    campaign = tmp_path / "revs.toml"
    campaign.write_text(f"""
name = "revs"
source = "{kernel_repo}"
repeat = 1
duration = 0.05
warmup = 0
[sweep]
nwriters = [1]
[[variant]]
label = "base"
lock = "kernel:rtmutex"
rev = "v6.1"
[[variant]]
label = "mine"
lock = "kernel:rtmutex"
rev = "v6.1"
patches = ["{kernel_repo.parent / "series.mbox"}"]
""")
    proc = run_cli("campaign", str(campaign), store=tmp_path / "s.db")
    assert proc.returncode == 0, proc.stderr[-2000:]
    commit = git(kernel_repo, "rev-parse", "v6.1").strip()[:12]
    assert (
        f"base = kernel:rtmutex from {kernel_repo} v6.1 ({commit} 'Linux 6.1') with no patches"
        in proc.stdout
    )
    assert "[PATCH 2/2] locking/rtmutex: second of two, on the first" in proc.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(
        campaign.read_text().replace(
            'lock = "kernel:rtmutex"\nrev = "v6.1"\n[[', 'lock = "ticket"\nrev = "v6.1"\n[[', 1
        )
    )
    refused = run_cli("campaign", str(bad), store=tmp_path / "t.db")
    assert (
        refused.returncode == 2 and "rev is for locks compiled from a kernel tree" in refused.stderr
    )


def test_a_campaign_variant_takes_a_range_of_revisions(kernel_repo, tmp_path):
    campaign = tmp_path / "range.toml"
    campaign.write_text(f"""
name = "range"
source = "{kernel_repo}"
sim = "lent-xeon-16"
repeat = 1
[sweep]
nwriters = [1]
[[variant]]
label = "rt"
lock = "kernel:rtmutex"
revs = "v6.1..regress~1"
""")
    proc = run_cli("campaign", str(campaign), store=tmp_path / "s.db")
    assert proc.returncode == 0, proc.stderr[-2000:]
    touched = git(kernel_repo, "rev-list", "--reverse", "v6.1..regress~1", "--", *TREE_PARTS)
    shorts = [git(kernel_repo, "rev-parse", "--short", c).strip() for c in touched.split()]
    labels = ["rt@v6.1", *(f"rt@{short}" for short in shorts)]
    header = proc.stdout.split("Lock:")[1].splitlines()[0].split()
    assert header == labels, header
    assert "Verdict against rt@v6.1:" in proc.stdout
    for text, says in (
        ('revs = "v6.1"', 'give "A..B"'),
        ('revs = "v6.1...master"', 'give "A..B"'),
        ('rev = "v6.1..master"', "is one revision"),
        ('revs = "v6.1..master"\nrev = "v6.1"', "give rev or revs, not both"),
    ):
        bad = tmp_path / "bad.toml"
        bad.write_text(campaign.read_text().replace('revs = "v6.1..regress~1"', text))
        refused = run_cli("campaign", str(bad), store=tmp_path / "t.db")
        assert refused.returncode == 2 and says in refused.stderr, refused.stderr[-500:]
