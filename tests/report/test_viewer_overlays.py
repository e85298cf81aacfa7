"""The viewer overlays (report/netron.py, report/model_explorer.py) on report_models.matmul_relu and
its hand target, every figure worked out in report_models' docstring: the MatMul 32 MACs, 64 FLOPs,
32 parameters, 176 bytes (128 + 16 + 32; 64/176 = 0.364 FLOP/byte), 176 ns DRAM-bound; the Relu 8
FLOPs, 64 bytes (0.125 FLOP/byte), 64 ns DRAM-bound; the latency 240 ns, so the shares are 176/240 =
73.3% and 64/240 = 26.7%."""

from __future__ import annotations

import json

from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.model_explorer import node_data_files, render_node_data
from onnxroof.report.netron import SIGNATURE, netron_attachment, render_netron
from onnxroof.report.overlays import placed_nodes, verdicts


def _analysis(tmp_path, model=None):
    return onnxroof.analyze(model or matmul_relu(), targets=[hand_target(tmp_path)])


def _metrics(attachment: dict, kind: str, target: str) -> dict:
    return {
        item["name"]: item["value"]
        for item in attachment["metrics"]
        if item["kind"] == kind and item["target"] == target
    }


def test_placed_nodes_are_each_nodes_kernel_time_share_and_bound(tmp_path):
    placed = placed_nodes(_analysis(tmp_path))["hand"]
    assert placed["matmul"].kernel == "matmul" and placed["matmul"].bound == "dram"
    assert abs(placed["matmul"].time_s - 176e-9) < 1e-15 and abs(placed["matmul"].share - 176 / 240) < 1e-9
    assert abs(placed["relu"].time_s - 64e-9) < 1e-15 and abs(placed["relu"].share - 64 / 240) < 1e-9


def test_netron_attachment_holds_each_nodes_figures_under_its_name(tmp_path):
    attachment = netron_attachment(_analysis(tmp_path))
    assert attachment["signature"] == SIGNATURE == "netron:attachment"
    matmul = _metrics(attachment, "node", "matmul")
    assert (matmul["MACs"], matmul["FLOPs"], matmul["parameters"], matmul["bytes"]) == (32, 64, 32, 176)
    assert matmul["intensity"] == "0.364 FLOP/byte"
    assert (matmul["hand: kernel"], matmul["hand: time"], matmul["hand: share"], matmul["hand: bound"]) == (
        "matmul",
        "176 ns",
        "73.3%",
        "DRAM",
    )
    relu = _metrics(attachment, "node", "relu")
    assert (relu["MACs"], relu["FLOPs"], relu["bytes"], relu["intensity"]) == (0, 8, 64, "0.125 FLOP/byte")
    assert (relu["hand: time"], relu["hand: share"]) == ("64 ns", "26.7%")
    # every item has the five fields Netron reads
    assert all(set(item) == {"kind", "target", "name", "value", "type"} for item in attachment["metrics"])


def test_netron_model_items_are_the_totals_latency_and_verdict(tmp_path):
    analysis = _analysis(tmp_path)
    review = onnxroof.review(analysis)
    model = _metrics(netron_attachment(analysis, review), "model", "")
    # 32 + 0 MACs; 64 + 8 FLOPs; W's 32 parameters, 128 bytes
    assert (model["MACs"], model["FLOPs"], model["parameters"], model["parameter bytes"]) == (32, 72, 32, 128)
    assert model["hand: latency"].startswith("240 ns")
    first = verdicts(analysis, review)["hand"]
    assert model["hand: verdict"] == (first.title if first else "nothing to change")


def test_netron_unnamed_node_goes_on_its_output_and_is_counted(tmp_path):
    model = matmul_relu()
    model.graph.node[1].name = ""  # Netron finds a node by its name only
    attachment = netron_attachment(_analysis(tmp_path, model))
    assert _metrics(attachment, "value", "z")["FLOPs"] == 8
    assert not _metrics(attachment, "node", "Relu_1")
    notes = {item["name"]: item["value"] for item in attachment["metadata"]}
    assert notes["onnxroof: nodes shown on their output"].startswith("1 ")


def test_netron_repeated_names_go_on_the_outputs(tmp_path):
    model = matmul_relu()
    model.graph.node[0].name = model.graph.node[1].name = "same"  # one Netron key for two nodes
    attachment = netron_attachment(_analysis(tmp_path, model))
    assert not _metrics(attachment, "node", "same")
    assert _metrics(attachment, "value", "y")["MACs"] == 32 and _metrics(attachment, "value", "z")["FLOPs"] == 8


def test_netron_text_is_json_one_item_a_line(tmp_path):
    text = render_netron(_analysis(tmp_path))
    attachment = json.loads(text)
    # "{", the signature, each list's opening and closing lines, "}": 7 lines besides the items
    assert text.count("\n") == 7 + len(attachment["metadata"]) + len(attachment["metrics"])


def test_model_explorer_files_per_target_and_metric(tmp_path):
    files = node_data_files(_analysis(tmp_path))
    assert list(files) == [("hand", "share"), ("hand", "bound")]
    share = files[("hand", "share")]["matmul_relu"]  # the graph's name is the adapter's graph id
    # percent: 100 x 176/240 and 100 x 64/240
    assert share["results"] == {"matmul": {"value": 73.3333}, "relu": {"value": 26.6667}}
    assert [stop["stop"] for stop in share["gradient"]][0 :: len(share["gradient"]) - 1] == [0, 1]
    bound = files[("hand", "bound")]["matmul_relu"]
    assert {key: result["value"] for key, result in bound["results"].items()} == {"matmul": "DRAM", "relu": "DRAM"}
    assert all(result["bgColor"].startswith("#") for result in bound["results"].values())
    assert json.loads(render_node_data(files[("hand", "bound")])) == files[("hand", "bound")]


def test_model_explorer_unnamed_node_keyed_by_its_output(tmp_path):
    model = matmul_relu()
    model.graph.node[1].name = ""
    results = node_data_files(_analysis(tmp_path, model))[("hand", "share")]["matmul_relu"]["results"]
    assert set(results) == {"matmul", "z"}
