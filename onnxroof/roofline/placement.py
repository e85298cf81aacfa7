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

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..core.units import seconds
from ..memory.spill import spill_plan
from .band import band_for
from .dataflow import DataflowTiming, pipeline_timing
from .edge_tpu import EdgeTpuCut, EdgeTpuHost, cut_at, run_cut
from .energy import kernel_energy, run_energy
from .kernel_bytes import cached_kernels, model_io_bytes, ran_constant_bytes
from .kernels import Kernel, efficiency_class, fuse, group, reuse_of, work_shape
from .latency_bound import LatencyBound, missing_roof
from .overheads import kernel_launch_s, run_overhead_s

# one kernel's point on the roofline: read through this module too
from .point import MATERIAL_FILL, Bound, Placement, parallel_fraction, roofline  # noqa: F401
from .targets import SPLIT_MACS, Figure, LatencyKind, Target, load_target
from .terms import KernelWork, kernel_point

if TYPE_CHECKING:
    from ..cost.records import CostGraph, NodeRecord
    from ..memory.liveness import MemoryReport
    from ..memory.problem import MemoryProblem


@dataclass(slots=True)  # one per kernel, 10^5 on a big graph
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
    runs: int = 1  # times it runs per run of the model (a Loop's body): its placement's figures are all of them
    # each of its nodes' share of its time (placement.time_s split by FLOPs, by bytes for a node that
    # does none: the split a profile makes of a fused kernel's time); node_times reads it
    node_time_s: dict[str, float] = field(default_factory=dict)
    # on a target that keeps parameters on chip when they fit: those of its parameters that did not,
    # read from DRAM every run (in its DRAM bytes; the weights finding's, not the intensity one's)
    streamed_weight_bytes: int = 0


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
    launch_s: float = 0.0  # what each kernel's launch costs in this run (overheads.kernel_launch_s)
    # the target's figures taken from other targets that this run used (Target.borrowed): said in every output
    borrowed: dict[str, Figure] = field(default_factory=dict)
    run_s: float = 0.0  # what the run costs beyond its kernels (in latency_s; overheads.run_overhead_s)
    dataflow: DataflowTiming | None = None  # a dataflow target's pipeline: fps and latency apart (dataflow.py)
    edge_tpu_cut: EdgeTpuCut | None = None  # where an Edge TPU's compiler cut the graph (edge_tpu.py)
    # a host target whose peak figures time part of the run (an Edge TPU's ops past its compiler's
    # cut): the latency is a bound, whatever the target's own figures ("": none)
    peak_host: str = ""
    # most FLOPs in a type the target has no roof for (latency_bound.missing_roof): a bound, whatever the figures
    fallen_roof: tuple[str, str, float] | None = None

    @property
    def energy_kind(self) -> str:
        """ "dynamic" (the work's energy alone: the target states no static power) or "dynamic +
        static" (its static power x the latency added)."""
        return "dynamic + static" if "static" in self.energy_split_j else "dynamic"

    @property
    def own_nodes(self) -> list[NodePlacement]:
        """The kernels the target runs itself: all but the last ``host_kernels``, which an Edge TPU's
        graph cut leaves to its host (their roofs are the host's)."""
        cut = self.edge_tpu_cut
        return self.nodes[: len(self.nodes) - cut.host_kernels] if cut is not None else self.nodes

    def top_nodes(self, count: int = 5) -> list[NodePlacement]:
        return sorted(self.nodes, key=lambda n: -n.placement.time_s)[:count]


