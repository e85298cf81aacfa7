"""The target file `onnxroof calibrate` writes: it passes the same validation as any target,
every figure is tagged measured and its source says how it was measured."""

from __future__ import annotations

import pytest
from measurements import MiB, hand_calibration, small_calibration

from onnxroof.measure import achieved
from onnxroof.measure.roof_kernels import ONNXRUNTIME_INT8, MatmulPoint, Rate, matmul_flops
from onnxroof.report.target_file import calibrated_target, render_target
from onnxroof.roofline.targets import parse_target


def test_rendered_target_validates_and_is_tagged_measured(tmp_path):
    path = tmp_path / "this-machine.toml"
    path.write_text(render_target(hand_calibration()), encoding="utf-8")
    target = parse_target(path)
    assert target.name == "this-machine"
    assert list(target.peak_ops_per_s) == ["fp32"]  # fp16/int8 in numpy are not BLAS: not written
    assert target.peak_ops_per_s["fp32"].value == pytest.approx(150e9)
    assert target.dram_bytes_per_s.value == pytest.approx(20e9)  # the best kernel (add) per size
    # between the sweep's 32 MiB at 60 GB/s and 45.25 MiB at 20: halfway in log size, 38.05 MiB
    assert target.onchip_bytes.value == pytest.approx(38.05 * MiB, rel=1e-3)
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


def test_rendered_target_without_a_cache_plateau_has_no_onchip_section():
    target = calibrated_target(hand_calibration(levels=((None, 10e9),)), name="flat")
    assert target.onchip_bytes is None and target.onchip_bytes_per_s is None
    assert target.dram_bytes_per_s.value == pytest.approx(10e9)


def test_calibrated_target_goes_through_parse_target():
    target = calibrated_target(hand_calibration(), name="quick")
    assert target.name == "quick" and target.peak_ops_per_s["fp32"].tag == "measured"


def test_the_target_file_says_which_method_gave_the_compute_roof():
    # numpy reaches 40 GFLOP/s, onnxruntime's MatMul 80 (made-up rates, 1 s each): the roof is
    # onnxruntime's, and the source says numpy reached 50% of it
    def point(method, flops):
        return MatmulPoint("float32", 512, Rate(flops, 1.0, 3), method)

    result = small_calibration(matmul=[point("numpy", 40e9), point("onnxruntime", 80e9)])
    target = calibrated_target(result, "t")
    figure = target.peak_ops_per_s["fp32"]
    assert figure.value == 80e9
    assert "the roof is the best: onnxruntime at n=512" in figure.source
    assert "numpy reaches 50% of it" in figure.source


def test_the_launch_overhead_becomes_the_measured_targets_cost_per_kernel():
    # a chain of 1 tiny kernel runs in 20 µs, one of 65 in 660 µs: 640 µs / 64 = 10 µs per kernel
    overhead = achieved.per_kernel_seconds(20e-6, 660e-6, kernels=65)
    assert overhead == pytest.approx(10e-6)
    result = small_calibration(launch_overhead_s=overhead)
    target = calibrated_target(result, "t")
    assert target.node_overhead_s.value == pytest.approx(10e-6) and target.node_overhead_s.tag == "measured"


def test_an_int8_roof_measured_with_onnxruntime_is_written_tagged_measured(tmp_path):
    # MatMulInteger at n=512 does 2 x 512^3 = 268,435,456 ops in 0.268435456 ms: 1e12 op/s; at
    # n=1024, 2 x 1024^3 = 2,147,483,648 ops in 1.073741824 ms: 2e12 op/s, the best; the fp32 roof
    # of hand_calibration is 150 GFLOP/s, so the int8 roof is 2e12 / 150e9 = 13.3x it
    calibration = hand_calibration()
    calibration.matmul += [
        MatmulPoint("int8", 512, Rate(matmul_flops(512), 0.268435456e-3, 3), ONNXRUNTIME_INT8),
        MatmulPoint("int8", 1024, Rate(matmul_flops(1024), 1.073741824e-3, 3), ONNXRUNTIME_INT8),
    ]
    path = tmp_path / "int8.toml"
    path.write_text(render_target(calibration, "int8"), encoding="utf-8")
    target = parse_target(path)
    figure = target.peak_ops_per_s["int8"]
    assert figure.value == pytest.approx(2e12) and figure.tag == "measured"
    assert "MatMulInteger" in figure.source and "uint8 activations by int8 weights" in figure.source
    assert "n=512: 1000.0, n=1024: 2000.0" in figure.source
    assert "the roof is the best, at n=1024 (13.3x the fp32 roof)" in figure.source
    assert "2026-01-02 03:04 UTC" in figure.source
    # an int8 node now runs on it, no longer on the fp32 roof
    assert target.roof("int8") == ("int8", pytest.approx(2e12))
    assert target.roof("float32") == ("fp32", pytest.approx(150e9))
    assert "and int8 nodes too" not in path.read_text()


