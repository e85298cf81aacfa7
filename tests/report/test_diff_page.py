"""report/html/diff_page.py: the diff page, base report_models.matmul_relu (8 columns) against
head (16): the figures of test_diff_tables.py (FLOPs 72 -> 144, latency 240 -> 464 ns)."""

from __future__ import annotations

import pytest
from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.compare.diff import diff_analyses
from onnxroof.report.html.diff_page import diff_page, render_diff_html


@pytest.fixture(scope="module")
def diff(tmp_path_factory):
    targets = [hand_target(tmp_path_factory.mktemp("targets"))]
    return diff_analyses(
        onnxroof.analyze(matmul_relu("base"), targets=targets),
        onnxroof.analyze(matmul_relu("head", columns=16), targets=targets),
    )


def test_the_deltas_and_their_direction(diff):
    page = diff_page(diff, [])
    flops = next(d for d in page.deltas if d["label"] == "FLOPs")
    assert (flops["base"], flops["head"], flops["change"], flops["percent"], flops["direction"]) == (
        "72",
        "144",
        "+72",
        "+100.0%",
        "worse",
    )
    assert page.title == "base → head" and page.budgets_broken == 0


def test_op_types_nodes_and_the_largest_time_changes(diff):
    page = diff_page(diff, [])
    assert [(row["op"], row["base_flops"], row["head_flops"]) for row in page.op_rows] == [
        ("MatMul", "64", "128"),
        ("Relu", "8", "16"),
    ]
    assert page.node_counts == {"added": "0", "removed": "0", "changed": "2", "unchanged": "0"}
    (top,) = page.top_changes
    # the MatMul: 176 -> 336 ns (256 + 16 + 64 bytes at 1 GB/s)
    row = top["rows"][0]
    assert (row["name"], row["base"], row["head"], row["change"]) == ("matmul", "176 ns", "336 ns", "+160 ns")


def test_both_models_on_the_target_s_roofline(diff):
    page = diff_page(diff, [])
    (roofline,) = page.rooflines
    assert roofline["id"] == "diff-roofline-0"
    html = render_diff_html(diff)
    assert html.count('class="dot dot-base') == 2 and html.count('class="dot dot-head') == 2  # a dot per kernel
