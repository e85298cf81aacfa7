"""Built-in example models from the reference material (cost-model.md), built with onnx.helper.

They let ``onnxroof report --example minigooglenet`` run on a fresh machine with no model at
hand, and they are the fixtures whose numbers the tests derive by hand. Layouts are NCHW;
Keras "same" padding becomes explicit pads. Weights are small deterministic random values so
that the models also run in onnxruntime.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .errors import UsageError

OPSET = 17


class _Builder:
    """Accumulates nodes and initializers; names layers like Keras does (conv2d_3, ...)."""

    def __init__(self, seed: int):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.counts: dict[str, int] = {}

    def _name(self, kind: str) -> str:
        index = self.counts.get(kind, 0)
        self.counts[kind] = index + 1
        return f"{kind}_{index}"

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.05) -> str:
        values = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.initializers.append(numpy_helper.from_array(values, name))
        return name

    def node(self, op_type: str, inputs: list[str], kind: str | None = None, **attributes) -> str:
        name = self._name(kind or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def conv(
        self,
        x: str,
        c_in: int,
        c_out: int,
        kernel: int,
        stride: int = 1,
        pad: int = 0,
        group: int = 1,
        bias: bool = True,
        kind: str = "conv2d",
    ) -> str:
        name = self._name(kind)
        inputs = [x, self.weight(f"{name}.weight", (c_out, c_in // group, kernel, kernel))]
        if bias:
            inputs.append(self.weight(f"{name}.bias", (c_out,)))
        self.nodes.append(
            helper.make_node(
                "Conv",
                inputs,
                [name],
                name=name,
                kernel_shape=[kernel, kernel],
                strides=[stride, stride],
                pads=[pad] * 4,
                group=group,
            )
        )
        return name

    def batch_norm(self, x: str, channels: int) -> str:
        name = self._name("batch_normalization")
        gamma = self.weight(f"{name}.gamma", (channels,))
        beta = self.weight(f"{name}.beta", (channels,))
        mean = self.weight(f"{name}.moving_mean", (channels,))
        variance = f"{name}.moving_variance"
        self.initializers.append(numpy_helper.from_array(np.ones(channels, np.float32), variance))
        self.nodes.append(
            helper.make_node("BatchNormalization", [x, gamma, beta, mean, variance], [name], name=name, epsilon=1e-3)
        )
        return name

    def dense(self, x: str, c_in: int, c_out: int) -> str:
        name = self._name("dense")
        w = self.weight(f"{name}.kernel", (c_in, c_out))
        b = self.weight(f"{name}.bias", (c_out,))
        self.nodes.append(helper.make_node("Gemm", [x, w, b], [name], name=name))
        return name

    def model(
        self, graph_name: str, x: str, input_shape: list[int], output: str, classes: int, doc: str
    ) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            graph_name,
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, input_shape)],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, [input_shape[0], classes])],
            self.initializers,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="onnxroof.examples", doc_string=doc
        )
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def shallownet(batch: int = 1, separable: bool = False) -> onnx.ModelProto:
    """ShallowNet: 32x32x3 input, Conv 32 filters 3x3 "same" + ReLU, Flatten, Dense 10 + softmax.

    ``separable`` replaces the conv by a depthwise 3x3 (no bias) and a pointwise 1x1 to 32 (bias).
    """
    b = _Builder(seed=1 if separable else 0)
    x = "input"
    if separable:
        y = b.conv(x, 3, 3, 3, pad=1, group=3, bias=False)
        y = b.conv(y, 3, 32, 1)
    else:
        y = b.conv(x, 3, 32, 3, pad=1)
    y = b.node("Relu", [y], "activation")
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = b.dense(y, 32 * 32 * 32, 10)
    y = b.node("Softmax", [y], "softmax", axis=-1)
    name = "shallownet_separable" if separable else "shallownet"
    return b.model(name, x, [batch, 3, 32, 32], y, 10, doc=shallownet.__doc__ or "")


def minigooglenet(batch: int = 1, classes: int = 10, separable: bool = False) -> onnx.ModelProto:
    """MiniGoogLeNet (Keras, CIFAR-10 size): conv => BN => ReLU modules, Inception modules
    (1x1 and 3x3 branches concatenated) and downsample modules (3x3 stride-2 conv beside a 3x3
    stride-2 max-pool, concatenated), 7x7 average pool, dropout, dense, softmax.

    ``separable`` makes every 3x3 conv depthwise-separable: a depthwise 3x3 (no bias) then a
    pointwise 1x1 (with bias), as Keras' SeparableConv2D."""
    b = _Builder(seed=3 if separable else 2)

    def conv_module(x: str, c_in: int, c_out: int, kernel: int, stride: int = 1, same: bool = True) -> str:
        pad = (kernel // 2) if same else 0
        if separable and kernel > 1:  # Keras' SeparableConv2D: one layer, two convs
            y = b.conv(x, c_in, c_in, kernel, stride=stride, pad=pad, group=c_in, bias=False, kind="separable_conv2d")
            y = b.conv(y, c_in, c_out, 1, kind="separable_conv2d")
        else:
            y = b.conv(x, c_in, c_out, kernel, stride=stride, pad=pad)
        y = b.batch_norm(y, c_out)
        return b.node("Relu", [y], "activation")

    def inception(x: str, c_in: int, k1x1: int, k3x3: int) -> tuple[str, int]:
        branch_1x1 = conv_module(x, c_in, k1x1, 1)
        branch_3x3 = conv_module(x, c_in, k3x3, 3)
        return b.node("Concat", [branch_1x1, branch_3x3], "concatenate", axis=1), k1x1 + k3x3

    def downsample(x: str, c_in: int, k: int) -> tuple[str, int]:
        branch_conv = conv_module(x, c_in, k, 3, stride=2, same=False)
        branch_pool = b.node("MaxPool", [x], "max_pooling2d", kernel_shape=[3, 3], strides=[2, 2])
        return b.node("Concat", [branch_conv, branch_pool], "concatenate", axis=1), k + c_in

    x = "input"
    y, c = conv_module(x, 3, 96, 3), 96
    y, c = inception(y, c, 32, 32)
    y, c = inception(y, c, 32, 48)
    y, c = downsample(y, c, 80)
    for k1, k3 in ((112, 48), (96, 64), (80, 80), (48, 96)):
        y, c = inception(y, c, k1, k3)
    y, c = downsample(y, c, 96)
    y, c = inception(y, c, 176, 160)
    y, c = inception(y, c, 176, 160)
    y = b.node("AveragePool", [y], "average_pooling2d", kernel_shape=[7, 7], strides=[7, 7])
    y = b.node("Dropout", [y], "dropout")
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = b.dense(y, c, classes)
    y = b.node("Softmax", [y], "softmax", axis=-1)
    name = "minigooglenet_separable" if separable else "minigooglenet"
    return b.model(name, x, [batch, 3, 32, 32], y, classes, doc=minigooglenet.__doc__ or "")


EXAMPLES: dict[str, tuple[Callable[[], onnx.ModelProto], str]] = {
    "shallownet": (shallownet, "Conv 3x3 + ReLU + Dense, 32x32x3 input (328,586 params)"),
    "shallownet-separable": (lambda: shallownet(separable=True), "ShallowNet with a depthwise-separable conv"),
    "minigooglenet": (minigooglenet, "MiniGoogLeNet, Inception + downsample modules with concat (1.66 M params)"),
    "minigooglenet-separable": (
        lambda: minigooglenet(separable=True),
        "MiniGoogLeNet with depthwise-separable 3x3 convs",
    ),
}


def build_example(name: str) -> onnx.ModelProto:
    """Build the example model ``name`` (see EXAMPLES)."""
    if name not in EXAMPLES:
        raise UsageError(f"--example {name}: no such example; choose one of {', '.join(EXAMPLES)} (or --example list)")
    return EXAMPLES[name][0]()
