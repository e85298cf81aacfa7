"""The largest-kernel finding: where the time goes, a pointer with no gain."""

from __future__ import annotations

from conftest import unfused_target
from models import convs

import onnxroof


def test_the_largest_kernel_and_its_share(tmp_path):
    # the 3x3 convolution (75.497472 µs) and the 1x1 (27.0336 µs) of test_intensity, on the same
    # target: the 3x3 takes 75.497472 / 102.531072 = 74 % of the time, compute-bound
    analysis = onnxroof.analyze(convs(), targets=[unfused_target(tmp_path, "narrow", 20e9)])
    (finding,) = [f for f in analysis.review() if f.kind == "largest"]
    assert finding.title == "kernel conv3x3 (Conv) takes 74% (75.5 µs), compute-bound"
    assert finding.gain_s == 0 and finding.nodes == ("conv3x3",)
    assert analysis.review()[-1] is finding  # a pointer comes after the changes that save time


def test_the_largest_module_is_found_down_the_tree_and_lists_only_its_nodes(tmp_path):
    """x [1, 1000] read by four MatMuls, each its own kernel on a target of 1 TFLOP/s and a DRAM so
    fast that every kernel is compute-bound: 2 x 1000 x N FLOPs take 2 N ns. /stages/s0 (N = 250),
    /stages/s1 (250), /stages/s2 (240) and /head (260): 500 + 500 + 480 + 520 = 2,000 ns. The
    stages take 1,480 / 2,000 = 74 %, over half: the finding goes into them, where the largest,
    s0 (500 ns, 25 %, first of the tie), is under half. The single largest kernel is the head's
    (26 %), outside that module: its node is not listed."""
    import numpy as np
    from conftest import make_model
    from onnx import TensorProto, helper

    widths = {"/stages/s0/MatMul": 250, "/stages/s1/MatMul": 250, "/stages/s2/MatMul": 240, "/head/MatMul": 260}
    nodes = [helper.make_node("MatMul", ["x", f"w{i}"], [f"y{i}"], name=name) for i, name in enumerate(widths)]
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, [1, 1000])],
        [(f"y{i}", TensorProto.FLOAT, [1, n]) for i, n in enumerate(widths.values())],
        [(f"w{i}", np.zeros((1000, n), np.float32)) for i, n in enumerate(widths.values())],
    )
    analysis = onnxroof.analyze(model, targets=[unfused_target(tmp_path, "fast", 1e18)])
    (finding,) = [f for f in analysis.review() if f.kind == "largest"]
    assert finding.title == "kernel /head/MatMul (MatMul) takes 26% (520 ns), compute-bound; module stages/s0 takes 25%"
    assert finding.modules == ("stages/s0",) and finding.nodes == ("/stages/s0/MatMul",)
