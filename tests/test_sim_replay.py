"""`locklab run --sim` with locks of one's own, at the smallest scale: a lock for a fixed number
of threads is checked at the sweep's own point, and a failed simulated run prints the command
that replays it alone, with the same violation and the same counts."""

import subprocess
from pathlib import Path

from conftest import ROOT, plugin_path

LOCKLAB = ROOT / ".venv" / "bin" / "locklab"
# A small machine (16 CPUs) and a tiny virtual window: a run takes well under a second.
TINY = ["--sim", "mach1", "--repeat", "1", "--duration", "0.001", "--warmup", "0.0001"]


def locklab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LOCKLAB), *args], capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def test_a_two_thread_lock_runs_at_its_own_point_and_only_there(tmp_path: Path):
    """Peterson's lock refuses every thread count but 2: the pre-check tries the sweep's first
    point, so 2 writers run, and 3 are refused by the lock's own init, naming the point."""
    plugin = ["--plugin", str(plugin_path("sim", "peterson2")), "--lock", "peterson2"]
    store = ["--store", str(tmp_path / "store")]
    two = locklab("run", *TINY, *plugin, "--nwriters", "2", *store)
    assert two.returncode == 0, two.stderr
    assert "peterson2" in two.stdout and "failed" not in two.stderr
    three = locklab("run", *TINY, *plugin, "--nwriters", "3", *store)
    assert three.returncode == 2, three.stderr
    assert three.stderr.strip().splitlines() == [
        "locklab: error: --sim: peterson2 at nwriters=3: lock 'peterson2' failed to "
        "initialise: Invalid argument"
    ]
