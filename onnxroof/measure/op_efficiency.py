"""Per op type, the fraction of the roofline onnxruntime's CPU kernels reach on this machine
(``efficiency.<class>.by_op``, ``targets.Target.op_efficiency``): a class's figure is measured on
one kind of op (``elementwise`` on Adds), but a kernel that evaluates a function per element
(erf, tanh, a power), converts (QuantizeLinear, DequantizeLinear) or is one of onnxruntime's
contrib kernels that the transformer optimizer writes (BiasGelu, FastGelu, SkipLayerNormalization)
runs at a fraction of what an Add reaches.

Each op of :data:`OP_CASES` is measured as a class's size is (:mod:`onnxroof.measure.achieved`):
the slope between a chain of one and a chain of ``CHAIN`` links, without the profiler, against
onnxroof's roofline slope of the same chain on the roofs just measured, beyond the launch cost
of each kernel of a link.
Every chain runs on :data:`OP_SHAPE` (64 Ki floats, 256 KiB: on chip on any CPU with a cache of a
MiB or more), so the figure is the fraction of the on-chip roofline the op reaches, which is
what a ``by_op`` figure divides (the DRAM roof keeps the class's figure: the core keeps up with
data streamed from DRAM). A QuantizeLinear and a DequantizeLinear are measured as a pair (the
link of the chain quantizes to int8 and dequantizes back) and both get the pair's figure.

An op's figure is written only where it differs from its class's by more than
:data:`MATERIAL_DIFFERENCE` (:func:`by_op_figures`): the class's figure already holds for the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import achieved
from .float_models import float_model

if TYPE_CHECKING:
    from ..roofline.targets import Target

OP_SHAPE = (256, 256)  # 256 rows of 256: a normalization's rows, a bias of 256
MATERIAL_DIFFERENCE = 0.10  # an op's figure within 10 % of its class's is not written


@dataclass(frozen=True)
class OpCase:
    """One op measured for a class's ``by_op`` table: the chain's link and the ops the figure is for."""

    label: str
    kernel_class: str  # targets.EFFICIENCY_CLASSES: the class onnxroof gives the op's kernel
    link: str  # the link of the chain (:func:`op_chain_model`)
    ops: tuple[str, ...]  # the op types the figure is written for
    near_one: bool = False  # an input near 1: the chain stays finite and off the denormals


# The elementwise ops whose onnxruntime kernels differ from an Add's, and the contrib kernels
# onnxruntime's transformer optimizer writes (BERT's BiasGelu, 10x its Add-based prediction, and
# SkipLayerNormalization, 6x its reduction-class prediction, in docs/validation-measured.md).
# Pow is measured with exponent 2, the one a decomposed LayerNorm's variance takes (onnxruntime
# squares for it; another exponent goes through std::pow, several times slower).
OP_CASES: tuple[OpCase, ...] = (
    OpCase("Erf", "elementwise", "Erf", ("Erf",)),
    OpCase("Tanh", "elementwise", "Tanh", ("Tanh",)),
    OpCase("Exp", "elementwise", "Exp", ("Exp",)),
    OpCase("Sigmoid", "elementwise", "Sigmoid", ("Sigmoid",)),
    OpCase("Sqrt", "elementwise", "Sqrt", ("Sqrt",), near_one=True),
    OpCase("Div by a tensor", "elementwise", "Div", ("Div",), near_one=True),
    OpCase("Pow by 2", "elementwise", "Pow", ("Pow",), near_one=True),
    OpCase("QuantizeLinear + DequantizeLinear, int8", "elementwise", "QDQ", ("QuantizeLinear", "DequantizeLinear")),
    OpCase("Gelu (exact)", "elementwise", "Gelu", ("Gelu",)),
    OpCase("BiasGelu (com.microsoft)", "elementwise", "BiasGelu", ("BiasGelu",)),
    OpCase("FastGelu (com.microsoft)", "elementwise", "FastGelu", ("FastGelu",)),
    OpCase("SkipLayerNormalization over 256", "reduction", "SkipLayerNormalization", ("SkipLayerNormalization",)),
)
_CONTRIB = frozenset({"BiasGelu", "FastGelu", "SkipLayerNormalization"})
# onnxruntime's own layout kernels (com.microsoft.nchwc), which no ONNX model holds: the NCHWc
# convolutions' ReorderInput and ReorderOutput, added around every op that cannot run in the
# blocked layout (80 of MobileNetV3's 230 kernels). They are strided copies, of the transpose
# class, but MLAS's reorder runs near the on-chip roof where onnxruntime's Transpose reaches a
# fifth of it; measured as a pair on OP_SHAPE's floats, 64 channels (whole blocks of 8 or 16).
REORDER_CASE = OpCase(
    "ReorderInput + ReorderOutput, 64 channels of 32x32 (onnxruntime's NCHWc layout)",
    "transpose",
    "Reorder",
    ("ReorderInput", "ReorderOutput"),
)
REORDER_SHAPE = (1, 64, 32, 32)


@dataclass(frozen=True)
class OpMeasurement:
    """What one op's chain took, what the roofline says, and the fraction."""

    case: OpCase
    measured_s: float  # one link (the slope)
    roof_s: float  # one link on the measured roofs
    fraction: float


