"""The compare page (``onnxroof compare --format html``): several models side by side.

Totals per model, then per target a table of latency, throughput, bound, energy and intensity
and a roofline with each model's whole-model point; the best value of each column is marked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.units import intensity, si
from ..formatting import latency_kind_short
from ..text.diff_tables import target_origins
from .chart_context import ROOFLINE_SIZE, achieved_rate, model_mark, place_mark_labels, target_roofline
from .page import SERIES_COLOURS, not_analysed_cell, render_page, report_on, target_card, value_cell

if TYPE_CHECKING:
    from ...result import Analysis
    from ...roofline.placement import TargetReport

COMPARE_TEMPLATE = "compare.html.j2"


@dataclass
class ComparePage:
    """Everything the compare page shows, formatted: a row per model, a block per target."""

    title: str
    models: list[dict]  # name, colour, path, cells (the totals), complete
    headers: list[str]
    target_headers: list[str]
    targets: list[dict]  # a roofline frame with its marks, plus name, description, rows, summary
    target_names: str
    target_origins: list[str]  # a line per target not read from onnxroof's own files


def render_compare_html(analyses: Sequence[Analysis]) -> str:
    """Several models side by side: totals per model and target, whole-model points per target."""
    return render_page(COMPARE_TEMPLATE, compare_page(list(analyses)))


def compare_page(analyses: list[Analysis]) -> ComparePage:
    models = [_model_row(k, analysis) for k, analysis in enumerate(analyses)]
    _mark_best(models, lower_is_better=True)
    target_names = [r.target.name for r in analyses[0].targets] if analyses else []
    return ComparePage(
        title=f"{len(analyses)} models",
        models=models,
        headers=["Params", "Param bytes", "MAC-FLOPs", "FLOPs", "Peak activations", "Best-order peak", "Nodes"],
        target_headers=["Latency", "Throughput", "Bound", "Energy", "Intensity (FLOP/B)"],
        targets=[_target_block(number, name, analyses) for number, name in enumerate(target_names)],
        target_names=", ".join(target_names) or "none",
        target_origins=target_origins(analyses),
    )


def _colour(k: int) -> str:
    return SERIES_COLOURS[k % len(SERIES_COLOURS)]


def _model_row(k: int, analysis: Analysis) -> dict:
    totals, memory = analysis.totals, analysis.memory
    cells = [
        value_cell(totals.params, "count", "parameters"),
        value_cell(totals.param_bytes, "bytes", "bytes"),
        value_cell(totals.mac_flops, "count", "FLOPs"),
        value_cell(totals.flops, "count", "FLOPs"),
        value_cell(memory.model_order.peak_bytes, "bytes", "bytes"),
        value_cell(memory.best.schedule.peak_bytes, "bytes", "bytes"),
        {**value_cell(totals.nodes, "count", "nodes"), "value": None},
    ]
    return {
        "name": analysis.model.name,
        "colour": _colour(k),
        "path": analysis.model.path or "in memory",
        # an incomplete model's sums are lower bounds: shown, not ranked best
        "cells": cells if analysis.complete else [{**cell, "value": None} for cell in cells],
        "complete": analysis.complete,
    }


def _target_block(number: int, name: str, analyses: list[Analysis]) -> dict:
    """One target: a row per model (best values marked) and the models' whole-model points."""
    rows, points = [], []
    for k, analysis in enumerate(analyses):
        report = report_on(analysis, name)
        if report is None:
            rows.append(
                {"name": analysis.model.name, "colour": _colour(k), "cells": [not_analysed_cell() for _ in range(5)]}
            )
            continue
        rows.append({"name": analysis.model.name, "colour": _colour(k), "cells": _target_cells(report)})
        if report.model_point.flops and report.latency_s:
            points.append((k, analysis, report))
    _mark_best(rows, lower_is_better=True)
    reference = report_on(analyses[0], name).target
    chart, context = target_roofline(
        reference,
        [],
        [(r.model_point.intensity, achieved_rate(r.model_point.flops, r.latency_s)) for _, _, r in points],
        f"compare-roofline-{number}",
        height=ROOFLINE_SIZE[1] - 40,
    )
    for k, analysis, report in points:
        mp = report.model_point
        placed = chart.place(mp.intensity, achieved_rate(mp.flops, report.latency_s))
        context["marks"].append(
            model_mark(  # nodes left out: hollow, labelled a bound
                placed,
                chart,
                "model model-series" + ("" if report.complete else " bound-only"),
                analysis.model.name + ("" if report.complete else " (bound)"),
                f"{analysis.model.name} on {name}\nintensity: "
                + (f"{intensity(mp.intensity)} FLOP/B" if mp.intensity is not None else "∞")
                + f"\nachieved: {si(achieved_rate(mp.flops, report.latency_s), 'FLOP/s')}"
                + f"\nlatency: {target_card(report).latency} ({latency_kind_short(report)})",
                _colour(k),
            )
        )
    place_mark_labels(context, chart)
    return {
        **context,
        "name": name,
        "description": reference.description,
        "rows": rows,
        "summary": f"Whole-model points of {len(points)} models on {name}",
    }


def _target_cells(report: TargetReport) -> list[dict]:
    card = target_card(report)
    point = report.model_point
    ranked = report.complete  # a bound from nodes left out is not the best of anything: it is not ranked
    return [
        {"text": card.latency, "title": card.latency_title, "value": report.latency_s if ranked else None, "cls": ""},
        {
            "text": card.throughput,
            "title": card.throughput_title,
            "value": -report.throughput_per_s if ranked else None,
            "cls": "",
        },
        {"text": card.bound_line, "title": card.bound_title, "value": None, "cls": ""},
        {"text": card.energy, "title": card.energy_title, "value": report.energy_j if ranked else None, "cls": ""},
        {
            "text": intensity(point.intensity) if point.intensity is not None else "∞",
            "title": f"{point.intensity:.6g} FLOP per DRAM byte" if point.intensity is not None else "no DRAM bytes",
            "value": None,
            "cls": "",
        },
    ]


def _mark_best(rows: list[dict], lower_is_better: bool) -> None:
    """Mark the best value of each column (with more than one row to compare)."""
    if len(rows) < 2:
        return
    for column in range(len(rows[0]["cells"])):
        values = [r["cells"][column]["value"] for r in rows]
        present = [v for v in values if v is not None]
        if len(present) < 2 or len(set(present)) < 2:
            continue
        best = min(present) if lower_is_better else max(present)
        for row in rows:
            if row["cells"][column]["value"] == best:
                row["cells"][column]["cls"] = "best"
