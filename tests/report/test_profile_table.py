"""report/text/profile_table.py: `onnxroof profile`'s table, from a profile made by hand (no
onnxruntime): the small model of report_models.py, its MatMul measured at twice the prediction."""

from __future__ import annotations

import pytest
from report_models import MATMUL_S, RELU_S, hand_profile

from onnxroof.measure.profiling import Coverage, NodeComparison, ProfileResult
from onnxroof.report.text.profile_table import render_profile_table


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> ProfileResult:
    return hand_profile(tmp_path_factory.mktemp("targets"))


def test_a_row_per_node_with_its_times_and_ratio(result):
    lines = render_profile_table(result).splitlines()
    matmul = next(line for line in lines if line.startswith("matmul"))
    assert matmul.split() == ["matmul", "MatMul", "dram", "176", "ns", "352", "ns", "2.00x"]
    relu = next(line for line in lines if line.startswith("relu"))
    assert relu.split()[-1] == "1.00x"  # measured as predicted; its own kernel: no note


def test_the_inserted_kernel_and_the_totals(result):
    text = render_profile_table(result)
    assert "  + copy_in (MemcpyFromHost): 16 ns, inserted by onnxruntime, no ONNX node" in text
    # 352 + 64 + 16 = 432 ns measured; 432 / 240 = 1.80; (240 - 432) / 432 = -44%
    # one line says what the error is against, and why (issue 47)
    assert (
        "predicted 240 ns · measured 432 ns as the sum of kernel medians (the prediction is a sum of kernel "
        "times) · prediction error -44% against that sum (measured/predicted 1.80x)"
    ) in text


def test_the_header_says_how_it_was_measured_and_the_notes_close_it(result):
    lines = render_profile_table(result).splitlines()
    assert lines[0].startswith("onnxroof profile · matmul_relu · inputs: x 1x4 float32")
    assert lines[1] == (
        "measured: onnxruntime 1.0 CPU, optimization disable, 1 intra-op threads, median of 10 runs after 2 warm-up"
    )
    assert "note: a note" in lines  # then the target's own notes (no energy figures here)


def test_a_node_split_with_others_and_one_not_run_are_said_so(result):
    from dataclasses import replace

    split = replace(
        result,
        nodes=[
            NodeComparison("relu", "Relu", "dram", RELU_S, RELU_S, "matmul", "MatMul+Relu", True, Coverage.SPLIT),
            NodeComparison("matmul", "MatMul", "dram", MATMUL_S, None, None, None, False, Coverage.REMOVED),
        ],
    )
    text = render_profile_table(split)
    assert "in matmul (MatMul+Relu), split" in text and "not run by onnxruntime (view or folded)" in text
    assert "note: 1 node(s) ran inside fused kernels" in text
