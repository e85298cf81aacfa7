"""Will it fit: parameters + the peak of live activations (which hold a decoder's KV cache) in
the target's device memory (``dram.size_bytes``). The largest batch, and for a decoder in its
decode phase the longest context, come from the need at two values analysed (the base and one
more): activations grow linearly with the batch and, in decode, with the context.

>>> largest_value(1, 100, 8, 800, 1_000, 50)  # 50 + 100 per unit: 9 units in 1,000
9
>>> largest_value(1, 100, 8, 100, 1_000, 50) is None  # the need does not grow
True
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.units import iec
from ..roofline.verdicts import capacity_text
from .launch import BATCH_FACTOR
from .records import DeviceFit, Finding
from .variants import Variants, per_inference_s

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

CONTEXT_FACTOR = 2  # the second context analysed: twice the given one


def largest_value(
    value0: int, activations0: int, value1: int, activations1: int, capacity: int, parameters: int
) -> int | None:
    """The largest value whose parameters + activations (linear through the two points) fit."""
    if value1 == value0 or activations1 <= activations0:
        return None
    per_unit = (activations1 - activations0) / (value1 - value0)
    fixed = activations0 - per_unit * value0
    return max(int((capacity - parameters - fixed) // per_unit), 0)


def device_fit(analysis: Analysis, report: TargetReport, variants: Variants) -> DeviceFit:
    target = report.target
    parameters, activations = analysis.totals.param_bytes, analysis.memory.model_order.peak_bytes
    llm = analysis.llm
    kv = llm.kv_read_bytes + llm.cross_read_bytes if llm is not None else 0  # a seq2seq decoder holds both caches
    capacity = int(target.dram_size_bytes.value) if target.dram_size_bytes else None
    fit = DeviceFit(
        target.name,
        capacity,
        parameters,
        activations,
        kv,
        report.batch,
        context=llm.context if llm is not None and llm.phase == "decode" else None,
    )
    if capacity is None:
        return fit
    how = []
    larger = report.batch * BATCH_FACTOR
    peak = variants.peak_bytes(batch=larger)  # a peak: placed only if a finding asks for its reports
    largest_batch = None
    if not isinstance(peak, str):
        largest_batch = largest_value(report.batch, activations, larger, peak, capacity, parameters)
        how.append(f"batch: the activations at batch {report.batch} and {larger}, extrapolated linearly")
    longest = None
    if fit.context:
        longer = fit.context * CONTEXT_FACTOR
        peak = variants.peak_bytes(context=longer)
        if not isinstance(peak, str):
            longest = largest_value(fit.context, activations, longer, peak, capacity, parameters)
            how.append(
                f"context: the activations at context {fit.context} and {longer}, extrapolated linearly "
                "(memory only: a limit of the model's own, such as its position table, is not read)"
            )
    return replace(fit, largest_batch=largest_batch, longest_context=longest, how="; ".join(how))


def capacity(analysis: Analysis, report: TargetReport, fit: DeviceFit) -> list[Finding]:
    """A finding when the model does not fit."""
    capacity_bytes = fit.capacity_bytes
    if fit.fits is not False or capacity_bytes is None:  # (a fit without a capacity is not checked)
        return []
    kv = f", of which the KV cache {iec(fit.kv_cache_bytes)}" if fit.kv_cache_bytes else ""
    title = (
        f"does not fit: parameters {iec(fit.parameter_bytes)} + peak activations {iec(fit.activation_bytes)}{kv}"
        f"{',' if kv else ''} need {iec(fit.need_bytes)} of the {capacity_text(capacity_bytes)} device memory"
    )
    room = []
    if fit.largest_batch is not None:
        room.append(
            f"the largest batch that fits is {fit.largest_batch:,}"
            if fit.largest_batch
            else "no batch fits (the parameters alone, or the fixed activations, exceed it)"
        )
    if fit.longest_context is not None:
        room.append(f"the longest context that fits is {fit.longest_context:,}")
    return [
        Finding(
            "capacity",
            report.target.name,
            title,
            "; ".join(room),
            gain_bytes=fit.need_bytes - capacity_bytes,
            latency_s=per_inference_s(report),
            evidence=fit.to_dict(),
        )
    ]
