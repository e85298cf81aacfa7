"""Where every node and the whole model sit on a target's roofline, how long they
take and what they cost in energy (cost-model.md section 5).

The decision itself is :func:`roofline`, one short pure function. The rest decides what each
node reads from DRAM on a target: parameters always (read once per run); activations only when
the live set does not fit on chip (the memory stage's spill plan says which, under Belady's
policy) or when the target has no on-chip memory to keep them; the model's inputs are read from
DRAM and its outputs written there.

>>> point = roofline(flops=2_424_832, dram_bytes=1_314_344, peak_flops_per_s=44.8e9, dram_bytes_per_s=12.8e9)
>>> str(point.bound), round(point.intensity, 2), round(point.time_s * 1e3, 3)
('dram', 1.84, 0.103)
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Mapping

from ..core.dtypes import bits_of, packed_bytes
from ..core.enums import TextEnum
from ..cost.records import NodeStatus
from ..memory.spill import spill_plan
from .kernels import Kernel, WorkShape, efficiency_class, fuse, group, reuse_of, work_shape
from .latency_bound import BAND_NOTE, LatencyBound
from .overheads import kernel_launch_s, run_overhead_s
from .targets import SPLIT_MACS, Figure, LatencyKind, Target
from .verdicts import DeviceFit, Finding

if TYPE_CHECKING:
    from ..cost.records import CostGraph
    from ..memory.liveness import MemoryReport
    from ..memory.problem import MemoryProblem


class Bound(TextEnum):
    """What limits a node's time on a target; report/bounds.py words them."""

    COMPUTE = "compute"  # FLOPs / the roof's peak is the longest time
    DRAM = "dram"  # DRAM bytes / DRAM bandwidth
    ONCHIP = "onchip"  # on-chip bytes / on-chip bandwidth
    PARALLELISM = "parallelism"  # FLOPs / (peak x the share of the units its work fills)
    OVERHEAD = "overhead"  # the fixed per-node launch overhead exceeds every roof
    NONE = "none"  # no work


@dataclass(frozen=True)
class Placement:
    """One point on a roofline."""

    flops: int
    dram_bytes: int
    onchip_bytes: int
    roof: str  # the compute roof used: fp32, fp16, bf16, int8 or int4
    peak_flops_per_s: float
    intensity: float | None  # FLOPs per DRAM byte (None when nothing comes from DRAM)
    attainable_flops_per_s: float  # min(peak, intensity x DRAM bandwidth)
    compute_s: float
    memory_s: float  # DRAM
    onchip_s: float  # on-chip bandwidth roof (0 when the target gives none)
    time_s: float  # max of the three over the efficiency, plus the per-node overhead
    bound: Bound
    overhead_s: float = 0.0  # fixed cost of launching a node (a GPU kernel launch), when the target gives one
    efficiency: float = 1.0  # the fraction of the roofline the runtime achieves for this kind of kernel
    kernel_class: str | None = None  # targets.EFFICIENCY_CLASSES: which efficiency applies
    parallel_fraction: float = 1.0  # the share of the roof the kernel's work can fill (parallel_fraction)
    op_efficiency: float | None = None  # the by_op figure that divides its compute and on-chip roofs (None: efficiency)
    efficiency_rows: int | None = None  # the output rows its efficiency was read at (a by_rows curve; None: none)
    subnormal_s: float = 0.0  # its masked Softmax's underflowed exps on the slow path (in time_s; cost/masks.py)
    dram_stall: float = 0.0  # the share of its DRAM time a compute-bound kernel does not hide (the target's)

    @property
    def exposed_dram_s(self) -> float:
        """The DRAM time its compute did not hide (in ``time_s``): the stall's share of it, when compute was the longest."""
        return self.dram_stall * self.memory_s if self.compute_s >= max(self.memory_s, self.onchip_s) else 0.0

    @property
    def near_efficiency(self) -> float:
        """What its compute and on-chip roofs were divided by: its op's figure, else its class's."""
        return self.op_efficiency if self.op_efficiency is not None else self.efficiency

    @property
    def onchip_intensity(self) -> float | None:
        """FLOPs per on-chip byte: where the point sits against the on-chip level's slope."""
        return self.flops / self.onchip_bytes if self.onchip_bytes else None

    @property
    def percent_of_peak(self) -> float:
        achieved = self.flops / self.time_s if self.time_s else 0.0
        return 100.0 * achieved / self.peak_flops_per_s


