"""report/text/diff_tables.py: `onnxroof diff` and `onnxroof compare` as text, Markdown and JSON.

Base is report_models.matmul_relu (8 columns), head the same with 16: 4 x 16 = 64 MACs,
128 + 16 = 144 FLOPs, 64 parameters (256 bytes); on the hand target its MatMul moves
256 + 16 + 64 = 336 bytes (336 ns) and its Relu 64 + 64 (128 ns): 464 ns against base's 240 ns."""

from __future__ import annotations

import pytest
from report_models import hand_target, matmul_relu

import onnxroof
from onnxroof.compare.budgets import check_budgets, parse_budget
from onnxroof.compare.diff import diff_analyses
from onnxroof.report.text.diff_tables import (
    compare_document,
    diff_document,
    render_compare_markdown,
    render_compare_table,
    render_diff_markdown,
    render_diff_table,
    summary_line,
)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    targets = [hand_target(tmp_path_factory.mktemp("targets"))]
    return (
        onnxroof.analyze(matmul_relu("base"), targets=targets),
        onnxroof.analyze(matmul_relu("head", columns=16), targets=targets),
    )


@pytest.fixture(scope="module")
def diff(pair):
    return diff_analyses(*pair)


def test_the_summary_line_gives_the_headline_changes(diff):
    # 240 -> 464 ns: +93.3%; parameters, FLOPs and the peak (64 -> 128 bytes) double
    assert summary_line(diff) == (
        "parameters 🔴 +100.0% · FLOPs 🔴 +100.0% · peak activations 🔴 +100.0% · latency [hand] 🔴 +93.3%"
    )


def test_the_markdown_tables_what_changed_and_folds_the_rest(diff):
    text = render_diff_markdown(diff)
    assert text.startswith("### onnxroof diff: base → head\n")
    assert "| FLOPs | 72 | 144 | +72 | 🔴 +100.0% |" in text
    assert "| latency \\[hand\\] | 240 ns | 464 ns | +224 ns | 🔴 +93.3% |" in text
    assert "<details><summary>Unchanged metrics (1)</summary>" in text and "| nodes | 2 | 2 | 0 | +0.0% |" in text
    assert "| MatMul | 1 → 1 | 64 | 128 | +100.0% |" in text and "| Relu | 1 → 1 | 8 | 16 | +100.0% |" in text
    assert "Nodes: 0 added, 0 removed, 2 changed" in text
    assert "| matmul | 176 ns | 336 ns | +160 ns |" in text  # the largest time changes on the target
    assert text.endswith("bytes IEC, counts SI</sub>\n")


def test_the_markdown_says_whether_the_budgets_hold(diff):
    held = check_budgets([parse_budget("params>1k")], diff.head, diff.base)
    broken = check_budgets([parse_budget("params>40")], diff.head, diff.base)  # head has 64
    assert "✅ All 1 budget(s) hold." in render_diff_markdown(diff, held)
    assert "❌ **Budgets broken:** " in render_diff_markdown(diff, broken)


def test_the_text_table_lists_every_metric_and_the_changed_nodes(diff):
    lines = render_diff_table(diff).splitlines()
    assert lines[0] == "onnxroof diff: base -> head"
    assert lines[2].split() == ["parameters", "32", "64", "+32", "+100.0%"]
    assert "nodes: 0 added, 0 removed, 2 changed, 0 unchanged" in lines


def test_the_document_carries_every_delta(diff):
    document = diff_document(diff)
    assert document["schema"] == "onnxroof-diff/1"
    flops = next(d for d in document["totals"] if d["key"] == "flops")
    assert (flops["base"], flops["head"], flops["change"], flops["percent"]) == (72, 144, 72, 100.0)


def test_compare_puts_the_models_side_by_side_a_block_per_target(pair):
    table = render_compare_table(list(pair))
    assert table.splitlines()[1].split() == ["base", "32", "128", "B", "64", "72", "64", "B", "64", "B"]
    assert "target hand" in table
    markdown = render_compare_markdown(list(pair))
    assert "| head | 64 | 256 B | 128 | 144 | 128 B | 128 B |" in markdown
    (_, head) = compare_document(list(pair))["models"]
    assert head["totals"]["flops"] == 144 and head["totals"]["peak_bytes"] == 128
