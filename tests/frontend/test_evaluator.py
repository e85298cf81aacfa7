"""frontend/evaluator.py: the shape arithmetic the partial evaluator runs where ONNX's inference
stops, and an If's outputs from the branch its known condition takes (through infer_shapes)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxroof.frontend.evaluator import has_schema
from onnxroof.frontend.shapes import infer_shapes

FLOAT = TensorProto.FLOAT


def model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_reshape_target_computed_from_a_shape_is_evaluated():
    # Shape(x) = [2, 3, 4]; its first dim, [2], with -1: Reshape(x, [2, -1]) is [2, 12]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "first"], ["b"]),
        helper.make_node("Concat", ["b", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    built = model(
        nodes,
        [helper.make_tensor_value_info("x", FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", FLOAT, None)],
        [
            numpy_helper.from_array(np.array([0], np.int64), "first"),
            numpy_helper.from_array(np.array([-1], np.int64), "rest"),
        ],
    )
    result = infer_shapes(built, built.graph.node)
    assert result.values["target"].tolist() == [2, -1]
    assert result.tensors["y"].shape == (2, 12)


def if_model():
    def branch(name, op):
        return helper.make_graph(
            [helper.make_node(op, ["x"], [f"{name}_y"])],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_y", FLOAT, None)],
        )

    node = helper.make_node(
        "If", ["c"], ["y"], name="choose", then_branch=branch("then", "Identity"), else_branch=branch("else", "Flatten")
    )
    return model(
        [node],
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", FLOAT, [2, 3, 4]),
        ],
        [helper.make_tensor_value_info("y", FLOAT, None)],
    )


def test_an_if_of_a_known_condition_has_its_taken_branchs_shape():
    built = if_model()
    taken = infer_shapes(built, built.graph.node, given_values={"c": np.array(False)})
    assert taken.tensors["y"].shape == (2, 12)  # Flatten of [2, 3, 4] from axis 1


def test_an_if_of_an_unknown_condition_whose_branches_disagree_has_no_shape():
    built = if_model()
    result = infer_shapes(built, built.graph.node)
    # [2, 3, 4] or [2, 12]: not even the rank is the same, so none is stated
    assert result.tensors["y"].shape is None


def test_an_op_has_a_schema_from_its_opset_on():
    assert has_schema("", "Relu")
    assert not has_schema("com.microsoft", "SkipLayerNormalization")  # a contrib op: onnx has no schema
    assert not has_schema("", "LayerNormalization", {"": 16})  # from opset 17
    assert has_schema("", "LayerNormalization", {"": 17})
