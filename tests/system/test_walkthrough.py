"""docs/walkthrough.py, the notebook of issue 46 item 4, runs cell after cell and leaves what it says."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from onnxroof.roofline.targets import load_target

WALKTHROUGH = Path(__file__).resolve().parents[2] / "docs" / "walkthrough.py"


def test_the_walkthrough_runs_and_writes_the_fitted_device_and_the_attachment(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("ONNXROOF_WALKTHROUGH_DIR", str(tmp_path))
    text = WALKTHROUGH.read_text(encoding="utf-8")
    assert text.count("# %%") >= 10  # cells, as jupytext's percent format reads them
    names = runpy.run_path(str(WALKTHROUGH), run_name="__main__")
    # the frames: a row per finding, a row per node of the comparison
    assert len(names["findings"]) == len(names["analysis"].findings)
    assert {"predicted_s", "measured_s", "ratio", "kernel", "status"} <= set(names["comparison"].columns)
    # the device fitted on the three traces, which its file names
    device = load_target(str(tmp_path / "my-device.toml"))
    assert device.name == "my-device"
    for model in ("shallownet", "minigooglenet", "minigooglenet-separable"):
        assert f"{model}.onnx ({model}.trace.json)" in device.description
    assert device.error_band is not None and device.node_overhead_s is not None
    # the Netron attachment of MiniGoogLeNet on it
    attachment = json.loads((tmp_path / "minigooglenet.onnxroof.json").read_text(encoding="utf-8"))
    assert attachment["signature"] == "netron:attachment"
    assert any(item["target"] == "conv2d_13" for item in attachment["metrics"])
