"""analyze()'s errors: each names its option by key (analyze()'s own argument names), the
command line words the same error as flags, and both survive a process boundary (compare --jobs)."""

from __future__ import annotations

import pickle

import pytest
from conftest import make_model
from models import projection
from onnx import TensorProto, helper

from onnxroof import analyze
from onnxroof.cli.output import error_text
from onnxroof.core.errors import OptionError, UnboundDims


def test_an_option_error_carries_its_option_and_facts_and_each_interface_words_it():
    with pytest.raises(OptionError) as caught:
        analyze(projection(), dims={"M": 2})
    error = caught.value
    assert error.option == "dims" and error.facts["dim"] == "M" and error.facts["known"] == "N"
    assert str(error) == "dims M: the model's inputs have no dim named 'M' (named dims: N)"
    assert error_text(error) == "--dim M: the model's inputs have no dim named 'M' (named dims: N)"


def test_a_message_naming_two_options_words_both():
    with pytest.raises(OptionError) as caught:
        analyze(projection(), input_shapes={"x": [2, 4]}, dims={"N": 3})
    assert str(caught.value) == "dims N=3 contradicts input_shapes x:2,4, whose axis 0 is N"
    assert error_text(caught.value) == "--dim N=3 contradicts --input-shape x:2,4, whose axis 0 is N"


def test_errors_survive_pickling():
    with pytest.raises(OptionError) as caught:
        analyze(projection(), values=["x=1,2"])
    again = pickle.loads(pickle.dumps(caught.value))
    assert type(again) is OptionError and again.option == "values" and again.facts == caught.value.facts
    assert str(again) == str(caught.value) and error_text(again) == error_text(caught.value)
    # B leads the only input: a batch dim, assumed 1; S has no value
    sequence = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", TensorProto.FLOAT, ["B", "S"])],
        [("y", TensorProto.FLOAT, ["B", "S"])],
        name="seq",
    )
    with pytest.raises(UnboundDims) as unbound:
        analyze(sequence)
    again = pickle.loads(pickle.dumps(unbound.value))
    assert str(again) == str(unbound.value) and again.assumed == {"B": 1}
    assert str(again) == (
        "seq: input dims without a value: S (x axis 1) (B=1 assumed); give them: analyze(..., dims={'S': N}), "
        "or partial=True to cost only what does not depend on them"
    )
    assert error_text(again) == (
        "seq: input dims without a value: S (x axis 1) (B=1 assumed); add: --dim S=N, with your values, "
        "or --partial to cost only what does not depend on them"
    )