def test_without_an_int8_measurement_int8_nodes_fall_back_to_the_fp32_roof(tmp_path):
    path = tmp_path / "no-int8.toml"
    path.write_text(render_target(hand_calibration(), "no-int8"), encoding="utf-8")
    target = parse_target(path)
    assert "int8" not in target.peak_ops_per_s
    assert target.roof("int8") == ("fp32", pytest.approx(150e9))
    assert "and int8 nodes too (no int8 roof: onnxruntime is not installed)" in path.read_text()


def test_the_int8_gemm_efficiency_is_written_under_its_class():
    # fp32 gemm at 90% and 100%: sqrt(0.9 x 1.0) = 0.9487; the int8 links at 25% and 64%:
    # sqrt(0.25 x 0.64) = 0.4
    def case(label, fraction):
        return achieved.Case(label, 100e-6, fraction * 100e-6, fraction)

    calibration = hand_calibration()
    calibration.matmul.append(MatmulPoint("int8", 1024, Rate(matmul_flops(1024), 1.073741824e-3, 3), ONNXRUNTIME_INT8))
    calibration.launch_overhead_s = 1e-6
    calibration.efficiency = {"gemm": [case("a", 0.9), case("b", 1.0)]}
    calibration.efficiency_on_roof = {"gemm": {"int8": [case("QDQ Conv", 0.25), case("QDQ MatMul", 0.64)]}}
    target = calibrated_target(calibration, "e")
    assert target.efficiency["gemm"].value == pytest.approx(0.9487, abs=1e-4)
    figure = target.efficiency_on_roof["gemm"]["int8"]
    assert figure.value == pytest.approx(0.4) and figure.tag == "measured"
    assert "QDQ Conv: 100 µs against 25 µs, 25%" in figure.source and "statically quantized" in figure.source
    assert target.efficiency_of("gemm", "int8") == pytest.approx(0.4)
    assert target.latency_kind == "forecast"


def test_the_gemv_efficiency_is_written_with_its_points_by_output_columns():
    # two 10-column sizes at 20% and 45% (geometric mean sqrt(0.09) = 0.3), one 512-column at 90%:
    # points [[10, 0.3], [512, 0.9]]; the class's value is the mean of all three,
    # (0.2 x 0.45 x 0.9)^(1/3) = 0.081^(1/3) = 0.4327
    def case(label, fraction, columns, cached):
        return achieved.Case(label, 100e-6, fraction * 100e-6, fraction, columns, cached)

    calibration = hand_calibration()
    calibration.launch_overhead_s = 1e-6
    calibration.efficiency = {
        "gemv": [
            case("MatMul 1x32768 by 32768x10", 0.2, 10, True),
            case("MatMul 1x128 by 128x10", 0.45, 10, True),
            case("MatMul 1x2048 by 2048x512", 0.9, 512, False),
        ]
    }
    target = calibrated_target(calibration, "g")
    assert target.efficiency["gemv"].value == pytest.approx(0.4327, abs=1e-4)
    points = target.efficiency_by_columns["gemv"]
    assert [columns for columns, _ in points] == [10, 512]
    assert [fraction for _, fraction in points] == pytest.approx([0.3, 0.9])
    source = target.efficiency["gemv"].source
    assert "MatMul 1x32768 by 32768x10 (weights on chip, kept between runs): 100 µs against 20 µs, 20%" in source
    assert "(weights from DRAM)" in source and "by_columns" in source
    # 10 columns at 0.3, 512 at 0.9, 72 columns halfway in log: sqrt(10 x 512) = 71.55
    assert target.efficiency_of("gemv", "fp32", 10) == pytest.approx(0.3)
    assert target.efficiency_of("gemv", "fp32", 512) == pytest.approx(0.9)
    assert target.efficiency_of("gemv", "fp32", 71.55) == pytest.approx(0.6, abs=1e-3)


def test_a_measurement_outside_the_accepted_range_is_written_at_its_end_with_a_note():
    # issue 47: on a loaded machine calibrate measured a subnormal exp at 7.563492e-13 s, under the
    # 1e-12 a figure may take (roofline/figures.py FIGURE_RANGE), and then refused its own file
    calibration = hand_calibration()
    calibration.subnormal_s = 7.563492e-13
    target = calibrated_target(calibration)  # validates: no UsageError
    figure = target.subnormal_s_per_element
    assert figure.value == 1e-12 and figure.tag == "measured"
    assert figure.source.endswith(
        "; measured 7.563e-13, outside the range a figure may take (1e-12 to 1e+21): written as 1e-12"
    )
    calibration.subnormal_s = 3e-9  # within the range: written as measured, no note
    assert calibrated_target(calibration).subnormal_s_per_element.value == 3e-9
    assert "outside the range" not in calibrated_target(calibration).subnormal_s_per_element.source
