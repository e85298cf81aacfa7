"""The HTML reports in a real browser (headless Chromium driven by Playwright), opened from file://.

Each page must load with no console error and no request but its own document; the roofline has
one dot per costed node and its tooltip shows on hover; a click on a dot shows the node's row; the
node table sorts, filters and pages; the rows the script renders match the server-rendered ones;
a hostile node name runs no script. Playwright drives the system Chromium (``chromium`` on PATH,
or ``ONNXROOF_CHROMIUM``): it downloads no browser of its own.

``ONNXROOF_UPDATE_SCREENSHOTS=1`` also writes docs/report-minigooglenet.png and
docs/report-large.png (shrunk with pngquant when it is installed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import onnxroof
from onnxroof.cli.app import main
from onnxroof.core.examples import build_example
from onnxroof.report.html.pages import render_compare_html, render_diff_html, render_html, render_sweep_html

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser tests need playwright (pip install playwright)"
)

from models import IMG_PAYLOAD, transformer_block, transformer_like  # noqa: E402  (same folder)

CHROMIUM = (
    os.environ.get("ONNXROOF_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
    or shutil.which("google-chrome")
)
# root in a container: no sandbox; and nothing that phones home
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
DOCS = Path(__file__).resolve().parents[2] / "docs"
TARGETS = ["myriad-x", "h100-sxm"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium found (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield instance
        instance.close()


class Report:
    """A page opened from file://, with everything it logged, requested and popped up."""

    def __init__(self, browser, path: Path, javascript: bool = True, width: int = 1400, height: int = 1000):
        self.path = path
        self.context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=javascript)
        self.page = self.context.new_page()
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda message: self.console.append((message.type, message.text)))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", self._dialog)
        # anything but the page itself is refused (and still recorded above)
        self.context.route(
            "**/*", lambda route: route.continue_() if route.request.url == path.as_uri() else route.abort()
        )
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def assert_clean(self) -> None:
        assert self.errors == [], self.errors
        assert [m for m in self.console if m[0] in ("error", "warning")] == []
        assert self.requests == [self.path.as_uri()]  # the document itself, nothing else
        assert self.dialogs == []

    def rows(self) -> list[dict]:
        return self.page.eval_on_selector_all(
            "#node-table tbody tr",
            """rows => rows.map(r => ({
            index: Number(r.getAttribute('data-index')), op: r.getAttribute('data-op'),
            cells: Array.from(r.cells).map(c => [c.textContent.trim(), c.getAttribute('title') || ''])}))""",
        )

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def minigooglenet(tmp_path_factory):
    path = tmp_path_factory.mktemp("reports") / "minigooglenet.html"
    assert (
        main(
            [
                "report",
                "--example",
                "minigooglenet",
                "--target",
                "myriad-x",
                "--target",
                "h100-sxm",
                "-o",
                str(path),
                "-q",
            ]
        )
        == 0
    )
    return path, onnxroof.analyze(build_example("minigooglenet"), targets=TARGETS)


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    analysis = onnxroof.analyze(transformer_like(), targets=TARGETS)
    assert len(analysis.nodes) > 500
    path = tmp_path_factory.mktemp("reports") / "transformer.html"
    path.write_text(render_html(analysis), encoding="utf-8")
    return path, analysis


# MiniGoogLeNet costs 62 nodes with FLOPs: 19 Conv, 19 BatchNormalization, 19 Relu, 3 pools, a
# Gemm and a Softmax. myriad-x runs each as its own kernel (no fusion); h100-sxm fuses each
# Conv+BatchNormalization+Relu into one kernel: 19 + 3 + 1 + 1 = 24
DOTS_PER_TARGET = [62, 24]


def _costed(report) -> list:
    return [n for n in report.nodes if n.placement.flops > 0]


def _flops_of(analysis, row) -> int:
    return analysis.nodes[row["index"]].flops


# ---------------------------------------------------------------------------------------------