def place_model(
    graph: CostGraph,
    memory: MemoryReport,
    target: Target,
    dtype: str = "model",
    batch: int = 1,
    fusion: Iterable[str] | None = None,
    overhead: bool = True,
    groups: Iterable[Iterable[str]] | None = None,
    compute_dtypes: Mapping[str, str] | None = None,
    split: Iterable[str] | None = None,
    order: Iterable[str] | None = None,
) -> TargetReport:
    """Place every kernel of the cost ``graph`` and the whole model on ``target``. The kernels
    are the counted nodes grouped under the ``fusion`` rule sets (default: the target's policy;
    none: one kernel per node); without ``overhead`` no kernel pays the target's launch cost or
    runs below the roofline (its ``efficiency`` figures, its ``parallel`` units' fill), which with no
    fusion is the plain roofline. The spill plan starts from the memory stage's buffer
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
    # the nodes that run: control-flow bodies expanded (cost/running.py), unless a runtime's kernels are given
    placed = graph if groups is not None else graph.running
    kernels = group(graph, groups) if groups is not None else fuse(placed, rules)
    placer = _Placer(
        target,
        placed,
        overhead,
        groups is not None,
        compute_dtypes,
        set(split) if split is not None else None,
        notes=list(placed.notes),
    )
    # an Edge TPU's compiler maps the kernels before its cut (edge_tpu.py): only their parameters are cached on chip
    cut_start, host = None, None
    if target.edge_tpu is not None and groups is None and overhead:
        kernels, cut_start, host = _edge_tpu_tail(target.edge_tpu, placed, kernels)
    placer.plan_memory(kernels, memory, order, cut_start)
    # every activation counts, not the peak: onnxruntime's arena does not keep a run's footprint at
    # the peak (MobileNetV3's 230 small kernels, 0.97 MB at the peak and 13 MB written, launch cold)
    if overhead:
        placer.launch_cost_s = kernel_launch_s(
            target, sum(k.weight_bytes for k in kernels) + sum(memory.problem.buffer_bytes), placer.notes
        )
    placer.in_place = memory.problem.in_place_concats if groups is None else frozenset()
    placements = [placer.place(position, kernel) for position, kernel in enumerate(kernels)]
    cut = None
    if host is not None and cut_start is not None:  # the ops past the compiler's cut on the host
        cut = run_cut(target, placements, kernels, cut_start, placed.tensors, host, roofline)
    for (wanted, used), count in sorted(placer.fallbacks.items()):
        placer.notes.append(f"{count} node(s) in {wanted} run on the {used} roof: the target has no {wanted} roof")
    report = _summarize(
        target,
        dtype,
        batch,
        placements,
        placer.spilled,
        sum(placer.spill_by_node.values()),
        placer.keeps_activations,
        placer.notes,
        rules,
        run_overhead_s(target) if overhead else 0.0,
        cut.transfer_s if cut is not None else 0.0,
        cut.host_kernels if cut is not None else 0,
    )
    report.edge_tpu_cut = cut
    report.weights_on_chip_bytes = sum(kernels[i].weight_bytes for i in placer.cached)
    report.launch_s = placer.launch_cost_s
    if target.dataflow is not None and groups is None:  # a layer pipeline: fps and latency apart (dataflow.py)
        pipeline_timing(report, kernels, placed.tensors, set(placed.inputs) | set(placed.outputs))
    _settle_kind(report, target, overhead)
    return report


def _edge_tpu_tail(
    edge_tpu: EdgeTpuHost, placed: CostGraph, kernels: list[Kernel]
) -> tuple[list[Kernel], int | None, Target | None]:
    """The kernels with those past the Edge TPU compiler's cut fused as its host's runtime fuses
    (it runs them), where the cut starts, and the host; the kernels as they were when nothing is cut."""
    cut_start = cut_at(kernels, edge_tpu.mapped)
    if cut_start is None:
        return kernels, None, None
    host = load_target(edge_tpu.host)
    tail = fuse(placed, host.fusion, [member for kernel in kernels[cut_start:] for member in kernel.records])
    return kernels[:cut_start] + tail, cut_start, host


def _settle_kind(report: TargetReport, target: Target, overhead: bool) -> None:
    """The run's own cost said in a note, and what the latency is: a bound or a forecast (with its band)."""
    if report.run_s:
        report.notes.append(
            f"a run costs {seconds(report.run_s)} beyond its kernels (the target's run_overhead_s: the runtime "
            "binding its inputs and outputs, or the harness its figures were measured through): in the latency "
            "once, as overhead"
        )
    # without overhead no kernel runs below its roofs: at peak figures, the latency is a bound
    report.latency_kind = target.latency_kind if overhead else LatencyKind.BOUND
    runtime_figures = ("node_overhead", "cold_node", "split_overhead", "efficiency")  # unused without overhead
    report.borrowed = {
        key: figure for key, figure in target.borrowed.items() if overhead or not key.startswith(runtime_figures)
    }
    report.peak_figures = report.latency_kind == LatencyKind.BOUND
    cut = report.edge_tpu_cut
    if cut is not None and cut.host_at_peaks:  # part of the run timed at the host's peak figures
        report.peak_host, report.latency_kind = cut.host, LatencyKind.BOUND
    # every kernel's type, the host's past an Edge TPU's cut too: they are in fp32 because the model is
    report.fallen_roof = missing_roof(target, report.nodes)
    if report.fallen_roof is not None:  # measured figures of another type: no forecast covers it
        report.latency_kind = LatencyKind.BOUND
    if report.latency_kind == LatencyKind.FORECAST:
        report.band = band_for(report)


