"""KV-cached decoders: phases, KV-cache bytes and attention growth, on a hand-built block."""

from __future__ import annotations

import pytest
from conftest import make_model
from models import HEAD, HEADS, D, decoder_block
from onnx import TensorProto, helper

import onnxroof
from onnxroof.cli.output import error_text
from onnxroof.core.errors import UsageError
from onnxroof.cost.llm import detect_decoder

F32 = TensorProto.FLOAT


def test_layout_is_detected():
    layout = detect_decoder(decoder_block())
    assert layout.past_inputs == ("past_key_values.0.key", "past_key_values.0.value")
    assert layout.present_outputs == ("present.0.key", "present.0.value")
    # found from the graph: both past inputs are appended to by a Concat along axis 2 and returned
    assert [(c.axis, c.kind, c.how) for c in layout.caches] == [
        (2, "key", "Concat axis 2"),
        (2, "value", "Concat axis 2"),
    ]
    assert layout.roles == {"past_sequence_length": "past", "batch": "batch", "sequence_length": "sequence"}


@pytest.mark.parametrize("context", [1, 128, 2048])
def test_decode_macs_and_kv_bytes_per_token(context):
    # --context N: N tokens attended, the new one after N - 1 cached
    analysis = onnxroof.analyze(decoder_block(), phase="decode", context=context, targets=["h100-sxm"])
    assert analysis.complete
    # one new token: q, k, v, o projections 4 x 64 x 64, then Q.K^T and A.V over the context's
    # keys per head: 2 x context x 16
    assert analysis.totals.macs == 4 * D * D + HEADS * 2 * context * HEAD
    llm = analysis.llm
    # a cached token holds a key and a value: 2 x layers x kv heads x head size x 4 B = 512 B
    assert llm.kv_bytes_per_token == 2 * 1 * HEADS * HEAD * 4
    assert llm.kv_read_bytes == 2 * 1 * HEADS * HEAD * context * 4  # the attended cache, the new token's included
    # the Concat copies the past into present: written whole
    assert llm.kv_write_mode == "whole present" and llm.kv_write_bytes == 2 * 1 * HEADS * HEAD * context * 4
    assert (llm.kv_heads, llm.head_size) == (HEADS, HEAD)
    assert llm.kv_cache_bytes == {"fp32": 512 * context, "fp16": 256 * context, "int8": 128 * context}
    assert llm.tokens_per_s["h100-sxm"] == pytest.approx(1 / analysis.targets[0].latency_s)


def test_prefill_grows_linearly_and_attention_quadratically():
    def macs(n):
        analysis = onnxroof.analyze(decoder_block(), phase="prefill", seq=n)
        attention = sum(r.macs for r in analysis.nodes if r.family == "attention")
        return analysis.totals.macs, attention

    for n in (16, 64, 256):
        total, attention = macs(n)
        assert attention == HEADS * 2 * n * n * HEAD  # scores and context over n x n pairs
        assert total == 4 * n * D * D + attention
    assert macs(256)[1] == 16 * macs(64)[1]  # N^2: four times the tokens, sixteen times the attention


def test_explicit_dims_win_over_the_phase():
    analysis = onnxroof.analyze(decoder_block(), phase="decode", context=100, dims={"past_sequence_length": 10})
    assert analysis.llm.kv_read_bytes == 2 * HEADS * HEAD * (10 + 1) * 4  # 10 cached and the new token


def test_phase_errors():
    with pytest.raises(UsageError, match=r"\bseq\b") as caught:  # the API names its own argument
        onnxroof.analyze(decoder_block(), phase="prefill")
    assert "--seq" not in str(caught.value) and "--seq" in error_text(caught.value)
    with pytest.raises(UsageError, match="no KV cache found"):
        onnxroof.analyze(
            make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1])], [("y", F32, [1])]),
            phase="decode",
            context=4,
        )


