"""Shared builders: tiny ONNX graphs made with onnx.helper (no weights stored on disk)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes, inputs, outputs, initializers=(), opset: int = 17, name: str = "test") -> onnx.ModelProto:
    """inputs/outputs: (name, elem_type, shape) tuples; initializers: (name, ndarray) tuples."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def zeros(*shape, dtype=np.float32):
    return np.zeros(shape, dtype=dtype)


@pytest.fixture
def float_type():
    return TensorProto.FLOAT


def analyse_node(node, inputs, outputs, initializers=(), opset: int = 17, contrib: bool = False, expect_ok: bool = True):
    """Analyse a one-node model; ``contrib`` imports the com.microsoft domain."""
    import onnxroof

    model = make_model([node], inputs, outputs, initializers, opset=opset)
    if contrib:
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    (record,) = onnxroof.analyze(model).nodes
    if expect_ok:
        assert record.status == "ok", record.reason
    return record