@dataclass
class _Placer:
    """What placing one model's kernels on one target shares from kernel to kernel."""

    target: Target
    placed: CostGraph  # the graph whose nodes the kernels run
    overhead: bool
    ran: bool  # the kernels are a runtime's (groups): each launched, constants it computed included
    compute_dtypes: Mapping[str, str] | None
    split_nodes: set[str] | None
    notes: list[str]
    spill_by_node: dict[str, int] = field(default_factory=dict)
    spilled: list[str] = field(default_factory=list)
    cached: set[int] = field(default_factory=set)  # kernels (by position) whose parameters stay on chip between runs
    launch_cost_s: float = 0.0
    in_place: frozenset[str] = frozenset()
    fallbacks: Counter = field(default_factory=Counter)  # (wanted roof, roof used) -> nodes

    def __post_init__(self) -> None:
        self.inputs, self.outputs = set(self.placed.inputs), set(self.placed.outputs)
        # the target has on-chip memory to keep activations in (else every one goes through DRAM)
        self.keeps_activations = bool(self.target.onchip_bytes and self.target.onchip_bytes.value > 0)

    def plan_memory(
        self, kernels: list[Kernel], memory: MemoryReport, order: Iterable[str] | None, cut_start: int | None = None
    ) -> None:
        """Which parameters stay on chip between runs, then which activations spill to DRAM. Past
        ``cut_start`` (an Edge TPU's graph cut) the host runs the kernels: their parameters are not
        the target's to keep."""
        target, notes = self.target, self.notes
        if not self.keeps_activations:
            notes.append("no on-chip memory figure: every activation is read from and written to DRAM")
            return
        onchip_capacity = target.onchip_bytes.value if target.onchip_bytes else 0
        resident = kernels[:cut_start] if cut_start is not None else kernels
        if target.weights_resident and resident:
            # whole bytes: the kernels' parameter bytes are whole, so the same ones fit
            self.cached = cached_kernels(resident, int(onchip_capacity - memory.model_order.peak_bytes))
            kept_bytes = _weights_note(resident, self.cached, target, notes)
            if not kept_bytes:
                self.cached = set()
            onchip_capacity -= kept_bytes
        problem = _without_kernel_internals(memory.problem, kernels)
        plan = spill_plan(problem, tuple(order) if order is not None else problem.model_order, int(onchip_capacity))
        self.spill_by_node, self.spilled = plan.per_node, plan.spilled
        if plan.streamed:
            notes.append(
                f"{len(plan.streamed)} node(s) need more than the {int(onchip_capacity):,} B on chip at once "
                "and stream their activations from DRAM"
            )

    def place(self, position: int, kernel: Kernel) -> NodePlacement:
        """One kernel: its bytes on each level, its roofs, its terms' time, its energy."""
        members, target = kernel.records, self.target
        dram, onchip, spill, written_in_place = self._bytes(position, kernel)
        roofs, anchor_dtype, anchor = self._roofs(members)
        roof, peak = _blended_peak(target, roofs) if len(roofs) > 1 else target.roof(anchor_dtype)
        kernel_class = efficiency_class(members)
        work = KernelWork(
            target,
            members,
            kernel.flops,
            dram,
            onchip,
            roofs,
            roof,
            peak,
            kernel_class,
            work_shape(members),
            self.overhead,
            self._launch_s(kernel, dram, onchip, written_in_place),
        )
        point = kernel_point(work)
        energy = kernel_energy(target, roofs, dram, onchip)
        if kernel.runs > 1:  # a Loop's or Scan's body: every figure of one run, that many times
            point = _repeated(point, kernel.runs)
            energy = {k: None if v is None else v * kernel.runs for k, v in energy.items()}
            roofs = Counter({roof: flops * kernel.runs for roof, flops in roofs.items()})
        return NodePlacement(
            kernel.name,
            kernel.op_type,
            anchor.dtype,
            point,
            spill,
            energy,
            kernel.nodes,
            reuse_of(members),
            dict(roofs),
            kernel.runs,
            _node_times_s(point.time_s, members),
            kernel.weight_bytes * kernel.runs if target.weights_resident and position not in self.cached else 0,
        )

    def _bytes(self, position: int, kernel: Kernel) -> tuple[int, int, int, bool]:
        """(DRAM bytes, on-chip bytes, spilled bytes, whether it is a Concat written in place)."""
        members, tensors = kernel.records, self.placed.tensors
        # a Concat whose inputs were written into its buffer (the memory stage's decision) copies
        # nothing: no bytes, no launch (a spill the plan puts at its step still moves)
        written_in_place = bool(self.in_place) and all(m.view or m.name in self.in_place for m in members)
        keeps = self.keeps_activations
        if written_in_place:
            spill = sum(self.spill_by_node.get(m.name, 0) for m in members)
            dram, onchip = spill, 0
        elif keeps:
            # the model's inputs come from DRAM and its outputs go there; views read nothing
            io_bytes = model_io_bytes(members, tensors, self.inputs, self.outputs)
            spill = sum(self.spill_by_node.get(m.name, 0) for m in members)
            dram = (0 if position in self.cached else kernel.weight_bytes) + io_bytes + spill
            onchip = kernel.memory_bytes
        else:
            spill = 0
            dram, onchip = kernel.memory_bytes, 0
        if self.ran:  # constants the runtime computes on every run (a QDQ weight's dequantization)
            read, written = ran_constant_bytes(members, tensors)
            dram += read if keeps else read + written
            onchip += read + written if keeps else 0
        return dram, onchip, spill, written_in_place

    def _roofs(self, members: list[NodeRecord]) -> tuple[Counter, str, NodeRecord]:
        """(roof -> FLOPs run on it, the type the kernel's anchor computes in, the anchor): the
        members' FLOPs by the type they compute in, then each type's roof once (a kernel may have
        100,000 members and one or two types)."""
        target, compute_dtypes = self.target, self.compute_dtypes
        # plain dicts: a Counter costs more to make than the rest, once per kernel of 10^5
        flops_by_dtype: dict[str, int] = {}
        computing: dict[str, int] = {}  # type -> members with FLOPs in it
        # a kernel with multiply-adds runs its float32 on the runtime's fp32 math roof (TF32 tensor
        # cores under TensorRT: the target's [fp32_math]), its epilogue with it
        products = any(m.macs and not m.view for m in members)
        for member in members:
            member_dtype = compute_dtypes.get(member.name, member.dtype) if compute_dtypes else member.dtype
            member_dtype = target.mac_roof_dtype(member_dtype) if products else member_dtype
            flops_by_dtype[member_dtype] = flops_by_dtype.get(member_dtype, 0) + member.flops
            computing[member_dtype] = computing.get(member_dtype, 0) + bool(member.flops)
        roofs: Counter = Counter()  # roof -> FLOPs run on it
        for member_dtype, flops in flops_by_dtype.items():
            roof, _ = target.roof(member_dtype)
            roofs[roof] += flops
            if computing[member_dtype] and roof != target.wanted_roof(member_dtype):
                self.fallbacks[(target.wanted_roof(member_dtype), roof)] += computing[member_dtype]
        anchor = next((m for m in members if m.macs), members[0])
        anchor_dtype = compute_dtypes.get(anchor.name, anchor.dtype) if compute_dtypes else anchor.dtype
        return roofs, target.mac_roof_dtype(anchor_dtype) if products else anchor_dtype, anchor

    def _launch_s(self, kernel: Kernel, dram: int, onchip: int, written_in_place: bool) -> float:
        """What the kernel's launch costs: views, folded constants and shape arithmetic launch
        nothing on the device; a kernel split over the threads pays the split on top."""
        members, target = kernel.records, self.target
        works = self.ran or (
            bool(kernel.flops or dram or onchip) and not all(m.shape_only for m in members) and not written_in_place
        )
        if not (works and self.overhead):
            return 0.0
        launch_s = self.launch_cost_s
        split = self.split_nodes
        if target.split_overhead_s and (
            any(m.name in split for m in members) if split is not None else splits_by_rule(members)
        ):
            launch_s += target.split_overhead_s.value
        return launch_s


