"""Exporting an experiment: CSV (one row per cell), JSON (everything, runs included) and
Markdown (the table and verdicts, for an issue tracker or a wiki)."""

from __future__ import annotations

import csv
import io
import json
import math

from locklab import provenance
from locklab.analysis import disturbance
from locklab.analysis.cells import Analysis
from locklab.model.values import AXES
from locklab.output import table
from locklab.printable import printable
from locklab.store import Experiment, Run

# text: the table as a plain-text mail carries it (table.plain at table.MAIL_WIDTH).
FORMATS = ("csv", "json", "markdown", "text")
EXPORT_SCHEMA = 1


def cell_records(analysis: Analysis) -> list[dict]:
    """One flat record per (section, row, column) that has runs."""
    records = []
    min_effect = analysis.settings.min_effect
    for section in analysis.sections:
        for row in section.rows:
            for index, column in enumerate(analysis.columns):
                cell = section.cells.get((index, row))
                if cell is None:
                    continue
                point = dict(section.fixed) | {analysis.row_axis: row}
                comparison = cell.comparison
                ci = comparison is not None and comparison.ci_pct is not None
                apart = _reads_and_writes(cell.runs, analysis.unit_divisor)
                records.append(
                    {
                        "variant": column.header,
                        **{axis: point.get(axis) for axis in AXES if axis in point},
                        "n": cell.summary.n,
                        "metric": analysis.settings.metric,
                        "unit": analysis.unit,
                        "mean": _finite(cell.summary.mean),
                        "std": _finite(cell.summary.std),
                        "ci95": cell.summary.ci95,
                        "cv": cell.summary.cv,
                        "rel_pct": _finite(comparison.rel_pct) if comparison else None,
                        "p_value": comparison.p_value if comparison else None,
                        "significant": comparison.significant if comparison else None,
                        "rel_ci95_low_pct": comparison.ci_pct[0] if ci else None,
                        "rel_ci95_high_pct": comparison.ci_pct[1] if ci else None,
                        "judgement": comparison.judgement(min_effect) if comparison else None,
                        "noisy": cell.noisy,
                        "drifting_runs": cell.drifting_runs,
                        "failed_runs": cell.failed_runs,
                        "flags": cell.flags(min_effect),
                        **(apart if analysis.has_reads else {}),
                    }
                )
    return records


def _reads_and_writes(runs: list[Run], divisor: float) -> dict[str, float | None]:
    """Mean write and read rates of a cell's runs, in the table's unit: the throughput of a
    reader-writer run counts both."""
    rates: dict[str, list[float]] = {"write_mean": [], "read_mean": []}
    for run in runs:
        result = run.result or {}
        window = result.get("window_s")
        if not window:
            continue
        for key, field in (
            ("write_mean", "write_acquisitions"),
            ("read_mean", "read_acquisitions"),
        ):
            if isinstance(result.get(field), int | float):
                rates[key].append(result[field] / window / divisor)
    return {key: sum(v) / len(v) if v else None for key, v in rates.items()}


def to_csv(analysis: Analysis) -> str:
    records = cell_records(analysis)
    fields = list(dict.fromkeys(key for record in records for key in record))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(
        {key: printable(value) if isinstance(value, str) else value for key, value in r.items()}
        for r in records
    )
    return buffer.getvalue()


def to_json(analysis: Analysis, experiment: Experiment, runs: list[Run]) -> str:
    document = {
        "schema": EXPORT_SCHEMA,
        "exported_by": {"locklab": provenance.version(), "commit": provenance.commit()},
        "experiment": {
            "id": experiment.id,
            "uuid": experiment.uuid,
            "name": experiment.name,
            "created": experiment.created,
            "origin": experiment.origin,
            "host": experiment.host,
            "locklab_version": experiment.locklab_version,
            "locklab_commit": experiment.locklab_commit,
            "spec": experiment.spec.to_dict(),
        },
        "statistics": {
            "test": analysis.settings.test,
            "alpha": analysis.settings.alpha,
            "noise_cv": analysis.settings.noise_cv,
            "drift": analysis.settings.drift,
            "metric": analysis.settings.metric,
            "unit": analysis.unit,
        },
        "cells": cell_records(analysis),
        "verdicts": [
            {
                "section": dict(section.fixed),
                "variant": analysis.columns[index].header,
                "verdict": text,
            }
            for section in analysis.sections
            for index, text in section.verdicts.items()
        ],
        "runs": [
            {
                "config_key": str(run.config_key),
                "repeat": run.repeat,
                "status": run.status,
                "exit_code": run.exit_code,
                "throughput_ops_per_s": run.throughput_ops_per_s,
                "error": run.error,
                "wall_s": run.wall_s,
                "result": run.result,
            }
            for run in runs
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def to_markdown(analysis: Analysis) -> str:
    """Markdown tables, and nothing a plain-text mail would show as markup: no bold or italics,
    no escaped ~ (a cell holds one, which no strikethrough pairs)."""
    out = [f"{line}  " for line in analysis.title]
    for section in analysis.sections:
        out.append("")
        if section.label:
            out += [f"{section.label}:", ""]
        header = [analysis.row_axis]
        for column in analysis.columns:
            stats = ["mean", "std"] + (["rel"] if column.compared_to is not None else [])
            header += [f"{column.header} {stat}" for stat in stats]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---:" for _ in header) + "|")
        for row in section.rows:
            cells = [str(row)]
            for index, column in enumerate(analysis.columns):
                cell = section.cells.get((index, row))
                with_rel = column.compared_to is not None
                if cell is None or cell.summary.n == 0:
                    cells += ["-"] * (3 if with_rel else 2)
                    continue
                flags = cell.flags(analysis.settings.min_effect)
                cells += [f"{cell.summary.mean:.2f}", f"{cell.summary.std:.2f}"]
                if with_rel:
                    assert cell.comparison is not None
                    rel = table.rel_text(cell.comparison, analysis.settings.min_effect)
                    cells.append(rel)
                if flags:
                    cells[-1] += " " + flags
            out.append("| " + " | ".join(cells) + " |")
        if section.verdicts:
            unit = analysis.unit
            out += ["", f"Verdict against {analysis.baseline_name} ({unit}):", ""]
            out += [
                f"- {analysis.columns[index].header}: {text}"
                for index, text in section.verdicts.items()
            ]
        if section.disturbed:
            out += ["", f"Disturbed runs ({disturbance.rule_text()}):", ""]
            out += [f"- {analysis.columns[index].header}: {text}"
                    for index, text in section.disturbed.items()]  # fmt: skip
    out += ["", "; ".join(analysis.legend()), ""]
    return "\n".join(printable(line) for line in out)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def render(kind: str, analysis: Analysis, experiment: Experiment, runs: list[Run]) -> str:
    """The export in one of FORMATS."""
    if kind == "csv":
        return to_csv(analysis)
    if kind == "json":
        return to_json(analysis, experiment, runs)
    if kind == "text":
        return table.plain(analysis, table.MAIL_WIDTH)
    return to_markdown(analysis)
