"""The HTML report: self-contained, one row per node, exact values in tooltips, hostile names escaped."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import onnx
import pytest
from models import IMG_PAYLOAD, interleaved_branches_model, zero_weights
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.examples import EXAMPLES, build_example
from onnxroof.report.formatting import rate_text
from onnxroof.report.html.pages import render_html, script_json

SCRIPT_PAYLOAD = "</script><script>alert(1)</script>"


class _Page(HTMLParser):
    """Collects the tags, the node-table rows and the embedded JSON of a rendered report."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.node_rows: list[dict[str, str | None]] = []
        self.node_names: list[str] = []
        self.titles: list[str] = []
        self._table: str | None = None
        self._in_tbody = False
        self._cell = -1
        self._json_open = False
        self.json_text = ""
        # the memory section's timeline SVG
        self.svg_paths: list[dict[str, str | None]] = []
        self.svg_titles: list[str] = []  # the text of every <title> element inside an <svg>
        self._svg = 0
        self._title_open = False
        self.section_ids: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if attributes.get("title"):
            self.titles.append(attributes["title"])
        if tag == "section" and attributes.get("id"):
            self.section_ids.append(attributes["id"])
        if tag == "svg":
            self._svg += 1
        elif tag == "path" and self._svg:
            self.svg_paths.append(attributes)
        elif tag == "title" and self._svg:
            self._title_open = True
            self.svg_titles.append("")
        if tag == "table":
            self._table = attributes.get("id")
        elif tag == "tbody":
            self._in_tbody = True
        elif tag == "tr" and self._table == "node-table" and self._in_tbody:
            self.node_rows.append(attributes)
            self._cell = -1
        elif tag == "td" and self._table == "node-table" and self._in_tbody:
            self._cell += 1
            if self._cell == 1:
                self.node_names.append("")
        elif tag == "script" and attributes.get("id") == "onnxroof-data":
            self._json_open = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg -= 1
        elif tag == "title":
            self._title_open = False
        if tag == "table":
            self._table = None
        elif tag == "tbody":
            self._in_tbody = False
        elif tag == "script":
            self._json_open = False

    def handle_data(self, data):
        if self._title_open:
            self.svg_titles[-1] += data
        if self._json_open:
            self.json_text += data
        elif self._table == "node-table" and self._in_tbody and self._cell == 1 and self.node_names:
            self.node_names[-1] += data


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


@pytest.fixture(scope="module")
def minigooglenet_analysis():
    return onnxroof.analyze(build_example("minigooglenet"))


@pytest.fixture(scope="module")
def minigooglenet_html(minigooglenet_analysis) -> str:
    return render_html(minigooglenet_analysis)


def test_minigooglenet_has_exact_totals_in_tooltips(minigooglenet_html):
    page = _parse(minigooglenet_html)
    assert "1,656,250" in minigooglenet_html
    assert any("1,656,250" in title for title in page.titles)
    assert any("470,738,178" in title for title in page.titles)  # total FLOPs, exact
    assert "1.66 M" in minigooglenet_html  # and the SI-formatted card value


def test_one_table_row_per_node(minigooglenet_html):
    page = _parse(minigooglenet_html)
    assert len(page.node_rows) == 74
    analysis = onnxroof.analyze(build_example("minigooglenet"))
    assert [name.strip() for name in page.node_names] == [r.name for r in analysis.nodes]


def test_numeric_cells_carry_exact_values_for_sorting(minigooglenet_html):
    analysis = onnxroof.analyze(build_example("minigooglenet"))
    first = analysis.nodes[0]
    assert f'data-value="{first.flops}"' in minigooglenet_html
    assert f'title="{first.macs:,} MACs"' in minigooglenet_html


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_self_contained(example):
    html = render_html(onnxroof.analyze(build_example(example)))
    page = _parse(html)
    assert "http://" not in html and "https://" not in html
    for tag, attributes in page.tags:
        if tag == "script":
            assert "src" not in attributes
        if tag == "link":
            raise AssertionError(f"external resource link: {attributes}")
        for name in ("src", "href", "action", "data"):
            value = attributes.get(name) or ""
            assert not re.match(r"\s*(https?:)?//", value), (tag, attributes)
    assert "@import" not in html and "url(" not in html
    csp = [a for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in (csp[0]["content"] or "")


def test_embedded_document_is_the_json_document(minigooglenet_html):
    page = _parse(minigooglenet_html)
    document = json.loads(page.json_text)
    assert document["schema"] == "onnxroof/1"
    assert document["totals"]["params"] == 1_656_250
    assert len(document["nodes"]) == 74


def _hostile_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    relu = helper.make_node("Relu", ["x"], ["y"], name=IMG_PAYLOAD + SCRIPT_PAYLOAD)
    graph = helper.make_graph([relu], SCRIPT_PAYLOAD, [x], [y])
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name=IMG_PAYLOAD,
        doc_string=SCRIPT_PAYLOAD + " & " + IMG_PAYLOAD,
    )