MATERIAL_FILL = 0.9  # at most this share of the units filled: the idle ones are worth a reviewer's note


def roofline(
    flops: int,
    dram_bytes: int,
    peak_flops_per_s: float,
    dram_bytes_per_s: float,
    onchip_bytes: int = 0,
    onchip_bytes_per_s: float | None = None,
    roof: str = "fp32",
    overhead_s: float = 0.0,
    efficiency: float = 1.0,
    kernel_class: str | None = None,
    parallel: float = 1.0,
    op_efficiency: float | None = None,
    dram_stall: float = 0.0,
) -> Placement:
    """Attainable = min(peak x parallel, I x bandwidth); time = max(FLOPs / (peak x parallel),
    DRAM bytes / bandwidth, on-chip bytes / on-chip bandwidth) / efficiency + a fixed per-node
    overhead; compute-bound when I >= peak / bandwidth (the ridge). ``parallel`` (in (0, 1]) is
    the share of the target's parallel units the kernel's work fills (:func:`parallel_fraction`):
    a kernel whose compute time is the longest is parallelism-bound when it fills at most
    ``MATERIAL_FILL`` of the units (a tenth of its compute time idle, or more), or when at the full
    roof another roof would be the longest. ``efficiency`` (in
    (0, 1]) is the fraction of the roofline the runtime reaches for this kind of kernel: it
    stretches every roof alike, so it changes the time, not the bound. ``op_efficiency`` (the
    target's ``by_op`` figure for an op the kernel runs, ``Target.op_efficiency``) takes its place
    on the compute and on-chip roofs, and on DRAM too when there is no on-chip bandwidth: the
    core's throughput for that op, which data streamed from DRAM do not slow further; a kernel
    DRAM-bound at the roofline may then be on-chip-bound. ``dram_stall`` (in [0, 1]) is the share
    of a compute-bound kernel's DRAM time its compute does not hide: 0 is the roofline's max; above
    it, that share of the DRAM time adds to the compute time (a CPU GEMM reading weights past its
    caches stalls on them), and the kernel stays compute-bound.

    >>> erf = roofline(flops=0, dram_bytes=4000, peak_flops_per_s=1e12, dram_bytes_per_s=1e9, onchip_bytes=8000,
    ...                onchip_bytes_per_s=1e10, op_efficiency=0.25)  # DRAM 4 µs; on chip 0.8 µs / 0.25 = 3.2 µs
    >>> round(erf.time_s * 1e6, 3), str(erf.bound)
    (4.0, 'dram')
    >>> erf = roofline(0, 4000, 1e12, 1e9, 8000, 1e10, op_efficiency=0.125)  # 0.8 µs / 0.125 = 6.4 µs
    >>> round(erf.time_s * 1e6, 3), str(erf.bound)
    (6.4, 'onchip')
    >>> gemm = roofline(flops=10**6, dram_bytes=1000, peak_flops_per_s=1e11, dram_bytes_per_s=1e9, dram_stall=0.75)
    >>> round(gemm.time_s * 1e6, 3), round(gemm.exposed_dram_s * 1e6, 3), str(gemm.bound)  # 10 µs + 0.75 x 1 µs
    (10.75, 0.75, 'compute')
    """
    near = efficiency if op_efficiency is None else op_efficiency
    compute_s = flops / (peak_flops_per_s * parallel) / near
    memory_s = dram_bytes / dram_bytes_per_s / (efficiency if onchip_bytes_per_s else near)
    onchip_s = (onchip_bytes / onchip_bytes_per_s if onchip_bytes_per_s else 0.0) / near
    roof_s = max(compute_s, memory_s, onchip_s)
    roof_s += dram_stall * memory_s if compute_s == roof_s else 0.0  # Placement.exposed_dram_s
    time_s = roof_s + overhead_s
    intensity = flops / dram_bytes if dram_bytes else None
    attainable = peak_flops_per_s * parallel
    attainable = attainable if intensity is None else min(attainable, intensity * dram_bytes_per_s)
    if time_s == 0:
        bound = Bound.NONE
    elif overhead_s > roof_s:
        bound = Bound.OVERHEAD
    elif compute_s >= memory_s and compute_s >= onchip_s:
        # parallelism-bound when idle units take a material share of the compute time, or when
        # filling them would make another roof the longest; the few idle slots of a large
        # kernel's last wave leave it compute-bound (nothing to act on)
        at_full_roof_s = compute_s * parallel
        bound = (Bound.PARALLELISM if parallel <= MATERIAL_FILL or at_full_roof_s < max(memory_s, onchip_s)
                 else Bound.COMPUTE)
    else:
        bound = Bound.DRAM if memory_s >= onchip_s else Bound.ONCHIP
    return Placement(flops, dram_bytes, onchip_bytes, roof, peak_flops_per_s, intensity, attainable,
                     compute_s, memory_s, onchip_s, time_s, bound, overhead_s, efficiency, kernel_class, parallel,
                     op_efficiency, dram_stall=dram_stall)


