"""Quantized ops: integer products in MACs, (de)quantization in FLOPs per element.

Counting rule:

======================================  ==========================================================
op                                      count
======================================  ==========================================================
QuantizeLinear                          4 per element: x / scale, round, + zero point, saturate
DequantizeLinear                        2 per element: (x - zero point) · scale
DynamicQuantizeLinear                   6 per element: min and max over x (2), then quantize (4)
ConvInteger, QLinearConv                MACs as Conv: N x Co x prod(out spatial) x Ci/g x
                                        prod(kernel) (weight at input 1 / input 3); QLinearConv
                                        adds 4 per output (requantize: scale, round, + zero
                                        point, saturate)
MatMulInteger, QLinearMatMul,           MACs as MatMul: prod(output) x K; QLinearMatMul adds 4
MatMulInteger16 (ms)                    per output (requantize)
QGemm (ms)                              MACs as Gemm; + 4 per output with y_scale (requantize),
                                        else + 1 (int32 to float: one multiply)
MatMulIntegerToFloat (ms)               MACs as MatMul + 1 per output (int32 to float)
DynamicQuantizeMatMul (ms)              MACs as MatMul + 6 per A element (quantize A
                                        dynamically) + 1 per output (int32 to float)
MatMulNBits, MatMulBnb4 (ms)            MACs = M x K x N (M = prod(A's leading dims)) + 2 x K x N
                                        FLOPs: each weight dequantized once per call (subtract
                                        zero point, multiply by scale)
QLinearAdd, QLinearMul, QLinearSigmoid, their definition, dequantize -> float op -> quantize:
QLinearLeakyRelu, QLinearSoftmax,       2 per input element + the float op's own rule + 4 per
QLinearAveragePool,                     output element (runtimes using 256-entry lookup tables
QLinearGlobalAveragePool (ms)           for the unary ones do less); the global pool's window
                                        work is 1 per input element (any layout)
QLinearConcat (ms)                      0: a copy (bytes counted)
QLinearWhere (ms)                       as the QLinear ops above, on X and Y: 2 per X and Y
                                        element + 1 select per output + 4 per output
GatherBlockQuantized (ms)               2 per output element (each gathered 4/8-bit value
                                        dequantized); weight bytes read: the table's gathered
                                        rows (scales and zero points in full)
======================================  ==========================================================

Integer products fold their zero points (row/column sums) and bias into the accumulate, as the
float ops fold their bias. ``(ms)``: the ``com.microsoft`` contrib domain. The node's compute
dtype is its first activation input's (uint8 for QLinearConv on uint8 data). Weights, scales and
zero points are parameters counted at their stored size: MatMulNBits' packed 4-bit weights count
half a byte per weight.

Shapes: the ``(ms)`` ops have no ONNX schema, so each rule also gives its outputs' types and shapes
(``shapes=``, stated in the shape rule's docstring): the QLinear element ops broadcast or keep X,
the pools and QLinearConv follow ONNX's window formulas (``channels_last`` too), QGemm is [M, N]
from A and B, MatMulNBits [..., N]. A cost rule that needs an output with no known shape reads it
from the shape rule (``_shapes.with_derived_outputs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import onnx
from onnx import TensorProto

from . import _shapes as shape_rules
from ._shapes import FLOAT, broadcast_of, dims, dtype, with_derived_outputs
from .base import (
    Handler,
    NodeView,
    OpCost,
    OpTrait,
    OutputType,
    ShapeHandler,
    per_element_flop_counter,
    register,
    rule_for,
    same_as_input,
    zero_cost,
)
from .conv import conv
from .matmul import gemm, matmul

MS = "com.microsoft"
QUANTIZE_FLOPS = 4  # x / scale, round, + zero point, saturate
DEQUANTIZE_FLOPS = 2  # (x - zero point) · scale
REQUANTIZE_FLOPS = 4  # int32 accumulator · combined scale, round, + zero point, saturate
TO_FLOAT_FLOPS = 1  # int32 accumulator · (scale_a · scale_b)
DYNAMIC_QUANTIZE_FLOPS = 2 + QUANTIZE_FLOPS  # running min and max, then quantize


def with_inputs(node: NodeView, slots: Sequence[int]) -> NodeView:
    """``node`` seen with only the inputs at ``slots``, in that order, so a float rule written for
    (data, weight) reads a quantized op's (x, w) wherever they sit. Attributes and outputs stay."""
    proto = onnx.NodeProto()
    proto.CopyFrom(node.node)
    del proto.input[:]
    proto.input.extend(node.node.input[s] if s < len(node.node.input) else "" for s in slots)
    inputs = tuple(node.inputs[s] if s < len(node.inputs) else None for s in slots)
    return NodeView(proto, inputs, node.outputs, node.values)


