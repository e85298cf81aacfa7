"""The memory findings: activations that spill and what the lowest-peak order saves; parameters
streamed because they do not fit on chip. Derived by hand."""

from __future__ import annotations

import pytest
from conftest import make_model, target_text, zeros
from onnx import TensorProto, helper

import onnxroof

F32 = TensorProto.FLOAT


def three_branches():
    """x (10 floats) -> each branch b: MatMul to a 1,000-float lb (A1, B1, C1), MatMul to a 1-float
    sb (A2, B2, C2); y = sa + sb + sc. The model runs every expansion first, then every shrink."""
    nodes = [helper.make_node("MatMul", ["x", f"w{b}1"], [f"l{b}"], name=f"{b.upper()}1") for b in "abc"]
    nodes += [helper.make_node("MatMul", [f"l{b}", f"w{b}2"], [f"s{b}"], name=f"{b.upper()}2") for b in "abc"]
    nodes.append(helper.make_node("Sum", ["sa", "sb", "sc"], ["y"], name="join"))
    weights = [(f"w{b}1", zeros(10, 1000)) for b in "abc"] + [(f"w{b}2", zeros(1000, 1)) for b in "abc"]
    return make_model(nodes, [("x", F32, [1, 10])], [("y", F32, [1, 1])], weights)


def test_a_spill_the_lowest_peak_order_avoids(tmp_path):
    # 8 KiB on chip at 1 TB/s, DRAM 1 GB/s, compute 1 TFLOP/s, no fusion. In the model's order
    # x, la, lb and lc are live at C1: 40 + 3 x 4,000 = 12,040 B > 8,192; branch by branch the
    # peak is 40 + 4,000 + 2 x 4 = 4,048 B: nothing spills
    path = tmp_path / "small.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "dram.bandwidth_bytes_per_s": 1e9,
                "onchip.size_bytes": 8192,
                "onchip.bandwidth_bytes_per_s": 1e12,
            },
            '[fusion]\nrules = []\nsource = "hand"\n',
            name="small",
        )
    )
    analysis = onnxroof.analyze(three_branches(), targets=[str(path)])
    (report,) = analysis.targets
    (finding,) = [f for f in analysis.review() if f.kind == "spill"]
    # Belady evicts the buffer used farthest ahead, lb (read by B2 after A2): 3,848 B must leave
    # and lb's 4,000 B do; written to DRAM once and read back once: 8,000 B at 1 GB/s = 8 µs,
    # on kernels whose time is DRAM bytes (every MatMul reads its weights from DRAM: 40,000 B or
    # 4,000 B against at most 80 kFLOP = 80 ns)
    assert report.spill_bytes == 8_000 and finding.nodes == ("lb",)
    assert finding.change == "--emit-order FILE"
    assert finding.gain_bytes == 8_000
    assert finding.gain_s == pytest.approx(8e-6)


def _resident_target(tmp_path, roof: str) -> str:
    """16 KiB on chip at 1 TB/s that keep parameters between runs when they fit, DRAM 1 GB/s,
    compute 1 TFLOP/s on ``roof``, no fusion."""
    path = tmp_path / "resident.toml"
    path.write_text(
        target_text(
            {
                f"peak_ops_per_s.{roof}": 1e12,
                "dram.bandwidth_bytes_per_s": 1e9,
                "onchip.size_bytes": 16384,
                "onchip.bandwidth_bytes_per_s": 1e12,
            },
            '[fusion]\nrules = []\nsource = "hand"\n[weights]\nresident = true\nsource = "hand"\n',
            name="resident",
        )
    )
    return str(path)


def test_parameters_that_do_not_fit_on_chip_are_streamed_and_what_that_costs(tmp_path):
    # the same model on a target that keeps parameters on chip when they fit: 16 KiB on chip, the
    # peak activations (12,040 B) leave 4,344 B; the kernels' parameters in model order: A1's
    # 40,000 B do not fit, nor B1's or C1's, A2's 4,000 B do, B2's and C2's no longer: 4,000 B kept,
    # 128,000 B streamed
    analysis = onnxroof.analyze(three_branches(), targets=[_resident_target(tmp_path, "fp32")])
    (finding,) = [f for f in analysis.review() if f.kind == "weights"]
    assert finding.evidence["kept_bytes"] == 4_000 and finding.gain_bytes == 128_000
    # each of A1, B1, C1 reads its 40,000 B of weights and x (40 B, the model's input) from DRAM:
    # 40.04 µs; with room for every parameter only x: 40 ns, against the 44,040 B it moves on chip
    # at 1 TB/s, 44.04 ns. B2 and C2 read 4,000 B from DRAM (4 µs), then move 8,004 B on chip
    # (8.004 ns). Saved: 3 x (40,040 - 44.04) + 2 x (4,000 - 8.004) ns = 127,971.872 ns
    assert finding.gain_s == pytest.approx(127.971872e-6)
    # float32 parameters (4 bytes each): a narrower type is advice worth giving
    assert "narrower parameters (--dtype int8) or a smaller model keeps more" in finding.detail


def test_parameters_already_a_byte_each_are_not_told_to_narrow(tmp_path):
    # the same target and model at --dtype int8: every parameter takes one byte, so the advice is
    # a smaller model, not the type the analysis already has
    analysis = onnxroof.analyze(three_branches(), targets=[_resident_target(tmp_path, "int8")], dtype="int8")
    assert analysis.totals.param_bytes == analysis.totals.params
    (finding,) = [f for f in analysis.review() if f.kind == "weights"]
    assert "--dtype int8" not in finding.detail
    assert "a smaller model (its parameters take a byte each already) keeps more" in finding.detail


def test_kernels_slow_from_streamed_parameters_are_the_weights_finding_s_not_the_intensity_one_s(tmp_path):
    # as above: A1, B1 and C1 stream their 40,000 B of weights, B2 and C2 their 4,000 B, A2 keeps
    # its 4,000 B on chip. Each streaming kernel's DRAM bytes are its weights (and A1-C1 x's 40 B):
    # below the ridge because of parameters that do not fit, which the weights finding measures;
    # A2, with its weights on chip, reads no DRAM byte (4 ns on chip, under 10% of the time)
    analysis = onnxroof.analyze(three_branches(), targets=[_resident_target(tmp_path, "fp32")])
    (report,) = analysis.targets
    streamed = {k.name: k.streamed_weight_bytes for k in report.nodes}
    assert streamed == {"A1": 40_000, "B1": 40_000, "C1": 40_000, "A2": 0, "B2": 4_000, "C2": 4_000, "join": 0}
    kinds = [f.kind for f in analysis.review()]
    assert "weights" in kinds and "intensity" not in kinds
