"""Stage 2: bind the input dims, run ONNX shape inference, and close the gaps it leaves.

ONNX's inference (even with data propagation) often stops at shape arithmetic in real exports:
Shape -> Gather -> Concat -> Reshape, Range, Expand, Where over int64 tensors. Once every input
dim is bound, those small integer computations have concrete values, so a partial evaluator runs
them (with onnx's own reference kernels, one node at a time) and re-infers the nodes still left
unknown with the computed values as constants. One pass in topological order; weights are never
converted to arrays (only small, inline initializers are read).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import onnx
import onnx.reference.ops
from onnx import helper, numpy_helper

from .errors import UsageError

Dim = int | str | None  # int: known; str: a symbolic dim's name; None: unknown and unnamed

# Shape arithmetic the partial evaluator runs when all inputs have values.
EVALUABLE_OPS = frozenset(
    """Abs Add And Cast CastLike Ceil Concat Constant ConstantOfShape CumSum Div Equal Expand Flatten
    Floor Gather GatherElements Greater GreaterOrEqual Identity Less LessOrEqual Max Min Mod Mul Neg
    NonZero Not Or Pow Range ReduceMax ReduceMin ReduceProd ReduceSum Reshape Shape Sign Size Slice
    Split Sqrt Squeeze Sub Tile Transpose Unsqueeze Where Xor""".split()
)
# Values larger than this are not kept: shape arithmetic is tiny, weights are not evaluated.
MAX_VALUE_ELEMENTS = 4096
MAX_INITIALIZER_VALUE_ELEMENTS = 64


@dataclass
class TensorInfo:
    """What is known about one tensor: its element type and its shape."""

    name: str
    dtype: int = 0  # onnx.TensorProto.DataType; 0 = unknown
    shape: tuple[Dim, ...] | None = None  # None: rank unknown

    @property
    def is_known(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    @property
    def numel(self) -> int | None:
        if not self.is_known:
            return None
        count = 1
        for dim in self.shape:  # type: ignore[union-attr]
            count *= dim  # type: ignore[operator]
        return count

    def shape_text(self) -> str:
        if self.shape is None:
            return "?"
        return "x".join("?" if d is None else str(d) for d in self.shape) or "scalar"


@dataclass(frozen=True)
class UnresolvedDim:
    """An input dim still unknown after binding, with the flag that fixes it."""

    input_name: str
    axis: int
    symbol: str | None

    @property
    def fix(self) -> str:
        if self.symbol:
            return f"--dim {self.symbol}=VALUE"
        return f"--input-shape {self.input_name}:..."


@dataclass
class ShapeResult:
    tensors: dict[str, TensorInfo]
    values: dict[str, np.ndarray]  # small tensors whose values the evaluator knows
    inputs: list[TensorInfo]  # graph inputs as bound (the shapes actually used)
    unresolved: list[UnresolvedDim]
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Flags: --input-shape NAME:1,3,224,224 and --dim SYMBOL=VALUE


_DIM_SEPARATORS = re.compile(r"[,x×]")


def parse_input_shape(text: str) -> tuple[str | None, tuple[int, ...]]:
    """Parse ``NAME:1,3,224,224`` (or ``1x3x224x224``; the name may hold colons).

    >>> parse_input_shape("images:1x3x224x224")
    ('images', (1, 3, 224, 224))
    >>> parse_input_shape("1,3,32,32")
    (None, (1, 3, 32, 32))
    """
    name, sep, dims_text = text.rpartition(":")
    if not sep:
        name, dims_text = "", text
    parts = [p.strip() for p in _DIM_SEPARATORS.split(dims_text.strip())] if dims_text.strip() else []
    if not parts or not all(p.isdigit() for p in parts) or any(int(p) <= 0 for p in parts):
        raise UsageError(
            f"--input-shape {text!r}: expected NAME:D1,D2,... with positive integer dims, "
            "e.g. --input-shape input:1,3,224,224"
        )
    return (name or None), tuple(int(p) for p in parts)


def parse_dim(text: str) -> tuple[str, int]:
    """Parse ``SYMBOL=VALUE``.

    >>> parse_dim("batch=8")
    ('batch', 8)
    """
    symbol, sep, value = text.partition("=")
    if not sep or not symbol.strip() or not value.strip().isdigit() or int(value) <= 0:
        raise UsageError(f"--dim {text!r}: expected SYMBOL=VALUE with a positive integer, e.g. --dim batch=1")
    return symbol.strip(), int(value)


# ---------------------------------------------------------------------------------------------
# Binding


def real_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (old exporters list weights as inputs too)."""
    initializers = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in initializers]


