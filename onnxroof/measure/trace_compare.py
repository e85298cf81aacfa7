"""`onnxroof profile --trace`: a measured per-layer profile (:mod:`onnxroof.measure.traces`) beside
onnxroof's prediction on a target, kernel by kernel, and the largest gaps with their likely cause.

Each runtime kernel is predicted twice: **as the runtime ran it** (its nodes placed as one kernel,
paying one launch: the split profile_run uses) and **under the target's own fusion policy** (the
nodes' times in the kernels ``onnxroof summary`` predicts). The gap of a kernel is its measured
time less the second (what the user was told), and its likely cause, the first that holds:

- ``added``: the runtime added the layer (a reformat, a copy): no ONNX node, predicted as a launch
  and the bytes it records, where it records them;
- ``fallback``: the layer ran on another unit than most of the time did (RKNN's CPU beside the
  NPU), in another precision (an FP32 layer in an FP16 engine), or in a runtime's reference kernel
  (OpenVINO's ``ref_*``): the target's one set of roofs does not describe it;
- ``fusion``: the runtime grouped the nodes otherwise than the target's policy (it fused kernels
  the target keeps apart, or split one the target fuses), the as-run prediction is closer to the
  measurement, and the two predictions differ by at least half the gap: the fusion explains it;
- ``launch``: the kernel's predicted time is mostly its launch cost, or it measured under twice
  the launch cost: fixed costs, not the roofs, decide it;
- ``efficiency``: else the roof was right in kind and the target's efficiency for the kernel's
  class is off: the measurement implies ``efficiency x predicted / measured`` of the roof.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.enums import TextEnum
from .profile_run import compare, unattributed_kernel_s
from .profiling import KernelTime, NodeComparison, ProfileResult
from .trace_records import Trace, TraceLayer
from .traces import MeasuredTrace, read_trace

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import NodePlacement, TargetReport
    from ..roofline.targets import Target

WELL_MAPPED = 0.95  # below this share of the measured time mapped to nodes, a note says where the rest is
LAUNCH_SHARE = 0.5  # a kernel whose predicted time is at least this share launch cost is launch-bound
FUSION_SHARE = 0.5  # the runtime's grouping is the cause when it accounts for at least this share of the gap


class GapCause(TextEnum):
    """The likely cause of a kernel's gap between measured and predicted (module docstring)."""

    ADDED = "added"
    FALLBACK = "fallback"
    FUSION = "fusion"
    LAUNCH = "launch"
    EFFICIENCY = "efficiency"


@dataclass
class KernelGap:
    """One runtime kernel: measured, predicted as it ran and under the target's fusion policy."""

    kernel: str
    op_type: str
    nodes: list[str]
    measured_s: float
    predicted_s: float  # its nodes placed as one kernel, as the runtime ran them
    by_rules_s: float  # its nodes' times in the target's own kernels
    cause: GapCause
    why: str  # the cause in words, with its figures
    unit: str | None = None
    precision: str | None = None

    @property
    def gap_s(self) -> float:
        """Measured less predicted under the target's policy: positive, slower than predicted."""
        return self.measured_s - self.by_rules_s

    @property
    def ratio(self) -> float | None:
        return self.measured_s / self.by_rules_s if self.by_rules_s else None


@dataclass
class TraceComparison:
    analysis: Analysis
    measured: MeasuredTrace
    report: TargetReport  # the prediction as the runtime grouped the nodes
    by_rules: TargetReport  # under the target's fusion policy
    nodes: list[NodeComparison]
    kernels: list[KernelGap]
    notes: list[str] = field(default_factory=list)

    @property
    def measured_s(self) -> float:
        return self.measured.measured_s

    @property
    def predicted_s(self) -> float:
        """The runtime's kernels, as it ran them, predicted on the target."""
        return sum(k.predicted_s for k in self.kernels)

    @property
    def mapped_share(self) -> float | None:
        return self.measured.mapped_share

    def as_profile_result(self, gaps: int = 5) -> ProfileResult:
        """The comparison in the shape of onnxruntime's (the HTML report's "Predicted vs measured"),
        the largest gaps and their causes among its notes."""
        lines = [
            f"gap {rank}: {gap.kernel} measured {gap.measured_s * 1e6:.4g} µs, predicted {gap.by_rules_s * 1e6:.4g} µs "
            f"under the target's policy: {gap.cause}, {gap.why}"
            for rank, gap in enumerate(self.largest_gaps(gaps), 1)
        ]
        return ProfileResult(
            self.analysis,
            self.report,
            self.measured.mapping,
            self.nodes,
            optimization="",
            threads=None,
            warmup=0,
            ort_version="",
            notes=[*lines, *self.notes],
            unattributed_s=sum(k.predicted_s for k in self.kernels if not k.nodes),
            by_rules=self.by_rules,
            runtime=self.measured.source,
        )

    def largest_gaps(self, count: int = 5) -> list[KernelGap]:
        """The kernels whose measured time is furthest from the prediction, in seconds."""
        return sorted(self.kernels, key=lambda k: -abs(k.gap_s))[:count]


