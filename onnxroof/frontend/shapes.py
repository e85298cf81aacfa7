"""Run ONNX shape inference on the model (its inputs already bound by inputs.py), and
close the gaps it leaves with the partial evaluator (evaluator.py): it runs the small shape
computations ONNX's inference stops at, and re-infers what follows from their values.

Shapes stored in the model (``value_info``, declared output shapes) are the exporter's view, which
is stale once an input is re-bound, and ONNX silently prefers a stored shape to the one it infers.
So they are hidden from ONNX, except for outputs of ops it has no schema for (``com.microsoft``
contrib ops and the like), and only fill in what inference leaves unknown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..core.nodes import DEFAULT_DOMAINS, NodeFields, has_subgraph, nested_graphs, read_node_fields
from ..core.tensors import TensorInfo, UnresolvedDim, has_external_data, info_from_value_info
from .evaluator import MAX_VALUE_ELEMENTS, OutputTypes, PartialEvaluator, has_schema
from .inputs import real_inputs

# Initializers larger than this are not read as values (the evaluator keeps up to MAX_VALUE_ELEMENTS).
MAX_INITIALIZER_VALUE_ELEMENTS = 64


@dataclass
class ShapeResult:
    tensors: dict[str, TensorInfo]
    values: dict[str, np.ndarray]  # small tensors whose values the evaluator knows
    inputs: list[TensorInfo]  # graph inputs as bound (the shapes actually used)
    unresolved: list[UnresolvedDim]
    notes: list[str] = field(default_factory=list)
    # tensor -> why its shape is unknown: its producer's shape inference failed, or depends on one that did
    failures: dict[str, str] = field(default_factory=dict)
    # outputs of the nodes onnx could not infer: their rules may still cost them from their inputs
    uninferred: set[str] = field(default_factory=set)


# ---------------------------------------------------------------------------------------------
# Inference


class _ValueInfoReader:
    """``info_from_value_info`` converting each distinct type once: a big graph's tensors share a
    few types, and equal serialized types read alike."""

    def __init__(self) -> None:
        self._types: dict[bytes, TensorInfo] = {}  # serialized type -> the first tensor read of that type

    def __call__(self, value_info: onnx.ValueInfoProto) -> TensorInfo:
        key = value_info.type.SerializeToString()
        known = self._types.get(key)
        if known is None:
            known = self._types[key] = info_from_value_info(value_info)
            return known
        return known.renamed(value_info.name)

    def read_into(self, values: Iterable[onnx.ValueInfoProto], tensors: dict[str, TensorInfo]) -> None:
        """Each of ``values`` read into ``tensors``: one with a shape replaces what is there, one
        without only fills a gap. The calls above as one loop: a big graph has a value_info per tensor."""
        types = self._types
        for value_info in values:
            name = value_info.name
            key = value_info.type.SerializeToString()
            known = types.get(key)
            if known is None:
                known = types[key] = info_from_value_info(value_info)
            if known.shape is not None or name not in tensors:
                tensors[name] = known if known.name == name else known.renamed(name)


def _assume_sizes(tensors: dict[str, TensorInfo], sizes: dict[str, int]) -> None:
    """Replace, in place, the symbols in ``sizes`` (sizes only the data decides, splits.py) by their values."""
    for name, info in list(tensors.items()):
        shape = info.shape
        if shape is not None and not info.is_known and any(isinstance(d, str) and d in sizes for d in shape):
            tensors[name] = TensorInfo(
                name, info.dtype, tuple(sizes.get(d, d) if isinstance(d, str) else d for d in shape)
            )


def infer_shapes(
    model: onnx.ModelProto,
    order: Sequence[onnx.NodeProto],
    fields: Sequence[NodeFields] | None = None,
    output_types: OutputTypes | None = None,
    given_values: dict[str, np.ndarray] | None = None,
    assumed_sizes: dict[str, int] | None = None,
) -> ShapeResult:
    """Infer every tensor's type and shape in ``model`` (inputs already bound).

    ``order`` is the graph's nodes in their topological order (the model's own, which load
    checks); ``fields`` their NodeFields, aligned with it (read here when not given);
    ``output_types`` sizes the outputs of ops ONNX has no schema for (contrib ops);
    ``given_values`` are values of graph inputs (:func:`inputs.input_values`); ``assumed_sizes`` are
    values for sizes only the data decides (splits.py: the symbols a first run gave them).
    """
    if fields is None:
        fields = read_node_fields(order)
    graph = model.graph
    read = _ValueInfoReader()
    stored = {v.name: read(v) for v in (*graph.value_info, *graph.output)}
    nested = any(has_subgraph(f.attributes) for f in fields if f.attributes)  # any If, Loop, Scan to look into
    notes: list[str] = []
    tensors: dict[str, TensorInfo] = {}
    found, subgraphs = _onnx_inference(model, _opaque_outputs(model, fields), nested, notes)
    read.read_into(found, tensors)
    _read_subgraphs(subgraphs, read, tensors)
    if assumed_sizes:
        _assume_sizes(tensors, assumed_sizes)
    values = _known_values(graph, subgraphs, tensors, given_values or {})
    evaluator = PartialEvaluator(
        model, tensors, values, stored, order, fields, nested, output_types, assumed_sizes or {}
    )
    evaluator.run()
    notes += _stale_note(stored, tensors)
    notes += evaluator.rule_notes()
    notes += _failure_notes(evaluator)
    inputs = [tensors.get(i.name) or read(i) for i in real_inputs(graph) if i.type.HasField("tensor_type")]
    return ShapeResult(tensors, values, inputs, _unresolved(inputs), notes, evaluator.failures, evaluator.uninferred)


def _opaque_outputs(model: onnx.ModelProto, fields: Sequence[NodeFields]) -> set[str]:
    """The outputs of ops ONNX has no schema for: their stored shapes stay visible to its inference."""
    opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version for o in model.opset_import}
    unknown_ops = {kind for kind in {(f.domain, f.op_type) for f in fields} if not has_schema(*kind, opsets)}
    if not unknown_ops:
        return set()
    return {o for f in fields if (f.domain, f.op_type) in unknown_ops for o in f.outputs if o}


def _onnx_inference(
    model: onnx.ModelProto, opaque: set[str], nested: bool, notes: list[str]
) -> tuple[Iterable[onnx.ValueInfoProto], list[onnx.GraphProto]]:
    """ONNX's inference over the whole model: the value infos it found and the subgraphs to read
    (the model's own inputs and subgraphs, with a note, when it fails)."""
    graph = model.graph
    try:
        with _stored_shapes_hidden(graph, keep=opaque):
            # no data propagation: onnx's allocates one entry per element of every 1-D tensor (an
            # Add of a float[10^12] input exhausts memory); the evaluator below computes shape values
            inferred = onnx.shape_inference.infer_shapes(
                without_weight_data(model), check_type=False, strict_mode=False, data_prop=False
            )
        # read one by one: a tuple of them all would hold a wrapper object per tensor at once
        found: Iterable[onnx.ValueInfoProto] = chain(
            inferred.graph.value_info, inferred.graph.output, inferred.graph.input
        )
        return found, list(nested_graphs(inferred.graph)) if nested else []
    except Exception as exc:  # e.g. a contrib op whose domain the model does not import
        notes.append(
            f"ONNX shape inference failed ({_one_line(exc)}); inferred each node on its own instead, "
            "using the model's stored shapes where that failed"
        )
        return graph.input, list(nested_graphs(graph))


def _read_subgraphs(subgraphs: list[onnx.GraphProto], read: _ValueInfoReader, tensors: dict[str, TensorInfo]) -> None:
    """If branches and Loop/Scan bodies: what inference found inside them (names are model-wide)."""
    for subgraph in subgraphs:
        for value_info in (*subgraph.input, *subgraph.value_info, *subgraph.output):
            info = read(value_info)
            if info.name not in tensors or (info.shape is not None and tensors[info.name].shape is None):
                tensors[info.name] = info


def _known_values(
    graph: onnx.GraphProto,
    subgraphs: list[onnx.GraphProto],
    tensors: dict[str, TensorInfo],
    given_values: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """The values known before evaluation: small initializers' (of the graph and its subgraphs) and
    the given inputs'; sets their tensors' shapes."""
    values: dict[str, np.ndarray] = {}
    for tensor in (*graph.initializer, *(t for g in subgraphs for t in g.initializer)):
        tensors[tensor.name] = TensorInfo(tensor.name, tensor.data_type, tuple(tensor.dims))
        if math.prod(tensor.dims) <= MAX_INITIALIZER_VALUE_ELEMENTS and not has_external_data(tensor):
            values[tensor.name] = numpy_helper.to_array(tensor)
    for name, value in given_values.items():
        values[name] = value
        tensors[name] = TensorInfo(name, tensors[name].dtype if name in tensors else 0, value.shape)
    return values


def _failure_notes(evaluator: PartialEvaluator) -> list[str]:
    """One note per node whose shape inference failed (in an untaken If branch: not counted either way)."""
    untaken = tuple(evaluator.untaken)
    return [
        f"shape inference failed on node {label!r} ({op_type}) in an If branch its condition does not take (shown, "
        f"not counted either way): {complaint}"
        if untaken and label.startswith(untaken)
        else f"shape inference failed on node {label!r} ({op_type}): {complaint}"
        + (f"; the {count - 1} node(s) depending on it are not counted" if count > 1 else "")
        for label, op_type, complaint, count in evaluator.roots
    ]


def _unresolved(inputs: list[TensorInfo]) -> list[UnresolvedDim]:
    """The graph inputs' dims left without a size (a symbol, or no shape at all)."""
    unresolved = [
        UnresolvedDim(info.name, axis, dim if isinstance(dim, str) else None, info.shape)
        for info in inputs
        for axis, dim in enumerate(info.shape or ())
        if not isinstance(dim, int)
    ]
    return unresolved + [UnresolvedDim(info.name, -1, None) for info in inputs if info.shape is None]


# Inline weight data above this many bytes is left out of the copy handed to ONNX's inference,
# which would otherwise serialize every weight (hundreds of MB for an LLM export) to read dims.
WEIGHT_DATA_LIMIT = 16 * 2**20


def without_weight_data(
    model: onnx.ModelProto, stand_in: Callable[[onnx.TensorProto], onnx.TensorProto] | None = None
) -> onnx.ModelProto:
    """``model`` itself when its inline weights are small, else a copy whose large initializers and
    Constant tensors are replaced by ``stand_in(tensor)``: by default the same name, type and dims
    without data (shapes need no more)."""
    stand_in = stand_in or _dims_only
    heavy = sum(_inline_bytes(t) for t in model.graph.initializer)
    if heavy <= WEIGHT_DATA_LIMIT:
        return model
    light = onnx.ModelProto()
    for descriptor, value in model.ListFields():
        name = descriptor.name
        if name == "graph":
            continue
        repeated = (
            descriptor.is_repeated
            if hasattr(descriptor, "is_repeated")
            else descriptor.label == descriptor.LABEL_REPEATED
        )
        if repeated:
            getattr(light, name).extend(value)
        elif descriptor.message_type:
            getattr(light, name).CopyFrom(value)
        else:
            setattr(light, name, value)
    graph = model.graph
    light.graph.name = graph.name
    for part in ("input", "output", "value_info", "sparse_initializer"):
        getattr(light.graph, part).extend(getattr(graph, part))
    for tensor in graph.initializer:
        light.graph.initializer.append(stand_in(tensor) if math.prod(tensor.dims) > MAX_VALUE_ELEMENTS else tensor)
    for node in graph.node:
        copy = light.graph.node.add()
        copy.CopyFrom(node)
        if node.op_type == "Constant":
            for attribute in copy.attribute:
                if attribute.type == onnx.AttributeProto.TENSOR and math.prod(attribute.t.dims) > MAX_VALUE_ELEMENTS:
                    attribute.t.CopyFrom(stand_in(attribute.t))
    return light


def _inline_bytes(tensor: onnx.TensorProto) -> int:
    """About the bytes of data ``tensor`` holds in the model, counted without reading them:
    protobuf's ByteSize serializes the whole tensor to count (a second per GB of weights)."""
    if not tensor.HasField("raw_data"):
        return tensor.ByteSize()  # external, or data in typed fields (small in practice)
    try:
        item_size = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except Exception:  # an unknown element type
        item_size = 1
    return math.prod(tensor.dims) * item_size


def _dims_only(tensor: onnx.TensorProto) -> onnx.TensorProto:
    return onnx.TensorProto(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims)


@contextmanager
def _stored_shapes_hidden(graph: onnx.GraphProto, keep: set[str]) -> Iterator[None]:
    """Hide the stored shapes of tensors ONNX can infer (it would silently prefer stale ones)."""
    stash = onnx.GraphProto()
    stash.value_info.extend(graph.value_info)
    stash.output.extend(graph.output)
    del graph.value_info[:]
    graph.value_info.extend(v for v in stash.value_info if v.name in keep)
    for output in graph.output:
        if output.name not in keep and output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")
    try:
        yield
    finally:
        del graph.value_info[:]
        graph.value_info.extend(stash.value_info)
        del graph.output[:]
        graph.output.extend(stash.output)


def _stale_note(stored: dict[str, TensorInfo], tensors: dict[str, TensorInfo]) -> list[str]:
    differing = [
        (info, new)
        for name, info in stored.items()
        if (new := tensors.get(name)) is not None and new.shape != info.shape and info.is_known and new.is_known
    ]
    if not differing:
        return []
    old, new = differing[0]
    empty = all(inferred.numel == 0 for _, inferred in differing)
    return [
        f"{len(differing)} shape(s) stored in the model differ from the inferred ones (e.g. {old.name}: "
        f"stored {old.shape_text()}, inferred {new.shape_text()}); the inferred ones are used"
        + (
            ": empty tensors the graph returns as placeholders (a merged decoder's cached branch returns them for "
            "the cross-attention caches it does not recompute)"
            if empty
            else ""
        )
    ]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")
