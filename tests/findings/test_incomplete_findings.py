"""Findings made on an incomplete analysis (issue 42): they say so and claim no gain, since the
nodes not counted take time the gain does not know of."""

from __future__ import annotations

from conftest import fixed_reshape_chain, launch_target

import onnxroof


def test_findings_on_an_incomplete_analysis_claim_no_gain_and_say_why(tmp_path):
    """conftest.fixed_reshape_chain at batch 8: the Reshape and the 20 Adds after it are not
    counted (21 nodes)."""
    analysis = onnxroof.analyze(fixed_reshape_chain(), targets=[launch_target(tmp_path)], batch=8)
    assert not analysis.complete and analysis.missing == "21 node(s) not counted"
    assert analysis.incomplete_text().startswith("21 node(s) not counted (")
    findings = analysis.review()
    assert findings and all(
        f.gain_s == 0 and f.change == "" and f.incomplete == analysis.incomplete_text() for f in findings
    )
    assert all(f.title.endswith("(of the counted nodes only)") for f in findings)
    assert all(entry["complete"] is False for entry in analysis.to_dict()["findings"])
