"""The fusion rules a target's ``[fusion]`` policy may name, one object each (as onnxruntime's
transformer optimizer has one ``fusion_*.py`` per pattern): its name, what it fuses, when a node of
a kind may join a kernel under it (:meth:`FusionRule.joins`) and the pass it makes over the grown
kernels (``post_pass``). ``kernels.fuse`` grows the kernels with :func:`joins`, then runs the
post-passes of the rules in force, in :data:`RULES`' order.

A kernel's members are counted by kind (``node_kinds.KINDS``): ``mac`` (a convolution or matmul by
stored weights), ``attention`` (an activation x activation matmul), ``softmax``, ``reduction``,
``elementwise``, ``layout`` (a transpose), ``view`` and ``alone``.

Adding a rule: a :class:`FusionRule` in :data:`RULES` (a join test over the kinds, and a post-pass
if it merges kernels after they are grown).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .kernel_build import Kernel, build_kernel, inputs_ready

if TYPE_CHECKING:
    from ..cost.records import NodeRecord


@dataclass(frozen=True)
class FuseContext:
    """What a post-pass reads of the graph being fused."""

    tensors: dict
    graph_outputs: set[str]
    position: dict[str, int]  # node -> its index in the model
    body_of: dict[str, str]  # node -> the control-flow body it is in ("" or absent: the main graph)


Kinds = dict  # kind -> members of that kind in the kernel


@dataclass(frozen=True)
class FusionRule:
    name: str
    doc: str
    joins: Callable[[Kinds, str], bool]  # whether a node of this kind may join a kernel of these kinds
    post_pass: Callable[[list[Kernel], FuseContext], list[Kernel]] | None = None


def _epilogue(kinds: Kinds, kind: str) -> bool:
    """An elementwise op after a convolution or matmul (before an attention's softmax, or after its AV)."""
    if kind != "elementwise":
        return False
    products = kinds["attention"]
    if products:
        return products == 2 or not kinds["softmax"]
    return kinds["mac"] > 0


def _elementwise(kinds: Kinds, kind: str) -> bool:
    """An elementwise op in a kernel of elementwise ops, reductions and softmaxes."""
    return kind == "elementwise" and not kinds["attention"] and not kinds["mac"]


def _normalization(kinds: Kinds, kind: str) -> bool:
    """A reduction or softmax, or an elementwise op beside one, in a kernel without products."""
    if kinds["attention"] or kinds["mac"] or kind in ("mac", "attention", "layout"):
        return False
    return kind != "elementwise" or bool(kinds["reduction"] or kinds["softmax"])


def _attention(kinds: Kinds, kind: str) -> bool:
    """QK^T, then elementwise scale and mask and the softmax, then AV, then the transpose merging the heads."""
    products = kinds["attention"]
    if kind == "layout":  # the transpose that merges the heads after AV: the kernel writes that layout
        return products == 2 and not kinds["layout"]
    if kind == "attention":  # the AV product closes an attention kernel: QK^T, then the softmax, then AV
        return products == 1 and kinds["softmax"] == 1
    if products != 1:
        return False
    # between the softmax and AV: elementwise guards on the probabilities (optimum's GPT-2 zeroes
    # NaNs with IsNaN and Where); before the softmax, it and the scale and mask
    return kind == "elementwise" or (kind == "softmax" and not kinds["softmax"])


def _sibling_key(kernel: Kernel, body_of: dict[str, str]) -> tuple | None:
    """What a kernel's convolution or matmul shares with those it may merge with: its op, the
    activation it reads, its output shape but for the channels, its depth, its subgraph; None when
    it has no such product by a stored weight."""
    if not any(m.macs for m in kernel.records):  # most kernels: no product, and no import to pay for each
        return None
    # here: node_kinds reads the op registry (onnx), which `onnxroof targets`, reading
    # FUSION_RULES through the target schema, must not import
    from .node_kinds import CONV_OPS, node_kind

    anchor = next((m for m in kernel.records if m.macs and node_kind(m) == "mac"), None)  # see reuse_of
    if anchor is None or not anchor.param_inputs or not anchor.inputs or anchor.inputs[0] in anchor.param_inputs:
        return None
    shape = anchor.output_shapes[0] if anchor.output_shapes else None
    if not shape:
        return None
    channel = 1 if anchor.op_type in CONV_OPS else len(shape) - 1
    outputs = math.prod(d if isinstance(d, int) else 0 for d in shape)
    if not outputs:
        return None
    return (
        anchor.op_type,
        anchor.inputs[0],
        tuple(d for i, d in enumerate(shape) if i != channel),
        anchor.macs // outputs,
        body_of.get(anchor.name, ""),
    )  # MACs per output: the same depth; one subgraph


def merge_siblings(kernels: list[Kernel], context: FuseContext) -> list[Kernel]:
    """Kernels whose convolution or matmul multiplies the same activation by a stored weight of the
    same depth into outputs of the same shape but for the channels, merged into one GEMM over the
    weights side by side: TensorRT's horizontal fusion (the Q, K and V projections as one QKV
    GEMM, the 1x1 branches of an Inception block), onnxruntime's packed QKV. The activation is read
    once. A sibling joins only if everything its kernel reads is made before the first one starts."""
    families: dict[tuple, list[int]] = {}
    for index, kernel in enumerate(kernels):
        key = _sibling_key(kernel, context.body_of)
        if key is not None:
            families.setdefault(key, []).append(index)
    merged_into: dict[int, int] = {}
    members: dict[int, list] = {}
    for indices in families.values():
        first = indices[0]
        start = kernels[first].records[0].index
        for index in indices[1:]:
            inside = {m.name for m in kernels[index].records}
            if all(inputs_ready(m, inside, start, context.position, context.tensors) for m in kernels[index].records):
                members.setdefault(first, list(kernels[first].records)).extend(kernels[index].records)
                merged_into[index] = first
    return _merged(kernels, members, merged_into, context)


def _merged(
    kernels: list[Kernel], members: dict[int, list], gone: dict[int, int], context: FuseContext
) -> list[Kernel]:
    """The kernels with each of ``members`` rebuilt from its records and those in ``gone`` left out."""
    if not gone:
        return kernels
    return [
        build_kernel(members[i], context.tensors, context.graph_outputs) if i in members else k
        for i, k in enumerate(kernels)
        if i not in gone
    ]


def absorb_head_layouts(kernels: list[Kernel], context: FuseContext) -> list[Kernel]:
    """Each kernel of transposes alone that only an attention kernel reads, merged into it: a fused
    attention kernel reads Q, K and V in the projections' layout with strides (FlashAttention,
    TensorRT's fused MHA, onnxruntime's Attention take [B, S, N, H] directly), so the transposes
    that split the heads, and K's to K^T, are never launched; the one that merges the heads after
    AV joins the attention kernel as it grows (:func:`_attention`). One pass from the last kernel back:
    a transpose read by another transpose (K's head split, then K^T) finds its reader already
    given to the attention kernel."""
    from .node_kinds import node_kind  # here, as in _sibling_key

    heads = [index for index, kernel in enumerate(kernels) if _transposes_alone(kernel, node_kind)]
    if not heads:  # most graphs' kernels: nothing to merge, and no need to index every node
        return kernels
    owner = {name: index for index, kernel in enumerate(kernels) for name in kernel.nodes}
    into: dict[int, int] = {}  # kernel -> the attention kernel it joins

    def final(index: int) -> int:
        while index in into:
            index = into[index]
        return index

    for index in reversed(heads):
        reader = _layout_reader(kernels, index, owner, final, context)
        if reader is not None:
            into[index] = reader
    members: dict[int, list] = {}  # attention kernel -> its records and the transposes it takes
    for index in sorted(into):
        target = final(index)
        members.setdefault(target, list(kernels[target].records)).extend(kernels[index].records)
    return _merged(kernels, members, into, context)


def _transposes_alone(kernel: Kernel, node_kind: Callable[[NodeRecord], str]) -> bool:
    """Whether ``kernel`` is transposes alone, views aside (looked at until its first other node:
    a chain of 100,000 Relus is one look)."""
    found = False
    for member in kernel.records:
        if member.view:
            continue
        if node_kind(member) != "layout":
            return False
        found = True
    return found


def _layout_reader(
    kernels: list[Kernel], index: int, owner: dict[str, int], final: Callable[[int], int], context: FuseContext
) -> int | None:
    """The attention kernel (in the same subgraph) that alone reads what kernel ``index`` makes
    (a kernel of transposes alone, views aside: :func:`_transposes_alone`); else None."""
    from .node_kinds import node_kind  # here, as in _sibling_key

    kernel, tensors = kernels[index], context.tensors
    made = [t for m in kernel.records for t in m.outputs if t in tensors]
    readers = {final(owner[c]) if c in owner else None for t in made for c in tensors[t].consumers} - {index}
    if len(readers) != 1 or None in readers or any(t in context.graph_outputs for t in made):
        return None
    reader = readers.pop()
    if reader is not None and (
        any(node_kind(m) == "attention" for m in kernels[reader].records)
        and context.body_of.get(kernels[reader].name, "") == context.body_of.get(kernel.name, "")
    ):
        return reader
    return None


# in the order their post-passes run
RULES: tuple[FusionRule, ...] = (
    FusionRule(
        "epilogue",
        "a Conv, Gemm or MatMul with the elementwise ops after it (bias, BatchNormalization, activation, residual Add)",
        _epilogue,
    ),
    FusionRule(
        "elementwise", "chains of elementwise ops (activations, arithmetic, casts, quantize/dequantize)", _elementwise
    ),
    FusionRule(
        "normalization",
        "reductions with the elementwise ops around them: decomposed LayerNorm, RMSNorm, Softmax",
        _normalization,
    ),
    FusionRule(
        "horizontal",
        "convolutions or matmuls that multiply the same activation by stored weights of the same "
        "depth (the Q, K and V projections; an Inception block's 1x1 branches) as one GEMM over the weights "
        "side by side",
        lambda kinds, kind: False,
        merge_siblings,
    ),
    FusionRule(
        "attention",
        "QK^T, its scale and mask, the softmax and the AV product as one kernel, reading Q, K "
        "and V through the transposes that split the heads and writing through the one that merges them",
        _attention,
        absorb_head_layouts,
    ),
)
FUSION_RULES = {rule.name: rule.doc for rule in RULES}  # name -> what it fuses: what a target's [fusion] may name


def joins(kinds: Kinds, kind: str, rules: frozenset[str]) -> bool:
    """Whether a node of ``kind`` may join a kernel whose nodes are of ``kinds`` under ``rules``:
    a view always, a node that runs alone never, nothing but the transpose merging the heads a
    kernel of transposes alone (:func:`absorb_head_layouts` gives those to their attention
    kernel), else any rule in force that takes it."""
    if kind == "alone":
        return False
    if kind == "view":
        return True
    if kind != "layout" and kinds["layout"] and not kinds["attention"]:
        return False
    for test in _tests(rules):
        if test(kinds, kind):
            return True
    return False


@functools.lru_cache(maxsize=64)
def _tests(rules: frozenset[str]) -> tuple[Callable[[Kinds, str], bool], ...]:
    """The join tests of the rules in force, once per policy: a kernel of 100,000 nodes asks at each step."""
    return tuple(rule.joins for rule in RULES if rule.name in rules)


def post_passes(kernels: list[Kernel], rules: frozenset[str], context: FuseContext) -> list[Kernel]:
    """The grown kernels after the post-passes of the rules in force."""
    for rule in RULES:
        if rule.post_pass is not None and rule.name in rules:
            kernels = rule.post_pass(kernels, context)
    return kernels
