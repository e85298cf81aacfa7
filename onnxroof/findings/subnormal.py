"""Subnormal floats: a causal mask of huge negatives makes every hidden position's exp underflow,
and a CPU that measured the slow path this takes (``subnormal_s_per_element``) spends it on each
masked Softmax (:mod:`onnxroof.cost.masks`). Flushing subnormals to zero costs the softmax
nothing (the hidden weights are 0 either way): onnxruntime's session option
``session.set_denormal_as_zero``. The gain is the model placed again without the slow path."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.units import seconds
from .records import Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

FLUSH_TO_ZERO = 'session.set_denormal_as_zero = "1"'  # onnxruntime's SessionOptions config entry


def subnormal(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    """The masked Softmax kernels' time on the slow path, and the latency with subnormals flushed."""
    slow = [k for k in report.nodes if k.placement.subnormal_s]
    per_element = report.target.subnormal_s_per_element  # (a kernel pays a subnormal time only with it)
    if not slow or per_element is None:
        return []
    slow_s = sum(k.placement.subnormal_s for k in slow)
    flushed = variants.placed(report, target=replace(report.target, subnormal_s_per_element=None))
    base_s, new_s = per_inference_s(report), per_inference_s(flushed)
    title = (
        f"{len(slow)} masked Softmax kernel(s) spend {seconds(slow_s)} ({slow_s / report.latency_s:.0%} of the "
        "time) on subnormal floats: a causal mask's hidden positions underflow in exp"
    )
    detail = (
        f"with subnormals flushed to zero ({FLUSH_TO_ZERO} in onnxruntime's SessionOptions) the model takes "
        f"{seconds(new_s)} per inference; the hidden positions' weights are 0 either way"
    )
    return [
        Finding(
            "subnormal",
            report.target.name,
            title,
            detail,
            nodes=tuple(k.name for k in slow),
            gain_s=base_s - new_s,
            latency_s=base_s,
            change=FLUSH_TO_ZERO,
            evidence={
                "kernels": len(slow),
                "subnormal_s": slow_s,
                "per_element_s": per_element.value,
                "latency_s_flushed": flushed.latency_s,
            },
        )
    ]
