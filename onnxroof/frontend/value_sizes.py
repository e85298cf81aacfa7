"""How many elements an op the partial evaluator runs would write, predicted from its inputs'
values and its attributes before running it.

The evaluator keeps only small values (evaluator.MAX_VALUE_ELEMENTS), but onnx's reference
kernels allocate the whole output first: a Concat listing one 4,096-element constant 100,000
times writes 409,600,000 int64s (3.2 GB) before anything can look at it. So the evaluator asks
:func:`predicted_elements` first and leaves a value unknown (its shape still comes from ONNX's
inference) when it would not be kept. The prediction is exact or an upper bound; an op with no
rule here, or arguments it cannot read, predicts None: not run. A Constant's size is read from
its attribute, without its data (:func:`constant_info`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto

from ..core.tensors import has_external_data
from ..ops import OpTrait, traits_of

Args = Sequence["np.ndarray | None"]
Rule = Callable[[Args, dict[str, Any]], int]


def predicted_elements(op_type: str, args: Args, attributes: dict[str, Any]) -> int | None:
    """The elements ``op_type`` (an ONNX op) writes in all its outputs, run on ``args`` (input
    values, None for an omitted input) with ``attributes`` (name -> value); None when unknown."""
    rule = size_rule(op_type)
    if rule is None:
        return None
    try:
        elements = rule(args, attributes)
    except Exception:  # malformed arguments (a negative repeat, shapes that do not broadcast)
        return None
    return elements if elements >= 0 else None


def constant_info(node: onnx.NodeProto) -> tuple[int, tuple[int, ...], bool] | None:
    """A Constant's (element type, shape, value readable in memory), without reading its data."""
    for attribute in node.attribute:
        if attribute.name == "value":
            return attribute.t.data_type, tuple(attribute.t.dims), not has_external_data(attribute.t)
        if attribute.name == "sparse_value":
            return attribute.sparse_tensor.values.data_type, tuple(attribute.sparse_tensor.dims), True
        if attribute.name in _CONSTANT_ATTRIBUTES:
            dtype, is_list = _CONSTANT_ATTRIBUTES[attribute.name]
            if not is_list:
                return dtype, (), True
            count = len(attribute.ints) + len(attribute.floats) + len(attribute.strings)
            return dtype, (count,), True
    return None


def size_rule(op_type: str) -> Rule | None:
    """The rule that predicts ``op_type``'s output size, or None: its own in ``_RULES``, else what
    its traits say (an elementwise op writes the broadcast of its inputs; a view, reshape,
    retyping or permutation as many elements as its first input)."""
    rule = _RULES.get(op_type)
    if rule is not None:
        return rule
    traits = traits_of("", op_type)
    if traits & (OpTrait.ELEMENTWISE | OpTrait.BROADCASTS):
        return _broadcast
    if traits & (OpTrait.VIEW | OpTrait.RESHAPE | OpTrait.RETYPE | OpTrait.PERMUTES_AXES):
        return _first
    return None


def _count(dims: Any) -> int:
    """The elements of a shape given as numbers (a shape input's value, a repeat count...);
    negative dims are malformed."""
    numbers = [int(d) for d in np.asarray(dims).reshape(-1)]
    if any(d < 0 for d in numbers):
        raise ValueError("negative dim")
    return math.prod(numbers)


def _present(args: Args) -> list[np.ndarray]:
    return [a for a in args if a is not None]


def _given(args: Args, index: int) -> np.ndarray:
    """Input ``index``, which the rule needs: an omitted one raises, so the size is unknown
    (:func:`predicted_elements` catches it)."""
    value = args[index]
    if value is None:
        raise ValueError(f"input {index} is omitted")
    return value


def _first(args: Args, attributes: dict[str, Any]) -> int:
    """As many as its first input (or fewer: a slice, the pieces of a split)."""
    return int(_given(args, 0).size)


def _broadcast(args: Args, attributes: dict[str, Any]) -> int:
    """Its inputs broadcast together (numpy's rule, which the reference kernels follow)."""
    return math.prod(np.broadcast_shapes(*(a.shape for a in _present(args))))


