"""The efficiency of an op type (``efficiency.<class>.by_op``) as `onnxroof calibrate` measures
and writes it: each op's chain, its roofline, the ops a class's table keeps and the file's round
trip. Nothing here is timed: where a measurement is needed, its slope is given. Expected values
are worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conftest import target_text
from measurements import hand_calibration

from onnxroof import analyze
from onnxroof.measure import achieved, op_efficiency
from onnxroof.measure.op_efficiency import OP_CASES, OP_SHAPE, OpCase, OpMeasurement, by_op_figures, op_chain_model
from onnxroof.report.target_file import render_target
from onnxroof.roofline.kernels import efficiency_class
from onnxroof.roofline.targets import parse_target


def on_chip_target(tmp_path):
    """1 TFLOP/s fp32, 1 TB/s DRAM, 1 GiB on chip at 10 GB/s: an elementwise chain is on-chip-bound."""
    path = tmp_path / "t.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "dram.bandwidth_bytes_per_s": 1e12,
                "onchip.size_bytes": 1 << 30,
                "onchip.bandwidth_bytes_per_s": 1e10,
            }
        )
    )
    return parse_target(path)


@pytest.mark.parametrize("case", OP_CASES, ids=lambda case: case.link)
def test_every_op_chain_is_a_valid_model_whose_links_are_kernels_of_the_case_s_class(case):
    model = op_chain_model(case.link, OP_SHAPE, {}, 3)
    onnx.checker.check_model(model)
    records = [r for r in analyze(model).nodes if r.counted]
    assert len(records) == 3 * len(case.ops)  # a QDQ link is two nodes, the others one
    assert {r.op_type for r in records} == set(case.ops)
    assert {efficiency_class([r]) for r in records} == {case.kernel_class}
    assert {tuple(r.output_shapes[0]) for r in records} == {OP_SHAPE}


def test_an_op_s_roofline_slope_is_its_bytes_on_chip(tmp_path):
    # a middle Erf reads 65,536 floats and writes as many: 524,288 B at 10 GB/s = 52.4288 µs (its
    # 65,536 FLOPs take 65.5 ns at 1 TFLOP/s). A QDQ link: QuantizeLinear reads 262,144 B and writes
    # 65,536 (int8), DequantizeLinear the reverse, and each reads the scale and zero point (4 + 1 B):
    # 655,370 B = 65.537 µs
    target = on_chip_target(tmp_path)
    assert achieved.roof_slope_s("Erf", OP_SHAPE, {}, target, builder=op_chain_model) == pytest.approx(52.4288e-6)
    assert achieved.roof_slope_s("QDQ", OP_SHAPE, {}, target, builder=op_chain_model) == pytest.approx(65.537e-6)


def test_an_op_s_fraction_is_its_roofline_over_its_slope_beyond_the_launch(tmp_path, monkeypatch):
    # every op given a slope of 4 x its roofline + the 1 µs launch of each kernel of its link (a QDQ
    # link is two kernels): 25 % each. A case onnxruntime cannot run (a build without the contrib
    # ops) is left out with a note
    target = on_chip_target(tmp_path)

    def slope(link, shape, attributes, threads, budget_s, builder, near_one):
        if link == "BiasGelu":
            raise RuntimeError("NOT_IMPLEMENTED: Could not find an implementation for BiasGelu(1)\nmore")
        kernels = 2 if link == "QDQ" else 1
        return 4 * achieved.roof_slope_s(link, shape, attributes, target, builder=builder) + kernels * 1e-6

    monkeypatch.setattr(achieved, "chain_slope_s", slope)
    cases = tuple(case for case in OP_CASES if case.link in ("Erf", "QDQ", "BiasGelu"))
    found, notes = op_efficiency.measure_op_efficiency(target, launch_s=1e-6, budget_s=1.0, cases=cases)
    assert [m.case.link for m in found] == ["Erf", "QDQ"]
    assert [m.fraction for m in found] == pytest.approx([0.25, 0.25])
    assert found[0].roof_s == pytest.approx(52.4288e-6) and found[0].measured_s == pytest.approx(4 * 52.4288e-6 + 1e-6)
    assert notes == [
        "BiasGelu (com.microsoft): onnxruntime could not run it (NOT_IMPLEMENTED: Could not find an "
        "implementation for BiasGelu(1)): no by_op figure"
    ]


def measurement(
    ops: tuple[str, ...], fraction: float, kernel_class: str = "elementwise", label: str = ""
) -> OpMeasurement:
    return OpMeasurement(OpCase(label or ops[0], kernel_class, ops[0], ops), 100e-6, fraction * 100e-6, fraction)


def test_a_class_s_table_keeps_the_ops_more_than_a_tenth_off_its_figure():
    # class at 0.5: 0.56 is 12 % above (kept), 0.46 8 % below (left out), 0.44 12 % below (kept);
    # a pair's figure goes to both its ops
    found = by_op_figures(
        0.5,
        [
            measurement(("Exp",), 0.56),
            measurement(("Sqrt",), 0.46),
            measurement(("Erf",), 0.44),
            measurement(("QuantizeLinear", "DequantizeLinear"), 0.3),
        ],
    )
    assert found == {"Exp": 0.56, "Erf": 0.44, "QuantizeLinear": 0.3, "DequantizeLinear": 0.3}


def test_the_target_file_carries_each_class_s_by_op_table_and_reads_it_back(tmp_path):
    # elementwise: Adds at 100 %, so the class is 1.0; Erf at 16 % and the QDQ pair at 30 % are
    # written, Exp at 95 % is within a tenth and is not. reduction: 0.2 and 0.05 = 0.1 (geometric
    # mean), SkipLayerNormalization at 3 % is written under it
    def case(label, fraction):
        return achieved.Case(label, 100e-6, fraction * 100e-6, fraction)

    calibration = hand_calibration()
    calibration.launch_overhead_s = 1e-6
    calibration.efficiency = {
        "elementwise": [case("Add, 16 Ki floats", 1.0), case("Add, 64 Ki floats", 1.0)],
        "reduction": [case("Softmax", 0.2), case("MaxPool", 0.05)],
    }
    calibration.efficiency_by_op = [
        measurement(("Erf",), 0.16),
        measurement(("Exp",), 0.95),
        measurement(("QuantizeLinear", "DequantizeLinear"), 0.3, label="QDQ pair"),
        measurement(("SkipLayerNormalization",), 0.03, "reduction"),
    ]
    text = render_target(calibration, "m")
    assert "by_op = { Erf = 0.16, QuantizeLinear = 0.3, DequantizeLinear = 0.3 }" in text
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    target = parse_target(path)
    assert target.efficiency_by_op == {
        "elementwise": {"Erf": 0.16, "QuantizeLinear": 0.3, "DequantizeLinear": 0.3},
        "reduction": {"SkipLayerNormalization": 0.03},
    }
    assert target.efficiency["reduction"].value == pytest.approx(0.1)
    source = target.efficiency["elementwise"].source
    assert "by_op: per op, a chain of 65,536 floats on chip" in source
    assert (
        "Erf: 100 µs against 16 µs, 16%" in source and "(Exp: within 10% of the class's figure, not written)" in source
    )
    assert target.latency_kind == "forecast"  # the by_op figures carry the class's measured tag
    assert target.op_efficiency("elementwise", ["DequantizeLinear", "Erf"]) == 0.16
    assert target.op_efficiency("elementwise", ["Exp"]) is None and target.efficiency_of("elementwise") == 1.0


def test_without_op_measurements_no_table_is_written(tmp_path):
    calibration = hand_calibration()
    calibration.efficiency = {"elementwise": [achieved.Case("Add", 100e-6, 100e-6, 1.0)]}
    text = render_target(calibration, "m")
    assert "by_op" not in text
    path = tmp_path / "m.toml"
    path.write_text(text, encoding="utf-8")
    assert parse_target(path).efficiency_by_op == {}


def test_a_chain_near_one_stays_finite_and_off_the_denormals():
    # 1 + 0.01 x a standard normal: squared nine times (2^9 = 512), the furthest of 65,536 draws
    # (about 4.5 sigma, 1.045) reaches 1.045^512 = 6e9, far from float32's 3.4e38; the nearest
    # (0.955) 0.955^512 = 6e-11, far above the denormals (1.2e-38)
    values = 1 + 0.01 * np.random.default_rng(1).standard_normal(OP_SHAPE)
    squared = values.astype(np.float32) ** 512
    assert np.isfinite(squared).all() and squared.min() > np.finfo(np.float32).tiny


def test_the_reorder_chain_is_onnxruntime_s_layout_round_trip():
    # ReorderInput into the NCHWc layout and ReorderOutput back give the input again; a CPU without
    # the vector units MLAS blocks for has no such kernels, and calibrate leaves the figure out
    ort = pytest.importorskip("onnxruntime")
    model = op_efficiency.reorder_chain_model("Reorder", op_efficiency.REORDER_SHAPE, {}, 3)
    assert [n.op_type for n in model.graph.node] == ["ReorderInput", "ReorderOutput"] * 3
    x = np.random.default_rng(0).standard_normal(op_efficiency.REORDER_SHAPE).astype(np.float32)
    try:
        session = achieved.cpu_session(model, 1, optimize=False)
    except Exception as exc:
        pytest.skip(f"this onnxruntime has no NCHWc kernels ({type(exc).__name__})")
    assert np.array_equal(session.run(None, {"x": x})[0], x) and ort


def test_a_reorder_pair_s_roofline_and_fraction_by_hand(tmp_path, monkeypatch):
    # a link: ReorderInput reads 64 x 32 x 32 floats (262,144 B) and writes as many, ReorderOutput
    # the same: 4 x 262,144 B = 1,048,576 B on chip at 10 GB/s = 104.8576 µs. Given a slope of
    # 2 x that + two launches of 1 µs: 50 %, written for both ops under the transpose class
    target = on_chip_target(tmp_path)
    assert op_efficiency.reorder_roof_s(target) == pytest.approx(104.8576e-6)
    monkeypatch.setattr(achieved, "chain_slope_s", lambda *a, **k: 2 * 104.8576e-6 + 2e-6)
    found, notes = op_efficiency.measure_reorder_efficiency(target, launch_s=1e-6, budget_s=1.0)
    assert notes == [] and found.fraction == pytest.approx(0.5)
    assert by_op_figures(0.2, [found]) == {"ReorderInput": 0.5, "ReorderOutput": 0.5}


def test_a_reorder_onnxruntime_cannot_run_is_left_out_with_a_note(tmp_path, monkeypatch):
    def slope(*args, **kwargs):
        raise RuntimeError("Could not find an implementation for ReorderInput(1) node\nmore")

    monkeypatch.setattr(achieved, "chain_slope_s", slope)
    found, notes = op_efficiency.measure_reorder_efficiency(on_chip_target(tmp_path), launch_s=1e-6, budget_s=1.0)
    assert found is None and notes == [
        f"{op_efficiency.REORDER_CASE.label}: onnxruntime could not run it (Could not "
        "find an implementation for ReorderInput(1) node): no by_op figure"
    ]
