"""The Coral Edge TPU as it runs (roofline/edge_tpu.py): the compiler cuts the graph at the first op
its supported-operations table does not map; that op and every op after it run on the host CPU's
target, and the cut's tensors cross the host link. Every figure below is worked by hand."""

from __future__ import annotations

import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.pipeline import analyze
from onnxroof.roofline.edge_tpu import MAPPED_OPS

FIGURE = 'tag = "estimate"\nsource = "a test figure"'


def _targets(
    tmp_path, host_peak: float = 1e9, launch_s: float | None = None, measured: bool = False, host_fuses: bool = False
) -> str:
    """An accelerator at 1e12 op/s with a 1e8 B/s link ('DRAM') and nothing on chip (``launch_s`` a
    kernel, else none; with ``measured``, a measured GEMM efficiency of 1.0: a forecast target), whose
    host is a CPU at ``host_peak`` op/s, 1e9 B/s and 1 µs per kernel (peak figures: a bound), fusing
    epilogues with ``host_fuses`` (else nothing)."""
    host = tmp_path / "host.toml"
    host.write_text(
        f'schema = "onnxroof-target/1"\nname = "host"\ndescription = "a test host"\n'
        f"[peak_ops_per_s.fp32]\nvalue = {host_peak!r}\n{FIGURE}\n"
        f"[dram.bandwidth_bytes_per_s]\nvalue = 1e9\n{FIGURE}\n"
        f"[node_overhead_s]\nvalue = 1e-6\n{FIGURE}\n"
        + ('[fusion]\nrules = ["epilogue"]\nsource = "a test"\n' if host_fuses else "")
    )
    tpu = tmp_path / "tpu.toml"
    tpu.write_text(
        f'schema = "onnxroof-target/1"\nname = "tpu"\ndescription = "a test edge tpu"\n'
        f"[peak_ops_per_s.fp32]\nvalue = 1e12\n{FIGURE}\n"
        f"[dram.bandwidth_bytes_per_s]\nvalue = 1e8\n{FIGURE}\n"
        f'[edge_tpu]\nhost = "{host}"\nsource = "a test"\n'
        + (f"[node_overhead_s]\nvalue = {launch_s!r}\n{FIGURE}\n" if launch_s is not None else "")
        + ('[efficiency.gemm]\nvalue = 1.0\ntag = "measured"\nsource = "a test figure"\n' if measured else "")
    )
    return str(tpu)


def _model():
    # x[1,100] @ w1[100,100] -> Relu -> Div by c[1,100] (not in the table) -> @ w2[100,100]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Div", ["r", "c"], ["d"], name="div"),
        helper.make_node("MatMul", ["d", "w2"], ["y"], name="mm2"),
    ]
    return make_model(
        nodes,
        [("x", TensorProto.FLOAT, [1, 100])],
        [("y", TensorProto.FLOAT, [1, 100])],
        [("w1", zeros(100, 100)), ("c", zeros(1, 100) + 1), ("w2", zeros(100, 100))],
    )


def test_the_table_maps_convolutions_and_not_division():
    assert {"Conv", "MatMul", "Relu", "Concat", "Resize"} <= MAPPED_OPS
    assert not {"Div", "Erf", "NonMaxSuppression", "Gather"} & MAPPED_OPS


def test_a_graph_cut_by_an_unsupported_op_runs_its_tail_on_the_host(tmp_path):
    # On the accelerator (everything over its 1e8 B/s link, nothing on chip): mm1 reads 40,000 B of
    # w1 + 400 B of x and writes 400 B: 40,800 B / 1e8 = 408 µs (its 20,000 FLOPs take 20 ns);
    # Relu reads 400 B and writes 400 B: 8 µs. The compiler cuts at div: div and mm2 on the host.
    # Host: div reads r (400 B) and c (400 B), writes 400 B: 1,200 B / 1e9 = 1.2 µs (100 FLOPs,
    # 0.1 µs) + 1 µs launch = 2.2 µs; mm2 reads 40,000 + 400 B, writes 400 B: 40.8 µs (20,000 FLOPs,
    # 20 µs) + 1 µs = 41.8 µs; host total 44 µs. The cut's tensor r (400 B) crosses the link:
    # 400 / 1e8 = 4 µs. Latency: 408 + 8 + 44 + 4 = 464 µs.
    report = analyze(_model(), targets=[_targets(tmp_path)]).targets[0]
    cut = report.edge_tpu_cut
    assert cut.first_unmapped == "div" and cut.unmapped_ops == ["Div"] and cut.host_kernels == 2
    assert cut.host_s == pytest.approx(44e-6)
    assert cut.transfer_s == pytest.approx(4e-6)
    assert report.latency_s == pytest.approx(464e-6)
    # the words every output prints: the op, the node cut at, the kernels on each side
    assert cut.host == "host" and cut.kernels == 4 and cut.cut_bytes == 400
    words = cut.words()
    assert words.startswith(
        "Div falls back to the CPU: the Edge TPU compiler cuts the graph in two at div (kernel 3 of 4)"
    )
    assert "the Edge TPU runs the 2 kernels before it, host the 2 from it on (44 µs)" in words


