"""report/text/table.py: the text summary's pieces: inputs, names clipped, the CSV, the decoder
block (the targets' lines are tested with the findings and targets: tests/cli, tests/roofline)."""

from __future__ import annotations

import csv
import io
from types import SimpleNamespace

from report_models import MAC_FLOPS, MACS, PARAMS, matmul_relu

import onnxroof
from onnxroof.report.text.table import (
    CSV_COLUMNS,
    assumed_text,
    clip,
    distinct_clips,
    inputs_line,
    llm_lines,
    render_csv,
    shape_text,
)


def test_a_shape_is_written_with_x_an_unknown_dim_as_a_question_mark_and_no_dims_as_scalar():
    assert shape_text([1, None, 8]) == "1x?x8"
    assert shape_text([]) == "scalar" and shape_text(None) == "?"


def test_a_long_name_is_clipped_in_the_middle_to_its_width():
    # width 9: 4 characters, the ellipsis, the last 4
    assert clip("abcdefghijklmnop", 9) == "abcd…mnop"
    assert clip("short", 9) == "short"


def test_names_sharing_a_path_drop_it_before_a_middle_clip_hides_what_differs():
    names = ["/encoder/layer.1/attention/MatMul", "/encoder/layer.12/attention/MatMul"]
    # 33 and 34 characters, over 30: the shared "/encoder/" goes, leaving 1 + 24 and 1 + 25
    assert distinct_clips(names, 30) == ["…layer.1/attention/MatMul", "…layer.12/attention/MatMul"]
    assert distinct_clips(names, 40) == names  # short enough: unchanged


def test_the_inputs_line_names_each_input_with_its_shape_and_type():
    assert inputs_line(onnxroof.analyze(matmul_relu())) == "x 1x4 float32"


def test_assumed_dims_say_how_to_set_them():
    assert assumed_text({"batch": 1}) == (
        "batch=1 (a batch dim the inputs leave open; --dim batch=N or --batch N to change)"
    )


def test_the_csv_has_a_row_per_node_with_its_counts():
    rows = list(csv.DictReader(io.StringIO(render_csv(onnxroof.analyze(matmul_relu())))))
    assert list(rows[0]) == list(CSV_COLUMNS)
    matmul, relu = rows
    assert (matmul["name"], matmul["macs"], matmul["mac_flops"], matmul["params"]) == (
        "matmul",
        str(MACS),
        str(MAC_FLOPS),
        str(PARAMS),
    )
    # the Relu: 8 FLOPs over 32 + 32 bytes = 0.125 FLOP/B
    relu_cells = (relu["flops"], relu["input_bytes"], relu["output_bytes"], relu["intensity"])
    assert relu_cells == ("8", "32", "32", "0.125")


def _decoder(**changes) -> SimpleNamespace:
    figures = dict(
        phase="decode",
        new_tokens=1,
        context=128,
        layers=2,
        kv_heads=4,
        head_size=16,
        kv_read_bytes=2048,
        kv_write_bytes=1024,
        kv_write_mode="appended",
        kv_bytes_per_token=512,
        kv_cache_bytes={"float16": 65536},
        cross_read_bytes=0,
        cross_length=0,
        cross_write_bytes=0,
        cross_cache_bytes={},
        tokens_per_s={"hand": 1234.5},
        time_to_first_token_s={},
        recognised=[f"cache {i}" for i in range(4)] + ["attention 0"],
    )
    return SimpleNamespace(**{**figures, **changes})


def test_the_decoder_block_states_phase_cache_and_rates():
    lines = llm_lines(_decoder())
    # decode at context 128: 1 new token, 127 cached
    assert lines[0] == ("KV-cached decoder (decode of 1 token at context 128, 127 cached): 2 layers, 4 KV heads x 16")
    assert lines[1].startswith("  cache read 2 KiB per step") and lines[1].endswith("; 512 B per token")
    assert lines[2] == "  KV cache at context 128: float16 64 KiB"
    assert lines[3] == "  hand: 1,234.5 tokens/s"


def test_the_decoder_block_names_two_caches_of_a_kind_then_how_many_more():
    recognised = [line for line in llm_lines(_decoder()) if "recognised" in line]
    assert recognised == [
        "  recognised: cache 0",
        "  recognised: cache 1",
        "  recognised: ... and 2 more caches (--format json lists them)",
        "  recognised: attention 0",
    ]


def test_a_prefill_without_its_phase_says_how_to_set_it():
    assert "(prefill of 16 tokens)" in llm_lines(_decoder(phase="prefill", new_tokens=16))[0]
    assert "(phase not set: --phase prefill|decode)" in llm_lines(_decoder(phase=None))[0]