def compare_trace(
    analysis: Analysis,
    target: Target,
    paths: Sequence[str | os.PathLike],
    loaded: tuple[str, Trace | list] | None = None,
    trace_format: str | None = None,
) -> TraceComparison:
    """Read the trace in ``paths`` (or ``loaded``, :func:`traces.load_trace`'s answer) and compare it
    with the prediction on ``target``, kernel by kernel."""
    from ..roofline.placement import place_model, split_kernel_times

    batch = analysis.batch or 1
    unfused = place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch, fusion=())
    weights = {n.name: n.placement.time_s for n in unfused.nodes}
    measured = read_trace(paths, analysis, trace_format, weights=weights, loaded=loaded)
    mapping = measured.mapping
    by_rules = place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch)
    groups = [[n for n in k.nodes if mapping.kernel_of.get(n) == k.name] for k in mapping.kernels if k.nodes]
    report = place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch, groups=groups)
    as_ran, by_policy = split_kernel_times(report, weights), split_kernel_times(by_rules, weights)
    kernel_of_rules = {node: i for i, kernel in enumerate(by_rules.nodes) for node in kernel.nodes}
    placements = {node: kernel for kernel in report.nodes for node in kernel.nodes}
    dominant = _dominant(measured.layers, mapping.kernels)
    gaps = []
    for kernel in mapping.kernels:
        layer = measured.layers.get(kernel.name)
        if not kernel.nodes:
            predicted = unattributed_kernel_s(kernel, target, report.launch_s)
            why = "added by the runtime (no ONNX node): predicted as one launch"
            gaps.append(_gap(kernel, predicted, predicted, GapCause.ADDED, why, layer))
            continue
        predicted = sum(as_ran.get(n, 0.0) for n in kernel.nodes)
        rules = sum(by_policy.get(n, 0.0) for n in kernel.nodes)
        cause, why = _cause(kernel, layer, dominant, predicted, rules, placements, kernel_of_rules, by_rules, report)
        gaps.append(_gap(kernel, predicted, rules, cause, why, layer))
    notes = [
        f"measured by {measured.source}; {measured.mapped_share or 0:.1%} of the measured time is in kernels "
        "mapped to ONNX nodes",
        f"predicted on {target.name} as the runtime grouped the nodes ({len(groups)} kernels, each paying the launch "
        f"cost) and under the target's fusion policy ({len(by_rules.nodes)} kernels, "
        f"{by_rules.latency_s * 1e3:.4g} ms)",
    ]
    if (measured.mapped_share or 0) < WELL_MAPPED:
        notes.append(
            f"only {measured.mapped_share or 0:.0%} of the measured time maps to ONNX nodes: the rest is in layers "
            "whose names the runtime made up"
            + (" (give TensorRT's --exportLayerInfo as a second --trace)" if measured.format == "tensorrt" else "")
        )
    if dominant[1] and dominant[1] != "FP32" and analysis.dtype == "model":
        notes.append(
            f"most of the measured time ran in {dominant[1]} and the prediction is in the model's stored types: "
            f"give --dtype {dominant[1].lower()} to predict in the runtime's precision"
        )
    return TraceComparison(
        analysis, measured, report, by_rules, compare(analysis, report, mapping, as_ran), gaps, notes
    )


