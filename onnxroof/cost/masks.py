"""Softmaxes over a causally masked input: how many of their exps underflow to subnormal floats.

A decoder's attention adds to the scores a mask that holds a huge negative number (finfo.min,
-inf, -10000) where a query must not see a key, so that the softmax gives those keys no weight.
exp of anything below ln(FLT_MIN) = -87.34 is a subnormal float32 or zero, and onnxruntime's CPU
softmax clamps exp's argument at -88.38, so every hidden position yields a subnormal; a CPU
computes with subnormals on a slow path (a microcode assist per vector instruction). On the
machine this was written on, an Add plus Softmax over (1, 4, 128, 128) took 34 µs with a zero
mask and 192 µs with a causal mask of finfo.min (docs/validation-measured.md). A target that
measured that cost (``subnormal_s_per_element``) charges it; GPUs flush subnormals to zero.

Which positions a mask hides is data (the padding) except for its causal part, which the graph
builds from positions: a comparison (LessOrEqual, Less, GreaterOrEqual, Greater) of two tensors
made from Range, or a Trilu. Read with no padding, a causal mask over q queries and k keys (the q
new tokens after k - q cached ones) hides q (q - 1) / 2 of each q x k block: half a prefill's
scores, none of a one-token decode step's. A padding-only mask (BERT's) hides nothing then.

Not modelled: the fused attention ops (onnxruntime's Attention, GroupQueryAttention...), whose
kernels skip the hidden positions or mask inside; a Softmax on another axis than the last.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import prod

import numpy as np
import onnx

from .records import NodeRecord

UNDERFLOW = -87.3365  # ln(FLT_MIN): exp below this is no longer a normal float32
_MASKING = frozenset({"Add", "Where"})  # how a mask meets the scores
_PASSING = frozenset({"Cast", "Identity"})  # between the masked scores and the Softmax
_CAUSAL_COMPARISONS = frozenset({"LessOrEqual", "Less", "GreaterOrEqual", "Greater"})
ANCESTRY_LIMIT = 400  # nodes read back from one mask: an exporter's mask takes 20-150


def hidden_positions(
    records: Iterable[NodeRecord], values: Mapping[str, np.ndarray], axes: Mapping[str, int]
) -> dict[str, int]:
    """Softmax node name -> the elements of its input a causal mask of huge negatives hides (no
    padding assumed), for each Softmax over the last axis whose input is an Add or Where of the
    scores and such a mask. ``values``: the tensors whose values are known (initializers,
    constants); ``axes``: each Softmax's axis (:func:`softmax_axes`). The mask's ancestry is read
    once per mask tensor (every layer shares one).

    >>> from onnxroof import analyze
    >>> from onnxroof.core.examples import build_example
    >>> hidden_positions(analyze(build_example("shallownet")).cost_graph.records, {}, {"softmax_0": -1})
    {}
    """
    records = list(records)
    softmaxes = [r for r in records if r.op_type == "Softmax" and r.domain in ("", "ai.onnx") and r.counted]
    if not softmaxes:  # most graphs: no map of producers to build
        return {}
    producer = {output: record for record in records for output in record.outputs if output}
    found: dict[str, int] = {}
    causal_masks: dict[str, bool] = {}
    for record in softmaxes:
        shape = record.input_shapes[0] if record.input_shapes else None
        if not shape or len(shape) < 2 or not all(isinstance(d, int) for d in shape):
            continue
        source = _masked_scores(record, shape, axes.get(record.name), producer)
        if source is None:
            continue
        masks = [name for name in source.inputs if name and not _made_by_scores(name, producer)]
        if not any(_is_causal_mask(name, producer, values, causal_masks) for name in masks):
            continue
        hidden = _hidden_per_matrix(shape[-2], shape[-1])
        if hidden:
            found[record.name] = prod(shape[:-2]) * hidden
    return found


def _hidden_per_matrix(queries: int, keys: int) -> int:
    """The scores a causal mask hides of one [queries, keys] matrix (no padding): the
    q(q - 1)/2 above the diagonal, when the keys are at least the queries."""
    return queries * (queries - 1) // 2 if keys >= queries else 0


def _masked_scores(
    softmax: NodeRecord, shape: list, axis: int | None, producer: Mapping[str, NodeRecord]
) -> NodeRecord | None:
    """The Add or Where that masks the scores a Softmax over the last axis reads (through casts:
    T5 upcasts the scores), if it reads one."""
    source = producer.get(softmax.inputs[0])
    while source is not None and source.op_type in _PASSING and source.inputs:
        source = producer.get(source.inputs[0])
    if axis is None or axis % len(shape) != len(shape) - 1 or source is None or source.op_type not in _MASKING:
        return None
    return source


def softmax_axes(nodes: Iterable[onnx.NodeProto], names: Iterable[str], opset: int) -> dict[str, int]:
    """Each Softmax node's name -> its axis: the attribute, else the default (-1 from opset 13; 1
    before, over the input flattened from that axis on, which is the last only for rank 2)."""
    axes = {}
    for node, name in zip(nodes, names):
        if node.op_type == "Softmax" and node.domain in ("", "ai.onnx"):
            given = next((a.i for a in node.attribute if a.name == "axis"), None)
            axes[name] = given if given is not None else -1 if opset >= 13 else 1
    return axes


def _made_by_scores(name: str, producer: Mapping[str, NodeRecord]) -> bool:
    """The scores operand: made by a node with multiply-adds (Q K^T), or a scaling of one."""
    record = producer.get(name)
    for _ in range(4):  # the scores may be scaled or cast after the product
        if record is None:
            return False
        if record.macs:
            return True
        data = [producer.get(i) for i in record.inputs if i in producer]
        record = data[0] if len(data) == 1 else None
    return False


def _is_causal_mask(
    name: str, producer: Mapping[str, NodeRecord], values: Mapping[str, np.ndarray], cache: dict[str, bool]
) -> bool:
    """Whether ``name`` is (or is made from) a value below :data:`UNDERFLOW` and a causal
    pattern: a Trilu, or a comparison of two tensors that Range made."""
    if name in cache:
        return cache[name]
    huge_negative = _huge_negative(values.get(name))
    causal = False
    seen: set[str] = set()
    stack = [name]
    while stack and len(seen) < ANCESTRY_LIMIT:
        tensor = stack.pop()
        record = producer.get(tensor)
        if tensor in seen or record is None or record.macs:
            continue
        seen.add(tensor)
        huge_negative = huge_negative or any(_huge_negative(values.get(i)) for i in record.inputs)
        if record.op_type == "Trilu" or (
            record.op_type in _CAUSAL_COMPARISONS and all(_from_range(i, producer) for i in record.inputs[:2])
        ):
            causal = True
        stack.extend(i for i in record.inputs if i)
    cache[name] = huge_negative and causal
    return cache[name]


def _huge_negative(value: np.ndarray | None) -> bool:
    return (
        value is not None
        and value.size > 0
        and np.issubdtype(value.dtype, np.floating)
        and float(np.min(value)) < UNDERFLOW
    )


def _from_range(name: str, producer: Mapping[str, NodeRecord], limit: int = 40) -> bool:
    """Whether a Range op is among the nodes that make ``name`` (within ``limit`` nodes)."""
    seen: set[str] = set()
    stack = [name]
    while stack and len(seen) < limit:
        record = producer.get(stack.pop())
        if record is None or record.name in seen:
            continue
        if record.op_type == "Range":
            return True
        seen.add(record.name)
        stack.extend(i for i in record.inputs if i)
    return False