def test_decode_is_memory_bound_and_long_prefill_compute_bound_on_h100():
    # a GPT-style layer, 16 heads of 64 (hidden 1,024), in fp32 as exported; TensorRT runs its
    # products on TF32 (h100-sxm's [fp32_math]): ridge 494.7 / 3.35 = 147.7 FLOP/B
    decode = onnxroof.analyze(decoder_block(16, 64), phase="decode", context=2048, targets=["h100-sxm"])
    prefill = onnxroof.analyze(decoder_block(16, 64), phase="prefill", seq=2048, targets=["h100-sxm"])
    # decode at context 2,048 (2,047 cached + the new token): MACs 4 x 1,024^2 (projections) +
    # 16 x 2 x 2,048 x 64 (attention) and softmax 5 x 16 x 2,048: 16,941,056 FLOPs. DRAM: the
    # weights 16,777,216 B, the new token (4,096 B) read once by the q, k and v projections (one
    # GEMM under h100-sxm's horizontal fusion) and the output written, the cache read (2 x 16 x
    # 2,047 x 64 x 4 B) and written whole as present (2 x 16 x 2,048 x 64 x 4 B): 50,331,648 B.
    # Each weight is used once: 0.34 FLOP/B.
    point = decode.targets[0].model_point
    flops = 2 * (4 * 1024**2 + 16 * 2 * 2048 * 64) + 5 * 16 * 2048
    dram = 4 * 1024**2 * 4 + 2 * 4096 + 2 * 16 * 2047 * 64 * 4 + 2 * 16 * 2048 * 64 * 4
    assert (point.flops, point.dram_bytes) == (flops, dram)
    assert point.bound == "dram" and point.intensity == pytest.approx(0.3365, abs=1e-4)
    # prefill: 2,048 tokens reuse every weight 2,048 times. Node by node, the 16 x 2,048^2 score
    # matrix (256 MiB) does not fit the 50 MiB L2 and spills: the point falls below the TF32 ridge
    # (above the CUDA cores' fp32 one, 67 / 3.35 = 20); h100-sxm's fused attention (QK^T, softmax
    # and AV in one kernel) never writes it out at all, and is compute-bound
    unfused = onnxroof.analyze(decoder_block(16, 64), phase="prefill", seq=2048, targets=["h100-sxm"], fusion="none")
    assert unfused.targets[0].spill_bytes > 0
    assert unfused.targets[0].model_point.roof == "tf32"
    assert unfused.targets[0].model_point.bound == "dram" and 20 < unfused.targets[0].model_point.intensity < 147.7
    point = prefill.targets[0].model_point
    assert prefill.targets[0].spill_bytes == 0
    assert point.bound == "compute" and point.intensity > unfused.targets[0].model_point.intensity


@pytest.mark.parametrize("flag, needed", [("--seq", "prefill"), ("--context", "decode")])
def test_a_phase_flag_without_its_phase_exits_2_saying_what_it_needs(capsys, flag, needed):
    # issue 31, item 8: --seq 128 alone used to exit 0 and change nothing
    from conftest import run

    code, out, err = run(capsys, "summary", "--example", "shallownet", flag, "128")
    assert (code, out) == (2, "")
    assert err == f"onnxroof: error: {flag} sets a decoder's {needed} step: give --phase {needed} with it\n"


def test_the_cache_search_leaves_no_cycle_to_keep_the_model_alive():
    # the CLI pauses the collector: a cycle holding the node list kept each analysis's protobuf
    # (every variant the findings make) until the end of the run
    import gc

    from onnxroof.cost.llm import searched_nodes

    graph = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1])], [("y", F32, [1])]).graph
    gc.collect()
    collecting = gc.isenabled()
    gc.disable()
    try:
        found = searched_nodes(graph)
        assert len(found[0]) == 1
        del found
        assert gc.collect() == 0  # all freed by reference counting
    finally:
        if collecting:
            gc.enable()
