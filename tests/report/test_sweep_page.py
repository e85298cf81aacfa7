"""report/html/sweep_page.py: one model at every sweep point. report_models.matmul_relu with an
open batch n, swept at 1 and 4: at n = 4 the FLOPs are 4 x 72 = 288, the peak 4 x 64 = 256 bytes,
and on the hand target the MatMul moves 128 + 64 + 128 = 320 bytes and the Relu 128 + 128: 576 ns."""

from __future__ import annotations

import pytest
from report_models import hand_target, matmul_relu

from onnxroof.compare.sweep import run_sweep
from onnxroof.report.html.sweep_page import render_sweep_html, sweep_page


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    return run_sweep(matmul_relu(batch="n"), [("n", [1, 4])], targets=[hand_target(tmp_path_factory.mktemp("t"))])


def test_a_row_per_point_with_its_totals_and_latency(points):
    page = sweep_page(points)
    assert page.headers == [
        "FLOPs",
        "Params",
        "Peak activations",
        "Latency [hand]",
        "Throughput [hand]",
        "Bound [hand]",
    ]
    first, last = ([cell["text"] for cell in row["cells"]] for row in page.rows)
    assert first[:4] == ["72", "32", "64 B", "≥ 240 ns"]  # peak figures: a latency bound
    assert last[:4] == ["288", "32", "256 B", "≥ 576 ns"]
    assert [row["point_values"] for row in page.rows] == [["1"], ["4"]]


def test_latency_against_the_swept_value_on_a_linear_axis(points):
    chart = sweep_page(points).latency_chart
    # 1 to 4 spans less than 30x: a linear axis, the swept values as ticks, 14 px in from each end
    # of the wide chart's plot (70 to 1240 - 20 = 1220)
    assert [(tick["x"], tick["label"]) for tick in chart["x_ticks"]] == [("84", "1"), ("1206", "4")]
    (line,) = chart["lines"]
    assert line["name"] == "hand" and len(line["points"]) == 2 and line["d"].startswith("M84,")
    assert sweep_page(points).tokens_chart is None  # not a decoder


def test_the_page_renders_and_a_sweep_of_nothing_is_refused(points):
    assert "matmul_relu · sweep over n" in render_sweep_html(points)
    with pytest.raises(ValueError):
        sweep_page([])
