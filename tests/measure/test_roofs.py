"""The roofs a calibration measured: the memory levels read off a bandwidth sweep, and the
calibration's roofs as a Target (what the kernels' efficiencies are measured against)."""

from __future__ import annotations

import pytest
from measurements import GiB, MiB, hand_calibration, small_calibration, sweep

from onnxroof.measure.roof_kernels import MatmulPoint, Rate, sweep_sizes
from onnxroof.measure.roofs import measured_roofs, memory_levels


def test_memory_levels_reads_the_last_cache_plateau_and_dram():
    # L2 1 MiB at 200 GB/s, L3 32 MiB at 60 GB/s, DRAM 20 GB/s
    points = sweep([(1 * MiB, 200e9), (32 * MiB, 60e9), (None, 20e9)])
    levels = memory_levels(points)
    assert levels.dram_bytes_per_s == 20e9
    assert levels.onchip_bytes_per_s == 60e9
    # the sweep steps from 32 MiB at 60 GB/s to 45.25 MiB at 20: the middle, sqrt(60 x 20) =
    # 34.64 GB/s, falls halfway between them in log bandwidth (ln(60 / 34.64) / ln(60 / 20) =
    # 0.5), so the size is halfway in log size: 32 MiB x (45.25 / 32)^0.5 = 38.05 MiB
    assert levels.onchip_bytes == pytest.approx(38.05 * MiB, rel=1e-3)
    assert levels.dram_sizes == (256 * MiB, GiB)
    assert levels.onchip_sizes == (8 * MiB, 32 * MiB)


def test_memory_levels_takes_the_middle_of_a_gradual_drop_and_the_best_of_noisy_points():
    points = dict(sweep([(1 * MiB, 200e9), (16 * MiB, 60e9), (None, 20e9)]))
    sizes = sorted(points)
    after = [s for s in sizes if s > 16 * MiB]
    points[after[0]] = 40e9  # partly cached: above the middle (sqrt(60 x 20) = 34.6)
    points[after[1]] = 30e9  # below it
    points[sizes[0]] = 5e9  # the smallest size is call-overhead bound
    points[GiB] = 12e9  # other work slowed these passes down: the best of the tail stands
    points[8 * MiB] = 45e9
    levels = memory_levels(sorted(points.items()))
    assert levels.dram_bytes_per_s == 20e9
    # the middle (34.64 GB/s) is crossed between after[0] (22.63 MiB at 40) and after[1] (32 MiB at
    # 30): ln(40 / 34.64) / ln(40 / 30) = 0.5 of the way in log size, 22.63 x (32 / 22.63)^0.5 = 26.91 MiB
    assert (after[0], after[1]) == (pytest.approx(22.63 * MiB, rel=1e-3), 32 * MiB)
    assert levels.onchip_bytes == pytest.approx(26.91 * MiB, rel=1e-3)
    assert levels.onchip_bytes_per_s == 60e9


def test_a_point_on_either_side_of_the_middle_moves_the_on_chip_size_a_little():
    # a 2 MiB cache: 1.41 MiB at 90 GB/s, then 2 MiB near the middle (sqrt(90 x 24) = 46.48 GB/s)
    # and 2.83 MiB at 36; DRAM 24 GB/s. With 2 MiB at 50 GB/s the middle is crossed between 2 MiB
    # and 2.83: ln(50 / 46.48) / ln(50 / 36) = 0.2227 of the half-octave, 2 x 2^(0.5 x 0.2227) =
    # 2.16 MiB; at 44 GB/s, between 1.41 and 2 MiB: ln(90 / 46.48) / ln(90 / 44) = 0.9238 of it,
    # 1.41 x 2^(0.5 x 0.9238) = 1.95 MiB. The step rule gave 2 MiB and 1.41 MiB.
    def levels_with(at_2_mib):
        points = dict(sweep([(2 * MiB, 90e9), (None, 24e9)]))
        sizes = sorted(points)
        two = sizes.index(2 * MiB)
        points[sizes[two]] = at_2_mib
        points[sizes[two + 1]] = 36e9
        return memory_levels(sorted(points.items()))

    assert levels_with(50e9).onchip_bytes == pytest.approx(2.16 * MiB, rel=2e-3)
    assert levels_with(44e9).onchip_bytes == pytest.approx(1.95 * MiB, rel=2e-3)


def test_memory_levels_without_a_cache_plateau():
    flat = [(size, 10e9) for size in sweep_sizes()]
    levels = memory_levels(flat)
    assert levels.dram_bytes_per_s == 10e9
    assert levels.onchip_bytes is None and levels.onchip_bytes_per_s is None


def test_measured_roofs_are_the_best_matmul_and_the_levels():
    # hand_calibration: fp32 matmuls reach 30%, 90% and 100% of 150 GFLOP/s; the best kernel per
    # working set runs at 200 GB/s up to 1 MiB, 60 GB/s up to 32 MiB and 20 GB/s beyond
    target = measured_roofs(hand_calibration())
    assert target.peak_ops_per_s["fp32"].value == pytest.approx(150e9)
    assert target.dram_bytes_per_s.value == pytest.approx(20e9)
    assert target.onchip_bytes.value == pytest.approx(38.05 * MiB, rel=1e-3)  # see the first test
    assert target.onchip_bytes_per_s.value == pytest.approx(60e9)
    assert target.weights_resident and target.node_overhead_s is None and target.efficiency == {}
    assert all(f.tag == "measured" for f in (target.peak_ops_per_s["fp32"], target.dram_bytes_per_s))
    flat = measured_roofs(hand_calibration(levels=((None, 10e9),)))
    assert flat.onchip_bytes is None and flat.onchip_bytes_per_s is None and not flat.weights_resident


def test_the_copy_bandwidth_is_the_dram_roof_when_it_is_faster():
    def calibration(copy_bytes_per_s):
        return small_calibration(copy_bytes_per_s=copy_bytes_per_s, launch_overhead_s=2e-6)

    # the sweep moves 1e10 bytes in 1 s at every size: 10 GB/s; onnxruntime's copy 20 GB/s wins, 5 GB/s does not
    assert calibration(2e10).dram_bytes_per_s() == 2e10
    assert calibration(5e9).dram_bytes_per_s() == 1e10
    assert calibration(None).dram_bytes_per_s() == 1e10
    roofs = measured_roofs(calibration(2e10))
    assert roofs.dram_bytes_per_s.value == 2e10 and roofs.node_overhead_s.value == 2e-6
    assert roofs.peak_ops_per_s["fp32"].value == 40e9


def test_measured_roofs_carry_the_int8_roof_when_one_was_measured():
    from onnxroof.measure.roof_kernels import ONNXRUNTIME_INT8, matmul_flops

    # MatMulInteger n=1024: 2 x 1024^3 ops in 4.294967296 ms = 500 GOP/s
    calibration = hand_calibration()
    assert "int8" not in measured_roofs(calibration).peak_ops_per_s
    calibration.matmul.append(MatmulPoint("int8", 1024, Rate(matmul_flops(1024), 4.294967296e-3, 3), ONNXRUNTIME_INT8))
    roofs = measured_roofs(calibration)
    assert roofs.peak_ops_per_s["int8"].value == pytest.approx(500e9)
    assert roofs.peak_ops_per_s["fp32"].value == pytest.approx(150e9)
