"""What a control-flow node's subgraphs see of the outer scope, for the partial evaluator
(evaluator.py): the If branch its condition takes, and the shapes a Loop's or Scan's body
starts from (its loop-carried values' initial shapes, its scan inputs' slices)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import helper

from ..core.tensors import TensorInfo


def taken_branch(condition: np.ndarray | None) -> str | None:
    """The If branch a known one-element condition takes; None when it is not known."""
    if condition is None or condition.size != 1:
        return None
    return "then_branch" if bool(condition.reshape(-1)[0]) else "else_branch"


def bind_body_inputs(
    op_type: str,
    node: onnx.NodeProto,
    inputs: Sequence[str],
    body: onnx.GraphProto,
    info: Callable[[str], TensorInfo],
    tensors: dict[str, TensorInfo],
) -> None:
    """Give a Loop's or Scan's body inputs the shapes they start from, where nothing knows them yet
    (``info`` reads a tensor as the evaluator does)."""
    if op_type == "Loop":  # (trip count, condition, carried...) -> (iteration, condition, carried...)
        carried = list(zip(body.input[2:], inputs[2:]))
    elif op_type == "Scan":  # states, then scan inputs sliced along their scan axis
        carried = _scan_inputs(node, inputs, body, info, tensors)
    else:
        carried = []
    for formal, actual in carried:  # a loop-carried value keeps its initial shape, not its value
        outer = info(actual) if actual else None
        if outer is not None and outer.shape is not None and not info(formal.name).is_known:
            tensors[formal.name] = TensorInfo(formal.name, outer.dtype, outer.shape)


def _scan_inputs(
    node: onnx.NodeProto,
    inputs: Sequence[str],
    body: onnx.GraphProto,
    info: Callable[[str], TensorInfo],
    tensors: dict[str, TensorInfo],
) -> list[tuple[onnx.ValueInfoProto, str]]:
    """A Scan's scan inputs bound to their slices along their scan axes; returns its states
    (formal, actual), carried as a Loop's are."""
    scan_inputs = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "num_scan_inputs"), 0)
    states = len(inputs) - scan_inputs
    axes = next(
        (list(helper.get_attribute_value(a)) for a in node.attribute if a.name == "scan_input_axes"), [0] * scan_inputs
    )
    for formal, actual, axis in zip(body.input[states:], inputs[states:], axes):
        outer = info(actual)
        if outer.shape is not None and not info(formal.name).is_known:
            sliced = outer.shape[: axis % len(outer.shape)] + outer.shape[axis % len(outer.shape) + 1 :]
            tensors[formal.name] = TensorInfo(formal.name, outer.dtype, sliced)
    return list(zip(body.input[:states], inputs[:states]))
