"""Precision: the same model stored and run in a narrower type on this target (``--dtype``),
re-analysed. Only the types whose roof the target has, and only a gain of at least
``MIN_GAIN`` of the latency; the accuracy is the user's to check.

A target with no roof for the type most of the model computes in (the Edge TPU, Hailo and other
int8 NPUs given an fp32 model) cannot run the model as it is: its compiler refuses, or the model
falls back to the host. Then converting is the first finding, whatever else saves time, with the
time the model takes in the type the target runs (re-analysed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import iec, seconds
from .records import Finding
from .variants import Variants, per_inference_s, ratio_text

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

CANDIDATES = ("fp16", "bf16", "int8")  # the what-ifs, each where the target has its roof
MIN_GAIN = 0.05


def precision(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """The type the target needs, when it has no roof for the model's; else the narrower type that
    saves the most time on this target, measured by re-analysis."""
    missing = report.fallen_roof
    if missing is not None:
        return [_conversion(report, variants, *missing)]
    base_s = per_inference_s(report)
    if base_s - launch_floor_s(report) < MIN_GAIN * base_s:
        return []  # no type can save MIN_GAIN: the launches alone take the rest (no variant analysed)
    peaks = report.target.peak_ops_per_s
    tried: dict[str, float] = {}
    best: tuple[float, str, TargetReport] | None = None
    for dtype in CANDIDATES:
        if dtype not in peaks or dtype == analysis.dtype or _runs_mostly_on(report, dtype):
            continue
        if dtype == "bf16" and "fp16" in tried and peaks["bf16"].value == peaks.get("fp16", peaks["bf16"]).value:
            continue  # the same roof and the same bytes as fp16
        other = variants.report(report.target, dtype=dtype)
        if isinstance(other, str):
            continue
        tried[dtype] = per_inference_s(other)
        if best is None or tried[dtype] < best[0]:
            best = (tried[dtype], dtype, other)
    if best is None or base_s - best[0] < MIN_GAIN * base_s:
        return []
    new_s, dtype, other = best
    base_bytes, new_bytes = _dram_bytes(report), _dram_bytes(other)
    title = (
        f"{dtype} would take {ratio_text(base_s, new_s)} here ({seconds(base_s)} → {seconds(new_s)}): "
        "check the accuracy"
    )
    detail = (
        f"re-analysed in {dtype} (--dtype {dtype}): DRAM traffic {iec(base_bytes)} → {iec(new_bytes)} per run; "
        + ", ".join(f"{name} {seconds(s)}" for name, s in tried.items())
    )
    return [
        Finding(
            "precision",
            report.target.name,
            title,
            detail,
            gain_s=base_s - new_s,
            gain_bytes=max(base_bytes - new_bytes, 0),
            latency_s=base_s,
            change=f"--dtype {dtype}",
            evidence={
                "dtype": dtype,
                "latency_s": other.latency_s,
                "tried_s": tried,
                "dram_bytes": base_bytes,
                "dram_bytes_after": new_bytes,
            },
        )
    ]


def launch_floor_s(report: TargetReport) -> float:
    """The least time one inference can take in any type on this target: a type changes no
    kernel, and each kernel that launches pays at least the target's cheaper launch figure (warm
    or cold) on each of its runs.

    >>> from types import SimpleNamespace as S
    >>> target = S(node_overhead_s=S(value=2e-6), cold_node_overhead_s=S(value=5e-6))
    >>> nodes = [S(placement=S(overhead_s=5e-6), runs=1), S(placement=S(overhead_s=0.0), runs=1),
    ...          S(placement=S(overhead_s=15e-6), runs=3)]
    >>> round(launch_floor_s(S(target=target, nodes=nodes, batch=2)) * 1e6, 6)  # (2 + 2 x 3) / 2
    4.0
    """
    figures = [
        figure.value
        for figure in (report.target.node_overhead_s, report.target.cold_node_overhead_s)
        if figure is not None
    ]
    least_s = min(figures, default=0.0)
    launched = sum(node.runs for node in report.nodes if node.placement.overhead_s > 0)
    return least_s * launched / max(report.batch, 1)


def _conversion(report: TargetReport, variants: Variants, wanted: str, roof: str, share: float) -> Finding:
    """The model converted to the type the target runs: a must, ranked first, its time re-analysed."""
    name, base_s = report.target.name, per_inference_s(report)
    verb = "quantize" if roof.startswith("int") else "convert"
    head = f"{name} runs {roof}, not {wanted}: {verb} the model"
    evidence = {"dtype": roof, "model_roof": wanted, "flop_share_without_roof": share}
    detail = (
        f"{share:.0%} of the FLOPs are {wanted}, which the target cannot run; as stored they are costed on its "
        f"{roof} roof ({seconds(base_s)} per inference), an optimistic figure for a model the target's compiler "
        f"would refuse or leave to the host; the other findings are left out, as their gains would be measured "
        f"in {wanted}: analyse with --dtype {roof} to see them"
    )
    other = variants.report(report.target, dtype=roof)
    if isinstance(other, str):
        return Finding(
            "precision",
            name,
            head + " (check the accuracy)",
            f"{detail}; {roof} gives no measured time: {other}",
            latency_s=base_s,
            evidence=evidence,
            blocking=True,
        )
    new_s = per_inference_s(other)
    base_bytes, new_bytes = _dram_bytes(report), _dram_bytes(other)
    evidence |= {"latency_s": other.latency_s, "dram_bytes": base_bytes, "dram_bytes_after": new_bytes}
    return Finding(
        "precision",
        name,
        f"{head}; in {roof} it takes {seconds(new_s)} (check the accuracy)",
        f"{detail}; re-analysed in {roof} (--dtype {roof}): DRAM traffic {iec(base_bytes)} → {iec(new_bytes)} per run",
        gain_s=max(base_s - new_s, 0.0),
        gain_bytes=max(base_bytes - new_bytes, 0),
        latency_s=base_s,
        change=f"--dtype {roof}",
        evidence=evidence,
        blocking=True,
    )


def _dram_bytes(report: TargetReport) -> int:
    return sum(k.placement.dram_bytes for k in report.nodes)


def _runs_mostly_on(report: TargetReport, roof: str) -> bool:
    """Whether most of the model's FLOPs already run on ``roof``."""
    flops = sum(k.placement.flops for k in report.nodes)
    on_roof = sum(k.placement.flops for k in report.nodes if k.placement.roof == roof)
    return flops > 0 and on_roof > flops / 2
