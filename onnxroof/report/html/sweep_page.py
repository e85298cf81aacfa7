"""The sweep page (``onnxroof report --sweep``): one model at every sweep point.

A row per point (FLOPs, parameters, peak activations, and per target latency, throughput, bound
and, for a decoder, tokens/s), the whole-model point's path across each target's roofline,
latency and tokens/s against the swept value, and the points' live-activation timelines overlaid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.units import intensity, si
from ..formatting import count_text, format_value, latency_kind_short
from .chart_context import (
    ROOFLINE_SIZE,
    achieved_rate,
    chart_frame,
    diamond_path,
    model_mark,
    overlay_timeline_context,
    place_mark_labels,
    target_roofline,
)
from .charts import RooflineChart
from .page import (
    SERIES_COLOURS,
    ModelSide,
    model_side,
    not_analysed_cell,
    render_page,
    report_on,
    target_capacities,
    target_card,
    value_cell,
)
from .scales import svg_number
from .xy_chart import xy_chart

if TYPE_CHECKING:
    from ...compare.sweep import SweepPoint
    from ...result import Analysis
    from ...roofline.placement import TargetReport

SWEEP_TEMPLATE = "sweep.html.j2"


@dataclass
class SweepPage:
    """Everything the sweep page shows, formatted: the model, a row per sweep point, the model
    point's path on each target's roofline, latency (and tokens/s) charts, the timelines."""

    title: str
    model: ModelSide
    symbols: str
    symbol_headers: list[str]
    point_count: str
    headers: list[str]
    rows: list[dict]  # point_values, cells, complete, bounds_note (what an incomplete point's figures are)
    targets: list[dict]  # a roofline frame with the path and a mark per point, plus name, description, summary
    latency_chart: dict | None
    tokens_chart: dict | None
    timeline: dict
    timeline_more: str
    target_names: str


def render_sweep_html(points: Sequence[SweepPoint]) -> str:
    """One model at every sweep point: the model point's path and latency against the value."""
    return render_page(SWEEP_TEMPLATE, sweep_page(list(points)))


def sweep_page(points: list[SweepPoint]) -> SweepPage:
    if not points:  # run_sweep always gives at least one; a page of none had no numbers to show
        raise ValueError("a sweep page needs at least one point")
    analyses = [p.analysis for p in points]
    symbols = list(points[0].values)
    labels = [p.label for p in points]
    target_names = [r.target.name for r in analyses[0].targets]
    decoder = any(a.llm is not None for a in analyses)
    latency_chart, tokens_chart = _xy_charts(points, symbols, labels, target_names, decoder)
    timeline = overlay_timeline_context(
        [(label, a.memory.model_order) for label, a in list(zip(labels, analyses))[: len(SERIES_COLOURS)]],
        target_capacities(analyses[0]),
        f"Live activation bytes per step at {min(len(points), len(SERIES_COLOURS))} sweep points",
        colours=True,
    )
    return SweepPage(
        title=f"{analyses[0].model.name} · sweep over {', '.join(symbols)}",
        model=model_side(analyses[0], "model"),
        symbols=", ".join(symbols),
        symbol_headers=symbols,
        point_count=count_text(len(points)),
        headers=_table_headers(target_names, decoder),
        rows=[_table_row(point, symbols, target_names) for point in points],
        targets=[_sweep_roofline(number, name, points, symbols, labels) for number, name in enumerate(target_names)],
        latency_chart=latency_chart,
        tokens_chart=tokens_chart,
        timeline=timeline,
        timeline_more=count_text(len(points) - len(SERIES_COLOURS)) if len(points) > len(SERIES_COLOURS) else "",
        target_names=", ".join(target_names) or "none",
    )


def _table_headers(target_names: list[str], decoder: bool) -> list[str]:
    headers = ["FLOPs", "Params", "Peak activations"]
    for name in target_names:
        headers += [f"Latency [{name}]", f"Throughput [{name}]", f"Bound [{name}]"]
        if decoder:
            headers.append(f"Tokens/s [{name}]")
    return headers


def _table_row(point: SweepPoint, symbols: list[str], target_names: list[str]) -> dict:
    """One sweep point's row: its totals, then latency, throughput and bound per target (and
    tokens per second for a decoder)."""
    analysis = point.analysis
    totals = analysis.totals
    cells = [
        value_cell(totals.flops, "count", "FLOPs"),
        value_cell(totals.params, "count", "parameters"),
        value_cell(analysis.memory.model_order.peak_bytes, "bytes", "bytes"),
    ]
    for name in target_names:
        report = report_on(analysis, name)
        if report is None:
            cells += [not_analysed_cell(), not_analysed_cell(), not_analysed_cell()]
            continue
        card = target_card(report)
        cells += [
            {"text": card.latency, "title": card.latency_title, "value": None, "cls": ""},
            {"text": card.throughput, "title": card.throughput_title, "value": None, "cls": ""},
            {"text": card.bound_line, "title": card.bound_title, "value": None, "cls": ""},
        ]
        if analysis.llm is not None:
            tokens = analysis.llm.tokens_per_s.get(name)
            cells.append(
                {
                    "text": f"{tokens:,.1f}" if tokens else "—",
                    "title": f"{tokens:.6g} new tokens per second" if tokens else "",
                    "value": None,
                    "cls": "",
                }
            )
    return {
        "point_values": [str(point.values[s]) for s in symbols],
        "cells": cells,
        "complete": analysis.complete,
        "bounds_note": analysis.bounds_note,
    }


