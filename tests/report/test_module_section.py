"""report/html/module_section.py: the module tree's table, for test_module_table.two_layers (two
alike layers of 16 MACs and 36 FLOPs) on the hand target, where a layer takes 96 + 32 = 128 ns
(its MatMul moves 64 + 16 + 16 bytes, its Relu 16 + 16)."""

from __future__ import annotations

from report_models import hand_target, matmul_relu
from test_module_table import two_layers

import onnxroof
from onnxroof.report.html.module_section import OPEN_LEVELS, modules_context


def test_the_model_row_then_the_alike_layers_once_with_their_count(tmp_path):
    context = modules_context(onnxroof.analyze(two_layers(), targets=[hand_target(tmp_path)]))
    model, layers = context["rows"]
    assert (model["label"], model["nodes"], model["macs"], model["flops"]) == ("(model)", "4", "32", "72")
    assert model["times"] == [{"text": "256 ns", "share": "100.0%"}]  # 2 x 128 ns
    assert (layers["label"], layers["count"], layers["flops"], layers["level"]) == ("layer.0-1", 2, "36", 1)
    assert layers["times"][0]["text"] == "128 ns"
    assert all(row["open"] for row in context["rows"] if row["level"] < OPEN_LEVELS)


def test_names_without_scopes_have_no_module_section():
    assert modules_context(onnxroof.analyze(matmul_relu())) is None
