"""The diff page (``onnxroof diff --format html``): a base and a head model on one page.

Its deltas and budgets, both models on every target's roofline (base dots hollow, head dots
filled, arrows for the :data:`DIFF_ARROWS` matched nodes whose time changed most, and both
whole-model points), the two live-activation timelines overlaid, and the nodes and op types
that changed.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Sequence

from ...core.units import intensity, si
from .chart_context import (
    AGGREGATE_ABOVE, OTHER_COLOUR, ROOFLINE_SIZE, achieved_rate, bandwidth_roofs, roofline_frame, binned_dots, kernel_dot_title,
    model_mark, overlay_timeline_context, main_op, op_palette, place_mark_labels, chart_points, roof_groups,
)
from .charts import RooflineChart, roofline_chart
from .scales import svg_number
from ..formatting import count_text, format_value, percent_text, shape_text, signed_change
from .page import model_side, render_page, target_capacities

if TYPE_CHECKING:
    from ...compare.budgets import BudgetResult
    from ...compare.diff import ModelDiff

DIFF_TEMPLATE = "diff.html.j2"
DIFF_ARROWS = 10  # arrows drawn per target: the largest time changes
NODE_CHANGES_SHOWN = 500
_SUMMARY_KEYS = ("params", "flops", "peak_memory")


def render_diff_html(diff: "ModelDiff", budget_results: Sequence["BudgetResult"] = ()) -> str:
    """A base and a head model on one page: deltas, both on every roofline, memory overlaid."""
    return render_page(DIFF_TEMPLATE, _diff_context(diff, list(budget_results)))


def _diff_context(diff: "ModelDiff", budgets: list["BudgetResult"]) -> dict:
    base, head = diff.base, diff.head
    base_doc, head_doc = base.to_dict(), head.to_dict()
    palette = op_palette(head_doc["nodes"])
    changed = diff.changed_nodes
    kinds = Counter(n.kind for n in diff.nodes)
    base_targets = {t["name"]: t for t in base_doc["targets"]}
    rooflines = []
    for number, target in enumerate(head_doc["targets"]):
        before = base_targets.get(target["name"])
        rooflines.append(_diff_roofline(diff, base_doc, head_doc, before, target, number, palette))
    capacities = target_capacities(head)
    base_steps = [e["live_bytes"] for e in base_doc["memory"]["timeline"]]
    head_steps = [e["live_bytes"] for e in head_doc["memory"]["timeline"]]
    timeline = overlay_timeline_context(
        [("base", base_steps, base_doc["memory"]["timeline"]), ("head", head_steps, head_doc["memory"]["timeline"])],
        capacities, f"Live activation bytes per step, base ({len(base_steps):,} steps) and head ({len(head_steps):,} steps)",
    )
    node_rows = []
    for change in changed[:NODE_CHANGES_SHOWN]:
        record = change.head or change.base
        node_rows.append({
            "kind": change.kind, "name": change.name, "op": record.op_type,
            "base_name": change.base.name if change.base and change.head and change.base.name != change.head.name else "",
            "matched_by": change.matched_by,
            "changes": ", ".join(change.changes),
            "base_flops": si(change.base.flops) if change.base else "—",
            "head_flops": si(change.head.flops) if change.head else "—",
            "base_flops_title": f"{change.base.flops:,} FLOPs" if change.base else "not in the base",
            "head_flops_title": f"{change.head.flops:,} FLOPs" if change.head else "not in the head",
            "base_shape": "; ".join(shape_text(s) for s in change.base.output_shapes) if change.base else "",
            "head_shape": "; ".join(shape_text(s) for s in change.head.output_shapes) if change.head else "",
        })
    op_rows = []
    for row in diff.op_types:
        if row["base_count"] == row["head_count"] and row["base_flops"] == row["head_flops"]:
            continue
        change = row["head_flops"] - row["base_flops"]
        op_rows.append({
            "op": row["op_type"], "count": f"{row['base_count']:,} → {row['head_count']:,}",
            "base_flops": si(row["base_flops"]), "head_flops": si(row["head_flops"]),
            "base_title": f"{row['base_flops']:,} FLOPs", "head_title": f"{row['head_flops']:,} FLOPs",
            "change": ("+" if change > 0 else "−" if change < 0 else "") + si(abs(change)) if change else "0",
            "direction": "same" if change == 0 else "worse" if change > 0 else "better",
        })
    top_changes = []
    for target, rows in diff.top_time_changes.items():
        top_changes.append({"target": target, "rows": [
            {"name": name, "base": format_value(b, "seconds"), "head": format_value(h, "seconds"),
             "base_title": f"{b:.6g} s", "head_title": f"{h:.6g} s",
             "change": ("+" if h > b else "−") + format_value(abs(h - b), "seconds"),
             "direction": "worse" if h > b else "better"}
            for name, b, h in rows]})
    broken = [b for b in budgets if b.broken]
    return {
        "title": f"{base.model.name} → {head.model.name}",
        "base": model_side(base_doc, "base"), "head": model_side(head_doc, "head"),
        "summary": _summary_items(diff),
        "input_changes": diff.input_changes,
        "budgets": [{"text": b.describe(), "broken": b.broken} for b in budgets],
        "budgets_broken": len(broken),
        "deltas": _deltas(diff),
        "rooflines": rooflines,
        "timeline": timeline,
        "node_counts": {k: count_text(kinds.get(k, 0)) for k in ("added", "removed", "changed", "unchanged")},
        "node_rows": node_rows,
        "node_more": count_text(len(changed) - NODE_CHANGES_SHOWN) if len(changed) > NODE_CHANGES_SHOWN else "",
        "op_rows": op_rows,
        "top_changes": top_changes,
        "targets": ", ".join(t["name"] for t in head_doc["targets"]) or "none",
    }


def _deltas(diff: "ModelDiff") -> list[dict]:
    rows = []
    groups = [("model", diff.totals)] + [(target, deltas) for target, deltas in diff.targets.items()]
    for group, deltas in groups:
        for d in deltas:
            change = d.change
            # more is worse, except for throughput
            worse = change is not None and (change < 0 if d.unit == "per_second" else change > 0)
            direction = "same" if change == 0 else "na" if change is None else "worse" if worse else "better"
            rows.append({
                "group": group, "label": d.label,
                "base": format_value(d.base, d.unit), "head": format_value(d.head, d.unit),
                "base_title": _exact(d.base, d.unit), "head_title": _exact(d.head, d.unit),
                "change": signed_change(d), "percent": percent_text(d, symbols=False), "direction": direction,
            })
    return rows


def _exact(value: float | None, unit: str) -> str:
    if value is None:
        return "not available"
    if unit in ("count", "bytes"):
        return f"{int(value):,} {'bytes' if unit == 'bytes' else ''}".strip()
    return f"{value:.6g} {dict(seconds='s', joules='J', per_second='per second').get(unit, '')}".strip()


def _summary_items(diff: "ModelDiff") -> list[dict]:
    """The diff's headline (as ``summary_line``, without emoji): each item with its direction."""
    items = []
    deltas = [(d.label, d) for d in diff.totals if d.key in _SUMMARY_KEYS]
    deltas += [(f"latency [{t}]", d) for t, ds in diff.targets.items() for d in ds if d.key == "latency_s"]
    for label, d in deltas:
        change = d.change
        direction = "same" if not change else "na" if change is None else "worse" if change > 0 else "better"
        items.append({"label": label, "text": percent_text(d, symbols=False), "direction": direction})
    return items


