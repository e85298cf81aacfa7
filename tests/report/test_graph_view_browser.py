"""The report's graph view in a real browser (headless Chromium through Playwright, as
test_browser.py): no two boxes overlap and every label stays inside its box, as drawn; a click on
a box selects its node-table row and a click on a row selects its box; opening a module and going
back restores the same picture; the colouring follows the selected target."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from models import random_dag, transformer_like  # noqa: E402
from test_browser import CHROMIUM, Report, browser  # noqa: E402,F401  (same folder; browser: its fixture)
from test_graph_view import _scoped  # noqa: E402

import onnxroof
from onnxroof.report.html.pages import render_html

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (apt-get install chromium)")

# every box and text of the view on screen, in screen pixels
GEOMETRY = """() => Array.from(document.querySelectorAll('#gv-content .gb')).map(g => {
  const rect = g.querySelector('rect:last-of-type').getBoundingClientRect();
  return {key: g.getAttribute('data-key'), box: [rect.left, rect.top, rect.right, rect.bottom],
          texts: Array.from(g.querySelectorAll('text')).map(t => {
            const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })};
})"""


def _page(tmp_path, analysis, name: str):
    path = tmp_path / f"{name}.html"
    path.write_text(render_html(analysis), encoding="utf-8")
    return path


LABELS = """() => Array.from(document.querySelectorAll('#gv-content .gl')).map(t => {
  const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"""


def _apart(a, b) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def assert_drawn_clean(report: Report) -> list[dict]:
    """No two boxes overlap on screen; each text lies inside its box; no edge label lies on a box
    or on another label."""
    # at full size, where the labels are read (getBoundingClientRect is in screen pixels, off screen too;
    # zoomed far out, the text's line boxes round up to whole pixels and grow against the boxes)
    report.page.click("#gv-top")
    boxes = report.page.evaluate(GEOMETRY)
    assert boxes
    labels = report.page.evaluate(LABELS)
    for i, label in enumerate(labels):
        assert all(_apart(label, box["box"]) for box in boxes), (
            label,
            [b for b in boxes if not _apart(label, b["box"])],
        )
        assert all(_apart(label, other) for other in labels[i + 1 :]), label
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["box"][2] <= b["box"][0]
                or b["box"][2] <= a["box"][0]
                or a["box"][3] <= b["box"][1]
                or b["box"][3] <= a["box"][1]
            )
            assert apart, (a["key"], b["key"])
        left, top, right, bottom = a["box"]
        for text in a["texts"]:
            slack = 0.5
            assert (
                left - slack <= text[0]
                and text[2] <= right + slack
                and top - slack <= text[1]
                and text[3] <= bottom + slack
            ), (a["key"], text, a["box"])
    return boxes


def test_minigooglenet_graph_is_clean_and_a_box_selects_its_row(browser, tmp_path):
    analysis = onnxroof.analyze(onnxroof.core.examples.build_example("minigooglenet"), targets=["myriad-x", "h100-sxm"])
    report = Report(browser, _page(tmp_path, analysis, "minigooglenet"))
    try:
        report.assert_clean()
        boxes = assert_drawn_clean(report)
        assert len(boxes) == 74 + 2  # every node (none folded or constant) and the input and output stubs
        index = next(i for i, r in enumerate(analysis.nodes) if r.name == "conv2d_2")
        report.page.click(f'#gv-content [data-gnode="{index}"]')
        row = report.page.locator(f'#node-table tbody tr[data-index="{index}"]')
        assert "selected" in row.get_attribute("class")
        info = report.page.locator("#gv-info").text_content()
        assert info.startswith("Conv conv2d_2") and "myriad-x:" in info and "h100-sxm:" in info
        # and back: a click on another row selects that node's box
        other = next(i for i, r in enumerate(analysis.nodes) if r.name == "activation_0")
        report.page.evaluate(f"window.onnxroofReport.showNode({other}, true)")
        report.page.click(f'#node-table tbody tr[data-index="{other}"] td.idx')
        assert "selected" in report.page.get_attribute(f'#gv-content [data-gnode="{other}"]', "class")
        assert report.errors == []
        if os.environ.get("ONNXROOF_UPDATE_SCREENSHOTS"):  # the README's picture of the graph view
            picture = Path(__file__).resolve().parents[2] / "docs" / "report-graph.png"
            report.page.click("#gv-top")
            report.page.click(f'#gv-content [data-gnode="{index}"]')
            report.page.locator("#graph").screenshot(path=str(picture))
            if shutil.which("pngquant"):
                subprocess.run(
                    ["pngquant", "--force", "--skip-if-larger", "--output", str(picture), str(picture)], check=False
                )
    finally:
        report.close()


def test_the_colours_follow_the_selected_target(browser, tmp_path):
    analysis = onnxroof.analyze(onnxroof.core.examples.build_example("minigooglenet"), targets=["myriad-x", "h100-sxm"])
    report = Report(browser, _page(tmp_path, analysis, "colours"))
    try:
        conv = next(i for i, r in enumerate(analysis.nodes) if r.name == "conv2d_0")
        rect = f'#gv-content [data-gnode="{conv}"] > rect'
        fill = lambda: report.page.eval_on_selector(rect, "r => getComputedStyle(r).fill")  # noqa: E731
        # myriad-x: the conv is compute-bound (#e3f4ea); h100-sxm: its fused kernel is overhead-bound (#eef0f4)
        assert [p.placement.bound for p in analysis.targets[0].nodes if p.name == "conv2d_0"] == ["compute"]
        assert fill() == "rgb(227, 244, 234)"
        report.page.select_option("#gv-target", "1")
        assert [p.placement.bound for p in analysis.targets[1].nodes if "conv2d_0" in p.nodes] == ["overhead"]
        assert fill() == "rgb(238, 240, 244)"
        report.page.select_option("#gv-colour", "module")
        assert report.page.locator('[data-legend="module"]').is_visible()
        # no modules in MiniGoogLeNet's names: one colour per op type instead
        assert report.page.locator("#gv-colour option[value=module]").text_content() == "by op type"
        fills = report.page.evaluate("""() => Array.from(document.querySelectorAll('#gv-content .gb-node')).map(g =>
            [g.querySelector('text').textContent, getComputedStyle(g.querySelector('rect')).fill])""")
        by_op = {}
        for op, colour in fills:
            by_op.setdefault(op, set()).add(colour)
        assert all(len(colours) == 1 for colours in by_op.values()), by_op
        assert by_op["Conv"] != by_op["Relu"]
    finally:
        report.close()


def test_opening_a_module_and_going_back_restores_the_picture(browser, tmp_path):
    analysis = onnxroof.analyze(
        _scoped(transformer_like(layers=4, seq=16, dim=32, heads=2, ffn=64)), targets=["h100-sxm"]
    )
    report = Report(browser, _page(tmp_path, analysis, "scoped"))
    try:
        report.assert_clean()
        # the whole model is 3 boxes (its input, the 4 alike layers, its output): the page opens on
        # the run unfolded in place, its first block's 31 nodes, each standing for all four
        assert report.page.locator("#gv-crumbs strong").text_content() == "layer.0-3 ×4 (unfolded here)"
        assert report.page.locator("#gv-content .gb-node").count() == 31
        assert report.page.locator("#gv-content .gb-node .gt-head").first.text_content().endswith(" ×4")
        assert_drawn_clean(report)
        unfolded = report.page.inner_html("#gv-content")
        report.page.click("#gv-crumbs .gv-crumb")  # fold it: the whole model's view
        blocks = report.page.locator("#gv-content .gb-module")
        assert blocks.count() == 1 and "×4" in blocks.text_content()
        before = report.page.inner_html("#gv-content")
        view_box = report.page.get_attribute("#gv-svg", "viewBox")
        blocks.click()  # unfolds in place again: the same picture
        assert report.page.inner_html("#gv-content") == unfolded
        report.page.click("#gv-crumbs .gv-crumb")
        assert report.page.inner_html("#gv-content") == before
        report.page.locator("#gv-content .gb-module").press("Enter")  # the first block's own view
        assert report.page.locator("#gv-crumbs strong").text_content().startswith("encoder/layer.0")
        assert_drawn_clean(report)
        assert report.page.locator("#gv-content .gb-node").count() == 31  # one block's nodes
        report.page.click("#gv-crumbs .gv-crumb")
        assert report.page.inner_html("#gv-content") == before
        assert report.page.get_attribute("#gv-svg", "viewBox") == view_box
    finally:
        report.close()


def test_a_500_node_graph_opens_folded_and_each_view_is_clean(browser, tmp_path):
    analysis = onnxroof.analyze(transformer_like(), targets=["h100-sxm"])  # 558 nodes, no scopes
    report = Report(browser, _page(tmp_path, analysis, "large"))
    try:
        report.assert_clean()
        # the input, the 18 alike layers as one box, the output: it opens on the layers unfolded
        assert_drawn_clean(report)
        assert report.page.locator("#gv-content .gb-node").count() == 31  # one layer (tests/models.py), x18
        report.page.click("#gv-crumbs .gv-crumb")
        top = assert_drawn_clean(report)
        assert len(top) == 3
        blocks = report.page.locator("#gv-content .gb-module")
        assert blocks.locator("text").first.text_content() == "block 0-17 ×18"
        blocks.press("Enter")  # its own view: the first layer
        assert_drawn_clean(report)
        assert report.page.locator("#gv-content .gb-node").count() == 31
        # search: the matches in every view, Enter goes to the next one
        report.page.fill("#gv-search", "softmax")
        assert "in all views" in report.page.text_content("#gv-found")
        report.page.press("#gv-search", "Enter")
        assert report.page.text_content("#gv-content .gb-node.selected").startswith("Softmax")
    finally:
        report.close()


def test_a_graph_with_no_repeats_folds_into_parts_and_chains(browser, tmp_path):
    analysis = onnxroof.analyze(random_dag(1, 300))  # 300 unnamed nodes, no two stretches alike
    report = Report(browser, _page(tmp_path, analysis, "parts"))
    try:
        report.assert_clean()
        top = assert_drawn_clean(report)
        assert 10 <= len(top) <= 110
        first = report.page.locator("#gv-content .gb-module").first
        assert re.match(r"nodes \d+–\d+", first.locator("text").first.text_content())
        report.page.click("#gv-fit")  # all of it on screen, to be clicked
        first.click()
        assert_drawn_clean(report)
        report.page.click("#gv-crumbs .gv-crumb")
        assert len(report.page.evaluate(GEOMETRY)) == len(top)
    finally:
        report.close()


def test_the_diff_page_marks_what_changed_on_either_model(browser, tmp_path):
    from onnxroof.cli.app import main

    path = tmp_path / "diff.html"
    assert (
        main(
            [
                "diff",
                "example:shallownet",
                "example:shallownet-separable",
                "--target",
                "myriad-x",
                "--format",
                "html",
                "-o",
                str(path),
                "-q",
            ]
        )
        == 0
    )
    report = Report(browser, path)
    try:
        report.assert_clean()
        assert_drawn_clean(report)
        convs = """() => Array.from(document.querySelectorAll('#gv-content .gb-node'))
            .filter(g => g.querySelector('text').textContent === 'Conv')
            .map(g => [g.querySelectorAll('text')[1].textContent, g.getAttribute('class')])"""
        # the head: conv2d_0 is now depthwise (changed), conv2d_1 the new pointwise conv (added)
        assert report.page.evaluate(convs) == [
            ["conv2d_0", "gb gb-node mark-changed"],
            ["conv2d_1", "gb gb-node mark-added"],
        ]
        report.page.select_option("#gv-side", "base")
        assert_drawn_clean(report)
        assert report.page.evaluate(convs) == [["conv2d_0", "gb gb-node mark-changed"]]  # the base's one conv
        report.page.click("#gv-content .gb-node")  # no node table on this page: the box's own text
        assert report.page.locator("#gv-info").is_visible()
        assert report.errors == []
    finally:
        report.close()


def test_the_memory_peak_marks_the_nodes_whose_outputs_are_live_there(browser, tmp_path):
    analysis = onnxroof.analyze(onnxroof.core.examples.build_example("minigooglenet"), targets=["myriad-x"])
    report = Report(browser, _page(tmp_path, analysis, "peak"))
    try:
        # MiniGoogLeNet's peak (model order) is at step 1: batch_normalization_0 writes its 1x96x32x32
        # output while conv2d_0's, its input, is still live (test_html's memory test derives the bytes)
        report.page.click("#memory .marker-model circle")
        assert report.page.get_attribute("#gv-peak", "aria-pressed") == "true"
        marked = report.page.eval_on_selector_all(
            "#graph-view.gv-show-live #gv-content .gb.live",
            "gs => gs.map(g => g.querySelectorAll('text')[1].textContent)",
        )
        assert sorted(marked) == ["batch_normalization_0", "conv2d_0"]
        report.page.click("#gv-peak")
        assert report.page.locator("#graph-view.gv-show-live").count() == 0
        assert report.errors == []
    finally:
        report.close()


def test_unfolding_a_module_in_place_and_folding_it_back_restores_the_picture(browser, tmp_path):
    from test_graph_view import three_modules

    analysis = onnxroof.analyze(three_modules(), targets=["h100-sxm"])
    report = Report(browser, _page(tmp_path, analysis, "unfold"))
    try:
        report.assert_clean()
        before = report.page.inner_html("#gv-content")
        view_box = report.page.get_attribute("#gv-svg", "viewBox")
        assert report.page.locator("#gv-content .gb").count() == 5
        report.page.click("#gv-content .gb-module >> nth=0")  # alpha
        assert report.page.text_content("#gv-crumbs") == "the whole model › alpha (unfolded here)"
        assert report.page.locator("#gv-content .gb").count() == 49
        assert report.page.locator("#gv-content .gb-inside").count() == 45
        assert report.page.get_attribute("#gv-svg", "viewBox") == view_box  # it opens where it was
        assert_drawn_clean(report)
        report.page.keyboard.press("Escape")  # fold it again: the same picture
        assert report.page.inner_html("#gv-content") == before
        assert report.page.get_attribute("#gv-svg", "viewBox") == view_box
        report.page.dblclick("#gv-content .gb-module >> nth=0")  # alpha's own view
        assert report.page.text_content("#gv-crumbs") == "the whole model › alpha"
        assert report.page.locator("#gv-content .gb-node").count() == 45
        assert report.errors == []
    finally:
        report.close()
