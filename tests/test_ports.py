"""One truth per kernel lock: each hand port against the tree's own code of the same 6.1 lock,
in the simulator, where every figure is exact and the same on every machine. A port stays
within model/ports.py's tolerance of the tree's code at every writer count checked (port / tree
as the geometric mean over model/ports.py's gaps between acquisitions), or the
difference is in its KNOWN_DIFFERENCES with what is known of its cause; a listed difference
that has gone, or moved, fails too, so the list says what the code does."""

from pathlib import Path

import pytest
from conftest import bench_path
from locklab.model import ports
from locklab.model.ports import (
    CHECK_GAPS_NS,
    CHECK_PROFILE,
    CHECK_SECONDS,
    CHECK_WRITERS,
    KNOWN_DIFFERENCES,
    PORT_OF_TREE_LOCK,
    SIMULATED_TOLERANCE,
    PortDifference,
    differences_note,
    known_difference,
)
from locklab.run.port_compare import compare_simulated

pytestmark = pytest.mark.skipif(
    not Path("/usr/src/linux-source-6.1.tar.xz").exists(),
    reason="linux-source-6.1 is not installed (make deps installs it)",
)


@pytest.mark.parametrize("tree_lock", list(PORT_OF_TREE_LOCK))
def test_each_port_is_within_tolerance_of_the_tree_or_the_difference_is_named(tree_lock):
    port = PORT_OF_TREE_LOCK[tree_lock]
    rows = compare_simulated(bench_path("opt"), tree_lock, port, CHECK_WRITERS, CHECK_GAPS_NS,
                             CHECK_PROFILE, CHECK_SECONDS)  # fmt: skip
    for row in rows:
        known = known_difference(port, row.nwriters)
        outside = abs(row.ratio - 1) > SIMULATED_TOLERANCE
        at_gaps = ", ".join(f"{at.ratio:.2f} at {at.gap_ns} ns" for at in row.at_gaps)
        where = (f"{port} / {tree_lock} at {row.nwriters} simulated writers: {row.ratio:.3f} "
                 f"(geometric mean of {at_gaps})")  # fmt: skip
        if known is None:
            assert not outside, f"{where}, an unexplained difference (model/ports.py)"
        else:
            assert outside, f"{where}: listed in KNOWN_DIFFERENCES, but within tolerance now"
            assert (
                abs(row.ratio - known.ratio) <= 0.05 * known.ratio
            ), f"{where}: KNOWN_DIFFERENCES says {known.ratio:.2f}"


def test_every_known_difference_is_of_a_checked_cell_and_the_table_names_it(monkeypatch):
    for difference in KNOWN_DIFFERENCES:
        assert difference.port in PORT_OF_TREE_LOCK.values()
        assert difference.nwriters in CHECK_WRITERS
        assert difference.why
    listed = PortDifference(port="rtmutex_k0", nwriters=2, ratio=1.82, why="a cause")
    monkeypatch.setattr(ports, "KNOWN_DIFFERENCES", (listed,))
    note = differences_note(["rtmutex_k0", "kernel:rtmutex", "ticket"])
    assert note is not None and "rtmutex_k0 1.82x at 2 writers" in note
    note = differences_note(["mutex", "kernel:mutex", "ticket"])
    assert note == "mutex and kernel:mutex: within 10% of each other when simulated"
    assert differences_note(["mutex", "kernel:rwsem"]) is None
