"""The cost rules' vocabulary and registry: :class:`OpCost`, :class:`NodeView`, :class:`OpTrait`,
:class:`OpRule`, :func:`register`, :func:`rule_for` and :func:`traits_of`. The families (one
module each) import from here; the package imports them all, so that every rule is registered
once ``onnxroof.ops`` is imported."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Flag, auto
from math import prod
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ..core.nodes import DEFAULT_DOMAINS
from ..core.tensors import Dim, TensorInfo


# slots, not frozen: one of each is made per node, and a frozen dataclass's __init__ costs 3x
@dataclass(slots=True)
class OpCost:
    """What one node computes. ``flops`` excludes the 2 x ``macs`` of the MAC part. Treat as
    read-only: the costing stage shares one between nodes that look alike."""

    macs: int = 0
    flops: int = 0
    formula: str = ""
    view: bool = False  # aliases its input (Reshape, Identity, ...): moves no bytes
    # (input slot, weights it holds) for packed weights, e.g. MatMulNBits' uint8 B holding K x N
    # 4-bit weights: parameters count weights, not storage elements
    param_elements: tuple[tuple[int, int], ...] = ()
    # elements of its first parameter the op actually reads, when it reads only part of its
    # parameters (Gather on an embedding table reads the gathered rows); every parameter of the
    # node is read in that proportion (a quantized table's scales and zero points with its rows).
    # None: all of them
    weight_elements_read: int | None = None
    # (input slot, elements read) for parameters a node reads only part of, each on its own (an
    # embedding's word, position and segment tables: the rows gathered from each); others whole
    weight_reads: tuple[tuple[int, int], ...] = ()
    # (input slot, elements read) for activations a node reads only part of, and (output slot,
    # elements written) for outputs it writes only part of: a KV buffer that past and present
    # share, of which attention reads the attended positions and writes the new ones in place.
    # Others whole
    activation_reads: tuple[tuple[int, int], ...] = ()
    output_writes: tuple[tuple[int, int], ...] = ()
    # subgraph attributes the node does not run (an If's other branch once its condition is known):
    # their nodes are shown but neither counted nor reported as uncounted
    untaken: tuple[str, ...] = ()
    # (subgraph attribute, times it runs per run of the node, why) for the subgraphs a target runs
    # (cost/running.py places their nodes as kernels): an If's branch, a Loop's or Scan's body
    runs: tuple[tuple[str, int, str], ...] = ()
    # model numbers stored in the node's attributes (ai.onnx.ml: tree thresholds, coefficients):
    # parameters of the node itself, counted once like a stored tensor
    attribute_params: int = 0


# the most operations or elements one node's rule may count: past it (a plugin returning 10^400),
# the times and intensities computed from it would leave what a float holds
MAX_COUNT = 10**38


def checked_cost(cost: object) -> tuple[OpCost | None, str]:
    """A rule's result as the costing stage takes it: an OpCost whose counts are whole numbers from
    0 to MAX_COUNT (a plugin's rule may return NaN, a negative count or a float); (None, the reason)
    when it is not, and the node is then not counted. A whole float or a numpy integer is taken as
    the int it is."""
    if (
        type(cost) is OpCost
        and type(cost.macs) is int
        and type(cost.flops) is int
        and 0 <= cost.macs <= MAX_COUNT
        and 0 <= cost.flops <= MAX_COUNT
        and type(cost.attribute_params) is int
        and cost.attribute_params >= 0
        and cost.weight_elements_read is None
        and not cost.param_elements
        and not cost.weight_reads
        and not cost.activation_reads
        and not cost.output_writes
    ):
        return cost, ""  # what the built-in rules return: nothing to convert
    if not isinstance(cost, OpCost):
        return None, f"the cost rule returned {type(cost).__name__}, not an OpCost"
    changes: dict[str, Any] = {}
    try:
        for name in ("macs", "flops", "attribute_params", "weight_elements_read"):
            value = getattr(cost, name)
            if value is not None or name != "weight_elements_read":
                changes[name] = _count(value, name)
        for name in ("param_elements", "weight_reads", "activation_reads", "output_writes"):
            pairs = getattr(cost, name)
            changes[name] = tuple((_count(slot, f"{name} slot"), _count(count, name)) for slot, count in pairs)
    except (TypeError, ValueError) as exc:
        return None, f"the cost rule returned {exc}: a count must be a whole number from 0 to 10^38"
    return replace(cost, **changes), ""


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r}"[:80])
    if isinstance(value, (float, np.floating)):
        whole = math.isfinite(value) and 0 <= value <= MAX_COUNT and value == int(value)
    else:
        whole = 0 <= value <= MAX_COUNT
    if not whole:
        raise ValueError(f"{name}={value!r}"[:80])
    return int(value)


class UnknownShape(Exception):
    """A shape the rule needs is not known; the node is reported as not counted."""

    def __init__(self, tensor_name: str):
        super().__init__(f"shape of {tensor_name!r} unknown")
        self.tensor_name = tensor_name

    def __reduce__(self):  # rebuilt from the name, not the message, in another process
        return type(self), (self.tensor_name,), self.__dict__


@dataclass(slots=True)
class NodeView:
    """A node as a cost rule sees it: attributes and the shapes of its tensors."""

    node: onnx.NodeProto
    inputs: tuple[TensorInfo | None, ...]  # None where an optional input is omitted
    outputs: tuple[TensorInfo | None, ...]
    values: Mapping[str, np.ndarray] = field(default_factory=dict)  # small tensors with known values
    subgraphs: Mapping[str, Any] = field(default_factory=dict)  # attribute -> graph.SubgraphCost
    loop_trips: int | None = None  # the user's --loop-trips, for Loops without a constant count

    def attr(self, name: str, default: Any = None) -> Any:
        for attribute in self.node.attribute:
            if attribute.name == name:
                value = helper.get_attribute_value(attribute)
                return value.decode() if isinstance(value, bytes) else value
        return default

    def input_value(self, index: int) -> np.ndarray | None:
        """The value of a small constant or shape-computed input (a scalar k, a trip count), if known."""
        if index >= len(self.node.input) or not self.node.input[index]:
            return None
        return self.values.get(self.node.input[index])

    def has_input(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index] is not None

    def input_shape(self, index: int) -> tuple[int, ...]:
        return _known_shape(self.inputs[index] if index < len(self.inputs) else None, self.node.input, index)

    def output_shape(self, index: int = 0) -> tuple[int, ...]:
        return _known_shape(self.outputs[index] if index < len(self.outputs) else None, self.node.output, index)

    def output_elements(self, index: int = 0) -> int:
        return prod(self.output_shape(index))

    def input_elements(self, index: int) -> int:
        return prod(self.input_shape(index))


def _known_shape(info: TensorInfo | None, names: Iterable[str], index: int) -> tuple[int, ...]:
    if info is None or not info.is_known:
        names = list(names)
        raise UnknownShape(names[index] if index < len(names) else f"#{index}")
    # (type: ignore below) is_known: every dim an int (a plain bool field, which mypy cannot narrow by)
    return info.shape  # type: ignore[return-value]


class InvalidNode(Exception):
    """The node breaks its op's definition, so no runtime runs it (a Conv whose group does not
    divide its channels); the node is reported as invalid, not counted, the message saying why."""


class UnknownValue(Exception):
    """A value the rule needs (a Loop's trip count) is not known; the message says how to give it."""


class OpTrait(Flag):
    """What an op *is*, as the stages after the cost rules need to know it: declared once, where
    the op's rule is registered (``register(..., traits=...)``), and read through :func:`traits_of`.
    Combine them with ``|``; test one with ``OpTrait.VIEW in traits_of(domain, op_type)``.

    >>> traits = traits_of("", "Cast")
    >>> OpTrait.RETYPE in traits, OpTrait.ELEMENTWISE in traits, OpTrait.VIEW in traits
    (True, True, False)
    """

    NONE = 0
    # output 0 shares input 0's buffer (a reshape, an identity, a reinterpretation of the bits): the
    # memory stage gives them one buffer, and the op moves no bytes
    VIEW = auto()
    # output 0 holds input 0's elements in the same order under another shape
    RESHAPE = auto()
    # output 0 is input 0, always (Dropout is one only at inference: a VIEW, not an IDENTITY)
    IDENTITY = auto()
    # output 0 holds input 0's values converted to another element type
    RETYPE = auto()
    # output 0 is input 0 with its axes permuted
    PERMUTES_AXES = auto()
    # a copy whose elements move with no contiguous run to copy (a transpose of the memory layout)
    STRIDED_COPY = auto()
    # applies one function per element (or per channel), so it can run as another kernel's
    # epilogue, its output written once by that kernel
    ELEMENTWISE = auto()
    # its inputs broadcast to its output's shape, numpy style (multidirectional broadcasting)
    BROADCASTS = auto()
    # a softmax over one axis: max, exponentials, their sum, a division
    SOFTMAX = auto()
    # reads the elements its indices input picks from its data input, and writes them in the data's type
    GATHER = auto()
    # turns quantized integers into real numbers: runtimes run it inside the integer kernel that
    # reads its output, so a stored weight behind it is read at its quantized size
    DEQUANTIZE = auto()
    # writes a tensor from its attributes (and a shape) alone: a folded one is a stored root
    CONSTANT_SOURCE = auto()
    # its output is not a function of its inputs (random draws): never folded
    NONDETERMINISTIC = auto()
    # the size of its output depends on its inputs' values, not only on their shapes
    DATA_DEPENDENT_SIZE = auto()
    # reads only its input's shape (or size), never its data
    READS_SHAPE_ONLY = auto()


Handler = Callable[[NodeView], OpCost]
# What an op writes, for ops ONNX has no schema for: per output, (ONNX element type, shape) with dims
# as ints, symbol names or None, or None for an output the rule cannot size. Shape inference goes
# on through such ops only because their rule says this.
OutputType = tuple[int, "tuple[Dim, ...] | None"]
ShapeHandler = Callable[[NodeView], "Sequence[OutputType | None]"]


@dataclass(frozen=True)
class OpRule:
    """How one op is costed. ``arg_inputs`` are input slots holding shapes or settings
    (Reshape's shape, Slice's starts, ...): constants there are arguments, not parameters."""

    handler: Handler
    family: str
    arg_inputs: frozenset[int] = frozenset()
    # a built-in rule reads only a node's attributes, which inputs it has, its tensors' dtypes and
    # shapes and the values of its inputs: graph.py shares its result between nodes alike in those
    builtin: bool = False
    # the output types and shapes, for an op without an ONNX schema (contrib ops) or whose schema
    # infers none (ai.onnx.ml)
    shapes: ShapeHandler | None = None
    traits: OpTrait = OpTrait.NONE  # what the op is, for the memory, fusion and later stages

    @property
    def formula(self) -> str:
        return " ".join((self.handler.__doc__ or "").split())

    @property
    def shape_formula(self) -> str:
        """What the shape rule says the outputs are (its docstring); empty without a shape rule."""
        return " ".join((self.shapes.__doc__ or "").split()) if self.shapes is not None else ""


def per_element_flop_counter(flops_per_element: int, rule: str, *, on: str = "output") -> Handler:
    """A rule counting ``flops_per_element`` operations per element of output 0 (``on="output"``)
    or of input 0 (``on="input"``); the shared shape of the elementwise and norm factories."""

    def handler(node: NodeView) -> OpCost:
        elements = node.output_elements(0) if on == "output" else node.input_elements(0)
        flops = flops_per_element * elements
        return OpCost(flops=flops, formula=f"{flops_per_element}·{elements:,} {on} elements = {flops:,} FLOPs ({rule})")

    handler.__doc__ = f"FLOPs = {flops_per_element} x {on} elements ({rule})"
    return handler


def zero_cost(reason: str) -> Handler:
    """A rule for an op with no arithmetic to count (random draws, string handling, ...);
    ``reason`` says why, and is the rule's documented classification."""

    def handler(node: NodeView) -> OpCost:
        return OpCost(formula=f"0 FLOPs: {reason}")

    handler.__doc__ = f"FLOPs = 0: {reason}"
    return handler


COST_RULES: dict[tuple[str, str], OpRule] = {}


# What a new op of a family is when its rule declares no traits: plugins written before traits
# existed said "elementwise" through the family alone, and fused as epilogues by it.
FAMILY_TRAITS = {"elementwise": OpTrait.ELEMENTWISE}


def register(
    op_types: str | Iterable[str],
    handler: Handler,
    *,
    family: str,
    domain: str = "",
    arg_inputs: Iterable[int] = (),
    shapes: ShapeHandler | None = None,
    traits: OpTrait | None = None,
) -> None:
    """Add or replace the rule for ``op_types`` in ``domain`` (the user/plugin override hook).
    ``shapes`` gives the outputs' types and shapes of an op ONNX has no schema for; ``traits``
    what the op is (:class:`OpTrait`: a view, elementwise, ...), which the memory and fusion
    stages read. Without ``traits``, a rule replacing another keeps the replaced rule's traits (a
    new formula for Reshape leaves it a view), and a new op has its family's (``FAMILY_TRAITS``)."""
    for op_type in [op_types] if isinstance(op_types, str) else op_types:
        key = ("" if domain in DEFAULT_DOMAINS else domain, op_type)
        replaced = COST_RULES.get(key)
        kept = (
            traits
            if traits is not None
            else replaced.traits
            if replaced is not None
            else FAMILY_TRAITS.get(family, OpTrait.NONE)
        )
        COST_RULES[key] = OpRule(handler, family, frozenset(arg_inputs), shapes=shapes, traits=kept)


def rule_for(domain: str, op_type: str) -> OpRule | None:
    return COST_RULES.get(("" if domain in DEFAULT_DOMAINS else domain, op_type))


def has_trait(domain: str, op_type: str, trait: OpTrait) -> bool:
    """``trait in traits_of(domain, op_type)`` as plain integer bits: the stages ask it of every
    node of graphs of 10^5 nodes, and a Flag's own test is Python code."""
    bits = trait._value_
    return traits_of(domain, op_type)._value_ & bits == bits


def traits_of(domain: str, op_type: str) -> OpTrait:
    """What the registry says ``op_type`` of ``domain`` is; ``OpTrait.NONE`` for an op without a rule."""
    rule = COST_RULES.get(("" if domain in DEFAULT_DOMAINS else domain, op_type))
    return rule.traits if rule is not None else OpTrait.NONE


def output_types(
    node: onnx.NodeProto, inputs: tuple[TensorInfo | None, ...], values: Mapping[str, np.ndarray]
) -> list[TensorInfo | None] | None:
    """What the rule of ``node``'s op says its outputs are (one TensorInfo, or None where it cannot
    tell, per output), or None when the op has no shape rule. The shape stage calls this for ops
    ONNX has no schema for at the model's opset, and for the ai.onnx.ml ops (whose schemas infer
    few shapes); it takes it as a parameter, since the rules sit above it."""
    rule = rule_for(node.domain, node.op_type)
    if rule is None or rule.shapes is None:
        return None
    view = NodeView(node, inputs, tuple(TensorInfo(o) for o in node.output), values)
    try:
        found = list(rule.shapes(view))
    except (UnknownShape, UnknownValue, TypeError, ValueError, IndexError, KeyError, ZeroDivisionError):
        return None
    found += [None] * (len(node.output) - len(found))
    return [
        None if not name or typed is None else TensorInfo(name, typed[0], None if typed[1] is None else tuple(typed[1]))
        for name, typed in zip(node.output, found)
    ]


def same_as_input(index: int = 0, dtype: int | None = None) -> ShapeHandler:
    """A shape rule: output 0 has input ``index``'s shape (and type, unless
    ``dtype`` is given). The common case of contrib elementwise and normalization ops."""

    def shapes(node: NodeView) -> list[OutputType | None]:
        info = node.inputs[index] if index < len(node.inputs) else None
        if info is None:
            return [None]
        return [(dtype or info.dtype, info.shape)]

    shapes.__doc__ = f"output 0: input {index}'s shape and {'type' if dtype is None else f'type {dtype}'}"
    return shapes
