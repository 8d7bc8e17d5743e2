"""Overlapped misses (native/sim/coherence.c): with a profile's fill buffers, independent misses
of one thread are in flight together; without them, or with LOCKLAB_SIM_STORES=in-turn, each
waits for the one before, figure for figure as before."""

import pytest
from locklab.errors import LocklabError
from locklab.model.machine_profile import load_profile
from test_sim import TINY_PROFILE, figures, simulate

# Ten lines written in the section and a 100 ns hold, two writers on two sockets: the case in
# which one miss after another costs most (issue 49, section 3).
TEN_LINES = ["--lock", "mcs", "--nwriters", "2", "--cs-lines", "10", "--hold-ns", "100",
             "--duration", "0.0005", "--warmup", "0.0001", "--pin", "scatter"]  # fmt: skip

OVERLAPPED = TINY_PROFILE.replace("ghz = 2.0\n", "ghz = 2.0\nfill_buffers = 10\n").replace(
    "[sources]\n", '[sources]\nfill_buffers = "estimate: test"\n'
)


def flat(tmp_path, text: str, name: str):
    profile = tmp_path / f"{name}.toml"
    profile.write_text(text)
    machine = tmp_path / f"{name}.machine"
    machine.write_text(load_profile(profile).flat_text())
    return machine


def test_independent_misses_overlap_and_in_turn_is_the_old_rule(tmp_path):
    overlapped = flat(tmp_path, OVERLAPPED, "overlapped")
    in_turn = flat(tmp_path, TINY_PROFILE, "in-turn")
    proc, fast = simulate(overlapped, TEN_LINES)
    assert proc.returncode == 0, proc.stderr
    proc, slow = simulate(in_turn, TEN_LINES)
    assert proc.returncode == 0, proc.stderr
    # Ten lines that came one after another come about together: the section is shorter.
    assert fast["throughput_ops_per_s"] > 1.5 * slow["throughput_ops_per_s"]
    proc, asked = simulate(overlapped, TEN_LINES, {"LOCKLAB_SIM_STORES": "in-turn"})
    assert proc.returncode == 0, proc.stderr
    assert figures(asked) == figures(slow)  # the rule before, field for field


def test_a_lock_of_rmws_and_polls_gains_nothing(tmp_path):
    """tas's misses are its test-and-sets, which drain, and its waiters' polls, which wait in
    turn (a spin's exit is a mispredicted branch): buffers change nothing for it."""
    overlapped = flat(tmp_path, OVERLAPPED, "overlapped")
    run = ["--lock", "tas", "--nwriters", "4", "--duration", "0.0005", "--warmup", "0.0001",
           "--pin", "scatter"]  # fmt: skip
    proc, with_buffers = simulate(overlapped, run)
    assert proc.returncode == 0, proc.stderr
    proc, without = simulate(overlapped, run, {"LOCKLAB_SIM_STORES": "in-turn"})
    assert proc.returncode == 0, proc.stderr
    ratio = with_buffers["throughput_ops_per_s"] / without["throughput_ops_per_s"]
    assert 0.9 < ratio < 1.1, ratio


def test_bad_store_rules_and_profiles_are_one_line(tmp_path):
    machine = flat(tmp_path, OVERLAPPED, "overlapped")
    proc, result = simulate(machine, TEN_LINES, {"LOCKLAB_SIM_STORES": "sometimes"})
    assert proc.returncode == 2 and result is None
    assert proc.stderr.strip().endswith("LOCKLAB_SIM_STORES must be overlapped or in-turn, "
                                        "not 'sometimes'")  # fmt: skip
    unsourced = tmp_path / "unsourced.toml"
    unsourced.write_text(TINY_PROFILE.replace("ghz = 2.0\n", "ghz = 2.0\nfill_buffers = 10\n"))
    with pytest.raises(LocklabError, match="no source for fill_buffers"):
        load_profile(unsourced)
    huge = tmp_path / "huge.toml"
    huge.write_text(OVERLAPPED.replace("fill_buffers = 10", "fill_buffers = 65"))
    with pytest.raises(LocklabError, match="fill_buffers must be a whole number from 0 to 64"):
        load_profile(huge)