def test_minigooglenet_report_loads_clean_with_a_dot_per_costed_node(browser, minigooglenet):
    path, analysis = minigooglenet
    report = Report(browser, path)
    try:
        report.assert_clean()
        for number, target in enumerate(analysis.targets):
            # one dot per kernel, alike kernels (same op, FLOPs, bytes and time) as one dot with their count
            counts = [
                int(c)
                for c in report.page.eval_on_selector_all(
                    f"#roofline-{number} .dot", "dots => dots.map(d => d.getAttribute('data-count'))"
                )
            ]
            assert sum(counts) == len(_costed(target)) == DOTS_PER_TARGET[number]
            assert len(counts) == len(
                {
                    (
                        n.op_type,
                        n.placement.roof,
                        n.placement.flops,
                        n.placement.dram_bytes,
                        n.placement.onchip_bytes,
                        n.placement.time_s,
                    )
                    for n in _costed(target)
                }
            )
        assert report.page.locator("#roofline-0 .mark").count() == 1
        assert len(report.rows()) == 74
        assert report.page.locator("#node-count").text_content() == "74 nodes"
    finally:
        report.close()


def test_hovering_a_dot_shows_its_tooltip(browser, minigooglenet):
    path, analysis = minigooglenet
    report = Report(browser, path)
    try:
        page = report.page
        tip = page.locator("#tip")
        assert tip.is_hidden()
        dot = page.locator('#roofline-0 .dot[data-node="0"]')  # conv2d_0
        dot.hover(force=True)
        tip.wait_for(state="visible")
        text = tip.inner_text()
        node = analysis.targets[0].nodes[0]
        assert text.startswith("conv2d_0\nConv · float32 · fp32 roof")
        assert f"FLOPs: 5.31 M ({node.placement.flops:,})" in text
        assert "DRAM bytes:" in text and "intensity:" in text and "time:" in text and "bound: compute" in text
        assert page.locator("#roofline-0 .dot title").count() == 0  # the browser's own tooltip is off
        # the tooltip follows hover out
        page.mouse.move(5, 5)
        tip.wait_for(state="hidden")
        # the whole-model point has one too
        page.locator("#roofline-1 .mark path").hover(force=True)
        assert tip.inner_text().startswith("Whole model on h100-sxm")
        report.assert_clean()
    finally:
        report.close()


def test_clicking_a_dot_shows_its_row(browser, minigooglenet):
    path, analysis = minigooglenet
    report = Report(browser, path)
    try:
        page = report.page
        page.select_option("#op-filter", "Relu")  # the row is filtered out: the click clears the filter
        index = next(i for i, r in enumerate(analysis.nodes) if r.name == "conv2d_13")
        # dots can sit on top of each other: the click goes to this one
        page.locator(f'#roofline-0 .dot[data-node="{index}"]').dispatch_event("click")
        row = page.locator(f'#node-table tr[data-index="{index}"]')
        row.wait_for(state="visible")
        assert "selected" in row.get_attribute("class")
        assert row.is_visible() and page.evaluate(
            "r => { const b = r.getBoundingClientRect(); return b.top >= 0 && b.bottom <= innerHeight; }",
            row.element_handle(),
        )
        assert page.locator("#op-filter").input_value() == ""
        report.assert_clean()
    finally:
        report.close()