def _sweep_roofline(number: int, name: str, points: list[SweepPoint], symbols: list[str], labels: list[str]) -> dict:
    """The model point's path across one target's roofline: a diamond per sweep point."""
    per_point = [report_on(p.analysis, name) for p in points]
    reference = next(r for r in per_point if r is not None).target
    marks = [
        (r.model_point.intensity, achieved_rate(r.model_point.flops, r.latency_s))
        if r is not None and r.model_point.flops and r.latency_s
        else None
        for r in per_point
    ]
    chart, context = target_roofline(
        reference, [], [m for m in marks if m is not None], f"sweep-roofline-{number}", height=ROOFLINE_SIZE[1] - 40
    )
    placed = [chart.place(*m) if m is not None else None for m in marks]
    context["paths"] += _sweep_paths(placed, points, symbols, [r is not None and not r.complete for r in per_point])
    for p, label, report in zip(placed, labels, per_point):
        if p is not None and report is not None:
            context["marks"].append(_point_mark(chart, p, label, name, report))
    place_mark_labels(context, chart)
    return {
        **context,
        "name": name,
        "description": reference.description,
        "summary": f"The whole-model point on {name} at each of {len(points)} sweep points",
    }


def _sweep_paths(placed: list, points: list[SweepPoint], symbols: list[str], bounds: list[bool]) -> list[dict]:
    """Two symbols: one path per value of the second, along the first (not one zig-zag). A point
    whose figures are bounds (``bounds``: nodes not counted) breaks its path: no segment joins it."""
    paths = []
    for values, members in _lines_by_second(points, symbols):
        runs: list[list] = [[]]
        for i in members:
            if placed[i] is None or bounds[i]:
                runs.append([])
            else:
                runs[-1].append(placed[i])
        for path in runs:
            if len(path) > 1:
                paths.append(
                    {
                        "d": "".join(
                            f"{'M' if i == 0 else 'L'}{svg_number(p.x)},{svg_number(p.y)}" for i, p in enumerate(path)
                        ),
                        "cls": "sweep-path",
                        "title": f"the whole-model point as {symbols[0]} sweeps" + (f" at {values}" if values else ""),
                    }
                )
    return paths


def _point_mark(chart: RooflineChart, placed, label: str, name: str, report: TargetReport) -> dict:
    mp = report.model_point
    card = target_card(report)
    # nodes left out: the point is hollow (its FLOPs and rate are at most these, its latency at least)
    mark = model_mark(
        placed,
        chart,
        "model model-sweep" + ("" if report.complete else " bound-only"),
        label + ("" if report.complete else " (bound)"),
        f"{label} on {name}\nintensity: "
        + (f"{intensity(mp.intensity)} FLOP/B" if mp.intensity is not None else "∞")
        + f"\nachieved: {si(achieved_rate(mp.flops, report.latency_s), 'FLOP/s')}"
        + f"\nlatency: {card.latency} ({card.latency_kind})"
        + f"\nbound: {card.bound}",
        SERIES_COLOURS[0],
    )
    mark["d"] = diamond_path(placed.x, placed.y, 5.5)
    return mark


def _xy_charts(
    points: list[SweepPoint], symbols: list[str], labels: list[str], target_names: list[str], decoder: bool
) -> tuple[dict | None, dict | None]:
    """Latency (and, for a decoder, new tokens per second) against the swept value; a point whose
    analysis left nodes out is drawn hollow and its line broken at it (its figures are bounds)."""
    if not target_names:
        return None, None
    xs, labels, lines = _xy_lines(points, symbols, labels, target_names)
    wide = not decoder
    single = len(symbols) in (1, 2)
    against = ", ".join(symbols) if single else "sweep point"
    x_title = symbols[0] if single else " · ".join(symbols)
    reports = [[report_on(a, name) if a is not None else None for a in analyses] for _, name, analyses in lines]
    latencies = [(series, [r.latency_s if r else None for r in per_x]) for (series, _, _), per_x in zip(lines, reports)]
    latency_chart = _xy_context(
        "latency", xs, latencies, f"latency per run vs {against}", "seconds", labels, wide, x_title, reports
    )
    if not decoder:
        return latency_chart, None
    tokens = [
        (series, [a.llm.tokens_per_s.get(name) if a is not None and a.llm is not None else None for a in analyses])
        for series, name, analyses in lines
    ]
    tokens_chart = _xy_context(
        "tokens", xs, tokens, f"new tokens per second vs {against}", "per_second", labels, wide, x_title, reports
    )
    return latency_chart, tokens_chart


