"""Fuzzing: onnxroof either analyses a model (exit 0) or refuses it in one line (exit 2), never a
traceback or an internal error (exit 3), whatever the model holds.

A seeded generator builds small random graphs from a menu of ops (elementwise, MatMul, Gemm,
Conv, pools, norms, reshapes, shape arithmetic, Gather, Slice, Concat, Split, If, a custom op)
with random shapes and attributes, tracking every tensor's shape itself. Valid models must be
analysed completely with exactly the shapes the generator computed; corrupted ones (flipped,
truncated or spliced bytes; dropped inputs, dangling or duplicated names, shuffled nodes,
wrong attributes, dims, types and opsets) must exit 0 or 2. Whenever onnxroof answers, its
totals are the sums of its node records and an uncounted node counts nothing.

Cases run in-process through ``onnxroof.cli.app.main`` (a few through a subprocess); each chunk is
seeded, so a failure names the seed that reproduces it (``_case(seed)``).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import onnxroof
from onnxroof.cli import app as cli
from onnxroof.core.errors import OnnxroofError

F32, F16, I64, BOOL = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL
NP_TYPES = {F32: np.float32, F16: np.float16}
CHUNKS = 24  # x CASES_PER_CHUNK cases in-process
CASES_PER_CHUNK = 100


# ---------------------------------------------------------------------------------------------
# The generator: a random valid graph whose shapes it knows


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: int


@dataclass
class Graph:
    """A model under construction: nodes, initializers and the shape of every tensor."""

    rng: random.Random
    opset: int
    dtype: int
    nodes: list = field(default_factory=list)
    initializers: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # Tensor
    pool: list = field(default_factory=list)  # activations ops can read
    shapes: dict = field(default_factory=dict)  # tensor name -> shape, for every tensor made
    domains: set = field(default_factory=set)
    counter: int = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, array: np.ndarray, prefix: str = "w") -> str:
        name = self.name(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        self.shapes[name] = tuple(np.asarray(array).shape)
        return name

    def weight(self, *shape: int) -> str:
        return self.const(np.zeros(shape, NP_TYPES[self.dtype]))

    def ints(self, values) -> str:
        return self.const(np.array(values, np.int64), "s")

    def node(
        self,
        op: str,
        inputs: list[str],
        shapes: list[tuple[int, ...]],
        dtype: int | None = None,
        domain: str = "",
        **attributes,
    ) -> list[Tensor]:
        outputs = [Tensor(self.name(op.lower()), tuple(int(d) for d in s), dtype or self.dtype) for s in shapes]
        self.nodes.append(
            helper.make_node(op, inputs, [o.name for o in outputs], name=self.name(op), domain=domain, **attributes)
        )
        for output in outputs:
            self.shapes[output.name] = output.shape
        self.pool.extend(o for o in outputs if o.dtype == self.dtype)
        return outputs

    def pick(self, rank: tuple[int, ...] = (0, 1, 2, 3, 4, 5), min_elements: int = 1) -> Tensor | None:
        candidates = [t for t in self.pool if len(t.shape) in rank and math.prod(t.shape) >= min_elements]
        return self.rng.choice(candidates) if candidates else None


def _unary(g: Graph) -> bool:
    x = g.pick()
    op = g.rng.choice(
        ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Identity", "Erf", "Sqrt", "LeakyRelu", "Softmax"]
    )
    attributes = {}
    if op == "LeakyRelu":
        attributes["alpha"] = g.rng.random()
    if op == "Softmax":
        if not x.shape:
            return False
        attributes["axis"] = g.rng.randrange(-len(x.shape), len(x.shape))
    g.node(op, [x.name], [x.shape], **attributes)
    return True


def _binary(g: Graph) -> bool:
    x = g.pick()
    op = g.rng.choice(["Add", "Mul", "Sub", "Div", "Max", "Min"])
    same = [t for t in g.pool if t.shape == x.shape and t is not x]
    choice = g.rng.random()
    if same and choice < 0.4:
        other = g.rng.choice(same).name
    elif choice < 0.7 and x.shape:
        keep = g.rng.randrange(len(x.shape) + 1)
        suffix = [d if g.rng.random() < 0.6 else 1 for d in x.shape[len(x.shape) - keep :]]
        other = g.weight(*suffix)
    else:
        other = g.weight()
    pair = [x.name, other] if g.rng.random() < 0.5 else [other, x.name]
    if op in ("Max", "Min") and g.rng.random() < 0.3:
        pair.append(x.name)  # variadic
    g.node(op, pair, [x.shape])
    return True


def _matmul(g: Graph) -> bool:
    x = g.pick(rank=(1, 2, 3, 4))
    if x is None:
        return False
    k, n = x.shape[-1], g.rng.randint(1, 12)
    if g.rng.random() < 0.3:
        out = x.shape[:-1]
        weight = g.weight(k)  # matrix x vector
    else:
        out = (*x.shape[:-1], n)
        weight = g.weight(k, n)
    g.node("MatMul", [x.name, weight], [out])
    return True


def _gemm(g: Graph) -> bool:
    x = g.pick(rank=(2,))
    if x is None:
        return False
    trans_a, trans_b = g.rng.random() < 0.3, g.rng.random() < 0.5
    m, k = (x.shape[1], x.shape[0]) if trans_a else x.shape
    n = g.rng.randint(1, 12)
    inputs = [x.name, g.weight(n, k) if trans_b else g.weight(k, n)]
    if g.rng.random() < 0.6:
        inputs.append(g.weight(n) if g.rng.random() < 0.7 else g.weight())
    g.node("Gemm", inputs, [(m, n)], transA=int(trans_a), transB=int(trans_b), alpha=g.rng.random() + 0.5)
    return True


def _window(g: Graph, size: int, allow_dilation: bool) -> tuple[int, int, int, int, int, int] | None:
    """(kernel, stride, pad_begin, pad_end, dilation, out) for one spatial axis, or None."""
    for _ in range(4):
        kernel = g.rng.randint(1, min(size + 2, 5))
        stride = g.rng.randint(1, 3)
        dilation = g.rng.randint(1, 2) if allow_dilation else 1
        begin, end = g.rng.randint(0, kernel - 1), g.rng.randint(0, kernel - 1)
        span = dilation * (kernel - 1) + 1
        out = (size + begin + end - span) // stride + 1
        if out >= 1:
            return kernel, stride, begin, end, dilation, out
    return None


def _conv(g: Graph) -> bool:
    x = g.pick(rank=(3, 4))
    if x is None:
        return False
    batch, channels, *spatial = x.shape
    divisors = [d for d in range(1, channels + 1) if channels % d == 0]
    group = g.rng.choice(divisors) if g.rng.random() < 0.4 else 1
    out_channels = group * g.rng.randint(1, 4)
    windows = [_window(g, s, True) for s in spatial]
    if None in windows:
        return False
    kernels = [w[0] for w in windows]
    inputs = [x.name, g.weight(out_channels, channels // group, *kernels)]
    if g.rng.random() < 0.5:
        inputs.append(g.weight(out_channels))
    g.node(
        "Conv",
        inputs,
        [(batch, out_channels, *(w[5] for w in windows))],
        group=group,
        kernel_shape=kernels,
        strides=[w[1] for w in windows],
        pads=[w[2] for w in windows] + [w[3] for w in windows],
        dilations=[w[4] for w in windows],
    )
    return True


def _pool(g: Graph) -> bool:
    x = g.pick(rank=(3, 4))
    if x is None:
        return False
    if g.rng.random() < 0.3:
        op = g.rng.choice(["GlobalAveragePool", "GlobalMaxPool"])
        g.node(op, [x.name], [(*x.shape[:2], *(1 for _ in x.shape[2:]))])
        return True
    op = g.rng.choice(["MaxPool", "AveragePool"])
    windows = [_window(g, s, False) for s in x.shape[2:]]
    if None in windows:
        return False
    g.node(
        op,
        [x.name],
        [(*x.shape[:2], *(w[5] for w in windows))],
        kernel_shape=[w[0] for w in windows],
        strides=[w[1] for w in windows],
        pads=[w[2] for w in windows] + [w[3] for w in windows],
    )
    return True


def _norm(g: Graph) -> bool:
    x = g.pick(rank=(2, 3, 4))
    if x is None:
        return False
    if g.rng.random() < 0.5 or g.opset < 17:
        c = x.shape[1]
        g.node("BatchNormalization", [x.name, *(g.weight(c) for _ in range(4))], [x.shape], epsilon=1e-5)
    else:
        axis = g.rng.randrange(-len(x.shape), len(x.shape))
        normalized = x.shape[axis:]
        g.node("LayerNormalization", [x.name, g.weight(*normalized), g.weight(*normalized)], [x.shape], axis=axis)
    return True


def _factor(g: Graph, total: int) -> list[int]:
    dims, rest = [], total
    for _ in range(g.rng.randint(0, 3)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = g.rng.choice(divisors)
        dims.append(d)
        rest //= d
    dims.append(rest)
    g.rng.shuffle(dims)
    return dims


def _reshape(g: Graph) -> bool:
    x = g.pick()
    op = g.rng.choice(["Reshape", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"])
    if op == "Reshape":
        dims = _factor(g, math.prod(x.shape))
        written = list(dims)
        if g.rng.random() < 0.4:
            written[g.rng.randrange(len(written))] = -1
        elif g.rng.random() < 0.3 and len(dims) <= len(x.shape):
            axis = g.rng.randrange(len(dims))
            if dims[axis] == x.shape[axis]:
                written[axis] = 0  # copy the input's dim
        g.node("Reshape", [x.name, g.ints(written)], [tuple(dims)])
    elif op == "Flatten":
        axis = g.rng.randint(-len(x.shape), len(x.shape)) if x.shape else 0
        split = axis + len(x.shape) if axis < 0 else axis
        g.node("Flatten", [x.name], [(math.prod(x.shape[:split]), math.prod(x.shape[split:]))], axis=axis)
    elif op == "Transpose":
        if not x.shape:
            return False
        perm = list(range(len(x.shape)))
        g.rng.shuffle(perm)
        g.node("Transpose", [x.name], [tuple(x.shape[p] for p in perm)], perm=perm)
    elif op == "Squeeze":
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        if not ones:
            return False
        axes = sorted(g.rng.sample(ones, g.rng.randint(1, len(ones))))
        g.node("Squeeze", [x.name, g.ints(axes)], [tuple(d for i, d in enumerate(x.shape) if i not in axes)])
    else:
        if len(x.shape) >= 5:
            return False
        axis = g.rng.randint(0, len(x.shape))
        g.node("Unsqueeze", [x.name, g.ints([axis])], [(*x.shape[:axis], 1, *x.shape[axis:])])
    return True


def _shape_arithmetic(g: Graph) -> bool:
    """Reshape(y, Shape(x)) and Expand/ConstantOfShape from computed shapes: the partial evaluator's job."""
    x = g.pick(rank=(1, 2, 3, 4))
    if x is None:
        return False
    (shape,) = g.node("Shape", [x.name], [(len(x.shape),)], dtype=I64)
    if g.rng.random() < 0.5:
        (flat,) = g.node("Flatten", [x.name], [(1, math.prod(x.shape))], axis=0)
        g.node("Reshape", [flat.name, shape.name], [x.shape])
    elif g.rng.random() < 0.5:
        (filled,) = g.node(
            "ConstantOfShape", [shape.name], [x.shape], value=numpy_helper.from_array(np.zeros(1, NP_TYPES[g.dtype]))
        )
        g.node("Add", [filled.name, x.name], [x.shape])
    else:
        one = g.weight(*(1 for _ in x.shape))
        g.node("Expand", [one, shape.name], [x.shape])
    return True


