"""The efficiency of a GEMM by its output rows (``efficiency.gemm.by_rows``,
``efficiency.gemm.int8.by_rows``) as `onnxroof calibrate` measures and writes it: the sizes, their
rows, the cases each curve is made of and the file's round trip. Nothing here is timed: where a
measurement is needed, its slope is given. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import onnx
import pytest
from conftest import target_text
from measurements import hand_calibration

from onnxroof import analyze
from onnxroof.measure import achieved, rows_efficiency
from onnxroof.measure.roof_kernels import ONNXRUNTIME_INT8, MatmulPoint, Rate, matmul_flops
from onnxroof.measure.rows_efficiency import CURVE_OPS, ROWS_CASES, case_rows, measure_rows_efficiency, rows_points
from onnxroof.report.target_file import render_target
from onnxroof.roofline.kernels import efficiency_class
from onnxroof.roofline.targets import parse_target


@pytest.mark.parametrize("curve", list(ROWS_CASES))
def test_every_size_is_a_valid_chain_of_gemms_at_its_rows(curve):
    # the float sizes have 8, 16, 32 and 64 rows (8 multiply-adds per weight element at 8 rows: a
    # gemm, not a gemv); the int8 ones 7 x 7 = 49 output pixels
    builder = rows_efficiency.builder_of(curve)
    rows = []
    for _, op, shape, attributes in ROWS_CASES[curve]:
        model = builder(op, shape, attributes, 3)
        onnx.checker.check_model(model)
        products = [r for r in analyze(model).nodes if r.macs]
        assert len(products) == 3 and {efficiency_class([r]) for r in products} == {"gemm"}
        rows.append(case_rows(op, shape, attributes, builder))
    assert rows == ([8, 16, 32, 64] if curve == "gemm" else [49, 49])


def test_a_curve_s_points_are_the_geometric_mean_per_row_count():
    # 16 rows at 40% and 90%: sqrt(0.36) = 0.6; a case off the curve (no rows) is left out
    cases = [
        achieved.Case("a", 1e-6, 1e-6, 0.4, rows=16),
        achieved.Case("b", 1e-6, 1e-6, 0.9, rows=16),
        achieved.Case("c", 1e-6, 1e-6, 1.0, rows=784),
        achieved.Case("d", 1e-6, 1e-6, 0.5),
    ]
    assert rows_points(cases) == ((16, 0.6), (784, 1.0))


def hand_target(tmp_path):
    """1 TFLOP/s fp32 and 10 TOP/s int8, 1 TB/s DRAM, 1 GiB on chip at 1 TB/s, 1 µs per launch."""
    path = tmp_path / "t.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "peak_ops_per_s.int8": 1e13,
                "dram.bandwidth_bytes_per_s": 1e12,
                "onchip.size_bytes": 1 << 30,
                "onchip.bandwidth_bytes_per_s": 1e12,
                "node_overhead_s": 1e-6,
            }
        )
    )
    return parse_target(path)


def test_a_curve_joins_the_class_s_sizes_at_their_rows_and_measures_its_own(tmp_path, monkeypatch):
    # every size given a slope of 2 x its roofline + the 1 µs launch: 50 % each. The class's own
    # sizes keep their fractions: gemm's all three (two MatMuls of 128 rows, the Conv over 28 x 28 =
    # 784 pixels); of int8's, the two convolutions (56 x 56 = 3,136 and 28 x 28 = 784 pixels), not
    # the MatMul, which runs another kernel
    target = hand_target(tmp_path)

    def slope(op, shape, attributes, threads, budget_s, builder):
        # a quantized link's roofline is its cost as an int8 kernel (--dtype int8), as the curve's is
        quantized = builder is achieved.qdq_chain_model
        return (
            2
            * achieved.roof_slope_s(
                op,
                shape,
                attributes,
                target,
                builder=builder,
                fusion="all" if quantized else "none",
                dtype="int8" if quantized else "model",
            )
            + 1e-6
        )

    monkeypatch.setattr(achieved, "chain_slope_s", slope)
    monkeypatch.setattr(achieved, "onnxruntime_available", lambda: True)
    own = {
        "gemm": [achieved.Case(label, 1e-3, 0.9e-3, 0.9) for label, *_ in achieved.CASES["gemm"]],
        "gemm.int8": [achieved.Case(label, 1e-3, 0.4e-3, 0.4) for label, *_ in achieved.ROOF_CASES["gemm"]["int8"]],
    }
    found = measure_rows_efficiency(target, 1e-6, 0.1, own)
    assert [c.rows for c in found["gemm"]] == [128, 128, 784, 8, 16, 32, 64]
    assert [c.fraction for c in found["gemm"]] == pytest.approx([0.9] * 3 + [0.5] * 4)
    assert [c.rows for c in found["gemm.int8"]] == [3136, 784, 49, 49]
    assert [c.fraction for c in found["gemm.int8"]] == pytest.approx([0.4, 0.4, 0.5, 0.5])
    assert not any("MatMul" in c.label for c in found["gemm.int8"]) and CURVE_OPS["gemm.int8"] == ("Conv",)
    # a target without an int8 roof measures the float curve only
    del target.peak_ops_per_s["int8"]
    assert list(measure_rows_efficiency(target, 1e-6, 0.1, own)) == ["gemm"]


def test_the_curves_are_written_under_the_class_and_its_roof_and_read_back(tmp_path):
    # gemm: 8 rows at 40%, 32 at 75%, 128 at 90% and 100% (sqrt(0.9) = 0.9487); the class's value
    # stays the mean of its own sizes, sqrt(0.9 x 1.0) = 0.9487. int8: 49 rows at 20%, 784 at 40%;
    # its value stays the mean of its own sizes, sqrt(0.4 x 0.64) = 0.506. A kernel of 16 rows sits
    # halfway between 8 and 32 in log(rows): 0.4 + (0.75 - 0.4) / 2 = 0.575; one over 196 pixels on
    # int8 halfway between 49 and 784: 0.2 + (0.4 - 0.2) / 2 = 0.3
    def case(label, fraction, rows=None):
        return achieved.Case(label, 100e-6, fraction * 100e-6, fraction, rows=rows)

    calibration = hand_calibration()
    calibration.matmul.append(MatmulPoint("int8", 1024, Rate(matmul_flops(1024), 1.073741824e-3, 3), ONNXRUNTIME_INT8))
    calibration.launch_overhead_s = 1e-6
    calibration.efficiency = {"gemm": [case("MatMul a", 0.9), case("MatMul b", 1.0)]}
    calibration.efficiency_on_roof = {"gemm": {"int8": [case("QDQ Conv", 0.4), case("QDQ MatMul", 0.64)]}}
    calibration.efficiency_by_rows = {
        "gemm": [
            case("MatMul a", 0.9, 128),
            case("MatMul b", 1.0, 128),
            case("MatMul 8", 0.4, 8),
            case("MatMul 32", 0.75, 32),
        ],
        "gemm.int8": [case("QDQ Conv", 0.4, 784), case("QDQ Conv 7x7", 0.2, 49)],
    }
    path = tmp_path / "r.toml"
    path.write_text(render_target(calibration, "r"), encoding="utf-8")
    target = parse_target(path)
    assert target.efficiency["gemm"].value == pytest.approx(0.9487, abs=1e-4)
    assert target.efficiency_on_roof["gemm"]["int8"].value == pytest.approx(0.506, abs=1e-4)
    assert [rows for rows, _ in target.efficiency_by_rows["gemm"]] == [8, 32, 128]
    assert [fraction for _, fraction in target.efficiency_by_rows["gemm"]] == pytest.approx(
        [0.4, 0.75, 0.9487], abs=1e-4
    )
    assert target.efficiency_by_rows["gemm.int8"] == ((49, 0.2), (784, 0.4))
    assert target.efficiency_of("gemm", "fp32", rows=16) == pytest.approx(0.575)
    assert target.efficiency_of("gemm", "int8", rows=196) == pytest.approx(0.3)
    assert "MatMul 8 (8 rows): 100 µs against 40 µs, 40%" in target.efficiency["gemm"].source
    assert "QDQ Conv 7x7 (49 rows)" in target.efficiency_on_roof["gemm"]["int8"].source
    # one row count is no curve: nothing written
    calibration.efficiency_by_rows = {"gemm": [case("MatMul a", 0.9, 128)]}
    path.write_text(render_target(calibration, "r"), encoding="utf-8")
    assert parse_target(path).efficiency_by_rows == {}
