"""One kernel on a roofline (cost-model.md section 5): :func:`roofline`, one short pure function,
the :class:`Placement` it gives and the :class:`Bound` it names, and the share of a target's
parallel units a kernel's work fills (:func:`parallel_fraction`). ``placement.py`` places a
model's kernels with them.

>>> point = roofline(flops=2_424_832, dram_bytes=1_314_344, peak_flops_per_s=44.8e9, dram_bytes_per_s=12.8e9)
>>> str(point.bound), round(point.intensity, 2), round(point.time_s * 1e3, 3)
('dram', 1.84, 0.103)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.enums import TextEnum

if TYPE_CHECKING:
    from .work import WorkShape


class Bound(TextEnum):
    """What limits a node's time on a target; report/bounds.py words them."""

    COMPUTE = "compute"  # FLOPs / the roof's peak is the longest time
    DRAM = "dram"  # DRAM bytes / DRAM bandwidth
    ONCHIP = "onchip"  # on-chip bytes / on-chip bandwidth
    PARALLELISM = "parallelism"  # FLOPs / (peak x the share of the units its work fills)
    OVERHEAD = "overhead"  # the fixed per-node launch overhead exceeds every roof
    NONE = "none"  # no work


@dataclass(frozen=True, slots=True)  # slotted: one per kernel, 10^5 on a big graph
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
    efficiency_columns: int | None = None  # the output columns it was read at (a by_columns curve; None: none)
    subnormal_s: float = 0.0  # its masked Softmax's underflowed exps on the slow path (in time_s; cost/masks.py)
    dram_stall: float = 0.0  # the share of its DRAM time a compute-bound kernel does not hide (the target's)

    @property
    def exposed_dram_s(self) -> float:
        """The DRAM time its compute did not hide (in ``time_s``): the stall's share of it, when compute
        was the longest."""
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
        bound = (
            Bound.PARALLELISM
            if parallel <= MATERIAL_FILL or at_full_roof_s < max(memory_s, onchip_s)
            else Bound.COMPUTE
        )
    else:
        bound = Bound.DRAM if memory_s >= onchip_s else Bound.ONCHIP
    return Placement(
        flops,
        dram_bytes,
        onchip_bytes,
        roof,
        peak_flops_per_s,
        intensity,
        attainable,
        compute_s,
        memory_s,
        onchip_s,
        time_s,
        bound,
        overhead_s,
        efficiency,
        kernel_class,
        parallel,
        op_efficiency,
        dram_stall=dram_stall,
    )


def parallel_fraction(shape: WorkShape | None, tile: tuple[int, int] | None, units: int, systolic: bool) -> float:
    """The share of a target's parallel units a convolution's or matmul's work fills: its
    ``batch`` x rows x columns split into tiles of ``tile`` (rows, columns), run ``units`` at a
    time in whole waves; the fraction is the work over the slots of those waves. Fewer tiles
    than units split their depth over the idle units (split-K). On a systolic
    array the tile's rows are the array's height, filled by the reduction depth, and its
    columns the width, filled by the output channels (the output rows stream through).
    1.0 when the kernel has no work shape or its roof no tile.

    >>> from .work import WorkShape
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
