"""arm64 kernels in `locklab kernel --arch arm64`: cross-built from linux-source-6.1 with
Debian's gcc-aarch64-linux-gnu and booted on qemu-system-aarch64's `virt` machine (emulated on
an x86_64 host), with locklab's own static /init (native/guest/torture_init.c).

The first tests check the per-architecture plumbing without building or booting anything (a
stand-in QEMU, tests/fakes/fake_qemu.py). The end-to-end ones cross-build the stock kernel and
seed 000's patch 0003 (about 2 minutes the first time on 2 cores, seconds once cached: the
arm64 tinyconfig kernel is small), boot each with 2 vCPUs under emulation and store their
locktorture runs; a deliberately broken rtmutex patch must come out as a failed run. They are
skipped, with the reason, where the cross compiler, qemu-system-aarch64 or the kernel source
is missing (scripts/install-deps.sh installs them)."""

import gzip
import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import FAKE_QEMU, FAKE_QEMU_CONSOLE, ROOT
from locklab import cli
from locklab.errors import LocklabError
from locklab.kernel import arch as kernel_arch
from locklab.kernel import build as kernel_build
from locklab.kernel import build_inputs, initramfs, locktorture
from locklab.kernel import campaign as kernel_campaign
from locklab.kernel import params as kernel_params
from locklab.kernel import qemu as kernel
from locklab.kernel.arch import ARM64, X86_64
from locklab.store import Store

PATCHES = ROOT / "campaigns" / "patches"
SEED_PATCH = PATCHES / "0003-rtmutex-atomic_long_or-in-mark_rt_mutex_waiters.patch"
BROKEN_PATCH = PATCHES / "broken" / "0001-rtmutex-take-an-owned-lock-now-and-then.patch"
TORTURE_INIT_SOURCE = ROOT / "native" / "guest" / "torture_init.c"
EM_AARCH64 = 183  # ELF e_machine
PT_INTERP = 3  # ELF program header type


def on_host(monkeypatch: pytest.MonkeyPatch, machine: str) -> None:
    """Make this machine look like `machine` (what platform.machine() says) to locklab."""
    monkeypatch.setattr(kernel_arch.platform, "machine", lambda: machine)


def one_line_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    return err


# --- the table: one row per architecture ------------------------------------------------------


def test_each_architecture_has_its_own_options_and_needs():
    for arch in (X86_64, ARM64):
        options = {**build_inputs.BASE_OPTIONS, **arch.options}
        missing = [n for n in (*build_inputs.NEEDED, *arch.needed) if options.get(n) != "y"]
        assert not missing, (arch.name, missing)
    x86_only = ("64BIT", "ACPI", "SERIAL_8250", "UNWINDER_ORC", "PCI", "9P_FS")
    assert not set(x86_only) & set(ARM64.options)
    assert not {"SERIAL_AMBA_PL011", "ARM_PSCI_FW"} & set(X86_64.options)
    assert (X86_64.image_name, ARM64.image_name) == ("bzImage", "Image")


def test_the_arch_is_this_machines_unless_given(monkeypatch):
    on_host(monkeypatch, "aarch64")
    assert kernel_arch.resolve(None) is ARM64 and kernel_arch.resolve("") is ARM64
    on_host(monkeypatch, "x86_64")
    assert kernel_arch.resolve(None) is X86_64
    assert kernel_arch.resolve("arm64") is ARM64
    with pytest.raises(LocklabError, match=r"unknown architecture 'sparc' \(known: x86_64, arm64"):
        kernel_arch.resolve("sparc")
    on_host(monkeypatch, "riscv64")
    with pytest.raises(LocklabError, match="this machine is riscv64.*give --arch x86_64 or arm64"):
        kernel_arch.resolve(None)


def test_make_cross_compiles_for_another_architecture(monkeypatch):
    on_host(monkeypatch, "x86_64")
    assert kernel_build._make_arch(ARM64) == ["ARCH=arm64", "CROSS_COMPILE=aarch64-linux-gnu-"]
    assert kernel_build._make_arch(X86_64) == ["ARCH=x86_64"]
    on_host(monkeypatch, "aarch64")  # a native arm64 build, and x86_64 cross-built there
    assert kernel_build._make_arch(ARM64) == ["ARCH=arm64"]
    assert kernel_build._make_arch(X86_64) == ["ARCH=x86_64", "CROSS_COMPILE=x86_64-linux-gnu-"]


def test_the_arch_is_part_of_the_image_key_and_the_work_tree():
    options = {**build_inputs.BASE_OPTIONS, **X86_64.options}
    x86 = kernel_build.build_key("source", [SEED_PATCH], options, X86_64)
    arm64 = kernel_build.build_key("source", [SEED_PATCH], options, ARM64)
    assert x86 != arm64  # the same inputs, another architecture: never the same image
    # x86_64's keys are those of before --arch, so images built then are still found.
    patches = [[SEED_PATCH.name, kernel_build._sha256(SEED_PATCH.read_bytes())]]
    legacy = {"recipe": kernel_build.RECIPE, "source": "source", "patches": patches,
              "config": options}  # fmt: skip
    assert x86 == kernel_build._sha256(json.dumps(legacy, sort_keys=True).encode())
    assert (X86_64.distinct, ARM64.distinct) == ("", "-arm64")  # work-KEY, work-KEY-arm64


