"""Model-local functions, inlined before anything else reads the graph: each call is replaced by
the function's body. A function may call others, so the inlined graph can be exponentially larger
than the file (41 functions, each calling the previous one twice, make 2^40 nodes from 3.4 KB):
its size is worked out from the call graph first, and a model past :data:`MAX_INLINED_NODES` is
refused in one line, as is a function that calls itself.

>>> from onnx import helper
>>> def twice(name, callee):
...     calls = [helper.make_node(callee, ["x"], ["h"], domain="local"),
...              helper.make_node(callee, ["h"], ["y"], domain="local")]
...     return helper.make_function("local", name, ["x"], ["y"], calls, [helper.make_opsetid("", 17)])
>>> leaf = helper.make_function("local", "f0", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])],
...                             [helper.make_opsetid("", 17)])
>>> graph = helper.make_graph([helper.make_node("f3", ["x"], ["y"], domain="local")], "g", [], [])
>>> model = helper.make_model(graph, functions=[leaf, twice("f1", "f0"), twice("f2", "f1"), twice("f3", "f2")])
>>> inlined_node_count(model)  # f3 -> 2 x f2 -> 4 x f1 -> 8 x f0, one Relu each
8
"""

from __future__ import annotations

import onnx
import onnx.inliner

from ..core.errors import ModelError

# The most nodes inlining may make: 1.2 times the 100,000-node chain of benchmarks/scale.py (real
# exports rarely pass 100,000 nodes). Measured on chains of Relu from doubling functions: 131,072
# nodes took 451 MB in summary (with or without --target l4) and 500 MB in report --target l4, 9 s;
# 177,147 (a function calling the next three times) 573 and 666 MB. The limit keeps a 2 KB hostile
# file within issue 43's budget of 500 MB and 10 s.
MAX_INLINED_NODES = 120_000


def inline_functions(model: onnx.ModelProto, label: str = "model") -> onnx.ModelProto:
    """``model`` with its model-local functions inlined, or :class:`ModelError` when that would
    make more than :data:`MAX_INLINED_NODES` nodes or a function calls itself."""
    limit = MAX_INLINED_NODES
    count = inlined_node_count(model, limit, label)
    if count > limit:
        raise ModelError(
            f"{label}: inlining its {len(model.functions)} model-local functions would make more than {limit:,} "
            f"nodes (functions that call each other several times over multiply); onnxroof refuses models past that: "
            "check the export, or inline the functions yourself (onnx.inliner) if the model really is that large"
        )
    return onnx.inliner.inline_local_functions(model)


def inlined_node_count(model: onnx.ModelProto, limit: int = MAX_INLINED_NODES, label: str = "model") -> int:
    """The nodes of ``model``'s graph, subgraphs included, once every call of a model-local
    function is replaced by its body (recursively); any count past ``limit`` is ``limit + 1``.
    Linear in the model's size: each function's size is worked out once, callees first."""
    functions = {_key(f): f for f in model.functions}
    sizes: dict[tuple[str, str, str], int] = {}
    for key in functions:
        if key in sizes:
            continue
        # depth-first over the call graph, without Python recursion (a chain of many functions)
        stack: list[tuple[tuple[str, str, str], list[tuple[str, str, str]]]] = [
            (key, _callees(functions[key], functions))
        ]
        on_path = {key}
        while stack:
            current, pending = stack[-1]
            callee = next((c for c in pending if c not in sizes), None)
            if callee is None:
                sizes[current] = _count(functions[current].node, sizes, limit)
                on_path.discard(current)
                stack.pop()
            elif callee in on_path:
                raise ModelError(
                    f"{label}: model-local function {callee[1]!r} calls itself (through "
                    f"{current[1]!r}), so it cannot be inlined: fix the export"
                )
            else:
                pending.remove(callee)
                on_path.add(callee)
                stack.append((callee, _callees(functions[callee], functions)))
    return _count(model.graph.node, sizes, limit)


def _key(item: onnx.FunctionProto | onnx.NodeProto) -> tuple[str, str, str]:
    """How a call names a function: domain, name and overload (onnx's inliner matches the same)."""
    name = item.name if isinstance(item, onnx.FunctionProto) else item.op_type
    return item.domain, name, getattr(item, "overload", "")


def _nodes_within(nodes) -> list[onnx.NodeProto]:
    """``nodes`` and the nodes of their subgraphs, at any depth."""
    found, stack = [], list(nodes)
    while stack:
        node = stack.pop()
        found.append(node)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                stack.extend(attribute.g.node)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                stack.extend(n for g in attribute.graphs for n in g.node)
    return found


def _callees(function: onnx.FunctionProto, functions: dict) -> list[tuple[str, str, str]]:
    return list(dict.fromkeys(k for n in _nodes_within(function.node) if (k := _key(n)) in functions))


def _count(nodes, sizes: dict[tuple[str, str, str], int], limit: int) -> int:
    """The nodes ``nodes`` make once inlined (a call: its function's size), at most ``limit + 1``."""
    total = 0
    for node in _nodes_within(nodes):
        total += sizes.get(_key(node), 1)
        if total > limit:
            return limit + 1
    return total
