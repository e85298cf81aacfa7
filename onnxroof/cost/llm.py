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
from ..core.tensors import TensorInfo
from ..frontend.inputs import expression_names, real_inputs
from ..ops import OpTrait
from .llm_graph import (
    CACHE_SLOTS,
    CACHE_STEPS,
    MS,
    PASS_THROUGH,
    VALUES_THROUGH,
    CacheTensor,
    branch_condition,
    cache_kind,
    has_trait,
    is_stored,
    reached_nodes,
    returned_as,
    searched_nodes,
    value_dims,
)

# what a decoder phase needs to know, for the message when none is found
LOOKED_FOR = (
    "a past input the graph appends the new keys/values to (a Concat along one axis, or an attention "
    "op's past_key/past_value) and returns as a graph output"
)
_POSITION = re.compile(r"position", re.IGNORECASE)
_EMBEDS = re.compile(r"embed", re.IGNORECASE)
_INTEGER = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})


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


def detect_decoder(model: onnx.ModelProto, prefill_only: bool = False) -> DecoderLayout | None:
    """The KV-cache layout of ``model`` read from its structure, or None when no input is a cache.
    ``prefill_only``: a graph with no past input but token ids (a decoder's prompt step, exported
    apart) gets a layout of its token inputs alone. The search reads the main graph's nodes and
    those of the branches of its If nodes (a merged decoder holds the network in the two
    branches of one If: its names must be unique model-wide, frontend.scopes)."""
    graph = model.graph
    inputs = {i.name: i for i in real_inputs(graph)}
    if not prefill_only and all(len(value_dims(i)) < 3 for i in inputs.values()):
        return None  # a cache has rank 3 or more (_caches): no input can be one, known before reading the nodes
    outputs = {o.name: value_dims(o) for o in graph.output}
    nodes, aliases, stored = searched_nodes(graph)
    consumers = _consumers(nodes)
    sequence_axes: dict[str, int] = {}
    caches = _caches(inputs, outputs, consumers, sequence_axes, aliases)
    values = _attention_values(inputs, consumers)
    tokens = _token_inputs(inputs, consumers, set(values))
    if not caches and not (prefill_only and "token ids" in tokens.values()):
        return None
    roles: dict[str, str] = {}
    recognised: list[str] = []
    _cache_roles(caches, inputs, roles, recognised)
    _new_token_roles(sequence_axes, inputs, roles, recognised)
    recognised.extend(f"value input {name} ({role})" for name, role in values.items())
    if not caches:
        caches = _returned_caches(nodes, inputs, graph.output, consumers, aliases, stored)
        recognised.append(
            "no past input: a prompt (prefill) step exported on its own; caches it returns: "
            + (", ".join(f"{c.present} axis {c.axis}" for c in caches if not c.cross) or "none found")
        )
    cross = tuple(c for c in caches if c.cross) + tuple(cross_caches(inputs, graph.output, caches, consumers))
    caches = [c for c in caches if not c.cross]
    encoder = _encoder_roles(cross, inputs, outputs, roles, recognised)
    _token_roles(tokens, encoder, inputs, roles, recognised)
    for name in values:  # seqlens_k [batch]
        _set_role(roles, value_dims(inputs[name]), 0, "batch")
    branch = branch_condition(graph, inputs, {c.past for c in (*caches, *cross) if c.past})
    if branch is not None:
        recognised.append(
            f"merged decoder: If {branch[2]} on input {branch[0]}: its "
            f"{'then' if branch[1] else 'else'} branch reads the past inputs (decode sets "
            f"{branch[0]}={int(branch[1])}, prefill {int(not branch[1])})"
        )
    return DecoderLayout(
        tuple(caches), roles, values, tuple(recognised), cross, branch[:2] if branch is not None else None
    )


def _consumers(nodes: list[onnx.NodeProto]) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    """tensor -> (node, input slot) of every read of it."""
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in nodes:
        for slot, name in enumerate(node.input):
            if name:
                consumers.setdefault(name, []).append((node, slot))
    return consumers


