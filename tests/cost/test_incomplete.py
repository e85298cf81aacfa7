"""What an analysis that cannot count everything says (issue 31, item 4): the input whose value
decides an If, a first line that says the totals are lower bounds, and exit 2 when nothing could be
counted."""

from __future__ import annotations

import numpy as np
from conftest import make_model, run, zeros
from models import if_branches
from onnx import TensorProto, helper

import onnxroof


def rate_switch():
    """sr (an int64 scalar) == 16000 picks a branch: then x·W1 (4 x 8 by 8 x 16), else x·W2 + b2."""
    nodes = [
        helper.make_node("Equal", ["sr", "rate"], ["cond"], name="is_16k"),
        helper.make_node("If", ["cond"], ["y"], name="switch", **if_branches()),
    ]
    return make_model(
        nodes,
        [("sr", TensorProto.INT64, []), ("x", TensorProto.FLOAT, [4, 8])],
        [("y", TensorProto.FLOAT, [4, 16])],
        [("rate", np.array(16000, np.int64))],
    )


def test_an_if_on_an_input_s_value_names_the_input_and_the_flag():
    analysis = onnxroof.analyze(rate_switch())
    (warning,) = [w for w in analysis.warnings if w.startswith("If switch")]
    assert "depends on the value of input sr" in warning and "--value sr=V" in warning
    # the costlier branch is counted: else, 4 x 8 x 16 = 512 MACs and the 64 adds of the bias
    assert analysis.totals.macs == 512
    given = onnxroof.analyze(rate_switch(), values={"sr": 16000})  # then: 512 MACs, no bias
    assert not [w for w in given.warnings if w.startswith("If switch")]
    assert given.totals.flops == 2 * 512 + 1  # and the Equal's one comparison


def unbound_matmul():
    return make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [("x", TensorProto.FLOAT, ["n", 8])],
        [("y", TensorProto.FLOAT, ["n", 16])],
        [("w", zeros(8, 16))],
    )


def test_a_run_that_counted_nothing_exits_2_with_the_reason(tmp_path, capsys):
    path = tmp_path / "unbound.onnx"
    path.write_bytes(unbound_matmul().SerializeToString())
    code, out, err = run(capsys, "summary", str(path), "--partial", "-q")
    assert (code, out) == (2, "")
    assert err.startswith("onnxroof: error: unbound: nothing could be counted: input dims not bound: x[0] (n)")


def test_an_incomplete_run_says_so_on_its_first_line(tmp_path, capsys):
    # one MatMul on a bound input (4 x 8 by 8 x 16: 512 MACs) and one on an input whose rows are
    # left unbound with --partial: that one is not counted, and the first line says so
    nodes = [
        helper.make_node("MatMul", ["a", "w"], ["y"], name="bound"),
        helper.make_node("MatMul", ["b", "w"], ["z"], name="open"),
    ]
    model = make_model(
        nodes,
        [("a", TensorProto.FLOAT, [4, 8]), ("b", TensorProto.FLOAT, ["n", 8])],
        [("y", TensorProto.FLOAT, [4, 16]), ("z", TensorProto.FLOAT, ["n", 16])],
        [("w", zeros(8, 16))],
    )
    path = tmp_path / "half.onnx"
    path.write_bytes(model.SerializeToString())
    code, out, _ = run(capsys, "summary", str(path), "--partial", "-q")
    assert code == 0
    assert out.splitlines()[0] == (
        "INCOMPLETE: 1 node(s) not counted, 1 input dim(s) unbound; the totals are lower bounds (see the warnings)"
    )
    assert any(line.split()[:2] == ["MACs", "512"] for line in out.splitlines())  # the bound MatMul's
    code, out, _ = run(capsys, "summary", str(path), "--partial", "-q", "--format", "markdown")
    assert out.splitlines()[2].startswith("⚠️ **INCOMPLETE: 1 node\\(s\\) not counted")  # escaped for GitHub
