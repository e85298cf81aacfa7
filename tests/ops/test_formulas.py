"""Op rules' formulas at their optional inputs and defaults (ops/*.py docstrings, the per-op cost
model; docs/ops.md is generated from them). Written for the survivors of mutmut runs over the
op rules (docs/testing.md, "Mutation testing"); every number is worked out in the comments.
FLOPs of a MAC-type op are 2 x MACs plus the rule's other element operations."""

from __future__ import annotations

from conftest import analyse_node, make_model, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.ops import COST_RULES, same_as_input
from onnxroof.ops.elementwise import elementwise_flop_counter, variadic_flop_counter

F32 = TensorProto.FLOAT
MS = "com.microsoft"


def other_flops(record):
    """The element operations besides the MACs' 2 x MACs."""
    return record.flops - 2 * record.macs


# FusedConv (com.microsoft): Conv + activation (+ residual Z)
# X [1, 2, 4, 4], W [3, 2, 3, 3], pads 1: Y [1, 3, 4, 4], 48 outputs; MACs = 3 x 16 x 2 x 9 = 864


def fused_conv(with_z: bool, **attributes):
    names = ["x", "w", "", "z"] if with_z else ["x", "w"]
    node = helper.make_node("FusedConv", names, ["y"], domain=MS, pads=[1, 1, 1, 1], **attributes)
    inputs = [("x", F32, [1, 2, 4, 4])] + ([("z", F32, [1, 3, 4, 4])] if with_z else [])
    return analyse_node(node, inputs, [("y", F32, [1, 3, 4, 4])], [("w", zeros(3, 2, 3, 3))], contrib=True)


def test_fused_conv_without_an_activation_adds_nothing_to_the_convolution():
    record = fused_conv(False)
    assert record.macs == 864 and other_flops(record) == 0


def test_fused_conv_counts_one_add_per_output_for_the_residual():
    # no activation, residual Z: 1 x 48; Relu (1 per element) and Z: (1 + 1) x 48
    assert other_flops(fused_conv(True)) == 48
    assert other_flops(fused_conv(True, activation="Relu")) == 2 * 48
    # Sigmoid alone: 3 x 48 (exp, add, divide, as elementwise.py counts it)
    assert other_flops(fused_conv(False, activation="Sigmoid")) == 3 * 48


# DeformConv: X [1, 1, 4, 4], W [1, 1, 2, 2], offsets [1, 8, 3, 3]: Y [1, 1, 3, 3]
# samples = N x Ci x 9 outputs x 4 taps of the kernel = 36, each a bilinear blend of 4 values
# (4 multiplies + 3 adds = 7), and 72 offset adds (one per offset element)


def deform_conv(with_mask: bool):
    names = ["x", "w", "offset"] + (["", "mask"] if with_mask else [])
    node = helper.make_node("DeformConv", names, ["y"])
    inputs = [("x", F32, [1, 1, 4, 4]), ("offset", F32, [1, 8, 3, 3])] + (
        [("mask", F32, [1, 4, 3, 3])] if with_mask else []
    )
    return analyse_node(node, inputs, [("y", F32, [1, 1, 3, 3])], [("w", zeros(1, 1, 2, 2))], opset=19)


def test_deform_conv_multiplies_each_sample_by_the_mask_only_when_given():
    # MACs as Conv: 1 x 9 x 1 x 4 = 36
    plain, masked = deform_conv(False), deform_conv(True)
    assert plain.macs == masked.macs == 36
    assert other_flops(plain) == 72 + 7 * 36
    assert other_flops(masked) == 72 + (7 + 1) * 36


# Rule factories of elementwise.py, used the way a plugin would (onnxroof.register)


def run_registered(op_type, handler, input_shapes, output_shape):
    """Analyse one node of a rule registered for this test only (removed again afterwards)."""
    domain = "test.formulas"
    onnxroof.register(op_type, handler, family="elementwise", domain=domain, shapes=same_as_input(0))
    try:
        names = [f"x{i}" for i in range(len(input_shapes))]
        node = helper.make_node(op_type, names, ["y"], domain=domain)
        model = make_model([node], [(n, F32, s) for n, s in zip(names, input_shapes)], [("y", F32, output_shape)])
        model.opset_import.append(helper.make_opsetid(domain, 1))
        (record,) = onnxroof.analyze(model).nodes
        return record
    finally:
        COST_RULES.pop((domain, op_type))


def test_an_elementwise_rule_counts_its_operations_per_output_element():
    # 3 operations per element of a [2, 5] output: 30
    record = run_registered("Thrice", elementwise_flop_counter(3, "three"), [[2, 5]], [2, 5])
    assert record.flops == 30 and "three" in record.formula


def test_a_variadic_rule_counts_one_operation_per_extra_operand_per_element():
    # 3 operands of 8 elements: (3 - 1) pairwise operations + 1 extra (Mean's divide) = 3 x 8 = 24;
    # a single operand has no pairwise operation: (0 + 1) x 8 = 8
    assert run_registered("MeanLike", variadic_flop_counter(1, "mean"), [[8], [8], [8]], [8]).flops == 24
    assert run_registered("MeanLike", variadic_flop_counter(1, "mean"), [[8]], [8]).flops == 8
    assert run_registered("SumLike", variadic_flop_counter(0, "sum"), [[8], [8]], [8]).flops == 8


def test_bias_split_gelu_adds_the_bias_then_gates_half():
    # X [1, 2, 8] + bias [8]: 16 adds; Y [1, 2, 4] = 8 outputs, each exact Gelu (5) times the
    # other half (1): 16 + 6 x 8 = 64
    node = helper.make_node("BiasSplitGelu", ["x", "b"], ["y"], domain=MS)
    record = analyse_node(node, [("x", F32, [1, 2, 8])], [("y", F32, [1, 2, 4])], [("b", zeros(8))], contrib=True)
    assert record.flops == 16 + 6 * 8