def _concat_split(g: Graph) -> bool:
    x = g.pick(rank=(1, 2, 3, 4))
    if x is None:
        return False
    axis = g.rng.randrange(len(x.shape))
    if g.rng.random() < 0.5:
        others = [
            t
            for t in g.pool
            if len(t.shape) == len(x.shape)
            and all(a == b for i, (a, b) in enumerate(zip(t.shape, x.shape)) if i != axis)
        ]
        chosen = [x] + g.rng.sample(others, min(len(others), g.rng.randint(1, 2)))
        out = list(x.shape)
        out[axis] = sum(t.shape[axis] for t in chosen)
        g.node("Concat", [t.name for t in chosen], [tuple(out)], axis=axis - len(x.shape) * g.rng.randint(0, 1))
        return True
    size = x.shape[axis]
    if size < 2:
        return False
    first = g.rng.randint(1, size - 1)
    shapes = [
        tuple(first if i == axis else d for i, d in enumerate(x.shape)),
        tuple(size - first if i == axis else d for i, d in enumerate(x.shape)),
    ]
    g.node("Split", [x.name, g.ints([first, size - first])], shapes, axis=axis)
    return True


def _slice_gather(g: Graph) -> bool:
    x = g.pick(rank=(1, 2, 3, 4))
    if x is None:
        return False
    axis = g.rng.randrange(len(x.shape))
    size = x.shape[axis]
    if g.rng.random() < 0.5:
        start = g.rng.randint(0, size - 1)
        end = g.rng.randint(start + 1, size + 3)  # past the end is clamped
        step = g.rng.randint(1, 2)
        length = len(range(start, min(end, size), step))
        out = tuple(length if i == axis else d for i, d in enumerate(x.shape))
        g.node("Slice", [x.name, g.ints([start]), g.ints([end]), g.ints([axis]), g.ints([step])], [out])
    else:
        indices = np.array([g.rng.randrange(-size, size) for _ in range(g.rng.randint(1, 3))], np.int64)
        if g.rng.random() < 0.3:
            indices = indices[:1].reshape(())
        out = (*x.shape[:axis], *indices.shape, *x.shape[axis + 1 :])
        g.node("Gather", [x.name, g.const(indices, "i")], [out], axis=axis)
    return True