def _weights_note(kernels: list[Kernel], cached: set[int], target: Target, notes: list[str]) -> int:
    """The parameter bytes kept on chip between runs (0: none, the runtime reloads them all), said in a note."""
    parameter_bytes = sum(kernel.weight_bytes for kernel in kernels)
    kept_bytes = sum(kernels[i].weight_bytes for i in cached)
    if kept_bytes < parameter_bytes and not target.weights_partial:
        kept_bytes = 0  # the runtime reloads them all each run (HailoRT's contexts)
    if kept_bytes == parameter_bytes:
        notes.append(
            f"parameters ({parameter_bytes:,} B) stay on chip between runs: they fit beside the peak activations"
        )
    elif kept_bytes:
        notes.append(
            f"{kept_bytes:,} B of the {parameter_bytes:,} B of parameters stay on chip between runs (the "
            f"kernels' in model order, as long as they fit beside the peak activations); the rest are read "
            "from DRAM every run"
        )
    else:
        notes.append(
            f"parameters ({parameter_bytes:,} B) do not fit on chip beside the peak activations: read from "
            "DRAM every run"
        )
    return kept_bytes


def _repeated(point: Placement, runs: int) -> Placement:
    """A kernel's point run ``runs`` times: its work, bytes and times that many times over; its
    intensity, rates, efficiency and bound those of one run.

    >>> one = roofline(flops=1000, dram_bytes=100, peak_flops_per_s=1e9, dram_bytes_per_s=1e9, overhead_s=2e-6)
    >>> twelve = _repeated(one, 12)
    >>> twelve.flops, round(twelve.time_s * 1e6, 3), round(twelve.overhead_s * 1e6, 3), twelve.bound == one.bound
    (12000, 36.0, 24.0, True)
    """
    return replace(
        point,
        flops=point.flops * runs,
        dram_bytes=point.dram_bytes * runs,
        onchip_bytes=point.onchip_bytes * runs,
        compute_s=point.compute_s * runs,
        memory_s=point.memory_s * runs,
        onchip_s=point.onchip_s * runs,
        time_s=point.time_s * runs,
        overhead_s=point.overhead_s * runs,
        subnormal_s=point.subnormal_s * runs,
    )


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


