"""Convolutions. The output shape comes from shape inference, which already applied strides,
pads, auto_pad and dilations, so the MAC count needs only the weight and output shapes. The
com.microsoft FusedConv (Conv + activation, + residual Z) has no ONNX schema: its rule gives the
output shape with ONNX Conv's formula (``_shapes.conv_dims``)."""

from __future__ import annotations

from math import prod

from ._shapes import conv_dims, dtype, with_derived_outputs
from .base import InvalidNode, NodeView, OpCost, OutputType, register
from .elementwise import ELEMENTWISE_FLOPS
from .tensor import TAPS_PER_AXIS, blend_flops


def check_convolution(node: NodeView, transposed: bool = False) -> None:
    """Raise :class:`InvalidNode` unless the node's ``group`` fits its channels and its
    ``kernel_shape`` its weight, as ONNX defines a convolution and onnxruntime checks it: group
    >= 1; the input's channels C (input 0, axis 1, or the last axis with ``channels_last``)
    divisible by the group; a Conv's weight [M, C/group, k...] with C/group at axis 1 and M
    divisible by the group; a ConvTranspose's weight [C, M/group, k...] with C at axis 0; a
    ``kernel_shape`` given equal to the weight's k... (shape inference sizes the output by the
    attribute, onnxruntime refuses "kernel_shape is not compatible with W shape"). The one check
    of every convolution rule (Conv, ConvTranspose, the quantized ones through their float rule,
    DeformConv, FusedConv). An input of unknown shape is not checked."""
    kernel_shape = node.attr("kernel_shape", None)
    weight_info = node.inputs[1] if len(node.inputs) > 1 else None
    if kernel_shape is not None and weight_info is not None and weight_info.is_known:
        kernel = tuple(node.input_shape(1)[2:])  # known: its dims are numbers
        if tuple(kernel_shape) != kernel:
            raise InvalidNode(
                f"kernel_shape={list(kernel_shape)} is not the weight's kernel {'x'.join(map(str, kernel)) or '(none)'}"
            )
    group = node.attr("group", 1)
    if group < 1:
        raise InvalidNode(f"group={group}: a convolution has at least 1 group")
    data = node.inputs[0] if node.inputs else None
    if data is None or not data.is_known or len(node.input_shape(0)) < 2:
        return
    shape = node.input_shape(0)
    channels = shape[-1] if node.attr("channels_last", 0) else shape[1]
    if channels % group:
        raise InvalidNode(f"the input's {channels} channels are not divisible by group={group}")
    weight = node.input_shape(1)
    if transposed:
        if weight[0] != channels:
            raise InvalidNode(f"the weight's {weight[0]} input channels (axis 0) are not the input's {channels}")
    elif weight[1] != channels // group:
        raise InvalidNode(
            f"the weight's {weight[1]} input channels (axis 1) are not the input's {channels} channels "
            f"/ group={group} = {channels // group}"
        )
    elif weight[0] % group:
        raise InvalidNode(f"the weight's {weight[0]} output channels (axis 0) are not divisible by group={group}")


def conv(node: NodeView) -> OpCost:
    """MACs = N x Co x prod(output spatial) x Ci/group x prod(kernel); the bias add is folded in.

    The weight is [Co, Ci/group, k1, k2, ...], so groups and depthwise need no special case.
    A group that does not fit the channels makes the node invalid (not counted, the reason given).
    """
    check_convolution(node)
    weight = node.input_shape(1)
    output = node.output_shape(0)
    batch, c_out, spatial = output[0], output[1], prod(output[2:])
    c_in_per_group, kernel = weight[1], prod(weight[2:])
    macs = batch * c_out * spatial * c_in_per_group * kernel
    return OpCost(macs=macs, formula=f"{batch}·{c_out}·{spatial}·{c_in_per_group}·{kernel} = {macs:,} MACs")


def conv_transpose(node: NodeView) -> OpCost:
    """MACs = N x Ci x prod(input spatial) x Co/group x prod(kernel): each input element is
    scattered through the kernel once (not the output-side count, which double counts). A group
    that does not fit the channels makes the node invalid (not counted, the reason given)."""
    check_convolution(node, transposed=True)
    data = node.input_shape(0)
    weight = node.input_shape(1)  # [Ci, Co/group, k1, k2, ...]
    batch, c_in, spatial = data[0], data[1], prod(data[2:])
    c_out_per_group, kernel = weight[1], prod(weight[2:])
    macs = batch * c_in * spatial * c_out_per_group * kernel
    return OpCost(macs=macs, formula=f"{batch}·{c_in}·{spatial}·{c_out_per_group}·{kernel} = {macs:,} MACs")


