"""The model's inputs as the options give them: ``NAME:1,3,224,224`` shapes, ``SYMBOL=VALUE``
dims, ``NAME=V1,V2`` values and a batch size (``--input-shape``, ``--dim``, ``--value`` and
``--batch`` on the command line) parsed, checked against the model's inputs, and written into
the model (in place) before shape inference (shapes.py) runs. A bad one raises an
:class:`~onnxroof.core.errors.OptionError` that names the option by its key: each interface
words it (a flag, an argument of analyze())."""

from __future__ import annotations

import ast
import difflib
import operator
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper

from ..core.errors import ModelError, OptionError
from ..core.nodes import NodeFields, nested_graphs
from ..core.tensors import MAX_DIM, MAX_DIM_TEXT, UnresolvedDim, info_from_value_info

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
    read = [_whole_number(part) for part in _DIM_SEPARATORS.split(dims_text)] if dims_text.strip() else []
    dims = [d for d in read if d is not None]
    if not dims or len(dims) != len(read):
        raise OptionError(
            "input_shapes",
            "{opt.input_shapes} {text!r}: expected NAME:D1,D2,... with non-negative "
            "integer dims, e.g. {opt.input_shapes} input:1,3,224,224",
            text=text,
        )
    if (large := next((d for d in dims if d > MAX_DIM), None)) is not None:
        raise OptionError(
            "input_shapes",
            "{opt.input_shapes} {text!r}: {value} is over the limit, {limit}",
            text=text,
            value=large,
            limit=MAX_DIM_TEXT,
        )
    return (name or None), tuple(dims)


def parse_dim(text: str) -> tuple[str, int]:
    """Parse ``SYMBOL=VALUE``.

    >>> parse_dim("batch=8")
    ('batch', 8)
    """
    symbol, sep, value_text = text.partition("=")
    value = _whole_number(value_text)
    if not sep or not symbol.strip() or value is None:
        raise OptionError(
            "dims",
            "{opt.dims} {text!r}: expected SYMBOL=VALUE with a non-negative integer, e.g. {opt.dims} batch=1",
            text=text,
        )
    if value > MAX_DIM:
        raise OptionError(
            "dims",
            "{opt.dims} {text!r}: {value} is over the limit, {limit}",
            text=text,
            value=value,
            limit=MAX_DIM_TEXT,
        )
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
        raise OptionError(
            "values",
            "{opt.values} {text!r}: expected NAME=V1,V2,... with numbers, e.g. {opt.values} sr=16000",
            text=text,
        )
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
            raise _no_such_input("values", name, inputs)
        info = info_from_value_info(inputs[name])
        try:
            array = np.array(numbers, dtype=helper.tensor_dtype_to_np_dtype(info.dtype))
        except Exception:
            raise OptionError(
                "values", "{opt.values} {input}: input {input!r} is not a numeric tensor", input=name
            ) from None
        if info.shape is not None and info.is_known:
            if array.size != info.numel:
                raise OptionError(
                    "values",
                    "{opt.values} {input}: the input has shape {shape} ({wanted} values) but {given} were given",
                    input=name,
                    shape=info.shape_text(),
                    wanted=info.numel,
                    given=array.size,
                )
            array = array.reshape(info.shape)
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


# dim names that mean "unknown", not "the same value wherever this name appears" (Paddle2ONNX
# writes "?" for every free axis of an image: its height and width are not one dim)
PLACEHOLDER_DIM_NAMES = frozenset({"?", "-1"})