def _node_times_s(time_s: float, members: list) -> dict[str, float]:
    """Each member's share of its kernel's ``time_s``, in proportion to its FLOPs (its bytes when it
    does none; all of it to the first member when none weighs anything).

    >>> from types import SimpleNamespace as S
    >>> _node_times_s(9.0, [S(name="conv", flops=8, memory_bytes=0), S(name="relu", flops=0, memory_bytes=4)])
    {'conv': 6.0, 'relu': 3.0}
    >>> _node_times_s(9.0, [S(name="reshape", flops=0, memory_bytes=0), S(name="view", flops=0, memory_bytes=0)])
    {'reshape': 9.0, 'view': 0.0}
    """
    if len(members) == 1:  # most kernels: the same arithmetic, without the lists
        weight = float(members[0].flops or members[0].memory_bytes)
        return {members[0].name: time_s * weight / weight if weight > 0 else time_s}
    weights = [float(m.flops or m.memory_bytes) for m in members]
    total = sum(weights)
    if total > 0:
        return {m.name: time_s * weight / total for m, weight in zip(members, weights)}
    return {m.name: time_s if index == 0 else 0.0 for index, m in enumerate(members)}


def split_kernel_times(report: TargetReport, weights: Mapping[str, float]) -> dict[str, float]:
    """Each ONNX node's share of its kernel's predicted time, in proportion to ``weights`` (all of
    it to the kernel's first node when its nodes weigh nothing): a profile's split, by its own
    measured weights (:attr:`NodePlacement.node_time_s` is placement's, by FLOPs).

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


def node_times(reports: Iterable[TargetReport]) -> dict[str, dict[str, float]]:
    """target -> node -> seconds: each kernel's time split over its nodes (``NodePlacement.node_time_s``)."""
    return {
        report.target.name: {name: s for kernel in report.nodes for name, s in kernel.node_time_s.items()}
        for report in reports
    }


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


