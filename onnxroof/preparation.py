"""The model made ready for the shape stage: functions inlined, sibling scopes separated, the
decoder layout found and the inputs bound (by the given shapes and dims, a decoder's phase, a
batch), the batch dims nobody gave bound to 1. ``pipeline.analyze`` runs it in its place among
the stages; this module only knows how the model is prepared, not when.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import onnx

from .core.errors import OptionError, UnboundDims
from .core.nodes import read_node_fields
from .cost.llm import LOOKED_FOR, DecoderLayout, detect_decoder, phase_dims
from .frontend.fixed_batch import FixedBatch, fixed_batch
from .frontend.functions import inline_functions
from .frontend.inputs import (
    batch_flags,
    batch_symbols,
    bind_inputs,
    dim_values,
    fix_digit_dims,
    name_unnamed_batch_axes,
    real_inputs,
    shape_flags,
    unbound_dims,
    value_flags,
)
from .frontend.load import PendingCheck
from .frontend.scopes import separate_sibling_scopes
from .options import AnalysisOptions


@dataclass
class Prepared:
    """The model ready for the shape stage: what is done while the ONNX checker judges it."""

    model: onnx.ModelProto  # functions inlined, inputs bound
    layout: DecoderLayout | None  # a KV-cached decoder's, or None
    nodes: list[onnx.NodeProto]
    fields: list  # each node's fields, read once for the shape and cost stages
    phase_values: dict[str, list[int]]  # input values the decoder phase stands for
    explicit_dims: set[str]  # the dims the user gave (the graph binds no dim of these)
    assumed: dict[str, int]  # batch dims nobody gave, bound to 1
    notes: list[str]  # warnings
    fixed_batch: FixedBatch | None = None  # the batch a static export fixes in its inputs and shapes


_CACHE_NAME = re.compile(r"past|cache", re.IGNORECASE)  # only to say a cache-like input was not recognised


def prepare(
    proto: onnx.ModelProto,
    checking: PendingCheck | None,
    options: AnalysisOptions,
    progress: Callable[[str], None],
    label: str = "model",
) -> Prepared:
    """The model with its functions inlined and its inputs bound, its decoder layout, its nodes
    and their fields: the work done while the ONNX checker judges the model in a child process."""
    phase, partial = options.phase, options.partial
    notes: list[str] = []
    if proto.functions:
        if checking is not None:
            checking.wait()  # the inliner is C++: it sees only a model the checker passed
        # model-local functions are costed through their bodies (a model inlining would blow up is refused)
        proto = inline_functions(proto, label)
    nodes = list(proto.graph.node)
    fields = read_node_fields(nodes)  # once, for this stage and the next ones (binding changes no node)
    separate_sibling_scopes(proto, fields)  # sibling If branches may reuse names; every stage keys tensors by name
    given_shapes, dim_flags = shape_flags(options.input_shapes), dim_values(options.dims)
    fix_digit_dims(proto, fields)  # a dim written "64" is 64, before anything reads the dims
    name_unnamed_batch_axes(proto)  # skl2onnx's batch axis has no name: give it one to bind it by
    if options.ignore_missing_dims:
        symbols = {d.dim_param for i in real_inputs(proto.graph) for d in i.type.tensor_type.shape.dim if d.dim_param}
        dim_flags = {symbol: value for symbol, value in dim_flags.items() if symbol in symbols}
    layout = detect_decoder(proto, prefill_only=phase == "prefill")
    if layout is None:
        notes += _cache_like_inputs(proto)
    explicit_dims = set(dim_flags)
    phase_values, dim_flags = _phase_binding(layout, options, dim_flags)
    fixed = fixed_batch(proto, fields)
    if fixed is not None and fixed.shapes:
        notes.append(fixed.text())
    if options.batch is not None:
        given_shapes, dim_flags = _batch_binding(proto, fixed, options, given_shapes, dim_flags, phase_values)
    # a batch dim nobody gave is 1, and every output says so
    assumed = {} if partial else _assumed_batch_dims(proto, given_shapes, dim_flags)
    bind_inputs(proto, given_shapes, dim_flags)
    if not partial and not (layout is not None and phase is not None) and (unbound := unbound_dims(proto)):
        # (a decoder's phase leaves its head size to the graph: checked once that is bound)
        raise UnboundDims(label, unbound, assumed, decoder=layout is not None)
    progress(f"inferring shapes of {len(nodes):,} nodes")
    return Prepared(proto, layout, nodes, fields, phase_values, explicit_dims, assumed, notes, fixed)


def _cache_like_inputs(proto: onnx.ModelProto) -> list[str]:
    """A note when inputs are named like a KV cache although no decoder layout was found."""
    looks_like = [i.name for i in real_inputs(proto.graph) if _CACHE_NAME.search(i.name)]
    if not looks_like:
        return []
    return [
        f"input(s) {', '.join(looks_like[:3])} are named like a KV cache, but none is one (looked for "
        f"{LOOKED_FOR}): no decoder phase applies; bind the dims with --dim"
    ]


def _phase_binding(
    layout: DecoderLayout | None, options: AnalysisOptions, dims: dict[str, int]
) -> tuple[dict[str, list[int]], dict[str, int]]:
    """The input values a decoder's phase stands for, and the dims with those it implies (the
    explicit ones win); a phase's length without a phase, or a phase without a cache, refused."""
    phase = options.phase
    if phase is None and (options.seq or options.context or options.encoder_seq):  # a flag that would do nothing
        given = "seq" if options.seq else "context" if options.context else "encoder_seq"
        needed = {"seq": "prefill", "context": "decode", "encoder_seq": "prefill or decode"}[given]
        raise OptionError(
            given,
            f"{{opt.{given}}} sets a decoder's {needed.replace(' or ', '/')} step: give "
            f"{{opt.phase}} {needed.replace(' or ', '|')} with it",
        )
    if phase is None:
        return {}, dims
    if layout is None:
        raise OptionError(
            "phase",
            "{opt.phase} {phase}: no KV cache found (looked for {looked_for}); "
            "bind the model's dims with {opt.dims} instead",
            phase=phase,
            looked_for=LOOKED_FOR,
        )
    implied, phase_values = phase_dims(layout, phase, options.seq, options.context, options.batch, options.encoder_seq)
    dims = implied | dims
    _check_encoder_length(layout, phase, options.encoder_seq, dims)
    return phase_values, dims


