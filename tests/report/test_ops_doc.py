"""report/text/ops_doc.py: docs/ops.md is generated from the registry, one row per rule."""

from __future__ import annotations

from onnxroof.ops import COST_RULES
from onnxroof.report.text.ops_doc import HEADER, render_ops_markdown


def _rows(page: str) -> list[str]:
    return [line for line in page.splitlines() if line.startswith("| ") and not line.startswith("| domain |")]


def test_the_page_starts_with_its_header_and_has_a_row_per_registered_rule():
    page = render_ops_markdown()
    assert page.startswith(HEADER)
    assert len(_rows(page)) == len(COST_RULES)
    assert f"{len(COST_RULES)} rules in " in page


def test_one_rule_gives_one_family_one_row_its_domain_named_ai_onnx():
    rule = COST_RULES[("", "Relu")]
    page = render_ops_markdown({("", "Relu"): rule})
    assert "1 rules in 1 families." in page and f"## {rule.family}" in page
    (row,) = _rows(page)
    assert row.startswith("| ai.onnx | Relu | ") and row.endswith(" | - |")  # no argument inputs


def test_a_pipe_in_a_formula_is_escaped_so_the_table_keeps_its_columns():
    from dataclasses import replace

    def handler(node):
        """max(a | b)"""

    rule = replace(COST_RULES[("", "Relu")], handler=handler)  # the formula is the handler's docstring
    (row,) = _rows(render_ops_markdown({("", "Relu"): rule}))
    assert "| max(a \\| b) |" in row
