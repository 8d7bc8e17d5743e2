"""The table in seed 000's layout: rows are the swept axis, each lock has mean, std and rel
columns (the baseline has no rel), in kops/s, and n, the runs behind each mean.

One layout, two renderings: fixed-width plain text that pastes into a mailing-list mail, and the
same text with color for the terminal. A narrow flag column after each lock carries the markers
explained in the legend under the table.
"""

from __future__ import annotations

import math
import textwrap

from rich.text import Text

from locklab.analysis import disturbance, stats, window_events
from locklab.analysis.cells import Analysis, Cell, Section
from locklab.analysis.stats import Comparison
from locklab.printable import printable

Segment = tuple[str, str]  # (text, rich style; "" for none)
Line = list[Segment]

GAP = 2  # spaces between column groups
# What a mail's lines hold: the plain-text export's width, and the report's.
MAIL_WIDTH = 100
FLAG_WIDTH = 3


def _number(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}"


def rel_text(comparison: Comparison, min_effect: float) -> str:
    """rel % with its 95% interval: '+16.0% [+9.1, +23.4]', rounded as judged against
    +-min_effect (stats.shown_pct)."""
    if math.isnan(comparison.rel_pct):
        return "-"
    text = f"{stats.shown_pct(comparison.rel_pct, min_effect)}%"
    if comparison.ci_pct is not None:
        text += f" {stats.shown_interval(comparison.ci_pct, min_effect)}"
    elif comparison.p_value is not None:
        text += " [unbounded]"
    return text


def _cells_text(
    cell: Cell | None, with_rel: bool, with_ci: bool, higher_is_better: bool, min_effect: float
) -> list[Segment]:
    """mean, std, [ci95], n, [rel], flags of one cell, with styles."""
    if cell is None or cell.summary.n == 0:
        missing = [("-", "dim")] * (3 + with_ci + with_rel)
        return [*missing, ("x" if cell is not None else "", "red")]
    mean = (_number(cell.summary.mean), "")
    std = (_number(cell.summary.std) if cell.summary.n > 1 else "-", "")
    segments = [mean, std]
    if with_ci:
        ci95 = cell.summary.ci95
        segments.append((f"{ci95:.2f}" if ci95 is not None else "-", "dim"))
    # The runs behind the mean (3 to 8 a cell under --repeat auto), as benchstat shows them.
    segments.append((str(cell.summary.n), "dim"))
    if with_rel:
        comparison = cell.comparison
        assert comparison is not None
        style = "dim"
        judged = comparison.judgement(min_effect)
        if judged in (stats.HIGHER, stats.LOWER):
            better = (judged == stats.HIGHER) == higher_is_better
            style = "bold green" if better else "bold red"
        segments.append((rel_text(comparison, min_effect), style))
    flags = cell.flags(min_effect)
    warned = any(
        mark in flags for mark in ("!", "^", "x", disturbance.MARKER, window_events.TOO_SHORT_MARK)
    )
    segments.append((flags, "yellow" if warned else "dim"))
    return segments


def _blocks(first: int, group_widths: list[int], width: int | None) -> list[list[int]]:
    """The columns of each block of the table: as many as fit `width` beside the row labels
    (at least one a block); all of them in one when width is None."""
    if width is None:
        return [list(range(len(group_widths)))]
    blocks: list[list[int]] = [[]]
    used = first
    for index, group_width in enumerate(group_widths):
        if blocks[-1] and used + GAP + group_width > width:
            blocks.append([])
            used = first
        blocks[-1].append(index)
        used += GAP + group_width
    return blocks


