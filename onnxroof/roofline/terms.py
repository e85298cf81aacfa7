"""A kernel's time as named terms (cost-model.md section 5): the roofs (compute with its parallel
fill, DRAM, on chip), the efficiency that stretches them, the launch, the DRAM stall and the
subnormal slow path. Each term is one small function that sets its part of the kernel's
:class:`KernelTime` from the kernel's :class:`KernelWork`, and one that says it in `explain`,
under the term's name; :func:`kernel_point` adds them up, through :func:`point.roofline`.

Adding a term: a function setting a field of :class:`KernelTime` (and the line of
:func:`kernel_point` that adds that field), its explain line, and a row of :data:`TERMS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..core.units import seconds, si
from .point import Placement, parallel_fraction, roofline
from .work import efficiency_columns

if TYPE_CHECKING:
    from ..cost.records import NodeRecord
    from .targets import Target
    from .work import WorkShape


@dataclass(slots=True)  # one per kernel: a model may have 100,000
class KernelWork:
    """What one kernel does on a target, as placement decided it: what its terms read."""

    target: Target
    members: list[NodeRecord]
    flops: int
    dram_bytes: int
    onchip_bytes: int
    roofs: Counter  # roof -> FLOPs run on it
    roof: str  # the roof most of its FLOPs run on
    peak_flops_per_s: float  # that roof's peak (a blend for a mixed-roof kernel)
    kernel_class: str | None  # targets.EFFICIENCY_CLASSES
    shape: WorkShape | None  # its convolution's or matmul's GEMM shape
    overhead: bool  # the runtime's own costs count: launches, efficiencies, fill, stall, slow paths
    launch_s: float  # what its launch costs: 0 for a kernel that launches nothing


@dataclass(slots=True)
class KernelTime:
    """The parts of one kernel's time its terms set, before :func:`kernel_point` adds them up."""

    parallel: float = 1.0  # the share of the parallel units its work fills (divides the compute roof)
    efficiency: float = 1.0  # the fraction of the roofline its class reaches (divides every roof)
    op_efficiency: float | None = None  # its op's figure, in the class's place on the compute and on-chip roofs
    rows: int | None = None  # the output rows its efficiency was read at (a by_rows curve)
    columns: int | None = None  # the output columns it was read at (a by_columns curve)
    launch_s: float = 0.0  # added to the roofs
    dram_stall: float = 0.0  # the share of its DRAM time a compute-bound kernel adds
    subnormal_s: float = 0.0  # added last: a masked Softmax's underflowed exps


def _compute(work: KernelWork, time: KernelTime) -> None:
    """FLOPs over the roof's peak x the share of the parallel units the work fills (a mixed-roof
    kernel's fill is not modelled)."""
    target = work.target
    if work.overhead and target.parallel is not None and len(work.roofs) == 1:
        time.parallel = parallel_fraction(
            work.shape,
            target.parallel.tile(work.roof),
            int(target.parallel.units.value),
            target.parallel.kind == "systolic",
        )


def _efficiency(work: KernelWork, time: KernelTime) -> None:
    """The class's fraction of the roofline (at its rows or columns where the target has a curve),
    and its op's figure where the target gives one."""
    if not work.overhead:
        return
    target, kernel_class, roof = work.target, work.kernel_class, work.roof
    rows = work.shape.rows if work.shape and target.rows_curve(kernel_class, roof) else None
    columns = efficiency_columns(work.members, work.shape, kernel_class)
    time.efficiency = target.efficiency_of(kernel_class, roof, columns, rows)
    time.op_efficiency = target.op_efficiency(kernel_class, (m.op_type for m in work.members if not m.view))
    if rows:
        time.rows = rows
    elif columns and target.columns_curve(kernel_class, roof):
        time.columns = columns


def _launch(work: KernelWork, time: KernelTime) -> None:
    time.launch_s = work.launch_s


