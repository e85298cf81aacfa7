"""Kernels, not nodes (cost-model.md section 5, "Kernels"): under a fusion policy a runtime runs
a Conv with its epilogue, or attention's QK^T-softmax-AV, as one kernel. Expected bytes and
times are worked out by hand in the comments."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import make_model, target_text, zeros
from onnx import TensorProto, helper

from onnxroof import analyze
from onnxroof.cli.app import main
from onnxroof.core.examples import build_example
from onnxroof.ops import COST_RULES, OpCost, OpTrait, register, same_as_input
from onnxroof.roofline.kernels import WorkShape, fuse, work_shape

F32 = TensorProto.FLOAT
X = [1, 8, 16, 16]  # 2,048 floats = 8,192 B per activation


def target_file(tmp_path, fusion: str = "", onchip: str = "") -> str:
    """1 TFLOP/s fp32, 10 GB/s DRAM, 1 µs per kernel launch; no on-chip memory unless given."""
    path = tmp_path / f"t{abs(hash((fusion, onchip)))}.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e10, "node_overhead_s": 1e-6},
            f"{onchip}\n{fusion}",
        )
    )
    return str(path)


EPILOGUE = '[fusion]\nrules = ["epilogue"]\nsource = "a runtime that fuses epilogues"'


def residual_block():
    """x -> Conv 3x3 (8 -> 8, pad 1, no bias) -> BatchNormalization -> Relu -> Add(x) -> y."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"], name="bn"),
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "x"], ["y"], name="add"),
    ]
    weights = [("w", zeros(8, 8, 3, 3))] + [(n, np.ones(8, np.float32)) for n in ("scale", "bias", "mean", "var")]
    return make_model(nodes, [("x", F32, X)], [("y", F32, X)], weights)


def test_a_conv_bn_relu_add_block_is_one_kernel_and_its_intermediates_move_no_dram_bytes(tmp_path):
    analysis = analyze(residual_block(), targets=[target_file(tmp_path, EPILOGUE)])
    (kernel,) = analysis.targets[0].nodes
    assert kernel.nodes == ["conv", "bn", "relu", "add"]
    assert kernel.op_type == "Conv+BatchNormalization+Relu+Add"
    # weights 8x8x3x3 x 4 B = 2,304 + BN's four [8] vectors 128 = 2,432; x read once (8,192: the
    # conv and the Add both read it), y written once (8,192); c, b and r stay inside: 18,816 B
    assert kernel.placement.dram_bytes == 2_432 + 8_192 + 8_192
    # 18,816 B / 10 GB/s = 1.8816 µs > compute (about 0.3 MFLOP / 1 TFLOP/s = 0.3 µs); + one launch
    assert kernel.placement.bound == "dram"
    assert kernel.placement.time_s == pytest.approx(1.8816e-6 + 1e-6)
    assert kernel.placement.flops == analysis.totals.flops  # the FLOPs are the nodes' sum


def test_fusion_none_reproduces_the_per_node_roofline(tmp_path):
    # per node, everything from DRAM (no on-chip memory): conv 2,304 + 8,192 + 8,192 = 18,688;
    # BN 128 + 8,192 x 2 = 16,512; Relu 16,384; Add 3 x 8,192 = 24,576
    unfused = analyze(residual_block(), targets=[target_file(tmp_path, EPILOGUE)], fusion="none").targets[0]
    plain = analyze(residual_block(), targets=[target_file(tmp_path)]).targets[0]  # no [fusion]: none
    for report in (unfused, plain):
        assert [(n.nodes, n.placement.dram_bytes) for n in report.nodes] == [
            (["conv"], 18_688),
            (["bn"], 16_512),
            (["relu"], 16_384),
            (["add"], 24_576),
        ]
        # (18,688 + 16,512 + 16,384 + 24,576) B / 10 GB/s = 7.616 µs, + 4 launches of 1 µs
        assert report.latency_s == pytest.approx(7.616e-6 + 4e-6)
        assert report.fusion == ()


