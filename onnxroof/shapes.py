"""Stage 2: bind the input dims, run ONNX shape inference, and close the gaps it leaves.

ONNX's inference (even with data propagation) often stops at shape arithmetic in real exports:
Shape -> Gather -> Concat -> Reshape, Range, Expand, Where over int64 tensors. Once every input
dim is bound, those small integer computations have concrete values, so a partial evaluator runs
them (with onnx's own reference kernels, one node at a time) and re-infers the nodes still left
unknown with the computed values as constants. One pass in topological order; weights are never
converted to arrays (only small initializers and Constant nodes are read).

Shapes stored in the model (``value_info``, declared output shapes) are the exporter's view, which
is stale once an input is re-bound, and ONNX silently prefers a stored shape to the one it infers.
So they are hidden from ONNX, except for outputs of ops it has no schema for (``com.microsoft``
contrib ops and the like), and only fill in what inference leaves unknown.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .errors import UsageError

Dim = int | str | None  # int: known; str: a symbolic dim's name; None: unknown and unnamed

# Shape arithmetic the partial evaluator runs when all inputs have values.
EVALUABLE_OPS = frozenset(
    """Abs Add And Cast CastLike Ceil Clip Concat ConstantOfShape CumSum Div Equal Expand Flatten
    Floor Gather GatherElements GatherND Greater GreaterOrEqual Identity Less LessOrEqual Max Min
    Mod Mul Neg NonZero Not Or Pow Range Reciprocal ReduceMax ReduceMin ReduceProd ReduceSum
    Reshape Round ScatterElements ScatterND Shape Sign Size Slice Split Sqrt Squeeze Sub Tile
    Transpose Trilu Unsqueeze Where Xor""".split()
)
# Elementwise ops whose output is the broadcast of their inputs (sized before running them).
BROADCASTING_OPS = frozenset(
    """Add And Div Equal Greater GreaterOrEqual Less LessOrEqual Max Min Mod Mul Or Pow Sub Where
    Xor""".split()
)
# Values larger than this are not kept: shape arithmetic is tiny, weights are not evaluated.
MAX_VALUE_ELEMENTS = 4096
MAX_INITIALIZER_VALUE_ELEMENTS = 64
_DEFAULT_DOMAINS = ("", "ai.onnx")
# Constant attributes other than "value" / "sparse_value": (element type, is a list).
_CONSTANT_ATTRIBUTES = {
    "value_int": (TensorProto.INT64, False),
    "value_float": (TensorProto.FLOAT, False),
    "value_string": (TensorProto.STRING, False),
    "value_ints": (TensorProto.INT64, True),
    "value_floats": (TensorProto.FLOAT, True),
    "value_strings": (TensorProto.STRING, True),
}


@dataclass(slots=True)  # one per tensor on a big graph: slots make them cheap to build and read
class TensorInfo:
    """What is known about one tensor: its element type and its shape. Treat as immutable."""

    name: str
    dtype: int = 0  # onnx.TensorProto.DataType; 0 = unknown
    shape: tuple[Dim, ...] | None = None  # None: rank unknown
    # worked out once here: every later stage reads them, most tensors several times
    is_known: bool = field(init=False, repr=False, compare=False)  # every dim is a number
    numel: int | None = field(init=False, repr=False, compare=False)  # None unless known

    def __post_init__(self) -> None:
        shape = self.shape  # dims are ints, names (str) or None
        self.is_known = known = shape is not None and None not in shape and str not in map(type, shape)
        self.numel = math.prod(shape) if known else None  # type: ignore[arg-type]

    def renamed(self, name: str) -> TensorInfo:
        """The same type and shape for tensor ``name``: a copy of every field but the name (a big
        graph's tensors share a few types, so working out is_known and numel again is wasted)."""
        info = object.__new__(TensorInfo)
        info.name, info.dtype, info.shape, info.is_known, info.numel = (
            name, self.dtype, self.shape, self.is_known, self.numel)
        return info

    def shape_text(self) -> str:
        if self.shape is None:
            return "?"
        return "x".join("?" if d is None else str(d) for d in self.shape) or "scalar"


@dataclass(frozen=True)
class UnresolvedDim:
    """An input dim still unknown after binding, with the flag that fixes it."""

    input_name: str
    axis: int  # -1: the input's rank itself is unknown
    symbol: str | None
    shape: tuple[Dim, ...] | None = None  # the input's shape as bound, for the fix

    @property
    def fix(self) -> str:
        """A flag that runs as pasted; 1 stands where the user's own value belongs (the
        warning says so), since a placeholder like VALUE would not parse."""
        if self.symbol:
            return f"--dim {self.symbol}=1"
        if self.shape is None:
            return f"--input-shape {self.input_name}:D1,D2,..."
        dims = ",".join(str(d) if isinstance(d, int) else "1" for d in self.shape)
        return f"--input-shape {self.input_name}:{dims}"


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
# Flags: --input-shape NAME:1,3,224,224 and --dim SYMBOL=VALUE


_DIM_SEPARATORS = re.compile(r"[,x×]")


def _whole_number(text: str) -> int | None:
    """``text`` as a dim value: an integer of 0 or more (0 is an empty axis, e.g. a KV cache in prefill)."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def parse_input_shape(text: str) -> tuple[str | None, tuple[int, ...]]:
    """Parse ``NAME:1,3,224,224`` (or ``1x3x224x224``; the name may hold colons).

    >>> parse_input_shape("images:1x3x224x224")
    ('images', (1, 3, 224, 224))
    >>> parse_input_shape("input:0:1,3,8,8")
    ('input:0', (1, 3, 8, 8))
    >>> parse_input_shape("1,3,32,32")
    (None, (1, 3, 32, 32))
    """
    name, _, dims_text = text.rpartition(":")
    dims = [_whole_number(part) for part in _DIM_SEPARATORS.split(dims_text)] if dims_text.strip() else []
    if not dims or None in dims:
        raise UsageError(
            f"--input-shape {text!r}: expected NAME:D1,D2,... with non-negative integer dims, "
            "e.g. --input-shape input:1,3,224,224"
        )
    return (name or None), tuple(dims)  # type: ignore[arg-type]


def parse_dim(text: str) -> tuple[str, int]:
    """Parse ``SYMBOL=VALUE``.

    >>> parse_dim("batch=8")
    ('batch', 8)
    """
    symbol, sep, value_text = text.partition("=")
    value = _whole_number(value_text)
    if not sep or not symbol.strip() or value is None:
        raise UsageError(f"--dim {text!r}: expected SYMBOL=VALUE with a non-negative integer, e.g. --dim batch=1")
    return symbol.strip(), value


def parse_value(text: str) -> tuple[str, tuple[float, ...]]:
    """Parse ``NAME=V1,V2,...``: the value of an input the graph computes with (a sample rate
    choosing an If branch, a ``total_sequence_length``).

    >>> parse_value("sr=16000")
    ('sr', (16000,))
    >>> parse_value("seqlens_k=4,7")
    ('seqlens_k', (4, 7))
    """
    name, sep, values_text = text.partition("=")
    try:
        values = tuple(float(v) if any(c in v for c in ".eE") else int(v) for v in values_text.split(","))
    except ValueError:
        values = ()
    if not sep or not name.strip() or not values:
        raise UsageError(f"--value {text!r}: expected NAME=V1,V2,... with numbers, e.g. --value sr=16000")
    return name.strip(), values


# ---------------------------------------------------------------------------------------------
# Binding


def input_values(model: onnx.ModelProto, given: dict[str, Sequence[float]]) -> dict[str, np.ndarray]:
    """The values given for graph inputs as arrays of each input's element type, shaped as the
    input is (already bound), or 1-D (a scalar for one number and a rank-0 input) where its shape
    has free dims."""
    inputs = {i.name: i for i in real_inputs(model.graph)}
    arrays = {}
    for name, numbers in given.items():
        if name not in inputs:
            raise UsageError(f"--value: the model has no input {name!r}; {_suggest(name, inputs)}")
        info = _info_from_value_info(inputs[name])
        try:
            array = np.array(numbers, dtype=helper.tensor_dtype_to_np_dtype(info.dtype))
        except Exception:
            raise UsageError(f"--value {name}: input {name!r} is not a numeric tensor") from None
        if info.shape is not None and info.is_known:
            if array.size != info.numel:
                raise UsageError(f"--value {name}: the input has shape {info.shape_text()} ({info.numel} values) "
                                 f"but {array.size} were given")
            array = array.reshape(info.shape)  # type: ignore[arg-type]
        elif info.shape == () or (info.shape is None and array.size == 1):
            array = array.reshape(())
        arrays[name] = array
    return arrays


def real_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (old exporters list weights as inputs too)."""
    initializers = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in initializers]


