"""The diff page (``onnxroof diff --format html``): a base and a head model on one page.

Its deltas and budgets, both models on every target's roofline (base dots hollow, head dots
filled, arrows for the :data:`DIFF_ARROWS` matched nodes whose time changed most, and both
whole-model points), the two live-activation timelines overlaid, and the nodes and op types
that changed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.units import intensity, si
from ...findings.wording import gain_text
from ..formatting import (
    count_text,
    format_value,
    percent_text,
    shape_text,
    side_time,
    side_value,
    signed_change,
    significant,
)
from ..text.diff_tables import incomplete_sides, target_origins
from .chart_context import (
    AGGREGATE_ABOVE,
    OTHER_COLOUR,
    achieved_rate,
    binned_dots,
    costed_kernels,
    kernel_dot_title,
    main_op,
    model_mark,
    op_palette,
    overlay_timeline_context,
    place_mark_labels,
    target_roofline,
)
from .charts import RooflineChart
from .graph_section import diff_graph_context
from .page import ModelSide, model_side, render_page, report_on, target_capacities, target_card
from .scales import svg_number

if TYPE_CHECKING:
    from ...compare.budgets import BudgetResult
    from ...compare.diff import ModelDiff
    from ...result import Analysis
    from ...roofline.placement import Placement, TargetReport

DIFF_TEMPLATE = "diff.html.j2"
DIFF_ARROWS = 10  # arrows drawn per target: the largest time changes
NODE_CHANGES_SHOWN = 500
_SUMMARY_KEYS = ("params", "flops", "peak_memory")


@dataclass
class DiffPage:
    """Everything the diff page shows, formatted: both models, the deltas and budgets, a
    roofline per target with both models on it, the timelines overlaid, what nodes changed."""

    title: str
    base: ModelSide
    head: ModelSide
    summary: list[dict]  # the headline: label, text, direction
    input_changes: list[str]
    incomplete: list[str]  # a line per side that left nodes out: its figures are bounds
    target_origins: list[str]  # a line per target not read from onnxroof's own files
    budgets: list[dict]
    budgets_broken: int
    deltas: list[dict]
    rooflines: list[dict]
    timeline: dict
    node_counts: dict[str, str]
    node_rows: list[dict]
    node_more: str
    op_rows: list[dict]
    top_changes: list[dict]
    targets: str
    findings: list[dict]  # the findings that are new, resolved, or whose gain moved
    graph: dict | None  # the graph view: the head's and the base's, what changed marked


def render_diff_html(diff: ModelDiff, budget_results: Sequence[BudgetResult] = ()) -> str:
    """A base and a head model on one page: deltas, both on every roofline, memory overlaid."""
    return render_page(DIFF_TEMPLATE, diff_page(diff, list(budget_results)))


def diff_page(diff: ModelDiff, budgets: list[BudgetResult]) -> DiffPage:
    base, head = diff.base, diff.head
    palette = op_palette(head.nodes)
    changed = diff.changed_nodes
    kinds = Counter(n.kind for n in diff.nodes)
    rooflines = [
        _diff_roofline(diff, report_on(base, report.target.name), report, number, palette)
        for number, report in enumerate(head.targets)
    ]
    base_steps, head_steps = base.memory.model_order, head.memory.model_order
    timeline = overlay_timeline_context(
        [("base", base_steps), ("head", head_steps)],
        target_capacities(head),
        f"Live activation bytes per step, base ({len(base_steps.live_bytes):,} steps) and head "
        f"({len(head_steps.live_bytes):,} steps)",
    )
    broken = [b for b in budgets if b.broken]
    return DiffPage(
        title=f"{base.model.name} → {head.model.name}",
        base=model_side(base, "base"),
        head=model_side(head, "head"),
        summary=_summary_items(diff),
        input_changes=diff.input_changes,
        incomplete=incomplete_sides(diff),
        target_origins=target_origins((diff.base, diff.head)),
        budgets=[{"text": b.describe(), "broken": b.broken} for b in budgets],
        budgets_broken=len(broken),
        deltas=_deltas(diff),
        rooflines=rooflines,
        timeline=timeline,
        node_counts={k: count_text(kinds.get(k, 0)) for k in ("added", "removed", "changed", "unchanged")},
        node_rows=[_node_row(change) for change in changed[:NODE_CHANGES_SHOWN]],
        node_more=count_text(len(changed) - NODE_CHANGES_SHOWN) if len(changed) > NODE_CHANGES_SHOWN else "",
        op_rows=_op_rows(diff),
        top_changes=_top_changes(diff),
        targets=", ".join(r.target.name for r in head.targets) or "none",
        findings=[
            {
                "change": c.kind,
                "kind": c.finding.kind,
                "target": c.finding.target,
                "title": c.finding.title,
                "gain": gain_text(c.finding),
                "base_gain": gain_text(c.base) if c.kind == "changed" and c.base else "",
            }
            for c in diff.findings
        ],
        graph=diff_graph_context(diff),
    )


def _node_row(change) -> dict:
    record = change.head or change.base
    return {
        "kind": change.kind,
        "name": change.name,
        "op": record.op_type,
        "base_name": change.base.name if change.base and change.head and change.base.name != change.head.name else "",
        "matched_by": change.matched_by,
        "changes": ", ".join(change.changes),
        "base_flops": si(change.base.flops) if change.base else "—",
        "head_flops": si(change.head.flops) if change.head else "—",
        "base_flops_title": f"{change.base.flops:,} FLOPs" if change.base else "not in the base",
        "head_flops_title": f"{change.head.flops:,} FLOPs" if change.head else "not in the head",
        "base_shape": "; ".join(shape_text(s) for s in change.base.output_shapes) if change.base else "",
        "head_shape": "; ".join(shape_text(s) for s in change.head.output_shapes) if change.head else "",
    }


def _op_rows(diff: ModelDiff) -> list[dict]:
    """The op types whose count or FLOPs changed."""
    op_rows = []
    for row in diff.op_types:
        if row["base_count"] == row["head_count"] and row["base_flops"] == row["head_flops"]:
            continue
        change = row["head_flops"] - row["base_flops"]
        op_rows.append(
            {
                "op": row["op_type"],
                "count": f"{row['base_count']:,} → {row['head_count']:,}",
                "base_flops": si(row["base_flops"]),
                "head_flops": si(row["head_flops"]),
                "base_title": f"{row['base_flops']:,} FLOPs",
                "head_title": f"{row['head_flops']:,} FLOPs",
                "change": ("+" if change > 0 else "−" if change < 0 else "") + si(abs(change)) if change else "0",
                "direction": "same" if change == 0 else "worse" if change > 0 else "better",
            }
        )
    return op_rows


def _top_changes(diff: ModelDiff) -> list[dict]:
    """Per target, the nodes whose time changed most."""
    kinds = {n.name: n.kind for n in diff.nodes}
    return [
        {
            "target": target,
            "rows": [
                {
                    "name": name,
                    "base": side_time(b, kinds.get(name), "base"),
                    "head": side_time(h, kinds.get(name), "head"),
                    "base_title": f"{b:.6g} s",
                    "head_title": f"{h:.6g} s",
                    "change": ("+" if h > b else "−") + format_value(abs(h - b), "seconds"),
                    "direction": "worse" if h > b else "better",
                }
                for name, b, h in rows
            ],
        }
        for target, rows in diff.top_time_changes.items()
    ]


def _deltas(diff: ModelDiff) -> list[dict]:
    rows = []
    groups = [("model", diff.totals)] + [(target, deltas) for target, deltas in diff.targets.items()]
    for group, deltas in groups:
        for d in deltas:
            change = d.change
            # more is worse, except for throughput; below the diff's threshold, neither
            worse = change is not None and (change < 0 if d.unit == "per_second" else change > 0)
            direction = (
                "na"
                if change is None or d.change_bound
                else "same"
                if change == 0 or not significant(d, diff.threshold)
                else "worse"
                if worse
                else "better"
            )
            rows.append(
                {
                    "group": group,
                    "label": d.label,
                    "base": side_value(d, "base"),
                    "head": side_value(d, "head"),
                    "base_title": _exact(d.base, d.unit),
                    "head_title": _exact(d.head, d.unit),
                    "change": signed_change(d),
                    "percent": percent_text(d, symbols=False),
                    "direction": direction,
                }
            )
    return rows


def _exact(value: float | None, unit: str) -> str:
    if value is None:
        return "not available"
    if unit in ("count", "bytes"):
        return f"{int(value):,} {'bytes' if unit == 'bytes' else ''}".strip()
    return f"{value:.6g} {dict(seconds='s', joules='J', per_second='per second').get(unit, '')}".strip()


def _summary_items(diff: ModelDiff) -> list[dict]:
    """The diff's headline (as ``summary_line``, without emoji): each item with its direction."""
    items = []
    deltas = [(d.label, d) for d in diff.totals if d.key in _SUMMARY_KEYS]
    deltas += [(f"latency [{t}]", d) for t, ds in diff.targets.items() for d in ds if d.key == "latency_s"]
    for label, d in deltas:
        change = d.change
        direction = (
            "na"
            if change is None or d.change_bound
            else "same"
            if not change or not significant(d, diff.threshold)
            else "worse"
            if change > 0
            else "better"
        )
        items.append({"label": label, "text": percent_text(d, symbols=False), "direction": direction})
    return items


