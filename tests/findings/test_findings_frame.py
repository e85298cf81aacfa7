"""The findings as a pandas frame (issue 46 item 4): one row each, ranked, the columns of Finding.to_dict."""

from __future__ import annotations

import pytest

from onnxroof.core.examples import build_example
from onnxroof.findings.records import FINDING_COLUMNS, Finding, Review, TargetReview


def test_the_frame_has_a_row_per_finding_ranked():
    pytest.importorskip("pandas")
    small = Finding("fusion", "l4", "fuse", nodes=("a", "b"), gain_s=1e-4, latency_s=1e-3)
    large = Finding("precision", "l4", "int8", gain_s=5e-4, latency_s=1e-3, change="--dtype int8")
    frame = Review((TargetReview(None, None, (small, large)),)).to_pandas()
    assert tuple(frame.columns) == FINDING_COLUMNS
    # ranked by the share of the latency saved: 0.5 ms of 1 ms before 0.1 ms of 1 ms
    assert list(frame["kind"]) == ["precision", "fusion"]
    assert list(frame["gain_share"]) == pytest.approx([0.5, 0.1])
    assert frame.loc[1, "nodes"] == ("a", "b") and frame.loc[0, "change"] == "--dtype int8"


def test_no_findings_is_an_empty_frame_with_the_columns():
    pytest.importorskip("pandas")
    frame = Review().to_pandas()
    assert frame.empty and tuple(frame.columns) == FINDING_COLUMNS


def test_an_analysis_gives_its_findings_as_a_frame():
    pytest.importorskip("pandas")
    import onnxroof

    analysis = onnxroof.analyze(build_example("shallownet"), targets=["l4"])
    frame = analysis.findings_to_pandas()
    assert len(frame) == len(analysis.findings) and set(frame["target"]) <= {"l4"}
    assert list(frame["title"]) == [f.title for f in analysis.findings]