def _dims_of(value_info: onnx.ValueInfoProto) -> list[onnx.TensorShapeProto.Dimension] | None:
    tensor_type = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
        return None
    return list(tensor_type.shape.dim)


def fix_digit_dims(model: onnx.ModelProto) -> int:
    """Write every ``dim_param`` that is a decimal integer (exporters write fixed dims as ``"64"``)
    as that fixed value, in the graph's inputs, outputs and value_info and in every subgraph's
    (in place): it is no free symbol, so it is never reported unbound or suggested as a flag.
    Returns how many dims were rewritten.

    >>> model = helper.make_model(helper.make_graph([], "g", [helper.make_tensor_value_info(
    ...     "x", TensorProto.FLOAT, ["batch", "64"])], []))
    >>> fix_digit_dims(model), [(d.dim_param, d.dim_value) for d in model.graph.input[0].type.tensor_type.shape.dim]
    (1, [('batch', 0), ('', 64)])
    """
    fixed = 0
    for graph in (model.graph, *_nested_graphs(model.graph)):
        for value_info in (*graph.input, *graph.output, *graph.value_info):
            for dim in _dims_of(value_info) or ():
                text = dim.dim_param
                if text and text.isascii() and text.strip().isdigit():
                    dim.dim_value = int(text)  # the oneof: clears dim_param
                    fixed += 1
    return fixed


def batch_flags(model: onnx.ModelProto, batch: int, input_shapes: Sequence[tuple[str | None, tuple[int, ...]]],
                dims: dict[str, int]) -> tuple[list[tuple[str | None, tuple[int, ...]]], dict[str, int]]:
    """``--batch N`` as the flags it stands for: axis 0 of every input not shaped explicitly is N
    (a named batch dim is bound by name, a fixed one is overridden)."""
    shapes, named = list(input_shapes), dict(dims)
    explicit = {name for name, _ in input_shapes}
    for value_info in real_inputs(model.graph):
        old = _dims_of(value_info)
        if value_info.name in explicit or not old:
            continue
        if old[0].dim_param:
            named.setdefault(old[0].dim_param, batch)
        elif all(d.HasField("dim_value") for d in old):
            shapes.append((value_info.name, (batch, *(d.dim_value for d in old[1:]))))
        else:
            raise UsageError(
                f"--batch: input {value_info.name!r} has a fixed batch dim and other unknown dims; "
                f"give its whole shape with --input-shape {value_info.name}:..."
            )
    return shapes, named


def bind_inputs(
    model: onnx.ModelProto,
    input_shapes: Sequence[tuple[str | None, tuple[int, ...]]] = (),
    dims: dict[str, int] | None = None,
) -> None:
    """Write user-given input shapes and named-dim values into ``model`` (in place).

    A symbol bound by ``--input-shape`` (``x:4,16`` where x is ``[batch, seq]``) is bound
    everywhere, as ``--dim`` does: in ONNX one dim name stands for one value. Everything is
    checked before anything is written, so a UsageError leaves the model as it was.
    """
    graph = model.graph
    inputs = {i.name: i for i in real_inputs(graph)}
    given: dict[str, tuple[int, ...]] = {}
    for name, shape in input_shapes:
        name = _input_name(name, inputs)
        old = _dims_of(inputs[name])
        if old is not None and len(old) != len(shape):
            raise UsageError(
                f"--input-shape {name}: the model's input has rank {len(old)} "
                f"({_dims_text(old)}) but {len(shape)} dims were given"
            )
        given[name] = shape
    symbols = {d.dim_param for i in inputs.values() for d in (_dims_of(i) or []) if d.dim_param}
    for symbol in dims or {}:
        if symbol not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise UsageError(
                f"--dim {symbol}: the model's inputs have no dim named {symbol!r} (named dims: {known})"
            )
    values = _symbol_values(inputs, given, dict(dims or {}))
    for name, shape in given.items():
        tensor_shape = inputs[name].type.tensor_type.shape
        tensor_shape.Clear()
        for value in shape:
            tensor_shape.dim.add().dim_value = value
    if values:  # subgraphs too: an If branch's value_info names the outer dims
        for scope in (graph, *_nested_graphs(graph)):
            for value_info in (*scope.input, *scope.output, *scope.value_info):
                for dim in _dims_of(value_info) or []:
                    if dim.dim_param in values:
                        dim.dim_value = values[dim.dim_param]


