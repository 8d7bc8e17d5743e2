"""`locklab run --sim` with locks of one's own, at the smallest scale: a lock for a fixed number
of threads is checked at the sweep's own point, and a failed simulated run prints the command
that replays it alone, with the same violation and the same counts."""

import hashlib
import json
import shlex
import shutil
import sqlite3
import subprocess
from pathlib import Path

from conftest import ROOT, plugin_path
from locklab.run.replay import build_identity

LOCKLAB = ROOT / ".venv" / "bin" / "locklab"
# A small machine (16 CPUs) and a tiny virtual window: a run takes well under a second.
TINY = ["--sim", "mach1", "--duration", "0.001", "--warmup", "0.0001"]


def locklab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LOCKLAB), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def test_a_two_thread_lock_runs_at_its_own_point_and_only_there(tmp_path: Path):
    """Peterson's lock refuses every thread count but 2: the pre-check tries the sweep's first
    point, so 2 writers run, and 3 are refused by the lock's own init, naming the point."""
    plugin = ["--plugin", str(plugin_path("sim", "peterson2")), "--lock", "peterson2"]
    store = ["--store", str(tmp_path / "store")]
    two = locklab("run", *TINY, *plugin, "--nwriters", "2", "--repeat", "1", *store)
    assert two.returncode == 0, two.stderr
    assert "peterson2" in two.stdout and "failed" not in two.stderr
    bare = locklab("run", *TINY, *plugin, "--nwriters", "2", "--repeat", "1", "--no-checks",
                   *store)  # fmt: skip
    assert bare.returncode == 0, bare.stderr  # the bare loop's point, as the sweep runs it
    three = locklab("run", *TINY, *plugin, "--nwriters", "3", "--repeat", "1", *store)
    assert three.returncode == 2, three.stderr
    assert three.stderr.strip().splitlines() == [
        "locklab: error: --sim: peterson2 at nwriters=3: lock 'peterson2' failed to "
        "initialise: Invalid argument"
    ]


