"""The findings' variants re-use what their change leaves as it was (issue 43): a change of type
costs again from the base's shapes, a peak is not placed, the model is not read again when no
variant needs it. Numbers derived by hand."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest
from conftest import make_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.options import AnalysisOptions


def relu_model():
    # one Relu on 1 x 16 floats: 64 B read, 64 B written
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, ["N", 16])],
        [("y", TensorProto.FLOAT, ["N", 16])],
    )


def test_a_change_of_type_costs_again_from_the_shapes_and_leaves_them_as_stored():
    from onnxroof.pipeline import analyze_again, analyze_keeping_front

    options = AnalysisOptions(targets=["l4"])
    base, front = analyze_keeping_front(relu_model(), options)
    int8 = analyze_again(front, replace(options, dtype="int8"))
    # in int8 each of the 16 elements is 1 B: 16 B read, 16 B written
    assert (int8.nodes[0].input_bytes, int8.nodes[0].output_bytes, int8.dtype) == (16, 16, "int8")
    assert [r.target.name for r in int8.targets] == ["l4"]
    again = analyze_again(front, options)  # the front's shapes are still the stored float32 ones
    assert (again.nodes[0].input_bytes, again.nodes[0].output_bytes) == (64, 64)
    assert (base.nodes[0].input_bytes, base.nodes[0].output_bytes) == (64, 64)


def test_a_front_is_not_used_for_a_change_its_shapes_depend_on():
    from onnxroof.pipeline import analyze_again, analyze_keeping_front

    options = AnalysisOptions(targets=["l4"])
    _, front = analyze_keeping_front(relu_model(), options)
    with pytest.raises(ValueError, match="batch"):
        analyze_again(front, replace(options, batch=8))


def test_a_peak_is_measured_without_placing_and_placed_when_a_report_is_asked_for():
    from onnxroof.findings.variants import Reanalyser, Variants
    from onnxroof.pipeline import analyze_keeping_front

    model, options = relu_model(), AnalysisOptions(targets=["l4"])
    base, front = analyze_keeping_front(model, options)
    variants = Variants(base, Reanalyser(model, options, front))
    # batch 2: x and y of 2 x 16 floats, both live at the Relu: 2 x 128 B
    assert variants.peak_bytes(batch=2) == 256
    assert variants._runs[(("batch", 2),)].targets is None  # not placed: nothing read its reports
    placed = variants.analysis(batch=2)
    assert placed.peak_bytes == 256 and [(r.target.name, r.batch) for r in placed.targets] == [("l4", 2)]
    assert variants._unplaced == {}  # its records dropped once placed


def test_the_source_pickles_without_the_front():
    analysis = onnxroof.analyze(relu_model(), targets=["l4"])
    source = pickle.loads(pickle.dumps(analysis.source))
    assert analysis.source.front is not None and source.front is None
    assert source.options == analysis.source.options


def test_the_model_file_is_read_again_only_for_a_variant_that_needs_it(tmp_path, monkeypatch):
    import onnx

    from onnxroof.findings import variants
    from onnxroof.frontend import load

    path = tmp_path / "relu.onnx"
    onnx.save(relu_model(), path)
    read: list[str] = []
    original = load.load_model
    monkeypatch.setattr(load, "load_model", lambda model: read.append(str(model)) or original(model))
    monkeypatch.setattr(variants, "REANALYSE_NODES", 0)  # no variant is analysed: nothing read again
    onnxroof.analyze(str(path), targets=["l4"]).review()
    assert read == []
    monkeypatch.setattr(variants, "REANALYSE_NODES", 50_000)  # batch variants read it, once for all of them
    onnxroof.analyze(str(path), targets=["l4"]).review()
    assert read == [str(path)]
