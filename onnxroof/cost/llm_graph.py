"""How the KV-cache search (``llm.py``) reads a graph: the records of a cache, a value's dims, the
nodes a tensor reaches through ops that pass it on, the graph output a tensor is returned as, a
cache's kind from its names, the nodes searched (If branches included) and a merged decoder's If.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import onnx

from ..ops import OpTrait, traits_of

_KEY = re.compile(r"(^|[._/\-])(key|keys|k)($|[._/\-])", re.IGNORECASE)
_VALUE = re.compile(r"(^|[._/\-])(value|values|v)($|[._/\-])", re.IGNORECASE)
# ops a cache or an index passes through unchanged but for its type (Identity, Cast, CastLike)
PASS_THROUGH = OpTrait.IDENTITY | OpTrait.RETYPE
# ops that keep an index tensor's values (token ids flattened before the embedding Gather)
VALUES_THROUGH = PASS_THROUGH | OpTrait.RESHAPE
# what a returned cache may pass through on its way to the attention's MatMul besides re-layouts:
# this stage's reading of how exporters build attention (GQA repeats, scaling), not op facts
CACHE_STEPS = frozenset({"Expand", "Concat", "Mul", "Div"})
MS = "com.microsoft"
_SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})  # ONNX's ops that hold subgraphs
# attention ops that take a KV cache: op -> ((past input slot, present output slot, kind), ...),
# past and present [B, H, length, D] unless noted
CACHE_SLOTS = {
    (MS, "GroupQueryAttention"): ((3, 1, "key"), (4, 2, "value")),
    (MS, "MultiHeadAttention"): ((6, 1, "key"), (7, 2, "value")),
    (MS, "DecoderMaskedMultiHeadAttention"): ((5, 1, "key"), (6, 2, "value")),
    (MS, "Attention"): ((4, 1, "key+value"),),  # past [2, B, H, length, D]
    ("", "Attention"): ((4, 1, "key"), (5, 2, "value")),
}


@dataclass(frozen=True)
class CacheTensor:
    """One past input the graph appends to, and the present output it returns."""

    past: str  # "" for a cache a prompt step returns with no past input
    present: str | None
    axis: int  # the cache-length axis of the past input
    kind: str  # "key" | "value" | "key+value" (a packed cache)
    how: str  # "Concat axis 2", "GroupQueryAttention past_key", ...
    shared: bool = False  # past and present are one max-length buffer, updated in place
    cross: bool = False  # cross-attention: computed once from the encoder output, read every step, never appended


def value_dims(value_info: onnx.ValueInfoProto) -> list[str | int | None]:
    tensor_type = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
        return []
    return [d.dim_param or (d.dim_value if d.HasField("dim_value") else None) for d in tensor_type.shape.dim]


def searched_nodes(graph: onnx.GraphProto) -> tuple[list[onnx.NodeProto], dict[str, str], set[str]]:
    """The nodes the cache search reads: the main graph's and, for each If in it, its branches'
    (nested subgraphs too); each branch output -> the If output it becomes; the initializers."""
    nodes: list[onnx.NodeProto] = []
    aliases: dict[str, str] = {}
    stored = {t.name for t in graph.initializer}
    _add_scope(graph, nodes, aliases, stored)
    return nodes, aliases, stored


def _add_scope(scope: onnx.GraphProto, nodes: list[onnx.NodeProto], aliases: dict[str, str], stored: set[str]) -> None:
    """Adds ``scope``'s nodes, then each subgraph's in turn (a function of the module, not a
    closure: a closure calling itself would keep the whole model's protobuf alive until a
    collection, which the CLI does not run)."""
    nodes.extend(scope.node)
    for node in scope.node:
        if node.op_type not in _SUBGRAPH_OPS and node.domain in ("", "ai.onnx"):
            continue  # (most nodes: an op type is read faster than the attributes)
        for attribute in node.attribute:
            if attribute.type != onnx.AttributeProto.GRAPH:
                continue
            branch = attribute.g
            stored.update(t.name for t in branch.initializer)
            if node.op_type == "If":
                made = {o for n in branch.node for o in n.output}
                aliases.update(
                    (inner.name, outer)
                    for inner, outer in zip(branch.output, node.output)
                    if outer and inner.name in made
                )
            _add_scope(branch, nodes, aliases, stored)


def _outer_reads(scope: onnx.GraphProto) -> set[str]:
    """The names ``scope``'s nodes (and their subgraphs') read from outside it."""
    read: set[str] = set()
    made = {t.name for t in scope.initializer} | {i.name for i in scope.input}
    for node in scope.node:
        read.update(name for name in node.input if name)
        made.update(node.output)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                read |= _outer_reads(attribute.g)
    return read - made


def branch_condition(
    graph: onnx.GraphProto, inputs: dict[str, onnx.ValueInfoProto], pasts: set[str]
) -> tuple[str, bool, str] | None:
    """A merged decoder's If: one whose condition is a graph input and of whose two branches only
    one reads the past inputs. (its condition input, the value taking that branch, the If's name)."""
    for index, node in enumerate(graph.node):
        if node.op_type != "If" or node.domain not in ("", "ai.onnx") or not node.input or node.input[0] not in inputs:
            continue
        reads = {a.name: bool(_outer_reads(a.g) & pasts) for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
        if reads.get("then_branch") != reads.get("else_branch") and len(reads) == 2:
            return node.input[0], reads["then_branch"], node.name or f"If_{index}"
    return None


def is_stored(name: str, producers, stored: set[str]) -> bool:
    """Whether ``name`` is an initializer, directly or through Identity/Cast/Transpose."""
    while name not in stored and name in producers and has_trait(producers[name], PASS_THROUGH | OpTrait.PERMUTES_AXES):
        name = producers[name].input[0]
    return name in stored


def has_trait(node: onnx.NodeProto, traits: OpTrait) -> bool:
    """Whether the registry gives ``node``'s op one of ``traits``."""
    return bool(traits_of(node.domain, node.op_type) & traits)


def reached_nodes(
    name: str, consumers, through: OpTrait = PASS_THROUGH, also: frozenset[str] = frozenset()
) -> list[tuple[onnx.NodeProto, int, list[int] | None]]:
    """The nodes reading ``name`` directly or through ops with one of the traits ``through``
    (default Identity/Cast) or named in ``also``, and Transpose, with the Transpose's permutation
    (reader axis -> axis of ``name``)."""
    found: list[tuple[onnx.NodeProto, int, list[int] | None]] = []
    frontier: list[tuple[str, list[int] | None]] = [(name, None)]
    while frontier:
        tensor, perm = frontier.pop()
        for node, slot in consumers.get(tensor, ()):
            passes = (
                node.op_type in also or has_trait(node, through) or (node.op_type == "Concat" and len(node.input) == 1)
            )
            if passes and slot == 0:
                frontier.append((node.output[0], perm))  # a one-input Concat is a copy
            elif node.op_type == "Transpose" and slot == 0:
                step = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
                if step is not None:
                    frontier.append((node.output[0], [perm[s] if perm else s for s in step]))
            else:
                found.append((node, slot, perm))
    return found


def returned_as(tensor: str, outputs: dict[str, list], consumers, aliases: dict[str, str]) -> str | None:
    """The graph output ``tensor`` is, directly or through Identity/Cast/Transpose (a cache's
    present), or as a branch's output an If returns (``aliases``)."""
    seen = 0
    while tensor not in outputs and seen < 8:
        if tensor in aliases:
            tensor, seen = aliases[tensor], seen + 1
            continue
        passing = [
            n
            for n, slot in consumers.get(tensor, ())
            if has_trait(n, PASS_THROUGH | OpTrait.PERMUTES_AXES) and slot == 0
        ]
        if not passing:
            return None
        tensor, seen = passing[0].output[0], seen + 1
    return tensor if tensor in outputs else None


def cache_kind(past: str, present: str) -> str:
    """A key or a value cache, by name (names tell only this; structure found the cache): the
    last part of a dotted name first (``past_key_values.0.encoder.value``), then the whole."""
    for text in (past, present):
        tail = re.split(r"[./]", text)[-1]
        if _KEY.search(tail) and not _VALUE.search(tail):
            return "key"
        if _VALUE.search(tail) and not _KEY.search(tail):
            return "value"
    for text in (past, present):
        if _KEY.search(text) and not _VALUE.search(text):
            return "key"
        if _VALUE.search(text) and not _KEY.search(text):
            return "value"
    if re.search(r"key", past, re.IGNORECASE):
        return "key"
    return "value" if re.search(r"val", past, re.IGNORECASE) else "cache"
