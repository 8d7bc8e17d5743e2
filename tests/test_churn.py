"""--churn: a fork-like load (native/engine/worker_churn.c). Each writer makes a thread per
turn that takes the lock N times and ends, as seed 001's mail server forks a process per mail
whose fork and exit take the anon_vma lock. On this host, in the sanitizer builds (a race
between a writer and its mail thread, or a leak, fails them), and in the simulator, which
gives an ended and joined thread's place to the next, so a run makes as many as it likes."""

import pytest
from conftest import run_engine
from test_sim import simulate, tiny_machine


@pytest.mark.parametrize("variant", ["opt", "tsan", "asan"])
def test_each_mail_takes_the_lock_n_times_in_a_thread_of_its_own(tmp_path, variant):
    run = run_engine(
        [
            "--lock",
            "mutex",
            "--nwriters",
            "2",
            "--churn",
            "2",
            "--duration",
            "0.1",
            "--hold-ns",
            "500",
            "--gap-ns",
            "500",
        ],  # fmt: skip
        variant=variant,
        tmp_path=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    result = run.result
    assert result["config"]["churn"] == 2
    assert result["status"] == "ok" and result["total_acquisitions"] > 0
    # the writer waits for each of its mails: a voluntary switch at least, most of the time
    assert result["context_switches"]["voluntary"] > 0


@pytest.mark.parametrize(
    "extra", [["--nreaders", "1"], ["--torture-delays", "spin_lock"], ["--cs-lines", "2"]]
)
def test_churn_refuses_what_a_mail_does_not_do(tmp_path, extra):
    run = run_engine(["--lock", "rwsem", "--churn", "2", "--duration", "0.01", *extra],
                     tmp_path=tmp_path, json_out=False)  # fmt: skip
    assert run.returncode == 2
    assert "--churn runs writers that make a thread per turn" in run.stderr


def test_the_simulator_runs_more_threads_than_it_has_places(tmp_path):
    """The tiny profile has 4 CPUs, so 12 thread places: two writers' mails make hundreds of
    threads one after another. Each mail is two acquisitions, and the writer sleeps in its
    join (a voluntary switch, as the C library's futex wait is)."""
    machine = tiny_machine(tmp_path)
    proc, result = simulate(machine, ["--lock", "futex_mutex", "--nwriters", "2", "--churn",
                                      "2", "--duration", "0.002", "--warmup", "0.0002",
                                      "--pin", "none"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    acquisitions = result["total_acquisitions"]
    assert acquisitions > 200  # so more than 100 threads, in 12 places
    assert result["context_switches"]["voluntary"] >= acquisitions // 2 - 2
    again, same = simulate(machine, ["--lock", "futex_mutex", "--nwriters", "2", "--churn",
                                     "2", "--duration", "0.002", "--warmup", "0.0002",
                                     "--pin", "none"])  # fmt: skip
    assert same["total_acquisitions"] == acquisitions  # deterministic, as every simulated run
