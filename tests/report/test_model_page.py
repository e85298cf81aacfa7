"""report/html/model_page.py: the model page's header, totals, hotspots and op types, for
report_models.matmul_relu (32 MACs, 72 FLOPs, 32 parameters, a 64-byte peak; 240 ns on the hand
target, 176 of them the MatMul's)."""

from __future__ import annotations

import pytest
from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.html import model_page
from onnxroof.report.html.model_page import ModelHeader


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    return onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path_factory.mktemp("targets"))])


def test_the_header_names_the_model_its_type_batch_and_targets(analysis):
    header = model_page._model_context(analysis)
    assert isinstance(header, ModelHeader)
    assert (header.name, header.opset, header.file_size, header.nodes) == ("matmul_relu", "17", "in memory", "2")
    assert header.inputs == [{"name": "x", "shape": "1×4", "dtype": "float32"}]
    # both costed nodes are float32: the model's own type
    assert (header.dtype, header.dtype_title) == (
        "float32 (as stored)",
        "the model's own element types; float32: 2 costed nodes",
    )
    assert (header.batch, header.targets) == ("from the input shapes", "hand")


def test_an_open_batch_is_assumed_and_a_dtype_recosts():
    header = model_page._model_context(onnxroof.analyze(matmul_relu(batch="n"), dtype="fp16"))
    assert header.batch == "n=1 (assumed)" and header.batch_title.startswith("n=1 (a batch dim the inputs leave open")
    assert header.dtype == "fp16 (re-costed)"
    assert (header.targets, header.targets_title) == ("none", "no --target given: no roofline, latency or energy")


def test_the_totals_cards(analysis):
    totals = model_page._totals_context(analysis.totals, analysis.memory)
    cards = (totals["params"], totals["param_bytes"], totals["mac_flops"], totals["flops"])
    assert cards == ("32", "128 B", "64", "72")
    assert totals["other_flops"] == "8"  # the Relu's, outside multiply-accumulates
    assert totals["peak"]["value"] == "64 B" and totals["all_counted"]


def test_the_hotspots_are_the_slowest_kernels_on_the_first_target(analysis):
    hotspots = model_page._hotspots_context(analysis)
    first, second = hotspots["rows"]
    assert (first["name"], first["time"], first["share"], first["dram"]) == ("matmul", "176 ns", "73.3%", "176 B")
    assert (second["name"], second["share"]) == ("relu", "26.7%")  # 64 of 240 ns
    assert hotspots["sum"] == "100.0%"


def test_an_op_type_row_has_its_share_of_the_flops_and_of_each_target_s_time(analysis):
    matmul, relu = model_page._ops_context(analysis.nodes, analysis.totals.flops, analysis.targets)
    assert (matmul["op"], matmul["share"], matmul["share_title"]) == ("MatMul", "88.9%", "64 of 72 FLOPs")
    assert matmul["times"][0]["share"] == "73.3%" and relu["times"][0]["share"] == "26.7%"
