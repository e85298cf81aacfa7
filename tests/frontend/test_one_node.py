"""One node through onnx's reference kernels (frontend/one_node.py)."""

from __future__ import annotations

import warnings

import numpy as np
from onnx import TensorProto, helper

from onnxroof.frontend.one_node import run_reference


def test_an_integer_mod_by_zero_runs_without_a_warning_on_stderr():
    # numpy warns "divide by zero encountered in remainder"; the evaluator's run is its own business
    node = helper.make_node("Mod", ["a", "b"], ["c"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = run_reference(node, [np.arange(4, dtype=np.int64), np.array(0, np.int64)], {"": 17})
    assert results is not None and results[0].shape == (4,)


def test_a_cast_of_inf_to_int64_runs_without_a_warning():
    node = helper.make_node("Cast", ["a"], ["c"], to=TensorProto.INT64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = run_reference(node, [np.array([np.inf, 1.0], np.float32)], {"": 17})
    assert results is not None and results[0].shape == (2,)