def _diff_roofline(
    diff: ModelDiff, before: TargetReport | None, report: TargetReport, number: int, palette: dict[str, str]
) -> dict:
    """Both models on one target's roofline: base dots hollow, head dots filled, arrows from base
    to head for the matched nodes whose time changed most, and both whole-model points."""
    target = report.target
    sides = [
        _side_dots(role, analysis, placed)
        for role, analysis, placed in (("base", diff.base, before), ("head", diff.head, report))
    ]
    arrows_data = _largest_time_changes(diff, before, report)
    marks = [(role, *point) for role, placed, _ in sides if (point := _model_point(placed)) is not None]
    all_dots = [d for _, _, dots in sides for d in dots]
    extra = [(m[1], m[2]) for m in marks]
    extra += [(bp.intensity, achieved_rate(bp.flops, bp.time_s)) for _, bp, _ in arrows_data]
    chart, context = target_roofline(target, all_dots, extra, f"diff-roofline-{number}")
    context["dots"] += _dot_contexts(chart, sides, palette)
    context["arrows"] += [_node_arrow(chart, change, bp, hp, target.name) for change, bp, hp in arrows_data]
    _add_model_marks(
        context, chart, marks, target.name, {"base": before.missing if before else "", "head": report.missing}
    )
    place_mark_labels(context, chart)
    latency = [target_card(before).latency if before else "—", target_card(report).latency]
    return {
        **context,
        "name": target.name,
        "description": target.description,
        "legend": [{"op": op, "colour": colour, "count": ""} for op, colour in palette.items()],
        "others": "",
        "aggregated": any(d["count"] > 1 for d in all_dots),
        "summary": f"Roofline on {target.name}: base and head nodes, arrows for the largest time changes",
        "latency": f"{latency[0]} → {latency[1]}",
        "notes": report.notes,
        "arrow_count": len(arrows_data),
    }


