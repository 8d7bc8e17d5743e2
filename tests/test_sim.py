"""The simulator (native/sim, docs/simulator.md) at the smallest scale: a few virtual CPUs and a
few thousand acquisitions. What must hold: the same command gives the same numbers, a broken
lock fails and names the seed that replays it, a deadlock ends on the virtual watchdog, spinners
park without changing what they measure, and bad machines or locks are one line."""

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from conftest import BUILD, ROOT, plugin_path
from locklab.errors import LocklabError
from locklab.model.campaign import load_campaign
from locklab.model.machine_profile import find_profile, load_profile, profile_names
from locklab.model.spec import SIM_DURATION_S, SIM_WARMUP_S
from locklab.run.simulator import cpus_of_quota, simulated_runs_at_once

SIM = BUILD / "sim" / "locklab-sim"
LOCKLAB = ROOT / ".venv" / "bin" / "locklab"


def locklab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command line, as a user runs it."""
    return subprocess.run([str(LOCKLAB), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


# Two sockets of two cores, costs that make the distances visible.
TINY_PROFILE = """
name = "tiny-2s"
summary = "a test machine: 2 sockets x 2 cores"
arch = "x86_64"
ghz = 2.0
[topology]
sockets = 2
nodes_per_socket = 1
cores_per_socket = 2
threads_per_core = 1
cores_per_llc = 2
[costs]
hit = 4
atomic = 20
smt_sibling = 10
same_llc = 40
same_socket = 40
other_socket = [200]
memory_local = 150
memory_same_socket = 150
memory_remote = [250]
cpu_relax = 10
futex_wait = 2000
futex_wake = 1500
context_switch = 4000
[sources]
hit = "estimate: test"
atomic = "estimate: test"
smt_sibling = "estimate: test"
same_llc = "estimate: test"
same_socket = "estimate: test"
other_socket = "estimate: test"
memory_local = "estimate: test"
memory_same_socket = "estimate: test"
memory_remote = "estimate: test"
cpu_relax = "estimate: test"
futex_wait = "estimate: test"
futex_wake = "estimate: test"
context_switch = "estimate: test"
"""


def tiny_machine(folder: Path) -> Path:
    """The tiny profile written to `folder`, as the simulator reads it (a flat file)."""
    profile = folder / "tiny-2s.toml"
    profile.write_text(TINY_PROFILE)
    flat = folder / "tiny-2s.machine"
    flat.write_text(load_profile(profile).flat_text())
    return flat


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> Path:
    return tiny_machine(tmp_path_factory.mktemp("sim"))


def simulate(machine: Path, args: list[str], env: dict[str, str] | None = None):
    if not SIM.exists():
        pytest.fail(f"{SIM} is missing: run 'make build' (make test does)")
    proc = subprocess.run(
        [str(SIM), *args, "--json", "-"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "LOCKLAB_SIM_MACHINE": str(machine), **(env or {})},
    )  # fmt: skip
    result = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc, result


def figures(result: dict) -> tuple:
    """Everything a simulated run computes, less the host's own time."""
    sim = dict(result["simulation"])
    sim.pop("host_s")
    return (result["throughput_ops_per_s"], result["total_acquisitions"], json.dumps(sim))


RUN = ["--nwriters", "4", "--duration", "0.0005", "--warmup", "0.0001", "--pin", "scatter"]


def test_the_same_command_gives_the_same_numbers(machine):
    first, a = simulate(machine, ["--lock", "ticket", *RUN])
    second, b = simulate(machine, ["--lock", "ticket", *RUN])
    assert first.returncode == 0 and second.returncode == 0, first.stderr
    assert figures(a) == figures(b)
    assert a["machine"]["simulated"] is True
    assert a["machine"]["hostname"] == "tiny-2s"
    assert a["total_acquisitions"] > 100


def test_transfers_are_counted_by_distance(machine):
    proc, result = simulate(machine, ["--lock", "ticket", *RUN])
    assert proc.returncode == 0, proc.stderr
    per = result["simulation"]["transfers_per_acquisition"]
    # Four writers spread over two sockets: the ticket's line crosses sockets at hand-overs.
    assert per["other_socket"] > 0.5
    assert per["total"] == pytest.approx(sum(v for k, v in per.items() if k != "total"))
    assert result["handoffs"]["total"] > 0