def test_sorting_and_filtering_the_node_table(browser, minigooglenet):
    path, analysis = minigooglenet
    report = Report(browser, path)
    try:
        page = report.page
        flops = page.locator('#node-table th[data-key="flops"] button')
        flops.click()  # numbers sort largest first
        rows = report.rows()
        values = [_flops_of(analysis, r) for r in rows]
        assert values == sorted(values, reverse=True) and values[0] == max(r.flops for r in analysis.nodes)
        assert page.locator('#node-table th[data-key="flops"]').get_attribute("aria-sort") == "descending"
        flops.click()
        values = [_flops_of(analysis, r) for r in report.rows()]
        assert values == sorted(values)
        # by time on a target: the rows follow the target's node times
        page.locator('#node-table th[data-key="time:0"] button').click()
        times = {n.name: n.placement.time_s for n in analysis.targets[0].nodes}
        ordered = [times[analysis.nodes[r["index"]].name] for r in report.rows()]
        assert ordered == sorted(ordered, reverse=True)
        # by name: text sorts A to Z (numbers inside names in numeric order)
        page.locator('#node-table th[data-key="name"] button').click()
        names = [analysis.nodes[r["index"]].name for r in report.rows()]
        assert names[:3] == ["activation_0", "activation_1", "activation_2"]

        # filter by op type, then by bound on a target, then by text
        page.select_option("#op-filter", "Conv")
        rows = report.rows()
        assert len(rows) == 19 and {r["op"] for r in rows} == {"Conv"}
        assert page.locator("#node-count").text_content() == "19 of 74 nodes"
        page.select_option("#op-filter", "")
        # (myriad-x's DRAM-bound kernels: the Gemm and the Softmax; its Concats, once on-chip-bound,
        # are written in place and run no kernel)
        page.select_option("#bound-filter", "0:dram")
        bounds = {n.name: n.placement.bound for n in analysis.targets[0].nodes}
        rows = report.rows()
        assert rows and all(bounds[analysis.nodes[r["index"]].name] == "dram" for r in rows)
        assert len(rows) == sum(1 for b in bounds.values() if b == "dram")
        page.select_option("#bound-filter", "")
        page.fill("#node-filter", "batch_normalization_1")
        names = [analysis.nodes[r["index"]].name for r in report.rows()]
        assert names and all("batch_normalization_1" in n for n in names)
        page.fill("#node-filter", "no such node")
        assert report.rows() == [] and page.locator("#node-empty").is_visible()
        # the op-type table's links filter too
        page.fill("#node-filter", "")
        page.locator('.op-link[data-op="MaxPool"]').click()
        assert {r["op"] for r in report.rows()} == {"MaxPool"}
        report.assert_clean()
    finally:
        report.close()


def test_script_renders_the_rows_the_server_rendered(browser, minigooglenet, large):
    """The first page without JavaScript and with it: the same text and the same tooltips."""
    for path, _ in (minigooglenet, large):
        static = Report(browser, path, javascript=False)
        scripted = Report(browser, path)
        try:
            assert static.rows() == scripted.rows()
            assert len(static.rows()) == min(
                200,
                len(scripted.page.evaluate("JSON.parse(document.getElementById('onnxroof-nodes').textContent).rows")),
            )
        finally:
            static.close()
            scripted.close()


def test_large_report_pages_its_table(browser, large):
    path, analysis = large
    report = Report(browser, path)
    try:
        page = report.page
        report.assert_clean()
        for number, target in enumerate(analysis.targets):
            counts = [
                int(c)
                for c in page.eval_on_selector_all(
                    f"#roofline-{number} .dot", "dots => dots.map(d => d.getAttribute('data-count'))"
                )
            ]
            assert sum(counts) == len(_costed(target)) and len(counts) < len(
                _costed(target)
            )  # repeated blocks: one dot each
        assert [r["index"] for r in report.rows()] == list(range(200))
        assert page.locator("#pager-text").text_content() == "rows 1–200 of 558 · page 1 of 3"
        page.click("#page-next")
        assert [r["index"] for r in report.rows()] == list(range(200, 400))
        page.click("#page-last")
        assert [r["index"] for r in report.rows()] == list(range(400, 558))
        assert page.locator("#page-next").is_disabled()
        # sorting covers every page, not just the one shown
        page.locator('#node-table th[data-key="time:1"] button').click()
        slowest = max(analysis.targets[1].nodes, key=lambda n: n.placement.time_s)
        assert analysis.nodes[report.rows()[0]["index"]].name == slowest.name
        assert page.locator("#pager-text").text_content().startswith("rows 1–200 of 558")
        # filters too: 18 softmax nodes across the pages
        page.select_option("#op-filter", "Softmax")
        assert (
            len(report.rows()) == 18 and page.locator("#pager-text").text_content() == "rows 1–18 of 18 · page 1 of 1"
        )
        # a dot whose row is on another page
        page.select_option("#op-filter", "")
        last = max(
            int(n)
            for n in page.eval_on_selector_all("#roofline-0 .dot", "dots => dots.map(d => d.getAttribute('data-node'))")
        )
        page.click("#page-last")  # the dot's row is on the first page, the table on its last
        assert page.locator(f'#node-table tr[data-index="{last}"]').count() == 0
        page.locator(f'#roofline-0 .dot[data-node="{last}"]').dispatch_event("click")
        page.locator(f'#node-table tr[data-index="{last}"]').wait_for(state="visible")
        assert "selected" in page.locator(f'#node-table tr[data-index="{last}"]').get_attribute("class")
        report.assert_clean()
    finally:
        report.close()


