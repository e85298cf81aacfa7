"""What every stage reads of a graph's nodes: their fields, read once (``NodeFields``), the
names they are shown by (``node_names``), and the subgraphs below them (If branches, Loop and
Scan bodies)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import onnx

DEFAULT_DOMAINS = ("", "ai.onnx")  # the names of ONNX's own op domain


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
    return [
        NodeFields(node.name, node.op_type, node.domain, node.input[:], node.output[:], node.attribute or ())
        for node in nodes
    ]


def node_names(nodes: Sequence[onnx.NodeProto | NodeFields]) -> list[str]:
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


def nested_graphs(graph: onnx.GraphProto, fields: Sequence[NodeFields] | None = None) -> Iterator[onnx.GraphProto]:
    """Every subgraph below ``graph`` (If branches, Loop and Scan bodies), depth first. ``fields``,
    the graph's NodeFields when read already, spare reading each node's attributes again (about
    2 µs a node)."""
    for attributes in (node.attribute for node in graph.node) if fields is None else (f.attributes for f in fields):
        for attribute in attributes:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
                yield from nested_graphs(attribute.g)


def has_subgraph(attributes: Iterable[onnx.AttributeProto]) -> bool:
    return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in attributes)
