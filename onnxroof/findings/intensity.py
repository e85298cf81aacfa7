"""Low intensity: convolutions and matmuls below the ridge, bound by DRAM or on-chip bytes. Their
time is bytes, not multiply-adds: a 1x1 convolution does 9x fewer MACs than a 3x3 over the
same tensors but is not 9x faster when both move the same bytes. The time their bytes add beyond
their multiply-adds is their placements' own: time - (compute time + launch)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ..core.units import seconds
from ..roofline.placement import Bound
from ..roofline.verdicts import BOUND_LABELS
from .records import Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import NodePlacement, TargetReport

MIN_SHARE = 0.10  # of the latency, below the ridge: a finding
SHOWN = 3


def intensity(analysis: Analysis, report: TargetReport, variants: Variants) -> list[Finding]:
    low = _low_kernels(analysis, report)
    time_s = sum(k.placement.time_s for k in low)
    if not low or not report.latency_s or time_s < MIN_SHARE * report.latency_s:
        return []
    low.sort(key=lambda k: -k.placement.time_s)
    excess_s = sum(k.placement.time_s - k.placement.compute_s - k.placement.overhead_s for k in low)
    share = time_s / report.latency_s
    largest = "; ".join(
        f"{k.name} ({k.op_type}, {k.placement.intensity or 0:.3g} FLOP/B, {seconds(k.placement.time_s)})"
        for k in low[:SHOWN]
    )
    # an Edge TPU runs one frame at a time (a batch above 1 falls back to its host): its bytes are the host link's
    remedy = (
        "a smaller input, or fewer or narrower parameters that stay in its SRAM (its 'DRAM' is the host link)"
        if report.target.edge_tpu is not None
        else "keep their activations on chip (fuse them with their neighbours), reuse their weights over a larger "
        "batch, or a narrower type"
    )
    detail = (
        f"fewer MACs would not make them faster, fewer bytes would: {remedy}; their bytes add "
        f"{seconds(excess_s)} beyond their multiply-adds; the largest: " + largest
    )
    return [
        Finding(
            "intensity",
            report.target.name,
            _title(low, share),
            detail,
            nodes=tuple(n for k in low for n in k.nodes),
            gain_s=excess_s / max(report.batch, 1),
            latency_s=per_inference_s(report),
            evidence={
                "kernels": [k.name for k in low],
                "time_s": time_s,
                "share": share,
                "bytes_excess_s": excess_s,
                "ridge": {roof: report.target.ridge(roof) for roof in {k.placement.roof for k in low}},
            },
        )
    ]


def _low_kernels(analysis: Analysis, report: TargetReport) -> list[NodePlacement]:
    """The kernels with multiply-adds bound by DRAM or on-chip bytes, in the target's order; not
    those whose DRAM bytes are mostly parameters that did not fit on chip, on a target that keeps
    them there when they fit (the weights finding measures what room for them saves)."""
    low = [
        k
        for k in report.nodes
        if k.placement.bound in (Bound.DRAM, Bound.ONCHIP)
        and not (k.streamed_weight_bytes and 2 * k.streamed_weight_bytes >= k.placement.dram_bytes)
    ]
    if not low:  # (the nodes' MACs are read only when a kernel is below the ridge)
        return []
    macs = {r.name: r.macs for r in analysis.run_view.nodes}
    return [k for k in low if sum(macs.get(n, 0) for n in k.nodes) > 0]


def _title(low: list[NodePlacement], share: float) -> str:
    """ "2 kernels with multiply-adds (2 Conv) sit below the ridge, 40% of the time: ..." """
    kinds = Counter(k.op_type for k in low)
    bounds = Counter(k.placement.bound for k in low)
    what = ", ".join(f"{count} {op}" for op, count in kinds.most_common(3)) + (" and more" if len(kinds) > 3 else "")
    several = len(low) > 1
    kernels = f"{len(low)} kernel{'s' if several else ''} with multiply-adds ({what}) {'sit' if several else 'sits'}"
    return (
        f"{kernels} below the ridge, {share:.0%} of the time: "
        f"{'their' if several else 'its'} time is {BOUND_LABELS[bounds.most_common(1)[0][0]]} bytes, not MACs"
    )