def test_hostile_names_run_no_script(browser, tmp_path):
    from onnx import TensorProto, helper

    name = "</script><img src=x onerror=alert(1)>"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name=name)], name + IMG_PAYLOAD, [x], [y]),
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name=IMG_PAYLOAD,
        doc_string=name,
    )
    path = tmp_path / "hostile.html"
    path.write_text(render_html(onnxroof.analyze(model, targets=TARGETS)), encoding="utf-8")
    report = Report(browser, path)
    try:
        page = report.page
        page.wait_for_timeout(300)  # an injected onerror would have fired by now
        report.assert_clean()
        assert page.locator("img").count() == 0
        assert page.locator("#node-table tbody tr td.name-cell").first.text_content() == name
        assert page.locator("h1").text_content() == name + IMG_PAYLOAD
        page.locator("#roofline-0 .dot").first.dispatch_event("mouseover")  # under the whole-model point here
        assert page.locator("#tip").inner_text().startswith(name)
        page.locator('#node-table th[data-key="name"] button').click()  # re-rendered by the script
        assert page.locator("#node-table tbody tr td.name-cell").first.text_content() == name
        assert page.locator("img").count() == 0 and report.dialogs == []
    finally:
        report.close()


def test_diff_compare_and_sweep_pages(browser, tmp_path):
    from onnxroof.compare.diff import diff_analyses
    from onnxroof.compare.sweep import run_sweep

    base = onnxroof.analyze(build_example("minigooglenet"), targets=TARGETS)
    head = onnxroof.analyze(build_example("minigooglenet"), targets=TARGETS, batch=4)
    reviewed = onnxroof.review(base).findings, onnxroof.review(head).findings
    pages = {
        "diff": render_diff_html(diff_analyses(base, head, findings=reviewed)),
        "compare": render_compare_html([base, head, onnxroof.analyze(build_example("shallownet"), targets=TARGETS)]),
        "sweep": render_sweep_html(run_sweep(build_example("minigooglenet"), [("batch", [1, 4, 16])], targets=TARGETS)),
    }
    for kind, html in pages.items():
        path = tmp_path / f"{kind}.html"
        path.write_text(html, encoding="utf-8")
        report = Report(browser, path)
        try:
            report.assert_clean()
            page = report.page
            assert page.locator("svg.roofline").count() == 2
            page.locator("svg.roofline .mark path").first.hover(force=True)
            assert page.locator("#tip").is_visible()
            if kind == "diff":
                assert page.locator("svg.roofline").first.locator(".arrow-node").count() == 10
                # the findings that changed with the batch (the launch-bound one on every target, at least)
                changes = diff_analyses(base, head, findings=reviewed).findings
                assert changes and page.locator("#findings .finding").count() == len(changes)
        finally:
            report.close()


def test_screenshots(browser, minigooglenet, tmp_path):
    """Screenshots of both reports: MiniGoogLeNet's first screens (header, totals, the first
    roofline); the large model's H100 roofline and its hotspots, on h100-sxm alone so that the
    hotspots below the roofline are the same target's."""
    update = os.environ.get("ONNXROOF_UPDATE_SCREENSHOTS") == "1"
    h100 = tmp_path / "transformer-h100.html"
    h100.write_text(render_html(onnxroof.analyze(transformer_like(), targets=["h100-sxm"])), encoding="utf-8")
    shots = (
        (minigooglenet, "report-minigooglenet.png", None, "roofline-0-panel"),
        ((h100, None), "report-large.png", "roofline-0-panel", "hotspots"),
    )
    for (path, _), name, first, last in shots:
        report = Report(browser, path, width=1400)
        try:
            page = report.page
            top = (
                page.evaluate(f"document.getElementById('{first}').getBoundingClientRect().top + scrollY - 16")
                if first
                else 0
            )
            bottom = page.evaluate(f"document.getElementById('{last}').getBoundingClientRect().bottom + scrollY + 16")
            out = (DOCS if update else tmp_path) / name
            page.screenshot(
                path=str(out), clip={"x": 0, "y": top, "width": 1400, "height": bottom - top}, full_page=True
            )
            if update and shutil.which("pngquant"):
                subprocess.run(
                    [
                        "pngquant",
                        "--force",
                        "--skip-if-larger",
                        "--quality=85-98",
                        "--strip",
                        "--output",
                        str(out),
                        str(out),
                    ],
                    check=False,
                )
            assert out.stat().st_size > 10_000
            if update:
                assert out.stat().st_size < 400_000
        finally:
            report.close()