def _stall(work: KernelWork, time: KernelTime) -> None:
    """The target's DRAM stall: the share of a compute-bound kernel's DRAM time its compute does not hide."""
    stall = work.target.dram_stall
    time.dram_stall = stall.value if stall and work.overhead else 0.0


def _subnormal(work: KernelWork, time: KernelTime) -> None:
    """The exps a causal mask makes underflow, each at the target's slow-path cost (cost/masks.py)."""
    per_element = work.target.subnormal_s_per_element
    if work.overhead and per_element:
        elements = sum(m.subnormal_elements for m in work.members)
        if elements:
            time.subnormal_s = elements * per_element.value


def kernel_point(work: KernelWork) -> Placement:
    """The kernel's point: every term of :data:`TERMS` set, the roofs' longest over the efficiency
    plus the stall and the launch (:func:`point.roofline`), then the subnormal slow path."""
    time = KernelTime()
    for settle in _SETTLES:
        settle(work, time)
    target = work.target
    onchip_bw = target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None
    point = roofline(
        work.flops,
        work.dram_bytes,
        work.peak_flops_per_s,
        target.dram_bytes_per_s.value,
        work.onchip_bytes,
        onchip_bw,
        work.roof,
        time.launch_s,
        time.efficiency,
        work.kernel_class,
        time.parallel,
        time.op_efficiency,
        time.dram_stall,
    )
    if time.rows:
        point = replace(point, efficiency_rows=time.rows)
    elif time.columns:
        point = replace(point, efficiency_columns=time.columns)
    if time.subnormal_s:
        point = replace(point, time_s=point.time_s + time.subnormal_s, subnormal_s=time.subnormal_s)
    return point


# --- explain: each term's line for one kernel (report: a placement.TargetReport, kernel: its NodePlacement)


def _onchip_bw(report) -> float | None:
    target = report.target
    return target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None


def _compute_line(report, kernel) -> list[str]:
    point = kernel.placement
    fill = (
        f" x {point.parallel_fraction:.3g} (the share of the parallel units its work fills)"
        if point.parallel_fraction != 1.0
        else ""
    )
    return [
        f"  compute  {point.flops:,} FLOPs / {si(point.peak_flops_per_s, 'FLOP/s')} ({point.roof})"
        f"{fill} = {seconds(point.compute_s * point.near_efficiency)}"
    ]


def _dram_line(report, kernel) -> list[str]:
    point = kernel.placement
    near = point.efficiency if _onchip_bw(report) else point.near_efficiency
    return [
        f"  DRAM     {point.dram_bytes:,} B / {si(report.target.dram_bytes_per_s.value, 'B/s')} = "
        f"{seconds(point.memory_s * near)}"
        + (f" (of which {kernel.spill_bytes:,} B spilled)" if kernel.spill_bytes else "")
    ]


def _onchip_line(report, kernel) -> list[str]:
    onchip_bw, point = _onchip_bw(report), kernel.placement
    if not onchip_bw:
        return []
    return [
        f"  on chip  {point.onchip_bytes:,} B / {si(onchip_bw, 'B/s')} = "
        f"{seconds(point.onchip_s * point.near_efficiency)}"
    ]


def _efficiency_line(report, kernel) -> list[str]:
    target, point, onchip_bw = report.target, kernel.placement, _onchip_bw(report)
    if point.op_efficiency is not None:
        table = target.efficiency_by_op.get(point.kernel_class or "", {})
        ops = [
            op
            for op in dict.fromkeys(part.split("×")[0] for part in kernel.op_type.split("+"))
            if table.get(op) == point.op_efficiency
        ]
        near = "compute and on chip" if onchip_bw else "every roof"
        return [
            f"  efficiency {point.op_efficiency:.2f} on {near} ({'/'.join(ops)} in {point.kernel_class} kernels "
            f"on this target)"
            + (f", {point.efficiency:.2f} on DRAM" if onchip_bw else "")
            + ": the longest of these over its figure"
        ]
    if point.efficiency_rows is not None:
        curve = target.rows_curve(point.kernel_class, point.roof)
        return _curve_line(point, f"{point.efficiency:.2f}", point.efficiency_rows, "rows", curve)
    if point.efficiency_columns is not None:
        curve = target.columns_curve(point.kernel_class, point.roof)
        return _curve_line(point, f"{point.efficiency:.3g}", point.efficiency_columns, "columns", curve)
    if point.efficiency != 1.0:
        return [
            f"  efficiency {point.efficiency:.2f} ({point.kernel_class} kernels on this target): the longest "
            f"of these over {point.efficiency:.2f}"
        ]
    return []


