"""What a C11 fence costs in the simulator: what the compiler emits for it on the profile's
architecture (native/sim/tsan_hooks.c, docs/simulator.md "Barriers and fences")."""

from conftest import ROOT, bench_path
from locklab.model.machine_profile import load_profile
from locklab.run import source_plugin
from test_sim import RUN, TINY_PROFILE, simulate


def test_a_c11_fence_costs_what_the_profiles_architecture_emits(tmp_path):
    """examples/plugin/c11_ttas.c orders its hand-over with an acquire and a release fence,
    tests/plugins/c11_ttas_orders.c with the same orders on its accesses. x86 emits nothing
    for either fence: the two run alike. arm64 emits dmb ish for the release fence, a full
    barrier: the fenced one pays it at every unlock. (Every fenced order once cost a full
    barrier on x86 too.)"""
    acquisitions = {}
    for arch in ("x86_64", "arm64"):
        profile = tmp_path / f"tiny-{arch}.toml"
        profile.write_text(TINY_PROFILE.replace('arch = "x86_64"', f'arch = "{arch}"'))
        flat = tmp_path / f"tiny-{arch}.machine"
        flat.write_text(load_profile(profile).flat_text())
        for source, lock in ((ROOT / "examples" / "plugin" / "c11_ttas.c", "c11_ttas"),
                             (ROOT / "tests" / "plugins" / "c11_ttas_orders.c",
                              "c11_ttas_orders")):  # fmt: skip
            plugin = source_plugin.compiled(source, "sim", bench_path("opt"))
            proc, result = simulate(flat, ["--plugin", str(plugin), "--lock", lock, *RUN])
            assert proc.returncode == 0 and result is not None, proc.stderr
            acquisitions[arch, lock] = result["total_acquisitions"]
    x86_ratio = acquisitions["x86_64", "c11_ttas"] / acquisitions["x86_64", "c11_ttas_orders"]
    arm_ratio = acquisitions["arm64", "c11_ttas"] / acquisitions["arm64", "c11_ttas_orders"]
    assert 0.99 < x86_ratio < 1.01, acquisitions
    assert arm_ratio < 0.95, acquisitions
