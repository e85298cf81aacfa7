"""Sweeps over dims, batch, dtype and decoder phases."""

from __future__ import annotations

import json

import pytest
from models import HEAD, HEADS, decoder_block

from onnxroof.cli.app import main
from onnxroof.compare.sweep import parse_sweep, run_sweep
from onnxroof.core.errors import UsageError
from onnxroof.core.examples import build_example


def test_batch_and_dtype_sweep_is_the_product():
    points = run_sweep(
        build_example("shallownet"), [parse_sweep("batch=1,4"), parse_sweep("dtype=model,int8")], targets=["myriad-x"]
    )
    assert [p.values for p in points] == [
        {"batch": 1, "dtype": "model"},
        {"batch": 1, "dtype": "int8"},
        {"batch": 4, "dtype": "model"},
        {"batch": 4, "dtype": "int8"},
    ]
    # MAC-FLOPs scale with the batch; weight bytes drop 4x in int8 and do not scale with the batch
    assert [p.analysis.totals.mac_flops for p in points] == [2_424_832, 2_424_832, 4 * 2_424_832, 4 * 2_424_832]
    assert [p.analysis.totals.param_bytes for p in points] == [1_314_344, 328_586, 1_314_344, 328_586]


def test_a_sweep_takes_dims_as_strings_too():
    import onnx
    from onnx import TensorProto, helper

    # y[rows, 4] = x[rows, n] @ w[n, 4]: rows x n x 4 MACs
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", 4])],
        [helper.make_tensor("w", TensorProto.FLOAT, [3, 4], [0.0] * 12)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for dims in (["n=3"], {"n": 3}):  # the strings once crashed: dict() of a tuple of strings
        points = run_sweep(onnx.ModelProto.FromString(model.SerializeToString()), [("rows", [1, 2])], dims=dims)
        assert [p.analysis.totals.macs for p in points] == [1 * 3 * 4, 2 * 3 * 4]


def test_decode_context_sweep_grows_the_attention_and_the_cache(capsys):
    points = run_sweep(decoder_block(), [parse_sweep("context=16,256")], phase="decode")
    small, large = (p.analysis for p in points)
    # attention MACs per head: 2 x (context + 1) x head size
    assert large.totals.macs - small.totals.macs == HEADS * 2 * (257 - 17) * HEAD
    assert large.llm.kv_read_bytes == 16 * small.llm.kv_read_bytes


def test_sweep_cli_json_has_one_document_per_point(tmp_path, capsys):
    import onnx

    path = tmp_path / "block.onnx"
    onnx.save(decoder_block(), path)
    assert main(["summary", str(path), "--phase", "prefill", "--sweep", "seq=8,64", "--format", "json", "-q"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schema"] == "onnxroof-sweep/1" and [p["values"] for p in document["points"]] == [
        {"seq": 8},
        {"seq": 64},
    ]
    assert document["points"][1]["llm"]["new_tokens"] == 64


@pytest.mark.parametrize("text", ["batch", "batch=", "batch=a,b", "=1,2"])
def test_bad_sweeps(text):
    with pytest.raises(UsageError):
        parse_sweep(text)
