"""The roofline's decisions and what a target report adds up (cost-model.md section 5), on small
targets written here: the ridge, the overhead roof, the on-chip roof, a target without on-chip
memory, spilled traffic, roof fallbacks, energy, time shares and utilization. Written for the
survivors of a mutmut run over roofline.py (docs/testing.md, "Mutation testing")."""

from __future__ import annotations

import pytest
from conftest import make_model, zeros
from models import interleaved_branches_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.roofline.placement import roofline

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16
PEAK, DRAM_BW = 1e12, 100e9  # the test targets: 1 TFLOP/s fp32, 100 GB/s DRAM; ridge 10 FLOP/B


def write_target(path, *, onchip_bytes=None, onchip_bw=None, onchip_pj=None, dram_pj=None, op_pj=None, overhead_s=None):
    """A target TOML with an fp32 roof only; every other figure optional. ``op_pj``: (mul, add)."""

    def figure(key, value):
        return f'[{key}]\nvalue = {value!r}\ntag = "estimate"\nsource = "test"\n\n'

    text = f'schema = "onnxroof-target/1"\nname = "{path.stem}"\ndescription = "a test target"\n\n'
    text += figure("peak_ops_per_s.fp32", PEAK) + figure("dram.bandwidth_bytes_per_s", DRAM_BW)
    for key, value in (
        ("onchip.size_bytes", onchip_bytes),
        ("onchip.bandwidth_bytes_per_s", onchip_bw),
        ("onchip.energy_pj_per_byte", onchip_pj),
        ("dram.energy_pj_per_byte", dram_pj),
        ("node_overhead_s", overhead_s),
    ):
        if value is not None:
            text += figure(key, value)
    if op_pj is not None:
        text += figure("energy.mul_pj.fp32", op_pj[0]) + figure("energy.add_pj.fp32", op_pj[1])
    path.write_text(text, encoding="utf-8")
    return str(path)


def relu_chain(width=1_000, dtype=F32):
    # x [1, width] -> Relu A -> a -> Relu B -> y: each Relu 1 FLOP per element, width x 4 B in and out
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["y"], name="B")]
    return make_model(nodes, [("x", dtype, [1, width])], [("y", dtype, [1, width])])


def place(model, target, **options):
    (report,) = onnxroof.analyze(model, targets=[target], **options).targets
    return report


# roofline(): the decision


def test_a_kernel_exactly_at_the_ridge_is_compute_bound():
    # ridge = 4e9 / 1e9 = 4 FLOP/B; 4,000 FLOPs over 1,000 B sits on it: both roofs take 1 us,
    # and the cost model says compute-bound when I >= ridge
    point = roofline(flops=4_000, dram_bytes=1_000, peak_flops_per_s=4e9, dram_bytes_per_s=1e9)
    assert point.compute_s == point.memory_s == pytest.approx(1e-6)
    assert point.bound == "compute"
    # one FLOP fewer is below the ridge
    assert roofline(flops=3_999, dram_bytes=1_000, peak_flops_per_s=4e9, dram_bytes_per_s=1e9).bound == "dram"


def test_a_node_with_no_work_is_bound_by_nothing_and_takes_no_time():
    point = roofline(flops=0, dram_bytes=0, peak_flops_per_s=PEAK, dram_bytes_per_s=DRAM_BW)
    assert point.bound == "none" and point.time_s == 0
    assert point.intensity is None and point.attainable_flops_per_s == PEAK  # nothing caps it


def test_a_launch_overhead_above_the_roofs_makes_a_node_overhead_bound():
    # 1,000 FLOPs / 1e12 = 1 ns; 1,000 B / 100e9 = 10 ns; a 1 us launch is larger than both:
    # time = 10 ns + 1 us, and the overhead is what bounds it
    point = roofline(1_000, 1_000, PEAK, DRAM_BW, overhead_s=1e-6)
    assert point.bound == "overhead" and point.overhead_s == 1e-6
    assert point.time_s == pytest.approx(1e-8 + 1e-6)
    # 10^6 B take 10 us: the same overhead is now below the DRAM roof, which bounds the node
    point = roofline(1_000, 10**6, PEAK, DRAM_BW, overhead_s=1e-6)
    assert point.bound == "dram" and point.time_s == pytest.approx(1e-5 + 1e-6)


