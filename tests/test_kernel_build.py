"""Kernels built from linux-source-6.1 with patches, locktorture built in, booted in QEMU.

The end-to-end tests build one minimal kernel (tinyconfig plus the lock-torture scenarios'
options; 4 to 5 minutes on 2 cores the first time) with a comment-only test patch, then the
same tree with a deliberately broken rtmutex patch (an incremental rebuild of rtmutex, about
a minute with ccache), and boot each under emulation. Images are cached in build/kernel/ keyed
by source, patches and config, so a second `make test` builds nothing. Skipped, with the
reason, where the packages are missing (scripts/install-deps.sh installs them)."""

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT
from locklab.errors import LocklabError
from locklab.kernel import build as kernel_build
from locklab.kernel import build_inputs, locktorture
from locklab.kernel import campaign as kernel_campaign
from locklab.kernel import params as kernel_params
from locklab.kernel import qemu as kernel
from locklab.kernel.initramfs import BUSYBOX

PATCHES = ROOT / "campaigns" / "patches"
TEST_PATCH = PATCHES / "test" / "0001-rtmutex-comment-only.patch"
BROKEN_PATCH = PATCHES / "broken" / "0001-rtmutex-take-an-owned-lock-now-and-then.patch"
SEED_PATCHES = sorted(PATCHES.glob("000*.patch"))


def one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def needs(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if not kernel_build.SOURCE_TARBALL.exists():
        missing.append("linux-source-6.1")
    if missing:
        pytest.skip(f"kernel build test skipped: {', '.join(missing)} missing")


def extract(tmp_path: Path, *names: str) -> Path:
    """Single files of linux-source-6.1, for tests that need no whole tree: copied from the
    unpacked tree where a build has unpacked it, else taken from the tarball."""
    needs("tar")
    tree = tmp_path / "linux-source-6.1"
    if (kernel_build.DEFAULT_SOURCE / "Makefile").exists():
        for name in names:
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(kernel_build.DEFAULT_SOURCE / name, tree / name)
        return tree
    members = [f"linux-source-6.1/{name}" for name in names]
    subprocess.run(["tar", "-xJf", str(kernel_build.SOURCE_TARBALL), "-C", str(tmp_path),
                    *members], check=True)  # fmt: skip
    return tree


# --- parameters: checked before anything is built or booted ---------------------------------


def test_every_6_1_locktorture_parameter_is_known(tmp_path):
    tree = extract(tmp_path, "kernel/locking/locktorture.c")
    from_tree = kernel_params.from_source(tree, "6.1")
    assert from_tree.params == kernel_params.LINUX_6_1
    assert from_tree.torture_types == kernel_params.TORTURE_TYPES_6_1
    assert kernel.TORTURE_TYPES == kernel_params.TORTURE_TYPES_6_1


def test_good_parameters_become_the_command_line():
    checked = kernel_params.check({"torture_type": "rtmutex_lock", "nwriters_stress": 4,
                                   "stat_interval": "2", "stutter": 0, "shuffle_interval": 0,
                                   "onoff_interval": 0, "onoff_holdoff": 0, "verbose": 1,
                                   "nreaders_stress": -1, "shutdown_secs": 10})  # fmt: skip
    line = kernel_params.command_line(checked)
    assert line.startswith("locktorture.torture_type=rtmutex_lock locktorture.nwriters_stress=4")


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"torture_type": "rtmutex"}, "no such lock"),
        ({"nwriters_stress": "many"}, "not an integer"),
        ({"nwriters_stress": "100000"}, "out of range"),
        ({"stat_interval": "-1"}, "out of range"),
        ({"long_hold": "10"}, "no such parameter"),  # 6.4 and later only
        ({"rt_boost": "1"}, "no such parameter"),
        ({"nwriters_stress": "0", "torture_type": "rtmutex_lock"}, "no thread"),
    ],
)
def test_bad_parameters_are_one_line(params, says):
    with pytest.raises(LocklabError) as error:
        kernel_params.check(params)
    assert says in one_line(error)


def test_later_parameters_are_checked_where_the_source_has_them(tmp_path):
    source = tmp_path / "kernel" / "locking"
    source.mkdir(parents=True)
    (source / "locktorture.c").write_text(
        'torture_param(int, nwriters_stress, -1, "x");\n'
        'torture_param(int, rt_boost, 2, "x");\n'
        'torture_param(int, nested_locks, 0, "x");\n'
        'torture_param(bool, writer_fifo, false, "x");\n'
        "module_param(bind_writers, cpumask, 0444);\n"
        'static struct lock_torture_ops x = { .name = "rtmutex_lock" };\n'
    )
    later = kernel_params.from_source(tmp_path, "6.9")
    checked = kernel_params.check(
        {"rt_boost": "1", "writer_fifo": "y", "bind_writers": "0-3,8"}, later
    )
    assert checked == {"rt_boost": "1", "writer_fifo": "1", "bind_writers": "0-3,8"}
    for bad in ({"nested_locks": "9"}, {"bind_writers": "all"}, {"writer_fifo": "2"}):
        with pytest.raises(LocklabError) as error:
            kernel_params.check(bad, later)
        one_line(error)


