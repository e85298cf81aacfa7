"""Subgraphs (If, Loop, Scan), model-local functions and QDQ compute types, derived by hand."""

from __future__ import annotations

import numpy as np
from conftest import make_model, zeros
from models import branch, if_model, loop_model
from onnx import TensorProto, helper

import onnxroof

F32, BOOL, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def test_if_counts_the_costlier_branch_and_both_branches_weights():
    (record,) = onnxroof.analyze(if_model()).nodes
    # then: 4 x 8 x 16 = 512 MACs = 1,024 FLOPs; else: the same MatMul + 64 adds = 1,088 FLOPs
    assert record.status == "ok"
    assert record.macs == 512 and record.flops == 1_088
    assert "counted the costlier (else)" in record.formula
    assert record.subgraphs["then_branch"].flops == 1_024
    assert record.subgraphs["else_branch"].flops == 1_088
    # both branches are stored in the model: 128 + 128 + 16 parameters
    analysis = onnxroof.analyze(if_model())
    assert analysis.totals.params == 272 and analysis.totals.param_bytes == 272 * 4
    document = analysis.to_dict()
    assert document["nodes"][0]["subgraphs"]["else_branch"]["flops"] == 1_088


def test_loop_multiplies_the_body_by_a_constant_trip_count():
    (record,) = onnxroof.analyze(loop_model(constant_trips=True)).nodes
    # body: MatMul 1 x 8 x 8 = 64 MACs (128 FLOPs) + Relu 8 = 136 FLOPs; five trips
    assert record.macs == 5 * 64 and record.flops == 5 * 136
    assert record.params == 64


def test_loop_with_unknown_trips_is_not_counted_until_told():
    analysis = onnxroof.analyze(loop_model(constant_trips=False))
    (record,) = analysis.nodes
    assert record.status == "unknown_value" and not record.counted and "--loop-trips" in record.reason
    assert analysis.totals.not_counted == {"Loop": 1} and not analysis.complete
    assert any("--loop-trips" in w for w in analysis.warnings)
    (record,) = onnxroof.analyze(loop_model(constant_trips=False), loop_trips=3).nodes
    assert record.flops == 3 * 136


def test_scan_multiplies_the_body_by_the_scan_length():
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x_t"], ["s_next"]), helper.make_node("Identity", ["s_next"], ["y_t"])],
        "body",
        [helper.make_tensor_value_info("s", F32, [1, 4]), helper.make_tensor_value_info("x_t", F32, [1, 4])],
        [helper.make_tensor_value_info("s_next", F32, [1, 4]), helper.make_tensor_value_info("y_t", F32, [1, 4])],
    )
    node = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], body=body, num_scan_inputs=1)
    model = make_model(
        [node], [("s0", F32, [1, 4]), ("xs", F32, [6, 1, 4])], [("s_final", F32, [1, 4]), ("ys", F32, [6, 1, 4])]
    )
    (record,) = onnxroof.analyze(model).nodes
    assert record.flops == 6 * 4  # six steps of a 4-element add


def test_unsupported_op_inside_a_subgraph_is_listed():
    then_branch = branch("then", [helper.make_node("Mystery", ["x"], ["t"], domain="x.y")], "t")
    else_branch = branch("else", [helper.make_node("Relu", ["x"], ["e"])], "e")
    node = helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)
    model = make_model([node], [("cond", BOOL, []), ("x", F32, [4, 16])], [("y", F32, [4, 16])])
    model.opset_import.append(helper.make_opsetid("x.y", 1))
    analysis = onnxroof.analyze(model)
    assert analysis.totals.unsupported == {"Mystery": 1} and not analysis.complete


def test_model_local_functions_are_inlined_for_costing():
    function = helper.make_function(
        "local",
        "Dense",
        ["a", "w"],
        ["out"],
        [helper.make_node("MatMul", ["a", "w"], ["m"]), helper.make_node("Relu", ["m"], ["out"])],
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model = make_model(
        [helper.make_node("Dense", ["x", "w"], ["y"], domain="local")],
        [("x", F32, [2, 8])],
        [("y", F32, [2, 4])],
        [("w", zeros(8, 4))],
    )
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.functions.append(function)
    analysis = onnxroof.analyze(model)
    assert analysis.totals.macs == 2 * 8 * 4 and analysis.totals.flops == 2 * 64 + 8
    assert analysis.totals.unsupported == {} and analysis.totals.params == 32


def test_qdq_conv_is_costed_in_int8_and_its_weight_in_int8_bytes():
    # x -> QuantizeLinear -> DequantizeLinear -> Conv(W = DequantizeLinear(int8)) : an int8 conv
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
        helper.make_node("Conv", ["xd", "wd"], ["y"], kernel_shape=[3, 3]),
    ]
    model = make_model(
        nodes,
        [("x", F32, [1, 4, 8, 8])],
        [("y", F32, [1, 16, 6, 6])],
        [
            ("xs", np.array(0.1, np.float32)),
            ("xz", np.array(0, np.int8)),
            ("wq", zeros(16, 4, 3, 3, dtype=np.int8)),
            ("ws", np.array(0.1, np.float32)),
            ("wz", np.array(0, np.int8)),
        ],
    )
    analysis = onnxroof.analyze(model)
    conv = analysis.nodes[-1]
    assert conv.dtype == "int8"
    assert conv.macs == 16 * 6 * 6 * 4 * 9
    # parameters are the stored roots behind wd (cost-model.md section 3): the int8 weight, its scale
    # and its zero point, one element each; the conv reads them per run as int8 + fp32 + int8 bytes
    assert conv.params == 16 * 4 * 9 + 1 + 1 and conv.weight_bytes == 16 * 4 * 9 + 4 + 1
    assert analysis.to_dict()["nodes"][-1]["dtype"] == "int8"


def test_loop_body_nodes_are_steps_of_the_memory_order():
    memory = onnxroof.analyze(loop_model(constant_trips=True)).memory
    # the memory stage tracks the nodes a run executes (issue 42): the body's MatMul reads the
    # Loop's h0 (its first run's input), Relu makes h_next, the Loop's output is written from it.
    # At the MatMul: cond (1 B, read by the body's Identity later) + h0 (32 B) + m (32 B)
    assert memory.model_order.order == (
        "Loop_0/body/MatMul_0",
        "Loop_0/body/Relu_1",
        "Loop_0/body/Identity_2",
        "Loop_0",
    )
    assert memory.model_order.peak_bytes == 1 + 32 + 32
    assert memory.model_order.peak_node == "Loop_0/body/MatMul_0"
