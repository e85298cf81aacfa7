"""A plugin's rule that raises is the plugin's bug, not onnxroof's (issue 43.10): exit 2 and one
line naming the plugin file, the op, the rule's function and the line that raised, never exit 3
"internal error ... report it"; in ``check`` the model's line says so and the run goes on."""

from __future__ import annotations

import json

import onnx
import pytest
from conftest import make_model, one_error_line, run
from onnx import TensorProto, helper

from onnxroof.ops import COST_RULES

RULE = """from onnxroof import register
from onnxroof.ops import OpCost


def thing_cost(node):
    raise {error}


def thing_shapes(node):
    return [(1, [2, 5])]


register("Thing", thing_cost, family="custom", domain="acme", shapes=thing_shapes)
"""
SHAPES = """from onnxroof import register
from onnxroof.ops import OpCost


def thing_cost(node):
    return OpCost(flops=1)


def thing_shapes(node):
    return node.no_such_field


register("Thing", thing_cost, family="custom", domain="acme", shapes=thing_shapes)
"""


@pytest.fixture
def thing(tmp_path):
    """A model of one acme.Thing node x[2, 5] -> y; the rule registered by a test is removed after it."""
    model = make_model(
        [helper.make_node("Thing", ["x"], ["y"], domain="acme", name="thing")],
        [("x", TensorProto.FLOAT, [2, 5])],
        [("y", TensorProto.FLOAT, [2, 5])],
    )
    model.opset_import.append(helper.make_opsetid("acme", 1))
    path = tmp_path / "thing.onnx"
    onnx.save(model, path)
    yield path
    COST_RULES.pop(("acme", "Thing"), None)


@pytest.mark.parametrize(
    "error",
    [
        "RuntimeError('boom')",
        "AttributeError('no field')",
        "ZeroDivisionError('x / 0')",
        "RecursionError",
        "MemoryError",
        "KeyError('k')",
        "BaseException('base')",  # not an Exception: it would end the process in a traceback
        "GeneratorExit",
    ],
)
def test_a_rule_that_raises_is_a_one_line_plugin_error(capsys, tmp_path, thing, error):
    plugin = tmp_path / "acme_rules.py"
    plugin.write_text(RULE.format(error=error))
    code, out, err = run(capsys, "summary", thing, "--plugin", plugin, "--fail-if", "flops>1")
    assert code == 2 and one_error_line(err) and out == "", err
    name = error.split("(")[0]
    # the rule's raise is line 6 of RULE
    assert f"--plugin {plugin}: the rule of Thing (acme) (thing_cost, line 6) raised {name}" in err
    assert err.rstrip().endswith("fix the plugin") and "report it" not in err


def test_a_shape_rule_that_raises_names_the_shape_rule(capsys, tmp_path, thing):
    plugin = tmp_path / "acme_shapes.py"
    plugin.write_text(SHAPES)
    code, _, err = run(capsys, "summary", thing, "--plugin", plugin)
    assert code == 2 and one_error_line(err), err
    # the shape rule's bad read is line 10 of SHAPES
    assert f"--plugin {plugin}: the shape rule of Thing (acme) (thing_shapes, line 10) raised AttributeError" in err


def test_check_names_the_plugin_on_the_model_s_line_and_goes_on(capsys, tmp_path, thing):
    plugin = tmp_path / "acme_rules.py"
    plugin.write_text(RULE.format(error="RuntimeError('boom')"))
    code, out, _ = run(capsys, "check", thing, thing, "--plugin", plugin, "--format", "jsonl", "-q")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 2 and len(lines) == 2  # both models tried: one error each, no internal error
    assert all(
        line["status"] == "error"
        and "the rule of Thing (acme) (thing_cost, line 6) raised RuntimeError" in line["error"]
        for line in lines
    ), lines


UNPRINTABLE = """from onnxroof import register


class Odd(Exception):
    def __str__(self):
        raise RuntimeError("cannot say itself")


def thing_cost(node):
    raise Odd()


register("Thing", thing_cost, family="custom", domain="acme")
"""


def test_a_rule_s_exception_that_cannot_say_itself_still_blames_the_plugin(capsys, tmp_path, thing):
    plugin = tmp_path / "acme_odd.py"
    plugin.write_text(UNPRINTABLE)
    code, out, err = run(capsys, "summary", thing, "--plugin", plugin)
    assert code == 2 and one_error_line(err) and out == "", err
    assert "(thing_cost, line 10) raised Odd" in err and "report it" not in err


def test_a_rule_raising_keyboardinterrupt_in_check_s_workers_is_the_plugin_s_error(capsys, tmp_path, thing):
    # check's workers ignore SIGINT (the parent handles Ctrl-C): a KeyboardInterrupt there is the rule's
    plugin = tmp_path / "acme_interrupt.py"
    plugin.write_text(RULE.format(error="KeyboardInterrupt"))
    code, out, _ = run(capsys, "check", thing, thing, "--plugin", plugin, "--jobs", "2", "--format", "jsonl", "-q")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 2 and len(lines) == 2, out
    assert all("(thing_cost, line 6) raised KeyboardInterrupt" in line["error"] for line in lines), lines