def product_counter(
    float_rule: Handler, slots: Sequence[int], per_output: int, rule: str, per_a_element: int = 0
) -> Handler:
    """A rule costing a quantized product as ``float_rule`` (conv, matmul, gemm) on the inputs at
    ``slots``, plus ``per_output`` FLOPs per output element and ``per_a_element`` per element of
    input ``slots[0]``."""

    def handler(node: NodeView) -> OpCost:
        node = with_derived_outputs(node)  # a contrib op's output may have no stored shape
        product = float_rule(with_inputs(node, slots))
        outputs = node.output_elements(0) if per_output else 0
        a_elements = node.input_elements(slots[0]) if per_a_element else 0
        flops = product.flops + per_output * outputs + per_a_element * a_elements
        formula = product.formula
        if per_a_element:
            formula += f"; {per_a_element}·{a_elements:,} A elements"
        if per_output:
            formula += f"; {per_output}·{outputs:,} outputs"
        return OpCost(macs=product.macs, flops=flops, formula=f"{formula} ({rule})")

    extras = "".join(
        f" + {n} x {what}" for n, what in ((per_a_element, "A elements"), (per_output, "output elements")) if n
    )
    inputs = ", ".join(f"input {s}" for s in slots)
    handler.__doc__ = (
        f"MACs as {float_rule.__name__} on ({inputs}); FLOPs = 2 x MACs{extras} ({rule}). "
        f"{float_rule.__name__}: {' '.join((float_rule.__doc__ or '').split())}"
    )
    return handler


def dequantize_op_quantize(float_op: str, data_slots: Sequence[int], op_text: str) -> Handler:
    """A rule for a QLinear op defined as dequantize -> ``float_op`` -> quantize: 2 FLOPs per
    element of the inputs at ``data_slots``, the float op's own rule, 4 per output element."""

    def handler(node: NodeView) -> OpCost:
        float_rule = rule_for("", float_op)
        if float_rule is None:
            raise KeyError(f"no rule for the float op {float_op}")
        node = with_derived_outputs(node)
        inner = float_rule.handler(with_inputs(node, data_slots))
        inputs = sum(node.input_elements(s) for s in data_slots)
        outputs = node.output_elements(0)
        flops = DEQUANTIZE_FLOPS * inputs + inner.flops + QUANTIZE_FLOPS * outputs
        return OpCost(
            macs=inner.macs,
            flops=flops,
            formula=f"dequantize {DEQUANTIZE_FLOPS}·{inputs:,} inputs + {float_op} [{inner.formula}] + "
            f"quantize {QUANTIZE_FLOPS}·{outputs:,} outputs = {flops:,} FLOPs",
        )

    handler.__doc__ = (
        f"FLOPs = {DEQUANTIZE_FLOPS} x input elements + {float_op}'s FLOPs + {QUANTIZE_FLOPS} x output "
        f"elements ({op_text}: dequantize, {float_op}, quantize)"
    )
    return handler