def _summarize(
    target: Target,
    dtype: str,
    batch: int,
    nodes: list[NodePlacement],
    spilled: list[str],
    spill_bytes: int,
    on_chip: bool,
    notes: list[str],
    fusion: tuple[str, ...],
    run_s: float = 0.0,
    link_s: float = 0.0,
    on_host: int = 0,
) -> TargetReport:
    # run_s: the run's own cost, before its kernels; link_s: tensors crossing the host link between
    # the kernels (an Edge TPU's cut), link-bound time ("DRAM" is that link); on_host: the last kernels,
    # past that cut, in the latency but not in the target's own model point and utilization
    # (TargetReport.own_nodes, once the report is made)
    latency = sum(n.placement.time_s for n in nodes) + run_s + link_s
    own = nodes[: len(nodes) - on_host]
    flops = sum(n.placement.flops for n in own)
    dram = sum(n.placement.dram_bytes for n in own)
    onchip = sum(n.placement.onchip_bytes for n in own)
    flops_by_roof: Counter = Counter()
    for n in own:
        flops_by_roof[n.placement.roof] += n.placement.flops
    # mixed types run on several roofs: the model's peak is the harmonic blend, so that its
    # compute time is the sum of each roof's share (never above the nodes' own sum)
    roof, peak = _blended_peak(target, flops_by_roof) if flops_by_roof else target.roof("fp32")
    onchip_bw = target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None
    model_point = roofline(flops, dram, peak, target.dram_bytes_per_s.value, onchip, onchip_bw, roof)
    energy, split = run_energy(target, [n.energy_j for n in nodes], latency, notes)
    share: dict[Bound, float] = {Bound.OVERHEAD: run_s} if run_s else {}
    if link_s:
        share[Bound.DRAM] = link_s
    for n in nodes:
        share[n.placement.bound] = share.get(n.placement.bound, 0) + n.placement.time_s
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
