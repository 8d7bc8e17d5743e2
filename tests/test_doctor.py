"""`locklab doctor` and what it leaves in tables: the checks on made-up sysfs/procfs trees (a VM
and a tuned bare-metal box), the command on this machine (loosely: it names what it finds), and
the summary line and the disturbed-run marker on stored runs with known steal."""

import json
import subprocess

import pytest
from conftest import ROOT
from locklab import cli
from locklab.analysis import disturbance
from locklab.analysis.cells import Settings, analyse_experiment
from locklab.output import table
from locklab.run import machine_check
from locklab.run.machine_check import OK, UNKNOWN, WARN
from test_table import KOPS, MACHINE, fill, spec_two_locks

ENGINE = ROOT / "build" / "opt" / "locklab-bench"
NO_PMU = "perf_event_open: No such file or directory"


def write(root, path, text):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def proc_stat(steal_per_cpu: int) -> str:
    cpu = f"100 0 50 1000 0 0 0 {steal_per_cpu} 0 0"
    return f"cpu  200 0 100 2000 0 0 0 0 0 0\ncpu0 {cpu}\ncpu1 {cpu}\nintr 0\n"


@pytest.fixture
def vm_root(tmp_path):
    """A 2-vCPU guest: no cpufreq, no turbo control, irqbalance running, nothing isolated."""
    root = tmp_path / "vm"
    for cpu in (0, 1):
        write(root, f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list", str(cpu))
    write(root, "/sys/devices/system/cpu/isolated", "\n")
    write(root, "/sys/devices/system/cpu/online", "0-1\n")
    write(root, "/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 hypervisor lm\n")
    write(root, "/proc/cmdline", "console=ttyS0 quiet\n")
    write(root, "/proc/sys/kernel/numa_balancing", "1\n")
    write(root, "/proc/stat", proc_stat(7))
    write(root, "/proc/812/comm", "irqbalance\n")
    write(root, "/proc/812/stat", "812 (irqbalance) S 1 " + "0 " * 10 + "5 5 0 0\n")
    return root


@pytest.fixture
def tuned_root(tmp_path):
    """Bare metal as seed 000 set it up: performance governor, no turbo, SMT off, CPUs 2-3
    isolated with nohz_full, no irqbalance, no NUMA balancing."""
    root = tmp_path / "metal"
    for cpu in range(4):
        write(root, f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor", "performance")
    write(root, "/sys/devices/system/cpu/intel_pstate/no_turbo", "1")
    write(root, "/sys/devices/system/cpu/smt/active", "0")
    write(root, "/sys/devices/system/cpu/isolated", "2-3")
    write(root, "/sys/devices/system/cpu/nohz_full", "2-3")
    write(root, "/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 lm\n")
    write(root, "/proc/cmdline", "isolcpus=2-3 nohz_full=2-3\n")
    write(root, "/proc/sys/kernel/numa_balancing", "0\n")
    write(root, "/proc/stat", proc_stat(0))
    write(root, "/proc/1/comm", "init\n")
    write(root, "/proc/1/stat", "1 (init) S 0 " + "0 " * 10 + "3 3 0 0\n")
    return root


def by_name(checks):
    return {check.name: check for check in checks}


def test_a_vm_without_counters_is_named_with_its_fixes(vm_root):
    checks = by_name(machine_check.run_checks(lambda: NO_PMU, vm_root, sample_s=0.01))
    assert checks["vm"].status == WARN and checks["vm"].seen.startswith("VM (hypervisor flag)")
    assert "2 vCPUs" in checks["vm"].seen
    assert checks["perf counters"].status == WARN and NO_PMU in checks["perf counters"].seen
    assert checks["governor"].status == UNKNOWN  # no cpufreq in the guest: said, not crashed
    assert checks["turbo"].status == UNKNOWN
    assert checks["smt"].status == OK
    assert checks["irqbalance"].status == WARN and "irqbalance" in checks["irqbalance"].fix
    assert checks["numa balancing"].status == WARN
    # This machine's CPUs, not an example's: the second of two, never isolcpus=2-7.
    assert checks["isolation"].status == WARN and "isolcpus=1 " in checks["isolation"].fix
    assert "--pin 1)" in checks["isolation"].fix
    for check in checks.values():  # every item says what it means; every problem, a fix
        assert check.means and (check.status == OK or check.fix), check


def test_a_tuned_bare_metal_box_passes(tuned_root):
    checks = by_name(machine_check.run_checks(lambda: None, tuned_root, sample_s=0.01))
    problems = {name: c.seen for name, c in checks.items() if c.status != OK}
    assert problems == {}
    assert machine_check.stored_facts(tuned_root) == {
        "frequency_fixed": True, "boost_off": True, "smt_off": True, "irqbalance_off": True,
        "numa_balancing_off": True, "vm": False, "isolated_cpus": "2-3",
    }  # fmt: skip


def test_a_governor_that_scales_and_smt_are_problems(tuned_root):
    write(tuned_root, "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave")
    write(tuned_root, "/sys/devices/system/cpu/smt/active", "1")
    write(tuned_root, "/sys/devices/system/cpu/intel_pstate/no_turbo", "0")
    checks = by_name(machine_check.run_checks(lambda: None, tuned_root, sample_s=0.01))
    assert checks["governor"].status == WARN and "powersave" in checks["governor"].seen
    assert checks["smt"].status == WARN and checks["turbo"].status == WARN
    facts = machine_check.stored_facts(tuned_root)
    assert facts["frequency_fixed"] is False and facts["smt_off"] is False


def test_an_empty_root_is_unknown_everywhere_not_an_error(tmp_path):
    checks = machine_check.run_checks(lambda: None, tmp_path, sample_s=0.01)
    assert {c.status for c in checks if c.name != "perf counters"} == {UNKNOWN}


def test_busy_processes_are_named_by_their_share_of_a_cpu():
    before = {1: ("init", 0), 50: ("spinner", 100), 60: ("idle", 10), 70: ("me", 0)}
    after = {1: ("init", 1), 50: ("spinner", 150), 60: ("idle", 10), 70: ("me", 100)}
    busy = machine_check.busy_processes(before, after, 1.0, 100, exclude={70})
    assert busy == [("spinner", 50, 0.5)]


def test_doctor_on_this_machine_names_what_it_finds(capsys):
    """Loose on purpose: any machine passes, but a VM must be called one and a machine without
    counters must say so with the engine's reason."""
    assert cli.main(["doctor", "--engine", str(ENGINE), "--sample", "0.05"]) == 0
    out = capsys.readouterr().out
    for name in ("governor", "turbo", "smt", "irqbalance", "numa balancing", "isolation", "vm",
                 "perf counters", "other processes"):  # fmt: skip
        assert f" {name} " in out, name
    assert out.rstrip().splitlines()[-1].split(":")[0] in ("noisy machine", "quiet machine")
    if machine_check.is_vm(machine_check.sysroot()):
        assert "VM (hypervisor flag)" in out
    probe = subprocess.run(
        [str(ENGINE), "--lock", "tas", "--ops", "100", "--json", "-"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    reason = json.loads(probe.stdout)["cache_misses"]["reason"]
    if reason is not None:
        assert f"none ({reason})" in out
    else:
        assert "perf counters    available" in out


def test_doctor_json_and_a_fake_root(vm_root, monkeypatch, capsys):
    monkeypatch.setenv("LOCKLAB_SYSROOT", str(vm_root))
    assert cli.main(["doctor", "--json", "--engine", str(ENGINE), "--sample", "0.01"]) == 0
    document = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in document["checks"]}
    assert checks["vm"]["status"] == WARN and checks["irqbalance"]["status"] == WARN
    assert document["summary"].startswith("noisy machine: ")


@pytest.mark.parametrize("bad", ["0", "-1", "11", "soon"])
def test_doctor_refuses_a_bad_sample(bad, capsys):
    assert cli.main(["doctor", "--sample", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("locklab: error: ") and len(err.splitlines()) == 1


# ---- the summary line and the disturbed-run marker, on stored runs ----------------------------

VM_CHECK = {
    "frequency_fixed": None, "boost_off": None, "smt_off": True, "irqbalance_off": True,
    "numa_balancing_off": True, "vm": True, "isolated_cpus": "",
}  # fmt: skip


def measured(
    steal: float, involuntary: int = 0, threads: int = 1, on_cpu: float = 0.99, voluntary: int = 0
) -> dict:
    """A 1 s run's figures; ``on_cpu``: the share of the window each thread ran."""
    return {
        "machine": {**MACHINE, "check": VM_CHECK},
        "window_s": 1.0,
        "steal": {"fraction": steal, "ticks": int(steal * 200), "cpus": 2, "reason": None},
        "context_switches": {"involuntary": involuntary, "voluntary": voluntary},
        "cpu": {"utilisation": on_cpu * threads},
        "threads": [{"index": i} for i in range(threads)],
        "cache_misses": {
            "total": None,
            "per_acquisition": None,
            "per_handoff": None,
            "reason": NO_PMU,
        },
    }


def test_high_steal_marks_the_cell_and_explains_the_noise(store):
    """k1 at 4 writers is noisy; two of its five runs lost 6% to steal: the cell carries the
    marker, the verdict says how many runs were disturbed, and a line says by what."""

    def extra(label, nwriters, repeat):
        return measured(0.06 if (label, nwriters) == ("k1-rmacq", 4) and repeat < 2 else 0.001)

    experiment = fill(store, spec_two_locks(), KOPS, extra=extra)
    text = table.plain(analyse_experiment(experiment, store.runs(experiment), Settings()))
    lines = text.splitlines()
    assert lines[2] == (
        "noisy machine: VM, 2 vCPUs, 2 of 30 runs disturbed, 0.5% steal during runs, "
        "no isolated CPUs, no perf counters"
    )
    row4 = next(line for line in lines if line.startswith("4 "))
    assert row4.rstrip().endswith(f"!{disturbance.MARKER}")
    row2 = next(line for line in lines if line.startswith("2 "))
    assert disturbance.MARKER not in row2
    assert "noisy (CV > 5%) at 4 writers (2 of 5 runs disturbed)" in text
    assert "  k1-rmacq: 2 of 5 runs at 4 writers (steal up to 6.0%)" in lines
    assert f"{disturbance.MARKER} runs disturbed by the machine" in text


def test_time_lost_to_other_tasks_disturbs_only_threads_that_have_a_cpu_and_do_not_sleep(store):
    """Each thread ran half its window and was preempted 130 times a second, as one spinning
    thread with a busy loop on its CPU was here: a disturbance with 1 or 2 threads on 2 CPUs,
    the workload itself with 4 threads on 2 CPUs."""

    def extra(label, nwriters, repeat):
        return measured(0.0, involuntary=130 * nwriters, threads=nwriters, on_cpu=0.5)

    experiment = fill(store, spec_two_locks(), KOPS, extra=extra)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    section = analysis.sections[0]
    marked = {row for (_, row), cell in section.cells.items() if cell and cell.disturbed}
    assert marked == {1, 2}
    assert (
        "up to 50% of the window lost to other tasks, 130 preemptions/s per thread"
        in section.disturbed[0]
    )


@pytest.mark.parametrize(
    "figures",
    [
        # two spinning threads on two CPUs on a quiet machine: the engine's control thread and
        # the kernel take 5%, with about 100 preemptions/s per thread (measured here)
        {"on_cpu": 0.95, "involuntary": 200},
        # a sleeping lock's waiters are off the CPU by design
        {"on_cpu": 0.4, "involuntary": 200, "voluntary": 5000},
    ],
)
def test_preemptions_alone_or_sleeping_do_not_disturb(store, figures):
    def extra(label, nwriters, repeat):
        return measured(0.0, threads=min(nwriters, 2), **figures)

    experiment = fill(store, spec_two_locks(), KOPS, extra=extra)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    assert not any(cell and cell.disturbed for cell in analysis.sections[0].cells.values())


def test_a_quiet_machine_says_so(store):
    quiet = {**VM_CHECK, "vm": False, "frequency_fixed": True, "isolated_cpus": "1"}

    def extra(label, nwriters, repeat):
        result = measured(0.0)
        result["machine"] = {**MACHINE, "check": quiet}
        result["cache_misses"] = {
            "total": 900,
            "per_acquisition": 0.01,
            "per_handoff": 0.5,
            "reason": None,
        }
        return result

    experiment = fill(store, spec_two_locks(), KOPS, extra=extra)
    text = table.plain(analyse_experiment(experiment, store.runs(experiment), Settings()))
    assert (
        text.splitlines()[2]
        == "quiet machine: 2 CPUs, 0.0% steal during runs, 0 of 30 runs disturbed"
    )
    assert disturbance.MARKER + " " not in text.split("Verdict")[0].split("nwriters:")[1]


def test_runs_from_before_the_check_say_it_was_not_recorded(store):
    experiment = fill(store, spec_two_locks(), KOPS)
    text = table.plain(analyse_experiment(experiment, store.runs(experiment), Settings()))
    assert text.splitlines()[2].startswith("machine check: not recorded")


def test_a_run_that_lost_its_window_to_the_host_is_left_out_of_the_mean(store):
    """k1 at 1 writer: one run measured 0.0 kops/s, its thread off its CPU for the whole
    window (as a k5 run did here): a disturbed run, listed, and not a sample, so the mean and
    the test take the other four. A run that lost half its window stays in (disturbed, marked)."""
    kops = {**KOPS, ("k1-rmacq", 1): [0.0, 902.0, 898.0, 899.0, 901.0]}

    def extra(label, nwriters, repeat):
        if (label, repeat) == ("k1-rmacq", 0) and nwriters in (1, 2):
            on_cpu = 0.0 if nwriters == 1 else 0.5
            return measured(0.0, involuntary=130, threads=nwriters, on_cpu=on_cpu)
        return measured(0.0)

    experiment = fill(store, spec_two_locks(), kops, extra=extra)
    analysis = analyse_experiment(experiment, store.runs(experiment), Settings())
    section = analysis.sections[0]
    lost, half = section.cells[1, 1], section.cells[1, 2]
    assert lost is not None and half is not None
    assert lost.summary.n == 4 and lost.summary.mean == pytest.approx(900.0)
    assert len(lost.disturbed) == 1 and lost.flags().endswith(disturbance.MARKER)
    assert lost.comparison is not None and lost.comparison.judgement() == "equal"
    assert half.summary.n == 5 and len(half.disturbed) == 1
    text = table.plain(analysis)
    assert (
        "  k1-rmacq: 1 of 5 runs at 1 writer, 1 of 5 at 2 writers (up to 100% of the window "
        "lost to other tasks, 130 preemptions/s per thread, 1 left out of the mean, having "
        f"lost >= {disturbance.WINDOW_LOST_UNMEASURED:.0%} of the window)"
    ) in text.splitlines(), text
    assert f"a run that lost >= {disturbance.WINDOW_LOST_UNMEASURED:.0%} of it is left out" in text