def fix_digit_dims(model: onnx.ModelProto, fields: Sequence[NodeFields] | None = None) -> int:
    """Write every ``dim_param`` that is a decimal integer (exporters write fixed dims as ``"64"``)
    as that fixed value, and drop the placeholder names (``"?"``) that stand for no value at all,
    in the graph's inputs, outputs and value_info and in every subgraph's (in place): it is no
    free symbol, so it is never reported unbound or suggested as a flag.
    Returns how many dims were rewritten. ``fields``: the main graph's NodeFields, when read already.

    >>> from onnx import TensorProto
    >>> model = helper.make_model(helper.make_graph([], "g", [helper.make_tensor_value_info(
    ...     "x", TensorProto.FLOAT, ["batch", "64"])], []))
    >>> fix_digit_dims(model), [(d.dim_param, d.dim_value) for d in model.graph.input[0].type.tensor_type.shape.dim]
    (1, [('batch', 0), ('', 64)])
    """
    fixed = 0
    for graph in (model.graph, *nested_graphs(model.graph, fields)):
        for value_info in (*graph.input, *graph.output, *graph.value_info):
            for dim in _dims_of(value_info) or ():
                text = dim.dim_param
                if text and text.isascii() and text.strip().isdigit():
                    if int(text) > MAX_DIM:
                        raise ModelError(
                            f"tensor {value_info.name!r} has the dim {text.strip()!r}, over the limit, "
                            f"{MAX_DIM_TEXT}; fix the export"
                        )
                    dim.dim_value = int(text)  # the oneof: clears dim_param
                    fixed += 1
                elif text.strip() in PLACEHOLDER_DIM_NAMES:
                    dim.ClearField("dim_param")  # no name: each such axis is its own unknown
                    fixed += 1
    return fixed


def name_unnamed_batch_axes(model: onnx.ModelProto) -> tuple[str | None, list[str]]:
    """Give every input's leading axis that has neither a value nor a name (skl2onnx writes its
    batch axis so) one shared name, ``batch`` unless the model already uses that name, so that it
    binds like any named batch dim (``--dim batch=N``, ``--batch N``, the default of 1). Returns
    the name and the inputs renamed (in place).

    >>> from onnx import TensorProto
    >>> model = helper.make_model(helper.make_graph([], "g", [helper.make_tensor_value_info(
    ...     "x", TensorProto.FLOAT, [None, 4])], []))
    >>> name_unnamed_batch_axes(model), model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    (('batch', ['x']), 'batch')
    """
    inputs = real_inputs(model.graph)
    unnamed = [
        i
        for i in inputs
        if (dims := _dims_of(i)) and len(dims) >= 2 and not dims[0].dim_param and not dims[0].HasField("dim_value")
    ]
    if not unnamed:
        return None, []
    used = {d.dim_param for i in inputs for d in _dims_of(i) or () if d.dim_param}
    name = next(candidate for candidate in ("batch", "batch_size", "N", "onnxroof_batch") if candidate not in used)
    for value_info in unnamed:
        # (type: ignore below) unnamed holds only inputs whose dims _dims_of found
        _dims_of(value_info)[0].dim_param = name  # type: ignore[index]
    return name, [i.name for i in unnamed]


def batch_symbols(model: onnx.ModelProto) -> list[str]:
    """The dim names that stand only for the leading axis of the model's inputs (of at least one
    of rank 2 or more: a lone vector's only axis is a length): batch dims, which a user can leave at 1 (a name
    also used at another axis is a sequence or an image size, which only the user can choose).

    >>> from onnx import TensorProto
    >>> model = helper.make_model(helper.make_graph([], "g", [
    ...     helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
    ...     helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "seq"])], []))
    >>> batch_symbols(model)
    ['batch']
    """
    leading: dict[str, bool] = {}  # symbol -> leads an input of rank 2 or more
    elsewhere: set[str] = set()
    for value_info in real_inputs(model.graph):
        dims = _dims_of(value_info) or []
        for axis, dim in enumerate(dims):
            if dim.dim_param and axis == 0:
                leading[dim.dim_param] = leading.get(dim.dim_param, False) or len(dims) >= 2
            elif dim.dim_param:
                elsewhere.add(dim.dim_param)
    return [symbol for symbol, ranked in leading.items() if ranked and symbol not in elsewhere]


