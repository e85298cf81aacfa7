"""A depthwise kernel's efficiency follows its channels (issue 42): a CPU runs a depthwise
convolution with the channels across its vector lanes, so 3 channels fill a fraction of what 32
do; onnxruntime's integer kernel most of all (on an EPYC, 3 channels of 32x32 took 38 µs in int8
against 6.7 µs in fp32). ``efficiency.<class>.<roof>.by_columns`` carries the curve per roof, a
grouped convolution's columns being its channels (``work.efficiency_columns``). Expected values are
worked out by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import int8_target, make_model, target_text
from measurements import hand_calibration
from onnx import TensorProto, helper

from onnxroof import analyze
from onnxroof.core.errors import UsageError
from onnxroof.measure import achieved
from onnxroof.measure.roof_kernels import ONNXRUNTIME_INT8, MatmulPoint, Rate, matmul_flops
from onnxroof.report.target_file import calibrated_target
from onnxroof.roofline.targets import parse_target

CURVE = '[efficiency.depthwise]\nvalue = 0.5\ntag = "measured"\nsource = "hand"\n'
INT8_CURVE = (
    '[efficiency.depthwise.int8]\nvalue = 0.2\ntag = "measured"\nsource = "hand"\nby_columns = [[3, 0.01], [48, 0.1]]\n'
)


def depthwise_int8(channels: int):
    """x [1, C, 8, 8] uint8 -> QLinearConv 3x3, group C, pad 1 (int8 weights) -> y uint8: C x 64 x 9
    MACs, + 4 per output element to requantize."""
    scale, zero = np.array(0.05, np.float32), np.array(0, np.uint8)
    node = helper.make_node(
        "QLinearConv",
        ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
        ["y"],
        name="dw",
        group=channels,
        pads=[1, 1, 1, 1],
    )
    return make_model(
        [node],
        [("x", TensorProto.UINT8, [1, channels, 8, 8])],
        [("y", TensorProto.UINT8, [1, channels, 8, 8])],
        [
            ("xs", scale),
            ("xz", zero),
            ("w", np.ones((channels, 1, 3, 3), np.int8)),
            ("ws", scale),
            ("wz", np.array(0, np.int8)),
            ("ys", scale),
            ("yz", zero),
        ],
    )


def depthwise_fp32(channels: int):
    """x [1, C, 8, 8] -> Conv 3x3, group C, pad 1, no bias -> y."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="dw", group=channels, pads=[1, 1, 1, 1])
    return make_model(
        [node],
        [("x", TensorProto.FLOAT, [1, channels, 8, 8])],
        [("y", TensorProto.FLOAT, [1, channels, 8, 8])],
        [("w", np.ones((channels, 1, 3, 3), np.float32))],
    )


def test_an_int8_depthwise_kernel_runs_at_its_roof_s_curve_at_its_channels(tmp_path):
    # 12 channels x 64 pixels x 9 = 6,912 MACs: 13,824 ops + 4 x 768 outputs = 16,896 ops at
    # 100 GOP/s = 168.96 ns (its 1.7 KB take 1.7 ns at 1 TB/s: compute-bound). 12 channels sit
    # halfway between 3 and 48 in log (12 / 3 = 48 / 12 = 4): 0.01 + (0.1 - 0.01) / 2 = 0.055,
    # so 168.96 / 0.055 = 3,072 ns
    path = int8_target(tmp_path, CURVE + INT8_CURVE)
    (kernel,) = analyze(depthwise_int8(12), targets=[path]).targets[0].nodes
    point = kernel.placement
    assert (point.kernel_class, point.roof, point.flops) == ("depthwise", "int8", 16_896)
    assert point.efficiency == pytest.approx(0.055)
    assert point.time_s == pytest.approx(3072e-9)
    # past the ends the end points hold: 2 channels at 0.01, 96 at 0.1
    assert analyze(depthwise_int8(2), targets=[path]).targets[0].nodes[0].placement.efficiency == pytest.approx(0.01)
    assert analyze(depthwise_int8(96), targets=[path]).targets[0].nodes[0].placement.efficiency == pytest.approx(0.1)


