"""The HTML report: self-contained, one row per node, exact values in tooltips, hostile names escaped."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from onnx import TensorProto, helper

import onnxroof
from onnxroof.examples import EXAMPLES, build_example
from onnxroof.report.html import render_html, script_json

SCRIPT_PAYLOAD = "</script><script>alert(1)</script>"
IMG_PAYLOAD = "<img src=x onerror=alert(1)>"


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
def minigooglenet_html() -> str:
    return render_html(onnxroof.analyze(build_example("minigooglenet")))


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
    # exactly the page's own two scripts: the JSON data block and the inline code
    scripts = [attributes for tag, attributes in page.tags if tag == "script"]
    assert len(scripts) == 2
    assert [a.get("type") for a in scripts] == ["application/json", None]
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
    html = render_html(onnxroof.analyze(model))
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
    return html[start:html.index("</section>", start)]


def test_memory_section_on_minigooglenet(minigooglenet_html):
    page = _parse(minigooglenet_html)
    # after the totals, before the per-op and per-node tables
    assert page.section_ids.index("memory") < page.section_ids.index("ops")
    assert minigooglenet_html.index('aria-label="Totals"') < minigooglenet_html.index('id="memory"')
    section = _memory_section(minigooglenet_html)
    # the peak: 2 x 96 x 32 x 32 float32 = 786,432 bytes, exact in a title (card and chart marker)
    assert 2 * 96 * 32 * 32 * 4 == 786_432
    assert any("786,432" in title for title in page.titles)
    assert any(title.startswith("Peak, model order: 786,432 bytes") for title in page.svg_titles)
    assert "768 KiB" in section
    assert "batch_normalization_0" in section  # the peak node, and the layer of the lower bound
    # the tensors making up the peak, with their exact bytes
    assert section.count('title="393,216 bytes"') == 2 and "conv2d_0" in section
    # how the best order was found, and the plain-language explanation
    assert "already optimal" in section
    assert ("At step 1, batch_normalization_0 (BatchNormalization) runs while conv2d_0&#39;s output is still live"
            in section)
    assert "Concat" in section
    # one path per order in the timeline, nothing else drawn as a path
    series = [p.get("data-series") for p in page.svg_paths]
    assert sorted(series) == ["best", "model"]
    assert all(p.get("d", "").startswith("M") for p in page.svg_paths)
    # the y axis is in IEC units, x is the step
    assert ">800 KiB</text>" in section and ">70</text>" in section
    # a hover title per step, with its node and exact bytes
    assert any(t.startswith("step 1\nmodel order: batch_normalization_0 (BatchNormalization): 768 KiB (786,432 bytes)")
               for t in page.svg_titles)
    assert sum(1 for t in page.svg_titles if t.startswith("step ")) == 74


def test_memory_section_reports_a_better_order_and_capacity_lines():
    # two branches: A1/B1 expand x to 4,000 B each, A2/B2 shrink it; the model interleaves them
    nodes = [
        helper.make_node("MatMul", ["x", "wa1"], ["la"], name="A1"),
        helper.make_node("MatMul", ["x", "wb1"], ["lb"], name="B1"),
        helper.make_node("MatMul", ["la", "wa2"], ["sa"], name="A2"),
        helper.make_node("MatMul", ["lb", "wb2"], ["sb"], name="B2"),
        helper.make_node("Add", ["sa", "sb"], ["y"], name="join"),
    ]
    weights = [
        helper.make_tensor(name, TensorProto.FLOAT, shape, [0.0] * (shape[0] * shape[1]))
        for name, shape in (("wa1", (10, 1000)), ("wb1", (10, 1000)), ("wa2", (1000, 1)), ("wb2", (1000, 1)))
    ]
    graph = helper.make_graph(
        nodes, "interleaved", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], weights,
    )
    analysis = onnxroof.analyze(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    html = render_html(analysis, capacities=[("test SRAM", 6_000), ("huge SRAM", 10**9)])
    page = _parse(html)
    section = _memory_section(html)
    assert "8,040 bytes" in section and "4,044 bytes" in section  # model-order and best-order peaks
    assert "Reordering helps" in section and "exact search" in section
    assert any(t.startswith("Peak, best order: 4,044 bytes") for t in page.svg_titles)
    assert sorted(p.get("data-series") for p in page.svg_paths) == ["best", "model"]
    assert any(t == "test SRAM: 6,000 bytes on chip" for t in page.svg_titles)
    assert "Above this chart's scale: huge SRAM" in section  # a capacity that would flatten the chart


def test_memory_section_escapes_hostile_names():
    html = render_html(onnxroof.analyze(_hostile_model()))
    section = _memory_section(html)
    assert IMG_PAYLOAD not in section and SCRIPT_PAYLOAD not in section
    assert "&lt;img src=x onerror=alert(1)&gt;" in section  # the peak node's name, as text