def test_the_launch_overhead_is_charged_once_per_kernel(tmp_path):
    fused = analyze(residual_block(), targets=[target_file(tmp_path, EPILOGUE)]).targets[0]
    unfused = analyze(residual_block(), targets=[target_file(tmp_path, EPILOGUE)], fusion="none").targets[0]
    assert sum(n.placement.overhead_s for n in fused.nodes) == pytest.approx(1e-6)
    assert sum(n.placement.overhead_s for n in unfused.nodes) == pytest.approx(4e-6)


def test_a_tensor_also_read_outside_the_kernel_is_written_once(tmp_path):
    # c = Conv(x) feeds the Relu (joins) and a MaxPool (cannot join an epilogue): c is written
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[1, 1]),
    ]
    model = make_model(nodes, [("x", F32, X)], [("r", F32, X), ("p", F32, X)], [("w", zeros(8, 8, 3, 3))])
    report = analyze(model, targets=[target_file(tmp_path, EPILOGUE)]).targets[0]
    kernel = next(n for n in report.nodes if n.name == "conv")
    assert kernel.nodes == ["conv", "relu"]
    # weights 2,304 + x 8,192 in; c 8,192 (for the pool) and r 8,192 out
    assert kernel.placement.dram_bytes == 2_304 + 8_192 + 8_192 + 8_192


def test_a_node_waiting_for_a_tensor_made_after_the_kernel_starts_does_not_join(tmp_path):
    # the Add needs s = Sigmoid(z), which the model computes after the conv: fusing the Add into
    # the conv's kernel would run it before s exists
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Sigmoid", ["z"], ["s"], name="sigmoid"),
        helper.make_node("Add", ["c", "s"], ["y"], name="add"),
    ]
    model = make_model(nodes, [("x", F32, X), ("z", F32, X)], [("y", F32, X)], [("w", zeros(8, 8, 3, 3))])
    report = analyze(model, targets=[target_file(tmp_path, EPILOGUE)]).targets[0]
    assert [n.nodes for n in report.nodes] == [["conv"], ["sigmoid"], ["add"]]


def attention_model():
    """q [1,4,64,16] x kT [1,4,16,64] -> Div by 4 -> Softmax -> x v [1,4,64,16]."""
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        helper.make_node("Div", ["scores", "four"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["out"], name="av"),
    ]
    return make_model(
        nodes,
        [("q", F32, [1, 4, 64, 16]), ("kt", F32, [1, 4, 16, 64]), ("v", F32, [1, 4, 64, 16])],
        [("out", F32, [1, 4, 64, 16])],
        [("four", np.array(4.0, np.float32))],
    )


def test_attention_runs_as_one_kernel_only_under_the_attention_rules(tmp_path):
    target = target_file(tmp_path)
    fused = analyze(attention_model(), targets=[target], fusion="attention").targets[0]
    (kernel,) = fused.nodes
    assert kernel.op_type == "MatMul+Div+Softmax+MatMul"
    # q, kT and v in (3 x 4 x 64 x 16 x 4 B = 49,152), out (16,384); the 4x64x64 scores, scaled
    # scores and probabilities (65,536 B each) never leave the kernel; the scalar 4 is a
    # parameter of 4 B
    assert kernel.placement.dram_bytes == 49_152 + 16_384 + 4
    epilogue = analyze(attention_model(), targets=[target], fusion="epilogue").targets[0]
    assert [n.nodes for n in epilogue.nodes] == [["qk", "scale"], ["softmax"], ["av"]]


