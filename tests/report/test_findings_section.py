"""report/html/findings_section.py: "What to change" on the model page, read through the rendered
page (how the section gets its findings is the findings stage's business)."""

from __future__ import annotations

from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.html.pages import render_html


def test_the_section_ranks_the_findings_with_their_measured_gain(tmp_path):
    analysis = onnxroof.analyze(matmul_relu(), targets=[hand_target(tmp_path)])
    html = render_html(analysis, review=onnxroof.review(analysis))
    assert 'id="findings"' in html
    # the MatMul moves 176 bytes (176 ns) for 64 FLOPs (64 ns): below the ridge, 176 / 240 = 73% of
    # the time, and its bytes take 176 - 64 = 112 ns beyond its multiply-adds
    assert "1 kernel with multiply-adds (1 MatMul) sits below the ridge, 73% of the time" in html
    assert "their bytes add 112 ns beyond their multiply-adds" in html


def test_without_a_target_there_is_nothing_to_change():
    assert 'id="findings"' not in render_html(onnxroof.analyze(matmul_relu()))
