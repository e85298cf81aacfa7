"""report/text/module_table.py: `summary --by module` and `--by op` as terminal tables."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper
from report_models import matmul_relu

import onnxroof
from onnxroof.report.text.module_table import by_module_lines, by_op_lines


def two_layers():
    """x [1, 4] -> two alike layers /layer.i/ (MatMul with a stored [4, 4], Relu). A layer: 16 MACs,
    32 + 4 = 36 FLOPs, 16 parameters (64 bytes); its nodes read and write 16 + 16 bytes each: 64
    bytes of activations. Each step holds two [1, 4] tensors: the peak is 32 bytes."""
    nodes, weights, previous = [], [], "x"
    for i in range(2):
        nodes += [
            helper.make_node("MatMul", [previous, f"W{i}"], [f"m{i}"], name=f"/layer.{i}/matmul"),
            helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"/layer.{i}/relu"),
        ]
        weights.append((f"W{i}", np.ones((4, 4), np.float32)))
        previous = f"r{i}"
    return make_model(nodes, [("x", TensorProto.FLOAT, [1, 4])], [("r1", TensorProto.FLOAT, [1, 4])], weights)


@pytest.fixture(scope="module")
def layered():
    return onnxroof.analyze(two_layers())


def test_alike_layers_show_once_with_their_count_and_one_layer_s_figures(layered):
    title, header, model, layer = by_module_lines(layered)
    assert title.startswith("By module (from the node names")
    assert header.split() == ["module", "x", "nodes", "MACs", "FLOPs", "params", "weights", "activations", "peak"]
    assert model.split() == ["(model)", "4", "32", "72", "32", "128", "B", "128", "B", "32", "B"]
    assert layer.split() == ["layer.0-1", "x2", "2", "16", "36", "16", "64", "B", "64", "B", "32", "B"]
    assert layer.startswith("  ")  # one level down


def test_names_without_scopes_fall_back_to_the_op_types():
    title, _, matmul, relu = by_module_lines(onnxroof.analyze(matmul_relu()))
    assert "carry no module scopes" in title
    # the MatMul reads x (16 B) and writes y (32 B); the Relu reads y and writes z (32 B each)
    assert matmul.split() == ["MatMul", "1", "32", "64", "32", "128", "B", "48", "B", "48", "B"]
    assert relu.split() == ["Relu", "1", "0", "8", "0", "0", "B", "64", "B", "64", "B"]


def test_by_op_sums_the_alike_layers_per_op(layered):
    _, _, matmul, relu = by_op_lines(layered)
    assert matmul.split()[:6] == ["MatMul", "2", "32", "64", "32", "128"]  # two MatMuls of 16 MACs
    assert relu.split()[:6] == ["Relu", "2", "0", "8", "0", "0"]


def test_a_target_adds_a_time_column(tmp_path):
    from report_models import hand_target

    analysis = onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path)])
    _, header, matmul, relu = by_op_lines(analysis)
    assert header.split()[-2:] == ["time", "[hand]"]
    assert matmul.split()[-2:] == ["176", "ns"] and relu.split()[-2:] == ["64", "ns"]