def op_chain_model(link: str, shape: tuple[int, ...], attributes: dict, length: int):
    """``length`` links of ``link`` in a chain on a float32 input ``x`` of ``shape``: a unary op on
    the previous output; ``Div`` and ``Pow`` by ``x`` and by 2; ``QDQ`` a QuantizeLinear to int8
    and a DequantizeLinear back (scale 0.05, zero point 0); ``BiasGelu`` and ``FastGelu`` with a
    bias of the last dim; ``SkipLayerNormalization`` with ``x`` as the skip, gamma 1 and beta 0.
    (``attributes``: unused, the signature of :func:`achieved.chain_model`.)"""
    from onnx import helper, numpy_helper

    width = shape[-1]
    initializers = {
        "Pow": [numpy_helper.from_array(np.array(2.0, np.float32), "two")],
        "QDQ": [
            numpy_helper.from_array(np.array(0.05, np.float32), "scale"),
            numpy_helper.from_array(np.array(0, np.int8), "zero"),
        ],
        "BiasGelu": [numpy_helper.from_array(np.full(width, 0.1, np.float32), "bias")],
        "FastGelu": [numpy_helper.from_array(np.full(width, 0.1, np.float32), "bias")],
        "SkipLayerNormalization": [
            numpy_helper.from_array(np.ones(width, np.float32), "gamma"),
            numpy_helper.from_array(np.zeros(width, np.float32), "beta"),
        ],
    }.get(link, [])
    extra = {
        "Div": ["x"],
        "Pow": ["two"],
        "BiasGelu": ["bias"],
        "FastGelu": ["bias"],
        "SkipLayerNormalization": ["x", "gamma", "beta"],
    }.get(link, [])
    domain = "com.microsoft" if link in _CONTRIB else ""
    nodes, previous = [], "x"
    for index in range(length):
        output = "y" if index == length - 1 else f"t{index}"
        if link == "QDQ":
            nodes += [
                helper.make_node(
                    "QuantizeLinear", [previous, "scale", "zero"], [f"q{index}"], name=f"quantize_{index}"
                ),
                helper.make_node(
                    "DequantizeLinear", [f"q{index}", "scale", "zero"], [output], name=f"dequantize_{index}"
                ),
            ]
        else:
            nodes.append(
                helper.make_node(link, [previous, *extra], [output], name=f"{link.lower()}_{index}", domain=domain)
            )
        previous = output
    # opset 20 for Gelu (an ai.onnx op from 20 on), 17 for the rest: what older onnxruntimes run
    opsets = [("", 20 if link == "Gelu" else 17), ("com.microsoft", 1)]
    return float_model(
        nodes, f"{link.lower()}-chain", shape, shape, initializers, opsets=opsets, ir_version=9 if link == "Gelu" else 8
    )


def measure_op_efficiency(
    target: Target,
    launch_s: float,
    budget_s: float,
    threads: int | None = None,
    progress: Callable[[str], None] | None = None,
    cases: tuple[OpCase, ...] = OP_CASES,
) -> tuple[list[OpMeasurement], list[str]]:
    """Each op of ``cases`` measured against ``target``'s roofline (the roofs just measured, no
    efficiency): (the measurements, notes on the ops this onnxruntime could not run); ([], [])
    without onnxruntime."""
    if not achieved.onnxruntime_available():
        return [], []
    per_case = budget_s / max(1, len(cases))
    found: list[OpMeasurement] = []
    notes: list[str] = []
    for case in cases:

        def roof_s(case: OpCase = case) -> float:
            return achieved.roof_slope_s(case.link, OP_SHAPE, {}, target, builder=op_chain_model)

        measurement = _measured(case, OP_SHAPE, op_chain_model, roof_s, launch_s, per_case, threads, notes, progress)
        found += [measurement] if measurement else []
    return found, notes