@pytest.mark.parametrize("lock", ["ticket", "qspinlock"])
def test_parked_spinners_measure_as_every_iteration_run(machine, lock):
    """Parking a spinner until its line is taken, against running every iteration
    (LOCKLAB_SIM_SPIN=exact), over seeds 1 to 4: a queue of four writers on two sockets settles
    into one of a few orders of arrival (see the test below), in either mode; within one order,
    parked and exact agree within 5%."""
    by_order: dict[tuple[str, float], list[float]] = {}
    for seed in range(1, 5):
        for spin in ("park", "exact"):
            proc, result = simulate(machine, ["--lock", lock, *RUN, "--seed", str(seed)],
                                    {"LOCKLAB_SIM_SPIN": spin})  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            parks = result["simulation"]["spin_parks_per_acquisition"]
            assert parks > 0.3 if spin == "park" else parks == 0  # parking is in play
            order = round(result["handoffs"]["same_node_fraction"], 1)
            by_order.setdefault((spin, order), []).append(result["throughput_ops_per_s"])
    common = {order for spin, order in by_order if spin == "park"} & {
        order for spin, order in by_order if spin == "exact"
    }
    assert common, by_order
    for order in common:
        parked = sum(by_order[("park", order)]) / len(by_order[("park", order)])
        exact = sum(by_order[("exact", order)]) / len(by_order[("exact", order)])
        assert 0.95 < parked / exact < 1.05, (order, parked, exact)


@pytest.mark.parametrize("lock", ["mutex", "rwsem"])
def test_a_queue_waiter_sees_a_hand_over_from_its_past(machine, lock):
    """A line no other CPU has touched yet was a hit with no ordering: an OSQ waiter spinning
    on its node's first use ran its whole 1 ms budget ahead of the hand-over that, earlier in
    virtual time, was that node's first touch from elsewhere. One writer kept the lock
    meanwhile (3,739 acquisitions against 168 and 104). Each must get its share now (on CPUs
    0 to 2, where the bug was found; unpinned, fork balancing puts one writer alone on a
    socket, which a mutex's hand-overs then favour less)."""
    _, result = simulate(machine, ["--lock", lock, "--nwriters", "3", "--gap-ns", "160",
                                   "--duration", "0.001", "--warmup", "0.0002",
                                   "--pin", "0,1,2"])  # fmt: skip
    acquisitions = [thread["acquisitions"] for thread in result["threads"]]
    assert max(acquisitions) <= 1.25 * min(acquisitions), acquisitions


def test_seeds_reach_different_interleavings(machine):
    """A repeat is another seed: ties break otherwise, and an MCS queue of four writers on two
    sockets settles into different orders of arrival (seeds 1 to 5 here: 0%, 43% or 50% of
    its hand-overs on the same node), which the table shows as the cell's spread."""
    same_node = set()
    for seed in range(1, 6):
        proc, result = simulate(machine, ["--lock", "mcs", *RUN, "--seed", str(seed)])
        assert proc.returncode == 0, proc.stderr
        same_node.add(round(result["handoffs"]["same_node_fraction"], 2))
    assert len(same_node) >= 2, same_node


def test_a_broken_lock_fails_and_names_its_replay(machine):
    args = ["--plugin", str(plugin_path("sim", "broken_tts")), "--lock", "broken_tts", *RUN]
    first, result = simulate(machine, [*args, "--seed", "7"])
    assert first.returncode == 1, first.stderr
    assert result["violations"]["overlapping_writers"] > 0
    assert "with --seed 7 on tiny-2s replays this interleaving exactly" in first.stderr
    second, again = simulate(machine, [*args, "--seed", "7"])
    assert again["violations"] == result["violations"]


def test_a_deadlock_ends_on_the_virtual_watchdog(machine):
    args = ["--plugin", str(plugin_path("sim", "never_unlock")), "--lock", "never_unlock"]
    proc, result = simulate(machine, [*args, "--nwriters", "1", "--watchdog", "0.1"])
    assert proc.returncode == 3, proc.stderr
    assert result["status"] == "watchdog"
    assert re.search(r"thread 1 on CPU \d+:", proc.stderr)  # where each virtual CPU was


