"""The chains `onnxroof calibrate` times for ``dram_stall``: what they run is what the figure's
source says (the timing itself is the calibration's business)."""

from __future__ import annotations

import onnx

from onnxroof.measure import dram_stall


def test_the_fan_reads_one_weight_or_one_each():
    for own, weights in ((False, 1), (True, dram_stall.FAN)):
        model = dram_stall.fan_model(32, 512, own)
        onnx.checker.check_model(model, full_check=True)
        assert len(model.graph.initializer) == weights and len(model.graph.node) == dram_stall.FAN
        # 512 x 512 floats: 1 MiB, on chip when shared
        assert all(tuple(w.dims) == (512, 512) for w in model.graph.initializer)
