"""The engine's output: the JSON schema, exact counts, the series, stat lines, placement."""

import os
import re
import subprocess

import jsonschema
import pytest
from conftest import CORES, bench_path, plugin_path, run_engine
from locklab.run import machine_measure


def test_result_validates_against_schema(tmp_path, result_schema):
    run = run_engine(
        [
            "--lock",
            "ticket",
            "--nwriters",
            "2",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--hold-ns",
            "100",
            "--cs-lines",
            "1",
        ],
        tmp_path=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    jsonschema.validate(run.result, result_schema)


def test_rw_result_validates_and_reports_reads_apart(tmp_path, result_schema):
    run = run_engine(
        ["--lock", "pthread_rwlock", "--nwriters", "1", "--nreaders", "2", "--duration", "0.3"],
        tmp_path=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    jsonschema.validate(run.result, result_schema)
    result = run.result
    assert result["read_acquisitions"] > 0
    assert (
        result["total_acquisitions"] == result["read_acquisitions"] + result["write_acquisitions"]
    )
    assert result["latency_ns"]["read"] is not None
    roles = [t["role"] for t in result["threads"]]
    assert roles == ["writer", "reader", "reader"]


def test_watchdog_result_validates(tmp_path, result_schema):
    run = run_engine(
        [
            "--plugin",
            str(plugin_path("opt", "never_unlock")),
            "--nwriters",
            "2",
            "--watchdog",
            "0.5",
        ],
        tmp_path=tmp_path,
    )
    assert run.returncode == 3
    jsonschema.validate(run.result, result_schema)
    assert run.result["violations"]["checked"] is False


def test_schema_rejects_a_result_missing_a_key(tmp_path, result_schema):
    run = run_engine(["--lock", "tas", "--duration", "0.1"], tmp_path=tmp_path)
    broken = dict(run.result)
    del broken["latency_ns"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, result_schema)


def test_ops_counts_exactly(tmp_path):
    """--ops N stops at exactly N measured write acquisitions: the count is taken under the lock."""
    run = run_engine(["--lock", "mcs", "--nwriters", "3", "--ops", "5000"], tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.result["write_acquisitions"] == 5000
    assert sum(t["acquisitions"] for t in run.result["threads"]) == 5000


def test_per_thread_counts_add_up_and_fairness_is_sane(tmp_path):
    run = run_engine(
        ["--lock", "ticket", "--nwriters", "2", "--duration", "0.3"], tmp_path=tmp_path
    )
    result = run.result
    assert sum(t["acquisitions"] for t in result["threads"]) == result["total_acquisitions"]
    fairness = result["fairness"]["write"]
    assert 0 < fairness["jain_index"] <= 1
    assert 0.5 <= fairness["fairness_factor"] <= 1
    assert fairness["max"] >= fairness["min"]


def test_interval_series_covers_the_window(tmp_path):
    run = run_engine(
        ["--lock", "tas", "--nwriters", "2", "--duration", "0.5", "--interval", "0.05"],
        tmp_path=tmp_path,
    )
    intervals = run.result["intervals"]
    assert len(intervals) >= 3
    assert sum(i["write_acquisitions"] for i in intervals) <= run.result["write_acquisitions"]
    times = [i["t_s"] for i in intervals]
    assert times == sorted(times)


def test_warmup_is_discarded(tmp_path):
    """Acquisitions made during the warm-up are in the since-start total, not the measured one."""
    run = run_engine(
        ["--lock", "tas", "--nwriters", "1", "--duration", "0.2", "--warmup", "0.2"],
        tmp_path=tmp_path,
    )
    result = run.result
    assert result["write_acquisitions"] > 0
    assert result["acquisitions_since_start"] > result["write_acquisitions"]
    no_warmup = run_engine(
        ["--lock", "tas", "--nwriters", "1", "--ops", "1000"], tmp_path=tmp_path
    ).result
    assert no_warmup["acquisitions_since_start"] == no_warmup["write_acquisitions"] == 1000


STAT_LINE = re.compile(r"^(Writes|Reads ):  Total: \d+  Max/Min: \d+/\d+ (\?\?\?)? Fail: 0 $")


def test_stat_lines_use_locktorture_format(tmp_path):
    run = run_engine(
        [
            "--lock",
            "pthread_rwlock",
            "--nwriters",
            "1",
            "--nreaders",
            "1",
            "--duration",
            "0.3",
            "--stat-interval",
            "0.1",
        ],
        tmp_path=tmp_path,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith(("Writes", "Reads"))]
    assert lines
    for line in lines:
        assert STAT_LINE.match(line), line


def test_pinning_is_reported(tmp_path):
    run = run_engine(
        ["--lock", "tas", "--nwriters", "2", "--duration", "0.1", "--pin", "0"], tmp_path=tmp_path
    )
    assert [t["cpu"] for t in run.result["threads"]] == [0, 0]
    run = run_engine(
        ["--lock", "tas", "--nwriters", "2", "--duration", "0.1", "--pin", "scatter"],
        tmp_path=tmp_path,
    )
    cpus = [t["cpu"] for t in run.result["threads"]]
    assert all(cpu >= 0 for cpu in cpus)
    assert all(t["node"] >= 0 for t in run.result["threads"])


def test_machine_facts_and_calibration(tmp_path):
    run = run_engine(["--lock", "tas", "--duration", "0.1", "--hold-ns", "2000"], tmp_path=tmp_path)
    machine = run.result["machine"]
    assert machine["cpus_online"] >= 1
    assert machine["cores"] * machine["threads_per_core"] <= machine["cpus_allowed"] * 2
    calibration = run.result["calibration"]
    assert calibration["hold_ns_requested"] == 2000
    assert calibration["hold_iterations"] > 0
    assert calibration["hold_ns_measured"] > 0


def test_sleeping_lock_reports_context_switches(tmp_path):
    run = run_engine(
        ["--lock", "futex_mutex", "--nwriters", "4", "--duration", "0.3", "--hold-ns", "1000"],
        tmp_path=tmp_path,
    )
    switches = run.result["context_switches"]
    assert switches["voluntary"] >= 0
    assert switches["voluntary_per_1000_acquisitions"] is not None
    assert run.result["cpu"]["ms_per_1000_acquisitions"] is not None


def test_json_to_stdout_keeps_stdout_clean(tmp_path):
    """With --json -, the stat lines go to stderr. A 0.5 s window fits several 0.05 s stat
    intervals, so a stalled control thread still prints one (0.1 s could print none)."""
    run = run_engine(
        ["--lock", "tas", "--duration", "0.5", "--stat-interval", "0.05", "--json", "-"],
        json_out=False,
    )
    assert run.stdout.lstrip().startswith("{")
    assert "Writes:" in run.stderr


def test_example_plugin_runs_and_takes_params(tmp_path):
    plugin = str(plugin_path("opt", "example_ticket"))
    listed = run_engine(["--plugin", plugin, "--list"], json_out=False)
    assert "example_ticket" in listed.stdout
    run = run_engine(
        ["--plugin", plugin, "--nwriters", "2", "--duration", "0.2", "--param", "spin_pause=4"],
        tmp_path=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.result["config"]["lock"] == "example_ticket"
    assert run.result["config"]["params"] == {"spin_pause": 4}
    assert run.result["config"]["plugin"] == plugin


def test_steal_and_cache_misses_are_figures_or_null_with_a_reason(tmp_path, result_schema):
    """Every run says what the machine took (steal) and what the counters saw, or why not: on a
    VM without a PMU, perf_event_open fails and the reason names it."""
    run = run_engine(["--lock", "mcs", "--nwriters", "2", "--ops", "20000"], tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    jsonschema.validate(run.result, result_schema)
    steal, misses = run.result["steal"], run.result["cache_misses"]
    assert (steal["fraction"] is None) == (steal["reason"] is not None)
    if steal["fraction"] is not None:
        assert 0 <= steal["fraction"] <= 1 and steal["cpus"] >= 1
    assert (misses["total"] is None) == (misses["reason"] is not None)
    if misses["reason"] is not None:
        assert misses["reason"].startswith("perf_event_open: ")
        assert misses["per_handoff"] is None
    else:
        assert misses["per_acquisition"] == misses["total"] / 20000
        handoffs = run.result["handoffs"]["total"]
        assert misses["per_handoff"] == (misses["total"] / handoffs if handoffs else None)


def test_schema_rejects_a_null_figure_without_its_reason(tmp_path, result_schema):
    run = run_engine(["--lock", "tas", "--duration", "0.1"], tmp_path=tmp_path)
    broken = dict(run.result)
    broken["cache_misses"] = {
        "total": None,
        "per_acquisition": None,
        "per_handoff": None,
        "reason": None,
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, result_schema)
    broken = dict(run.result)
    broken["steal"] = {"fraction": None, "ticks": None, "cpus": 0, "reason": None}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, result_schema)


def _write_latency(args, tmp_path):
    run = run_engine(args, tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    return run.result, run.result["latency_ns"]["write"]


def test_latency_every_auto_times_fast_locks_rarely_and_slow_ones_often(tmp_path):
    """By default the period comes from the warm-up's rate (nothing is timed in the warm-up):
    a power of two, larger for an uncontended spinlock than for a 50 us critical section, and
    the window's samples are its acquisitions over that period."""
    common = ["--lock", "tas", "--nwriters", "1", "--pin", "0", "--duration", "0.3"]
    fast, fast_latency = _write_latency([*common, "--warmup", "0.1"], tmp_path)
    slow, slow_latency = _write_latency(
        [*common, "--warmup", "0.1", "--hold-ns", "50000"], tmp_path
    )
    assert fast["config"]["latency_every"] == "auto"
    assert fast["calibration"]["sample_ns"] > 0
    for result, latency in ((fast, fast_latency), (slow, slow_latency)):
        every = latency["sampled_every"]
        assert every & (every - 1) == 0
        assert abs(latency["samples"] - result["write_acquisitions"] // every) <= 1
    assert fast_latency["sampled_every"] > slow_latency["sampled_every"]


def test_latency_every_given_or_without_a_warmup(tmp_path):
    common = ["--lock", "ticket", "--nwriters", "1", "--duration", "0.2"]
    given, latency = _write_latency([*common, "--warmup", "0.1", "--latency-every", "7"], tmp_path)
    assert given["config"]["latency_every"] == 7
    assert latency["sampled_every"] == 7
    _, latency = _write_latency([*common, "--warmup", "0"], tmp_path)
    assert latency["sampled_every"] == 64  # no warm-up to measure the rate on


@pytest.mark.skipif(CORES < 2, reason="needs two CPUs for two virtual nodes")
def test_lean_loop_counts_every_handoff(tmp_path):
    """Without --ops, hold or readers the writers run the lean loop, which finds the previous
    holder in the owner word: every acquisition in the window is a hand-over or a
    reacquisition, and with one virtual node per CPU no hand-over is on the same node."""
    args = ["--lock", "ticket", "--nwriters", str(CORES), "--pin", "compact"]
    args += ["--numa-nodes", str(CORES), "--duration", "0.3", "--warmup", "0.1"]
    run = run_engine(args, tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    handoffs = run.result["handoffs"]
    assert handoffs["total"] > 0
    assert handoffs["same_node"] == 0
    assert handoffs["total"] + handoffs["reacquisitions"] == run.result["write_acquisitions"]


@pytest.mark.parametrize("lock", ["tas", "ck_clh", "pthread_mutex", "mutex"])
def test_no_checks_measures_the_bare_section_and_says_so(tmp_path, result_schema, lock):
    """--no-checks: no owner word or hand-over test (handoffs null, config.checks false), the
    counter still exact; a lock without a loop of its own runs unchecked too."""
    run = run_engine(["--lock", lock, "--nwriters", "2", "--duration", "0.2",
                      "--no-checks"], tmp_path=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    jsonschema.validate(run.result, result_schema)
    assert run.result["config"]["checks"] is False and run.result["handoffs"] is None
    assert run.result["violations"]["write_counter_mismatch"] == 0


def test_no_checks_still_catches_a_lock_that_loses_updates(tmp_path):
    """The final count is the check left: broken_tts lets two writers in, and the section's
    counter loses their updates (up to three tries: on a loaded two-core machine the writers
    may not overlap in a short run)."""
    for _ in range(3):
        run = run_engine(["--plugin", str(plugin_path("opt", "broken_tts")), "--lock", "broken_tts",
                          "--nwriters", "2", "--duration", "0.5", "--no-checks"],
                         tmp_path=tmp_path)  # fmt: skip
        if run.returncode == 1:
            assert run.result["violations"]["write_counter_mismatch"] > 0
            return
        assert run.returncode == 0, run.stderr
    pytest.fail("broken_tts lost no update in three runs of 0.5 s")


def fake_sysfs(root, cpus, core_id, siblings):
    """A /sys of the given CPUs, all in package 0, with core ids and each CPU's
    thread_siblings_list as the functions `core_id` and `siblings` say (no list: None)."""
    for cpu in cpus:
        topology = root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text("0\n")
        (topology / "core_id").write_text(f"{core_id(cpu)}\n")
        if siblings is not None:
            (topology / "thread_siblings_list").write_text(siblings(cpu) + "\n")
    return root


def topology_of(root, allowed=None):
    """The engine's summary line and each CPU's SMT rank, read from `root`, run on `allowed`."""
    proc = subprocess.run(
        [str(bench_path("opt")), "--topology"], capture_output=True, text=True, timeout=30,
        check=False, env={**os.environ, "LOCKLAB_SYSFS": str(root)},
        preexec_fn=None if allowed is None else lambda: os.sched_setaffinity(0, allowed),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = next(line for line in proc.stdout.splitlines() if line.startswith("cpus:"))
    rows = [line.split() for line in proc.stdout.splitlines()]
    return summary, [int(row[4]) for row in rows if len(row) == 5 and row[0].isdigit()]


CPUS = sorted(os.sched_getaffinity(0))


def same_id(cpu):
    return 0  # as the cores of two dies of one package can have


def own_id(cpu):
    return cpu


ONE_CORE = {  # every CPU a thread of one core, as a range or as a comma list
    "range": lambda cpu: f"{CPUS[0]}-{CPUS[-1]}",
    "commas": lambda cpu: ",".join(map(str, CPUS)),
}


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to tell two cores apart")
def test_cores_are_told_apart_by_their_threads_not_their_core_id(tmp_path):
    n = len(CPUS)
    summary, ranks = topology_of(fake_sysfs(tmp_path / "own", CPUS, same_id, str))
    assert f"allowed; {n} cores, 1 package" in summary and "1 thread per core" in summary
    assert ranks == [0] * n
    for name, siblings in ONE_CORE.items():
        if name == "range" and list(range(CPUS[0], CPUS[-1] + 1)) != CPUS:
            continue
        summary, ranks = topology_of(fake_sysfs(tmp_path / name, CPUS, own_id, siblings))
        assert "allowed; 1 core, 1 package" in summary, name
        assert f"{n} threads per core" in summary and ranks == list(range(n)), name
    # Run on the core's second thread only: that thread is the first the process has.
    root = fake_sysfs(tmp_path / "cpuset", CPUS, own_id, ONE_CORE["commas"])
    assert topology_of(root, allowed={CPUS[1]})[1] == [0]
    # No list, or one that is not a CPU list: each core is its package and core id.
    for name, siblings in (("none", None), ("malformed", lambda cpu: f"{cpu}-x")):
        summary, ranks = topology_of(fake_sysfs(tmp_path / name, CPUS, same_id, siblings))
        assert "allowed; 1 core, 1 package" in summary and ranks == list(range(n)), name


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two CPUs to tell two cores apart")
def test_a_profile_of_this_machine_tells_cores_apart_the_same_way(tmp_path, monkeypatch):
    fake_sysfs(tmp_path, CPUS, same_id, str)
    monkeypatch.setattr(machine_measure, "SYS_CPU", tmp_path / "devices" / "system" / "cpu")
    assert [place.core for place in machine_measure.places()] == CPUS