def test_the_torture_init_reports_the_marker_qemu_reads():
    assert f'#define CPUS_MARKER "{initramfs.CPUS_MARKER}"' in TORTURE_INIT_SOURCE.read_text()


def test_a_guest_short_of_cpus_fails_on_arm64_too():
    console = f"[    0.1] psci: PSCIv1.1 detected in firmware.\n{initramfs.CPUS_MARKER} 1\n"
    assert kernel.missing_cpus(console, 2) == "the guest brought up 1 of 2 CPUs"


# --- booting: QEMU's arm64 machine, its console, emulation unless the host is arm64 ----------


@pytest.fixture
def fake_aarch64(tmp_path, monkeypatch):
    """A stand-in qemu-system-aarch64 that notes its arguments, and a stand-in static init."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "qemu-system-aarch64"
    program.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/argv"\n'
                       f'exec "{shutil.which("python3")}" "{FAKE_QEMU}" "$@"\n')  # fmt: skip
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(shutil.which('sh')).parent}")
    monkeypatch.setenv("FAKE_QEMU_CONSOLE", str(FAKE_QEMU_CONSOLE))
    monkeypatch.setattr(kernel, "KVM_SIGN_OF_LIFE_S", 30.0)
    monkeypatch.setattr(kernel, "BUILD", tmp_path / "kernel")
    init = tmp_path / "torture-init"
    init.write_bytes(b"\x7fELF stand-in")
    monkeypatch.setattr(initramfs, "torture_init", lambda arch: init)
    (tmp_path / "Image").write_bytes(b"x")
    return tmp_path


def test_arm64_boots_on_virt_with_its_console_and_own_init(fake_aarch64, monkeypatch):
    on_host(monkeypatch, "x86_64")
    monkeypatch.setattr(kernel, "kvm_device_usable", lambda: True)  # still no KVM: not arm64
    params = kernel_params.check({"torture_type": "spin_lock", "nwriters_stress": "2"})
    booted = kernel.run_builtin(fake_aarch64 / "Image", params, 1, cpus=2, arch="arm64")
    assert booted.outcome == "end-of-test"
    assert booted.accel == "tcg"
    assert booted.fallback == "an arm64 guest on this x86_64 host (emulation only)"
    argv = (fake_aarch64 / "argv").read_text()
    assert "-accel tcg,thread=multi -M virt,gic-version=3 -cpu neoverse-n1 -smp 2" in argv
    assert "-append console=ttyAMA0 panic=-1" in argv and "edd=off" not in argv
    initrd = gzip.decompress((fake_aarch64 / "kernel" / "static-init-arm64.cpio.gz").read_bytes())
    assert b"init\0" in initrd and b"\x7fELF stand-in" in initrd and b"busybox" not in initrd


def test_an_arm64_host_boots_arm64_under_kvm(fake_aarch64, monkeypatch):
    on_host(monkeypatch, "aarch64")
    monkeypatch.setattr(kernel, "kvm_device_usable", lambda: True)
    monkeypatch.setenv("FAKE_QEMU_KVM", "works")
    params = kernel_params.check({"torture_type": "spin_lock", "nwriters_stress": "2"})
    booted = kernel.run_builtin(fake_aarch64 / "Image", params, 1, cpus=2)  # the host's arch
    assert (booted.accel, booted.fallback) == ("kvm", None)
    assert "-accel kvm -M virt,gic-version=host -cpu host" in (fake_aarch64 / "argv").read_text()


def test_a_missing_qemu_system_aarch64_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    err = one_line_exit_2(["kernel", "--arch", "arm64", "--patch", "k0", "--store",
                           str(tmp_path / "s.db")], capsys)  # fmt: skip
    assert "--arch arm64: qemu-system-aarch64 is missing: install qemu-system-arm" in err


def test_a_missing_cross_compiler_is_one_line(tmp_path, monkeypatch, capsys):
    on_host(monkeypatch, "x86_64")
    monkeypatch.setenv("PATH", str(tmp_path))
    err = one_line_exit_2(["kernel", "build", "--arch", "arm64", "--patch", "k0"], capsys)
    assert "--arch arm64: aarch64-linux-gnu-gcc is missing: install gcc-aarch64-linux-gnu" in err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--arch", "sparc", "--patch", "k0"], "argument --arch: invalid choice: 'sparc'"),
        (["--arch", "arm64", "--patch", "k0", "--exec", "true"], "x86_64 guests only"),
        (["--arch", "arm64", "--host-kernel"], "--host-kernel runs this machine's kernel"),
        (["--arch", "arm64", "--kernel", "vmlinuz-6.1"], "--kernel boots with this machine's"),
        (["--arch", "arm64", "--accel", "kvm", "--patch", "k0"],
         "--accel kvm: an arm64 guest on this x86_64 host"),
    ],
)  # fmt: skip
def test_what_arm64_cannot_do_is_one_line(args, says, tmp_path, monkeypatch, capsys):
    on_host(monkeypatch, "x86_64")
    err = one_line_exit_2(["kernel", *args, "--store", str(tmp_path / "s.db")], capsys)
    assert says in err


def test_a_kernel_campaign_takes_an_arch(tmp_path):
    path = tmp_path / "arm64.toml"
    text = 'kind = "kernel"\narch = "arm64"\n[[kernel]]\nlabel = "k0"\n'
    path.write_text(text)
    campaign = kernel_campaign.load(path)
    sweep, _, _ = kernel_campaign.sweep_of(campaign)
    assert (campaign.arch, sweep.arch) == ("arm64", "arm64")
    path.write_text(text.replace('"arm64"', '"mips"'))
    with pytest.raises(LocklabError, match="unknown architecture 'mips'"):
        kernel_campaign.load(path)
    path.write_text(text + '[program]\ncommand = "true"\n')
    with pytest.raises(LocklabError, match=r"a \[program\] runs in x86_64 guests only"):
        kernel_campaign.load(path)


# --- end to end: cross-build, boot under emulation, torture, store -----------------------------

BUILD_TOOLS = ("make", "gcc", "flex", "bison", "bc", "patch", "tar", "xz")


def arm64_tools() -> None:
    missing = [tool for tool in (*BUILD_TOOLS, ARM64.compiler_prefix() + "gcc", ARM64.qemu)
               if shutil.which(tool) is None]  # fmt: skip
    if not kernel_build.SOURCE_TARBALL.exists():
        missing.append("linux-source-6.1")
    if missing:
        pytest.skip(f"arm64 kernel test skipped: {', '.join(missing)} missing "
                    f"(packages {ARM64.cross_package}, {ARM64.qemu_package})")  # fmt: skip


def test_the_torture_init_is_a_static_arm64_program():
    arm64_tools()
    data = initramfs.torture_init(ARM64).read_bytes()
    assert data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == EM_AARCH64
    # Static: no program interpreter (PT_INTERP) to look for in an initramfs of one file.
    offset, size, count = (int.from_bytes(data[at : at + width], "little")
                           for at, width in ((32, 8), (54, 2), (56, 2)))  # fmt: skip
    types = [int.from_bytes(data[offset + i * size :][:4], "little") for i in range(count)]
    assert types and PT_INTERP not in types


# Slow: a cold arm64 cross-build takes 2 minutes on a quiet 2-core machine and up to 6 on a
# loaded one, beyond CI's budget; `make test-slow` runs both.
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_seed_000_patch_builds_for_arm64_boots_and_is_stored(tmp_path, capsys):
    arm64_tools()
    store = tmp_path / "s.db"
    code = cli.main(["kernel", "--arch", "arm64", "--patch", "k0", "--patch", f"k3={SEED_PATCH}",
                     "--type", "rtmutex_lock", "--nwriters", "2", "--cpus", "2",
                     "--duration", "4", "--param", "stutter=0", "--accel", "tcg",
                     "--store", str(store), "--plain"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    opened = Store(store)
    try:
        (experiment,) = opened.experiments()
        runs = opened.runs(experiment)
    finally:
        opened.close()
    assert sorted(run.config_key.label for run in runs) == ["k0", "k3"]
    for run in runs:
        assert run.status == "ok" and run.throughput_ops_per_s > 0, run.error
        machine = run.machine["hostname"]
        assert "qemu-tcg (emulated: timing not representative" in machine
        assert "arm64 guests" in machine
        console = Path(run.result["log"]).read_text()
        assert f"{initramfs.CPUS_MARKER} 2" in console  # both vCPUs up (PSCI)
        assert "rtmutex_lock-torture:--- End of test: SUCCESS" in console
        (parsed,), _ = locktorture.parse(console)
        assert len(parsed.writes) >= 3 and parsed.writes[-1].total > parsed.writes[0].total
    kernels = json.loads((Path(runs[0].result["log"]).parent / "kernels.json").read_text())
    assert {label: k["arch"] for label, k in kernels.items()} == {"k0": "arm64", "k3": "arm64"}
    assert kernels["k3"]["patches"][0]["name"] == SEED_PATCH.name
    assert kernels["k0"]["key"] != kernels["k3"]["key"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_broken_rtmutex_patch_fails_on_arm64_within_the_limit():
    arm64_tools()
    built = kernel_build.build({"ci-broken": [BROKEN_PATCH]}, arch="arm64")["ci-broken"]
    assert built.arch == "arm64" and built.image.name == "Image"
    params = kernel_params.check({"torture_type": "rtmutex_lock", "nwriters_stress": "4",
                                  "stat_interval": "1", "stutter": "0"})  # fmt: skip
    limit = 150.0
    start = time.monotonic()
    booted = kernel.run_builtin(built.image, params, seconds=8, cpus=2, accel="tcg",
                                limit_s=limit, arch="arm64")  # fmt: skip
    assert time.monotonic() - start < limit + 30
    assert booted.failed and booted.outcome != "end-of-test", booted.console[-3000:]
    assert "rtmutex_lock-torture" in booted.console  # the console is kept
