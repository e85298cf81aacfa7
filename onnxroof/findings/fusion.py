"""Fusion: the kernels a runtime fusing every rule set (``FUSION_RULES``) would merge, and the
time that saves, measured by placing the model again under those rules.

Which kernels a runtime fuses is the target's (its runtime or compiler), not a flag of the
model: the finding says what a runtime or compiler that fuses more would save, and offers no
``--fusion`` as the fix (that flag only shows the what-if)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import seconds
from ..roofline.targets import FUSION_RULES
from .records import Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

MIN_GAIN = 0.02
SHOWN = 3  # merged kernels named in the title's detail


def fusion(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    missing = [rule for rule in FUSION_RULES if rule not in report.fusion]
    if not missing or report.fusion == ("runtime",):
        return []
    fused = variants.placed(report, fusion=tuple(report.fusion) + tuple(missing))
    base_s, new_s = per_inference_s(report), per_inference_s(fused)
    if base_s - new_s < MIN_GAIN * base_s:
        return []
    kernel_of = {node: k.name for k in report.nodes for node in k.nodes}
    merged = [k for k in fused.nodes if len({kernel_of.get(n) for n in k.nodes}) > 1]
    merged.sort(key=lambda k: -k.placement.time_s)
    nodes = tuple(n for k in merged for n in k.nodes)
    saved = f"{seconds(base_s - new_s)} less ({(base_s - new_s) / base_s:.0%})"
    fewer = f"{len(report.nodes) - len(fused.nodes):,} fewer kernels with {', '.join(missing)} fusion"
    if report.fusion:
        title = f"{fewer}, in a runtime or compiler that fuses more: {saved}"
        policy = f"the target's runtime fuses: {', '.join(report.fusion)}"
    else:  # an unpublished policy: the placement ran one kernel per node, the compiler may fuse these already
        title = f"{fewer}, if the target's compiler fuses them (what it fuses is not published): up to {saved}"
        policy = "the target's fusion is not published, so each node was placed as its own kernel"
    detail = (
        f"{policy}; a runtime or compiler that also fuses {', '.join(missing)} "
        f"(or fused ops written into the graph, as onnxruntime's transformer optimizer does) merges "
        f"{len(merged):,} groups, the largest "
        + "; ".join(f"{k.op_type} ({len(k.nodes)} nodes from {k.nodes[0]})" for k in merged[:SHOWN])
        + "; --fusion all shows that placement"
    )
    return [
        Finding(
            "fusion",
            report.target.name,
            title,
            detail,
            nodes=nodes,
            gain_s=base_s - new_s,
            latency_s=base_s,
            evidence={
                "kernels": len(report.nodes),
                "kernels_after": len(fused.nodes),
                "rules": missing,
                "latency_s_after": fused.latency_s,
            },
        )
    ]