def _set_role(roles: dict[str, str], dims: list[str | int | None], axis: int, role: str) -> None:
    """The symbol at ``dims[axis]`` (if it is one) has ``role``, unless an earlier finding gave it one."""
    if axis < len(dims):
        symbol = dims[axis]
        if isinstance(symbol, str):
            roles.setdefault(symbol, role)


def _cache_roles(
    caches: list[CacheTensor], inputs: dict[str, onnx.ValueInfoProto], roles: dict[str, str], recognised: list[str]
) -> None:
    """Each past input's length axis (past, or total for a shared buffer) and batch axis."""
    for cache in caches:
        if not cache.past:
            continue
        dims = value_dims(inputs[cache.past])
        _set_role(roles, dims, cache.axis, "total" if cache.shared else "past")
        _set_role(roles, dims, 1 if cache.kind == "key+value" else 0, "batch")
        recognised.append(
            f"cache {cache.past} axis {cache.axis} ({cache.kind}, {cache.how}"
            + (f" -> {cache.present}" if cache.present else "")
            + (", shared buffer" if cache.shared else "")
            + ")"
        )


def _new_token_roles(
    sequence_axes: dict[str, int], inputs: dict[str, onnx.ValueInfoProto], roles: dict[str, str], recognised: list[str]
) -> None:
    """The attention's query, key and value inputs: their length axis holds the new tokens."""
    for name, axis in sequence_axes.items():
        dims = value_dims(inputs[name])
        _set_role(roles, dims, axis, "sequence")
        _set_role(roles, dims, 0, "batch")
        recognised.append(f"new tokens {name} axis {axis}")


def _token_roles(
    tokens: dict[str, str],
    encoder: set[str],
    inputs: dict[str, onnx.ValueInfoProto],
    roles: dict[str, str],
    recognised: list[str],
) -> None:
    """The token inputs' [batch, length]: the length is new tokens, or all attended for a mask
    (one as long as the encoder is the encoder's mask)."""
    for name, role in tokens.items():
        dims = value_dims(inputs[name])
        if len(dims) > 1 and dims[1] in encoder:
            role = "encoder attention mask"
        _set_role(roles, dims, 0, "batch")
        _set_role(roles, dims, 1, "total" if role == "attention mask" else "sequence")
        recognised.append(f"{role} {name}" + (f" axis 1 ({dims[1]})" if len(dims) > 1 else ""))


def _encoder_roles(
    cross: tuple[CacheTensor, ...],
    inputs: dict[str, onnx.ValueInfoProto],
    outputs: dict[str, list],
    roles: dict[str, str],
    recognised: list[str],
) -> set[str]:
    """The encoder's length: the dim at the cross-attention caches' length axis (role "encoder",
    set before the token inputs' roles: T5's encoder attention mask has that length); the
    symbols, and one line per cross cache and encoder output for the outputs."""
    encoder: set[str] = set()
    for cache in cross:
        dims = value_dims(inputs[cache.past]) if cache.past else outputs.get(cache.present or "", [])
        length = dims[cache.axis] if cache.axis < len(dims) else None
        if isinstance(length, str):
            encoder.add(length)
            roles.setdefault(length, "encoder")
        if dims and isinstance(dims[0], str):
            roles.setdefault(dims[0], "batch")
        recognised.append(
            f"cross-attention cache {cache.past or cache.present} axis {cache.axis} ({cache.kind}, {cache.how})"
        )
    for name, value_info in inputs.items():  # the encoder's output, [batch, encoder length, hidden]
        dims = value_dims(value_info)
        if len(dims) == 3 and dims[1] in encoder and value_info.type.tensor_type.elem_type not in _INTEGER:
            recognised.append(f"encoder output {name} axis 1 ({dims[1]})")
    return encoder