def test_the_roof_s_curve_leaves_the_float_kernels_at_the_class_s_figure(tmp_path):
    # fp32, 12 channels: 6,912 MACs = 13,824 FLOPs at 1 TFLOP/s = 13.824 ns; bytes 3,072 in + 432
    # weights + 3,072 out = 6,576 B at 1 TB/s = 6.576 ns: compute-bound, at the class's 0.5:
    # 27.648 ns (the int8 roof's curve is not the fp32 kernels')
    path = int8_target(tmp_path, CURVE + INT8_CURVE)
    point = analyze(depthwise_fp32(12), targets=[path]).targets[0].nodes[0].placement
    assert (point.kernel_class, point.roof, point.efficiency) == ("depthwise", "fp32", 0.5)
    assert point.time_s == pytest.approx(27.648e-9)
    # a class curve (no roof figure for fp32) applies to it: 12 channels halfway from 3 at 0.2 to
    # 48 at 0.6 in log: 0.4, so 13.824 / 0.4 = 34.56 ns
    float_curve = CURVE + "by_columns = [[3, 0.2], [48, 0.6]]\n" + INT8_CURVE
    point = analyze(depthwise_fp32(12), targets=[int8_target(tmp_path, float_curve, "f")]).targets[0].nodes[0].placement
    assert point.efficiency == pytest.approx(0.4) and point.time_s == pytest.approx(34.56e-9)


def test_a_roof_s_figure_gives_one_curve(tmp_path):
    both = INT8_CURVE + "by_rows = [[49, 0.2], [784, 0.4]]\n"
    with pytest.raises(UsageError, match=r"'efficiency.depthwise.int8' gives both 'by_rows' and 'by_columns'"):
        parse_target(Path(int8_target(tmp_path, CURVE + both)))
    with pytest.raises(UsageError, match=r"'efficiency.depthwise.int8.by_columns' columns must increase \(48 then 3\)"):
        parse_target(
            Path(
                int8_target(
                    tmp_path, CURVE + INT8_CURVE.replace("[[3, 0.01], [48, 0.1]]", "[[48, 0.1], [3, 0.01]]"), "b"
                )
            )
        )


def test_calibrate_measures_the_depthwise_sizes_at_their_channels():
    # the float and the int8 depthwise sizes: the class's own at 32, 128 and 512 channels, then 3
    # and 8 for the curve, as the placement reads them
    assert [
        achieved.case_columns(op, shape, attributes) for _, op, shape, attributes in achieved.sizes("depthwise", "fp32")
    ] == [32, 128, 512, 3, 8]
    assert [
        achieved.case_columns(op, shape, attributes, achieved.qdq_chain_model)
        for _, op, shape, attributes in achieved.sizes("depthwise", "int8")
    ] == [32, 128, 512, 3, 8]
    assert achieved.sizes("gemm", "fp32") == achieved.CASES["gemm"]


