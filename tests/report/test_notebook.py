"""report/html/notebook.py: what a notebook shows for an analysis, in an iframe of its own."""

from __future__ import annotations

import html

from report_models import matmul_relu

import onnxroof
from onnxroof.report.html.notebook import HEADING_PX, MAX_HEIGHT_PX, TARGET_PX, notebook_html


def test_the_page_sits_escaped_in_an_iframe_s_srcdoc():
    frame = notebook_html(onnxroof.analyze(matmul_relu()))
    assert frame.startswith('<iframe title="onnxroof: matmul_relu" srcdoc="') and frame.endswith("></iframe>")
    page = html.unescape(frame.split('srcdoc="', 1)[1].split('" style=', 1)[0])
    assert '<h2 class="model-name">matmul_relu' in page


def test_the_frame_is_as_tall_as_its_parts_up_to_a_limit():
    # no target and no finding: the heading and the cards only
    frame = notebook_html(onnxroof.analyze(matmul_relu()))
    height = int(frame.rsplit("height: ", 1)[1].split("px", 1)[0])
    assert HEADING_PX < height < HEADING_PX + TARGET_PX and height <= MAX_HEIGHT_PX
