"""The CPU figures of issue 29's host work: a kernel's launch when the run streams past the caches
(``cold_node_overhead_s``), a run's own cost (``run_overhead_s``) and the share of a
compute-bound product's DRAM time its compute does not hide (``dram_stall``). Each expected time
is worked out by hand in the test."""

from __future__ import annotations

import pytest
from conftest import make_model, target_text, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.errors import UsageError
from onnxroof.roofline.targets import parse_target

FIGURES = {
    "peak_ops_per_s.fp32": 1e12,
    "dram.bandwidth_bytes_per_s": 1e11,
    "onchip.bandwidth_bytes_per_s": 1e12,
    "node_overhead_s": 1e-6,
}


def matmul_relu(rows: int):
    """x [rows, 256] by a 256 x 256 float weight (262,144 B), then a Relu."""
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
            helper.make_node("Relu", ["m"], ["y"], name="relu"),
        ],
        [("x", TensorProto.FLOAT, [rows, 256])],
        [("y", TensorProto.FLOAT, [rows, 256])],
        [("w", zeros(256, 256))],
    )


def report_on(tmp_path, model, **figures):
    path = tmp_path / "cpu.toml"
    path.write_text(target_text({**FIGURES, **figures}))
    return onnxroof.analyze(model, targets=[str(path)]).targets[0]


@pytest.mark.parametrize("onchip_bytes, launch_s", [(2**20, 1e-6), (2**17, 3e-6)])
def test_every_kernel_launches_cold_when_the_run_touches_more_than_the_chip_holds(tmp_path, onchip_bytes, launch_s):
    # the run touches the weight's 262,144 B and its activations' few KiB at batch 1:
    # under 1 MiB on chip the launches are warm (1 µs), past 128 KiB cold (3 µs)
    report = report_on(tmp_path, matmul_relu(1), **{"onchip.size_bytes": onchip_bytes, "cold_node_overhead_s": 3e-6})
    assert report.launch_s == pytest.approx(launch_s)
    assert [k.placement.overhead_s for k in report.nodes] == pytest.approx([launch_s, launch_s])
    assert any("launch costs" in note for note in report.notes) == (launch_s > 1e-6)


def test_without_a_cold_figure_the_launch_stays_warm(tmp_path):
    report = report_on(tmp_path, matmul_relu(1), **{"onchip.size_bytes": 2**17})
    assert report.launch_s == pytest.approx(1e-6)


def test_a_run_costs_its_kernels_and_its_own_overhead_once(tmp_path):
    report = report_on(tmp_path, matmul_relu(1), **{"onchip.size_bytes": 2**20, "run_overhead_s": 4e-6})
    # batch 1: the MatMul reads its 262,144 B weight and the 1,024 B input from DRAM in 2.63 µs
    # (its 131,072 FLOPs take 0.13 µs) and launches in 1 µs; the Relu's 1 KiB output to DRAM takes
    # 0.01 µs, plus 1 µs
    kernels_s = 263_168 / 1e11 + 1e-6 + 1_024 / 1e11 + 1e-6
    assert sum(k.placement.time_s for k in report.nodes) == pytest.approx(kernels_s, rel=1e-3)
    assert report.run_s == pytest.approx(4e-6) and report.latency_s == pytest.approx(kernels_s + 4e-6, rel=1e-3)
    # the run's own cost is overhead in the time shares, beside the Relu, whose launch exceeds its
    # roofs (the MatMul, DRAM-bound, counts as DRAM whole)
    assert sum(report.time_share.values()) == pytest.approx(1.0)
    assert report.time_share["overhead"] == pytest.approx((4e-6 + 1e-6 + 1_024 / 1e11) / report.latency_s, rel=1e-3)


@pytest.mark.parametrize("stall", [None, 0.5])
def test_a_compute_bound_product_stalls_on_its_share_of_its_dram_time(tmp_path, stall):
    figures = {"onchip.size_bytes": 2**22, "node_overhead_s": 1e-9}
    if stall:
        figures["dram_stall"] = stall
    matmul = next(k for k in report_on(tmp_path, matmul_relu(64), **figures).nodes if k.name == "matmul").placement
    # 2 x 64 x 256 x 256 = 8,388,608 FLOPs at 1e12 FLOP/s = 8.389 µs, the longest roof; from DRAM
    # the weight 262,144 B and the model input 64 x 256 x 4 = 65,536 B: 327,680 B at 1e11 B/s
    # = 3.277 µs, half of which stalls
    assert str(matmul.bound) == "compute"
    assert matmul.exposed_dram_s == pytest.approx(0.5 * 3.2768e-6 if stall else 0.0)
    assert matmul.time_s == pytest.approx(8.388608e-6 + (1.6384e-6 if stall else 0.0) + 1e-9)


