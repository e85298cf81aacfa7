"""Roofline placement, latency and energy: the reference exercise of cost-model.md section 5."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.cli.app import main
from onnxroof.core.examples import build_example
from onnxroof.roofline.placement import roofline

PEAK, BANDWIDTH = 44.8e9, 12.8e9  # myriad-x: 16 x 4 lanes x 0.7 GHz; 2 x 1.6 GHz x 4 B


def test_the_roofline_decision():
    # below the ridge (3.5 FLOP/B) a node is DRAM-bound: attainable = I x bandwidth
    point = roofline(flops=1_000, dram_bytes=1_000, peak_flops_per_s=PEAK, dram_bytes_per_s=BANDWIDTH)
    assert point.bound == "dram" and point.attainable_flops_per_s == pytest.approx(12.8e9)
    assert point.time_s == pytest.approx(1_000 / 12.8e9)
    # above it, compute-bound at the peak
    point = roofline(flops=10_000, dram_bytes=1_000, peak_flops_per_s=PEAK, dram_bytes_per_s=BANDWIDTH)
    assert point.bound == "compute" and point.attainable_flops_per_s == PEAK
    assert point.time_s == pytest.approx(10_000 / 44.8e9) and point.percent_of_peak == pytest.approx(100)
    # a second roof for on-chip bandwidth
    point = roofline(1_000, 0, PEAK, BANDWIDTH, onchip_bytes=10**6, onchip_bytes_per_s=450e9)
    assert point.bound == "onchip" and point.time_s == pytest.approx(1e6 / 450e9)


def test_shallownet_on_myriad_x_is_memory_bound():
    report = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"]).targets[0]
    point = report.model_point
    # DRAM traffic: the weights (1,314,344 B) plus the input (12,288 B) and the output (40 B);
    # the activations fit in the 2.5 MB on chip
    assert point.dram_bytes == 1_314_344 + 12_288 + 40
    assert point.flops == 2_457_650  # MAC-FLOPs 2,424,832 + ReLU 32,768 + Softmax 50
    # "about 1.84 FLOP/byte (weights dominate the traffic)": 2,457,650 / 1,326,672 = 1.85
    assert point.intensity == pytest.approx(1.84, rel=0.01)
    assert point.bound == "dram"
    assert point.attainable_flops_per_s == pytest.approx(1.8525 * 12.8e9, rel=1e-3)  # about 23.6 GFLOP/s
    assert point.time_s == pytest.approx(1_326_672 / 12.8e9) == pytest.approx(0.1e-3, rel=0.05)  # about 0.1 ms


def test_minigooglenet_on_myriad_x_is_compute_bound():
    analysis = onnxroof.analyze(build_example("minigooglenet"), targets=["myriad-x"])
    report = analysis.targets[0]
    point = report.model_point
    weight_bytes = 6_625_000  # 1,656,250 fp32 parameters: 6.32 MiB ("about 6.3 MB")
    assert analysis.totals.param_bytes == weight_bytes
    # 469,195,840 MAC-FLOPs / 6,625,000 B = 70.8 per weight byte; the reference's "about 74"
    # divides by 6.32 as if it were 10^6 B. Either way far above the 3.5 ridge.
    # (by hand: 469,195,840 / 6,625,000 = 70.82)
    assert analysis.totals.mac_flops == 469_195_840
    assert analysis.totals.mac_flops / analysis.totals.param_bytes == pytest.approx(70.8, abs=0.05)
    assert point.bound == "compute" and point.intensity > 3.5
    # latency and frame rate follow from 44.8 GFLOP/s: 470,738,178 FLOPs -> 10.5 ms, 95 frames/s
    assert point.time_s == pytest.approx(470_738_178 / 44.8e9)
    assert report.latency_s == pytest.approx(point.time_s, rel=0.01)
    assert report.throughput_per_s == pytest.approx(44.8e9 / 470_738_178, rel=0.01)


def test_energy_and_the_int8_what_if():
    analysis = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"])
    fp32 = analysis.targets[0]
    int8 = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"], dtype="int8").targets[0]
    # weights read once: 1,314,344 B / 4 B x 640 pJ = 0.2103 mJ (45 nm table: 640 pJ per 32-bit
    # access is 160 pJ/B); the node records say which bytes are weights
    dense = next(n for n in fp32.nodes if n.op_type == "Gemm")
    conv = next(n for n in fp32.nodes if n.op_type == "Conv")
    assert analysis.totals.weight_bytes_read == 1_310_760 + 3_584
    assert fp32.target.dram_pj_per_byte.value == 640 / 4
    weight_energy = analysis.totals.weight_bytes_read * fp32.target.dram_pj_per_byte.value * 1e-12
    assert weight_energy == pytest.approx(0.21e-3, rel=0.01)
    assert dense.energy_j["dram"] == pytest.approx(1_310_760 * 160e-12)  # the Gemm reads only its weights
    assert fp32.energy_split_j["dram"] == pytest.approx((1_314_344 + 12_288 + 40) * 160e-12)
    assert dense.placement.dram_bytes == 1_310_760 and conv.placement.dram_bytes == 3_584 + 12_288
    # int8: a quarter of the bytes, and per operation (0.2 + 0.03) / 2 pJ instead of (3.7 + 0.9) / 2
    assert int8.energy_split_j["dram"] == pytest.approx(fp32.energy_split_j["dram"] / 4)
    assert fp32.energy_split_j["compute"] / int8.energy_split_j["compute"] == pytest.approx(4.6 / 0.23)
    assert fp32.energy_split_j["compute"] == pytest.approx(2_457_650 * 2.3e-12)
    assert fp32.edp_js == pytest.approx(fp32.energy_j * fp32.latency_s)


def test_batch_amortises_the_weights():
    one = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"]).targets[0]
    eight = onnxroof.analyze(build_example("shallownet"), targets=["myriad-x"], batch=8).targets[0]
    # weights are read once per run: the batch-8 model point moves 1,314,344 + 8 x (12,288 + 40) B
    assert eight.model_point.dram_bytes == 1_314_344 + 8 * (12_288 + 40)
    assert eight.throughput_per_s > one.throughput_per_s


@pytest.mark.parametrize("seed", range(25))
def test_node_times_bound_the_model_point(seed):
    """Property over random MatMul/elementwise chains, batches and dtypes: the sum of node times is
    never below the whole-model point's time, and each node's time is at least its compute time and
    its memory time."""
    rng = random.Random(seed)
    input_width = width = rng.choice([8, 64, 512])
    nodes, initializers, x = [], [], "x"
    for i in range(rng.randint(2, 12)):
        kind = rng.choice(["MatMul", "Relu", "Add", "Softmax"])
        if kind == "MatMul":
            out_width = rng.choice([8, 64, 512, 2048])
            initializers.append((f"w{i}", zeros(width, out_width)))
            nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"t{i}"]))
            width = out_width
        else:
            nodes.append(helper.make_node(kind, [x, x] if kind == "Add" else [x], [f"t{i}"]))
        x = f"t{i}"
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, [rng.choice([1, 4, 64]), input_width])],
        [(x, TensorProto.FLOAT, None)],
        initializers,
    )
    dtype = rng.choice(["model", "fp16", "int8"])
    report = onnxroof.analyze(model, targets=["myriad-x"], dtype=dtype).targets[0]
    assert report.latency_s >= report.model_point.time_s * (1 - 1e-12)
    for node in report.nodes:
        point = node.placement
        assert point.time_s >= point.compute_s and point.time_s >= point.memory_s


def test_summary_json_targets_contract(capsys):
    assert main(["summary", "--example", "shallownet", "--format", "json", "--target", "myriad-x"]) == 0
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert {
        "name",
        "dtype",
        "batch",
        "latency_s",
        "throughput_per_s",
        "energy_j",
        "energy_split",
        "model_point",
        "nodes",
    } <= set(target)
    assert {"intensity", "attainable_flops_per_s", "latency_s", "bound"} <= set(target["model_point"])
    assert {"name", "dram_bytes", "intensity", "attainable_flops_per_s", "time_s", "bound"} <= set(target["nodes"][0])
    assert target["latency_s"] == pytest.approx(sum(n["time_s"] for n in target["nodes"]))


def test_unknown_target_suggests_close_names(capsys):
    assert main(["summary", "--example", "shallownet", "--target", "myriad"]) == 2
    err = capsys.readouterr().err
    assert "did you mean myriad-x" in err and err.count("\n") == 1


def test_cpu_targets_charge_a_dispatch_overhead_per_working_kernel(tmp_path):
    # ShallowNet: Conv, Relu, Flatten (a view: nothing runs), Gemm, Softmax -> 4 dispatches one
    # kernel per node; raspberry-pi-5 fuses the Relu into the Conv (epilogue): 3 dispatches.
    # It charges 10 us each, so the same target without the figure is 40 us (30 us) faster.
    from pathlib import Path

    from onnxroof.roofline.targets import load_target

    text = Path(load_target("raspberry-pi-5").path).read_text()
    assert "[node_overhead_s]\nvalue = 10e-6" in text
    bare = tmp_path / "pi-without-overhead.toml"
    bare.write_text(text[: text.index("[node_overhead_s]")])
    for fusion, dispatches in (("none", 4), (None, 3)):
        analysis = onnxroof.analyze(build_example("shallownet"), targets=["raspberry-pi-5", str(bare)], fusion=fusion)
        with_overhead, without = analysis.targets
        assert with_overhead.latency_s - without.latency_s == pytest.approx(dispatches * 10e-6, rel=1e-9)


# --- parallelism: the share of a target's parallel units a kernel's work fills ----------------


def _target(tmp_path, parallel: str = "", roof: str = "fp16", peak: float = 100e12) -> str:
    """A target file whose DRAM is so fast that every kernel here is compute- (or parallelism-)
    bound, with the [parallel] section given (none: no limit), no launch cost and no fusion."""
    path = tmp_path / "units.toml"
    figure = 'tag = "estimate"\nsource = "a test figure"'
    path.write_text(
        f'schema = "onnxroof-target/1"\nname = "units"\ndescription = "test target"\n'
        f"[peak_ops_per_s.{roof}]\nvalue = {peak}\n{figure}\n"
        f"[dram.bandwidth_bytes_per_s]\nvalue = 1e18\n{figure}\n" + parallel
    )
    return str(path)


def _parallel(kind: str, units: int, rows: int, cols: int, roof: str = "fp16") -> str:
    figure = 'tag = "estimate"\nsource = "a test figure"'
    return (
        f'[parallel]\nkind = "{kind}"\n[parallel.units]\nvalue = {units}\n{figure}\n'
        f"[parallel.tile_rows.{roof}]\nvalue = {rows}\n{figure}\n[parallel.tile_cols.{roof}]\nvalue = {cols}\n{figure}\n"
    )


def _matmul(rows: int, depth: int, cols: int, batch: int | None = None):
    """A MatMul of rows x depth by depth x cols (``batch`` of them when given), fp32 activations."""
    lead = [batch] if batch else []
    return make_model(
        [helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")],
        [("a", TensorProto.FLOAT, lead + [rows, depth])],
        [("y", TensorProto.FLOAT, lead + [rows, cols])],
        [("w", zeros(*(lead + [depth, cols])))],
    )


def _only_kernel(model, target, dtype="fp16"):
    report = onnxroof.analyze(model, targets=[target], dtype=dtype, fusion="none").targets[0]
    (kernel,) = [k for k in report.nodes if k.placement.flops]
    return kernel.placement


def test_a_32_deep_convolution_fills_an_eighth_of_a_256x256_systolic_array(tmp_path):
    # Conv 32 -> 256 channels, 1x1, on 16x16: depth Cin x kh x kw = 32 x 1 x 1 = 32 rows of the
    # 256-high array, 256 output channels fill its 256 columns: 32/256 x 256/256 = 1/8.
    # MACs = 16 x 16 x 256 x 32 = 2,097,152; FLOPs = 4,194,304 at 92e12 x 1/8 = 11.5e12 FLOP/s
    # -> 4,194,304 / 11.5e12 = 364.7 ns.
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
        [("x", TensorProto.FLOAT, [1, 32, 16, 16])],
        [("y", TensorProto.FLOAT, [1, 256, 16, 16])],
        [("w", zeros(256, 32, 1, 1))],
    )
    target = _target(tmp_path, _parallel("systolic", 1, 256, 256, "int8"), roof="int8", peak=92e12)
    point = _only_kernel(model, target, dtype="int8")
    assert point.parallel_fraction == 1 / 8
    assert point.flops == 4_194_304
    assert point.compute_s == pytest.approx(4_194_304 / 11.5e12, rel=1e-12)
    assert point.attainable_flops_per_s == pytest.approx(92e12 / 8, rel=1e-12)
    assert point.bound == "parallelism"
    # the bundled TPU v1 states the same array: the same eighth (its DDR3 makes it DRAM-bound)
    assert _only_kernel(model, "tpu-v1", dtype="int8").parallel_fraction == 1 / 8


def test_133_equal_tiles_on_132_units_take_two_waves(tmp_path):
    # 8,512 x 8 outputs in 64 x 8 tiles: 8,512 / 64 = 133 tiles over 132 units -> 2 waves of 132
    # slots; the work fills 133 of the 264: 133/264. 132 tiles (8,448 rows) fill one wave exactly.
    target = _target(tmp_path, _parallel("tiles", 132, 64, 8))
    point = _only_kernel(_matmul(8_512, 64, 8), target)
    assert point.parallel_fraction == pytest.approx(133 / 264, rel=1e-15)
    assert point.bound == "parallelism"
    # FLOPs = 2 x 8,512 x 64 x 8 = 8,716,288 at 100e12 x 133/264
    assert point.compute_s == pytest.approx(8_716_288 / (100e12 * 133 / 264), rel=1e-12)
    full = _only_kernel(_matmul(8_448, 64, 8), target)
    assert full.parallel_fraction == 1.0 and full.bound == "compute"
    # a batched MatMul splits the same way: 133 products of 64 x 8 are 133 tiles
    assert _only_kernel(_matmul(64, 64, 8, batch=133), target).parallel_fraction == pytest.approx(133 / 264, rel=1e-15)


def test_a_one_row_gemm_fills_one_row_of_the_tile(tmp_path):
    # 1 x 4096 x 4096 on 64 units of 64 x 64 tiles: 4096 / 64 = 64 column tiles, one per unit,
    # one wave; each tile has 1 of its 64 rows: 1 x 4096 / (64 units x 64 x 64) = 1/64.
    target = _target(tmp_path, _parallel("tiles", 64, 64, 64))
    assert _only_kernel(_matmul(1, 4096, 4096), target).parallel_fraction == 1 / 64
    # 1 x 4096 x 8 on 4 units of 64 x 8: one output tile, so the runtime splits the 4096-deep
    # reduction over the 4 units (split-K, 1024 each): one wave, still 1 row of 64: 1/64
    assert (
        _only_kernel(_matmul(1, 4096, 8), _target(tmp_path, _parallel("tiles", 4, 64, 8))).parallel_fraction == 1 / 64
    )
    # on the bundled H100 (132 SMs, 64 x 8 tiles): 4096 / 8 = 512 tiles -> ceil(512/132) = 4 waves
    # of 132 x 64 x 8 slots; 4096 / (4 x 132 x 512) = 1/66. Still DRAM-bound: 2 x 4096^2 fp16 B
    # = 33.6 MB / 3.35 TB/s = 10.0 us against 33.6 MFLOP / (989.5e12 / 66) = 2.2 us.
    point = _only_kernel(_matmul(1, 4096, 4096), "h100-sxm")
    assert point.parallel_fraction == pytest.approx(1 / 66, rel=1e-15)
    assert point.bound == "dram"


def test_a_target_without_parallel_figures_is_the_plain_roofline(tmp_path):
    # the 133-tile MatMul without [parallel]: FLOPs / peak, compute-bound, nothing else
    point = _only_kernel(_matmul(8_512, 64, 8), _target(tmp_path))
    assert point.parallel_fraction == 1.0
    assert point.compute_s == 8_716_288 / 100e12 and point.bound == "compute"


def test_grouped_convolutions_and_other_roofs_are_not_limited(tmp_path):
    # a depthwise conv (group = 32) is not modelled; nor is work on a roof the tiles do not name
    depthwise = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=32)],
        [("x", TensorProto.FLOAT, [1, 32, 16, 16])],
        [("y", TensorProto.FLOAT, [1, 32, 16, 16])],
        [("w", zeros(32, 1, 3, 3))],
    )
    depthwise.graph.node[0].attribute.append(helper.make_attribute("pads", [1, 1, 1, 1]))
    target = _target(tmp_path, _parallel("tiles", 132, 64, 8))
    assert _only_kernel(depthwise, target).parallel_fraction == 1.0
    other_roof = _target(tmp_path, _parallel("tiles", 132, 64, 8, roof="int8"))
    assert _only_kernel(_matmul(8_512, 64, 8), other_roof).parallel_fraction == 1.0


def _linear(lead: int, depth: int, cols: int):
    """[lead, 1, depth] x W [depth, cols]: one matrix for every leading index (a decode step's
    Linear layer at batch ``lead``)."""
    return make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [("x", TensorProto.FLOAT, [lead, 1, depth])],
        [("y", TensorProto.FLOAT, [lead, 1, cols])],
        [("w", zeros(depth, cols))],
    )


def test_a_shared_weight_over_leading_dims_is_one_gemm_and_a_nearly_full_last_wave_is_compute_bound(tmp_path):
    target = _target(tmp_path, _parallel("tiles", 128, 64, 8))
    # runtimes fold the 1,024 leading rows into one 1,024 x 512 GEMM: 1,024 / 64 x 512 / 8 = 16 x 64
    # = 1,024 tiles over 128 units, 8 full waves: fill 1 (not the 1/64 of 1,024 one-row products)
    point = _only_kernel(_linear(1024, 64, 512), target)
    assert point.parallel_fraction == 1.0 and point.bound == "compute"
    # 1,016 rows: still 16 row tiles (the last holds 56 of 64 rows), 8 waves; the work fills
    # 1,016 x 512 of 1,024 x 512 slots = 0.992, under a tenth of the compute time idle: compute-bound
    point = _only_kernel(_linear(1016, 64, 512), target)
    assert point.parallel_fraction == pytest.approx(1016 / 1024, rel=1e-12)
    assert point.bound == "compute"


def test_a_packed_stored_weight_is_shared_by_every_leading_row_too(tmp_path):
    # MatMulNBits (4-bit, blocks of 32) with K = 64, N = 512: its stored B is packed as
    # [N, K / 32, 32 x 4 / 8] = [512, 2, 16] bytes, whose leading 512 is no batch. x [1024, 1, 64]
    # is one 1,024 x 512 GEMM as above: 1,024 tiles of 64 x 8 over 128 units, 8 full waves, fill 1
    # (taking the packed shape for batch dims gave 1,024 one-row products: 1/64)
    model = make_model(
        [
            helper.make_node(
                "MatMulNBits",
                ["x", "b", "scales"],
                ["y"],
                name="mm",
                domain="com.microsoft",
                K=64,
                N=512,
                bits=4,
                block_size=32,
            )
        ],
        [("x", TensorProto.FLOAT, [1024, 1, 64])],
        [("y", TensorProto.FLOAT, [1024, 1, 512])],
        [("b", np.zeros((512, 2, 16), np.uint8)), ("scales", zeros(512 * 2))],
    )
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    target = _target(tmp_path, _parallel("tiles", 128, 64, 8))
    point = _only_kernel(model, target)
    assert point.parallel_fraction == 1.0


def test_a_kv_buffer_shared_by_past_and_present_moves_its_attended_and_new_positions_from_dram():
    # GroupQueryAttention on one [1, 2, 32, 8] fp32 buffer for past and present, total 10, 4 new
    # tokens (tests/ops/test_attention.py): of the model's inputs it reads q 1,024 + k 256 + v 256 B
    # and 6 past positions of each buffer (2 x 384 B), of its outputs it writes y 1,024 B and 4 new
    # positions of each present (2 x 256 B); the 2,048 B buffers are neither read nor written whole.
    # On a target with on-chip memory, DRAM moves the model's inputs and outputs: 2,304 + 1,536 B
    node = helper.make_node(
        "GroupQueryAttention",
        ["q", "k", "v", "past_k", "past_v", "seqlens_k", "total"],
        ["y", "present_k", "present_v"],
        domain="com.microsoft",
        num_heads=8,
        kv_num_heads=2,
    )
    buffer = [1, 2, 32, 8]
    model = make_model(
        [node],
        [
            ("q", TensorProto.FLOAT, [1, 4, 64]),
            ("k", TensorProto.FLOAT, [1, 4, 16]),
            ("v", TensorProto.FLOAT, [1, 4, 16]),
            ("past_k", TensorProto.FLOAT, buffer),
            ("past_v", TensorProto.FLOAT, buffer),
        ],
        [
            ("y", TensorProto.FLOAT, [1, 4, 64]),
            ("present_k", TensorProto.FLOAT, buffer),
            ("present_v", TensorProto.FLOAT, buffer),
        ],
        [("seqlens_k", np.array([9], np.int32)), ("total", np.array(10, np.int32))],
        opset=17,
    )
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    (kernel,) = onnxroof.analyze(model, targets=["h100-sxm"]).targets[0].nodes
    assert kernel.placement.dram_bytes == 2_304 + 1_536
