"""locktorture's parameters: which ones a kernel version has, the values each accepts, and the
kernel command line that passes them to a locktorture built into the kernel.

A kernel's parameters are read from its own kernel/locking/locktorture.c (every
`torture_param(type, name, default, ...)` plus `torture_type`, whose values are the
`.name` of its lock_torture_ops), so a tree from any version is checked against what that
version accepts. LINUX_6_1 is that list for Linux 6.1 (Debian's linux-source-6.1), used when
no tree is at hand. Ranges: what the kernel itself rejects or cannot use (negative intervals,
a test with no threads), plus bounds that keep a run sane (at most 4096 threads, a day).
Everything is checked before anything is built or booted; a problem is one LocklabError line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from locklab.errors import LocklabError

DAY_S = 86400
MAX_THREADS = 4096


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "int", "bool", "charp" (as torture_param declares it)
    default: str
    minimum: int | None = None
    maximum: int | None = None
    meaning: str = ""


# Bounds per parameter name, for every version that has it; (minimum, maximum, meaning).
# -1 for the thread counts means "the kernel's default" (writers: 2 x CPUs).
_BOUNDS: dict[str, tuple[int | None, int | None, str]] = {
    "nwriters_stress": (-1, MAX_THREADS, "writer threads (-1: twice the CPUs)"),
    "nreaders_stress": (-1, MAX_THREADS, "reader threads (-1: as many as writers)"),
    "onoff_holdoff": (0, DAY_S, "seconds after boot before CPU hotplug starts"),
    "onoff_interval": (0, DAY_S, "seconds between CPU hotplugs (0: none)"),
    "shuffle_interval": (0, DAY_S * 100, "jiffies between thread shuffles (0: none)"),
    "shutdown_secs": (0, DAY_S, "seconds until the test ends and the machine powers off"),
    "stat_interval": (0, 3600, "seconds between statistics lines (0: only at the end)"),
    "stutter": (0, DAY_S * 100, "jiffies to run, then halt, the test (0: no stutter)"),
    "verbose": (0, 2, "debugging printk()s"),
    "long_hold": (0, 60000, "milliseconds a writer now and then holds the lock"),
    "nested_locks": (0, 8, "nested locks per acquisition (the kernel's MAX_NESTED_LOCKS)"),
    "rt_boost": (0, 2, "0: no RT boosting, 1: rtmutex only, 2: every lock type"),
    "rt_boost_factor": (1, 1 << 20, "how often threads are boosted"),
    "writer_fifo": (0, 1, "writers run SCHED_FIFO"),
    "acq_writer_lim": (0, 1 << 30, "longest acquisition allowed, in ms (0: unchecked)"),
    "call_rcu_chains": (0, MAX_THREADS, "call_rcu() chains run alongside (0: none)"),
}


def _int(name: str, default: str) -> Param:
    low, high, meaning = _BOUNDS.get(name, (None, None, ""))
    return Param(name, "int", default, low, high, meaning)


# Linux 6.1, kernel/locking/locktorture.c: its torture_param list and its lock_torture_ops.
LINUX_6_1: dict[str, Param] = {
    "torture_type": Param("torture_type", "charp", "spin_lock", meaning="the lock to torture"),
    **{
        name: _int(name, default)
        for name, default in (
            ("nwriters_stress", "-1"),
            ("nreaders_stress", "-1"),
            ("onoff_holdoff", "0"),
            ("onoff_interval", "0"),
            ("shuffle_interval", "3"),
            ("shutdown_secs", "0"),
            ("stat_interval", "60"),
            ("stutter", "5"),
            ("verbose", "1"),
        )
    },  # fmt: skip
}
TORTURE_TYPES_6_1 = (
    "lock_busted", "spin_lock", "spin_lock_irq", "rw_lock", "rw_lock_irq", "mutex_lock",
    "ww_mutex_lock", "rtmutex_lock", "rwsem_lock", "percpu_rwsem_lock",
)  # fmt: skip
# The ops that have a read side (nreaders_stress means something only for them).
READ_SIDE = ("rw_lock", "rw_lock_irq", "rwsem_lock", "percpu_rwsem_lock")

_TORTURE_PARAM = re.compile(r"torture_param\(\s*(\w+)\s*,\s*(\w+)\s*,\s*([^,]+?)\s*,", re.S)
_OPS_NAME = re.compile(r"\.name\s*=\s*\"([\w-]+)\"")
_CPULIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


@dataclass(frozen=True)
class Locktorture:
    """What one kernel's locktorture accepts."""

    params: dict[str, Param]
    torture_types: tuple[str, ...]
    version: str


