"""Places campaigns (kind = "places"): one set of patch files measured in the engine (the lock
compiled from the tree), in booted kernels (locktorture) and under a real program, in one table
whose verdicts compare each place with its own baseline.

The end-to-end test puts the comment-only test patch beside the deliberately broken rtmutex
patch: the broken one must come out as failed runs in the engine and in the kernel, in one
table. Its kernels are test_kernel_build.py's (cached by source, patches and config, so the
suite builds each once). Bounded by short durations and a timeout; no timing is asserted.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUILD, CORES, ROOT, bench_path
from locklab.errors import LocklabError
from locklab.model import places
from test_kernel_build import BROKEN_PATCH, TEST_PATCH, boot_tools

SEED = ROOT / "campaigns" / "seed-000-places.toml"
TORTURE = BUILD / "opt" / "interpose-torture"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "places.toml"
    path.write_text(text)
    return path


MINIMAL = """
kind = "places"
lock = "kernel:rtmutex"
[sweep]
nwriters = [2]
[[patch]]
label = "stock"
[engine]
"""


def test_the_seed_campaign_reads_at_both_scales():
    quick = places.load(SEED)
    assert quick.places == ["engine", "sim", "kernel", "program"]
    assert quick.sim is not None and quick.sim.sim == "taishan200-96c"
    assert [v.patches for v in quick.sim.variants] == [v.patches for v in quick.engine.variants]
    assert quick.labels == ["k0-stock", "k3-alongor"] and quick.baseline == "k0-stock"
    assert quick.engine is not None and quick.program is not None and quick.kernel is not None
    assert [v.label for v in quick.engine.variants] == quick.labels
    assert all(v.lock == "kernel:rtmutex" for v in quick.program.variants)
    assert quick.engine.variants[1].patches == quick.program.variants[1].patches
    assert [Path(p) for p in quick.engine.variants[1].patches] == quick.kernel.kernels["k3-alongor"]
    assert quick.kernel.torture_type == "rtmutex_lock" and quick.kernel.nwriters == [1, 2]
    assert quick.engine.repeat == 5 and quick.kernel.repeat == 2
    assert quick.program.program[:2] == ["kccachetest", "wicked"]
    full = places.load(SEED, full=True)
    assert full.name == "seed-000-places-full"
    assert full.kernel is not None and full.kernel.cpus == 96 and full.kernel.pin_cpus == "0-95"
    assert full.engine is not None and full.engine.duration_s == 60
    assert full.sim is not None and full.sim.duration_s == 0.02
    assert full.engine.sweep["nwriters"][-1] == 95


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (("[engine]", "[engine]\nsweep = 1"), "engine: 'sweep' is said once, at the top"),
        (('lock = "kernel:rtmutex"', 'lock = "mcs"'), "compiled from the tree"),
        (('lock = "kernel:rtmutex"', 'lock = "kernel:nosuch"'), "unknown kernel lock"),
        (("nwriters = [2]", "hold_ns = [2]"), "[sweep] takes nwriters only"),
        (('label = "stock"', 'label = "stock"\nfiles = []'), "takes a label and patches"),
        (("kind", 'baseline = "k9"\nkind'), "baseline 'k9' is not a [[patch]] label"),
        (("[engine]", '[kernel]\ntorture_type = "spin_lock"'), "torture_type must be"),
        (("[engine]", '[program]\ncommand = ["true"]\nthreads = 2'), "unknown key 'threads'"),
        (("[engine]", "[program]"), "give its command"),
        (("[engine]", ""), "no place"),
        (("[engine]", '[engine]\nduration = "long"'), "'duration' must be a number"),
        (("kind", "colour = 1\nkind"), "unknown key 'colour'"),
        (("kind", "source = 6\nkind"), "'source' must be a string"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_bad_places_campaigns_are_one_line(tmp_path, change, says):
    old, new = change
    path = write(tmp_path, MINIMAL.replace(old, new, 1))
    with pytest.raises(LocklabError) as error:
        places.load(path)
    message = str(error.value)
    assert "\n" not in message and says in message, message


def cli(*args: str, store: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "locklab.cli", *args, "--store", str(store), "--plain"],
        capture_output=True, text=True, timeout=timeout, check=False, cwd=ROOT,
        env={**os.environ, "LOCKLAB_ENGINE": str(bench_path("opt"))},
    )  # fmt: skip


@pytest.mark.timeout(1800)
def test_a_broken_patch_is_caught_in_the_engine_and_the_kernel_in_one_table(tmp_path):
    boot_tools()
    writers = 2 * CORES
    campaign = write(tmp_path, f"""
name = "places-test"
kind = "places"
lock = "kernel:rtmutex"
baseline = "test"
repeat = 2
[sweep]
nwriters = [{writers}]
[[patch]]
label = "test"
patches = ["{TEST_PATCH}"]
[[patch]]
label = "broken"
patches = ["{BROKEN_PATCH}"]
[engine]
duration = 0.5
warmup = 0.1
[sim]
machine = "mach1"
duration = 0.001
warmup = 0
[kernel]
repeat = 1
duration = 8
stat_interval = 1
cpus = 2
accel = "tcg"
[kernel.params]
stutter = 0
[program]
command = ["{TORTURE}", "--threads", "{{threads}}", "--iterations", "2000"]
timeout = 60
""")  # fmt: skip
    # Oversubscribed, as the from-source torture runs: the broken patch shows at once.
    dry = cli("campaign", str(campaign), "--dry-run", "--oversubscribe", store=tmp_path / "s",
              timeout=600)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "in engine, sim, kernel, program" in dry.stdout and "kernel: " in dry.stdout
    proc = cli("campaign", str(campaign), "--oversubscribe", store=tmp_path / "s", timeout=1500)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.returncode == 1, proc.stderr[-3000:]
    out = proc.stdout
    for place in ("engine", "sim", "kernel", "program"):
        assert f"{place} test (" in out and f"{place} broken (" in out, out
    assert "kernel: machine: qemu-tcg (emulated: timing not representative" in out
    assert "sim: simulated machine: virtual time" in out
    caught = next(line for line in out.splitlines() if line.startswith("  broken: "))
    assert "caught in engine, sim, kernel (emulated)" in caught, out
    assert "locklab: failed run: broken-rtmutex_lock" in proc.stderr
    assert (tmp_path / "s" / "places-test.html").is_file()
