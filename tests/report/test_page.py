"""report/html/page.py: what several pages share: target cards, cells, bars and the JSON that is
safe inside a <script>; report_models.matmul_relu on the hand target (240 ns, 72 FLOPs)."""

from __future__ import annotations

import pytest
from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.html.page import (
    bar_width,
    metric_cell,
    model_side,
    not_analysed_cell,
    report_on,
    script_json,
    target_capacities,
    target_card,
    value_cell,
)


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    """The small model on the hand target: 240 ns, all of it DRAM-bound."""
    return onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path_factory.mktemp("targets"))])


def test_the_target_card_gives_latency_throughput_bound_and_utilization(analysis):
    card = target_card(analysis.targets[0])
    # peak figures only: the latency is at least 240 ns, the throughput at most 1 / 240 ns
    assert (card.latency, card.throughput) == ("≥ 240 ns", "≤ 4,170,000/s")
    assert (card.bound, card.time_split, card.point_bound) == ("DRAM", "DRAM 100%", "DRAM")
    # 72 FLOPs in 240 ns: 0.3 GFLOP/s of the 1 GFLOP/s roof
    assert card.utilization == "30.0%"
    assert card.energy == "n/a"  # the hand target gives no energy figures


def test_a_report_is_found_by_its_target_s_name(analysis):
    assert report_on(analysis, "hand") is analysis.targets[0] and report_on(analysis, "other") is None
    assert target_capacities(analysis) == []  # nothing on chip


def test_the_model_side_names_the_model_and_its_inputs(analysis):
    side = model_side(analysis, "base")
    assert (side.name, side.path, side.nodes, side.inputs) == ("matmul_relu", "in memory", "2", "x 1×4 float32")


def test_cells_format_their_value_and_keep_the_exact_one_as_a_title():
    assert metric_cell(2048, "bytes", "bytes") == {"text": "2 KiB", "title": "2,048 bytes", "value": "2048", "cls": ""}
    assert metric_cell(0, "count", "FLOPs")["cls"] == "zero"
    assert metric_cell(None, "bytes", "bytes")["cls"] == "na"
    assert value_cell(1500, "count", "FLOPs")["text"] == "1.5 k"
    assert not_analysed_cell()["text"] == "—"


def test_a_bar_is_full_at_100_percent_and_no_more():
    assert bar_width(0.25) == "25.00%" and bar_width(1.7) == "100.00%"


def test_script_json_cannot_close_the_script_and_has_no_nan():
    assert script_json({"name": "</script>", "value": float("nan")}) == '{"name":"\\u003c/script\\u003e","value":null}'