def _dims_of(value_info: onnx.ValueInfoProto) -> list[onnx.TensorShapeProto.Dimension] | None:
    tensor_type = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
        return None
    return list(tensor_type.shape.dim)


def bind_inputs(
    model: onnx.ModelProto,
    input_shapes: Sequence[tuple[str | None, tuple[int, ...]]] = (),
    dims: dict[str, int] | None = None,
) -> None:
    """Write user-given input shapes and named-dim values into ``model`` (in place)."""
    graph = model.graph
    inputs = {i.name: i for i in real_inputs(graph)}
    for name, shape in input_shapes:
        if name is None:
            if len(inputs) != 1:
                raise UsageError(
                    "--input-shape without a name needs a model with one input; this one has "
                    f"{', '.join(inputs) or 'none'}: use NAME:D1,D2,..."
                )
            name = next(iter(inputs))
        if name not in inputs:
            raise UsageError(f"--input-shape: the model has no input {name!r}; {_suggest(name, inputs)}")
        tensor_type = inputs[name].type.tensor_type
        old = _dims_of(inputs[name])
        if old is not None and len(old) != len(shape):
            raise UsageError(
                f"--input-shape {name}: the model's input has rank {len(old)} "
                f"({_dims_text(old)}) but {len(shape)} dims were given"
            )
        tensor_type.shape.Clear()
        for value in shape:
            tensor_type.shape.dim.add().dim_value = value
    if dims:
        symbols = {d.dim_param for i in inputs.values() for d in (_dims_of(i) or []) if d.dim_param}
        for symbol in dims:
            if symbol not in symbols:
                known = ", ".join(sorted(symbols)) or "none"
                raise UsageError(f"--dim {symbol}: the model's inputs have no dim named {symbol!r} (named dims: {known})")
        for value_info in (*graph.input, *graph.output, *graph.value_info):
            for dim in _dims_of(value_info) or []:
                if dim.dim_param in dims:
                    dim.dim_value = dims[dim.dim_param]


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


def infer_shapes(model: onnx.ModelProto, order: Sequence[onnx.NodeProto]) -> ShapeResult:
    """Infer every tensor's type and shape in ``model`` (inputs already bound).

    ``order`` is the nodes in a topological order (the graph stage computes it).
    """
    notes: list[str] = []
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:  # e.g. fused contrib ops the onnx package has no schema for
        notes.append(f"ONNX shape inference failed ({_one_line(exc)}); used the model's stored shapes")
        inferred = model
    graph = inferred.graph
    tensors: dict[str, TensorInfo] = {}
    for value_info in (*graph.value_info, *graph.output, *graph.input):
        info = _info_from_value_info(value_info)
        if info.shape is not None or value_info.name not in tensors:
            tensors[info.name] = info
    values: dict[str, np.ndarray] = {}
    for tensor in model.graph.initializer:
        tensors[tensor.name] = TensorInfo(tensor.name, tensor.data_type, tuple(tensor.dims))
        size = int(np.prod(tensor.dims)) if tensor.dims else 1
        if size <= MAX_INITIALIZER_VALUE_ELEMENTS and tensor.data_location != onnx.TensorProto.EXTERNAL:
            values[tensor.name] = numpy_helper.to_array(tensor)

    evaluator = _PartialEvaluator(model, tensors, values)
    for node in order:
        evaluator.visit(node)

    inputs = [tensors.get(i.name) or _info_from_value_info(i) for i in real_inputs(model.graph)]
    unresolved = [
        UnresolvedDim(info.name, axis, dim if isinstance(dim, str) else None)
        for info in inputs
        for axis, dim in enumerate(info.shape or ())
        if not isinstance(dim, int)
    ]
    unresolved += [UnresolvedDim(info.name, -1, None) for info in inputs if info.shape is None]
    return ShapeResult(tensors, values, inputs, unresolved, notes)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


