"""cost/kv_report.py: a decoder step's cache figures from hand-made present tensors (one layer:
a key and a value cache of [batch 1, 4 heads, 10 positions, head size 8] in fp32)."""

from __future__ import annotations

import math

from onnxroof.cost.kv_report import llm_report
from onnxroof.cost.llm import DecoderLayout
from onnxroof.cost.llm_graph import CacheTensor
from onnxroof.cost.records import TensorRecord

SHAPE = (1, 4, 10, 8)
PRESENT_BYTES = math.prod(SHAPE) * 4  # 320 elements x 4 bytes = 1,280


def layout(shared: bool = False) -> DecoderLayout:
    caches = (
        CacheTensor("past_key", "present_key", 2, "key", "Concat axis 2", shared),
        CacheTensor("past_value", "present_value", 2, "value", "Concat axis 2", shared),
    )
    return DecoderLayout(caches, {}, {}, ("two caches",))


def presents(shape: tuple | None = SHAPE) -> dict[str, TensorRecord]:
    size = PRESENT_BYTES if shape is not None else None
    return {
        name: TensorRecord(name, "float32", shape, size, "activation", "attention")
        for name in ("present_key", "present_value")
    }


def test_a_decode_step_reads_and_copies_both_presents():
    report = llm_report(presents(), layout(), "decode", new_tokens=1, context=10, latencies_s={"cpu": 0.01})
    assert report.kv_read_bytes == 2 * 1280
    assert report.kv_write_bytes == 2 * 1280  # the graph copies the past into the presents
    assert report.kv_write_mode == "whole present"
    assert report.kv_bytes_per_token == 2 * 1280 // 10  # 128 bytes per position per cache
    assert (report.kv_heads, report.head_size) == (4, 8)
    assert report.layers == 1
    assert report.kv_cache_bytes == {"fp32": 640 * 4, "fp16": 640 * 2, "int8": 640}  # 2 x 320 elements
    assert report.tokens_per_s == {"cpu": 100.0}  # 1 token in 10 ms
    assert report.time_to_first_token_s == {}  # a decode step has none


def test_a_shared_buffer_is_written_at_the_new_positions_only():
    # a token adds 1,280 / (10 positions x batch 2) = 64 bytes to each cache: 128 for both;
    # 3 new tokens in each of the 2 sequences write 128 x 3 x 2
    report = llm_report(
        presents(), layout(shared=True), "prefill", new_tokens=3, context=3, batch=2, latencies_s={"cpu": 0.5}
    )
    assert report.kv_write_mode == "new positions"
    assert report.kv_bytes_per_token == 128
    assert report.kv_write_bytes == 128 * 3 * 2
    assert report.tokens_per_s == {"cpu": 3 * 2 / 0.5}
    assert report.time_to_first_token_s == {"cpu": 0.5}


def test_an_unsized_present_leaves_the_per_token_figures_unknown():
    report = llm_report(presents(shape=None), layout(), "decode", new_tokens=1, context=10)
    assert report.kv_bytes_per_token is None
    assert report.kv_cache_bytes == {}
    assert report.kv_read_bytes == 0
