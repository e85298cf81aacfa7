"""The worked numbers of cost-model.md, derived by hand in the comments and checked exactly."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model, minigooglenet_by_hand, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.examples import build_example

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def test_shallownet_totals():
    # Conv: 2 x 32x32 outputs x 32 filters x 3x3x3 = 1,769,472; Dense: 2 x 32,768 x 10 = 655,360
    result = onnxroof.analyze(build_example("shallownet"))
    assert result.totals.mac_flops == 1_769_472 + 655_360 == 2_424_832
    # conv 3x3x3x32 + 32 = 896; dense 32,768 x 10 + 10 = 327,690
    assert result.totals.params == 896 + 327_690 == 328_586
    assert result.totals.param_bytes == 4 * 328_586 == 1_314_344
    assert result.complete and result.totals.unsupported == {}


def test_shallownet_per_node_records():
    records = {r.op_type: r for r in onnxroof.analyze(build_example("shallownet")).nodes}
    conv = records["Conv"]
    assert conv.macs == 32 * 32 * 32 * 3 * 3 * 3
    assert conv.params == 896 and conv.weight_bytes == 896 * 4
    assert conv.input_bytes == 3 * 32 * 32 * 4 and conv.output_bytes == 32 * 32 * 32 * 4
    assert conv.intensity == pytest.approx(2 * conv.macs / (896 * 4 + 3 * 32 * 32 * 4 + 32 * 32 * 32 * 4))
    assert records["Relu"].flops == 32 * 32 * 32  # one max per output element
    assert records["Flatten"].input_bytes == 0 and records["Flatten"].intensity is None  # a view moves nothing
    assert records["Gemm"].macs == 32_768 * 10


def test_separable_shallownet():
    # depthwise 3x3 on 3 channels: 2 x 32x32 x 3 x 9 = 55,296; pointwise 3 -> 32: 2 x 32x32 x 32 x 3 = 196,608
    result = onnxroof.analyze(build_example("shallownet-separable"))
    assert result.totals.mac_flops == 55_296 + 196_608 + 655_360 == 907_264
    # depthwise 27 (no bias) + pointwise 96 + 32 + dense 327,690
    assert result.totals.params == 27 + 96 + 32 + 327_690 == 327_845


def test_minigooglenet_totals():
    mac_flops, params, params_without_bn = minigooglenet_by_hand(separable=False)
    assert (mac_flops, params, params_without_bn) == (469_195_840, 1_656_250, 1_649_402)
    result = onnxroof.analyze(build_example("minigooglenet"))
    assert result.totals.mac_flops == mac_flops
    assert result.totals.params == params
    bn_params = sum(r.params for r in result.nodes if r.op_type == "BatchNormalization")
    assert result.totals.params - bn_params == params_without_bn
    assert result.totals.counted_nodes == result.totals.nodes == 74


@pytest.mark.parametrize("kernel, macs", [(3, 62 * 62 * 9), (1, 64 * 64)])
def test_conv_on_a_64x64_plane(kernel, macs):
    # valid conv, one channel in and out: 3x3 -> 62x62 outputs x 9 = 34,596 MACs; 1x1 -> 4,096
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[kernel, kernel])],
        [("x", F16, [1, 1, 64, 64])],
        [("y", F16, None)],
        [("w", zeros(1, 1, kernel, kernel, dtype=np.float16))],
    )
    (record,) = onnxroof.analyze(model).nodes
    assert record.macs == macs
    # cost-model.md: 64x64x2 + k*k*2 bytes of input and weights -> 4.21 and 0.50 MAC/byte
    assert record.input_bytes + record.weight_bytes == 64 * 64 * 2 + kernel * kernel * 2
    assert round(record.macs / (record.input_bytes + record.weight_bytes), 2) == (4.21 if kernel == 3 else 0.50)


def test_constant_of_shape_weights_are_parameters():
    # W = ConstantOfShape([16, 8]) feeds a MatMul: 128 parameters, and the producer costs nothing
    model = make_model(
        [
            helper.make_node("ConstantOfShape", ["wshape"], ["w"], value=helper.make_tensor("v", F32, [1], [0.5])),
            helper.make_node("MatMul", ["x", "w"], ["y"]),
        ],
        [("x", F32, [4, 16])],
        [("y", F32, [4, 8])],
        [("wshape", np.array([16, 8], dtype=np.int64))],
    )
    result = onnxroof.analyze(model)
    assert result.totals.params == 16 * 8
    assert result.totals.param_bytes == 16 * 8 * 4
    producer, matmul = result.nodes
    assert producer.status == "constant" and producer.flops == 0
    assert matmul.macs == 4 * 16 * 8 and matmul.params == 128


def test_constant_node_weights_and_scalar_initializers_are_parameters():
    # a Constant node holding a [3, 5] weight, and a scalar initializer multiplied in
    weight = helper.make_tensor("wv", F32, [3, 5], [0.0] * 15)
    model = make_model(
        [
            helper.make_node("Constant", [], ["w"], value=weight),
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Mul", ["h", "scale"], ["y"]),
        ],
        [("x", F32, [2, 3])],
        [("y", F32, [2, 5])],
        [("scale", np.array(2.0, dtype=np.float32))],
    )
    result = onnxroof.analyze(model)
    assert result.totals.params == 15 + 1
    assert result.totals.macs == 2 * 3 * 5
    assert result.totals.flops == 2 * 30 + 10  # MatMul MAC-FLOPs + one multiply per output


def test_shape_arguments_are_not_parameters():
    # Reshape's target shape is a setting, not a weight
    model = make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [("x", F32, [2, 6])],
        [("y", F32, [3, 4])],
        [("shape", np.array([3, 4], dtype=np.int64))],
    )
    result = onnxroof.analyze(model)
    assert result.totals.params == 0


def test_int8_weight_behind_dequantize_counts_stored_bytes():
    # int8 W [64, 32] -> DequantizeLinear (fp32 scale, int8 zero point) -> MatMul
    model = make_model(
        [
            helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"]),
            helper.make_node("MatMul", ["x", "w"], ["y"]),
        ],
        [("x", F32, [1, 64])],
        [("y", F32, [1, 32])],
        [("wq", zeros(64, 32, dtype=np.int8)), ("ws", np.array(0.1, np.float32)), ("wz", np.array(0, np.int8))],
    )
    result = onnxroof.analyze(model)
    # the stored roots behind w (cost-model.md section 3): the int8 weight, its scale, its zero point
    assert result.totals.params == 64 * 32 + 1 + 1
    assert result.totals.param_bytes == 64 * 32 * 1 + 4 + 1


def test_unsupported_op_is_listed_never_silently_zero():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("MyOp", ["h"], ["y"], domain="custom.ops")],
        [("x", F32, [1, 8])],
        [("y", F32, [1, 8])],
    )
    model.opset_import.append(helper.make_opsetid("custom.ops", 1))
    result = onnxroof.analyze(model)
    assert result.totals.unsupported == {"MyOp": 1}
    assert not result.complete
    custom = result.nodes[1]
    assert custom.status == "unsupported" and not custom.counted
    assert any("MyOp" in w for w in result.warnings)
    document = result.to_dict()
    assert document["totals"]["unsupported"] == {"MyOp": 1}
    assert document["nodes"][1]["counted"] is False


def test_tied_weight_used_directly_and_transposed_is_one_parameter():
    # an embedding table read by Gather and, transposed, by the LM-head MatMul (tied weights,
    # as torch's dynamo exporter writes them): stored once, counted once
    model = make_model(
        [
            helper.make_node("Gather", ["wte", "ids"], ["h"]),
            helper.make_node("Transpose", ["wte"], ["wte_t"], perm=[1, 0]),
            helper.make_node("MatMul", ["h", "wte_t"], ["logits"]),
        ],
        [("ids", TensorProto.INT64, [1, 4])],
        [("logits", F32, [1, 4, 1000])],
        [("wte", zeros(1000, 64))],
    )
    result = onnxroof.analyze(model)
    assert result.totals.params == 1000 * 64 and result.totals.param_bytes == 1000 * 64 * 4


def test_constants_in_shape_arithmetic_are_not_parameters():
    # Shape -> Gather -> Unsqueeze -> Concat(with a constant [-1]) -> Reshape: the [-1] is a setting
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
            helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
            helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
            helper.make_node("Reshape", ["x", "shape"], ["y"]),
        ],
        [("x", F32, [2, 3, 4])],
        [("y", F32, [2, 12])],
        [("zero", np.array(0, np.int64)), ("axes", np.array([0], np.int64)), ("minus_one", np.array([-1], np.int64))],
    )
    assert onnxroof.analyze(model).totals.params == 0


def test_a_separable_conv_has_6_6x_fewer_parameters_than_the_standard_one():
    # cost-model.md section 2: Ci = 3, Co = 128, K = 3. Standard: 3 x 128 x 9 = 3,456 weights + 128
    # biases = 3,584. Separable: a depthwise 3x3 (3 x 9 = 27 weights, no bias) and a pointwise 1x1
    # (3 x 128 = 384 weights + 128 biases): 411 weights + 128 biases = 539. 3,584 / 539 = 6.6x
    x, y = ("x", TensorProto.FLOAT, [1, 3, 32, 32]), ("y", TensorProto.FLOAT, [1, 128, 32, 32])
    standard = make_model(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
        [x],
        [y],
        [("w", zeros(128, 3, 3, 3)), ("b", np.zeros(128, np.float32))],
    )
    separable = make_model(
        [
            helper.make_node("Conv", ["x", "dw"], ["d"], pads=[1, 1, 1, 1], group=3),
            helper.make_node("Conv", ["d", "pw", "b"], ["y"]),
        ],
        [x],
        [y],
        [("dw", zeros(3, 1, 3, 3)), ("pw", zeros(128, 3, 1, 1)), ("b", np.zeros(128, np.float32))],
    )
    standard_params = onnxroof.analyze(standard).totals.params
    separable_params = onnxroof.analyze(separable).totals.params
    assert (standard_params, separable_params) == (3_456 + 128, 27 + 384 + 128)
    assert round(standard_params / separable_params, 1) == 6.6