def head_layout_model():
    """BERT's attention as exported: q, k, v [1,64,32] reshaped to 4 heads of 8, transposed to
    [1,4,64,8] (K on to [1,4,8,64]), QK^T, Softmax, x V, transposed back and reshaped to [1,64,32]."""
    heads = [1, 64, 4, 8]
    nodes = [helper.make_node("Reshape", [n, "heads"], [f"{n}4"], name=f"split_{n}") for n in ("q", "k", "v")]
    nodes += [
        helper.make_node("Transpose", ["q4"], ["qt"], name="q_heads", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k4"], ["kh"], name="k_heads", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["v4"], ["vt"], name="v_heads", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["kh"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="qk"),
        helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "vt"], ["ctx"], name="av"),
        helper.make_node("Transpose", ["ctx"], ["merged"], name="merge_heads", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["merged", "flat"], ["out"], name="flatten"),
    ]
    inputs = [(n, F32, [1, 64, 32]) for n in ("q", "k", "v")]
    constants = [("heads", np.array(heads, np.int64)), ("flat", np.array([1, 64, 32], np.int64))]
    return make_model(nodes, inputs, [("out", F32, [1, 64, 32])], constants)


def test_a_fused_attention_reads_q_k_v_through_the_head_transposes(tmp_path):
    target = target_file(tmp_path)
    fused = analyze(head_layout_model(), targets=[target], fusion="attention").targets[0]
    # one kernel: the four transposes that split the heads (K's twice) and the one that merges
    # them run inside it, as a fused attention kernel reads and writes [B, S, N, H] with strides
    (kernel,) = [n for n in fused.nodes if n.placement.flops]
    assert set(kernel.nodes) >= {"q_heads", "k_heads", "v_heads", "k_t", "qk", "softmax", "av", "merge_heads"}
    # it reads q, k and v (3 x 64 x 32 x 4 B = 24,576) and writes out (8,192): 32,768 B; the
    # transposed copies (8,192 B each) and the 4x64x64 scores never leave it
    assert kernel.placement.dram_bytes == 24_576 + 8_192
    # without the attention rules each transpose is a kernel of its own: five more launches
    plain = analyze(head_layout_model(), targets=[target], fusion="epilogue").targets[0]
    transposes = [n for n in plain.nodes if n.op_type == "Transpose"]
    assert len(transposes) == 5 and all(n.placement.dram_bytes == 2 * 8_192 for n in transposes)


def test_an_exported_attention_fuses_with_its_inline_constants_mask_and_nan_guard():
    # optimum's GPT-2 writes QK^T, then Constant nodes for the scale and the mask values, a Where
    # that builds the additive mask from a boolean input, the Softmax, an IsNaN / Where guard on
    # the probabilities, and AV: a fused attention kernel runs all of it
    q, kt, v = [1, 4, 64, 16], [1, 4, 16, 64], [1, 4, 64, 16]
    scalar = lambda name, value: helper.make_node(  # noqa: E731
        "Constant", [], [name], name=name, value=helper.make_tensor(name, F32, [], [value])
    )
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="qk"),
        scalar("four", 4.0),
        scalar("zero", 0.0),
        scalar("lowest", -1e9),
        helper.make_node("Div", ["scores", "four"], ["scaled"], name="scale"),
        helper.make_node("Where", ["keep", "zero", "lowest"], ["bias"], name="mask"),
        helper.make_node("Add", ["scaled", "bias"], ["masked"], name="add_mask"),
        helper.make_node("Softmax", ["masked"], ["probs"], name="softmax", axis=-1),
        helper.make_node("IsNaN", ["probs"], ["nan"], name="isnan"),
        helper.make_node("Where", ["nan", "zero", "probs"], ["clean"], name="guard"),
        helper.make_node("MatMul", ["clean", "v"], ["out"], name="av"),
    ]
    model = make_model(
        nodes,
        [("q", F32, q), ("kt", F32, kt), ("v", F32, v), ("keep", TensorProto.BOOL, [1, 1, 64, 64])],
        [("out", F32, v)],
    )
    graph = analyze(model).cost_graph
    (attention,) = [k for k in fuse(graph, ("attention",)) if k.flops]
    assert {"qk", "scale", "mask", "add_mask", "softmax", "isnan", "guard", "av"} <= set(attention.nodes)
    # q, kT, v (3 x 4 x 64 x 16 x 4 B = 49,152) and the 64 x 64 boolean mask (4,096) in, out
    # (16,384) out: the scores, the mask bias and the probabilities never leave the kernel
    assert (attention.input_bytes, attention.output_bytes) == (49_152 + 4_096, 16_384)