def deform_conv(node: NodeView) -> OpCost:
    """MACs = as Conv: N x Co x prod(output spatial) x Ci/group x prod(kernel). FLOPs = the offset
    adds (one per offset element: sampling position = grid position + offset) + the sampling:
    N x Ci x prod(output spatial) x prod(kernel) values, each a 2^d-tap linear interpolation
    (2·2^d - 1 FLOPs: 7 in 2-D) and one multiply by the mask when a mask is given."""
    cost = conv(node)
    weight = node.input_shape(1)
    output = node.output_shape(0)
    data = node.input_shape(0)
    spatial_rank = len(weight) - 2
    samples = output[0] * data[1] * prod(output[2:]) * prod(weight[2:])
    per_sample = blend_flops(TAPS_PER_AXIS["linear"] ** spatial_rank) + (1 if node.has_input(4) else 0)
    offsets = node.input_elements(2)
    flops = offsets + per_sample * samples
    return OpCost(
        macs=cost.macs,
        flops=flops,
        formula=f"{cost.formula}; {offsets:,} offset adds + {per_sample}·{samples:,} samples = {flops:,} FLOPs",
    )


# per output element of the fused activation: SiLU/Swish x·sigmoid(x) = sigmoid (3) + multiply
CAUSAL_CONV_ACTIVATION_FLOPS = {"none": 0, "silu": 4, "swish": 4}


def causal_conv_with_state(node: NodeView) -> OpCost:
    """MACs = B x C x L x k (depthwise causal conv: weight [C, 1, k], output = input's shape
    [B, C, L]); the bias add is folded in; FLOPs = 4 x output elements for the fused
    activation 'silu'/'swish' (sigmoid 3 + multiply), 0 for 'none'. Copying the carry state
    (present_state) is data movement."""
    kernel = prod(node.input_shape(1)[2:])
    outputs = node.input_elements(0)  # output 0 has the input's shape
    macs = outputs * kernel
    activation = node.attr("activation", "none")
    per_output = CAUSAL_CONV_ACTIVATION_FLOPS.get(activation, 0)
    flops = per_output * outputs
    return OpCost(
        macs=macs,
        flops=flops,
        formula=f"{outputs:,} outputs·{kernel} = {macs:,} MACs + {per_output}·{outputs:,} ({activation}) FLOPs",
    )


def fused_conv(node: NodeView) -> OpCost:
    """MACs as Conv; FLOPs = 2 x MACs + output elements x (the activation's FLOPs, as elementwise.py
    counts Relu, Sigmoid, Tanh, LeakyRelu, Clip, HardSigmoid; + 1 with the residual input Z).
    Inputs: X, W, B, Z; attribute activation (com.microsoft FusedConv, onnxruntime's Conv +
    activation fusion)."""
    node = with_derived_outputs(node)
    cost = conv(node)
    activation = node.attr("activation", "")
    per_output = (ELEMENTWISE_FLOPS[activation][0] if activation else 0) + (1 if node.has_input(3) else 0)
    outputs = node.output_elements(0)
    flops = per_output * outputs
    return OpCost(
        macs=cost.macs,
        flops=flops,
        formula=f"{cost.formula}; {per_output}·{outputs:,} outputs ({activation or 'no activation'}"
        f"{' + Z' if node.has_input(3) else ''}) = {flops:,} FLOPs",
    )


def fused_conv_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: as ONNX Conv ([N, Co, *spatial] from X, W and strides, pads, dilations, auto_pad), X's type."""
    return [(dtype(node, 0), conv_dims(node, 0, 1))]


register("Conv", conv, family="conv")
register("FusedConv", fused_conv, family="conv", domain="com.microsoft", shapes=fused_conv_shapes)
register("ConvTranspose", conv_transpose, family="conv", arg_inputs=())
register("DeformConv", deform_conv, family="conv")
register("CausalConvWithState", causal_conv_with_state, family="conv")
