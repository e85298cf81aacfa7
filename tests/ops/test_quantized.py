"""Quantized rules (onnxroof/ops/quantized.py): every expected number worked out by hand.

Integer products: MACs as the float op; QLinear outputs add 4 FLOPs per element (requantize);
(de)quantization: Quantize 4, Dequantize 2, DynamicQuantize 6 FLOPs per element.
"""

from __future__ import annotations

import numpy as np
from conftest import analyse_node, make_model, zeros
from onnx import TensorProto, helper

import onnxroof

F32 = TensorProto.FLOAT
U8 = TensorProto.UINT8
I8 = TensorProto.INT8
MS = "com.microsoft"
MiB = 1 << 20


def analyse(node, inputs, outputs, initializers=(), opset=21, contrib=False):
    return analyse_node(node, inputs, outputs, initializers, opset=opset, contrib=contrib)


def scalar(value, dtype):
    return np.array(value, dtype=dtype)


def test_matmul_nbits_4bit_4096_square():
    # K = N = 4096, 4-bit, block 32: B packed [N, K/32 = 128 blocks, 32·4/8 = 16 bytes] = 8 MiB,
    # scales [N·K/32 = 524,288] in float16 = 1 MiB
    node = helper.make_node(
        "MatMulNBits", ["a", "b", "scales"], ["y"], domain=MS, K=4096, N=4096, bits=4, block_size=32
    )
    b = np.zeros((4096, 128, 16), dtype=np.uint8)
    scales = np.zeros(4096 * 128, dtype=np.float16)
    record = analyse(
        node, [("a", F32, [1, 4, 4096])], [("y", F32, [1, 4, 4096])], [("b", b), ("scales", scales)], contrib=True
    )
    # M = 1·4 = 4 rows: MACs = 4 x 4096 x 4096
    assert record.macs == 4 * 4096 * 4096
    # + each of the 4096·4096 weights dequantized once: subtract zero point, multiply by scale
    assert record.flops == 2 * record.macs + 2 * 4096 * 4096
    assert record.weight_bytes == 8 * MiB + 1 * MiB  # the stored packed bytes, not 4 bytes per weight
    assert record.dtype == "float32"
    # parameters count the 4096 x 4096 weights (not the 8 Mi uint8 storage cells) plus the scales
    assert record.params == 4096 * 4096 + 4096 * 128


def test_matmul_nbits_zero_points_are_stored_bytes_too():
    # packed uint8 zero points: [N, ceil(128 blocks·4 bits / 8)] = [4096, 64] = 256 KiB
    node = helper.make_node(
        "MatMulNBits", ["a", "b", "scales", "zp"], ["y"], domain=MS, K=4096, N=4096, bits=4, block_size=32
    )
    initializers = [
        ("b", np.zeros((4096, 128, 16), np.uint8)),
        ("scales", np.zeros(4096 * 128, np.float32)),
        ("zp", np.zeros((4096, 64), np.uint8)),
    ]
    record = analyse(node, [("a", F32, [1, 4096])], [("y", F32, [1, 4096])], initializers, contrib=True)
    assert record.macs == 1 * 4096 * 4096  # decode: one row
    assert record.weight_bytes == 8 * MiB + 2 * MiB + 256 * 1024  # float32 scales are 2 MiB


def qlinear_conv_initializers():
    return [
        ("x_scale", scalar(0.1, np.float32)),
        ("x_zp", scalar(128, np.uint8)),
        ("w", np.zeros((16, 3, 3, 3), np.int8)),
        ("w_scale", zeros(16)),
        ("w_zp", np.zeros(16, np.int8)),
        ("y_scale", scalar(0.2, np.float32)),
        ("y_zp", scalar(128, np.uint8)),
        ("bias", np.zeros(16, np.int32)),
    ]


def test_qlinear_conv_macs_and_int8_weight_bytes():
    node = helper.make_node(
        "QLinearConv",
        ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "bias"],
        ["y"],
        pads=[1, 1, 1, 1],
    )
    record = analyse(node, [("x", U8, [1, 3, 8, 8])], [("y", U8, None)], qlinear_conv_initializers())
    # N x Co x Ho x Wo x Ci/g x K x K = 1·16·8·8·3·9 (the weight is input 3)
    assert record.macs == 27_648
    # + requantize each of the 16·8·8 = 1,024 outputs: scale, round, + zero point, saturate
    assert record.flops == 2 * 27_648 + 4 * 1_024
    # w 432 int8 + w_scale 16·4 + w_zp 16 + x_scale 4 + x_zp 1 + y_scale 4 + y_zp 1 + bias 16·4
    assert record.weight_bytes == 432 + 64 + 16 + 4 + 1 + 4 + 1 + 64
    assert record.params == 432 + 16 + 16 + 1 + 1 + 1 + 1 + 16
    assert record.dtype == "uint8"
    assert record.input_bytes == 3 * 64 and record.output_bytes == 1_024  # one byte per element


