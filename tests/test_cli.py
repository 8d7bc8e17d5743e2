"""The locklab command: bad input, campaign files, a small real sweep, and resume after kill.

Runs are bounded by tiny durations and few threads; nothing asserts on throughput or time.
"""

import contextlib
import functools
import os
import signal
import sqlite3
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest
from conftest import ROOT, bench_path
from locklab import cli
from locklab.cli import campaign
from locklab.cli.main import build_parser
from locklab.run import lifetime
from locklab.run.engine import Engine

EXAMPLE = ROOT / "examples" / "campaigns" / "spin-backoff.toml"
SWEEP_TIMEOUT_S = 120


@pytest.fixture(autouse=True)
def engine_env(monkeypatch):
    monkeypatch.setenv("LOCKLAB_ENGINE", str(bench_path("opt")))


def locklab(*args: str, store: Path, timeout: float = SWEEP_TIMEOUT_S, env=None):
    """The installed command, as a user runs it (a separate process: no shared state)."""
    return subprocess.run(
        [sys.executable, "-m", "locklab.cli", *args, "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
        env=env or os.environ,
    )


def one_error_line(capsys, code: int, expected: str, status: int = 2):
    captured = capsys.readouterr()
    assert code == status, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("locklab: error: ")
    assert not lines[0].startswith("locklab: error: locklab"), lines[0]  # said once
    assert expected in lines[0], lines[0]
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--lock", "nosuch"], "unknown lock 'nosuch'"),
        (["--lock", "tas,,ticket"], "empty lock name"),
        (["--lock", "tas", "--param", "nosuch=1"], "none of the locks has a param 'nosuch'"),
        (["--lock", "ttas_backoff", "--param", "backoff_max=0"], "out of range"),
        (["--lock", "tas", "--param", "mcs.x=1"], "'mcs' is not one of the locks"),
        (["--lock", "tas", "--param", "novalue"], "expected NAME=VALUE"),
        (["--lock", "tas", "--nwriters", ""], "nwriters: empty value"),
        (["--lock", "tas", "--nwriters", "1,two"], "'two' is not an integer"),
        (["--lock", "tas", "--nwriters", "4-1"], "runs backwards"),
        (["--lock", "tas", "--nwriters", "1,1"], "given twice"),
        (["--lock", "tas", "--nwriters", "0"], "no threads"),
        (["--lock", "tas", "--nwriters", "-2"], "out of range"),
        (["--lock", "tas", "--nreaders", "1"], "not a reader-writer lock"),
        (["--lock", "tas", "--duration", "-1"], "duration: must not be negative"),
        (["--lock", "tas", "--duration", "0"], "duration: must be at least"),
        (["--lock", "tas", "--duration", "soon"], "'soon' is not a number"),
        (["--lock", "tas", "--warmup", "-0.5"], "warmup: must not be negative"),
        (["--lock", "tas", "--repeat", "0"], "repeat must be"),
        (["--lock", "tas", "--baseline", "mcs"], "baseline 'mcs'"),
        (["--lock", "tas", "--pin", "sideways"], "pin must be"),
        (["--lock", "tas", "--alpha", "2"], "--alpha"),
        (["--lock", "tas", "--unknown-option"], "unrecognized arguments"),
        (["--nwriters", "1"], "give --lock"),
        (["--lock", "tas", "--engine", "/nonexistent/locklab-bench"], "engine not found"),
    ],
)
def test_bad_run_input_is_one_line_and_exit_2(tmp_path, capsys, args, expected):
    code = cli.main(["run", "--store", str(tmp_path / "store"), *args])
    one_error_line(capsys, code, expected)
    assert not (tmp_path / "store").exists()  # nothing created for a refused experiment


