"""The findings as a stage (issue 44): review() returns a Review and writes nothing into the
analysis; a Review gives each target's part by its report, even when a target is given twice;
an analysis made otherwise has none."""

from __future__ import annotations

import copy

from conftest import make_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.findings import NO_REVIEW, Finding, Review, TargetReview, review
from onnxroof.pipeline import analyze as analyze_once


def relu_model():
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, ["N", 16])],
        [("y", TensorProto.FLOAT, ["N", 16])],
    )


def test_the_review_leaves_the_analysis_as_it_was():
    analysis = analyze_once(relu_model(), targets=["l4"])
    (report,) = analysis.targets
    before = copy.deepcopy(vars(report))
    made = review(analysis, lambda **changes: analyze_once(relu_model(), targets=["l4"], **changes))
    assert vars(report) == before and not hasattr(report, "findings") and not hasattr(report, "fit")
    part = made.of(report)
    assert part.report is report and part.target == "l4" and part.fit is not None
    assert made.findings == list(part.findings)  # one target: its findings are all of them, ranked


def test_a_target_given_twice_has_its_own_part():
    one, two = analyze_once(relu_model(), targets=["l4", "l4"]).targets
    first = Finding("launch", "l4", "first", gain_s=2.0, latency_s=4.0)  # half the time
    second = Finding("launch", "l4", "second", gain_s=3.0, latency_s=4.0)  # three quarters
    made = Review((TargetReview(one, findings=(first,)), TargetReview(two, findings=(second,))))
    assert made.of(one).findings == (first,) and made.of(two).findings == (second,)
    assert made.findings == [second, first]  # ranked by the share of the latency saved: 3/4 before 1/2


def test_an_analysis_not_reviewed_has_no_fit_and_no_finding():
    analysis = analyze_once(relu_model(), targets=["l4"])
    assert onnxroof.review(analysis) is NO_REVIEW  # the pipeline alone: nothing to analyse again from
    (report,) = analysis.targets
    assert NO_REVIEW.of(report) == TargetReview(report) and NO_REVIEW.fit(report) is None
    assert NO_REVIEW.findings == []


def test_onnxroof_review_is_made_once():
    analysis = onnxroof.analyze(relu_model(), targets=["l4"])
    assert analysis.source is not None and analysis.source.front is not None
    made = onnxroof.review(analysis)
    assert onnxroof.review(analysis) is made and analysis.review() == made.findings
    assert analysis.source.front is None  # the prepared model is freed once the review read it


def test_the_run_view_keeps_no_source():
    # an If whose branch runs: the view of the nodes a run executes is another Analysis, which
    # must not keep the prepared model alive after the review
    from models import if_model

    analysis = onnxroof.analyze(if_model(), targets=["l4"])
    view = analysis.run_view
    assert view is not analysis and type(view) is onnxroof.Analysis and not hasattr(view, "source")
