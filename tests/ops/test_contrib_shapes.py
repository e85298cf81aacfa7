"""Shape rules of ops without an ONNX schema (com.microsoft contrib ops, onnxruntime's
SimplifiedLayerNormalization), and the rules added with them. Every expected shape and count is
worked out by hand from the op's definition in onnxruntime's ContribOperators.md."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxroof
from onnxroof.core.tensors import TensorInfo
from onnxroof.ops import COST_RULES, NodeView, output_types, rule_for
from onnxroof.ops.quantized import qgemm

F32, F16, U8, I8 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.INT8
I32, I64, I16 = TensorProto.INT32, TensorProto.INT64, TensorProto.INT16
MS = "com.microsoft"


def shapes_of(op, inputs, outputs=("y",), domain=MS, values=None, **attrs):
    """The shape rule's answer for a node: inputs are (elem_type, shape) or None for an omitted slot."""
    names = [f"i{k}" if spec is not None else "" for k, spec in enumerate(inputs)]
    node = helper.make_node(op, names, list(outputs), domain=domain, **attrs)
    infos = tuple(
        None if spec is None else TensorInfo(name, spec[0], tuple(spec[1])) for name, spec in zip(names, inputs)
    )
    found = output_types(node, infos, {f"i{k}": np.asarray(v) for k, v in (values or {}).items()})
    assert found is not None, f"{op}: no shape rule, or it failed"
    return [None if info is None else (info.dtype, info.shape) for info in found]


SCALE = (F32, ())
ZP = (U8, ())


# --------------------------------------------------------------------------------- coverage


_SCHEMALESS = sorted(key for key in COST_RULES if not onnx.defs.has(key[1], key[0]))


@pytest.mark.parametrize("domain, op", _SCHEMALESS)
def test_every_rule_for_an_op_without_a_schema_gives_shapes(domain, op):
    rule = COST_RULES[(domain, op)]
    assert rule.shapes is not None, f"{domain or 'ai.onnx'}::{op} has a cost rule but no shape rule"


def test_the_contrib_ops_named_in_issue_16_are_covered():
    expected = """QLinearAdd QLinearMul QLinearSigmoid QLinearLeakyRelu QLinearSoftmax QLinearAveragePool
    QLinearGlobalAveragePool QLinearConcat QLinearConv QuantizeLinear DequantizeLinear QGemm DynamicQuantizeMatMul
    MatMulIntegerToFloat MatMulInteger16 MatMulNBits MatMulBnb4 Attention QAttention MultiHeadAttention
    GroupQueryAttention RotaryEmbedding SkipLayerNormalization SkipSimplifiedLayerNormalization
    EmbedLayerNormalization FastGelu BiasGelu Gelu QuickGelu BiasAdd FusedMatMul
    TransposeMatMul FusedConv DynamicQuantizeLSTM GatherBlockQuantized""".split()
    missing = [op for op in expected if rule_for(MS, op) is None or rule_for(MS, op).shapes is None]
    assert not missing
    # onnxruntime's default-domain norms: SimplifiedLayerNormalization, and its opset-1 LayerNormalization
    assert rule_for("", "SimplifiedLayerNormalization").shapes is not None
    assert rule_for("", "LayerNormalization").shapes is not None
    # onnxruntime registers no com.microsoft LayerNormalization (a node of it does not load)
    assert rule_for(MS, "LayerNormalization") is None


# ------------------------------------------------------------------------- quantized family


def test_qlinear_add_broadcasts_with_a_symbolic_batch():
    a, b = (U8, ("N", 64, 56, 56)), (U8, (1, 64, 1, 1))
    assert shapes_of("QLinearAdd", [a, SCALE, ZP, b, SCALE, ZP, SCALE, ZP]) == [(U8, ("N", 64, 56, 56))]


def test_qlinear_mul_broadcasts_both_ways():
    a, b = (I8, ("N", 1, 8)), (I8, ("N", 4, 1))
    assert shapes_of("QLinearMul", [a, SCALE, ZP, b, SCALE, ZP, SCALE, ZP]) == [(I8, ("N", 4, 8))]


def test_two_different_symbols_broadcast_to_an_unknown_dim():
    a, b = (U8, ("A", 3)), (U8, ("B", 3))
    assert shapes_of("QLinearAdd", [a, SCALE, ZP, b, SCALE, ZP, SCALE, ZP]) == [(U8, (None, 3))]


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax"])
def test_qlinear_unary_ops_keep_the_input_shape(op):
    assert shapes_of(op, [(U8, ("B", 10)), SCALE, ZP, SCALE, ZP]) == [(U8, ("B", 10))]


def test_qlinear_average_pool_nchw_and_channels_last():
    # 7 + 1 + 1 pad - 3 kernel = 6, / stride 2 = 3, + 1 = 4
    args = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    assert shapes_of("QLinearAveragePool", [(U8, (1, 8, 7, 7)), SCALE, ZP, SCALE, ZP], **args) == [(U8, (1, 8, 4, 4))]
    assert shapes_of("QLinearAveragePool", [(U8, (1, 7, 7, 8)), SCALE, ZP, SCALE, ZP], channels_last=1, **args) == [
        (U8, (1, 4, 4, 8))
    ]


