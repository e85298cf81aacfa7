"""The costing stage shares a rule's result between nodes that look alike (graph._Coster._signature).
Sharing must never change a record: these models repeat a layer, then vary one thing the memo's
key has to tell apart (an attribute, a dtype, a constant input, a repeated input, a known value),
and every record is checked against hand-derived numbers and against costing with no sharing."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxroof.cost import graph as graph_module
from onnxroof.cost.graph import cost_graph
from onnxroof.frontend.shapes import infer_shapes
from onnxroof.ops import COST_RULES, OpCost, register

FLOAT, HALF = TensorProto.FLOAT, TensorProto.FLOAT16


def _model(nodes, inputs, outputs, initializers=(), opset=17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "memo", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _records(model: onnx.ModelProto) -> dict:
    graph = cost_graph(model, infer_shapes(model, model.graph.node))
    return {record.name: record for record in graph.records}


def _records_unshared(model: onnx.ModelProto, monkeypatch) -> dict:
    with monkeypatch.context() as patch:
        patch.setattr(graph_module._Coster, "_signature", lambda *args: None)
        return _records(model)


def _layers(count: int, width: int = 16, dtype: int = FLOAT) -> onnx.ModelProto:
    """``count`` MatMul -> Add -> Relu layers, each with its own weight and bias."""
    numpy_type = np.float16 if dtype == HALF else np.float32
    nodes, initializers, x = [], [], "x"
    for i in range(count):
        initializers += [
            numpy_helper.from_array(np.ones((width, width), numpy_type), f"w{i}"),
            numpy_helper.from_array(np.ones(width, numpy_type), f"b{i}"),
        ]
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"matmul_{i}"),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add_{i}"),
            helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu_{i}"),
        ]
        x = f"r{i}"
    return _model(
        nodes,
        [helper.make_tensor_value_info("x", dtype, [2, width])],
        [helper.make_tensor_value_info(x, dtype, [2, width])],
        initializers,
    )


@pytest.mark.parametrize("dtype, element_bytes", [(FLOAT, 4), (HALF, 2)])
def test_repeated_layers_match_hand_derived_numbers(dtype, element_bytes):
    records = _records(_layers(5, dtype=dtype))
    activation = 2 * 16 * element_bytes  # a [2, 16] tensor
    for i in range(5):
        matmul, add, relu = records[f"matmul_{i}"], records[f"add_{i}"], records[f"relu_{i}"]
        # [2, 16] x [16, 16]: 2·16·16 MACs, the weight 16·16 elements
        assert (matmul.macs, matmul.flops, matmul.params) == (512, 1024, 256)
        assert (matmul.weight_bytes, matmul.input_bytes, matmul.output_bytes) == (
            256 * element_bytes,
            activation,
            activation,
        )
        assert matmul.param_inputs == [f"w{i}"] and matmul.inputs == [f"r{i - 1}" if i else "x", f"w{i}"]
        assert (add.flops, add.params, add.weight_bytes) == (32, 16, 16 * element_bytes)
        assert add.param_inputs == [f"b{i}"] and add.outputs == [f"a{i}"]
        assert (relu.flops, relu.params, relu.input_bytes, relu.output_bytes) == (32, 0, activation, activation)
        assert relu.dtype == matmul.dtype == ("float16" if dtype == HALF else "float32")
        assert matmul.index == 3 * i and relu.name == f"relu_{i}"


def test_every_layer_weight_is_a_parameter():
    graph = cost_graph(model := _layers(4), infer_shapes(model, model.graph.node))
    assert graph.parameters == {**{f"b{i}": (16, 64) for i in range(4)}, **{f"w{i}": (256, 1024) for i in range(4)}}
    assert {n: t.kind for n, t in graph.tensors.items() if n.startswith(("w", "b"))} == {
        **{f"w{i}": "parameter" for i in range(4)},
        **{f"b{i}": "parameter" for i in range(4)},
    }


def _variants() -> onnx.ModelProto:
    """Pairs of nodes alike in all but one thing the rule or the record depends on."""
    value = helper.make_tensor_value_info
    x, y = "x", "y"
    initializers = [
        numpy_helper.from_array(np.ones((4, 4), np.float32), "b"),
        numpy_helper.from_array(np.array(1, np.int64), "axis1"),
        numpy_helper.from_array(np.array(2, np.int64), "axis2"),
    ]
    nodes = [
        # an attribute: one Einsum contracts j (4·4·4 MACs), the other multiplies elementwise (4·4)
        helper.make_node("Einsum", [x, y], ["contract"], name="einsum_contract", equation="ij,jk->ik"),
        helper.make_node("Einsum", [x, y], ["product"], name="einsum_product", equation="ij,ij->ij"),
        # a constant input: b is a parameter (read from weights), y an activation
        helper.make_node("Add", [x, "b"], ["add_param"], name="add_param"),
        helper.make_node("Add", [x, y], ["add_activation"], name="add_activation"),
        # a repeated input: x·x reads x once
        helper.make_node("Mul", [x, x], ["square"], name="square"),
        helper.make_node("Mul", [x, y], ["product2"], name="product2"),
        # a dtype: the same Relu on float32 and on float16
        helper.make_node("Relu", [x], ["relu32"], name="relu32"),
        helper.make_node("Relu", ["h"], ["relu16"], name="relu16"),
        # a known value: DFT's axis comes from input 2, 1 in one node and 2 in the other
        helper.make_node("DFT", ["signal", "", "axis1"], ["dft1"], name="dft_axis1"),
        helper.make_node("DFT", ["signal", "", "axis2"], ["dft2"], name="dft_axis2"),
    ]
    return _model(
        nodes,
        [
            value("x", FLOAT, [4, 4]),
            value("y", FLOAT, [4, 4]),
            value("h", HALF, [4, 4]),
            value("signal", FLOAT, [1, 8, 4, 2]),
        ],
        [
            value(n, FLOAT, None)
            for n in (
                "contract",
                "product",
                "add_param",
                "add_activation",
                "square",
                "product2",
                "relu32",
                "dft1",
                "dft2",
            )
        ]
        + [value("relu16", HALF, None)],
        initializers,
        opset=20,
    )


def test_nodes_differing_in_one_thing_get_their_own_numbers(monkeypatch):
    records = _records(_variants())
    assert records["einsum_contract"].macs == 4 * 4 * 4
    assert records["einsum_product"].macs == 4 * 4
    assert (records["add_param"].params, records["add_param"].param_inputs) == (16, ["b"])
    assert (records["add_param"].input_bytes, records["add_activation"].input_bytes) == (64, 128)
    assert (records["add_activation"].params, records["add_activation"].param_inputs) == (0, [])
    assert (records["square"].input_bytes, records["product2"].input_bytes) == (64, 128)
    assert (records["relu32"].dtype, records["relu32"].input_bytes) == ("float32", 64)
    assert (records["relu16"].dtype, records["relu16"].input_bytes) == ("float16", 32)
    assert records["relu16"].input_dtypes == ["float16"] and records["relu32"].input_dtypes == ["float32"]
    # a [1, 8, 4, 2] complex signal, N = 8 along axis 1 (4 transforms), 4 along axis 2 (8 transforms):
    # 5·N·log2 N FLOPs each
    assert records["dft_axis1"].flops == 4 * 5 * 8 * 3
    assert records["dft_axis2"].flops == 8 * 5 * 4 * 2
    assert records == _records_unshared(_variants(), monkeypatch)


def test_sharing_changes_no_record(monkeypatch):
    model = _layers(6)
    assert _records(model) == _records_unshared(model, monkeypatch)


def test_a_plugin_rule_runs_for_every_node():
    seen = []

    def by_name(node) -> OpCost:
        """FLOPs = the length of the node's name (reads what no signature holds)."""
        seen.append(node.node.name)
        return OpCost(flops=len(node.node.name))

    register("Named", by_name, family="custom", domain="test.memo")
    try:
        model = _model(
            [helper.make_node("Named", ["x"], [f"o{i}"], name="n" * (i + 1), domain="test.memo") for i in range(3)],
            [helper.make_tensor_value_info("x", FLOAT, [4])],
            [helper.make_tensor_value_info(f"o{i}", FLOAT, [4]) for i in range(3)],
        )
        model.opset_import.append(helper.make_opsetid("test.memo", 1))
        records = _records(model)
    finally:
        del COST_RULES[("test.memo", "Named")]
    assert seen == ["n", "nn", "nnn"]
    assert [records[name].flops for name in seen] == [1, 2, 3]


def test_qdq_compute_dtype_follows_the_dequantized_source(monkeypatch):
    """Two Relus alike in shape and dtype; one reads a DequantizeLinear output, so it runs in int8."""
    value = helper.make_tensor_value_info
    model = _model(
        [
            helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"], name="quantize"),
            helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["dq"], name="dequantize"),
            helper.make_node("Relu", ["dq"], ["relu_q"], name="relu_quantized"),
            helper.make_node("Relu", ["x"], ["relu_f"], name="relu_float"),
        ],
        [value("x", FLOAT, [4, 4])],
        [value("relu_q", FLOAT, None), value("relu_f", FLOAT, None)],
        [
            numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
            numpy_helper.from_array(np.array(0, np.int8), "zero"),
        ],
    )
    records = _records(model)
    assert (records["relu_quantized"].dtype, records["relu_float"].dtype) == ("int8", "float32")
    assert records == _records_unshared(model, monkeypatch)
