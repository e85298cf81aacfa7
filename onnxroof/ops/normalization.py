"""Normalization: a fixed number of operations per element, after the statistics are known."""

from __future__ import annotations

from . import Handler, NodeView, OpCost, per_element_flop_counter, register


def norm_flop_counter(flops_per_element: int, rule: str) -> Handler:
    """A rule counting ``flops_per_element`` operations per element of the normalized input."""
    return per_element_flop_counter(flops_per_element, rule, on="input")


def lrn(node: NodeView) -> OpCost:
    """FLOPs = (2 x size + 3) x elements: a window sum of squares (size multiplies and adds),
    then scale, add bias, power and divide (LRN spec: x / (bias + alpha/size · Σx²)^beta)."""
    size = int(node.attr("size", 1))
    elements = node.input_elements(0)
    per_element = 2 * size + 3
    return OpCost(flops=per_element * elements, formula=f"(2·{size} + 3)·{elements:,} elements")


# inference BatchNormalization folds into one per-channel scale and shift
register("BatchNormalization", norm_flop_counter(2, "folded per-channel scale and shift"), family="normalization")
register("InstanceNormalization", norm_flop_counter(7, "mean, subtract, square, variance, rsqrt-multiply, scale, shift"),
         family="normalization")
register("LayerNormalization", norm_flop_counter(7, "mean, subtract, square, variance, rsqrt-multiply, scale, shift"),
         family="normalization")
register("GroupNormalization", norm_flop_counter(7, "mean, subtract, square, variance, rsqrt-multiply, scale, shift"),
         family="normalization")
register("RMSNormalization", norm_flop_counter(4, "square, mean, rsqrt-multiply, scale"), family="normalization")
register("LRN", lrn, family="normalization")
register("Softmax", norm_flop_counter(5, "max, subtract, exp, sum, divide"), family="normalization")
register("LogSoftmax", norm_flop_counter(6, "max, subtract, exp, sum, log, subtract"), family="normalization")
