"""The roofs a calibration measured: the memory levels read off the bandwidth sweep
(:func:`memory_levels`), everything one calibration measured (:class:`Calibration`) and its
roofs as a :class:`~onnxroof.roofline.targets.Target` (:func:`measured_roofs`). The target file
that carries them with their sources is written by :mod:`onnxroof.report.target_file`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..roofline.targets import Figure, Target
from . import achieved
from .op_efficiency import OpMeasurement
from .roof_kernels import MatmulPoint, StreamPoint

FAST_FACTOR = 1.3  # a cache plateau runs at least this much faster than DRAM
ROUNDS = 3  # every point is measured this many times, a whole round apart; the best is kept


@dataclass(frozen=True)
class Levels:
    """The memory levels read off a bandwidth sweep."""

    dram_bytes_per_s: float
    dram_sizes: tuple[int, int]  # the working sets the DRAM figure is the best of
    onchip_bytes: int | None  # where the sweep drops through the middle between the last cache plateau and DRAM
    onchip_bytes_per_s: float | None  # that plateau's bandwidth
    onchip_sizes: tuple[int, int] | None  # the working sets the plateau bandwidth is the best of


def memory_levels(points: Sequence[tuple[int, float]], fast_factor: float = FAST_FACTOR) -> Levels:
    """DRAM and the largest cache plateau from (working-set bytes, bytes/s) points.

    DRAM is the best bandwidth among the points within 4x of the largest working set. The last
    cache plateau is the last run of (at least two, if there are) consecutive points at least
    ``fast_factor`` times faster than DRAM; its bandwidth is the best of its points in the top
    two octaves of the run, and its size where the sweep crosses the geometric mean of that
    bandwidth and DRAM's (the middle of the drop): between the largest working set in the run
    still above it and the next one, interpolated in log size and log bandwidth, so that a point
    that lands on either side of the middle from one calibration to the next moves the size a
    little, not a whole step of the sweep. Best, not median: other work on the machine only ever
    slows a pass down, so the fastest is the closest to the roof.

    >>> sweep = [(2**k, 100e9 if k <= 20 else 50e9 if k <= 24 else 10e9) for k in range(15, 31)]
    >>> levels = memory_levels(sweep)  # a step from 16 MiB at 50 GB/s to 32 MiB at 10: the middle
    >>> levels.dram_bytes_per_s, levels.onchip_bytes == int(2**24.5), levels.onchip_bytes_per_s
    (10000000000.0, True, 50000000000.0)
    """
    if not points:
        raise ValueError("no bandwidth points")
    ordered = sorted(points)
    largest = ordered[-1][0]
    tail = [(size, bw) for size, bw in ordered if size * 4 >= largest]
    dram = max(bw for _, bw in tail)
    fast = [bw >= fast_factor * dram for _, bw in ordered[: len(ordered) - len(tail)]]
    runs: list[tuple[int, int]] = []  # [start, end) index ranges of fast points
    start = None
    for index, is_fast in enumerate(fast + [False]):
        if is_fast and start is None:
            start = index
        elif not is_fast and start is not None:
            runs.append((start, index))
            start = None
    if not runs:
        return Levels(dram, (tail[0][0], largest), None, None, None)
    long_runs = [r for r in runs if r[1] - r[0] >= 2]
    first, last = (long_runs or runs)[-1]
    plateau = ordered[first:last]
    end = plateau[-1][0]
    top = [(size, bw) for size, bw in plateau if size * 4 >= end]
    cache = max(bw for _, bw in top)
    middle = math.sqrt(cache * dram)
    above = [index for index in range(first, last) if ordered[index][1] >= middle]
    edge = ordered[above[-1]][0] if above else end
    if above and above[-1] + 1 < len(ordered) and ordered[above[-1] + 1][1] < middle:
        (size_in, bw_in), (size_out, bw_out) = ordered[above[-1]], ordered[above[-1] + 1]
        share = math.log(bw_in / middle) / math.log(bw_in / bw_out)  # where between the two the middle falls
        edge = int(size_in * (size_out / size_in) ** share)
    return Levels(dram, (tail[0][0], largest), edge, cache, (top[0][0], end))


@dataclass
class Calibration:
    """Everything one calibration measured, and where."""

    date: str
    cpu: str
    cores: str  # "2 cores, 2 logical CPUs"
    threads: int
    load_average: float | None
    numpy_version: str
    blas: str
    matmul: list[MatmulPoint] = field(default_factory=list)
    stream: list[StreamPoint] = field(default_factory=list)
    caches: str = ""  # what the OS says about the caches, for context
    seconds: float = 0.0  # how long it took
    rounds: int = ROUNDS  # how many times every point was measured (the best is kept)
    blas_threads: int | None = None  # the BLAS thread limit during the matmuls (None: BLAS's default)
    launch_overhead_s: float | None = None  # onnxruntime's cost per kernel (None: not measured)
    cold_launch_s: float | None = None  # onnxruntime's cost per kernel when a run streams past the caches
    run_overhead_s: float | None = None  # onnxruntime's cost per run beyond its kernels (None: not measured)
    dram_stall: float | None = None  # the share of a compute-bound product's DRAM time not hidden (None: not measured)
    handoff_s: float | None = (
        None  # what a kernel split over the threads costs on top (None: one thread, or not measured)
    )
    handoff_cases: list[tuple[str, float, float]] = field(default_factory=list)  # (op, one-thread slope, slope)
    subnormal_s: float | None = None  # one exp underflowed to a subnormal in a masked Softmax (None: not measured)
    copy_bytes_per_s: float | None = None  # onnxruntime's elementwise kernel streaming from DRAM (None: not measured)
    efficiency: dict[str, list[achieved.Case]] = field(default_factory=dict)  # class -> sizes measured
    # class -> roof -> sizes measured on that roof (the int8 gemm of a quantized model)
    efficiency_on_roof: dict[str, dict[str, list[achieved.Case]]] = field(default_factory=dict)
    efficiency_by_op: list[OpMeasurement] = field(default_factory=list)  # per op type (op_efficiency.OP_CASES)
    # "<class>" or "<class>.<roof>" -> the cases of its by_rows curve (rows_efficiency.ROWS_CASES and the class's own)
    efficiency_by_rows: dict[str, list[achieved.Case]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def peak(self, dtype: str) -> MatmulPoint | None:
        points = [p for p in self.matmul if p.dtype == dtype]
        return max(points, key=lambda p: p.rate.per_second) if points else None

    def bandwidth_points(self) -> list[tuple[int, float]]:
        """The best kernel at each working set."""
        best: dict[int, float] = {}
        for point in self.stream:
            best[point.working_set] = max(best.get(point.working_set, 0.0), point.rate.per_second)
        return sorted(best.items())

    def levels(self) -> Levels:
        return memory_levels(self.bandwidth_points())

    def dram_bytes_per_s(self) -> float:
        """The DRAM roof: the sweep's, or onnxruntime's copy bandwidth when that is faster."""
        sweep = self.levels().dram_bytes_per_s
        return self.copy_bytes_per_s if self.copy_bytes_per_s and self.copy_bytes_per_s > sweep else sweep


def measured_roofs(calibration: Calibration, name: str = "this-machine") -> Target:
    """The roofs ``calibration`` measured as a Target, without efficiencies: what the kernels'
    efficiencies are measured against (:mod:`onnxroof.measure.achieved`). The same figures as
    the target file's (:func:`onnxroof.report.target_file.render_target`), not rounded to its
    digits; their sources are the file's business."""
    fp32 = calibration.peak("float32")
    if fp32 is None:
        raise ValueError("no fp32 matmul was measured")
    levels = calibration.levels()

    def measured(value: float) -> Figure:
        return Figure(float(value), "measured", f"onnxroof calibrate {calibration.date}")

    onchip = bool(levels.onchip_bytes and levels.onchip_bytes_per_s and levels.onchip_sizes)
    peaks = {"fp32": measured(fp32.rate.per_second)}
    int8 = calibration.peak("int8")
    if int8 is not None:
        peaks["int8"] = measured(int8.rate.per_second)
    return Target(
        name=name,
        description=f"{calibration.cpu}, {calibration.cores}: roofs measured by onnxroof calibrate",
        path="",
        peak_ops_per_s=peaks,
        dram_bytes_per_s=measured(calibration.dram_bytes_per_s()),
        onchip_bytes=measured(levels.onchip_bytes) if onchip and levels.onchip_bytes else None,
        onchip_bytes_per_s=measured(levels.onchip_bytes_per_s) if onchip and levels.onchip_bytes_per_s else None,
        node_overhead_s=measured(calibration.launch_overhead_s) if calibration.launch_overhead_s else None,
        split_overhead_s=measured(calibration.handoff_s) if calibration.handoff_s else None,
        cold_node_overhead_s=measured(calibration.cold_launch_s) if calibration.cold_launch_s else None,
        run_overhead_s=measured(calibration.run_overhead_s) if calibration.run_overhead_s else None,
        dram_stall=measured(calibration.dram_stall) if calibration.dram_stall else None,
        subnormal_s_per_element=measured(calibration.subnormal_s) if calibration.subnormal_s else None,
        weights_resident=bool(levels.onchip_bytes),
    )