def test_hostile_names_are_escaped():
    analysis = onnxroof.analyze(_hostile_model())
    assert analysis.model.name == SCRIPT_PAYLOAD
    html = render_html(analysis)
    assert SCRIPT_PAYLOAD not in html
    assert IMG_PAYLOAD not in html
    assert "<img" not in html.lower()
    page = _parse(html)
    assert not any(tag == "img" for tag, _ in page.tags)
    # exactly the page's own scripts: the graph view's, node table's and document's JSON blocks, and the inline code
    scripts = [attributes for tag, attributes in page.tags if tag == "script"]
    assert [(a.get("type"), a.get("id")) for a in scripts] == [
        ("application/json", "onnxroof-graph"),
        ("application/json", "onnxroof-nodes"),
        ("application/json", "onnxroof-data"),
        (None, None),
    ]
    # the names survive, escaped, as text and in the embedded document
    assert page.node_names[0].strip() == IMG_PAYLOAD + SCRIPT_PAYLOAD
    document = json.loads(page.json_text)
    assert document["model"]["name"] == SCRIPT_PAYLOAD
    assert document["nodes"][0]["name"] == IMG_PAYLOAD + SCRIPT_PAYLOAD


def test_script_json_escapes_markup_characters():
    text = script_json({"name": "</script><!-- & \u2028", "x": float("nan")})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"name": "</script><!-- & \u2028", "x": None}


def test_incomplete_model_shows_warning_box():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("FancyOp", ["r"], ["y"], name="fancy", domain="com.example"),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "incomplete", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
    )
    html = render_html(onnxroof.analyze(model, partial=True))
    assert 'class="alert"' in html
    assert "--dim batch=" in html  # the fix flag for the unbound dim
    assert "FancyOp" in html and "×1" in html
    page = _parse(html)
    assert all("uncounted" in (row.get("class") or "") for row in page.node_rows)


def test_complete_model_has_no_warning_box(minigooglenet_html):
    assert 'class="alert"' not in minigooglenet_html


# ---------------------------------------------------------------------------------------------
# Memory section


def _memory_section(html: str) -> str:
    start = html.index('<section class="panel memory" id="memory"')
    return html[start : html.index("</section>", start)]


def test_memory_section_on_minigooglenet(minigooglenet_html, minigooglenet_analysis):
    page = _parse(minigooglenet_html)
    # after the totals, before the per-op and per-node tables
    assert page.section_ids.index("memory") < page.section_ids.index("ops")
    assert minigooglenet_html.index('aria-label="Totals"') < minigooglenet_html.index('id="memory"')
    section = _memory_section(minigooglenet_html)
    # the peak: two 1 x 96 x 32 x 32 float32 tensors live at once, each 96 x 32 x 32 x 4 = 393,216 B,
    # 786,432 B together; exact in a title (card and chart marker)
    peak = minigooglenet_analysis.memory.model_order
    assert peak.peak_bytes == 786_432 and [size for _, size in peak.peak_tensors] == [393_216, 393_216]
    assert any("786,432" in title for title in page.titles)
    assert any(title.startswith("Peak, model order: 786,432 bytes") for title in page.svg_titles)
    assert "768 KiB" in section
    assert "batch_normalization_0" in section  # the peak node, and the layer of the lower bound
    # the tensors making up the peak, with their exact bytes
    assert section.count('title="393,216 bytes"') == 2 and "conv2d_0" in section
    # how the best order was found, and the plain-language explanation
    assert "already optimal" in section
    assert (
        "At step 1, batch_normalization_0 (BatchNormalization) runs while conv2d_0&#39;s output is still live"
        in section
    )
    assert "Concat" in section
    # one path per order in the timeline, nothing else drawn as a path (but the graph view's edges)
    paths = [p for p in page.svg_paths if p.get("class") != "ge"]
    assert sorted(p.get("data-series") for p in paths) == ["best", "model"]
    assert all(p.get("d", "").startswith("M") for p in paths)
    # the y axis is in IEC units, x is the step
    assert ">800 KiB</text>" in section and ">70</text>" in section
    # a hover title per step, with its node and exact bytes
    assert any(
        t.startswith("step 1\nmodel order: batch_normalization_0 (BatchNormalization): 768 KiB (786,432 bytes)")
        for t in page.svg_titles
    )
    assert sum(1 for t in page.svg_titles if t.startswith("step ")) == 74