def _curve_line(point, figure: str, count: int, axis: str, curve: str | None) -> list[str]:
    """The efficiency a kernel's ``count`` output rows or columns (``axis``) read off a curve."""
    return [
        f"  efficiency {figure} ({point.kernel_class} kernels of {count:,} output {axis} on this target, "
        f"efficiency.{curve}.by_{axis}): the longest of these over {figure}"
    ]


def _launch_line(report, kernel) -> list[str]:
    target, point = report.target, kernel.placement
    if not point.overhead_s:
        return []
    cold = (
        " (cold: the run touches more data than the on-chip memory holds)"
        if target.cold_node_overhead_s and report.launch_s == target.cold_node_overhead_s.value
        else ""
    )
    each = (
        f" ({seconds(point.overhead_s / kernel.runs)} x {kernel.runs:,} launches)" if kernel.runs > 1 else " per kernel"
    )
    borrowed = (
        " (borrowed from other targets: no measurement of this one)"
        if "node_overhead_s" in report.borrowed and not cold
        else ""
    )
    return [f"  launch   {seconds(point.overhead_s)}{each}{cold}{borrowed}"]


def _stall_line(report, kernel) -> list[str]:
    point = kernel.placement
    if not point.exposed_dram_s:
        return []
    return [
        f"  stall    {seconds(point.exposed_dram_s)}: {report.target.dram_stall.value:.0%} of its DRAM time, which "
        "its compute does not hide on this target (dram_stall)"
    ]


def _subnormal_line(report, kernel) -> list[str]:
    point = kernel.placement
    if not point.subnormal_s:
        return []
    per_element_s = report.target.subnormal_s_per_element.value
    return [
        f"  subnormal {round(point.subnormal_s / per_element_s):,} masked exps x {seconds(per_element_s)} = "
        f"{seconds(point.subnormal_s)} (a causal mask's hidden positions underflow: the CPU's slow path)"
    ]


@dataclass(frozen=True)
class Term:
    """One named part of a kernel's time."""

    name: str  # as `explain` prints it
    doc: str
    settle: Callable[[KernelWork, KernelTime], None] | None  # sets its part of the kernel's time (None: the
    # roof is the kernel's bytes over the target's bandwidth, nothing to set)
    explain: Callable[..., list[str]]  # (report, kernel) -> its explain lines ([] when it adds nothing)


# in the order `explain` lists them
TERMS: tuple[Term, ...] = (
    Term("compute", "FLOPs / (the roof's peak x the parallel units' fill)", _compute, _compute_line),
    Term("DRAM", "DRAM bytes / DRAM bandwidth", None, _dram_line),
    Term("on chip", "on-chip bytes / on-chip bandwidth", None, _onchip_line),
    Term("efficiency", "the roofs' longest over the fraction its class (or op) reaches", _efficiency, _efficiency_line),
    Term("launch", "a fixed cost per kernel that does work", _launch, _launch_line),
    Term("stall", "the DRAM time a compute-bound kernel does not hide", _stall, _stall_line),
    Term("subnormal", "a masked Softmax's underflowed exps on the slow path", _subnormal, _subnormal_line),
)


def explain_term_lines(report, kernel) -> list[str]:
    """Every term's explain lines for one kernel, in :data:`TERMS`' order."""
    return [line for term in TERMS for line in term.explain(report, kernel)]


# kernel_point's loop, without a lookup per kernel and term (a model may have 100,000 kernels)
_SETTLES = tuple(term.settle for term in TERMS if term.settle is not None)
