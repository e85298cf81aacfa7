"""Seq2seq decoders (issue 31): a merged decoder, whose network sits in the two branches of one If
on an input (optimum's ``decoder_model_merged.onnx``), and cross-attention caches, computed once
from the encoder output and read every step, never appended. Every figure is worked out by hand.

The layer: hidden 64, 4 heads of 16, one new token in decode. Self-attention appends its keys and
values to a past cache (a Concat along axis 2); cross-attention reads keys and values of the
encoder's E positions (a past input in the branch with a cache; computed from the encoder output
in the branch without one, which the other branch returns as empty placeholders, as optimum's
merge does)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper, numpy_helper

import onnxroof
from onnxroof.core.errors import UsageError
from onnxroof.cost.llm import detect_decoder
from onnxroof.frontend.scopes import separate_sibling_scopes

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
HEADS, HEAD = 4, 16
D = HEADS * HEAD  # 64
PROMPT = 128  # the prompt length the branch without a cache was written for (its failing Reshape)


def _heads(x: str, out: str) -> list:
    """[B, L, 64] -> [B, 4, L, 16]."""
    return [
        helper.make_node("Reshape", [x, "to_heads"], [out + "_bshd"]),
        helper.make_node("Transpose", [out + "_bshd"], [out], perm=[0, 2, 1, 3]),
    ]


def _attention(q: str, keys: str, values: str, out: str) -> list:
    """softmax(q . keys^T) . values: 2 x 4 heads x S x L x 16 MACs."""
    return [
        helper.make_node("Transpose", [keys], [out + "_kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", [q, out + "_kt"], [out + "_scores"]),
        helper.make_node("Softmax", [out + "_scores"], [out + "_probs"], axis=-1),
        helper.make_node("MatMul", [out + "_probs", values], [out]),
    ]


def _branch(cached: bool, cross: bool) -> helper.GraphProto:
    """One branch of the merged decoder; both branches use the same tensor names, as optimum's
    do (each branch is a scope of its own)."""
    nodes = [helper.make_node("Gather", ["embedding", "input_ids"], ["h"])]
    if not cached:  # written for a 128-token prompt: fails shape inference at any other length
        nodes.append(helper.make_node("Reshape", ["h", "prompt_shape"], ["h_prompt"]))
    source = "h" if cached else "h_prompt"
    for n in "qkv":
        nodes += [helper.make_node("MatMul", [source, f"w{n}"], [f"{n}_flat"]), *_heads(f"{n}_flat", f"{n}_new")]
    if cached:
        nodes += [
            helper.make_node("Concat", ["past.0.self.key", "k_new"], ["present_k"], axis=2),
            helper.make_node("Concat", ["past.0.self.value", "v_new"], ["present_v"], axis=2),
        ]
    else:
        nodes += [
            helper.make_node("Identity", ["k_new"], ["present_k"]),
            helper.make_node("Identity", ["v_new"], ["present_v"]),
        ]
    nodes += _attention("q_new", "present_k", "present_v", "self_out")
    outputs = ["self_out", "present_k", "present_v"]
    if cross:
        if cached:  # read from the cache; the presents are empty placeholders [0, 4, 1, 16]
            keys, values = "past.0.cross.key", "past.0.cross.value"
            nodes += [
                helper.make_node("Constant", [], [name], value=numpy_helper.from_array(zeros(0, HEADS, 1, HEAD)))
                for name in ("cross_k", "cross_v")
            ]
        else:  # computed from the encoder output: 2 x E x 64 x 64 MACs
            nodes += [
                helper.make_node("MatMul", ["encoder_hidden_states", "wck"], ["ck_flat"]),
                *_heads("ck_flat", "cross_k"),
                helper.make_node("MatMul", ["encoder_hidden_states", "wcv"], ["cv_flat"]),
                *_heads("cv_flat", "cross_v"),
            ]
            keys, values = "cross_k", "cross_v"
        nodes += _attention("q_new", keys, values, "cross_out")
        nodes.append(helper.make_node("Add", ["self_out", "cross_out"], ["out"]))
        outputs = ["out", "present_k", "present_v", "cross_k", "cross_v"]
    return helper.make_graph(
        nodes, "cached" if cached else "uncached", [], [helper.make_tensor_value_info(o, F32, None) for o in outputs]
    )


def merged_decoder(cached_in_then: bool = True, cross: bool = True, condition: str = "flag"):
    """One file with and without a cache: an If on ``condition`` whose ``then`` (or ``else``)
    branch reads the past inputs."""
    cached, uncached = _branch(True, cross), _branch(False, cross)
    branches = (
        dict(then_branch=cached, else_branch=uncached)
        if cached_in_then
        else dict(then_branch=uncached, else_branch=cached)
    )
    cache, grown = ["batch", HEADS, "past", HEAD], ["batch", HEADS, "past + sequence", HEAD]
    inputs = [
        ("input_ids", I64, ["batch", "sequence"]),
        ("past.0.self.key", F32, cache),
        ("past.0.self.value", F32, cache),
        (condition, BOOL, [1]),
    ]
    outputs = [
        ("out", F32, ["batch", "sequence", HEADS, HEAD]),
        ("present.0.self.key", F32, grown),
        ("present.0.self.value", F32, grown),
    ]
    if cross:
        encoder = ["batch", HEADS, "encoder_length", HEAD]
        inputs[1:1] = [("encoder_hidden_states", F32, ["batch", "encoder_length", D])]
        inputs[-1:-1] = [("past.0.cross.key", F32, encoder), ("past.0.cross.value", F32, encoder)]
        outputs += [("present.0.cross.key", F32, encoder), ("present.0.cross.value", F32, encoder)]
    node = helper.make_node("If", [condition], [name for name, _, _ in outputs], **branches)
    weights = [
        ("embedding", zeros(100, D)),
        *[(f"w{n}", zeros(D, D)) for n in ("q", "k", "v", "ck", "cv")],
        ("to_heads", np.array([0, 0, HEADS, HEAD], np.int64)),
        ("prompt_shape", np.array([1, PROMPT, D], np.int64)),
    ]
    return make_model([node], inputs, outputs, weights)


def test_the_branch_with_the_cache_is_found_from_the_graph_not_from_names():
    for cached_in_then in (True, False):
        model = merged_decoder(cached_in_then, condition="mode")
        separate_sibling_scopes(model)  # as analyze does first: the branches share names
        layout = detect_decoder(model)
        assert layout.branch == ("mode", cached_in_then)
        assert layout.past_inputs == ("past.0.self.key", "past.0.self.value")
        assert layout.present_outputs == ("present.0.self.key", "present.0.self.value")
        assert [(c.past, c.present, c.kind) for c in layout.cross] == [
            ("past.0.cross.key", None, "key"),
            ("past.0.cross.value", None, "value"),
            ("", "present.0.cross.key", "key"),
            ("", "present.0.cross.value", "value"),
        ]
        assert layout.roles == {"past": "past", "batch": "batch", "encoder_length": "encoder", "sequence": "sequence"}


@pytest.mark.parametrize("cached_in_then", [True, False])
def test_merged_decoder_decode(cached_in_then):
    analysis = onnxroof.analyze(merged_decoder(cached_in_then), phase="decode", context=128, encoder_seq=1500)
    assert analysis.input_values["flag"] == [cached_in_then]  # the branch that reads the past inputs
    # one new token: q, k, v projections 3 x 64 x 64 = 12,288; self-attention Q.K^T and A.V over
    # the 128 attended: 2 x 4 heads x 128 x 16 = 16,384; cross-attention over the 1,500 encoder
    # positions: 2 x 4 x 1,500 x 16 = 192,000. No cross projection: the cache holds it.
    assert analysis.totals.macs == 3 * D * D + 2 * HEADS * 128 * HEAD + 2 * HEADS * 1500 * HEAD == 220_672
    # the branch without a cache fails shape inference (its 128-token Reshape of a 1-token input):
    # shown, not counted, and the analysis is complete
    assert analysis.complete
    assert any("does not take" in w and "cannot reshape" in w for w in analysis.warnings), analysis.warnings
    llm = analysis.llm
    # self: key and value of 128 positions x 4 heads x 16 x 4 B = 65,536 B, read and written whole
    assert llm.kv_read_bytes == llm.kv_write_bytes == 2 * HEADS * 128 * HEAD * 4 == 65_536
    # cross: key and value of 1,500 positions, read every step (768,000 B), never written
    assert (llm.cross_read_bytes, llm.cross_write_bytes, llm.cross_length) == (2 * HEADS * 1500 * HEAD * 4, 0, 1500)
    assert llm.cross_cache_bytes == {"fp32": 768_000, "fp16": 384_000, "int8": 192_000}


def test_merged_decoder_prefill():
    analysis = onnxroof.analyze(merged_decoder(), phase="prefill", seq=PROMPT, encoder_seq=1500)
    assert analysis.input_values["flag"] == [False] and analysis.complete
    # 128 tokens: projections 3 x 128 x 64 x 64 = 1,572,864; self-attention 2 x 4 x 128 x 128 x 16
    # = 2,097,152; the cross keys and values from the encoder output 2 x 1,500 x 64 x 64 =
    # 12,288,000; cross-attention 2 x 4 x 128 x 1,500 x 16 = 24,576,000
    assert (
        analysis.totals.macs
        == (
            3 * PROMPT * D * D
            + 2 * HEADS * PROMPT * PROMPT * HEAD
            + 2 * 1500 * D * D
            + 2 * HEADS * PROMPT * 1500 * HEAD
        )
        == 40_534_016
    )
    llm = analysis.llm
    assert llm.kv_read_bytes == llm.kv_write_bytes == 2 * HEADS * PROMPT * HEAD * 4  # the prompt's keys and values
    # the cross cache is computed this step: written once, and read by the attention
    assert llm.cross_read_bytes == llm.cross_write_bytes == 2 * HEADS * 1500 * HEAD * 4 == 768_000


def test_decoder_only_merged_decoder_needs_no_encoder_length():
    analysis = onnxroof.analyze(merged_decoder(cross=False), phase="decode", context=64)
    # 3 x 64 x 64 + 2 x 4 heads x 64 x 16
    assert analysis.totals.macs == 3 * D * D + 2 * HEADS * 64 * HEAD == 20_480 and analysis.complete
    assert (analysis.llm.cross_read_bytes, analysis.llm.cross_length) == (0, None)


def cross_decoder():
    """A decoder with past (optimum's decoder_with_past_model): the cross cache is only read."""
    branch = _branch(True, True)
    cache, encoder = ["batch", HEADS, "past", HEAD], ["batch", HEADS, "encoder_length", HEAD]
    nodes = [n for n in branch.node if n.op_type != "Constant"]
    for node in nodes:  # the branch's outputs, renamed as a graph's
        node.output[:] = [
            {"present_k": "present.0.self.key", "present_v": "present.0.self.value"}.get(o, o) for o in node.output
        ]
        node.input[:] = [
            {"present_k": "present.0.self.key", "present_v": "present.0.self.value"}.get(i, i) for i in node.input
        ]
    return make_model(
        nodes,
        [
            ("input_ids", I64, ["batch", "sequence"]),
            ("past.0.self.key", F32, cache),
            ("past.0.self.value", F32, cache),
            ("past.0.cross.key", F32, encoder),
            ("past.0.cross.value", F32, encoder),
        ],
        [("out", F32, None), ("present.0.self.key", F32, None), ("present.0.self.value", F32, None)],
        [
            ("embedding", zeros(100, D)),
            *[(f"w{n}", zeros(D, D)) for n in "qkv"],
            ("to_heads", np.array([0, 0, HEADS, HEAD], np.int64)),
        ],
    )


def test_cross_cache_is_read_and_not_appended():
    analysis = onnxroof.analyze(cross_decoder(), phase="decode", context=32, encoder_seq=100)
    # 3 x 64 x 64 + self 2 x 4 x 32 x 16 + cross 2 x 4 x 100 x 16
    assert analysis.totals.macs == 3 * D * D + 2 * HEADS * 32 * HEAD + 2 * HEADS * 100 * HEAD == 29_184
    llm = analysis.llm
    assert llm.layers == 1 and llm.kv_bytes_per_token == 2 * HEADS * HEAD * 4  # 512 B: self only
    assert llm.kv_read_bytes == 2 * HEADS * 32 * HEAD * 4 == 16_384  # self: 32 positions, appended
    assert llm.kv_cache_bytes["fp32"] == 16_384
    # cross: 2 x 4 heads x 100 positions x 16 x 4 B, read; nothing returned, nothing written
    assert (llm.cross_read_bytes, llm.cross_write_bytes, llm.cross_length) == (51_200, 0, 100)
    document = analysis.to_dict()["llm"]
    assert document["kv_cache_read_bytes"] == 16_384
    assert document["cross_attention_cache"] == {
        "read_bytes": 51_200,
        "write_bytes": 0,
        "encoder_length": 100,
        "bytes_at_encoder_length": {"fp32": 51_200, "fp16": 25_600, "int8": 12_800},
    }


def test_encoder_length_flags():
    with pytest.raises(UsageError, match="encoder_length, which the model leaves open"):
        onnxroof.analyze(cross_decoder(), phase="decode", context=32)
    by_dim = onnxroof.analyze(cross_decoder(), phase="decode", context=32, dims={"encoder_length": 100})
    assert by_dim.llm.cross_read_bytes == 51_200  # --dim binds it as well
    with pytest.raises(UsageError, match="no cross-attention"):
        onnxroof.analyze(merged_decoder(cross=False), phase="decode", context=8, encoder_seq=10)
    with pytest.raises(UsageError, match="give phase"):
        onnxroof.analyze(cross_decoder(), encoder_seq=10, dims={"past": 1, "sequence": 1})


def test_encoder_seq_through_the_command_line(tmp_path, capsys):
    import json

    from conftest import run

    path = tmp_path / "merged.onnx"
    path.write_bytes(merged_decoder().SerializeToString())
    code, out, err = run(
        capsys, "summary", path, "--phase", "decode", "--context", "128", "--encoder-seq", "1500", "--format", "json"
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["totals"]["macs"] == 220_672 and document["complete"]  # as test_merged_decoder_decode
    assert document["llm"]["cross_attention_cache"]["read_bytes"] == 768_000
    code, out, _ = run(capsys, "summary", path, "--phase", "prefill", "--seq", "128", "--encoder-seq", "1500")
    # the text block: the cross cache computed and written by the prompt step, 768,000 B = 750 KiB
    assert (
        code == 0
        and "cross-attention cache of 1,500 encoder positions (never appended): read 750 KiB per step; "
        "written 750 KiB (computed from the encoder output)"
        in out
    )
    code, _, err = run(capsys, "summary", path, "--phase", "decode", "--context", "128")
    assert code == 2 and err.count("\n") == 1 and "--encoder-seq N" in err  # one line, naming the flag


def test_encoder_seq_sweeps():
    from onnxroof.compare.sweep import run_sweep

    points = run_sweep(cross_decoder(), [("encoder_seq", [100, 400])], phase="decode", context=32)
    # the cross cache grows with the encoder length: 512 B per position (2 x 4 heads x 16 x 4 B)
    assert [p.analysis.llm.cross_read_bytes for p in points] == [512 * 100, 512 * 400]
