"""The low-intensity finding: a 1x1 convolution moves nearly the bytes of a 3x3 over the same
tensors with a ninth of the multiply-adds, so below the ridge its time is bytes. Derived by hand."""

from __future__ import annotations

import pytest
from conftest import unfused_target
from models import convs
from onnx import TensorProto

import onnxroof

F32 = TensorProto.FLOAT


def test_the_1x1_convolution_is_named_below_the_ridge_and_the_3x3_is_not(tmp_path):
    # 1 TFLOP/s and 20 GB/s, nothing on chip, no fusion: ridge 50 FLOP/B
    analysis = onnxroof.analyze(convs(), targets=[unfused_target(tmp_path, "narrow", 20e9)])
    # 3x3: 64 x 64 x 9 x 1,024 = 37,748,736 MACs, 75,497,472 FLOPs = 75.497472 µs; it moves
    # 262,144 + 147,456 + 262,144 = 671,744 B (33.5872 µs): compute-bound, 112 FLOP/B
    # 1x1: 4,194,304 MACs, 8,388,608 FLOPs = 8.388608 µs; 262,144 + 16,384 + 262,144 = 540,672 B
    # = 27.0336 µs: DRAM-bound at 15.5 FLOP/B, 9x fewer MACs but only 2.8x faster
    (finding,) = [f for f in analysis.review() if f.kind == "intensity"]
    assert finding.nodes == ("conv1x1",)
    share = 27.0336 / (27.0336 + 75.497472)
    assert finding.evidence["share"] == pytest.approx(share)
    assert "1 kernels with multiply-adds (1 Conv)" not in finding.title
    assert finding.title.startswith(
        f"1 kernel with multiply-adds (1 Conv) sits below the ridge, {share:.0%} of the time"
    )
    # its bytes add 27.0336 - 8.388608 = 18.644992 µs beyond its multiply-adds
    assert finding.gain_s == pytest.approx(18.644992e-6)
