"""Findings made on an incomplete analysis (issue 42): they say so and claim no gain, since the
nodes not counted take time the gain does not know of."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

import onnxroof

from conftest import make_model, target_text


def test_findings_on_an_incomplete_analysis_claim_no_gain_and_say_why(tmp_path):
    """x [batch, 128, 64] -> Relu -> Reshape to a stored [1, 128, 64] -> 20 Adds. At batch 8 the
    Reshape meets 8 x 8,192 elements: it and the 20 Adds after it are not counted (21 nodes)."""
    target = tmp_path / "launchy.toml"
    target.write_text(target_text({"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e12,
                                   "node_overhead_s": 3e-6}, '[fusion]\nrules = []\nsource = "hand"\n', name="launchy"))
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "fixed"], ["a0"], name="fixed_reshape")]
    nodes += [helper.make_node("Add", [f"a{i}", f"a{i}"], [f"a{i + 1}"], name=f"add_{i}") for i in range(20)]
    model = make_model(nodes, [("x", TensorProto.FLOAT, ["batch", 128, 64])], [("a20", TensorProto.FLOAT, None)],
                       [("fixed", np.array([1, 128, 64]))])
    analysis = onnxroof.analyze(model, targets=[str(target)], batch=8)
    assert not analysis.complete and analysis.missing == "21 node(s) not counted"
    assert analysis.incomplete_text().startswith("21 node(s) not counted (")
    findings = analysis.review()
    assert findings and all(f.gain_s == 0 and f.change == "" and f.incomplete == analysis.incomplete_text()
                            for f in findings)
    assert all(f.title.endswith("(of the counted nodes only)") for f in findings)
    assert all(entry["complete"] is False for entry in analysis.to_dict()["findings"])
