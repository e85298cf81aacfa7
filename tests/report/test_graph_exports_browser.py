"""The graph view of real exports in a real browser at 1,280 px (issue 47's acceptance): a
GPT-2 of 48 layers (torch.onnx dynamo) and YOLOv8n (ultralytics) open on a view that is fitted —
its whole width on screen at full size, so no rank is wider than the frame — with no two boxes
overlapping, every label inside its box and no edge label on a box; the page itself never
scrolls sideways. Set ONNXROOF_SCREENSHOTS=DIR to keep the screenshots of the graph panels."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from test_browser import CHROMIUM, Report, browser  # noqa: F401  (same folder; browser: its fixture)
from test_graph_view_browser import GEOMETRY, assert_drawn_clean

import onnxroof
from onnxroof.report.html.pages import render_html

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (apt-get install chromium)")

EXPORTS = Path(__file__).resolve().parents[1] / "data" / "exports"
WIDTH = 1280


@pytest.mark.parametrize("name", ["gpt2-static-48", "yolov8n-ultralytics"])
def test_a_real_export_s_graph_opens_fitted_and_readable_at_1280_pixels(browser, tmp_path, name):
    model = tmp_path / f"{name}.onnx"
    model.write_bytes(gzip.decompress((EXPORTS / f"{name}.onnx.gz").read_bytes()))
    page = tmp_path / f"{name}.html"
    page.write_text(render_html(onnxroof.analyze(model, targets=["l4"])), encoding="utf-8")
    report = Report(browser, page, width=WIDTH, height=900)
    try:
        report.assert_clean()
        frame = report.page.evaluate(
            "() => { const r = document.getElementById('gv-svg').getBoundingClientRect(); return [r.left, r.right]; }"
        )
        x, _, box_width, _ = map(float, report.page.get_attribute("#gv-svg", "viewBox").split())
        # fitted: one pixel a unit (the view is narrower than the frame: nothing to shrink) ...
        assert box_width == pytest.approx(frame[1] - frame[0], abs=0.5)
        # ... and every box of the opened view inside the frame, left to right
        boxes = report.page.evaluate(GEOMETRY)
        assert boxes
        assert all(frame[0] - 0.5 <= b["box"][0] and b["box"][2] <= frame[1] + 0.5 for b in boxes), x
        assert report.page.evaluate("() => document.documentElement.scrollWidth") <= WIDTH
        keep = os.environ.get("ONNXROOF_SCREENSHOTS")
        if keep:
            report.page.locator("#graph").screenshot(path=str(Path(keep) / f"{name}-graph.png"))
        assert_drawn_clean(report)
        assert report.errors == []
    finally:
        report.close()