@dataclass(frozen=True)
class _Reads:
    """What the search for past inputs reads of the graph."""

    inputs: dict[str, onnx.ValueInfoProto]  # the real graph inputs
    outputs: dict[str, list]  # graph output -> its dims
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]]  # tensor -> (node, slot) reading it
    aliases: dict[str, str]  # a branch's output -> the If output it becomes

    def present(self, tensor: str) -> str | None:
        """The graph output ``tensor`` is returned as, if any."""
        return returned_as(tensor, self.outputs, self.consumers, self.aliases)


def _caches(
    inputs: dict[str, onnx.ValueInfoProto],
    outputs: dict[str, list],
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]],
    sequence_axes: dict[str, int],
    aliases: dict[str, str],
) -> list[CacheTensor]:
    """The caches among ``inputs``; fills ``sequence_axes`` (input -> its new-token axis) with the
    query, key and value inputs of the attention ops that take a cache."""
    reads = _Reads(inputs, outputs, consumers, aliases)
    found = []
    for name, value_info in inputs.items():
        rank = len(value_dims(value_info))
        if rank < 3:
            continue
        for node, slot, perm in reached_nodes(name, consumers):  # the first node that appends to it
            cache = _cache_read_by(reads, name, rank, node, slot, perm, sequence_axes)
            if cache is not None:
                found.append(cache)
                break
    return found


def _cache_read_by(
    reads: _Reads,
    name: str,
    rank: int,
    node: onnx.NodeProto,
    slot: int,
    perm: list[int] | None,
    sequence_axes: dict[str, int],
) -> CacheTensor | None:
    """The cache ``name`` is, if ``node`` (reading it at ``slot``, through ``perm``) appends to it
    and returns the result."""
    default = node.domain in ("", "ai.onnx")
    if node.op_type == "Concat" and default and slot == 0 and len(node.input) >= 2:
        present = reads.present(node.output[0])
        if present is None:
            return None
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0) % rank
        axis = perm[axis] if perm else axis
        return CacheTensor(name, present, axis, cache_kind(name, present), f"Concat axis {axis}")
    if node.op_type in ("ScatterND", "ScatterElements") and default and slot == 0:
        # a static cache: a max-length buffer the new positions are written into, in place
        present = reads.present(node.output[0])
        if present is None:
            return None
        free = [a for a, d in enumerate(value_dims(reads.inputs[name])) if a > 0 and isinstance(d, str)]
        axis = free[0] if len(free) == 1 else 2  # read off the input itself: no permutation
        return CacheTensor(name, present, axis, cache_kind(name, present), f"{node.op_type} input 0", True)
    slots = next((s for s in CACHE_SLOTS.get(("" if default else node.domain, node.op_type), ()) if s[0] == slot), None)
    if slots is None:
        return None
    _note_new_tokens(reads.inputs, node, sequence_axes)
    return _attention_cache(reads, name, rank, node, perm, slots)


def _note_new_tokens(
    inputs: dict[str, onnx.ValueInfoProto], node: onnx.NodeProto, sequence_axes: dict[str, int]
) -> None:
    """An attention op's query, key and value graph inputs hold the new tokens: their length axis."""
    for new in node.input[:3]:
        new_dims = value_dims(inputs[new]) if new in inputs else []
        if len(new_dims) in (3, 4):
            sequence_axes.setdefault(new, 1 if len(new_dims) == 3 else 2)


def _attention_cache(
    reads: _Reads, name: str, rank: int, node: onnx.NodeProto, perm: list[int] | None, slots: tuple[int, int, str]
) -> CacheTensor:
    """The cache an attention op takes as its past at ``slots`` (past slot, present slot, kind)."""
    past_slot, present_slot, kind = slots
    present = node.output[present_slot] if present_slot < len(node.output) else ""
    present = reads.present(present) if present else None
    axis = 3 if kind == "key+value" else 2
    # one max-length buffer: the present has the past's length (the same dim)
    past_length = value_dims(reads.inputs[name])[axis] if axis < rank else None
    shared = (
        present is not None
        and past_length is not None
        and axis < len(reads.outputs[present])
        and reads.outputs[present][axis] == past_length
    )
    return CacheTensor(name, present, perm[axis] if perm else axis, kind, f"{node.op_type} input {past_slot}", shared)


