"""What a kernel's work is, for its efficiency: its class (``targets.EFFICIENCY_CLASSES``: gemm,
gemv, depthwise, reduction, elementwise, ...), its reuse, and the GEMM shape of its convolution or
matmul (cost-model.md section 5). Read by the placement of each kernel."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ops import OpTrait, traits_of
from .node_kinds import CONV_OPS, MAC_FAMILIES, node_kind
from .targets import LOW_REUSE_MACS_PER_OUTPUT, LOW_REUSE_MACS_PER_WEIGHT

if TYPE_CHECKING:
    from ..cost.records import NodeRecord


def efficiency_class(records: Iterable[NodeRecord]) -> str | None:
    """The kernel class (``targets.EFFICIENCY_CLASSES``) of a kernel of these nodes: the class of
    its heaviest kind of work. A kernel with a convolution or matmul is ``gemm``; ``gemv`` when
    that node does fewer than 8 multiply-adds per weight element (it streams its weights), or
    ``depthwise`` when it does fewer than 32 per output element (it reuses too little of what it
    loads to run at the GEMM rate); else ``reduction`` if it reduces (normalizations,
    softmax, pooling), ``elementwise`` if it maps elements, ``transpose`` if it permutes axes,
    ``data_movement`` if it copies contiguous runs; None
    for work of no class (control flow, shape arithmetic, views only). A folded constant is
    classed by what it computes: it is in a kernel only when a runtime launched it, computing it
    on every run (onnxruntime's DequantizeLinear of a QDQ weight it does not fuse: an elementwise
    kernel, at DequantizeLinear's pace where the target gives one).

    >>> from onnxroof import analyze
    >>> from onnxroof.core.examples import build_example
    >>> from onnxroof.roofline.kernels import fuse
    >>> graph = analyze(build_example("shallownet")).cost_graph
    >>> [(k.op_type, efficiency_class(k.records)) for k in fuse(graph, ("epilogue",))]
    [('Conv+Relu', 'depthwise'), ('Gemm', 'gemv'), ('Softmax', 'reduction')]
    """
    records = [r for r in records if not r.view]
    kinds = {node_kind(r, ran=True) for r in records}
    reuse = reuse_of(records)
    if reuse is not None:
        return reuse_class(*reuse)
    if "reduction" in kinds or "softmax" in kinds or any(r.family == "pooling" for r in records):
        return "reduction"
    if "elementwise" in kinds:
        return "elementwise"
    moves = [r for r in records if r.family == "tensor" and not r.shape_only]
    if moves:
        strided = any(OpTrait.STRIDED_COPY in traits_of(r.domain, r.op_type) for r in moves)
        return "transpose" if strided else "data_movement"
    return None


def reuse_of(records: Iterable[NodeRecord]) -> tuple[int, int, int] | None:
    """(MACs, weight elements, output elements) of the kernel's first matmul, convolution or
    attention node: what :func:`reuse_class` decides by; None for a kernel without one."""
    # MACs first: most nodes have none, and _kind reads the op's traits (a 100,000-node kernel is scanned whole)
    anchor = next((r for r in records if r.macs and not r.view and node_kind(r) in ("mac", "attention")), None)
    if anchor is None:
        return None
    shape = anchor.output_shapes[0] if anchor.output_shapes else None
    outputs = math.prod(shape) if shape and all(isinstance(d, int) for d in shape) else 0
    return anchor.macs, anchor.params, outputs


@dataclass(frozen=True)
class WorkShape:
    """The GEMM a convolution or matmul is: ``batch`` independent products of ``rows`` x
    ``cols`` outputs, each a dot product of ``depth`` multiply-adds (a convolution: output pixels
    x output channels, depth Cin x kh x kw)."""

    batch: int
    rows: int
    cols: int
    depth: int


# where a matmul's second matrix is among its inputs (QLinearMatMul: a, a_scale, a_zero_point, b, ...;
# MatMulNBits' packed B is slot 1, as for MatMul)
_SECOND_OPERAND = {"QLinearMatMul": 3}


def work_shape(records: Iterable[NodeRecord]) -> WorkShape | None:
    """The work shape of the kernel's first convolution or matmul, read from its output shape
    and MACs; None for a kernel without one, an unknown shape, or a grouped convolution (its
    small per-group products run off the matrix units on most runtimes: not modelled).

    >>> from types import SimpleNamespace as S
    >>> conv = S(view=False, op_type="Conv", family="conv", macs=1 * 64 * 56 * 56 * 32 * 9,
    ...          output_shapes=[[1, 64, 56, 56]], input_shapes=[[1, 32, 58, 58], [64, 32, 3, 3]])
    >>> work_shape([conv])
    WorkShape(batch=1, rows=3136, cols=64, depth=288)
    >>> matmul = S(view=False, op_type="MatMul", family="matmul", macs=12 * 128 * 128 * 64, inputs=["q", "k"],
    ...            param_inputs=[], output_shapes=[[1, 12, 128, 128]],
    ...            input_shapes=[[1, 12, 128, 64], [1, 12, 64, 128]])
    >>> work_shape([matmul])
    WorkShape(batch=12, rows=128, cols=128, depth=64)
    >>> linear = S(view=False, op_type="MatMul", family="matmul", macs=1024 * 5120 * 13824, inputs=["x", "w"],
    ...            param_inputs=["w"], output_shapes=[[1024, 1, 13824]], input_shapes=[[1024, 1, 5120], [5120, 13824]])
    >>> work_shape([linear])  # a decode step's MLP at batch 1,024: one 1,024-row GEMM, not 1,024 one-row ones
    WorkShape(batch=1, rows=1024, cols=13824, depth=5120)
    """
    anchors = [r for r in records if not r.view and r.macs and r.family in MAC_FAMILIES]
    shape = _work_shape_of(anchors[0]) if anchors else None
    if shape is None:
        return None
    # sibling products merged into one GEMM (the horizontal rules): their columns side by side
    for sibling in anchors[1:]:
        other = _work_shape_of(sibling) if sibling.inputs[:1] == anchors[0].inputs[:1] else None
        if other is not None and (other.batch, other.rows, other.depth) == (shape.batch, shape.rows, shape.depth):
            shape = WorkShape(shape.batch, shape.rows, shape.cols + other.cols, shape.depth)
    return shape


def _work_shape_of(anchor: NodeRecord) -> WorkShape | None:
    """One convolution's or matmul's work shape (see :func:`work_shape`)."""
    shape = anchor.output_shapes[0] if anchor.output_shapes else None
    if not shape or len(shape) < 2 or not all(isinstance(d, int) and d > 0 for d in shape):
        return None
    if anchor.op_type in CONV_OPS:
        data = anchor.input_shapes[0] if anchor.input_shapes else None
        weight = next((s for s in anchor.input_shapes[1:] if s and len(s) == len(shape) and s[0] == shape[1]), None)
        if not data or weight is None or data[1] != weight[1]:
            return None  # grouped (depthwise) or unreadable
        batch, rows, cols = 1, math.prod(shape) // shape[1], shape[1]
    elif anchor.family == "conv":
        return None  # ConvTranspose and other convolutions: not modelled
    else:
        slot = _SECOND_OPERAND.get(anchor.op_type, 1)
        second = anchor.input_shapes[slot] if len(anchor.input_shapes) > slot else None
        stored = len(anchor.inputs) > slot and anchor.inputs[slot] in anchor.param_inputs
        if stored or (second is not None and len(second) >= 2 and math.prod(second[:-2]) == 1):
            # one matrix for every leading index (a Linear layer over [batch, seq, features], a
            # stored weight however it is packed): runtimes fold the leading dims into one GEMM
            batch, rows, cols = 1, math.prod(shape[:-1]), shape[-1]
        else:
            batch, rows, cols = math.prod(shape[:-2]), shape[-2], shape[-1]
    depth, rest = divmod(anchor.macs, batch * rows * cols)
    return WorkShape(batch, rows, cols, depth) if depth and not rest else None


def efficiency_columns(
    records: Iterable[NodeRecord], shape: WorkShape | None = None, kernel_class: str | None = None
) -> int | None:
    """The output columns a kernel's ``by_columns`` efficiency curve is read at
    (``Target.efficiency_of``): its work shape's (``shape``, else :func:`work_shape`: a matmul's N,
    a convolution's output channels), or for a grouped convolution, which has none, its output
    channels: a CPU runs a depthwise convolution with the channels across its vector lanes
    (onnxruntime's NCHWc float kernels take blocks of 8 or 16 channels and leave fewer to a
    generic path; its channels-last integer kernel, microsoft/onnxruntime
    onnxruntime/core/providers/cpu/quantization/qlinearconv.cc, MlasConvDepthwise, loops over the
    channels at each output pixel), so 3 channels fill a fraction of what 32 do. None without
    a convolution or matmul, with an unknown output shape, or for a ``depthwise``-class kernel
    that is no grouped convolution: that class's curve is measured on depthwise kernels, and a
    dense convolution of few input channels (ShallowNet's 3-channel 3x3: 27 multiply-adds per
    output) runs the runtime's GEMM kernel, at the class's figure.

    >>> from types import SimpleNamespace as S
    >>> depthwise = S(view=False, op_type="Conv", family="conv", macs=3 * 32 * 32 * 9,
    ...               output_shapes=[[1, 3, 32, 32]], input_shapes=[[1, 3, 32, 32], [3, 1, 3, 3]])
    >>> efficiency_columns([depthwise])  # no work shape (grouped): its 3 channels
    3
    >>> pointwise = S(view=False, op_type="Conv", family="conv", macs=32 * 32 * 32 * 3,
    ...               output_shapes=[[1, 32, 32, 32]], input_shapes=[[1, 3, 32, 32], [32, 3, 1, 1]])
    >>> efficiency_columns([pointwise]), efficiency_columns([pointwise], kernel_class="depthwise")
    (32, None)
    """
    records = [r for r in records if not r.view]
    shape = shape or work_shape(records)
    if shape is not None:
        return None if kernel_class == "depthwise" else shape.cols
    conv = next((r for r in records if r.macs and r.op_type in CONV_OPS), None)
    output = conv.output_shapes[0] if conv is not None and conv.output_shapes else None
    return output[1] if output and len(output) > 2 and isinstance(output[1], int) and output[1] > 0 else None


REUSE_CLASSES = ("gemv", "depthwise", "gemm")  # what reuse_class decides between


def reuse_class(macs: int, weights: int, outputs: int) -> str:
    """``gemv`` under 8 MACs per weight element, else ``depthwise`` under 32 per output element,
    else ``gemm``.

    >>> reuse_class(1_024, 256, 64), reuse_class(1_024, 16, 64), reuse_class(4_096, 256, 64)
    ('gemv', 'depthwise', 'gemm')
    """
    if weights and macs < LOW_REUSE_MACS_PER_WEIGHT * weights:
        return "gemv"
    return "depthwise" if outputs and macs < LOW_REUSE_MACS_PER_OUTPUT * outputs else "gemm"
