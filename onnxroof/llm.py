"""Decoder (LLM) export conventions: the KV cache, and prefill vs decode.

Exporters (Hugging Face optimum and transformers, torch.onnx, onnxruntime-genai) give a
KV-cached decoder inputs like ``past_key_values.0.key`` / ``past_key.0`` / ``past.0.value``
(rank 4: batch, heads, past length, head size) and outputs like ``present.0.key``. The token
input's dim 1 is the new sequence; the past inputs' length dim is the cache; an attention mask
spans both. ``--phase prefill --seq N`` binds new = N and past = 0; ``--phase decode --context N``
binds new = 1 and past = N (the tokens already in the cache). Explicit ``--dim`` always wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import onnx

from .errors import UsageError
from .shapes import real_inputs

if TYPE_CHECKING:
    from .analysis import Analysis

_PAST = re.compile(r"(past|cache)", re.IGNORECASE)
_PRESENT = re.compile(r"(present|cache_out|new_cache)", re.IGNORECASE)
_TOKENS = re.compile(r"(input_ids|inputs_embeds|tokens?$|input$)", re.IGNORECASE)
_MASK = re.compile(r"attention_mask|attn_mask", re.IGNORECASE)


@dataclass(frozen=True)
class DecoderLayout:
    """Which inputs are the cache and which dim symbols mean what."""

    past_inputs: tuple[str, ...]
    present_outputs: tuple[str, ...]
    sequence: str | None  # new tokens this step
    past: str | None  # tokens already in the cache
    total: str | None  # past + new (the attention mask's length), when the export names it
    batch: str | None


def _symbols(value_info: onnx.ValueInfoProto) -> list[str | None]:
    shape = value_info.type.tensor_type.shape
    return [d.dim_param or None for d in shape.dim] if value_info.type.tensor_type.HasField("shape") else []


def detect_decoder(model: onnx.ModelProto) -> DecoderLayout | None:
    """The KV-cache layout of ``model``, or None when it has no past inputs."""
    inputs = real_inputs(model.graph)
    past = [i for i in inputs if _PAST.search(i.name) and len(_symbols(i)) >= 3]
    if not past:
        return None
    presents = tuple(o.name for o in model.graph.output if _PRESENT.search(o.name))
    tokens = next((i for i in inputs if _TOKENS.search(i.name) and i not in past), None)
    mask = next((i for i in inputs if _MASK.search(i.name)), None)
    past_symbols = _symbols(past[0])
    token_symbols = _symbols(tokens) if tokens is not None else []
    batch = past_symbols[0] if past_symbols else None
    sequence = token_symbols[1] if len(token_symbols) > 1 else None
    # the cache length: the past input's symbol that is neither the batch nor fixed
    past_length = next((s for s in past_symbols[1:] if s and s not in (batch, sequence)), None)
    mask_symbols = _symbols(mask) if mask is not None else []
    total = mask_symbols[1] if len(mask_symbols) > 1 and mask_symbols[1] not in (sequence, past_length) else None
    return DecoderLayout(tuple(i.name for i in past), presents, sequence, past_length, total, batch)


def phase_dims(layout: DecoderLayout, phase: str, seq: int | None, context: int | None) -> dict[str, int]:
    """The dim values a phase stands for (to be overridden by explicit --dim)."""
    if phase == "prefill":
        if not seq:
            raise UsageError("--phase prefill needs --seq N (the prompt length)")
        new, cached = seq, 0
    elif phase == "decode":
        if context is None:
            raise UsageError("--phase decode needs --context N (tokens already in the KV cache)")
        new, cached = 1, context
    else:
        raise UsageError(f"--phase {phase}: choose prefill or decode")
    dims: dict[str, int] = {}
    if layout.sequence:
        dims[layout.sequence] = new
    if layout.past:
        dims[layout.past] = cached
    if layout.total:
        dims[layout.total] = new + cached
    if layout.batch:
        dims[layout.batch] = 1
    return dims


@dataclass
class LLMReport:
    phase: str | None
    new_tokens: int | None  # tokens processed this step (seq for prefill, 1 for decode)
    context: int | None  # tokens in the cache before this step
    layers: int  # past key inputs
    kv_read_bytes: int  # the past cache this step reads
    kv_write_bytes: int  # the present cache this step writes (whole, as these exports do)
    kv_bytes_per_token: int | None  # cache bytes one token adds: 2 x layers x kv heads x head size x dtype
    tokens_per_s: dict[str, float]  # target -> new tokens per second


def llm_report(analysis: "Analysis", layout: DecoderLayout, phase: str | None, new_tokens: int | None,
               context: int | None) -> LLMReport:
    tensors = analysis.tensors
    read = sum(tensors[n].bytes or 0 for n in layout.past_inputs if n in tensors)
    write = sum(tensors[n].bytes or 0 for n in layout.present_outputs if n in tensors)
    keys = [n for n in layout.past_inputs if re.search(r"(^|[._/])(key|keys|k)$", n.lower())]
    layers = len(keys) or len(layout.past_inputs) // 2
    per_token = None
    if analysis.inputs and layout.past_inputs:
        first = tensors.get(layout.past_inputs[0])
        if first is not None and first.shape and all(isinstance(d, int) for d in first.shape):
            shape = list(first.shape)
            batch, length = shape[0], shape[2] if len(shape) > 2 else 0
            if length:  # bytes per cached token across every past input, per sequence in the batch
                per_token = read // (length * max(batch, 1))
            else:
                per_token = _token_bytes(tensors, layout, batch)
    batch = analysis.batch or 1
    tokens = (new_tokens or 1) * batch
    return LLMReport(
        phase=phase,
        new_tokens=new_tokens,
        context=context,
        layers=layers,
        kv_read_bytes=read,
        kv_write_bytes=write,
        kv_bytes_per_token=per_token,
        tokens_per_s={r.target.name: tokens / r.latency_s for r in analysis.targets if r.latency_s},
    )


def _token_bytes(tensors, layout: DecoderLayout, batch: int) -> int | None:
    """With an empty cache (prefill), the present outputs tell what one token adds."""
    total = 0
    for name in layout.present_outputs:
        tensor = tensors.get(name)
        if tensor is None or not tensor.shape or len(tensor.shape) < 3 or not tensor.shape[2]:
            return None
        total += (tensor.bytes or 0) // (tensor.shape[2] * max(batch, 1))
    return total or None
