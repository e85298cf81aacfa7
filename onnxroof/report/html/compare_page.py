"""The compare page (``onnxroof compare --format html``): several models side by side.

Totals per model, then per target a table of latency, throughput, bound, energy and intensity
and a roofline with each model's whole-model point; the best value of each column is marked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ...core.units import intensity, si
from .chart_context import (
    ROOFLINE_SIZE, achieved_rate, bandwidth_roofs, roofline_frame, model_mark, place_mark_labels, roof_groups,
)
from .charts import roofline_chart
from ..formatting import format_value
from .page import SERIES_COLOURS, value_cell, not_analysed_cell, render_page, target_card

if TYPE_CHECKING:
    from ...result import Analysis

COMPARE_TEMPLATE = "compare.html.j2"


def render_compare_html(analyses: Sequence["Analysis"]) -> str:
    """Several models side by side: totals per model and target, whole-model points per target."""
    return render_page(COMPARE_TEMPLATE, _compare_context(list(analyses)))


def _compare_context(analyses: list["Analysis"]) -> dict:
    documents = [a.to_dict() for a in analyses]
    models = []
    for k, document in enumerate(documents):
        totals, memory = document["totals"], document["memory"]
        models.append({
            "name": document["model"]["name"], "colour": SERIES_COLOURS[k % len(SERIES_COLOURS)],
            "path": document["model"]["path"] or "in memory",
            "cells": [
                value_cell(totals["params"], "count", "parameters"), value_cell(totals["param_bytes"], "bytes", "bytes"),
                value_cell(totals["mac_flops"], "count", "FLOPs"), value_cell(totals["flops"], "count", "FLOPs"),
                value_cell(memory["peak_bytes"], "bytes", "bytes"), value_cell(memory["best_order_peak_bytes"], "bytes", "bytes"),
                {**value_cell(totals["nodes"], "count", "nodes"), "value": None},
            ],
            "complete": document["complete"],
        })
    _mark_best(models, lower_is_better=True)
    target_names = [t["name"] for t in documents[0]["targets"]] if documents else []
    targets = []
    for number, name in enumerate(target_names):
        rows, points = [], []
        for k, document in enumerate(documents):
            target = next((t for t in document["targets"] if t["name"] == name), None)
            if target is None:
                rows.append({"name": document["model"]["name"], "colour": SERIES_COLOURS[k % len(SERIES_COLOURS)],
                             "cells": [not_analysed_cell() for _ in range(5)]})
                continue
            card = target_card(target)
            point = target["model_point"]
            rows.append({"name": document["model"]["name"], "colour": SERIES_COLOURS[k % len(SERIES_COLOURS)], "cells": [
                {"text": card["latency"], "title": card["latency_title"], "value": target["latency_s"], "cls": ""},
                {"text": card["throughput"], "title": card["throughput_title"], "value": -target["throughput_per_s"], "cls": ""},
                {"text": card["bound_line"], "title": card["bound_title"], "value": None, "cls": ""},
                {"text": card["energy"], "title": card["energy_title"], "value": target["energy_j"], "cls": ""},
                {"text": intensity(point["intensity"]) if point["intensity"] is not None else "∞",
                 "title": f"{point['intensity']:.6g} FLOP per DRAM byte" if point["intensity"] is not None else "no DRAM bytes",
                 "value": None, "cls": ""},
            ]})
            if point["flops"] and target["latency_s"]:
                points.append((k, document, target))
        _mark_best(rows, lower_is_better=True)
        reference = next((t for t in documents[0]["targets"] if t["name"] == name))
        chart = roofline_chart(
            [(label, peak) for label, peak, _ in roof_groups(reference)], bandwidth_roofs(reference), [],
            [(t["model_point"]["intensity"], achieved_rate(t["model_point"]["flops"], t["latency_s"])) for _, _, t in points],
            width=ROOFLINE_SIZE[0], height=ROOFLINE_SIZE[1] - 40,
        )
        context = roofline_frame(reference, chart, f"compare-roofline-{number}")
        placed = [chart.place(t["model_point"]["intensity"], achieved_rate(t["model_point"]["flops"], t["latency_s"]))
                  for _, _, t in points]
        for (k, document, target), point in zip(points, placed):
            mp = target["model_point"]
            mark = model_mark(point, chart, "model model-series", document["model"]["name"],
                         f"{document['model']['name']} on {name}\nintensity: "
                         + (f"{intensity(mp['intensity'])} FLOP/B" if mp["intensity"] is not None else "∞")
                         + f"\nachieved: {si(achieved_rate(mp['flops'], target['latency_s']), 'FLOP/s')}"
                         + f"\nlatency: {format_value(target['latency_s'], 'seconds')}",
                         SERIES_COLOURS[k % len(SERIES_COLOURS)])
            context["marks"].append(mark)
        place_mark_labels(context, chart)
        targets.append({**context, "name": name, "description": reference["description"], "rows": rows,
                        "summary": f"Whole-model points of {len(points)} models on {name}"})
    return {
        "title": f"{len(documents)} models",
        "models": models,
        "headers": ["Params", "Param bytes", "MAC-FLOPs", "FLOPs", "Peak activations", "Best-order peak", "Nodes"],
        "target_headers": ["Latency", "Throughput", "Bound", "Energy", "Intensity (FLOP/B)"],
        "targets": targets,
        "target_names": ", ".join(target_names) or "none",
    }


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
