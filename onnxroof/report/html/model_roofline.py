"""The model page's rooflines: one per target, with a dot per costed kernel.

:func:`roofline_context` builds one target's chart in named steps: the dots (one per kernel,
alike kernels merged, binned past :data:`AGGREGATE_ABOVE` costed kernels), the on-chip level,
the chart's axes, the whole-model marks (predicted, and measured with a profile) and the
legend. :func:`top_modules` gives the groups for ``--colour-by module``.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ...core.units import iec, intensity, si
from ..bounds import BOUND_LABELS
from ..formatting import count_text, format_value, share_percent
from .chart_context import (
    AGGREGATE_ABOVE,
    OTHER_COLOUR,
    achieved_rate,
    binned_dots,
    costed_kernels,
    diamond_path,
    kernel_dot_title,
    main_op,
    model_mark,
    onchip_bandwidth,
    ops_unit,
    place_mark_labels,
    target_roofline,
)
from .charts import RooflineChart
from .profile_section import error_text, measured_dots, ratio_text
from .scales import svg_number

if TYPE_CHECKING:
    from ...measure.profiling import ProfileResult
    from ...result import Analysis
    from ...roofline.placement import NodePlacement, Placement, TargetReport
    from ...roofline.targets import Target

NO_MODULE = "(no module)"  # the group of a node whose name carries no scope (--colour-by module)
CLAMPED = "\n(outside the axes: drawn at the edge)"  # a dot's title, when the axes could not hold it


def roofline_context(
    analysis: Analysis,
    report: TargetReport,
    number: int,
    palette: dict[str, str],
    profile: ProfileResult | None = None,
    groups: dict[str, str] | None = None,
) -> dict:
    """One target's roofline: roofs, one dot per costed node (binned past AGGREGATE_ABOVE), the
    whole-model point; hover titles with the exact numbers. With ``profile``, also a hollow dot
    per node onnxruntime measured and the measured whole-model point."""
    target = report.target
    index = {n.name: i for i, n in enumerate(analysis.nodes)}
    latency = report.latency_s
    costed = costed_kernels(report)
    point = report.model_point
    model_achieved = achieved_rate(point.flops, latency)
    aggregated = len(costed) > AGGREGATE_ABOVE
    dots = _kernel_dots(costed, index, latency, groups, aggregated)
    measured = measured_dots(profile, report, index) if profile is not None else []
    measured_model = achieved_rate(point.flops, profile.measured_s) if profile is not None and point.flops else 0.0
    level = _on_chip_level(dots, target, aggregated)
    marks = [(point.intensity, model_achieved)] if point.flops else []
    marks += [(d["kernel"].placement.onchip_intensity, d["performance"]) for d in level]
    marks += [(d["intensity"], d["performance"]) for d in measured]  # the axes cover the measured points too
    if measured_model:
        marks.append((point.intensity, measured_model))
    chart, context = target_roofline(target, dots, marks, f"roofline-{number}")
    context["dots"] += [
        _dot_context(dot, placed, palette, latency, aggregated) for dot, placed in zip(dots, chart.points)
    ]
    context["level_dots"] = [_level_dot(d, chart, palette, target) for d in level]
    if point.flops:
        context["marks"].append(_model_mark(chart, report, model_achieved))
    context["measured_dots"] = _measured_dot_contexts(chart, measured, dots)
    if measured_model:
        context["marks"].append(_measured_mark(chart, point, profile, latency, measured_model))
    place_mark_labels(context, chart)
    return {
        **context,
        "onchip_roof": bool(onchip_bandwidth(target)),  # the legend names only the roofs drawn
        "name": target.name,
        "description": target.description,
        **_legend(dots, palette),
        "aggregated": aggregated,
        "largest": share_percent(dots[0]["weight"]) if dots else "",
        "dot_count": count_text(len(dots)),
        "costed": count_text(len(costed)),
        "summary": (
            f"Roofline of {analysis.model.name} on {target.name}: {len(costed):,} costed nodes"
            + (f" in {len(dots):,} bins" if aggregated else "")
            + f"; latency {format_value(latency, 'seconds')}"
        ),
        "notes": report.notes + _cut_note(report),
        "measured": count_text(len(measured)) if profile is not None else "",
        # who measured the rings: this machine's onnxruntime, or the runtime of a trace (profile --trace)
        "measured_by": "the runtime traced" if profile and profile.runtime else "onnxruntime on this machine",
    }


def _kernel_dots(
    costed: list[NodePlacement], index: dict[str, int], latency: float, groups: dict[str, str] | None, aggregated: bool
) -> list[dict]:
    """The dots, big ones first, so the small ones stay on top and can be hovered."""
    dots = binned_dots(costed, index, latency) if aggregated else _identical_dots(costed, index, latency, groups)
    dots.sort(key=lambda d: -d["weight"])
    return dots


def _on_chip_level(dots: list[dict], target: Target, aggregated: bool) -> list[dict]:
    """The kernels to draw again at FLOPs per on-chip byte, against the on-chip slope (a kernel
    that moves no DRAM bytes sits in the "∞" strip on the DRAM level)."""
    if not onchip_bandwidth(target) or aggregated:
        return []
    return [d for d in dots if "kernel" in d and d["kernel"].placement.onchip_intensity]


def _dot_context(dot: dict, placed, palette: dict[str, str], latency: float, aggregated: bool) -> dict:
    if aggregated:
        title = dot["title"]
    else:
        title = kernel_dot_title(dot["kernel"], latency)
        if "names" in dot:
            title = dot["names"] + "\n" + title
    return {
        "cx": svg_number(placed.x),
        "cy": svg_number(placed.y),
        "r": svg_number(placed.r),
        "colour": palette.get(dot["op"], OTHER_COLOUR),
        "node": str(dot["node"]),
        "count": str(dot["count"]),
        "op": dot["op"],
        "cls": "dot" + (" dot-bin" if dot["count"] > 1 else "") + (" dot-clamped" if placed.clamped else ""),
        "title": title + (CLAMPED if placed.clamped else ""),
    }


def _model_mark(chart: RooflineChart, report: TargetReport, achieved: float) -> dict:
    """The predicted whole-model point: total FLOPs over total DRAM bytes, at FLOPs ÷ latency."""
    point, latency = report.model_point, report.latency_s
    unit = ops_unit([point.roof])
    # nodes left out: the point is hollow, labelled a bound (its FLOPs and bytes miss theirs)
    return model_mark(
        chart.place(point.intensity, achieved, 0.0),
        chart,
        "model" + ("" if report.complete else " bound-only"),
        "whole model" + ("" if report.complete else " (bound)"),
        "\n".join(
            [
                f"Whole model on {report.target.name}" + ("" if report.complete else f": a bound, {report.missing}"),
                f"FLOPs: {si(point.flops)} ({point.flops:,})",
                f"DRAM bytes: {iec(point.dram_bytes)} ({point.dram_bytes:,})",
                "intensity: "
                + (
                    f"{intensity(point.intensity)} FLOP/B ({point.intensity:.6g})"
                    if point.intensity is not None
                    else "∞ (no DRAM bytes)"
                ),
                f"latency: {format_value(latency, 'seconds')} ({latency:.6g} s, the kernels one after another)",
                f"achieved: {si(achieved, unit)} (FLOPs ÷ latency) · attainable "
                f"{si(point.attainable_flops_per_s, unit)} on the {point.roof} roof",
                f"bound: {BOUND_LABELS.get(point.bound, point.bound)} (total FLOPs vs total DRAM bytes)",
            ]
        ),
    )


def _measured_dot_contexts(chart: RooflineChart, measured: list[dict], dots: list[dict]) -> list[dict]:
    """The measured nodes, hollow; those with no DRAM bytes line up in the "∞" strip after the
    predicted ones."""
    unbounded = sum(1 for d in dots if d["intensity"] is None)
    contexts = []
    for dot in measured:
        placed = chart.place(dot["intensity"], dot["performance"], dot["weight"], unbounded)
        unbounded += dot["intensity"] is None
        contexts.append(
            {
                "cx": svg_number(placed.x),
                "cy": svg_number(placed.y),
                "r": svg_number(placed.r),
                "node": str(dot["node"]),
                "op": dot["op"],
                "cls": "dot dot-measured" + (" dot-clamped" if placed.clamped else ""),
                "title": dot["title"] + (CLAMPED if placed.clamped else ""),
            }
        )
    return contexts


def _measured_mark(
    chart: RooflineChart, point: Placement, profile: ProfileResult, latency: float, measured_model: float
) -> dict:
    """The measured whole-model point: total FLOPs ÷ the measured time."""
    unit = ops_unit([point.roof])
    return model_mark(
        chart.place(point.intensity, measured_model, 0.0),
        chart,
        "measured",
        "measured",
        "\n".join(
            [
                "Whole model measured by "
                + (profile.runtime or f"onnxruntime {profile.ort_version} (CPU, optimization {profile.optimization})"),
                f"measured: {format_value(profile.measured_s, 'seconds')} ({profile.measured_s:.6g} s, "
                "the sum of the kernels' medians)",
                f"predicted: {format_value(latency, 'seconds')} ({latency:.6g} s)",
                f"measured/predicted: {ratio_text(profile.ratio)} · prediction error {error_text(profile.error)}",
                f"achieved: {si(measured_model, unit)} (FLOPs ÷ measured time)",
            ]
        ),
    )


def _legend(dots: list[dict], palette: dict[str, str]) -> dict:
    """The colours in use, with the number of kernels of each; the rest (grey) counted apart."""
    used = Counter()
    for dot in dots:
        used[dot["op"]] += dot["count"]
    legend = [
        {"op": op, "colour": colour, "count": count_text(used[op])} for op, colour in palette.items() if used.get(op)
    ]
    others = sum(c for op, c in used.items() if op not in palette)
    return {"legend": legend, "others": count_text(others) if others else ""}


def _identical_dots(
    costed: list[NodePlacement], index: dict[str, int], latency: float, modules: dict[str, str] | None = None
) -> list[dict]:
    """One dot per kernel, but one for all the kernels that are alike (same op, roof, FLOPs,
    bytes and time: a transformer's repeated projections; and module, when ``modules`` colours
    the dots by module), with their count and their summed share of the latency."""

    def colour_key(k: NodePlacement) -> str:
        return modules.get(k.nodes[0] if k.nodes else k.name, NO_MODULE) if modules else main_op(k.op_type)

    groups: dict[tuple, list] = {}
    for k in costed:
        p = k.placement
        key = (colour_key(k), k.op_type, p.roof, p.flops, p.dram_bytes, p.onchip_bytes, p.time_s)
        groups.setdefault(key, []).append(k)
    dots = []
    for members in groups.values():
        k = members[0]
        p = k.placement
        dot = {
            "intensity": p.intensity,
            "performance": achieved_rate(p.flops, p.time_s),
            "weight": len(members) * p.time_s / latency if latency else 0.0,
            "op": colour_key(k),
            "node": index.get(k.name, -1),
            "count": len(members),
            "kernel": k,
        }
        if len(members) > 1:
            names = ", ".join(m.name for m in members[:3]) + (
                f" and {len(members) - 3:,} more" if len(members) > 3 else ""
            )
            dot["names"] = f"{len(members):,} alike kernels, one dot (each as below; their share together): {names}"
        dots.append(dot)
    return dots


def _level_dot(dot: dict, chart, palette: dict[str, str], target: Target) -> dict:
    """A kernel on the on-chip level: a diamond at FLOPs per on-chip byte, at its achieved rate."""
    kernel = dot["kernel"]
    p = kernel.placement
    placed = chart.place(p.onchip_intensity, dot["performance"], dot["weight"])
    size = max(placed.r * 0.9, 3.0)
    return {
        "d": diamond_path(placed.x, placed.y, size),
        "colour": palette.get(dot["op"], OTHER_COLOUR),
        "cx": svg_number(placed.x),
        "cy": svg_number(placed.y),
        "r": svg_number(size),
        "node": str(dot["node"]),
        "op": dot["op"],
        "cls": "level-dot level-onchip",
        "title": (
            f"{kernel.name} on the on-chip level\n"
            f"on-chip bytes: {iec(p.onchip_bytes)} ({p.onchip_bytes:,}) at {si(onchip_bandwidth(target), 'B/s')}\n"
            f"intensity: {intensity(p.onchip_intensity)} FLOP per on-chip byte ({p.onchip_intensity:.6g})\n"
            f"on-chip time: {format_value(p.onchip_s, 'seconds')} · bound: {BOUND_LABELS.get(p.bound, p.bound)}"
        )
        + (CLAMPED if placed.clamped else ""),
    }


def top_modules(analysis: Analysis) -> dict[str, str] | None:
    """Each node's top-level module (None when the names carry no scopes)."""
    from ...compare.modules import has_scopes, module_of

    if not has_scopes(analysis):
        return None
    return {r.name: (module_of(r) or (NO_MODULE,))[0] for r in analysis.nodes}


def _cut_note(report) -> list[str]:
    """The kernels an Edge TPU's graph cut leaves off its roofline (they run on the host)."""
    cut = report.edge_tpu_cut
    if cut is None or not cut.host_kernels:
        return []
    return [
        f"the {count_text(cut.host_kernels)} kernel{'s' * (cut.host_kernels != 1)} past the Edge TPU compiler's cut "
        f"run on {cut.host}: not on this roofline (its roofs are the Edge TPU's)"
    ]
