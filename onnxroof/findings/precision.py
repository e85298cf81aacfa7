"""Precision: the same model stored and run in a narrower type on this target (``--dtype``),
re-analysed. Only the types whose roof the target has, and only a gain of at least
``MIN_GAIN`` of the latency; the accuracy is the user's to check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import iec, seconds
from ..roofline.verdicts import Finding
from .variants import Variants, per_inference_s, ratio_text

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

CANDIDATES = ("fp16", "bf16", "int8")  # the what-ifs, each where the target has its roof
MIN_GAIN = 0.05


def precision(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """The narrower type that saves the most time on this target, measured by re-analysis."""
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
    base_s = per_inference_s(report)
    if best is None or base_s - best[0] < MIN_GAIN * base_s:
        return []
    new_s, dtype, other = best
    base_bytes = sum(k.placement.dram_bytes for k in report.nodes)
    new_bytes = sum(k.placement.dram_bytes for k in other.nodes)
    title = f"{dtype} would take {ratio_text(base_s, new_s)} here ({seconds(base_s)} → {seconds(new_s)}): check the accuracy"
    detail = (f"re-analysed in {dtype} (--dtype {dtype}): DRAM traffic {iec(base_bytes)} → {iec(new_bytes)} per run; "
              + ", ".join(f"{name} {seconds(s)}" for name, s in tried.items()))
    return [Finding("precision", report.target.name, title, detail, gain_s=base_s - new_s,
                    gain_bytes=max(base_bytes - new_bytes, 0), latency_s=base_s, change=f"--dtype {dtype}",
                    evidence={"dtype": dtype, "latency_s": other.latency_s, "tried_s": tried,
                              "dram_bytes": base_bytes, "dram_bytes_after": new_bytes})]


def _runs_mostly_on(report: TargetReport, roof: str) -> bool:
    """Whether most of the model's FLOPs already run on ``roof``."""
    flops = sum(k.placement.flops for k in report.nodes)
    on_roof = sum(k.placement.flops for k in report.nodes if k.placement.roof == roof)
    return flops > 0 and on_roof > flops / 2
