"""Chart contexts that several pages draw: rooflines and live-activation timelines.

Geometry comes from ``charts.py``; here it becomes the strings the templates place (coordinates,
labels, hover titles). The model and diff pages draw a roofline per target with a dot per costed
node (past :data:`AGGREGATE_ABOVE` nodes, one dot per op type and cell of the log-log plane);
compare and sweep pages draw only whole-model points. The memory timeline of the model page and
the overlaid timelines of the diff and sweep pages share their frame, peak markers and
capacity lines.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ...core.units import iec, intensity, si
from ..bounds import BOUND_LABELS
from ..formatting import format_value, share_percent
from .charts import (
    SLOPE_LABEL_AT,
    RooflineChart,
    RooflinePoint,
    TimelineChart,
    _overlaps,
    label_rect,
    roofline_chart,
    timeline_chart,
)
from .page import SERIES_COLOURS
from .scales import svg_number

if TYPE_CHECKING:
    from ...core.nodes import NodeRecord
    from ...memory.problem import Schedule
    from ...roofline.placement import NodePlacement, TargetReport
    from ...roofline.targets import Target
    from .xy_chart import XYChart

AGGREGATE_ABOVE = 2_000  # costed nodes past which a roofline bins its dots
ROOFLINE_SIZE = (1240, 470)
MEMORY_CHART_SIZE = (1240, 300)  # SVG user units; the chart scales to the panel's width
# colours for op types (the nine with the most FLOPs; the rest share the last, grey)
PALETTE = ("#3f6fd8", "#e8772e", "#2f9e6e", "#d64545", "#8a5cc9", "#c9a227", "#17a2b8", "#d46aa8", "#7a5a3a")
OTHER_COLOUR = "#9aa1ae"


# ---------------------------------------------------------------------------------------------
# Rooflines


def main_op(op_type: str) -> str:
    """The op a kernel is coloured and filtered by: its first node's ("Conv" for "Conv+Relu")."""
    return op_type.split("+", 1)[0]


def op_palette(
    nodes: list[NodeRecord], group: Callable[[NodeRecord], str] = lambda node: node.op_type
) -> dict[str, str]:
    """A colour per op type (or per another ``group`` of the nodes, such as their module): the
    nine with the most FLOPs get their own, the rest share grey."""
    flops: Counter = Counter()
    for node in nodes:
        if node.counted and node.flops:
            flops[group(node)] += node.flops
    ordered = sorted(flops.items(), key=lambda kv: (-kv[1], kv[0]))
    return {op: PALETTE[i] for i, (op, _) in enumerate(ordered[: len(PALETTE)])}


def roof_groups(target: Target) -> list[tuple[str, float, list[str]]]:
    """The target's compute roofs, equal peaks merged (fp16 and bf16): (label, FLOP/s, roofs)."""
    groups: dict[float, list[str]] = {}
    for roof, figure in target.peak_ops_per_s.items():
        groups.setdefault(figure.value, []).append(roof)
    return [(" · ".join(names), peak, names) for peak, names in groups.items()]


def onchip_bandwidth(target: Target) -> float | None:
    """The target's on-chip bytes per second, if it gives them."""
    return target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None


def bandwidth_roofs(target: Target) -> list[tuple[str, float]]:
    bandwidths = [("DRAM", target.dram_bytes_per_s.value)]
    if onchip_bandwidth(target):
        bandwidths.append(("on-chip", onchip_bandwidth(target)))
    return bandwidths


def ops_unit(roofs: Iterable[str]) -> str:
    return "OP/s" if all(r.startswith("int") for r in roofs) else "FLOP/s"


def target_roofline(
    target: Target,
    dots: list[dict],
    marks: Sequence[tuple[float | None, float]],
    chart_id: str,
    height: float = ROOFLINE_SIZE[1],
) -> tuple[RooflineChart, dict]:
    """``target``'s roofline chart around ``dots`` (:func:`chart_points`) and the points ``marks``
    (intensity, achieved rate) its axes must also hold, and its frame for the template. The
    compare and sweep pages, which draw only whole-model points, make it 40 units lower."""
    chart = roofline_chart(
        [(label, peak) for label, peak, _ in roof_groups(target)],
        bandwidth_roofs(target),
        chart_points(dots),
        marks,
        width=ROOFLINE_SIZE[0],
        height=height,
    )
    return chart, roofline_frame(target, chart, chart_id)