def _reduce(g: Graph) -> bool:
    x = g.pick(rank=(1, 2, 3, 4))
    if x is None:
        return False
    axes = sorted(g.rng.sample(range(len(x.shape)), g.rng.randint(1, len(x.shape))))
    keep = g.rng.random() < 0.5
    out = (
        tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        if keep
        else tuple(d for i, d in enumerate(x.shape) if i not in axes)
    )
    if g.rng.random() < 0.5:
        g.node("ReduceSum", [x.name, g.ints(axes)], [out], keepdims=int(keep))
    elif g.opset >= 18:
        g.node("ReduceMean", [x.name, g.ints(axes)], [out], keepdims=int(keep))
    else:
        g.node("ReduceMean", [x.name], [out], axes=axes, keepdims=int(keep))
    return True


def _pad_cast(g: Graph) -> bool:
    x = g.pick(rank=(1, 2, 3, 4))
    if x is None:
        return False
    if g.rng.random() < 0.5:
        pads = [g.rng.randint(0, 2) for _ in range(2 * len(x.shape))]
        out = tuple(d + pads[i] + pads[i + len(x.shape)] for i, d in enumerate(x.shape))
        g.node(
            "Pad",
            [x.name, g.ints(pads)],
            [out],
            mode=g.rng.choice(["constant", "reflect", "edge"]) if min(x.shape) > 2 else "constant",
        )
    else:
        (as_int,) = g.node("Cast", [x.name], [x.shape], dtype=I64, to=I64)
        g.node("Cast", [as_int.name], [x.shape], to=g.dtype)
    return True