def test_qlinear_average_pool_ceil_mode():
    # 6 - 3 = 3 over stride 2: floor 1 + 1 = 2 windows; ceil 2 + 1 = 3 (the third starts at 4 < 6)
    x = [(U8, (1, 2, 6, 6)), SCALE, ZP, SCALE, ZP]
    assert shapes_of("QLinearAveragePool", x, kernel_shape=[3, 3], strides=[2, 2]) == [(U8, (1, 2, 2, 2))]
    assert shapes_of("QLinearAveragePool", x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1) == [(U8, (1, 2, 3, 3))]


def test_qlinear_global_average_pool_both_layouts():
    assert shapes_of("QLinearGlobalAveragePool", [(U8, ("N", 2048, 7, 7)), SCALE, ZP, SCALE, ZP]) == [
        (U8, ("N", 2048, 1, 1))
    ]
    assert shapes_of("QLinearGlobalAveragePool", [(U8, ("N", 7, 7, 2048)), SCALE, ZP, SCALE, ZP], channels_last=1) == [
        (U8, ("N", 1, 1, 2048))
    ]


def test_qlinear_concat_adds_the_axis():
    inputs = [SCALE, ZP, (U8, ("N", 3, 4, 4)), SCALE, ZP, (U8, ("N", 5, 4, 4)), SCALE, ZP]
    assert shapes_of("QLinearConcat", inputs, axis=1) == [(U8, ("N", 8, 4, 4))]


def test_ms_qlinear_conv_strided_and_padded():
    # (224 + 3 + 3 - 7) // 2 + 1 = 112; Co = 64 from w
    inputs = [(U8, (1, 3, 224, 224)), SCALE, ZP, (I8, (64, 3, 7, 7)), SCALE, (I8, ()), SCALE, ZP, (I32, (64,))]
    assert shapes_of("QLinearConv", inputs, strides=[2, 2], pads=[3, 3, 3, 3]) == [(U8, (1, 64, 112, 112))]


def test_ms_qlinear_conv_same_upper_keeps_ceil_of_size_over_stride():
    inputs = [(U8, ("N", 16, 15, 15)), SCALE, ZP, (I8, (32, 16, 3, 3)), SCALE, (I8, ()), SCALE, ZP]
    assert shapes_of("QLinearConv", inputs, strides=[2, 2], auto_pad="SAME_UPPER") == [(U8, ("N", 32, 8, 8))]


def test_ms_quantize_and_dequantize_linear_types():
    assert shapes_of("QuantizeLinear", [(F32, (2, 3)), SCALE, (I8, ())]) == [(I8, (2, 3))]
    assert shapes_of("QuantizeLinear", [(F32, (2, 3)), SCALE]) == [(U8, (2, 3))]  # no zero point: uint8
    assert shapes_of("DequantizeLinear", [(U8, (2, 3)), (F16, ()), ZP]) == [(F16, (2, 3))]


def test_qgemm_shape_from_a_and_transposed_b():
    a, b = (U8, (4, 16)), (I8, (32, 16))
    requantized = [a, SCALE, ZP, b, SCALE, (I8, ()), None, SCALE, ZP]
    assert shapes_of("QGemm", requantized, transB=1) == [(U8, (4, 32))]
    assert shapes_of("QGemm", [a, SCALE, ZP, b, SCALE, (I8, ())], transB=1) == [(F32, (4, 32))]  # float output


def test_integer_matmuls():
    assert shapes_of("DynamicQuantizeMatMul", [(F32, ("B", 128, 768)), (I8, (768, 3072)), SCALE]) == [
        (F32, ("B", 128, 3072))
    ]
    assert shapes_of("MatMulIntegerToFloat", [(U8, (2, 5, 8)), (I8, (8, 6)), (F16, ()), (F16, ())]) == [
        (F16, (2, 5, 6))
    ]
    assert shapes_of("MatMulInteger16", [(I16, (3, 4)), (I16, (4, 5))]) == [(I32, (3, 5))]


def test_matmul_nbits_and_bnb4_take_n_from_the_attribute():
    b = (U8, (11008, 128, 16))
    assert shapes_of(
        "MatMulNBits", [(F16, (1, "S", 4096)), b, (F16, (11008 * 128,))], K=4096, N=11008, bits=4, block_size=32
    ) == [(F16, (1, "S", 11008))]
    assert shapes_of(
        "MatMulBnb4", [(F32, (2, 64)), (U8, (4096,)), (F32, (128,))], K=64, N=128, block_size=64, quant_type=1
    ) == [(F32, (2, 128))]