def _xy_lines(
    points: list[SweepPoint], symbols: list[str], labels: list[str], target_names: list[str]
) -> tuple[list, list[str], list[tuple[str, str, list[Analysis | None]]]]:
    """The x values, their labels, and the lines (name, target, the analysis at each x): with two
    symbols x is the first and there is a line per target and value of the second; with one, a
    line per target; with more, the x axis names the points by their values alone ("16 · int8")."""
    if len(symbols) == 2:
        xs: list = list(dict.fromkeys(p.values[symbols[0]] for p in points))
        return xs, [f"{symbols[0]}={x}" for x in xs], _lines_by_target_and_second(points, symbols, xs, target_names)
    if len(symbols) == 1:
        xs = [p.values[symbols[0]] for p in points]
    else:
        xs = [" · ".join(str(v) for v in p.values.values()) for p in points]
    return xs, labels, [(name, name, [p.analysis for p in points]) for name in target_names]


def _lines_by_target_and_second(
    points: list[SweepPoint], symbols: list[str], xs: list, target_names: list[str]
) -> list[tuple[str, str, list[Analysis | None]]]:
    """One line per target and value of the second symbol: (its name, the target, the analysis at
    each of the first symbol's values, None where the sweep has no such point)."""
    position = {(p.values[symbols[0]], p.values[symbols[1]]): k for k, p in enumerate(points)}
    lines = []
    for name in target_names:
        for values, members in _lines_by_second(points, symbols):
            second = points[members[0]].values[symbols[1]]
            lines.append(
                (
                    f"{name} · {values}",
                    name,
                    [points[position[(x, second)]].analysis if (x, second) in position else None for x in xs],
                )
            )
    return lines


def _lines_by_second(points: list[SweepPoint], symbols: list[str]) -> list[tuple[str, list[int]]]:
    """The points grouped into lines: by the second symbol's value when there are exactly two
    ("dtype=int8", the indices of its points in order), else one line of them all."""
    if len(symbols) != 2:
        return [("", list(range(len(points))))]
    groups: dict = {}
    for k, point in enumerate(points):
        groups.setdefault(point.values[symbols[1]], []).append(k)
    return [(f"{symbols[1]}={value}", members) for value, members in groups.items()]


def _xy_context(
    key: str,
    xs: list,
    series: list[tuple[str, list[float | None]]],
    title: str,
    unit: str,
    labels: list[str],
    wide: bool = False,
    x_title: str = "",
    reports: list[list[TargetReport | None]] | None = None,
) -> dict:
    """The chart's view; ``reports`` (per series, per x) are the target reports behind the values:
    where one is incomplete its point is hollow, titled as the bound it is, and its line breaks."""
    reports = reports or [[None] * len(values) for _, values in series]
    bounds = [[report is not None and not report.complete for report in per_x] for per_x in reports]
    chart = xy_chart(xs, series, width=1240 if wide else 620, height=320 if wide else 300, bounds=bounds)
    plot = chart.plot
    lines = []
    for k, ((name, values), laid, per_x) in enumerate(zip(series, chart.series, reports)):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        points = []
        for value, pixel, label, report in zip(values, laid.points, labels, per_x):
            if pixel is None:
                continue
            hollow = report is not None and not report.complete
            text = format_value(value, unit)
            if hollow:  # a latency is at least this, a throughput at most
                text = f"{'≤' if unit == 'per_second' else '≥'} {text}, {latency_kind_short(report)}"
            points.append(
                {
                    "cx": svg_number(pixel[0]),
                    "cy": svg_number(pixel[1]),
                    "hollow": hollow,
                    "title": f"{name} · {label}: {text} ({value:.6g})",
                }
            )
        lines.append({"name": name, "colour": colour, "d": laid.path, "points": points})
    y_ticks = []
    for tick in chart.y_ticks:
        label = (si(tick.value) + "/s") if unit == "per_second" else format_value(tick.value, unit)
        y_ticks.append({"y": svg_number(tick.position), "label": label if tick.value else "0"})
    return {
        "id": f"xy-{key}",
        "title": title,
        **chart_frame(chart),
        "y_ticks": y_ticks,
        "x_title": x_title + (" (log scale)" if chart.x_mode == "log" else ""),
        "y_log": chart.y_mode == "log",
        "x_title_x": svg_number((plot.left + plot.right) / 2),
        "x_title_y": svg_number(chart.height - 6),
        "lines": lines,
        "has_bounds": any(p["hollow"] for line in lines for p in line["points"]),
    }