def test_the_on_chip_roof_time_is_reported():
    # 10^6 B at 450 GB/s on chip: 2.22 us, above 1,000 FLOPs' 1 ns; no DRAM bytes
    point = roofline(1_000, 0, PEAK, DRAM_BW, onchip_bytes=10**6, onchip_bytes_per_s=450e9)
    assert point.onchip_s == pytest.approx(1e6 / 450e9) and point.bound == "onchip"


# place_model(): what each node reads from DRAM on a target


def test_without_an_on_chip_figure_every_activation_goes_through_dram(tmp_path):
    target = write_target(tmp_path / "no-sram.toml")
    report = place(relu_chain(), target)
    # no on-chip memory: each Relu reads 4,000 B and writes 4,000 B from and to DRAM; nothing
    # is on chip and nothing "spills"; 8,000 B / 100 GB/s = 80 ns is above 1,000 FLOPs' 1 ns
    assert [n.placement.dram_bytes for n in report.nodes] == [8_000, 8_000]
    assert [n.placement.onchip_bytes for n in report.nodes] == [0, 0]
    assert [n.spill_bytes for n in report.nodes] == [0, 0] and report.spilled == [] and report.spill_bytes == 0
    assert not report.activations_on_chip
    assert report.latency_s == pytest.approx(2 * 8_000 / DRAM_BW)
    assert any("on-chip" in note and "DRAM" in note for note in report.notes)


def test_activations_that_fit_on_chip_leave_only_the_model_input_and_output_in_dram(tmp_path):
    target = write_target(tmp_path / "sram.toml", onchip_bytes=10**6)
    report = place(relu_chain(), target)
    # 10^6 B hold every activation: A reads x (4,000 B, the model's input) from DRAM, B writes y
    # (the model's output) to it; a stays on chip. Each node still moves 8,000 B on chip.
    assert report.activations_on_chip
    assert [n.placement.dram_bytes for n in report.nodes] == [4_000, 4_000]
    assert [n.placement.onchip_bytes for n in report.nodes] == [8_000, 8_000]
    assert report.model_point.dram_bytes == 8_000


def test_spilled_traffic_is_part_of_a_nodes_dram_bytes(tmp_path):
    # interleaved branches (A1, B1, A2, B2, join): x 40 B, la and lb 4,000 B, sa and sb 4 B, y 4 B;
    # weights wa1, wb1 10 x 1000 floats (40,000 B), wa2, wb2 1000 x 1 (4,000 B). With 6,000 B on
    # chip: at B1 x + la + lb = 8,040 B do not fit and la (not used by B1) is written out (4,000);
    # A2 reads la back (4,000) and writes sa while lb is resident (8,004 B): lb is written out
    # (4,000); B2 reads lb back (4,000). DRAM per node = weights + model input / output + spills.
    target = write_target(tmp_path / "sram-6k.toml", onchip_bytes=6_000)
    report = place(interleaved_branches_model(), target)
    dram = {n.name: n.placement.dram_bytes for n in report.nodes}
    assert dram == {"A1": 40_000 + 40, "B1": 40_000 + 40 + 4_000, "A2": 4_000 + 8_000, "B2": 4_000 + 4_000, "join": 4}
    assert report.spill_bytes == 16_000 and sorted(report.spilled) == ["la", "lb"]


def test_nodes_that_do_not_fit_on_chip_are_stated(tmp_path):
    # 500 B on chip: each Relu needs its 4,000 B input and 4,000 B output at once, so both stream
    target = write_target(tmp_path / "sram-500.toml", onchip_bytes=500)
    report = place(relu_chain(), target)
    assert any("2 node(s)" in note and "500 B" in note for note in report.notes)


