"""Pooling: operations per output element over the window (comparisons or adds)."""

from __future__ import annotations

from math import prod

from . import Handler, NodeView, OpCost, register


def max_pool(node: NodeView) -> OpCost:
    """FLOPs = (prod(kernel) - 1) comparisons x output elements."""
    window = prod(node.attr("kernel_shape"))
    outputs = node.output_elements(0)
    return OpCost(flops=(window - 1) * outputs, formula=f"({window} - 1)·{outputs:,} outputs")


def average_pool(node: NodeView) -> OpCost:
    """FLOPs = prod(kernel) x output elements (window - 1 adds and one divide)."""
    window = prod(node.attr("kernel_shape"))
    outputs = node.output_elements(0)
    return OpCost(flops=window * outputs, formula=f"{window}·{outputs:,} outputs")


def global_pool_counter(extra: int) -> Handler:
    """A handler for global pooling: (H x W x ... - 1 + extra) operations per output element."""

    def handler(node: NodeView) -> OpCost:
        data = node.input_shape(0)
        window = prod(data[2:])
        outputs = node.output_elements(0)
        return OpCost(flops=(window - 1 + extra) * outputs, formula=f"({window} - 1 + {extra})·{outputs:,} outputs")

    handler.__doc__ = f"FLOPs = (prod(input spatial) - 1 + {extra}) x output elements"
    return handler


register("MaxPool", max_pool, family="pooling")
register("AveragePool", average_pool, family="pooling")
register("GlobalMaxPool", global_pool_counter(0), family="pooling")
register("GlobalAveragePool", global_pool_counter(1), family="pooling")
