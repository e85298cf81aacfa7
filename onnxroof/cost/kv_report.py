"""A KV-cached decoder's cache figures for one step: what it reads, writes and holds, from the
tensors the shape stage found and the layout :mod:`onnxroof.cost.llm` recognised. A seq2seq
decoder's cross-attention cache (computed once from the encoder output, read every step, never
appended) is reported apart from the self-attention cache (appended to each step)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .llm import DecoderLayout
from .llm_graph import CacheTensor
from .records import TensorRecord


@dataclass
class LLMReport:
    phase: str | None
    new_tokens: int | None  # tokens processed this step (seq for prefill, 1 for decode)
    context: int | None  # tokens attended after this step (past + new)
    layers: int  # key caches
    kv_read_bytes: int  # the attended cache this step reads, the new tokens' keys and values included
    kv_write_bytes: int  # what it writes: the new positions, or the whole present when the graph copies it
    kv_write_mode: str  # "new positions" | "whole present"
    kv_bytes_per_token: int | None  # cache bytes one token adds: 2 x layers x kv heads x head size x dtype
    kv_heads: int | None
    head_size: int | None
    kv_cache_bytes: dict[str, int]  # dtype -> the cache's bytes after this step (fp32, fp16, int8): at the context
    tokens_per_s: dict[str, float]  # target -> new tokens per second
    time_to_first_token_s: dict[str, float]  # target -> prefill latency (prefill only)
    recognised: tuple[str, ...] = field(default_factory=tuple)
    # a seq2seq decoder's cross-attention cache, apart from the self-attention figures above (which
    # it is not part of); 0, None and {} for a decoder without one
    cross_read_bytes: int = 0  # what this step's cross-attention reads: the cache (decode) or what it computes
    cross_write_bytes: int = 0  # what it writes: computed from the encoder output (the step without a cache), else 0
    cross_length: int | None = None  # the encoder positions it holds
    cross_cache_bytes: dict[str, int] = field(default_factory=dict)  # dtype -> its bytes, at that length


_KV_DTYPES = {"fp32": 4, "fp16": 2, "int8": 1}


def llm_report(
    tensors: dict[str, TensorRecord],
    layout: DecoderLayout,
    phase: str | None,
    new_tokens: int | None,
    context: int | None,
    batch: int = 1,
    latencies_s: dict[str, float] | None = None,
) -> LLMReport:
    """The KV cache's traffic and size for one step of ``phase``, from the tensors the shape stage
    found (``tensors``); ``latencies_s`` (target name -> the step's predicted seconds) gives the
    tokens per second."""
    latencies_s = latencies_s or {}
    cache = _self_cache(tensors, layout.caches, batch)
    per_token = cache.per_token
    shared = any(c.shared for c in layout.caches)
    # a shared past/present buffer is written at the new positions; else the graph copies the past into the presents
    write = _new_positions_bytes(per_token, new_tokens, batch) if shared else _presents_bytes(tensors, layout)
    keys = [c for c in layout.caches if c.kind in ("key", "key+value")]
    tokens = (new_tokens or 1) * batch
    return LLMReport(
        phase=phase,
        new_tokens=new_tokens,
        context=context,
        layers=len(keys) or len(layout.caches) // 2,
        kv_read_bytes=cache.read,
        kv_write_bytes=write,
        kv_write_mode="new positions" if shared else "whole present",
        kv_bytes_per_token=per_token or None,
        kv_heads=cache.heads,
        head_size=cache.head,
        # the cache after this step is its presents: the context's positions, or a static buffer's capacity
        kv_cache_bytes=(
            {dtype: cache.present_elements * size for dtype, size in _KV_DTYPES.items()}
            if cache.present_elements and per_token is not None
            else {}
        ),
        tokens_per_s={name: tokens / seconds for name, seconds in latencies_s.items() if seconds},
        time_to_first_token_s=(
            {name: seconds for name, seconds in latencies_s.items() if seconds} if phase == "prefill" else {}
        ),
        recognised=layout.recognised,
        **_cross_figures(tensors, layout, phase),
    )


def _new_positions_bytes(per_token: int | None, new_tokens: int | None, batch: int) -> int:
    return per_token * (new_tokens or 0) * batch if per_token is not None and new_tokens is not None else 0


def _presents_bytes(tensors: dict[str, TensorRecord], layout: DecoderLayout) -> int:
    return sum((tensors[c.present].bytes or 0) for c in layout.caches if c.present and c.present in tensors)


@dataclass
class _SelfCache:
    """The self-attention cache's presents, summed over the layers."""

    read: int = 0  # their bytes: the attended positions, the new ones included
    per_token: int | None = 0  # the bytes one token adds; None when a present's size is not known
    present_elements: int = 0
    heads: int | None = None  # kv heads and head size, read off a present's shape
    head: int | None = None


def _self_cache(tensors: dict[str, TensorRecord], caches: tuple[CacheTensor, ...], batch: int) -> _SelfCache:
    found = _SelfCache()
    for cache in caches:
        present = tensors.get(cache.present or "")
        shape = present.shape if present is not None else None
        if present is None or present.bytes is None or not shape or not all(isinstance(d, int) for d in shape):
            found.per_token = None
            continue
        found.read += present.bytes
        found.present_elements += math.prod(shape)  # all ints, checked above
        length = shape[cache.axis]
        if length and found.per_token is not None:
            found.per_token += present.bytes // (length * batch)
            heads = _heads_and_size(shape, cache)
            if heads is not None:
                found.heads, found.head = heads
    return found


def _heads_and_size(shape: tuple, cache: CacheTensor) -> tuple[int, int] | None:
    """[B, H, L, D], [B, L, H, D] or packed [2, B, H, L, D]: heads and head size are what is left
    besides the length and the batch (and the packing)."""
    packed = cache.kind == "key+value"
    rest = [
        d
        for axis, d in enumerate(shape)
        if axis != cache.axis and axis != (1 if packed else 0) and not (packed and axis == 0)
    ]
    return (rest[0], rest[1]) if len(rest) == 2 else None


def _cross_figures(tensors: dict[str, TensorRecord], layout: DecoderLayout, phase: str | None) -> dict:
    """The cross-attention cache's read, write and size: a decode step reads the cache (the past
    inputs), and writes only what the graph returns of it (nothing, or an empty placeholder); the
    step without a cache computes it from the encoder output, writes it and reads it."""
    if not layout.cross:
        return {}
    pasts = [tensors.get(c.past) for c in layout.cross if c.past]
    presents = [tensors.get(c.present) for c in layout.cross if c.present]
    written = sum(t.bytes or 0 for t in presents if t is not None)
    source = [t for t in (pasts if phase == "decode" or not written else presents) if t is not None]
    axis = layout.cross[0].axis
    shapes = [t.shape for t in source if t.shape is not None and all(isinstance(d, int) for d in t.shape)]
    elements = sum(math.prod(shape) for shape in shapes)
    return dict(
        cross_read_bytes=sum(t.bytes or 0 for t in source),
        cross_write_bytes=written,
        cross_length=shapes[0][axis] if shapes and axis < len(shapes[0]) else None,
        cross_cache_bytes={dtype: elements * size for dtype, size in _KV_DTYPES.items()} if elements else {},
    )