def test_qlinear_where_broadcasts_condition_and_both_values():
    inputs = [(TensorProto.BOOL, (4, 1)), (U8, (1, 6)), SCALE, ZP, (U8, (1, 6)), SCALE, ZP, SCALE, ZP]
    assert shapes_of("QLinearWhere", inputs) == [(U8, (4, 6))]


def test_gather_block_quantized_unpacks_two_4bit_values_per_byte():
    # data uint8 [1000, 64]: 128 4-bit values per row; indices [2, 7] -> [2, 7, 128], the scales' float16
    inputs = [(U8, (1000, 64)), (I64, ("B", 7)), (F16, (1000, 4))]
    assert shapes_of("GatherBlockQuantized", inputs, gather_axis=0, quantize_axis=1, block_size=32, bits=4) == [
        (F16, ("B", 7, 128))
    ]
    # an int4 tensor holds one value per element: no unpacking
    assert shapes_of(
        "GatherBlockQuantized", [(TensorProto.INT4, (1000, 128)), (I64, (3,)), (F32, (1000, 4))], block_size=32
    ) == [(F32, (3, 128))]


# ------------------------------------------------------------------------- attention family


def test_contrib_attention_output_and_present():
    x, w = (F32, (2, 8, 768)), (F32, (768, 2304))
    # no past: present [2, B, N, S, H] = [2, 2, 12, 8, 64]
    assert shapes_of("Attention", [x, w, (F32, (2304,))], outputs=("y", "present"), num_heads=12) == [
        (F32, (2, 8, 768)),
        (F32, (2, 2, 12, 8, 64)),
    ]
    # past of 5: present holds 5 + 8 = 13
    past = (F32, (2, 2, 12, 5, 64))
    assert shapes_of("Attention", [x, w, (F32, (2304,)), None, past], outputs=("y", "present"), num_heads=12)[1] == (
        F32,
        (2, 2, 12, 13, 64),
    )
    # one shared buffer: present is past's own shape
    shared = (F32, (2, 2, 12, 32, 64))
    assert (
        shapes_of(
            "Attention",
            [x, w, (F32, (2304,)), None, shared, None, (I32, ())],
            outputs=("y", "present"),
            num_heads=12,
            past_present_share_buffer=1,
        )[1]
        == shared
    )


def test_contrib_attention_unequal_hidden_sizes():
    # qkv_hidden_sizes [64, 64, 32]: output width is V's 32
    found = shapes_of("Attention", [(F32, (1, "S", 48)), (F32, (48, 160))], num_heads=4, qkv_hidden_sizes=[64, 64, 32])
    assert found == [(F32, (1, "S", 32))]


def test_qattention_output_is_float():
    inputs = [(U8, (1, 4, 64)), (U8, (64, 192)), (F32, (192,)), SCALE, SCALE]
    assert shapes_of("QAttention", inputs, outputs=("y", "present"), num_heads=4) == [
        (F32, (1, 4, 64)),
        (F32, (2, 1, 4, 4, 16)),
    ]


def test_multi_head_attention_self_with_past_and_cross():
    q, k, v = (F32, (1, 4, 64)), (F32, (1, 6, 64)), (F32, (1, 6, 64))
    outputs = ("y", "present_key", "present_value")
    assert shapes_of("MultiHeadAttention", [q, k, v], outputs=outputs, num_heads=8) == [
        (F32, (1, 4, 64)),
        (F32, (1, 8, 6, 8)),
        (F32, (1, 8, 6, 8)),
    ]
    past = (F32, (1, 8, 10, 8))  # 10 cached + 6 new = 16
    assert shapes_of("MultiHeadAttention", [q, k, v, None, None, None, past, past], outputs=outputs, num_heads=8)[
        1
    ] == (F32, (1, 8, 16, 8))
    cached_k, cached_v = (F32, (1, 8, 20, 8)), (F32, (1, 8, 20, 16))  # cross attention: Hv = 16
    assert shapes_of("MultiHeadAttention", [q, cached_k, cached_v], outputs=outputs, num_heads=8) == [
        (F32, (1, 4, 128)),
        cached_k,
        cached_v,
    ]


def test_group_query_attention_present_length():
    # N = 8 query heads of H = 256 / 8 = 32, Nkv = 2
    q, k, v = (F16, (1, 3, 256)), (F16, (1, 3, 64)), (F16, (1, 3, 64))
    outputs = ("y", "present_key", "present_value")
    attrs = dict(num_heads=8, kv_num_heads=2)
    past = (F16, (1, 2, 10, 32))
    lens, total = (I32, (1,)), (I32, ())
    inputs = [q, k, v, past, past, lens, total]
    # a growing cache: 10 past + 3 new = total 13 > 10
    assert shapes_of("GroupQueryAttention", inputs, outputs=outputs, values={6: 13}, **attrs) == [
        (F16, (1, 3, 256)),
        (F16, (1, 2, 13, 32)),
        (F16, (1, 2, 13, 32)),
    ]
    # a shared 64-long buffer keeps its length
    shared = (F16, (1, 2, 64, 32))
    assert shapes_of(
        "GroupQueryAttention", [q, k, v, shared, shared, lens, total], outputs=outputs, values={6: 13}, **attrs
    )[1] == (F16, (1, 2, 64, 32))
    # the value unknown: the present length is unknown (growing or shared cannot be told)
    assert shapes_of("GroupQueryAttention", inputs, outputs=outputs, **attrs)[1] == (F16, (1, 2, None, 32))


