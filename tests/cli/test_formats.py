"""Every --format of every command, through the entry point (issue 18): each output is the complete
document its format promises (JSON that parses with its documented keys, an HTML page from
<!doctype html> to </html> with its sections, a Markdown table with its header row, a CSV or text
table with one row per node or model), carrying figures derived by hand. ShallowNet's figures come
from ../shared/docs/cost-model.md section 2; the others are derived in comments."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from conftest import run
from onnx import TensorProto

import onnxroof
from onnxroof.core.examples import build_example
from onnxroof.roofline.targets import parse_target

F32 = TensorProto.FLOAT
SHALLOWNET_NODES = ["conv2d_0", "activation_0", "flatten_0", "dense_0", "softmax_0"]
SHALLOWNET_MAC_FLOPS, SHALLOWNET_PARAMS = 2_424_832, 328_586
# the separable version: a depthwise 3x3 on 3 channels without bias (27 weights) and a 1x1 3 -> 32
# with bias (96 + 32): 155 conv parameters instead of 896, so 741 fewer; its MACs are
# 32 x 32 x 3 x (9 + 32) = 125,952, so 251,904 MAC-FLOPs + the dense layer's 655,360 = 907,264
SEPARABLE_PARAMS, SEPARABLE_MAC_FLOPS = SHALLOWNET_PARAMS - 741, 907_264
PAIR = ("example:shallownet", "example:shallownet-separable")


def complete_html_page(text: str) -> bool:
    return text.lstrip().lower().startswith("<!doctype html") and text.rstrip().endswith("</html>")


def markdown_tables(text: str) -> list[list[str]]:
    """The header rows of the Markdown tables in ``text``: a row of cells followed by a
    separator row of dashes."""
    lines = text.splitlines()
    headers = []
    for line, following in zip(lines, lines[1:]):
        if line.startswith("|") and re.fullmatch(r"\|( *:?-{3,}:? *\|)+", following.strip()):
            headers.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return headers


# --- summary -----------------------------------------------------------------------------------


def test_summary_table_has_the_totals_and_one_row_per_node(capsys):
    code, out, err = run(capsys, "summary", "--example", "shallownet")
    assert code == 0 and err == ""
    assert f"({SHALLOWNET_MAC_FLOPS:,})" in out and f"({SHALLOWNET_PARAMS:,};" in out
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert [row[1] for row in rows] == SHALLOWNET_NODES


def test_summary_json_is_exactly_the_python_apis_document(capsys):
    # README: result.to_dict() is "exactly what `summary --format json` prints"
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--target", "myriad-x", "--format", "json")
    assert code == 0
    document = json.loads(out)
    expected = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"]).to_dict()
    assert document == json.loads(json.dumps(expected))
    documented = {
        "schema",
        "version",
        "conventions",
        "model",
        "complete",
        "warnings",
        "unresolved_dims",
        "totals",
        "nodes",
        "dtype",
        "batch",
        "memory",
        "targets",
    }
    assert documented <= set(document) and document["schema"] == "onnxroof/1"
    assert {"peak_bytes", "best_order", "timeline"} <= set(document["memory"])
    assert document["targets"][0]["name"] == "myriad-x" and "model_point" in document["targets"][0]


def test_summary_csv_parses_with_one_row_per_node_and_exact_integers(capsys):
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [row["name"] for row in rows] == SHALLOWNET_NODES
    # the conv: 2 x 32 x 32 x 32 x 3 x 3 x 3 = 1,769,472 MAC-FLOPs and 864 + 32 parameters
    conv = rows[0]
    assert int(conv["mac_flops"]) == 1_769_472 and int(conv["params"]) == 896
    assert sum(int(row["mac_flops"]) for row in rows) == SHALLOWNET_MAC_FLOPS


def test_summary_markdown_is_a_totals_table_and_a_node_table(capsys):
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--format", "markdown")
    assert code == 0
    headers = markdown_tables(out)
    assert [h[:2] for h in headers] == [["params", "param bytes"], ["node", "op"]]
    # the node table: one row per node, conv2d_0 first (1.77 M FLOPs, the most); _ is escaped
    node_rows = [line for line in out.splitlines() if line.startswith("| ") and "\\_" in line]
    assert len(node_rows) == 5 and node_rows[0].startswith("| conv2d\\_0 | Conv | 1.77 M |")


def test_summary_sweep_table_has_one_row_per_point_of_the_product(capsys):
    code, out, _ = run(
        capsys, "summary", "--example", "shallownet", "--sweep", "batch=1,2", "--sweep", "dtype=model,int8", "-q"
    )
    assert code == 0
    rows = [line.split() for line in out.splitlines()[1:] if line.strip()]
    # 2 batches x 2 dtypes; the param bytes: 328,586 x 4 B = 1.25 MiB stored, x 1 B = 321 KiB in int8
    assert [(row[0], row[1]) for row in rows] == [("1", "model"), ("1", "int8"), ("2", "model"), ("2", "int8")]
    assert [" ".join(row[6:8]) for row in rows] == ["1.25 MiB", "321 KiB"] * 2


def test_summary_sweep_json_holds_one_full_document_per_point(capsys):
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--sweep", "batch=1,3", "--format", "json", "-q")
    assert code == 0
    document = json.loads(out)
    assert document["schema"] == "onnxroof-sweep/1" and document["symbols"] == ["batch"]
    points = document["points"]
    assert [p["values"] for p in points] == [{"batch": 1}, {"batch": 3}]
    assert all(p["schema"] == "onnxroof/1" for p in points)
    assert [p["totals"]["mac_flops"] for p in points] == [SHALLOWNET_MAC_FLOPS, 3 * SHALLOWNET_MAC_FLOPS]


# --- report ------------------------------------------------------------------------------------


def test_report_page_is_complete_and_embeds_the_json_document_of_the_same_flags(capsys, tmp_path):
    page = tmp_path / "report.html"
    flags = ["--example", "shallownet", "--target", "myriad-x", "--target", "h100-sxm", "--dtype", "fp16"]
    code, _, err = run(capsys, "report", *flags, "-o", page)
    assert code == 0 and f"wrote {page}" in err
    text = page.read_text()
    assert complete_html_page(text)
    for section in ('id="hotspots"', 'id="memory"', 'id="nodes"', 'id="roofline-0"', 'id="roofline-1"'):
        assert section in text
    embedded = re.search(r'<script type="application/json" id="onnxroof-data">(.*?)</script>', text, re.S)
    code, out, _ = run(capsys, "summary", *flags, "--format", "json")
    assert json.loads(embedded.group(1)) == json.loads(out)


def test_report_without_o_writes_the_models_name_dot_report_html(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "report", "--example", "shallownet")
    assert code == 0 and out == ""
    assert complete_html_page((tmp_path / "shallownet.report.html").read_text())
    assert "wrote shallownet.report.html" in err


# --- diff --------------------------------------------------------------------------------------


def test_diff_table_has_one_line_per_total_with_base_head_and_change(capsys):
    code, out, _ = run(capsys, "diff", *PAIR)
    assert code == 0
    assert out.startswith("onnxroof diff: shallownet -> shallownet_separable")
    # the headline, then one indented line per total: name, base, head, change, percent
    parameters = next(line for line in out.splitlines() if line.startswith("  parameters "))
    assert parameters.split()[1:] == ["329", "k", "328", "k", "\u2212741", "\u22120.2%"]


def test_diff_json_is_the_diff_document_with_exact_changes_and_budgets(capsys):
    code, out, _ = run(capsys, "diff", *PAIR, "--target", "myriad-x", "--format", "json", "--fail-if", "params>5M")
    assert code == 0
    document = json.loads(out)
    assert document["schema"] == "onnxroof-diff/1"
    assert {"base", "head", "totals", "targets", "op_types", "nodes", "budgets"} <= set(document)
    totals = {d["key"]: d for d in document["totals"]}
    assert (totals["params"]["base"], totals["params"]["head"], totals["params"]["change"]) == (
        SHALLOWNET_PARAMS,
        SEPARABLE_PARAMS,
        -741,
    )
    assert totals["mac_flops"]["head"] == SEPARABLE_MAC_FLOPS
    assert list(document["targets"]) == ["myriad-x"]
    assert document["budgets"] == [{"budget": "params>5M", "value": SEPARABLE_PARAMS, "broken": False}]
    # the separable model adds one node (its second conv) and changes the first
    kinds = sorted(n["kind"] for n in document["nodes"] if n["kind"] != "unchanged")
    assert kinds == ["added", "changed"]


def test_diff_marks_a_change_only_past_its_threshold(capsys):
    # the separable model has 741 fewer parameters of 328,586 + 741 = 329,327: -0.225 %, below the
    # default 2 %, so neither better nor worse; FLOPs -61.7 % is better; --threshold 0% marks both
    out = run(capsys, "diff", *PAIR, "--format", "markdown")[1]
    assert "| parameters | 329 k | 328 k | \u2212741 | \u26aa \u22120.2% |" in out
    assert "FLOPs \U0001f7e2 \u221261.7%" in out
    out = run(capsys, "diff", *PAIR, "--format", "markdown", "--threshold", "0%")[1]
    assert "| parameters | 329 k | 328 k | \u2212741 | \U0001f7e2 \u22120.2% |" in out
    code, _, err = run(capsys, "diff", *PAIR, "--threshold", "lots")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--threshold" in err


def test_diff_markdown_is_a_metric_table_with_its_header_row(capsys):
    code, out, _ = run(capsys, "diff", *PAIR, "--format", "markdown")
    assert code == 0
    # the separable model's added conv has no base time: "–", not "0 ns"
    timed = run(capsys, "diff", *PAIR, "--target", "myriad-x", "--format", "markdown")[1]
    assert re.search(r"\| conv2d\\_1 \| – \| [0-9.]+ µs \|", timed)
    assert markdown_tables(out)[0] == ["metric", "base", "head", "change", "%"]
    assert "| parameters | 329 k | 328 k | \u2212741 |" in out


def test_diff_html_is_a_complete_page_with_a_roofline_per_target(capsys, tmp_path):
    page = tmp_path / "diff.html"
    code, _, _ = run(
        capsys, "diff", *PAIR, "--target", "myriad-x", "--target", "h100-sxm", "--format", "html", "-o", page
    )
    assert code == 0
    text = page.read_text()
    assert complete_html_page(text) and 'id="deltas"' in text and "shallownet_separable" in text
    assert 'id="diff-roofline-0"' in text and 'id="diff-roofline-1"' in text and 'id="diff-roofline-2"' not in text


def test_diff_writes_its_comment_and_its_page_from_one_run(capsys, tmp_path):
    # the PR Action's step: the Markdown comment to -o and the page to --html, from one analysis of
    # each side (the page is the one --format html writes alone); a page on the -o file is refused
    comment, page, alone = tmp_path / "comment.md", tmp_path / "both.html", tmp_path / "alone.html"
    code, _, _ = run(
        capsys, "diff", *PAIR, "--target", "myriad-x", "--format", "markdown", "-o", comment, "--html", page
    )
    assert code == 0 and markdown_tables(comment.read_text())[0] == ["metric", "base", "head", "change", "%"]
    run(capsys, "diff", *PAIR, "--target", "myriad-x", "--format", "html", "-o", alone)
    assert complete_html_page(page.read_text()) and page.read_text() == alone.read_text()
    code, _, err = run(capsys, "diff", *PAIR, "--format", "markdown", "-o", comment, "--html", comment)
    assert code == 2 and "--html and -o name the same file" in err


# --- compare -----------------------------------------------------------------------------------


def test_compare_table_has_a_header_and_one_row_per_model_in_the_order_given(capsys):
    code, out, _ = run(capsys, "compare", PAIR[1], PAIR[0], "--target", "myriad-x")
    assert code == 0
    # the totals, then a block per target, each within 120 columns
    totals, block = out.split("\n\n")
    header, *rows = totals.splitlines()
    assert header.split()[:2] == ["model", "params"]
    assert [row.split()[0] for row in rows] == ["shallownet_separable", "shallownet"]
    title, target_header, *target_rows = block.splitlines()
    assert title == "target myriad-x" and target_header.split()[:2] == ["model", "latency"]
    assert [row.split()[0] for row in target_rows] == ["shallownet_separable", "shallownet"]
    assert max(len(line) for line in out.splitlines()) <= 120


def test_compare_markdown_is_one_table_with_a_row_per_model(capsys):
    code, out, _ = run(capsys, "compare", *PAIR, "--format", "markdown")
    assert code == 0
    assert markdown_tables(out) == [
        ["model", "params", "param bytes", "MAC-FLOPs", "FLOPs", "peak activations", "best-order peak"]
    ]
    assert "| shallownet | 329 k |" in out and "| shallownet\\_separable | 328 k |" in out


def test_compare_json_lists_the_models_in_the_order_given_with_exact_totals(capsys):
    code, out, _ = run(capsys, "compare", PAIR[1], PAIR[0], "--format", "json")
    assert code == 0
    document = json.loads(out)
    assert document["schema"] == "onnxroof-compare/1"
    assert [(m["name"], m["totals"]["params"], m["totals"]["mac_flops"]) for m in document["models"]] == [
        ("shallownet_separable", SEPARABLE_PARAMS, SEPARABLE_MAC_FLOPS),
        ("shallownet", SHALLOWNET_PARAMS, SHALLOWNET_MAC_FLOPS),
    ]


def test_compare_html_is_a_complete_page_with_totals_and_a_roofline_per_target(capsys, tmp_path):
    page = tmp_path / "compare.html"
    code, _, _ = run(capsys, "compare", *PAIR, "--target", "myriad-x", "--target", "l4", "--format", "html", "-o", page)
    assert code == 0
    text = page.read_text()
    assert complete_html_page(text) and 'id="totals"' in text
    assert 'id="compare-roofline-0"' in text and 'id="compare-roofline-1"' in text


# --- explain, ops --------------------------------------------------------------------------------


def test_explain_prints_the_rule_with_the_nodes_own_numbers(capsys):
    code, out, _ = run(capsys, "explain", "--example", "shallownet", "dense_0")
    assert code == 0
    # Gemm 32,768 -> 10: 327,680 MACs, 327,690 parameters (weights + bias)
    assert out.startswith("node    dense_0  (Gemm")
    assert "327,680" in out and "params 327,690" in out


def test_ops_is_markdown_with_one_table_per_family(capsys):
    code, out, _ = run(capsys, "ops")
    assert code == 0
    families = [line[3:] for line in out.splitlines() if line.startswith("## ")]
    headers = markdown_tables(out)
    assert len(families) >= 10 and len(headers) == len(families)
    assert all(h == ["domain", "op", "rule", "argument inputs"] for h in headers)


# --- profile and calibrate (real runs on tiny inputs; structure only, nothing timed) ------------


def test_profile_table_has_a_row_per_node_and_the_totals_line(capsys, conv_relu):
    pytest.importorskip("onnxruntime")
    code, out, _ = run(
        capsys, "profile", conv_relu, "--dim", "n=1", "--target", "myriad-x", "--runs", "1", "--warmup", "0", "-q"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("onnxroof profile · ") and lines[0].endswith("inputs: x 1x2x8x8 float32")
    assert "target myriad-x" in lines[2]
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["name", "op"])
    assert [line.split()[0] for line in lines[header + 1 : header + 3]] == ["conv", "relu"]
    assert any(line.startswith("predicted ") and " measured " in line for line in lines)


def test_profile_json_is_the_profile_document(capsys, conv_relu):
    pytest.importorskip("onnxruntime")
    code, out, _ = run(
        capsys,
        "profile",
        conv_relu,
        "--dim",
        "n=1",
        "--target",
        "myriad-x",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--format",
        "json",
        "-q",
    )
    assert code == 0
    document = json.loads(out)
    assert document["schema"] == "onnxroof-profile/1"
    assert {"model", "target", "onnxruntime", "totals", "nodes", "kernels"} <= set(document)
    assert [n["name"] for n in document["nodes"]] == ["conv", "relu"]
    assert document["totals"]["flops"] == 9_472 and document["target"]["name"] == "myriad-x"


def test_calibrate_writes_a_valid_measured_target_file(capsys, tmp_path):
    # the smallest run the flags allow: --seconds 2 (one round, the sweep stops at 256 MiB), 1 thread
    path = tmp_path / "box.toml"
    code, out, err = run(capsys, "calibrate", "--seconds", "2", "--threads", "1", "-o", path, "-q")
    assert code == 0 and out == "" and err == ""
    text = path.read_text()
    assert 'schema = "onnxroof-target/1"' in text
    target = parse_target(path)
    assert target.name == "box"  # no --name: the output file's stem
    assert "1 thread(s)" in target.description
    figures = [target.dram_bytes_per_s, *target.peak_ops_per_s.values()]
    assert "fp32" in target.peak_ops_per_s and all(f.tag == "measured" and f.value > 0 for f in figures)
    assert [p.name for p in tmp_path.iterdir()] == ["box.toml"]