def roofline_frame(target: Target, chart: RooflineChart, chart_id: str) -> dict:
    """The axes, roofs and slopes of a roofline chart, as strings for the template."""
    plot = chart.plot
    roofs = []
    groups = {peak: (label, names) for label, peak, names in roof_groups(target)}
    ridge_labels = []
    for roof in chart.roofs:
        label, names = groups.get(roof.value, (roof.label, [roof.label]))
        unit = ops_unit(names)
        figure = target.peak_ops_per_s[names[0]]
        ridge_labels.append(roof)
        roofs.append(
            {
                "d": f"M{svg_number(roof.x1)},{svg_number(roof.y)}H{svg_number(roof.x2)}",
                "line": (roof.x1, roof.y, roof.x2),  # where the roof runs: a label must not cross it
                "label": f"{label} · {si(roof.value, unit)}",
                "label_x": svg_number(roof.label_x),
                "label_y": svg_number(roof.label_y),
                "anchor": roof.anchor,
                "on_line": roof.on_line,
                "title": (
                    f"{label} compute roof: {roof.value:,.6g} {unit} ({figure.tag}: {figure.source}); "
                    f"ridge at {roof.ridge:.4g} FLOP per DRAM byte"
                ),
                "ridge": None,
            }
        )
    # ridge labels: left of the ridge point, in the empty region above the DRAM slope
    visible = [(k, r) for k, r in enumerate(chart.roofs) if r.ridge_visible]
    from .charts import spread

    ys = spread([r.ridge_y - 9 for _, r in visible], 14, plot.top + 10, plot.bottom - 4)
    for (k, roof), label_y in zip(visible, ys):
        text = f"ridge {intensity(roof.ridge)} FLOP/B"
        room = roof.ridge_x - 10 - len(text) * 6.4
        left = room > plot.left
        roofs[k]["ridge"] = {
            "cx": svg_number(roof.ridge_x),
            "cy": svg_number(roof.ridge_y),
            "label": text,
            "label_x": svg_number(roof.ridge_x - 9 if left else roof.ridge_x + 9),
            "label_y": svg_number(label_y),
            "anchor": "end" if left else "start",
            "title": f"ridge point of the {roofs[k]['label'].split(' · ')[0]} roof: {roof.ridge:.6g} FLOP/B; "
            "left of it a node is DRAM-bound, right of it compute-bound",
        }
    slopes = []
    taken = [
        label_rect(
            float(r["ridge"]["label_x"]), float(r["ridge"]["label_y"]), r["ridge"]["anchor"], r["ridge"]["label"]
        )
        for r in roofs
        if r["ridge"]
    ]
    # a slope's label keeps clear of the dots too (a kernel sitting on the DRAM slope, Coral's Gemm)
    dots = [(p.x - p.r, p.y - p.r, p.x + p.r, p.y + p.r) for p in chart.points if not p.unbounded]
    for index, slope in enumerate(chart.slopes):
        if not slope.path:
            continue
        text = f"{slope.label} {si(slope.value, 'B/s')}"
        label_x, label_y = _slope_label_spot(slope, text, SLOPE_LABEL_AT + 0.2 * index, taken + dots)
        taken.append(slope.label_box(label_x, label_y, text))
        slopes.append(
            {
                "d": slope.path,
                "cls": "slope-dram" if index == 0 else "slope-onchip",
                "label": text,
                "label_x": svg_number(label_x),
                "label_y": svg_number(label_y),
                "transform": f"rotate({slope.angle:.2f} {svg_number(label_x)} {svg_number(label_y)})",
                "angle": slope.angle,
                "title": (
                    f"{slope.label} bandwidth roof: {slope.value:,.6g} bytes/s"
                    + ("" if index == 0 else "; it bounds FLOP per on-chip byte (this axis is per DRAM byte)")
                ),
            }
        )
    strip = None
    if chart.strip is not None:
        s = chart.strip
        strip = {
            "x": svg_number(s.left),
            "y": svg_number(s.top),
            "width": svg_number(s.width),
            "height": svg_number(s.height),
            "label_x": svg_number(s.left + s.width / 2),
            "label_y": svg_number(s.bottom + 17),
            "title": "∞: no DRAM bytes (everything on chip), so no finite intensity; the height still shows FLOP/s",
        }
    return {
        "id": chart_id,
        **chart_frame(chart),
        "plot_w": svg_number(plot.width),
        "plot_h": svg_number(plot.height),
        "y_ticks": [{"y": svg_number(t.position), "label": t.label} for t in chart.y_ticks],
        "x_minor": [svg_number(v) for v in chart.x_minor],
        "y_minor": [svg_number(v) for v in chart.y_minor],
        "x_title": "intensity: FLOP per DRAM byte (log)",
        "x_title_x": svg_number((plot.left + plot.right) / 2),
        "x_title_y": svg_number(chart.height - 6),
        "y_title": f"{ops_unit(target.peak_ops_per_s)} achieved (log)",
        "y_title_x": "16",
        "y_title_y": svg_number((plot.top + plot.bottom) / 2),
        "y_title_transform": f"rotate(-90 16 {svg_number((plot.top + plot.bottom) / 2)})",
        "roofs": roofs,
        "slopes": slopes,
        "strip": strip,
        "dots": [],
        "paths": [],
        "arrows": [],
        "marks": [],
        "measured_dots": [],
        "level_dots": [],  # the kernels again on the on-chip level (model page)
    }


