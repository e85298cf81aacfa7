"""The HTML report of `onnxroof profile -o report.html`: the measured nodes on the target's
roofline and the predicted-against-measured section, from a recorded profile (no onnxruntime)."""

from __future__ import annotations

import pytest
from measurements import recorded_result

import onnxroof
from onnxroof.core.examples import build_example
from onnxroof.report.html.pages import render_html
from onnxroof.report.html.profile_page import render_profile_html


def test_the_html_report_draws_a_measured_dot_per_measured_node():
    result = recorded_result(note="<script>alert(1)</script>")
    html = render_html(result.analysis, profile=result)
    flops = {r.name: r.flops for r in result.analysis.nodes}
    measured = [n for n in result.nodes if n.measured_s and flops[n.name] > 0]
    assert measured and html.count('class="dot dot-measured') == len(measured)
    assert 'class="mark measured"' in html and "measured node" in html  # the model point and the legend
    # the section: totals, the error figure and the 15 nodes that took longest
    assert 'id="profile"' in html and "Predicted vs measured" in html
    assert f"{result.error:+.0%}" in html and f"{result.ratio:.2f}x" in html
    slowest = max(result.nodes, key=lambda n: n.measured_s or 0)
    assert f"{slowest.ratio:.2f}x" in html and f"measured/predicted: {slowest.ratio:.2f}x" in html
    assert html.count('<a class="node-link" href="#node-table"') == 15 + 10  # this table and the hotspots
    # nothing unescaped: the note's markup is text, the only scripts are the report's own
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert (
        html.count("<script") == render_html(result.analysis).count("<script") == 4
    )  # graph, nodes, document JSON; the code
    assert "http://" not in html and "https://" not in html


def test_the_html_report_without_a_profile_has_no_measured_series():
    result = recorded_result()
    html = render_html(result.analysis)
    assert 'class="dot dot-measured' not in html and 'class="mark measured"' not in html and 'id="profile"' not in html


def test_the_profile_target_must_be_one_of_the_analysis_targets():
    result = recorded_result()
    with pytest.raises(ValueError, match="myriad-x"):
        render_html(onnxroof.analyze(build_example("minigooglenet")), profile=result)
    # render_profile_html adds the profile's target to an analysis made without it
    bare = onnxroof.analyze(build_example("minigooglenet"))
    result.analysis = bare
    html = render_profile_html(result)
    assert 'class="dot dot-measured' in html and bare.targets == []
