"""AnalysisOptions: one object for every option of an analysis, given to analyze() whole or
built from its keyword arguments, and varied with dataclasses.replace."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest
from onnx import TensorProto, helper

from onnxroof import AnalysisOptions, analyze

from conftest import make_model, zeros


def projection():
    """x [N, 4] @ w [4, 8]: 4 x 8 = 32 MACs per row of x."""
    return make_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
                      [("x", TensorProto.FLOAT, ["N", 4])], [("y", TensorProto.FLOAT, ["N", 8])], [("w", zeros(4, 8))])


def test_the_flags_strings_are_kept_as_a_tuple_and_a_mapping_as_given():
    options = AnalysisOptions(input_shapes=["x:2,4"], dims=iter(["N=2"]), values={"sr": 16000}, targets=["l4"],
                              fusion=["epilogue", "elementwise"])
    assert options.input_shapes == ("x:2,4",) and options.dims == ("N=2",)
    assert options.values == {"sr": 16000} and options.targets == ("l4",)
    assert options.fusion == ("epilogue", "elementwise")
    with pytest.raises(FrozenInstanceError):
        options.batch = 2  # type: ignore[misc]


def test_analyze_takes_the_options_whole_or_one_by_one():
    # N = 3 rows of 32 MACs: 96; N = 5: 160
    assert analyze(projection(), options=AnalysisOptions(dims={"N": 3})).totals.macs == 96
    assert analyze(projection(), dims=["N=3"]).totals.macs == 96
    assert analyze(projection(), options=replace(AnalysisOptions(dims={"N": 3}), dims={"N": 5})).totals.macs == 160


def test_options_and_keyword_arguments_together_are_refused():
    with pytest.raises(TypeError, match="not both"):
        analyze(projection(), dims={"N": 3}, options=AnalysisOptions(batch=2))


def test_changed_names_the_options_off_their_defaults():
    assert AnalysisOptions().changed() == {}
    assert AnalysisOptions(batch=2, overhead=False).changed() == {"batch": 2, "overhead": False}