def test_memory_section_reports_a_better_order_and_capacity_lines():
    # two branches: A1/B1 expand x to 4,000 B each, A2/B2 shrink it; the model interleaves them
    analysis = onnxroof.analyze(interleaved_branches_model())
    html = render_html(analysis, capacities=[("test SRAM", 6_000), ("huge SRAM", 10**9)])
    page = _parse(html)
    section = _memory_section(html)
    assert "8,040 bytes" in section and "4,044 bytes" in section  # model-order and best-order peaks
    assert "Reordering helps" in section and "exact search" in section
    assert any(t.startswith("Peak, best order: 4,044 bytes") for t in page.svg_titles)
    assert sorted(p.get("data-series") for p in page.svg_paths if p.get("class") != "ge") == ["best", "model"]
    assert any(t == "test SRAM: 6,000 bytes on chip" for t in page.svg_titles)
    assert "Above this chart's scale: huge SRAM" in section  # a capacity that would flatten the chart


def test_memory_section_escapes_hostile_names():
    html = render_html(onnxroof.analyze(_hostile_model()))
    section = _memory_section(html)
    assert IMG_PAYLOAD not in section and SCRIPT_PAYLOAD not in section
    assert "&lt;img src=x onerror=alert(1)&gt;" in section  # the peak node's name, as text


# ---------------------------------------------------------------------------------------------
# Models for the report's scale cases (built with onnx.helper; also used by report/test_browser.py)


