"""KV-cached decoders: the cache found from the graph's structure, prefill vs decode, KV figures.

A past input is a cache when the graph appends the new step's keys or values to it and returns
the result as a graph output: a ``Concat`` along one axis (torch.onnx, Hugging Face's exporter,
optimum; layouts [B, H, S, D] and [B, S, H, D]), or an attention op taking it as its past
(``com.microsoft`` GroupQueryAttention, MultiHeadAttention, Attention,
DecoderMaskedMultiHeadAttention; the opset-23 ``Attention``). That axis is the cache length and
its present output the one produced from it, whatever the names; names only tell a key from a
value. The new tokens are the integer input an embedding ``Gather`` reads (or ``inputs_embeds``),
an integer [batch, length] input read as positions is ``position_ids``, one read otherwise is the
attention mask (its length is past + new).

A seq2seq decoder's cross-attention cache is a past input with a self cache's dims but its own
length at the cache axis (the encoder's), which the attention reads and never appends to; the
outputs of its dims are what the step without a cache computes from the encoder output. A merged
decoder (one file with and without a cache, the network in the two branches of one ``If`` on an
input) is searched branches included; the branch that reads the past inputs is the one decode takes.

``--phase prefill --seq N`` binds new = N, past = 0; ``--phase decode --context N`` binds one new
token after N - 1 cached ones (N attended), including the values GroupQueryAttention takes
(``seqlens_k`` = N - 1, ``total_sequence_length`` = N), a shared past/present buffer's length
(N), a merged decoder's condition and, with ``--encoder-seq E``, the encoder length. Explicit
``--dim`` and ``--value`` always win. The figures of a step are in :mod:`onnxroof.cost.kv_report`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import onnx

from ..core.errors import OptionError
from ..frontend.inputs import expression_names, real_inputs
from ..core.tensors import TensorInfo
from ..ops import OpTrait, traits_of

# what a decoder phase needs to know, for the message when none is found
LOOKED_FOR = ("a past input the graph appends the new keys/values to (a Concat along one axis, or an attention "
              "op's past_key/past_value) and returns as a graph output")
_KEY = re.compile(r"(^|[._/\-])(key|keys|k)($|[._/\-])", re.IGNORECASE)
_VALUE = re.compile(r"(^|[._/\-])(value|values|v)($|[._/\-])", re.IGNORECASE)
_POSITION = re.compile(r"position", re.IGNORECASE)
_EMBEDS = re.compile(r"embed", re.IGNORECASE)
# ops a cache or an index passes through unchanged but for its type (Identity, Cast, CastLike)
_PASS_THROUGH = OpTrait.IDENTITY | OpTrait.RETYPE
_INTEGER = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})
# ops that keep an index tensor's values (token ids flattened before the embedding Gather)
_VALUES_THROUGH = _PASS_THROUGH | OpTrait.RESHAPE
# what a returned cache may pass through on its way to the attention's MatMul besides re-layouts:
# this stage's reading of how exporters build attention (GQA repeats, scaling), not op facts
_CACHE_STEPS = frozenset({"Expand", "Concat", "Mul", "Div"})
MS = "com.microsoft"
_SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})  # ONNX's ops that hold subgraphs
# attention ops that take a KV cache: op -> ((past input slot, present output slot, kind), ...),
# past and present [B, H, length, D] unless noted
_CACHE_SLOTS = {
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


@dataclass(frozen=True)
class DecoderLayout:
    """The caches, and the role of every symbolic input dim the phases bind."""

    caches: tuple[CacheTensor, ...]
    roles: dict[str, str]  # dim symbol -> "batch" | "sequence" | "past" | "total"
    values: dict[str, str]  # input name -> "seqlens_k" | "total_sequence_length" (values a phase gives)
    recognised: tuple[str, ...]  # what was recognised, one line each, for the outputs
    # a seq2seq decoder's cross-attention caches: past inputs read and never appended (present
    # None), and the presents the step without a cache computes from the encoder output (past "")
    cross: tuple[CacheTensor, ...] = ()
    # a merged decoder (one file with and without a cache): (the If's condition input, the value
    # that takes the branch reading the past inputs); decode gives that value, prefill the other
    branch: tuple[str, bool] | None = None

    @property
    def past_inputs(self) -> tuple[str, ...]:
        return tuple(c.past for c in self.caches if c.past)

    @property
    def present_outputs(self) -> tuple[str, ...]:
        return tuple(c.present for c in self.caches if c.present)


def _dims(value_info: onnx.ValueInfoProto) -> list[str | int | None]:
    tensor_type = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type") or not tensor_type.HasField("shape"):
        return []
    return [d.dim_param or (d.dim_value if d.HasField("dim_value") else None) for d in tensor_type.shape.dim]


def detect_decoder(model: onnx.ModelProto, prefill_only: bool = False) -> DecoderLayout | None:
    """The KV-cache layout of ``model`` read from its structure, or None when no input is a cache.
    ``prefill_only``: a graph with no past input but token ids (a decoder's prompt step, exported
    apart) gets a layout of its token inputs alone. The search reads the main graph's nodes and
    those of the branches of its If nodes (a merged decoder holds the network in the two
    branches of one If: its names must be unique model-wide, frontend.scopes)."""
    graph = model.graph
    inputs = {i.name: i for i in real_inputs(graph)}
    if not prefill_only and all(len(_dims(i)) < 3 for i in inputs.values()):
        return None  # a cache has rank 3 or more (_caches): no input can be one, known before reading the nodes
    outputs = {o.name: _dims(o) for o in graph.output}
    nodes, aliases, stored = searched_nodes(graph)
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in nodes:
        for slot, name in enumerate(node.input):
            if name:
                consumers.setdefault(name, []).append((node, slot))
    sequence_axes: dict[str, int] = {}
    caches = _caches(inputs, outputs, consumers, sequence_axes, aliases)
    values = _attention_values(inputs, consumers)
    tokens = _token_inputs(inputs, consumers, set(values))
    if not caches and not (prefill_only and "token ids" in tokens.values()):
        return None
    roles: dict[str, str] = {}
    recognised = []
    for cache in caches:
        if not cache.past:
            continue
        dims = _dims(inputs[cache.past])
        batch_axis = 1 if cache.kind == "key+value" else 0
        if cache.axis < len(dims) and isinstance(dims[cache.axis], str):
            roles.setdefault(dims[cache.axis], "total" if cache.shared else "past")  # type: ignore[arg-type]
        if batch_axis < len(dims) and isinstance(dims[batch_axis], str):
            roles.setdefault(dims[batch_axis], "batch")  # type: ignore[arg-type]
        recognised.append(f"cache {cache.past} axis {cache.axis} ({cache.kind}, {cache.how}"
                          + (f" -> {cache.present}" if cache.present else "") + (", shared buffer" if cache.shared else "")
                          + ")")
    for name, axis in sequence_axes.items():
        dims = _dims(inputs[name])
        if isinstance(dims[axis], str):
            roles.setdefault(dims[axis], "sequence")  # type: ignore[arg-type]
        if isinstance(dims[0], str):
            roles.setdefault(dims[0], "batch")  # type: ignore[arg-type]
        recognised.append(f"new tokens {name} axis {axis}")
    for name, role in values.items():
        recognised.append(f"value input {name} ({role})")
    if not caches:
        caches = _returned_caches(nodes, inputs, graph.output, consumers, aliases, stored)
        recognised.append("no past input: a prompt (prefill) step exported on its own; caches it returns: "
                          + (", ".join(f"{c.present} axis {c.axis}" for c in caches if not c.cross) or "none found"))
    cross = tuple(c for c in caches if c.cross) + tuple(cross_caches(inputs, graph.output, caches, consumers))
    caches = [c for c in caches if not c.cross]
    encoder = _encoder_roles(cross, inputs, outputs, roles, recognised)
    for name, role in tokens.items():
        dims = _dims(inputs[name])
        if len(dims) > 1 and dims[1] in encoder:
            role = "encoder attention mask"
        if dims and isinstance(dims[0], str):
            roles.setdefault(dims[0], "batch")
        if len(dims) > 1 and isinstance(dims[1], str):
            roles.setdefault(dims[1], "total" if role == "attention mask" else "sequence")
        recognised.append(f"{role} {name}" + (f" axis 1 ({dims[1]})" if len(dims) > 1 else ""))
    for name in values:  # seqlens_k [batch]
        dims = _dims(inputs[name])
        if dims and isinstance(dims[0], str):
            roles.setdefault(dims[0], "batch")
    branch = branch_condition(graph, inputs, {c.past for c in (*caches, *cross) if c.past})
    if branch is not None:
        recognised.append(f"merged decoder: If {branch[2]} on input {branch[0]}: its "
                          f"{'then' if branch[1] else 'else'} branch reads the past inputs (decode sets "
                          f"{branch[0]}={int(branch[1])}, prefill {int(not branch[1])})")
    return DecoderLayout(tuple(caches), roles, values, tuple(recognised), cross,
                         branch[:2] if branch is not None else None)


def _encoder_roles(cross: tuple[CacheTensor, ...], inputs: dict[str, onnx.ValueInfoProto], outputs: dict[str, list],
                   roles: dict[str, str], recognised: list[str]) -> set[str]:
    """The encoder's length: the dim at the cross-attention caches' length axis (role "encoder",
    set before the token inputs' roles: T5's encoder attention mask has that length); the
    symbols, and one line per cross cache and encoder output for the outputs."""
    encoder: set[str] = set()
    for cache in cross:
        dims = _dims(inputs[cache.past]) if cache.past else outputs.get(cache.present or "", [])
        length = dims[cache.axis] if cache.axis < len(dims) else None
        if isinstance(length, str):
            encoder.add(length)
            roles.setdefault(length, "encoder")
        if dims and isinstance(dims[0], str):
            roles.setdefault(dims[0], "batch")  # type: ignore[arg-type]
        recognised.append(f"cross-attention cache {cache.past or cache.present} axis {cache.axis} ({cache.kind}, "
                          f"{cache.how})")
    for name, value_info in inputs.items():  # the encoder's output, [batch, encoder length, hidden]
        dims = _dims(value_info)
        if len(dims) == 3 and dims[1] in encoder and value_info.type.tensor_type.elem_type not in _INTEGER:
            recognised.append(f"encoder output {name} axis 1 ({dims[1]})")
    return encoder


def _caches(inputs: dict[str, onnx.ValueInfoProto], outputs: dict[str, list],
            consumers: dict[str, list[tuple[onnx.NodeProto, int]]],
            sequence_axes: dict[str, int], aliases: dict[str, str]) -> list[CacheTensor]:
    """The caches among ``inputs``; fills ``sequence_axes`` (input -> its new-token axis) with the
    query, key and value inputs of the attention ops that take a cache."""
    found = []
    for name, value_info in inputs.items():
        rank = len(_dims(value_info))
        if rank < 3:
            continue
        for node, slot, perm in _reached(name, consumers):
            op = (node.domain if node.domain not in ("", "ai.onnx") else "", node.op_type)
            if node.op_type == "Concat" and op[0] == "" and slot == 0 and len(node.input) >= 2:
                present = _to_output(node.output[0], outputs, consumers, aliases)
                if present is None:
                    continue
                axis = next((a.i for a in node.attribute if a.name == "axis"), 0) % rank
                axis = perm[axis] if perm else axis
                found.append(CacheTensor(name, present, axis, _kind(name, present), f"Concat axis {axis}"))
                break
            if node.op_type in ("ScatterND", "ScatterElements") and op[0] == "" and slot == 0:
                # a static cache: a max-length buffer the new positions are written into, in place
                present = _to_output(node.output[0], outputs, consumers, aliases)
                if present is None:
                    continue
                dims = _dims(inputs[name])
                free = [a for a, d in enumerate(dims) if a > 0 and isinstance(d, str)]
                axis = free[0] if len(free) == 1 else 2  # read off the input itself: no permutation
                found.append(CacheTensor(name, present, axis, _kind(name, present), f"{node.op_type} input 0", True))
                break
            for past_slot, present_slot, kind in _CACHE_SLOTS.get(op, ()):
                if slot == past_slot:
                    # the op's query, key and value graph inputs hold the new tokens: their length axis
                    for new in node.input[:3]:
                        new_dims = _dims(inputs[new]) if new in inputs else []
                        if len(new_dims) in (3, 4):
                            sequence_axes.setdefault(new, 1 if len(new_dims) == 3 else 2)
                    present = node.output[present_slot] if present_slot < len(node.output) else ""
                    present = _to_output(present, outputs, consumers, aliases) if present else None
                    axis = 3 if kind == "key+value" else 2
                    # one max-length buffer: the present has the past's length (the same dim)
                    past_length = _dims(inputs[name])[axis] if axis < rank else None
                    shared = present is not None and past_length is not None and axis < len(outputs[present]) \
                        and outputs[present][axis] == past_length
                    found.append(CacheTensor(name, present, perm[axis] if perm else axis, kind,
                                             f"{node.op_type} input {past_slot}", shared))
                    break
            else:
                continue
            break
    return found


def _returned_caches(nodes: list[onnx.NodeProto], inputs: dict[str, onnx.ValueInfoProto], graph_outputs,
                     consumers, aliases: dict[str, str], stored: set[str]) -> list[CacheTensor]:
    """In a prompt step with no past input, the caches it returns: rank-4 graph outputs that the
    graph's own attention also reads (a MatMul, through re-layouts), their length axis the token
    ids' length symbol; those the attention reads with another length at that axis are a
    seq2seq decoder's cross-attention caches (computed from the encoder output)."""
    tokens = [n for n, role in _token_inputs(inputs, consumers, set()).items() if role == "token ids"]
    length = _dims(inputs[tokens[0]])[1] if tokens and len(_dims(inputs[tokens[0]])) > 1 else None
    producers = {o: n for n in nodes for o in n.output}
    found, other = [], []
    for output in graph_outputs:
        dims = _dims(output)
        if len(dims) != 4:
            continue
        names = [output.name] + [inner for inner, outer in aliases.items() if outer == output.name]  # a branch's
        for name in names[:]:  # and what it is a re-layout of: a present key beside the K^T the attention reads
            producer = producers.get(name)
            while producer is not None and _is(producer, _VALUES_THROUGH | OpTrait.PERMUTES_AXES) and len(names) < 16:
                names.append(producer.input[0])
                producer = producers.get(producer.input[0])
        reached = [r for name in names for r in _reached(name, consumers, _VALUES_THROUGH, _CACHE_STEPS)] \
            if length else []
        # its length: the token ids' symbol, or an expression of it (optimum's "past + sequence")
        axis = next((a for a, d in enumerate(dims) if d == length or (
            isinstance(d, str) and length in (expression_names(d) or ()))), None) if length else None
        if axis is not None and any(n.op_type == "MatMul" for n, _, _ in reached):
            found.append(CacheTensor("", output.name, axis, _kind(output.name, output.name),
                                     "returned by the prompt step"))
            continue
        # a static cache: a stored max-length buffer the prompt's keys are scattered into ([B, H, L, D])
        producer = producers.get(output.name)
        while producer is not None and _is(producer, _PASS_THROUGH | OpTrait.PERMUTES_AXES):
            producer = producers.get(producer.input[0])
        if producer is not None and producer.op_type in ("ScatterND", "ScatterElements") and _is_stored(
                producer.input[0], producers, stored):
            found.append(CacheTensor("", output.name, 2, _kind(output.name, output.name),
                                     f"a stored buffer {producer.op_type} writes the prompt into"))
        elif any(n.op_type == "MatMul" for n, _, _ in reached):
            other.append(output)  # read by the attention at another length: a cross cache, if there are self caches
    if found:  # read by the attention with a length of its own at the self caches' length axis
        axis = found[0].axis
        for output in other:
            dims = _dims(output)
            if isinstance(dims[axis], str) and dims[axis] != length:
                found.append(CacheTensor("", output.name, axis, _kind(output.name, output.name),
                                         "computed from the encoder output and returned", cross=True))
    return found