def test_an_on_chip_bound_kernel_sits_on_the_on_chip_slope(browser, tmp_path):
    # x (1x8x16x16) -> Relu r -> Sigmoid s -> Add(r, s) -> Relu -> y on myriad-x, one kernel per
    # node. The Add reads two activations and writes one, all kept on chip (3 x 8,192 B, nothing
    # from DRAM: the graph's input and output are the other nodes'), for 2,048 FLOPs: 1/12 FLOP
    # per on-chip byte; at 450 GB/s that attains 37.5 GFLOP/s, under the 44.8 GFLOP/s fp32 roof.
    # It takes its on-chip time and nothing else (myriad-x charges no launch overhead), so its
    # diamond on the on-chip level sits on the on-chip slope, while its DRAM dot sits at "∞".
    from conftest import make_model
    from onnx import TensorProto, helper

    shape = [1, 8, 16, 16]
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
            helper.make_node("Add", ["r", "s"], ["t"], name="add"),
            helper.make_node("Relu", ["t"], ["y"], name="relu_out"),
        ],
        [("x", TensorProto.FLOAT, shape)],
        [("y", TensorProto.FLOAT, shape)],
    )
    onnx_path, page_path = tmp_path / "residual.onnx", tmp_path / "residual.html"
    onnx_path.write_bytes(model.SerializeToString())
    assert main(["report", str(onnx_path), "--target", "myriad-x", "--fusion", "none", "-o", str(page_path), "-q"]) == 0
    report = Report(browser, page_path)
    try:
        report.assert_clean()
        geometry = report.page.evaluate("""() => {
            const add = Array.from(document.querySelectorAll('#roofline-0 path.level-onchip'))
                .find(p => p.querySelector('title').textContent.startsWith('add on the on-chip level'));
            const box = add.getBBox();
            const slope = document.querySelector('#roofline-0 path.slope-onchip').getAttribute('d');
            return {cx: box.x + box.width / 2, cy: box.y + box.height / 2, slope: slope};
        }""")
        x1, y1, x2, y2 = map(
            float, __import__("re").match(r"M([\d.]+),([\d.]+)L([\d.]+),([\d.]+)", geometry["slope"]).groups()
        )
        on_slope = y1 + (y2 - y1) * (geometry["cx"] - x1) / (x2 - x1)
        assert x1 <= geometry["cx"] <= x2
        assert abs(geometry["cy"] - on_slope) < 1.0
    finally:
        report.close()


@pytest.mark.parametrize("targets, widths", [(["myriad-x"], (1000, 1200, 1400)), (TARGETS, (1200, 1400))])
def test_the_tables_fit_their_cards(browser, tmp_path, targets, widths):
    # the node table keeps its Status column inside the card, and the hotspots their last column,
    # at 1,000-1,400 px with one target (1,200 with two); a hotspot name keeps its op at the end
    analysis = onnxroof.analyze(transformer_like(), targets=targets)
    path = tmp_path / "report.html"
    path.write_text(render_html(analysis), encoding="utf-8")
    for width in widths:
        report = Report(browser, path, width=width)
        fits = report.page.evaluate("""() => Array.from(document.querySelectorAll('#node-table, .hotspot-table')).map(
            t => [t.scrollWidth, t.parentElement.clientWidth])""")
        assert all(scroll <= room for scroll, room in fits), (width, fits)
        names = report.page.eval_on_selector_all(
            ".hotspot-table .node-link", "links => links.map(a => [a.textContent, a.title])"
        )
        assert names and all(
            short == full or ("…" in short and full.endswith(short.split("…")[1])) for short, full in names
        )
        report.close()


