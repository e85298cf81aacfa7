"""Normalization rules (onnxroof/ops/normalization.py): every expected number worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import analyse_node, zeros
from onnx import TensorProto, helper

from onnxroof.ops import rule_for

F32 = TensorProto.FLOAT
I32 = TensorProto.INT32
MS = "com.microsoft"


def analyse(node, inputs, outputs, initializers=(), opset=17, contrib=False):
    return analyse_node(node, inputs, outputs, initializers, opset=opset, contrib=contrib)


def norm(op_type, shape, initializers=(), opset=17, domain="", **attributes):
    names = ["x"] + [n if n else "" for n, _ in initializers]
    node = helper.make_node(op_type, names, ["y"], domain=domain, **attributes)
    return analyse(
        node,
        [("x", F32, shape)],
        [("y", F32, shape)],
        [(n, a) for n, a in initializers if n],
        opset=opset,
        contrib=domain == MS,
    )


def test_layer_normalization_counts_the_shift_only_when_given():
    # [2, 5, 8] = 80 elements over the last axis; scale and B are [8]
    with_b = norm("LayerNormalization", [2, 5, 8], [("scale", zeros(8)), ("b", zeros(8))], axis=-1)
    # sum, subtract mean, square, sum, multiply by 1/σ, multiply by scale (6) + add B (1) = 7 per element
    assert with_b.flops == 7 * 80 and with_b.macs == 0
    assert with_b.params == 16 and with_b.weight_bytes == 16 * 4
    assert "(6 + 1 B)·80 elements = 560 FLOPs" in with_b.formula
    without_b = norm("LayerNormalization", [2, 5, 8], [("scale", zeros(8))], axis=-1)
    assert without_b.flops == 6 * 80


@pytest.mark.parametrize(
    "op_type, initializers, opset, attributes, per_element",
    [
        ("GroupNormalization", [("scale", zeros(4)), ("bias", zeros(4))], 21, {"num_groups": 2}, 7),
        ("InstanceNormalization", [("scale", zeros(4)), ("b", zeros(4))], 17, {}, 7),
        ("MeanVarianceNormalization", [], 17, {}, 5),  # sum, square, sum of squares, subtract, divide
        ("RMSNormalization", [("scale", zeros(3))], 23, {"axis": -1}, 4),  # square, sum, 1/rms, scale
        ("LpNormalization", [], 17, {"axis": 1, "p": 2}, 3),  # square, sum, divide
        ("BatchNormalization", [(n, zeros(4)) for n in ("g", "b", "m", "v")], 17, {}, 2),  # folded scale+shift
    ],
)
def test_per_element_norms(op_type, initializers, opset, attributes, per_element):
    record = norm(op_type, [1, 4, 3, 3], initializers, opset=opset, **attributes)  # 36 elements
    assert record.flops == per_element * 36


def test_softmax_family():
    # [2, 10] = 20 elements
    assert norm("Softmax", [2, 10]).flops == 5 * 20  # max, subtract, exp, sum, divide
    # max, subtract, exp, sum, subtract the log-sum: the log itself is once per row, not counted
    assert norm("LogSoftmax", [2, 10]).flops == 5 * 20


def test_simplified_layer_normalization_in_both_domains():
    # onnxruntime's optimizer writes it in the default domain, where ONNX has no schema for it
    for domain in ("", MS):
        assert rule_for(domain, "SimplifiedLayerNormalization") is not None
        record = norm("SimplifiedLayerNormalization", [2, 3, 8], [("gamma", zeros(8))], domain=domain, axis=-1)
        assert record.flops == 4 * 48 and record.params == 8  # RMS norm: 4 per element


def test_skip_layer_normalization():
    shape = [2, 3, 8]  # 48 elements
    inputs = [("x", F32, shape), ("skip", F32, shape)]
    full = helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["y"], domain=MS)
    record = analyse(
        full, inputs, [("y", F32, shape)], [("gamma", zeros(8)), ("beta", zeros(8)), ("bias", zeros(8))], contrib=True
    )
    # add skip 1 + add bias 1 + layernorm 6 + add beta 1 = 9 per element
    assert record.flops == 9 * 48
    assert record.params == 24 and record.weight_bytes == 24 * 4
    assert record.input_bytes == 2 * 48 * 4  # x and skip are activations
    bare = helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma"], ["y"], domain=MS)
    assert analyse(bare, inputs, [("y", F32, shape)], [("gamma", zeros(8))], contrib=True).flops == 7 * 48


def test_skip_simplified_layer_normalization():
    shape = [2, 3, 8]  # 48 elements
    node = helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["y", "", "", "sum"], domain=MS)
    record = analyse(
        node,
        [("x", F32, shape), ("skip", F32, shape)],
        [("y", F32, shape), ("sum", F32, shape)],
        [("gamma", zeros(8))],
        contrib=True,
    )
    assert record.flops == (1 + 4) * 48  # add skip, then RMS norm
    assert record.output_bytes == 2 * 48 * 4  # y and the residual sum are both written


def test_embed_layer_normalization_tables_are_parameters():
    node = helper.make_node(
        "EmbedLayerNormalization",
        ["ids", "segments", "word", "position", "segment", "gamma", "beta", "mask"],
        ["y", "mask_index"],
        domain=MS,
    )
    tables = [
        ("word", zeros(100, 8)),
        ("position", zeros(16, 8)),
        ("segment", zeros(2, 8)),
        ("gamma", zeros(8)),
        ("beta", zeros(8)),
    ]
    record = analyse(
        node,
        [("ids", I32, [2, 5]), ("segments", I32, [2, 5]), ("mask", I32, [2, 5])],
        [("y", F32, [2, 5, 8]), ("mask_index", I32, [2])],
        tables,
        contrib=True,
    )
    # 80 output elements x (word + position + segment: 2 adds, layernorm with gamma and beta: 7)
    # + 10 mask elements summed for the mask index
    assert record.flops == 9 * 80 + 10
    assert record.params == 800 + 128 + 16 + 8 + 8
    # it reads the gathered rows: 10 word rows (80), 5 position rows (40), the 2-row segment table
    # whole (10 rows of it are gathered) and gamma and beta: 152 floats, not the 960 stored
    assert record.weight_bytes == (80 + 40 + 16 + 8 + 8) * 4


def test_constant_ids_are_arguments_not_parameters():
    # constant input_ids (slot 0) are indices, not weights; the mask keeps the node from being folded
    node = helper.make_node(
        "EmbedLayerNormalization",
        ["ids", "", "word", "position", "", "gamma", "beta", "mask"],
        ["y", "mask_index"],
        domain=MS,
    )
    tables = [
        ("ids", np.zeros((1, 4), np.int32)),
        ("word", zeros(10, 8)),
        ("position", zeros(4, 8)),
        ("gamma", zeros(8)),
        ("beta", zeros(8)),
    ]
    record = analyse(
        node, [("mask", I32, [1, 4])], [("y", F32, [1, 4, 8]), ("mask_index", I32, [1])], tables, contrib=True
    )
    assert record.params == 80 + 32 + 8 + 8  # the tables and gamma/beta, not the 4 ids
    assert record.flops == (1 + 7) * 32 + 4  # word + position, layernorm; 4 mask elements
