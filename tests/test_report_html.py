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

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if attributes.get("title"):
            self.titles.append(attributes["title"])
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
        if tag == "table":
            self._table = None
        elif tag == "tbody":
            self._in_tbody = False
        elif tag == "script":
            self._json_open = False

    def handle_data(self, data):
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