def _input_name(name: str | None, inputs: dict[str, onnx.ValueInfoProto]) -> str:
    if name is None:
        if len(inputs) != 1:
            raise UsageError(
                "--input-shape without a name needs a model with one input; this one has "
                f"{', '.join(inputs) or 'none'}: use NAME:D1,D2,..."
            )
        return next(iter(inputs))
    if name not in inputs:
        raise UsageError(f"--input-shape: the model has no input {name!r}; {_suggest(name, inputs)}")
    return name


def _symbol_values(
    inputs: dict[str, onnx.ValueInfoProto], given: dict[str, tuple[int, ...]], explicit: dict[str, int]
) -> dict[str, int]:
    """``--dim`` values plus those implied by ``--input-shape`` (a symbol given two values is not)."""
    implied: dict[str, set[int]] = {}
    for name, shape in given.items():
        for axis, (dim, value) in enumerate(zip(_dims_of(inputs[name]) or [], shape)):
            symbol = dim.dim_param
            if symbol in explicit and explicit[symbol] != value:
                raise UsageError(
                    f"--dim {symbol}={explicit[symbol]} contradicts --input-shape "
                    f"{name}:{','.join(map(str, shape))}, whose axis {axis} is {symbol}"
                )
            if symbol:
                implied.setdefault(symbol, set()).add(value)
    unambiguous = {symbol: next(iter(found)) for symbol, found in implied.items() if len(found) == 1}
    return unambiguous | explicit


def _suggest(name: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    close = difflib.get_close_matches(name, choices, n=3)
    if close:
        return f"did you mean {', '.join(repr(c) for c in close)}?"
    return f"its inputs are {', '.join(repr(c) for c in choices)}"


def _dims_text(dims: list[onnx.TensorShapeProto.Dimension]) -> str:
    return ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims)


# ---------------------------------------------------------------------------------------------
# Inference


def _info_from_value_info(value_info: onnx.ValueInfoProto) -> TensorInfo:
    if not value_info.type.HasField("tensor_type"):
        return TensorInfo(value_info.name)
    tensor_type = value_info.type.tensor_type
    shape: tuple[Dim, ...] | None = None
    if tensor_type.HasField("shape"):
        shape = tuple(
            d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else (d.dim_param or None)
            for d in tensor_type.shape.dim
        )
    return TensorInfo(value_info.name, tensor_type.elem_type, shape)


class _ValueInfoReader:
    """``_info_from_value_info`` converting each distinct type once: a big graph's tensors share a
    few types, and equal serialized types read alike."""

    def __init__(self) -> None:
        self._types: dict[bytes, TensorInfo] = {}  # serialized type -> the first tensor read of that type

    def __call__(self, value_info: onnx.ValueInfoProto) -> TensorInfo:
        key = value_info.type.SerializeToString()
        known = self._types.get(key)
        if known is None:
            known = self._types[key] = _info_from_value_info(value_info)
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
                known = types[key] = _info_from_value_info(value_info)
            if known.shape is not None or name not in tensors:
                tensors[name] = known if known.name == name else known.renamed(name)


def _merged(old: TensorInfo, new: TensorInfo) -> TensorInfo | None:
    """``new`` (keeping ``old``'s dtype if it has none) when it knows more than ``old``, else None:
    a shape where there was none, every dim a number, or more numbers than ``old`` with its own
    kept (a data-dependent row count stays a symbol while the hidden dim beside it becomes known)."""
    if new.shape is None:
        return None
    if old.shape is not None:
        if old.is_known:
            return None
        if not new.is_known and not _more_numbers(old.shape, new.shape):
            return None
    return TensorInfo(old.name, new.dtype or old.dtype, new.shape)


def _more_numbers(old: tuple[Dim, ...], new: tuple[Dim, ...]) -> bool:
    """Whether ``new`` has every number ``old`` has, and more."""
    if len(old) != len(new):
        return False
    gained = False
    for before, after in zip(old, new):
        if isinstance(before, int):
            if before != after:
                return False
        elif isinstance(after, int):
            gained = True
    return gained


def _assume_sizes(tensors: dict[str, TensorInfo], sizes: dict[str, int]) -> None:
    """Replace, in place, the symbols in ``sizes`` (sizes only the data decides, splits.py) by their values."""
    for name, info in list(tensors.items()):
        shape = info.shape
        if shape is not None and not info.is_known and any(isinstance(d, str) and d in sizes for d in shape):
            tensors[name] = TensorInfo(name, info.dtype, tuple(sizes.get(d, d) if isinstance(d, str) else d
                                                               for d in shape))


# What the cost rules say an op without an ONNX schema writes (ops.output_types): the rules sit
# above this stage, so the caller hands it in.
OutputTypes = Callable[[onnx.NodeProto, tuple["TensorInfo | None", ...], dict], "list[TensorInfo | None] | None"]