def test_projections_of_one_activation_run_as_one_gemm_under_the_horizontal_rules(tmp_path):
    # x [1,64,32] times three stored weights: [32,16] and [32,48] (depth 32 each) and, through
    # a Relu, [32,8]; the two that read x itself join into one GEMM of 64 x (16 + 48) outputs
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"], name="q_proj"),
        helper.make_node("MatMul", ["x", "wkv"], ["kv"], name="kv_proj"),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "wo"], ["o"], name="other"),
    ]
    model = make_model(
        nodes,
        [("x", F32, [1, 64, 32])],
        [("q", F32, [1, 64, 16]), ("kv", F32, [1, 64, 48]), ("o", F32, [1, 64, 8])],
        [("wq", zeros(32, 16)), ("wkv", zeros(32, 48)), ("wo", zeros(32, 8))],
    )
    graph = analyze(model).cost_graph
    kernels = fuse(graph, ("horizontal",))
    assert [k.nodes for k in kernels] == [["q_proj", "kv_proj"], ["relu"], ["other"]]
    (qkv, *_) = kernels
    # x read once (64 x 32 x 4 B = 8,192), the two weights (2,048 + 6,144), both outputs written
    # (4,096 + 12,288)
    assert (qkv.input_bytes, qkv.weight_bytes, qkv.output_bytes) == (8_192, 8_192, 16_384)
    assert work_shape(qkv.records) == WorkShape(1, 64, 64, 32)
    assert [k.nodes for k in fuse(graph, ())][:2] == [["q_proj"], ["kv_proj"]]


def test_a_kernels_time_is_at_least_each_levels_bytes_over_its_bandwidth(tmp_path):
    onchip = (
        '[onchip.size_bytes]\nvalue = 1048576\ntag = "estimate"\nsource = "hand"\n'
        '[onchip.bandwidth_bytes_per_s]\nvalue = 1e11\ntag = "estimate"\nsource = "hand"'
    )
    report = analyze(
        build_example("minigooglenet"), targets=[target_file(tmp_path, onchip=onchip)], fusion="all"
    ).targets[0]
    assert any(len(n.nodes) > 1 for n in report.nodes)
    for kernel in report.nodes:
        point = kernel.placement
        assert point.time_s >= point.dram_bytes / 1e10
        assert point.time_s >= point.onchip_bytes / 1e11
        assert point.time_s >= point.flops / 1e12


def test_every_counted_node_is_in_exactly_one_kernel():
    graph = analyze(build_example("minigooglenet-separable")).cost_graph
    kernels = fuse(graph, ("epilogue", "elementwise", "normalization", "attention"))
    names = [n for k in kernels for n in k.nodes]
    assert sorted(names) == sorted(r.name for r in graph.records if r.counted)


