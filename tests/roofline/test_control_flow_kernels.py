"""Control-flow bodies placed as kernels (issue 42, item 3): the branch an If takes, a Loop's body
times its trip count and a Scan's times its length are fused and placed like the main graph's
nodes. Every time is worked out by hand on a target of 1 TFLOP/s fp32, 10 GB/s DRAM, 1 µs per
kernel launch and no on-chip memory (every activation goes through DRAM), efficiency 1."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_model, target_text, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.compare.modules import module_tree
from onnxroof.report.text.explain import render_explain
from onnxroof.roofline.targets import bundled_targets

sys.path.insert(0, str(Path(__file__).parents[1] / "cost"))
from test_merged import merged_decoder  # noqa: E402  (the merged decoder built by code, issue 31)

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
N = 1024  # floats per activation: 4,096 B
LAUNCH_S = 1e-6
ELEMENTWISE = '[fusion]\nrules = ["elementwise"]\nsource = "a runtime that fuses elementwise chains"'


def target_file(tmp_path, fusion: str = "") -> str:
    path = tmp_path / f"t{abs(hash(fusion))}.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e10, "node_overhead_s": LAUNCH_S}, fusion
        )
    )
    return str(path)


def if_model():
    """y = If(c) then Neg(Relu(x)) else MatMul(x, W [1024 x 1024]); x is [1, 1024]."""
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t1"], name="relu"), helper.make_node("Neg", ["t1"], ["t2"], name="neg")],
        "then",
        [],
        [helper.make_tensor_value_info("t2", F32, [1, N])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul")],
        "else",
        [],
        [helper.make_tensor_value_info("m", F32, [1, N])],
    )
    node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=then_branch, else_branch=else_branch)
    return make_model([node], [("c", BOOL, [1]), ("x", F32, [1, N])], [("y", F32, [1, N])], [("w", zeros(N, N))])


def test_the_branch_a_known_condition_takes_is_placed_as_its_own_kernels(tmp_path):
    analysis = onnxroof.analyze(if_model(), values={"c": 1}, targets=[target_file(tmp_path)])
    report = analysis.targets[0]
    # no fusion: the then branch's two nodes are two kernels, each reading 4,096 B and writing
    # 4,096 B: 8,192 B / 10 GB/s = 0.8192 µs (its 1,024 FLOPs take 1 ns), + 1 µs of launch
    assert [(k.name, k.op_type) for k in report.nodes] == [
        ("if/then_branch/relu", "Relu"),
        ("if/then_branch/neg", "Neg"),
    ]
    assert [k.placement.time_s for k in report.nodes] == pytest.approx([0.8192e-6 + LAUNCH_S] * 2)
    assert sum(k.placement.overhead_s for k in report.nodes) == pytest.approx(2 * LAUNCH_S)  # 2 launches x 1 µs
    assert report.latency_s == pytest.approx(2 * (0.8192e-6 + LAUNCH_S))
    assert any("if: then_branch placed as kernels (2 nodes): its condition is True" in n for n in report.notes)


def test_the_other_branch_under_the_other_condition(tmp_path):
    report = onnxroof.analyze(if_model(), values={"c": 0}, targets=[target_file(tmp_path)]).targets[0]
    # one MatMul: weights 1,024 x 1,024 x 4 B = 4,194,304 B + x 4,096 + m 4,096 = 4,202,496 B over
    # 10 GB/s = 420.2496 µs (2,097,152 FLOPs take 2.1 µs), + 1 µs of launch
    (kernel,) = report.nodes
    assert kernel.name == "if/else_branch/matmul"
    assert kernel.placement.dram_bytes == 4_194_304 + 4_096 + 4_096
    assert report.latency_s == pytest.approx(420.2496e-6 + LAUNCH_S)


def test_an_unknown_condition_places_the_costlier_branch_and_says_so(tmp_path):
    report = onnxroof.analyze(if_model(), targets=[target_file(tmp_path)]).targets[0]
    # then: 1,024 + 1,024 FLOPs; else: 2 x 1,024 x 1,024 = 2,097,152: the else branch is placed
    assert [k.name for k in report.nodes] == ["if/else_branch/matmul"]
    note = next(n for n in report.notes if "placed as kernels" in n)
    assert "else_branch" in note and "not known: the costlier branch (2,097,152 FLOPs, the other 2,048)" in note


def test_the_body_fuses_under_the_targets_rules(tmp_path):
    report = onnxroof.analyze(if_model(), values={"c": 1}, targets=[target_file(tmp_path, ELEMENTWISE)]).targets[0]
    # Relu and Neg fuse: x read once (4,096 B), y written once (4,096 B), t1 stays inside: 0.8192 µs + 1 launch
    (kernel,) = report.nodes
    assert kernel.nodes == ["if/then_branch/relu", "if/then_branch/neg"] and kernel.op_type == "Relu+Neg"
    assert kernel.placement.dram_bytes == 8_192
    assert report.latency_s == pytest.approx(0.8192e-6 + LAUNCH_S)


def loop_model(trips: int | None):
    """v = Loop(M, true, x) with body v' = Relu(v), for M = ``trips`` (a constant), or an input."""
    body = helper.make_graph(
        [
            helper.make_node("Relu", ["v"], ["v2"], name="relu"),
            helper.make_node("Identity", ["cond"], ["cond2"], name="keep"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond", BOOL, []),
            helper.make_tensor_value_info("v", F32, [1, N]),
        ],
        [helper.make_tensor_value_info("cond2", BOOL, []), helper.make_tensor_value_info("v2", F32, [1, N])],
    )
    node = helper.make_node("Loop", ["M", "true", "x"], ["y"], name="loop", body=body)
    weights = [("true", np.array(True))] + ([("M", np.array(trips, np.int64))] if trips is not None else [])
    inputs = [("x", F32, [1, N])] + ([("M", I64, [])] if trips is None else [])
    return make_model([node], inputs, [("y", F32, [1, N])], weights)


def test_a_loop_body_is_placed_times_its_trip_count(tmp_path):
    report = onnxroof.analyze(loop_model(5), targets=[target_file(tmp_path)]).targets[0]
    relu = next(k for k in report.nodes if k.name == "loop/body/relu")
    # one run: 4,096 B read + 4,096 B written over 10 GB/s = 0.8192 µs + 1 µs launch; 5 runs
    assert relu.runs == 5
    assert relu.placement.time_s == pytest.approx(5 * (0.8192e-6 + LAUNCH_S))
    assert relu.placement.overhead_s == pytest.approx(5 * LAUNCH_S)  # 5 launches x 1 µs
    assert relu.placement.dram_bytes == 5 * 8_192
    # the Identity of the condition and the loop's outputs (a view named after it) launch nothing
    assert report.latency_s == pytest.approx(5 * (0.8192e-6 + LAUNCH_S))
    assert any("loop: body placed as kernels (2 nodes, x 5): body x trip count M = 5" in n for n in report.notes)


def test_a_loop_of_unknown_trip_count_is_placed_once_as_a_bound(tmp_path):
    analysis = onnxroof.analyze(loop_model(None), targets=[target_file(tmp_path)])
    report = analysis.targets[0]
    relu = next(k for k in report.nodes if k.name == "loop/body/relu")
    assert relu.runs == 1 and report.latency_s == pytest.approx(0.8192e-6 + LAUNCH_S)
    assert not analysis.complete  # the Loop is not counted: the latency is a lower bound
    assert any("placed once, a lower bound" in n for n in report.notes)


def test_a_scan_body_is_placed_times_its_length(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Relu", ["row"], ["out"], name="relu")],
        "body",
        [helper.make_tensor_value_info("row", F32, [N])],
        [helper.make_tensor_value_info("out", F32, [N])],
    )
    node = helper.make_node("Scan", ["x"], ["y"], name="scan", body=body, num_scan_inputs=1)
    model = make_model([node], [("x", F32, [6, N])], [("y", F32, [6, N])])
    report = onnxroof.analyze(model, targets=[target_file(tmp_path)]).targets[0]
    (relu,) = [k for k in report.nodes if k.name == "scan/body/relu"]
    # 6 rows, each 4,096 B read and written: 6 x (0.8192 µs + 1 µs)
    assert relu.runs == 6 and report.latency_s == pytest.approx(6 * (0.8192e-6 + LAUNCH_S))


# --- a merged decoder and its twin -----------------------------------------------------------


def twin(cross: bool = True):
    """The branch with the cache of :func:`merged_decoder` exported alone: the same nodes in a
    plain graph, writing the graph's outputs, without the If and its condition input."""
    merged = merged_decoder(cross=cross)
    node = merged.graph.node[0]
    branch = next(a.g for a in node.attribute if a.name == "then_branch")
    rename = dict(zip([o.name for o in branch.output], node.output))
    nodes = []
    for original in branch.node:
        copy = helper.make_node(
            original.op_type,
            [rename.get(n, n) for n in original.input],
            [rename.get(n, n) for n in original.output],
            name=original.name,
        )
        copy.attribute.extend(original.attribute)
        nodes.append(copy)
    graph = helper.make_graph(
        nodes,
        "twin",
        [i for i in merged.graph.input if i.name != "flag"],
        list(merged.graph.output),
        list(merged.graph.initializer),
    )
    model = helper.make_model(graph, opset_imports=merged.opset_import)
    model.ir_version = merged.ir_version
    return model


@pytest.mark.parametrize("cross", [True, False])
def test_a_merged_decoder_takes_the_time_of_its_twin_on_every_bundled_target(cross):
    options = dict(phase="decode", context=128, targets=sorted(bundled_targets()))
    if cross:
        options["encoder_seq"] = 1500
    merged, plain = onnxroof.analyze(merged_decoder(cross=cross), **options), onnxroof.analyze(twin(cross), **options)
    for placed, alone in zip(merged.targets, plain.targets):
        # the same nodes, fused and placed alike: the kernels match one for one, named under the If
        assert [(k.name.removeprefix("If_0/then_branch/"), k.op_type, k.runs) for k in placed.nodes] == [
            (k.name, k.op_type, k.runs) for k in alone.nodes
        ], placed.target.name
        assert placed.latency_s == pytest.approx(alone.latency_s, rel=1e-12), placed.target.name
    assert merged.memory.model_order.peak_bytes == plain.memory.model_order.peak_bytes


def test_a_merged_decoders_branch_by_hand(tmp_path):
    """The decoder-only merged decoder in decode at context 64 on the hand target, no fusion:
    the kernels that move bytes, each 1 µs of launch plus its bytes over 10 GB/s."""
    report = onnxroof.analyze(
        merged_decoder(cross=False), phase="decode", context=64, targets=[target_file(tmp_path)]
    ).targets[0]
    # Gather: one embedding row 256 B read (of the 100 x 64 table), ids 8 B, 256 B written;
    # 3 MatMuls: 64 x 64 x 4 B = 16,384 B of weights + 256 in + 256 out; 3 Transposes 256 + 256;
    # 2 Concats: 63 past positions x 4 x 16 x 4 B = 16,128 + 256 new in, 16,384 out; the K^T
    # transpose 16,384 + 16,384; QK^T 256 + 16,384 in, 4 x 64 x 4 = 1,024 out; Softmax 1,024 + 1,024;
    # AV 1,024 + 16,384 in, 256 out. The Reshapes are views: they move nothing and launch nothing
    moved = [
        256 + 8 + 256,
        *[16_384 + 512] * 3,
        *[512] * 3,
        *[16_128 + 256 + 16_384] * 2,
        2 * 16_384,
        256 + 16_384 + 1_024,
        2 * 1_024,
        1_024 + 16_384 + 256,
    ]
    working = [k for k in report.nodes if k.placement.overhead_s]
    assert len(working) == len(moved) == 13
    assert sorted(k.placement.dram_bytes for k in working) == sorted(moved)
    compute_s = sum(k.placement.compute_s for k in working)  # the FLOPs at 1 TFLOP/s, under a DRAM time each
    assert report.latency_s == pytest.approx(sum(moved) / 1e10 + 13 * LAUNCH_S) and compute_s < 1e-7


# --- where the body shows --------------------------------------------------------------------


def test_the_body_is_a_module_under_the_if_and_explain_finds_its_kernel(tmp_path):
    analysis = onnxroof.analyze(if_model(), values={"c": 1}, targets=[target_file(tmp_path)])
    (if_module,) = module_tree(analysis).children
    (branch,) = if_module.children
    assert (if_module.name, branch.path, branch.nodes) == ("if", "if/then_branch", 2)
    assert branch.flops == analysis.totals.flops == 2 * N  # Relu and Neg: one op per element each
    assert branch.time_s[analysis.targets[0].target.name] == pytest.approx(analysis.targets[0].latency_s)
    assert [r.name for r in analysis.run_view.nodes] == ["if/then_branch/relu", "if/then_branch/neg"]
    text = render_explain(analysis, analysis.find_node("if/then_branch/neg"))
    assert "its own kernel" in text and "launch   1 µs per kernel" in text
    text = render_explain(analysis, analysis.find_node("if"))
    assert "subgraph then_branch: 2 nodes, 2,048 FLOPs, 0 params; placed as kernels: its condition is True" in text
    assert "subgraph else_branch: 1 nodes" in text and "not run, not placed" in text


def test_a_loop_bodys_node_says_how_many_times_it_runs(tmp_path):
    analysis = onnxroof.analyze(loop_model(5), targets=[target_file(tmp_path)])
    text = render_explain(analysis, analysis.find_node("loop/body/relu"))
    assert "runs     x 5 per run of the model" in text and "(1 µs x 5 launches)" in text
    body = module_tree(analysis).children[0].children[0]
    assert body.flops == 5 * N  # one Relu of 1,024 elements per run, 5 runs


def test_the_models_type_is_its_floats_not_the_conditions():
    from onnxroof.report.html.model_page import model_page

    analysis = onnxroof.analyze(merged_decoder(), phase="decode", context=128, encoder_seq=1500)
    assert model_page(analysis).model.dtype == "float32 (as stored)"  # the If's own type is its condition's, bool


def test_batch_leaves_the_merged_decoders_switch_alone():
    analysis = onnxroof.analyze(merged_decoder(), phase="decode", context=128, encoder_seq=1500, batch=8)
    flag = next(i for i in analysis.inputs if i.name == "flag")
    assert list(flag.shape) == [1] and analysis.input_values["flag"] == [True] and analysis.complete
    # 8 sequences of one token: 8 x the MACs of one (test_merged: 220,672)
    assert analysis.totals.macs == 8 * 220_672


def test_the_json_says_how_many_times_a_body_runs(tmp_path):
    document = onnxroof.analyze(loop_model(5), targets=[target_file(tmp_path)]).to_dict()
    (loop,) = document["nodes"]
    assert (loop["subgraphs"]["body"]["runs"], loop["subgraphs"]["body"]["runs_bound"]) == (5, False)
    relu = next(k for k in document["targets"][0]["nodes"] if k["name"] == "loop/body/relu")
    assert relu["runs"] == 5 and relu["time_s"] == pytest.approx(5 * (0.8192e-6 + LAUNCH_S))