def test_the_fallback_finding_measures_the_op_mapped_and_says_when_it_does_not_pay(tmp_path):
    # Div mapped (placed again): div and mm2 on the accelerator, over its 1e8 B/s link: div 1,200 B,
    # 12 µs; mm2 40,800 B, 408 µs; with mm1 and relu 408 + 8 + 12 + 408 = 836 µs, against 464 µs
    # with the cut: the host is faster for them than the link, so no gain
    analysis = onnxroof.analyze(_model(), targets=[_targets(tmp_path)])
    (fallback,) = [f for f in analysis.review() if f.kind == "fallback"]
    assert fallback.title.startswith(
        "Div falls back to the CPU and splits the graph in two at div: host runs 2 kernels"
    )
    assert fallback.gain_s == 0
    assert fallback.evidence["latency_s_with_op_mapped"] == pytest.approx(836e-6)
    assert "the whole graph then runs on the Edge TPU" in fallback.detail
    assert "a Mul by the reciprocal" in fallback.detail


def test_replacing_the_op_at_the_cut_saves_the_slow_host_time(tmp_path):
    # a host at 1e7 op/s: div 100 FLOPs, 10 µs (its 1,200 B take 1.2 µs) + 1 µs launch = 11 µs;
    # mm2 20,000 FLOPs, 2,000 µs + 1 µs = 2,001 µs; latency 408 + 8 + 2,012 + 4 = 2,432 µs. With
    # Div mapped: 836 µs, as above: 1,596 µs less
    analysis = onnxroof.analyze(_model(), targets=[_targets(tmp_path, host_peak=1e7)])
    (report,) = analysis.targets
    assert report.latency_s == pytest.approx(2432e-6)
    (fallback,) = [f for f in analysis.review() if f.kind == "fallback"]
    assert fallback.gain_s == pytest.approx(1596e-6)
    assert "placed again with Div mapped: 836 µs per inference against 2.43 ms" in fallback.detail


def test_a_tensor_with_a_dimension_above_1_outside_the_3_innermost_is_not_mapped():
    # the table's condition every op shares: a batch of 2 on an NCHW tensor has one; a 5-D tensor
    # [1, 1, 4, 4, 4] none (its outer dims are 1)
    from types import SimpleNamespace as S

    from onnxroof.roofline.edge_tpu import cut_at

    def kernel(shape):
        return S(records=[S(op_type="Conv", shape_only=False, output_shapes=[shape])])

    assert cut_at([kernel([1, 8, 4, 4]), kernel([1, 1, 4, 4, 4])]) is None
    assert cut_at([kernel([1, 8, 4, 4]), kernel([2, 8, 4, 4])]) == 1