class _PartialEvaluator:
    """Runs small integer shape computations and re-infers nodes ONNX left unknown."""

    def __init__(self, model: onnx.ModelProto, tensors: dict[str, TensorInfo], values: dict[str, np.ndarray]):
        self.tensors = tensors
        self.values = values
        self.opsets = {o.domain or "": o.version for o in model.opset_import}
        self.opset_imports = list(model.opset_import)
        self.ir_version = model.ir_version

    def visit(self, node: onnx.NodeProto) -> None:
        if node.domain not in ("", "ai.onnx") or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            return
        if node.op_type in EVALUABLE_OPS and self._evaluate(node):
            return
        if any(not self._info(o).is_known for o in node.output if o):
            self._reinfer(node)

    def _info(self, name: str) -> TensorInfo:
        return self.tensors.setdefault(name, TensorInfo(name))

    def _evaluate(self, node: onnx.NodeProto) -> bool:
        present = [name for name in node.input if name]
        if node.op_type == "Shape":
            return self._shape_value(node)
        if node.op_type == "Size":
            info = self._info(node.input[0])
            if info.is_known:
                self._store(node.output[0], np.array(info.numel, dtype=np.int64))
                return True
            return False
        if not all(name in self.values for name in present):
            return False
        if node.op_type == "Constant" and _constant_elements(node) > MAX_VALUE_ELEMENTS:
            return False  # a weight held in a Constant node: its shape comes from inference
        args = [self.values[name] if name else None for name in node.input]
        if _predicted_elements(node.op_type, args) > MAX_VALUE_ELEMENTS:
            return False
        try:
            op_class = onnx.reference.ops.load_op("", node.op_type, self.opsets.get("", None))
            kernel = op_class(node, _RUN_PARAMS | {"opsets": self.opsets})
            results = kernel.run(*args)
        except Exception:  # an odd node: fall back to shape inference for it
            return False
        if not isinstance(results, tuple):
            results = (results,)
        for name, result in zip(node.output, results):
            if name and isinstance(result, np.ndarray):
                self._store(name, result)
        return True

    def _shape_value(self, node: onnx.NodeProto) -> bool:
        info = self._info(node.input[0])
        if info.shape is None or not info.is_known:
            return False
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        rank = len(info.shape)
        start, end = attributes.get("start", 0), attributes.get("end", rank)
        start, end = (max(0, min(rank, i + rank if i < 0 else i)) for i in (start, end))
        self._store(node.output[0], np.array(info.shape[start:end], dtype=np.int64))
        return True

    def _store(self, name: str, value: np.ndarray) -> None:
        dtype = helper.np_dtype_to_tensor_dtype(value.dtype) if value.dtype != object else 0
        self.tensors[name] = TensorInfo(name, dtype or self._info(name).dtype, tuple(int(d) for d in value.shape))
        if value.size <= MAX_VALUE_ELEMENTS:
            self.values[name] = value

    def _reinfer(self, node: onnx.NodeProto) -> None:
        """Infer one node alone, feeding every input value the evaluator knows as a constant."""
        graph_inputs, initializers = [], []
        for name in dict.fromkeys(n for n in node.input if n):
            if name in self.values:
                initializers.append(numpy_helper.from_array(self.values[name], name))
                continue
            info = self._info(name)
            if info.shape is None or not info.dtype:
                return
            graph_inputs.append(helper.make_tensor_value_info(name, info.dtype, list(info.shape)))
        outputs = [onnx.ValueInfoProto(name=o) for o in node.output if o]
        single = helper.make_model(
            helper.make_graph([node], "single", graph_inputs, outputs, initializers),
            opset_imports=self.opset_imports,
            ir_version=self.ir_version,
        )
        try:
            inferred = onnx.shape_inference.infer_shapes(single, strict_mode=False, data_prop=True)
        except Exception:
            return
        for value_info in inferred.graph.output:
            info = _info_from_value_info(value_info)
            old = self._info(info.name)
            if info.shape is not None and (old.shape is None or (info.is_known and not old.is_known)):
                self.tensors[info.name] = TensorInfo(info.name, info.dtype or old.dtype, info.shape)


_RUN_PARAMS = {"log": lambda *args: None, "verbose": 0, "new_ops": None, "existing_functions": {}, "evaluator_cls": None}


def _constant_elements(node: onnx.NodeProto) -> int:
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.TENSOR:
            return int(np.prod(attribute.t.dims)) if attribute.t.dims else 1
        if attribute.type in (onnx.AttributeProto.INTS, onnx.AttributeProto.FLOATS, onnx.AttributeProto.STRINGS):
            return len(attribute.ints) + len(attribute.floats) + len(attribute.strings)
    return 1


def _predicted_elements(op_type: str, args: list[np.ndarray | None]) -> int:
    """Output size of ops whose output can dwarf their inputs, before running them."""
    try:
        if op_type == "Constant":
            return 0  # sized by the caller from the attribute, see _evaluate
        if op_type == "ConstantOfShape":
            return int(np.prod(args[0])) if args[0] is not None else 1
        if op_type == "Expand":
            return int(np.prod(np.broadcast_shapes(args[0].shape, tuple(int(d) for d in args[1]))))
        if op_type == "Tile":
            return int(args[0].size * np.prod(args[1]))
        if op_type == "Range":
            start, limit, delta = (float(a) for a in args)
            return max(0, int(np.ceil((limit - start) / delta))) if delta else MAX_VALUE_ELEMENTS + 1
    except Exception:
        return MAX_VALUE_ELEMENTS + 1
    return 0