def test_contrib_qlinear_conv_is_the_same_rule():
    node = helper.make_node(
        "QLinearConv",
        ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "bias"],
        ["y"],
        domain=MS,
        pads=[1, 1, 1, 1],
    )
    record = analyse(
        node, [("x", U8, [1, 3, 8, 8])], [("y", U8, [1, 16, 8, 8])], qlinear_conv_initializers(), contrib=True
    )
    assert record.macs == 27_648


def test_conv_integer_grouped():
    # x [1, 4, 6, 6], w [8, 2, 3, 3], group 2: output [1, 8, 4, 4]; MACs = 8·16·2·9
    node = helper.make_node("ConvInteger", ["x", "w"], ["y"], group=2)
    record = analyse(
        node, [("x", U8, [1, 4, 6, 6])], [("y", TensorProto.INT32, None)], [("w", np.zeros((8, 2, 3, 3), np.uint8))]
    )
    assert record.macs == 2_304 and record.flops == 2 * 2_304  # int32 output: nothing else
    assert record.weight_bytes == 144


def test_qlinear_matmul_and_matmul_integer():
    node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"], ["y"])
    initializers = [
        ("a_scale", scalar(0.1, np.float32)),
        ("a_zp", scalar(0, np.uint8)),
        ("b", np.zeros((8, 3), np.int8)),
        ("b_scale", scalar(0.1, np.float32)),
        ("b_zp", scalar(0, np.int8)),
        ("y_scale", scalar(0.1, np.float32)),
        ("y_zp", scalar(0, np.uint8)),
    ]
    record = analyse(node, [("a", U8, [2, 5, 8])], [("y", U8, None)], initializers)
    # [2, 5, 8] x [8, 3]: 30 outputs x K = 8 = 240 MACs; + 4 per output to requantize
    assert record.macs == 240 and record.flops == 480 + 4 * 30
    integer = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    record = analyse(
        integer, [("a", U8, [4, 8])], [("y", TensorProto.INT32, None)], [("b", np.zeros((8, 6), np.uint8))]
    )
    assert record.macs == 4 * 6 * 8 and record.flops == 2 * 192


def test_dynamic_quantize_matmul():
    node = helper.make_node("DynamicQuantizeMatMul", ["a", "b", "b_scale"], ["y"], domain=MS)
    record = analyse(
        node,
        [("a", F32, [2, 8])],
        [("y", F32, [2, 4])],
        [("b", np.zeros((8, 4), np.int8)), ("b_scale", zeros(4))],
        contrib=True,
    )
    # 2·4·8 = 64 MACs; A's 16 elements quantized on the fly (6 each); 8 outputs rescaled to float (1 each)
    assert record.macs == 64 and record.flops == 128 + 6 * 16 + 8


def test_qgemm_requantized():
    node = helper.make_node(
        "QGemm", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "", "y_scale", "y_zp"], ["y"], domain=MS
    )
    initializers = [
        ("a_scale", scalar(0.1, np.float32)),
        ("a_zp", scalar(0, np.uint8)),
        ("b", np.zeros((8, 5), np.int8)),
        ("b_scale", scalar(0.1, np.float32)),
        ("b_zp", scalar(0, np.int8)),
        ("y_scale", scalar(0.1, np.float32)),
        ("y_zp", scalar(0, np.uint8)),
    ]
    record = analyse(node, [("a", U8, [4, 8])], [("y", U8, [4, 5])], initializers, contrib=True)
    assert record.macs == 4 * 8 * 5 and record.flops == 2 * 160 + 4 * 20