def _side_dots(
    role: str, analysis: Analysis, placed: TargetReport | None
) -> tuple[str, TargetReport | None, list[dict]]:
    """One model's dots on the target (none when that model was not analysed on it)."""
    if placed is None:
        return role, None, []
    index = {n.name: i for i, n in enumerate(analysis.nodes)}
    costed = costed_kernels(placed)
    latency = placed.latency_s
    if len(costed) > AGGREGATE_ABOVE:
        return role, placed, binned_dots(costed, index, latency)
    return (
        role,
        placed,
        [
            {
                "intensity": k.placement.intensity,
                "performance": achieved_rate(k.placement.flops, k.placement.time_s),
                "weight": k.placement.time_s / latency if latency else 0.0,
                "op": main_op(k.op_type),
                "node": index.get(k.name, -1),
                "count": 1,
                "title": kernel_dot_title(k, latency),
            }
            for k in costed
        ],
    )


def _largest_time_changes(diff: ModelDiff, before: TargetReport | None, report: TargetReport) -> list[tuple]:
    """The matched nodes (in both models, costed in both) whose time changed most:
    (change, base placement, head placement), at most DIFF_ARROWS."""
    base_placements = {k.name: k.placement for k in before.nodes} if before else {}
    head_placements = {k.name: k.placement for k in report.nodes}
    candidates = []
    for change in diff.nodes:
        if change.base is None or change.head is None:
            continue
        bp, hp = base_placements.get(change.base.name), head_placements.get(change.head.name)
        if not bp or not hp or not (bp.flops and hp.flops and bp.time_s and hp.time_s):
            continue
        if bp.time_s != hp.time_s:
            candidates.append((abs(hp.time_s - bp.time_s), change.head.index, change, bp, hp))
    candidates.sort(key=lambda item: (-item[0], item[1]))
    return [(change, bp, hp) for _, _, change, bp, hp in candidates[:DIFF_ARROWS]]


