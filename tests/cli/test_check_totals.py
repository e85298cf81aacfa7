"""`check` on a folder where some models need dims (issue 47): one line on stderr with the
counts and what to do, whatever the format, and each error line names its model once."""

from __future__ import annotations

import json

import onnx
from conftest import make_model, run, zeros
from onnx import TensorProto, helper

F32 = TensorProto.FLOAT


def _matmul(shape):
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    return make_model([node], [("x", F32, shape)], [("y", F32, shape[:-1] + [4])], [("w", zeros(8, 4))])


def _corpus(tmp_path):
    """Two models with every dim fixed, three with a free sequence length."""
    for index in range(2):
        onnx.save(_matmul([1, 3, 8]), tmp_path / f"fixed{index}.onnx")
    for index in range(3):
        onnx.save(_matmul([1, "seq", 8]), tmp_path / f"free{index}.onnx")
    return tmp_path


def test_jsonl_check_says_the_counts_on_stderr(capsys, tmp_path):
    (tmp_path / "models").mkdir()
    folder = _corpus(tmp_path / "models")
    out_file = tmp_path / "audit.jsonl"
    code, out, err = run(capsys, "check", folder, "--jobs", "2", "--format", "jsonl", "-o", out_file)
    assert code == 2
    records = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert sorted(r.get("needs_dims", []) == ["seq"] for r in records) == [False, False, True, True, True]
    counts = [line for line in err.splitlines() if line.startswith("onnxroof check:")]
    assert len(counts) == 1
    assert counts[0].startswith("onnxroof check: 5 models: 2 ok; 3 need dims: add --dim NAME=N")


def test_text_check_names_each_model_once_and_counts(capsys, tmp_path):
    _corpus(tmp_path)
    code, out, err = run(capsys, "check", tmp_path)
    free = [line for line in out.splitlines() if "free0" in line]
    assert len(free) == 1 and free[0].count("free0") == 1, free
    assert len(out.splitlines()) == 5  # one line per model, for parsers
    assert "onnxroof check: 5 models: 2 ok; 3 need dims" in err


def test_a_quiet_run_that_passes_prints_nothing_more(capsys, tmp_path):
    onnx.save(_matmul([1, 3, 8]), tmp_path / "fixed.onnx")
    code, out, err = run(capsys, "check", tmp_path, "-q")
    assert code == 0 and err == ""