def _if(g: Graph) -> bool:
    """If over an input flag: then = Relu(x), else = x * w; branches read the outer x."""
    x = g.pick()
    flag = next((t for t in g.inputs if t.dtype == BOOL), None)
    if flag is None:
        flag = Tensor(g.name("flag"), (), BOOL)
        g.inputs.append(flag)
    then_out, else_out = g.name("then"), g.name("else")
    weight = g.weight(*x.shape)
    then = helper.make_graph(
        [helper.make_node("Relu", [x.name], [then_out])],
        g.name("then_branch"),
        [],
        [helper.make_tensor_value_info(then_out, g.dtype, list(x.shape))],
    )
    other = helper.make_graph(
        [helper.make_node("Mul", [x.name, weight], [else_out])],
        g.name("else_branch"),
        [],
        [helper.make_tensor_value_info(else_out, g.dtype, list(x.shape))],
    )
    g.node("If", [flag.name], [x.shape], then_branch=then, else_branch=other)
    return True


def _custom(g: Graph) -> bool:
    """An op in a domain onnxroof has no rule for: reported as unsupported, never fatal."""
    x = g.pick()
    g.domains.add("fuzz.custom")
    g.node("Mystery", [x.name], [x.shape], domain="fuzz.custom")
    return True


OPS = [
    (_unary, 5),
    (_binary, 5),
    (_matmul, 3),
    (_gemm, 2),
    (_conv, 3),
    (_pool, 2),
    (_norm, 2),
    (_reshape, 4),
    (_shape_arithmetic, 2),
    (_concat_split, 3),
    (_slice_gather, 3),
    (_reduce, 2),
    (_pad_cast, 2),
    (_if, 1),
    (_custom, 1),
]