def test_a_slow_on_chip_memory_is_a_roof_of_the_target(tmp_path):
    # on chip 1 GB/s: each Relu moves 8,000 B on chip (8 us) but only 4,000 B from DRAM (40 ns)
    # and 1,000 FLOPs (1 ns): both are on-chip-bound, and so is the whole model (16,000 B, 16 us)
    target = write_target(tmp_path / "slow-sram.toml", onchip_bytes=10**6, onchip_bw=1e9)
    report = place(relu_chain(), target)
    assert [n.placement.bound for n in report.nodes] == ["onchip", "onchip"]
    assert [n.placement.time_s for n in report.nodes] == pytest.approx([8e-6, 8e-6])
    assert report.model_point.bound == "onchip" and report.model_point.onchip_s == pytest.approx(16e-6)
    assert report.latency_s == pytest.approx(16e-6)


def test_energy_adds_the_compute_on_chip_and_dram_parts(tmp_path):
    # 2 pJ per op (mul 1, add 3: half each), 2 pJ per on-chip byte, 10 pJ per DRAM byte. Per Relu:
    # 1,000 ops x 2 = 2 nJ; 8,000 B on chip x 2 = 16 nJ; 4,000 B of DRAM x 10 = 40 nJ; two Relus.
    target = write_target(tmp_path / "energy.toml", onchip_bytes=10**6, onchip_pj=2.0, dram_pj=10.0, op_pj=(1.0, 3.0))
    report = place(relu_chain(), target)
    assert report.nodes[0].energy_j == pytest.approx({"compute": 2e-9, "onchip": 16e-9, "dram": 40e-9})
    assert report.energy_split_j == pytest.approx({"compute": 4e-9, "onchip": 32e-9, "dram": 80e-9})
    assert report.energy_j == pytest.approx(116e-9)
    assert report.edp_js == pytest.approx(116e-9 * report.latency_s)


def test_a_target_without_energy_figures_reports_no_energy(tmp_path):
    report = place(relu_chain(), write_target(tmp_path / "no-energy.toml", onchip_bytes=10**6))
    assert report.energy_j is None and report.edp_js is None
    assert any("energy" in note for note in report.notes)


def test_nodes_in_a_type_the_target_has_no_roof_for_fall_back_and_are_counted(tmp_path):
    # int8 re-costing on an fp32-only target: both Relus compute (100 ops each) and fall back to
    # fp32; the Transpose computes nothing, so it is not counted as a fallback
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="A"),
        helper.make_node("Transpose", ["a"], ["b"], name="T"),
        helper.make_node("Relu", ["b"], ["y"], name="B"),
    ]
    model = make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [100, 1])])
    report = place(model, write_target(tmp_path / "fp32-only.toml", onchip_bytes=10**6), dtype="int8")
    assert {n.placement.roof for n in report.nodes} == {"fp32"}
    (note,) = [note for note in report.notes if "roof" in note]
    assert note.startswith("2 node(s) in int8 run on the fp32 roof")