def parallel_fraction(shape: WorkShape | None, tile: tuple[int, int] | None, units: int, systolic: bool) -> float:
    """The share of a target's parallel units a convolution's or matmul's work fills: its
    ``batch`` x rows x columns split into tiles of ``tile`` (rows, columns), run ``units`` at a
    time in whole waves; the fraction is the work over the slots of those waves. Fewer tiles
    than units split their depth over the idle units (split-K). On a systolic
    array the tile's rows are the array's height, filled by the reduction depth, and its
    columns the width, filled by the output channels (the output rows stream through).
    1.0 when the kernel has no work shape or its roof no tile.

    >>> from .kernels import WorkShape
    >>> parallel_fraction(WorkShape(1, 3136, 256, 32), (256, 256), 1, systolic=True)  # 32-deep: 32/256
    0.125
    >>> parallel_fraction(WorkShape(133, 64, 8, 512), (64, 8), 132, systolic=False)  # 133 tiles, 2 waves
    0.5037878787878788
    >>> parallel_fraction(WorkShape(1, 1, 8, 4096), (64, 8), 4, systolic=False)  # 1 tile split 4 ways: 1/64
    0.015625
    """
    if shape is None or tile is None:
        return 1.0
    rows = shape.depth if systolic else shape.rows
    tiles = shape.batch * -(-rows // tile[0]) * -(-shape.cols // tile[1])
    # fewer output tiles than units: the runtime splits the reduction over the idle units
    # (cuBLAS / CUTLASS split-K), each slice a share of the depth; an array's depth is its rows
    split = 1 if systolic else max(1, min(units // tiles, shape.depth))
    waves = -(-tiles * split // units)
    depth = 1 if systolic else shape.depth
    return shape.batch * rows * shape.cols * depth / (waves * units * tile[0] * tile[1] * -(-depth // split))


@dataclass
class NodePlacement:
    """One kernel on the target: a node, or the nodes fused with it (named after the first)."""

    name: str
    op_type: str  # "Conv+Relu" for a fused kernel
    dtype: str
    placement: Placement
    spill_bytes: int  # activation traffic caused by spilling (part of dram_bytes)
    energy_j: dict[str, float | None]  # compute / onchip / dram
    nodes: list[str] = field(default_factory=list)  # the ONNX nodes it runs, in the model's order
    reuse: tuple[int, int, int] | None = None  # kernels.reuse_of: what its efficiency class is decided by
    flops_by_roof: dict[str, int] = field(default_factory=dict)  # a mixed-type kernel's FLOPs on each roof


@dataclass
class TargetReport(LatencyBound):
    """One model on one target; whether its latency is a bound, and why: :class:`LatencyBound`."""

    target: Target
    dtype: str  # "model" (as stored) or the --dtype the model was re-costed in
    batch: int
    latency_s: float  # one run at this batch: nodes one after another
    throughput_per_s: float  # inferences per second: batch / latency
    utilization: float  # FLOPs / (latency x peak of the model's main roof)
    model_point: Placement  # total FLOPs over total DRAM bytes
    energy_j: float | None
    energy_split_j: dict[str, float | None]
    edp_js: float | None  # energy x latency
    time_share: dict[str, float]  # bound -> share of latency
    nodes: list[NodePlacement]
    spilled: list[str] = field(default_factory=list)
    spill_bytes: int = 0
    activations_on_chip: bool = True
    weights_on_chip_bytes: int = 0  # parameters kept on chip between runs ([weights] resident, and they fit)
    notes: list[str] = field(default_factory=list)
    fusion: tuple[str, ...] = ()  # the fusion rule sets the kernels were grouped under
    # THE decision every output reads: a lower bound (peak figures, or nodes left out: leave_out) or a
    # forecast (measured efficiencies, everything counted); bound_reason says why it is a bound
    latency_kind: LatencyKind = LatencyKind.BOUND
    band: Figure | None = None  # the forecast's measured error band, when its measurements cover this model's roofs
    peak_figures: bool = True  # the kernels ran at the target's peak figures (no measured efficiencies, or no overhead)
    uncounted_nodes: int = 0  # nodes the cost graph could not count: their time is not in latency_s
    unbound_dims: int = 0  # input dims left unbound: the nodes depending on them are not counted
    findings: list[Finding] = field(default_factory=list)  # ranked; made by onnxroof.findings (re-analyses)
    launch_s: float = 0.0  # what each kernel's launch costs in this run (overheads.kernel_launch_s)
    run_s: float = 0.0  # what the run costs beyond its kernels (in latency_s; overheads.run_overhead_s)
    fit: DeviceFit | None = None  # whether the model fits in the device's memory (onnxroof.findings)

    def top_nodes(self, count: int = 5) -> list[NodePlacement]:
        return sorted(self.nodes, key=lambda n: -n.placement.time_s)[:count]


def place_model(graph: CostGraph, memory: MemoryReport, target: Target, dtype: str = "model",
                batch: int = 1, fusion: Iterable[str] | None = None, overhead: bool = True,
                groups: Iterable[Iterable[str]] | None = None,
                compute_dtypes: Mapping[str, str] | None = None, split: Iterable[str] | None = None,
                order: Iterable[str] | None = None) -> TargetReport:
    """Place every kernel of the cost ``graph`` and the whole model on ``target``. The kernels
    are the counted nodes grouped under the ``fusion`` rule sets (default: the target's policy;
    none: one kernel per node); without ``overhead`` no kernel pays the target's launch cost or
    runs below the roofline (its ``efficiency`` figures, its ``parallel`` units' fill), which with no fusion is the plain
    roofline. The spill plan starts from the memory stage's buffer
    problem (``memory``: same graph, order and in-place setting). ``groups`` gives the kernels
    instead, as a runtime ran them (``kernels.group``: lists of node names, one per kernel the
    runtime launched); then every kernel pays the launch cost, views and shape arithmetic
    included, since the runtime launched it. ``compute_dtypes`` (node name -> element type) says
    which nodes the runtime computed in another type than onnxroof reads (a QDQ convolution it left
    in float32): they run on that type's roof. ``split`` names the nodes whose kernels the runtime
    split over its threads (from its profile), which pay the target's ``split_overhead_s`` on top
    of the launch; without it, the kernels the rules say split (:func:`splits_by_rule`) pay it.
    ``order`` is the execution order the spill plan follows (default: the model's; the memory
    stage's best order, to see what it saves)."""
    rules = ("runtime",) if groups is not None else tuple(target.fusion if fusion is None else fusion)
    tensors = graph.tensors
    inputs, outputs = set(graph.inputs), set(graph.outputs)
    onchip_capacity = target.onchip_bytes.value if target.onchip_bytes else 0
    notes: list[str] = []
    spill_by_node: dict[str, int] = {}
    spilled: list[str] = []
    keeps_activations = onchip_capacity > 0
    kernels = group(graph, groups) if groups is not None else fuse(graph, rules)
    split_nodes = set(split) if split is not None else None
    cached: set[int] = set()  # kernels (by position) whose parameters stay on chip between runs
    if keeps_activations and target.weights_resident:
        cached = _cached_kernels(kernels, onchip_capacity - memory.model_order.peak_bytes)
        parameter_bytes = sum(kernel.weight_bytes for kernel in kernels)
        kept_bytes = sum(kernels[i].weight_bytes for i in cached)
        if kept_bytes < parameter_bytes and not target.weights_partial:
            cached, kept_bytes = set(), 0  # the runtime reloads them all each run (HailoRT's contexts)
        if kept_bytes == parameter_bytes:
            notes.append(f"parameters ({parameter_bytes:,} B) stay on chip between runs: they fit beside the peak activations")
        elif kept_bytes:
            notes.append(f"{kept_bytes:,} B of the {parameter_bytes:,} B of parameters stay on chip between runs (the "
                         f"kernels' in model order, as long as they fit beside the peak activations); the rest are read "
                         "from DRAM every run")
        else:
            notes.append(f"parameters ({parameter_bytes:,} B) do not fit on chip beside the peak activations: read from "
                         "DRAM every run")
        onchip_capacity -= kept_bytes
    if keeps_activations:
        problem = _without_kernel_internals(memory.problem, kernels)
        plan = spill_plan(problem, tuple(order) if order is not None else problem.model_order, int(onchip_capacity))
        spill_by_node, spilled = plan.per_node, plan.spilled
        if plan.streamed:
            notes.append(f"{len(plan.streamed)} node(s) need more than the {int(onchip_capacity):,} B on chip at once "
                         "and stream their activations from DRAM")
    else:
        notes.append("no on-chip memory figure: every activation is read from and written to DRAM")
    onchip_bw = target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None
    # every activation counts, not the peak: onnxruntime's arena does not keep a run's footprint at
    # the peak (MobileNetV3's 230 small kernels, 0.97 MB at the peak and 13 MB written, launch cold)
    launch_cost_s = (kernel_launch_s(target, sum(k.weight_bytes for k in kernels) + sum(memory.problem.buffer_bytes), notes)
                     if overhead else 0.0)
    placements: list[NodePlacement] = []
    fallbacks: Counter = Counter()
    for position, kernel in enumerate(kernels):
        members = kernel.records
        if keeps_activations:
            # the model's inputs come from DRAM and its outputs go there; views read nothing
            io_bytes = _io_bytes(members, tensors, inputs, outputs)
            spill = sum(spill_by_node.get(m.name, 0) for m in members)
            dram = (0 if position in cached else kernel.weight_bytes) + io_bytes + spill
            onchip = kernel.memory_bytes
        else:
            spill = 0
            dram, onchip = kernel.memory_bytes, 0
        if groups is not None:  # constants the runtime computes on every run (a QDQ weight's dequantization)
            read, written = _ran_constant_bytes(members, tensors)
            dram += read if keeps_activations else read + written
            onchip += read + written if keeps_activations else 0
        # the members' FLOPs by the type they compute in, then each type's roof once (a kernel may
        # have 100,000 members and one or two types)
        flops_by_dtype: Counter = Counter()
        computing: Counter = Counter()  # type -> members with FLOPs in it
        for member in members:
            member_dtype = compute_dtypes.get(member.name, member.dtype) if compute_dtypes else member.dtype
            flops_by_dtype[member_dtype] += member.flops
            computing[member_dtype] += bool(member.flops)
        roofs: Counter = Counter()  # roof -> FLOPs run on it
        for member_dtype, flops in flops_by_dtype.items():
            roof, _ = target.roof(member_dtype)
            roofs[roof] += flops
            if computing[member_dtype] and roof != target.wanted_roof(member_dtype):
                fallbacks[(target.wanted_roof(member_dtype), roof)] += computing[member_dtype]
        anchor = next((m for m in members if m.macs), members[0])
        anchor_dtype = compute_dtypes.get(anchor.name, anchor.dtype) if compute_dtypes else anchor.dtype
        roof, peak = _blended_peak(target, roofs) if len(roofs) > 1 else target.roof(anchor_dtype)
        # views, folded constants and shape arithmetic launch nothing on the device
        works = groups is not None or (bool(kernel.flops or dram or onchip) and not all(m.shape_only for m in members))
        launch_s = launch_cost_s if works and overhead else 0.0
        if target.split_overhead_s and works and overhead and (
                any(m.name in split_nodes for m in members) if split_nodes is not None else splits_by_rule(members)):
            launch_s += target.split_overhead_s.value
        kernel_class = efficiency_class(members)
        shape = work_shape(members)
        rows = shape.rows if shape and overhead and target.rows_curve(kernel_class, roof) else None
        efficiency = target.efficiency_of(kernel_class, roof, shape.cols if shape else None, rows) if overhead else 1.0
        by_op = target.op_efficiency(kernel_class, (m.op_type for m in members if not m.view)) if overhead else None
        parallel = 1.0
        if overhead and target.parallel is not None and len(roofs) == 1:  # a mixed-roof kernel: not modelled
            parallel = parallel_fraction(shape, target.parallel.tile(roof),
                                         int(target.parallel.units.value), target.parallel.kind == "systolic")
        point = roofline(kernel.flops, dram, peak, target.dram_bytes_per_s.value, onchip, onchip_bw, roof, launch_s,
                         efficiency, kernel_class, parallel, by_op,
                         target.dram_stall.value if target.dram_stall and overhead else 0.0)
        if rows:
            point = replace(point, efficiency_rows=rows)
        subnormal = sum(m.subnormal_elements for m in members)
        if subnormal and overhead and target.subnormal_s_per_element:
            slow_s = subnormal * target.subnormal_s_per_element.value
            point = replace(point, time_s=point.time_s + slow_s, subnormal_s=slow_s)
        placements.append(NodePlacement(kernel.name, kernel.op_type, anchor.dtype, point, spill,
                                        _energy(target, roofs, dram, onchip), kernel.nodes, reuse_of(members),
                                        dict(roofs)))
    for (wanted, used), count in sorted(fallbacks.items()):
        notes.append(f"{count} node(s) in {wanted} run on the {used} roof: the target has no {wanted} roof")
    report = _summarize(target, dtype, batch, placements, spilled, sum(spill_by_node.values()),
                        keeps_activations, notes, rules, run_overhead_s(target) if overhead else 0.0)
    report.weights_on_chip_bytes = sum(kernels[i].weight_bytes for i in cached)
    report.launch_s = launch_cost_s
    if report.run_s:
        report.notes.append(f"a run costs {report.run_s * 1e6:.3g} µs beyond its kernels (the runtime binding its inputs "
                            "and outputs): in the latency once, as overhead")
    # without overhead no kernel runs below its roofs: at peak figures, the latency is a bound
    report.latency_kind = target.latency_kind if overhead else LatencyKind.BOUND
    report.peak_figures = report.latency_kind == LatencyKind.BOUND
    if report.latency_kind == LatencyKind.FORECAST:
        report.band = _band(report)
    return report


# more of the time than this on roofs the band was not measured on: no band. A quarter, since an
# export re-costed with --dtype keeps small kernels in fp32 (mask arithmetic, Erf: a tenth of an
# int8 BERT on l4) that the measured runs' fused kernels hide
UNCOVERED_SHARE = 0.25


def _band(report: TargetReport) -> Figure | None:
    """The target's error band, if its measurements ran on the roofs that take this model's time
    (all but ``UNCOVERED_SHARE`` of it); else None, and a note says why."""
    target = report.target
    if target.error_band is None or not target.error_band_roofs:
        return target.error_band
    outside = sum(n.placement.time_s for n in report.nodes if n.placement.roof not in target.error_band_roofs)
    share = outside / report.latency_s if report.latency_s else 0.0
    if share <= UNCOVERED_SHARE:
        return target.error_band
    roofs = sorted({n.placement.roof for n in report.nodes if n.placement.roof not in target.error_band_roofs})
    report.notes.append(f"{BAND_NOTE}±{target.error_band.value:.0%}) was measured on {', '.join(target.error_band_roofs)} "
                        f"kernels; {share:.0%} of this model's time runs on {', '.join(roofs)}, which no measurement "
                        "covered: a forecast without a measured band")
    return None


def splits_by_rule(members: Iterable) -> bool:
    """Whether a CPU runtime splits this kernel over two threads, by the rule onnxroof knows:
    onnxruntime's MLAS splits a convolution or matmul of at least ``targets.SPLIT_MACS``
    multiply-adds (elementwise and normalization kernels split by a cost model of their own,
    which only a profile shows).

    >>> from types import SimpleNamespace as S
    >>> splits_by_rule([S(macs=48 ** 3, view=False)]), splits_by_rule([S(macs=32 ** 3, view=False)])
    (True, False)
    """
    return any(m.macs >= SPLIT_MACS for m in members if not m.view)


def _ran_constant_bytes(members: list, tensors: dict) -> tuple[int, int]:
    """(bytes read, bytes written) by the members onnxroof folds as constants, which a runtime
    that launched them computes on every run: onnxruntime keeps a QDQ model's DequantizeLinear of
    the weights it does not fuse, turning int8 weights into float ones each run. A folded tensor's record gives the bytes stored for it (the int8 source of a dequantized
    weight); what the runtime writes is its elements in its own type.

    >>> from types import SimpleNamespace as S
    >>> from onnxroof.cost.records import NodeStatus
    >>> tensors = {"w": S(bytes=1024), "s": S(bytes=4), "w_f": S(bytes=1028, dtype="float32", shape=(32, 32))}
    >>> dq = S(status=NodeStatus.CONSTANT, view=False, shape_only=False, inputs=["w", "s"], outputs=["w_f"])
    >>> _ran_constant_bytes([dq, S(status=NodeStatus.OK)], tensors)
    (1028, 4096)
    """
    ran = [m for m in members if m.status == NodeStatus.CONSTANT and not m.view and not m.shape_only]
    read = sum(tensors[t].bytes or 0 for m in ran for t in m.inputs if t in tensors)
    written = sum(_own_bytes(tensors[t]) for m in ran for t in m.outputs if t in tensors)
    return read, written


def _own_bytes(tensor) -> int:
    """A tensor's elements in its own element type (its stored bytes if that is unknown)."""
    shape = tensor.shape
    if shape and all(isinstance(d, int) for d in shape):
        bits = bits_of(tensor.dtype)
        if bits:
            return packed_bytes(math.prod(shape), bits)
    return tensor.bytes or 0


def _io_bytes(members: list, tensors: dict, inputs: set[str], outputs: set[str]) -> int:
    """The bytes a kernel moves of the model's inputs (read; views read nothing) and outputs
    (written): each tensor once, whole unless the members that move it move only part of it (their
    ``partial_bytes``: a KV buffer shared by past and present, read at the attended positions and
    written at the new ones), then the most any of them moves."""
    moved: dict[str, int] = {}
    for member in members:
        partial = member.partial_bytes
        for name in member.inputs if not member.view else ():
            if name in inputs:
                moved[name] = max(moved.get(name, 0), partial.get(name, tensors[name].bytes or 0))
        for name in member.outputs:
            if name in outputs:
                moved[name] = max(moved.get(name, 0), partial.get(name, tensors[name].bytes or 0))
    return sum(moved.values())


def _cached_kernels(kernels: list[Kernel], budget_bytes: int) -> set[int]:
    """The kernels whose parameters a target keeps on chip between runs: in model order, each
    whose parameters still fit in ``budget_bytes`` (the on-chip memory beside the peak
    activations), as the Edge TPU compiler caches what fits and streams the rest.

    >>> from types import SimpleNamespace as K
    >>> sorted(_cached_kernels([K(weight_bytes=4), K(weight_bytes=8), K(weight_bytes=3), K(weight_bytes=0)], 8))
    [0, 2]
    """
    cached, left = set(), budget_bytes
    for position, kernel in enumerate(kernels):
        if kernel.weight_bytes and kernel.weight_bytes <= left:
            cached.add(position)
            left -= kernel.weight_bytes
    return cached


def split_kernel_times(report: TargetReport, weights: Mapping[str, float]) -> dict[str, float]:
    """Each ONNX node's share of its kernel's predicted time, in proportion to ``weights`` (all of
    it to the kernel's first node when its nodes weigh nothing).

    >>> from types import SimpleNamespace as S
    >>> kernel = S(nodes=["conv", "relu"], placement=S(time_s=9.0))
    >>> split_kernel_times(S(nodes=[kernel]), {"conv": 8.0, "relu": 4.0})
    {'conv': 6.0, 'relu': 3.0}
    """
    shares: dict[str, float] = {}
    for kernel in report.nodes:
        total = sum(weights.get(name, 0.0) for name in kernel.nodes)
        for index, name in enumerate(kernel.nodes):
            if total > 0:
                shares[name] = kernel.placement.time_s * weights.get(name, 0.0) / total
            else:
                shares[name] = kernel.placement.time_s if index == 0 else 0.0
    return shares


def node_times(records, reports: Iterable[TargetReport]) -> dict[str, dict[str, float]]:
    """target -> node -> seconds: each kernel's time split over its nodes by FLOPs (by bytes
    for a node that does none), the split a profile makes of a fused kernel's time."""
    weights = {r.name: float(r.flops or r.memory_bytes) for r in records}
    return {report.target.name: split_kernel_times(report, weights) for report in reports}


def _without_kernel_internals(problem: MemoryProblem, kernels: list[Kernel]) -> MemoryProblem:
    """The buffer problem with the tensors that never leave a fused kernel taking no space: they
    live in the kernel's registers and local memory, so they neither hold on-chip memory between
    kernels nor spill."""
    internal = {name for kernel in kernels for name in kernel.internal}
    if not internal:
        return problem
    sizes = tuple(0 if name in internal else size for name, size in zip(problem.buffer_names, problem.buffer_bytes))
    return replace(problem, buffer_bytes=sizes, model_spans=None, model_touched=None)


def _blended_peak(target: Target, flops_by_roof: Counter) -> tuple[str, float]:
    """The roof most of the FLOPs run on, and the harmonic blend of the roofs' peaks, so that the
    compute time is the sum of each roof's share."""
    flops = sum(flops_by_roof.values())
    roof = flops_by_roof.most_common(1)[0][0]
    compute_s = sum(f / target.peak_ops_per_s[r].value for r, f in flops_by_roof.items())
    return roof, (flops / compute_s if compute_s else target.peak_ops_per_s[roof].value)


def _energy(target: Target, flops_by_roof: Counter, dram_bytes: int, onchip_bytes: int) -> dict[str, float | None]:
    """Joules per part; None where the target has no figure for work this kernel does."""
    onchip_pj = target.onchip_pj_per_byte.value if target.onchip_pj_per_byte else None
    dram_pj = target.dram_pj_per_byte.value if target.dram_pj_per_byte else None
    compute = [_joules(flops, target.energy_per_op_pj(roof)) for roof, flops in flops_by_roof.items()]
    return {
        "compute": None if None in compute else sum(compute),  # type: ignore[arg-type]
        "onchip": _joules(onchip_bytes, onchip_pj),
        "dram": _joules(dram_bytes, dram_pj),
    }


def _joules(amount: int, picojoules_each: float | None) -> float | None:
    if not amount:
        return 0.0
    return None if picojoules_each is None else amount * picojoules_each * 1e-12


def _summarize(target: Target, dtype: str, batch: int, nodes: list[NodePlacement], spilled: list[str],
               spill_bytes: int, on_chip: bool, notes: list[str], fusion: tuple[str, ...],
               run_s: float = 0.0) -> TargetReport:
    latency = sum(n.placement.time_s for n in nodes) + run_s  # run_s: the run's own cost, before its kernels
    flops = sum(n.placement.flops for n in nodes)
    dram = sum(n.placement.dram_bytes for n in nodes)
    onchip = sum(n.placement.onchip_bytes for n in nodes)
    flops_by_roof: Counter = Counter()
    for n in nodes:
        flops_by_roof[n.placement.roof] += n.placement.flops
    # mixed types run on several roofs: the model's peak is the harmonic blend, so that its
    # compute time is the sum of each roof's share (never above the nodes' own sum)
    roof, peak = _blended_peak(target, flops_by_roof) if flops_by_roof else target.roof("fp32")
    onchip_bw = target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None
    model_point = roofline(flops, dram, peak, target.dram_bytes_per_s.value, onchip, onchip_bw, roof)
    split: dict[str, float | None] = {}
    for part in ("compute", "onchip", "dram"):
        values = [n.energy_j[part] for n in nodes]
        split[part] = None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]
    missing = [part for part, value in split.items() if value is None]
    if missing:
        notes.append(f"no energy figures for {', '.join(missing)} on this target: energy left out")
    energy = None if missing else sum(v for v in split.values() if v is not None)
    share: Counter = Counter({Bound.OVERHEAD: run_s} if run_s else {})
    for n in nodes:
        share[n.placement.bound] += n.placement.time_s
    return TargetReport(
        target=target,
        dtype=dtype,
        batch=batch,
        latency_s=latency,
        throughput_per_s=batch / latency if latency else 0.0,
        utilization=flops / (latency * peak) if latency else 0.0,
        model_point=model_point,
        energy_j=energy,
        energy_split_j=split,
        edp_js=None if energy is None else energy * latency,
        time_share={bound: (time / latency if latency else 0.0) for bound, time in sorted(share.items())},
        nodes=nodes,
        spilled=spilled,
        spill_bytes=spill_bytes,
        activations_on_chip=on_chip,
        notes=notes,
        fusion=fusion,
        run_s=run_s,
    )
