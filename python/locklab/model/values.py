"""The values a user gives, checked and parsed: axes and their limits, lists like ``1-4,8``,
durations, params, labels, and a variant against the lock catalogue. Each check raises
LocklabError with one line."""

from __future__ import annotations

import math
import re

from locklab.errors import LocklabError

# The axes a sweep may vary, in the order they key a configuration. The first one given more
# than one value becomes the rows of the table (seed 000: nwriters).
AXES: tuple[str, ...] = ("nwriters", "nreaders", "hold_ns", "gap_ns", "cs_lines")
AXIS_DEFAULTS: dict[str, int] = {
    "nwriters": 1,
    "nreaders": 0,
    "hold_ns": 0,
    "gap_ns": 0,
    "cs_lines": 0,
}
AXIS_LIMITS: dict[str, int] = {
    "nwriters": 4096,
    "nreaders": 4096,
    "hold_ns": 10**9,
    "gap_ns": 10**9,
    "cs_lines": 4096,
}
PIN_MODES = ("none", "compact", "cores", "scatter")
MAX_DURATION_S = 86400.0
# The engine's --seed is an unsigned 64-bit number; each run's is seed * 1000 + repeat + 1
# (ExperimentSpec.run_seed) unless --engine-seed gives it.
MAX_ENGINE_SEED = 2**64 - 1
MAX_SEED = (MAX_ENGINE_SEED - 1000) // 1000


def validate_label(label: str) -> None:
    """A variant's label keys its runs in the store (the text form of ConfigKey)."""
    if not label or "|" in label:
        raise LocklabError(f"variant label '{label}' must be non-empty, without '|'")


def validate_axis(axis: str, values: list[int]) -> None:
    if not values:
        raise LocklabError(f"{axis}: empty sweep, give at least one value")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise LocklabError(f"{axis}: '{value}' is not an integer")
        if not 0 <= value <= AXIS_LIMITS[axis]:
            raise LocklabError(f"{axis}: {value} is out of range [0, {AXIS_LIMITS[axis]}]")
    if len(set(values)) != len(values):
        raise LocklabError(f"{axis}: a value is given twice in {values}")


def validate_seconds(what: str, value: float, minimum: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise LocklabError(f"{what}: '{value}' is not a number of seconds")
    if value < 0:
        raise LocklabError(f"{what}: must not be negative (got {value:g})")
    if value < minimum:
        raise LocklabError(f"{what}: must be at least {minimum:g} s (got {value:g})")
    if value > MAX_DURATION_S:
        raise LocklabError(f"{what}: {value:g} s is more than a day")


# The most values one list may expand to: a sweep of more points than this is a typo, and a
# range is checked against it before it is built (1-1000000000 is not 4 GB of integers).
MAX_LIST_VALUES = 4096


def parse_int_list(axis: str, text: str) -> list[int]:
    """'1,2,4' or '1-4,8' (ranges inclusive) into a list of integers."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise LocklabError(f"{axis}: empty value in '{text}'")
        low, dash, high = part.partition("-")
        try:
            if dash and low:
                first, last = int(low), int(high)
                if last < first:
                    raise LocklabError(f"{axis}: range '{part}' runs backwards")
                if len(values) + last - first + 1 > MAX_LIST_VALUES:
                    raise LocklabError(f"{axis}: '{text}' has more than {MAX_LIST_VALUES} values")
                values += range(first, last + 1)
            else:
                values.append(int(part))
        except ValueError:
            raise LocklabError(f"{axis}: '{part}' is not an integer or a range like 1-4") from None
    if len(values) > MAX_LIST_VALUES:
        raise LocklabError(f"{axis}: '{text}' has more than {MAX_LIST_VALUES} values")
    return values


# A tunable's value: an integer, or the name of one of its choices (wait=spin-then-park).
ParamValue = int | str
CHOICE_NAME = re.compile(r"[a-z][a-z0-9_-]*")


def parse_param(text: str) -> tuple[str | None, str, ParamValue]:
    """'name=value' or 'lock.name=value' into (lock or None, name, value). A value that is not
    an integer must look like a choice's name; whether the tunable has it is checked later,
    against the catalogue."""
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise LocklabError(f"--param: expected NAME=VALUE or LOCK.NAME=VALUE, got '{text}'")
    lock, dot, bare = name.rpartition(".")
    try:
        parsed: ParamValue = int(value, 0)
    except ValueError:
        if not CHOICE_NAME.fullmatch(value):
            raise LocklabError(f"--param {name}: '{value}' is not an integer or a name") from None
        parsed = value
    return (lock if dot else None), bare, parsed


def split_params(texts: list[str]) -> list[str]:
    """--param a=1,b=2 is --param a=1 --param b=2."""
    return [item for text in texts for item in text.split(",") if item]


def is_cpu_list(text: str) -> bool:
    try:
        parse_int_list("pin", text)
    except LocklabError:
        return False
    return True


def validate_pin(pin: str, name: str = "pin") -> None:
    """Where the threads run: a placement the engine knows, or a CPU list."""
    if pin not in PIN_MODES and not is_cpu_list(pin):
        raise LocklabError(
            f"{name} must be {', '.join(PIN_MODES)} or a CPU list like 0,2,4-7 (got '{pin}')"
        )