# --- config and patches: one line, nothing built ---------------------------------------------


def test_config_fragment_syntax_is_one_line(tmp_path):
    fragment = tmp_path / "bad.config"
    fragment.write_text("CONFIG_SMP=y\nSMP y\n")
    with pytest.raises(LocklabError) as error:
        kernel_build.build({"k0": []}, config_fragment=fragment)
    assert "bad.config:2: not a config line" in one_line(error)


def test_config_check_names_the_missing_option():
    final = build_inputs.parse_fragment("CONFIG_64BIT=y\nCONFIG_SMP=y\nCONFIG_ACPI=y\n")
    with pytest.raises(LocklabError) as error:
        build_inputs.check_config(final, {})
    assert "CONFIG_LOCK_TORTURE_TEST is not set" in one_line(error)
    everything = {name: "y" for name in build_inputs.NEEDED}
    with pytest.raises(LocklabError) as error:
        build_inputs.check_config(everything, {"NO_SUCH_OPTION": "y"})
    assert "CONFIG_NO_SUCH_OPTION=y was asked for" in one_line(error)


def test_a_patch_that_does_not_apply_is_one_line_and_nothing_is_built(tmp_path):
    needs("patch", "tar")
    bad = tmp_path / "0001-bad.patch"
    text = TEST_PATCH.read_text().replace(" *  See Documentation", " *  See Nowhere")
    bad.write_text(text)
    before = set(kernel_build.IMAGES.glob("*")) if kernel_build.IMAGES.exists() else set()
    with pytest.raises(LocklabError) as error:
        kernel_build.build({"good": [TEST_PATCH], "bad": [bad]})
    message = one_line(error)
    assert str(bad) in message
    assert "hunk #1 of kernel/locking/rtmutex.c failed" in message
    after = set(kernel_build.IMAGES.glob("*")) if kernel_build.IMAGES.exists() else set()
    assert after == before  # not even the good label was built


def test_the_seed_patches_apply_alone_and_combined(tmp_path):
    needs("patch", "tar")
    tree = extract(tmp_path, "kernel/locking/rtmutex.c")
    assert len(SEED_PATCHES) == 3
    for patch in [*SEED_PATCHES, BROKEN_PATCH, TEST_PATCH]:  # each alone
        build_inputs.check_patches(tree, [patch])
    # Patches of one label stack: k2 and k3 change the same line two ways, so not together.
    with pytest.raises(LocklabError, match="0003-rtmutex-atomic_long_or.* does not apply"):
        build_inputs.check_patches(tree, [SEED_PATCHES[1], SEED_PATCHES[2]])
    for combination in ([SEED_PATCHES[0], SEED_PATCHES[1]], [SEED_PATCHES[0], SEED_PATCHES[2]]):
        work = tmp_path / f"work-{combination[-1].name[:4]}"
        shutil.copytree(tree, work)
        for patch in combination:
            subprocess.run(["patch", "-p1", "--batch", "-i", str(patch)], cwd=work,
                           capture_output=True, check=True)  # fmt: skip


def test_console_verdicts():
    assert kernel.console_verdict("[ 1.0] rtmutex_lock-torture: Writes: Total: 5") is None
    end = "rtmutex_lock-torture:--- End of test: SUCCESS: nwriters_stress=2"
    assert kernel.console_verdict(end) == "end-of-test"
    oops = "x\n[ 2.1] BUG: kernel NULL pointer dereference, address: 0\n[ 2.1] Oops: 0000"
    assert kernel.console_verdict(oops).startswith("oops: ")
    lockup = "[ 30.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!"
    assert kernel.console_verdict(lockup).startswith("soft lockup: ")
    assert kernel.console_verdict("--- End of test: FAILURE: x").startswith("locktorture failure")


# --- end to end: build, boot, torture --------------------------------------------------------

BUILD_TOOLS = ("make", "gcc", "flex", "bison", "bc", "patch", "tar", "xz")


def boot_tools() -> None:
    needs(*BUILD_TOOLS, "qemu-system-x86_64")
    if not BUSYBOX.exists():
        pytest.skip("kernel boot test skipped: busybox-static missing")