def searched_nodes(graph: onnx.GraphProto) -> tuple[list[onnx.NodeProto], dict[str, str], set[str]]:
    """The nodes the cache search reads: the main graph's and, for each If in it, its branches'
    (nested subgraphs too); each branch output -> the If output it becomes; the initializers."""
    nodes: list[onnx.NodeProto] = []
    aliases: dict[str, str] = {}
    stored = {t.name for t in graph.initializer}

    def add(scope: onnx.GraphProto) -> None:
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
                    aliases.update((inner.name, outer) for inner, outer in zip(branch.output, node.output)
                                   if outer and inner.name in made)
                add(branch)

    add(graph)
    # ``add`` calls itself through its closure: a cycle that would keep ``nodes`` (and with them
    # the whole model's protobuf) alive until a collection, which the CLI does not run (gc paused)
    del add
    return nodes, aliases, stored


def _outer_reads(scope: onnx.GraphProto) -> set[str]:
    """The names ``scope``'s nodes (and their subgraphs') read from outside it."""
    read, made = set(), {t.name for t in scope.initializer} | {i.name for i in scope.input}
    for node in scope.node:
        read.update(name for name in node.input if name)
        made.update(node.output)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                read |= _outer_reads(attribute.g)
    return read - made


def branch_condition(graph: onnx.GraphProto, inputs: dict[str, onnx.ValueInfoProto],
                     pasts: set[str]) -> tuple[str, bool, str] | None:
    """A merged decoder's If: one whose condition is a graph input and of whose two branches only
    one reads the past inputs. (its condition input, the value taking that branch, the If's name)."""
    for index, node in enumerate(graph.node):
        if node.op_type != "If" or node.domain not in ("", "ai.onnx") or not node.input or node.input[0] not in inputs:
            continue
        reads = {a.name: bool(_outer_reads(a.g) & pasts) for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
        if reads.get("then_branch") != reads.get("else_branch") and len(reads) == 2:
            return node.input[0], reads["then_branch"], node.name or f"If_{index}"
    return None


def cross_caches(inputs: dict[str, onnx.ValueInfoProto], graph_outputs, caches: list[CacheTensor],
                 consumers) -> list[CacheTensor]:
    """A seq2seq decoder's cross-attention caches among the inputs that are not self caches: each
    has a self cache's rank and dims but at the cache axis, where its length is its own (the
    encoder's), and the attention reads it (a MatMul, through re-layouts) and never appends to it.
    With them, the graph outputs of the same declared dims: the presents that the step without a
    cache computes from the encoder output (a merged decoder's cached branch returns placeholders)."""
    selves = [c for c in caches if c.past and not c.cross]
    taken = {c.past for c in caches}
    found: list[CacheTensor] = []
    for name, value_info in inputs.items():
        dims = _dims(value_info)
        for cache in selves:
            own, axis = _dims(inputs[cache.past]), cache.axis
            if name in taken or len(dims) != len(own) or axis >= len(dims) or dims[axis] == own[axis] \
                    or any(a != b for i, (a, b) in enumerate(zip(dims, own)) if i != axis):
                continue
            if any(n.op_type == "MatMul" for n, _, _ in _reached(name, consumers, _VALUES_THROUGH, _CACHE_STEPS)):
                found.append(CacheTensor(name, None, axis, _kind(name, name), "read by MatMul, never appended",
                                         cross=True))
                break
    past_dims = [_dims(inputs[c.past]) for c in found]
    presents = {c.present for c in caches}
    for output in graph_outputs:
        if output.name not in presents and _dims(output) in past_dims:
            found.append(CacheTensor("", output.name, found[0].axis, _kind(output.name, output.name),
                                     "computed from the encoder output when there is no cache", cross=True))
    return found


def _is_stored(name: str, producers, stored: set[str]) -> bool:
    """Whether ``name`` is an initializer, directly or through Identity/Cast/Transpose."""
    while name not in stored and name in producers and _is(producers[name], _PASS_THROUGH | OpTrait.PERMUTES_AXES):
        name = producers[name].input[0]
    return name in stored


def _is(node: onnx.NodeProto, traits: OpTrait) -> bool:
    """Whether the registry gives ``node``'s op one of ``traits``."""
    return bool(traits_of(node.domain, node.op_type) & traits)


def _reached(name: str, consumers, through: OpTrait = _PASS_THROUGH,
             also: frozenset[str] = frozenset()) -> list[tuple[onnx.NodeProto, int, list[int] | None]]:
    """The nodes reading ``name`` directly or through ops with one of the traits ``through``
    (default Identity/Cast) or named in ``also``, and Transpose, with the Transpose's permutation
    (reader axis -> axis of ``name``)."""
    found, frontier = [], [(name, None)]
    while frontier:
        tensor, perm = frontier.pop()
        for node, slot in consumers.get(tensor, ()):
            passes = node.op_type in also or _is(node, through) or (node.op_type == "Concat" and len(node.input) == 1)
            if passes and slot == 0:
                frontier.append((node.output[0], perm))  # a one-input Concat is a copy
            elif node.op_type == "Transpose" and slot == 0:
                step = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
                if step is not None:
                    frontier.append((node.output[0], [perm[s] if perm else s for s in step]))
            else:
                found.append((node, slot, perm))
    return found


def _to_output(tensor: str, outputs: dict[str, list], consumers, aliases: dict[str, str]) -> str | None:
    """The graph output ``tensor`` is, directly or through Identity/Cast/Transpose (a cache's
    present), or as a branch's output an If returns (``aliases``)."""
    seen = 0
    while tensor not in outputs and seen < 8:
        if tensor in aliases:
            tensor, seen = aliases[tensor], seen + 1
            continue
        passing = [n for n, slot in consumers.get(tensor, ())
                   if _is(n, _PASS_THROUGH | OpTrait.PERMUTES_AXES) and slot == 0]
        if not passing:
            return None
        tensor, seen = passing[0].output[0], seen + 1
    return tensor if tensor in outputs else None


def _kind(past: str, present: str) -> str:
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
    return "key" if re.search(r"key", past, re.IGNORECASE) else "value" if re.search(r"val", past, re.IGNORECASE) else "cache"


def _attention_values(inputs: dict[str, onnx.ValueInfoProto], consumers) -> dict[str, str]:
    """GroupQueryAttention's seqlens_k (input 5) and total_sequence_length (input 6), when graph inputs."""
    values = {}
    for name in inputs:
        for node, slot in consumers.get(name, ()):
            if node.op_type == "GroupQueryAttention" and node.domain == MS and slot in (5, 6):
                values[name] = "seqlens_k" if slot == 5 else "total_sequence_length"
    return values


def _token_inputs(inputs: dict[str, onnx.ValueInfoProto], consumers, skip: set[str]) -> dict[str, str]:
    """Integer [batch, length] inputs: the token ids (indices of an embedding Gather), position ids
    (read as positions: by a Gather of a table after the token ids, RotaryEmbedding, or by name) and
    the attention mask (any other); ``inputs_embeds`` by name when there are no token ids."""
    roles = {}
    for name, value_info in inputs.items():
        tensor_type = value_info.type.tensor_type
        dims = _dims(value_info)
        if name in skip or len(dims) != 2 or tensor_type.elem_type not in _INTEGER:
            continue
        readers = [n.op_type for n, _, _ in _reached(name, consumers, _VALUES_THROUGH)]
        if _POSITION.search(name) or "RotaryEmbedding" in readers:
            roles[name] = "position ids"
        elif any(op in ("Gather", "GatherBlockQuantized") for op in readers) and "token ids" not in roles.values():
            roles[name] = "token ids"
        else:
            roles[name] = "attention mask"
    if "token ids" not in roles.values():
        embeds = next((n for n, v in inputs.items() if _EMBEDS.search(n) and len(_dims(v)) == 3), None)
        if embeds:
            roles[embeds] = "token embeddings"
    return roles


def phase_dims(layout: DecoderLayout, phase: str, seq: int | None, context: int | None,
               batch: int | None = None, encoder: int | None = None) -> tuple[dict[str, int], dict[str, list[int]]]:
    """The dim values and input values a phase stands for (explicit --dim and --value win):
    ``encoder`` is the encoder's length a seq2seq decoder's cross-attention reads (left out when
    None); a merged decoder's condition takes the branch with the cache in decode, the other in
    prefill."""
    if phase == "prefill":
        if not seq:
            raise OptionError("seq", "{opt.phase} prefill needs {opt.seq} N (the prompt length)")
        new, cached = seq, 0
    elif phase == "decode":
        if not context:
            raise OptionError("context", "{opt.phase} decode needs {opt.context} N, N >= 1: the tokens attended, "
                              "the new one included")
        new, cached = 1, context - 1
    else:
        raise OptionError("phase", "{opt.phase} {phase}: choose prefill or decode", phase=phase)
    rows = batch or 1
    sizes = {"batch": rows, "sequence": new, "past": cached, "total": new + cached}
    if encoder is not None:
        sizes["encoder"] = encoder
    # a dim written as an expression ("past_sequence_length + sequence_length") takes its value from
    # its names once they are bound (frontend.inputs), never as a flag of its own
    dims = {symbol: sizes[role] for symbol, role in layout.roles.items()
            if role in sizes and not expression_names(symbol)}
    values = {name: [new + cached - 1] * rows if role == "seqlens_k" else [new + cached]
              for name, role in layout.values.items()}
    if layout.branch is not None:
        condition, cached_branch = layout.branch
        values[condition] = [int(cached_branch if phase == "decode" else not cached_branch)]
    return dims, values


def dims_fixed_by_the_graph(layout: DecoderLayout, tensors: dict[str, TensorInfo]) -> dict[str, int]:
    """Symbolic dims of the past inputs that the graph fixes: a present output has the past's dims
    but for the cache axis, so a head size left symbolic (onnxruntime-genai's ``kv_cache_dim``)
    is the present's, once the shapes are inferred."""
    fixed: dict[str, int] = {}
    for cache in layout.caches:
        past, present = tensors.get(cache.past), tensors.get(cache.present or "")
        if past is None or present is None or past.shape is None or present.shape is None:
            continue
        if len(past.shape) != len(present.shape):
            continue
        for axis, (before, after) in enumerate(zip(past.shape, present.shape)):
            if axis != cache.axis and isinstance(before, str) and isinstance(after, int):
                fixed.setdefault(before, after)
    return fixed