def test_group_query_attention_packed_qkv_without_past():
    # packed width (8 + 2·2)·32 = 384; no past and no total: present holds the 3 new tokens
    q = (F16, (1, 3, 384))
    found = shapes_of("GroupQueryAttention", [q, None, None], outputs=("y", "pk", "pv"), num_heads=8, kv_num_heads=2)
    assert found == [(F16, (1, 3, 256)), (F16, (1, 2, 3, 32)), (F16, (1, 2, 3, 32))]


def test_ms_rotary_embedding_keeps_the_input():
    inputs = [(F16, (1, "S", 512)), (I64, (1, "S")), (F16, (2048, 32)), (F16, (2048, 32))]
    assert shapes_of("RotaryEmbedding", inputs, num_heads=8) == [(F16, (1, "S", 512))]


# --------------------------------------------------------------------- normalization family


@pytest.mark.parametrize("op", ["SkipLayerNormalization", "SkipSimplifiedLayerNormalization"])
def test_skip_norms_give_four_outputs(op):
    x = (F16, (2, "S", 768))
    inputs = [x, x, (F16, (768,))]
    found = shapes_of(op, inputs, outputs=("y", "mean", "inv_std_var", "sum"))
    assert found == [x, (F32, (2, "S", 1)), (F32, (2, "S", 1)), x]


def test_skip_norm_with_omitted_middle_outputs():
    x = (F32, (2, 4, 8))
    found = shapes_of("SkipLayerNormalization", [x, x, (F32, (8,))], outputs=("y", "", "", "sum"))
    assert found == [x, None, None, x]


def test_simplified_layer_norm_and_onnxruntime_layer_norm():
    x = (F16, (2, 4, 8))
    assert shapes_of("SimplifiedLayerNormalization", [x, (F16, (8,))], outputs=("y", "inv_std_var"), domain="") == [
        x,
        (F32, (2, 4, 1)),
    ]
    # axis 1: the statistics keep the leading dim only
    assert shapes_of(
        "LayerNormalization", [x, (F16, (4, 8)), (F16, (4, 8))], outputs=("y", "mean", "inv"), axis=1, domain=""
    ) == [x, (F32, (2, 1, 1)), (F32, (2, 1, 1))]


def test_embed_layer_normalization_outputs():
    ids = (I32, (2, 16))
    tables = [(F32, (30522, 768)), (F32, (512, 768)), (F32, (2, 768)), (F32, (768,)), (F32, (768,))]
    found = shapes_of("EmbedLayerNormalization", [ids, ids, *tables, ids], outputs=("y", "mask_index", "sum"))
    assert found == [(F32, (2, 16, 768)), (I32, (2,)), (F32, (2, 16, 768))]


def test_qembed_layer_normalization_output_is_float():
    ids = (I32, ("B", 128))
    tables = [(U8, (30522, 768)), (U8, (512, 768)), (U8, (2, 768)), (U8, (768,)), (U8, (768,))]
    found = shapes_of("QEmbedLayerNormalization", [ids, ids, *tables, ids], outputs=("y", "mask_index"))
    assert found == [(F32, ("B", 128, 768)), (I32, ("B",))]


def test_group_norm_keeps_the_input():
    x = (F16, (2, 32, 32, 320))
    assert shapes_of("GroupNorm", [x, (F32, (320,)), (F32, (320,))], activation=1, groups=32, epsilon=1e-5) == [x]


# ------------------------------------------------------------ elementwise, matmul, conv, LSTM


@pytest.mark.parametrize("op", ["FastGelu", "BiasGelu", "Gelu", "QuickGelu", "BiasAdd", "BiasSoftmax"])
def test_contrib_activations_keep_input_zero(op):
    x = (F16, ("B", "S", 3072))
    assert shapes_of(op, [x, (F16, (3072,))]) == [x]


def test_bias_split_gelu_halves_the_last_dim():
    assert shapes_of("BiasSplitGelu", [(F16, (2, 64, 2560)), (F16, (2560,))]) == [(F16, (2, 64, 1280))]


@pytest.mark.parametrize("op", ["FusedMatMul", "TransposeMatMul"])
def test_fused_matmul_transposes(op):
    # transA: A [2, 3, 4] read as [2, 4, 3] (M = 4); transB: B [2, 5, 3] read as [2, 3, 5] (N = 5)
    assert shapes_of(op, [(F32, (2, 3, 4)), (F32, (2, 5, 3))], transA=1, transB=1) == [(F32, (2, 4, 5))]
    # transBatchA: A [4, 2, 3] read as [2, 4, 3]; B [2, 3, 5] -> [2, 4, 5]
    assert shapes_of(op, [(F32, (4, 2, 3)), (F32, (2, 3, 5))], transBatchA=1) == [(F32, (2, 4, 5))]
    # a symbolic batch broadcast against a constant 1
    assert shapes_of(op, [(F32, ("B", 4, 3)), (F32, (1, 3, 5))]) == [(F32, ("B", 4, 5))]