def _boxes(report, selector: str) -> list[dict]:
    return report.page.eval_on_selector_all(
        selector,
        """els => els.filter(e => e.textContent.trim() || e.tagName !== 'text')
        .map(e => { const b = e.getBoundingClientRect(); return {x: b.left, y: b.top, r: b.right, b: b.bottom,
                                                                   text: e.textContent.trim()}; })""",
    )


def _overlap(a: dict, b: dict, slack: float = 0.5) -> bool:
    return a["x"] < b["r"] - slack and b["x"] < a["r"] - slack and a["y"] < b["b"] - slack and b["y"] < a["b"] - slack


@pytest.mark.parametrize("targets", [["myriad-x", "h100-sxm"], ["jetson-orin-nano", "xeon-8480-socket"]])
def test_roofline_labels_overlap_neither_each_other_nor_the_dots(browser, tmp_path, targets):
    # the roofs', ridges' and slopes' labels stay apart, and the whole-model label is clear of
    # every other label and of every dot (each box as the browser lays it out)
    path = tmp_path / "report.html"
    assert (
        main(
            [
                "report",
                "--example",
                "minigooglenet",
                *sum((["--target", t] for t in targets), []),
                "-o",
                str(path),
                "-q",
            ]
        )
        == 0
    )
    report = Report(browser, path)
    for chart in report.page.query_selector_all("svg.roofline"):
        chart_id = chart.get_attribute("id")
        labels = _boxes(report, f"#{chart_id} text.roof-label, #{chart_id} text.ridge-label")
        marks = _boxes(report, f"#{chart_id} .mark text")
        dots = _boxes(report, f"#{chart_id} circle.dot, #{chart_id} path.level-dot")
        for i, a in enumerate(labels):
            assert not any(_overlap(a, b) for b in labels[i + 1 :]), (chart_id, a["text"])
        for mark in marks:
            assert not any(_overlap(mark, b) for b in labels + dots), (chart_id, mark["text"])
    report.close()


def test_the_memory_peak_label_is_clear_of_the_capacity_labels(browser, tmp_path):
    # a chain whose activations grow to the last step, on a target whose on-chip memory is just
    # above the peak: the peak's label and the capacity's label meet at the top right
    import numpy as np
    from conftest import make_model, target_text
    from onnx import TensorProto, helper

    nodes, previous = [], "x"
    for step in range(6):
        nodes.append(helper.make_node("Tile", [previous, "twice"], [f"c{step}"], name=f"grow_{step}"))
        previous = f"c{step}"
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, [1, 1024])],
        [(previous, TensorProto.FLOAT, [1, 1024 * 64])],
        [("twice", np.array([1, 2], np.int64))],
    )
    peak = onnxroof.analyze(model).memory.model_order.peak_bytes
    target = tmp_path / "t.toml"
    target.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e10, "onchip.size_bytes": int(peak * 1.05)},
            name="tight",
            description="on-chip memory just above the peak",
        )
    )
    path = tmp_path / "report.html"
    path.write_text(render_html(onnxroof.analyze(model, targets=[str(target), "myriad-x"])), encoding="utf-8")
    report = Report(browser, path)
    peaks = _boxes(report, "svg.timeline .marker text")
    capacities = _boxes(report, "svg.timeline .reference text")
    assert peaks and capacities
    leaders = report.page.eval_on_selector_all(
        "svg.timeline .marker line.leader",
        """lines => lines.map(l => {
        const b = l.getBoundingClientRect(); return {x: b.left - 1, y: b.top, r: b.right + 1, b: b.bottom, text: ''}; })""",
    )
    assert not any(_overlap(p, c) for p in peaks for c in capacities), (peaks, capacities)
    assert not any(_overlap(line, c) for line in leaders for c in capacities), (
        leaders,
        capacities,
    )  # no line through a label
    report.close()


