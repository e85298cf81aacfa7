"""The user hook (plugin files, entry points), `explain`, and the generated rule catalogue."""

from __future__ import annotations

import json
import os
from pathlib import Path

import onnx
import pytest
from conftest import make_model
from onnx import TensorProto, helper

from onnxroof.cli.app import main
from onnxroof.ops import COST_RULES
from onnxroof.report.text.ops_doc import render_ops_markdown

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = '''
from onnxroof import register
from onnxroof.ops import OpCost

def fused_thing(node):
    """FLOPs = 11 x output elements."""
    return OpCost(flops=11 * node.output_elements(0), formula="11 per element")

register("FusedThing", fused_thing, family="custom", domain="acme")
'''


def custom_model_file(tmp_path):
    model = make_model(
        [helper.make_node("FusedThing", ["x"], ["y"], domain="acme", name="thing")],
        [("x", TensorProto.FLOAT, [2, 5])],
        [("y", TensorProto.FLOAT, [2, 5])],
    )
    model.opset_import.append(helper.make_opsetid("acme", 1))
    path = tmp_path / "custom.onnx"
    onnx.save(model, path)
    return path


def test_plugin_file_costs_a_custom_op(tmp_path, capsys):
    path = custom_model_file(tmp_path)
    # without the plugin the model's one op has no rule: nothing is counted, exit 2 naming it
    assert main(["summary", str(path), "--format", "json", "-q"]) == 2
    assert "nothing could be counted: unsupported ops (not counted): FusedThing x1" in capsys.readouterr().err
    plugin = tmp_path / "acme_ops.py"
    plugin.write_text(PLUGIN)
    try:
        assert main(["summary", str(path), "--format", "json", "--plugin", str(plugin)]) == 0
        document = json.loads(capsys.readouterr().out)
        assert document["totals"]["unsupported"] == {} and document["totals"]["flops"] == 11 * 10
    finally:
        COST_RULES.pop(("acme", "FusedThing"), None)


def test_broken_plugin_is_a_one_line_error(tmp_path, capsys):
    plugin = tmp_path / "broken.py"
    plugin.write_text("raise RuntimeError('boom')\n")
    assert main(["summary", "--example", "shallownet", "--plugin", str(plugin)]) == 2
    err = capsys.readouterr().err
    assert "boom" in err and err.count("\n") == 1
    assert main(["summary", "--example", "shallownet", "--plugin", str(tmp_path / "nope.py")]) == 2


def test_explain_substitutes_the_nodes_numbers(capsys):
    assert main(["explain", "--example", "shallownet", "conv2d_0"]) == 0
    out = capsys.readouterr().out
    assert "MACs = N x Co" in out  # the rule
    assert "884,736" in out  # 32 x 32 x 32 x 27 MACs
    assert "1,769,472 / (3,584 + 12,288 + 131,072)" in out  # intensity with its bytes
    assert main(["explain", "--example", "shallownet", "conv2d"]) == 2
    assert "did you mean 'conv2d_0'" in capsys.readouterr().err


def test_docs_ops_md_is_generated_from_the_registry():
    """docs/ops.md must match the registry; regenerate with `onnxroof ops > docs/ops.md`."""
    assert (ROOT / "docs" / "ops.md").read_text() == render_ops_markdown()


def test_entry_point_plugins_are_loaded_once(monkeypatch):
    import onnxroof.ops.plugins as plugins

    calls = []

    class FakeEntryPoint:
        name, value = "acme", "acme_rules:setup"

        def load(self):
            return lambda register: calls.append(register)

    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", lambda group: [FakeEntryPoint()])
    monkeypatch.setattr(plugins, "_loaded_entry_points", False)
    assert plugins.load_entry_points() == ["acme"]
    assert plugins.load_entry_points() == []  # once per process
    assert calls == [plugins.register]