def _section_lines(analysis: Analysis, section: Section, width: int | None) -> list[Line]:
    columns = analysis.columns
    # A table of several places has no one unit: each column group names its own.
    row_header = f"Statistic ({analysis.unit}):" if analysis.unit else "Statistic:"
    headers = [f"{c.header} ({c.unit})" if c.unit else c.header for c in columns]
    has_rel = [column.compared_to is not None for column in columns]
    # Every row as text first, to size the columns.
    with_ci = analysis.settings.show_ci
    ci = ["ci95"] if with_ci else []
    header_stats = [["mean", "std", *ci, "n", *(["rel"] if rel else []), ""] for rel in has_rel]
    body: list[tuple[str, list[list[Segment]]]] = []
    for row in section.rows:
        groups = [
            _cells_text(
                section.cells.get((index, row)),
                has_rel[index],
                with_ci,
                analysis.settings.measure.higher_is_better,
                analysis.settings.min_effect,
            )
            for index in range(len(columns))
        ]
        label = f"{row} (oversubscribed)" if row in section.oversubscribed else str(row)
        body.append((label, groups))
    widths: list[list[int]] = []
    for index in range(len(columns)):
        column_widths = [
            max([len(header_stats[index][k])] + [len(groups[index][k][0]) for _, groups in body])
            for k in range(len(header_stats[index]))
        ]
        column_widths[-1] = max(column_widths[-1], FLAG_WIDTH)
        # A long lock name widens the group's last column rather than overflowing into the next.
        group_width = sum(column_widths) + len(column_widths) - 1
        if len(headers[index]) > group_width:
            column_widths[-1] += len(headers[index]) - group_width
        widths.append(column_widths)
    first = max(len(row_header), *(len(label) for label, _ in body))

    def group_segments(index: int, cells: list[Segment]) -> list[Segment]:
        out: list[Segment] = [(" " * GAP, "")]
        for k, (text, style) in enumerate(cells):
            last = k == len(cells) - 1
            # Numbers right-aligned; the flag column left-aligned against its numbers.
            padded = text.ljust(widths[index][k]) if last else text.rjust(widths[index][k])
            out.append(((" " if k else "") + padded, style))
        return out

    lines: list[Line] = []
    if section.label:
        lines.append([(section.label + ":", "bold")])
    group_widths = [sum(w) + len(w) - 1 for w in widths]
    # Too wide for the page: blocks of locks, one under the other, each with the row labels,
    # as a person splits a table by hand.
    for number, block in enumerate(_blocks(first, group_widths, width)):
        if number:
            lines.append([])
        header: Line = [("Lock:".ljust(first), "bold")]
        for index in block:
            style = "bold cyan" if columns[index].compared_to is None else "bold"
            header += [(" " * GAP, ""), (headers[index].ljust(group_widths[index]), style)]
        lines.append(header)
        statistic: Line = [(row_header.ljust(first), "bold")]
        for index in block:
            statistic += group_segments(index, [(text, "bold") for text in header_stats[index]])
        lines.append(statistic)
        lines.append([(f"{analysis.row_axis}:", "bold")])
        for label, groups in body:
            line: Line = [(label.ljust(first), "")]
            for index in block:
                line += group_segments(index, groups[index])
            lines.append(line)
    return [_rstrip(line) for line in lines]


def _rstrip(line: Line) -> Line:
    """No trailing spaces: mail clients and diff tools treat them badly."""
    while line and not line[-1][0].strip():
        line = line[:-1]
    if line:
        text, style = line[-1]
        line = [*line[:-1], (text.rstrip(), style)]
    return line


def lines(analysis: Analysis, width: int | None = None) -> list[Line]:
    """The table, every label and name in it escaped for the terminal; within `width`
    columns where one is given (None: each row on one line, however long)."""
    return [[(printable(text), style) for text, style in line]
            for line in _lines(analysis, width)]  # fmt: skip


def _wrapped(segments: Line, width: int | None) -> list[Line]:
    """A line of prose (a title, a verdict, a note) folded at spaces within `width`, its
    continuation indented; in the style of its last segment."""
    text = "".join(part for part, _ in segments)
    if width is None or len(text) <= width:
        return [segments]
    indent = " " * (len(text) - len(text.lstrip()) + 4)
    folded = textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False,
                           break_on_hyphens=False)  # fmt: skip
    return [[(line, segments[-1][1])] for line in folded]


def _lines(analysis: Analysis, width: int | None) -> list[Line]:
    out: list[Line] = []
    for title in analysis.title:
        out += _wrapped([(title, "bold")], width)
    for section in analysis.sections:
        out.append([])
        out += _section_lines(analysis, section, width)
        if section.verdicts:
            out.append([])
            out.append([(f"Verdict against {analysis.baseline_name}:", "bold")])
            for index, text in section.verdicts.items():
                measure = analysis.settings.measure
                good, bad = (measure.higher, measure.lower)[
                    :: 1 if measure.higher_is_better else -1
                ]
                style = "green" if good in text and bad not in text else ""
                style = "red" if bad in text and good not in text else style
                out += _wrapped([(f"  {analysis.columns[index].header}: ", "bold"),
                                 (text, style)], width)  # fmt: skip
        for note in section.notes:
            out.append([])
            out += _wrapped([(note, "yellow")], width)
        if section.disturbed:
            out.append([])
            out += _wrapped([(f"Disturbed runs ({disturbance.rule_text()}):", "bold")], width)
            for index, text in section.disturbed.items():
                out += _wrapped([(f"  {analysis.columns[index].header}: ", "bold"),
                                 (text, "yellow")], width)  # fmt: skip
    if analysis.footer:
        out.append([])
        for n, text in enumerate(analysis.footer):
            out += _wrapped([(text, "bold" if n == 0 else "")], width)
    out.append([])
    legend = analysis.legend()
    per_line = 3 if width is None else 1
    for first in range(0, len(legend), per_line):
        out += _wrapped([("   ".join(legend[first : first + per_line]), "dim")], width)
    return out


def plain(analysis: Analysis, width: int | None = None) -> str:
    return "\n".join("".join(text for text, _ in line) for line in lines(analysis, width)) + "\n"


def colored(analysis: Analysis, width: int | None = None) -> Text:
    text = Text()
    for line in lines(analysis, width):
        for segment, style in line:
            text.append(segment, style=style or None)
        text.append("\n")
    return text