def infer_shapes(model: onnx.ModelProto, order: Sequence[onnx.NodeProto],
                 fields: Sequence[NodeFields] | None = None, output_types: OutputTypes | None = None,
                 given_values: dict[str, np.ndarray] | None = None,
                 assumed_sizes: dict[str, int] | None = None) -> ShapeResult:
    """Infer every tensor's type and shape in ``model`` (inputs already bound).

    ``order`` is the graph's nodes in their topological order (the model's own, which load
    checks); ``fields`` their NodeFields, aligned with it (read here when not given);
    ``output_types`` sizes the outputs of ops ONNX has no schema for (contrib ops);
    ``given_values`` are values of graph inputs (:func:`input_values`); ``assumed_sizes`` are values
    for sizes only the data decides (splits.py: the symbols a first run gave them).
    """
    if fields is None:
        fields = read_node_fields(order)
    graph = model.graph
    read = _ValueInfoReader()
    stored = {v.name: read(v) for v in (*graph.value_info, *graph.output)}
    # outputs of ops without a schema: their stored shapes stay visible
    opsets = {("" if o.domain in _DEFAULT_DOMAINS else o.domain): o.version for o in model.opset_import}
    unknown_ops = {kind for kind in {(f.domain, f.op_type) for f in fields} if not _has_schema(*kind, opsets)}
    opaque = {o for f in fields if (f.domain, f.op_type) in unknown_ops for o in f.outputs if o} if unknown_ops else set()
    nested = any(_has_subgraph(f.attributes) for f in fields if f.attributes)  # any If, Loop, Scan to look into
    notes: list[str] = []
    tensors: dict[str, TensorInfo] = {}
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
        subgraphs = list(_nested_graphs(inferred.graph)) if nested else []
    except Exception as exc:  # e.g. a contrib op whose domain the model does not import
        notes.append(
            f"ONNX shape inference failed ({_one_line(exc)}); inferred each node on its own instead, "
            "using the model's stored shapes where that failed"
        )
        found = graph.input
        subgraphs = list(_nested_graphs(graph))
    read.read_into(found, tensors)
    # If branches and Loop/Scan bodies: what inference found inside them (names are model-wide)
    for subgraph in subgraphs:
        for value_info in (*subgraph.input, *subgraph.value_info, *subgraph.output):
            info = read(value_info)
            if info.name not in tensors or (info.shape is not None and tensors[info.name].shape is None):
                tensors[info.name] = info
    if assumed_sizes:
        _assume_sizes(tensors, assumed_sizes)
    values: dict[str, np.ndarray] = {}
    for tensor in (*graph.initializer, *(t for g in subgraphs for t in g.initializer)):
        tensors[tensor.name] = TensorInfo(tensor.name, tensor.data_type, tuple(tensor.dims))
        if math.prod(tensor.dims) <= MAX_INITIALIZER_VALUE_ELEMENTS and not _is_external(tensor):
            values[tensor.name] = numpy_helper.to_array(tensor)
    for name, value in (given_values or {}).items():
        values[name] = value
        tensors[name] = TensorInfo(name, tensors[name].dtype if name in tensors else 0, value.shape)

    evaluator = _PartialEvaluator(model, tensors, values, stored, order, fields, nested, output_types,
                                  assumed_sizes or {})
    evaluator.run()
    notes += _stale_note(stored, tensors)
    notes += evaluator.rule_notes()
    notes += [
        f"shape inference failed on node {label!r} ({op_type}): {complaint}"
        + (f"; the {count - 1} node(s) depending on it are not counted" if count > 1 else "")
        for label, op_type, complaint, count in evaluator.roots
    ]

    inputs = [
        tensors.get(i.name) or read(i)
        for i in real_inputs(graph)
        if i.type.HasField("tensor_type")
    ]
    unresolved = [
        UnresolvedDim(info.name, axis, dim if isinstance(dim, str) else None, info.shape)
        for info in inputs
        for axis, dim in enumerate(info.shape or ())
        if not isinstance(dim, int)
    ]
    unresolved += [UnresolvedDim(info.name, -1, None) for info in inputs if info.shape is None]
    return ShapeResult(tensors, values, inputs, unresolved, notes, evaluator.failures, evaluator.uninferred)


class NodeFields(NamedTuple):
    """The NodeProto fields every stage reads, read once per node: each protobuf field read costs
    0.2-1.6 µs, and the shape and cost stages used to read them all again."""

    name: str
    op_type: str
    domain: str
    inputs: list[str]  # node.input[:] ("" for a skipped optional input)
    outputs: list[str]  # node.output[:]
    attributes: Sequence[onnx.AttributeProto]  # node.attribute, or () when the node has none


def read_node_fields(nodes: Iterable[onnx.NodeProto]) -> list[NodeFields]:
    """The NodeFields of each of ``nodes``, in order."""
    return [NodeFields(node.name, node.op_type, node.domain, node.input[:], node.output[:], node.attribute or ())
            for node in nodes]


def node_names(nodes: Sequence[onnx.NodeProto] | Sequence[NodeFields]) -> list[str]:
    """Unique, stable names: the node's own, or ``OpType_index`` when empty or repeated.
    Every stage names nodes with this, so a shape failure and a cost record agree. ``nodes`` may
    be NodeProtos or their NodeFields (which read faster)."""
    given = [node.name or f"{node.op_type}_{index}" for index, node in enumerate(nodes)]
    if len(set(given)) == len(given):  # the common case: no name repeats, none is renamed
        return given
    names, seen = [], set()
    for index, name in enumerate(given):
        while name in seen:  # a renamed node may meet another node's own name ("a#2", "a", "a")
            name = f"{name}#{index}"
        seen.add(name)
        names.append(name)
    return names


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
        repeated = (descriptor.is_repeated if hasattr(descriptor, "is_repeated")
                    else descriptor.label == descriptor.LABEL_REPEATED)
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


def _nested_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """Every subgraph below ``graph`` (If branches, Loop and Scan bodies), depth first."""
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
                yield from _nested_graphs(attribute.g)


def _has_schema(domain: str, op_type: str, opsets: dict[str, int] | None = None) -> bool:
    """Whether ONNX has a schema for the op at the model's opset (``opsets``: domain -> version):
    LayerNormalization exists from opset 17, and onnxruntime's optimizer writes its own into
    opset 12-16 models, which its rule must then size."""
    domain = "" if domain in _DEFAULT_DOMAINS else domain
    if opsets and domain in opsets:
        return onnx.defs.has(op_type, opsets[domain], domain)
    return onnx.defs.has(op_type, domain)


def _is_external(tensor: onnx.TensorProto) -> bool:
    return tensor.data_location == TensorProto.EXTERNAL


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
    return [
        f"{len(differing)} shape(s) stored in the model differ from the inferred ones (e.g. {old.name}: "
        f"stored {old.shape_text()}, inferred {new.shape_text()}); the inferred ones are used"
    ]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