def test_quantize_dequantize_on_activations():
    shape = [2, 10]  # 20 elements
    q = helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"])
    record = analyse(
        q, [("x", F32, shape)], [("y", U8, None)], [("s", scalar(0.1, np.float32)), ("zp", scalar(0, np.uint8))]
    )
    assert record.flops == 4 * 20  # divide, round, add zero point, saturate
    dq = helper.make_node("DequantizeLinear", ["x", "s", "zp"], ["y"])
    record = analyse(
        dq, [("x", U8, shape)], [("y", F32, None)], [("s", scalar(0.1, np.float32)), ("zp", scalar(0, np.uint8))]
    )
    assert record.flops == 2 * 20 and record.dtype == "uint8"  # subtract zero point, multiply
    dyn = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zp"])
    record = analyse(dyn, [("x", F32, shape)], [("y", U8, None), ("y_scale", F32, None), ("y_zp", U8, None)])
    assert record.flops == 6 * 20  # min and max, then quantize


def test_dequantized_weights_are_folded_at_their_int8_size():
    # a weight-side DequantizeLinear is folded (constant) and the Conv reads 288 int8 bytes
    dq = helper.make_node("DequantizeLinear", ["w_q", "w_s"], ["w"])
    conv = helper.make_node("Conv", ["x", "w"], ["y"])
    model = make_model(
        [dq, conv],
        [("x", F32, [1, 2, 5, 5])],
        [("y", F32, None)],
        [("w_q", np.zeros((16, 2, 3, 3), np.int8)), ("w_s", scalar(0.5, np.float32))],
        opset=21,
    )
    dq_record, conv_record = onnxroof.analyze(model).nodes
    assert dq_record.status == "constant" and dq_record.flops == 0
    assert conv_record.macs == 16 * 9 * 2 * 9 and conv_record.weight_bytes == 288 + 4


def test_qlinear_elementwise_are_dequantize_op_quantize():
    # QLinearAdd: A [2, 3] + B [1, 3] -> 6 outputs: dequantize 2·(6 + 3), add 6, quantize 4·6
    node = helper.make_node("QLinearAdd", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"], domain=MS)
    params = [(n, scalar(0.1, np.float32)) for n in ("sa", "sb", "sc")] + [
        (n, scalar(0, np.uint8)) for n in ("za", "zb", "zc")
    ]
    record = analyse(node, [("a", U8, [2, 3]), ("b", U8, [1, 3])], [("c", U8, [2, 3])], params, contrib=True)
    assert record.flops == 2 * 9 + 6 + 4 * 6
    # QLinearSigmoid on 10 elements: dequantize 2 + the float Sigmoid's own count + quantize 4
    sigmoid = analyse(helper.make_node("Sigmoid", ["x"], ["y"]), [("x", F32, [10])], [("y", F32, [10])]).flops
    node = helper.make_node("QLinearSigmoid", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS)
    params = [
        ("sx", scalar(0.1, np.float32)),
        ("zx", scalar(0, np.uint8)),
        ("sy", scalar(0.1, np.float32)),
        ("zy", scalar(0, np.uint8)),
    ]
    record = analyse(node, [("x", U8, [10])], [("y", U8, [10])], params, contrib=True)
    assert record.flops == 2 * 10 + sigmoid + 4 * 10


def test_qlinear_global_average_pool_channels_last():
    # NHWC [1, 4, 4, 8] -> [1, 1, 1, 8]: 128 inputs dequantized (2) and summed/averaged (1 each), 8 quantized (4)
    node = helper.make_node(
        "QLinearGlobalAveragePool", ["x", "sx", "zx", "sy", "zy"], ["y"], domain=MS, channels_last=1
    )
    params = [
        ("sx", scalar(0.1, np.float32)),
        ("zx", scalar(0, np.uint8)),
        ("sy", scalar(0.1, np.float32)),
        ("zy", scalar(0, np.uint8)),
    ]
    record = analyse(node, [("x", U8, [1, 4, 4, 8])], [("y", U8, [1, 1, 1, 8])], params, contrib=True)
    assert record.flops == 3 * 128 + 4 * 8


def test_qlinear_concat_copies():
    node = helper.make_node("QLinearConcat", ["sy", "zy", "a", "sa", "za", "b", "sb", "zb"], ["y"], domain=MS, axis=1)
    params = [(n, scalar(0.1, np.float32)) for n in ("sy", "sa", "sb")] + [
        (n, scalar(0, np.uint8)) for n in ("zy", "za", "zb")
    ]
    record = analyse(node, [("a", U8, [1, 2, 4]), ("b", U8, [1, 3, 4])], [("y", U8, [1, 5, 4])], params, contrib=True)
    assert record.flops == 0 and record.input_bytes == 20 and record.output_bytes == 20