def _concat(args: Args, attributes: dict[str, Any]) -> int:
    return sum(int(a.size) for a in _present(args))


def _gather(args: Args, attributes: dict[str, Any]) -> int:
    """data[:axis] + indices + data[axis + 1:]."""
    data, indices = _given(args, 0), _given(args, 1)
    axis = int(attributes.get("axis", 0)) % data.ndim  # a 0-d data raises: nothing to gather from
    return math.prod(data.shape[:axis]) * int(indices.size) * math.prod(data.shape[axis + 1 :])


def _gather_nd(args: Args, attributes: dict[str, Any]) -> int:
    """indices[:-1] (its batch dims among them) + data[batch_dims + indices[-1]:]."""
    data, indices = _given(args, 0), _given(args, 1)
    depth = int(attributes.get("batch_dims", 0)) + int(indices.shape[-1])
    return math.prod(indices.shape[:-1]) * math.prod(data.shape[depth:])


def _reduced(args: Args, attributes: dict[str, Any]) -> int:
    """Some of its first input's dims: at most their product with each empty dim taken as 1 (a sum
    over the empty axis of a [0, 10^12] input writes 10^12 zeros)."""
    return math.prod(max(int(d), 1) for d in _given(args, 0).shape)


def _nonzero(args: Args, attributes: dict[str, Any]) -> int:
    """[rank, count of nonzeros]: at most rank x the input's size."""
    return max(_given(args, 0).ndim, 1) * int(_given(args, 0).size)


def _constant_of_shape(args: Args, attributes: dict[str, Any]) -> int:
    return _count(args[0]) if args and args[0] is not None else 1


def _expand(args: Args, attributes: dict[str, Any]) -> int:
    shape = tuple(int(d) for d in np.asarray(args[1]).reshape(-1))
    return math.prod(np.broadcast_shapes(_given(args, 0).shape, shape))


def _tile(args: Args, attributes: dict[str, Any]) -> int:
    return int(_given(args, 0).size) * _count(args[1])


def _range(args: Args, attributes: dict[str, Any]) -> int:
    """max(ceil((limit - start) / delta), 0), in exact arithmetic for integers."""
    start, limit, delta = (np.asarray(a).reshape(-1)[0].item() for a in args[:3])
    if delta == 0:
        raise ValueError("a Range of step 0")
    if all(isinstance(v, int) for v in (start, limit, delta)):
        return max(-((start - limit) // delta), 0)
    return max(math.ceil((limit - start) / delta), 0)  # an infinite or NaN bound raises


def _shape(args: Args, attributes: dict[str, Any]) -> int:
    """Shape and Size are read from the input's shape, never run: a rank's worth of numbers at most."""
    return args[0].ndim if args and args[0] is not None else 1


_RULES: dict[str, Rule] = {
    "Cast": _first,
    "CastLike": _first,  # the output has input 0's shape; input 1 gives only a type
    "Concat": _concat,
    "ConstantOfShape": _constant_of_shape,
    "CumSum": _first,
    "Expand": _expand,
    "Gather": _gather,
    "GatherElements": lambda args, attributes: int(_given(args, 1).size),  # the indices' shape
    "GatherND": _gather_nd,
    "NonZero": _nonzero,
    "Range": _range,
    "ReduceMax": _reduced,
    "ReduceMin": _reduced,
    "ReduceProd": _reduced,
    "ReduceSum": _reduced,
    "ScatterElements": _first,
    "ScatterND": _first,  # the data's shape
    "Shape": _shape,
    "Size": _shape,
    "Slice": _first,
    "Split": _first,
    "Tile": _tile,
    "Trilu": _first,
}


# Constant attributes other than "value" / "sparse_value": (element type, is a list).
_CONSTANT_ATTRIBUTES = {
    "value_int": (TensorProto.INT64, False),
    "value_float": (TensorProto.FLOAT, False),
    "value_string": (TensorProto.STRING, False),
    "value_ints": (TensorProto.INT64, True),
    "value_floats": (TensorProto.FLOAT, True),
    "value_strings": (TensorProto.STRING, True),
}
