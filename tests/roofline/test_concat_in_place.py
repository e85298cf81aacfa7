"""A Concat whose inputs are written into its buffer (the memory stage's decision,
``MemoryProblem.in_place_concats``) copies nothing: on the roofline it moves no bytes and launches
no kernel. One that must copy an input (a graph input) stays a kernel."""

from __future__ import annotations

import pytest
from conftest import make_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.examples import build_example

FIGURE = 'tag = "estimate"\nsource = "a test figure"'


def _target(tmp_path) -> str:
    """fp32 at 1e12 op/s, DRAM at 1e9 B/s, 1 MiB on chip (every activation here fits), 1 µs a launch, no fusion."""
    path = tmp_path / "concat.toml"
    path.write_text(
        'schema = "onnxroof-target/1"\nname = "concat"\ndescription = "test target"\n'
        f"[peak_ops_per_s.fp32]\nvalue = 1e12\n{FIGURE}\n"
        f"[dram.bandwidth_bytes_per_s]\nvalue = 1e9\n{FIGURE}\n"
        f"[onchip.size_bytes]\nvalue = 1048576\n{FIGURE}\n"
        f"[node_overhead_s]\nvalue = 1e-6\n{FIGURE}\n"
    )
    return str(path)


def _model(first: str):
    """Relu(x) -> a, Sigmoid(x) -> b, Concat(``first``, b) on channels -> c, Relu(c) -> y; x is 1x4x8x8 fp32."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu_a"),
        helper.make_node("Sigmoid", ["x"], ["b"], name="sigmoid_b"),
        helper.make_node("Concat", [first, "b"], ["c"], name="concat", axis=1),
        helper.make_node("Relu", ["c"], ["y"], name="relu_y"),
    ]
    return make_model(nodes, [("x", TensorProto.FLOAT, [1, 4, 8, 8])], [("y", TensorProto.FLOAT, [1, 8, 8, 8])])


def test_a_concat_written_in_place_launches_nothing_and_moves_nothing(tmp_path):
    analysis = onnxroof.analyze(_model("a"), targets=[_target(tmp_path)])
    assert analysis.memory.problem.in_place_concats == {"concat"}
    report = analysis.targets[0]
    concat = next(k for k in report.nodes if k.op_type == "Concat")
    assert concat.placement.time_s == 0 and concat.placement.overhead_s == 0
    assert concat.placement.dram_bytes == 0 and concat.placement.onchip_bytes == 0
    assert str(concat.placement.bound) == "none"
    # the rest by hand: x (1 KiB = 4 x 8 x 8 x 4 B) is read from DRAM by relu_a and sigmoid_b,
    # 1,024 B / 1e9 B/s = 1.024 µs each, plus a 1 µs launch; y (2 KiB) is written to DRAM by relu_y,
    # 2.048 µs + 1 µs. 3 launches, not 4: 2.024 + 2.024 + 3.048 = 7.096 µs
    assert report.latency_s == pytest.approx(7.096e-6)
    assert concat.energy_j == {"compute": 0.0, "onchip": 0.0, "dram": 0.0}


def test_a_concat_of_a_graph_input_copies_it_and_stays_a_kernel(tmp_path):
    # x is a graph input: it cannot be written into c's buffer, so the Concat copies it
    analysis = onnxroof.analyze(_model("x"), targets=[_target(tmp_path)])
    assert analysis.memory.problem.in_place_concats == frozenset()
    concat = next(k for k in analysis.targets[0].nodes if k.op_type == "Concat")
    # it reads x from DRAM: 1,024 B / 1e9 B/s = 1.024 µs, plus its 1 µs launch
    assert concat.placement.overhead_s == 1e-6
    assert concat.placement.time_s == pytest.approx(2.024e-6)


def test_minigooglenet_s_concats_cost_no_launch_on_l4():
    report = onnxroof.analyze(build_example("minigooglenet"), targets=["l4"]).targets[0]
    concats = [k for k in report.nodes if k.op_type == "Concat"]
    assert len(concats) == 10  # the model's 10 inception and downsample joins
    assert all(k.placement.time_s == 0 and k.placement.overhead_s == 0 for k in concats)
    # every other kernel pays l4's launch, but the views (Dropout and Flatten, one kernel that runs nothing)
    launched = [k for k in report.nodes if k.placement.overhead_s]
    views = [k for k in report.nodes if k.op_type == "Dropout"]
    assert len(launched) == len(report.nodes) - len(concats) - len(views)
