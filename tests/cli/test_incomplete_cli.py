"""The command line on an analysis that left nodes out (issue 42, item 2): sweep warnings name the
point in words, check's line and budgets say a latency is a bound, diff's Markdown marks the
change as one. The figures are worked out in tests/report/test_incomplete_bounds.py: on the
"calibrated" hand target, batch 1 takes 4.194304 ms (a forecast, ±18%), batch 8 at least
16.777216 ms ("≥ 16.8 ms"), 2 nodes not counted.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import run
from models import fixed_batch_model, hand_targets


@pytest.fixture
def files(tmp_path):
    path = tmp_path / "fixed.onnx"
    path.write_bytes(fixed_batch_model().SerializeToString())
    return str(path), hand_targets(tmp_path)[1]


def test_sweep_warnings_name_the_point_in_words(capsys, files):
    model, calibrated = files
    code, out, err = run(capsys, "summary", model, "--sweep", "batch=1,8", "--target", calibrated)
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("onnxroof: warning:")]
    assert warnings[0] == (
        "onnxroof: warning: batch=8: 2 node(s) not counted: its totals and latencies are lower "
        "bounds, its throughputs upper bounds"
    )
    assert all(line.startswith("onnxroof: warning: batch=8: ") for line in warnings)
    assert "{'batch'" not in err
    assert "batch=8: INCOMPLETE, 2 node(s) not counted" in out


def test_the_sweep_json_says_complete_per_point(capsys, files):
    model, calibrated = files
    code, out, _ = run(
        capsys, "summary", model, "--sweep", "batch=1,8", "--target", calibrated, "--format", "json", "-q"
    )
    points = json.loads(out)["points"]
    assert [(p["label"], p["complete"], p["targets"][0]["complete"]) for p in points] == [
        ("batch=1", True, True),
        ("batch=8", False, False),
    ]


def test_check_says_a_latency_on_an_incomplete_analysis_is_a_bound(capsys, files):
    model, calibrated = files
    code, out, _ = run(
        capsys, "check", model, "--batch", "8", "--target", calibrated, "--fail-if", "latency[calibrated]>10ms", "-q"
    )
    assert code == 1  # the budget is broken: at least 16.8 ms is over 10 ms whatever mm2 takes
    assert ", latency[calibrated] ≥ 16.8 ms (2 node(s) not counted); " in out
    assert "latency[calibrated] is ≥ 16.8 ms (a lower bound: 2 node(s) not counted) -> BROKEN" in out
    code, out, _ = run(capsys, "check", model, "--batch", "8", "--target", calibrated, "--format", "jsonl", "-q")
    (target,) = json.loads(out.splitlines()[0])["targets"]
    assert (target["complete"], target["missing"], target["latency_kind"]) == (False, "2 node(s) not counted", "bound")
    code, out, _ = run(capsys, "check", model, "--batch", "1", "--target", calibrated, "-q")
    assert ", latency[calibrated] 4.19 ms" in out and "≥" not in out


def test_diff_markdown_marks_a_change_against_a_bound(capsys, tmp_path, files):
    _, calibrated = files
    one, eight = tmp_path / "one.onnx", tmp_path / "eight.onnx"
    one.write_bytes(fixed_batch_model(1).SerializeToString())
    eight.write_bytes(fixed_batch_model(8).SerializeToString())
    code, out, _ = run(capsys, "diff", one, eight, "--target", calibrated, "--format", "markdown", "-q")
    assert code == 0
    assert "⚠️ **head \\(eight\\) is INCOMPLETE: 2 node\\(s\\) not counted" in out
    # 16.777216 - 4.194304 = 12.582912 ms, +300%: at least that, the head being a bound
    assert "| latency \\[calibrated\\] | 4.19 ms | ≥ 16.8 ms | ≥ +12.6 ms | ⚠️ ≥ +300.0% |" in out


def test_a_real_static_export_run_at_batch_8_is_a_bound_everywhere(capsys, tmp_path):
    # the static dynamo BERT of tests/data/exports: its Reshape shapes fix batch 1, so inputs of
    # 8 x 128 leave most nodes uncounted; h100-sxm forecasts (measured efficiencies, a band) a
    # complete analysis, but this one is a lower bound, and every output says so
    import gzip
    from pathlib import Path

    path = tmp_path / "bert-static-small.onnx"
    exports = Path(__file__).resolve().parents[1] / "data" / "exports"
    path.write_bytes(gzip.decompress((exports / "bert-static-small.onnx.gz").read_bytes()))
    shapes = ("--input-shape", "input_ids:8,128", "--input-shape", "attention_mask:8,128", "--target", "h100-sxm")
    code, out, _ = run(capsys, "summary", path, *shapes, "--format", "json", "-q")
    document = json.loads(out)
    totals, (target,) = document["totals"], document["targets"]
    missing = totals["nodes"] - totals["counted_nodes"]
    assert missing > 0 and document["complete"] is False
    assert (target["latency_kind"], target["complete"], target["uncounted_nodes"], target["error_band"]) == (
        "bound",
        False,
        missing,
        None,
    )
    assert target["bound_reason"] == f"{missing:,} node(s) not counted"
    code, out, _ = run(capsys, "summary", path, *shapes, "-q")
    assert f"latency: a lower bound (≥): {missing:,} node(s) not counted, and they take time too" in out
    # (h100-sxm's launch cost is borrowed from other targets: the line says so)
    assert re.search(r"  latency ≥ [\d.]+ [mµ]s \(launch cost borrowed\) · ≤ [\d,.]+ inferences/s", out)
    assert "forecast" not in out
    page = tmp_path / "r.html"
    assert run(capsys, "report", path, *shapes, "-o", page, "-q")[0] == 0
    html = page.read_text()
    assert re.findall(r'<dd class="sub latency-kind"[^>]*>([^<]*)</dd>', html) == [
        f"lower bound · {missing:,} node(s) not counted · launch cost borrowed"
    ]
    assert re.search(r'<dd class="big"[^>]*>≥ [\d.]+ [mµ]s</dd>', html)
