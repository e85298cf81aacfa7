"""Achievable, not peak (issue 20): a target's ``[efficiency]`` figures divide each kernel's
roofline time by the fraction its runtime reaches for that kind of kernel; ``calibrate``
measures them for the host with onnxruntime (onnxroof.measure.achieved). Expected values are worked
out by hand in the comments."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import int8_target, make_model, target_text, zeros
from measurements import small_calibration
from onnx import TensorProto, helper

from onnxroof import analyze
from onnxroof.cli.app import main
from onnxroof.core.errors import UsageError
from onnxroof.measure import achieved, kernel_figures
from onnxroof.measure import roof_kernels as cal
from onnxroof.report.target_file import calibrated_target, render_target
from onnxroof.roofline.kernels import efficiency_class
from onnxroof.roofline.placement import roofline
from onnxroof.roofline.targets import parse_target

F32 = TensorProto.FLOAT


def target_file(tmp_path, efficiency: str = "", name: str = "t", onchip_bytes: int = 1 << 30) -> str:
    """1 TFLOP/s fp32, 1 TB/s DRAM, 10 GB/s on chip (1 GiB of it unless given), no launch cost."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "dram.bandwidth_bytes_per_s": 1e12,
                "onchip.size_bytes": onchip_bytes,
                "onchip.bandwidth_bytes_per_s": 1e10,
            },
            efficiency,
        )
    )
    return str(path)


def figure(kernel_class: str, value: float) -> str:
    return f'[efficiency.{kernel_class}]\nvalue = {value}\ntag = "measured"\nsource = "hand"\n'


def add_pair():
    """x -> Add(x, x) -> a -> Add(a, x) -> y, 1,024 floats each."""
    nodes = [
        helper.make_node("Add", ["x", "x"], ["a"], name="add_0"),
        helper.make_node("Add", ["a", "x"], ["y"], name="add_1"),
    ]
    return make_model(nodes, [("x", F32, [1024])], [("y", F32, [1024])])


def test_the_efficiency_stretches_every_roof_alike_and_keeps_the_bound():
    # 2 GFLOP at 1 TFLOP/s = 2 ms of compute, 1 MB at 1 GB/s = 1 ms of DRAM; at 50%: 4 ms and
    # 2 ms, still compute-bound, plus a 1 µs launch that the efficiency does not stretch
    point = roofline(
        flops=2_000_000_000,
        dram_bytes=1_000_000,
        peak_flops_per_s=1e12,
        dram_bytes_per_s=1e9,
        overhead_s=1e-6,
        efficiency=0.5,
        kernel_class="gemm",
    )
    assert point.compute_s == pytest.approx(4e-3) and point.memory_s == pytest.approx(2e-3)
    assert point.time_s == pytest.approx(4e-3 + 1e-6)
    assert point.bound == "compute" and point.efficiency == 0.5


def test_a_kernel_class_s_efficiency_divides_its_time_and_no_overhead_drops_it(tmp_path):
    # on chip at 10 GB/s: add_0 reads x once (both operands are x) and writes a, 8,192 B =
    # 0.8192 µs; add_1 reads a and x and writes y, 12,288 B = 1.2288 µs (their DRAM bytes, x and y
    # at 1 TB/s, take nanoseconds); at 25%, 4x as long
    peak = analyze(add_pair(), targets=[target_file(tmp_path)]).targets[0]
    derated = analyze(add_pair(), targets=[target_file(tmp_path, figure("elementwise", 0.25), "e")]).targets[0]
    plain = analyze(
        add_pair(), targets=[target_file(tmp_path, figure("elementwise", 0.25), "e")], overhead=False
    ).targets[0]
    assert [n.placement.time_s for n in peak.nodes] == pytest.approx([0.8192e-6, 1.2288e-6])
    assert [n.placement.time_s for n in derated.nodes] == pytest.approx([3.2768e-6, 4.9152e-6])
    assert [n.placement.kernel_class for n in derated.nodes] == ["elementwise"] * 2
    assert plain.latency_s == pytest.approx(peak.latency_s)


def test_another_class_s_figure_leaves_a_kernel_at_peak(tmp_path):
    report = analyze(add_pair(), targets=[target_file(tmp_path, figure("gemm", 0.5))]).targets[0]
    assert report.latency_s == pytest.approx(0.8192e-6 + 1.2288e-6)


