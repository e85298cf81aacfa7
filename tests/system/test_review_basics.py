"""What a reviewer meets first (issue 21): a model is named by its file (every PyTorch export's
graph is "main_graph"), with the graph's own name beside it only when that says more; ``-o -``
writes to standard output."""

from __future__ import annotations

import json

import onnx
import pytest
from conftest import make_model, run
from onnx import TensorProto, helper

F32 = TensorProto.FLOAT


def relu_file(tmp_path, file_name: str, graph_name: str):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1, 4])], [("y", F32, [1, 4])], name=graph_name
    )
    path = tmp_path / file_name
    onnx.save(model, path)
    return path


def test_two_exports_both_called_main_graph_are_told_apart_by_their_files(capsys, tmp_path):
    a, b = relu_file(tmp_path, "resnet_a.onnx", "main_graph"), relu_file(tmp_path, "resnet_b.onnx", "main_graph")
    code, out, err = run(capsys, "compare", a, b, "--format", "json")
    assert code == 0, err
    assert [m["name"] for m in json.loads(out)["models"]] == ["resnet_a", "resnet_b"]
    code, out, err = run(capsys, "diff", a, b, "--format", "json")
    assert code == 0, err
    diff = json.loads(out)
    assert (diff["base"]["name"], diff["head"]["name"]) == ("resnet_a", "resnet_b")


def test_the_json_document_keeps_the_graphs_own_name(capsys, tmp_path):
    path = relu_file(tmp_path, "resnet.onnx", "main_graph")
    code, out, err = run(capsys, "summary", path, "--format", "json")
    assert code == 0, err
    model = json.loads(out)["model"]
    assert (model["name"], model["graph_name"]) == ("resnet", "main_graph")


def test_a_graph_name_that_says_more_is_shown_beside_the_files(capsys, tmp_path):
    path = relu_file(tmp_path, "candidate.onnx", "encoder_v2")
    code, out, _ = run(capsys, "summary", path)
    assert code == 0 and "· candidate (graph encoder_v2) ·" in out.splitlines()[0]
    code, out, _ = run(capsys, "summary", relu_file(tmp_path, "plain.onnx", "main_graph"))
    assert code == 0 and "· plain ·" in out.splitlines()[0]  # an exporter's default graph name says nothing


def test_a_sweep_of_a_file_is_named_by_the_file_not_in_memory(capsys, tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F32, ["n", 4])], [("y", F32, ["n", 4])], name="main_graph"
    )
    path = tmp_path / "sweepme.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "summary", path, "--sweep", "n=1,2", "--format", "json")
    assert code == 0, err
    points = json.loads(out)["points"]
    assert [(p["model"]["name"], p["model"]["path"]) for p in points] == [("sweepme", str(path))] * 2


def test_dash_as_the_output_file_is_standard_output(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "report", "--example", "shallownet", "-o", "-")
    assert code == 0 and out.startswith("<!DOCTYPE html>") and out.rstrip().endswith("</html>")
    assert err == "" and list(tmp_path.iterdir()) == []  # no file named "-", no "wrote" line
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--format", "json", "-o", "-")
    assert code == 0 and json.loads(out)["totals"]["mac_flops"] == 2_424_832  # cost-model.md section 2


def test_a_diff_lists_the_nodes_that_cost_most_first_and_free_ones_last(capsys, tmp_path):
    # base x [1, 4], head x [2, 4]: the Identity (a view: no FLOPs, no bytes) changes only its
    # shape; the MatMul by w [4, 8] goes from 1 x 4 x 8 = 32 to 64 MACs. In graph order the
    # Identity comes first; by impact the MatMul does.
    import numpy as np

    def model(batch: int):
        return make_model(
            [
                helper.make_node("Identity", ["x"], ["a"], name="copy"),
                helper.make_node("MatMul", ["a", "w"], ["y"], name="project"),
            ],
            [("x", F32, [batch, 4])],
            [("y", F32, [batch, 8])],
            [("w", np.zeros((4, 8), np.float32))],
        )

    base, head = tmp_path / "base.onnx", tmp_path / "head.onnx"
    onnx.save(model(1), base)
    onnx.save(model(2), head)
    code, out, err = run(capsys, "diff", base, head, "--format", "markdown")
    assert code == 0, err
    assert out.index("| project |") < out.index("| copy |")
    code, out, err = run(capsys, "diff", base, head)
    assert code == 0, err
    assert out.index(" project (MatMul)") < out.index(" copy (Identity)")


def test_a_markdown_summary_line_shows_no_backslash(capsys):
    # GFM does not read Markdown inside <summary>: "h100\-sxm" would show its backslash
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--target", "h100-sxm", "--format", "markdown")
    assert code == 0
    summaries = [line for line in out.splitlines() if "<summary>" in line]
    assert summaries and all("\\" not in line for line in summaries)
    assert any("on h100-sxm</summary>" in line for line in summaries)


def test_bundled_target_names_are_case_insensitive(capsys):
    code, out, err = run(capsys, "summary", "--example", "shallownet", "--target", "H100-SXM", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["targets"][0]["name"] == "h100-sxm"


def test_a_mistyped_command_or_choice_gets_a_suggestion(capsys):
    code, _, err = run(capsys, "sumary", "--example", "shallownet")
    assert code == 2 and "did you mean 'summary'?" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "summary", "--example", "shallownet", "--dtype", "fp33")
    assert code == 2 and "did you mean 'fp32'?" in err


def test_node_numbers_and_api_errors_speak_each_interface_s_language(capsys):
    import onnxroof
    from onnxroof.core.errors import UsageError
    from onnxroof.core.examples import build_example
    from onnxroof.report.html.pages import render_html

    # the first node is number 0 in the terminal table and in the HTML node table alike
    analysis = onnxroof.analyze(build_example("shallownet"))
    html = render_html(analysis)
    table = html[html.index('id="node-table"') :]  # the node table (hotspots are ranked from 1)
    assert table[table.index('<td class="num idx">') :].startswith('<td class="num idx">0</td>')
    code, out, _ = run(capsys, "summary", "--example", "shallownet")
    rows = out.splitlines()
    header = next(i for i, line in enumerate(rows) if line.lstrip().startswith("#  name"))
    assert rows[header + 1].split()[:2] == ["0", "conv2d_0"]
    # the Python API names its arguments, the command line its flags
    with pytest.raises(UsageError) as caught:
        onnxroof.analyze(build_example("shallownet"), targets=["h100"])
    assert str(caught.value).startswith("targets h100: no such target") and "--target" not in str(caught.value)
    code, _, err = run(capsys, "summary", "--example", "shallownet", "--target", "h100")
    assert code == 2 and "--target h100: no such target" in err


def test_a_two_dim_sweep_draws_one_line_per_value_of_the_second(tmp_path):
    # batch 1, 4 x dtype fp32, int8 on one target: the latency chart has two lines of two points
    # (not one zig-zag of four), and the roofline two paths
    from onnxroof.compare.sweep import run_sweep
    from onnxroof.core.examples import build_example
    from onnxroof.report.html.pages import render_sweep_html

    points = run_sweep(build_example("shallownet"), [("batch", [1, 4]), ("dtype", ["fp32", "int8"])], targets=["l4"])
    html = render_sweep_html(points)
    assert html.count('class="sweep-path"') == 2
    chart = html[html.index('id="xy-latency"') :]
    chart = chart[: chart.index("</svg>")]
    assert "l4 · dtype=fp32" in chart and "l4 · dtype=int8" in chart
