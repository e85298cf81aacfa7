"""Per-op rules on small graphs; every expected number is worked out in the test by hand."""

from __future__ import annotations

import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.ops import COST_RULES, OpCost, register, rule_for

F32 = TensorProto.FLOAT


def one_node(op_type, input_shapes, initializers=(), outputs=1, **attributes):
    """Analyse a single node whose activation inputs are x0, x1, ... and weights the initializers."""
    names = [f"x{i}" for i in range(len(input_shapes))] + [n for n, _ in initializers]
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(outputs)], **attributes)
    model = make_model(
        [node],
        [(f"x{i}", F32, s) for i, s in enumerate(input_shapes)],
        [(f"y{i}", F32, None) for i in range(outputs)],
        initializers,
    )
    (record,) = onnxroof.analyze(model).nodes
    assert record.status == "ok", record.reason
    return record


@pytest.mark.parametrize(
    "attributes, out_hw",
    [
        ({"strides": [2, 2]}, 15),  # floor((32 - 3) / 2) + 1 = 15
        ({"pads": [1, 1, 1, 1]}, 32),  # "same" with explicit pads
        ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, 16),  # ceil(32 / 2)
        ({"dilations": [2, 2]}, 28),  # effective kernel (3 - 1) x 2 + 1 = 5: 32 - 5 + 1 = 28
    ],
)
def test_conv_strides_pads_dilations(attributes, out_hw):
    record = one_node("Conv", [[2, 8, 32, 32]], [("w", zeros(16, 8, 3, 3))], kernel_shape=[3, 3], **attributes)
    assert record.macs == 2 * 16 * out_hw * out_hw * 8 * 9


def test_grouped_and_depthwise_conv():
    grouped = one_node("Conv", [[1, 8, 10, 10]], [("w", zeros(16, 2, 3, 3))], group=4, kernel_shape=[3, 3])
    assert grouped.macs == 16 * 8 * 8 * 2 * 9  # Co x Ho x Wo x Ci/g x K x K
    depthwise = one_node(
        "Conv", [[1, 8, 10, 10]], [("w", zeros(8, 1, 3, 3)), ("b", zeros(8))], group=8, kernel_shape=[3, 3]
    )
    assert depthwise.macs == 8 * 8 * 8 * 9 and depthwise.params == 72 + 8


def test_conv_transpose_counts_input_side():
    # N x Ci x Hi x Wi x Co/g x K x K = 1 x 4 x 5 x 5 x 2 x 9, not the output-side (doubled) count
    record = one_node("ConvTranspose", [[1, 4, 5, 5]], [("w", zeros(4, 2, 3, 3))], strides=[2, 2])
    assert record.macs == 4 * 25 * 2 * 9


@pytest.mark.parametrize("trans_a, trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_transposes(trans_a, trans_b):
    m, k, n = 3, 5, 7
    a = [k, m] if trans_a else [m, k]
    b = zeros(n, k) if trans_b else zeros(k, n)
    record = one_node("Gemm", [a], [("b", b), ("c", zeros(n))], transA=trans_a, transB=trans_b)
    assert record.macs == m * k * n and record.params == k * n + n


def test_matmul_broadcast_batch():
    # [2, 1, 4, 8] x [3, 8, 5] -> [2, 3, 4, 5]: 120 outputs x K = 8
    record = one_node("MatMul", [[2, 1, 4, 8], [3, 8, 5]])
    assert record.macs == 2 * 3 * 4 * 5 * 8 and record.params == 0


def test_matmul_vector_operands():
    assert one_node("MatMul", [[8], [8, 5]]).macs == 5 * 8
    assert one_node("MatMul", [[4, 8], [8]]).macs == 4 * 8


def test_batchnorm_pooling_softmax_lrn():
    shape = [1, 4, 6, 6]  # 144 elements
    bn = one_node("BatchNormalization", [shape], [(n, zeros(4)) for n in ("g", "b", "m", "v")])
    assert bn.flops == 2 * 144 and bn.params == 16
    maxpool = one_node("MaxPool", [shape], kernel_shape=[3, 3], strides=[3, 3])  # 4 x 2 x 2 outputs
    assert maxpool.flops == (9 - 1) * 16
    avgpool = one_node("AveragePool", [shape], kernel_shape=[2, 2], strides=[2, 2])  # 4 x 3 x 3 outputs
    assert avgpool.flops == 4 * 36
    gap = one_node("GlobalAveragePool", [shape])  # 4 outputs, 36 adds-and-divide each
    assert gap.flops == 36 * 4
    assert one_node("Softmax", [[2, 10]]).flops == 5 * 20
    assert one_node("LRN", [shape], size=5).flops == (2 * 5 + 3) * 144


def test_elementwise_and_variadic():
    assert one_node("Add", [[4, 1], [1, 6]]).flops == 24  # broadcast: one add per output
    assert one_node("Sum", [[8], [8], [8]]).flops == 2 * 8
    assert one_node("Mean", [[8], [8]]).flops == (1 + 1) * 8
    assert one_node("Sigmoid", [[10]]).flops == 3 * 10


def test_concat_and_transpose_move_bytes_views_do_not():
    concat = one_node("Concat", [[1, 2, 4], [1, 3, 4]], axis=1)
    assert concat.flops == 0 and concat.input_bytes == (8 + 12) * 4 and concat.output_bytes == 20 * 4
    transpose = one_node("Transpose", [[2, 3]], perm=[1, 0])
    assert transpose.input_bytes == transpose.output_bytes == 24
    identity = one_node("Identity", [[2, 3]])
    assert identity.input_bytes == identity.output_bytes == 0 and identity.view


def test_every_rule_has_a_formula_docstring():
    for (domain, op_type), rule in COST_RULES.items():
        assert rule.formula, f"{domain}::{op_type} has no formula"


def test_register_overrides_and_adds_rules():
    def my_op(node):
        """FLOPs = 7 x output elements (a user's custom op)."""
        return OpCost(flops=7 * node.output_elements(0))

    register("MyOp", my_op, family="custom", domain="custom.ops")
    try:
        node = helper.make_node("MyOp", ["x"], ["y"], domain="custom.ops")
        model = make_model([node], [("x", F32, [3, 4])], [("y", F32, [3, 4])])
        model.opset_import.append(helper.make_opsetid("custom.ops", 1))
        (record,) = onnxroof.analyze(model).nodes
        # onnx cannot infer a custom op's output; the declared graph output gives it
        assert record.status == "ok" and record.flops == 7 * 12
    finally:
        del COST_RULES[("custom.ops", "MyOp")]
    assert rule_for("custom.ops", "MyOp") is None
