"""How every figure draws (`locklab plot`'s PNG and SVG, the report's charts): one lock, one
look, from its name alone; and the axis of thread counts.

- Colours: Okabe and Ito's eight ("Color Universal Design", 2008), told apart under the common
  colour-vision deficiencies; yellow last, as it is the faintest on white.
- A style is (colour, marker, dash): 8 x 4 x 2 = 64. The built-in locks listed below have theirs
  fixed, in that order: the first eight differ by colour, the next by marker too. Any other name
  (a plugin, a variant's label such as k0-stock) takes the style its SHA-256 picks, so it is
  the same in every report of every store.
- Two locks of one figure never share a style: where a name's style is taken by a lock drawn
  before it (the figure's column order), it takes the next free one, in style order. So a
  figure of the same locks always looks the same; only such a clash makes a lock's look
  depend on its company.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000",
             "#F0E442")  # fmt: skip
# (matplotlib, plotly) spellings of each marker and dash.
MARKERS = (("o", "circle"), ("s", "square"), ("^", "triangle-up"), ("D", "diamond"))
DASHES = (("-", "solid"), ("--", "dash"))
STYLES = len(OKABE_ITO) * len(MARKERS) * len(DASHES)
# The built-in locks with a style of their own. The first eight, each a colour of its own, are
# those drawn together most often: make demo's five, and seed 002's qspinlock, CNA v15 and v1.
FIXED = ("ticket", "mcs", "qspinlock", "cna", "pthread_mutex", "tas", "futex_mutex", "cna_v1",
         "ttas", "clh", "mutex", "rwsem", "rtmutex", "anderson", "ttas_backoff",
         "ticket_fixed_delay", "ticket_auto_backoff", "ticket_auto_backoff_rfc",
         "qspinlock_nr16k", "mutex_3_10", "rwsem_xadd_3_10", "rtmutex_rt_2_6_24",
         "rtmutex_adaptive", "pthread_mutex_pi", "pi_futex", "pthread_spinlock",
         "pthread_rwlock", "ck_ticket", "ck_ticket_pb", "ck_mcs", "ck_clh", "ck_fas")  # fmt: skip
# Line styles of a lock's several traces in one chart (one per thread count), plotly's names.
TRACE_DASHES = ("solid", "dot", "dash", "longdash", "dashdot", "longdashdot")


@dataclass(frozen=True)
class Style:
    color: str
    marker: str  # matplotlib's
    dash: str  # matplotlib's
    plotly_marker: str
    plotly_dash: str


def _style(number: int) -> Style:
    color = OKABE_ITO[number % len(OKABE_ITO)]
    marker = MARKERS[number // len(OKABE_ITO) % len(MARKERS)]
    dash = DASHES[number // (len(OKABE_ITO) * len(MARKERS)) % len(DASHES)]
    return Style(color, marker[0], dash[0], marker[1], dash[1])


def style_number(name: str) -> int:
    """The style a name has on its own: its place in FIXED, else its hash's."""
    if name in FIXED:
        return FIXED.index(name)
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % STYLES


def figure_styles(names: Iterable[str]) -> dict[str, Style]:
    """The style of each lock of one figure, in the figure's order: its own unless a lock
    before it took that one, then the next free."""
    taken: set[int] = set()
    styles: dict[str, Style] = {}
    for name in names:
        if name in styles:
            continue
        number = style_number(name)
        while number in taken and len(taken) < STYLES:
            number = (number + 1) % STYLES
        taken.add(number)
        styles[name] = _style(number)
    return styles


@dataclass(frozen=True)
class CountAxis:
    """The swept axis (writers, threads): integers, ticked where something was measured."""

    log2: bool
    ticks: list[int]


def count_axis(rows: Iterable[int]) -> CountAxis:
    """Log2 once more than three counts were measured (1, 4, 16, 48, 96 writers would squeeze
    the low counts into the left edge of a linear axis), as lockhammer and LiTL plot them;
    linear below that. Either way the ticks are the measured counts, never 1.5 writers."""
    ticks = sorted(set(rows))
    return CountAxis(len(ticks) > 3 and ticks[0] >= 1, ticks)
