"""report/html/compare_page.py: several models side by side: report_models.matmul_relu with 8
and 16 columns (32 and 64 parameters, 72 and 144 FLOPs)."""

from __future__ import annotations

from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.report.html.compare_page import compare_page, render_compare_html


def test_a_row_per_model_the_best_cell_marked(tmp_path):
    targets = [hand_target(tmp_path)]
    analyses = [
        onnxroof.analyze(matmul_relu("narrow"), targets=targets),
        onnxroof.analyze(matmul_relu("wide", columns=16), targets=targets),
    ]
    page = compare_page(analyses)
    assert page.title == "2 models" and page.target_names == "hand"
    narrow, wide = page.models
    assert [cell["text"] for cell in narrow["cells"][:4]] == ["32", "128 B", "64", "72"]
    assert [cell["text"] for cell in wide["cells"][:4]] == ["64", "256 B", "128", "144"]
    assert narrow["cells"][0]["cls"] == "best" and wide["cells"][0]["cls"] != "best"  # fewer parameters
    assert "narrow" in render_compare_html(analyses)
