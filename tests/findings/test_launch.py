"""The launch-bound finding (issue 30): kernels x the launch cost against the work, and the gain
of a larger batch measured by analysing again. Expected values are derived by hand."""

from __future__ import annotations

import importlib

import pytest
from conftest import launch_target, make_model, target_text
from onnx import TensorProto, helper

import onnxroof

F32 = TensorProto.FLOAT


def add_chain(length: int = 100):
    """x [batch, 16] -> a1 = x + x -> a2 = a1 + a1 -> ... : every Add reads and writes batch x 64 B."""
    nodes = [helper.make_node("Add", [f"a{i}", f"a{i}"], [f"a{i + 1}"], name=f"add_{i}") for i in range(length)]
    return make_model(nodes, [("a0", F32, ["batch", 16])], [(f"a{length}", F32, ["batch", 16])])


def test_a_graph_over_the_further_limit_measures_one_larger_batch(tmp_path, monkeypatch):
    # issue 43: on a large graph a second re-analysis would cost more than the findings may; the
    # batch-8 gain is measured as before (262.5 µs, as below), the batch-64 evidence is left out
    monkeypatch.setattr(
        importlib.import_module("onnxroof.findings.launch"), "FURTHER_NODES", 99
    )  # the chain has 100 nodes
    analysis = onnxroof.analyze(add_chain(), targets=[launch_target(tmp_path)])
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert launch.gain_s == pytest.approx(262.5e-6)
    assert "further_batch" not in launch.evidence


def test_the_findings_analyse_again_within_their_node_budget(tmp_path, monkeypatch):
    # issue 43: the variants count the model's nodes against REANALYSE_NODES; with 150 the chain's
    # batch 8 (100 nodes) is analysed and its gain measured (262.5 µs, as below), batch 64 is not
    from onnxroof.findings import variants

    monkeypatch.setattr(variants, "REANALYSE_NODES", 150)
    analysis = onnxroof.analyze(add_chain(), targets=[launch_target(tmp_path)])
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert launch.gain_s == pytest.approx(262.5e-6)
    assert "further_batch" not in launch.evidence
    base = variants.Variants(analysis, lambda **changes: analysis)
    assert base.peak_bytes(dtype="fp16") == analysis.memory.model_order.peak_bytes  # 100 of 150
    assert base.peak_bytes(dtype="int8") == (
        "not analysed again: the findings have analysed 100 nodes again, and 100 more would pass the 150 they may"
    )


def test_a_chain_of_adds_is_launch_bound_and_batching_is_measured(tmp_path):
    analysis = onnxroof.analyze(add_chain(), targets=[launch_target(tmp_path)])
    (report,) = analysis.targets
    found = [f for f in analysis.review() if f.kind == "launch"]
    assert len(found) == 1
    launch = found[0]
    # 100 kernels x 3 µs = 300 µs of launch; each Add moves 128 B in and out at 1 TB/s (0.128 ns)
    # and 16 FLOPs: the launches are 300 / 300.0128 of the time
    assert launch.title.startswith("100 kernels x 3 µs of launch are 100% of the time")
    assert launch.evidence["launch_s"] == pytest.approx(300e-6)
    # at batch 8 the launches are the same 300 µs and each Add's bytes 8 times as many: one
    # inference takes (300 µs + 8 W) / 8 against 300 µs + W, whatever W: 300 x 7/8 = 262.5 µs less
    assert launch.change == "--batch 8"
    assert launch.gain_s == pytest.approx(262.5e-6)
    assert launch.evidence["larger_batch_latency_s"] == pytest.approx(300e-6 + 8 * 100 * 128 / 1e12)
    # and at batch 64 (evidence only): 300 µs + 64 x 100 x 128 B at 1 TB/s
    assert launch.evidence["further_batch_latency_s"] == pytest.approx(300e-6 + 64 * 100 * 128 / 1e12)
    # fusing the chain into one kernel saves more: one launch (3 µs) and one kernel reading a0
    # and writing a100 (128 B, 0.128 ns) doing 1,600 FLOPs (1.6 ns), against 300 µs + 100 x
    # 0.128 ns: 297.0112 µs less
    fusion, second = onnxroof.review(analysis).of(report).findings[:2]
    assert (fusion.kind, second) == ("fusion", launch)
    assert fusion.title.startswith("99 fewer kernels with epilogue, elementwise, normalization, horizontal, attention")
    assert fusion.gain_s == pytest.approx(297.0112e-6)


def test_past_the_node_limit_a_finding_names_its_change_without_analysing_again(tmp_path, monkeypatch):
    from onnxroof.findings import variants

    monkeypatch.setattr(variants, "REANALYSE_NODES", 50)  # the chain has 100 nodes
    analysis = onnxroof.analyze(add_chain(), targets=[launch_target(tmp_path)])
    (launch,) = [f for f in analysis.review() if f.kind == "launch"]
    assert launch.gain_s == 0.0 and "larger_batch_latency_s" not in launch.evidence
    assert launch.detail == (
        "batch 8 gives no measured gain: not analysed again: 100 nodes, over the 50 up to which "
        "findings measure a change by analysing the model again"
    )
    # placing again is no analysis: the fusion finding still measures its gain (297.0112 µs, above)
    fusion = next(f for f in analysis.review() if f.kind == "fusion")
    assert fusion.gain_s == pytest.approx(297.0112e-6)


def test_a_target_without_launch_cost_has_no_launch_finding(tmp_path):
    path = tmp_path / "free.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e12}))
    analysis = onnxroof.analyze(add_chain(10), targets=[str(path)])
    assert not [f for f in analysis.review() if f.kind == "launch"]


def test_no_findings_leaves_them_out_of_every_output(tmp_path, capsys):
    # a very large model's summary in one analysis: --no-findings makes none (and no re-analysis)
    import json

    from conftest import run

    path = tmp_path / "chain.onnx"
    path.write_bytes(add_chain(10).SerializeToString())
    code, out, _ = run(
        capsys, "summary", str(path), "--target", launch_target(tmp_path), "--no-findings", "--format", "json", "-q"
    )
    document = json.loads(out)
    assert code == 0 and document["findings"] == [] and document["targets"][0]["fit"] is None
    code, out, _ = run(capsys, "summary", str(path), "--target", launch_target(tmp_path), "--format", "json", "-q")
    assert [f["kind"] for f in json.loads(out)["findings"]][:2] == ["fusion", "launch"]
