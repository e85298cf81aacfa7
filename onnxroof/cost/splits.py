"""Sizes only the data decides, and the splits whose pieces add up to a known extent.

A Mixture-of-Experts export routes tokens by data: each expert's row count is known only at run
time (a NonZero count, a Split by sizes the router computed), so its MatMuls have no static shape.
Often the pieces still add up to a known extent: the Split's input, or a Concat whose size the
graph fixes further on (a Reshape to [tokens, top_k, hidden]). Costs are linear in rows, so the
total over the pieces does not depend on how the rows fall when every piece costs alike per row:
the pieces are costed with the rows split evenly, and again with one row more each to find each
piece's cost per row (the total is exact when they are alike). Where no
total is known, a size's upper bound is (a NonZero finds at most all of its input's elements).

Sizes are tracked by the symbols shape inference gives them: onnx names a data-dependent dim
(``unk__3``), the shape stage names a Split piece ``<output>_rows`` and a one-node re-inference's
fresh dim ``<output>_<axis>``; the symbols travel through the ops that follow.

>>> from onnx import TensorProto, helper
>>> from onnxroof.core.nodes import read_node_fields
>>> from onnxroof.core.tensors import TensorInfo
>>> nodes = [helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=0),
...          helper.make_node("Concat", ["a", "b"], ["y"], axis=0)]
>>> tensors = {"x": TensorInfo("x", 1, (6, 4)), "a": TensorInfo("a", 1, ("a_rows", 4)),
...            "b": TensorInfo("b", 1, ("b_rows", 4)), "y": TensorInfo("y", 1, ("y_0", 4))}
>>> found = find_splits(read_node_fields(nodes), ["s", "c"], tensors, input_symbols=set())
>>> found.splits[0].pieces, found.splits[0].total, found.values
(('a_rows', 'b_rows'), 6, {'a_rows': 3, 'b_rows': 3, 'y_0': 6})
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from ..core.nodes import NodeFields, node_names
from ..core.tensors import Dim, TensorInfo
from ..frontend.shapes import ShapeResult
from ..ops import OpTrait, traits_of
from .graph import cost_graph
from .records import CostGraph, CostOptions, NodeStatus


@dataclass(frozen=True)
class Split:
    """Data-dependent sizes (one symbol per piece) that add up to a known total."""

    source: str  # what fixes the total, e.g. "Split 'route' input", "Concat 'merge'"
    pieces: tuple[str, ...]
    total: int


@dataclass
class DataDependentSizes:
    """What is known of the sizes only the data decides."""

    splits: list[Split] = field(default_factory=list)
    values: dict[str, int] = field(default_factory=dict)  # symbol -> value used: even shares, and sums of them
    plus_one: dict[str, int] = field(default_factory=dict)  # the same with one row more in every piece
    origins: dict[str, str] = field(default_factory=dict)  # data-dependent symbol -> the node that sizes it
    bounds: dict[str, int] = field(default_factory=dict)  # symbol in no split -> its upper bound


_Shape = Callable[[str], "tuple[Dim, ...] | None"]  # a tensor's shape, None when unknown

# A data-dependent count of an op's output is at most the extent it selects from (this stage's
# reading of each op's spec, for the bound it states; TopK and Split are sized by a value, not data).
_BOUNDED_BY_INPUT = {"NonZero": "elements", "Compress": "axis", "Unique": "elements", "TopK": "axis", "Split": "axis"}


def find_splits(
    fields: Sequence[NodeFields],
    names: Sequence[str],
    tensors: dict[str, TensorInfo],
    input_symbols: set[str],
    values: Mapping[str, np.ndarray] | None = None,
) -> DataDependentSizes:
    """The data-dependent symbols of a graph (its nodes' ``fields`` and ``names``, in order, with the
    shapes in ``tensors`` and the known small ``values``; ``input_symbols`` are the input dims left
    unbound, which are not data dependent), the splits they form and the values they are costed at."""
    found = DataDependentSizes()
    solved: dict[str, int] = {}
    sums: list[tuple[str, Dim, list[Dim]]] = []  # (what fixes the total, the total, the pieces)
    partitions = _Partitions(values or {})

    def shape(name: str) -> tuple[Dim, ...] | None:
        info = tensors.get(name) if name else None
        return None if info is None else info.shape

    for node, label in zip(fields, names):
        _note_origins(node, label, shape, input_symbols, found)
        partitions.visit(node, label, shape)
        _read_sizes(node, label, shape, sums, solved, found.origins)
    sums += partitions.sums(shape)
    found.values = dict(solved)
    found.splits = _splits(sums, found.values, found.origins)
    found.plus_one = dict(solved)
    for split in found.splits:
        _share(split, found.values, extra=0)
        _share(split, found.plus_one, extra=1)
    for sizes in (found.values, found.plus_one):  # a Concat of pieces is their sum
        _add_sums(sums, sizes, found.origins)
    in_split = {piece for split in found.splits for piece in split.pieces}
    found.bounds = {s: b for s, b in found.bounds.items() if s not in in_split and s not in found.values}
    return found


def _note_origins(
    node: NodeFields, label: str, shape: _Shape, input_symbols: set[str], found: DataDependentSizes
) -> None:
    """The symbols ``node``'s outputs have and its inputs do not (and no input dim is): sized by
    the data, at ``node``; with the most they can be."""
    input_dims = {d for n in node.inputs for d in (shape(n) or ()) if isinstance(d, str)}
    for output in node.outputs:
        for dim in shape(output) or ():
            if isinstance(dim, str) and dim not in input_dims and dim not in input_symbols:
                found.origins.setdefault(dim, f"{node.op_type} {label!r}")
                bound = _bound(node, shape)
                if bound is not None:
                    found.bounds.setdefault(dim, bound)


def _read_sizes(
    node: NodeFields,
    label: str,
    shape: _Shape,
    sums: list[tuple[str, Dim, list[Dim]]],
    solved: dict[str, int],
    origins: dict[str, str],
) -> None:
    """What ``node`` tells of the sizes: a Split's or a Concat's total as the sum of its pieces, a
    Reshape's or a broadcast's data-dependent dim solved."""
    op = node.op_type
    axis = _axis(node)
    if op == "Split" and node.inputs and (data := shape(node.inputs[0])) is not None:
        total = data[axis % len(data)] if data else None
        pieces = [(shape(o) or (None,) * len(data))[axis % len(data)] for o in node.outputs if o]
        if isinstance(total, int):
            sums.append((f"Split {label!r} input", total, pieces))
    elif op == "Concat" and (out := shape(node.outputs[0])) is not None and out:
        parts = [shape(n) for n in node.inputs if n]
        if all(p is not None and len(p) == len(out) for p in parts):
            sums.append((f"Concat {label!r}", out[axis % len(out)], [p[axis % len(out)] for p in parts if p]))
    elif op == "Reshape" and len(node.inputs) > 1:
        _solve_reshape(shape(node.inputs[0]), shape(node.outputs[0]), solved, origins)
    elif OpTrait.BROADCASTS in traits_of(node.domain, op):
        _solve_broadcast([shape(n) for n in node.inputs if n], shape(node.outputs[0]), solved, origins)


def _axis(node: NodeFields, default: int = 0) -> int:
    return next((helper.get_attribute_value(a) for a in node.attributes if a.name == "axis"), default)


# Ops that pass their input's values on unchanged, re-laid out or re-typed.
_VALUE_PRESERVING = OpTrait.RESHAPE | OpTrait.IDENTITY | OpTrait.RETYPE


def _keeps_values(node: NodeFields) -> bool:
    return bool(traits_of(node.domain, node.op_type) & _VALUE_PRESERVING)


class _Partitions:
    """NonZero counts of the masks ``X == c``, the way exporters route tokens to experts: when X
    holds indices into E classes (a TopK's, an ArgMax's) and c runs over every class 0..E-1, each
    element of X is counted once, so the counts add up to X's size. The mask is an Equal of X and a
    constant, or a constant slice of a one-hot of X along its class axis (transposed or not)."""

    def __init__(self, values: Mapping[str, np.ndarray]):
        self.values = values
        self.classes: dict[str, tuple[int, str]] = {}  # index tensor -> (classes, the node that made it)
        self.one_hot: dict[str, tuple[str, int]] = {}  # one-hot tensor -> (index tensor, class axis)
        self.masks: dict[str, tuple[str, int]] = {}  # mask -> (index tensor, class)
        self.counts: dict[str, list[tuple[int, str]]] = {}  # index tensor -> [(class, count symbol)]

    def _constant(self, name: str) -> int | None:
        value = self.values.get(name) if name else None
        return int(value.reshape(-1)[0]) if value is not None and value.size == 1 else None

    def visit(self, node: NodeFields, label: str, shape: _Shape) -> None:
        op, inputs, outputs = node.op_type, node.inputs, node.outputs
        if not inputs or not outputs:
            return
        source = inputs[0]
        # (no index op keeps its input's values: the first branch taken is the only one that applies)
        if op in ("TopK", "ArgMax", "ArgMin"):
            self._index_op(node, label, shape)
        elif source in self.classes and _keeps_values(node):
            self.classes[outputs[0]] = self.classes[source]
        elif source in self.masks and _keeps_values(node):
            self.masks[outputs[0]] = self.masks[source]
        elif op == "Equal" and len(inputs) == 2:
            for index, other in (inputs, inputs[::-1]):
                c = self._constant(other)
                if index in self.classes and c is not None:
                    self.masks[outputs[0]] = (index, c)
        elif op == "OneHot" and source in self.classes:
            if (indices := shape(source)) is not None:
                self.one_hot[outputs[0]] = (source, _axis(node, -1) % (len(indices) + 1))
        elif op == "Transpose" and source in self.one_hot:
            self._transposed(node)
        elif op == "Gather" and source in self.one_hot and len(inputs) > 1:
            self._class_slice(node, shape)
        elif op == "NonZero" and source in self.masks:
            self._count(node, shape)

    def _index_op(self, node: NodeFields, label: str, shape: _Shape) -> None:
        """A TopK's indices (output 1), an ArgMax's or ArgMin's: indices into the classes of its axis."""
        op, outputs = node.op_type, node.outputs
        data = shape(node.inputs[0])
        if data:
            size = data[_axis(node, -1 if op == "TopK" else 0) % len(data)]
            if isinstance(size, int):
                self.classes[outputs[1] if op == "TopK" and len(outputs) > 1 else outputs[0]] = (size, label)

    def _transposed(self, node: NodeFields) -> None:
        """A transposed one-hot: its class axis where the permutation moves it."""
        index, axis = self.one_hot[node.inputs[0]]
        perm = next((list(helper.get_attribute_value(a)) for a in node.attributes if a.name == "perm"), None)
        if perm is not None and axis in perm:
            self.one_hot[node.outputs[0]] = (index, perm.index(axis))

    def _class_slice(self, node: NodeFields, shape: _Shape) -> None:
        """A Gather of one constant class along a one-hot's class axis: the mask ``X == c``."""
        source = node.inputs[0]
        index, axis = self.one_hot[source]
        c = self._constant(node.inputs[1])
        if c is not None and (data := shape(source)) and _axis(node) % len(data) == axis:
            self.masks[node.outputs[0]] = (index, c)

    def _count(self, node: NodeFields, shape: _Shape) -> None:
        """A NonZero of a mask ``X == c``: its count (the symbol of its output's axis 1) is class c's."""
        found = shape(node.outputs[0])
        if found and len(found) == 2:
            index, c = self.masks[node.inputs[0]]
            if isinstance(found[1], str):
                self.counts.setdefault(index, []).append((c, found[1]))

    def sums(self, shape: _Shape) -> list[tuple[str, Dim, list[Dim]]]:
        found: list[tuple[str, Dim, list[Dim]]] = []
        for index, counted in self.counts.items():
            classes, producer = self.classes[index]
            data = shape(index)
            sizes = [d for d in data or () if isinstance(d, int)]
            if sorted(c for c, _ in counted) == list(range(classes)) and data and len(sizes) == len(data):
                found.append(
                    (
                        f"the {classes} classes of {producer}'s indices, each index in one",
                        math.prod(sizes),
                        [symbol for _, symbol in counted],
                    )
                )
        return found