def test_missing_engine(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("LOCKLAB_ENGINE")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    code = cli.main(["run", "--store", str(tmp_path), "--lock", "tas"])
    one_error_line(capsys, code, "engine not found")


@pytest.mark.parametrize("command", [["table", "1"], ["results"], ["export", "1"]])
def test_missing_store_or_experiment(tmp_path, capsys, command):
    code = cli.main([*command, "--store", str(tmp_path / "none")])
    one_error_line(capsys, code, "no results store")


CAMPAIGNS = {
    "unclosed array": ('name = "x"\nrepeat = [\n', "malformed TOML", "line 2"),
    "two values": ('name = "x"\nrepeat = 3 3\n', "malformed TOML", "line 2, column"),
    "unknown key": ('name = "x"\nrepeats = 3\n', ":2: unknown key 'repeats'", ""),
    "no variant": ('name = "x"\n[sweep]\nnwriters = [1]\n', "no [[variant]]", ""),
    "unknown lock": ('[[variant]]\nlock = "tas"\n\n[[variant]]\nlock = "taz"\n', ":5:", "'taz'"),
    "bad param": (
        '[[variant]]\nlock = "ttas_backoff"\nparams = { backof = 3 }\n',
        ":3: param 'backof'",
        "",
    ),
    "param not int": ('[[variant]]\nlock = "tas"\nparams = { x = 1.5 }\n', ":3:", "integers"),
    "param not a choice": (
        '[[variant]]\nlock = "tas"\nparams = { wait = "sleepy" }\n',
        "'sleepy' is not one of spin, yield, spin-then-park",
        "",
    ),
    "empty sweep": ('[sweep]\nnwriters = []\n[[variant]]\nlock = "tas"\n', ":2:", "non-empty"),
    "bad axis": ('[sweep]\nthreads = [1]\n[[variant]]\nlock = "tas"\n', ":2:", "'threads'"),
    "negative duration": ('duration = -1\n[[variant]]\nlock = "tas"\n', "must not be negative", ""),
    "string repeat": ('repeat = "5"\n[[variant]]\nlock = "tas"\n', ":1: 'repeat'", ""),
    "variant not table": ("variant = 3\n", "array of tables", ""),
    "duplicate label": ('[[variant]]\nlock = "tas"\n[[variant]]\nlock = "tas"\n', "used twice", ""),
}


@pytest.mark.parametrize("case", sorted(CAMPAIGNS))
def test_malformed_campaign_files(tmp_path, capsys, case):
    text, expected, also = CAMPAIGNS[case]
    path = tmp_path / "bad.toml"
    path.write_text(text)
    code = cli.main(["campaign", str(path), "--store", str(tmp_path / "store")])
    line = one_error_line(capsys, code, expected)
    assert also in line
    assert not (tmp_path / "store").exists()


def test_campaign_error_names_the_line(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(EXAMPLE.read_text().replace('lock = "ttas"\n', 'lock = "ttaz"\n'))
    code = cli.main(["campaign", str(path), "--dry-run"])
    captured = capsys.readouterr()
    line_number = 1 + path.read_text().splitlines().index('lock = "ttaz"')
    assert code == 2
    assert captured.err.strip() == (
        f"locklab: error: {path}:{line_number}: unknown lock 'ttaz' (see 'locklab list')"
    )


def test_example_campaign_is_valid(capsys):
    assert cli.main(["campaign", str(EXAMPLE), "--dry-run", "--oversubscribe"]) == 0
    out = capsys.readouterr().out
    assert '"spin-backoff": 4 variants x 3 points x 5 repeats = 60 runs' in out


def test_a_campaign_runs_where_pin_says(capsys):
    """--pin overrides the file's placement for every run; a bad one is one line."""
    assert cli.main(["campaign", str(EXAMPLE), "--dry-run", "--pin", "cores"]) == 0
    runs = [line for line in capsys.readouterr().out.splitlines() if "--lock" in line]
    assert runs and all("--pin cores " in line for line in runs)
    for hosts in ([], ["--hosts", "hosta"]):  # refused before anything is shipped
        assert cli.main(["campaign", str(EXAMPLE), "--dry-run", "--pin", "nosuch", *hosts]) == 2
        assert capsys.readouterr().err.strip() == (
            "locklab: error: --pin must be none, compact, cores, scatter or a CPU list like "
            "0,2,4-7 (got 'nosuch')"
        )
    program = ROOT / "campaigns" / "memcached.toml"
    assert cli.main(["campaign", str(program), "--dry-run", "--pin", "cores"]) == 2
    assert "--pin: a campaign's program places its own threads" in capsys.readouterr().err
    # Interrupted, it says how to resume: with the options that made its plan.
    args = build_parser().parse_args(
        ["campaign", str(EXAMPLE), "--pin", "cores", "--repeat", "2", "--full", "--fresh"]
    )
    assert campaign.campaign_rerun(args) == (
        f"locklab campaign {EXAMPLE} --store {args.store} --repeat=2 --pin=cores --full"
    )


def test_a_campaign_skips_oversubscribed_points_unless_asked(tmp_path, capsys):
    """Pinned to one CPU, two writers are more threads than CPUs: skipped with one line, or
    run when asked and labelled oversubscribed in the table and the verdicts."""
    path = tmp_path / "one-cpu.toml"
    path.write_text('pin = "0"\nrepeat = 2\nduration = 0.05\nwarmup = 0\n[sweep]\n'
                    'nwriters = [1, 2]\n[[variant]]\nlock = "tas"\n[[variant]]\n'
                    'lock = "ticket"\n')  # fmt: skip
    assert cli.main(["campaign", str(path), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "2 variants x 1 points" in captured.out
    assert "locklab: skipped nwriters=2: more threads than the 1 CPUs here" in captured.err
    store = str(tmp_path / "s")
    args = ["campaign", str(path), "--oversubscribe", "--store", store, "--plain"]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "\n2 (oversubscribed) " in out and "oversubscribed at 2 writers" in out
    assert "oversubscribed: 2 writers on 1 CPUs, more threads than CPUs" in out
    path.write_text(path.read_text().replace("nwriters = [1, 2]", "nwriters = [2]"))
    assert cli.main(["campaign", str(path), "--dry-run"]) == 2
    assert "every nwriters point runs more threads than the 1 CPUs" in capsys.readouterr().err


def test_small_sweep_end_to_end(tmp_path):
    store = tmp_path / "store"
    proc = locklab(
        "run", "--lock", "ticket,tas", "--nwriters", "1,2", "--repeat", "2",
        "--duration", "0.1", "--warmup", "0", "--name", "tiny", "--plain", store=store,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('experiment #1 "tiny": 2 runs per cell')
    assert any(line.split()[:3] == ["Lock:", "ticket", "tas"] for line in lines)
    assert any(line.startswith("  tas: ") for line in lines)  # its verdict
    rows = [line.split()[0] for line in lines[lines.index("nwriters:") + 1 :][:2]]
    assert rows == ["1", "2"]
    assert "8/8 runs" in proc.stderr

    listing = locklab("results", store=store)
    assert listing.returncode == 0
    assert "tiny" in listing.stdout and "complete" in listing.stdout

    again = locklab("table", "tiny", "--plain", store=store)
    assert again.returncode == 0 and again.stdout == proc.stdout

    for fmt, marker in (("csv", "mean,std"), ("json", '"runs"'), ("markdown", "| nwriters")):
        exported = locklab("export", "1", "--format", fmt, store=store)
        assert exported.returncode == 0 and marker in exported.stdout

    with sqlite3.connect(store / "locklab.db") as db:
        rows = db.execute("SELECT status, result_json, locklab_version FROM runs").fetchall()
    assert len(rows) == 8 and all(status == "ok" for status, _, _ in rows)
    assert all('"machine"' in result and version for _, result, version in rows)


def test_interleaved_randomised_order(tmp_path):
    store = tmp_path / "store"
    proc = locklab(
        "run", "--lock", "tas,ticket", "--nwriters", "1,2", "--repeat", "3", "--duration",
        "0.05", "--warmup", "0", store=store,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(store / "locklab.db") as db:
        order = db.execute("SELECT config_key, repeat FROM runs ORDER BY id").fetchall()
    # Round by round: every configuration once per repeat before the next repeat starts ...
    assert [repeat for _, repeat in order] == [0] * 4 + [1] * 4 + [2] * 4
    # ... and not in the same order every round.
    rounds = [[key for key, _ in order[i : i + 4]] for i in (0, 4, 8)]
    assert len({tuple(r) for r in rounds}) > 1


def test_broken_lock_fails_the_sweep_but_keeps_the_others(tmp_path):
    store = tmp_path / "store"
    plugin = ROOT / "build" / "opt" / "plugins" / "broken_tts.so"
    proc = locklab(
        "run", "--plugin", str(plugin), "--lock", "ticket,broken_tts", "--nwriters", "4",
        "--repeat", "3", "--duration", "1", "--warmup", "0", "--plain", store=store,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("locklab: error:")]
    assert len(errors) == 1 and "broken_tts: correctness violation" in errors[0]
    assert "ticket" in proc.stdout  # the table of what did finish


def wait_for_runs(db_path: Path, count: int, deadline_s: float) -> int:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if db_path.exists():
            try:
                with sqlite3.connect(db_path) as db:
                    done = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
                if done >= count:
                    return done
            except sqlite3.OperationalError:
                pass  # tables not created yet
        time.sleep(0.05)
    return -1


def children(pid: int) -> list[int]:
    """Live child processes of ``pid`` (Linux /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        found += [int(child) for child in text.split()]
    return found


def running(pid: int) -> bool:
    """Whether ``pid`` still runs: a zombie waiting for its new parent to reap it does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_resume_after_killed_sweep(tmp_path, how):
    store = tmp_path / "store"
    args = [
        "run", "--lock", "tas,ticket", "--nwriters", "1,2", "--repeat", "3",
        "--duration", "0.6", "--warmup", "0", "--store", str(store),
    ]  # fmt: skip
    sweep = subprocess.Popen(
        [sys.executable, "-m", "locklab.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert wait_for_runs(store / "locklab.db", 3, deadline_s=60) >= 3
        sweep.send_signal(how)
        _, err = sweep.communicate(timeout=30)
    finally:
        sweep.kill()
        sweep.wait()
    with sqlite3.connect(store / "locklab.db") as db:
        kept = db.execute("SELECT config_key, repeat FROM runs WHERE status='ok'").fetchall()
    assert 3 <= len(kept) < 12
    if how == signal.SIGINT:
        assert sweep.returncode == 130
        assert "--resume 1" in err.strip().splitlines()[-1]

    listing = locklab("results", store=store)
    assert f"{len(kept)}/12" in listing.stdout and "missing" in listing.stdout

    resumed = locklab("run", "--resume", "1", "--plain", store=store)
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(store / "locklab.db") as db:
        done = db.execute("SELECT config_key, repeat FROM runs WHERE status='ok'").fetchall()
    assert len(done) == 12 and len(set(done)) == 12  # each (config, repeat) exactly once
    assert set(kept) <= set(done)
    assert "12/12" in locklab("results", store=store).stdout


def left_running_after_kill(args: list[str], store: Path, runs) -> list[int]:
    """Start locklab, SIGKILL it as soon as a child of its passes ``runs(argv)``, and return
    those children still running 5 s later (killed then, so none is left spinning)."""
    sweep = subprocess.Popen(
        [sys.executable, "-m", "locklab.cli", args[0], "--store", str(store), *args[1:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 20
        while not (found := [pid for pid in children(sweep.pid) if runs(argv(pid))]):
            assert time.monotonic() < deadline, f"locklab {args[0]} never started its child"
            time.sleep(0.05)
    finally:
        sweep.kill()
        sweep.wait()
    deadline = time.monotonic() + 5
    while any(running(pid) for pid in found) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [pid for pid in found if running(pid)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive


def argv(pid: int) -> list[str]:
    """The command line ``pid`` runs ([] once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def test_engine_dies_with_a_killed_locklab(tmp_path):
    """A 30-second run: if SIGKILL of locklab left its engine running, it would still be there
    long after the check gives up. The engine's measuring run, once it runs (not its catalogue
    listing, and not the child before its exec: the next test covers that one)."""
    args = ["run", "--lock", "tas", "--repeat", "1", "--duration", "30", "--warmup", "0"]

    def measuring(command: list[str]) -> bool:
        return command[0].endswith("locklab-bench") and "--duration" in command

    assert not left_running_after_kill(args, tmp_path, measuring)


def test_engine_never_starts_once_locklab_is_gone():
    """The other half of the race above: locklab killed after the fork but before the child asked
    for the death signal. The child, already handed to another parent, must leave, not run."""
    not_the_parent = os.getppid()
    done = subprocess.run(
        ["sleep", "30"],
        preexec_fn=functools.partial(lifetime._die_with, not_the_parent),
        timeout=10,
        check=False,
    )
    assert done.returncode == lifetime.EXIT_PARENT_GONE


def test_a_stopped_locklab_leaves_no_child_in_its_process_group():
    """Stopped inside Popen, after the fork and before the exec, Python drops the child's handle
    (CI saw a check's engine, killed by its death signal, still a zombie of the group after
    locklab had exited). Here one such child runs on, one has ended unreaped, and one has a
    session of its own: end_children() ends and reaps the first two (before the script's exit,
    where Popen's finaliser would reap them) and leaves the third to its owner."""
    script = """if True:
        import subprocess, time
        from pathlib import Path
        from locklab.run import lifetime
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        running = subprocess.Popen(["sleep", "60"], **quiet)
        ended = subprocess.Popen(["true"], **quiet)
        own_session = subprocess.Popen(["sleep", "60"], start_new_session=True, **quiet)
        while Path(f"/proc/{ended.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)
        lifetime.end_children()
        gone = [not Path(f"/proc/{child.pid}").exists() for child in (running, ended)]
        print(own_session.pid, *gone, flush=True)
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=ROOT, start_new_session=True,
    )  # fmt: skip
    out = ""
    try:
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        own_session, *gone = out.split()
        assert gone == ["True", "True"], "a child was left running or unreaped"
        with pytest.raises(ProcessLookupError):
            os.killpg(proc.pid, 0)
        assert running(int(own_session))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if out.split():
            os.kill(int(out.split()[0]), signal.SIGKILL)


def test_an_interrupt_python_lost_still_stops_the_next_run(monkeypatch):
    """Ctrl-C landing in a hook that cannot raise (CI saw it in logging's after-fork hook, as a
    tune started a run) is printed as "Exception ignored" and lost: the tune ran to its end.
    A weak reference's callback cannot raise either; the interrupt lost there must still end
    the next run. Without the remembered signal, this run would finish and return."""
    lost: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda hook: lost.append(hook.exc_type))

    def interrupt_where_it_cannot_raise(_: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # a backward jump, where Python runs the handler
            pass

    class Anything:
        pass

    with lifetime.stopped_by_signals():
        anything = Anything()
        watch = weakref.ref(anything, interrupt_where_it_cannot_raise)
        del anything
        assert watch() is None and lost == [KeyboardInterrupt]
        with pytest.raises(KeyboardInterrupt):
            Engine(bench_path("opt")).run(["--lock", "tas", "--duration", "0.01"], timeout_s=30)
    lifetime.raise_if_stopped()  # forgotten on the way out: a later run in this process runs


def test_resume_refuses_a_new_plan(tmp_path, capsys):
    code = cli.main(["run", "--store", str(tmp_path), "--resume", "1", "--lock", "tas"])
    one_error_line(capsys, code, "--resume runs the stored plan")


def test_merge_and_compare_across_stores(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    for store in (here, there):
        proc = locklab(
            "run", "--lock", "tas,ticket", "--nwriters", "1", "--repeat", "2",
            "--duration", "0.05", "--warmup", "0", store=store,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    merged = locklab("merge", str(there), store=here)
    assert merged.returncode == 0 and merged.stdout.startswith('imported #2 "tas-ticket"')
    assert "already here" in locklab("merge", str(there), store=here).stdout
    compared = locklab("compare", "1", "2", "--plain", store=here)
    assert compared.returncode == 0, compared.stderr
    assert compared.stdout.startswith("#2 compared with #1")
    assert "tas #1" in compared.stdout and "ticket #2" in compared.stdout


@pytest.mark.parametrize("path", sorted((ROOT / "campaigns").glob("*.toml")), ids=lambda p: p.stem)
def test_seed_campaigns_are_valid(path, capsys):
    assert cli.main(["campaign", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    # A simulated plan's host time is known only from earlier runs (run/estimate.py).
    assert " runs, about " in out or " runs, host time from the store's earlier runs" in out


def test_workloads_pair_axes_instead_of_crossing_them(tmp_path, capsys):
    path = tmp_path / "w.toml"
    path.write_text(
        '[sweep]\nnwriters = [1, 2]\n[[workload]]\nname = "noload"\nhold_ns = 0\ngap_ns = 0\n'
        '[[workload]]\nname = "load"\nhold_ns = 2000\ngap_ns = 2000\n[[variant]]\nlock = "tas"\n'
    )
    assert cli.main(["campaign", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 variants x 4 points" in out  # 2 workloads x 2 writer counts, not 2 x 2 x 2
    assert "--hold-ns 2000 --gap-ns 2000" in out and "--hold-ns 2000 --gap-ns 0" not in out


# What a `locklab run` must not pay for at start-up: plotting, and numpy and scipy (which the
# statistics no longer need; Mann-Whitney and the figures import them when asked for).
HEAVY_MODULES = ("numpy", "scipy", "matplotlib", "plotly")


def test_run_imports_no_plotting_numpy_or_scipy(tmp_path):
    program = (
        "import sys\n"
        "from locklab.cli.main import main\n"
        "status = main(sys.argv[1:])\n"
        f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY_MODULES!r}))\n"
        "print('heavy modules:', ','.join(heavy) or 'none')\n"
        "sys.exit(status)\n"
    )
    proc = subprocess.run(
        [
            sys.executable, "-c", program, "run", "--lock", "tas", "--nwriters", "1",
            "--duration", "0.05", "--warmup", "0", "--repeat", "2",
            "--store", str(tmp_path / "store"),
        ],
        capture_output=True, text=True, timeout=SWEEP_TIMEOUT_S, check=False, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "tas" in proc.stdout  # the table was printed: statistics ran
    assert proc.stdout.strip().splitlines()[-1] == "heavy modules: none"


def test_help_groups_every_command_with_an_example_that_parses(capsys):
    """`locklab --help` lists every command once, in a group, with an example; each example
    parses as the command line it claims to be, and each command's help shows its example."""
    import shlex

    from locklab.cli.main import GROUPS, build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    grouped = [name for _, group in GROUPS for name, _ in group]
    assert sorted(grouped) == sorted(commands) and len(set(grouped)) == len(grouped)
    for _, group in GROUPS:
        for name, example in group:
            args = shlex.split(example)[1:]
            if args[:2] == ["kernel", "build"]:
                args = ["kernel-build", *args[2:]]
            assert parser.parse_args(args).command == name, example
            assert f"example: {example}" in " ".join(commands[name].format_help().split())
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert out.count("e.g. locklab ") == len(grouped)
    assert all(f"  {group}:" in out for group, _ in GROUPS)


def test_list_fits_100_columns_and_shows_one_lock(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "kernel:rtmutex" in out and "ticket_fixed_delay" in out
    assert cli.main(["list", "rtmutex_k3"]) == 0
    one = capsys.readouterr().out
    assert one.startswith("rtmutex_k3: ") and "source:   Linux v6.2-rc6 kernel/locking" in one
    assert cli.main(["list", "ticket_fixed_delay"]) == 0
    assert "--param spinlock_delay=" in capsys.readouterr().out
    assert cli.main(["list", "kernel:rwsem"]) == 0
    assert "--type rwsem_lock" in capsys.readouterr().out
    assert cli.main(["list", "nosuch"]) == 2
    assert capsys.readouterr().err == "locklab: error: unknown lock 'nosuch' (see 'locklab list')\n"


def test_no_checks_is_said_in_the_table_and_refused_with_a_hold(tmp_path, capsys):
    store = str(tmp_path / "s")
    args = ["run", "--lock", "ticket", "--nwriters", "1", "--repeat", "1", "--duration", "0.05",
            "--warmup", "0", "--no-checks", "--store", store, "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    assert "unchecked (--no-checks)" in capsys.readouterr().out.splitlines()[0]
    assert cli.main([*args, "--hold-ns", "100"]) == 2
    err = capsys.readouterr().err
    assert (
        err == "locklab: error: --no-checks measures the bare loop: writers only, without hold_ns\n"
    )
