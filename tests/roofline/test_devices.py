"""Tensor and pipeline parallelism read from a small GQA decoder built here: the column / row split
of each projection, the bytes each all-reduce moves (ring), the KV shard with fewer KV heads than
devices, a two-stage pipeline's bubble, and the fewest devices that fit; every figure by hand."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model, target_text, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.cost.tensor_parallel import find_structure
from onnxroof.roofline.devices import bubble_fraction

F32 = TensorProto.FLOAT
D, Q_HEADS, KV_HEADS, HEAD, FFN, VOCAB = 64, 8, 2, 8, 128, 32


def gqa_decoder(layers: int = 2, ffn: int = FFN):
    """``layers`` pre-scaled decoder layers over a KV cache: q (64 x 64), k and v (64 x 16: 2 KV heads
    of 8), the cache concatenated, KV heads repeated 4 times for 8 query heads, scores, softmax,
    context, output projection (64 x 64), residual; a SiLU-gated MLP (gate and up 64 x 128, down
    128 x 64), residual; an LM head 64 x 32. Float32."""
    nodes, inits = (
        [],
        [
            ("heads_q", np.array([0, 0, Q_HEADS, HEAD], np.int64)),
            ("heads_kv", np.array([0, 0, KV_HEADS, HEAD], np.int64)),
            ("merge", np.array([0, 0, D], np.int64)),
            ("axis2", np.array([2], np.int64)),
            ("repeat", np.array([1, 1, Q_HEADS // KV_HEADS, 1, 1], np.int64)),
            ("rep_shape", np.array([0, Q_HEADS, -1, HEAD], np.int64)),
        ],
    )
    inputs, outputs = [("inputs_embeds", F32, ["batch", "sequence_length", D])], []
    x = "inputs_embeds"

    def add(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    for i in range(layers):
        p = f"l{i}"
        inits += [
            (f"{p}.norm1", zeros(D)),
            (f"{p}.norm2", zeros(D)),
            (f"{p}.wq", zeros(D, Q_HEADS * HEAD)),
            (f"{p}.wk", zeros(D, KV_HEADS * HEAD)),
            (f"{p}.wv", zeros(D, KV_HEADS * HEAD)),
            (f"{p}.wo", zeros(Q_HEADS * HEAD, D)),
            (f"{p}.wg", zeros(D, ffn)),
            (f"{p}.wu", zeros(D, ffn)),
            (f"{p}.wd", zeros(ffn, D)),
        ]
        cache = ["batch", KV_HEADS, "past_sequence_length", HEAD]
        present = ["batch", KV_HEADS, "total_sequence_length", HEAD]
        inputs += [(f"past_key_values.{i}.key", F32, cache), (f"past_key_values.{i}.value", F32, cache)]
        outputs += [(f"present.{i}.key", F32, present), (f"present.{i}.value", F32, present)]
        h = add("Mul", [x, f"{p}.norm1"], f"{p}.h")
        q = add(
            "Transpose",
            [add("Reshape", [add("MatMul", [h, f"{p}.wq"], f"{p}.q"), "heads_q"], f"{p}.q4")],
            f"{p}.qt",
            perm=[0, 2, 1, 3],
        )
        rep = {}
        for n in "kv":
            new = add(
                "Transpose",
                [add("Reshape", [add("MatMul", [h, f"{p}.w{n}"], f"{p}.{n}"), "heads_kv"], f"{p}.{n}4")],
                f"{p}.{n}t",
                perm=[0, 2, 1, 3],
            )
            kind = "key" if n == "k" else "value"
            full = add("Concat", [f"past_key_values.{i}.{kind}", new], f"present.{i}.{kind}", axis=2)
            rep[n] = add(
                "Reshape",
                [add("Expand", [add("Unsqueeze", [full, "axis2"], f"{p}.{n}u"), "repeat"], f"{p}.{n}e"), "rep_shape"],
                f"{p}.{n}r",
            )
        scores = add("MatMul", [q, add("Transpose", [rep["k"]], f"{p}.kT", perm=[0, 1, 3, 2])], f"{p}.scores")
        context = add("MatMul", [add("Softmax", [scores], f"{p}.probs", axis=-1), rep["v"]], f"{p}.context")
        merged = add("Reshape", [add("Transpose", [context], f"{p}.ct", perm=[0, 2, 1, 3]), "merge"], f"{p}.cm")
        x = add("Add", [x, add("MatMul", [merged, f"{p}.wo"], f"{p}.o")], f"{p}.res1")
        h = add("Mul", [x, f"{p}.norm2"], f"{p}.h2")
        gate = add("MatMul", [h, f"{p}.wg"], f"{p}.gate")
        act = add("Mul", [add("Sigmoid", [gate], f"{p}.sig"), gate], f"{p}.silu")
        up = add("Mul", [act, add("MatMul", [h, f"{p}.wu"], f"{p}.up")], f"{p}.gated")
        x = add("Add", [x, add("MatMul", [up, f"{p}.wd"], f"{p}.down")], f"{p}.res2")
    inits.append(("lm_head", zeros(D, VOCAB)))
    add("MatMul", [x, "lm_head"], "logits")
    return make_model(nodes, inputs, [("logits", F32, ["batch", "sequence_length", VOCAB]), *outputs], inits)


# weights by hand (float32, 4 B): per layer q 64x64 = 16,384 B, k and v 64x16 = 4,096 B each, o 16,384 B,
# gate, up and down 64x128 = 32,768 B each; two norms of 64 = 512 B; the LM head 64x32 = 8,192 B
LAYER_PROJECTIONS = 16_384 + 4_096 + 4_096 + 16_384 + 3 * 32_768  # 139,264 B
REPLICATED = 2 * 512 + 8_192  # both layers' norms and the LM head
WEIGHTS = 2 * LAYER_PROJECTIONS + REPLICATED  # 287,744 B


def analysed(devices: int = 4, target: str = "h100-sxm", ffn: int = FFN, **options):
    return onnxroof.analyze(
        gqa_decoder(ffn=ffn), phase="decode", context=100, targets=[target], devices=devices, **options
    )


def test_the_blocks_are_found_from_the_dataflow():
    analysis = analysed()
    structure = find_structure(analysis.cost_graph, analysis.llm.head_size)
    kinds = [(b.kind, b.first, b.second) for b in structure.blocks]
    assert kinds == [
        ("attention", ("l0.q", "l0.k", "l0.v"), "l0.o"),
        ("mlp", ("l0.gate", "l0.up"), "l0.down"),
        ("attention", ("l1.q", "l1.k", "l1.v"), "l1.o"),
        ("mlp", ("l1.gate", "l1.up"), "l1.down"),
    ]
    attention = structure.blocks[0]
    assert attention.heads == {"l0.q": 8, "l0.k": 2, "l0.v": 2} and attention.hidden == D
    # column-parallel q over N; k and v over min(N, 2 KV heads); row-parallel o over N
    assert structure.split_ways(2) == structure.split_ways(2) | {"l0.q": 2, "l0.k": 2, "l0.v": 2, "l0.o": 2}
    ways4 = structure.split_ways(4)
    assert (ways4["l0.q"], ways4["l0.k"], ways4["l0.v"], ways4["l0.o"], ways4["l0.gate"], ways4["l0.down"]) == (
        4,
        2,
        2,
        4,
        4,
        4,
    )
    assert ways4["l0.scores"] == ways4["l0.silu"] == 4  # the work between runs on each device's heads / columns
    # but each device reads one KV head's cache whole: the attention's bytes divide over the 2 KV heads
    bytes4 = structure.byte_ways(4)
    assert bytes4["l0.scores"] == bytes4["l0.probs"] == 2 and bytes4["l0.silu"] == 4 and bytes4["l0.q"] == 4
    assert "logits" in structure.replicated and "l0.res1" in structure.replicated and "logits" not in ways4


def test_weights_per_device_by_the_split():
    plan = analysed().parallel[0]
    assert plan.choice(1).weight_bytes == WEIGHTS
    # TP=2: every projection halved (k and v: one KV head each)
    assert plan.choice(2).weight_bytes == LAYER_PROJECTIONS + REPLICATED  # 148,480
    # TP=4: q, o and the MLP over 4; k and v over 2 (2 KV heads: each device holds one, replicated)
    per_layer = (16_384 + 16_384 + 3 * 32_768) // 4 + (4_096 + 4_096) // 2
    assert plan.choice(4).weight_bytes == 2 * per_layer + REPLICATED == 82_944


@pytest.mark.parametrize("devices, sent", [(2, 256), (4, 384)])
def test_each_all_reduce_moves_the_ring_bytes(devices, sent):
    plan = analysed(devices).parallel[0]
    reduces = plan.choice(devices).all_reduces
    # one after each row-parallel projection (o and down, two layers); each sums [1, 1, 64] float32 = 256 B
    assert [r.after for r in reduces] == ["l0.o", "l0.down", "l1.o", "l1.down"]
    assert {r.message_bytes for r in reduces} == {256}
    # ring: each device sends 2 (N - 1) / N of the message: 256 B at N = 2, 384 B at N = 4
    assert {r.sent_bytes for r in reduces} == {sent}
    # NVLink 4: 450 GB/s a direction, 0.47 µs a step, 3.6 µs a collective (h100-sxm.toml)
    each_s = 2 * (devices - 1) * 0.47e-6 + sent / 450e9 + 3.6e-6
    assert all(r.time_s == pytest.approx(each_s) for r in reduces)
    assert plan.choice(devices).collective_s == pytest.approx(4 * each_s)


def test_kv_shard_with_fewer_kv_heads_than_devices():
    analysis = analysed(8)
    # the cache at context 100: 2 layers x (k, v) x 2 KV heads x 100 positions x 8 x 4 B = 25,600 B
    assert analysis.llm.kv_heads == KV_HEADS and analysis.llm.kv_read_bytes == 25_600
    plan = analysis.parallel[0]
    # N <= KV heads: split by heads; N > KV heads: each device holds one KV head's cache (replicated N / 2 times)
    assert [plan.choice(n).kv_cache_bytes for n in (1, 2, 4, 8)] == [25_600, 12_800, 12_800, 12_800]
    assert any("2 KV heads: above TP=2 each device holds one KV head's cache" in note for note in plan.notes)


def test_a_split_that_does_not_divide_is_refused_and_said():
    plan = analysed(16).parallel[0]
    assert plan.choice(16) is None and "8 attention heads do not divide over 16" in plan.refused[16]


def test_one_device_is_the_single_device_latency():
    analysis = analysed(2)
    assert analysis.parallel[0].choice(1).latency_s == pytest.approx(analysis.targets[0].latency_s)


def test_two_stage_pipeline_bubble():
    assert bubble_fraction(2, 1) == 0.5 and bubble_fraction(2, 8) == pytest.approx(1 / 9)
    for micro in (1, 8):
        choice = analysed(2, micro_batches=micro).parallel[0].choice(1, 2)
        assert choice.bubble == pytest.approx(1 / (micro + 1))
        # one token per micro-batch; m of them every (m + p - 1) periods
        assert choice.per_s == pytest.approx(micro / ((micro + 1) * choice.period_s))
        assert choice.latency_s == pytest.approx(choice.compute_s + choice.transfer_s)
        assert len(choice.stage_cuts) == 1 and choice.transfer_s > 0


def test_the_fewest_devices_for_weights_one_and_a_half_times_the_memory(tmp_path):
    # an MLP of 1,024 (gate, up, down 64 x 1,024 x 4 B = 262,144 B each) so that the weights, not the
    # activations, decide: per layer 16,384 + 2 x 4,096 + 16,384 + 3 x 262,144 = 827,392 B
    weights = 2 * 827_392 + REPLICATED  # 1,664,000 B
    capacity = weights * 2 // 3  # the weights are 1.5 x one device's memory
    link = "".join(
        f'[interconnect.link.{key}]\nvalue = {value}\ntag = "estimate"\nsource = "hand"\n'
        for key, value in (("bandwidth_bytes_per_s", 100e9), ("latency_s", 1e-6), ("devices", 8))
    )
    path = tmp_path / "small.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e11, "dram.size_bytes": capacity}, extra=link
        ),
        encoding="utf-8",
    )
    analysis = analysed(8, str(path), ffn=1024)
    assert analysis.totals.param_bytes == weights
    plan = analysis.parallel[0]
    assert plan.choice(1).fits is False  # the weights alone exceed it
    assert plan.choice(2).weight_bytes == 827_392 + REPLICATED  # half the projections, the rest whole
    fewest = plan.fewest
    assert fewest.devices == 2 and fewest.need_bytes <= capacity


def test_an_unrecognised_model_replicates_and_says_so():
    from conftest import make_model as build

    model = build(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [("x", F32, [1, 1024])], [("y", F32, [1, 1024])]
    )
    plan = onnxroof.analyze(model, targets=["h100-sxm"], devices=2).parallel[0]
    assert not plan.recognised and "not split by tensor parallelism" in plan.notes[0]
    assert plan.choice(2).latency_s == pytest.approx(plan.choice(1).latency_s)  # replicated: no faster
    assert plan.choice(2).collective_s == 0


def test_one_device_leaves_the_analysis_as_it_was():
    analysis = onnxroof.analyze(gqa_decoder(), phase="decode", context=100, targets=["h100-sxm"])
    assert analysis.parallel == [] and "parallel" not in analysis.to_dict()


def test_the_outputs_with_devices(tmp_path, capsys):
    import json

    import onnx
    from conftest import run

    model = tmp_path / "gqa.onnx"

    onnx.save(gqa_decoder(), model)
    flags = [model, "--phase", "decode", "--context", "100", "--target", "h100-sxm", "-q"]
    plain = [run(capsys, "summary", *flags, *extra)[1] for extra in ([], ["--devices", "1"])]
    assert plain[0] == plain[1] and "Several devices" not in plain[0]  # one device: every output as it was
    document = [run(capsys, "summary", *flags, "--format", "json", *extra)[1] for extra in ([], ["--devices", "1"])]
    assert document[0] == document[1] and "parallel" not in json.loads(document[0])
    code, text, _ = run(capsys, "summary", *flags, "--devices", "4")
    assert code == 0 and "Several devices on h100-sxm (up to 4, linked by nvlink" in text
    assert "2 attention and 2 MLP blocks split" in text and "fits on 1 device at the fewest" in text
    parallel = json.loads(run(capsys, "summary", *flags, "--devices", "4", "--format", "json")[1])["parallel"][0]
    assert [(c["tensor"], c["pipeline"]) for c in parallel["choices"]] == [
        (1, 1),
        (1, 2),
        (1, 4),
        (2, 1),
        (2, 2),
        (4, 1),
    ]
    assert parallel["choices"][3]["all_reduces"] == 4 and parallel["choices"][3]["all_reduce_message_bytes"] == 4 * 256
    page = tmp_path / "report.html"
    assert run(capsys, "report", *flags, "--devices", "4", "-o", page)[0] == 0
    html = page.read_text(encoding="utf-8")
    assert 'id="devices"' in html and html.count("<tr") >= 7
    assert run(capsys, "report", *flags, "-o", page)[0] == 0 and 'id="devices"' not in page.read_text(encoding="utf-8")


def test_a_target_without_links_plans_one_device():
    plan = analysed(4, "raspberry-pi-5").parallel[0]
    assert [(c.tensor, c.pipeline) for c in plan.choices] == [(1, 1)]
    assert any("states no interconnect" in note for note in plan.notes)


def test_devices_is_checked():
    from onnxroof.core.errors import OptionError

    with pytest.raises(OptionError, match="devices"):
        onnxroof.analyze(gqa_decoder(), phase="decode", context=100, devices=0)


def test_a_fused_attention_op_reading_a_rotary_table_is_an_attention_block():
    """onnxruntime-genai's form: q (64 x 64), k and v (64 x 32) feeding one GroupQueryAttention that
    reads stored cos and sin tables [positions, 8] (2-D parameters, but not a projection's weight:
    neither dim is what the op contracts or makes), then o (64 x 64)."""
    ms = "com.microsoft"
    nodes = [helper.make_node("MatMul", ["x", f"w{n}"], [n], name=n) for n in "qkv"] + [
        helper.make_node(
            "GroupQueryAttention",
            [
                "q",
                "k",
                "v",
                "past_key_values.0.key",
                "past_key_values.0.value",
                "seqlens_k",
                "total_sequence_length",
                "cos",
                "sin",
            ],
            ["attn", "present.0.key", "present.0.value"],
            name="gqa",
            domain=ms,
            num_heads=4,
            kv_num_heads=2,
            do_rotary=1,
        ),
        helper.make_node("MatMul", ["attn", "wo"], ["y"], name="o"),
    ]
    cache = ["batch", 2, "past_sequence_length", 16]
    model = make_model(
        nodes,
        [
            ("x", F32, ["batch", "sequence_length", 64]),
            ("past_key_values.0.key", F32, cache),
            ("past_key_values.0.value", F32, cache),
            ("seqlens_k", TensorProto.INT32, ["batch"]),
            ("total_sequence_length", TensorProto.INT32, []),
        ],
        [
            ("y", F32, ["batch", "sequence_length", 64]),
            ("present.0.key", F32, ["batch", 2, "total_sequence_length", 16]),
            ("present.0.value", F32, ["batch", 2, "total_sequence_length", 16]),
        ],
        [
            ("wq", zeros(64, 64)),
            ("wk", zeros(64, 32)),
            ("wv", zeros(64, 32)),
            ("wo", zeros(64, 64)),
            ("cos", zeros(256, 8)),
            ("sin", zeros(256, 8)),
        ],
    )
    model.opset_import.append(helper.make_opsetid(ms, 1))
    analysis = onnxroof.analyze(
        model, phase="decode", context=100, dims={"sequence_length": 1}, targets=["h100-sxm"], devices=4
    )
    structure = find_structure(analysis.cost_graph, analysis.llm.head_size)
    [block] = structure.blocks
    assert (block.kind, block.first, block.second, block.inner) == ("attention", ("q", "k", "v"), "o", ("gqa",))
    assert block.heads == {"q": 4, "k": 2, "v": 2}  # the head size, 16, from the KV cache
    assert structure.split_ways(4) == {"q": 4, "k": 2, "v": 2, "gqa": 4, "o": 4}


def test_devices_without_a_target_says_so():
    analysis = onnxroof.analyze(gqa_decoder(), phase="decode", context=100, devices=4)
    assert analysis.parallel == [] and any("give a target to plan them" in w for w in analysis.warnings)


def test_diff_compares_the_fewest_devices_and_the_fastest_split(tmp_path, capsys):
    import onnx
    from conftest import run

    base, head = tmp_path / "base.onnx", tmp_path / "head.onnx"
    onnx.save(gqa_decoder(), base)
    onnx.save(gqa_decoder(ffn=1024), head)
    flags = [base, head, "--phase", "decode", "--context", "100", "--target", "h100-sxm", "-q"]
    assert "fewest devices" not in run(capsys, "diff", *flags)[1]
    text = run(capsys, "diff", *flags, "--devices", "4")[1]
    assert "fewest devices that fit (of 4) [h100-sxm]" in text and "fastest split's step [h100-sxm]" in text


def test_where_each_split_s_time_goes():
    plan = analysed(4).parallel[0]
    for choice in plan.choices:
        assert sum(choice.seconds_by_bound.values()) == pytest.approx(choice.latency_s)
        assert choice.seconds_by_bound.get("all-reduce", 0.0) == pytest.approx(choice.collective_s)
    assert plan.choice(1).time_share.get("all-reduce") is None and plan.choice(4).time_share["all-reduce"] > 0