def _diff_roofline(diff: "ModelDiff", base_doc: dict, head_doc: dict, before: dict | None, target: dict,
                   number: int, palette: dict[str, str]) -> dict:
    """Both models on one target's roofline: base dots hollow, head dots filled, arrows from base
    to head for the matched nodes whose time changed most, and both whole-model points."""
    sides = [_side_dots(role, document, placed) for role, document, placed
             in (("base", base_doc, before), ("head", head_doc, target))]
    arrows_data = _largest_time_changes(diff, before, target)
    marks = [(role, *point) for role, placed, _ in sides if (point := _model_point(placed)) is not None]
    all_dots = [d for _, _, dots in sides for d in dots]
    extra = [(m[1], m[2]) for m in marks]
    extra += [(bp["intensity"], achieved_rate(bp["flops"], bp["time_s"])) for _, bp, _ in arrows_data]
    chart = roofline_chart(
        [(label, peak) for label, peak, _ in roof_groups(target)], bandwidth_roofs(target),
        chart_points(all_dots), extra,
        width=ROOFLINE_SIZE[0], height=ROOFLINE_SIZE[1],
    )
    context = roofline_frame(target, chart, f"diff-roofline-{number}")
    context["dots"] += _dot_contexts(chart, sides, palette)
    context["arrows"] += [_node_arrow(chart, change, bp, hp, target) for change, bp, hp in arrows_data]
    _add_model_marks(context, chart, marks, target)
    place_mark_labels(context, chart)
    latency = [format_value(before["latency_s"], "seconds") if before else "—", format_value(target["latency_s"], "seconds")]
    return {
        **context, "name": target["name"], "description": target["description"],
        "legend": [{"op": op, "colour": colour, "count": ""} for op, colour in palette.items()],
        "others": "", "aggregated": any(d["count"] > 1 for d in all_dots),
        "summary": f"Roofline on {target['name']}: base and head nodes, arrows for the largest time changes",
        "latency": f"{latency[0]} → {latency[1]}", "notes": target["notes"], "arrow_count": len(arrows_data),
    }


