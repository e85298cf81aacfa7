"""frontend/bodies.py: the If branch a condition takes, and the shapes a Loop's or Scan's body
starts from, on hand-made nodes."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from onnxroof.core.tensors import TensorInfo
from onnxroof.frontend.bodies import bind_body_inputs, taken_branch

FLOAT = onnx.TensorProto.FLOAT


def test_a_known_condition_takes_its_branch_and_an_unknown_one_none():
    assert taken_branch(np.array(True)) == "then_branch"
    assert taken_branch(np.array([0])) == "else_branch"
    assert taken_branch(None) is None
    assert taken_branch(np.array([1, 0])) is None  # not one element: no branch known


def body(*names: str) -> onnx.GraphProto:
    return helper.make_graph([], "body", [helper.make_tensor_value_info(n, FLOAT, None) for n in names], [])


def bind(node: onnx.NodeProto, graph: onnx.GraphProto, known: dict[str, TensorInfo]) -> dict[str, TensorInfo]:
    tensors = dict(known)
    bind_body_inputs(
        node.op_type, node, list(node.input), graph, lambda n: tensors.setdefault(n, TensorInfo(n)), tensors
    )
    return tensors


def test_a_loop_body_starts_from_its_carried_values_shapes():
    # Loop(trip, cond, state [2, 3]) -> body (i, cond, state): only the carried state is bound
    node = helper.make_node("Loop", ["trip", "cond", "state"], ["out"])
    tensors = bind(node, body("i", "c", "s"), {"state": TensorInfo("state", FLOAT, (2, 3))})
    assert tensors["s"].shape == (2, 3)
    assert tensors.get("i", TensorInfo("i")).shape is None


def test_a_scan_body_sees_a_slice_of_each_scan_input_along_its_axis():
    # one state [4] and one scan input [5, 6, 7] scanned along axis 1: the body sees [5, 7]
    node = helper.make_node("Scan", ["state", "xs"], ["final", "ys"], num_scan_inputs=1, scan_input_axes=[1])
    known = {"state": TensorInfo("state", FLOAT, (4,)), "xs": TensorInfo("xs", FLOAT, (5, 6, 7))}
    tensors = bind(node, body("s", "x"), known)
    assert tensors["s"].shape == (4,)
    assert tensors["x"].shape == (5, 7)


def test_a_body_input_already_known_keeps_its_shape():
    node = helper.make_node("Loop", ["trip", "cond", "state"], ["out"])
    known = {"state": TensorInfo("state", FLOAT, (2, 3)), "s": TensorInfo("s", FLOAT, (9,))}
    assert bind(node, body("i", "c", "s"), known)["s"].shape == (9,)
