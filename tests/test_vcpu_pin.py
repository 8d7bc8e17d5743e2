"""Pinning a guest's vCPUs one per host CPU (`locklab kernel --pin-cpus`): over QMP against a
real QEMU that runs no guest at all (paused, well under a second), through the CLI with the
stand-in QEMU (tests/fakes/fake_qemu.py, real threads), and bad values before anything boots."""

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT
from locklab import cli
from locklab.errors import LocklabError
from locklab.kernel import campaign as kernel_campaign
from locklab.kernel import initramfs
from locklab.kernel import qemu as kernel
from locklab.kernel.vcpu_pin import Qmp, allowed_list, cpu_list, pin_vcpus

ALLOWED = sorted(os.sched_getaffinity(0))


def two_cpus() -> list[int]:
    """Two CPUs this process may use, the second first: vCPU 0 lands on the higher one, so a
    pin that merely kept QEMU's own affinity, or matched by index, shows."""
    if len(ALLOWED) < 2:
        pytest.skip(f"vCPU pinning test skipped: needs 2 usable CPUs (this process has {ALLOWED})")
    return [ALLOWED[1], ALLOWED[0]]


@pytest.fixture
def paused_qemu(tmp_path):
    """A real qemu-system-x86_64 with two vCPUs, paused (-S), no guest, a QMP socket."""

    def start(threads: str) -> tuple[subprocess.Popen, Path]:
        if shutil.which("qemu-system-x86_64") is None:
            pytest.skip("real-QEMU pinning test skipped: qemu-system-x86_64 missing")
        socket_path = tmp_path / "qmp.sock"
        proc = subprocess.Popen(
            ["qemu-system-x86_64", "-S", "-nodefaults", "-display", "none", "-smp", "2",
             "-accel", f"tcg,thread={threads}", "-qmp", f"unix:{socket_path},server=on,wait=off"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        started.append(proc)
        return proc, socket_path

    started: list[subprocess.Popen] = []
    yield start
    for proc in started:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.timeout(60)
def test_each_vcpu_thread_of_a_real_qemu_is_pinned_to_exactly_its_cpu(paused_qemu):
    cpus = two_cpus()
    proc, socket_path = paused_qemu("multi")
    qmp = Qmp(socket_path, lambda: proc.poll() is None)
    try:
        pinned = pin_vcpus(qmp, proc.pid, cpus)
        # Read again, independently, while QEMU still runs: the kernel's record of each thread.
        now = {pin.thread_id: allowed_list(proc.pid, pin.thread_id) for pin in pinned}
        qmp.execute("cont")
    finally:
        qmp.close()
    assert [pin.vcpu for pin in pinned] == [0, 1]
    assert len({pin.thread_id for pin in pinned}) == 2  # a thread per vCPU (MTTCG)
    for pin, cpu in zip(pinned, cpus, strict=True):
        assert pin.cpu == cpu
        assert pin.cpus_allowed_list == now[pin.thread_id] == str(cpu)
    assert proc.poll() is None  # QEMU lived through it


@pytest.mark.timeout(60)
def test_single_threaded_emulation_cannot_be_pinned_per_vcpu(paused_qemu):
    """The deliberately broken case: one thread runs every vCPU, so no vCPU has a CPU of its
    own; pinning says so in one line rather than pinning that one thread twice."""
    cpus = two_cpus()
    proc, socket_path = paused_qemu("single")
    qmp = Qmp(socket_path, lambda: proc.poll() is None)
    try:
        with pytest.raises(LocklabError, match="the vCPUs share a host thread"):
            pin_vcpus(qmp, proc.pid, cpus)
    finally:
        qmp.close()


def test_a_qemu_that_never_opens_its_socket_is_one_line(tmp_path, monkeypatch):
    from locklab.kernel import vcpu_pin

    monkeypatch.setattr(vcpu_pin, "QMP_CONNECT_S", 0.3)
    started = time.monotonic()
    with pytest.raises(LocklabError, match="QEMU opened no QMP socket in 0 s"):
        Qmp(tmp_path / "none.sock", lambda: True)
    assert time.monotonic() - started < 10  # bounded, never a hang


def test_a_qemu_that_never_answers_qmp_is_one_line(tmp_path, monkeypatch):
    from locklab.kernel import vcpu_pin

    monkeypatch.setattr(vcpu_pin, "QMP_REPLY_S", 0.3)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # listens, never speaks
    silent.bind(str(tmp_path / "silent.sock"))
    silent.listen(1)
    try:
        with pytest.raises(LocklabError, match="QEMU did not answer QMP in 0 s"):
            Qmp(tmp_path / "silent.sock", lambda: True)
    finally:
        silent.close()


def test_cpu_lists_are_written_as_the_kernel_writes_them():
    assert cpu_list([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert cpu_list([5]) == "5"


# -- through `locklab kernel`, with the stand-in QEMU -----------------------------------------


def kernel_args(tmp_path: Path, *extra: str) -> list[str]:
    image = tmp_path / "vmlinuz-6.1.0-test"
    image.write_bytes(b"x")
    return ["kernel", "--kernel", str(image), "--label", "k", "--nwriters", "2", "--duration",
            "4", "--store", str(tmp_path / "store"), "--plain", *extra]  # fmt: skip


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kvm", ["works", "abort"])
def test_cli_pins_guest_vcpus_and_says_so(fake_qemu, monkeypatch, capsys, kvm):
    """KVM that works, and KVM that aborts after the pins (emulation then pins afresh): either
    way each vCPU thread ran on exactly its CPU, as /proc said while QEMU ran and as the
    thread itself saw (sched_getaffinity, recorded by the stand-in)."""
    cpus = two_cpus()
    monkeypatch.setenv("FAKE_QEMU_KVM", kvm)
    affinity = fake_qemu / "affinity.json"
    monkeypatch.setenv("FAKE_QEMU_AFFINITY", str(affinity))
    monkeypatch.setattr(kernel, "build_modules", lambda version: fake_qemu)
    monkeypatch.setattr(initramfs, "initramfs", lambda *args: args[-1])
    pin = ",".join(map(str, cpus))
    assert cli.main(kernel_args(fake_qemu, "--pin-cpus", pin)) == 0
    out = capsys.readouterr().out
    machine = "machine: qemu-kvm; " if kvm == "works" else "machine: qemu-tcg (emulated"
    assert machine in out and f"; vCPUs pinned {pin} (checked in /proc)" in out
    # The host's machine check is kept with kernel runs too, for the summary line.
    assert "machine check: not recorded" not in out and "machine: " in out
    assert any(line.startswith(("noisy machine:", "quiet machine:")) for line in out.splitlines())
    pinning = json.loads(
        (fake_qemu / "store" / "kernel-logs" / "kernel-spin_lock" / "pinning.json").read_text()
    )
    [(log, vcpus)] = pinning.items()
    assert log == "k-spin_lock-n2-r1.log"
    assert [(v["vcpu"], v["cpu"], v["cpus_allowed_list"]) for v in vcpus] == [
        (0, cpus[0], str(cpus[0])), (1, cpus[1], str(cpus[1]))]  # fmt: skip
    seen = json.loads(affinity.read_text())  # the boot that ran: the last one
    assert {int(tid): cpu for tid, cpu in seen.items()} == {
        v["thread_id"]: [v["cpu"]] for v in vcpus}  # fmt: skip


@pytest.mark.parametrize(
    ("pin", "says"),
    [
        ("x", "'x' is not an integer or a range"),
        ("1-0", "runs backwards"),
        (str(ALLOWED[0]), "names 1 CPU(s) for 2 vCPUs (--cpus)"),
        (f"{ALLOWED[0]},{ALLOWED[0]}", f"CPU {ALLOWED[0]} is given twice"),
        (f"{ALLOWED[0]},{ALLOWED[-1] + 1}", f"CPU {ALLOWED[-1] + 1} is not one this process"),
    ],
)
def test_bad_pin_cpus_is_one_line_before_anything_boots(tmp_path, capsys, pin, says):
    """--kernel names no file: the pin is checked first, so nothing is built or booted."""
    code = cli.main(["kernel", "--kernel", str(tmp_path / "nope"), "--cpus", "2",
                     "--pin-cpus", pin, "--store", str(tmp_path / "s")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert says in err and "--pin-cpus" in err, err


SEED_000 = ROOT / "campaigns" / "seed-000-kernel.toml"


def test_kernel_campaigns_take_pin_cpus(tmp_path):
    assert kernel_campaign.load(SEED_000).pin_cpus == ""  # the quick scale pins nothing
    full = kernel_campaign.load(SEED_000, full=True)
    assert full.pin_cpus == "0-95" and full.cpus == 96  # the seed's: a CPU per writer
    sweep, _, _ = kernel_campaign.sweep_of(full)
    assert sweep.pin_cpus == "0-95"
    bad = tmp_path / "bad.toml"
    bad.write_text(SEED_000.read_text().replace("cpus = 2\n", "cpus = 2\npin_cpus = 3\n"))
    with pytest.raises(LocklabError, match='pin_cpus must be a CPU list in quotes, like "0-95"'):
        kernel_campaign.load(bad)