def conv(name: str, channels_in: int, group: int = 1):
    """Conv 3x3 (pad 1) over 1 x channels_in x 8 x 8 to 16 channels... or depthwise (group)."""
    out = channels_in if group > 1 else 16
    node = helper.make_node("Conv", ["x", "w"], ["y"], name=name, pads=[1, 1, 1, 1], group=group)
    return make_model(
        [node],
        [("x", F32, [1, channels_in, 8, 8])],
        [("y", F32, [1, out, 8, 8])],
        [("w", zeros(out, channels_in // group, 3, 3))],
    )


@pytest.mark.parametrize(
    "model, expected",
    [
        (conv("dense", 16), "gemm"),  # 16 x 9 = 144 multiply-adds per output element
        (conv("depthwise", 16, group=16), "depthwise"),  # 9 per output element
        (conv("rgb", 3), "depthwise"),  # 3 x 9 = 27 < 32: as little reuse as a depthwise conv
    ],
)
def test_a_convolution_s_class_follows_its_multiply_adds_per_output(model, expected):
    records = [r for r in analyze(model).nodes if r.counted]
    assert efficiency_class(records) == expected


@pytest.mark.parametrize(
    "op, attributes, expected",
    [
        ("Relu", {}, "elementwise"),
        ("Softmax", {"axis": -1}, "reduction"),
        ("Transpose", {"perm": [1, 0]}, "transpose"),
        ("Split", {"axis": 0}, "data_movement"),
    ],
)
def test_other_kernels_are_classed_by_the_work_they_do(op, attributes, expected):
    model = make_model(
        [helper.make_node(op, ["x"], ["y"], name="n", **attributes)], [("x", F32, [64, 32])], [("y", F32, None)]
    )
    assert efficiency_class(analyze(model).nodes) == expected


def test_a_target_s_efficiency_is_validated(tmp_path):
    with pytest.raises(UsageError, match=r"'efficiency.gemm.value' is a fraction of the roofline, at most 1"):
        parse_target(__import__("pathlib").Path(target_file(tmp_path, figure("gemm", 1.5))))
    with pytest.raises(UsageError, match=r"'efficiency.matmul' is not a kernel class \(gemm, gemv, depthwise"):
        parse_target(__import__("pathlib").Path(target_file(tmp_path, figure("matmul", 0.5), "m")))


def test_the_json_and_targets_listing_carry_the_efficiency(tmp_path, capsys):
    path = target_file(tmp_path, figure("elementwise", 0.25))
    model = tmp_path / "m.onnx"
    model.write_bytes(add_pair().SerializeToString())
    assert main(["summary", str(model), "--target", path, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    entry = document["targets"][0]
    assert entry["efficiency"] == {"elementwise": 0.25}
    assert [(n["kernel_class"], n["efficiency"]) for n in entry["nodes"]] == [("elementwise", 0.25)] * 2
    assert main(["targets"]) == 0
    assert "efficiency: none given (every kernel at the roofline: peak figures)" in capsys.readouterr().out


def test_the_roofline_slope_of_a_chain_is_one_op_s_roofline_time(tmp_path):
    # a middle Add of the chain reads the previous output and x (2 x 4,096 B) and writes 4,096 B,
    # all on chip: 12,288 B / 10 GB/s = 1.2288 µs; the chain's ends add DRAM nanoseconds only
    target = parse_target(__import__("pathlib").Path(target_file(tmp_path)))
    assert achieved.roof_slope_s("Add", (1024,), {}, target) == pytest.approx(1.2288e-6, rel=1e-3)


def test_a_measured_class_is_the_geometric_mean_of_its_sizes_and_the_file_carries_it():
    # two sizes at 20% and 80%: sqrt(0.2 x 0.8) = 40%
    cases = [
        achieved.Case("small", 10e-6, 2e-6, achieved.efficiency(2e-6, 10e-6)),
        achieved.Case("large", 100e-6, 80e-6, achieved.efficiency(80e-6, 100e-6)),
    ]
    assert [c.fraction for c in cases] == pytest.approx([0.2, 0.8])
    result = small_calibration(launch_overhead_s=1e-6, efficiency={"elementwise": cases})
    target = calibrated_target(result, "m")
    assert target.efficiency["elementwise"].value == pytest.approx(0.4)
    assert "small: 10 µs against 2 µs, 20%" in target.efficiency["elementwise"].source
    assert target.fusion == ("epilogue", "normalization")  # onnxruntime's CPU fusions
    assert "gemm" not in target.efficiency  # not measured: peak


def test_the_copy_bandwidth_becomes_the_dram_roof_when_it_is_faster():
    result = small_calibration(copy_bytes_per_s=2e10)
    figure_ = calibrated_target(result, "c").dram_bytes_per_s
    assert figure_.value == 2e10 and "the STREAM sweep reached 10.0 GB/s" in figure_.source


def test_numpy_is_cross_checked_without_the_blas_variables(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    assert cal.blas_variables() == ["OPENBLAS_CORETYPE"]
    point = cal.numpy_in_clean_environment(64, threads=1, budget_s=0.05)
    assert point is not None and point.method == cal.CLEAN and point.rate.per_second > 0


def test_the_chains_are_valid_models_of_one_size():
    import onnx

    for cases in achieved.CASES.values():
        for _, op, shape, attributes in cases:
            model = achieved.chain_model(op, shape, attributes, 3)
            onnx.checker.check_model(model)
            outputs = [int(np.prod(r.output_shapes[0])) for r in analyze(model).nodes]
            assert outputs == [int(np.prod(shape))] * 3, op  # a Transpose's shape alternates


def test_efficiency_arithmetic():
    assert achieved.efficiency(roof_s=40e-6, measured_s=100.5e-6, launch_s=0.5e-6) == pytest.approx(0.4)
    assert achieved.efficiency(roof_s=40e-6, measured_s=30e-6) == 1.0
    assert achieved.class_efficiency([0.1, 0.4]) == pytest.approx(0.2)
    assert np.isclose(achieved.per_kernel_seconds(10e-6, 90e-6, kernels=9), 10e-6)


def test_the_launch_line_gives_the_launch_and_the_run_cost_from_one_measurement(monkeypatch):
    # a chain of 1 Add runs in 4.3 µs, of 65 in 4.3 + 64 x 0.3 = 23.5 µs: 0.3 µs a kernel (the
    # slope) and 4.3 - 0.3 = 4.0 µs a run beyond its kernels (the intercept); both sessions timed
    # in one call, in turns
    calls = []

    def times(runs, budget_s):
        calls.append(len(runs))
        return [4.3e-6, 23.5e-6]

    monkeypatch.setattr(achieved, "onnxruntime_available", lambda: True)
    monkeypatch.setattr(achieved, "cpu_session", lambda model, threads, optimize: len(model.graph.node))
    monkeypatch.setattr(achieved, "fastest_runs_s", times)
    launch_s, run_s = kernel_figures.measure_launch_line(1.0)
    assert launch_s == pytest.approx(0.3e-6) and run_s == pytest.approx(4.0e-6) and calls == [2]
    monkeypatch.setattr(achieved, "fastest_runs_s", lambda runs, budget_s: [0.2e-6, 19.4e-6])  # no intercept left
    assert kernel_figures.measure_launch_line(1.0)[1] is None


def matmul_model():
    """x [1, 64] -> MatMul by a 64 x 64 weight (16,384 B) -> y [1, 64]."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    return make_model([node], [("x", F32, [1, 64])], [("y", F32, [1, 64])], [("w", zeros(64, 64))])


WEIGHTS = '[weights]\nresident = true\nsource = "hand"\n'


def test_resident_weights_move_no_dram_bytes_when_they_fit(tmp_path):
    # DRAM: x in (256 B) and y out (256 B), plus the 16,384 B weight unless it stays on chip
    read = analyze(matmul_model(), targets=[target_file(tmp_path)]).targets[0]
    kept = analyze(matmul_model(), targets=[target_file(tmp_path, WEIGHTS, "w")]).targets[0]
    assert read.nodes[0].placement.dram_bytes == 16384 + 512
    assert kept.nodes[0].placement.dram_bytes == 512
    assert kept.nodes[0].placement.onchip_bytes == read.nodes[0].placement.onchip_bytes == 16384 + 512
    assert any("stay on chip between runs" in note for note in kept.notes)


def test_resident_weights_that_do_not_fit_are_read_from_dram(tmp_path):
    small = target_file(tmp_path, WEIGHTS, "s", onchip_bytes=8192)  # 8 KiB on chip: the 16 KiB weight does not fit
    report = analyze(matmul_model(), targets=[small]).targets[0]
    assert report.nodes[0].placement.dram_bytes == 16384 + 512
    assert any("do not fit on chip" in note for note in report.notes)


def test_parameters_that_fit_only_in_part_are_cached_in_model_order_and_the_rest_streamed(tmp_path):
    # x [1, 64] -> MatMul W1 -> h -> MatMul W2 -> y; each weight 64 x 64 x 4 B = 16,384 B. The peak
    # activations are x + h (or h + y) = 256 + 256 = 512 B, so 16,384 + 512 = 16,896 B on chip keeps
    # W1 (the first kernel's) between runs and streams W2: kernel 1 reads x (256 B) from DRAM,
    # kernel 2 reads W2 and writes y: 16,384 + 256 = 16,640 B.
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
        helper.make_node("MatMul", ["h", "w2"], ["y"], name="second"),
    ]
    model = make_model(
        nodes, [("x", F32, [1, 64])], [("y", F32, [1, 64])], [("w1", zeros(64, 64)), ("w2", zeros(64, 64))]
    )
    report = analyze(model, targets=[target_file(tmp_path, WEIGHTS, "half", onchip_bytes=16_896)]).targets[0]
    assert [(k.name, k.placement.dram_bytes) for k in report.nodes] == [("first", 256), ("second", 16_640)]
    assert report.weights_on_chip_bytes == 16_384
    assert any("16,384 B of the 32,768 B of parameters stay on chip" in note for note in report.notes)
    # a runtime that reloads every context each run (partial = false) keeps none of them: kernel 1
    # reads x and W1 (256 + 16,384), kernel 2 W2 and writes y (16,384 + 256)
    whole = WEIGHTS.replace("resident = true", "resident = true\npartial = false")
    report = analyze(model, targets=[target_file(tmp_path, whole, "none", onchip_bytes=16_896)]).targets[0]
    assert [(k.name, k.placement.dram_bytes) for k in report.nodes] == [("first", 16_640), ("second", 16_640)]
    assert report.weights_on_chip_bytes == 0


def test_a_matmul_that_uses_each_weight_few_times_is_a_gemv():
    # [1, 64] x [64, 64]: 4,096 MACs over 4,096 weights, 1 each (< 8); [16, 64] x [64, 64]: 16 each
    records = [r for r in analyze(matmul_model()).nodes if r.counted]
    assert efficiency_class(records) == "gemv"
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    rows = make_model([node], [("x", F32, [16, 64])], [("y", F32, [16, 64])], [("w", zeros(64, 64))])
    assert efficiency_class([r for r in analyze(rows).nodes if r.counted]) == "gemm"


def int8_matmul_model():
    """x [64, 64] uint8 -> MatMulInteger by a 64 x 64 int8 weight -> y [64, 64] int32:
    64 x 64 x 64 = 262,144 MACs, 524,288 ops on the int8 roof; 64 per weight element and 64 per
    output element: a gemm."""
    node = helper.make_node("MatMulInteger", ["x", "w"], ["y"], name="mmi")
    return make_model(
        [node],
        [("x", TensorProto.UINT8, [64, 64])],
        [("y", TensorProto.INT32, [64, 64])],
        [("w", np.zeros((64, 64), np.int8))],
    )


def test_a_class_s_figure_on_a_roof_applies_to_its_kernels_on_that_roof(tmp_path):
    # 524,288 ops at 100 GOP/s = 5.24288 µs; the bytes (4,096 + 4,096 in, 16,384 out at 1 TB/s)
    # take 24.6 ns: compute-bound. gemm at 0.25, gemm on int8 at 0.5: 5.24288 / 0.5 = 10.48576 µs
    both = figure("gemm", 0.25) + '[efficiency.gemm.int8]\nvalue = 0.5\ntag = "measured"\nsource = "hand"\n'
    report = analyze(int8_matmul_model(), targets=[int8_target(tmp_path, both)]).targets[0]
    (kernel,) = report.nodes
    assert kernel.placement.roof == "int8" and kernel.placement.kernel_class == "gemm"
    assert kernel.placement.efficiency == 0.5
    assert kernel.placement.time_s == pytest.approx(10.48576e-6)
    # without the int8 figure the class's value holds: 5.24288 / 0.25 = 20.97152 µs
    report = analyze(int8_matmul_model(), targets=[int8_target(tmp_path, figure("gemm", 0.25), "g")]).targets[0]
    assert report.nodes[0].placement.time_s == pytest.approx(20.97152e-6)
    # and a float32 gemm keeps the class's value on the fp32 roof
    target = parse_target(__import__("pathlib").Path(int8_target(tmp_path, both, "b")))
    assert target.efficiency_of("gemm", "fp32") == 0.25 and target.efficiency_of("gemm", "int8") == 0.5
    assert target.efficiency_on_roof["gemm"]["int8"].tag == "measured"


def test_a_figure_on_a_roof_is_validated(tmp_path):
    def parsed(text: str, name: str):
        return parse_target(__import__("pathlib").Path(int8_target(tmp_path, figure("gemm", 0.9) + text, name)))

    with pytest.raises(UsageError, match=r"'efficiency.gemm.int9' is neither a roof \(fp32, .*\) nor 'by_columns'"):
        parsed('[efficiency.gemm.int9]\nvalue = 0.5\ntag = "measured"\nsource = "hand"\n', "a")
    with pytest.raises(
        UsageError, match=r"'efficiency.gemm.int8.value' is a fraction of the roofline, at most 1, not 2"
    ):
        parsed('[efficiency.gemm.int8]\nvalue = 2\ntag = "measured"\nsource = "hand"\n', "b")
    with pytest.raises(UsageError, match=r"'efficiency.gemm.int8.tag' must be one of"):
        parsed('[efficiency.gemm.int8]\nvalue = 0.5\ntag = "guess"\nsource = "hand"\n', "c")


def test_a_node_the_runtime_computed_in_float_runs_on_the_fp32_roof(tmp_path):
    # the same MatMulInteger said to run in float32: 524,288 FLOPs at 1 TFLOP/s = 0.524288 µs,
    # against the 24.6 ns of its bytes: compute-bound on fp32, at gemm's 0.25: 2.097152 µs
    from onnxroof.roofline.placement import place_model

    analysis = analyze(int8_matmul_model(), targets=[int8_target(tmp_path, figure("gemm", 0.25))])
    target = analysis.targets[0].target
    report = place_model(
        analysis.cost_graph, analysis.memory, target, groups=[["mmi"]], compute_dtypes={"mmi": "float32"}
    )
    assert report.nodes[0].placement.roof == "fp32"
    assert report.nodes[0].placement.time_s == pytest.approx(2.097152e-6)
    as_read = place_model(analysis.cost_graph, analysis.memory, target, groups=[["mmi"]])
    assert as_read.nodes[0].placement.roof == "int8"
    assert as_read.nodes[0].placement.time_s == pytest.approx(20.97152e-6)


def test_the_quantized_chains_are_valid_qdq_models_whose_links_are_int8_kernels_of_their_class():
    import onnx

    for kernel_class, by_roof in achieved.ROOF_CASES.items():
        for _, op, shape, attributes in by_roof["int8"]:
            model = achieved.roof_builder(kernel_class)(op, shape, attributes, 3)
            onnx.checker.check_model(model)
            products = [r for r in analyze(model).nodes if r.macs]
            # int8 activations in the chains, uint8 in the gemv fans (onnxruntime fuses those): the int8 roof
            assert len(products) == 3 and {r.dtype for r in products} <= {"int8", "uint8"}, op
            assert {efficiency_class([r]) for r in products} == {kernel_class}, op


def test_a_quantized_chain_of_depthwise_convs_is_int8_depthwise():
    import onnx

    # 8 channels of 4x4, group 8, 3x3 kernel padded 1: each output element 9 MACs -> 8 x 16 x 9 = 1,152 per link;
    # its weights are [8, 1, 3, 3]
    model = achieved.qdq_chain_model("Conv", (1, 8, 4, 4), {"group": 8, "pads": [1, 1, 1, 1]}, 2)
    onnx.checker.check_model(model)
    products = [r for r in analyze(model).nodes if r.macs]
    assert [r.macs for r in products] == [1152, 1152] and {r.dtype for r in products} == {"int8"}
    assert {efficiency_class([r]) for r in products} == {"depthwise"}
    assert [list(t.dims) for t in model.graph.initializer if t.name == "w0"] == [[8, 1, 3, 3]]


GEMV_TABLE = figure("gemv", 0.6) + "by_columns = [[10, 0.2], [1000, 0.8]]\n"


def gemv_model(columns: int, rows: int = 1):
    """x [rows, 64] -> MatMul by a 64 x ``columns`` weight -> y [rows, columns]."""
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    return make_model([node], [("x", F32, [rows, 64])], [("y", F32, [rows, columns])], [("w", zeros(64, columns))])


def test_a_gemv_s_efficiency_follows_its_output_columns_between_the_points(tmp_path):
    # 1 x 64 by 64 x 100: weights 25,600 B, x 256 B, y 400 B, all on chip at 10 GB/s: 26,256 B =
    # 2.6256 µs (its DRAM bytes at 1 TB/s take 26 ns). 100 columns sit halfway between 10 and
    # 1,000 in log(columns): 0.2 + (0.8 - 0.2) / 2 = 0.5, so 2.6256 / 0.5 = 5.2512 µs
    path = target_file(tmp_path, GEMV_TABLE)
    (kernel,) = analyze(gemv_model(100), targets=[path]).targets[0].nodes
    assert kernel.placement.kernel_class == "gemv"
    assert kernel.placement.efficiency == pytest.approx(0.5)
    assert kernel.placement.time_s == pytest.approx(5.2512e-6)
    # past the ends the end points hold: 5 columns at 0.2, 2,000 at 0.8
    assert analyze(gemv_model(5), targets=[path]).targets[0].nodes[0].placement.efficiency == pytest.approx(0.2)
    assert analyze(gemv_model(2000), targets=[path]).targets[0].nodes[0].placement.efficiency == pytest.approx(0.8)
    # 16 rows use each weight 16 times: a gemm, which the gemv table leaves at peak
    gemm = analyze(gemv_model(100, rows=16), targets=[path]).targets[0].nodes[0].placement
    assert gemm.kernel_class == "gemm" and gemm.efficiency == 1.0


def test_without_points_a_gemv_runs_at_its_class_s_value(tmp_path):
    # the bundled targets' way: one figure for the class, whatever the width
    path = target_file(tmp_path, figure("gemv", 0.6), "plain")
    assert analyze(gemv_model(100), targets=[path]).targets[0].nodes[0].placement.efficiency == pytest.approx(0.6)
    target = parse_target(__import__("pathlib").Path(path))
    assert target.efficiency_by_columns == {} and target.efficiency_of("gemv", "fp32", 100) == pytest.approx(0.6)


@pytest.mark.parametrize(
    "points, message",
    [
        ("[[10, 0.2], [10, 0.8]]", r"'efficiency.gemv.by_columns' columns must increase \(10 then 10\)"),
        (
            "[[10, 0.2], [100, 1.5]]",
            r"'efficiency.gemv.by_columns' point \[100, 1.5\]: columns at least 1, fraction in \(0, 1\]",
        ),
        (
            "[[10.5, 0.2]]",
            r"'efficiency.gemv.by_columns' point \[10.5, 0.2\] must be \[whole output columns, fraction\]",
        ),
        ("[]", r"'efficiency.gemv.by_columns' must be a list of \[output columns, fraction\] points"),
        ('"wide"', r"'efficiency.gemv.by_columns' must be a list of \[output columns, fraction\] points"),
    ],
)
def test_the_points_are_validated(tmp_path, points, message):
    path = target_file(tmp_path, figure("gemv", 0.6) + f"by_columns = {points}\n", "bad")
    with pytest.raises(UsageError, match=message):
        parse_target(__import__("pathlib").Path(path))


def test_the_gemv_fans_are_valid_models_and_their_roofs_follow_the_weights_place(tmp_path):
    import onnx

    for _, rows, depth, columns in achieved.GEMV_CASES:
        model = achieved.fan_model(rows, depth, columns, 3, shared=True)
        onnx.checker.check_model(model)
        products = [r for r in analyze(model).nodes if r.macs]
        assert len(products) == 3 and {efficiency_class([r]) for r in products} == {"gemv"}
    # on the hand target (1 GiB on chip at 10 GB/s, weights resident): 1 x 512 by 512 x 512 keeps
    # its 1,048,576 B of weights on chip: 4 x (262,144 + 1,024) = 1,052,672 B at 10 GB/s = 105.2672 µs
    target = parse_target(__import__("pathlib").Path(target_file(tmp_path, WEIGHTS, "r")))
    assert achieved.gemv_fits(1, 512, 512, target)
    assert achieved.gemv_roof_s(1, 512, 512, target) == pytest.approx(105.2672e-6)
    # 8 KiB on chip: the weights come from DRAM at 1 TB/s (1.05 µs), the on-chip bytes still
    # take 105.2672 µs: the on-chip roof is the longest
    small = parse_target(__import__("pathlib").Path(target_file(tmp_path, WEIGHTS, "s", onchip_bytes=8192)))
    assert not achieved.gemv_fits(1, 512, 512, small)
    assert achieved.gemv_roof_s(1, 512, 512, small) == pytest.approx(105.2672e-6)


def test_the_hand_off_is_the_median_cost_of_split_kernels_beyond_launch_and_work(monkeypatch):
    # per case (1 thread, 2 threads), launch 0.36 µs: MatMul 64: 4.56 - 0.36 - (3.96 - 0.36) / 2
    # = 2.4 µs; MatMul 96: 8.56 - 0.36 - 12.0 / 2 = 2.2 µs; Conv: 9.36 - 0.36 - 12.4 / 2 = 2.8 µs;
    # the median is 2.4 µs
    slopes = {
        ("MatMul", (64, 64)): (3.96e-6, 4.56e-6),
        ("MatMul", (96, 96)): (12.36e-6, 8.56e-6),
        ("Conv", (1, 16, 16, 16)): (12.76e-6, 9.36e-6),
    }
    monkeypatch.setattr(
        achieved, "chain_slope_s", lambda op, shape, attributes, threads, budget: slopes[(op, shape)][threads - 1]
    )
    handoff, cases = kernel_figures.measure_handoff(0.36e-6, threads=2, budget_s=0.1)
    assert handoff == pytest.approx(2.4e-6)
    assert [(label, one, many) for label, one, many in cases][0] == ("MatMul 64x64 by 64x64", 3.96e-6, 4.56e-6)
    # a kernel that ran no slower on two threads than its share of the work costs nothing more
    assert kernel_figures.handoff_seconds(one_s=10.36e-6, many_s=5.0e-6, launch_s=0.36e-6, threads=2) == 0.0


def test_on_two_threads_the_hand_off_is_written_beside_the_launch(tmp_path):
    # launch 0.4 µs (the 16-float Add slope), hand-off 2.2 µs: two figures, node_overhead_s for
    # every kernel and split_overhead_s for a kernel the pool splits
    result = small_calibration(
        threads=2,
        launch_overhead_s=0.4e-6,
        handoff_s=2.2e-6,
        handoff_cases=[("MatMul 96x96 by 96x96", 12.36e-6, 8.56e-6)],
    )
    path = tmp_path / "two.toml"
    path.write_text(render_target(result, "two"), encoding="utf-8")
    target = parse_target(path)
    assert target.node_overhead_s.value == pytest.approx(0.4e-6)
    figure_ = target.split_overhead_s
    assert figure_.value == pytest.approx(2.2e-6) and figure_.tag == "measured"
    assert "MatMul 96x96 by 96x96 (1 thread 12.4 µs, 2 threads 8.56 µs)" in figure_.source
    from onnxroof.measure.roofs import measured_roofs

    roofs = measured_roofs(result)
    assert roofs.node_overhead_s.value == pytest.approx(0.4e-6) and roofs.split_overhead_s.value == pytest.approx(
        2.2e-6
    )
    # one thread: no hand-off measured, no figure
    result.threads, result.handoff_s, result.handoff_cases = 1, None, []
    path.write_text(render_target(result, "two"), encoding="utf-8")
    assert parse_target(path).split_overhead_s is None


def split_target(tmp_path, name: str = "split") -> str:
    """1 TFLOP/s fp32, 1 TB/s DRAM, 10 GB/s on chip; 1 µs per kernel and 3 µs more when split."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "dram.bandwidth_bytes_per_s": 1e12,
                "onchip.size_bytes": 1 << 30,
                "onchip.bandwidth_bytes_per_s": 1e10,
                "node_overhead_s": 1e-6,
                "split_overhead_s": 3e-6,
            }
        )
    )
    return str(path)


def test_a_product_of_65536_multiply_adds_or_more_pays_the_split_cost_and_a_small_one_does_not(tmp_path):
    # 1 x 64 by 64 x 1024: 65,536 MACs, MLAS's one thread's worth: split over two. Its bytes:
    # 262,144 B of weights + 256 B in + 4,096 B out = 266,496 B on chip at 10 GB/s = 26.6496 µs,
    # plus 1 µs launch and 3 µs split = 30.6496 µs. 1 x 64 by 64 x 100 (6,400 MACs): 26,256 B =
    # 2.6256 µs plus the launch alone = 3.6256 µs
    path = split_target(tmp_path)
    wide = analyze(gemv_model(1024), targets=[path]).targets[0].nodes[0].placement
    assert wide.time_s == pytest.approx(30.6496e-6) and wide.overhead_s == pytest.approx(4e-6)
    narrow = analyze(gemv_model(100), targets=[path]).targets[0].nodes[0].placement
    assert narrow.time_s == pytest.approx(3.6256e-6)


def test_a_profile_says_which_kernels_were_split(tmp_path):
    # the same 6,400-MAC product, said split by the runtime's profile: 2.6256 + 1 + 3 = 6.6256 µs;
    # the 65,536-MAC one said not split: 26.6496 + 1 = 27.6496 µs
    from onnxroof.roofline.placement import place_model

    path = split_target(tmp_path)
    for columns, split, expected in ((100, ["proj"], 6.6256e-6), (1024, [], 27.6496e-6)):
        analysis = analyze(gemv_model(columns), targets=[path])
        report = place_model(
            analysis.cost_graph, analysis.memory, analysis.targets[0].target, groups=[["proj"]], split=split
        )
        assert report.nodes[0].placement.time_s == pytest.approx(expected)


def test_a_case_that_splits_is_measured_beyond_the_launch_and_the_split(monkeypatch, tmp_path):
    # MatMul 128x256 by 256x256 has 8,388,608 MACs: split. Measured 10 µs, roofline 4.5 µs, launch
    # 0.5 µs, split 3 µs: 4.5 / (10 - 0.5 - 3) = 0.6923; a 16 Ki-float Add is never split:
    # 4.5 / (10 - 0.5) = 0.4737
    assert achieved.case_macs("MatMul", (128, 256), {}) == 8_388_608
    target = parse_target(__import__("pathlib").Path(split_target(tmp_path)))
    monkeypatch.setattr(achieved, "onnxruntime_available", lambda: True)
    monkeypatch.setattr(achieved, "chain_slope_s", lambda *args, **kwargs: 10e-6)
    monkeypatch.setattr(achieved, "roof_slope_s", lambda *args, **kwargs: 4.5e-6)
    monkeypatch.setattr(achieved, "gemv_slope_s", lambda *args, **kwargs: 10e-6)
    monkeypatch.setattr(achieved, "gemv_roof_s", lambda *args, **kwargs: 4.5e-6)
    found = kernel_figures.measure_efficiency(target, 0.5e-6, budget_s=0.01)
    assert found["gemm"][0].fraction == pytest.approx(4.5 / 6.5)
    assert found["elementwise"][0].fraction == pytest.approx(4.5 / 9.5)
    # gemv: 1 x 32,768 by 32,768 x 10 = 327,680 MACs, split
    assert found["gemv"][0].fraction == pytest.approx(4.5 / 6.5)


def test_the_profile_s_thread_stats_say_which_kernels_were_split():
    from onnxroof.measure.ort_events import kernel_splits

    def event(name, blocks):
        stats = {"main_thread": {"block_size": blocks, "Run": 33}, "sub_threads": {}}
        return {
            "cat": "Node",
            "name": f"{name}_kernel_time",
            "ts": 0,
            "dur": 1,
            "args": {"thread_scheduling_stats": stats},
        }

    # big: split in 2 of 3 runs; small: never; odd: in 1 of 2 (not most); one: no stats (one thread)
    events = [
        event("big", [1]),
        event("big", [1]),
        event("big", []),
        event("small", []),
        event("small", []),
        event("odd", [1]),
        event("odd", []),
        {"cat": "Node", "name": "one_kernel_time", "ts": 0, "dur": 1, "args": {"thread_scheduling_stats": ""}},
    ]
    assert kernel_splits(events) == {"big"}


# --- efficiency by op (efficiency.<class>.by_op) ---------------------------------------------------

BY_OP = figure("elementwise", 0.8) + "by_op = { Erf = 0.25, Tanh = 0.5 }\n"


def unary_chain(*ops: str):
    """x [1024] -> ops[0] -> ... -> y, each node named after its op in lower case; an "Add" adds x."""
    nodes, previous = [], "x"
    for index, op in enumerate(ops):
        output = "y" if index == len(ops) - 1 else f"t{index}"
        inputs = [previous, "x"] if op == "Add" else [previous]
        nodes.append(helper.make_node(op, inputs, [output], name=op.lower()))
        previous = output
    return make_model(nodes, [("x", F32, [1024])], [("y", F32, [1024])])


def test_an_op_s_figure_divides_its_kernel_s_time_in_place_of_the_class_s(tmp_path):
    # Erf reads x and writes y, 4,096 B each, on chip at 10 GB/s: 0.8192 µs (DRAM: 8,192 B at
    # 1 TB/s, 8.2 ns); at Erf's 0.25, 4x: 3.2768 µs, not the class's 0.8192 / 0.8 = 1.024 µs
    (kernel,) = analyze(unary_chain("Erf"), targets=[target_file(tmp_path, BY_OP)]).targets[0].nodes
    assert kernel.placement.kernel_class == "elementwise" and kernel.placement.op_efficiency == 0.25
    assert kernel.placement.efficiency == 0.8  # the class's, which the DRAM roof keeps
    assert kernel.placement.time_s == pytest.approx(3.2768e-6)
    # without overhead, the roofline itself
    (plain,) = analyze(unary_chain("Erf"), targets=[target_file(tmp_path, BY_OP)], overhead=False).targets[0].nodes
    assert plain.placement.op_efficiency is None and plain.placement.time_s == pytest.approx(0.8192e-6)


def test_an_op_the_table_does_not_name_runs_at_its_class_s_figure(tmp_path):
    # Relu, the same 8,192 B on chip: 0.8192 µs / 0.8 = 1.024 µs
    (kernel,) = analyze(unary_chain("Relu"), targets=[target_file(tmp_path, BY_OP)]).targets[0].nodes
    assert kernel.placement.op_efficiency is None and kernel.placement.time_s == pytest.approx(1.024e-6)


def test_a_fused_kernel_runs_at_its_slowest_op_s_figure(tmp_path):
    # Tanh -> Erf -> Add(., x) fused under the elementwise rule: the kernel reads x (4,096 B) and
    # writes y (4,096 B), the rest stays inside: 0.8192 µs on chip, over min(0.5, 0.25) = 3.2768 µs
    report = analyze(
        unary_chain("Tanh", "Erf", "Add"), targets=[target_file(tmp_path, BY_OP)], fusion="elementwise"
    ).targets[0]
    (kernel,) = report.nodes
    assert kernel.op_type == "Tanh+Erf+Add" and kernel.placement.op_efficiency == 0.25
    assert kernel.placement.time_s == pytest.approx(3.2768e-6)
    # Tanh with Add alone: 0.5, 1.6384 µs
    (kernel,) = (
        analyze(unary_chain("Tanh", "Add"), targets=[target_file(tmp_path, BY_OP, "t")], fusion="elementwise")
        .targets[0]
        .nodes
    )
    assert kernel.placement.op_efficiency == 0.5 and kernel.placement.time_s == pytest.approx(1.6384e-6)


def test_a_kernel_of_another_class_ignores_the_elementwise_table(tmp_path):
    # a Softmax is a reduction kernel: the elementwise table's Erf does not apply to it, whatever it runs
    target = parse_target(__import__("pathlib").Path(target_file(tmp_path, BY_OP)))
    assert target.op_efficiency("reduction", ["Softmax", "Erf"]) is None
    assert target.op_efficiency("elementwise", ["Add", "Tanh"]) == 0.5
    assert target.efficiency_of("elementwise") == 0.8


def test_the_op_s_figure_leaves_the_dram_roof_at_the_class_s(tmp_path):
    # DRAM 1 GB/s, on chip 10 GB/s: Erf's x and y come from and go to DRAM, 8,192 B = 8.192 µs at
    # the class's 1.0 (no class figure); on chip 0.8192 µs / 0.25 = 3.2768 µs: DRAM-bound, 8.192 µs
    # (a figure on every roof would give 32.768 µs). At 0.05 the on-chip side is 16.384 µs and wins
    def target(by_op: str, name: str) -> str:
        path = tmp_path / f"{name}.toml"
        path.write_text(
            target_text(
                {
                    "peak_ops_per_s.fp32": 1e12,
                    "dram.bandwidth_bytes_per_s": 1e9,
                    "onchip.size_bytes": 1 << 30,
                    "onchip.bandwidth_bytes_per_s": 1e10,
                },
                figure("elementwise", 1.0) + f"by_op = {{ Erf = {by_op} }}\n",
            )
        )
        return str(path)

    (kernel,) = analyze(unary_chain("Erf"), targets=[target("0.25", "a")]).targets[0].nodes
    assert kernel.placement.bound == "dram" and kernel.placement.time_s == pytest.approx(8.192e-6)
    (kernel,) = analyze(unary_chain("Erf"), targets=[target("0.05", "b")]).targets[0].nodes
    assert kernel.placement.bound == "onchip" and kernel.placement.time_s == pytest.approx(16.384e-6)


def test_without_an_on_chip_level_the_op_s_figure_divides_the_dram_roof(tmp_path):
    # every byte from DRAM: 8,192 B at 1 TB/s = 8.192 ns, over 0.25 = 32.768 ns
    path = tmp_path / "d.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e12}, BY_OP))
    (kernel,) = analyze(unary_chain("Erf"), targets=[str(path)]).targets[0].nodes
    assert kernel.placement.time_s == pytest.approx(32.768e-9)


def test_the_kernels_a_runtime_ran_take_the_op_s_figure_too(tmp_path):
    # the profile's way: kernels given as groups. Erf and Add as one kernel: 0.25 (3.2768 µs);
    # an onnxruntime kernel with no node (a DequantizeLinear copy) by its op: 8,192 B on chip (its
    # input and output fit) at 10 GB/s = 0.8192 µs, over DequantizeLinear's 0.5 = 1.6384 µs
    from types import SimpleNamespace

    from onnxroof.measure.profile_run import unattributed_kernel_s
    from onnxroof.roofline.placement import place_model

    path = target_file(tmp_path, figure("elementwise", 0.8) + "by_op = { Erf = 0.25, DequantizeLinear = 0.5 }\n")
    analysis = analyze(unary_chain("Erf", "Add"), targets=[path])
    report = place_model(analysis.cost_graph, analysis.memory, analysis.targets[0].target, groups=[["erf", "add"]])
    (kernel,) = report.nodes
    assert kernel.placement.op_efficiency == 0.25 and kernel.placement.time_s == pytest.approx(3.2768e-6)
    added = SimpleNamespace(op_type="DequantizeLinear", sizes=(4096, 0, 4096))
    assert unattributed_kernel_s(added, analysis.targets[0].target) == pytest.approx(1.6384e-6)


@pytest.mark.parametrize(
    "table, message",
    [
        ('"fast"', r"'efficiency.elementwise.by_op' must be an inline table of op type = fraction \(\{ Erf = 0.16"),
        ("{}", r"'efficiency.elementwise.by_op' must be an inline table of op type = fraction"),
        (
            "{ Erf = 1.5 }",
            r"'efficiency.elementwise.by_op.Erf' must be a fraction of the roofline in \(0, 1\], not 1.5",
        ),
        ("{ Erf = 0 }", r"'efficiency.elementwise.by_op.Erf' must be a fraction of the roofline in \(0, 1\], not 0"),
        (
            "{ Erf = true }",
            r"'efficiency.elementwise.by_op.Erf' must be a fraction of the roofline in \(0, 1\], not True",
        ),
        (
            '{ "Quantize Linear" = 0.3 }',
            r"'efficiency.elementwise.by_op.Quantize Linear' is not an op type: name it as "
            r"the model does",
        ),
    ],
)
def test_the_by_op_table_is_validated(tmp_path, table, message):
    path = target_file(tmp_path, figure("elementwise", 0.8) + f"by_op = {table}\n", "bad")
    with pytest.raises(UsageError, match=message):
        parse_target(__import__("pathlib").Path(path))


def test_explain_the_json_and_the_listing_show_the_op_s_figure(tmp_path, capsys):
    from onnxroof.report.text.explain import explain_target_lines
    from onnxroof.report.text.targets_list import render_targets_list

    path = target_file(tmp_path, BY_OP)
    analysis = analyze(unary_chain("Erf"), targets=[path])
    lines = explain_target_lines(analysis.targets[0], "erf")
    # the roofs at the efficiency 1: on chip 8,192 B at 10 GB/s = 819.2 ns
    assert any("on chip  8,192 B" in line and "819" in line for line in lines)
    assert any(
        "efficiency 0.25 on compute and on chip (Erf in elementwise kernels on this target), 0.80 on DRAM" in line
        for line in lines
    )
    listing = render_targets_list([analysis.targets[0].target])
    assert "elementwise by op: Erf 25%, Tanh 50%" in listing
    model = tmp_path / "erf.onnx"
    model.write_bytes(unary_chain("Erf").SerializeToString())
    assert main(["summary", str(model), "--target", path, "--format", "json"]) == 0
    entry = json.loads(capsys.readouterr().out)["targets"][0]
    assert entry["efficiency_by_op"] == {"elementwise": {"Erf": 0.25, "Tanh": 0.5}}
    assert entry["nodes"][0]["op_efficiency"] == 0.25 and entry["nodes"][0]["efficiency"] == 0.8


def test_a_constant_the_runtime_computes_every_run_is_classed_by_what_it_computes(tmp_path):
    # x [1, 64] · DequantizeLinear(w int8 [64, 64], scale): onnxroof folds the dequantized weight,
    # onnxruntime (a QDQ MatMul it leaves in float) dequantizes it every run. That kernel reads w
    # (4,096 B) and the scale (4 B) and writes 64 x 64 floats (16,384 B): 20,484 B on chip at 10
    # GB/s = 2.0484 µs, an elementwise kernel at DequantizeLinear's 0.5: 4.0968 µs (its 4,100 B
    # from DRAM at 1 TB/s take 4.1 ns)
    from onnxroof.roofline.placement import place_model

    nodes = [
        helper.make_node("DequantizeLinear", ["w", "scale"], ["w_f"], name="dq"),
        helper.make_node("MatMul", ["x", "w_f"], ["y"], name="mm"),
    ]
    model = make_model(
        nodes,
        [("x", F32, [1, 64])],
        [("y", F32, [1, 64])],
        [("w", np.ones((64, 64), np.int8)), ("scale", np.array(0.1, np.float32))],
    )
    path = target_file(tmp_path, figure("elementwise", 0.8) + "by_op = { DequantizeLinear = 0.5 }\n")
    analysis = analyze(model, targets=[path])
    report = place_model(analysis.cost_graph, analysis.memory, analysis.targets[0].target, groups=[["dq"], ["mm"]])
    dq = next(k for k in report.nodes if k.nodes == ["dq"])
    assert dq.placement.kernel_class == "elementwise" and dq.placement.op_efficiency == 0.5
    assert dq.placement.time_s == pytest.approx(4.0968e-6)
    # by the rules the constant is folded: no kernel runs it
    assert [k.nodes for k in analysis.targets[0].nodes if "dq" in k.nodes and k.placement.time_s] == []
