"""`onnxroof profile` on the command line: the target it predicts on, its outputs (JSON, a file,
the HTML report) and its errors in one line. The runs need onnxruntime."""

from __future__ import annotations

import json
import sys

import onnx
import pytest
from conftest import make_model
from measurements import hand_calibration
from onnx import TensorProto, helper

from onnxroof.cli.app import main
from onnxroof.cli.commands.profile import resolve_target
from onnxroof.core.examples import build_example
from onnxroof.measure import calibration
from onnxroof.report.target_file import render_target

F32 = TensorProto.FLOAT


def test_missing_onnxruntime_is_a_one_line_usage_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    code = main(["profile", "--example", "shallownet", "--target", "myriad-x"])
    _, err = capsys.readouterr()
    assert code == 2 and "pip install onnxroof[profile]" in err and err.count("\n") == 1


# --- the target to predict on ------------------------------------------------------------------


def test_the_calibrated_target_in_hardware_is_used(tmp_path, monkeypatch):
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "this-machine.toml").write_text(render_target(hand_calibration()), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ONNXROOF_CWD_TARGETS")  # ./hardware searched, as a user's shell does (conftest.py)
    monkeypatch.setattr(calibration, "calibrate", lambda **_: pytest.fail("calibrated although a target file exists"))
    target, note = resolve_target(None, quiet=True)
    assert target.name == "this-machine" and note is None


def test_without_a_calibrated_target_a_quick_calibration_runs(tmp_path, monkeypatch):
    from onnxroof.core import resources

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(resources, "resource_dir", lambda kind: tmp_path / "nowhere")
    monkeypatch.setenv("ONNXROOF_TARGETS", str(tmp_path / "no-targets"))  # nothing calibrated there either
    asked = {}

    def fake_calibrate(seconds, **_):
        asked["seconds"] = seconds
        return hand_calibration()

    monkeypatch.setattr(calibration, "calibrate", fake_calibrate)
    target, note = resolve_target(None, quiet=True)
    assert asked["seconds"] == calibration.QUICK_SECONDS
    assert target.peak_ops_per_s["fp32"].tag == "measured" and "onnxroof calibrate --save" in note
    assert resolve_target("myriad-x")[0].name == "myriad-x"


# --- a real run (only where onnxruntime is installed) -------------------------------------------


def test_profile_cli_json_and_output_file(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    code = main(
        [
            "profile",
            "--example",
            "shallownet",
            "--target",
            "myriad-x",
            "--runs",
            "2",
            "--warmup",
            "1",
            "--format",
            "json",
            "-q",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    document = json.loads(out)
    assert [n["name"] for n in document["nodes"]] == ["conv2d_0", "activation_0", "flatten_0", "dense_0", "softmax_0"]
    assert document["target"]["name"] == "myriad-x"
    path = tmp_path / "shallownet.onnx"
    onnx.save(build_example("shallownet"), path)
    out_file = tmp_path / "profile.txt"
    code = main(
        ["profile", str(path), "--target", "myriad-x", "--runs", "1", "--warmup", "0", "-o", str(out_file), "-q"]
    )
    assert code == 0 and "measured/predicted" in out_file.read_text()


def test_profile_cli_names_an_op_onnxruntime_cannot_run(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    model = make_model(
        [helper.make_node("MyOp", ["x"], ["y"], name="custom_0", domain="my.domain")],
        [("x", F32, [2, 3])],
        [("y", F32, [2, 3])],
    )
    model.opset_import.append(helper.make_opsetid("my.domain", 1))
    path = tmp_path / "custom.onnx"
    onnx.save(model, path)
    code = main(["profile", str(path), "--target", "myriad-x", "-q"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert "op MyOp of domain my.domain (node 'custom_0')" in err


def test_profile_cli_writes_the_html_report(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    out_file = tmp_path / "report.html"
    code = main(
        [
            "profile",
            "--example",
            "shallownet",
            "--target",
            "myriad-x",
            "--runs",
            "2",
            "--warmup",
            "1",
            "-o",
            str(out_file),
            "-q",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and out == "" and err == ""
    html = out_file.read_text()
    assert html.startswith("<!DOCTYPE html>") and "Predicted vs measured" in html and 'class="dot dot-measured' in html
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # written atomically, no temporary left