def chart_points(dots: list[dict]) -> list[RooflinePoint]:
    """Dots for the chart: the area in proportion to the share of the latency, on one scale for
    every chart (a node taking all the time would get the largest radius)."""
    return [RooflinePoint(d["intensity"], d["performance"], d["weight"]) for d in dots]


def costed_kernels(report: TargetReport) -> list[NodePlacement]:
    """The kernels a roofline draws a dot for: those with FLOPs and a time, on the target (not the
    host's past an Edge TPU's graph cut: their roofs are the host's)."""
    return [k for k in report.own_nodes if k.placement.flops > 0 and k.placement.time_s > 0]


def achieved_rate(flops: float, time_s: float) -> float:
    return flops / time_s if time_s else 0.0


def kernel_dot_title(kernel: NodePlacement, latency: float) -> str:
    """A kernel's tooltip: its nodes, numbers and bound."""
    p = kernel.placement
    time_s = p.time_s
    share = time_s / latency if latency else 0.0
    unit = ops_unit([p.roof])
    achieved = achieved_rate(p.flops, time_s)
    members = kernel.nodes or [kernel.name]
    lines = [
        f"{kernel.name}" + (f" (kernel of {len(members)} nodes: {', '.join(members)})" if len(members) > 1 else ""),
        f"{kernel.op_type} · {kernel.dtype} · {p.roof} roof",
        f"FLOPs: {si(p.flops)} ({p.flops:,})",
        f"DRAM bytes: {iec(p.dram_bytes)} ({p.dram_bytes:,})"
        + (f" · on-chip {iec(p.onchip_bytes)}" if p.onchip_bytes else ""),
        "intensity: "
        + (f"{intensity(p.intensity)} FLOP/B ({p.intensity:.6g})" if p.intensity is not None else "∞ (no DRAM bytes)"),
        f"time: {format_value(time_s, 'seconds')} ({time_s:.6g} s), {share_percent(share)} of the latency",
        f"achieved: {si(achieved, unit)} ({p.percent_of_peak:.1f}% of peak) · attainable "
        f"{si(p.attainable_flops_per_s, unit)}",
        f"bound: {BOUND_LABELS.get(p.bound, p.bound)}",
    ]
    return "\n".join(lines)