def replay_line(stderr: str) -> list[str]:
    """The printed replay command, as argv, with this checkout's locklab for `locklab`."""
    prefix = "locklab: replay it alone: "
    lines = [line.removeprefix(prefix) for line in stderr.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, stderr
    argv = shlex.split(lines[0])
    assert argv[:2] == ["locklab", "run"], argv
    return [str(LOCKLAB), *argv[1:]]


def stored_failures(store: Path) -> list[tuple]:
    """Each stored failed run's experiment, status, error, what made it, and every count it
    computed but the host's own time."""
    with sqlite3.connect(store / "locklab.db") as db:
        rows = db.execute(
            "SELECT experiment_id, status, error, result_json FROM runs WHERE status != 'ok' "
            "ORDER BY id"
        ).fetchall()
    failures = []
    for experiment, status, error, text in rows:
        result = json.loads(text)
        result["simulation"].pop("host_s")
        counts = (result["violations"], result["total_acquisitions"], result["simulation"])
        failures.append((experiment, status, error, result["replay"], counts))
    return failures


def test_a_failed_simulated_run_replays_alone_from_the_command_it_prints(tmp_path: Path):
    """A broken lock under --sim fails; the one `locklab run` command it prints runs that run
    alone, with its engine seed (not the first repeat's: --seed 7), and stores the same
    violation and the same counts, with the seed and the build it ran with; replayed with
    another build (the plugin's file changed), it says so in one line."""
    plugin = tmp_path / "broken_tts.so"
    shutil.copyfile(plugin_path("sim", "broken_tts"), plugin)
    store = tmp_path / "store"
    first = locklab("run", *TINY, "--plugin", str(plugin), "--lock", "ticket,broken_tts",
                    "--nwriters", "2,4", "--repeat", "2", "--seed", "7",
                    "--store", str(store))  # fmt: skip
    assert first.returncode == 1, first.stderr
    replay = replay_line(first.stderr)
    assert "--nwriters" in replay and "ticket" not in replay  # the failed run alone
    again = subprocess.run(replay, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 1, again.stderr
    assert "another build" not in again.stderr
    original, replayed = stored_failures(store)
    assert original[0] == 1 and replayed[0] == 2  # a new experiment in the same store
    assert original[1:] == replayed[1:]  # the same violation, the same counts, the same build
    seed = original[3]["seed"]
    assert seed == 7001 and replay[replay.index("--engine-seed") + 1] == str(seed)
    engine = hashlib.sha256((ROOT / ".venv" / "bin" / "locklab-sim").read_bytes()).hexdigest()
    assert original[3]["engine_sha256"] == engine
    assert original[3]["plugin_sha256"] == hashlib.sha256(plugin.read_bytes()).hexdigest()
    with plugin.open("ab") as file:  # another build of the plugin: its code as it was
        file.write(b"\0")
    rebuilt = subprocess.run(replay, capture_output=True, text=True, timeout=120, check=False)
    notes = [line for line in rebuilt.stderr.splitlines() if "another build" in line]
    assert len(notes) == 1 and f"the plugin {plugin} is " in notes[0], rebuilt.stderr
    assert stored_failures(store)[2][2] == original[2]  # the code did not change, nor the run


def test_a_replay_option_given_wrongly_is_one_line(tmp_path: Path):
    store = ["--store", str(tmp_path / "store")]
    twice = locklab("run", "--sim", "mach1", "--lock", "ticket", "--repeat", "2",
                    "--engine-seed", "5", *store)  # fmt: skip
    assert twice.returncode == 2
    assert twice.stderr.strip() == (
        "locklab: error: --engine-seed runs each cell once, with that seed: give --repeat 1"
    )
    negative = locklab("run", *TINY, "--lock", "ticket", "--repeat", "1", "--engine-seed", "-3",
                       *store)  # fmt: skip
    assert negative.returncode == 2 and negative.stderr.strip() == (
        "locklab: error: engine seed must be an integer from 0 to 18446744073709551615 (got -3)"
    )  # the spec's own check, before the simulator is tried
    garbled = locklab("run", *TINY, "--lock", "ticket", "--repeat", "1", "--same-build", "xyz",
                      *store)  # fmt: skip
    assert garbled.returncode == 2 and garbled.stderr.count("\n") == 1, garbled.stderr
    assert garbled.stderr.startswith("locklab: error: --same-build: give the engine's sha256")


def test_a_kernel_lock_replays_from_its_built_plugin(tmp_path: Path):
    """The deliberately broken rtmutex patch crashes its simulated run; the replay command
    names the kernel: lock's built plugin, which the replay runs as it is (not the tree's
    stock lock compiled again), and crashes the same way on the same build."""
    broken = ROOT / "campaigns" / "patches" / "broken" / (
        "0001-rtmutex-take-an-owned-lock-now-and-then.patch")  # fmt: skip
    store = tmp_path / "store"
    first = locklab("run", *TINY, "--lock", "kernel:rtmutex", "--patch", f"broken={broken}",
                    "--nwriters", "4", "--repeat", "1", "--store", str(store),
                    timeout=600)  # fmt: skip
    assert first.returncode == 1, first.stderr[-2000:]
    again = subprocess.run(replay_line(first.stderr), capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert again.returncode == 1, again.stderr[-2000:]
    assert "another build" not in again.stderr
    assert "with 0001-rtmutex-take-an-owned-lock-now-and-then.patch (sim)" in again.stdout
    with sqlite3.connect(store / "locklab.db") as db:
        rows = db.execute("SELECT status, error, result_json FROM runs ORDER BY id").fetchall()
    assert len(rows) == 2 and rows[0][:2] == rows[1][:2] and "SIGSEGV" in rows[0][1]
    assert json.loads(rows[0][2])["replay"] == json.loads(rows[1][2])["replay"]


def test_a_build_gone_since_its_run_leaves_the_run_kept(tmp_path: Path):
    """A binary or plugin removed while its run went on (a rebuild) is no reason to lose the
    run: its identity says None, and its replay command then names no build."""
    gone = tmp_path / "gone"
    command = [str(gone / "locklab-sim"), "--plugin", str(gone / "x.so"), "--seed", "5"]
    assert build_identity(command) == {"engine_sha256": None, "seed": 5, "plugin_sha256": None}
