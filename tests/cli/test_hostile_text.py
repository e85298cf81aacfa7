"""Model-supplied text is untrusted: no terminal escape, BEL or forged line in any text output,
and no spreadsheet formula in the CSV."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import onnx
import pytest
from conftest import run
from onnx import TensorProto, helper, numpy_helper

EVIL = "\x1b[2J\x1b]0;PWNED\x07evil\nFAKE LINE: all good"
UNSAFE = re.compile(r"[\x1b\x07]|^FAKE LINE", re.MULTILINE)


def _evil_model(path, free_dim: bool):
    """MatMul -> Relu whose node, input, graph, producer and dim names carry escapes; the leading
    (batch) dim is named EVIL, and with ``free_dim`` a second dim left free (for the formulas)."""
    middle = "s" + EVIL if free_dim else 3
    shape = [EVIL, middle, 4]
    nodes = [
        helper.make_node("MatMul", ["x" + EVIL, "w"], ["m"], name="/enc" + EVIL + "/layer.0/MatMul"),
        helper.make_node("Relu", ["m"], ["y"], name="/enc" + EVIL + "/layer.0/Relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "g" + EVIL,
        [helper.make_tensor_value_info("x" + EVIL, TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(np.ones((4, 4), np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="p" + EVIL)
    model.ir_version = 8
    onnx.save(model, path)
    return str(path)


@pytest.fixture
def evil(tmp_path):
    return (
        _evil_model(tmp_path / "fixed.onnx", False),
        _evil_model(tmp_path / "fixed2.onnx", False),
        _evil_model(tmp_path / "free.onnx", True),
    )


def test_no_terminal_escape_in_any_text_output(capsys, evil):
    fixed, other, free = evil
    runs = [
        ("summary", fixed),
        ("summary", fixed, "--target", "l4"),
        ("summary", fixed, "--by", "module"),
        ("summary", fixed, "--by", "op", "--target", "l4"),
        ("summary", fixed, "--format", "markdown"),
        ("summary", fixed, "--format", "csv"),
        ("summary", fixed, "--fail-if", "params>1"),
        ("summary", fixed, "--sweep", "batch=1,2"),
        ("summary", free, "--symbolic"),
        ("summary", free, "--symbolic", "--target", "l4"),
        ("summary", free, "--partial", "--formulas"),
        ("diff", fixed, other, "--target", "l4"),
        ("diff", fixed, other, "--format", "markdown"),
        ("diff", free, free, "--symbolic", "--target", "l4"),
        ("compare", fixed, other, "--target", "l4"),
        ("check", fixed, "--target", "l4"),
        ("explain", fixed, "/enc" + EVIL + "/layer.0/Relu", "--target", "l4"),
        ("summary", free),  # the error naming the unbound dims
    ]
    for argv in runs:
        code, out, err = run(capsys, *argv)
        assert code in (0, 1, 2), argv
        assert not UNSAFE.search(out) and not UNSAFE.search(err), (argv, out + err)
    code, out, _ = run(capsys, "summary", fixed)
    assert "assumed: ?[2J?]0;PWNED?evil?FAKE LINE: all good=1" in out  # shown, not interpreted


def test_no_terminal_escape_in_the_profile_table(capsys, evil):
    pytest.importorskip("onnxruntime")
    code, out, err = run(capsys, "profile", evil[0], "--target", "l4", "--runs", "1", "--warmup", "0")
    assert code == 0 and "MatMul" in out
    assert not UNSAFE.search(out) and not UNSAFE.search(err), out + err


def _named_model(path, name: str, op_type: str, domain: str):
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),  # something counted
        helper.make_node(op_type, ["r"], ["y"], name=name, domain=domain),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
    model.ir_version = 8
    onnx.save(model, path)
    return str(path)


@pytest.mark.parametrize(
    "name, op_type, domain",
    [('=HYPERLINK("http://evil.example","x")', "+cmd|' /C calc'!A0", "@SUM(1+1)"), ("-2+3", "\tTab", "\rReturn")],
)
def test_csv_cells_never_start_a_formula(capsys, tmp_path, name, op_type, domain):
    code, out, _ = run(
        capsys, "summary", _named_model(tmp_path / "m.onnx", name, op_type, domain), "--format", "csv", "--partial"
    )
    assert code == 0
    header, _, row = list(csv.reader(io.StringIO(out)))
    cells = dict(zip(header, row))
    for column in ("name", "op_type", "domain"):
        assert cells[column].startswith("'"), (column, cells[column])
        assert cells[column][1:].lstrip("?") and "\t" not in cells[column] and "\r" not in cells[column]
    assert cells["name"] == "'" + name
