"""An Edge TPU's graph cut (roofline/edge_tpu.py): the compiler maps the ops of its table and cuts
the graph at the first it cannot map; that op and everything after it run on the host CPU. The
finding names the op and measures what replacing it by an op the compiler maps saves, by placing
the model again on the target with that op mapped (the cut moves to the next unmapped op, or
the whole graph stays on the Edge TPU)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.units import seconds
from .records import Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

# what a model can use instead, where a usual replacement is known
REPLACEMENTS = {
    "Div": "a Mul by the reciprocal (a constant divisor)",
    "Erf": "GELU's tanh or sigmoid approximation",
    "Gelu": "GELU's tanh or sigmoid approximation",
    "Pow": "Mul (a square) or Rsqrt",
    "Sqrt": "Rsqrt and a Mul",
    "Gather": "a Slice (a constant index)",
    "Exp": "Softmax or Logistic, where it is part of one",
    "NonMaxSuppression": "post-processing on the host after the model",
    "TopK": "post-processing on the host after the model",
}


def fallback(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    cut, host = report.edge_tpu_cut, report.target.edge_tpu
    if cut is None or host is None or not cut.unmapped_ops:
        return []
    op = cut.unmapped_ops[0]  # the op at the cut
    if cut.shape_reason:  # its op is mapped, its tensor's shape is not (a batch above 1)
        return [_shape_finding(report, variants)]
    mapped = replace(report.target, edge_tpu=replace(host, mapped_too=host.mapped_too | {op}))
    again = variants.placed(report, target=mapped)
    base_s, new_s = per_inference_s(report), per_inference_s(again)
    after = again.edge_tpu_cut
    moved = (
        f"the next unmapped op, {after.unmapped_ops[0]} at {after.first_unmapped}, cuts it then"
        if after is not None
        else "the whole graph then runs on the Edge TPU"
    )
    instead = REPLACEMENTS.get(op, "an op in the Edge TPU compiler's supported-operations table")
    title = (
        f"{op} falls back to the CPU and splits the graph in two at {cut.first_unmapped}: {cut.host} runs "
        f"{cut.host_kernels} kernel{'s' * (cut.host_kernels != 1)}, {seconds(cut.host_s + cut.transfer_s)} with "
        "the cut's transfer"
        if cut.host_kernels < cut.kernels
        else f"{op} falls back to the CPU at the graph's first kernel, {cut.first_unmapped}: the whole graph runs "
        f"on {cut.host}, {seconds(cut.host_s)}"
    )
    gain = max(base_s - new_s, 0.0)
    detail = (
        f"placed again with {op} mapped: {seconds(new_s)} per inference against {seconds(base_s)}; {moved}. "
        f"Replace it by {instead}, or move it after the model onto the host"
    )
    return [
        Finding(
            "fallback",
            report.target.name,
            title,
            detail,
            nodes=(cut.first_unmapped,),
            gain_s=gain,
            latency_s=base_s,
            evidence={
                "op": op,
                "first_unmapped": cut.first_unmapped,
                "unmapped_ops": list(cut.unmapped_ops),
                "host": cut.host,
                "host_kernels": cut.host_kernels,
                "host_s": cut.host_s,
                "transfer_s": cut.transfer_s,
                "latency_s_with_op_mapped": again.latency_s,
                "next_cut": after.first_unmapped if after is not None else None,
            },
        )
    ]


def _shape_finding(report: TargetReport, variants: Variants) -> Finding:
    """The node at the cut has a tensor the Edge TPU cannot hold (a dimension above 1 outside the 3
    innermost: a batch above 1, most often): measured at batch 1, per inference."""
    cut = report.edge_tpu_cut
    assert cut is not None
    base_s = per_inference_s(report)
    title = (
        f"{cut.unmapped_ops[0]} at {cut.first_unmapped} falls back to the CPU: {cut.shape_reason}, which the "
        "Edge TPU does not map"
    )
    evidence: dict = {
        "first_unmapped": cut.first_unmapped,
        "reason": cut.shape_reason,
        "host_kernels": cut.host_kernels,
    }
    one = variants.report(report.target, batch=1) if report.batch > 1 else "the batch is 1 already"
    if isinstance(one, str):
        detail = f"not measured at batch 1 ({one}); keep every tensor's dimensions beyond the 3 innermost at 1"
        return Finding("fallback", report.target.name, title, detail, nodes=(cut.first_unmapped,), latency_s=base_s)
    new_s = per_inference_s(one)
    evidence |= {"batch_1_latency_s": one.latency_s, "batch_1_cut": one.edge_tpu_cut is not None}
    gain = max(base_s - new_s, 0.0)
    return Finding(
        "fallback",
        report.target.name,
        title,
        f"at batch 1: {seconds(new_s)} per inference against {seconds(base_s)} at batch {report.batch}; the Edge TPU "
        "runs one frame at a time (several frames: one call each)",
        nodes=(cut.first_unmapped,),
        gain_s=gain,
        latency_s=base_s,
        change="--batch 1" if gain else "",
        evidence=evidence,
    )
