"""A batch fixed inside the graph (issue 42): a static export's inputs and shape constants carry
its batch, another batch is refused naming the re-export, and the launch finding tells the user to
re-export instead of costing a broken graph. Each model is built here; the counts are by hand."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import fixed_reshape_chain, launch_target, make_model, one_error_line, run
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.errors import OptionError
from onnxroof.frontend.fixed_batch import fixed_batch

F32 = TensorProto.FLOAT


def static_export(length: int = 40, producer: str = "pytorch"):
    """x [1, 128, 64] -> Reshape to [1, 128, 4, 16] (the batch written into the shape, as a static
    torch.onnx export does) -> Reshape back to [1, 128, 64] -> a chain of ``length`` Adds. Two
    Reshape shapes and the input carry batch 1; the Expand's [4, 4] does not (its first element is
    not the batch)."""
    nodes = [
        helper.make_node("Reshape", ["x", "heads"], ["h"], name="split_heads"),
        helper.make_node("Reshape", ["h", "merged"], ["a0"], name="merge_heads"),
        helper.make_node("Expand", ["one", "square"], ["sq"], name="expand"),
    ]
    nodes += [helper.make_node("Add", [f"a{i}", f"a{i}"], [f"a{i + 1}"], name=f"add_{i}") for i in range(length)]
    model = make_model(
        nodes,
        [("x", F32, [1, 128, 64])],
        [(f"a{length}", F32, [1, 128, 64]), ("sq", F32, [4, 4])],
        [
            ("heads", np.array([1, 128, 4, 16])),
            ("merged", np.array([1, 128, 64])),
            ("one", np.ones(1, np.float32)),
            ("square", np.array([4, 4])),
        ],
    )
    model.producer_name = producer
    return model


def test_a_static_export_names_its_batch_the_shapes_that_carry_it_and_the_fix():
    fixed = fixed_batch(static_export())
    assert (fixed.batch, fixed.inputs, fixed.shapes) == (1, ("x",), {"Reshape": 2})
    assert fixed.text().startswith(
        "this export fixes batch 1 in its inputs and in 2 Reshape shapes: re-export with a "
        "dynamic batch (torch.onnx.export(..., dynamic_shapes="
    )
    assert fixed.refusal(1) is None and fixed.refusal(8) == fixed.text()
    # tf2onnx words its fix in its own terms
    assert "tf2onnx: a None batch dim" in fixed_batch(static_export(producer="tf2onnx")).fix


def test_a_dynamic_batch_or_a_static_graph_without_batch_in_its_shapes_is_not_refused():
    dynamic = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, ["n", 8])], [("y", F32, ["n", 8])])
    assert fixed_batch(dynamic) is None
    # a static input and no shape constant: another batch is a plain rebinding (a Relu is batch-agnostic)
    static = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1, 8])], [("y", F32, [1, 8])])
    fixed = fixed_batch(static)
    assert (fixed.batch, fixed.shapes, fixed.refusal(8)) == (1, {}, None)
    assert onnxroof.analyze(static, batch=8).totals.flops == 8 * 8  # one compare per element


def test_another_batch_is_refused_in_one_line_and_every_output_says_why(tmp_path, capsys):
    path = tmp_path / "static.onnx"
    import onnx

    onnx.save(static_export(), path)
    with pytest.raises(OptionError, match="batch 8 cannot be analysed: this export fixes batch 1"):
        onnxroof.analyze(path, batch=8)
    code, out, err = run(capsys, "summary", path, "--batch", "8")
    assert code == 2 and one_error_line(err)
    assert err.startswith("onnxroof: error: --batch 8 cannot be analysed: this export fixes batch 1 in its inputs")
    analysis = onnxroof.analyze(path)
    assert analysis.fixed_batch.text() in analysis.warnings
    assert analysis.to_dict()["fixed_batch"]["nodes_with_batch_in_shape"] == 2


def test_the_launch_finding_asks_for_a_re_export_and_claims_no_gain(tmp_path):
    target = launch_target(tmp_path)
    analysis = onnxroof.analyze(static_export(), targets=[target])
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    # 40 Adds + the Expand are kernels of 3 µs each (the Reshapes are views): launches dominate
    assert launch.title.endswith("fuse kernels, or re-export with a dynamic batch and batch up")
    assert launch.gain_s == 0.0 and launch.change == ""
    assert launch.detail.startswith("a larger batch is not measured: this export fixes batch 1")


def test_a_larger_batch_that_analyses_incompletely_gives_no_gain(tmp_path):
    """The input's batch is open but a Reshape's constant shape fixes 1 x 128 x 64 (8,192
    elements): at batch 8 the Reshape meets 65,536 elements and cannot run, so every node after
    it is not counted. The finding says so and claims nothing."""
    target = launch_target(tmp_path)
    model = fixed_reshape_chain()
    analysis = onnxroof.analyze(model, targets=[target])
    assert analysis.complete and analysis.fixed_batch is None
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert launch.gain_s == 0.0 and launch.change == ""
    assert launch.detail.startswith("batch 8 gives no measured gain: analysed incompletely, so no gain is measured: ")
    assert "node(s) not counted" in launch.detail


def test_a_larger_batch_that_a_minus_one_absorbs_gives_no_gain(tmp_path):
    """The batch is open, but a Reshape to Concat([1], [-1]) (computed, so no stored shape says
    it) folds any batch into one row: at batch 8 the output is 1 x 512, not 8 x 64. The variant is
    complete, yet it is not the model at batch 8: no gain."""
    target = launch_target(tmp_path)
    nodes = [
        helper.make_node("Concat", ["one", "minus"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["a0"]),
    ]
    nodes += [helper.make_node("Add", [f"a{i}", f"a{i}"], [f"a{i + 1}"]) for i in range(20)]
    model = make_model(
        nodes, [("x", F32, ["batch", 64])], [("a20", F32, None)], [("one", np.array([1])), ("minus", np.array([-1]))]
    )
    analysis = onnxroof.analyze(model, targets=[target])
    assert analysis.fixed_batch is None and onnxroof.analyze(model, batch=8).complete
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert launch.gain_s == 0.0 and launch.change == ""
    assert launch.detail == (
        "batch 8 gives no measured gain: at batch 8 output a20 is 1x512: the batch does not reach "
        "it, so the graph fixes its batch inside and no gain is measured"
    )


def test_a_batch_sweep_of_a_static_export_is_refused_naming_the_point(tmp_path, capsys):
    import onnx

    path = tmp_path / "static.onnx"
    onnx.save(static_export(), path)
    code, _, err = run(capsys, "summary", path, "--sweep", "batch=1,8")
    assert code == 2 and one_error_line(err)
    assert err.startswith("onnxroof: error: --sweep batch=8 cannot be analysed: this export fixes batch 1")
