"""The kernel's own locktorture, end to end: a real Debian kernel booted in QEMU (KVM when it
boots, emulation otherwise), the modules built out of tree from linux-source-6.1, the console
imported into the store. Skipped, with the reason, only where QEMU or the packages are missing
(scripts/install-deps.sh installs them); the modules are cached in build/kernel/."""

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import FAKE_QEMU_SHORT_SIGN_OF_LIFE_S, ROOT
from locklab import cli
from locklab.errors import LocklabError
from locklab.kernel import initramfs
from locklab.kernel import qemu as kernel
from locklab.kernel.initramfs import BUSYBOX


def kernel_image() -> Path:
    missing = [
        what
        for what, present in (
            ("qemu-system-x86_64", shutil.which("qemu-system-x86_64")),
            ("busybox-static", BUSYBOX.exists()),
            ("linux-source-6.1", kernel.SOURCE_TARBALL.exists()),
        )
        if not present
    ]
    if missing:
        pytest.skip(f"QEMU end-to-end test skipped: {', '.join(missing)} missing")
    proc = subprocess.run(
        [str(ROOT / "scripts" / "fetch-kernel.sh")],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"QEMU end-to-end test skipped: no kernel image ({proc.stderr.strip()})")
    return ROOT / proc.stdout.strip()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("torture_type", "accel"), [("spin_lock", "auto"), ("rtmutex_lock", "tcg")]
)
def test_kernel_locktorture_in_qemu(torture_type, accel, tmp_path, capsys):
    image = kernel_image()
    store = tmp_path / "store"
    args = ["kernel", "--kernel", str(image), "--label", "debian", "--type", torture_type,
            "--nwriters", "2", "--duration", "4", "--stat-interval", "1", "--accel", accel,
            "--store", str(store), "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "kernel locktorture logs" in out
    row = next(line for line in out.splitlines() if line.startswith("2 "))
    assert float(row.split()[1]) > 0  # kops/s measured from the kernel's own counters
    logs = list((store / "kernel-logs" / f"kernel-{torture_type}").glob("*.log"))
    assert len(logs) == 1
    text = logs[0].read_text()
    assert f"{torture_type}-torture:--- End of test: SUCCESS" in text
    assert (ROOT / "build" / "kernel").is_dir()  # modules cached in the build tree


def test_kernel_bad_input(tmp_path, capsys):
    code = cli.main(["kernel", "--kernel", str(tmp_path / "nope"), "--store", str(tmp_path)])
    assert code == 2 and "is not a file" in capsys.readouterr().err
    image = tmp_path / "bzImage"
    image.write_bytes(b"x")
    code = cli.main(["kernel", "--kernel", str(image), "--store", str(tmp_path)])
    assert code == 2 and "cannot tell its version" in capsys.readouterr().err


# -- KVM that aborts or hangs falls back to emulation, on any machine (conftest's fake_qemu) ----


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("abort", "QEMU exited with status -6 under KVM (qemu-system-x86_64: error: failed"),
        ("hang", "no kernel output in 1 s under KVM"),
        ("exit", "QEMU exited with status 1 under KVM (no output)"),
    ],
)
def test_auto_falls_back_to_emulation(fake_qemu, monkeypatch, behaviour, reason):
    monkeypatch.setenv("FAKE_QEMU_KVM", behaviour)
    if behaviour == "hang":
        # Only a hang waits out the limit: short here, safe as the stand-in never says
        # "Linux version"; the others keep conftest's generous one, as they must not time out.
        monkeypatch.setattr(kernel, "KVM_SIGN_OF_LIFE_S", FAKE_QEMU_SHORT_SIGN_OF_LIFE_S)
    booted = kernel.boot(fake_qemu / "vmlinuz", fake_qemu / "initrd", 2, 1.0, "auto")
    assert booted.accel == "tcg" and booted.fallback is not None
    assert booted.fallback.startswith(reason)
    assert "End of test: SUCCESS" in booted.console


def test_working_kvm_is_used_and_kvm_alone_refuses_to_fall_back(fake_qemu, monkeypatch):
    monkeypatch.setenv("FAKE_QEMU_KVM", "works")
    booted = kernel.boot(fake_qemu / "vmlinuz", fake_qemu / "initrd", 2, 1.0, "auto")
    assert (booted.accel, booted.fallback) == ("kvm", None)
    monkeypatch.setenv("FAKE_QEMU_KVM", "abort")
    with pytest.raises(LocklabError, match="--accel kvm: QEMU exited with status -6"):
        kernel.boot(fake_qemu / "vmlinuz", fake_qemu / "initrd", 2, 1.0, "kvm")


def test_the_fallback_and_its_reason_are_in_the_machine_line(fake_qemu, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_QEMU_KVM", "abort")
    monkeypatch.setattr(kernel, "build_modules", lambda version: fake_qemu)
    monkeypatch.setattr(initramfs, "initramfs", lambda *args: args[-1])
    image = fake_qemu / "vmlinuz-6.1.0-test"
    image.write_bytes(b"x")
    args = ["kernel", "--kernel", str(image), "--label", "k", "--nwriters", "2", "--duration",
            "4", "--store", str(fake_qemu / "store"), "--plain"]  # fmt: skip
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert (
        "machine: qemu-tcg (emulated: timing not representative; KVM fell back: QEMU exited "
        "with status -6 under KVM" in out
    )
    assert "; vCPUs not pinned" in out  # no --pin-cpus: said so
