"""Names with control characters in the graph view (issue 43, item 7): the SVG is XML (it
parses), `graph -o -` sends no escape to the terminal, and every page shows such characters as
'?', as the other outputs do; the plain JSON keeps names exactly."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import onnx
import pytest
from conftest import make_model, run
from onnx import TensorProto, helper

from onnxroof.core.text import page_text, printable
from onnxroof.report.graph.svg import _markup

# every C0 control, DEL, the line and paragraph separators, a non-character, and markup
HOSTILE = "".join(chr(c) for c in range(0x20)) + "\x7f\u2028\u2029\ufffe" + "&<>\"'"
# what XML 1.0 does not allow, what a terminal interprets, and what splits a JavaScript line
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u2028\u2029\ufffe]")


def hostile_model(path):
    """x -> Relu -> Sigmoid -> y, the tensors' and nodes' names (and a module scope) HOSTILE."""
    nodes = [
        helper.make_node("Relu", ["x" + HOSTILE], ["a" + HOSTILE], name=f"/enc{HOSTILE}/Relu{HOSTILE}"),
        helper.make_node("Sigmoid", ["a" + HOSTILE], ["y" + HOSTILE], name=f"/enc{HOSTILE}/Sig{HOSTILE}"),
    ]
    onnx.save(
        make_model(nodes, [("x" + HOSTILE, TensorProto.FLOAT, [1, 8])], [("y" + HOSTILE, TensorProto.FLOAT, [1, 8])]),
        path,
    )
    return path


def test_svg_text_is_printable_then_escaped():
    # 32 C0 characters, DEL, U+2028, U+2029, U+FFFE: 36 '?'; then the five escaped
    assert _markup(HOSTILE) == "?" * 36 + "&amp;&lt;&gt;&#34;&#39;"
    assert _markup("a\ud800b") == "a?b"  # a lone surrogate (a file cannot hold one: an API caller's string)
    assert _markup("one\ntwo\tthree\x1b", lines=True) == "one\ntwo\tthree?"  # a tooltip keeps its lines
    assert page_text("a\x00\nb") == "a?\nb" and printable("a\x00\nb") == "a??b"


@pytest.mark.parametrize("target", [[], ["--target", "l4"]])
def test_the_graph_svg_parses_and_shows_question_marks(capsys, tmp_path, target):
    model = hostile_model(tmp_path / "m.onnx")
    code, _, err = run(capsys, "graph", model, "-o", tmp_path / "g.svg", *target)
    assert code == 0, err
    text = (tmp_path / "g.svg").read_text(encoding="utf-8")
    assert not UNSAFE.search(text)
    root = ET.fromstring(text)
    shown = " ".join(root.itertext())
    # the module box: its name, every hostile character a '?' (36 of them), then the five as they are
    assert "enc" + "?" * 36 + "&<>\"'" in shown
    code, out, _ = run(capsys, "graph", model, "-o", "-", *target)
    assert code == 0 and not UNSAFE.search(out) and "\x1b" not in out
    ET.fromstring(out)


def test_report_and_diff_pages_show_question_marks_outside_the_json_document(capsys, tmp_path):
    model = hostile_model(tmp_path / "m.onnx")
    for argv in (
        ["report", model, "--target", "l4", "-o", tmp_path / "r.html"],
        ["diff", model, model, "--target", "l4", "--format", "html", "-o", tmp_path / "d.html"],
    ):
        code, _, err = run(capsys, *argv)
        assert code == 0, err
        page = argv[-1].read_text(encoding="utf-8")
        # the plain JSON document (onnxroof-data) keeps names exactly, JSON-escaped (\u0000)
        page = re.sub(r'<script type="application/json" id="onnxroof-data">.*?</script>', "", page, flags=re.S)
        assert not UNSAFE.search(page) and "\\u0000" not in page, argv[0]