def test_a_plugin_rule_returning_nan_or_a_negative_count_is_not_counted(tmp_path, capsys):
    """What a rule returns is checked where the costing stage takes it: NaN, a negative count, a
    fraction or no OpCost leaves the node not counted with the reason; NaN never reaches the JSON."""
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            *(
                helper.make_node(op, ["r"], [f"y{i}"], domain="acme", name=op)
                for i, op in enumerate(("NanOp", "NegativeOp", "HalfOp", "WholeFloatOp", "NotACost", "HugeOp"))
            ),
        ],
        [("x", TensorProto.FLOAT, [2, 5])],
        [(f"y{i}", TensorProto.FLOAT, [2, 5]) for i in range(6)],
    )
    model.opset_import.append(helper.make_opsetid("acme", 1))
    path = tmp_path / "rules.onnx"
    onnx.save(model, path)
    plugin = tmp_path / "bad_rules.py"
    plugin.write_text(
        "from onnxroof import register\nfrom onnxroof.ops import OpCost\n"
        "register('NanOp', lambda node: OpCost(macs=float('nan')), family='custom', domain='acme')\n"
        "register('NegativeOp', lambda node: OpCost(flops=-5), family='custom', domain='acme')\n"
        "register('HalfOp', lambda node: OpCost(flops=2.5), family='custom', domain='acme')\n"
        "register('WholeFloatOp', lambda node: OpCost(flops=4.0), family='custom', domain='acme')\n"
        "register('NotACost', lambda node: 7, family='custom', domain='acme')\n"
        "register('HugeOp', lambda node: OpCost(macs=10**400), family='custom', domain='acme')\n"
    )
    try:
        assert main(["summary", str(path), "--format", "json", "-q", "--plugin", str(plugin), "--target", "l4"]) == 0
        out = capsys.readouterr().out
        document = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))
    finally:
        for op in ("NanOp", "NegativeOp", "HalfOp", "WholeFloatOp", "NotACost", "HugeOp"):
            COST_RULES.pop(("acme", op), None)
    nodes = {n["name"]: n for n in document["nodes"]}
    assert nodes["WholeFloatOp"]["counted"] and nodes["WholeFloatOp"]["flops"] == 4
    assert type(nodes["WholeFloatOp"]["flops"]) is int
    for op, words in (
        ("NanOp", "macs=nan"),
        ("NegativeOp", "flops=-5"),
        ("HalfOp", "flops=2.5"),
        ("NotACost", "returned int, not an OpCost"),
        ("HugeOp", "macs=1000"),
    ):
        assert not nodes[op]["counted"] and words in nodes[op]["reason"], nodes[op]
    assert document["totals"]["flops"] == 10 + 4 and not document["complete"]


@pytest.mark.parametrize(
    "body, words",
    [
        ("import sys\nsys.exit(0)\n", "failed to import (SystemExit: 0)"),
        ("import os\nos._exit(0)\n", "failed to import (it called os._exit(0))"),
        ("raise SystemExit(3)\n", "failed to import (SystemExit: 3)"),
        ("raise KeyboardInterrupt\n", "failed to import (KeyboardInterrupt)"),
    ],
)
def test_a_plugin_that_exits_never_passes_as_a_run(tmp_path, capsys, body, words):
    # issue 32: sys.exit(0) or os._exit(0) while importing made check exit 0 with no output (a
    # silent pass of a budget gate), SystemExit(3) exit 3 with nothing said, KeyboardInterrupt 130
    plugin = tmp_path / "exits.py"
    plugin.write_text(body)
    real_exit = os._exit
    assert main(["check", "example:shallownet", "--plugin", str(plugin), "--fail-if", "params>1"]) == 2
    assert os._exit is real_exit  # refused only while the plugin's code runs
    err = capsys.readouterr().err
    assert err == f"onnxroof: error: --plugin {plugin}: {words}; fix the plugin\n"


@pytest.mark.parametrize(
    "exit_call, words",
    [("import sys; sys.exit(0)", "(SystemExit: 0)"), ("import os; os._exit(0)", "(it called os._exit(0))")],
)
def test_a_rule_that_exits_stops_the_run_with_a_plugin_error(tmp_path, capsys, exit_call, words):
    # a node left not counted would let a budget on the totals pass: the run stops, exit 2
    rule = tmp_path / "rule_exits.py"
    rule.write_text(
        PLUGIN.replace('return OpCost(flops=11 * node.output_elements(0), formula="11 per element")', exit_call)
    )
    try:
        path = custom_model_file(tmp_path)
        assert main(["check", str(path), "--plugin", str(rule), "--fail-if", "flops>1"]) == 2
        out = capsys.readouterr().out
        assert f"--plugin {rule}: the rule of FusedThing (acme) tried to end the process {words}" in out
    finally:
        COST_RULES.pop(("acme", "FusedThing"), None)


def test_what_a_plugin_prints_goes_to_stderr_escaped_and_the_json_stays_valid(tmp_path, capsys):
    rule = tmp_path / "chatty.py"
    rule.write_text(
        "print('\\x1b[2Jloading\\nFAKE LINE')\n"
        + PLUGIN.replace("    return OpCost(", "    print('costing', node.node.name)\n    return OpCost(")
    )
    try:
        path = custom_model_file(tmp_path)
        assert main(["summary", str(path), "--plugin", str(rule), "--format", "json", "-q"]) == 0
        out, err = capsys.readouterr()
    finally:
        COST_RULES.pop(("acme", "FusedThing"), None)
    assert json.loads(out)["totals"]["flops"] == 11 * 10  # nothing but the document on stdout
    prefix = f"onnxroof: --plugin {rule}: "
    assert err.splitlines() == [prefix + "\\x1b[2Jloading", prefix + "FAKE LINE", prefix + "costing thing"]