def _complaint(exc: BaseException) -> str:
    """onnx's inference error for one node, without its wrapping: '[ShapeInferenceError] Inference
    error(s): (op_type:MatMul, node name: mm): [ShapeInferenceError] Incompatible ...' -> 'Incompatible ...'."""
    text = re.sub(r"^.*\(op_type:[^,]*, node name: .*?\): ", "", " ".join(str(exc).split()))
    text = re.sub(r"\[\w+\]\s*", "", text).strip()
    text = "".join(c if c.isprintable() else "?" for c in text) or type(exc).__name__
    return text[:300] + ("..." if len(text) > 300 else "")


class _PartialEvaluator:
    """Runs small shape computations and re-infers, one node at a time, what ONNX left unknown."""

    def __init__(
        self,
        model: onnx.ModelProto,
        tensors: dict[str, TensorInfo],
        values: dict[str, np.ndarray],
        stored: dict[str, TensorInfo],
        order: Sequence[onnx.NodeProto],
        fields: Sequence[NodeFields],
        nested: bool,
        output_types: OutputTypes | None = None,
        assumed_sizes: dict[str, int] | None = None,
    ):
        self.tensors = tensors
        self.values = values
        self.stored = stored
        self.opsets = {("" if o.domain in _DEFAULT_DOMAINS else o.domain): o.version for o in model.opset_import}
        self.opset_imports = list(model.opset_import)
        self.ir_version = model.ir_version
        self.failures: dict[str, str] = {}  # tensor -> why its shape is unknown
        self.uninferred: set[str] = set()  # outputs of nodes onnx could not infer
        self.roots: list[list] = []  # [label, op_type, complaint, nodes affected] per failing node
        self._root_of: dict[str, int] = {}  # tensor -> index in roots
        self._order = order
        self._fields = fields  # NodeFields of the order, aligned with it
        self._nested = nested  # whether any node may have a subgraph
        self._onnx_inferred = dict(tensors)  # as onnx's whole-graph inference left them
        self._labels: list[str] | None = None  # node_names(fields), named only once a node fails
        # node signature (_signature) -> what running it gave, and what onnx inferred of it alone:
        # most models repeat one layer, so most shape computations are repeats
        self._runs: dict[tuple, tuple | None] = {}
        self._inferences: dict[tuple, list[TensorInfo] | None] = {}
        self._ruled_ops: dict[tuple[str, str], bool] = {}  # (domain, op_type) -> sized by its rule (see _ruled)
        self._output_types = output_types
        self._assumed = assumed_sizes or {}  # data-dependent symbol -> the size it is taken to be
        self._rule_disagreements: list[tuple[str, TensorInfo, TensorInfo]] = []  # (op, stored, rule's)

    def run(self) -> None:
        """Visit every node of the order that has anything left to do."""
        settled = self._settled
        for index, node_fields in enumerate(self._fields):
            if self._root_of and self._tainted(node_fields):
                continue
            if not settled(node_fields):
                self.visit(self._order[index], node_fields, index)

    def _tainted(self, node_fields: NodeFields) -> bool:
        """Whether the node reads an output of a failed node: if so its own outputs are not to be
        trusted either, and are failed too."""
        root_of = self._root_of
        tainted = next((n for n in node_fields.inputs if n in root_of), None)
        if tainted is None:
            return False
        root = self.roots[root_of[tainted]]
        root[3] += 1
        self._fail(node_fields.outputs, root_of[tainted],
                   f"depends on node {root[0]!r}, whose shape inference failed: {root[2]}")
        return True

    def _split_pieces(self, node: onnx.NodeProto, node_fields: NodeFields) -> None:
        """A Split by sizes computed from the data (a Mixture-of-Experts router's counts): onnx gives
        its outputs no shape at all. Each output is the input with a size of its own along the axis,
        ``<output>_rows``; the sizes are data-dependent and add up to the input's (see splits.py)."""
        data = self._info(node_fields.inputs[0]) if node_fields.inputs else None
        outputs = [o for o in node_fields.outputs if o]
        if data is None or data.shape is None or any(self._info(o).shape is not None for o in outputs):
            return
        axis = next((helper.get_attribute_value(a) for a in node_fields.attributes if a.name == "axis"), 0)
        axis = axis + len(data.shape) if axis < 0 else axis
        if not 0 <= axis < len(data.shape):
            return
        for output in outputs:
            rows = f"{output}_rows"
            self.tensors[output] = TensorInfo(output, data.dtype,
                                              (*data.shape[:axis], self._assumed.get(rows, rows), *data.shape[axis + 1:]))

    def _ruled(self, node_fields: NodeFields) -> bool:
        """Whether the node's outputs are sized by its cost rule: ops with no ONNX schema, and the
        ai.onnx.ml ops, whose schemas infer no shape for most of them (Scaler, SVMClassifier, ...)."""
        if self._output_types is None:
            return False
        kind = (node_fields.domain, node_fields.op_type)
        ruled = self._ruled_ops.get(kind)
        if ruled is None:
            ruled = self._ruled_ops[kind] = kind[0] == "ai.onnx.ml" or not _has_schema(*kind, self.opsets)
        return ruled

    def visit(self, node: onnx.NodeProto, node_fields: NodeFields, index: int,
              labels: Sequence[str] | None = None) -> None:
        """Evaluate or re-infer ``node`` (of fields ``node_fields``), the ``index``-th of the order
        (of a subgraph's order when ``labels``, its nodes' names, are given)."""
        op_type, outputs = node_fields.op_type, node_fields.outputs
        if self._ruled(node_fields):
            self._from_rule(node, node_fields)
        elif self._nested and _has_subgraph(node_fields.attributes):
            if node_fields.domain in _DEFAULT_DOMAINS:
                self._visit_subgraphs(node, node_fields, labels, index)
        elif node_fields.domain in _DEFAULT_DOMAINS:
            if op_type == "Constant":
                self._constant(node, node_fields)
            elif not (op_type in EVALUABLE_OPS and self._evaluate(node, node_fields)):
                if any(not self._info(o).is_known for o in outputs if o):
                    complaint = self._reinfer(node, node_fields)
                    if complaint:
                        shapes = ", ".join(self._info(n).shape_text() if n else "-" for n in node_fields.inputs)
                        self._root(node_fields, index, f"{complaint} (input shapes {shapes})", labels)
                        self.uninferred.update(o for o in outputs if o)
                        return
            if op_type == "Split":
                self._split_pieces(node, node_fields)
            if op_type == "Reshape":
                complaint = self._reshape_mismatch(node_fields)
                if complaint:
                    self._root(node_fields, index, complaint, labels)
                    return
        for output in outputs:  # last resort: the shape the exporter stored
            if output in self.stored:
                self._update(self.stored[output])

    def _from_rule(self, node: onnx.NodeProto, node_fields: NodeFields) -> None:
        """The outputs of an op ONNX has no schema for, as its cost rule sizes them from the inputs.
        A shape the rule derives wins over the stored one (stale once inputs are re-bound); the
        disagreement is noted."""
        inputs = tuple(self._info(n) if n else None for n in node_fields.inputs)
        found = self._output_types(node, inputs, self.values)  # type: ignore[misc]
        for info in found or ():
            if info is None:
                continue
            old = self._info(info.name)
            stored = self.stored.get(info.name)
            if info.is_known:
                if stored is not None and stored.is_known and stored.shape != info.shape:
                    self._rule_disagreements.append((node_fields.op_type, stored, info))
                self.tensors[info.name] = TensorInfo(info.name, info.dtype or old.dtype, info.shape)
            else:
                self._update(TensorInfo(info.name, info.dtype or old.dtype, info.shape))

    def rule_notes(self) -> list[str]:
        if not self._rule_disagreements:
            return []
        op_type, stored, derived = self._rule_disagreements[0]
        return [f"{len(self._rule_disagreements)} stored shape(s) of contrib-op outputs differ from what the op's "
                f"rule derives from its inputs (e.g. {op_type} output {stored.name}: stored {stored.shape_text()}, "
                f"derived {derived.shape_text()}); the derived ones are used"]

    def _visit_subgraphs(self, node: onnx.NodeProto, node_fields: NodeFields, labels: Sequence[str] | None,
                         index: int) -> None:
        """Evaluate the nodes of an If's branches or a Loop's or Scan's body, which see the outer
        scope's values. Both branches of an If are evaluated (both are shown and their stored
        tensors counted, so what is a setting must not depend on the branch taken); when its
        condition is known, its outputs are the taken branch's (with their values)."""
        label = (labels if labels is not None else self._node_labels())[index]
        bodies = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
        op_type, inputs = node_fields.op_type, node_fields.inputs
        if op_type == "If":
            condition = self.values.get(inputs[0]) if inputs and inputs[0] else None
            taken = None if condition is None or condition.size != 1 else (
                "then_branch" if bool(condition.reshape(-1)[0]) else "else_branch")
            for name, body in bodies.items():
                self.run_graph(body, f"{label}/{name}")
            branches = [bodies[taken]] if taken else list(bodies.values())
            for slot, output in enumerate(node_fields.outputs):
                results = [self._info(b.output[slot].name) for b in branches if slot < len(b.output)]
                if output and results and all(r.is_known and r.shape == results[0].shape for r in results):
                    self.tensors[output] = TensorInfo(output, results[0].dtype or self._info(output).dtype,
                                                      results[0].shape)
                    value = self.values.get(branches[0].output[slot].name) if taken else None
                    if value is not None:
                        self.values[output] = value
            return
        body = bodies.get("body")
        if body is None:
            return
        if op_type == "Loop":  # (trip count, condition, carried...) -> (iteration, condition, carried...)
            carried = list(zip(body.input[2:], inputs[2:]))
        elif op_type == "Scan":  # states, then scan inputs sliced along their scan axis
            scan_inputs = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "num_scan_inputs"), 0)
            states = len(inputs) - scan_inputs
            axes = next((list(helper.get_attribute_value(a)) for a in node.attribute if a.name == "scan_input_axes"),
                        [0] * scan_inputs)
            carried = list(zip(body.input[:states], inputs[:states]))
            for formal, actual, axis in zip(body.input[states:], inputs[states:], axes):
                outer = self._info(actual)
                if outer.shape is not None and not self._info(formal.name).is_known:
                    sliced = outer.shape[:axis % len(outer.shape)] + outer.shape[axis % len(outer.shape) + 1:]
                    self.tensors[formal.name] = TensorInfo(formal.name, outer.dtype, sliced)
        else:
            carried = []
        for formal, actual in carried:  # a loop-carried value keeps its initial shape, not its value
            outer = self._info(actual) if actual else None
            if outer is not None and outer.shape is not None and not self._info(formal.name).is_known:
                self.tensors[formal.name] = TensorInfo(formal.name, outer.dtype, outer.shape)
        self.run_graph(body, f"{label}/body")

    def run_graph(self, graph: onnx.GraphProto, prefix: str) -> None:
        """Visit the nodes of a subgraph (names are model-wide, so its tensors share the maps)."""
        for tensor in graph.initializer:
            if tensor.name not in self.tensors or not self.tensors[tensor.name].is_known:
                self.tensors[tensor.name] = TensorInfo(tensor.name, tensor.data_type, tuple(tensor.dims))
        nodes = list(graph.node)
        fields = read_node_fields(nodes)
        labels = [f"{prefix}/{name}" for name in node_names(fields)]
        for index, (node, node_fields) in enumerate(zip(nodes, fields)):
            if self._root_of and self._tainted(node_fields):
                continue
            if not self._settled(node_fields):
                self.visit(node, node_fields, index, labels)

    def _node_labels(self) -> list[str]:
        if self._labels is None:
            self._labels = node_names(self._fields)
        return self._labels

    def _settled(self, node_fields: NodeFields) -> bool:
        """Nothing left to do for the node (most nodes of a big graph): onnx knows every output's
        shape, and there is nothing to evaluate or check (the stored shapes cannot add to a known one)."""
        op_type = node_fields.op_type
        if op_type in _ALWAYS_VISITED or self._ruled(node_fields):
            return False
        if self._nested and node_fields.attributes and _has_subgraph(node_fields.attributes):
            return False  # its body's shape computations are evaluated
        tensors = self.tensors
        for output in node_fields.outputs:
            info = tensors.get(output)
            if (info is None or not info.is_known) and (output or output in self.stored):
                return False
        if op_type in EVALUABLE_OPS:  # settled unless every input has a value to evaluate it with
            values = self.values
            for name in node_fields.inputs:
                if name and name not in values:
                    return True
            return False
        return True

    def _root(self, node_fields: NodeFields, index: int, complaint: str, labels: Sequence[str] | None = None) -> None:
        self.roots.append([(labels if labels is not None else self._node_labels())[index], node_fields.op_type,
                           complaint, 1])
        self._fail(node_fields.outputs, len(self.roots) - 1, f"shape inference failed on this node: {complaint}")

    def _fail(self, outputs: Iterable[str], root: int, reason: str) -> None:
        """Forget what is known of a node's ``outputs``: they are unknown, for ``reason``."""
        for output in outputs:
            if output:
                self.tensors[output] = TensorInfo(output, self._info(output).dtype)
                self.values.pop(output, None)
                self.failures[output] = reason
                self._root_of[output] = root

    def _reshape_mismatch(self, node_fields: NodeFields) -> str | None:
        """onnx infers a Reshape to a constant shape without checking the element count."""
        source, result = self._info(node_fields.inputs[0]), self._info(node_fields.outputs[0])
        if not (source.is_known and result.is_known) or source.numel == result.numel:
            return None
        return (f"cannot reshape {source.shape_text()} ({source.numel:,} elements) to {result.shape_text()} "
                f"({result.numel:,} elements)")

    def _info(self, name: str) -> TensorInfo:
        return self.tensors.setdefault(name, TensorInfo(name))

    def _update(self, new: TensorInfo) -> None:
        merged = _merged(self._info(new.name), new)
        if merged is not None:
            self.tensors[new.name] = merged

    def _constant(self, node: onnx.NodeProto, node_fields: NodeFields) -> None:
        """A Constant's shape comes from its attribute; its value is read only when small."""
        declared = _constant_info(node)
        if declared is None:
            self._reinfer(node, node_fields)
            return
        dtype, shape, readable = declared
        output = node_fields.outputs[0]
        self.tensors[output] = TensorInfo(output, dtype, shape)
        if readable and math.prod(shape) <= MAX_VALUE_ELEMENTS:
            self._evaluate(node, node_fields)

    def _evaluate(self, node: onnx.NodeProto, node_fields: NodeFields) -> bool:
        """Run ``node`` if all its inputs have values; True when every output got a value."""
        op_type, inputs = node_fields.op_type, node_fields.inputs
        if op_type in ("Shape", "Size"):
            return self._shape_value(node_fields)
        values = self.values
        if not all(name in values for name in inputs if name):
            return False
        args = [values[name] if name else None for name in inputs]
        if _predicted_elements(op_type, args) > MAX_VALUE_ELEMENTS:
            return False
        results = self._once(self._runs, node_fields, lambda: self._run(node, args))
        if results is None:
            return False
        outputs = [(name, result) for name, result in zip(node_fields.outputs, results) if name]
        if not all(isinstance(result, (np.ndarray, np.generic)) for _, result in outputs):
            return False
        for name, result in outputs:
            self._store(name, np.asarray(result))
        return True

    def _run(self, node: onnx.NodeProto, args: list[np.ndarray | None]) -> tuple | None:
        """The results of onnx's reference kernel for ``node`` on ``args``, or None if it fails."""
        from onnx.reference.ops import load_op  # imported on first use: a tenth of a second

        try:
            op_class = load_op("", node.op_type, self.opsets.get(""))
            results = op_class(node, _RUN_PARAMS | {"opsets": self.opsets}).run(*args)
        except Exception:  # an odd node: shape inference handles it instead
            return None
        return tuple(results) if isinstance(results, (tuple, list)) else (results,)

    def _once(self, done: dict, node_fields: NodeFields, work: Callable[[], Any]) -> Any:
        """``work()`` for the node, or what it gave for an earlier node of the same signature (kept in ``done``)."""
        signature = self._signature(node_fields)
        if signature is None:
            return work()
        if signature not in done:
            done[signature] = work()
        return done[signature]

    def _signature(self, node_fields: NodeFields) -> tuple | None:
        """All that onnx's inference and reference kernels see of a node: its op, attributes and
        outputs, and each input's value (when known) or type and shape. Nodes alike in these
        evaluate and infer alike, whatever their names. None for inputs holding Python objects
        (strings), whose bytes do not say what they hold."""
        inputs = []
        for name in node_fields.inputs:
            if not name:
                inputs.append(None)
            elif (value := self.values.get(name)) is not None:
                if value.dtype.hasobject:
                    return None
                inputs.append((value.dtype.str, value.shape, value.tobytes()))
            else:
                info = self._info(name)
                inputs.append((info.dtype, info.shape))
        return (node_fields.domain, node_fields.op_type, tuple(bool(o) for o in node_fields.outputs),
                tuple(a.SerializeToString() for a in node_fields.attributes), tuple(inputs))

    def _shape_value(self, node_fields: NodeFields) -> bool:
        info = self._info(node_fields.inputs[0])
        if not info.is_known:
            return False
        shape: tuple[int, ...] = info.shape  # type: ignore[assignment]
        if node_fields.op_type == "Size":
            self._store(node_fields.outputs[0], np.array(math.prod(shape), dtype=np.int64))
            return True
        attributes = {a.name: helper.get_attribute_value(a) for a in node_fields.attributes}
        rank = len(shape)
        start, end = (
            max(0, min(rank, i + rank if i < 0 else i))
            for i in (attributes.get("start", 0), attributes.get("end", rank))
        )
        self._store(node_fields.outputs[0], np.array(shape[start:end], dtype=np.int64))
        return True

    def _store(self, name: str, value: np.ndarray) -> None:
        dtype = self._info(name).dtype  # what inference said, else the value's own
        if not dtype:
            try:
                dtype = helper.np_dtype_to_tensor_dtype(value.dtype)
            except Exception:  # strings, exotic float types
                dtype = 0
        self.tensors[name] = TensorInfo(name, dtype, tuple(int(d) for d in value.shape))
        if value.size <= MAX_VALUE_ELEMENTS:
            self.values[name] = value

    def _reinfer(self, node: onnx.NodeProto, node_fields: NodeFields) -> str | None:
        """Infer one node alone, feeding every input value the evaluator knows as a constant.

        Returns onnx's complaint when this node, with every input known, still has no shape."""
        if self._nothing_to_learn(node_fields):
            return None
        outputs = [o for o in node_fields.outputs if o]
        names = list(dict.fromkeys(n for n in node_fields.inputs if n))
        for name in names:
            if name not in self.values:
                info = self._info(name)
                if info.shape is None or not info.dtype:
                    return None
        inferred = self._once(self._inferences, node_fields, lambda: self._infer_alone(node, names, outputs))
        if inferred is None:
            return None
        # a dim onnx names afresh (unk__0: a NonZero's count) is this node's own: named after its
        # output, since onnx restarts its names in every one-node model and look-alike nodes share a result
        input_symbols = {d for n in names for d in (self._info(n).shape or ()) if isinstance(d, str)}
        for output, info in zip(outputs, inferred):
            shape = info.shape
            if shape is not None and any(isinstance(d, str) and d not in input_symbols for d in shape):
                shape = tuple(self._assumed.get(f"{output}_{axis}", f"{output}_{axis}")
                              if isinstance(d, str) and d not in input_symbols else d for axis, d in enumerate(shape))
            self._update(TensorInfo(output, info.dtype, shape))
        if all(self._info(o).shape is not None for o in outputs) or not _has_schema(node_fields.domain,
                                                                                    node_fields.op_type):
            return None
        try:  # still no shape, with every input known: ask again, strictly, to hear why
            single, small = self._alone(node, names, outputs)
            onnx.shape_inference.infer_shapes(single, strict_mode=True, data_prop=small)
        except onnx.shape_inference.InferenceError as exc:
            return _complaint(exc)
        except Exception:
            return None
        return None

    def _nothing_to_learn(self, node_fields: NodeFields) -> bool:
        """Whether inferring the node alone can tell no more than onnx's whole-graph inference did:
        it gave every output a rank, and saw the inputs as they are now (no values, the same
        shapes). On a model with unbound dims that is most nodes."""
        inferred, tensors = self._onnx_inferred, self.tensors
        for name in node_fields.inputs:
            if name and (name in self.values or name not in inferred or tensors.get(name) is not inferred[name]):
                return False
        return all(self._info(o).shape is not None for o in node_fields.outputs if o)

    def _alone(self, node: onnx.NodeProto, names: list[str], outputs: list[str]) -> tuple[onnx.ModelProto, bool]:
        """A model of ``node`` alone, its inputs (``names``) the values and types the evaluator
        knows, its named ``outputs``; and whether onnx's data propagation may run on it."""
        graph_inputs, initializers = [], []
        for name in names:
            if name in self.values:
                initializers.append(numpy_helper.from_array(self.values[name], name))
            else:
                info = self._info(name)
                graph_inputs.append(helper.make_tensor_value_info(name, info.dtype, list(info.shape)))
        single = helper.make_model(
            helper.make_graph([node], "single", graph_inputs, [onnx.ValueInfoProto(name=o) for o in outputs],
                              initializers),
            opset_imports=self.opset_imports,
            ir_version=self.ir_version,
        )
        # data propagation only over small vectors: onnx's allocates one entry per element
        small = all(len(i.type.tensor_type.shape.dim) != 1 or 0 <= i.type.tensor_type.shape.dim[0].dim_value
                    <= MAX_VALUE_ELEMENTS for i in graph_inputs)
        return single, small

    def _infer_alone(self, node: onnx.NodeProto, names: list[str], outputs: list[str]) -> list[TensorInfo] | None:
        """What onnx infers of ``node``'s named ``outputs`` (in order) in a model of its own."""
        single, small = self._alone(node, names, outputs)
        try:
            inferred = onnx.shape_inference.infer_shapes(single, strict_mode=False, data_prop=small)
        except Exception:
            return None
        return [_info_from_value_info(value_info) for value_info in inferred.graph.output]


