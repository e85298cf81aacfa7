"""report/html/model_roofline.py: one target's roofline on the model page, for
report_models.matmul_relu on the hand target (1 GFLOP/s, 1 GB/s, one kernel per node)."""

from __future__ import annotations

import pytest
from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.html.chart_context import op_palette
from onnxroof.report.html.model_roofline import roofline_context, top_modules


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    return onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path_factory.mktemp("targets"))])


@pytest.fixture(scope="module")
def roofline(analysis):
    return roofline_context(analysis, analysis.targets[0], 0, op_palette(analysis.nodes))


def test_a_dot_per_kernel_the_largest_share_first_in_the_legend(roofline):
    assert roofline["dot_count"] == "2" and roofline["costed"] == "2"
    # the MatMul takes 176 of 240 ns
    assert roofline["largest"] == "73.3%"
    assert [entry["op"] for entry in roofline["legend"]] == ["MatMul", "Relu"]  # by FLOPs: 64, then 8


def test_the_roof_and_the_slope_are_labelled_with_the_target_s_figures(roofline):
    (roof,) = roofline["roofs"]
    assert roof["label"] == "fp32 · 1 GFLOP/s"
    assert roofline["slopes"][0]["label"] == "DRAM 1 GB/s"


def test_the_whole_model_mark_and_the_summary(roofline):
    (mark,) = roofline["marks"]
    assert mark["label"] == "whole model"
    assert "FLOPs: 72 (72)" in mark["title"] and "DRAM bytes: 240 B" in mark["title"]  # 176 + 64 bytes
    assert roofline["summary"] == "Roofline of matmul_relu on hand: 2 costed nodes; latency 240 ns"


def test_without_scopes_in_the_names_there_are_no_modules_to_colour_by(analysis):
    assert top_modules(analysis) is None
