"""Subgraph scopes: a tensor name one subgraph defines may be defined again by a sibling.

ONNX gives each graph its own scope: the two branches of an ``If`` (and the bodies of two
nodes) may each define a tensor of the same name, and optimum's merged decoders do
(``/model/decoder/Add_output_0`` is the embedding sum in the branch without a cache and the
past length plus one in the branch with it). Every later stage keys tensors by name, model-wide,
so such names are made unique first: each name defined in more than one scope is renamed in
every subgraph that defines it, ``NAME@then_branch`` (the path of subgraph attributes from the
main graph), and the references in that subgraph and below follow. The main graph's names are
kept; so are names defined once.

>>> from onnx import helper, TensorProto
>>> branch = lambda name, op: helper.make_graph(
...     [helper.make_node(op, ["x"], ["t"]), helper.make_node("Identity", ["t"], ["out_" + name])], name, [],
...     [helper.make_tensor_value_info("out_" + name, TensorProto.FLOAT, None)])
>>> node = helper.make_node("If", ["c"], ["y"], then_branch=branch("then", "Relu"), else_branch=branch("else", "Neg"))
>>> model = helper.make_model(helper.make_graph([node], "g", [], []))
>>> separate_sibling_scopes(model)  # t, in each branch
2
>>> [[list(n.input) + list(n.output) for n in a.g.node] for a in model.graph.node[0].attribute]  # else, then
[[['x', 't@else_branch'], ['t@else_branch', 'out_else']], [['x', 't@then_branch'], ['t@then_branch', 'out_then']]]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import onnx

from ..core.nodes import DEFAULT_DOMAINS, NodeFields, has_subgraph, nested_graphs, read_node_fields

_GRAPH = onnx.AttributeProto.GRAPH
_CONTROL_FLOW = frozenset({"If", "Loop", "Scan", "SequenceMap"})  # ONNX's ops that hold subgraphs


def _defined(graph: onnx.GraphProto) -> list[str]:
    """The names ``graph`` itself defines: its formal inputs, initializers and node outputs."""
    return (
        [i.name for i in graph.input]
        + [t.name for t in graph.initializer]
        + [o for node in graph.node for o in node.output if o]
    )


def separate_sibling_scopes(model: onnx.ModelProto, fields: Sequence[NodeFields] | None = None) -> int:
    """Rename, in place, the tensors that subgraphs define under a name another scope defines
    too; return how many definitions were renamed. ``fields``, the main graph's NodeFields when
    read already, make the common case cheap: a model whose main graph has no control-flow node
    (nor any op of another domain) is left as it is after reading its nodes' op types alone."""
    graph = model.graph
    fields = read_node_fields(graph.node) if fields is None else fields
    if not any(
        f.attributes and has_subgraph(f.attributes)
        for f in fields
        if f.op_type in _CONTROL_FLOW or f.domain not in DEFAULT_DOMAINS
    ):
        return 0
    counts: Counter = Counter()
    for scope in (graph, *nested_graphs(graph)):
        counts.update(set(_defined(scope)))
    clashing = {name for name, count in counts.items() if count > 1}
    if not clashing:
        return 0
    taken = set(counts)
    renamed = 0

    def walk(scope: onnx.GraphProto, path: str, outer: dict[str, str]) -> None:
        nonlocal renamed
        names = dict(outer)
        for name in dict.fromkeys(_defined(scope)):
            if name in clashing:
                new, copy = f"{name}@{path}", 2
                while new in taken:
                    new, copy = f"{name}@{path}#{copy}", copy + 1
                taken.add(new)
                names[name] = new
                renamed += 1
        if names:
            for value in (*scope.input, *scope.output, *scope.value_info, *scope.initializer):
                value.name = names.get(value.name, value.name)
            for node in scope.node:
                for slot, name in enumerate(node.input):
                    if name in names:
                        node.input[slot] = names[name]
                for slot, name in enumerate(node.output):
                    if name in names:
                        node.output[slot] = names[name]
        for node in scope.node:
            for attribute in node.attribute:
                if attribute.type == _GRAPH:
                    walk(attribute.g, f"{path}/{attribute.name}" if path else attribute.name, names)

    for node in graph.node:  # the main graph keeps its names; its subgraphs see them as they are
        for attribute in node.attribute:
            if attribute.type == _GRAPH:
                walk(attribute.g, attribute.name, {})
    return renamed
