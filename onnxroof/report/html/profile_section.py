"""The model page's profile overlay: what onnxruntime measured (``onnxroof profile``), beside
the prediction. The measured nodes join the profiled target's roofline as hollow dots
(:func:`measured_dots`), and a "Predicted vs measured" section lists the :data:`PROFILE_TOP`
nodes that took longest (:func:`profile_context`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.units import intensity, si
from ...measure.profiling import Coverage
from ..formatting import count_text, format_value, share_percent
from .chart_context import achieved_rate, ops_unit

if TYPE_CHECKING:
    from ...measure.profiling import ProfileResult
    from ...result import Analysis
    from ...roofline.placement import TargetReport

PROFILE_TOP = 15  # rows of the "Predicted vs measured" table: the nodes that took longest


def profiled_target(analysis: Analysis, profile: ProfileResult) -> int:
    """The position in ``analysis.targets`` of the target ``profile`` predicted on."""
    for k, report in enumerate(analysis.targets):
        if report is profile.target:
            return k
    for k, report in enumerate(analysis.targets):
        if report.target.name == profile.target.target.name:
            return k
    raise ValueError(
        f"render_html: the profile's target {profile.target.target.name!r} is not one of the "
        "analysis's targets; analyse with that target"
    )


def ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def error_text(value: float | None) -> str:
    return "—" if value is None else f"{value:+.0%}"


def measured_dots(profile: ProfileResult, report: TargetReport, index: dict[str, int]) -> list[dict]:
    """One dot per node onnxruntime measured with FLOPs: x its intensity on the target, y its
    FLOPs ÷ measured time, its area in proportion to its share of the measured total."""
    placements = {k.name: k.placement for k in report.nodes}
    total = profile.measured_s
    dots = []
    for n in profile.nodes:
        p = placements.get(n.name)
        if p is None or not p.flops or not n.measured_s:
            continue
        performance = p.flops / n.measured_s
        unit = ops_unit([p.roof])
        if n.status == Coverage.SPLIT:
            kernel = (
                f"in {profile.runtime_name} kernel {n.kernel} ({n.kernel_op}), its time split with the nodes fused "
                "into it"
            )
        elif n.kernel and (n.kernel != n.name or n.kernel_op != n.op_type):
            kernel = f"as {profile.runtime_name} kernel {n.kernel} ({n.kernel_op})"
        else:
            kernel = f"its own {profile.runtime_name} kernel"
        title = "\n".join(
            [
                n.name,
                f"{n.op_type} · measured, {kernel}",
                f"predicted: {format_value(n.predicted_s, 'seconds') if n.predicted_s is not None else '—'}"
                + (f" ({n.predicted_s:.6g} s)" if n.predicted_s is not None else ""),
                f"measured: {format_value(n.measured_s, 'seconds')} ({n.measured_s:.6g} s), "
                f"{share_percent(n.measured_s / total) if total else '0%'} of the measured total",
                f"measured/predicted: {ratio_text(n.ratio)}",
                "intensity: "
                + (f"{intensity(p.intensity)} FLOP/B" if p.intensity is not None else "∞ (no DRAM bytes)"),
                f"achieved (measured): {si(performance, unit)} · "
                f"predicted {si(achieved_rate(p.flops, p.time_s), unit)}",
            ]
        )
        dots.append(
            {
                "intensity": p.intensity,
                "performance": performance,
                "weight": n.measured_s / total if total else 0.0,
                "op": n.op_type,
                "node": index.get(n.name, -1),
                "title": title,
            }
        )
    dots.sort(key=lambda d: -d["weight"])
    return dots


def profile_context(analysis: Analysis, profile: ProfileResult, profiled: int) -> dict:
    """The "Predicted vs measured" section: totals, error and the nodes that took longest."""
    index = {n.name: i for i, n in enumerate(analysis.nodes)}
    target = analysis.targets[profiled].target
    measured = [n for n in profile.nodes if n.measured_s]
    top = sorted(measured, key=lambda n: (-n.measured_s, index.get(n.name, 0)))[:PROFILE_TOP]

    def seconds(value: float | None) -> tuple[str, str]:
        return (format_value(value, "seconds"), f"{value:.6g} s") if value is not None else ("—", "not predicted")

    rows = []
    for rank, n in enumerate(top, 1):
        predicted, predicted_title = seconds(n.predicted_s)
        measured_text, measured_title = seconds(n.measured_s)
        rows.append(
            {
                "rank": str(rank),
                "index": str(index.get(n.name, -1)),
                "name": n.name,
                "op": n.op_type,
                "predicted": predicted,
                "predicted_title": predicted_title,
                "measured": measured_text,
                "measured_title": measured_title,
                "ratio": ratio_text(n.ratio),
                "kernel": (n.kernel or "") + (" (split)" if n.status == Coverage.SPLIT else ""),
                "kernel_title": f"{profile.runtime_name} kernel {n.kernel} ({n.kernel_op})" if n.kernel else "",
            }
        )
    predicted, predicted_title = seconds(profile.predicted_s)
    measured_total, measured_title = seconds(profile.measured_s)
    return {
        "target": target.name,
        "runtime": profile.measured_by,
        "runtime_name": profile.runtime_name,
        "predicted": predicted,
        "predicted_title": predicted_title,
        "measured": measured_total,
        "measured_title": measured_title + " (the sum of every kernel's median, unattributed kernels included)",
        "wall": format_value(profile.wall_s, "seconds") if profile.wall_s else "",
        "ratio": ratio_text(profile.ratio),
        "error": error_text(profile.error),
        "error_title": "(predicted − measured) ÷ measured: negative means the prediction is too fast",
        "rows": rows,
        "measured_count": count_text(len(measured)),
        "notes": list(profile.notes),
    }