def _bound(node: NodeFields, shape) -> int | None:
    """The most a data-dependent count of ``node``'s output can be: the elements or the axis of
    input 0 it selects from."""
    kind = _BOUNDED_BY_INPUT.get(node.op_type)
    data = shape(node.inputs[0]) if kind and node.inputs else None
    if data is None or not all(isinstance(d, int) for d in data):
        return None
    if kind == "elements" or not data:
        return math.prod(data)
    return data[_axis(node) % len(data)]


def _solve_reshape(
    source: tuple[Dim, ...] | None,
    result: tuple[Dim, ...] | None,
    solved: dict[str, int],
    data_dependent: dict[str, str],
) -> None:
    """A Reshape keeps the element count: one data-dependent symbol in its input, with the output
    known, is fixed (an unbound input dim is the user's to bind, never solved here)."""
    if source is None or result is None or not all(isinstance(d, int) for d in result):
        return
    symbols = [d for d in source if not isinstance(d, int)]
    if len(symbols) != 1 or symbols[0] not in data_dependent:
        return
    rest = math.prod(d for d in source if isinstance(d, int))
    elements = math.prod(result)  # type: ignore[arg-type]  # the result's dims are all known here
    if rest and elements % rest == 0:
        solved.setdefault(symbols[0], elements // rest)


def _solve_broadcast(
    operands: list[tuple[Dim, ...] | None],
    result: tuple[Dim, ...] | None,
    solved: dict[str, int],
    data_dependent: dict[str, str],
) -> None:
    """A data-dependent dim broadcast to a number k > 1 in the output is k (rows routed back meet
    their weights, [rows, d] x [64, 1] -> [64, d]): it could be 1 only if a single row were
    broadcast, which no exporter's routing relies on."""
    if result is None:
        return
    for operand in operands:
        for dim, out in zip(reversed(operand or ()), reversed(result)):
            if isinstance(out, int) and out > 1 and isinstance(dim, str) and dim in data_dependent:
                solved.setdefault(dim, out)


def _splits(
    sums: list[tuple[str, Dim, list[Dim]]], solved: dict[str, int], data_dependent: dict[str, str]
) -> list[Split]:
    """Sums with a known total and unknown, data-dependent pieces, each piece in one split only."""
    splits: list[Split] = []
    taken: set[str] = set()
    changed = True
    while changed:  # a total may be a solved symbol, or a sum found on the way
        changed = False
        for source, total, parts in sums:
            total_value = total if isinstance(total, int) else solved.get(total) if isinstance(total, str) else None
            if total_value is None:
                continue
            # (type: ignore below) a part not an int is a name or None, and get(None) is None
            known = [p if isinstance(p, int) else solved.get(p) for p in parts]  # type: ignore[arg-type]
            pieces = tuple(p for p, k in zip(parts, known) if k is None)
            if any(not isinstance(p, str) or p not in data_dependent for p in pieces):
                continue  # an unnamed piece cannot be followed; an unbound input dim is no split
            if not pieces:
                if isinstance(total, str) and total in data_dependent and total not in solved:
                    solved[total] = sum(known)  # type: ignore[arg-type]  # no piece: every part has a value
                    changed = True
                continue
            if len(set(pieces)) != len(pieces) or taken & set(pieces):
                continue
            rest = total_value - sum(k for k in known if k is not None)
            if rest >= 0:
                splits.append(Split(source, pieces, rest))  # type: ignore[arg-type]  # pieces are names: checked above
                taken.update(pieces)  # type: ignore[arg-type]  # pieces are names: checked above
    return splits


def _share(split: Split, values: dict[str, int], extra: int) -> None:
    """The split's rows spread evenly over its pieces, each with ``extra`` rows more (costing with
    one more tells each piece's cost per row: the total is exact when they are all alike)."""
    count = len(split.pieces)
    values.update(
        (piece, split.total // count + (1 if i < split.total % count else 0) + extra)
        for i, piece in enumerate(split.pieces)
    )


def _add_sums(sums: list[tuple[str, Dim, list[Dim]]], values: dict[str, int], data_dependent: dict[str, str]) -> None:
    """A data-dependent total whose pieces all have values is their sum."""
    for _, total, parts in sums:
        if isinstance(total, str) and total in data_dependent and total not in values:
            # (type: ignore below) a part not an int is a name or None, and get(None) is None
            known = [p if isinstance(p, int) else values.get(p) for p in parts]  # type: ignore[arg-type]
            if None not in known:
                values[total] = sum(known)  # type: ignore[arg-type]  # None not in known: checked just above


def cost_graph_with_sizes(
    model: onnx.ModelProto,
    shapes: ShapeResult,
    options: CostOptions,
    fields: Sequence[NodeFields],
    reinfer: Callable[[dict[str, int]], ShapeResult],
) -> tuple[CostGraph, ShapeResult, list[str]]:
    """The cost DAG (graph.cost_graph) with the sizes only the data decides costed where their total
    is known and bounded where it is not, the shapes it was costed with, and notes saying so.
    ``reinfer`` runs the shape stage
    again with those sizes taken as given (so that shape arithmetic on them is evaluated too). A
    graph with no such size is costed once; one with them up to three more times (the rows split
    evenly, one row more per piece, the sizes at their bounds)."""
    input_symbols = {d.symbol for d in shapes.unresolved if d.symbol}
    # most graphs have no such size: every shape known (is_known is worked out already) or symbolic
    # in the unbound input dims only
    if not any(
        isinstance(d, str) and d not in input_symbols
        for info in shapes.tensors.values()
        if not info.is_known and info.shape is not None
        for d in info.shape
    ):
        return cost_graph(model, shapes, options, fields), shapes, []
    sizes = find_splits(fields, node_names(fields), shapes.tensors, input_symbols, shapes.values)
    if not sizes.values and not sizes.bounds:
        return cost_graph(model, shapes, options, fields), shapes, []
    sized = reinfer(sizes.values)
    graph = cost_graph(model, sized, options, fields)
    notes = []
    if sizes.splits:
        plus_one = cost_graph(model, reinfer(sizes.plus_one), options, fields)
        notes.append(_label_splits(graph, plus_one, sizes, shapes.tensors))
    if sizes.bounds:
        bounded = cost_graph(model, reinfer(sizes.values | sizes.bounds), options, fields)
        notes += _bound_the_rest(graph, bounded, sizes)
    return graph, sized, notes


def _label_splits(
    graph: CostGraph, plus_one: CostGraph, sizes: DataDependentSizes, tensors: dict[str, TensorInfo]
) -> str:
    """Say on each node working on a piece which split it is in and whether the split's total is
    exact: every piece costs alike per row (one row more in each changes each piece alike)."""
    by_symbol = {piece: split for split in sizes.splits for piece in split.pieces}
    touching = []  # (record, the piece it works on)
    per_row: dict[str, tuple[int, int]] = dict.fromkeys(by_symbol, (0, 0))  # piece -> (MACs, FLOPs) per row
    for record, more in zip(graph.records, plus_one.records):
        symbol = next(
            (
                d
                for n in (*record.inputs, *record.outputs)
                if n in tensors
                for d in tensors[n].shape or ()
                if d in by_symbol
            ),
            None,
        )
        if record.status == NodeStatus.OK and symbol is not None:
            touching.append((record, symbol))
            macs, flops = per_row[symbol]
            per_row[symbol] = (macs + more.macs - record.macs, flops + more.flops - record.flops)
    exact = {split.source: len({per_row[p] for p in split.pieces}) == 1 for split in sizes.splits}
    for record, symbol in touching:
        split = by_symbol[symbol]
        verdict = (
            "total exact" if exact[split.source] else "estimate: the pieces cost differently per row, rows split evenly"
        )
        record.formula += (
            f" [data-dependent split, {verdict}: {split.total:,} rows in {len(split.pieces)} pieces "
            f"({split.source}), {sizes.values[symbol]:,} assumed here]"
        )
    sources = "; ".join(f"{s.source}: {s.total:,} rows in {len(s.pieces)} pieces" for s in sizes.splits[:3])
    return (
        f"{len(touching)} node(s) work on data-dependent pieces of a known extent (routed rows, e.g. MoE experts; "
        f"{sources}{' ...' if len(sizes.splits) > 3 else ''}): costed with the rows split evenly, "
        + (
            "the totals are exact (every piece costs alike per row)"
            if all(exact.values())
            else "an estimate where the pieces cost differently per row (see the nodes' formulas)"
        )
    )


def _bound_the_rest(graph: CostGraph, bounded: CostGraph, sizes: DataDependentSizes) -> list[str]:
    """Nodes whose size only the data decides, with no known total: not counted, and their cost with
    that size at its bound stated (never a silent zero)."""
    dependent = 0
    for record, at_bound in zip(graph.records, bounded.records):
        # a size of its own, or one computed from such sizes (a Slice whose bounds come from them)
        symbols = [
            d
            for shape in (*record.input_shapes, *record.output_shapes)
            for d in shape or ()
            if isinstance(d, str) and d in sizes.origins
        ]
        if record.status == NodeStatus.UNKNOWN_SHAPE and symbols and at_bound.counted:
            symbol = next((d for d in symbols if d in sizes.bounds), symbols[0])
            bound = f", at most {sizes.bounds[symbol]:,}" if symbol in sizes.bounds else ""
            record.status = NodeStatus.DATA_DEPENDENT
            record.reason = (
                f"data-dependent size {symbol} (from {sizes.origins[symbol]}{bound}): not counted; "
                f"at most {at_bound.macs:,} MACs, {at_bound.flops:,} FLOPs with every such size at "
                "its bound"
            )
            dependent += 1
    if not dependent:
        return []
    return [
        f"{dependent} node(s) have sizes only the data decides and no known total: not counted, their bounds "
        "are in their reasons"
    ]