def _side_dots(role: str, document: dict, placed: dict | None) -> tuple[str, dict | None, list[dict]]:
    """One model's dots on the target (none when that model was not analysed on it)."""
    if placed is None:
        return role, None, []
    index = {n["name"]: i for i, n in enumerate(document["nodes"])}
    costed = [p for p in placed["nodes"] if p["flops"] > 0 and p["time_s"] > 0]
    latency = placed["latency_s"]
    if len(costed) > AGGREGATE_ABOVE:
        return role, placed, binned_dots(costed, index, latency)
    return role, placed, [{"intensity": p["intensity"], "performance": achieved_rate(p["flops"], p["time_s"]),
                           "weight": p["time_s"] / latency if latency else 0.0, "op": main_op(p["op_type"]),
                           "node": index.get(p["name"], -1), "count": 1, "placement": p,
                           "title": kernel_dot_title(p, placed, latency)} for p in costed]


def _largest_time_changes(diff: "ModelDiff", before: dict | None, target: dict) -> list[tuple]:
    """The matched nodes (in both models, costed in both) whose time changed most:
    (change, base placement, head placement), at most DIFF_ARROWS."""
    base_placements = {p["name"]: p for p in before["nodes"]} if before else {}
    head_placements = {p["name"]: p for p in target["nodes"]}
    candidates = []
    for change in diff.nodes:
        if change.base is None or change.head is None:
            continue
        bp, hp = base_placements.get(change.base.name), head_placements.get(change.head.name)
        if not bp or not hp or not (bp["flops"] and hp["flops"] and bp["time_s"] and hp["time_s"]):
            continue
        if bp["time_s"] != hp["time_s"]:
            candidates.append((abs(hp["time_s"] - bp["time_s"]), change.head.index, change, bp, hp))
    candidates.sort(key=lambda item: (-item[0], item[1]))
    return [(change, bp, hp) for _, _, change, bp, hp in candidates[:DIFF_ARROWS]]


def _model_point(placed: dict | None) -> tuple[float | None, float] | None:
    """A model's whole-model point on the target: (intensity, achieved FLOP/s), if it has one."""
    if placed and placed["model_point"]["flops"] and placed["latency_s"]:
        return placed["model_point"]["intensity"], achieved_rate(placed["model_point"]["flops"], placed["latency_s"])
    return None


def _dot_contexts(chart: RooflineChart, sides: list[tuple[str, dict | None, list[dict]]],
                  palette: dict[str, str]) -> list[dict]:
    """Every dot of both sides, in the chart's order of points; big ones first within a side."""
    placed_points = iter(chart.points)
    contexts = []
    for role, _, dots in sides:
        ordered = [(dot, next(placed_points)) for dot in dots]
        ordered.sort(key=lambda item: -item[0]["weight"])
        for dot, point in ordered:
            contexts.append({
                "cx": svg_number(point.x), "cy": svg_number(point.y), "r": svg_number(point.r),
                "colour": OTHER_COLOUR if role == "base" else palette.get(dot["op"], OTHER_COLOUR),
                "node": str(dot["node"]) if role == "head" else "", "count": str(dot["count"]), "op": dot["op"],
                "cls": f"dot dot-{role}" + (" dot-bin" if dot["count"] > 1 else ""),
                "title": f"{role}: " + dot["title"],
            })
    return contexts


def _node_arrow(chart: RooflineChart, change, bp: dict, hp: dict, target: dict) -> dict:
    start = chart.place(bp["intensity"], achieved_rate(bp["flops"], bp["time_s"]))
    end = chart.place(hp["intensity"], achieved_rate(hp["flops"], hp["time_s"]))
    title = (f"{change.name} ({change.head.op_type}): {format_value(bp['time_s'], 'seconds')} → "
             f"{format_value(hp['time_s'], 'seconds')} on {target['name']}")
    return _arrow(start.x, start.y, end.x, end.y, title, "arrow-node")


def _add_model_marks(context: dict, chart: RooflineChart, marks: list[tuple], target: dict) -> None:
    """Both whole-model points, and an arrow from the base's to the head's before every other."""
    model_marks = {}
    for role, point_intensity, achieved in marks:
        placed = chart.place(point_intensity, achieved)
        model_marks[role] = placed
        context["marks"].append(model_mark(placed, chart, f"model model-{role}", f"{role} model",
                                           f"Whole {role} model on {target['name']}: "
                                           f"{intensity(point_intensity) if point_intensity is not None else '∞'} FLOP/B, "
                                           f"{si(achieved, 'FLOP/s')} achieved"))
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
        "title": title, "cls": cls,
    }
