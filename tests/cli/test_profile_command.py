"""`onnxroof profile` on the command line: the target it predicts on."""

from __future__ import annotations

import pytest

from onnxroof.cli.commands.profile import resolve_target
from onnxroof.measure import calibration
from onnxroof.report.target_file import render_target

from measurements import hand_calibration


# --- the target to predict on ------------------------------------------------------------------


def test_the_calibrated_target_in_hardware_is_used(tmp_path, monkeypatch):
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "this-machine.toml").write_text(render_target(hand_calibration()), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(calibration, "calibrate", lambda **_: pytest.fail("calibrated although a target file exists"))
    target, note = resolve_target(None, quiet=True)
    assert target.name == "this-machine" and note is None


def test_without_a_calibrated_target_a_quick_calibration_runs(tmp_path, monkeypatch):
    from onnxroof.core import resources

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(resources, "resource_dir", lambda kind: tmp_path / "nowhere")
    asked = {}

    def fake_calibrate(seconds, **_):
        asked["seconds"] = seconds
        return hand_calibration()

    monkeypatch.setattr(calibration, "calibrate", fake_calibrate)
    target, note = resolve_target(None, quiet=True)
    assert asked["seconds"] == calibration.QUICK_SECONDS
    assert target.peak_ops_per_s["fp32"].tag == "measured" and "onnxroof calibrate -o" in note
    assert resolve_target("myriad-x")[0].name == "myriad-x"