def test_a_batch_above_1_puts_the_graph_on_the_host_and_batch_1_is_measured(tmp_path):
    # a Relu on x [batch, 2, 2, 2]. At batch 2 its output 2x2x2x2 has a dimension above 1 outside
    # the 3 innermost: the compiler maps nothing, the host runs it: 64 B in + 64 B out at 1e9 B/s
    # = 0.128 µs (16 FLOPs, 16 ns) + 1 µs launch = 1.128 µs, 0.564 µs an inference. At batch 1 the
    # accelerator runs it over its 1e8 B/s link: 32 + 32 B, 0.64 µs: batch 1 is slower, no gain
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, ["batch", 2, 2, 2])],
        [("y", TensorProto.FLOAT, ["batch", 2, 2, 2])],
    )
    analysis = onnxroof.analyze(model, targets=[_targets(tmp_path)], batch=2)
    (report,) = analysis.targets
    cut = report.edge_tpu_cut
    assert cut.first_unmapped == "relu" and cut.host_kernels == cut.kernels == 1
    assert cut.shape_reason == "its output 2x2x2x2 has a dimension above 1 outside the 3 innermost"
    assert report.latency_s == pytest.approx(1.128e-6)
    assert "falls back to the CPU at the graph's first kernel, relu: the whole graph runs on host" in cut.words()
    (fallback,) = [f for f in analysis.review() if f.kind == "fallback"]
    assert fallback.evidence["batch_1_latency_s"] == pytest.approx(0.64e-6)
    assert fallback.gain_s == 0 and fallback.change == ""


def test_batching_up_is_not_advised_when_the_larger_batch_falls_back_to_the_host(tmp_path):
    # a Relu on x [batch, 2, 2, 2] on an accelerator paying 20 µs a kernel: at batch 1 the launch is
    # 20 of 20.64 µs (97%); at batch 8 its output 8x2x2x2 has a dimension above 1 outside the 3
    # innermost and the whole graph runs on the host (1 µs + 512 B at 1e9 B/s = 1.512 µs a run):
    # faster per inference, but the host's gain, not the accelerator's
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [("x", TensorProto.FLOAT, ["batch", 2, 2, 2])],
        [("y", TensorProto.FLOAT, ["batch", 2, 2, 2])],
    )
    analysis = onnxroof.analyze(model, targets=[_targets(tmp_path, launch_s=20e-6)])
    (report,) = analysis.targets
    assert report.edge_tpu_cut is None and report.latency_s == pytest.approx(20.64e-6)
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert not launch.change and launch.gain_s == 0.0
    assert "a larger batch is not advised: at batch 8" in launch.detail
    assert "the whole graph runs on host" in launch.detail


def test_a_forecast_target_whose_cut_runs_on_a_bound_host_gives_a_bound(tmp_path):
    # the accelerator's figures measured (a forecast), the host's peaks: the 44 µs of the tail (the
    # test above) are the host's at its peak figures, so the 464 µs are a lower bound, said so
    cut = analyze(_model(), targets=[_targets(tmp_path, measured=True)]).targets[0]
    assert cut.target.latency_kind == "forecast"
    assert cut.latency_s == pytest.approx(464e-6)  # an efficiency of 1.0 changes no figure
    assert cut.latency_kind == "bound" and cut.peak_host == "host"
    assert cut.bound_reason == "the ops past the Edge TPU compiler's cut run on host at its peak figures"
    # with nothing cut, the target's own kind: a forecast
    whole = make_model(
        [helper.make_node("MatMul", ["x", "w1"], ["y"], name="mm1")],
        [("x", TensorProto.FLOAT, [1, 100])],
        [("y", TensorProto.FLOAT, [1, 100])],
        [("w1", zeros(100, 100))],
    )
    report = analyze(whole, targets=[_targets(tmp_path, measured=True)]).targets[0]
    assert report.edge_tpu_cut is None and report.latency_kind == "forecast" and report.bound_reason == ""


def test_the_kernels_past_the_cut_are_placed_as_the_host_runs_them(tmp_path):
    # the cut of the first test: div and mm2 on the host carry the host's placement, its 1 µs launch
    # and its bound: div 1.2 µs of DRAM + 1 µs (DRAM-bound), mm2 40.8 µs of DRAM (20 µs of compute)
    # + 1 µs (DRAM-bound). The accelerator's kernels keep theirs: mm1 408 µs and relu 8 µs, DRAM (the
    # link). Time by bound over the 464 µs: DRAM 408 + 8 + 2.2 + 41.8 + the cut's 4 µs over the link
    # = 464 µs: all of it (the launches are inside DRAM-bound kernels' times, shorter than their roofs)
    report = analyze(_model(), targets=[_targets(tmp_path)]).targets[0]
    by_name = {node.name: node.placement for node in report.nodes}
    assert by_name["div"].overhead_s == pytest.approx(1e-6) and by_name["mm2"].overhead_s == pytest.approx(1e-6)
    assert by_name["div"].time_s == pytest.approx(2.2e-6) and by_name["mm2"].time_s == pytest.approx(41.8e-6)
    assert by_name["mm1"].overhead_s == 0 and by_name["mm1"].time_s == pytest.approx(408e-6)
    assert by_name["mm2"].peak_flops_per_s == pytest.approx(1e9)  # the host's roof
    assert report.edge_tpu_cut.host_launch_s == pytest.approx(2e-6)
    assert sum(report.time_share.values()) == pytest.approx(1.0)
    assert report.time_share["dram"] == pytest.approx(1.0)