def test_concurrency_kit_runs_on_its_compiler_builtins(machine):
    """ck's locks, built on its builtins for the simulator, hand over and count transfers."""
    for lock in ("ck_ticket", "ck_mcs", "ck_fas"):
        proc, result = simulate(machine, ["--lock", lock, *RUN])
        assert proc.returncode == 0, proc.stderr
        assert result["handoffs"]["total"] > 0
        assert result["simulation"]["transfers_per_acquisition"]["total"] > 1


TRANSFER = re.compile(
    r"^locklab-sim: transfer (?P<ns>[0-9.]+) ns cpu[0-3] line 0x[0-9a-f]+ (load|store) "
    r"(same_llc|other_socket|memory|smt_sibling|same_socket) (?P<code>\S+)"
)


def test_the_costliest_lines_and_each_transfer_are_named(machine):
    _, whole = simulate(machine, ["--lock", "ticket", *RUN])
    # One virtual microsecond inside the measured half millisecond, which ends the run.
    middle_us = whole["simulation"]["virtual_s"] * 1e6 - 250
    window = f"{middle_us}:{middle_us + 1}"
    watch = {"LOCKLAB_SIM_LINES": "2", "LOCKLAB_SIM_TRACE": window}
    proc, result = simulate(machine, ["--lock", "ticket", *RUN], env=watch)
    assert proc.returncode == 0, proc.stderr
    assert figures(result) == figures(whole)  # watching changes nothing
    assert "the 2 lines with the most transfers" in proc.stderr
    assert "last store or RMW that missed: " in proc.stderr
    transfers = [m for line in proc.stderr.splitlines() if (m := TRANSFER.match(line))]
    assert transfers, proc.stderr
    assert all(middle_us * 1000 <= float(m["ns"]) < (middle_us + 1) * 1000 for m in transfers)
    assert any(m["code"].startswith(str(SIM)) for m in transfers)


@pytest.mark.parametrize("window", ["2:1", "x", "1:2:3", "-1:2"])
def test_a_bad_trace_window_is_one_line(machine, window):
    proc, _ = simulate(machine, ["--lock", "ticket", *RUN], env={"LOCKLAB_SIM_TRACE": window})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"locklab-sim: error: LOCKLAB_SIM_TRACE={window}: give FROM:TO, virtual microseconds "
        "since the program started, FROM below TO (e.g. 28000:28002)"
    ]


def test_locks_it_cannot_run_are_one_line(machine):
    proc, _ = simulate(machine, ["--lock", "pthread_mutex", "--nwriters", "1"])
    assert proc.returncode == 2
    assert "pthread_mutex cannot run in the simulator" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_plugin_built_without_the_instrumentation_is_one_line(machine):
    """Given by hand, a plugin of the measured build would run unseen by the model, and a
    thread spinning in it would never yield: the run would hang. It is refused at load."""
    plugin = plugin_path("opt", "example_ticket")
    proc, _ = simulate(machine, ["--plugin", str(plugin), "--lock", "example_ticket",
                                 "--nwriters", "2"])  # fmt: skip
    assert proc.returncode == 2
    assert "built without the simulator's instrumentation" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_every_profile_loads_with_a_source_for_each_cost():
    names = profile_names()
    for name in ("taishan200-96c", "gigabyte-96c", "x5-4", "mach1", "mach2", "mach3"):
        assert name in names
    for name in names:
        profile = find_profile(name)
        assert profile.cpus == len(profile.cpu_table())
        assert profile.flat_text().count("\ncpu ") == profile.cpus


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('hit = "estimate: test"', "no source for hit"),
        ("other_socket = [200]", "other_socket is missing"),
        ("cores_per_llc = 2", "cores_per_llc is missing"),
        ("sockets = 2", "sockets is missing"),
    ],
)
def test_a_malformed_profile_is_one_line(tmp_path, change, message):
    path = tmp_path / "bad.toml"
    path.write_text(TINY_PROFILE.replace(change, ""))
    with pytest.raises(LocklabError, match=message):
        load_profile(path)