def test_the_fusion_flag_and_the_target_field_are_validated(tmp_path, capsys):
    assert main(["summary", "--example", "shallownet", "--fusion", "everything"]) == 2
    assert "--fusion 'everything'" in capsys.readouterr().err
    bad = target_file(tmp_path, '[fusion]\nrules = ["epilogue", "magic"]\nsource = "x"')
    assert main(["summary", "--example", "shallownet", "--target", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert "fusion.rules" in err and "\n" not in err


def test_the_json_document_names_each_kernels_nodes_and_the_policy(tmp_path, capsys):
    path = tmp_path / "block.onnx"
    path.write_bytes(residual_block().SerializeToString())
    assert main(["summary", str(path), "--target", target_file(tmp_path, EPILOGUE), "--format", "json"]) == 0
    target = json.loads(capsys.readouterr().out)["targets"][0]
    assert target["fusion"] == ["epilogue"]
    assert [(n["name"], n["nodes"]) for n in target["nodes"]] == [("conv", ["conv", "bn", "relu", "add"])]
    assert (
        main(
            ["summary", str(path), "--target", target_file(tmp_path, EPILOGUE), "--format", "json", "--fusion", "none"]
        )
        == 0
    )
    target = json.loads(capsys.readouterr().out)["targets"][0]
    assert target["fusion"] == [] and [n["nodes"] for n in target["nodes"]] == [["conv"], ["bn"], ["relu"], ["add"]]


def test_tensors_kept_inside_a_kernel_take_no_on_chip_space_and_never_spill(tmp_path):
    # x -> Conv c -> Relu r -> Add(r, x) -> y with 20,000 B on chip. One kernel per node: at the
    # Relu, c, r and x (still needed by the Add) are 3 x 8,192 = 24,576 B > 20,000, so a buffer
    # spills. Fused (epilogue), c and r never leave the kernel: at most x and y are live (16,384 B)
    onchip = (
        '[onchip.size_bytes]\nvalue = 20000\ntag = "estimate"\nsource = "hand"\n'
        '[onchip.bandwidth_bytes_per_s]\nvalue = 1e11\ntag = "estimate"\nsource = "hand"'
    )
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "x"], ["y"], name="add"),
    ]
    model = make_model(nodes, [("x", F32, X)], [("y", F32, X)], [("w", zeros(8, 8, 3, 3))])
    target = target_file(tmp_path, EPILOGUE, onchip)
    unfused = analyze(model, targets=[target], fusion="none").targets[0]
    assert unfused.spill_bytes > 0
    (kernel,) = analyze(model, targets=[target]).targets[0].nodes
    assert kernel.spill_bytes == 0
    # from DRAM: the weights (2,304), the model's input x (8,192) and output y (8,192)
    assert kernel.placement.dram_bytes == 2_304 + 8_192 + 8_192


def test_no_overhead_and_no_fusion_give_the_plain_roofline(tmp_path, capsys):
    # per node, DRAM only: (18,688 + 16,512 + 16,384 + 24,576) B / 10 GB/s = 7.616 µs, no launches
    path = tmp_path / "block.onnx"
    path.write_bytes(residual_block().SerializeToString())
    target = target_file(tmp_path, EPILOGUE)
    assert (
        main(["summary", str(path), "--target", target, "--format", "json", "--fusion", "none", "--no-overhead"]) == 0
    )
    report = json.loads(capsys.readouterr().out)["targets"][0]
    assert report["latency_s"] == pytest.approx(7.616e-6)
    assert all(n["overhead_s"] == 0 for n in report["nodes"])
    # the target's own fusion without launches: one kernel of 18,816 B, 1.8816 µs
    assert main(["summary", str(path), "--target", target, "--format", "json", "--no-overhead"]) == 0
    assert json.loads(capsys.readouterr().out)["targets"][0]["latency_s"] == pytest.approx(1.8816e-6)


def test_the_targets_list_names_each_targets_fusion_policy(capsys):
    # hardware/jetson-orin-nano.toml fuses all four rule sets (TensorRT) with a 5 µs launch per
    # kernel; hardware/myriad-x.toml names no fusion and no launch cost
    assert main(["targets"]) == 0
    blocks = capsys.readouterr().out.split("\n")

    def block(name):
        start = next(i for i, line in enumerate(blocks) if line.startswith(name + " "))
        end = next(i for i in range(start + 1, len(blocks)) if blocks[i] and not blocks[i].startswith(" "))
        return "\n".join(blocks[start:end])

    assert "fusion: epilogue, elementwise, normalization, horizontal, attention, launch 5 µs per kernel" in block(
        "jetson-orin-nano"
    )
    assert "fusion: none (one kernel per node)" in block("myriad-x")