def linux_6_1() -> Locktorture:
    return Locktorture(LINUX_6_1, TORTURE_TYPES_6_1, "6.1")


def from_source(tree: Path, version: str = "") -> Locktorture:
    """The parameters and torture types of the locktorture.c in a kernel tree."""
    path = tree / "kernel" / "locking" / "locktorture.c"
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise LocklabError(f"{path}: cannot read it ({error.strerror})") from None
    params = {"torture_type": LINUX_6_1["torture_type"]}
    for kind, name, default in _TORTURE_PARAM.findall(text):
        if kind in ("int", "long", "uint", "ulong", "short", "ushort"):
            params[name] = _int(name, default)
        elif kind == "bool":
            params[name] = Param(name, "bool", default, 0, 1)
        else:
            params[name] = Param(name, "charp", default)
    # Later versions declare the CPU masks with module_param, not torture_param.
    for name in re.findall(r"module_param\((bind_\w+)\s*,", text):
        params[name] = Param(name, "cpulist", "", meaning="CPUs the threads are bound to")
    types = tuple(dict.fromkeys(_OPS_NAME.findall(text)))
    if not types or len(params) < 2:
        raise LocklabError(f"{path}: found no locktorture parameters in it")
    return Locktorture(params, types, version)


def check(params: dict[str, object], torture: Locktorture | None = None) -> dict[str, str]:
    """The parameters as the kernel command line will carry them, each checked: an unknown
    name, a value of the wrong kind or out of range is one LocklabError line."""
    torture = torture or linux_6_1()
    version = f"Linux {torture.version}'s " if torture.version else "this kernel's "
    checked: dict[str, str] = {}
    for name, raw in params.items():
        value = str(raw).strip()
        param = torture.params.get(name)
        if param is None:
            known = ", ".join(sorted(torture.params))
            raise LocklabError(
                f"locktorture parameter {name!r}: {version}locktorture has no such parameter "
                f"(it has: {known})"
            )
        if name == "torture_type":
            if value not in torture.torture_types:
                raise LocklabError(
                    f"locktorture.torture_type={value!r}: {version}locktorture has no such "
                    f"lock (it has: {', '.join(torture.torture_types)})"
                )
        elif param.kind == "bool":
            if value.lower() not in ("0", "1", "y", "n", "true", "false"):
                raise LocklabError(f"locktorture.{name}={value!r}: give 0 or 1")
            value = "1" if value.lower() in ("1", "y", "true") else "0"
        elif param.kind == "cpulist":
            if not _CPULIST.match(value):
                raise LocklabError(f"locktorture.{name}={value!r}: give a CPU list like 0-3,8")
        elif param.kind == "int":
            if not re.fullmatch(r"-?\d+", value):
                raise LocklabError(f"locktorture.{name}={value!r}: not an integer")
            number = int(value)
            low = param.minimum if param.minimum is not None else -(2**31)
            high = param.maximum if param.maximum is not None else 2**31 - 1
            if not low <= number <= high:
                what = f" ({param.meaning})" if param.meaning else ""
                raise LocklabError(
                    f"locktorture.{name}={number}: out of range, must be from {low} to {high}{what}"
                )
            value = str(number)
        elif not re.fullmatch(r"[\w.,:-]+", value):
            raise LocklabError(f"locktorture.{name}={value!r}: letters, digits and _.,:- only")
        checked[name] = value
    if checked.get("nwriters_stress") == "0" and (
        checked.get("torture_type", "spin_lock") not in READ_SIDE
        or checked.get("nreaders_stress", "0") == "0"
    ):
        raise LocklabError(
            "locktorture: nwriters_stress=0 leaves no thread to run (this lock has no readers, "
            "or nreaders_stress is 0 too)"
        )
    return checked


def command_line(params: dict[str, str]) -> str:
    """`locktorture.NAME=VALUE ...`, for a locktorture built into the kernel."""
    return " ".join(f"locktorture.{name}={value}" for name, value in params.items())