def test_run_sim_prints_a_simulated_table(tmp_path, machine):
    profile = tmp_path / "tiny-2s.toml"
    profile.write_text(TINY_PROFILE)
    proc = locklab(
        "run", "--sim", str(profile), "--lock", "ticket,mcs", "--nwriters", "1,4",
        "--repeat", "2", "--duration", "0.001", "--warmup", "0.0001",
        "--store", str(tmp_path / "store"),
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "simulated: tiny-2s (a test machine: 2 sockets x 2 cores)" in proc.stdout
    assert "simulated machine: virtual time" in proc.stdout
    assert "mcs" in proc.stdout and "nwriters" in proc.stdout


def stored_rows(store: Path) -> list[tuple]:
    """Each stored run's key, repeat, status and throughput, in the order they were stored."""
    with sqlite3.connect(store / "locklab.db") as db:
        return db.execute(
            "SELECT config_key, repeat, status, throughput_ops_per_s FROM runs ORDER BY id"
        ).fetchall()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
@pytest.mark.parametrize("repeat", ["3", "auto"])
def test_a_simulated_sweep_runs_one_per_cpu_and_stores_what_one_at_a_time_would(tmp_path, repeat):
    """Side by side or one at a time (taskset -c 0), the same runs stored in the same order:
    a broken lock's failure skips the same runs, --repeat auto settles the same cells."""
    args = ["run", "--sim", "mach1", "--plugin", str(plugin_path("sim", "broken_tts")),
            "--lock", "ticket,mcs,broken_tts", "--nwriters", "1,4", "--repeat", repeat,
            "--min-repeat", "2", "--max-repeat", "3", "--duration", "0.001",
            "--warmup", "0.0001", "--pin", "scatter"]  # fmt: skip
    alone = subprocess.run(["taskset", "-c", "0", str(LOCKLAB), *args, "--store",
                            str(tmp_path / "alone")],
                           capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    beside = locklab(*args, "--store", str(tmp_path / "beside"))
    assert alone.returncode == 1 and beside.returncode == 1, alone.stderr + beside.stderr
    failure = "broken_tts: correctness violation at broken_tts nwriters=4"
    assert alone.stderr.count(failure) == 1 and beside.stderr.count(failure) == 1
    rows = stored_rows(tmp_path / "beside")
    assert rows == stored_rows(tmp_path / "alone")
    assert sum(key.startswith("ticket") for key, *_ in rows) >= 4
    broken = [status for key, _, status, _ in rows if key.startswith("broken")]
    assert broken[-1] == "violation" and "violation" not in broken[:-1]  # then skipped


@pytest.mark.parametrize(
    ("text", "cpus"),
    [("max 100000\n", None), ("-1\n 100000\n", None), ("150000 100000\n", 1.5)],
)
def test_a_cpu_quota_narrows_the_simulated_runs_at_once(text, cpus):
    assert cpus_of_quota(text) == cpus  # cgroup v2's cpu.max; v1's quota and period files
    assert 1 <= simulated_runs_at_once() <= len(os.sched_getaffinity(0))


def simulated_runs(pid: int) -> list[int]:
    """The simulator runs that process `pid` has under way (not its --list of the locks, nor
    the check before the sweep, at 1 writer)."""
    return [child for child, command in children_of(pid).items()
            if b"72" in command.split(b"\0")]  # fmt: skip


def children_of(pid: int) -> dict[int, bytes]:
    """Each child of `pid`, with its raw command line."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes()
        except OSError:  # ended meanwhile
            continue
    return found


def test_ctrl_c_stops_every_simulated_run_under_way(tmp_path):
    proc = subprocess.Popen(
        [str(LOCKLAB), "run", "--sim", "x5-4", "--lock", "qspinlock,mcs", "--nwriters", "72",
         "--repeat", "3", "--store", str(tmp_path / "s"), "--plain"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not simulated_runs(proc.pid):
            time.sleep(0.02)
        assert proc.poll() is None, "the sweep ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)  # locklab alone: it must stop its simulators itself
        _, err = proc.communicate(timeout=60)
        with pytest.raises(ProcessLookupError):  # nothing left in its process group
            os.killpg(proc.pid, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err


def test_ctrl_c_as_locklab_starts_a_child_leaves_none_behind(tmp_path):
    """Ctrl-C while a child of locklab's is forked and not yet exec'd (a copy of locklab's own
    command line): before end_children(), 1 try in 3 left a child in the group, a zombie that
    the death signal had killed and init had not yet reaped (an init that reaps at once would
    hide it). A try that misses the window, on a busy machine, is not counted."""
    command = [str(LOCKLAB), "run", "--sim", "x5-4", "--lock", "qspinlock,mcs", "--nwriters", "72",
               "--plain"]  # fmt: skip
    caught, tries, deadline = 0, 0, time.monotonic() + 60
    while caught < 5 and tries < 20 and time.monotonic() < deadline:
        tries += 1
        proc = subprocess.Popen([*command, "--store", str(tmp_path / str(tries))],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip
        try:
            own = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            while proc.poll() is None and own not in children_of(proc.pid).values():
                pass  # no sleep: the copy lives a few milliseconds
            if proc.poll() is not None:
                continue  # the window was missed and the sweep ended
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            if proc.returncode == 0:
                continue  # the signal came as the sweep ended
            caught += 1
            with pytest.raises(ProcessLookupError):
                os.killpg(proc.pid, 0)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        assert proc.returncode == 130 and "Traceback" not in err, err
    if not caught:
        pytest.skip("no try caught a child between fork and exec: the machine is too busy")


def test_run_sim_refuses_what_it_cannot_run(tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return locklab("run", *args, "--store", str(tmp_path / "s"), timeout=60)

    unknown = run("--sim", "no-such-machine", "--lock", "ticket")
    assert unknown.returncode == 2 and "unknown machine 'no-such-machine'" in unknown.stderr
    pinned = run("--sim", "mach1", "--lock", "ticket", "--pin", "16")
    assert pinned.returncode == 2 and "CPU 16 is not on the simulated mach1" in pinned.stderr
    opt_plugin = ROOT / "build" / "opt" / "plugins" / "example_ticket.so"
    plugin = run("--sim", "mach1", "--plugin", str(opt_plugin), "--lock", "example_ticket")
    assert plugin.returncode == 2 and "built without the simulator's instrumentation" in (
        plugin.stderr
    )
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    malformed = run("--sim", str(bad), "--lock", "ticket")
    assert malformed.returncode == 2 and "not valid TOML" in malformed.stderr
    for proc in (unknown, pinned, malformed, plugin):
        assert "Traceback" not in proc.stderr


def test_topology_is_the_simulated_machine(machine):
    proc = subprocess.run(
        [str(SIM), "--topology"], capture_output=True, text=True, timeout=30, check=False,
        env={**os.environ, "LOCKLAB_SIM_MACHINE": str(machine)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "machine:  tiny-2s" in proc.stdout
    assert "4 online, 4 allowed; 4 cores, 2 packages, 2 NUMA nodes, 1 thread per" in proc.stdout


# tiny-2s with two threads a core, numbered as many machines number them: a core's two threads
# side by side (CPUs 0-1 are socket 0's first core), not the profiles' first-threads-first.
SIBLINGS_SIDE_BY_SIDE = "".join(
    f"cpu {cpu} {cpu // 4} {cpu // 2 % 2} {cpu // 2} {cpu // 4} {cpu % 2} {cpu // 4}\n"
    for cpu in range(8)
)
PLACEMENTS = {
    "compact": [0, 1, 2, 3, 4, 5, 6, 7],  # a core's threads, then the next core
    "cores": [0, 2, 4, 6, 1, 3, 5, 7],  # a core each, socket 0's before socket 1's
    "scatter": [0, 4, 2, 6, 1, 5, 3, 7],  # a core each, the sockets in turn
}


@pytest.mark.parametrize("pin", PLACEMENTS)
def test_each_placement_puts_its_threads_where_it_says(tmp_path, pin):
    profile = tmp_path / "tiny-2s-smt.toml"
    profile.write_text(TINY_PROFILE.replace("threads_per_core = 1", "threads_per_core = 2"))
    flat_text = load_profile(profile).flat_text()
    flat = tmp_path / "tiny-2s-smt.machine"
    flat.write_text(flat_text[: flat_text.index("cpu 0 ")] + SIBLINGS_SIDE_BY_SIDE)
    args = ["--lock", "ticket", "--duration", "0.0001", "--warmup", "0", "--pin", pin]
    proc, result = simulate(flat, [*args, "--nwriters", "8"])
    assert proc.returncode == 0, proc.stderr
    assert [thread["cpu"] for thread in result["threads"]] == PLACEMENTS[pin]
    # Two writers placed by cores share a socket; by scatter they do not. After a warm-up:
    # what each thread touched where fork balancing first put it, before it pinned itself,
    # follows it at its first accesses.
    proc, result = simulate(flat, [*args, "--nwriters", "2", "--warmup", "0.00002"])
    assert proc.returncode == 0, proc.stderr
    crossed = result["simulation"]["transfers_per_acquisition"]["other_socket"]
    assert (crossed > 0.5) if pin == "scatter" else (crossed == 0)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('name = "tiny-2s"', 'name = "tiny-2s"\nseeds = 5', "seeds must be a list of strings"),
        ('name = "tiny-2s"', 'name = "tiny 2s"', "name must be letters"),
        ("cores_per_llc = 2", "cores_per_llc = 2\nsocket_hops = [[0, 0], [0, 0]]",
         "0 from a socket to itself only"),
        ("cores_per_llc = 2", "cores_per_llc = 2\nsocket_hops = [[0, 5], [5, 0]]",
         "at most 16 sockets, 4 hops apart"),
    ],
)  # fmt: skip
def test_a_profile_the_runtime_would_refuse_is_refused_here(tmp_path, old, new, message):
    path = tmp_path / "bad.toml"
    path.write_text(TINY_PROFILE.replace(old, new))
    with pytest.raises(LocklabError, match=message):
        load_profile(path)


def test_a_simulated_seed_campaign_and_its_other_machine(tmp_path):
    """Seed 004's simulated campaign on mach1 at a small scale, then the same file on
    precision-490 with --sim: the points with more writers than its 4 CPUs are skipped in one
    line unless --oversubscribe, as on a real machine."""
    campaign = ROOT / "campaigns" / "seed-004-sim.toml"
    store = str(tmp_path / "store")
    proc = locklab(
        "campaign", str(campaign), "--store", store, "--repeat", "1",
        "--duration", "0.001", "--warmup", "0", "--plain",
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "simulated: mach1 (" in proc.stdout
    assert "fixed-375" in proc.stdout and "load" in proc.stdout
    small = locklab(
        "campaign", str(campaign), "--sim", "precision-490", "--store", store, "--repeat", "1",
        "--duration", "0.001", "--warmup", "0", "--plain",
        timeout=300,
    )  # fmt: skip
    assert small.returncode == 0, small.stderr
    assert (
        "locklab: skipped nwriters=8,12,16: more threads than the 4 CPUs on the simulated "
        "precision-490 (--oversubscribe runs them" in small.stderr
    )
    assert "simulated: precision-490 (" in small.stdout and "\n16 " not in small.stdout


def test_sim_errors_name_the_command_line_and_come_before_the_store(tmp_path):
    """--sim on a campaign's command line is blamed as --sim, not as a line of the file; a
    pinned CPU the profile lacks (CPU 99 of mach1's 16) is one line naming the profile, given
    before an experiment is stored or a run started."""
    campaign = ROOT / "campaigns" / "seed-004-sim.toml"
    store = tmp_path / "store"
    unknown = locklab("campaign", str(campaign), "--sim", "nosuch", "--store", str(store),
                      timeout=60)  # fmt: skip
    last = unknown.stderr.strip().splitlines()[-1]
    assert unknown.returncode == 2 and last.startswith("locklab: error: --sim: unknown machine "
                                                       "'nosuch'"), unknown.stderr  # fmt: skip
    for command in (("run", "--sim", "mach1", "--lock", "ticket", "--nwriters", "2"),
                    ("campaign", str(campaign), "--sim", "mach1")):  # fmt: skip
        pinned = locklab(*command, "--pin", "0,99", "--store", str(store), timeout=120)
        assert pinned.returncode == 2 and "Traceback" not in pinned.stderr, pinned.stderr
        assert pinned.stderr.strip().splitlines() == [
            "locklab: error: pin 0,99: CPU 99 is not on the simulated mach1, whose CPUs are 0-15"
        ], pinned.stderr
    assert not store.exists()  # nothing stored


def test_a_window_inside_a_long_hold_begun_in_the_warm_up_is_counted_and_flagged(tmp_path):
    """A 1 ms window after a 200 ms warm-up at one writer: locktorture's 100 ms holds (one in
    200,000 acquisitions, about 7 a virtual second here) begin in the warm-up and cover the
    window in most runs. Such a run measured 0 acquisitions; the hold is counted in it, once,
    as begun before the window, and the table flags the cell too short for it."""
    from locklab.store import Store

    for seed in range(1, 6):  # deterministic per build; the first seed almost always has one
        store = tmp_path / f"store-{seed}"
        proc = locklab(
            "run", "--sim", "mach1", "--lock", "ticket,mcs", "--nwriters", "1",
            "--torture-delays", "spin_lock", "--warmup", "0.2", "--duration", "0.001",
            "--repeat", "3", "--seed", str(seed), "--store", str(store), "--plain",
            timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        opened = Store(store, create=False)
        runs = opened.runs(opened.experiments()[-1])
        empty = [run.result for run in runs if run.result and not run.result["write_acquisitions"]]
        if empty:
            break
    assert empty, "no window fell inside a long hold in five seeds"
    for result in empty:
        writer = result["torture_delays"]["writer"]
        assert writer["long"] == 1 and writer.get("long_before_window") == 1, writer
        assert writer["acquisitions"] == 0
    row = next(line for line in proc.stdout.splitlines() if line.startswith("1 "))
    assert "#" in row and "# window too short for a long hold" in proc.stdout, proc.stdout


def test_a_measured_campaign_simulated_takes_the_simulators_times():
    """Seed 001's file measures 0.5 s (10 s with --full): as virtual seconds, each run would
    take minutes. With --sim it gets the simulator's times; a simulated file keeps its own."""
    measured = ROOT / "campaigns" / "seed-001-rwsem-vs-mutex.toml"
    for full in (False, True):
        spec = load_campaign(measured, full, sim="westmere-ex-4s")
        assert (spec.duration_s, spec.warmup_s) == (SIM_DURATION_S, SIM_WARMUP_S)
        assert spec.pin == "compact"  # where its threads go still holds
    assert load_campaign(measured).duration_s == 0.5
    simulated = load_campaign(ROOT / "campaigns" / "seed-004-sim.toml", sim="mach3")
    assert (simulated.duration_s, simulated.warmup_s) == (0.25, 0.025)


def test_tune_finds_a_delay_on_a_simulated_machine(tmp_path):
    proc = locklab(
        "tune", "ticket_fixed_delay", "--param", "spinlock_delay", "--range",
        "0:400", "--sim", "mach1", "--nwriters", "8", "--workload", "noload:0:0",
        "--repeat", "1", "--duration", "0.001", "--warmup", "0", "--grid", "3", "--rounds",
        "1", "--store", str(tmp_path / "store"), "-o", str(tmp_path / "tune.png"),
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "ticket_fixed_delay: chosen spinlock_delay = " in proc.stdout


def test_kernel_locks_and_c_plugins_compile_for_the_simulator(tmp_path):
    """kernel:rtmutex compiled from the tree, stock and with the deliberately broken patch,
    and a plugin given as C source, all in the simulator's build: the stock lock and the
    plugin run, the broken patch fails its run and names the seed that replays it."""
    profile = tmp_path / "tiny-2s.toml"
    profile.write_text(TINY_PROFILE)
    broken = ROOT / "campaigns" / "patches" / "broken" / (
        "0001-rtmutex-take-an-owned-lock-now-and-then.patch")  # fmt: skip
    proc = locklab(
        "run", "--sim", str(profile), "--lock", "kernel:rtmutex",
        "--patch", "stock", "--patch", f"broken={broken}", "--nwriters", "1,4",
        "--repeat", "1", "--duration", "0.001", "--warmup", "0",
        "--store", str(tmp_path / "store"),
        timeout=600,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "kernel:rtmutex from linux-source-6.1.tar.xz with no patches (sim)" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.startswith("4 "))
    assert row.split()[-1] == "x" and "replays this interleaving exactly" in proc.stderr
    source = ROOT / "examples" / "plugin" / "example_ticket.c"
    plugin = locklab(
        "run", "--sim", str(profile), "--plugin", str(source),
        "--lock", "example_ticket", "--nwriters", "4", "--repeat", "1",
        "--duration", "0.001", "--warmup", "0", "--store", str(tmp_path / "store"),
        timeout=300,
    )  # fmt: skip
    assert plugin.returncode == 0, plugin.stderr[-2000:]
    assert "simulated: tiny-2s" in plugin.stdout


def test_spinners_wake_when_an_earlier_poll_went_stale(tmp_path):
    """The tree's mutex spins on its owner word and on the owner's on_cpu: the first poll runs
    ahead, the second waits for slower clocks, and a writer among them can clear the owner
    word in between. A spinner that parked on the stale value slept for good (the watchdog
    fired at 2 and 8 writers on this profile); now it sees the change and goes on."""
    proc = locklab(
        "run", "--sim", "lent-xeon-16", "--lock", "kernel:mutex", "--nwriters", "2,4,8",
        "--repeat", "2", "--duration", "0.002", "--warmup", "0.0005",
        "--store", str(tmp_path / "store"),
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "deadlock" not in proc.stderr


def line_latency(*args: str) -> subprocess.CompletedProcess[str]:
    tool = BUILD / "opt" / "line-latency"
    return subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_line_latency_fanout_and_futex():
    """line-latency --fanout: one delay per reader, in rank order; --futex: the three costs a
    profile takes from it, each a positive time; a reader count the machine cannot hold, an
    empty list, one CPU for both futex threads or too many rounds is one line and exit 2."""
    fanout = line_latency("--fanout", "1,1", "--rounds", "200")  # the second after a pin
    assert fanout.returncode == 0, fanout.stderr
    lines = fanout.stdout.splitlines()
    assert len(lines) == 2, fanout.stdout
    for line in lines:
        fields = line.split()
        assert fields[:2] == ["fanout", "1"] and float(fields[2]) > 0, fanout.stdout
    futex = line_latency("--futex", "--rounds", "20")
    assert futex.returncode == 0, futex.stderr
    figures = dict(line.split(maxsplit=1) for line in futex.stdout.splitlines())
    for cost in ("futex_wake", "context_switch", "futex_wait", "futex_wake_nobody"):
        assert float(figures[cost]) > 0, futex.stdout
    for bad in (["--fanout", "1000"], ["--fanout", "0"], ["--fanout", ","],
                ["--futex", "--from", "1", "1"], ["--rounds", "999999999999"]):  # fmt: skip
        refused = line_latency(*bad)
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, (bad, refused)
    assert "--fanout 1000" in line_latency("--fanout", "1000").stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_profile_of_this_machine_from_measurements(tmp_path):
    """locklab machines --measure writes a profile the simulator runs on: its line transfer
    and cpu_relax measured here, the rest said to be estimates; bad names are one line."""
    target = tmp_path / "here.toml"
    proc = locklab(
        "machines", "--measure", "here", "-o", str(target),
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(target)
    assert profile.name == "here" and profile.cpus >= 2
    assert "line-latency's ping-pong" in profile.sources["same_llc"]
    assert "the engine's calibration" in profile.sources["cpu_relax"]
    assert "hit" in profile.estimates() and "same_llc" not in profile.estimates()
    for cost in ("futex_wake", "context_switch", "futex_wait"):
        assert "line-latency --futex" in profile.sources[cost], profile.sources[cost]
        assert cost not in profile.estimates()
    run = locklab(
        "run", "--sim", str(target), "--lock", "mcs", "--nwriters", "2",
        "--repeat", "1", "--duration", "0.001", "--warmup", "0",
        "--store", str(tmp_path / "store"),
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "simulated: here (" in run.stdout
    bad = locklab("machines", "--measure", "a b", timeout=60)
    assert bad.returncode == 2 and "a name is letters" in bad.stderr
    assert "Traceback" not in bad.stderr