@dataclass
class Case:
    model: onnx.ModelProto
    shapes: dict  # tensor name -> the shape the generator computed
    valid: bool = True  # False once corrupted
    symbolic: bool = False  # an input dim left symbolic (the analysis is then incomplete)
    custom: bool = False  # holds an unsupported op
    dims: dict = field(default_factory=dict)  # symbol -> value that binds it


def random_model(rng: random.Random) -> Case:
    opset = rng.choice([13, 17, 17, 18, 21])
    g = Graph(rng, opset, F16 if rng.random() < 0.15 else F32)
    for _ in range(rng.randint(1, 2)):
        rank = rng.choice([1, 2, 2, 3, 4, 4])
        tensor = Tensor(g.name("x"), tuple(rng.randint(1, 6) for _ in range(rank)), g.dtype)
        g.inputs.append(tensor)
        g.pool.append(tensor)
        g.shapes[tensor.name] = tensor.shape
    functions, weights = zip(*OPS)
    for _ in range(rng.randint(1, 7)):
        for _attempt in range(5):
            if rng.choices(functions, weights)[0](g):
                break
    produced = [o for n in g.nodes for o in n.output]
    last = produced[-1:] if produced else [g.inputs[0].name]
    extra = [rng.choice(produced)] if produced and rng.random() < 0.3 else []
    outputs = list(dict.fromkeys(last + extra))
    case = Case(onnx.ModelProto(), g.shapes, custom=bool(g.domains))
    graph_inputs = []
    for tensor in g.inputs:
        shape: list = list(tensor.shape)
        if tensor.shape and rng.random() < 0.15:
            symbol = rng.choice(["batch", "n", "seq"])
            if symbol in case.dims and case.dims[symbol] != shape[0]:
                symbol += str(len(case.dims))
            case.dims[symbol] = shape[0]
            shape[0] = symbol
            case.symbolic = True
        graph_inputs.append(helper.make_tensor_value_info(tensor.name, tensor.dtype, shape))
    declared = [
        helper.make_tensor_value_info(
            o, _dtype_of(g, o), list(g.shapes[o]) if rng.random() < 0.7 else [None] * len(g.shapes[o])
        )
        for o in outputs
    ]
    graph = helper.make_graph(g.nodes, g.name("fuzz"), graph_inputs, declared, g.initializers)
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in sorted(g.domains)]
    case.model = helper.make_model(graph, opset_imports=opsets, ir_version=8 if opset < 21 else 10)
    return case


def _dtype_of(g: Graph, name: str) -> int:
    for node in g.nodes:
        if name in node.output:
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            return to if to is not None else (I64 if node.op_type == "Shape" else g.dtype)
    return g.dtype


# ---------------------------------------------------------------------------------------------
# Corruptions


def _flip_bytes(rng, data: bytes) -> bytes:
    buffer = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        buffer[rng.randrange(len(buffer))] = rng.randrange(256)
    return bytes(buffer)