def _slope_label_spot(slope, text: str, first: float, taken: list) -> tuple[float, float]:
    """Where along ``slope`` its label overlaps no label already ``taken`` (the ridges'): its
    usual spot ``first`` if clear, else the nearest clear one up or down the line."""
    for t in sorted((first + step * 0.04 for step in range(-4, 18)), key=lambda t: abs(t - first)):
        if 0.02 <= t <= 0.7:
            x, y = slope.label_at(t)
            if not any(_overlaps(slope.label_box(x, y, text), box) for box in taken):
                return x, y
    return slope.label_x, slope.label_y


def model_mark(placed, chart: RooflineChart, kind: str, label: str, title: str, colour: str = "") -> dict:
    """A diamond for a whole-model point, labelled beside it (left of it near the right edge)."""
    right = placed.x > chart.plot.left + chart.plot.width * 0.8 or placed.unbounded
    above = placed.y - chart.plot.top > 30
    return {
        "kind": kind,
        "cx": svg_number(placed.x),
        "cy": svg_number(placed.y),
        "d": diamond_path(placed.x, placed.y, 7.5),
        "label": label,
        "title": title,
        "colour": colour,
        "label_x": svg_number(placed.x - 6 if right else placed.x + 6),
        "label_y": svg_number(placed.y - 12 if above else placed.y + 22),
        "anchor": "end" if right else "start",
    }


def place_mark_labels(context: dict, chart: RooflineChart) -> None:
    """Move the marks' labels to spots clear of each other, the roofs' lines, the roofs', ridges'
    and slopes' labels and every dot."""
    from .charts import label_rect, place_labels

    obstacles = []
    for dots in ("dots", "level_dots", "measured_dots"):
        for dot in context.get(dots, ()):
            x, y, r = float(dot["cx"]), float(dot["cy"]), float(dot.get("r", 4))
            obstacles.append((x - r - 1, y - r - 1, x + r + 1, y + r + 1))
    for slope in context.get("slopes", ()):
        if slope.get("label"):  # a rotated label: the axis-aligned box around it
            angle = math.radians(abs(float(slope.get("angle", 0.0))))
            length = len(slope["label"]) * 6.2
            x, y = float(slope["label_x"]), float(slope["label_y"])
            half_w, half_h = length * math.cos(angle) / 2 + 4, length * math.sin(angle) / 2 + 8
            obstacles.append((x - half_w, y - half_h, x + half_w, y + half_h))
    for roof in context["roofs"]:
        obstacles.append(label_rect(float(roof["label_x"]), float(roof["label_y"]), roof["anchor"], roof["label"], 7.0))
        x1, y, x2 = roof["line"]
        obstacles.append((x1, y - 2, x2, y + 2))  # the roof's line itself
        if roof["ridge"]:
            ridge = roof["ridge"]
            obstacles.append(
                label_rect(float(ridge["label_x"]), float(ridge["label_y"]), ridge["anchor"], ridge["label"], 6.2)
            )
    marks = context["marks"]
    spots = place_labels(
        [(float(m["cx"]), float(m["cy"]), m["label"]) for m in marks], chart.plot, obstacles, gap=9.0, char_width=7.3
    )
    for mark, spot in zip(marks, spots):
        if spot is None:
            mark["label"] = ""
            continue
        mark["label_x"], mark["label_y"], mark["anchor"] = svg_number(spot.x), svg_number(spot.y), spot.anchor


def diamond_path(x: float, y: float, size: float) -> str:
    return (
        f"M{svg_number(x)},{svg_number(y - size)}L{svg_number(x + size)},{svg_number(y)}"
        f"L{svg_number(x)},{svg_number(y + size)}L{svg_number(x - size)},{svg_number(y)}Z"
    )