def resnet_like(width: int = 16, image: int = 64) -> onnx.ModelProto:
    """ResNet-50's layout (stem, 3-4-6-3 bottlenecks with a projection per stage, pool, Gemm) at a
    quarter of its width: 122 nodes, like the real one after BatchNorm folding."""
    nodes, inits = [], []

    def conv(x, c_in, c_out, k, stride=1, relu=True):
        name = f"conv{len(nodes)}"
        w = zero_weights(f"{name}.w", (c_out, c_in, k, k), inits)
        b = zero_weights(f"{name}.b", (c_out,), inits)
        nodes.append(
            helper.make_node(
                "Conv", [x, w, b], [name], name=name, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4
            )
        )
        if relu:
            nodes.append(helper.make_node("Relu", [name], [name + ".relu"], name=name + ".relu"))
            return name + ".relu"
        return name

    x = conv("x", 3, width, 7, stride=2)
    nodes.append(
        helper.make_node("MaxPool", [x], ["pool"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    )
    x, c_in = "pool", width
    for stage, (blocks, mid) in enumerate(((3, width), (4, 2 * width), (6, 4 * width), (3, 8 * width))):
        for block in range(blocks):
            stride = 2 if block == 0 and stage > 0 else 1
            shortcut = conv(x, c_in, 4 * mid, 1, stride, relu=False) if block == 0 else x
            y = conv(x, c_in, mid, 1)
            y = conv(y, mid, mid, 3, stride)
            y = conv(y, mid, 4 * mid, 1, relu=False)
            name = f"add{len(nodes)}"
            nodes.append(helper.make_node("Add", [y, shortcut], [name], name=name))
            nodes.append(helper.make_node("Relu", [name], [name + ".relu"], name=name + ".relu"))
            x, c_in = name + ".relu", 4 * mid
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"))
    nodes.append(
        helper.make_node(
            "Gemm",
            ["flat", zero_weights("fc.w", (1000, c_in), inits), zero_weights("fc.b", (1000,), inits)],
            ["logits"],
            name="fc",
            transB=1,
        )
    )
    graph = helper.make_graph(
        nodes,
        "resnet_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, image, image])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxroof tests")


def chain(nodes: int, width: int = 16) -> onnx.ModelProto:
    """benchmarks/chain.py's MatMul/Add/Relu chain."""
    spec = importlib.util.spec_from_file_location(
        "chain", Path(__file__).resolve().parents[2] / "benchmarks" / "chain.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.chain_model(nodes, width)


# ---------------------------------------------------------------------------------------------
# Rooflines, hotspots, the paged node table, size


class _Charts(HTMLParser):
    """The roofline charts of a page: per <svg data-chart="roofline">, its dots (attributes and
    <title> text) and marks; plus every JSON script block by id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.charts: list[dict] = []
        self.scripts: dict[str, str] = {}
        self._stack: list[dict] = []
        self._script: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "svg" and attributes.get("data-chart") == "roofline":
            self.charts.append({"id": attributes["id"], "dots": [], "marks": [], "texts": []})
        elif self.charts and tag == "circle" and "dot" in (attributes.get("class") or "").split():
            self.charts[-1]["dots"].append({**attributes, "title": ""})
            self._stack.append(self.charts[-1]["dots"][-1])
        elif self.charts and tag == "g" and "mark" in (attributes.get("class") or "").split():
            self.charts[-1]["marks"].append({**attributes, "title": ""})
            self._stack.append(self.charts[-1]["marks"][-1])
        elif tag == "title" and self._stack:
            self._stack[-1]["_title_open"] = True
        elif tag == "script" and attributes.get("id"):
            self._script = attributes["id"]
            self.scripts[self._script] = ""

    def handle_endtag(self, tag):
        if tag == "title" and self._stack:
            self._stack[-1].pop("_title_open", None)
        elif (
            tag in ("circle", "g")
            and self._stack
            and tag
            == (
                "circle"
                if "cx" in self._stack[-1]
                and "d" not in self._stack[-1]
                and self._stack[-1].get("class", "").startswith("dot")
                else "g"
            )
        ):
            self._stack.pop()
        elif tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._stack and self._stack[-1].get("_title_open"):
            self._stack[-1]["title"] += data
        if self._script:
            self.scripts[self._script] += data


def _charts(html: str) -> _Charts:
    page = _Charts()
    page.feed(html)
    page.close()
    return page


# MiniGoogLeNet costs 62 nodes with FLOPs: 19 Conv, 19 BatchNormalization, 19 Relu, 3 pools, a
# Gemm and a Softmax. myriad-x runs each as its own kernel (no fusion); h100-sxm fuses each
# Conv+BatchNormalization+Relu into one kernel: 19 + 3 + 1 + 1 = 24
DOTS_PER_TARGET = [62, 24]


@pytest.fixture(scope="module")
def targeted():
    analysis = onnxroof.analyze(build_example("minigooglenet"), targets=["myriad-x", "h100-sxm"])
    return analysis, render_html(analysis)


def test_header_names_type_batch_and_targets(targeted):
    analysis, html = targeted
    header = html[html.index('<header class="masthead">') : html.index("</header>")]
    assert "float32 (as stored)" in header and "from the input shapes" in header
    assert "myriad-x, h100-sxm" in header
    assert "Conventions:" in header and "1 MAC = 2 FLOPs" in header


BOUND_WORDS = {
    "compute": "compute",
    "dram": "DRAM",
    "onchip": "on-chip",
    "overhead": "overhead",
    "parallelism": "parallelism",
    "none": "none",
}


def test_target_cards(targeted):
    analysis, html = targeted
    cards = html[html.index('aria-label="Per target"') :]
    cards = cards[: cards.index("</section>")]
    for report in analysis.targets:
        assert f"{report.latency_s:.6g} s for one run" in cards
        # the exact rate in the title; the card's figure rounded as every output rounds a rate
        assert f"{report.throughput_per_s:.6g} inferences per second" in cards
        assert f"{rate_text(report.throughput_per_s, report)}/s" in cards
    assert "compute" in cards and "overhead" in cards  # the dominant bound on each
    assert "2.39 mJ" in cards  # myriad-x's energy per run (the Concats move no bytes: written in place)
    # where the time goes, every bound's share, and no whole-model bound beside it to contradict
    # it (the whole-model point keeps its place on the chart)
    for report in analysis.targets:
        shares = sorted(((b, s) for b, s in report.time_share.items() if s >= 0.005), key=lambda item: -item[1])
        assert ", ".join(f"{BOUND_WORDS[b]} {s:.0%}" for b, s in shares) in cards
    assert "whole model" not in re.sub(r'title="[^"]*"', "", cards)


def test_one_roofline_per_target_with_one_dot_per_costed_node(targeted):
    analysis, html = targeted
    page = _charts(html)
    assert [c["id"] for c in page.charts] == ["roofline-0", "roofline-1"]
    names = [r.name for r in analysis.nodes]
    for chart, report, expected in zip(page.charts, analysis.targets, DOTS_PER_TARGET):
        costed = [n for n in report.nodes if n.placement.flops > 0]
        # alike kernels (same op, roof, FLOPs, bytes and time) share one dot that counts them
        assert sum(int(d["data-count"]) for d in chart["dots"]) == len(costed) == expected
        assert len(chart["dots"]) == len(
            {
                (
                    n.op_type,
                    n.placement.roof,
                    n.placement.flops,
                    n.placement.dram_bytes,
                    n.placement.onchip_bytes,
                    n.placement.time_s,
                )
                for n in costed
            }
        )
        by_name = {n.name: n for n in costed}
        for dot in chart["dots"]:
            node = by_name[names[int(dot["data-node"])]]  # data-node: the row it scrolls to
            title = dot["title"]
            if dot["data-count"] != "1":
                assert title.startswith(f"{dot['data-count']} alike kernels, one dot")
                title = title.split("\n", 1)[1]
            first, second = title.split("\n")[:2]
            assert first.startswith(node.name) and second.startswith(node.op_type + " · ")
            if len(node.nodes) > 1:  # a fused kernel names the nodes it runs
                assert first == f"{node.name} (kernel of {len(node.nodes)} nodes: {', '.join(node.nodes)})"
            assert f"FLOPs: {onnxroof.core.units.si(node.placement.flops)} ({node.placement.flops:,})" in title
            assert f"({node.placement.dram_bytes:,})" in title and f"({node.placement.time_s:.6g} s)" in title
            assert "bound: " in title and "intensity: " in title
        # the whole-model point
        (mark,) = chart["marks"]
        assert mark["title"].startswith(f"Whole model on {report.target.name}")
        assert f"({report.model_point.flops:,})" in mark["title"]


def test_roofline_dot_area_is_the_share_of_time(targeted):
    analysis, html = targeted
    chart = _charts(html).charts[0]
    report = analysis.targets[0]
    names = [r.name for r in analysis.nodes]
    times = {n.name: n.placement.time_s for n in report.nodes}
    areas = {names[int(d["data-node"])]: float(d["r"]) ** 2 for d in chart["dots"]}
    big = max(areas, key=areas.get)
    assert big == max(times, key=times.get) == "conv2d_13"
    # two big nodes: radius squared in proportion to time (small ones sit at the minimum radius)
    ratio = areas["conv2d_2"] / areas["conv2d_13"]
    assert ratio == pytest.approx(times["conv2d_2"] / times["conv2d_13"], rel=0.02)


def test_roofline_dots_sit_under_the_roof(targeted):
    """y is the achieved rate (FLOPs / time): no dot's centre is above the roofs' envelope (the
    top compute roof and the DRAM slope), read back from the SVG's own paths."""
    _, html = targeted
    for number, _ in enumerate(DOTS_PER_TARGET):
        svg = html[html.index(f'id="roofline-{number}"') :]
        svg = svg[: svg.index("</svg>")]
        top = min(float(y) for y in re.findall(r'<path class="roof" d="M[\d.]+,([\d.]+)H', svg))
        x1, y1, x2, y2 = map(
            float, re.search(r'class="slope slope-dram" d="M([\d.]+),([\d.]+)L([\d.]+),([\d.]+)"', svg).groups()
        )
        dots = [
            (float(x), float(y)) for x, y in re.findall(r'<circle class="dot[^"]*" cx="([\d.]+)" cy="([\d.]+)"', svg)
        ]
        assert dots
        for x, y in dots:
            assert y >= top - 0.15
            if x1 <= x <= x2:  # under the DRAM slope, a straight line on log-log axes
                assert y >= y1 + (y2 - y1) * (x - x1) / (x2 - x1) - 0.15


def test_roofline_bins_dots_past_the_limit(monkeypatch, targeted):
    import onnxroof.report.html.model_roofline as module
    from onnxroof.report.html.pages import render_html

    analysis, _ = targeted
    monkeypatch.setattr(module, "AGGREGATE_ABOVE", 10)
    page = _charts(render_html(analysis))
    for chart, report in zip(page.charts, analysis.targets):
        costed = sum(1 for n in report.nodes if n.placement.flops > 0)
        counts = [int(d["data-count"]) for d in chart["dots"]]
        assert sum(counts) == costed and len(counts) < costed
        binned = [d for d in chart["dots"] if int(d["data-count"]) > 1]
        assert binned and all(re.match(r"\d+ × [\w+]+ \(\w+ roof\)", d["title"]) for d in binned)
        assert all("click to show it" in d["title"] for d in chart["dots"])


def test_hotspots_are_the_slowest_nodes_on_the_first_target(targeted):
    analysis, html = targeted
    section = html[html.index('id="hotspots"') :]
    section = section[: section.index("</section>")]
    slowest = sorted(analysis.targets[0].nodes, key=lambda n: -n.placement.time_s)[:10]
    positions = [section.index(f'title="{n.name}">{n.name}</a>') for n in slowest]
    assert positions == sorted(positions) and len(positions) == 10
    assert "by time on myriad-x" in section


def test_hotspots_by_flops_without_targets(minigooglenet_html):
    section = minigooglenet_html[minigooglenet_html.index('id="hotspots"') :]
    section = section[: section.index("</section>")]
    assert "by FLOPs" in section and "conv2d_" in section
    assert _charts(minigooglenet_html).charts == []  # no target, no roofline


def test_op_types_share_of_time_per_target(targeted):
    analysis, html = targeted
    section = html[html.index('id="ops"') :]
    section = section[: section.index("</section>")]
    assert 'Share of time <span class="muted">myriad-x</span>' in section
    assert 'Share of time <span class="muted">h100-sxm</span>' in section
    conv = sum(n.placement.time_s for n in analysis.targets[0].nodes if n.op_type == "Conv")
    assert f"({conv:.6g} s) of" in section
    # on h100-sxm every Conv runs fused with its BatchNormalization and Relu: the kernel's time is
    # split over its nodes by FLOPs, so the op types' shares still add up to the whole latency
    # (they added up to about 15 % when the table grouped by the kernel's name, "Conv+...")
    fused = analysis.targets[1]
    seconds = [float(t) for t in re.findall(r"\(([0-9.e+-]+) s\) of [^<]* on h100-sxm", section)]
    assert sum(seconds) == pytest.approx(fused.latency_s, rel=1e-4)


def test_hotspot_names_keep_what_tells_the_rows_apart():
    # two layers' MatMuls whose names differ only in the layer index, in the middle of 45 characters:
    # a middle clip to 36 would cut the index from both
    names = [f"/model/encoder/layer.{i}/intermediate/dense/MatMul" for i in (10, 11)]
    initializers: list = []
    nodes = [
        helper.make_node("MatMul", ["x", zero_weights("w0", [64, 64], initializers)], ["h"], name=names[0]),
        helper.make_node("MatMul", ["h", zero_weights("w1", [64, 64], initializers)], ["y"], name=names[1]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 64])],
        initializers,
    )
    html = render_html(onnxroof.analyze(helper.make_model(graph), targets=["h100-sxm"]))
    assert "…layer.10/intermediate/dense/MatMul" in html and "…layer.11/intermediate/dense/MatMul" in html


def test_the_roofs_legend_names_only_the_roofs_drawn():
    # fpga-ddr100 gives no on-chip bandwidth, so its chart draws no on-chip roof; myriad-x gives one
    html = render_html(onnxroof.analyze(build_example("shallownet"), targets=["fpga-ddr100", "myriad-x"]))
    fpga, myriad = (html[html.index(f'id="roofline-{i}-panel"') :] for i in (0, 1))
    fpga = fpga[: fpga.index("</figcaption>")]
    myriad = myriad[: myriad.index("</figcaption>")]
    assert "DRAM roof" in fpga and "on-chip roof" not in fpga
    assert "on-chip roof" in myriad


def test_node_table_has_time_and_bound_per_target(targeted):
    analysis, html = targeted
    page = _parse(html)
    assert len(page.node_rows) == 74
    first = analysis.targets[0].nodes[0]
    assert f"{float(f'{first.placement.time_s:.6g}'):.6g} s on myriad-x" in html
    assert '<option value="0:compute">myriad-x: compute' in html  # the bound filter
    assert '<option value="1:overhead">h100-sxm: overhead' in html


def test_capacity_lines_default_to_the_targets(targeted):
    analysis, html = targeted
    section = _memory_section(html)
    myriad = int(analysis.targets[0].target.onchip_bytes.value)
    assert f"<title>myriad-x on-chip: {myriad:,} bytes on chip</title>" in section  # a line on the chart
    assert "Above this chart's scale: h100-sxm on-chip (50 MiB)" in section  # too far above the data: listed


def test_embedded_node_table_round_trips(targeted):
    analysis, html = targeted
    page = _charts(html)
    table = json.loads(page.scripts["onnxroof-nodes"])
    assert len(table["rows"]) == 74 and table["page_size"] == 200
    row = table["rows"][0]
    columns = table["columns"]
    node = analysis.nodes[0]
    assert row[columns.index("name")] == node.name and row[columns.index("flops")] == node.flops
    assert table["ops"][row[columns.index("op")]][0] == node.op_type
    assert [t["name"] for t in table["targets"]] == ["myriad-x", "h100-sxm"]
    assert table["targets"][0]["time"][0] == pytest.approx(analysis.targets[0].nodes[0].placement.time_s, rel=1e-5)


def test_script_hash_matches_the_csp(targeted):
    for html in (targeted[1],):
        script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"script-src 'sha256-{digest}'" in html


def test_big_graph_pages_its_table_and_bounds_its_size():
    analysis = onnxroof.analyze(chain(2_400), targets=["myriad-x"])
    html = render_html(analysis)
    page, charts = _parse(html), _charts(html)
    assert len(page.node_rows) == 200  # the first page, server-rendered
    table = json.loads(charts.scripts["onnxroof-nodes"])
    assert len(table["rows"]) == 2_400
    assert 'id="node-pager"' in html and "page 1 of 12" in html
    assert "onnxroof-data" not in charts.scripts  # past 2,000 nodes: the document is left out
    assert "summary --format json</code> writes it" in html
    (chart,) = charts.charts
    counts = [int(d["data-count"]) for d in chart["dots"]]
    assert sum(counts) == 2_400 and len(counts) < 20  # binned
    # bounded: a fixed part (styles, script, charts, the first page of rows) and under 100 bytes a
    # node, so 100,000 nodes stay well under 20 MB
    assert len(html.encode()) < 600_000 + 100 * 2_400


def test_resnet_sized_report_is_light():
    analysis = onnxroof.analyze(resnet_like(), targets=["myriad-x", "h100-sxm"])
    assert len(analysis.nodes) == 122
    html = render_html(analysis)
    assert len(html.encode()) < 1_000_000
    dots = _charts(html).charts[0]["dots"]
    assert sum(int(d["data-count"]) for d in dots) == sum(1 for n in analysis.targets[0].nodes if n.placement.flops > 0)
    assert len(dots) < 40  # a ResNet's repeated blocks: one dot per kind of kernel


def test_hostile_names_in_charts_are_escaped():
    analysis = onnxroof.analyze(_hostile_model(), targets=["myriad-x"])
    html = render_html(analysis)
    assert IMG_PAYLOAD not in html and SCRIPT_PAYLOAD not in html and "<img" not in html.lower()
    (chart,) = _charts(html).charts
    assert chart["dots"][0]["title"].startswith(IMG_PAYLOAD + SCRIPT_PAYLOAD)  # as text, escaped in the page


# ---------------------------------------------------------------------------------------------
# diff, compare, sweep


def _self_contained(html: str) -> None:
    assert "http://" not in html and "https://" not in html and "url(" not in html
    script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html


@pytest.fixture(scope="module")
def pair():
    from onnxroof.compare.diff import diff_analyses

    base = onnxroof.analyze(build_example("minigooglenet"), targets=["myriad-x", "h100-sxm"])
    head = onnxroof.analyze(build_example("minigooglenet"), targets=["myriad-x", "h100-sxm"], batch=4)
    return base, head, diff_analyses(base, head)


def test_diff_html(pair):
    from onnxroof.compare.budgets import check_budgets, parse_budget
    from onnxroof.report.html.pages import render_diff_html

    base, head, diff = pair
    results = check_budgets([parse_budget("flops>+5%"), parse_budget("params>5M")], head, base)
    html = render_diff_html(diff, results)
    _self_contained(html)
    assert "1 budget broken" in html and "budget-broken" in html and "budget-ok" in html
    assert "The inputs changed" in html and "batch 1 -&gt; dtype model, batch 4" in html
    charts = _charts(html).charts
    assert len(charts) == 2
    for chart, report in zip(charts, head.targets):
        bases = [d for d in chart["dots"] if "dot-base" in d["class"]]
        heads = [d for d in chart["dots"] if "dot-head" in d["class"]]
        assert len(heads) == sum(1 for n in report.nodes if n.placement.flops > 0) == len(bases)
        assert [m["class"] for m in chart["marks"]] == ["mark model model-base", "mark model model-head"]
    assert html.count('class="arrow arrow-node"') == 2 * 10  # the ten largest time changes per target
    assert html.count('class="arrow arrow-model"') == 2
    assert 'data-series="base"' in html and 'data-series="head"' in html  # memory timelines overlaid
    assert "What changed" in html and "+300.0%" in html  # FLOPs x4


def test_compare_html(pair):
    from onnxroof.report.html.pages import render_compare_html

    base, head, _ = pair
    small = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x", "h100-sxm"])
    html = render_compare_html([base, head, small])
    _self_contained(html)
    charts = _charts(html).charts
    assert len(charts) == 2
    for chart in charts:
        assert len(chart["marks"]) == 3 and chart["dots"] == []
        assert [m["title"].split(" on ")[0] for m in chart["marks"]] == ["minigooglenet", "minigooglenet", "shallownet"]
    assert 'class="num best"' in html  # the best value per column is marked


def test_sweep_html():
    from onnxroof.compare.sweep import run_sweep
    from onnxroof.report.html.pages import render_sweep_html

    points = run_sweep(build_example("minigooglenet"), [("batch", [1, 4, 16])], targets=["myriad-x", "h100-sxm"])
    html = render_sweep_html(points)
    _self_contained(html)
    charts = _charts(html).charts
    assert len(charts) == 2
    for chart in charts:
        assert [m["title"].split(" on ")[0] for m in chart["marks"]] == ["batch=1", "batch=4", "batch=16"]
    assert html.count('class="sweep-path"') == 2  # the model point's path, per target
    assert 'id="xy-latency"' in html and "latency per run vs batch" in html
    for point in points:
        assert f"{point.analysis.targets[0].latency_s:.6g}" in html  # exact values in the tooltips


def test_many_inputs_and_peak_tensors_fold_away():
    """A KV-cached decoder has about a hundred inputs, outputs and tensors live at its peak: the
    header shows 8 of each and folds the rest, the peak table shows the 12 largest and sums the rest."""
    from conftest import make_model

    nodes = [helper.make_node("Relu", [f"x{i}"], [f"y{i}"]) for i in range(20)]
    model = make_model(
        nodes,
        [(f"x{i}", TensorProto.FLOAT, [1, 16]) for i in range(20)],
        [(f"y{i}", TensorProto.FLOAT, [1, 16]) for i in range(20)],
    )
    page = render_html(onnxroof.analyze(model))
    assert "12 more inputs</summary>" in page and "12 more outputs</summary>" in page
    # at the peak 21 tensors of 64 B are live (20 inputs and the first output, or the last input
    # and 20 outputs): 12 rows, then the other 9 summed, 576 B = 9/21 of the peak
    rest = re.search(r'<tr class="peak-rest">(.*?)</tr>', page, re.S).group(1)
    assert "… and 9 more tensors" in rest and "576 B" in rest and "42.9%" in rest
    assert page.count('<tr class="peak-rest">') == 1
