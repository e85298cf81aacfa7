"""cost/running.py: the nodes a run executes, with If branches and Loop bodies expanded, on
hand-built control flow."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxroof import analyze

FLOAT = TensorProto.FLOAT


def loop_model(trips: int):
    # a Loop of ``trips`` iterations whose body adds 1 to a carried [8] vector
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
            helper.make_node("Add", ["v_in", "one"], ["v_out"], name="add"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", FLOAT, [8]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", FLOAT, [8]),
        ],
        [numpy_helper.from_array(np.ones(8, np.float32), "one")],
    )
    loop = helper.make_node("Loop", ["trips", "cond", "v"], ["v_final"], name="loop", body=body)
    graph = helper.make_graph(
        [loop],
        "g",
        [helper.make_tensor_value_info("v", FLOAT, [8])],
        [helper.make_tensor_value_info("v_final", FLOAT, [8])],
        [numpy_helper.from_array(np.array(trips, np.int64), "trips"), numpy_helper.from_array(np.array(True), "cond")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_loops_body_runs_its_trip_count_times_and_a_view_passes_its_result_on():
    running = analyze(loop_model(5)).cost_graph.running
    runs = {r.name: r.runs for r in running.records}
    assert runs["loop/body/add"] == 5 and runs["loop/body/keep"] == 5
    view = next(r for r in running.records if r.name == "loop")
    # the body returns (condition, carried...): the carried value becomes the Loop's output
    assert view.view and view.inputs == ["v_out"] and view.outputs == ["v_final"]
    # the body reads the Loop's initial value where it is: v_in is v
    add = next(r for r in running.records if r.name == "loop/body/add")
    assert add.inputs == ["v", "one"]


def test_a_graph_without_control_flow_runs_as_it_is():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        "g",
        [helper.make_tensor_value_info("x", FLOAT, [4])],
        [helper.make_tensor_value_info("y", FLOAT, [4])],
    )
    cost = analyze(helper.make_model(graph)).cost_graph
    assert cost.running is cost
