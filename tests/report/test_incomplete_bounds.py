"""Incomplete means a bound, everywhere (issue 42, item 2): when an analysis leaves nodes out,
every latency it shows is at least that (those nodes take time too) and every throughput at
most that, on every target, whatever its figures; a forecast's band is never shown on it.

The model is models.fixed_batch_model: a Reshape whose shape constant fixes batch 1. On the
hand-made targets (models.hand_targets: 1 GFLOP/s fp32, 1 TB/s DRAM, no launch cost) each
MatMul is compute-bound: at batch 1, 1,048,576 FLOPs take 1.048576 ms at the peak, 2.097152 ms
at the measured efficiency 0.5 ("calibrated"), and the Reshape is a view that costs nothing, so

- batch 1, calibrated: 2 x 2.097152 = 4.194304 ms ("4.19 ms ±18%", a forecast), 1 / 4.194304 ms
  = 238.4 inferences/s; peak: 2.097152 ms ("≥ 2.1 ms", a bound: peak figures).
- batch 8: the Reshape and mm2 are not counted (2 nodes); mm1 alone is 8,388,608 FLOPs, 16.777216
  ms at half the peak ("≥ 16.8 ms") and 8 / 16.777216 ms = 476.8 inferences/s ("≤ 477"); on the
  peak target 8.388608 ms ("≥ 8.39 ms"), 8 / 8.388608 ms = 953.7/s.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import run
from models import fixed_batch_model, hand_targets

import onnxroof
from onnxroof.roofline.targets import LatencyKind


@pytest.fixture
def targets(tmp_path):
    return hand_targets(tmp_path)


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "fixed.onnx"
    path.write_bytes(fixed_batch_model().SerializeToString())
    return str(path)


def test_the_report_is_a_bound_when_nodes_are_left_out(targets):
    peak, calibrated = targets
    complete = onnxroof.analyze(fixed_batch_model(), batch=1, targets=[peak, calibrated])
    assert [r.latency_kind for r in complete.targets] == [LatencyKind.BOUND, LatencyKind.FORECAST]
    assert all(r.complete and r.uncounted_nodes == 0 for r in complete.targets)
    assert complete.targets[1].band.value == 0.18
    assert complete.targets[1].latency_s == pytest.approx(4.194304e-3)
    assert complete.targets[0].bound_reason == "the target's figures are peaks"
    assert complete.targets[1].bound_reason == ""

    incomplete = onnxroof.analyze(fixed_batch_model(), batch=8, targets=[peak, calibrated])
    on_peak, on_calibrated = incomplete.targets
    assert not incomplete.complete and incomplete.missing == "2 node(s) not counted"
    # the calibrated target's measured efficiencies no longer make a forecast: mm2 is missing
    assert (on_calibrated.latency_kind, on_calibrated.band, on_calibrated.complete) == (LatencyKind.BOUND, None, False)
    assert on_calibrated.uncounted_nodes == 2
    assert on_calibrated.latency_s == pytest.approx(16.777216e-3)
    assert on_calibrated.bound_reason == "2 node(s) not counted"
    assert on_peak.bound_reason == "2 node(s) not counted; the target's figures are peaks"
    assert (
        on_calibrated.findings_caveat
        == "computed on an incomplete analysis: 2 node(s) not counted, so no gain is measured"
    )


def test_print_says_at_least(targets):
    peak, calibrated = targets
    text = str(onnxroof.analyze(fixed_batch_model(), batch=8, targets=[calibrated]))
    assert "calibrated: latency ≥ 16.8 ms (a lower bound: 2 node(s) not counted)" in text
    assert "±18%" not in text and "forecast" not in text
    complete = str(onnxroof.analyze(fixed_batch_model(), batch=1, targets=[calibrated]))
    assert "calibrated: latency 4.19 ms ±18% (a forecast)" in complete


def test_the_summary_says_at_least_and_at_most(capsys, model_path, targets):
    _, calibrated = targets
    code, out, _ = run(capsys, "summary", model_path, "--batch", "8", "--target", calibrated, "-q")
    assert code == 0
    assert out.splitlines()[0] == (
        "INCOMPLETE: 2 node(s) not counted; the totals and latencies are lower bounds (see the warnings)"
    )
    assert "latency ≥ 16.8 ms · ≤ 477 inferences/s" in out
    assert "latency: a lower bound (≥): 2 node(s) not counted, and they take time too" in out
    assert "±18%" not in out and "forecast" not in out
    code, out, _ = run(capsys, "summary", model_path, "--batch", "1", "--target", calibrated, "-q")
    # 1 / 4.194 ms = 238.4 per s, ±18% is ±43: rounded to the tens the band allows (issue 47)
    assert "latency 4.19 ms ±18% · 240 ±18% inferences/s" in out and "INCOMPLETE" not in out


def test_the_json_entry_of_each_target_says_complete_and_why(capsys, model_path, targets):
    peak, calibrated = targets
    code, out, _ = run(
        capsys,
        "summary",
        model_path,
        "--batch",
        "8",
        "--target",
        peak,
        "--target",
        calibrated,
        "--format",
        "json",
        "-q",
    )
    document = json.loads(out)
    assert (document["complete"], document["missing"]) == (False, "2 node(s) not counted")
    on_peak, on_calibrated = document["targets"]
    assert {
        key: on_calibrated[key] for key in ("latency_kind", "complete", "uncounted_nodes", "bound_reason", "error_band")
    } == {
        "latency_kind": "bound",
        "complete": False,
        "uncounted_nodes": 2,
        "bound_reason": "2 node(s) not counted",
        "error_band": None,
    }
    assert on_peak["bound_reason"] == "2 node(s) not counted; the target's figures are peaks"
    code, out, _ = run(capsys, "summary", model_path, "--batch", "1", "--target", calibrated, "--format", "json", "-q")
    entry = json.loads(out)["targets"][0]
    assert (entry["latency_kind"], entry["complete"], entry["bound_reason"]) == ("forecast", True, "")


def test_markdown_says_at_least(capsys, model_path, targets):
    _, calibrated = targets
    code, out, _ = run(
        capsys, "summary", model_path, "--batch", "8", "--target", calibrated, "--format", "markdown", "-q"
    )
    assert "| calibrated | ≥ 16.8 ms | ≤ 477 |" in out
    assert "Latency: a lower bound \\(≥\\): 2 node\\(s\\) not counted, and they take time too." in out


def _card_kinds(html: str) -> list[str]:
    return re.findall(r'<dd class="sub latency-kind"[^>]*>([^<]*)</dd>', html)


def test_the_html_card_says_lower_bound_never_forecast(capsys, tmp_path, model_path, targets):
    _, calibrated = targets
    page = tmp_path / "r.html"
    assert run(capsys, "report", model_path, "--batch", "8", "--target", calibrated, "-o", page, "-q")[0] == 0
    html = page.read_text()
    assert ">≥ 16.8 ms<" in html and ">≤ 477/s<" in html
    assert _card_kinds(html) == ["lower bound · 2 node(s) not counted"]
    assert "±18%" not in html
    assert run(capsys, "report", model_path, "--batch", "1", "--target", calibrated, "-o", page, "-q")[0] == 0
    html = page.read_text()
    assert _card_kinds(html) == ["forecast"] and ">4.19 ms ±18%<" in html


def test_an_incomplete_sweep_point_is_hollow_and_breaks_its_line(targets):
    from onnxroof.compare.sweep import run_sweep
    from onnxroof.report.html.pages import render_sweep_html

    _, calibrated = targets
    points = run_sweep(fixed_batch_model(), [("batch", [1, 8])], targets=[calibrated])
    html = render_sweep_html(points)
    latency = html[html.index('id="xy-latency"') :]
    latency = latency[: latency.index("</svg>")]
    # one line, two points: batch 1 filled, batch 8 hollow; no segment joins them (a lone move)
    assert latency.count('class="xy-point"') == 1 and latency.count('class="xy-point hollow"') == 1
    path = re.search(r'<path d="([^"]*)"/>', latency).group(1)
    assert path.count("M") == 1 and "L" not in path
    assert "calibrated · batch=8: ≥ 16.8 ms, lower bound · 2 node(s) not counted" in latency
    assert "incomplete: a bound" in html  # the legend's hollow swatch
    # the roofline: batch 8's diamond hollow and labelled a bound, no path joining it
    assert "model model-sweep bound-only" in html and ">batch=8 (bound)<" in html
    assert 'class="sweep-path"' not in html
    # the table: batch 8's row tagged, its latency at least, its throughput at most
    assert ">incomplete</span>" in html and ">≥ 16.8 ms<" in html and ">≤ 477/s<" in html


def test_compare_and_diff_pages_do_not_rank_or_join_a_bound(targets):
    from onnxroof.compare.diff import diff_analyses
    from onnxroof.report.html.pages import render_compare_html, render_diff_html

    peak, _ = targets
    # on the peak target: batch 1 takes 2.097152 ms (≥ 2.1 ms, complete), batch 8 at least 8.388608 ms
    one, eight = (onnxroof.analyze(fixed_batch_model(), batch=b, targets=[peak]) for b in (1, 8))
    html = render_compare_html([one, eight])
    # batch 1's 2.1 ms would be "best" against 8.39 ms, but a bound is not ranked: no cell is marked
    assert 'class="num best"' not in html
    assert ">≥ 8.39 ms<" in html and ">fixed (bound)<" in html and "bound-only" in html
    page = render_diff_html(diff_analyses(one, eight))
    assert "head (fixed) is INCOMPLETE: 2 node(s) not counted" in page
    # 8.388608 - 2.097152 = 6.291456 ms (+300%): at least that, the head a bound
    assert ">≥ +6.29 ms<" in page and ">≥ +300.0%<" in page
    assert "Whole head model on peak (bound: 2 node(s) not counted)" in page