def _matmul_then_plugin_activation():
    """x [1, 64] -> MatMul (W [64, 32]) -> y [1, 32] -> acme::MyAct -> z [1, 32]."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
        helper.make_node("MyAct", ["y"], ["z"], name="act", domain="acme"),
    ]
    model = make_model(nodes, [("x", F32, [1, 64])], [("z", F32, [1, 32])], [("w", zeros(64, 32))])
    model.opset_import.append(helper.make_opsetid("acme", 1))
    return model


@pytest.mark.parametrize("traits", [OpTrait.ELEMENTWISE, OpTrait.NONE])
def test_a_plugin_op_declared_elementwise_joins_a_matmul_as_its_epilogue(tmp_path, traits):
    def my_act(node):
        """FLOPs = 3 x output elements."""
        return OpCost(flops=3 * node.output_elements(0))

    # the declared traits decide, not the family (its FAMILY_TRAITS are only a default for none declared)
    register("MyAct", my_act, family="elementwise", domain="acme", shapes=same_as_input(0), traits=traits)
    try:
        report = analyze(_matmul_then_plugin_activation(), targets=[target_file(tmp_path, EPILOGUE)]).targets[0]
    finally:
        COST_RULES.pop(("acme", "MyAct"), None)
    # W 64 x 32 x 4 B = 8,192; x 256 B; y and z 128 B each. MatMul 2 x 2,048 MACs = 4,096 FLOPs, MyAct 96
    if traits == OpTrait.ELEMENTWISE:
        (kernel,) = report.nodes
        assert kernel.nodes == ["mm", "act"] and kernel.op_type == "MatMul+MyAct"
        # y stays inside the kernel: W + x + z = 8,576 B; 8,576 B / 10 GB/s = 0.8576 µs, + one launch
        assert kernel.placement.dram_bytes == 8_192 + 256 + 128
        assert kernel.placement.flops == 4_096 + 96
        assert report.latency_s == pytest.approx(0.8576e-6 + 1e-6)
    else:
        # two kernels: the MatMul writes y (W + x + y = 8,576 B), MyAct reads it back (y + z = 256 B)
        assert [(n.nodes, n.placement.dram_bytes) for n in report.nodes] == [(["mm"], 8_576), (["act"], 256)]
        assert report.latency_s == pytest.approx(0.8576e-6 + 0.0256e-6 + 2e-6)


class _CountingTensors(dict):
    """The cost graph's tensors, counting every lookup fusion makes (time is not measured)."""

    lookups = 0

    def get(self, *args):
        _CountingTensors.lookups += 1
        return super().get(*args)

    def __getitem__(self, key):
        _CountingTensors.lookups += 1
        return super().__getitem__(key)

    def __contains__(self, key):
        _CountingTensors.lookups += 1
        return super().__contains__(key)


def test_a_chain_of_2000_relu_is_one_kernel_built_in_linear_work():
    count = 2_000
    nodes = [
        helper.make_node("Relu", ["x" if i == 0 else f"r{i - 1}"], [f"r{i}"], name=f"relu_{i}") for i in range(count)
    ]
    graph = analyze(make_model(nodes, [("x", F32, [1, 16])], [(f"r{count - 1}", F32, [1, 16])])).cost_graph
    graph.tensors = _CountingTensors(graph.tensors)
    _CountingTensors.lookups = 0
    (kernel,) = fuse(graph, ("elementwise",))
    assert kernel.nodes == [f"relu_{i}" for i in range(count)]
    # 1 x 16 float32 = 64 B: x read once, the last Relu's output written once; the 1,999 tensors
    # between the Relu stay inside and move nothing
    assert (kernel.input_bytes, kernel.output_bytes, len(kernel.internal)) == (64, 64, count - 1)
    # a few lookups per node: growing the kernel by looking again at every member's readers at
    # each step (the quadratic fusion of issue 32) made about count^2 / 2 = 2,000,000
    assert _CountingTensors.lookups < 10 * count


