"""Sweeps, diffs and budgets over an analysis that left nodes out (issue 42, item 2): the point is
named in words, its figures are bounds, and a change or a budget against them says so.

models.fixed_batch_model on models.hand_targets' "calibrated" target (1 GFLOP/s fp32 at a
measured efficiency of 0.5, no launch cost; tests/report/test_incomplete_bounds.py works the
figures out): batch 1 takes 2 MatMuls x 2.097152 ms = 4.194304 ms (238.4/s), every node counted;
at batch 8 the Reshape and mm2 are not counted and mm1 alone takes 16.777216 ms, so the latency is
≥ 16.777216 ms and the throughput ≤ 8 / 16.777216 ms = 476.8/s. From batch 1 to batch 8 the
latency changes by 16.777216 - 4.194304 = 12.582912 ms (+300%): at least that, since the head is
a bound; the throughput by 476.837 - 238.419 = 238.4/s (+100%): at most that.
"""

from __future__ import annotations

import pytest
from models import fixed_batch_model, hand_targets

import onnxroof
from onnxroof.compare.budgets import check_budgets, parse_budget
from onnxroof.compare.diff import diff_analyses
from onnxroof.compare.sweep import run_sweep
from onnxroof.report.json import sweep_document
from onnxroof.report.text.diff_tables import render_compare_table, render_diff_table
from onnxroof.report.text.table import render_sweep_table


@pytest.fixture
def calibrated(tmp_path):
    return hand_targets(tmp_path)[1]


@pytest.fixture
def points(calibrated):
    return run_sweep(fixed_batch_model(), [("batch", [1, 8])], targets=[calibrated])


def test_a_sweep_point_is_named_in_words(points):
    one, eight = points
    assert (one.label, eight.label) == ("batch=1", "batch=8")
    assert one.warnings == []
    assert eight.warnings[0] == (
        "batch=8: 2 node(s) not counted: its totals and latencies are lower bounds, its throughputs upper bounds"
    )
    assert all(w.startswith("batch=8: ") and "{" not in w for w in eight.warnings)


def test_the_sweep_document_says_complete_per_point_and_per_target(points):
    document = sweep_document(points)
    one, eight = document["points"]
    assert (one["label"], one["complete"], one["missing"]) == ("batch=1", True, "")
    assert (eight["label"], eight["complete"], eight["missing"]) == ("batch=8", False, "2 node(s) not counted")
    assert [(t["complete"], t["latency_kind"]) for t in (one["targets"][0], eight["targets"][0])] == [
        (True, "forecast"),
        (False, "bound"),
    ]
    assert eight["targets"][0]["latency_s"] == pytest.approx(16.777216e-3)


def test_the_sweep_table_marks_the_incomplete_point(points):
    lines = render_sweep_table(points).splitlines()
    assert lines[0].split()[-2:] == ["nodes", "counted"]
    assert "4.19 ms ±18%" in lines[1] and lines[1].endswith("3/3")
    assert "≥ 16.8 ms" in lines[2] and lines[2].endswith("1/3 INCOMPLETE")
    assert lines[3] == (
        "batch=8: INCOMPLETE, 2 node(s) not counted: its totals and latencies are lower bounds, "
        "its throughputs upper bounds"
    )


def test_a_diff_against_an_incomplete_head_is_a_bound(calibrated):
    base = onnxroof.analyze(fixed_batch_model(), batch=1, targets=[calibrated])
    head = onnxroof.analyze(fixed_batch_model(), batch=8, targets=[calibrated])
    diff = diff_analyses(base, head)
    latency, throughput = diff.targets["calibrated"][:2]
    assert (latency.base_missing, latency.head_missing) == ("", "2 node(s) not counted")
    assert (latency.change_bound, throughput.change_bound) == ("≥", "≤")
    assert latency.change == pytest.approx(12.582912e-3) and latency.percent == pytest.approx(300.0)
    text = render_diff_table(diff)
    assert (
        "! head (fixed) is INCOMPLETE: 2 node(s) not counted: its totals and latencies are lower bounds, its "
        "throughputs upper bounds; each change against it is a bound (≥, ≤)"
    ) in text
    row = next(line for line in text.splitlines() if line.strip().startswith("latency [calibrated]"))
    assert row.split()[2:] == ["4.19", "ms", "≥", "16.8", "ms", "≥", "+12.6", "ms", "≥", "+300.0%"]
    row = next(line for line in text.splitlines() if line.strip().startswith("throughput [calibrated]"))
    assert row.split()[2:] == ["238.4/s", "≤", "476.8/s", "≤", "+238.4/s", "≤", "+100.0%"]
    # the other way round, the base is the bound: the change is at most that
    assert diff_analyses(head, base).targets["calibrated"][0].change_bound == "≤"
    # both bounds: no direction
    both = diff_analyses(head, head)
    assert both.targets["calibrated"][0].change_bound == "?"
    assert "n/a (both bounds)" in render_diff_table(both)


def test_a_complete_diff_is_unchanged(calibrated):
    base = onnxroof.analyze(fixed_batch_model(), batch=1, targets=[calibrated])
    diff = diff_analyses(base, base)
    assert all(d.change_bound == "" for d in diff.targets["calibrated"])
    assert "INCOMPLETE" not in render_diff_table(diff)


def test_compare_lists_the_incomplete_model(calibrated):
    analyses = [onnxroof.analyze(fixed_batch_model(), batch=b, targets=[calibrated]) for b in (1, 8)]
    text = render_compare_table(analyses)
    assert "≥ 16.8 ms" in text and "≤ 476.8/s" in text and "4.19 ms ±18%" in text
    assert text.rstrip().endswith(
        "! fixed is INCOMPLETE: 2 node(s) not counted: its totals and latencies are lower "
        "bounds, its throughputs upper bounds"
    )


def test_a_latency_budget_on_a_bound_says_bound(calibrated):
    head = onnxroof.analyze(fixed_batch_model(), batch=8, targets=[calibrated])
    latency, flops = check_budgets([parse_budget("latency[calibrated]>10ms"), parse_budget("flops>1G")], head)
    assert latency.broken and latency.missing == "2 node(s) not counted"
    assert latency.describe() == (
        "latency[calibrated]>10ms: latency[calibrated] is ≥ 16.8 ms (a lower bound: 2 node(s) not counted) -> BROKEN"
    )
    assert flops.missing == ""  # a model metric: the INCOMPLETE line says the totals are lower bounds
    (throughput,) = check_budgets([parse_budget("throughput[calibrated]<100")], head)
    assert throughput.describe() == (
        "throughput[calibrated]<100: throughput[calibrated] is ≤ 476.8/s (an upper bound: 2 node(s) not counted) -> ok"
    )
    complete = onnxroof.analyze(fixed_batch_model(), batch=1, targets=[calibrated])
    (budget,) = check_budgets([parse_budget("latency[calibrated]>10ms")], complete)
    assert budget.describe() == "latency[calibrated]>10ms: latency[calibrated] is 4.19 ms -> ok"