def _model_point(placed: TargetReport | None) -> tuple[float | None, float] | None:
    """A model's whole-model point on the target: (intensity, achieved FLOP/s), if it has one."""
    if placed and placed.model_point.flops and placed.latency_s:
        return placed.model_point.intensity, achieved_rate(placed.model_point.flops, placed.latency_s)
    return None


def _dot_contexts(
    chart: RooflineChart, sides: list[tuple[str, TargetReport | None, list[dict]]], palette: dict[str, str]
) -> list[dict]:
    """Every dot of both sides, in the chart's order of points; big ones first within a side."""
    placed_points = iter(chart.points)
    contexts = []
    for role, _, dots in sides:
        ordered = [(dot, next(placed_points)) for dot in dots]
        ordered.sort(key=lambda item: -item[0]["weight"])
        for dot, point in ordered:
            contexts.append(
                {
                    "cx": svg_number(point.x),
                    "cy": svg_number(point.y),
                    "r": svg_number(point.r),
                    "colour": OTHER_COLOUR if role == "base" else palette.get(dot["op"], OTHER_COLOUR),
                    "node": str(dot["node"]) if role == "head" else "",
                    "count": str(dot["count"]),
                    "op": dot["op"],
                    "cls": f"dot dot-{role}" + (" dot-bin" if dot["count"] > 1 else ""),
                    "title": f"{role}: " + dot["title"],
                }
            )
    return contexts


def _node_arrow(chart: RooflineChart, change, bp: Placement, hp: Placement, target: str) -> dict:
    start = chart.place(bp.intensity, achieved_rate(bp.flops, bp.time_s))
    end = chart.place(hp.intensity, achieved_rate(hp.flops, hp.time_s))
    title = (
        f"{change.name} ({change.head.op_type}): {format_value(bp.time_s, 'seconds')} → "
        f"{format_value(hp.time_s, 'seconds')} on {target}"
    )
    return _arrow(start.x, start.y, end.x, end.y, title, "arrow-node")


def _add_model_marks(
    context: dict, chart: RooflineChart, marks: list[tuple], target: str, missing: dict[str, str]
) -> None:
    """Both whole-model points, and an arrow from the base's to the head's before every other; a
    side that left nodes out (``missing``: role -> what) is labelled a bound."""
    model_marks = {}
    for role, point_intensity, achieved in marks:
        placed = chart.place(point_intensity, achieved)
        model_marks[role] = placed
        bound = f" (bound: {missing[role]})" if missing.get(role) else ""
        label = f"{role} model" + (" (bound)" if bound else "")
        context["marks"].append(
            model_mark(
                placed,
                chart,
                f"model model-{role}",
                label,
                f"Whole {role} model on {target}{bound}: "
                f"{intensity(point_intensity) if point_intensity is not None else '∞'} FLOP/B, "
                f"{si(achieved, 'FLOP/s')} achieved",
            )
        )
    if "base" in model_marks and "head" in model_marks:
        b, h = model_marks["base"], model_marks["head"]
        context["arrows"].insert(0, _arrow(b.x, b.y, h.x, h.y, "whole model: base → head", "arrow-model"))


def _arrow(x1: float, y1: float, x2: float, y2: float, title: str, cls: str) -> dict:
    """A line from (x1, y1) stopping short of (x2, y2), with a filled head as a polygon."""
    dx, dy = x2 - x1, y2 - y1
    length = math.hypot(dx, dy)
    if length < 1e-6:
        return {"d": "", "head": "", "title": title, "cls": cls}
    ux, uy = dx / length, dy / length
    size = 8.0 if length > 16 else max(length / 2, 3.0)
    tip_x, tip_y = x2 - ux * 3, y2 - uy * 3
    back_x, back_y = tip_x - ux * size, tip_y - uy * size
    left = (back_x - uy * size * 0.5, back_y + ux * size * 0.5)
    right = (back_x + uy * size * 0.5, back_y - ux * size * 0.5)
    return {
        "d": f"M{svg_number(x1)},{svg_number(y1)}L{svg_number(back_x)},{svg_number(back_y)}",
        "head": " ".join(f"{svg_number(px)},{svg_number(py)}" for px, py in ((tip_x, tip_y), left, right)),
        "title": title,
        "cls": cls,
    }