def _returned_caches(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, onnx.ValueInfoProto],
    graph_outputs,
    consumers,
    aliases: dict[str, str],
    stored: set[str],
) -> list[CacheTensor]:
    """In a prompt step with no past input, the caches it returns: rank-4 graph outputs that the
    graph's own attention also reads (a MatMul, through re-layouts), their length axis the token
    ids' length symbol; those the attention reads with another length at that axis are a
    seq2seq decoder's cross-attention caches (computed from the encoder output)."""
    tokens = [n for n, role in _token_inputs(inputs, consumers, set()).items() if role == "token ids"]
    length = value_dims(inputs[tokens[0]])[1] if tokens and len(value_dims(inputs[tokens[0]])) > 1 else None
    producers = {o: n for n in nodes for o in n.output}
    found, other = [], []
    for output in graph_outputs:
        dims = value_dims(output)
        if len(dims) != 4:
            continue
        read_by_matmul = bool(length) and _read_by_matmul(output.name, producers, consumers, aliases)
        axis = _length_axis(dims, length) if length else None
        if axis is not None and read_by_matmul:
            found.append(
                CacheTensor("", output.name, axis, cache_kind(output.name, output.name), "returned by the prompt step")
            )
            continue
        scatter = _stored_buffer_scatter(output.name, producers, stored)
        if scatter is not None:
            found.append(
                CacheTensor(
                    "",
                    output.name,
                    2,
                    cache_kind(output.name, output.name),
                    f"a stored buffer {scatter} writes the prompt into",
                )
            )
        elif read_by_matmul:
            other.append(output)  # read by the attention at another length: a cross cache, if there are self caches
    if found:  # read by the attention with a length of its own at the self caches' length axis
        axis = found[0].axis
        for output in other:
            dims = value_dims(output)
            if isinstance(dims[axis], str) and dims[axis] != length:
                found.append(
                    CacheTensor(
                        "",
                        output.name,
                        axis,
                        cache_kind(output.name, output.name),
                        "computed from the encoder output and returned",
                        cross=True,
                    )
                )
    return found


def _read_by_matmul(output: str, producers: dict[str, onnx.NodeProto], consumers, aliases: dict[str, str]) -> bool:
    """Whether a MatMul reads ``output`` (or the branch output it is, or what it is a re-layout of:
    a present key beside the K^T the attention reads) through re-layouts and the cache steps."""
    names = [output] + [inner for inner, outer in aliases.items() if outer == output]  # a branch's
    for name in names[:]:
        producer = producers.get(name)
        while producer is not None and has_trait(producer, VALUES_THROUGH | OpTrait.PERMUTES_AXES) and len(names) < 16:
            names.append(producer.input[0])
            producer = producers.get(producer.input[0])
    return any(
        n.op_type == "MatMul"
        for name in names
        for n, _, _ in reached_nodes(name, consumers, VALUES_THROUGH, CACHE_STEPS)
    )


def _length_axis(dims: list, length: str | int) -> int | None:
    """The axis holding the token ids' length symbol, or an expression of it (optimum's "past + sequence")."""
    return next(
        (
            a
            for a, d in enumerate(dims)
            if d == length or (isinstance(d, str) and length in (expression_names(d) or ()))
        ),
        None,
    )


def _stored_buffer_scatter(output: str, producers: dict[str, onnx.NodeProto], stored: set[str]) -> str | None:
    """A static cache: the Scatter op writing the prompt's keys into a stored max-length buffer
    ([B, H, L, D]) that ``output`` is (through Identity/Cast/Transpose), if any."""
    producer = producers.get(output)
    while producer is not None and has_trait(producer, PASS_THROUGH | OpTrait.PERMUTES_AXES):
        producer = producers.get(producer.input[0])
    if (
        producer is not None
        and producer.op_type in ("ScatterND", "ScatterElements")
        and is_stored(producer.input[0], producers, stored)
    ):
        return producer.op_type
    return None