def binned_dots(costed: list[NodePlacement], index: dict[str, int], latency: float) -> list[dict]:
    """Past AGGREGATE_ABOVE nodes: one dot per op type, roof and cell of the log-log plane (eight
    cells a decade). Its position is the bin's total FLOPs over its total DRAM bytes and total
    time, which stays under the roof; its area is the bin's share of the time."""
    bins: dict[tuple, dict] = {}
    for kernel in costed:
        p = kernel.placement
        achieved = achieved_rate(p.flops, p.time_s)
        cell_x = "inf" if p.intensity is None else round(math.log10(p.intensity) * 8) if p.intensity > 0 else "zero"
        cell_y = round(math.log10(achieved) * 8) if achieved > 0 else "zero"
        key = (kernel.op_type, p.roof, cell_x, cell_y)
        group = bins.setdefault(
            key,
            {
                "flops": 0,
                "dram": 0,
                "time": 0.0,
                "count": 0,
                "heaviest": None,
                "bounds": Counter(),
                "unbounded": cell_x == "inf",
            },
        )
        group["flops"] += p.flops
        group["dram"] += p.dram_bytes
        group["time"] += p.time_s
        group["count"] += 1
        group["bounds"][p.bound] += 1
        if group["heaviest"] is None or p.time_s > group["heaviest"].placement.time_s:
            group["heaviest"] = kernel
    dots = []
    for (op, roof, _, _), group in bins.items():
        heaviest = group["heaviest"]
        share = group["time"] / latency if latency else 0.0
        point_intensity = None if group["unbounded"] or not group["dram"] else group["flops"] / group["dram"]
        unit = ops_unit([roof])
        title = "\n".join(
            [
                f"{group['count']:,} × {op} ({roof} roof)" if group["count"] > 1 else heaviest.name,
                f"FLOPs: {si(group['flops'])} ({group['flops']:,})",
                f"DRAM bytes: {iec(group['dram'])} ({group['dram']:,})",
                "intensity: "
                + (f"{intensity(point_intensity)} FLOP/B" if point_intensity is not None else "∞ (no DRAM bytes)"),
                f"time: {format_value(group['time'], 'seconds')} ({group['time']:.6g} s), "
                f"{share_percent(share)} of the latency",
                f"achieved: {si(achieved_rate(group['flops'], group['time']), unit)}",
                "bound: " + ", ".join(f"{BOUND_LABELS.get(b, b)} {n:,}" for b, n in group["bounds"].most_common()),
                f"slowest: {heaviest.name} ({format_value(heaviest.placement.time_s, 'seconds')}); click to show it",
            ]
        )
        dots.append(
            {
                "intensity": point_intensity,
                "performance": achieved_rate(group["flops"], group["time"]),
                "weight": share,
                "op": main_op(op),
                "node": index.get(heaviest.name, -1),
                "count": group["count"],
                "title": title,
            }
        )
    return dots


# ---------------------------------------------------------------------------------------------
# Live-activation timelines


def overlay_timeline_context(
    series: list[tuple[str, Schedule]], capacities: Sequence[tuple[str, int]], summary: str, colours: bool = False
) -> dict:
    """Several live-activation timelines on one step axis (diff: base and head; sweep points)."""
    chart = timeline_chart(
        [(key, list(schedule.live_bytes)) for key, schedule in series],
        list(capacities),
        width=MEMORY_CHART_SIZE[0],
        height=MEMORY_CHART_SIZE[1],
    )
    plot = chart.plot
    columns = []
    for column in chart.columns:
        head = f"step {column.first}" if column.first == column.last else f"steps {column.first}–{column.last}"
        lines = [head]
        for key, schedule in series:
            live = schedule.live_bytes
            window = range(column.first, min(column.last + 1, len(live)))
            if not window:
                lines.append(f"{key}: no step here")
                continue
            top = max(window, key=lambda step: (live[step], -step))
            lines.append(f"{key}: {iec(live[top])} ({live[top]:,} bytes) at step {top}, {schedule.order[top]}")
        columns.append({"x": svg_number(column.x), "width": svg_number(column.width), "title": "\n".join(lines)})
    markers = []
    for geometry, (key, schedule) in zip(chart.series, series):
        if geometry.peak is None or len(series) > 2:  # more than two peaks: the hover columns tell
            continue
        node = schedule.order[geometry.peak.step] if geometry.peak.step < len(schedule.order) else ""
        markers.append(
            peak_marker(
                geometry.peak,
                plot,
                key,
                f"Peak, {key}: {int(geometry.peak.value):,} bytes at step {geometry.peak.step}, {node}",
                f"{key} peak {iec(geometry.peak.value)} · step {geometry.peak.step}",
                near=len(markers) > 0 and geometry.peak.y - plot.top > 30,
            )
        )
    return {
        **timeline_frame(chart),
        "area": "",
        "series": [
            {
                "key": key,
                "d": geometry.path,
                "title": f"{key}: live activation bytes per step",
                **({"colour": SERIES_COLOURS[k % len(SERIES_COLOURS)]} if colours else {}),
            }
            for k, (geometry, (key, _)) in enumerate(zip(chart.series, series))
        ],
        "legend": [
            {"key": key, "colour": SERIES_COLOURS[k % len(SERIES_COLOURS)]} for k, (key, _) in enumerate(series)
        ],
        "markers": markers,
        "references": capacity_lines(chart),
        "off_scale": ", ".join(f"{line.label} ({iec(line.value)})" for line in chart.references if line.y is None),
        "columns": columns,
        "steps": f"{chart.steps:,}",
        "summary": summary,
    }