def _truncate(rng, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def _splice(rng, data: bytes) -> bytes:
    at = rng.randrange(len(data))
    return data[:at] + rng.randbytes(rng.randint(1, 16)) + data[at:]


BYTE_CORRUPTIONS = [_flip_bytes, _truncate, _splice]


def _drop_input(rng, model):
    if model.graph.input:
        del model.graph.input[rng.randrange(len(model.graph.input))]


def _rename_input(rng, model):
    node = rng.choice(model.graph.node)
    if node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(["ghost", "", node.output[0], "x1"])


def _duplicate_output(rng, model):
    if len(model.graph.node) >= 2:
        a, b = rng.sample(list(model.graph.node), 2)
        b.output[0] = a.output[0]


def _shuffle_nodes(rng, model):
    nodes = list(model.graph.node)
    rng.shuffle(nodes)
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def _drop_initializer(rng, model):
    if model.graph.initializer:
        del model.graph.initializer[rng.randrange(len(model.graph.initializer))]


def _bad_attribute(rng, model):
    node = rng.choice(model.graph.node)
    if node.attribute:
        attribute = rng.choice(node.attribute)
        if attribute.type == onnx.AttributeProto.INT:
            attribute.i = rng.choice([-7, 0, 5, 99, 2**40])
        elif attribute.type == onnx.AttributeProto.INTS:
            attribute.ints[:] = [rng.randint(-3, 9) for _ in range(rng.randint(0, 6))]
        elif attribute.type == onnx.AttributeProto.FLOAT:
            attribute.f = rng.choice([float("nan"), float("inf"), -1.0])
        else:
            node.attribute.remove(attribute)
    else:
        node.attribute.append(helper.make_attribute(rng.choice(["axis", "perm", "bogus"]), rng.randint(-3, 3)))


def _bad_dims(rng, model):
    values = [*model.graph.input, *model.graph.output]
    value = rng.choice(values)
    dims = value.type.tensor_type.shape.dim
    if dims:
        dim = rng.choice(dims)
        choice = rng.random()
        if choice < 0.4:
            dim.dim_value = rng.choice([0, 1, 7, 10**12])
        elif choice < 0.7:
            dim.dim_param = rng.choice(["", "?", "n", "<b>"])
        else:
            dim.dim_value = -rng.randint(1, 5)
    else:
        value.type.tensor_type.shape.dim.add().dim_value = rng.randint(1, 4)


def _bad_initializer_dims(rng, model):
    if model.graph.initializer:
        tensor = rng.choice(model.graph.initializer)
        if tensor.dims:
            tensor.dims[rng.randrange(len(tensor.dims))] += rng.choice([-1, 1, 3])
        else:
            tensor.dims.append(2)


def _bad_type(rng, model):
    value = rng.choice([*model.graph.input, *model.graph.output])
    value.type.tensor_type.elem_type = rng.choice([0, 7, 9, 99, F16, TensorProto.STRING])


def _bad_opset(rng, model):
    choice = rng.random()
    if choice < 0.5:
        model.opset_import[0].version = rng.choice([1, 6, 9, 11, 99, 0, -1])
    elif choice < 0.7:
        del model.opset_import[:]
    else:
        domain = rng.choice(["ai.onnx.ml", "com.microsoft", "ai.onnx"])
        model.opset_import.add(domain=domain, version=rng.choice([1, 3, 50]))


def _unknown_op(rng, model):
    node = rng.choice(model.graph.node)
    node.op_type = rng.choice(["NoSuchOp", "Conv", "MatMul", "If", "Loop", "Scan", ""])


def _external_data(rng, model):
    if model.graph.initializer:
        tensor = rng.choice(model.graph.initializer)
        tensor.data_location = TensorProto.EXTERNAL
        tensor.ClearField("raw_data")
        for key, value in (("location", rng.choice(["absent.bin", "", "../up.bin", "/abs.bin"])), ("length", "12")):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value


PROTO_CORRUPTIONS = [
    _drop_input,
    _rename_input,
    _duplicate_output,
    _shuffle_nodes,
    _drop_initializer,
    _bad_attribute,
    _bad_dims,
    _bad_initializer_dims,
    _bad_type,
    _bad_opset,
    _unknown_op,
    _external_data,
]


def _case(seed: int) -> tuple[Case, bytes, list[str]]:
    """Case number ``seed``: the model (maybe corrupted), its bytes and the extra CLI flags."""
    rng = random.Random(seed)
    case = random_model(rng)
    if rng.random() < 0.4 and case.model.graph.node:
        case.valid = False
        for corruption in rng.sample(PROTO_CORRUPTIONS, rng.randint(1, 2)):
            corruption(rng, case.model)
    data = case.model.SerializeToString()
    if rng.random() < 0.15:
        case.valid = False
        data = rng.choice(BYTE_CORRUPTIONS)(rng, data)
    flags = []
    if case.dims and rng.random() < 0.7:
        flags += [f"--dim={symbol}={value}" for symbol, value in case.dims.items()]
        case.symbolic = False
    if rng.random() < 0.1:
        case.valid = False  # a random --input-shape may contradict the model
        first = case.model.graph.input[0].name if case.model.graph.input else "x"
        dims = ",".join(str(rng.randint(1, 5)) for _ in range(rng.randint(1, 4)))
        flags += ["--input-shape", f"{rng.choice([first, 'nosuch'])}:{dims}"]
    for flag, chance in (
        (["--target", "myriad-x"], 0.15),
        (["--dtype", "int8"], 0.1),
        (["--in-place"], 0.1),
        (["--batch", "3"], 0.05),
        (["--strict"], 0.1),
    ):
        if rng.random() < chance:
            flags += flag
            if flag[0] == "--batch":
                case.valid = False  # the generator's shapes no longer hold
    return case, data, flags


# ---------------------------------------------------------------------------------------------
# Running one case


@pytest.fixture(autouse=True)
def _one_parser(monkeypatch):
    """Build the CLI's argument parser once: it is stateless, and building it dominates the
    time of one small case."""
    monkeypatch.setattr(cli, "build_parser", functools.lru_cache(maxsize=None)(cli.build_parser))


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def check_answer(code: int, out: str, err: str, label: str) -> dict | None:
    """Exit 0 or 2, no traceback, one error line on 2; the JSON document (on 0, when JSON)."""
    assert code in (0, 2), f"{label}: exit {code}: {err}"
    assert "Traceback" not in err and "internal error" not in err, f"{label}: {err}"
    if code == 2:
        lines = err.splitlines()
        assert lines and lines[-1].startswith("onnxroof: error: "), f"{label}: {err!r}"
        assert out == "", f"{label}: output on failure"
        return None
    if not out.startswith("{"):
        return None
    document = json.loads(out)
    check_totals(document, label)
    return document


def check_totals(document: dict, label: str) -> None:
    """Totals are the sums of the node records; uncounted nodes count nothing."""
    nodes, totals = document["nodes"], document["totals"]
    assert totals["macs"] == sum(n["macs"] for n in nodes), label
    assert totals["mac_flops"] == 2 * totals["macs"] == sum(n["mac_flops"] for n in nodes), label
    assert totals["flops"] == sum(n["flops"] for n in nodes), label
    assert totals["nodes"] == len(nodes) and totals["counted_nodes"] == sum(n["counted"] for n in nodes), label
    for node in nodes:
        assert node["flops"] >= node["mac_flops"] >= 0 and node["params"] >= 0, (label, node)
        if not node["counted"]:
            assert node["macs"] == node["flops"] == 0, (label, node)
    if document["complete"]:
        assert not totals["unsupported"] and not totals["not_counted"] and not document["unresolved_dims"], label


def run_case(seed: int, directory: Path) -> None:
    case, data, flags = _case(seed)
    path = directory / f"case{seed}.onnx"
    path.write_bytes(data)
    label = f"fuzz case {seed} (rebuild with tests/system/test_fuzz.py::_case({seed}))"
    # a symbolic input dim stays unbound (--partial): the fuzz checks the partial analysis; the
    # defaults for unbound dims are tests/frontend/test_inputs.py's
    partial = ["--partial"] if case.symbolic else []
    code, out, err = run_cli(["summary", str(path), "--format", "json", "-q", *partial, *flags])
    document = check_answer(code, out, err, label)
    if not case.valid:
        return
    strict = "--strict" in flags
    # a model whose every node depends on the dims left open (--partial), or is an op with no rule, counts
    # nothing: exit 2
    nothing = (case.symbolic or case.custom) and "nothing could be counted" in err
    assert code == 0 or nothing or (strict and (case.symbolic or case.custom)), (
        f"{label}: a valid model was refused: {err}"
    )
    if document is None:
        return
    expected_complete = not (case.symbolic or case.custom)
    assert document["complete"] == expected_complete, f"{label}: {document['warnings']}"
    if "--dtype" in flags or not expected_complete:
        return
    for node in document["nodes"]:
        for name, shape in zip(node["outputs"], node["output_shapes"]):
            if name in case.shapes:
                expected = case.shapes[name]
                assert tuple(shape) == expected, f"{label}: {node['name']} {name}: {shape} != {expected}"


# ---------------------------------------------------------------------------------------------
# The tests


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_models_analyse_or_exit_2(chunk, tmp_path):
    for seed in range(chunk * CASES_PER_CHUNK, (chunk + 1) * CASES_PER_CHUNK):
        run_case(seed, tmp_path)


def test_generator_makes_mostly_valid_models():
    """The fuzzer is only useful if many of its models are valid and analysed in full."""
    cases = [_case(seed) for seed in range(300)]
    valid = [case for case, _, _ in cases if case.valid]
    assert len(valid) > 100
    for case in valid[:50]:
        onnx.checker.check_model(case.model, full_check=True)


def test_every_output_format_renders_random_models(tmp_path):
    """Table, CSV, Markdown and HTML on random models (valid and corrupted): exit 0 or 2."""
    for seed in range(100_000, 100_060):
        case, data, flags = _case(seed)
        path = tmp_path / f"case{seed}.onnx"
        path.write_bytes(data)
        for argv in (
            ["summary", "--format", "table"],
            ["summary", "--format", "csv"],
            ["summary", "--format", "markdown"],
            ["report", "-o", str(tmp_path / "r.html")],
            ["explain", "--", "MatMul2"],
        ):
            code, out, err = run_cli([*argv[:1], str(path), *argv[1:], "-q", *flags])
            assert code in (0, 2), f"case {seed} {argv}: exit {code}: {err}"
            assert "Traceback" not in err and "internal error" not in err, f"case {seed} {argv}: {err}"


def test_subprocess_never_shows_a_traceback(tmp_path):
    """A few cases through the real entry point: exit 0 or 2, never a traceback."""
    seeds = [5, 123]
    paths = []
    for seed in seeds:
        _, data, _ = _case(seed)
        paths.append(tmp_path / f"case{seed}.onnx")
        paths[-1].write_bytes(data)
    corrupted = tmp_path / "flipped.onnx"
    corrupted.write_bytes(_flip_bytes(random.Random(0), _case(5)[1]))
    for path in [*paths, corrupted]:
        process = subprocess.run(
            [sys.executable, "-m", "onnxroof.cli", "summary", str(path), "-q"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert process.returncode in (0, 2), (path, process.stderr)
        assert "Traceback" not in process.stderr and "internal error" not in process.stderr, process.stderr


# Flags: any text given to --input-shape, --dim, --batch or --target is accepted or refused in one line
_TEXT = st.text(alphabet=st.sampled_from("x:,0123456789-=.×a |<>%+[]"), max_size=16)


@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(flag=st.sampled_from(["--input-shape", "--dim", "--batch", "--target", "--loop-trips", "--fail-if"]), text=_TEXT)
def test_any_flag_text_is_accepted_or_refused_in_one_line(flag, text):
    code, out, err = run_cli(["summary", "--example", "shallownet", "--format", "json", "-q", f"{flag}={text}"])
    assert code in (0, 1, 2), err
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        assert len(err.splitlines()) == 1 and err.startswith("onnxroof: error: "), repr(err)


_CONTROL = "a\nb\x1b[2J"


@pytest.mark.parametrize(
    "argv",
    [
        ["--input-shape", _CONTROL],
        ["--dim", _CONTROL],
        ["--fail-if", _CONTROL],
        ["--batch", _CONTROL],
        ["--format", _CONTROL],
    ],
)
def test_flag_text_with_control_characters_gives_one_error_line(argv):
    code, out, err = run_cli(["summary", "--example", "shallownet", "-q", *argv])
    assert code == 2 and len(err.splitlines()) == 1 and "\x1b" not in err, repr(err)


@pytest.mark.parametrize(
    "argv",
    [
        ["--example", "shallownet", "--target", _CONTROL],
        ["--example", "shallownet", "--plugin", _CONTROL],
        ["--example", _CONTROL],
        [f"/nonexistent/{_CONTROL}.onnx"],
    ],
)
def test_user_text_with_control_characters_still_gives_one_error_line(argv):
    code, out, err = run_cli(["summary", "-q", *argv])
    assert code == 2 and len(err.splitlines()) == 1 and "\x1b" not in err, repr(err)


def test_streamed_compact_json_equals_json_dumps_on_random_models(tmp_path):
    """Big models' JSON is encoded node by node, sharing text between look-alike nodes, and
    streamed: on random models (with two targets, whose node lists are shared the same way) it
    must be byte for byte what json.dumps writes for the plain document."""
    from onnxroof.report.json import document_json

    checked = 0
    for seed in range(200):
        case, data, _ = _case(seed)
        if not case.valid:
            continue
        path = tmp_path / f"case{seed}.onnx"
        path.write_bytes(data)
        try:
            analysis = onnxroof.analyze(path, targets=["jetson-orin-nano", "h100-sxm"])
        except OnnxroofError:
            continue  # a valid model may still need flags (symbolic dims are fine, custom ops too)
        expected = json.dumps(analysis.to_dict(), separators=(",", ":")) + "\n"
        streamed = document_json(analysis, compact=True, review=onnxroof.review(analysis))  # to_dict's findings too
        assert "".join(streamed) == expected, f"fuzz case {seed}"
        checked += 1
    assert checked > 50