def cross_caches(
    inputs: dict[str, onnx.ValueInfoProto], graph_outputs, caches: list[CacheTensor], consumers
) -> list[CacheTensor]:
    """A seq2seq decoder's cross-attention caches among the inputs that are not self caches: each
    has a self cache's rank and dims but at the cache axis, where its length is its own (the
    encoder's), and the attention reads it (a MatMul, through re-layouts) and never appends to it.
    With them, the graph outputs of the same declared dims: the presents that the step without a
    cache computes from the encoder output (a merged decoder's cached branch returns placeholders)."""
    selves = [c for c in caches if c.past and not c.cross]
    taken = {c.past for c in caches}
    found: list[CacheTensor] = []
    for name, value_info in inputs.items():
        dims = value_dims(value_info)
        for cache in selves:
            own, axis = value_dims(inputs[cache.past]), cache.axis
            if (
                name in taken
                or len(dims) != len(own)
                or axis >= len(dims)
                or dims[axis] == own[axis]
                or any(a != b for i, (a, b) in enumerate(zip(dims, own)) if i != axis)
            ):
                continue
            if any(n.op_type == "MatMul" for n, _, _ in reached_nodes(name, consumers, VALUES_THROUGH, CACHE_STEPS)):
                found.append(
                    CacheTensor(name, None, axis, cache_kind(name, name), "read by MatMul, never appended", cross=True)
                )
                break
    past_dims = [value_dims(inputs[c.past]) for c in found]
    presents = {c.present for c in caches}
    for output in graph_outputs:
        if output.name not in presents and value_dims(output) in past_dims:
            found.append(
                CacheTensor(
                    "",
                    output.name,
                    found[0].axis,
                    cache_kind(output.name, output.name),
                    "computed from the encoder output when there is no cache",
                    cross=True,
                )
            )
    return found


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
        dims = value_dims(value_info)
        if name in skip or len(dims) != 2 or tensor_type.elem_type not in _INTEGER:
            continue
        readers = [n.op_type for n, _, _ in reached_nodes(name, consumers, VALUES_THROUGH)]
        if _POSITION.search(name) or "RotaryEmbedding" in readers:
            roles[name] = "position ids"
        elif any(op in ("Gather", "GatherBlockQuantized") for op in readers) and "token ids" not in roles.values():
            roles[name] = "token ids"
        else:
            roles[name] = "attention mask"
    if "token ids" not in roles.values():
        embeds = next((n for n, v in inputs.items() if _EMBEDS.search(n) and len(value_dims(v)) == 3), None)
        if embeds:
            roles[embeds] = "token embeddings"
    return roles


def phase_dims(
    layout: DecoderLayout,
    phase: str,
    seq: int | None,
    context: int | None,
    batch: int | None = None,
    encoder: int | None = None,
) -> tuple[dict[str, int], dict[str, list[int]]]:
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
            raise OptionError(
                "context", "{opt.phase} decode needs {opt.context} N, N >= 1: the tokens attended, the new one included"
            )
        new, cached = 1, context - 1
    else:
        raise OptionError("phase", "{opt.phase} {phase}: choose prefill or decode", phase=phase)
    rows = batch or 1
    sizes = {"batch": rows, "sequence": new, "past": cached, "total": new + cached}
    if encoder is not None:
        sizes["encoder"] = encoder
    # a dim written as an expression ("past_sequence_length + sequence_length") takes its value from
    # its names once they are bound (frontend.inputs), never as a flag of its own
    dims = {
        symbol: sizes[role] for symbol, role in layout.roles.items() if role in sizes and not expression_names(symbol)
    }
    values = {
        name: [new + cached - 1] * rows if role == "seqlens_k" else [new + cached]
        for name, role in layout.values.items()
    }
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
