"""Per output-row count, the fraction of the roofline onnxruntime's GEMM kernels reach on this
machine (``efficiency.gemm.by_rows``, ``efficiency.gemm.int8.by_rows``; ``Target.efficiency_of``):
the ``gemm`` figure is measured on products of 128 rows and more, but a matmul of 32 rows (a
transformer block over 32 tokens) or a convolution over 7 x 7 pixels (ResNet's last stage) runs
at a fraction of what they reach.

Why rows: a CPU GEMM kernel computes its output in strips of a few rows against a panel of the
packed weights (onnxruntime's AVX-512 SGEMM: up to 12 rows by 32 columns, each strip streaming
the whole panel; microsoft/onnxruntime onnxruntime/core/mlas/lib/x86_64/FgemmKernelAvx512FCommon.h),
so a product of few rows spends more of its time on the strips' fixed work (the panel's loads, the
accumulators' set-up and stores) and on its remainder strips of 1 to 6 rows. On the machine this
was written on (one core, three calibrations on 2026-12-02), float32 MatMuls over a 256 x 256
weight reached 0.38-0.42 of the roofline at 8 rows, 0.55-0.60 at 16, 0.67-0.79 at 32, 0.81-0.9 at
64 and 0.9-1.0 from 128; the rows, not the multiply-adds, set it (a 16 x 256 by 256 x 256 product
and a 64 x 128 by 128 x 128 one do the same work at 0.60 and 0.92). onnxruntime's int8
convolutions fall the same way below about 200 output pixels (0.19-0.30 of the int8 roof over
7 x 7 pixels, 0.34-0.42 from 196 to 3,136).

Each size of :data:`ROWS_CASES` is measured as a class's size is (:mod:`onnxroof.measure.achieved`):
the slope between a chain of one and a chain of ``CHAIN`` links, without the profiler, against
onnxroof's roofline slope of the same chain on the roofs just measured, beyond the launch cost. A
curve's points are those sizes and the class's own sizes that run the same kernels
(:data:`CURVE_OPS`), each at its output rows; per row count, the geometric mean of its sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..roofline.targets import SPLIT_MACS
from . import achieved

if TYPE_CHECKING:
    from ..roofline.targets import Target

Spec = tuple[str, str, tuple[int, ...], dict]  # (label, op, input shape, attributes), as achieved.CASES
# curve ("<class>" or "<class>.<roof>") -> the sizes of fewer rows than the class's own
ROWS_CASES: dict[str, tuple[Spec, ...]] = {
    # the class's first size (128 x 256 by 256 x 256) with 8 to 64 rows: 8 is the fewest a gemm has
    # (fewer than 8 multiply-adds per weight element is a gemv)
    "gemm": (
        ("MatMul 8x256 by 256x256", "MatMul", (8, 256), {}),
        ("MatMul 16x256 by 256x256", "MatMul", (16, 256), {}),
        ("MatMul 32x256 by 256x256", "MatMul", (32, 256), {}),
        ("MatMul 64x256 by 256x256", "MatMul", (64, 256), {}),
    ),
    # ResNet-50's last stage in QDQ int8: 7 x 7 output pixels, a 3x3 and a 1x1 convolution
    "gemm.int8": (
        ("QDQ Conv 3x3, 512 channels, 7x7", "Conv", (1, 512, 7, 7), {"pads": [1, 1, 1, 1]}),
        ("QDQ Conv 1x1, 512 channels, 7x7", "Conv", (1, 512, 7, 7), {"kernel": 1}),
    ),
}
# which of the class's own sizes join a curve: every gemm size; of the int8 ones the convolutions.
# The int8 MatMul runs another kernel (MLAS's integer GEMM on the CPU's matrix units, 0.6 of the
# int8 roof at 128 rows where the convolutions reach 0.4): on one curve the two would zig-zag, so
# the int8 curve follows the convolutions, the int8 kernels of a quantized CNN
CURVE_OPS: dict[str, tuple[str, ...]] = {"gemm": ("MatMul", "Conv"), "gemm.int8": ("Conv",)}


def builder_of(curve: str) -> Callable:
    """The chain a curve's sizes are measured on: a roof's quantized chain, else a float one."""
    return achieved.qdq_chain_model if "." in curve else achieved.chain_model


def own_sizes(curve: str) -> tuple[Spec, ...]:
    """The class's own sizes (``achieved.CASES``, ``achieved.ROOF_CASES``) for ``curve``."""
    kernel_class, _, roof = curve.partition(".")
    return achieved.ROOF_CASES.get(kernel_class, {}).get(roof, ()) if roof else achieved.CASES.get(kernel_class, ())