def test_batching_up_is_not_advised_when_the_launches_are_the_hosts(tmp_path):
    # x [batch, 100] -> Div by c (not in the table: the whole graph on the host) -> 20 Relus. Host
    # at 1e9 op/s, 1e9 B/s, 1 µs a kernel: 21 kernels of 800 B (Relu: 400 B in, 400 out) or 1,200 B
    # (div: x, c, out), 0.8 or 1.2 µs of DRAM + 1 µs launch: 21 µs of launch in 21 + 0.8 x 20 + 1.2 =
    # 38.2 µs (55 %, past the 25 % share). Every launch is the host's: no "batch up" on this target
    nodes = [helper.make_node("Div", ["x", "c"], ["r0"], name="div")] + [
        helper.make_node("Relu", [f"r{i}"], [f"r{i + 1}"], name=f"relu{i}") for i in range(20)
    ]
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, ["batch", 100])],
        [("r20", TensorProto.FLOAT, ["batch", 100])],
        [("c", zeros(1, 100) + 1)],
    )
    analysis = onnxroof.analyze(model, targets=[_targets(tmp_path, launch_s=20e-6)], fusion="none")
    (report,) = analysis.targets
    assert report.edge_tpu_cut.host_kernels == 21 and report.latency_s == pytest.approx(38.2e-6)
    assert report.edge_tpu_cut.host_launch_s == pytest.approx(21e-6)
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert launch.title.startswith("21 kernels x 1 µs of launch are 55% of the time: map the ops at the graph cut")
    assert not launch.change and launch.gain_s == 0.0
    assert launch.detail.startswith("most of the launches are host's: Div falls back to the CPU at the graph's first")


def test_the_host_runs_the_ops_past_the_cut_fused_as_its_runtime_fuses(tmp_path):
    # x[1,100] @ w1 -> Div by c (not in the table: the cut) -> @ w2 -> Relu. A host fusing epilogues
    # runs mm2 and the Relu after it as one kernel: 400 B of d + 40,000 B of w2 read, 400 B of y
    # written (y0 stays inside): 40.8 µs of DRAM (20,100 FLOPs: 20.1 µs) + 1 µs launch = 41.8 µs.
    # Without it the Relu is a kernel of its own: 800 B, 0.8 µs + 1 µs launch = 1.8 µs more. div is
    # 2.2 µs either way (the first test): the host's part is 44 µs fused, 45.8 µs not
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Div", ["h", "c"], ["d"], name="div"),
        helper.make_node("MatMul", ["d", "w2"], ["y0"], name="mm2"),
        helper.make_node("Relu", ["y0"], ["y"], name="relu"),
    ]
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, [1, 100])],
        [("y", TensorProto.FLOAT, [1, 100])],
        [("w1", zeros(100, 100)), ("c", zeros(1, 100) + 1), ("w2", zeros(100, 100))],
    )
    fused = analyze(model, targets=[_targets(tmp_path, host_fuses=True)]).targets[0]
    assert fused.edge_tpu_cut.host_kernels == 2 and [n.nodes for n in fused.nodes[-2:]] == [["div"], ["mm2", "relu"]]
    assert fused.edge_tpu_cut.host_s == pytest.approx(44e-6)
    assert fused.nodes[-1].placement.time_s == pytest.approx(41.8e-6)
    plain = analyze(model, targets=[_targets(tmp_path)]).targets[0]
    assert plain.edge_tpu_cut.host_kernels == 3 and plain.edge_tpu_cut.host_s == pytest.approx(45.8e-6)
    assert plain.latency_s - fused.latency_s == pytest.approx(1.8e-6)
