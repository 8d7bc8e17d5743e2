"""Inputs a careless or hostile user gives: each ends in one clear line and exit 2, or just
works; none prints a traceback, hangs, loses what was measured, or exits 0 having done nothing.

Every test here failed before its fix (issue "A fresh machine passes make test, and no input
loses data, hangs or prints a traceback"). Runs are tiny and bounded; nothing asserts on time
except where the bug was a hang, and there only with a wide margin.
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, bench_path, plugin_path
from locklab import cli
from locklab.kernel import qemu as kernel
from test_cli import locklab, one_error_line

LOGS = ROOT / "tests" / "data" / "locktorture"
SPIN_LOG = LOGS / "qemu_debian_6.1_spin_lock.log"


@pytest.fixture(autouse=True)
def engine_env(monkeypatch):
    monkeypatch.setenv("LOCKLAB_ENGINE", str(bench_path("opt")))


def experiments(store: Path) -> list[tuple]:
    with sqlite3.connect(store / "locklab.db") as db:
        return db.execute("SELECT id, name FROM experiments").fetchall()


def run_rows(store: Path) -> list[tuple]:
    """The stored runs; none while the store is still being created."""
    try:
        with sqlite3.connect(store / "locklab.db") as db:
            return db.execute("SELECT config_key, repeat, status FROM runs").fetchall()
    except sqlite3.OperationalError:
        return []


# -- command-line values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--lock", "tas", "--lock", "mcs"], "--lock is given twice"),
        (["--lock", "tas", "--noise-cv", "nan"], "'nan' is not a finite number"),
        (["--lock", "tas", "--drift", "nan"], "'nan' is not a finite number"),
        (["--lock", "tas", "--duration", "inf"], "'inf' is not a finite number"),
        (["--lock", "tas", "--seed", "-5"], "seed must be an integer from 0"),
        (["--lock", "tas", "--nwriters", "1-100000000"], "has more than 4096 values"),
        (["--lock", "tas", "--nwriters", "1-1000000000"], "has more than 4096 values"),
    ],
)
def test_bad_values_are_one_line_before_anything_runs(tmp_path, capsys, args, expected):
    code = cli.main(["run", "--store", str(tmp_path / "store"), *args])
    one_error_line(capsys, code, expected)
    assert not (tmp_path / "store").exists()


def test_garbage_campaign_file(tmp_path, capsys):
    path = tmp_path / "garbage.toml"
    path.write_bytes(bytes(range(128, 256)) * 3)
    code = cli.main(["campaign", str(path), "--store", str(tmp_path / "store")])
    one_error_line(capsys, code, "is not UTF-8 text")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('seed = -1\n[[variant]]\nlock = "tas"\n', "seed must be an integer from 0"),
        (
            '[[variant]]\nlock = "tas"\nplugin = "PLUGIN"\n',
            "lock 'tas' is built in, not from example_ticket.so (which adds: example_ticket)",
        ),
    ],
)
def test_campaign_checks_before_creating_the_experiment(tmp_path, capsys, text, expected):
    path = tmp_path / "c.toml"
    path.write_text(text.replace("PLUGIN", str(plugin_path("opt", "example_ticket"))))
    code = cli.main(["campaign", str(path), "--store", str(tmp_path / "store")])
    one_error_line(capsys, code, expected)
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("where", ["under a file", "under /proc"])
def test_store_that_cannot_be_created(tmp_path, capsys, where):
    (tmp_path / "afile").write_text("x")
    store = tmp_path / "afile" / "store" if where == "under a file" else Path("/proc/locklab")
    code = cli.main(["run", "--lock", "tas", "--duration", "0.1", "--store", str(store)])
    one_error_line(capsys, code, "cannot create the results store")


def test_store_in_a_folder_that_is_not_writable(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes any folder; the read-only store test covers reading")
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    proc = locklab("run", "--lock", "tas", "--duration", "0.1", store=folder / "store")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "cannot create the results store" in proc.stderr


# -- a read-only store is still readable ---------------------------------------------------------


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("small") / "store"
    proc = locklab(
        "run", "--lock", "tas,ticket", "--nwriters", "1", "--repeat", "2", "--duration", "0.05",
        "--warmup", "0", "--plain", store=store,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return store


@pytest.mark.parametrize(
    "command",
    [["results"], ["table", "1", "--plain"], ["export", "1"], ["report", "1", "-o", "REPORT"]],
)
def test_reading_commands_never_write_the_store(small_store, tmp_path, command):
    """They open it read-only: the database file is not touched, so a store on read-only
    media, or one the user may not write, can still be read."""
    database = small_store / "locklab.db"
    before = (database.read_bytes(), database.stat().st_mtime_ns)
    command = [arg.replace("REPORT", str(tmp_path / "r.html")) for arg in command]
    os.chmod(database, 0o444)
    try:
        proc = locklab(*command, store=small_store)
    finally:
        os.chmod(database, 0o644)
    assert proc.returncode == 0, proc.stderr
    assert (database.read_bytes(), database.stat().st_mtime_ns) == before
    wal = small_store / "locklab.db-wal"  # SQLite's reader may create it, empty
    assert not wal.exists() or wal.stat().st_size == 0


# -- two resumes at once -------------------------------------------------------------------------


def test_two_resumers_never_measure_the_same_run(tmp_path):
    store = tmp_path / "store"
    args = ["run", "--lock", "tas,ticket", "--nwriters", "1,2", "--repeat", "4",
            "--duration", "0.3", "--warmup", "0", "--store", str(store)]  # fmt: skip
    first = subprocess.Popen([sys.executable, "-m", "locklab.cli", *args], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (store / "locklab.db").exists() and len(run_rows(store)) >= 2:
                break
            time.sleep(0.05)
        first.kill()
    finally:
        first.wait()
    assert 2 <= len(run_rows(store)) < 16
    resume = [sys.executable, "-m", "locklab.cli", "run", "--resume", "1", "--plain",
              "--store", str(store)]  # fmt: skip
    both = [subprocess.Popen(resume, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for _ in range(2)]  # fmt: skip
    for proc in both:
        proc.communicate(timeout=120)
        assert proc.returncode == 0
    rows = [(key, repeat) for key, repeat, status in run_rows(store) if status == "ok"]
    assert len(rows) == 16 and len(set(rows)) == 16


# -- locktorture imports -------------------------------------------------------------------------


def test_import_label_that_would_break_the_store(tmp_path, capsys):
    code = cli.main(["import-locktorture", f"a|b={SPIN_LOG}", "--store", str(tmp_path / "s")])
    one_error_line(capsys, code, "label 'a|b' must be non-empty, without '|'")
    assert not (tmp_path / "s").exists()


def test_import_with_nothing_left_after_the_warm_up(tmp_path, capsys):
    args = ["import-locktorture", str(SPIN_LOG), "--warmup-reports", "1000000000"]
    code = cli.main([*args, "--store", str(tmp_path / "s")])
    one_error_line(capsys, code, "nothing to import")
    assert not (tmp_path / "s").exists()


def test_a_run_seen_twice_is_one_measurement(tmp_path, capsys):
    """A console followed by a dmesg dump of the same boot, and the same log given twice."""
    doubled = tmp_path / "console-and-dmesg.log"
    doubled.write_text(SPIN_LOG.read_text() + "\n# dmesg\n" + SPIN_LOG.read_text())
    store = str(tmp_path / "s")
    args = ["import-locktorture", f"x={doubled}", f"x={SPIN_LOG}", "--store", store, "--plain"]
    assert cli.main(args) == 0
    captured = capsys.readouterr()
    assert "imported 1 runs" in captured.out
    assert captured.err.count("counted once") == 2
    exported = json.loads(locklab("export", "1", "--format", "json", store=Path(store)).stdout)
    assert [cell["n"] for cell in exported["cells"]] == [1]


def test_reader_writer_throughput_says_it_counts_both(tmp_path, capsys):
    store = tmp_path / "s"
    assert cli.main(["import-locktorture", str(LOGS / "rw_lock_console.log"), "--store",
                     str(store), "--plain"]) == 0  # fmt: skip
    assert "throughput: writes + reads per second" in capsys.readouterr().out
    csv = locklab("export", "1", store=store).stdout.splitlines()
    header, row = csv[0].split(","), csv[1].split(",")
    values = dict(zip(header, row, strict=True))
    assert float(values["write_mean"]) + float(values["read_mean"]) == float(values["mean"])


def test_unit_keeps_the_digits_of_a_slow_run(tmp_path, capsys):
    """15 ops/s is 15.00 ops/s, not 0.01 kops/s."""
    slow = tmp_path / "slow.log"
    lines = ["[ 1.0] rtmutex_lock-torture:--- Start of test: nwriters_stress=1 stat_interval=1"]
    lines += [f"[ {2 + i}.0] Writes:  Total: {15 * i}  Max/Min: {15 * i}/{15 * i}   Fail: 0"
              for i in range(5)]  # fmt: skip
    lines.append("[ 7.0] rtmutex_lock-torture:--- End of test: SUCCESS: nwriters_stress=1")
    slow.write_text("\n".join(lines) + "\n")
    assert cli.main(["import-locktorture", str(slow), "--store", str(tmp_path / "s"),
                     "--plain"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "Statistic (ops/s):" in out
    assert any(line.split()[:2] == ["1", "15.00"] for line in out.splitlines())


# -- output ------------------------------------------------------------------------------------

HOSTILE = "x\x1b]0;pwned\x07\x1b[2J\nnext"


def test_labels_and_names_are_escaped_on_output(tmp_path):
    campaign = tmp_path / "c.toml"
    escaped = json.dumps(HOSTILE)  # a TOML basic string is a JSON string here
    campaign.write_text(
        f"name = {escaped}\nrepeat = 1\nduration = 0.05\nwarmup = 0\n"
        f'[[variant]]\nlabel = {escaped}\nlock = "tas"\n'
    )
    store = tmp_path / "store"
    outputs = [locklab("campaign", str(campaign), "--plain", store=store)]
    outputs += [locklab(*command, store=store) for command in (
        ["results"], ["table", "1", "--plain"], ["export", "1"],
        ["export", "1", "--format", "markdown"],
    )]  # fmt: skip
    for proc in outputs:
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout + proc.stderr
    assert "x\\x1b]0;pwned\\x07\\x1b[2J\\nnext" in outputs[2].stdout
    assert not any("\x1b" in path.name for path in store.iterdir())  # the report's file name


# -- tune ------------------------------------------------------------------------------------

TUNE = ["tune", "ticket_fixed_delay", "--param", "spinlock_delay", "--range", "1:200",
        "--nwriters", "1,2", "--repeat", "1", "--duration", "0.02", "--warmup", "0",
        "--grid", "3", "--rounds", "1"]  # fmt: skip


def test_tune_refuses_a_chart_format_before_measuring(tmp_path, capsys):
    code = cli.main([*TUNE, "--store", str(tmp_path / "store"), "-o", str(tmp_path / "t.xyz")])
    one_error_line(capsys, code, "'xyz' is not a chart format")
    assert not (tmp_path / "store").exists()


def test_tune_into_a_directory_says_where_the_chart_is(tmp_path, capsys):
    charts = tmp_path / "charts"
    charts.mkdir()
    assert cli.main([*TUNE, "--store", str(tmp_path / "store"), "-o", str(charts)]) == 0
    shown = capsys.readouterr().out.strip().splitlines()[-1].removeprefix("chart: ")
    assert Path(shown).is_file() and Path(shown).parent == charts.resolve()


def test_tune_resumes_and_ends_with_the_same_choice(tmp_path, capsys):
    """On the fake engine's noiseless tunable the choice is a function of the measurements:
    a tuning interrupted in its second round and run again ends as the uninterrupted one."""
    fake = ROOT / "tests" / "fakes" / "fake_engine.py"
    tune = ["tune", "tuned", "--param", "delay", "--range", "0:1000", "--nwriters", "1,2,4",
            "--repeat", "2", "--duration", "0.01", "--warmup", "0", "--grid", "5",
            "--rounds", "2", "--engine", str(fake), "-o", str(tmp_path / "t.png")]  # fmt: skip
    assert cli.main([*tune, "--store", str(tmp_path / "whole")]) == 0
    uninterrupted = capsys.readouterr().out.splitlines()
    store = tmp_path / "cut"
    assert cli.main([*tune, "--store", str(store)]) == 0
    capsys.readouterr()
    measured = len(run_rows(store))
    with sqlite3.connect(store / "locklab.db") as db:  # an interruption in the second round
        db.execute("DELETE FROM runs WHERE experiment_id = 2 AND id % 3 = 0")
        db.execute("DELETE FROM experiments WHERE id > 2")  # the later rounds never began
        lost = measured - db.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert lost > 0
    assert cli.main([*tune, "--store", str(store)]) == 0
    resumed = capsys.readouterr()
    assert "reused" in resumed.err
    assert resumed.out.splitlines()[1:-1] == uninterrupted[1:-1]  # the table; chart path differs
    assert resumed.out.split(" (")[0] == uninterrupted[0].split(" (")[0]
    assert len(run_rows(store)) == measured  # only what was lost was measured again


def test_tune_interrupted_says_how_to_resume(tmp_path):
    # 16 runs of a second: the interrupt comes after the first is stored, long before the
    # last (at 0.3 s a run, a loaded machine once let the whole tune end first).
    args = [*TUNE[:-8], "--duration", "1", "--warmup", "0", "--grid", "8", "--rounds", "1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "locklab.cli", *args, "--store", str(tmp_path / "s"),
         "-o", str(tmp_path / "t.png")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            (tmp_path / "s" / "locklab.db").exists() and run_rows(tmp_path / "s")
        ):
            time.sleep(0.05)
        proc.send_signal(2)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, f"rows seen: {len(run_rows(tmp_path / 's'))}; {err[-2000:]}"
    assert "run the same command again to resume" in err and "Traceback" not in err


# -- campaigns finish what they started ---------------------------------------------------------


def test_campaign_rerun_resumes_and_writes_the_report(tmp_path):
    campaign = tmp_path / "small.toml"
    campaign.write_text('repeat = 2\nduration = 0.05\nwarmup = 0\n[sweep]\nnwriters = [1, 2]\n'
                        '[[variant]]\nlock = "tas"\n[[variant]]\nlock = "ticket"\n')  # fmt: skip
    store = tmp_path / "store"
    assert locklab("campaign", str(campaign), "--plain", "--no-settle", store=store).returncode == 0
    report = store / "small.html"
    report.unlink()
    with sqlite3.connect(store / "locklab.db") as db:  # as if it had been interrupted
        db.execute("DELETE FROM runs WHERE id > 3")
    again = locklab("campaign", str(campaign), "--plain", "--no-settle", store=store)
    assert again.returncode == 0, again.stderr
    assert "resuming the unfinished experiment #1" in again.stderr
    assert len(experiments(store)) == 1 and len(run_rows(store)) == 8
    assert report.is_file()
    fresh = locklab("campaign", str(campaign), "--plain", "--no-settle", store=store)
    assert fresh.returncode == 0 and len(experiments(store)) == 2  # complete: a new one


# -- kernel options ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--duration", "inf"], "'inf' is not a finite number"),
        (["--duration", "nan"], "'nan' is not a finite number"),
        (["--cpus", "100000"], "--cpus must be from 1 to"),
        (["--nwriters", "100000"], "nwriters: 100000 is out of range"),
        (["--stat-interval", "0"], "--stat-interval must be from 1"),
        (["--warmup-reports", "-1"], "--warmup-reports must not be negative"),
        (["--type", "bogus"], "unknown torture_type 'bogus'"),
    ],
)
def test_kernel_options_checked_before_building_or_booting(
    tmp_path, capsys, monkeypatch, args, expected
):
    image = tmp_path / "vmlinuz-6.1.0-test"
    image.write_bytes(b"not booted")

    def must_not_run(*_args, **_kwargs):
        raise AssertionError("a module build or a boot started before the options were checked")

    monkeypatch.setattr(kernel, "build_modules", must_not_run)
    monkeypatch.setattr(kernel, "boot", must_not_run)
    code = cli.main(["kernel", "--kernel", str(image), *args, "--store", str(tmp_path / "s")])
    one_error_line(capsys, code, expected)


# -- the engine --------------------------------------------------------------------------------


def test_engine_refuses_an_unwritable_json_path_before_measuring(tmp_path):
    proc = subprocess.run(
        [str(bench_path("opt")), "--lock", "tas", "--duration", "60", "--warmup", "0",
         "--json", str(tmp_path / "no" / "such" / "x.json")],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"locklab-bench: error: cannot write the JSON result to {tmp_path}/no/such/x.json: "
        "No such file or directory"
    )


def test_watchdog_counts_from_the_last_acquisition(tmp_path):
    """A lock that deadlocks at once, a 5 s window, a 6 s watchdog: the run ends about 6 s after
    its only acquisition, and its window is the 5 s measured. Before the fix the watchdog counted
    from the window's end, so the run could not end before 5 + 6 = 11 s, and window_s said 11 s.

    The watchdog must outlast the window (else it fires inside the window, and the join the fix
    is about never runs); the long window puts over 4 s between the correct end and the bound, room
    for a loaded machine's stalls, with the two spinners holding both CPUs."""
    window_s, watchdog_s = 5, 6
    bound = window_s + watchdog_s - 0.5  # the bug's earliest end, less a little
    out = tmp_path / "r.json"
    start = time.monotonic()
    proc = subprocess.run(
        [str(bench_path("opt")), "--plugin", str(plugin_path("opt", "never_unlock")),
         "--lock", "never_unlock", "--nwriters", "2", "--duration", str(window_s),
         "--warmup", "0", "--watchdog", str(watchdog_s), "--json", str(out)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - start
    result = json.loads(out.read_text())
    assert proc.returncode == 3 and result["status"] == "watchdog"
    assert window_s - 0.1 <= result["window_s"] < bound
    idle = re.search(r"no acquisition in ([0-9.]+) s", result["error"])
    assert idle, result["error"]
    assert watchdog_s - 0.1 <= float(idle.group(1)) < bound
    assert elapsed < bound