def unbound_dims(model: onnx.ModelProto) -> list[UnresolvedDim]:
    """The input dims still without a value (after binding), with the flag that fixes each; a dim
    written as an expression is fixed by its names, each asked for once."""
    found = []
    asked: set[str] = set()
    for value_info in real_inputs(model.graph):
        if not value_info.type.HasField("tensor_type"):
            continue
        info = info_from_value_info(value_info)
        if info.shape is None:
            found.append(UnresolvedDim(info.name, -1, None))
            continue
        for axis, dim in enumerate(info.shape):
            if isinstance(dim, int):
                continue
            names = expression_names(dim) if isinstance(dim, str) else None
            if names is None:
                found.append(UnresolvedDim(info.name, axis, dim if isinstance(dim, str) else None, info.shape))
                continue
            found += [UnresolvedDim(info.name, axis, name, info.shape) for name in names if name not in asked]
            asked.update(names)
    return found


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def expression_names(text: str) -> list[str] | None:
    """The dim names a dim written as an expression (``+``, ``-``, ``*``, ``//``, parentheses and
    whole numbers; optimum writes ``past_sequence_length + sequence_length``) is made of, in order;
    None for a plain name or anything else.

    >>> expression_names("past_sequence_length + sequence_length"), expression_names("batch")
    (['past_sequence_length', 'sequence_length'], None)
    >>> expression_names("2 * (a + b) // 3"), expression_names("a ** b")
    (['a', 'b'], None)
    """
    tree = _expression(text)
    if tree is None or isinstance(tree, ast.Name):
        return None
    return list(dict.fromkeys(node.id for node in ast.walk(tree) if isinstance(node, ast.Name)))


def expression_value(text: str, values: dict[str, int]) -> int | None:
    """The value of a dim expression once its names are bound (None: not an expression, a name
    unbound, or not a whole positive number).

    >>> expression_value("past_sequence_length + sequence_length", {"past_sequence_length": 127, "sequence_length": 1})
    128
    """
    tree = _expression(text)

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return values.get(node.id)
        if isinstance(node, ast.BinOp):
            left, right = value(node.left), value(node.right)
            if left is None or right is None or (isinstance(node.op, ast.FloorDiv) and right == 0):
                return None
            return _OPERATORS[type(node.op)](left, right)
        return None

    result = value(tree) if tree is not None and not isinstance(tree, ast.Name) else None
    return result if result is not None and result >= 0 else None


def _substituted(text: str, values: dict[str, int]) -> str:
    """The expression with its bound names written as their values.

    >>> _substituted("past_sequence_length + sequence_length", {"sequence_length": 1})
    'past_sequence_length + 1'
    """
    tree = _expression(text)
    if tree is None:
        return text
    for node in ast.walk(tree):
        for field, child in ast.iter_fields(node):
            if isinstance(child, ast.Name) and child.id in values:
                setattr(node, field, ast.Constant(values[child.id]))
    if isinstance(tree, ast.Name) and tree.id in values:
        return str(values[tree.id])
    return ast.unparse(tree)