def _fan_in(branches: int):
    """x [1,16] -> ``branches`` Relu side by side -> one Sum of all their outputs -> y."""
    nodes = [helper.make_node("Relu", ["x"], [f"r{i}"], name=f"relu_{i}") for i in range(branches)]
    nodes.append(helper.make_node("Sum", [f"r{i}" for i in range(branches)], ["y"], name="sum"))
    return make_model(nodes, [("x", F32, [1, 16])], [("y", F32, [1, 16])])


def test_a_fan_in_join_waits_for_its_last_branch_and_fuses_with_it():
    graph = analyze(_fan_in(4)).cost_graph
    kernels = fuse(graph, ("elementwise",))
    # relu_0's kernel starts before relu_1, relu_2 and relu_3 make the Sum's other inputs, so the
    # Sum cannot join it, nor relu_1's or relu_2's; in relu_3's kernel r0, r1 and r2 are made
    # before the start and r3 inside: the Sum joins. 4 kernels, the last of 2 nodes
    assert [k.nodes for k in kernels] == [["relu_0"], ["relu_1"], ["relu_2"], ["relu_3", "sum"]]
    # 64 B per [1,16] float32: relu_3 reads x (64) and the Sum r0, r1, r2 (192); r3 stays
    # inside; y is written (64)
    last = kernels[-1]
    assert (last.input_bytes, last.output_bytes, last.internal) == (64 + 3 * 64, 64, ["r3"])


def test_a_join_of_two_branches_of_one_kernel_joins_once_both_are_inside():
    # x -> Relu -> r; Neg(r) and Abs(r); Add of the two: the Add waits for Neg and Abs, both of
    # which join the Relu's kernel, then it joins too: 4 nodes, r, n and a inside
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Neg", ["r"], ["n"], name="neg"),
        helper.make_node("Abs", ["r"], ["a"], name="abs"),
        helper.make_node("Add", ["n", "a"], ["y"], name="add"),
    ]
    graph = analyze(make_model(nodes, [("x", F32, [1, 16])], [("y", F32, [1, 16])])).cost_graph
    (kernel,) = fuse(graph, ("elementwise",))
    assert kernel.nodes == ["relu", "neg", "abs", "add"]
    # x read once (64 B), y written once (64 B)
    assert (kernel.input_bytes, kernel.output_bytes, sorted(kernel.internal)) == (64, 64, ["a", "n", "r"])


def test_a_join_of_2000_branches_is_fused_in_linear_work():
    count = 2_000
    graph = analyze(_fan_in(count)).cost_graph
    graph.tensors = _CountingTensors(graph.tensors)
    _CountingTensors.lookups = 0
    kernels = fuse(graph, ("elementwise",))
    # as with 4 branches: a kernel per Relu, the last with the Sum
    assert len(kernels) == count and kernels[-1].nodes == [f"relu_{count - 1}", "sum"]
    # a few lookups per edge (2,000 x -> Relu, 2,000 Relu -> Sum): each branch's kernel checking
    # every input of the Sum made about count^2 / 2 = 2,000,000
    assert _CountingTensors.lookups < 10 * 2 * count


def test_a_long_run_of_views_inside_a_kernel_is_followed_without_recursion():
    # Relu -> 3,000 Identity -> Relu: the first Relu's output reaches the second Relu through the
    # views only, so it stays inside (issue 32: this was a RecursionError, exit 3)
    count = 3_000
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_0")]
    nodes += [
        helper.make_node("Identity", ["r" if i == 0 else f"i{i - 1}"], [f"i{i}"], name=f"identity_{i}")
        for i in range(count)
    ]
    nodes.append(helper.make_node("Relu", [f"i{count - 1}"], ["y"], name="relu_1"))
    graph = analyze(make_model(nodes, [("x", F32, [1, 16])], [("y", F32, [1, 16])])).cost_graph
    (kernel,) = fuse(graph, ("elementwise",))
    assert len(kernel.nodes) == count + 2 and kernel.op_type == "Relu+Relu"
    # 64 B in (x), 64 B out (y); r stays inside; the views move nothing
    assert (kernel.input_bytes, kernel.output_bytes, kernel.internal) == (64, 64, ["r"])
