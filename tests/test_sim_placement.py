"""Where unpinned threads run in the simulator (native/sim/placement.c, docs/scheduler.md): a
new thread where fork balancing puts it, a woken one where select_task_rq_fair() does, and a
waiting one pulled by an idle CPU, by Linux 6.1's or 4.20's rules. On a 2-node profile of
two 4-CPU sockets, whose node distance decides whether forks may cross the nodes."""

from pathlib import Path

import pytest
from conftest import ROOT, locklab_cli
from locklab.errors import LocklabError
from locklab.model.campaign import load_campaign
from locklab.model.machine_profile import load_profile, with_sched
from test_sim import TINY_PROFILE, simulate

WINDOW = ["--duration", "0.02", "--warmup", "0.002"]


def two_nodes(folder: Path, distance: int, sched: str = "linux-6.1") -> Path:
    """Two sockets of 4 CPUs, one node each, `distance` apart (the SLIT)."""
    text = TINY_PROFILE.replace("cores_per_socket = 2", "cores_per_socket = 4").replace(
        "cores_per_llc = 2", "cores_per_llc = 4"
    )
    text = text.replace(
        "[topology]\n", f"[topology]\nnode_distance = [[10, {distance}], " f"[{distance}, 10]]\n"
    ).replace(  # fmt: skip
        "[sources]\n", '[sources]\nnode_distance = "estimate: test"\n'
    )
    profile = folder / f"two-{distance}.toml"
    profile.write_text(text)
    flat = folder / f"two-{distance}-{sched}.machine"
    flat.write_text(with_sched(load_profile(profile), sched).flat_text())
    return flat


def placed(result: dict) -> list[int]:
    return [thread["last_cpu"] for thread in result["threads"]]


def node(cpu: int) -> int:
    return cpu // 4


@pytest.mark.parametrize("sched", ["linux-6.1", "linux-4.20"])
def test_forks_never_cross_a_node_farther_than_the_reclaim_distance(tmp_path, sched):
    """At distance 40 (> RECLAIM_DISTANCE, 30) the NUMA domain has no SD_BALANCE_FORK: three
    spinners start on the creator's node, each on a CPU of its own."""
    proc, result = simulate(
        two_nodes(tmp_path, 40, sched),
        ["--lock", "ticket", "--nwriters", "3", "--pin", "none", *WINDOW],
    )
    assert proc.returncode == 0, proc.stderr
    cpus = placed(result)
    assert [node(cpu) for cpu in cpus] == [0, 0, 0] and len(set(cpus)) == 3, cpus
    assert result["context_switches"]["migrations"] == 0


def test_forks_spread_over_near_nodes_by_6_1s_numa_margin(tmp_path):
    """At 21, 6.1's find_idlest_group() lets a node hold at most imb_numa_nr (here 1: a node
    of 4 CPUs, one LLC, 4 >> 3 rounded up) running tasks with the control thread: the first
    writer goes to the other node."""
    proc, result = simulate(
        two_nodes(tmp_path, 21), ["--lock", "ticket", "--nwriters", "3", "--pin", "none", *WINDOW]
    )
    assert proc.returncode == 0, proc.stderr
    cpus = placed(result)
    assert node(cpus[0]) == 1 and {node(cpu) for cpu in cpus} == {0, 1}, cpus
    assert len(set(cpus)) == 3


def test_4_20_leaves_the_creators_node_once_its_load_passes_the_margin(tmp_path):
    """4.20's find_idlest_group() stays local on a NUMA level while the idlest node's runnable
    load plus imbalance_pct's margin (a quarter of a task per CPU here) reaches the local one:
    the control thread's load alone does, so the first writer stays on node 0; the second,
    forked while the first still runs, goes to node 1."""
    proc, result = simulate(
        two_nodes(tmp_path, 21, "linux-4.20"),
        ["--lock", "ticket", "--nwriters", "2", "--pin", "none", *WINDOW],
    )
    assert proc.returncode == 0, proc.stderr
    assert [node(cpu) for cpu in placed(result)] == [0, 1], placed(result)


def test_idle_cpus_pull_threads_waiting_on_shared_ones(tmp_path):
    """Six spinners, each fork kept on node 0's four CPUs (distance 40): two of them share a
    CPU with another, until idle CPUs of node 1 pull the waiting ones (newidle and the nohz
    kick; balancing crosses far nodes). Pinned the same way, the waiters spin through their
    neighbours' slices instead, and the lock collapses."""
    machine = two_nodes(tmp_path, 40)
    args = ["--lock", "ticket", "--nwriters", "6", *WINDOW]
    proc, free = simulate(machine, [*args, "--pin", "none"])
    assert proc.returncode == 0, proc.stderr
    cpus = placed(free)
    assert len(set(cpus)) == 6 and {node(cpu) for cpu in cpus} == {0, 1}, cpus
    proc, pinned = simulate(machine, [*args, "--pin", "0,1,2,3,0,1"])
    assert proc.returncode == 0, proc.stderr
    assert free["total_acquisitions"] > 100 * pinned["total_acquisitions"]
    assert pinned["context_switches"]["migrations"] == 0


def test_a_woken_thread_moves_to_an_idle_cpu_of_its_cache(tmp_path):
    """A futex mutex's sleepers, ten threads on eight CPUs of two near nodes: a woken thread
    whose CPU another has taken meanwhile finds an idle one in its cache
    (select_idle_sibling()), so threads move; the same command gives the same moves. With
    eight, one a CPU, none moves."""
    machine = two_nodes(tmp_path, 21)
    args = ["--lock", "futex_mutex", "--pin", "none", *WINDOW]
    proc, one_each = simulate(machine, [*args, "--nwriters", "8"])
    assert proc.returncode == 0, proc.stderr
    assert one_each["context_switches"]["migrations"] == 0
    assert sorted(placed(one_each)) == list(range(8))
    args += ["--nwriters", "10"]
    proc, first = simulate(machine, args)
    assert proc.returncode == 0, proc.stderr
    assert first["context_switches"]["migrations"] > 0
    assert (
        sum(thread["migrations"] for thread in first["threads"])
        == (first["context_switches"]["migrations"])
    )
    proc, second = simulate(machine, args)
    assert placed(second) == placed(first)
    assert second["context_switches"] == first["context_switches"]


def test_a_bad_slit_or_rule_is_one_line(tmp_path):
    bad = TINY_PROFILE.replace("[topology]\n", "[topology]\nnode_distance = [[10, 5], [5, 10]]\n")
    (tmp_path / "bad.toml").write_text(bad)
    with pytest.raises(LocklabError, match="node_distance"):
        load_profile(tmp_path / "bad.toml")
    good = load_profile(two_nodes(tmp_path, 21).with_suffix(".toml").with_name("two-21.toml"))
    with pytest.raises(LocklabError, match="unknown rules"):
        with_sched(good, "linux-2.6")


def test_a_campaign_takes_its_kernels_rules_or_another_by_name():
    """x5-4's profile names its seed's kernel, 4.20; --sched 6.1 is another experiment."""
    seed = ROOT / "campaigns" / "seed-002-x5-4.toml"
    own = load_campaign(seed)
    assert "sched linux-4.20\n" in own.sim_machine
    other = load_campaign(seed, sched="linux-6.1")
    assert "sched linux-6.1\n" in other.sim_machine and other.name == f"{own.name}-linux-6.1"


def test_sched_without_sim_is_one_line():
    proc = locklab_cli("run", "--lock", "ticket", "--sched", "linux-4.20")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        "locklab: error: --sched: the simulator's rules; give --sim MACHINE too"
    ], proc.stderr