def test_a_dense_conv_of_few_input_channels_runs_at_the_depthwise_figure_not_its_curve(tmp_path):
    # x [1, 3, 8, 8] -> Conv 3 -> 12, 3x3, pad 1: 27 MACs per output, a depthwise-class kernel, but
    # no grouped conv (the runtime runs its GEMM kernel): fp32 at the class's 0.5, not the curve
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    model = make_model(
        [node],
        [("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [("y", TensorProto.FLOAT, [1, 12, 8, 8])],
        [("w", np.ones((12, 3, 3, 3), np.float32))],
    )
    float_curve = CURVE + "by_columns = [[3, 0.2], [48, 0.6]]\n"
    point = analyze(model, targets=[int8_target(tmp_path, float_curve)]).targets[0].nodes[0].placement
    assert point.kernel_class == "depthwise" and point.efficiency == 0.5 and point.efficiency_columns is None


def test_the_int8_depthwise_curve_is_written_under_its_roof_s_figure():
    # int8 sizes at 3 channels 1% (on the curve only), 32 channels 10%, 512 channels 40%: points
    # [[3, 0.01], [32, 0.1], [512, 0.4]]; the figure's value is the geometric mean of the class's own
    # sizes, (0.1 x 0.4)^(1/2) = 0.2; the float one's, 0.5 (its 3-channel size on the curve only)
    def case(label, fraction, columns):
        return achieved.Case(label, 100e-6, fraction * 100e-6, fraction, columns, curve_only=columns < 32)

    calibration = hand_calibration()
    calibration.launch_overhead_s = 1e-6
    calibration.efficiency = {"depthwise": [case("depthwise 3", 0.1, 3), case("depthwise 32", 0.5, 32)]}
    calibration.efficiency_on_roof = {
        "depthwise": {
            "int8": [
                case("QDQ depthwise 3", 0.01, 3),
                case("QDQ depthwise 32", 0.1, 32),
                case("QDQ depthwise 512", 0.4, 512),
            ]
        }
    }
    calibration.matmul.append(MatmulPoint("int8", 1024, Rate(matmul_flops(1024), 1.073741824e-3, 3), ONNXRUNTIME_INT8))
    target = calibrated_target(calibration, "c")
    assert target.efficiency_by_columns["depthwise"] == ((3, 0.1), (32, 0.5))
    assert target.efficiency_by_columns["depthwise.int8"] == ((3, 0.01), (32, 0.1), (512, 0.4))
    assert target.efficiency_on_roof["depthwise"]["int8"].value == pytest.approx(0.2)
    assert target.efficiency["depthwise"].value == pytest.approx(0.5)
    assert "QDQ depthwise 3 (on the by_columns curve only)" in target.efficiency_on_roof["depthwise"]["int8"].source
    assert "by_columns" in target.efficiency_on_roof["depthwise"]["int8"].source
    # 3 channels on int8 at 0.01; on fp32 at 0.1
    assert target.efficiency_of("depthwise", "int8", 3) == 0.01 and target.efficiency_of("depthwise", "fp32", 3) == 0.1


def gemv_int8(columns: int):
    """x [1, 64] uint8 -> QLinearMatMul by a 64 x C int8 weight -> y [1, C] uint8: 64 C MACs, + 4
    per output to requantize; one row uses each weight once: a gemv."""
    scale, zero = np.array(0.05, np.float32), np.array(0, np.uint8)
    node = helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="proj")
    return make_model(
        [node],
        [("x", TensorProto.UINT8, [1, 64])],
        [("y", TensorProto.UINT8, [1, columns])],
        [
            ("xs", scale),
            ("xz", zero),
            ("w", np.ones((64, columns), np.int8)),
            ("ws", scale),
            ("wz", np.array(0, np.int8)),
            ("ys", scale),
            ("yz", zero),
        ],
    )


def test_an_int8_gemv_runs_at_its_roof_s_curve_and_a_float_one_at_its_class_s(tmp_path):
    # 1 x 64 by 64 x 100 in int8: 6,400 MACs = 12,800 ops + 4 x 100 = 13,200 ops at 100 GOP/s =
    # 132 ns (its 6.6 KB take 6.6 ns at 1 TB/s: compute-bound). 100 columns sit halfway between 10
    # and 1,000 in log: 0.2 + (0.8 - 0.2) / 2 = 0.5, so 132 / 0.5 = 264 ns
    gemv = (
        '[efficiency.gemv]\nvalue = 0.9\ntag = "measured"\nsource = "hand"\n'
        '[efficiency.gemv.int8]\nvalue = 0.4\ntag = "measured"\nsource = "hand"\n'
        "by_columns = [[10, 0.2], [1000, 0.8]]\n"
    )
    path = int8_target(tmp_path, gemv)
    point = analyze(gemv_int8(100), targets=[path]).targets[0].nodes[0].placement
    assert (point.kernel_class, point.roof, point.flops) == ("gemv", "int8", 13_200)
    assert point.efficiency == pytest.approx(0.5) and point.time_s == pytest.approx(264e-9)


def test_the_int8_gemv_sizes_are_fans_of_quantized_matmuls_at_their_columns():
    import onnx

    from onnxroof.measure.quantized_chains import qdq_fan_model
    from onnxroof.roofline.kernels import efficiency_class

    assert achieved.roof_builder("gemv") is qdq_fan_model and achieved.roof_builder("gemm") is achieved.qdq_chain_model
    # a fan of 3: 3 products of 1 x 32 by 32 x 10 (320 MACs each) on uint8 activations, a gemv each
    model = qdq_fan_model("MatMul", (1, 32), {"columns": 10}, 3)
    onnx.checker.check_model(model)
    products = [r for r in analyze(model).nodes if r.macs]
    assert [r.macs for r in products] == [320, 320, 320] and {r.dtype for r in products} == {"uint8"}
    assert {efficiency_class([r]) for r in products} == {"gemv"}
    assert [
        achieved.case_columns(op, shape, attributes, qdq_fan_model)
        for _, op, shape, attributes in achieved.ROOF_CASES["gemv"]["int8"]
    ] == [10, 128, 1024]


def test_explain_the_json_and_the_listing_show_the_columns_figure(tmp_path, capsys):
    import json

    from onnxroof.cli.app import main
    from onnxroof.report.text.explain import explain_target_lines
    from onnxroof.report.text.targets_list import render_targets_list

    path = int8_target(tmp_path, CURVE + INT8_CURVE)
    analysis = analyze(depthwise_int8(12), targets=[path])
    lines = explain_target_lines(analysis.targets[0], "dw")
    assert any(
        "efficiency 0.055 (depthwise kernels of 12 output columns on this target, "
        "efficiency.depthwise.int8.by_columns)" in line
        for line in lines
    )
    assert "depthwise int8 by output columns: 3 1%, 48 10%" in render_targets_list([analysis.targets[0].target])
    model = tmp_path / "dw.onnx"
    model.write_bytes(depthwise_int8(12).SerializeToString())
    assert main(["summary", str(model), "--target", path, "--format", "json"]) == 0
    entry = json.loads(capsys.readouterr().out)["targets"][0]
    assert entry["efficiency_by_columns"] == {"depthwise.int8": [[3, 0.01], [48, 0.1]]}
    assert entry["nodes"][0]["efficiency_columns"] == 12 and entry["nodes"][0]["efficiency"] == pytest.approx(0.055)


def test_a_quantized_link_s_roofline_is_its_cost_as_an_int8_kernel(tmp_path):
    # a QDQ depthwise link of 8 channels of 4x4 (fused: the conv, its QuantizeLinear and the next
    # link's DequantizeLinear): 1,152 MACs = 2,304 ops + 4 x 128 (quantize) + 2 x 128 (dequantize)
    # = 3,072 ops at 100 GOP/s = 30.72 ns; re-costed in int8 its 128 B in, 72 B of weights and 128 B
    # out take 0.33 ns at 1 TB/s: compute-bound
    target = parse_target(Path(int8_target(tmp_path, CURVE)))
    link = dict(builder=achieved.qdq_chain_model, fusion="all")
    args = ("Conv", (1, 8, 4, 4), {"group": 8, "pads": [1, 1, 1, 1]})
    assert achieved.roof_slope_s(*args, target, dtype="int8", **link) == pytest.approx(30.72e-9)
    # on chip at 1 GB/s the bytes are the roof: 328 B and the three scales and zero points its
    # quantize, dequantize and weight's dequantize read (1 B each in int8): 334 B = 334 ns, where
    # read with its float tensors (the dequantized activations, 4 B an element: 512 B in and out;
    # the weights' stored 72 B; the scales 4 B each) the same link would be 1,096 + 12 + 3 = 1,111 ns
    slow = tmp_path / "slow.toml"
    slow.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "peak_ops_per_s.int8": 1e11,
                "dram.bandwidth_bytes_per_s": 1e12,
                "onchip.size_bytes": 1 << 30,
                "onchip.bandwidth_bytes_per_s": 1e9,
            },
            CURVE,
        )
    )
    target = parse_target(slow)
    assert achieved.roof_slope_s(*args, target, dtype="int8", **link) == pytest.approx(334e-9)
    assert achieved.roof_slope_s(*args, target, **link) == pytest.approx(1111e-9)