def test_the_formulas_section_fits_its_card(browser, tmp_path):
    # a long free dim name, two targets' latency rows and long kernel names: every formulas table
    # stays inside the card at 1,000 px (formulas wrap, never scroll sideways)
    from onnxroof.symbolic.formulas import formulas

    model = transformer_block(layers=12, d=64)
    for value in (model.graph.input[0], model.graph.output[0]):
        value.type.tensor_type.shape.dim[1].dim_param = "sequence_length_of_the_longest_prompt"
    found = formulas(model, targets=TARGETS, dims={"batch": 1})
    assert found.dims and found.latency
    path = tmp_path / "report.html"
    analysis = onnxroof.analyze(model, targets=TARGETS, dims={"batch": 1, "sequence_length_of_the_longest_prompt": 64})
    path.write_text(render_html(analysis, formulas=found), encoding="utf-8")
    report = Report(browser, path, width=1000)
    try:
        fits = report.page.evaluate("""() => Array.from(document.querySelectorAll('#formulas table')).map(
            t => [t.scrollWidth, t.parentElement.clientWidth])""")
        assert len(fits) == 1 + len(TARGETS) and all(scroll <= room for scroll, room in fits), fits
    finally:
        report.close()


def test_the_findings_show_above_the_fold_with_names_told_apart(browser, tmp_path):
    # a reviewer opening the report at 1,280 x 800 sees what to change first: the findings panel
    # and its first three findings lie within the first screen; a finding's node links never read
    # alike (the layer index that tells them apart is kept), and no badge overlaps its text
    # (on h100-sxm, whose TensorRT runs the fp32 products on TF32, int8 saves under 5 %: two
    # findings there; the Xeon gives three of its own)
    analysis = onnxroof.analyze(transformer_like(), targets=["jetson-orin-nano", "xeon-8480-socket"])
    review = onnxroof.review(analysis)
    assert len(review.findings) >= 3
    path = tmp_path / "report.html"
    path.write_text(render_html(analysis, review=review), encoding="utf-8")
    report = Report(browser, path, width=1280, height=800)
    report.assert_clean()
    boxes = _boxes(report, "#findings .finding")
    assert len(boxes) >= 3 and all(box["b"] <= 800 for box in boxes[:3]), boxes[:3]
    for finding in report.page.query_selector_all("#findings .finding"):
        links = finding.eval_on_selector_all(".node-link", "links => links.map(a => [a.textContent, a.title])")
        assert len({short for short, _ in links}) == len(links)
        assert all(short == full or all(part in full for part in short.split("…")) for short, full in links)
        kind, body = (finding.query_selector(s).bounding_box() for s in (".finding-kind", ".finding-body"))
        assert kind["x"] + kind["width"] <= body["x"]
    report.close()


def test_a_pipeline_and_a_graph_cut_fit_their_target_cards_at_1280_px(browser, tmp_path):
    # issue 45: hailo-8 (a layer pipeline) and coral-edge-tpu (a graph cut: transformer_like's ops
    # the Edge TPU does not map) side by side; each card's pipeline or graph-cut line stays inside
    # its card, the card's figures overlap nothing, the tables fit, the page loads clean
    analysis = onnxroof.analyze(transformer_like(), targets=["hailo-8", "coral-edge-tpu"], dtype="int8")
    assert analysis.targets[0].dataflow is not None and analysis.targets[1].edge_tpu_cut is not None
    path = tmp_path / "report.html"
    path.write_text(render_html(analysis), encoding="utf-8")
    report = Report(browser, path, width=1280)
    report.assert_clean()
    cards = report.page.eval_on_selector_all(
        ".target-card",
        """cards => cards.map(c => ({
            width: c.clientWidth, scroll: c.scrollWidth,
            edge: Array.from(c.querySelectorAll('.target-edge')).map(p => p.textContent.trim()),
            figures: Array.from(c.querySelectorAll('.target-figures > div')).map(d => {
                const b = d.getBoundingClientRect(); return {x: b.left, y: b.top, r: b.right, b: b.bottom,
                                                               text: d.textContent.trim()}; })}))""",
    )
    # hailo-8's pipeline is a forecast (fitted on the model zoo): its frames per second carry the band
    assert cards[0]["edge"][0].startswith("pipeline ") and " frames/s ±80%" in cards[0]["edge"][0]
    assert cards[1]["edge"][0].startswith("graph cut ")
    for card in cards:
        assert card["scroll"] <= card["width"], card
        boxes = card["figures"]
        assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]), boxes
    fits = report.page.evaluate("""() => Array.from(document.querySelectorAll('#node-table, .hotspot-table')).map(
        t => [t.scrollWidth, t.parentElement.clientWidth])""")
    assert all(scroll <= room for scroll, room in fits), fits
    report.close()
