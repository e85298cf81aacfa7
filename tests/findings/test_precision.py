"""The precision what-if: the model re-analysed in a narrower type on a compute-bound target."""

from __future__ import annotations

import pytest
from conftest import make_model, target_text, zeros
from onnx import TensorProto, helper

import onnxroof

F32 = TensorProto.FLOAT


def matmul():
    """x [256, 1024] by W [1024, 1024]: 268,435,456 MACs."""
    return make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [("x", F32, [256, 1024])],
        [("y", F32, [256, 1024])],
        [("w", zeros(1024, 1024))],
    )


def test_int8_on_a_compute_bound_target_is_measured_by_re_analysis(tmp_path):
    path = tmp_path / "int8.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "peak_ops_per_s.int8": 4e12, "dram.bandwidth_bytes_per_s": 1e12}, name="int8"
        )
    )
    analysis = onnxroof.analyze(matmul(), targets=[str(path)])
    (finding,) = [f for f in analysis.review() if f.kind == "precision"]
    # fp32: 536,870,912 FLOPs at 1 TFLOP/s = 536.870912 µs, against 6 MiB (6.29 µs) of bytes:
    # compute-bound; in int8 the same ops at 4 TOP/s: 134.217728 µs (its 1.5 MiB: 1.57 µs)
    assert finding.change == "--dtype int8"
    assert finding.gain_s == pytest.approx(536.870912e-6 - 134.217728e-6)
    assert finding.title.startswith("int8 would take 4.0x less time here (537 µs → 134 µs)")
    # DRAM traffic: x, W and y at 4 B (6,291,456 B), then at 1 B (1,572,864 B)
    assert finding.gain_bytes == 6_291_456 - 1_572_864


def test_a_target_without_a_narrower_roof_has_no_precision_finding(tmp_path):
    path = tmp_path / "fp32.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e12}, name="fp32"))
    analysis = onnxroof.analyze(matmul(), targets=[str(path)])
    assert not [f for f in analysis.review() if f.kind == "precision"]