def test_a_forecast_target_timing_most_flops_on_a_roof_of_another_type_gives_a_bound(tmp_path):
    # a forecast target (a measured GEMM efficiency) with an int8 roof only. x[1,100] @ w[100,100]:
    # 20,000 FLOPs in fp32 and a Relu's 100: all 20,100 FLOPs are fp32, which it has no roof for, so
    # they run on the int8 roof (100 %): a run its compiler would refuse, not one its measurements
    # cover, so a bound, said so. Re-costed in int8 (--dtype int8), the same model is its forecast.
    path = tmp_path / "int8-only.toml"
    path.write_text(
        'schema = "onnxroof-target/1"\nname = "int8-only"\ndescription = "a test target"\n'
        '[peak_ops_per_s.int8]\nvalue = 1e12\ntag = "estimate"\nsource = "test"\n'
        '[dram.bandwidth_bytes_per_s]\nvalue = 1e11\ntag = "estimate"\nsource = "test"\n'
        '[efficiency.gemm]\nvalue = 0.5\ntag = "measured"\nsource = "test"\n'
    )
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"])]
    model = make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])], [("w", zeros(100, 100))])
    fp32 = onnxroof.analyze(model, targets=[str(path)]).targets[0]
    assert fp32.target.latency_kind == "forecast"
    assert fp32.fallen_roof == ("fp32", "int8", 1.0) and fp32.latency_kind == "bound" and fp32.band is None
    assert fp32.bound_reason == (
        "100% of the FLOPs are fp32, which the target cannot run (its int8 roof stands in): a figure for a model "
        "its compiler would refuse or leave to a host"
    )
    int8 = onnxroof.analyze(model, targets=[str(path)], dtype="int8").targets[0]
    assert int8.fallen_roof is None and int8.latency_kind == "forecast" and int8.bound_reason == ""


def test_the_model_point_blends_the_roofs_its_flops_run_on():
    # myriad-x: fp32 44.8 GFLOP/s (SHAVEs), fp16 1.09e12 (Neural Compute Engine + SHAVEs). A 1,000-element
    # fp32 Relu (1,000 FLOPs) beside a 3,000-element fp16 Relu (3,000 FLOPs): compute time
    # 1,000 / 44.8e9 + 3,000 / 1.09e12 = 22.32 ns + 2.752 ns = 25.074 ns; the model's peak is 4,000 FLOPs
    # over that: 159.5e9. Most FLOPs run on fp16, so that is the roof it is named after.
    nodes = [
        helper.make_node("Relu", ["x32"], ["y32"], name="R32"),
        helper.make_node("Relu", ["x16"], ["y16"], name="R16"),
    ]
    model = make_model(
        nodes,
        [("x32", F32, [1, 1_000]), ("x16", F16, [1, 3_000])],
        [("y32", F32, [1, 1_000]), ("y16", F16, [1, 3_000])],
    )
    point = place(model, "myriad-x").model_point
    assert point.roof == "fp16"
    assert point.compute_s == pytest.approx(1_000 / 44.8e9 + 3_000 / 1.09e12)
    assert point.peak_flops_per_s == pytest.approx(159.5e9, rel=1e-3)


def test_an_int8_model_point_sits_on_the_int8_roof():
    # every node re-costed in int8 on myriad-x (1.18e12 op/s int8: the Neural Compute Engine's ~1 TOPS
    # + the SHAVEs' 179.2e9): the model point's roof and peak
    point = place(relu_chain(), "myriad-x", dtype="int8").model_point
    assert point.roof == "int8" and point.peak_flops_per_s == pytest.approx(1.18e12)


def test_a_model_with_nothing_to_run_takes_no_time():
    # no nodes at all (the input is the output): no latency, no throughput, no utilization; the
    # model point has no FLOPs and sits on the fp32 roof by default
    report = place(make_model([], [("x", F32, [4])], [("x", F32, [4])]), "myriad-x")
    assert report.latency_s == 0 and report.throughput_per_s == 0 and report.utilization == 0
    assert report.time_share == {}
    assert report.model_point.roof == "fp32" and report.model_point.peak_flops_per_s == 44.8e9
    assert report.model_point.bound == "none"


def test_time_share_throughput_and_utilization_of_a_memory_bound_chain(tmp_path):
    # without on-chip memory each Relu takes 8,000 B / 100 GB/s = 80 ns, memory-bound: all the
    # latency (160 ns) is memory time; 1 / 160 ns = 6.25 M inferences/s at batch 1;
    # utilization = 2,000 FLOPs / (160 ns x 1e12 FLOP/s) = 2,000 / 160,000 = 1.25 %
    report = place(relu_chain(), write_target(tmp_path / "no-sram.toml"))
    assert report.time_share == pytest.approx({"dram": 1.0})
    assert report.throughput_per_s == pytest.approx(6.25e6)
    assert report.utilization == pytest.approx(0.0125)


