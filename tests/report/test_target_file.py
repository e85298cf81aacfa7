"""The target file `onnxroof calibrate` writes: it passes the same validation as any target,
every figure is tagged measured and its source says how it was measured."""

from __future__ import annotations

import pytest

from onnxroof.measure import achieved
from onnxroof.measure.roof_kernels import MatmulPoint, Rate, StreamPoint
from onnxroof.measure.roofs import Calibration
from onnxroof.report.target_file import calibrated_target, render_target
from onnxroof.roofline.targets import parse_target

from measurements import MiB, hand_calibration


def test_rendered_target_validates_and_is_tagged_measured(tmp_path):
    path = tmp_path / "this-machine.toml"
    path.write_text(render_target(hand_calibration()), encoding="utf-8")
    target = parse_target(path)
    assert target.name == "this-machine"
    assert list(target.peak_ops_per_s) == ["fp32"]  # fp16/int8 in numpy are not BLAS: not written
    assert target.peak_ops_per_s["fp32"].value == pytest.approx(150e9)
    assert target.dram_bytes_per_s.value == pytest.approx(20e9)  # the best kernel (add) per size
    assert target.onchip_bytes.value == 32 * MiB
    assert target.onchip_bytes_per_s.value == pytest.approx(60e9)
    figures = [target.peak_ops_per_s["fp32"], target.dram_bytes_per_s, target.onchip_bytes, target.onchip_bytes_per_s]
    for figure in figures:
        assert figure.tag == "measured"
        assert "2026-01-02 03:04 UTC" in figure.source and 'Test CPU "X" 9000' in figure.source
        assert "4 cores, 8 logical CPUs" in figure.source
    assert "2 n^3" in target.peak_ops_per_s["fp32"].source
    assert "STREAM" in target.dram_bytes_per_s.source
    assert "L3 32768K" in target.onchip_bytes.source
    text = path.read_text()
    assert "# fp64 matmul n=1024: 75.0 GFLOP/s" in text
    assert "# fp16 matmul n=64: 1.00 GFLOP/s in numpy" in text
    # within physical reason: the cache beats DRAM, the ridge point is a sane FLOP/B
    assert target.onchip_bytes_per_s.value > target.dram_bytes_per_s.value
    assert 1 < target.ridge("fp32") < 1000


def test_rendered_target_without_a_cache_plateau_has_no_onchip_section(tmp_path):
    path = tmp_path / "flat.toml"
    path.write_text(render_target(hand_calibration(levels=((None, 10e9),)), name="flat"), encoding="utf-8")
    target = parse_target(path)
    assert target.onchip_bytes is None and target.onchip_bytes_per_s is None
    assert target.dram_bytes_per_s.value == pytest.approx(10e9)


def test_calibrated_target_goes_through_parse_target():
    target = calibrated_target(hand_calibration(), name="quick")
    assert target.name == "quick" and target.peak_ops_per_s["fp32"].tag == "measured"


def test_the_target_file_says_which_method_gave_the_compute_roof(tmp_path):
    # numpy reaches 40 GFLOP/s, onnxruntime's MatMul 80 (made-up rates, 1 s each): the roof is
    # onnxruntime's, and the source says numpy reached 50% of it
    def point(method, flops):
        return MatmulPoint("float32", 512, Rate(flops, 1.0, 3), method)

    result = Calibration(date="2026-12-01", cpu="test CPU", cores="2 cores", threads=1, load_average=None,
                             numpy_version="2", blas="OpenBLAS",
                             matmul=[point("numpy", 40e9), point("onnxruntime", 80e9)],
                             stream=[StreamPoint("copy", size, Rate(1e10, 1.0, 3))
                                     for size in (2**20, 2**24, 2**28, 2**30)])
    path = tmp_path / "t.toml"
    path.write_text(render_target(result, "t"), encoding="utf-8")
    target = parse_target(path)
    figure = target.peak_ops_per_s["fp32"]
    assert figure.value == 80e9
    assert "the roof is the best: onnxruntime at n=512" in figure.source
    assert "numpy reaches 50% of it" in figure.source


def test_the_launch_overhead_becomes_the_measured_targets_cost_per_kernel(tmp_path):
    # a chain of 1 tiny kernel runs in 20 µs, one of 65 in 660 µs: 640 µs / 64 = 10 µs per kernel
    overhead = achieved.per_kernel_seconds(20e-6, 660e-6, kernels=65)
    assert overhead == pytest.approx(10e-6)
    result = Calibration(date="2026-12-01", cpu="test CPU", cores="2 cores", threads=1, load_average=None,
                             numpy_version="2", blas="OpenBLAS",
                             matmul=[MatmulPoint("float32", 512, Rate(40e9, 1.0, 3))],
                             stream=[StreamPoint("copy", size, Rate(1e10, 1.0, 3))
                                     for size in (2**20, 2**24, 2**28, 2**30)],
                             launch_overhead_s=overhead)
    path = tmp_path / "t.toml"
    path.write_text(render_target(result, "t"), encoding="utf-8")
    target = parse_target(path)
    assert target.node_overhead_s.value == pytest.approx(10e-6) and target.node_overhead_s.tag == "measured"
