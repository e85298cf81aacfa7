"""Where the graph view draws the nodes the names put nowhere: a node with no module of its own
in a model whose names carry modules, and a node whose outputs reach no graph output.

An exporter's optimiser writes nodes with no scope between scoped ones (the dynamo exporter's
``Split`` of the fused Q/K/V projection, one per layer, each read by that layer's attention):
drawn at the root, 47 such nodes stand in one row beside the folded run of the layers they belong
to. Each such node is drawn in the deepest module that holds both what it reads and what reads
it (:func:`adopted_paths`), so the Split goes into its layer's attention and the layers stay alike.

A **dead end** (nothing that reads its outputs reaches a graph output: a debug tap, a shape
computation left over) is drawn in the module of what it reads; several at one place share one
box, "n side outputs", so they never fan out in a row of their own.

>>> from onnx import TensorProto, helper
>>> from onnxroof import analyze
>>> nodes = [helper.make_node("Relu", ["x"], ["a"], name="/blk/Relu"),
...          helper.make_node("Split", ["a"], ["b", "c"], name="Split_9", axis=1, num_outputs=2),
...          helper.make_node("Add", ["b", "c"], ["y"], name="/blk/Add")]
>>> graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
...                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
>>> analysis = analyze(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
>>> paths = {0: ("blk",), 1: (), 2: ("blk",)}
>>> adopted_paths(paths, analysis.nodes, analysis.cost_graph.outputs)[1]  # the Split joins its block
('blk',)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .structure import SYNTHETIC

if TYPE_CHECKING:
    from ...cost.records import NodeRecord

SIDE_OUTPUTS = "side outputs"  # the shared box of a module's dead ends: "3 side outputs"


def common_path(paths: Sequence[tuple[str, ...]]) -> tuple[str, ...]:
    """The deepest module holding every path.

    >>> common_path([("enc", "layer.0", "attn"), ("enc", "layer.0", "ffn")]), common_path([])
    (('enc', 'layer.0'), ())
    """
    if not paths:
        return ()
    first = paths[0]
    length = min(len(path) for path in paths)
    for depth in range(length):
        if any(path[depth] != first[depth] for path in paths):
            return first[:depth]
    return first[:length]


def live_nodes(records: Sequence[NodeRecord], outputs: Sequence[str]) -> set[int]:
    """The nodes (by index) one of whose outputs is a graph output or read by such a node: every
    other is a dead end. ``records`` are in the model's order, so one backward pass decides."""
    wanted = set(outputs)
    live: set[int] = set()
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        if any(tensor in wanted for tensor in record.outputs):
            live.add(index)
            wanted.update(record.inputs)
    return live


def adopted_paths(
    paths: dict[int, tuple[str, ...]], records: Sequence[NodeRecord], outputs: Sequence[str]
) -> dict[int, tuple[str, ...]]:
    """``paths`` (drawn node -> its module path) with the nodes the names put nowhere placed:
    an unscoped node in the deepest module holding its drawn neighbours (what it reads and what
    reads it; nothing changes in a model whose names carry no modules), and the dead ends of
    a module in one "n side outputs" box there when there are two or more."""
    if not any(paths.values()):
        return paths
    placed = dict(paths)
    producer_of = {tensor: index for index in paths for tensor in records[index].outputs}
    readers: dict[int, list[int]] = {}
    for index in paths:
        for tensor in dict.fromkeys(records[index].inputs):
            producer = producer_of.get(tensor)
            if producer is not None:
                readers.setdefault(producer, []).append(index)
    live = live_nodes(records, outputs)
    dead: dict[tuple[str, ...], list[int]] = {}
    for index in sorted(paths, reverse=True):  # readers first: a chain of unscoped nodes follows its end
        read = [placed[producer_of[t]] for t in dict.fromkeys(records[index].inputs) if t in producer_of]
        if index not in live:
            where = common_path([path for path in read if path]) if paths[index] == () else paths[index]
            dead.setdefault(where, []).append(index)
            placed[index] = where
            continue
        if paths[index]:
            continue
        around = [placed[reader] for reader in readers.get(index, [])] + [path for path in read if path]
        if around and all(around):  # every reader is in a module, and what it reads is
            placed[index] = common_path(around)
    for where, indices in dead.items():
        if len(indices) > 1:
            box = where + (f"{SYNTHETIC}dead{SYNTHETIC}{len(indices)} {SIDE_OUTPUTS}",)
            for index in indices:
                placed[index] = box
    return placed
