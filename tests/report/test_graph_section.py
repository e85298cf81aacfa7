"""report/html/graph_section.py: the graph view's section on the model and diff pages."""

from __future__ import annotations

import json

from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.compare.diff import diff_analyses
from onnxroof.report.html.graph_section import diff_graph_context, graph_context


def test_the_section_carries_each_target_and_the_views_as_json(tmp_path):
    context = graph_context(onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path)]))
    assert context is not None and context["targets"] == ["hand"]
    assert json.loads(str(context["json"]))  # the page's script reads it


def test_a_diff_draws_the_head_model_s_graph(tmp_path):
    targets = [hand_target(tmp_path)]
    diff = diff_analyses(
        onnxroof.analyze(matmul_relu("base"), targets=targets),
        onnxroof.analyze(matmul_relu("head", columns=16), targets=targets),
    )
    context = diff_graph_context(diff)
    assert context is not None and context["base_json"]
