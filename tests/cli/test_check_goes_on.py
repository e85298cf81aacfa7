"""`check` over many models: a model's failure, whatever it is (a bug in onnxroof, a plugin's
sys.exit, a line that cannot be formatted), is that model's line, and the run goes on, in this
process and in worker processes."""

from __future__ import annotations

import sys

import pytest
from conftest import relu_file, run
from onnx import TensorProto

F32 = TensorProto.FLOAT


@pytest.fixture
def failing_models(tmp_path, monkeypatch):
    """Three models: the first fails with a bug, the second calls sys.exit(0), the third is fine."""
    import onnxroof.cli.commands.check as check

    models = [relu_file(tmp_path / name) for name in ("bug.onnx", "exits.onnx", "fine.onnx")]
    analyze = check.analyze_source

    def failing(source, args):
        if source.endswith("bug.onnx"):
            raise RuntimeError("a bug")
        if source.endswith("exits.onnx"):
            sys.exit(0)
        return analyze(source, args)

    monkeypatch.setattr(check, "analyze_source", failing)  # forked workers inherit it
    return models


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_goes_on_after_an_internal_error(capsys, failing_models, jobs):
    code, out, err = run(capsys, "check", *failing_models, "--jobs", jobs, "-q")
    lines = sorted(out.splitlines())
    assert code == 3 and len(lines) == 3, (out, err)
    assert "bug.onnx: internal error: RuntimeError: a bug" in lines[0]
    assert "exits.onnx: internal error: SystemExit: 0" in lines[1]
    assert lines[2].startswith(f"{failing_models[2]}: params 0")


def test_check_goes_on_when_a_line_cannot_be_written(capsys, tmp_path, monkeypatch):
    import onnxroof.cli.commands.check as check

    models = [relu_file(tmp_path / name) for name in ("a.onnx", "b.onnx")]
    text_line = check.text_line

    def broken(record):
        if record["model"].endswith("a.onnx") and record["status"] == "ok":
            raise ValueError("a bad line")
        return text_line(record)

    monkeypatch.setattr(check, "text_line", broken)
    code, out, _ = run(capsys, "check", *models, "-q")
    lines = out.splitlines()
    assert code == 3 and len(lines) == 2 and "a.onnx: internal error: ValueError: a bad line" in lines[0]
    assert lines[1].startswith(f"{models[1]}: params 0")
