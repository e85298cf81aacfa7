"""Every error type crosses a process boundary intact (`compare --jobs` pickles a worker's error
for the main process): each round-trips through pickle, and compare on two processes reports a
model's error as --jobs 1 does, exit 2 and one line."""

from __future__ import annotations

import pickle

import pytest
from conftest import one_error_line, relu_file, run
from onnx import TensorProto

from onnxroof.core import errors
from onnxroof.core.errors import (
    IncompleteAnalysis,
    ModelError,
    OnnxroofError,
    OptionError,
    OutputError,
    UnboundDims,
    UsageError,
)
from onnxroof.core.tensors import UnresolvedDim
from onnxroof.ops.base import UnknownShape

F32 = TensorProto.FLOAT


def _every_error():
    dims = [UnresolvedDim("x", 1, "seq", ("batch", "seq")), UnresolvedDim("mask", -1, None)]
    return [
        OnnxroofError("plain"),
        ModelError("m.onnx: no such file"),
        UsageError("bad flag"),
        IncompleteAnalysis("incomplete"),
        OutputError("-o x: cannot be written (No space left on device)"),
        OptionError("dims", "{opt.dims} {text!r}: expected SYMBOL=VALUE", text="batch"),
        UnboundDims("m.onnx", dims, {"batch": 1}, decoder=True),
    ]


@pytest.mark.parametrize("error", _every_error(), ids=lambda e: type(e).__name__)
def test_every_error_type_round_trips_through_pickle(error):
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and str(copy) == str(error) and copy.args == error.args
    assert copy.__dict__ == error.__dict__ and copy.exit_code == error.exit_code == 2


def test_the_pickle_test_covers_every_error_type():
    def subclasses(kind):
        return {kind} | {s for sub in kind.__subclasses__() for s in subclasses(sub)}

    defined = {kind for kind in subclasses(OnnxroofError) if kind.__module__ == errors.__name__}
    assert defined == {type(e) for e in _every_error()}


def test_a_rule_error_round_trips_through_pickle():
    copy = pickle.loads(pickle.dumps(UnknownShape("t")))
    assert str(copy) == "shape of 't' unknown" and copy.tensor_name == "t"


def test_compare_on_two_processes_reports_an_unbound_dim_in_one_line(capsys, tmp_path):
    fixed, open_dim = relu_file(tmp_path / "a.onnx"), relu_file(tmp_path / "b.onnx", (1, "seq", 4))
    code, out, err = run(capsys, "compare", fixed, open_dim, "--jobs", "2", "-q")
    assert code == 2 and out == "" and one_error_line(err), err
    assert "b.onnx: input dims without a value: seq" in err and "--dim seq=N" in err
