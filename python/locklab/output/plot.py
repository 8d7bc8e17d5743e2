"""Static figures for mails and papers: `locklab plot EXP -o DIR` writes, for each section of
the experiment, the throughput figure (every run as a dot, mean and 95% CI as a line) and the
relative one (rel % against the baseline with its interval, open markers where not
significant), as PNG and SVG. Each names its experiment and machine, "simulated" where it is,
and draws each lock as every figure does (output/styles.py).
"""

from __future__ import annotations

import io
import re
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, never a display
import matplotlib.pyplot as plt
import matplotlib.ticker

from locklab.analysis import series
from locklab.analysis.cells import Analysis, Section
from locklab.analysis.stats import HIGHER, LOWER
from locklab.output.styles import count_axis, figure_styles
from locklab.run.history import HistoryRow
from locklab.run.tune import TuneResult

WIDTH_IN, HEIGHT_IN, DPI = 8.0, 5.0, 100  # 800 x 500 pixels
COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "section"


def _throughput(analysis: Analysis, section: Section, axes: plt.Axes) -> None:
    styles = figure_styles(column.header for column in analysis.columns)
    for index, column in enumerate(analysis.columns):
        style = styles[column.header]
        cells = series.cell_series(section, index)
        for row in cells.rows:
            values = [v for r, v in zip(cells.run_rows, cells.run_values, strict=True) if r == row]
            axes.scatter([row] * len(values), values, color=style.color, marker=style.marker,
                         alpha=0.35, s=14)  # fmt: skip
        axes.errorbar(cells.rows, cells.means, yerr=cells.errors, color=style.color,
                      marker=style.marker, linestyle=style.dash, capsize=3,
                      label=column.header)  # fmt: skip
    axes.set_ylabel(analysis.unit)
    axes.set_title(f"{analysis.settings.measure.name}: runs, mean and 95% CI")


def _relative(analysis: Analysis, section: Section, axes: plt.Axes) -> None:
    styles = figure_styles(column.header for column in analysis.columns)
    for index, column in enumerate(analysis.columns):
        if column.compared_to is None:
            continue
        style = styles[column.header]
        points = series.relative_points(section, index)
        if not points:
            continue
        rows = [p.row for p in points]
        axes.plot(rows, [p.rel_pct for p in points], color=style.color, linestyle=style.dash,
                  label=column.header)  # fmt: skip
        bounded = [(p.row, p.rel_pct, p.ci_pct) for p in points if p.ci_pct is not None]
        axes.errorbar([row for row, _, _ in bounded], [rel for _, rel, _ in bounded],
                      yerr=[[rel - low for _, rel, (low, _) in bounded],
                            [high - rel for _, rel, (_, high) in bounded]],
                      fmt="none", ecolor=style.color, capsize=3, alpha=0.7)  # fmt: skip
        for p in points:
            axes.scatter([p.row], [p.rel_pct], s=40, marker=style.marker,
                         color=style.color if p.significant else "white",
                         edgecolors=style.color, zorder=3)  # fmt: skip
    axes.axhline(0, color="#888", linestyle=":")
    axes.set_ylabel("rel %")
    axes.set_title(f"rel % against {analysis.baseline_name}, 95% interval "
                   "(open: not significant)")  # fmt: skip


def _count_axis(axes: plt.Axes, rows: list[int]) -> None:
    axis = count_axis(rows)
    if axis.log2:
        axes.set_xscale("log", base=2)
    axes.set_xticks(axis.ticks, [str(tick) for tick in axis.ticks])
    axes.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


def write_figures(analysis: Analysis, name: str, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for section in analysis.sections:
        stem = _slug(name) + (f"-{_slug(section.label)}" if section.label else "")
        for kind, draw in (("throughput", _throughput), ("relative", _relative)):
            figure, axes = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
            draw(analysis, section, axes)
            axes.set_xlabel(analysis.row_axis)
            _count_axis(axes, section.rows)
            axes.grid(alpha=0.3)
            if axes.get_legend_handles_labels()[0]:
                axes.legend(fontsize=8)
            if section.label:
                figure.suptitle(section.label, fontsize=9)
            # On the figure itself, so a copy pasted alone still says what and where.
            figure.text(0.01, 0.01, analysis.caption, fontsize=7, color="#444")
            figure.tight_layout(rect=(0, 0.03, 1, 1))
            for suffix in ("png", "svg"):
                path = directory / f"{stem}-{kind}.{suffix}"
                figure.savefig(path, dpi=DPI)
                written.append(path)
            plt.close(figure)
    return written


# The formats a chart may be written in, by file suffix (matplotlib's own list).
FORMATS = frozenset(plt.figure().canvas.get_supported_filetypes())
plt.close("all")


def write_tune_figure(result: TuneResult, param: str, title: str, path: Path) -> None:
    """Throughput relative to the best value at each point, against the tunable's value."""
    figure, axes = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    points = sorted(result.best_at)
    for index, point in enumerate(points):
        values = [v for v in result.evaluated if (v, point) in result.relative]
        label = " ".join(f"{a}={v}" for a, v in point if v)
        axes.plot(values, [result.relative[v, point] for v in values], marker="o", markersize=3,
                  color=COLORS[index % len(COLORS)], label=label)  # fmt: skip
    axes.axvline(result.value, color="#444", linestyle="--", label=f"chosen {result.value}")
    if (
        result.evaluated
        and min(result.evaluated) > 0
        and max(result.evaluated) > 20 * min(result.evaluated)
    ):
        axes.set_xscale("log")
    axes.set_xlabel(param)
    axes.set_ylabel("throughput / best at that point")
    axes.set_title(f"{title}: worst case {result.worst_relative:.0%} at {result.value}")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)


def write_history_figure(rows: list[HistoryRow], title: str, path: Path | io.StringIO,
                         file_format: str | None = None) -> None:  # fmt: skip
    """A lock's throughput over commits: each run a dot, the mean a line, a commit judged
    different from the one before marked (red lower, green higher), a failed one a cross. To a
    file (PNG or SVG by its suffix) or, with `file_format`, to a buffer."""
    figure, axes = plt.subplots(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    xs = list(range(len(rows)))
    means = [statistics.fmean(r.side.figures) / 1e3 if r.side.figures else None for r in rows]
    for x, row in zip(xs, rows, strict=True):
        axes.scatter([x] * len(row.side.figures), [f / 1e3 for f in row.side.figures],
                     s=8, color=COLORS[0], alpha=0.5)  # fmt: skip
        mark = {LOWER: "#c0392b", HIGHER: "#27ae60"}.get(row.judgement)
        if mark and means[x] is not None:
            axes.scatter([x], [means[x]], s=90, facecolors="none", edgecolors=mark, linewidths=2)
        if row.side.failure:
            axes.scatter([x], [0], marker="x", s=60, color="#c0392b")
    shown = [(x, m) for x, m in zip(xs, means, strict=True) if m is not None]
    axes.plot([x for x, _ in shown], [m for _, m in shown], color=COLORS[0])
    axes.set_xticks(xs, [r.commit[:8] for r in rows], rotation=60, fontsize=7)
    axes.set_ylabel("throughput (kops/s)")
    axes.set_title(title, fontsize=9)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI, format=file_format)
    plt.close(figure)
