"""diff analyses a model once when base and head name the same one (the same file or example),
and its page draws it once; two files of the same bytes stay two models (named by their files)."""

from __future__ import annotations

import shutil

import onnx
from conftest import run

import onnxroof.findings
from onnxroof.cli.commands.diff import same_source
from onnxroof.core.examples import build_example


def test_same_source_reads_paths_and_bytes(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(build_example("shallownet"), model)
    copy, other_folder = tmp_path / "copy.onnx", tmp_path / "sub"
    shutil.copy(model, copy)
    other_folder.mkdir()
    shutil.copy(model, other_folder / "m.onnx")
    assert same_source(str(model), str(model)) and same_source(str(model), str(tmp_path / "." / "m.onnx"))
    assert not same_source(str(model), str(copy))  # the same bytes, another name
    assert not same_source(str(model), str(other_folder / "m.onnx"))
    assert same_source("example:shallownet", "example:shallownet")
    assert not same_source("example:shallownet", str(model))
    assert not same_source(str(model), str(tmp_path / "missing.onnx"))


def test_a_model_against_itself_is_analysed_once(tmp_path, capsys, monkeypatch):
    model = tmp_path / "m.onnx"
    onnx.save(build_example("shallownet"), model)
    calls = []
    real = onnxroof.findings.analyze_keeping_front

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(onnxroof.findings, "analyze_keeping_front", counted)
    code, out, _ = run(capsys, "diff", str(model), str(model), "--format", "html", "-o", str(tmp_path / "d.html"))
    assert code == 0 and len(calls) == 1 and (tmp_path / "d.html").stat().st_size > 0
