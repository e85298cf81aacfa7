"""Decoder caches found from the graph's structure in every layout exporters write (issue 17),
each checked by hand: the recognised axes, decode and prefill MACs, KV bytes per step."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.errors import UsageError
from onnxroof.cost.llm import detect_decoder

F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
MS = "com.microsoft"
HEADS, KV_HEADS, HEAD = 4, 2, 16
HIDDEN = HEADS * HEAD


def concat_decoder(
    bshd: bool = False, past="past_key_values.0.{}", present="present.0.{}", heads_dim=HEADS, head_dim=HEAD
):
    """One attention layer over a KV cache kept by Concat, in layout [B, H, S, D] or [B, S, H, D],
    with token ids read by an embedding Gather and an attention mask [batch, past + new]."""
    cache_axis = 1 if bshd else 2
    to_heads = [0, 1, 2, 3] if bshd else [0, 2, 1, 3]  # [B, S, H, D] -> the cache layout
    keys, values = past.format("key"), past.format("value")
    new_keys, new_values = present.format("key"), present.format("value")
    nodes = [helper.make_node("Gather", ["embedding", "input_ids"], ["h"])]
    for n in "qkv":
        nodes += [
            helper.make_node("MatMul", ["h", f"w{n}"], [f"{n}_flat"]),
            helper.make_node("Reshape", [f"{n}_flat", "split"], [f"{n}_bshd"]),
            helper.make_node("Transpose", [f"{n}_bshd"], [f"{n}_new"], perm=to_heads),
        ]
    to_bhsd = [0, 2, 1, 3] if bshd else [0, 1, 2, 3]
    nodes += [
        helper.make_node("Concat", [keys, "k_new"], [new_keys], axis=cache_axis),
        helper.make_node("Concat", [values, "v_new"], [new_values], axis=cache_axis),
        helper.make_node("Transpose", ["q_new"], ["q_h"], perm=to_bhsd),
        helper.make_node("Transpose", [new_keys], ["k_t"], perm=[0, 2, 3, 1] if bshd else [0, 1, 3, 2]),
        helper.make_node("Transpose", [new_values], ["v_h"], perm=to_bhsd),
        helper.make_node("MatMul", ["q_h", "k_t"], ["scores"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=F32),
        helper.make_node("Unsqueeze", ["mask_f", "mask_axes"], ["mask_4d"]),
        helper.make_node("Add", ["scores", "mask_4d"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v_h"], ["context"]),
    ]
    cache = ["batch", "past", heads_dim, head_dim] if bshd else ["batch", heads_dim, "past", head_dim]
    grown = ["batch", "total", heads_dim, head_dim] if bshd else ["batch", heads_dim, "total", head_dim]
    return make_model(
        nodes,
        [
            ("input_ids", I64, ["batch", "sequence"]),
            ("attention_mask", I64, ["batch", "mask_length"]),
            (keys, F32, cache),
            (values, F32, cache),
        ],
        [("context", F32, None), (new_keys, F32, grown), (new_values, F32, grown)],
        [
            ("embedding", zeros(100, HIDDEN)),
            *[(f"w{n}", zeros(HIDDEN, HIDDEN)) for n in "qkv"],
            ("split", np.array([0, 0, HEADS, HEAD], np.int64)),
            ("mask_axes", np.array([1, 2], np.int64)),
        ],
    )


def decode_macs(context: int) -> int:
    # one token: q, k, v projections 3 x 64 x 64, Q.K^T and A.V over the context's keys: 4 heads x 2 x context x 16
    return 3 * HIDDEN * HIDDEN + HEADS * 2 * context * HEAD


@pytest.mark.parametrize("bshd", [False, True])
def test_concat_cache_in_either_layout(bshd):
    layout = detect_decoder(concat_decoder(bshd))
    assert [c.axis for c in layout.caches] == ([1, 1] if bshd else [2, 2])
    assert layout.roles == {"past": "past", "batch": "batch", "sequence": "sequence", "mask_length": "total"}
    analysis = onnxroof.analyze(concat_decoder(bshd), phase="decode", context=128)
    assert analysis.complete
    assert analysis.totals.macs == decode_macs(128)
    # 2 caches x 4 heads x 16 x 4 B = 512 B a token; read: the 128 attended positions
    assert analysis.llm.kv_bytes_per_token == 2 * HEADS * HEAD * 4
    assert analysis.llm.kv_read_bytes == 2 * HEADS * HEAD * 128 * 4
    prefill = onnxroof.analyze(concat_decoder(bshd), phase="prefill", seq=32)
    # 32 tokens: projections 32 x 3 x 64 x 64, attention 4 heads x 2 x 32 x 32 x 16 (past 0)
    assert prefill.complete and prefill.totals.macs == 32 * 3 * HIDDEN * HIDDEN + HEADS * 2 * 32 * 32 * HEAD


def test_hugging_face_exporter_names_and_digit_string_dims():
    # transformers' own exporter: past_key_values.layers.N.keys [batch, "4", past, "16"] -> cache.layers.N.keys
    model = concat_decoder(
        past="past_key_values.layers.0.{}s", present="cache.layers.0.{}s", heads_dim=str(HEADS), head_dim=str(HEAD)
    )
    analysis = onnxroof.analyze(model, phase="decode", context=128)
    assert analysis.complete  # the heads axis "4" is a fixed dim, the past axis is the cache
    assert [i.shape for i in analysis.inputs][2] == (1, HEADS, 127, HEAD)
    assert analysis.totals.macs == decode_macs(128)
    assert analysis.llm.kv_write_bytes == 2 * HEADS * HEAD * 128 * 4  # written whole: the Concat copies
    assert any("cache.layers.0.keys" in line for line in analysis.llm.recognised)


def gqa_decoder(shared_buffer: bool = False):
    """onnxruntime-genai's layout: a packed QKV MatMul feeding GroupQueryAttention with its
    past_key/past_value [B, Hkv, past, head] (head size left symbolic, as the builder writes
    kv_cache_dim), seqlens_k [B] and total_sequence_length [] inputs."""
    packed = (HEADS + 2 * KV_HEADS) * HEAD
    cache_length = "max_length" if shared_buffer else "past_sequence_length"
    grown = "max_length" if shared_buffer else "total_sequence_length"
    nodes = [
        helper.make_node("Gather", ["embedding", "input_ids"], ["h"]),
        helper.make_node("MatMul", ["h", "w_qkv"], ["qkv"]),
        helper.make_node(
            "GroupQueryAttention",
            ["qkv", "", "", "past_key_values.0.key", "past_key_values.0.value", "seqlens_k", "total_sequence_length"],
            ["attn", "present.0.key", "present.0.value"],
            domain=MS,
            num_heads=HEADS,
            kv_num_heads=KV_HEADS,
        ),
    ]
    cache = ["batch_size", KV_HEADS, cache_length, "kv_cache_dim"]
    model = make_model(
        nodes,
        [
            ("input_ids", I64, ["batch_size", "sequence_length"]),
            ("past_key_values.0.key", F32, cache),
            ("past_key_values.0.value", F32, cache),
            ("seqlens_k", I32, ["batch_size"]),
            ("total_sequence_length", I32, []),
        ],
        [
            ("attn", F32, ["batch_size", "sequence_length", HIDDEN]),
            ("present.0.key", F32, ["batch_size", KV_HEADS, grown, "kv_cache_dim"]),
            ("present.0.value", F32, ["batch_size", KV_HEADS, grown, "kv_cache_dim"]),
        ],
        [("embedding", zeros(100, HIDDEN)), ("w_qkv", zeros(HIDDEN, packed))],
    )
    model.opset_import.append(helper.make_opsetid(MS, 1))
    return model


def test_group_query_attention_cache_values_and_head_size_from_the_graph():
    layout = detect_decoder(gqa_decoder())
    assert [(c.past, c.axis, c.how) for c in layout.caches] == [
        ("past_key_values.0.key", 2, "GroupQueryAttention input 3"),
        ("past_key_values.0.value", 2, "GroupQueryAttention input 4"),
    ]
    assert layout.values == {"seqlens_k": "seqlens_k", "total_sequence_length": "total_sequence_length"}
    analysis = onnxroof.analyze(gqa_decoder(), phase="decode", context=128)
    # --phase decode --context 128 alone: past 127, seqlens_k 127, total 128, and the head size
    # the GroupQueryAttention's num_heads and the packed width fix: 128 / (4 + 2 x 2) = 16
    assert analysis.complete, analysis.warnings
    assert analysis.input_values == {"seqlens_k": [127], "total_sequence_length": [128]}
    assert analysis.inputs[1].shape == (1, KV_HEADS, 127, HEAD)
    # MACs: the packed projection 64 x 128, attention 4 query heads x 128 keys x (16 + 16)
    assert analysis.totals.macs == HIDDEN * (HEADS + 2 * KV_HEADS) * HEAD + HEADS * 128 * 2 * HEAD
    # grouped-query heads: 2 KV heads, 2 caches x 2 x 16 x 4 B = 256 B a token
    llm = analysis.llm
    assert (llm.kv_heads, llm.head_size) == (KV_HEADS, HEAD)
    assert llm.kv_bytes_per_token == 2 * KV_HEADS * HEAD * 4
    assert llm.kv_read_bytes == 2 * KV_HEADS * HEAD * 128 * 4
    assert llm.kv_write_mode == "whole present"
    assert llm.kv_cache_bytes["fp16"] == 2 * KV_HEADS * HEAD * 2 * 128


def test_shared_past_present_buffer_writes_only_the_new_positions():
    analysis = onnxroof.analyze(gqa_decoder(shared_buffer=True), phase="decode", context=128)
    assert analysis.complete, analysis.warnings
    llm = analysis.llm
    assert llm.kv_write_mode == "new positions"
    assert llm.kv_write_bytes == 2 * KV_HEADS * HEAD * 1 * 4  # one token's key and value
    assert llm.kv_read_bytes == 2 * KV_HEADS * HEAD * 128 * 4  # the 128-long buffer


def test_explicit_dims_and_values_win_over_the_phase():
    analysis = onnxroof.analyze(
        gqa_decoder(),
        phase="decode",
        context=128,
        dims={"past_sequence_length": 63},
        values={"total_sequence_length": 64},
    )
    assert analysis.input_values["total_sequence_length"] == [64]
    assert analysis.inputs[1].shape[2] == 63
    assert analysis.llm.kv_read_bytes == 2 * KV_HEADS * HEAD * 64 * 4


def opset23_attention_decoder():
    """The ONNX Attention op (opset 23) with past_key/past_value [B, H, past, D] (inputs 4, 5) and
    present_key/present_value (outputs 1, 2)."""
    nodes = [helper.make_node("Attention", ["q", "k", "v", "", "past_k", "past_v"], ["y", "present_k", "present_v"])]
    cache = ["batch", HEADS, "past", HEAD]
    return make_model(
        nodes,
        [
            ("q", F32, ["batch", HEADS, "sequence", HEAD]),
            ("k", F32, ["batch", HEADS, "sequence", HEAD]),
            ("v", F32, ["batch", HEADS, "sequence", HEAD]),
            ("past_k", F32, cache),
            ("past_v", F32, cache),
        ],
        [("y", F32, None), ("present_k", F32, None), ("present_v", F32, None)],
        opset=23,
    )


def test_opset_23_attention_past_inputs_are_the_cache():
    layout = detect_decoder(opset23_attention_decoder())
    assert [(c.past, c.present, c.kind) for c in layout.caches] == [
        ("past_k", "present_k", "key"),
        ("past_v", "present_v", "value"),
    ]
    analysis = onnxroof.analyze(opset23_attention_decoder(), phase="decode", context=128)
    # 4 heads x 1 query x 128 keys x (16 + 16)
    assert analysis.totals.macs == HEADS * 128 * 2 * HEAD
    assert analysis.llm.kv_read_bytes == 2 * HEADS * HEAD * 128 * 4


def test_multi_head_attention_past_inputs_are_the_cache():
    nodes = [
        helper.make_node(
            "MultiHeadAttention",
            ["q", "k", "v", "", "", "", "past_k", "past_v"],
            ["y", "present_k", "present_v"],
            domain=MS,
            num_heads=HEADS,
        )
    ]
    cache = ["batch", HEADS, "past", HEAD]
    model = make_model(
        nodes,
        [
            ("q", F32, ["batch", "sequence", HIDDEN]),
            ("k", F32, ["batch", "sequence", HIDDEN]),
            ("v", F32, ["batch", "sequence", HIDDEN]),
            ("past_k", F32, cache),
            ("past_v", F32, cache),
        ],
        [("y", F32, None), ("present_k", F32, None), ("present_v", F32, None)],
    )
    model.opset_import.append(helper.make_opsetid(MS, 1))
    layout = detect_decoder(model)
    assert [(c.past, c.axis, c.how) for c in layout.caches] == [
        ("past_k", 2, "MultiHeadAttention input 6"),
        ("past_v", 2, "MultiHeadAttention input 7"),
    ]
    analysis = onnxroof.analyze(model, phase="decode", context=128)
    assert analysis.totals.macs == HEADS * 128 * 2 * HEAD


def test_a_cache_is_found_by_structure_not_by_name():
    # inputs named "a" and "b" appended to by a Concat and returned: a cache; an input named
    # "past_state" that is only added to is not
    nodes = [
        helper.make_node("Concat", ["a", "new"], ["a_out"], axis=2),
        helper.make_node("Add", ["past_state", "new"], ["sum"]),
    ]
    model = make_model(
        nodes,
        [("a", F32, [1, 2, "n", 4]), ("new", F32, [1, 2, 1, 4]), ("past_state", F32, [1, 2, 1, 4])],
        [("a_out", F32, None), ("sum", F32, None)],
    )
    layout = detect_decoder(model)
    assert [(c.past, c.present, c.axis) for c in layout.caches] == [("a", "a_out", 2)]
    unrelated = make_model(
        [helper.make_node("Add", ["past_state", "new"], ["sum"])],
        [("past_state", F32, [1, 2, "n", 4]), ("new", F32, [1, 2, 1, 4])],
        [("sum", F32, None)],
    )
    assert detect_decoder(unrelated) is None
    with pytest.raises(UsageError, match="no KV cache found .* Concat"):
        onnxroof.analyze(unrelated, phase="decode", context=4)


def test_an_input_named_like_a_cache_that_is_none_is_said_so():
    model = make_model(
        [helper.make_node("Add", ["past_state", "new"], ["sum"])],
        [("past_state", F32, [1, 2, "n", 4]), ("new", F32, [1, 2, 1, 4])],
        [("sum", F32, None)],
    )
    analysis = onnxroof.analyze(model, dims={"n": 1})
    assert analysis.llm is None
    assert any("named like a KV cache, but none is one" in w and "Concat" in w for w in analysis.warnings)


def test_a_past_copied_by_a_one_input_concat_first_is_still_a_cache():
    # torch.onnx writes a DynamicCache update as Concat(past) before the Concat(past, new)
    nodes = [
        helper.make_node("Concat", ["past"], ["copy"], axis=-2),
        helper.make_node("Concat", ["copy", "new"], ["present"], axis=-2),
    ]
    model = make_model(nodes, [("past", F32, [1, 2, "n", 4]), ("new", F32, [1, 2, 1, 4])], [("present", F32, None)])
    assert [(c.past, c.present, c.axis) for c in detect_decoder(model).caches] == [("past", "present", 2)]


def test_a_static_cache_written_in_place_by_scatter_counts_only_the_new_positions():
    # Hugging Face's StaticCache: a max-length buffer [B, H, max_len, D] the new token's keys are
    # scattered into, returned as the present; attention runs over the whole buffer
    nodes = [
        helper.make_node("ScatterND", ["cache_k", "slot", "k_new"], ["cache_k_out"]),
        helper.make_node("Transpose", ["cache_k_out"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "k_t"], ["scores"]),
    ]
    model = make_model(
        nodes,
        [
            ("cache_k", F32, [1, HEADS, "max_len", HEAD]),
            ("slot", I64, [1, HEADS, 1, 3]),
            ("k_new", F32, [1, HEADS, 1, HEAD]),
            ("q", F32, [1, HEADS, 1, HEAD]),
        ],
        [("cache_k_out", F32, [1, HEADS, "max_len", HEAD]), ("scores", F32, None)],
    )
    layout = detect_decoder(model)
    assert [(c.past, c.axis, c.shared) for c in layout.caches] == [("cache_k", 2, True)]
    analysis = onnxroof.analyze(model, phase="decode", context=256)
    assert analysis.totals.macs == HEADS * 256 * HEAD  # Q.K^T over the 256-slot buffer
    llm = analysis.llm
    assert llm.kv_write_mode == "new positions" and llm.kv_write_bytes == HEADS * HEAD * 4  # one key
    assert llm.kv_read_bytes == HEADS * HEAD * 256 * 4


def test_a_prompt_step_exported_without_a_past_takes_the_prefill_phase():
    nodes = [
        helper.make_node("Gather", ["embedding", "input_ids"], ["h"]),
        helper.make_node("MatMul", ["h", "w"], ["logits"]),
    ]
    model = make_model(
        nodes,
        [("input_ids", I64, [1, "sequence"])],
        [("logits", F32, None)],
        [("embedding", zeros(100, HIDDEN)), ("w", zeros(HIDDEN, 100))],
    )
    analysis = onnxroof.analyze(model, phase="prefill", seq=32)
    assert analysis.complete and analysis.totals.macs == 32 * HIDDEN * 100
    assert any("prefill" in line for line in analysis.llm.recognised)
    with pytest.raises(UsageError, match="no KV cache found"):
        onnxroof.analyze(model, phase="decode", context=32)


def test_a_prompt_step_reports_the_caches_it_returns():
    # keys [1, H, sequence, D] returned as an output and read by the step's own Q.K^T
    nodes = [
        helper.make_node("Transpose", ["keys"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "k_t"], ["scores"]),
        helper.make_node("Gather", ["embedding", "input_ids"], ["h"]),
        helper.make_node("MatMul", ["h", "w"], ["logits"]),
        helper.make_node("Identity", ["keys"], ["present.keys"]),
    ]
    model = make_model(
        nodes,
        [
            ("input_ids", I64, [1, "sequence"]),
            ("q", F32, [1, HEADS, "sequence", HEAD]),
            ("keys", F32, [1, HEADS, "sequence", HEAD]),
        ],
        [("logits", F32, None), ("scores", F32, None), ("present.keys", F32, [1, HEADS, "sequence", HEAD])],
        [("embedding", zeros(100, HIDDEN)), ("w", zeros(HIDDEN, 100))],
    )
    model.graph.output[-1].name = "keys"  # the graph returns the keys themselves
    del model.graph.node[-1]
    llm = onnxroof.analyze(model, phase="prefill", seq=32).llm
    assert llm.kv_read_bytes == llm.kv_write_bytes == HEADS * HEAD * 32 * 4
    assert "keys axis 2" in llm.recognised[0]


def test_a_prompt_step_writing_a_stored_buffer_the_attention_reads_reports_it():
    # a static cache: the prompt's keys scattered into a stored [1, H, 256, D] buffer along axis 2,
    # which the graph returns and its own Q.K^T reads (a cache of another length than the tokens:
    # still the self cache, not a cross-attention one)
    nodes = [
        helper.make_node("ScatterElements", ["buffer", "slots", "keys"], ["present.key"], axis=2),
        helper.make_node("Transpose", ["present.key"], ["k_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "k_t"], ["scores"]),
        helper.make_node("Gather", ["embedding", "input_ids"], ["h"]),
        helper.make_node("MatMul", ["h", "w"], ["logits"]),
    ]
    model = make_model(
        nodes,
        [
            ("input_ids", I64, [1, "sequence"]),
            ("q", F32, [1, HEADS, "sequence", HEAD]),
            ("keys", F32, [1, HEADS, "sequence", HEAD]),
            ("slots", I64, [1, HEADS, "sequence", HEAD]),
        ],
        [("logits", F32, None), ("scores", F32, None), ("present.key", F32, [1, HEADS, 256, HEAD])],
        [("embedding", zeros(100, HIDDEN)), ("w", zeros(HIDDEN, 100)), ("buffer", zeros(1, HEADS, 256, HEAD))],
    )
    llm = onnxroof.analyze(model, phase="prefill", seq=32).llm
    assert llm.kv_read_bytes == HEADS * 256 * HEAD * 4  # the whole 256-slot buffer of keys
    assert llm.cross_read_bytes == 0 and "present.key axis 2" in llm.recognised[0]


def test_contrib_attention_packed_past_is_the_cache():
    # com.microsoft Attention: input [B, S, 64], weights [64, 192], bias [192], past [2, B, H, past, D]
    nodes = [
        helper.make_node(
            "Attention", ["x", "w", "b", "", "past"], ["y", "present"], domain=MS, num_heads=HEADS, unidirectional=1
        )
    ]
    model = make_model(
        nodes,
        [("x", F32, ["batch", "sequence", HIDDEN]), ("past", F32, [2, "batch", HEADS, "past", HEAD])],
        [("y", F32, None), ("present", F32, [2, "batch", HEADS, "total", HEAD])],
        [("w", zeros(HIDDEN, 3 * HIDDEN)), ("b", zeros(3 * HIDDEN))],
    )
    model.opset_import.append(helper.make_opsetid(MS, 1))
    layout = detect_decoder(model)
    assert [(c.past, c.present, c.axis, c.kind) for c in layout.caches] == [("past", "present", 3, "key+value")]
    analysis = onnxroof.analyze(model, phase="decode", context=128)
    # projections 64 x 192, attention 4 heads x 128 keys x (16 + 16)
    assert analysis.totals.macs == HIDDEN * 3 * HIDDEN + HEADS * 128 * 2 * HEAD
    llm = analysis.llm
    assert llm.layers == 1 and llm.kv_bytes_per_token == 2 * HEADS * HEAD * 4
    assert llm.kv_read_bytes == 2 * HEADS * HEAD * 128 * 4 and (llm.kv_heads, llm.head_size) == (HEADS, HEAD)


def test_phase_through_the_command_line_states_what_it_recognised(tmp_path, capsys):
    import json

    from onnxroof.cli import app as cli

    path = tmp_path / "gqa.onnx"
    path.write_bytes(gqa_decoder().SerializeToString())
    assert cli.main(["summary", str(path), "--phase", "decode", "--context", "128", "--format", "json"]) == 0
    llm = json.loads(capsys.readouterr().out)["llm"]
    assert llm["context"] == 128 and llm["kv_cache_write_mode"] == "whole present"
    assert llm["kv_cache_read_bytes"] == 2 * KV_HEADS * HEAD * 128 * 4
    assert any(line.startswith("cache past_key_values.0.key axis 2") for line in llm["recognised"])
    assert cli.main(["summary", str(path), "--phase", "decode", "--context", "128"]) == 0
    text = capsys.readouterr().out
    assert "decode of 1 token at context 128, 127 cached" in text and "recognised: value input seqlens_k" in text
    assert cli.main(["summary", str(path), "--phase", "decode", "--context", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "N >= 1" in err