def _measured(
    case: OpCase,
    shape: tuple[int, ...],
    builder: Callable,
    roof_s: Callable[[], float],
    launch_s: float,
    budget_s: float,
    threads: int | None,
    notes: list[str],
    progress: Callable[[str], None] | None,
) -> OpMeasurement | None:
    """``case``'s chain (``builder`` on ``shape``) timed, against its roofline (``roof_s``), each
    of the link's kernels paying the launch (a pair's link launches two); None, with a note in
    ``notes``, when onnxruntime cannot run it (a build without the contrib or the NCHWc kernels)."""
    try:
        measured = achieved.chain_slope_s(
            case.link, shape, {}, threads, budget_s, builder=builder, near_one=case.near_one
        )
    except Exception as exc:  # onnxruntime raises its own types
        notes.append(f"{case.label}: onnxruntime could not run it ({str(exc).splitlines()[0][:120]}): no by_op figure")
        return None
    roof = roof_s()
    measurement = OpMeasurement(case, measured, roof, achieved.efficiency(roof, measured, len(case.ops) * launch_s))
    if progress:
        progress(
            f"{case.kernel_class:13} {case.label:44} {measured * 1e6:9.2f} µs, roofline {roof * 1e6:8.2f} µs: "
            f"{measurement.fraction:.0%}"
        )
    return measurement


def reorder_chain_model(link: str, shape: tuple[int, ...], attributes: dict, length: int):
    """``length`` links of a ReorderInput into onnxruntime's NCHWc layout and a ReorderOutput back
    (com.microsoft.nchwc) on a float32 NCHW input ``x`` of ``shape``. (``link`` and ``attributes``:
    unused, the signature of :func:`achieved.chain_model`.)"""
    from onnx import helper

    nodes, previous = [], "x"
    for index in range(length):
        output = "y" if index == length - 1 else f"t{index}"
        nodes += [
            helper.make_node(
                "ReorderInput", [previous], [f"b{index}"], name=f"reorder_input_{index}", domain="com.microsoft.nchwc"
            ),
            helper.make_node(
                "ReorderOutput",
                [f"b{index}"],
                [output],
                name=f"reorder_output_{index}",
                domain="com.microsoft.nchwc",
                channels=shape[1],
            ),
        ]
        previous = output
    return float_model(nodes, "reorder-chain", shape, shape, opsets=[("", 17), ("com.microsoft.nchwc", 1)])


def reorder_roof_s(target: Target) -> float:
    """onnxroof's roofline seconds for one link of :func:`reorder_chain_model` on ``target``: two
    kernels, each reading and writing :data:`REORDER_SHAPE`'s floats, costed as a profiled reorder
    is (:func:`profile_run.added_kernel_roof_s`).

    >>> from onnxroof.roofline.targets import Figure, Target
    >>> f = lambda v: Figure(v, "measured", "x")
    >>> t = Target("t", "", "", {"fp32": f(1e11)}, f(1e10), onchip_bytes=f(2**21), onchip_bytes_per_s=f(1e11))
    >>> round(reorder_roof_s(t) * 1e6, 4)  # 4 x 256 KiB at 100 GB/s
    10.4858
    """
    from .profile_run import added_kernel_roof_s

    tensor_bytes = 4 * int(np.prod(REORDER_SHAPE))
    return sum(added_kernel_roof_s(op, (tensor_bytes, 0, tensor_bytes), target) for op in REORDER_CASE.ops)


def measure_reorder_efficiency(
    target: Target,
    launch_s: float,
    budget_s: float,
    threads: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[OpMeasurement | None, list[str]]:
    """:data:`REORDER_CASE` measured against ``target``'s roofline as :func:`measure_op_efficiency`
    measures an op: (the measurement, notes); (None, a note) where this
    onnxruntime has no NCHWc kernels (a CPU without the vector units MLAS blocks for); (None, [])
    without onnxruntime."""
    if not achieved.onnxruntime_available():
        return None, []
    notes: list[str] = []
    measurement = _measured(
        REORDER_CASE,
        REORDER_SHAPE,
        reorder_chain_model,
        lambda: reorder_roof_s(target),
        launch_s,
        budget_s,
        threads,
        notes,
        progress,
    )
    return measurement, notes


def by_op_figures(class_value: float, measurements: list[OpMeasurement]) -> dict[str, float]:
    """The ``by_op`` table of a class whose figure is ``class_value``: each measured op's fraction
    (rounded to 4 figures) where it differs from the class's by more than
    :data:`MATERIAL_DIFFERENCE`; the ops within it run at the class's figure.

    >>> def m(ops, fraction):
    ...     return OpMeasurement(OpCase("x", "elementwise", ops[0], ops), 1e-6, fraction * 1e-6, fraction)
    >>> by_op_figures(1.0, [m(("Erf",), 0.16), m(("Exp",), 0.95), m(("QuantizeLinear", "DequantizeLinear"), 0.31)])
    {'Erf': 0.16, 'QuantizeLinear': 0.31, 'DequantizeLinear': 0.31}
    """
    table: dict[str, float] = {}
    for measurement in measurements:
        if abs(measurement.fraction / class_value - 1) > MATERIAL_DIFFERENCE:
            table.update({op: round(measurement.fraction, 4) for op in measurement.case.ops})
    return table