def peak_marker(point, plot, key: str, title: str, label: str, near: bool = False) -> dict:
    """A peak marker with its label in the top margin (or just above the point when ``near``),
    flipped to the left of the point in the right part of the plot."""
    right_half = point.x > plot.left + plot.width * 0.62
    label_y = point.y - 12 if near else plot.top - 9
    return {
        "key": key,
        "cx": svg_number(point.x),
        "cy": svg_number(point.y),
        "leader_y": svg_number(label_y + 3),
        "label_x": svg_number(point.x - 7 if right_half else point.x + 7),
        "label_y": svg_number(label_y),
        "anchor": "end" if right_half else "start",
        "title": title,
        "label": label,
    }


def chart_frame(chart: RooflineChart | TimelineChart | XYChart) -> dict:
    """What every chart's template places first, as strings: its box, the plot's edges, where an
    x tick's line ends and the x ticks."""
    plot = chart.plot
    return {
        "view_box": f"0 0 {svg_number(chart.width)} {svg_number(chart.height)}",
        "width": svg_number(chart.width),
        "height": svg_number(chart.height),
        "left": svg_number(plot.left),
        "right": svg_number(plot.right),
        "top": svg_number(plot.top),
        "bottom": svg_number(plot.bottom),
        "tick_end": svg_number(plot.bottom + 5),
        "x_ticks": [{"x": svg_number(t.position), "label": t.label} for t in chart.x_ticks],
    }


def timeline_frame(chart: TimelineChart) -> dict:
    """The box, axes and ticks of a timeline, as strings for the template."""
    plot = chart.plot
    return {
        **chart_frame(chart),
        "plot_height": svg_number(plot.height),
        "middle_x": svg_number((plot.left + plot.right) / 2),
        "middle_y": svg_number((plot.top + plot.bottom) / 2),
        "x_label_y": svg_number(chart.height - 8),
        "y_ticks": [{"y": svg_number(t.position), "label": t.label} for t in chart.y_ticks],
    }


def capacity_lines(chart: TimelineChart, marker_xs: Sequence[float] = ()) -> list[dict]:
    """On-chip capacity lines within the chart's scale, labelled, right-aligned (left-aligned
    when a peak marker's leader stands in the right third, where it would cross them); close
    ones spread."""
    from .charts import spread

    shown = [line for line in chart.references if line.y is not None]
    label_ys = spread([line.y - 5 for line in shown], 13, chart.plot.top - 12, chart.plot.bottom - 2)
    left = any(x > chart.plot.left + chart.plot.width * 2 / 3 for x in marker_xs)
    return [
        {
            "y": svg_number(line.y),
            "label_y": svg_number(label_y),
            "label": f"{line.label} · {iec(line.value)}",
            "title": f"{line.label}: {int(line.value):,} bytes on chip",
            "label_x": svg_number(chart.plot.left + 4 if left else chart.plot.right),
            "anchor": "start" if left else "end",
        }
        for line, label_y in zip(shown, label_ys)
    ]
