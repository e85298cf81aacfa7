"""diff, compare and budgets: hand-derived reductions, node matching, exit codes, Markdown shape."""

from __future__ import annotations

import json
import re

import onnx
import pytest
from conftest import minigooglenet_by_hand
from hypothesis import given
from hypothesis import strategies as st

import onnxroof
from onnxroof.cli.app import main
from onnxroof.compare.budgets import check_budgets, parse_budget
from onnxroof.compare.diff import diff_analyses, match_nodes
from onnxroof.core.errors import UsageError
from onnxroof.core.examples import build_example


def test_diff_with_itself_is_all_zeros(capsys):
    assert (
        main(
            [
                "diff",
                "example:minigooglenet",
                "example:minigooglenet",
                "--target",
                "myriad-x",
                "--format",
                "json",
                "--fail-if",
                "flops>+0%",
            ]
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert all(d["change"] == 0 for d in document["totals"])
    assert all(d["change"] == 0 for ds in document["targets"].values() for d in ds)
    assert {n["kind"] for n in document["nodes"]} == {"unchanged"}
    assert document["budgets"] == [{"budget": "flops>+0%", "value": 0.0, "broken": False}]


def test_separable_variant_reductions_derived_by_hand():
    base_flops, base_params, _ = minigooglenet_by_hand(separable=False)
    head_flops, head_params, _ = minigooglenet_by_hand(separable=True)
    assert (base_flops, base_params) == (469_195_840, 1_656_250)
    base = onnxroof.analyze(build_example("minigooglenet"), targets=["myriad-x"])
    head = onnxroof.analyze(build_example("minigooglenet-separable"), targets=["myriad-x"])
    diff = diff_analyses(base, head)
    deltas = {d.key: d for d in diff.totals}
    assert deltas["params"].change == head_params - base_params
    assert deltas["mac_flops"].change == head_flops - base_flops
    assert deltas["mac_flops"].percent == pytest.approx(100 * (head_flops - base_flops) / base_flops)
    # the 11 3x3 convs became 22 separable_conv2d nodes; Keras-style names count per layer kind, so
    # the 8 1x1 convs now hold the names conv2d_0..7 (matched by name, changed) and conv2d_8..18 are gone
    kinds = [n.kind for n in diff.nodes]
    assert (kinds.count("added"), kinds.count("removed"), kinds.count("changed")) == (22, 11, 8)
    assert deltas["nodes"].change == 11
    latency = {d.key: d for d in diff.targets["myriad-x"]}["latency_s"]
    assert latency.change < 0  # compute-bound on myriad-x: fewer FLOPs is faster there
    assert latency.base == pytest.approx(base.targets[0].latency_s)


def test_renamed_but_identical_model_matches_every_node_by_structure():
    base = build_example("minigooglenet")
    head = onnx.ModelProto()
    head.CopyFrom(base)
    renames = {}
    for i, node in enumerate(head.graph.node):
        node.name = f"renamed_{i}"
        for j, output in enumerate(node.output):
            if output not in {o.name for o in head.graph.output}:
                renames[output] = f"t_{i}_{j}"
    for node in head.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    changes = match_nodes(onnxroof.analyze(base).nodes, onnxroof.analyze(head).nodes)
    assert len(changes) == 74
    assert all(c.matched_by == "structure" and c.kind == "unchanged" for c in changes[:-1] + changes[-1:])
    assert all(c.base.index == c.head.index for c in changes)


def test_markdown_diff_structure(capsys):
    assert (
        main(
            [
                "diff",
                "example:minigooglenet",
                "example:minigooglenet-separable",
                "--target",
                "myriad-x",
                "--format",
                "markdown",
            ]
        )
        == 0
    )
    markdown = capsys.readouterr().out
    lines = markdown.splitlines()
    assert lines[0].startswith("### onnxroof diff")
    assert lines[2].startswith("**") and "🟢" in lines[2]  # the summary line comes first: cuts are good news
    header = next(i for i, line in enumerate(lines) if line.startswith("| metric |"))
    assert re.fullmatch(r"\| (---:? \| ){4}---:? \|", lines[header + 1])
    rows = [line for line in lines[header + 2 :] if line.startswith("|")]
    assert all(row.count("|") == 6 for row in rows[:5])
    assert markdown.count("<details>") == markdown.count("</details>") >= 2
    assert len(lines) < 120  # about a screen, the rest is folded


def test_budgets_exit_codes(capsys):
    assert main(["summary", "--example", "shallownet", "--fail-if", "params>5M"]) == 0
    assert main(["summary", "--example", "shallownet", "--fail-if", "params>300k"]) == 1
    assert "budget broken: params>300k" in capsys.readouterr().err
    assert main(["summary", "--example", "shallownet", "--fail-if", "flops>+5%"]) == 2  # relative needs a base
    assert main(["summary", "--example", "shallownet", "--fail-if", "latency[myriad-x]>1ms"]) == 2  # not analysed
    assert (
        main(["summary", "--example", "shallownet", "--target", "myriad-x", "--fail-if", "latency[myriad-x]>1ms"]) == 0
    )
    assert (
        main(["summary", "--example", "shallownet", "--target", "myriad-x", "--fail-if", "latency[myriad-x]>100us"])
        == 1
    )


@pytest.mark.parametrize(
    "text, limit",
    [
        ("params>5M", 5e6),
        ("peak_memory>2MiB", 2 * 2**20),
        ("flops>=1.5G", 1.5e9),
        ("latency[h100-sxm]<3ms", 3e-3),
        ("param_bytes<=100KiB", 100 * 1024),
    ],
)
def test_budget_parser_units(text, limit):
    assert parse_budget(text).limit == pytest.approx(limit)


@pytest.mark.parametrize(
    "text", ["flops", "flops>>5", "latency>1ms", "params[x]>5", "bogus>5", "params>5Q", "params>+5"]
)
def test_budget_parser_rejects(text):
    with pytest.raises(UsageError):
        parse_budget(text)


@given(
    st.integers(min_value=1, max_value=10**12),
    st.integers(min_value=1, max_value=10**12),
    st.floats(min_value=-99, max_value=500, allow_nan=False),
    st.sampled_from([">", ">=", "<", "<="]),
)
def test_relative_budget_breaks_exactly_when_the_change_crosses_it(before, after, percent, op):
    class Stub:  # an Analysis with just the totals a params budget reads
        def __init__(self, params):
            self.totals = type("T", (), {"params": params})()

    budget = parse_budget(f"params{op}{percent:+.6f}%")
    (result,) = check_budgets([budget], Stub(after), Stub(before))
    change = 100.0 * (after - before) / before
    expected = {
        ">": change > budget.limit,
        ">=": change >= budget.limit,
        "<": change < budget.limit,
        "<=": change <= budget.limit,
    }[op]
    assert result.broken == expected


def test_compare_puts_models_side_by_side(capsys):
    assert (
        main(
            [
                "compare",
                "example:shallownet",
                "example:shallownet-separable",
                "--target",
                "myriad-x",
                "--format",
                "json",
                "--jobs",
                "2",
            ]
        )
        == 0
    )
    document = json.loads(capsys.readouterr().out)
    first, second = document["models"]
    assert first["totals"]["mac_flops"] == 2_424_832 and second["totals"]["mac_flops"] == 907_264
    assert first["targets"][0]["name"] == "myriad-x"
    assert main(["compare", "example:shallownet", "example:minigooglenet", "--format", "markdown"]) == 0
    assert "| shallownet |" in capsys.readouterr().out


def test_the_diff_lists_the_modules_that_changed_largest_first(capsys, tmp_path):
    # base: /encoder/layer.0/fc is 16 x 32 (512 params, 512 MACs), /head 32 x 4 (128); head halves
    # both widths: encoder 512 -> 256 params, head 128 -> 64
    import json as json_module

    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(width):
        nodes = [
            helper.make_node("MatMul", ["x", "w0"], ["h"], name="/encoder/layer.0/fc/MatMul"),
            helper.make_node("Relu", ["h"], ["r"], name="/encoder/layer.0/act/Relu"),
            helper.make_node("MatMul", ["r", "w1"], ["y"], name="/head/MatMul"),
        ]
        weights = [
            numpy_helper.from_array(np.zeros((16, width), np.float32), "w0"),
            numpy_helper.from_array(np.zeros((width, 4), np.float32), "w1"),
        ]
        graph = helper.make_graph(
            nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
            weights,
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    onnx.save(model(32), tmp_path / "base.onnx")
    onnx.save(model(16), tmp_path / "head.onnx")
    assert main(["diff", str(tmp_path / "base.onnx"), str(tmp_path / "head.onnx"), "--format", "json"]) == 0
    modules = json_module.loads(capsys.readouterr().out)["modules"]
    assert [(m["module"], m["base_params"], m["head_params"]) for m in modules] == [
        ("encoder", 512, 256),
        ("encoder/layer.0", 512, 256),
        ("head", 128, 64),
    ]
    assert main(["diff", str(tmp_path / "base.onnx"), str(tmp_path / "head.onnx"), "--format", "markdown"]) == 0
    assert "| encoder | changed | 🟢 512 → 256 |" in capsys.readouterr().out