def matmul_nbits(node: NodeView) -> OpCost:
    """MACs = M x K x N (M = prod(A's leading dims), K and N the attributes); FLOPs add 2 x K x N,
    each weight dequantized once per call ((q - zero point) · scale). B is packed uint8
    [N, ceil(K / block_size), block_size·bits/8]: the K x N weights it holds, the scales and the zero
    points (one per block, packed at ``bits`` bits in a uint8 tensor) are the parameters. Inputs:
    A, B, scales, zero_points, g_idx, bias (MatMulBnb4: A, a 1-D packed B, absmax; same K, N
    attributes and count)."""
    a = node.input_shape(0)
    k, n = int(node.attr("K")), int(node.attr("N"))
    rows = prod(a[:-1])
    macs = rows * k * n
    dequantize = DEQUANTIZE_FLOPS * k * n
    bits, block = node.attr("bits", 4), node.attr("block_size", 0)
    packed = [(1, k * n)]  # B packs K x N weights into uint8 storage
    zero_points = node.inputs[3] if len(node.inputs) > 3 else None
    if zero_points is not None and zero_points.dtype == onnx.TensorProto.UINT8 and block:
        packed.append((3, n * -(-k // block)))  # uint8 zero points pack one per block at `bits` bits
    return OpCost(
        macs=macs,
        flops=dequantize,
        formula=f"M·K·N = {rows}·{k}·{n} = {macs:,} MACs; dequantize {DEQUANTIZE_FLOPS}·{k}·{n} = "
        f"{dequantize:,} FLOPs ({bits}-bit weights, block {block})",
        param_elements=tuple(packed),
    )


# --- shape rules (outputs of the com.microsoft ops, which have no ONNX schema) ----------------------


def quantize_linear_shapes(node: NodeView) -> list[OutputType | None]:
    """y: x's shape, y_zero_point's element type (uint8 without one). Inputs: x, y_scale, y_zero_point."""
    return [(dtype(node, 2, TensorProto.UINT8), dims(node, 0))]


def dequantize_linear_shapes(node: NodeView) -> list[OutputType | None]:
    """y: x's shape, x_scale's element type. Inputs: x, x_scale, x_zero_point."""
    return [(dtype(node, 1, FLOAT), dims(node, 0))]


def qlinear_conv_shapes(node: NodeView) -> list[OutputType | None]:
    """y: [N, Co, *spatial] (channels_last: [N, *spatial, Co]) as ONNX Conv (strides, pads,
    dilations, auto_pad; Co and the kernel from w, input 3); y_zero_point's type, else x's."""
    shape = shape_rules.conv_dims(node, 0, 3, channels_last=bool(node.attr("channels_last", 0)))
    return [(dtype(node, 7) or dtype(node, 0), shape)]


def matmul_shapes(output_type: int | None = None, type_slot: int = 0) -> ShapeHandler:
    """A shape rule: Y is numpy matmul's output of inputs 0 and 1, typed ``output_type`` or as input
    ``type_slot``."""

    def shapes(node: NodeView) -> list[OutputType | None]:
        return [(output_type or dtype(node, type_slot, FLOAT), shape_rules.matmul(dims(node, 0), dims(node, 1)))]

    shapes.__doc__ = f"Y: matmul(A, B)'s shape, {'int32' if output_type else f'input {type_slot} type'}"
    return shapes


def qgemm_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: [M, N], M from A (transA), N from B (input 3, transB); y_zero_point's type, else A's with
    y_scale (quantized output), else float."""
    a, b = dims(node, 0), dims(node, 3)
    m = a[1] if node.attr("transA", 0) else a[0]
    n = b[0] if node.attr("transB", 0) else b[1]
    element_type = dtype(node, 8) or (dtype(node, 0) if node.has_input(7) else FLOAT)
    return [(element_type, (m, n))]


def matmul_nbits_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: [*A's leading dims, N] (the N attribute), A's type."""
    return [(dtype(node, 0), (*dims(node, 0)[:-1], int(node.attr("N"))))]


def qlinear_average_pool_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: as ONNX AveragePool (kernel_shape, strides, pads, auto_pad, ceil_mode) on x [N, C, *spatial]
    ([N, *spatial, C] with channels_last); x's type."""
    x = dims(node, 0)
    channels_last = bool(node.attr("channels_last", 0))
    shape = shape_rules.windowed(
        node,
        x,
        node.attr("kernel_shape"),
        x[-1] if channels_last else x[1],
        channels_last=channels_last,
        ceil_mode=bool(node.attr("ceil_mode", 0)),
    )
    return [(dtype(node, 0), shape)]


def qlinear_global_average_pool_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: [N, C, 1, ..., 1] ([N, 1, ..., 1, C] with channels_last); x's type."""
    x = dims(node, 0)
    ones = (1,) * (len(x) - 2)
    shape = (x[0], *ones, x[-1]) if node.attr("channels_last", 0) else (x[0], x[1], *ones)
    return [(dtype(node, 0), shape)]


def qlinear_concat_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: the inputs (slots 2, 5, 8, ...) concatenated along ``axis``; the first tensor's type."""
    tensors = range(2, len(node.node.input), 3)
    return [(dtype(node, 2), shape_rules.concat([dims(node, s) for s in tensors], int(node.attr("axis"))))]


def gather_block_quantized_shapes(node: NodeView) -> list[OutputType | None]:
    """output: data.shape[:gather_axis] + indices.shape + data.shape[gather_axis + 1:], the last dim
    unpacked (x 8 / bits) when data is uint8 (2 4-bit values per byte); scales' type."""
    return [(dtype(node, 2, FLOAT), _gathered_dims(node))]


def _gathered_dims(node: NodeView) -> tuple:
    data, indices = dims(node, 0), dims(node, 1)
    axis = int(node.attr("gather_axis", 0))
    axis = axis + len(data) if axis < 0 else axis
    shape = (*data[:axis], *indices, *data[axis + 1 :])
    return (*shape[:-1], shape_rules.scale(shape[-1], _values_per_element(node)))


def _values_per_element(node: NodeView) -> int:
    """Quantized values per stored element: 8 / bits for uint8 storage, 1 for int4/uint4 tensors."""
    return 8 // int(node.attr("bits", 4)) if dtype(node, 0) == TensorProto.UINT8 else 1


def gather_block_quantized(node: NodeView) -> OpCost:
    """FLOPs = 2 x output elements: each gathered value dequantized ((q - zero point) · its block's
    scale). Inputs: data [..., packed], indices, scales, zero_points; attributes gather_axis,
    quantize_axis, block_size, bits. Parameters: the whole stored table counted in values (a uint8
    byte holds 8 / bits of them), the scales and the zero points (uint8 ones packed alike); weight
    bytes read: the gathered rows of the table and, in the same proportion, of its scales and zero
    points."""
    outputs = with_derived_outputs(node).output_elements(0)
    per_element = _values_per_element(node)
    flops = DEQUANTIZE_FLOPS * outputs
    table = node.input_elements(0)
    packed = [(0, table * per_element)]
    zero_points = node.inputs[3] if len(node.inputs) > 3 else None
    if zero_points is not None and zero_points.dtype == onnx.TensorProto.UINT8 and zero_points.is_known:
        packed.append((3, zero_points.numel * per_element))  # type: ignore[operator]  # is_known: numel is set
    return OpCost(
        flops=flops,
        formula=f"dequantize {DEQUANTIZE_FLOPS}·{outputs:,} gathered values = {flops:,} FLOPs "
        f"({node.attr('bits', 4)}-bit, block {node.attr('block_size', 128)})",
        param_elements=tuple(packed),
        weight_elements_read=outputs // per_element,
    )


register(
    "DynamicQuantizeLinear",
    per_element_flop_counter(
        DYNAMIC_QUANTIZE_FLOPS, "min and max over x, then x / scale, round, + zero point, saturate", on="input"
    ),
    family="quantized",
)
for _domain in ("", MS):  # the default-domain ops have ONNX schemas: ONNX sizes their outputs
    _ms = _domain == MS
    register(
        "QuantizeLinear",
        per_element_flop_counter(QUANTIZE_FLOPS, "x / scale, round, + zero point, saturate", on="input"),
        family="quantized",
        domain=_domain,
        shapes=quantize_linear_shapes if _ms else None,
        traits=OpTrait.ELEMENTWISE,
    )
    register(
        "DequantizeLinear",
        per_element_flop_counter(DEQUANTIZE_FLOPS, "(x - zero point) · scale", on="input"),
        family="quantized",
        domain=_domain,
        shapes=dequantize_linear_shapes if _ms else None,
        traits=OpTrait.ELEMENTWISE | OpTrait.DEQUANTIZE,
    )
    # x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B
    register(
        "QLinearConv",
        product_counter(conv, (0, 3), REQUANTIZE_FLOPS, "int8 conv, requantized output"),
        family="quantized",
        domain=_domain,
        shapes=qlinear_conv_shapes if _ms else None,
    )

register("ConvInteger", product_counter(conv, (0, 1), 0, "int8 conv, int32 output"), family="quantized")
register("MatMulInteger", product_counter(matmul, (0, 1), 0, "int8 matmul, int32 output"), family="quantized")
# a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
register(
    "QLinearMatMul",
    product_counter(matmul, (0, 3), REQUANTIZE_FLOPS, "int8 matmul, requantized output"),
    family="quantized",
)

# com.microsoft
register(
    "MatMulInteger16",
    product_counter(matmul, (0, 1), 0, "int16 matmul, int32 output"),
    family="quantized",
    domain=MS,
    shapes=matmul_shapes(TensorProto.INT32),
)
# A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias: Y is a_scale's float type
register(
    "MatMulIntegerToFloat",
    product_counter(matmul, (0, 1), TO_FLOAT_FLOPS, "int8 matmul, float output"),
    family="quantized",
    domain=MS,
    shapes=matmul_shapes(type_slot=2),
)
register(
    "DynamicQuantizeMatMul",
    product_counter(
        matmul,
        (0, 1),
        TO_FLOAT_FLOPS,
        "A quantized on the fly, int8 matmul, float output",
        per_a_element=DYNAMIC_QUANTIZE_FLOPS,
    ),
    family="quantized",
    domain=MS,
    shapes=matmul_shapes(type_slot=0),
)


_QGEMM_REQUANTIZED = product_counter(gemm, (0, 3), REQUANTIZE_FLOPS, "int8 gemm, requantized output")
_QGEMM_TO_FLOAT = product_counter(gemm, (0, 3), TO_FLOAT_FLOPS, "int8 gemm, float output")


def qgemm(node: NodeView) -> OpCost:
    """MACs as Gemm on (A: input 0, B: input 3); FLOPs = 2 x MACs + 4 x output elements with
    y_scale (requantized int8 output) or 1 x output elements (float output). Inputs: A, a_scale,
    a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point."""
    return (_QGEMM_REQUANTIZED if node.has_input(7) else _QGEMM_TO_FLOAT)(node)


def qlinear_global_average_pool(node: NodeView) -> OpCost:
    """FLOPs = 2 x input elements (dequantize) + input elements (window - 1 adds and a divide per
    output: window x outputs = inputs) + 4 x output elements (quantize); NCHW or channels_last."""
    inputs, outputs = node.input_elements(0), with_derived_outputs(node).output_elements(0)
    flops = (DEQUANTIZE_FLOPS + 1) * inputs + QUANTIZE_FLOPS * outputs
    return OpCost(
        flops=flops,
        formula=f"({DEQUANTIZE_FLOPS} + 1)·{inputs:,} inputs + {QUANTIZE_FLOPS}·{outputs:,} outputs = {flops:,} FLOPs",
    )


register("QGemm", qgemm, family="quantized", domain=MS, shapes=qgemm_shapes)
register(["MatMulNBits", "MatMulBnb4"], matmul_nbits, family="quantized", domain=MS, shapes=matmul_nbits_shapes)
# A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point: C broadcasts A and B
for _op in ("Add", "Mul"):
    register(
        f"QLinear{_op}",
        dequantize_op_quantize(_op, (0, 3), f"QLinear{_op}"),
        family="quantized",
        domain=MS,
        shapes=broadcast_of((0, 3)),
    )
# X, X_scale, X_zero_point, Y_scale, Y_zero_point: Y has X's shape and type
for _op in ("Sigmoid", "LeakyRelu", "Softmax"):
    register(
        f"QLinear{_op}",
        dequantize_op_quantize(_op, (0,), f"QLinear{_op}"),
        family="quantized",
        domain=MS,
        shapes=same_as_input(0),
    )
register(
    "QLinearAveragePool",
    dequantize_op_quantize("AveragePool", (0,), "QLinearAveragePool"),
    family="quantized",
    domain=MS,
    shapes=qlinear_average_pool_shapes,
)
register(
    "QLinearGlobalAveragePool",
    qlinear_global_average_pool,
    family="quantized",
    domain=MS,
    shapes=qlinear_global_average_pool_shapes,
)
# Y_scale, Y_zero_point, then (tensor, scale, zero point) per input
register(
    "QLinearConcat",
    zero_cost(
        "copies its inputs into the output (a runtime requantizing an input whose scale "
        "differs uses a 256-entry lookup table)"
    ),
    family="quantized",
    domain=MS,
    shapes=qlinear_concat_shapes,
)
# condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point (the quantizer's Where)
register(
    "QLinearWhere",
    dequantize_op_quantize("Where", (1, 4), "QLinearWhere"),
    family="quantized",
    domain=MS,
    shapes=broadcast_of((0, 1, 4), dtype_slot=1),
)
register(
    "GatherBlockQuantized",
    gather_block_quantized,
    family="quantized",
    domain=MS,
    arg_inputs=(1,),
    shapes=gather_block_quantized_shapes,
)
