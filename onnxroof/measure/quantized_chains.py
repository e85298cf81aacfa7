"""The quantized models ``onnxroof calibrate`` measures its int8 figures on (``achieved.ROOF_CASES``):
chains of convolutions or matmuls as a statically quantized model has them
(:func:`qdq_chain_model`), and fans of matrix-vector products (:func:`qdq_fan_model`) for the int8
``gemv`` figure: a batch-1 Linear layer
in QDQ int8 (a classifier's head, a decoder step) runs onnxruntime's integer GEMM with one row,
which reaches another share of the int8 roof than its float kernel does of the fp32 one (on an
EPYC, ShallowNet's 1 x 32,768 by 32,768 x 10 Dense: 35 µs in fp32, 16 µs as QGemm, where the
fp32 gemv figure on the int8 roof predicts 9 µs).

A chain cannot hold them (a link's output is not its input's shape), so, as ``achieved.fan_model``
does for the float ones, a fan: one float input quantized once, ``length`` links each a
DequantizeLinear of it and of the link's own int8 weight, the MatMul, QuantizeLinear of the
product (onnxruntime fuses the four into one QLinearMatMul) and DequantizeLinear back to float,
the links' outputs summed into one. The slope between a fan of 1 and a fan of ``length`` is one
link: the product, its small output's dequantization and a Sum input's worth of additions, on
both the measured and the roofline side.
"""

from __future__ import annotations

import numpy as np

from .float_models import float_model, summed_fan_model


def qdq_fan_model(op: str, shape: tuple[int, ...], attributes: dict, length: int):
    """``length`` QDQ MatMuls of one ``shape`` = (rows, depth) float input by depth x
    ``attributes["columns"]`` int8 weights of their own (per-tensor scales, zero points 0), their
    dequantized outputs summed (the signature of :func:`qdq_chain_model`: ``op`` is
    "MatMul"). The activations are uint8, as onnxruntime's ``quantize_static`` makes them by
    default (U8S8): with int8 ones its CPU optimizer leaves a MatMul in float between
    DequantizeLinear nodes, where uint8 ones become QLinearMatMul."""
    from onnx import helper, numpy_helper

    rows, depth = shape
    columns = attributes["columns"]
    rng = np.random.default_rng(0)
    initializers = [
        numpy_helper.from_array(np.array(0.05, np.float32), "scale"),
        numpy_helper.from_array(np.array(0, np.int8), "zero"),  # the weights'
        numpy_helper.from_array(np.array(128, np.uint8), "activation_zero"),
    ]
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "activation_zero"], ["q_x"], name="quantize_x")]
    for index in range(length):
        weight = rng.integers(-127, 128, (depth, columns), dtype=np.int8)
        nodes += _qdq_link(op, index, weight, "q_x", "activation_zero", {}, initializers)
        nodes.append(
            helper.make_node(
                "DequantizeLinear", [f"q{index}", "scale", "activation_zero"], [f"p{index}"], name=f"dequantize_{index}"
            )
        )
    return summed_fan_model(nodes, "qdq-gemv-fan", (rows, depth), (rows, columns), initializers, length)


def qdq_chain_model(op: str, shape: tuple[int, ...], attributes: dict, length: int):
    """``length`` ``op`` nodes (Conv or MatMul) in a chain as a statically quantized model has them:
    the float input quantized once, then per link DequantizeLinear of the int8 weights and of the
    int8 activation, the op, QuantizeLinear of its output (int8, per-tensor scales, zero points 0);
    the last link's output dequantized. onnxruntime runs each link as one integer kernel. A Conv's
    ``group`` attribute splits its channels (``group`` = channels: a depthwise conv)."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    initializers = [
        numpy_helper.from_array(np.array(0.05, np.float32), "scale"),
        numpy_helper.from_array(np.array(0, np.int8), "zero"),
    ]
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q_x"], name="quantize_x")]
    previous = "q_x"
    options = {key: value for key, value in attributes.items() if key != "kernel"}
    for index in range(length):
        if op == "Conv":
            size = attributes.get("kernel", 3)
            weight = rng.integers(
                -127, 128, (shape[1], shape[1] // attributes.get("group", 1), size, size), dtype=np.int8
            )
        else:
            weight = rng.integers(-127, 128, (shape[-1], shape[-1]), dtype=np.int8)
        nodes += _qdq_link(op, index, weight, previous, "zero", options, initializers)
        previous = f"q{index}"
    nodes.append(helper.make_node("DequantizeLinear", [previous, "scale", "zero"], ["y"], name="dequantize_y"))
    return float_model(nodes, f"qdq-{op.lower()}-chain", shape, shape, initializers)


def _qdq_link(
    op: str, index: int, weight: np.ndarray, activation: str, activation_zero: str, options: dict, initializers: list
) -> list:
    """Link ``index`` of a QDQ model, as a static quantizer writes it: the int8 ``weight``
    (added to ``initializers`` with its scale) and the quantized ``activation`` each
    dequantized, ``op`` (with the attributes ``options``) on them, its output ``f{index}``
    quantized into ``q{index}``; per-tensor scales, the weight's zero point "zero", the
    activation's ``activation_zero``."""
    from onnx import helper, numpy_helper

    initializers += [
        numpy_helper.from_array(weight, f"w{index}"),
        numpy_helper.from_array(np.array(0.002, np.float32), f"w{index}_scale"),
    ]
    return [
        helper.make_node(
            "DequantizeLinear", [f"w{index}", f"w{index}_scale", "zero"], [f"dq_w{index}"], name=f"dequantize_w{index}"
        ),
        helper.make_node(
            "DequantizeLinear", [activation, "scale", activation_zero], [f"dq_a{index}"], name=f"dequantize_a{index}"
        ),
        helper.make_node(op, [f"dq_a{index}", f"dq_w{index}"], [f"f{index}"], name=f"{op.lower()}_{index}", **options),
        helper.make_node(
            "QuantizeLinear", [f"f{index}", "scale", activation_zero], [f"q{index}"], name=f"quantize_{index}"
        ),
    ]
