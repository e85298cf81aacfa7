"""Shape arithmetic for the shape rules of ops ONNX has no schema for (contrib ops).

Dims are ints, symbol names (str) or None, as in ``tensors.TensorInfo``: a rule keeps a symbol where
the output dim is an input dim, and gives None where it would need arithmetic on a symbol. The
helpers here are shared by every family module; a family's shape rule sits next to its cost rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from onnx import TensorProto

from ..core.tensors import Dim
from .base import NodeView, OutputType, ShapeHandler, UnknownShape, output_types

Dims = tuple[Dim, ...]


def dims(node: NodeView, index: int) -> Dims:
    """Input ``index``'s dims; UnknownShape when it is absent or its rank is not known."""
    info = node.inputs[index] if index < len(node.inputs) else None
    if info is None or info.shape is None:
        names = node.node.input
        raise UnknownShape(names[index] if index < len(names) else f"#{index}")
    return info.shape


def dtype(node: NodeView, index: int, default: int = 0) -> int:
    """Input ``index``'s element type, or ``default`` when it is absent or not known."""
    info = node.inputs[index] if index < len(node.inputs) else None
    return info.dtype if info is not None and info.dtype else default


def add(*terms: Dim) -> Dim:
    """The sum of dims: a number when all are; a symbol plus zeros is the symbol; else None."""
    nonzero = [t for t in terms if t != 0]
    if all(isinstance(t, int) for t in nonzero):
        return sum(nonzero)  # type: ignore[arg-type]  # all ints: checked just above
    return nonzero[0] if len(nonzero) == 1 else None


def scale(dim: Dim, numerator: int, denominator: int = 1) -> Dim:
    """dim x numerator / denominator; a symbol survives only a factor of 1."""
    if isinstance(dim, int):
        if dim * numerator % denominator:
            raise ValueError(f"{dim}·{numerator} is not divisible by {denominator}")
        return dim * numerator // denominator
    return dim if numerator == denominator else None


def broadcast(*shapes: Dims) -> Dims:
    """Numpy broadcasting, right-aligned. Per dim: the size other than 1 (an int wins over a symbol,
    which could only be 1 or that int); one symbol with 1s is that symbol; two symbols give None."""
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    result: list[Dim] = []
    for column in zip(*padded):
        sizes = {d for d in column if d != 1}
        numbers = {d for d in sizes if isinstance(d, int)}
        if len(numbers) > 1:
            raise ValueError(f"cannot broadcast dims {column}")
        if numbers:
            result.append(numbers.pop())
        elif not sizes:
            result.append(1)
        else:
            result.append(sizes.pop() if len(sizes) == 1 and None not in sizes else None)
    return tuple(result)


def matmul(a: Dims, b: Dims) -> Dims:
    """numpy matmul's output: batch dims broadcast, [.., M, K] x [.., K, N] -> [.., M, N]; a 1-D
    operand is a row (A) or a column (B) whose dim is dropped."""
    rows = () if len(a) == 1 else (a[-2],)
    columns = () if len(b) == 1 else (b[-1],)
    return (*broadcast(a[:-2], b[:-2]), *rows, *columns)


def trans_batch(shape: Dims) -> Dims:
    """transBatch: [d0, b1, ..., bn, x] is read as [b1, ..., bn, d0, x] (onnxruntime MatMulComputeHelper)."""
    return (*shape[1:-1], shape[0], shape[-1])


