"""Attention rules (onnxroof/ops/attention.py): every expected number worked out by hand.

Per score (B x Hq x Sq x T of them): scale 1, mask 1 (mask, bias or causal), softcap 3, softmax 5.
MACs = B x Hq x Sq x T x (Dqk + Dv); FLOPs = 2 x MACs + the per-score work.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import analyse_node, zeros
from onnx import TensorProto, helper

F32 = TensorProto.FLOAT
I32 = TensorProto.INT32
I64 = TensorProto.INT64
MS = "com.microsoft"


def analyse(node, inputs, outputs, initializers=(), opset=23, contrib=False):
    return analyse_node(node, inputs, outputs, initializers, opset=opset, contrib=contrib, expect_ok=False)


def ok(record):
    assert record.status == "ok", record.reason
    return record


# --- default-domain Attention (opset 23) --------------------------------------------------------


def test_attention_4d_multi_head():
    shape = [2, 4, 16, 8]  # B, H, S, D
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"])
    record = ok(analyse(node, [(n, F32, shape) for n in "qkv"], [("y", F32, shape)]))
    # scores 2·4·16·16 = 2,048; MACs = 2,048 x (8 + 8) = 32,768
    assert record.macs == 32_768
    # per score: scale 1 + softmax 5 = 6
    assert record.flops == 2 * 32_768 + 6 * 2_048
    assert record.params == 0


def test_attention_4d_grouped_query_with_past_kv():
    # 8 query heads over 2 kv heads; 4 new tokens after 12 cached ones; Dqk = 16, Dv = 32
    node = helper.make_node("Attention", ["q", "k", "v", "", "past_k", "past_v"], ["y", "present_k", "present_v"])
    inputs = [
        ("q", F32, [1, 8, 4, 16]),
        ("k", F32, [1, 2, 4, 16]),
        ("v", F32, [1, 2, 4, 32]),
        ("past_k", F32, [1, 2, 12, 16]),
        ("past_v", F32, [1, 2, 12, 32]),
    ]
    outputs = [("y", F32, [1, 8, 4, 32]), ("present_k", F32, [1, 2, 16, 16]), ("present_v", F32, [1, 2, 16, 32])]
    record = ok(analyse(node, inputs, outputs))
    # T = 12 + 4 = 16: scores 1·8·4·16 = 512; MACs = 512 x (16 + 32) = 24,576
    assert record.macs == 24_576
    assert record.flops == 2 * 24_576 + 6 * 512
    assert "(12 past + 4)" in record.formula and "over 2 kv heads" in record.formula
    # the cache concatenation moves bytes: present_k + present_v are written with y
    assert record.output_bytes == (1 * 8 * 4 * 32 + 2 * 16 * 16 + 2 * 16 * 32) * 4


def test_attention_3d_grouped_query_with_past_kv():
    # 3D inputs: heads from the attributes. q_hidden 32 = 8 heads x 4; k_hidden 8 = 2 heads x 4;
    # v_hidden 12 = 2 heads x 6. Past length 3 (past_key is always 4D).
    node = helper.make_node(
        "Attention",
        ["q", "k", "v", "", "past_k", "past_v"],
        ["y", "present_k", "present_v"],
        q_num_heads=8,
        kv_num_heads=2,
    )
    inputs = [
        ("q", F32, [2, 5, 32]),
        ("k", F32, [2, 7, 8]),
        ("v", F32, [2, 7, 12]),
        ("past_k", F32, [2, 2, 3, 4]),
        ("past_v", F32, [2, 2, 3, 6]),
    ]
    outputs = [("y", F32, [2, 5, 48]), ("present_k", F32, [2, 2, 10, 4]), ("present_v", F32, [2, 2, 10, 6])]
    record = ok(analyse(node, inputs, outputs))
    # T = 3 + 7 = 10: scores 2·8·5·10 = 800; MACs = 800 x (4 + 6) = 8,000
    assert record.macs == 8_000
    assert record.flops == 2 * 8_000 + 6 * 800


def test_attention_3d_without_head_attributes_is_not_counted():
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"])
    record = analyse(node, [(n, F32, [1, 4, 8]) for n in "qkv"], [("y", F32, [1, 4, 8])])
    assert record.status != "ok" and "q_num_heads" in record.reason


def test_attention_causal_counts_the_full_rectangle_and_states_the_unmasked_pairs():
    shape = [1, 2, 4, 8]
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)
    record = ok(analyse(node, [(n, F32, shape) for n in "qkv"], [("y", F32, shape)]))
    # scores 1·2·4·4 = 32; MACs = 32 x 16 = 512, the whole rectangle
    assert record.macs == 512
    # per score: scale 1 + causal mask 1 + softmax 5 = 7
    assert record.flops == 2 * 512 + 7 * 32
    # lower triangle per head: 1 + 2 + 3 + 4 = 10 pairs, 2 heads
    assert "20 of 32 score pairs unmasked (62.5%)" in record.formula


def test_attention_causal_with_cache_is_offset_by_the_past():
    # 2 new queries after 3 cached keys: query 0 sees keys 0..3, query 1 sees keys 0..4
    node = helper.make_node("Attention", ["q", "k", "v", "", "past_k", "past_v"], ["y", "pk", "pv"], is_causal=1)
    inputs = [
        ("q", F32, [1, 1, 2, 4]),
        ("k", F32, [1, 1, 2, 4]),
        ("v", F32, [1, 1, 2, 4]),
        ("past_k", F32, [1, 1, 3, 4]),
        ("past_v", F32, [1, 1, 3, 4]),
    ]
    record = ok(analyse(node, inputs, [("y", F32, [1, 1, 2, 4]), ("pk", F32, None), ("pv", F32, None)]))
    assert record.macs == 1 * 1 * 2 * 5 * 8  # T = 5
    assert "9 of 10 score pairs unmasked" in record.formula


def test_attention_mask_and_softcap():
    shape = [1, 2, 3, 4]
    node = helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"], softcap=30.0)
    record = ok(
        analyse(node, [(n, F32, shape) for n in "qkv"], [("y", F32, shape)], [("mask", np.zeros((3, 3), dtype=bool))])
    )
    # scores 1·2·3·3 = 18; MACs = 18 x 8 = 144; per score 1 scale + 1 mask + 3 softcap + 5 softmax = 10
    assert record.macs == 144 and record.flops == 2 * 144 + 10 * 18
    assert record.params == 0  # a constant mask is a setting, not a parameter


def test_rotary_embedding_default_domain():
    # [B, H, S, D] = [1, 4, 6, 8]: 192 elements, all rotated: 3 FLOPs each (4 multiplies, 2 adds per pair)
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"])
    inputs = [("x", F32, [1, 4, 6, 8]), ("pos", I64, [1, 6])]
    record = ok(analyse(node, inputs, [("y", F32, [1, 4, 6, 8])], [("cos", zeros(6, 4)), ("sin", zeros(6, 4))]))
    assert record.flops == 3 * 192 and record.params == 48  # the cos/sin caches are parameters
    # partial rotation: 4 of every 8 channels
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], rotary_embedding_dim=4)
    record = ok(analyse(node, inputs, [("y", F32, [1, 4, 6, 8])], [("cos", zeros(6, 2)), ("sin", zeros(6, 2))]))
    assert record.flops == 3 * 96
    # 3D input with num_heads: [1, 6, 32] is 4 heads of 8
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], num_heads=4)
    record = ok(
        analyse(
            node,
            [("x", F32, [1, 6, 32]), ("pos", I64, [1, 6])],
            [("y", F32, [1, 6, 32])],
            [("cos", zeros(6, 4)), ("sin", zeros(6, 4))],
        )
    )
    assert record.flops == 3 * 192


# --- com.microsoft contrib attention -------------------------------------------------------------


def test_contrib_attention_counts_its_packed_projection():
    # input [2, 6, 16], weights [16, 48] = Q, K, V of 16 each, 4 heads of 4
    node = helper.make_node("Attention", ["x", "w", "b"], ["y"], domain=MS, num_heads=4)
    record = ok(
        analyse(
            node,
            [("x", F32, [2, 6, 16])],
            [("y", F32, [2, 6, 16])],
            [("w", zeros(16, 48)), ("b", zeros(48))],
            contrib=True,
        )
    )
    projection = 2 * 6 * 16 * 48  # B·S·Hin·(Dq + Dk + Dv) = 9,216
    scores = 2 * 4 * 6 * 6  # B·N·S·S = 288
    assert record.macs == projection + scores * (4 + 4)  # 9,216 + 2,304
    assert record.flops == 2 * record.macs + 6 * scores
    assert record.params == 16 * 48 + 48 and record.weight_bytes == (16 * 48 + 48) * 4


def test_contrib_attention_with_past_and_unidirectional():
    # past [2, B, N, P, H] with P = 3: T = 3 + 6 = 9
    node = helper.make_node(
        "Attention", ["x", "w", "b", "", "past"], ["y", "present"], domain=MS, num_heads=4, unidirectional=1
    )
    record = ok(
        analyse(
            node,
            [("x", F32, [2, 6, 16]), ("past", F32, [2, 2, 4, 3, 4])],
            [("y", F32, [2, 6, 16]), ("present", F32, [2, 2, 4, 9, 4])],
            [("w", zeros(16, 48)), ("b", zeros(48))],
            contrib=True,
        )
    )
    scores = 2 * 4 * 6 * 9  # 432
    assert record.macs == 2 * 6 * 16 * 48 + scores * 8
    assert record.flops == 2 * record.macs + 7 * scores  # scale, causal mask, softmax


def test_multi_head_attention_separate_qkv_with_bias():
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v", "bias"], ["y"], domain=MS, num_heads=4)
    inputs = [("q", F32, [2, 5, 16]), ("k", F32, [2, 7, 16]), ("v", F32, [2, 7, 16])]
    record = ok(analyse(node, inputs, [("y", F32, [2, 5, 16])], [("bias", zeros(48))], contrib=True))
    scores = 2 * 4 * 5 * 7  # 280, head size 4
    assert record.macs == scores * 8
    # + the bias add on every Q (2·5·16 = 160), K and V (2·7·16 each = 224) element
    assert record.flops == 2 * record.macs + 6 * scores + 160 + 2 * 224


def test_multi_head_attention_with_past():
    node = helper.make_node(
        "MultiHeadAttention", ["q", "k", "v", "", "", "", "pk", "pv"], ["y", "prk", "prv"], domain=MS, num_heads=2
    )
    inputs = [
        ("q", F32, [1, 1, 8]),
        ("k", F32, [1, 1, 8]),
        ("v", F32, [1, 1, 8]),
        ("pk", F32, [1, 2, 9, 4]),
        ("pv", F32, [1, 2, 9, 4]),
    ]
    record = ok(
        analyse(
            node,
            inputs,
            [("y", F32, [1, 1, 8]), ("prk", F32, [1, 2, 10, 4]), ("prv", F32, [1, 2, 10, 4])],
            contrib=True,
        )
    )
    assert record.macs == 1 * 2 * 1 * 10 * (4 + 4)  # decode: one query against 9 + 1 keys


def gqa_model(past_len=6, total=10, shared_buffer=False, total_as_input=False, **attributes):
    """Query [1, 4, 64] = 8 heads of 8; key/value [1, 4, 16] = 2 kv heads of 8; past [1, 2, P, 8]."""
    node = helper.make_node(
        "GroupQueryAttention",
        ["q", "k", "v", "past_k", "past_v", "seqlens_k", "total"],
        ["y", "present_k", "present_v"],
        domain=MS,
        num_heads=8,
        kv_num_heads=2,
        **attributes,
    )
    present_len = past_len if shared_buffer else total
    inputs = [
        ("q", F32, [1, 4, 64]),
        ("k", F32, [1, 4, 16]),
        ("v", F32, [1, 4, 16]),
        ("past_k", F32, [1, 2, past_len, 8]),
        ("past_v", F32, [1, 2, past_len, 8]),
    ]
    outputs = [
        ("y", F32, [1, 4, 64]),
        ("present_k", F32, [1, 2, present_len, 8]),
        ("present_v", F32, [1, 2, present_len, 8]),
    ]
    initializers = [("seqlens_k", np.array([total - 1], dtype=np.int32))]
    if total_as_input:
        inputs.append(("total", I32, []))
    else:
        initializers.append(("total", np.array(total, dtype=np.int32)))
    return node, inputs, outputs, initializers


def test_group_query_attention_with_past():
    record = ok(analyse(*gqa_model(), contrib=True))
    # T = total_sequence_length = 10 (6 past + 4 new); scores 1·8·4·10 = 320; MACs = 320 x (8 + 8)
    assert record.macs == 5_120
    # causal by default: scale 1 + mask 1 + softmax 5
    assert record.flops == 2 * 5_120 + 7 * 320
    # bottom-right causal: queries see 7, 8, 9, 10 keys = 34 per head, 8 heads
    assert "272 of 320 score pairs unmasked" in record.formula
    # seqlens_k and total_sequence_length are settings, not parameters
    assert record.params == 0 and record.weight_bytes == 0


def test_group_query_attention_total_length_from_shapes():
    # total_sequence_length is a graph input (value unknown): past 6 + new 4 from the shapes
    record = ok(analyse(*gqa_model(total_as_input=True), contrib=True))
    assert record.macs == 1 * 8 * 4 * 10 * 16


def test_group_query_attention_shared_buffer():
    # past and present share one 32-long buffer: the attended length is total_sequence_length's value
    record = ok(analyse(*gqa_model(past_len=32, total=10, shared_buffer=True), contrib=True))
    assert record.macs == 1 * 8 * 4 * 10 * 16
    # without that value the node is not counted (never the buffer length)
    record = analyse(*gqa_model(past_len=32, total=10, shared_buffer=True, total_as_input=True), contrib=True)
    assert record.status == "unknown_value" and "32-long buffer" in record.reason and "'total'" in record.reason


def test_group_query_attention_shared_buffer_reads_the_attended_past_and_writes_the_new_positions():
    # past and present one [1, 2, 32, 8] buffer (fp32, 32 B a position of a kv head), updated in
    # place: the op reads the T - S = 10 - 4 = 6 past positions attended and writes the 4 new ones
    record = ok(analyse(*gqa_model(past_len=32, total=10, shared_buffer=True), contrib=True))
    q, k, v = 1 * 4 * 64 * 4, 1 * 4 * 16 * 4, 1 * 4 * 16 * 4  # 1,024 + 256 + 256 B
    past_read = 1 * 2 * 6 * 8 * 4  # 384 B of each 2,048 B buffer, not all of it
    new_written = 1 * 2 * 4 * 8 * 4  # 256 B of each present
    assert record.partial_bytes == {"past_k": 384, "past_v": 384, "present_k": 256, "present_v": 256}
    assert record.input_bytes == q + k + v + 2 * past_read == 2_304  # seqlens_k, total: constants
    assert record.output_bytes == 1 * 4 * 64 * 4 + 2 * new_written == 1_536
    assert (
        "one 32-long buffer for past and present, updated in place: 6 past positions read, 4 new written"
        in record.formula
    )
    # a growing cache (present [1, 2, 10, 8]) reads the same 6 past positions but writes its
    # present whole: 1,024 + 2 x (1·2·10·8·4 = 640) B
    record = ok(analyse(*gqa_model(past_len=6, total=10), contrib=True))
    assert record.partial_bytes == {}
    assert (record.input_bytes, record.output_bytes) == (2_304, 2_304)
    # prefill into the buffer (total 4 = the 4 new tokens): no past position read, 4 written
    record = ok(analyse(*gqa_model(past_len=32, total=4, shared_buffer=True), contrib=True))
    assert record.input_bytes == q + k + v == 1_536
    assert record.output_bytes == 1_024 + 2 * new_written == 1_536


def test_group_query_attention_packed_qkv_rotary_softcap():
    # packed QKV [1, 4, (8 + 2·2)·8 = 96], no past; rotary over the whole head (cos [32, 4])
    node = helper.make_node(
        "GroupQueryAttention",
        ["qkv", "", "", "", "", "seqlens_k", "total", "cos", "sin"],
        ["y"],
        domain=MS,
        num_heads=8,
        kv_num_heads=2,
        do_rotary=1,
        softcap=50.0,
    )
    record = ok(
        analyse(
            node,
            [("qkv", F32, [1, 4, 96])],
            [("y", F32, [1, 4, 64])],
            [
                ("seqlens_k", np.array([3], np.int32)),
                ("total", np.array(4, np.int32)),
                ("cos", zeros(32, 4)),
                ("sin", zeros(32, 4)),
            ],
            contrib=True,
        )
    )
    scores = 1 * 8 * 4 * 4  # 128
    assert record.macs == scores * 16
    rotated = 1 * 4 * (8 + 2) * 8  # new Q and K elements = 320
    # per score: scale 1 + causal mask 1 + softcap 3 + softmax 5 = 10
    assert record.flops == 2 * record.macs + 10 * scores + 3 * rotated
    assert record.params == 2 * 32 * 4  # the cos/sin caches


def test_contrib_rotary_embedding():
    # input [1, 6, 32] without num_heads: head size 2 x cos width (4) = 8, all rotated
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS)
    record = ok(
        analyse(
            node,
            [("x", F32, [1, 6, 32]), ("pos", I64, [1, 6])],
            [("y", F32, [1, 6, 32])],
            [("cos", zeros(16, 4)), ("sin", zeros(16, 4))],
            contrib=True,
        )
    )
    assert record.flops == 3 * 192


@pytest.mark.parametrize(
    "q_len, total, offset, window, expected",
    [
        (4, 4, 0, 0, 10),  # square prefill: the lower triangle, 1 + 2 + 3 + 4
        (1, 9, 8, 0, 9),  # decode: the one query sees every key
        (3, 5, 2, 0, 3 + 4 + 5),  # 3 new tokens after 2 cached
        (4, 4, 0, 1, 1 + 2 + 2 + 2),  # local window 1: itself and one key back
    ],
)
def test_causal_pairs(q_len, total, offset, window, expected):
    from onnxroof.ops.attention import causal_pairs

    assert causal_pairs(q_len, total, offset, window) == expected