def test_time_share_splits_the_latency_between_bounds(tmp_path):
    # a 1 us launch overhead per node on the no-on-chip target: Relu A (80 ns of DRAM) is overhead-bound;
    # a MatMul [1,1000] x [1000,1000] reads 4 MB of weights (40 us) and is memory-bound
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="A"), helper.make_node("MatMul", ["a", "w"], ["y"], name="M")]
    model = make_model(nodes, [("x", F32, [1, 1_000])], [("y", F32, [1, 1_000])], [("w", zeros(1_000, 1_000))])
    report = place(model, write_target(tmp_path / "launch.toml", overhead_s=1e-6))
    relu_s = 8_000 / DRAM_BW + 1e-6
    matmul_s = (4_000_000 + 4_000 + 4_000) / DRAM_BW + 1e-6
    assert [n.placement.bound for n in report.nodes] == ["overhead", "dram"]
    assert report.time_share == pytest.approx(
        {"overhead": relu_s / (relu_s + matmul_s), "dram": matmul_s / (relu_s + matmul_s)}
    )


def test_the_report_keeps_the_type_and_batch_it_was_costed_at():
    report = place(relu_chain(), "myriad-x", dtype="fp16", batch=4)
    assert report.dtype == "fp16" and report.batch == 4
    # the node placements carry the type the nodes compute in
    assert {n.dtype for n in report.nodes} == {"float16"}


def test_an_uncounted_node_does_not_stop_the_placement_of_the_next_ones():
    # an unsupported op first in node order, then a Relu: the Relu is still placed
    nodes = [
        helper.make_node("Foo", ["x"], ["f"], name="foo", domain="x.y"),
        helper.make_node("Relu", ["x"], ["r"], name="R"),
    ]
    model = make_model(nodes, [("x", F32, [1, 100])], [("f", F32, None), ("r", F32, [1, 100])])
    model.opset_import.append(helper.make_opsetid("x.y", 1))
    assert [n.name for n in place(model, "myriad-x").nodes] == ["R"]


def test_top_nodes_are_the_slowest_first(tmp_path):
    # six 1,000-wide Relus (80 ns each without on-chip memory) and one MatMul reading 4 MB of
    # weights (40 us): the MatMul is the slowest; the default lists five
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"R{i}") for i in range(6)]
    nodes.append(helper.make_node("MatMul", ["t6", "w"], ["y"], name="M"))
    model = make_model(nodes, [("t0", F32, [1, 1_000])], [("y", F32, [1, 1_000])], [("w", zeros(1_000, 1_000))])
    report = place(model, write_target(tmp_path / "no-sram.toml"))
    assert [n.name for n in report.top_nodes(1)] == ["M"]
    top = report.top_nodes()
    assert len(top) == 5 and top[0].name == "M"
    times = [n.placement.time_s for n in top]
    assert times == sorted(times, reverse=True)


def test_a_data_movement_node_on_chip_is_still_a_launch(tmp_path):
    # Relu -> Transpose -> Relu with 10^6 B on chip and a 1 us launch: the Transpose computes
    # nothing and reads and writes only on-chip activations (0 DRAM bytes), but it copies 400 B,
    # so it is a kernel like the others: three launches, 3 us of overhead
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="A"),
        helper.make_node("Transpose", ["a"], ["b"], name="T"),
        helper.make_node("Relu", ["b"], ["y"], name="B"),
    ]
    model = make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [100, 1])])
    report = place(model, write_target(tmp_path / "launch-sram.toml", onchip_bytes=10**6, overhead_s=1e-6))
    transpose = next(n for n in report.nodes if n.name == "T")
    assert transpose.placement.flops == 0 and transpose.placement.dram_bytes == 0
    assert transpose.placement.overhead_s == 1e-6 and transpose.placement.bound == "overhead"
    assert sum(n.placement.overhead_s for n in report.nodes) == pytest.approx(3e-6)