def window_output(
    size: Dim, kernel: int, stride: int, dilation: int, pads: tuple[int, int], auto_pad: str, ceil_mode: bool = False
) -> Dim:
    """One spatial output dim of a conv or pool (ONNX Conv / AveragePool formulas)."""
    if not isinstance(size, int):
        return None
    effective = (kernel - 1) * dilation + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return -(-size // stride)
    if auto_pad == "VALID":
        return (size - effective) // stride + 1
    span = size + pads[0] + pads[1] - effective
    out = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pads[0]:  # the last window would start in the padding
        out -= 1
    return out


def windowed(
    node: NodeView,
    data: Dims,
    kernel: Sequence[int],
    channels: Dim,
    *,
    channels_last: bool = False,
    ceil_mode: bool = False,
) -> Dims:
    """A conv's or pool's output from its data [N, C, *spatial] ([N, *spatial, C] with channels_last),
    its kernel and the node's strides, pads, dilations and auto_pad."""
    spatial = data[1:-1] if channels_last else data[2:]
    rank = len(spatial)
    strides = node.attr("strides") or [1] * rank
    dilations = node.attr("dilations") or [1] * rank
    pads = node.attr("pads") or [0] * (2 * rank)
    auto_pad = node.attr("auto_pad", "NOTSET")
    out = tuple(
        window_output(spatial[i], kernel[i], strides[i], dilations[i], (pads[i], pads[i + rank]), auto_pad, ceil_mode)
        for i in range(rank)
    )
    return (data[0], *out, channels) if channels_last else (data[0], channels, *out)


def conv_dims(node: NodeView, x_slot: int, w_slot: int, *, channels_last: bool = False) -> Dims:
    """A conv's output: weight [Co, Ci/g, *kernel] gives Co and the kernel (or kernel_shape)."""
    weight = dims(node, w_slot)
    kernel = node.attr("kernel_shape") or weight[2:]
    if not all(isinstance(k, int) for k in kernel):
        raise UnknownShape(node.node.input[w_slot])
    # every dim of kernel is an int: checked just above
    return windowed(node, dims(node, x_slot), cast("Sequence[int]", kernel), weight[0], channels_last=channels_last)


def concat(shapes: Sequence[Dims], axis: int) -> Dims:
    """Concatenation along ``axis``: the axis dims add up, the others are the first input's (a number
    from any input where the first has a symbol)."""
    rank = len(shapes[0])
    axis = axis + rank if axis < 0 else axis
    result: list[Dim] = []
    for position in range(rank):
        column = [s[position] for s in shapes]
        if position == axis:
            result.append(add(*column) if all(c is not None for c in column) else None)
        else:
            result.append(next((c for c in column if isinstance(c, int)), column[0]))
    return tuple(result)


def with_derived_outputs(node: NodeView) -> NodeView:
    """``node`` with each output whose shape is not known replaced by what the op's shape rule derives
    from the inputs, so a cost rule that reads an output (requantize per output, Conv's spatial
    size) works when the model stores no shape for it and the shape stage has not sized it."""
    if all(info is not None and info.is_known for info in node.outputs):
        return node
    derived = output_types(node.node, node.inputs, node.values)
    if derived is None:
        return node
    outputs = list(node.outputs)
    for index, info in enumerate(derived):
        known = outputs[index] if index < len(outputs) else None
        if info is not None and info.shape is not None and not (known is not None and known.is_known):
            outputs[index : index + 1] = [info]
    return NodeView(node.node, node.inputs, tuple(outputs), node.values, node.subgraphs, node.loop_trips)


def typed(element_type: int, shape: Dims | None) -> OutputType:
    return (element_type, shape)


def broadcast_of(slots: Sequence[int], dtype_slot: int | None = None) -> ShapeHandler:
    """A shape rule: output 0 is the broadcast of the inputs at ``slots``, typed as input
    ``dtype_slot`` (default: the first slot)."""

    def shapes(node: NodeView) -> list[OutputType | None]:
        present = [dims(node, s) for s in slots if node.has_input(s)]
        return [typed(dtype(node, slots[0] if dtype_slot is None else dtype_slot), broadcast(*present))]

    shapes.__doc__ = (
        f"output 0: the broadcast of inputs {', '.join(map(str, slots))}, input "
        f"{slots[0] if dtype_slot is None else dtype_slot}'s type"
    )
    return shapes


FLOAT = TensorProto.FLOAT
INT32 = TensorProto.INT32