def _gap(kernel: KernelTime, predicted: float, rules: float, cause: GapCause, why: str, layer) -> KernelGap:
    return KernelGap(
        kernel.name,
        kernel.op_type,
        list(kernel.nodes),
        kernel.seconds,
        predicted,
        rules,
        cause,
        why,
        unit=layer.unit if layer else None,
        precision=layer.precision if layer else None,
    )


def _dominant(layers: Mapping[str, TraceLayer], kernels: list[KernelTime]) -> tuple[str | None, str | None]:
    """The unit and the precision most of the measured time ran on (None where the trace says none)."""
    units: dict[str, float] = {}
    precisions: dict[str, float] = {}
    for kernel in kernels:
        layer = layers.get(kernel.name)
        if layer is None or layer.added:
            continue
        if layer.unit:
            units[layer.unit] = units.get(layer.unit, 0.0) + kernel.seconds
        if layer.precision:
            precisions[layer.precision] = precisions.get(layer.precision, 0.0) + kernel.seconds
    return (max(units, key=units.__getitem__, default=None), max(precisions, key=precisions.__getitem__, default=None))


def _fallback(layer: TraceLayer | None, dominant: tuple[str | None, str | None], computes: bool) -> str | None:
    """Why the layer fell back (a reference kernel, another unit, another precision), or None."""
    unit, precision = dominant
    if layer is None:
        return None
    if layer.reference:
        return "ran in the runtime's reference kernel (no optimised kernel for it)"
    if unit and layer.unit and layer.unit != unit:
        return f"fell back to the {layer.unit} (most of the time ran on the {unit})"
    if precision and layer.precision and layer.precision != precision and computes:  # a copy's type is its data's
        return f"ran in {layer.precision} (most of the time ran in {precision})"
    return None


def _cause(
    kernel: KernelTime,
    layer: TraceLayer | None,
    dominant: tuple[str | None, str | None],
    predicted: float,
    rules: float,
    placements: Mapping[str, NodePlacement],
    kernel_of_rules: Mapping[str, int],
    by_rules: TargetReport,
    report: TargetReport,
) -> tuple[GapCause, str]:
    """The likely cause of one mapped kernel's gap, and the reason in words."""
    fallback = _fallback(layer, dominant, any(placements[n].placement.flops for n in kernel.nodes if n in placements))
    if fallback:
        return GapCause.FALLBACK, fallback
    rule_kernels = {kernel_of_rules[n] for n in kernel.nodes if n in kernel_of_rules}
    outside = {n for i in rule_kernels for n in by_rules.nodes[i].nodes} - set(kernel.nodes)
    regrouped = len(rule_kernels) > 1 or bool(outside)
    gap = abs(kernel.seconds - rules)
    if regrouped and abs(kernel.seconds - predicted) < gap and abs(rules - predicted) >= FUSION_SHARE * gap:
        if len(rule_kernels) > 1:
            return GapCause.FUSION, (
                f"the runtime fused {len(rule_kernels)} of the target's kernels into one "
                f"(predicted {predicted * 1e6:.3g} µs fused, {rules * 1e6:.3g} µs apart)"
            )
        return GapCause.FUSION, "the target fuses it with nodes the runtime ran apart"
    placement = placements[kernel.nodes[0]].placement
    launch = placement.overhead_s
    if launch and (launch >= LAUNCH_SHARE * placement.time_s or kernel.seconds < 2 * launch):
        work = max(placement.time_s - launch, 0.0)
        return GapCause.LAUNCH, (
            f"fixed costs: its predicted work is {work * 1e6:.3g} µs beside the target's launch of "
            f"{launch * 1e6:.3g} µs a kernel (a costlier launch, or several inside the runtime's kernel)"
        )
    work_s = max(placement.time_s - launch, 0.0)
    measured_work = max(kernel.seconds - launch, 0.0)
    implied = placement.efficiency * work_s / measured_work if measured_work else None
    name = placement.kernel_class or "its"
    return GapCause.EFFICIENCY, (
        f"class {name}: the target assumes {placement.efficiency:.2f} of the roof"
        + (f", the measurement implies {implied:.2f}" if implied is not None else "")
    )