def test_gemm_fast_gelu_shape():
    assert shapes_of("GemmFastGelu", [(F16, (2, 8, 16)), (F16, (16, 32)), (F16, (32,))]) == [(F16, (2, 8, 32))]


def test_fused_conv_shape():
    inputs = [(F32, ("N", 16, 32, 32)), (F32, (32, 16, 3, 3)), (F32, (32,))]
    assert shapes_of("FusedConv", inputs, pads=[1, 1, 1, 1], activation="Relu") == [(F32, ("N", 32, 32, 32))]


def test_dynamic_quantize_lstm_shapes():
    # X [T=5, B=2, I=10], W [D=2, I, 4H = 32], R [2, H = 8, 32]
    inputs = [(F32, (5, 2, 10)), (I8, (2, 10, 32)), (I8, (2, 8, 32))]
    found = shapes_of(
        "DynamicQuantizeLSTM", inputs, outputs=("y", "y_h", "y_c"), hidden_size=8, direction="bidirectional"
    )
    assert found == [(F32, (5, 2, 2, 8)), (F32, (2, 2, 8)), (F32, (2, 2, 8))]


# ------------------------------------------------------------------------- costs, end to end


def _model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(
        nodes,
        "contrib",
        [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


def _scales(*prefixes):
    return [
        init for p in prefixes for init in ((f"{p}_s", np.array(0.1, np.float32)), (f"{p}_z", np.array(0, np.uint8)))
    ]


def test_everything_after_a_qlinear_add_without_value_info_is_counted():
    """QOperator chain: Quantize -> QLinearConv -> ms QLinearAdd (no value_info, as onnxruntime's
    quantizer writes it) -> QLinearConv -> ms QLinearGlobalAveragePool -> Flatten -> QLinearMatMul ->
    Dequantize; nothing stored for any intermediate tensor."""
    w1 = np.zeros((4, 3, 3, 3), np.int8)  # 3x3 pad 1: [1, 4, 8, 8]
    w2 = np.zeros((8, 4, 1, 1), np.int8)  # 1x1 stride 2: [1, 8, 4, 4]
    w3 = np.zeros((8, 10), np.int8)
    initializers = [
        *_scales("x", "a", "b", "c", "d", "e", "f"),
        ("w1", w1),
        ("w2", w2),
        ("w3", w3),
        ("w_s", np.array(0.1, np.float32)),
        ("w_z", np.array(0, np.int8)),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"]),
        helper.make_node(
            "QLinearConv", ["xq", "x_s", "x_z", "w1", "w_s", "w_z", "a_s", "a_z"], ["c1"], pads=[1, 1, 1, 1]
        ),
        helper.make_node("QLinearAdd", ["c1", "a_s", "a_z", "c1", "a_s", "a_z", "b_s", "b_z"], ["sum"], domain=MS),
        helper.make_node(
            "QLinearConv", ["sum", "b_s", "b_z", "w2", "w_s", "w_z", "c_s", "c_z"], ["c2"], strides=[2, 2]
        ),
        helper.make_node("QLinearGlobalAveragePool", ["c2", "c_s", "c_z", "d_s", "d_z"], ["pool"], domain=MS),
        helper.make_node("Flatten", ["pool"], ["flat"]),
        helper.make_node("QLinearMatMul", ["flat", "d_s", "d_z", "w3", "w_s", "w_z", "e_s", "e_z"], ["mm"]),
        helper.make_node("DequantizeLinear", ["mm", "e_s", "e_z"], ["y"]),
    ]
    model = _model(nodes, [("x", F32, [1, 3, 8, 8])], [("y", F32, None)], initializers)
    records = {r.outputs[0]: r for r in onnxroof.analyze(model).nodes}
    assert all(r.status == "ok" for r in records.values()), [(r.op_type, r.reason) for r in records.values()]
    assert records["sum"].output_shapes == [[1, 4, 8, 8]]
    assert records["c1"].macs == 1 * 4 * 8 * 8 * 3 * 3 * 3  # 6,912
    assert records["c2"].macs == 1 * 8 * 4 * 4 * 4 * 1  # 512
    # global pool: (2 dequantize + 1 window) per input element + 4 quantize per output
    assert records["pool"].flops == 3 * 8 * 4 * 4 + 4 * 8
    assert records["mm"].macs == 1 * 8 * 10
    assert records["y"].output_shapes == [[1, 10]]
    # QLinearAdd: 2 dequantize per element of both inputs, 1 add, 4 quantize per output
    assert records["sum"].flops == 2 * 2 * 256 + 256 + 4 * 256


def test_qgemm_with_an_unknown_output_counts_from_a_and_b():
    a, b = TensorInfo("a", U8, (4, 16)), TensorInfo("b", I8, (32, 16))
    scalar = TensorInfo("s", F32, ())
    node = helper.make_node("QGemm", ["a", "s", "z", "b", "s", "bz", "", "s", "z"], ["y"], domain=MS, transB=1)
    view = NodeView(node, (a, scalar, scalar, b, scalar, scalar, None, scalar, scalar), (TensorInfo("y"),))
    cost = qgemm(view)
    assert cost.macs == 4 * 16 * 32  # M·K·N with N from B's transposed dim 0
    assert cost.flops == 4 * 4 * 32  # requantize each of the 128 outputs


def test_qgemm_through_analyze_without_a_stored_output_shape():
    initializers = [
        ("a_s", np.array(0.1, np.float32)),
        ("a_z", np.array(0, np.uint8)),
        ("b", np.zeros((32, 16), np.int8)),
        ("b_s", np.array(0.1, np.float32)),
        ("b_z", np.array(0, np.int8)),
    ]
    node = helper.make_node("QGemm", ["a", "a_s", "a_z", "b", "b_s", "b_z"], ["y"], domain=MS, transB=1)
    model = _model([node], [("a", U8, [4, 16])], [("y", F32, None)], initializers)
    (record,) = onnxroof.analyze(model).nodes
    assert record.status == "ok", record.reason
    assert record.output_shapes == [[4, 32]]
    assert record.macs == 2048
    assert record.flops == 2 * 2048 + 1 * 128  # float output: one multiply per output


def test_dynamic_quantize_lstm_cost():
    # T = 5, B = 2, I = 10, H = 8, one direction: S = 10 steps
    initializers = [
        ("w", np.zeros((1, 10, 32), np.int8)),
        ("r", np.zeros((1, 8, 32), np.int8)),
        ("b", np.zeros((1, 64), np.float32)),
        ("w_s", np.array([0.1], np.float32)),
        ("w_z", np.array([0], np.int8)),
        ("r_s", np.array([0.1], np.float32)),
        ("r_z", np.array([0], np.int8)),
    ]
    node = helper.make_node(
        "DynamicQuantizeLSTM",
        ["x", "w", "r", "b", "", "", "", "", "w_s", "w_z", "r_s", "r_z"],
        ["y", "y_h", "y_c"],
        domain=MS,
        hidden_size=8,
    )
    model = _model(
        [node], [("x", F32, [5, 2, 10])], [("y", F32, None), ("y_h", F32, None), ("y_c", F32, None)], initializers
    )
    (record,) = onnxroof.analyze(model).nodes
    assert record.status == "ok", record.reason
    assert record.output_shapes == [[5, 1, 2, 8], [1, 2, 8], [1, 2, 8]]
    macs = 1 * 10 * 4 * 8 * (10 + 8)  # D·S·4H·(I + H) = 5,760
    assert record.macs == macs
    gates = 10 * 8 * 15  # 15 per hidden unit per step (Sigmoid, Tanh, Tanh)
    quantize = 1 * 10 * (6 * (10 + 8) + 2 * 32)  # x_t and h_t-1 quantized (6 each), 2·4H rescales
    assert record.flops == 2 * macs + gates + quantize


def test_gather_block_quantized_cost():
    # table uint8 [1000, 64] = 128 4-bit values per row, blocks of 32: scales [1000, 4] float16
    initializers = [("table", np.zeros((1000, 64), np.uint8)), ("scales", np.zeros((1000, 4), np.float16))]
    node = helper.make_node(
        "GatherBlockQuantized",
        ["table", "ids", "scales"],
        ["y"],
        domain=MS,
        gather_axis=0,
        quantize_axis=1,
        block_size=32,
        bits=4,
    )
    model = _model([node], [("ids", I64, [2, 7])], [("y", F16, None)], initializers)
    (record,) = onnxroof.analyze(model).nodes
    assert record.status == "ok", record.reason
    assert record.output_shapes == [[2, 7, 128]] and record.output_dtypes == ["float16"]
    assert record.flops == 2 * 2 * 7 * 128  # each gathered value dequantized
    assert record.params == 1000 * 128 + 1000 * 4  # the whole table in values, and the scales
    # bytes read: the 14 gathered rows of 64 bytes, and those rows' scales: 14 x 4 float16
    assert record.weight_bytes == 14 * 64 + 14 * 4 * 2


def test_fused_conv_cost():
    w = np.zeros((32, 16, 3, 3), np.float32)
    node = helper.make_node("FusedConv", ["x", "w"], ["y"], domain=MS, pads=[1, 1, 1, 1], activation="Relu")
    model = _model([node], [("x", F32, [1, 16, 8, 8])], [("y", F32, None)], [("w", w)])
    (record,) = onnxroof.analyze(model).nodes
    assert record.status == "ok", record.reason
    macs = 1 * 32 * 8 * 8 * 16 * 9  # N·Co·Ho·Wo·Ci·K·K
    assert record.macs == macs
    assert record.flops == 2 * macs + 32 * 8 * 8  # one max per output for Relu


def test_contrib_products_count_without_an_output_shape():
    """Cost rules read an unknown output from the op's shape rule: an ms QLinearConv's spatial size,
    a QLinearAdd's requantized outputs, a MatMulIntegerToFloat's rescaled outputs."""
    s = TensorInfo("s", F32, ())
    conv = helper.make_node(
        "QLinearConv", ["x", "s", "s", "w", "s", "s", "s", "s"], ["y"], domain=MS, strides=[2, 2], pads=[1, 1, 1, 1]
    )
    x, w = TensorInfo("x", U8, (1, 8, 16, 16)), TensorInfo("w", I8, (16, 8, 3, 3))
    cost = rule_for(MS, "QLinearConv").handler(NodeView(conv, (x, s, s, w, s, s, s, s), (TensorInfo("y"),)))
    # (16 + 2 - 3) // 2 + 1 = 8: 1·16·8·8 outputs x 8·9 MACs each, + 4 requantize per output
    assert (cost.macs, cost.flops) == (1 * 16 * 64 * 8 * 9, 4 * 16 * 64)

    add = helper.make_node("QLinearAdd", ["a", "s", "s", "b", "s", "s", "s", "s"], ["y"], domain=MS)
    a, b = TensorInfo("a", U8, (2, 3, 4)), TensorInfo("b", U8, (4,))
    cost = rule_for(MS, "QLinearAdd").handler(NodeView(add, (a, s, s, b, s, s, s, s), (TensorInfo("y"),)))
    assert cost.flops == 2 * (24 + 4) + 24 + 4 * 24  # dequantize both inputs, add, quantize the 24 outputs

    mm = helper.make_node("MatMulIntegerToFloat", ["a", "b", "s", "s"], ["y"], domain=MS)
    a, b = TensorInfo("a", U8, (3, 5)), TensorInfo("b", I8, (5, 7))
    cost = rule_for(MS, "MatMulIntegerToFloat").handler(NodeView(mm, (a, b, s, s), (TensorInfo("y"),)))
    assert (cost.macs, cost.flops) == (3 * 5 * 7, 3 * 7)  # one rescale per output


@pytest.mark.parametrize("domain, op", _SCHEMALESS)
def test_every_shape_rule_states_its_outputs(domain, op):
    assert len(COST_RULES[(domain, op)].shape_formula) > 20  # shown in docs/ops.md as "Outputs:"


def test_layer_normalization_at_opset_13_is_sized_by_its_rule():
    """onnxruntime's transformers optimizer emits default-domain LayerNormalization (its own opset-1
    schema) into opset 12-16 models; ONNX's inference knows it only from opset 17."""
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["h"], axis=-1),
        helper.make_node("Relu", ["h"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "ln13",
        [helper.make_tensor_value_info("x", F32, [2, 4, 8])],
        [helper.make_tensor_value_info("y", F32, None)],
        [numpy_helper.from_array(np.ones(8, np.float32), "g"), numpy_helper.from_array(np.zeros(8, np.float32), "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    relu = onnxroof.analyze(model).nodes[1]
    assert relu.status == "ok" and relu.flops == 2 * 4 * 8


def test_onnxruntime_quantizer_qoperator_output_is_counted_through(tmp_path):
    """A residual block quantized by onnxruntime's own quantize_static (QOperator): QLinearConv,
    com.microsoft QLinearAdd, QLinearGlobalAveragePool and QGemm, with no value_info kept. Every
    product is counted, as in the float model."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    rng = np.random.default_rng(0)

    def weight(name, *shape):
        return numpy_helper.from_array((0.1 * rng.standard_normal(shape)).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["c3"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1),
    ]
    weights = [
        weight("w1", 8, 3, 3, 3),
        weight("b1", 8),
        weight("w2", 8, 8, 3, 3),
        weight("b2", 8),
        weight("w3", 16, 8, 1, 1),
        weight("b3", 16),
        weight("wf", 10, 16),
        weight("bf", 10),
    ]
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("x", F32, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", F32, [1, 10])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "float.onnx")

    class Calibration(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(2)])

        def get_next(self):
            return next(self.batches, None)

    quantization.quantize_static(
        str(tmp_path / "float.onnx"),
        str(tmp_path / "q.onnx"),
        Calibration(),
        quant_format=quantization.QuantFormat.QOperator,
        activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QInt8,
    )
    quantized = onnx.load(tmp_path / "q.onnx")
    del quantized.graph.value_info[:]  # as onnxruntime leaves it for a contrib op's output
    records = onnxroof.analyze(quantized).nodes
    assert {(r.domain, r.op_type) for r in records} >= {
        (MS, "QLinearAdd"),
        (MS, "QLinearGlobalAveragePool"),
        (MS, "QGemm"),
    }
    assert all(r.status == "ok" for r in records), [(r.op_type, r.reason) for r in records if r.status != "ok"]
    # 3x3 convs on 16x16: 8·256·3·9 and 8·256·8·9; 1x1 stride 2: 16·64·8; Gemm 16·10
    assert sum(r.macs for r in records) == 8 * 256 * 3 * 9 + 8 * 256 * 8 * 9 + 16 * 64 * 8 + 16 * 10


def test_a_plugin_rule_with_shapes_carries_inference_through_its_op():
    from onnxroof.ops import OpCost, register, same_as_input

    key = ("my.domain", "MyOp")
    register(
        "MyOp",
        lambda node: OpCost(flops=node.input_elements(0)),
        family="custom",
        domain="my.domain",
        shapes=same_as_input(0),
    )
    try:
        nodes = [helper.make_node("MyOp", ["x"], ["h"], domain="my.domain"), helper.make_node("Relu", ["h"], ["y"])]
        graph = helper.make_graph(
            nodes,
            "plugin",
            [helper.make_tensor_value_info("x", F32, [2, 4, 8])],
            [helper.make_tensor_value_info("y", F32, None)],
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.domain", 1)]
        )
        model.ir_version = 8
        relu = onnxroof.analyze(model).nodes[1]
        assert relu.status == "ok" and relu.flops == 2 * 4 * 8
    finally:
        COST_RULES.pop(key)


def _decoder_model(node, inputs, initializers, outputs):
    return _model([node], inputs, [(o, F32, None) for o in outputs], initializers)


def test_decoder_masked_self_attention_with_a_shared_buffer():
    # one new token (S = 1), N = 4 heads of 16, a 16-long shared buffer holding 5 past tokens: T = 6
    initializers = [
        ("w", np.zeros((64, 192), np.float32)),
        ("b", np.zeros(192, np.float32)),
        ("past_len", np.array(5, np.int32)),
        ("beams", np.array(1, np.int32)),
    ]
    node = helper.make_node(
        "DecoderMaskedSelfAttention",
        ["x", "w", "b", "", "past", "", "past_len", "beams"],
        ["y", "present"],
        domain=MS,
        num_heads=4,
        past_present_share_buffer=1,
    )
    model = _decoder_model(
        node, [("x", F32, [2, 1, 64]), ("past", F32, [2, 2, 4, 16, 16])], initializers, ("y", "present")
    )
    (record,) = onnxroof.analyze(model).nodes
    assert record.status == "ok", record.reason
    assert record.output_shapes == [[2, 1, 64], [2, 2, 4, 16, 16]]  # present is the shared buffer
    projection = 2 * 1 * 64 * 192  # B·S·Hin·(Dq + Dk + Dv)
    attention = 2 * 4 * 1 * 6 * (16 + 16)  # B·N·S·T·(Dqk + Dv)
    assert record.macs == projection + attention


def test_decoder_masked_multi_head_attention_reorders_its_inputs():
    # bias at input 10 (Q, K, V biases: 3·64), past_sequence_length 5 in a 16-long shared buffer: T = 6
    initializers = [("bias", np.zeros(192, np.float32)), ("past_len", np.array(5, np.int32))]
    names = ["q", "k", "v", "", "", "pk", "pv", "past_len", "", "", "bias"]
    node = helper.make_node(
        "DecoderMaskedMultiHeadAttention",
        names,
        ["y", "present_key", "present_value"],
        domain=MS,
        num_heads=4,
        past_present_share_buffer=1,
    )
    inputs = [
        ("q", F32, [2, 1, 64]),
        ("k", F32, [2, 1, 64]),
        ("v", F32, [2, 1, 64]),
        ("pk", F32, [2, 4, 16, 16]),
        ("pv", F32, [2, 4, 16, 16]),
    ]
    (record,) = onnxroof.analyze(
        _decoder_model(node, inputs, initializers, ("y", "present_key", "present_value"))
    ).nodes
    assert record.status == "ok", record.reason
    assert record.output_shapes == [[2, 1, 64], [2, 4, 16, 16], [2, 4, 16, 16]]
    macs = 2 * 4 * 1 * 6 * (16 + 16)
    assert record.macs == macs
    scores = 2 * 4 * 1 * 6
    bias = 2 * 4 * (1 * 16 + 1 * (16 + 16))  # the new Q, K and V elements
    assert record.flops == 2 * macs + scores * (1 + 5) + bias  # scale, softmax; no mask


def test_decoder_masked_multi_head_attention_growing_past():
    q = (F32, (2, 1, 64))
    past = (F32, (2, 4, 5, 16))  # no shared buffer: the new token is appended, 5 + 1
    found = shapes_of(
        "DecoderMaskedMultiHeadAttention",
        [q, q, q, None, None, past, past, (I32, ())],
        outputs=("y", "pk", "pv"),
        values={7: 5},
        num_heads=4,
    )
    assert found == [(F32, (2, 1, 64)), (F32, (2, 4, 6, 16)), (F32, (2, 4, 6, 16))]