def case_rows(
    op: str, shape: tuple[int, ...], attributes: dict, builder: Callable = achieved.chain_model
) -> int | None:
    """The output rows of one link of a chain, as the placement reads them (its product's work
    shape: a matmul's rows, a convolution's output pixels); None without a work shape.

    >>> case_rows("MatMul", (32, 256), {}), case_rows("Conv", (1, 64, 28, 28), {"pads": [1, 1, 1, 1]})
    (32, 784)
    >>> case_rows("Conv", (1, 512, 7, 7), {"kernel": 1}, achieved.qdq_chain_model)
    49
    """
    from ..pipeline import analyze
    from ..roofline.kernels import work_shape

    shape_of = work_shape([r for r in analyze(builder(op, shape, attributes, 1)).nodes if r.macs])
    return shape_of.rows if shape_of else None


def rows_points(cases: list[achieved.Case]) -> tuple[tuple[int, float], ...]:
    """The ``by_rows`` points of a curve's cases: per output-row count, the geometric mean of its
    cases' fractions, rows increasing.

    >>> rows_points([achieved.Case("a", 1, 1, 0.4, rows=16), achieved.Case("b", 1, 1, 0.9, rows=128),
    ...              achieved.Case("c", 1, 1, 0.9, rows=16), achieved.Case("d", 1, 1, 0.5)])
    ((16, 0.6), (128, 0.9))
    """
    by_rows: dict[int, list[float]] = {}
    for case in cases:
        if case.rows:
            by_rows.setdefault(case.rows, []).append(case.fraction)
    return tuple((rows, round(achieved.class_efficiency(fractions), 4)) for rows, fractions in sorted(by_rows.items()))


def measure_rows_efficiency(
    target: Target,
    launch_s: float,
    budget_s: float,
    measured: dict[str, list[achieved.Case]],
    threads: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, list[achieved.Case]]:
    """Per curve of :data:`ROWS_CASES` whose class (and roof) ``target`` has and ``measured`` holds
    (curve -> the class's sizes just measured, in the order of their specs), the curve's cases:
    those of the class's sizes that join it (:data:`CURVE_OPS`) at their rows, and each size of
    ``ROWS_CASES`` measured against ``target``'s roofline as the class's sizes are; {} without
    onnxruntime."""
    if not achieved.onnxruntime_available():
        return {}
    say = progress or (lambda text: None)
    split_s = target.split_overhead_s.value if target.split_overhead_s else 0.0
    wanted = [
        curve
        for curve in ROWS_CASES
        if curve in measured and (("." not in curve) or curve.partition(".")[2] in target.peak_ops_per_s)
    ]
    per_case = budget_s / max(1, sum(len(ROWS_CASES[curve]) for curve in wanted))
    found: dict[str, list[achieved.Case]] = {}
    for curve in wanted:
        builder, quantized = builder_of(curve), "." in curve
        for (_, op, shape, attributes), case in zip(own_sizes(curve), measured[curve]):
            if op in CURVE_OPS[curve]:
                found.setdefault(curve, []).append(_at_rows(case, case_rows(op, shape, attributes, builder)))
        for label, op, shape, attributes in ROWS_CASES[curve]:
            slope = achieved.chain_slope_s(op, shape, attributes, threads, per_case, builder=builder)
            roof = achieved.roof_slope_s(
                op,
                shape,
                attributes,
                target,
                builder=builder,
                fusion="all" if quantized else "none",
                dtype=curve.partition(".")[2] or "model",
            )
            fixed = launch_s + (split_s if achieved.case_macs(op, shape, attributes, builder) >= SPLIT_MACS else 0.0)
            case = achieved.Case(
                label,
                slope,
                roof,
                achieved.efficiency(roof, slope, fixed),
                rows=case_rows(op, shape, attributes, builder),
            )
            found.setdefault(curve, []).append(case)
            say(
                f"{curve.replace('.', ' ') + ' rows':13} {label:44} {slope * 1e6:9.2f} µs, "
                f"roofline {roof * 1e6:8.2f} µs: "
                f"{case.fraction:.0%}"
            )
    return found


def _at_rows(case: achieved.Case, rows: int | None) -> achieved.Case:
    from dataclasses import replace

    return replace(case, rows=rows)
