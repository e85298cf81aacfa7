"""The Markdown outputs as GitHub shows them (issue 21, item 5): rendered with markdown-it-py
(CommonMark with GFM tables, raw HTML allowed as GitHub allows <details>), no escape shows
literally, every table renders as a table, and changes are marked by whether they are good."""

from __future__ import annotations

import re

import pytest

markdown_it = pytest.importorskip("markdown_it")

from conftest import run  # noqa: E402


def rendered(text: str) -> str:
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def visible_text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_the_diff_comment_renders_with_tables_and_no_stray_escapes(capsys):
    code, out, _ = run(
        capsys,
        "diff",
        "example:minigooglenet",
        "example:minigooglenet-separable",
        "--target",
        "h100-sxm",
        "--target",
        "myriad-x",
        "--format",
        "markdown",
    )
    assert code == 0
    html = rendered(out)
    text = visible_text(html)
    assert "\\" not in text  # a backslash escape left in sight (GitHub showed 'h100\-sxm')
    separators = [line for line in out.splitlines() if re.fullmatch(r"\|( :?-{3,}:? \|)+", line)]
    assert separators and html.count("<table>") == len(separators)  # every table renders as one
    assert "Largest time changes on h100-sxm" in text
    # separable convolutions cut parameters and FLOPs: good news, marked green, never red
    metric_rows = [
        line for line in out.splitlines() if line.startswith("| parameters |") or line.startswith("| FLOPs |")
    ]
    assert metric_rows and all("🟢" in line and "🔴" not in line for line in metric_rows)


def test_the_summary_comment_renders(capsys):
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--target", "h100-sxm", "--format", "markdown")
    html = rendered(out)
    assert code == 0 and "<table>" in html and "\\" not in visible_text(html)


def test_the_diff_comment_lists_the_findings_that_changed(capsys):
    import onnxroof
    from onnxroof.compare.diff import diff_analyses
    from onnxroof.core.examples import build_example

    code, out, _ = run(
        capsys,
        "diff",
        "example:minigooglenet",
        "example:minigooglenet-separable",
        "--target",
        "l4",
        "--format",
        "markdown",
    )
    assert code == 0
    html = rendered(out)
    section = html.split("Findings that changed", 1)[1].split("</ul>", 1)[0]
    items = [visible_text(item) for item in re.findall(r"<li>(.*?)</li>", section, re.S)]
    base, head = (
        onnxroof.analyze(build_example(name), targets=["l4"]) for name in ("minigooglenet", "minigooglenet-separable")
    )
    reviewed = onnxroof.review(base).findings, onnxroof.review(head).findings
    changes = diff_analyses(base, head, findings=reviewed).findings
    assert changes and len(items) == len(changes)
    for item, change in zip(items, changes):
        assert item.split(":", 1)[0].endswith(change.kind) and change.finding.title in item
        assert "\\" not in item
