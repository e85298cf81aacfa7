"""The figures ``onnxroof calibrate`` measures of onnxruntime's CPU kernels on this machine, each
a slope over the chains of :mod:`onnxroof.measure.achieved` (issue 20):

- **Launch** (:func:`measure_launch_line`): Adds on a 16-float tensor, where the work is
  nothing; the slope is what onnxruntime spends per kernel (dispatch, bookkeeping), the
  intercept what a run costs before its first kernel.
- **Hand-off** (:func:`measure_handoff`, on two threads or more): such an Add never leaves the
  calling thread, but a kernel the intra-op pool splits waits for the other threads to take
  their share and finish; small MatMuls and a small Conv, each on one thread and on all, give
  that cost beyond the launch and the split work (:func:`handoff_seconds`).
- **Copy bandwidth** (:func:`measure_copy_bandwidth`): Muls by a scalar on a tensor far larger
  than the last-level cache: each reads and writes the tensor once, 2 x 4 B per element.
- **Efficiency** (:func:`measure_efficiency`): for each class, ops of the sizes in
  :data:`CASES` (chosen like the kernels of the models in ``docs/validation-measured.md``).
  Efficiency = the roofline time onnxroof predicts for one op of the chain on the measured roofs
  (``fusion none``, no launch cost) / (the measured slope - the launch cost); a class's figure is
  the geometric mean over its sizes, capped at 1.0 (a kernel faster than the roofline means the
  roofs were measured low, not that it beats them). The ops whose kernels reach a different
  fraction than their class's sizes (erf, a quantization, onnxruntime's BiasGelu) are measured
  the same way, one chain per op, in :mod:`onnxroof.measure.op_efficiency`; the gemm sizes of
  fewer rows, whose kernels reach less than the class's sizes, in
  :mod:`onnxroof.measure.rows_efficiency`.

"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..roofline.targets import SPLIT_MACS

# the slopes through the module (achieved.chain_slope_s): what the tests stand in for
from . import achieved
from .achieved import (
    CASES,
    COLUMNS_CLASSES,
    COPY_ELEMENTS,
    GEMV_CASES,
    HANDOFF_CASES,
    LAUNCH_CHAIN,
    ROOF_CASES,
    SIZES_IN_ORDER,
    Case,
    case_columns,
    case_macs,
    efficiency,
    gemv_fits,
    per_kernel_seconds,
    roof_builder,
    sizes,
)

if TYPE_CHECKING:
    from ..roofline.targets import Target


def measure_launch_line(budget_s: float, threads: int | None = None) -> tuple[float, float | None] | None:
    """onnxruntime's fixed costs, from chains of 1 and :data:`LAUNCH_CHAIN` Adds on 16 floats:
    the slope, seconds per kernel beyond its work (the launch), and the intercept, what a run costs
    beyond its kernels (binding the inputs and outputs, the call from Python into onnxruntime: the
    one-Add run less one launch; None when it is not above 0); None without onnxruntime.

    On the machine this was written on: 0.25-0.36 µs a kernel, 3.6-5.2 µs a run."""
    if not achieved.onnxruntime_available():
        return None
    one_s, many_s = achieved.chain_times_s("Add", (16,), {}, threads, budget_s, length=LAUNCH_CHAIN)
    launch_s = per_kernel_seconds(one_s, many_s, LAUNCH_CHAIN)
    return launch_s, (one_s - launch_s if one_s > launch_s else None)


def handoff_seconds(one_s: float, many_s: float, launch_s: float, threads: int) -> float:
    """What a kernel that the intra-op pool splits over ``threads`` costs beyond the launch and
    its share of the work: its time on ``threads`` threads (``many_s``) less the launch and less
    its work on one thread (``one_s`` less the launch) over ``threads``; at least 0.

    >>> round(handoff_seconds(one_s=12.36e-6, many_s=8.56e-6, launch_s=0.36e-6, threads=2) * 1e6, 6)
    2.2
    """
    return max(0.0, many_s - launch_s - (one_s - launch_s) / threads)


def measure_handoff(
    launch_s: float, threads: int, budget_s: float
) -> tuple[float, list[tuple[str, float, float]]] | None:
    """The hand-off cost of a kernel onnxruntime's intra-op thread pool splits over ``threads``
    (> 1) threads: the median over :data:`HANDOFF_CASES` of :func:`handoff_seconds` from each op's
    chain slope on one thread and on ``threads``; with it, (label, one-thread slope, slope) per
    case. A 16-float Add, the launch measurement, is never split: it cannot see this cost. None
    without onnxruntime."""
    if not achieved.onnxruntime_available():
        return None
    per_slope = budget_s / (2 * len(HANDOFF_CASES))
    found = [
        (
            label,
            achieved.chain_slope_s(op, shape, attributes, 1, per_slope),
            achieved.chain_slope_s(op, shape, attributes, threads, per_slope),
        )
        for label, op, shape, attributes in HANDOFF_CASES
    ]
    costs = sorted(handoff_seconds(one, many, launch_s, threads) for _, one, many in found)
    return costs[len(costs) // 2], found


def measure_copy_bandwidth(budget_s: float, threads: int | None = None) -> float | None:
    """Bytes per second onnxruntime's elementwise kernel streams from DRAM: a Mul by a scalar over
    :data:`COPY_ELEMENTS` floats reads and writes each once (8 B per element); None without
    onnxruntime."""
    if not achieved.onnxruntime_available():
        return None
    return 2 * 4 * COPY_ELEMENTS / achieved.chain_slope_s("Mul", (COPY_ELEMENTS,), {}, threads, budget_s, length=5)


def measure_efficiency(
    target: Target,
    launch_s: float,
    budget_s: float,
    threads: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[Case]]:
    """Per kernel class, each size of :data:`CASES` measured against ``target``'s roofline (the
    roofs just measured, no efficiency); {} without onnxruntime."""
    if not achieved.onnxruntime_available():
        return {}
    say = progress or (lambda text: None)
    split_s = target.split_overhead_s.value if target.split_overhead_s else 0.0
    per_case = budget_s / (sum(len(sizes(c, "fp32")) for c in CASES) + len(GEMV_CASES))
    found: dict[str, list[Case]] = {}
    for kernel_class in SIZES_IN_ORDER:
        if kernel_class == "gemv":
            for label, rows, depth, columns in GEMV_CASES:
                cached = gemv_fits(rows, depth, columns, target)
                measured = achieved.gemv_slope_s(rows, depth, columns, threads, per_case, cached)
                roof = achieved.gemv_roof_s(rows, depth, columns, target)
                fixed = launch_s + (split_s if rows * depth * columns >= SPLIT_MACS else 0.0)
                case = Case(label, measured, roof, efficiency(roof, measured, fixed), columns, cached)
                found.setdefault(kernel_class, []).append(case)
                say(
                    f"{kernel_class:13} {label + (' (cached)' if cached else ' (DRAM)'):44} {measured * 1e6:9.2f} µs, "
                    f"roofline {roof * 1e6:8.2f} µs: {case.fraction:.0%}"
                )
            continue
        for index, (label, op, shape, attributes) in enumerate(sizes(kernel_class, "fp32")):
            measured = achieved.chain_slope_s(op, shape, attributes, threads, per_case)
            roof = achieved.roof_slope_s(op, shape, attributes, target)
            fixed = launch_s + (split_s if case_macs(op, shape, attributes) >= SPLIT_MACS else 0.0)
            by_columns = case_columns(op, shape, attributes) if kernel_class in COLUMNS_CLASSES else None
            case = Case(
                label,
                measured,
                roof,
                efficiency(roof, measured, fixed),
                by_columns,
                curve_only=index >= len(CASES[kernel_class]),
            )
            found.setdefault(kernel_class, []).append(case)
            say(
                f"{kernel_class:13} {label:44} {measured * 1e6:9.2f} µs, "
                f"roofline {roof * 1e6:8.2f} µs: {case.fraction:.0%}"
            )
    return found


def measure_roof_efficiency(
    target: Target,
    launch_s: float,
    budget_s: float,
    threads: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, list[Case]]]:
    """Per class and roof of :data:`ROOF_CASES` that ``target`` has, each size measured against its
    roofline as :func:`measure_efficiency` does, the quantized chain's links each one kernel
    (a convolution or matmul with the quantize and dequantize after it, as onnxruntime fuses
    them); {} without onnxruntime."""
    if not achieved.onnxruntime_available():
        return {}
    say = progress or (lambda text: None)
    split_s = target.split_overhead_s.value if target.split_overhead_s else 0.0
    wanted = [
        (kernel_class, roof, sizes(kernel_class, roof))
        for kernel_class, by_roof in ROOF_CASES.items()
        for roof in by_roof
        if roof in target.peak_ops_per_s
    ]
    per_case = budget_s / max(1, sum(len(cases) for _, _, cases in wanted))
    found: dict[str, dict[str, list[Case]]] = {}
    for kernel_class, roof, cases in wanted:
        for index, (label, op, shape, attributes) in enumerate(cases):
            builder = roof_builder(kernel_class)
            measured = achieved.chain_slope_s(op, shape, attributes, threads, per_case, builder=builder)
            roofline = achieved.roof_slope_s(op, shape, attributes, target, builder=builder, fusion="all", dtype=roof)
            fixed = launch_s + (split_s if case_macs(op, shape, attributes, builder) >= SPLIT_MACS else 0.0)
            columns = case_columns(op, shape, attributes, builder) if kernel_class in COLUMNS_CLASSES else None
            case = Case(
                label,
                measured,
                roofline,
                efficiency(roofline, measured, fixed),
                columns,
                curve_only=index >= len(ROOF_CASES[kernel_class][roof]),
            )
            found.setdefault(kernel_class, {}).setdefault(roof, []).append(case)
            say(
                f"{kernel_class + ' ' + roof:13} {label:44} {measured * 1e6:9.2f} µs, "
                f"roofline {roofline * 1e6:8.2f} µs: "
                f"{case.fraction:.0%}"
            )
    return found