# Nodes visited even when onnx knows their outputs: a Constant's value, Shape and Size from the
# shape onnx inferred, a Reshape's element count.
_ALWAYS_VISITED = frozenset({"Constant", "Reshape", "Shape", "Size"})
# What onnx.reference's kernels expect from their evaluator (no logging, no custom ops).
_RUN_PARAMS = {
    "log": lambda *args: None, "verbose": 0, "new_ops": None, "existing_functions": {}, "evaluator_cls": None
}


def _has_subgraph(attributes: Iterable[onnx.AttributeProto]) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in attributes)


def _constant_info(node: onnx.NodeProto) -> tuple[int, tuple[int, ...], bool] | None:
    """A Constant's (element type, shape, value readable in memory), without reading its data."""
    for attribute in node.attribute:
        if attribute.name == "value":
            return attribute.t.data_type, tuple(attribute.t.dims), not _is_external(attribute.t)
        if attribute.name == "sparse_value":
            return attribute.sparse_tensor.values.data_type, tuple(attribute.sparse_tensor.dims), True
        if attribute.name in _CONSTANT_ATTRIBUTES:
            dtype, is_list = _CONSTANT_ATTRIBUTES[attribute.name]
            if not is_list:
                return dtype, (), True
            count = len(attribute.ints) + len(attribute.floats) + len(attribute.strings)
            return dtype, (count,), True
    return None


def _predicted_elements(op_type: str, args: list[np.ndarray | None]) -> int:
    """Output size of ops whose output can dwarf their inputs, before running them."""
    try:
        if op_type == "ConstantOfShape":
            return math.prod(int(d) for d in args[0].reshape(-1)) if args[0] is not None else 1
        if op_type == "Expand":
            return math.prod(np.broadcast_shapes(args[0].shape, tuple(int(d) for d in args[1].reshape(-1))))
        if op_type == "Tile":
            return args[0].size * math.prod(int(r) for r in args[1].reshape(-1))
        if op_type == "Range":
            start, limit, delta = (float(a) for a in args)
            return max(0, math.ceil((limit - start) / delta)) if delta else MAX_VALUE_ELEMENTS + 1
        if op_type in BROADCASTING_OPS:
            return math.prod(np.broadcast_shapes(*(a.shape for a in args if a is not None)))
    except Exception:  # malformed arguments: let the node be re-inferred instead
        return MAX_VALUE_ELEMENTS + 1
    return 0