def _expression(text: str) -> ast.AST | None:
    """The parsed expression when it uses only names, whole numbers and + - * //."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    allowed = (ast.BinOp, ast.Name, ast.Constant, ast.Load, *_OPERATORS)
    if all(isinstance(node, allowed) for node in ast.walk(tree)) and all(
        type(node.value) is int for node in ast.walk(tree) if isinstance(node, ast.Constant)
    ):
        return tree
    return None


def batch_flags(
    model: onnx.ModelProto,
    batch: int,
    input_shapes: Sequence[tuple[str | None, tuple[int, ...]]],
    dims: dict[str, int],
    valued: Iterable[str] = (),
) -> tuple[list[tuple[str | None, tuple[int, ...]]], dict[str, int]]:
    """``--batch N`` as the flags it stands for: axis 0 of every input not shaped explicitly is N
    (a named batch dim is bound by name, a fixed one is overridden). An input whose value is
    given (``valued``: --value, a decoder phase's flag) or a bool of fixed shape [1] is a setting,
    not data, and keeps its shape (optimum's ``use_cache_branch``)."""
    shapes, named = list(input_shapes), dict(dims)
    for name, shape in input_shapes:  # both flags set this batch: never one silently over the other
        if len(shape) >= 2 and shape[0] != batch:
            raise OptionError(
                "batch",
                "{opt.batch} {batch} and {opt.input_shapes} {input} (batch {given}) disagree: "
                "drop {opt.batch}, or give the shape with batch {batch}",
                batch=batch,
                input=f"{name}:{','.join(map(str, shape))}" if name else ",".join(map(str, shape)),
                given=shape[0],
            )
    explicit = {name for name, _ in input_shapes} | set(valued)
    for value_info in real_inputs(model.graph):
        old = _dims_of(value_info)
        if value_info.name in explicit or not old or _is_flag(value_info, old):
            continue
        if old[0].dim_param:
            named.setdefault(old[0].dim_param, batch)
        elif all(d.HasField("dim_value") for d in old):
            shapes.append((value_info.name, (batch, *(d.dim_value for d in old[1:]))))
        else:
            raise OptionError(
                "batch",
                "{opt.batch}: input {input!r} has a fixed batch dim and other unknown dims; "
                "give its whole shape with {opt.input_shapes} {input}:...",
                input=value_info.name,
            )
    return shapes, named


def _is_flag(value_info: onnx.ValueInfoProto, dims) -> bool:
    """A bool input of fixed shape [1]: a switch (an If's condition), never a batch of data."""
    return (
        value_info.type.tensor_type.elem_type == onnx.TensorProto.BOOL
        and len(dims) == 1
        and dims[0].HasField("dim_value")
        and dims[0].dim_value == 1
    )


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
    given = _given_shapes(inputs, input_shapes)
    _check_dim_names(inputs, dims or {})
    values = _symbol_values(inputs, given, dict(dims or {}))
    for name, shape in given.items():
        tensor_shape = inputs[name].type.tensor_type.shape
        tensor_shape.Clear()
        for value in shape:
            tensor_shape.dim.add().dim_value = value
    if values:  # subgraphs too: an If branch's value_info names the outer dims
        for scope in (graph, *nested_graphs(graph)):
            for value_info in (*scope.input, *scope.output, *scope.value_info):
                for dim in _dims_of(value_info) or []:
                    _bind_dim(dim, values, value_info.name)


def _given_shapes(
    inputs: dict[str, onnx.ValueInfoProto], input_shapes: Sequence[tuple[str | None, tuple[int, ...]]]
) -> dict[str, tuple[int, ...]]:
    """input name -> the shape ``--input-shape`` gives it, checked against the model's rank."""
    given: dict[str, tuple[int, ...]] = {}
    for name, shape in input_shapes:
        name = _input_name(name, inputs)
        old = _dims_of(inputs[name])
        if old is not None and len(old) != len(shape):
            raise OptionError(
                "input_shapes",
                "{opt.input_shapes} {input}: the model's input has rank {rank} ({dims}) but {given} dims were given",
                input=name,
                rank=len(old),
                dims=_dims_text(old),
                given=len(shape),
            )
        given[name] = shape
    return given


def _check_dim_names(inputs: dict[str, onnx.ValueInfoProto], dims: dict[str, int]) -> None:
    """Every ``--dim`` names a symbol of the inputs' dims (a dim written as an expression stands
    for its names, never for itself)."""
    written = {d.dim_param for i in inputs.values() for d in (_dims_of(i) or []) if d.dim_param}
    symbols = {name for text in written for name in (expression_names(text) or [text])}
    for symbol in dims:
        if symbol not in symbols and (names := expression_names(symbol)):
            raise OptionError(
                "dims",
                "{opt.dims} {dim}: a dim written as an expression takes its value from its "
                "names; give each of them ({names}) with {opt.dims} NAME=N instead",
                dim=symbol,
                names=", ".join(names),
            )
        if symbol not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise OptionError(
                "dims",
                "{opt.dims} {dim}: the model's inputs have no dim named {dim!r} (named dims: {known})",
                dim=symbol,
                known=known,
            )


def _bind_dim(dim: onnx.TensorShapeProto.Dimension, values: dict[str, int], tensor: str) -> None:
    """A named dim of ``tensor`` given its value: its own, or an expression's of bound names (an
    expression with names left unbound keeps those)."""
    if dim.dim_param in values:
        dim.dim_value = values[dim.dim_param]
    elif dim.dim_param and (found := expression_value(dim.dim_param, values)) is not None:
        if found > MAX_DIM:
            raise OptionError(
                "dims",
                "{opt.dims}: the dim {dim!r} of {input!r} comes to {value}, over the limit, {limit}",
                dim=dim.dim_param,
                input=tensor,
                value=found,
                limit=MAX_DIM_TEXT,
            )
        dim.dim_value = found  # its names are bound: it is their value
    elif dim.dim_param and expression_names(dim.dim_param):
        dim.dim_param = _substituted(dim.dim_param, values)  # what is left to give


def _input_name(name: str | None, inputs: dict[str, onnx.ValueInfoProto]) -> str:
    if name is None:
        if len(inputs) != 1:
            raise OptionError(
                "input_shapes",
                "{opt.input_shapes} without a name needs a model with one input; "
                "this one has {inputs}: use NAME:D1,D2,...",
                inputs=", ".join(inputs) or "none",
            )
        return next(iter(inputs))
    if name not in inputs:
        raise _no_such_input("input_shapes", name, inputs)
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
                raise OptionError(
                    "dims",
                    "{opt.dims} {dim}={value} contradicts {opt.input_shapes} "
                    "{input}:{shape}, whose axis {axis} is {dim}",
                    dim=symbol,
                    value=explicit[symbol],
                    input=name,
                    shape=",".join(map(str, shape)),
                    axis=axis,
                )
            if symbol:
                implied.setdefault(symbol, set()).add(value)
    unambiguous = {symbol: next(iter(found)) for symbol, found in implied.items() if len(found) == 1}
    return unambiguous | explicit


def _no_such_input(option: str, name: str, inputs: Iterable[str]) -> OptionError:
    """The error for a name ``option`` gives that is none of the model's ``inputs``."""
    return OptionError(
        option,
        f"{{opt.{option}}}: the model has no input {{input!r}}; {{suggestion}}",
        input=name,
        suggestion=_suggest(name, inputs),
    )


def _suggest(name: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    close = difflib.get_close_matches(name, choices, n=3)
    if close:
        return f"did you mean {', '.join(repr(c) for c in close)}?"
    return f"its inputs are {', '.join(repr(c) for c in choices)}"


def _dims_text(dims: list[onnx.TensorShapeProto.Dimension]) -> str:
    return ",".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims)


def shape_flags(input_shapes) -> list[tuple[str | None, tuple[int, ...]]]:
    """``input_shapes`` as analyze() takes them (a mapping, or ``NAME:1,3,224,224`` strings), as pairs."""
    if not input_shapes:
        return []
    if isinstance(input_shapes, Mapping):
        shapes = [(name, tuple(int(d) for d in shape)) for name, shape in input_shapes.items()]
        negative = next((f"{name}: {list(shape)}" for name, shape in shapes if any(d < 0 for d in shape)), None)
        if negative:
            raise OptionError(
                "input_shapes", "{opt.input_shapes} {shape}: dims must be integers of 0 or more", shape=negative
            )
        return shapes
    return [parse_input_shape(text) for text in input_shapes]


def value_flags(values) -> dict[str, tuple[float, ...]]:
    """``values`` as analyze() takes them (a mapping, or ``NAME=V1,V2`` strings), as a mapping."""
    if not values:
        return {}
    if isinstance(values, Mapping):
        return {str(k): tuple(v) if isinstance(v, (list, tuple)) else (v,) for k, v in values.items()}
    return dict(parse_value(text) for text in values)


def dim_values(dims) -> dict[str, int]:
    """``dims`` as analyze() takes them (a mapping, or ``SYMBOL=VALUE`` strings), as a mapping."""
    if not dims:
        return {}
    if isinstance(dims, Mapping):
        values = {str(k): int(v) for k, v in dims.items()}
        negative = next((f"{k}={v}" for k, v in values.items() if v < 0), None)
        if negative:
            raise OptionError("dims", "{opt.dims} {dim}: a dim must be an integer of 0 or more", dim=negative)
        return values
    return dict(parse_dim(text) for text in dims)