def test_a_memory_bound_kernel_does_not_stall_on_top(tmp_path):
    relu = next(
        k
        for k in report_on(
            tmp_path, matmul_relu(64), **{"onchip.size_bytes": 2**22, "dram_stall": 0.5, "node_overhead_s": 1e-9}
        ).nodes
        if k.name == "relu"
    ).placement
    # the Relu writes the model's output to DRAM: 65,536 B / 1e11 B/s = 0.655 µs, longer than its
    # 16,384 FLOPs and its on-chip bytes take: DRAM-bound, nothing added
    assert str(relu.bound) == "dram" and relu.exposed_dram_s == 0.0
    assert relu.time_s == pytest.approx(65_536 / 1e11 + 1e-9)


def test_a_stall_share_is_a_fraction(tmp_path):
    path = tmp_path / "cpu.toml"
    path.write_text(target_text({**FIGURES, "dram_stall": 1.5}))
    with pytest.raises(UsageError, match="dram_stall.value"):
        parse_target(path)


def test_explain_the_json_and_the_listing_show_the_cpu_figures(tmp_path, capsys):
    import json

    from onnxroof.cli.app import main
    from onnxroof.report.text.explain import explain_target_lines
    from onnxroof.report.text.targets_list import render_targets_list

    figures = {"onchip.size_bytes": 2**17, "cold_node_overhead_s": 3e-6, "run_overhead_s": 4e-6, "dram_stall": 0.5}
    report = report_on(tmp_path, matmul_relu(64), **figures)
    lines = explain_target_lines(report, "matmul")
    # the weight (262,144 B) and the input (65,536 B) from DRAM: 3.277 µs, half of it stalled
    assert any(line.startswith("  stall    1.64 µs: 50% of its DRAM time") for line in lines)
    assert any("launch   3 µs per kernel (cold: the run touches more data" in line for line in lines)
    assert "launch 1 µs per kernel (3 µs cold), 4 µs per run" in render_targets_list([report.target])
    model = tmp_path / "matmul.onnx"
    model.write_bytes(matmul_relu(64).SerializeToString())
    assert main(["summary", str(model), "--target", str(tmp_path / "cpu.toml"), "--format", "json"]) == 0
    entry = json.loads(capsys.readouterr().out)["targets"][0]
    assert entry["launch_s"] == pytest.approx(3e-6) and entry["run_overhead_s"] == pytest.approx(4e-6)
    matmul = next(n for n in entry["nodes"] if n["name"] == "matmul")
    assert matmul["exposed_dram_s"] == pytest.approx(0.5 * 327_680 / 1e11)


def test_one_device_s_step_is_the_latency_run_cost_and_stall_included(tmp_path):
    path = tmp_path / "cpu.toml"
    path.write_text(target_text({**FIGURES, "onchip.size_bytes": 2**22, "run_overhead_s": 4e-6, "dram_stall": 0.5}))
    analysis = onnxroof.analyze(matmul_relu(64), targets=[str(path)], devices=2)
    report, plan = analysis.targets[0], analysis.parallel[0]
    # no attention or MLP block: replicated, and TP 1 x PP 1 is the single-device run, whose
    # latency holds the 4 µs run cost and the MatMul's 1.64 µs stall (as in the tests above)
    assert plan.choice(1).latency_s == pytest.approx(report.latency_s)
    assert report.run_s == pytest.approx(4e-6)
    assert next(k for k in report.nodes if k.name == "matmul").placement.exposed_dram_s == pytest.approx(1.6384e-6)


def test_the_plain_roofline_pays_no_launch_and_says_none(tmp_path):
    report = report_on(
        tmp_path, matmul_relu(1), **{"onchip.size_bytes": 2**17, "cold_node_overhead_s": 3e-6, "run_overhead_s": 4e-6}
    )
    plain = onnxroof.analyze(matmul_relu(1), targets=[str(tmp_path / "cpu.toml")], overhead=False).targets[0]
    assert report.launch_s == pytest.approx(3e-6) and plain.launch_s == 0.0 and plain.run_s == 0.0
    assert not any("launch costs" in note or "a run costs" in note for note in plain.notes)
