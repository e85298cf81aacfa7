"""report/html/pages.py: the public renderers, one self-contained page each (no network)."""

from __future__ import annotations

from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.compare.diff import diff_analyses
from onnxroof.report.html import pages


def test_every_renderer_it_names_is_exported():
    assert set(pages.__all__) == {
        "render_html",
        "render_diff_html",
        "render_compare_html",
        "render_sweep_html",
        "render_profile_html",
        "script_json",
        "shape_text",
    }
    assert all(callable(getattr(pages, name)) for name in pages.__all__)


def test_the_pages_are_whole_documents_that_load_nothing(tmp_path):
    targets = [hand_target(tmp_path)]
    base = onnxroof.analyze(matmul_relu("base"), targets=targets)
    head = onnxroof.analyze(matmul_relu("head", columns=16), targets=targets)
    for html in (
        pages.render_html(base),
        pages.render_diff_html(diff_analyses(base, head)),
        pages.render_compare_html([base, head]),
    ):
        assert html.lstrip().lower().startswith("<!doctype html>") and html.rstrip().endswith("</html>")
        assert "http://" not in html and "https://" not in html and "<script src" not in html