@pytest.mark.timeout(1500)
def test_patched_kernel_builds_once_boots_and_measures():
    boot_tools()
    built = kernel_build.build({"ci-test": [TEST_PATCH]})["ci-test"]
    assert built.image.is_file()
    assert built.version.startswith("6.1")
    assert [patch["name"] for patch in built.patches] == [TEST_PATCH.name]
    assert len(built.config_sha256) == 64
    start = time.monotonic()
    again = kernel_build.build({"ci-test": [TEST_PATCH]})["ci-test"]
    assert again.cached and again.image == built.image and again.key == built.key
    assert time.monotonic() - start < 30  # the cache, not a build

    params = kernel_params.check({"torture_type": "rtmutex_lock", "nwriters_stress": "2",
                                  "stat_interval": "1", "stutter": "0"})  # fmt: skip
    # Each vCPU pinned to a CPU of its own (multi-threaded TCG), the second CPU first.
    allowed = sorted(os.sched_getaffinity(0))
    pin = [allowed[1], allowed[0]] if len(allowed) >= 2 else None
    booted = kernel.run_builtin(built.image, params, seconds=6, cpus=2, accel="tcg", pin=pin)
    assert booted.outcome == "end-of-test", booted.console[-3000:]
    if pin:  # read from /proc while QEMU ran, before the guest started
        assert [(p.vcpu, p.cpus_allowed_list) for p in booted.pinned] == [
            (0, str(pin[0])), (1, str(pin[1]))]  # fmt: skip
    assert "rtmutex_lock-torture:--- End of test: SUCCESS" in booted.console
    (run,), _problems = locktorture.parse(booted.console, "console")
    totals = [report.total for report in run.writes]
    assert len(totals) >= 3 and totals[-1] > totals[0]  # throughput measured: Writes grow
    assert locktorture.measure(run, 1) is not None


@pytest.mark.timeout(900)
def test_broken_rtmutex_patch_is_a_failed_run_within_the_limit():
    boot_tools()
    built = kernel_build.build({"ci-broken": [BROKEN_PATCH]})["ci-broken"]
    params = kernel_params.check({"torture_type": "rtmutex_lock", "nwriters_stress": "4",
                                  "stat_interval": "1", "stutter": "0"})  # fmt: skip
    limit = 150.0
    start = time.monotonic()
    booted = kernel.run_builtin(built.image, params, seconds=8, cpus=2, accel="tcg",
                                limit_s=limit)  # fmt: skip
    assert time.monotonic() - start < limit + 30
    assert booted.failed, booted.console[-3000:]
    assert booted.outcome != "end-of-test"
    assert "rtmutex_lock-torture" in booted.console  # the console is kept


def test_an_unknown_config_option_is_one_line_after_olddefconfig(tmp_path):
    needs(*BUILD_TOOLS)
    fragment = tmp_path / "unknown.config"
    fragment.write_text("CONFIG_LOCKLAB_NO_SUCH_OPTION=y\n")
    with pytest.raises(LocklabError) as error:
        kernel_build.build({"k0": []}, config_fragment=fragment)
    assert "CONFIG_LOCKLAB_NO_SUCH_OPTION=y was asked for" in one_line(error)


# --- the seed-000 kernel campaign: read and checked, nothing built ---------------------------

SEED_000 = ROOT / "campaigns" / "seed-000-kernel.toml"


def test_the_seed_000_kernel_campaign_reads_at_both_scales():
    quick = kernel_campaign.load(SEED_000)
    assert list(quick.kernels) == ["k0-stock", "k1-rmacq", "k2-readonce", "k3-alongor",
                                   "k4-rmacq+readonce", "k5-rmacq+alongor"]  # fmt: skip
    assert quick.kernels["k0-stock"] == []
    assert [p.name for p in quick.kernels["k5-rmacq+alongor"]] == [
        SEED_PATCHES[0].name, SEED_PATCHES[2].name]  # fmt: skip
    assert all(patch.is_file() for patches in quick.kernels.values() for patch in patches)
    full = kernel_campaign.load(SEED_000, full=True)
    assert full.nwriters == [1, 2, 3, 4, 8, 16, 32, 64, 95]
    assert (full.repeat, full.duration, full.stat_interval) == (5, 64, 4)
    assert kernel_campaign.run_params(full, 95)["nwriters_stress"] == "95"


def test_a_bad_parameter_in_a_kernel_campaign_is_one_line(tmp_path):
    text = SEED_000.read_text().replace("stutter = 0", "stuter = 0")
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('"patches/', f'"{SEED_000.parent}/patches/'))
    with pytest.raises(LocklabError) as error:
        kernel_campaign.load(bad)
    assert "'stuter'" in one_line(error)


def test_cli_kernel_build_and_patch_errors_are_one_line(tmp_path, capsys):
    """`locklab kernel build` and `locklab kernel --patch`: bad input before anything builds."""
    from locklab.cli.main import main

    bad = tmp_path / "bad.patch"
    bad.write_text("--- a/nowhere.c\n+++ b/nowhere.c\n@@ -1 +1 @@\n-x\n+y\n")
    cases = [
        (["kernel", "build", "--patch", f"k={bad}"], "does not apply"),
        (["kernel", "build", "--patch", f"k={tmp_path / 'missing.patch'}"], "missing.patch"),
        (["kernel", "--patch", "k0", "--param", "no_such_param=1"], "no_such_param"),
        (["kernel", "--kernel", "x", "--param", "stutter=0"], "only for kernels built"),
        (["kernel", "--patch", "k0", "--param", "nwriters_stress=3"], "use --type, --nwriters"),
    ]
    for args, expected in cases:
        code = main([*args, "--store", str(tmp_path / "s")] if args[1] != "build" else args)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (args, err)
        assert expected in err, (args, err)
