"""Convolutions. The output shape comes from shape inference, which already applied strides,
pads, auto_pad and dilations, so the MAC count needs only the weight and output shapes."""

from __future__ import annotations

from math import prod

from . import NodeView, OpCost, register


def conv(node: NodeView) -> OpCost:
    """MACs = N x Co x prod(output spatial) x Ci/group x prod(kernel); the bias add is folded in.

    The weight is [Co, Ci/group, k1, k2, ...], so groups and depthwise need no special case.
    """
    weight = node.input_shape(1)
    output = node.output_shape(0)
    batch, c_out, spatial = output[0], output[1], prod(output[2:])
    c_in_per_group, kernel = weight[1], prod(weight[2:])
    macs = batch * c_out * spatial * c_in_per_group * kernel
    return OpCost(macs=macs, formula=f"{batch}·{c_out}·{spatial}·{c_in_per_group}·{kernel} = {macs:,} MACs")


def conv_transpose(node: NodeView) -> OpCost:
    """MACs = N x Ci x prod(input spatial) x Co/group x prod(kernel): each input element is
    scattered through the kernel once (not the output-side count, which double counts)."""
    data = node.input_shape(0)
    weight = node.input_shape(1)  # [Ci, Co/group, k1, k2, ...]
    batch, c_in, spatial = data[0], data[1], prod(data[2:])
    c_out_per_group, kernel = weight[1], prod(weight[2:])
    macs = batch * c_in * spatial * c_out_per_group * kernel
    return OpCost(macs=macs, formula=f"{batch}·{c_in}·{spatial}·{c_out_per_group}·{kernel} = {macs:,} MACs")


register("Conv", conv, family="conv")
register("ConvTranspose", conv_transpose, family="conv", arg_inputs=())
