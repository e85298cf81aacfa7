"""Pooling and region ops: operations per output element over the window (comparisons or adds).

| op | FLOPs per output element (w = window elements) |
|---|---|
| MaxPool, GlobalMaxPool | w - 1 comparisons |
| AveragePool, GlobalAveragePool | w - 1 adds + 1 divide = w |
| LpPool, GlobalLpPool | w x (abs, power) + w - 1 adds + 1 root = 3·w |
| RoiAlign | s samples x bilinear (7) + s (avg: s - 1 adds + divide) or s - 1 (max) |
| MaxRoiPool | the bin's elements - 1 comparisons |

Region ops whose work depends on the ROI coordinates (run-time data) are counted for a ROI
covering the whole feature map, an upper bound the formula states. NonMaxSuppression counts the
worst case where every box pair of a class is compared.
"""

from __future__ import annotations

from math import ceil, log2, prod

from .base import Handler, NodeView, OpCost, OpTrait, register
from .tensor import TAPS_PER_AXIS, blend_flops, data_movement


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


def lp_pool(node: NodeView) -> OpCost:
    """FLOPs = 3 x prod(kernel) x output elements: |x|^p per window element (abs, power),
    window - 1 adds, one p-th root."""
    window = prod(node.attr("kernel_shape"))
    outputs = node.output_elements(0)
    flops = 3 * window * outputs
    return OpCost(flops=flops, formula=f"3·{window}·{outputs:,} outputs = {flops:,} FLOPs")


def global_pool_counter(extra: int) -> Handler:
    """A handler for global pooling: (H x W x ... - 1 + extra) operations per output element."""

    def handler(node: NodeView) -> OpCost:
        data = node.input_shape(0)
        window = prod(data[2:])
        outputs = node.output_elements(0)
        return OpCost(flops=(window - 1 + extra) * outputs, formula=f"({window} - 1 + {extra})·{outputs:,} outputs")

    handler.__doc__ = f"FLOPs = (prod(input spatial) - 1 + {extra}) x output elements"
    return handler


def global_lp_pool(node: NodeView) -> OpCost:
    """FLOPs = 3 x prod(input spatial) x output elements (LpPool over the whole plane)."""
    data = node.input_shape(0)
    window = prod(data[2:])
    outputs = node.output_elements(0)
    flops = 3 * window * outputs
    return OpCost(flops=flops, formula=f"3·{window}·{outputs:,} outputs = {flops:,} FLOPs")


def roi_align(node: NodeView) -> OpCost:
    """FLOPs = outputs x (s x 7 + s) for mode 'avg', outputs x (s x 7 + s - 1) for 'max':
    s = sh x sw bilinear samples per bin (7 FLOPs each: 4 taps), then averaged or maxed.
    sh = sw = sampling_ratio when > 0; sampling_ratio = 0 is adaptive (ceil(roi size / bins),
    run-time data), bounded by a ROI covering the whole map: ceil(H / output_height) x
    ceil(W / output_width)."""
    data = node.input_shape(0)
    out_h, out_w = int(node.attr("output_height", 1)), int(node.attr("output_width", 1))
    ratio = int(node.attr("sampling_ratio", 0))
    adaptive = ratio <= 0
    samples = ceil(data[2] / out_h) * ceil(data[3] / out_w) if adaptive else ratio * ratio
    reduce = samples if node.attr("mode", "avg") == "avg" else samples - 1
    per_output = samples * blend_flops(TAPS_PER_AXIS["linear"] ** 2) + reduce
    outputs = node.output_elements(0)
    flops = per_output * outputs
    bound = " (adaptive sampling: upper bound, ROI = whole map)" if adaptive else ""
    return OpCost(flops=flops, formula=f"({samples}·7 + {reduce})·{outputs:,} outputs = {flops:,} FLOPs{bound}")


def max_roi_pool(node: NodeView) -> OpCost:
    """FLOPs <= rois x C x (H x W - ph x pw): the bins of a ROI tile it and each bin's max takes
    its elements - 1 comparisons; ROI sizes are run-time data, so the count is for ROIs covering
    the whole feature map (an upper bound)."""
    data = node.input_shape(0)
    rois, channels = node.input_shape(1)[0], data[1]
    pooled = prod(node.attr("pooled_shape"))
    plane = prod(data[2:])
    flops = rois * channels * max(plane - pooled, 0)
    return OpCost(flops=flops, formula=f"{rois}·{channels}·({plane} - {pooled}) = {flops:,} comparisons (upper bound)")


# per box pair: intersection corners (2 max, 2 min), width/height (2 subtract, 2 clamp at 0),
# intersection area (1), union = a + b - inter (2), ratio (1), threshold compare (1)
IOU_FLOPS = 13
BOX_AREA_FLOPS = 3  # (x2 - x1)·(y2 - y1)
CENTER_TO_CORNER_FLOPS = 6  # x ± w/2, y ± h/2


def non_max_suppression(node: NodeView) -> OpCost:
    """FLOPs = B x C x (n + n x ceil(log2 n) + 13 x n(n-1)/2) + B x n x (3 + 6 if center boxes):
    per batch and class, a score-threshold compare per box, a sort of the n scores, and in the
    worst case one IoU test (13 FLOPs) per box pair; per batch the box areas (and the
    center-to-corner conversion when center_point_box = 1)."""
    batches, boxes = node.input_shape(0)[:2]
    classes = node.input_shape(1)[1]
    sort = boxes * ceil(log2(boxes)) if boxes > 1 else 0
    per_class = boxes + sort + IOU_FLOPS * boxes * (boxes - 1) // 2
    per_box = BOX_AREA_FLOPS + (CENTER_TO_CORNER_FLOPS if node.attr("center_point_box", 0) else 0)
    flops = batches * classes * per_class + batches * boxes * per_box
    return OpCost(
        flops=flops,
        formula=f"{batches}·{classes}·({boxes} + {sort} + 13·{boxes}·{boxes - 1}/2) + "
        f"{batches}·{boxes}·{per_box} = {flops:,} FLOPs (worst case)",
    )


register("MaxPool", max_pool, family="pooling")
register("AveragePool", average_pool, family="pooling")
register("LpPool", lp_pool, family="pooling")
register("GlobalMaxPool", global_pool_counter(0), family="pooling")
register("GlobalAveragePool", global_pool_counter(1), family="pooling")
register("GlobalLpPool", global_lp_pool, family="pooling")
register("MaxUnpool", data_movement, family="pooling", arg_inputs=(1, 2))  # a scatter: indices, output_shape
register("RoiAlign", roi_align, family="pooling", arg_inputs=(2,))  # batch_indices
register("MaxRoiPool", max_roi_pool, family="pooling")
register(
    "NonMaxSuppression",
    non_max_suppression,
    family="detection",
    arg_inputs=(2, 3, 4),
    traits=OpTrait.DATA_DEPENDENT_SIZE,
)  # as many boxes as survive