def _batch_binding(
    proto: onnx.ModelProto,
    fixed: FixedBatch | None,
    options: AnalysisOptions,
    given_shapes: list,
    dims: dict[str, int],
    phase_values: dict[str, list[int]],
) -> tuple[list, dict[str, int]]:
    """The shapes and dims with ``options.batch`` on axis 0 of every input (a batch a static
    export fixes in its shapes refused where it cannot be changed)."""
    batch = options.batch
    assert batch is not None  # (called only when a batch is given)
    if fixed is not None and (refusal := fixed.refusal(batch)):
        raise OptionError("batch", "{opt.batch} {batch} cannot be analysed: {refusal}", batch=batch, refusal=refusal)
    valued = set(phase_values) | set(value_flags(options.values))  # settings (a merged decoder's switch): no batch
    return batch_flags(proto, batch, given_shapes, dims, valued)


def _assumed_batch_dims(proto: onnx.ModelProto, given_shapes: list, dims: dict[str, int]) -> dict[str, int]:
    """The batch dims nobody gave (by a dim or every input's shape), bound to 1: added to ``dims``."""
    assumed: dict[str, int] = {}
    inputs = real_inputs(proto.graph)
    shaped = {name for name, _ in given_shapes}
    if None in shaped:  # --input-shape 1,3,224,224 names the only input
        shaped |= {i.name for i in inputs}
    for symbol in batch_symbols(proto):
        carriers = [
            i.name
            for i in inputs
            if i.type.tensor_type.shape.dim and i.type.tensor_type.shape.dim[0].dim_param == symbol
        ]
        if symbol not in dims and not all(name in shaped for name in carriers):
            dims[symbol] = assumed[symbol] = 1
    return assumed


def _check_encoder_length(layout: DecoderLayout, phase: str, encoder_seq: int | None, dims: dict[str, int]) -> None:
    """A seq2seq decoder's encoder length is bound (by --encoder-seq, --dim, or fixed in the
    model); --encoder-seq on a decoder without cross-attention is an error."""
    encoder = [symbol for symbol, role in layout.roles.items() if role == "encoder"]
    if encoder_seq is not None and not encoder and not any(c.cross for c in layout.cross):
        raise OptionError(
            "encoder_seq", "{opt.encoder_seq}: this decoder has no cross-attention cache, so no encoder length to bind"
        )
    open_ = [symbol for symbol in encoder if symbol not in dims]
    if open_:
        raise OptionError(
            "encoder_seq",
            "{opt.phase} {phase}: the decoder's cross-attention reads an encoder output "
            "of length {symbol}, which the model leaves open: give {opt.encoder_seq} N (or {opt.dims} "
            "{symbol}=N)",
            phase=phase,
            symbol=open_[0],
        )
