"""Matrix products: Gemm and MatMul, counted in MACs."""

from __future__ import annotations

from . import NodeView, OpCost, register


def gemm(node: NodeView) -> OpCost:
    """MACs = M x K x N for Y = alpha·op(A)·op(B) + beta·C; the C (bias) add is folded in."""
    a = node.input_shape(0)
    m, k = (a[1], a[0]) if node.attr("transA", 0) else (a[0], a[1])
    n = node.output_shape(0)[1]
    macs = m * k * n
    return OpCost(macs=macs, formula=f"{m}·{k}·{n} = {macs:,} MACs")


def matmul(node: NodeView) -> OpCost:
    """MACs = prod(output shape) x K, K the contracted dim (A's last); batch dims broadcast."""
    a = node.input_shape(0)
    k = a[-1]
    outputs = node.output_elements(0)
    macs = outputs * k
    return OpCost(macs=macs, formula=f"{outputs:,} outputs·{k} = {macs:,} MACs")


register("Gemm", gemm, family="matmul")
register("MatMul", matmul, family="matmul")
