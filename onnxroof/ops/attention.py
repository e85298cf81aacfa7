"""Attention: the score and value products in MACs, the work on each score in FLOPs.

Conventions, shared by every rule below (B batch, Hq query heads, Hkv key/value heads, Sq query
length, T attended length, Dqk query/key head size, Dv value head size):

- **MACs = B x Hq x Sq x T x (Dqk + Dv)**: Q·K^T costs Dqk per score and A·V Dv per score. Every
  query head computes its own products; with grouped-query attention (Hkv < Hq) the key/value heads
  are shared, not the arithmetic.
- **T = past + current** keys: a KV cache given as past_key/past (concatenated into present inside
  the op) adds its length. The concatenation moves bytes and costs no FLOPs. Where the past and
  present share one max-length buffer, T comes from the op's sequence-length input value; if that
  value is not known the node is not counted, status unknown_value (never a buffer-length guess).
- **Causal masking** (is_causal, unidirectional, GroupQueryAttention's causal, local windows): the
  full Sq x T rectangle is counted, as a dense kernel computes it before masking. The formula also
  states how many score pairs are unmasked (bottom-right aligned), which is what a block-skipping
  (flash) kernel computes: about half for square prefill, all of them for one-token decode.
- **FLOPs per score** (B x Hq x Sq x T scores): scale 1, mask/bias add 1 (when a mask, a bias or
  causal masking applies), softcap 3 (divide, tanh, multiply; when softcap > 0), softmax
  ``SOFTMAX_FLOPS`` = 5 (max, subtract, exp, sum, divide).
- **Fused projections** (contrib Attention, QAttention): B x S x Hin x (Dq + Dk + Dv) MACs with the
  bias add folded, as Gemm; MultiHeadAttention's separate bias input adds 1 FLOP per Q/K/V element.
- **Rotary embedding**: 3 FLOPs per rotated element (per pair of elements: 4 multiplies, 2 adds).
- **Decoder-masked** ops (convert_generation's DecoderMaskedSelfAttention and
  DecoderMaskedMultiHeadAttention) are the contrib Attention and MultiHeadAttention rules on their
  inputs (reordered for the latter).
- **Shapes**: the com.microsoft ops have no ONNX schema; each rule gives output and present shapes
  (present: past + new, or the shared buffer's own shape).
- Sequence lengths, masks, position ids and cache indirection are settings: constants there are
  arguments, not parameters. cos/sin caches and weights are parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from ..core.tensors import Dim
from ._shapes import FLOAT, add, dims, dtype, scale
from .base import NodeView, OpCost, OutputType, UnknownValue, register, same_as_input
from .normalization import RMS_NORM_FLOPS, SOFTMAX_FLOPS
from .quantized import with_inputs

MS = "com.microsoft"
ROTARY_FLOPS = 3  # per rotated element: (x1·cos - x2·sin, x1·sin + x2·cos) is 6 ops per pair
SOFTCAP_FLOPS = 3  # softcap · tanh(score / softcap)


@dataclass(frozen=True)
class AttentionDims:
    """The sizes that fix an attention's arithmetic."""

    batch: int
    q_heads: int
    kv_heads: int
    q_len: int
    total_len: int  # attended keys: past + current
    qk_dim: int
    v_dim: int
    past_len: int = 0


def _ramp_sum(n: int, start: int, cap: int) -> int:
    """sum over i in [0, n) of clamp(start + i, 0, cap), in closed form."""
    if n <= 0:
        return 0
    lo = min(n, max(0, -start))
    hi = min(n, max(lo, cap - start))
    linear = (hi - lo) * start + (lo + hi - 1) * (hi - lo) // 2
    return linear + (n - hi) * cap


def causal_pairs(q_len: int, total_len: int, offset: int, window: int = 0) -> int:
    """Score pairs (query i, key j) a causal mask keeps: j <= i + offset, and with a local window
    W > 0 also j >= i + offset - W. ``offset`` aligns the mask (T - Sq: bottom-right)."""
    kept = _ramp_sum(q_len, offset + 1, total_len)  # keys j <= i + offset
    if window > 0:
        kept -= _ramp_sum(q_len, offset - window, total_len)  # keys j < i + offset - W
    return kept


def attention_cost(
    dims: AttentionDims,
    *,
    masked: bool,
    causal: bool = False,
    softcap: float = 0.0,
    window: int = 0,
    offset: int | None = None,
) -> tuple[int, int, str]:
    """(MACs, FLOPs, formula) of the score and value products and the work on each score."""
    b, hq, sq, t = dims.batch, dims.q_heads, dims.q_len, dims.total_len
    scores = b * hq * sq * t
    macs = scores * (dims.qk_dim + dims.v_dim)
    parts = [("scale", 1)]
    if masked or causal:
        parts.append(("mask", 1))
    if softcap:
        parts.append(("softcap", SOFTCAP_FLOPS))
    parts.append(("softmax", SOFTMAX_FLOPS))
    per_score = sum(n for _, n in parts)
    flops = per_score * scores
    heads = f"{hq}" if dims.kv_heads == hq else f"{hq} (over {dims.kv_heads} kv heads)"
    length = f"{t}" if not dims.past_len else f"({dims.past_len} past + {t - dims.past_len})"
    formula = (
        f"B·Hq·Sq·T·(Dqk + Dv) = {b}·{heads}·{sq}·{length}·({dims.qk_dim} + {dims.v_dim}) = {macs:,} MACs; "
        f"{scores:,} scores·{per_score} ({', '.join(f'{name} {n}' for name, n in parts)}) = {flops:,} score FLOPs"
    )
    if causal:
        kept = b * hq * causal_pairs(sq, t, t - sq if offset is None else offset, window)
        share = 100 * kept / scores if scores else 0.0
        kind = f"causal, window {window}" if window > 0 else "causal"
        formula += f"; {kind}: {kept:,} of {scores:,} score pairs unmasked ({share:.1f}%), full rectangle counted"
    return macs, flops, formula


def _scalar(node: NodeView, index: int) -> int | None:
    """The largest value of a small known integer input (a sequence length), if known."""
    value = node.input_value(index)
    if value is None or value.size == 0:
        return None
    return int(value.max())


def _unknown_length(node: NodeView, slot: int, buffer_len: int) -> UnknownValue:
    name = node.node.input[slot] if slot < len(node.node.input) and node.node.input[slot] else f"input {slot}"
    return UnknownValue(
        f"past and present share one {buffer_len}-long buffer, so the attended length is the value of "
        f"{name!r}, which is not known (give it as a constant or make it computable from shapes)"
    )


def _shared_past_length(node: NodeView, slot: int, buffer_len: int) -> int:
    """The past length when past and present share one max-length buffer: the value at ``slot``."""
    value = _scalar(node, slot)
    if value is None:
        raise _unknown_length(node, slot, buffer_len)
    return value


def _rotated_elements(tokens_heads: int, head_dim: int, rotary_dim: int) -> int:
    return tokens_heads * min(rotary_dim or head_dim, head_dim)


def _cost(macs: int, flops: int, formulas: list[str]) -> OpCost:
    return OpCost(macs=macs, flops=flops, formula="; ".join(f for f in formulas if f))


# --- default domain ----------------------------------------------------------------------------


def attention(node: NodeView) -> OpCost:
    """MACs = B x Hq x Sq x (past + Skv) x (Dqk + Dv); FLOPs = scores x (1 scale + 1 mask if attn_mask
    or is_causal + 3 softcap if set + 5 softmax). Q/K/V are 4D [B, H, S, D] or 3D [B, S, H·D] with
    q_num_heads/kv_num_heads; causal: full rectangle counted, unmasked pairs in the formula."""
    q, k, v = node.input_shape(0), node.input_shape(1), node.input_shape(2)
    if len(q) == 4:
        batch, q_heads, q_len, qk_dim = q
        kv_heads, kv_len, v_dim = k[1], k[2], v[3]
    elif len(q) == 3:
        q_heads, kv_heads = int(node.attr("q_num_heads", 0)), int(node.attr("kv_num_heads", 0))
        if not q_heads or not kv_heads:
            raise ValueError("3D Q/K/V need the q_num_heads and kv_num_heads attributes")
        batch, q_len, qk_dim = q[0], q[1], q[2] // q_heads
        kv_len, v_dim = k[1], v[2] // kv_heads
    else:
        raise ValueError(f"Q has rank {len(q)}; Attention takes 3D or 4D Q/K/V")
    past = node.input_shape(4)[2] if node.has_input(4) else 0
    dims = AttentionDims(batch, q_heads, kv_heads, q_len, past + kv_len, qk_dim, v_dim, past)
    macs, flops, formula = attention_cost(
        dims,
        masked=node.has_input(3),
        causal=bool(node.attr("is_causal", 0)),
        softcap=float(node.attr("softcap", 0.0)),
        offset=past,  # ONNX aligns the causal mask at the past length (0 without a cache)
    )
    return OpCost(macs=macs, flops=flops, formula=formula)


def rotary_embedding(node: NodeView) -> OpCost:
    """FLOPs = 3 x rotated elements; rotated = elements x rotary_embedding_dim / head_size (all of
    them when rotary_embedding_dim is 0). X is [B, H, S, D] or [B, S, H·D] with num_heads.
    Inputs: X, cos_cache, sin_cache, position_ids (ONNX opset 23)."""
    return _rotary(node, cos_slot=1)


def _rotary(node: NodeView, cos_slot: int) -> OpCost:
    x = node.input_shape(0)
    elements = prod(x)
    rotary_dim = int(node.attr("rotary_embedding_dim", 0))
    heads = int(node.attr("num_heads", 0))
    if len(x) == 4:
        head_dim = x[3]
    elif heads:
        head_dim = x[-1] // heads
    else:  # 3D without num_heads: the cache's width is half the rotated head
        head_dim = 2 * node.input_shape(cos_slot)[-1]
    rotated = _rotated_elements(elements // head_dim, head_dim, rotary_dim)
    flops = ROTARY_FLOPS * rotated
    return OpCost(flops=flops, formula=f"{ROTARY_FLOPS}·{rotated:,} rotated elements = {flops:,} FLOPs")


# --- com.microsoft contrib ops ------------------------------------------------------------------


def _fused_qkv_attention(
    node: NodeView, *, past_slot: int, mask_slots: tuple[int, ...], past_length_slot: int | None, dequantize: bool
) -> OpCost:
    """Shared by contrib Attention and QAttention: packed projection, then attention."""
    x, weights = node.input_shape(0), node.input_shape(1)
    batch, seq, hidden_in = x[0], x[1], x[-1]
    projected = weights[1]
    heads = int(node.attr("num_heads"))
    sizes = node.attr("qkv_hidden_sizes") or [projected // 3] * 3
    q_hidden, v_hidden = int(sizes[0]), int(sizes[2])
    proj_macs = batch * seq * hidden_in * projected
    formulas = [f"projection B·S·Hin·(Dq+Dk+Dv) = {batch}·{seq}·{hidden_in}·{projected} = {proj_macs:,} MACs"]
    extra = 0
    if dequantize:  # int32 accumulators rescaled to float once each
        extra += batch * seq * projected
        formulas.append(f"rescale {batch * seq * projected:,} accumulators")
    past = 0
    if node.has_input(past_slot):  # past: [2, B, N, P, H]
        buffer_len = node.input_shape(past_slot)[3]
        if node.attr("past_present_share_buffer", 0):
            if past_length_slot is None:
                raise ValueError("past_present_share_buffer without a past_sequence_length input")
            past = _shared_past_length(node, past_length_slot, buffer_len)
        else:
            past = buffer_len
    dims = AttentionDims(batch, heads, heads, seq, past + seq, q_hidden // heads, v_hidden // heads, past)
    masked = any(node.has_input(s) for s in mask_slots)
    macs, flops, formula = attention_cost(dims, masked=masked, causal=bool(node.attr("unidirectional", 0)))
    formulas.append(formula)
    if node.attr("do_rotary", 0):  # Q and K rotated
        rotary_dim = int(node.attr("rotary_embedding_dim", 0))
        rotated = 2 * _rotated_elements(batch * seq * heads, q_hidden // heads, rotary_dim)
        extra += ROTARY_FLOPS * rotated
        formulas.append(f"rotary {ROTARY_FLOPS}·{rotated:,} Q/K elements")
    return _cost(proj_macs + macs, flops + extra, formulas)


def contrib_attention(node: NodeView) -> OpCost:
    """MACs = B x S x Hin x (Dq + Dk + Dv) (packed QKV projection, bias folded) + B x N x S x
    (past + S) x (Dq + Dv)/N (scores and values); FLOPs = scores x (1 scale + 1 mask if mask_index,
    attention_bias or unidirectional + 5 softmax) (+ 3 per rotated Q/K element with do_rotary).
    Inputs: input, weights, bias, mask_index, past [2,B,N,P,H], attention_bias, past_sequence_length."""
    return _fused_qkv_attention(node, past_slot=4, mask_slots=(3, 5), past_length_slot=6, dequantize=False)


def qattention(node: NodeView) -> OpCost:
    """As contrib Attention with an int8 projection: MACs = B x S x Hin x 3·hidden + B x N x S x
    (past + S) x 2·head_size; FLOPs add 1 per projected element (int32 accumulators to float).
    Inputs: input, weight, bias, input_scale, weight_scale, mask_index, input_zero_point,
    weight_zero_point, past."""
    return _fused_qkv_attention(node, past_slot=8, mask_slots=(5,), past_length_slot=None, dequantize=True)


def multi_head_attention(node: NodeView) -> OpCost:
    """MACs = B x N x S x (past + Skv) x (Dqk + Dv); FLOPs = scores x (1 scale + 1 mask if
    key_padding_mask, attention_bias or unidirectional + 5 softmax) + 1 per Q/K/V element with a
    bias input. Query [B,S,N·H] or packed QKV [B,S,N,3,H]; key [B,Skv,N·H], packed KV
    [B,Skv,N,2,H] or cached [B,N,Skv,H]. Inputs: query, key, value, bias, key_padding_mask,
    attention_bias, past_key, past_value, past_sequence_length, cache_indirection."""
    heads = int(node.attr("num_heads"))
    q = node.input_shape(0)
    batch, q_len = q[0], q[1]
    new_kv = True  # key/value are new tokens (concatenated after any past), not a cached tensor
    if len(q) == 5:  # packed QKV
        qk_dim = v_dim = q[4]
        kv_len = q_len
    else:
        qk_dim = q[2] // heads
        k = node.input_shape(1)
        if len(k) == 5:  # packed KV
            kv_len, v_dim = k[1], k[4]
        elif len(k) == 4:  # already-projected cached key [B, N, Skv, H] (cross attention)
            kv_len, new_kv = k[2], False
            v_dim = node.input_shape(2)[3]
        else:
            kv_len = k[1]
            v = node.input_shape(2)
            v_dim = v[3] if len(v) == 4 else v[2] // heads
    past = 0
    if node.has_input(6) and new_kv:
        buffer_len = node.input_shape(6)[2]
        past = _shared_past_length(node, 8, buffer_len) if node.has_input(8) else buffer_len
    dims = AttentionDims(batch, heads, heads, q_len, past + kv_len, qk_dim, v_dim, past)
    macs, flops, formula = attention_cost(
        dims, masked=node.has_input(4) or node.has_input(5), causal=bool(node.attr("unidirectional", 0))
    )
    formulas = [formula]
    if node.has_input(3):
        biased = batch * heads * (q_len * qk_dim + (kv_len * (qk_dim + v_dim) if new_kv else 0))
        flops += biased
        formulas.append(f"bias add {biased:,} Q/K/V elements")
    return _cost(macs, flops, formulas)


def group_query_attention(node: NodeView) -> OpCost:
    """MACs = B x N x S x T x 2·H with T = total_sequence_length's value (else past + S from the
    shapes); FLOPs = scores x (1 scale + 1 mask + 3 softcap if set + 5 softmax) + 3 per rotated
    Q/K element with do_rotary + 4 per Q/K element with q/k norm weights. Query [B,S,N·H] or packed
    QKV [B,S,(N+2·Nkv)·H]; causal (default) and local_window_size: full rectangle counted. Bytes
    with one buffer for past and present (present_key has past_key's length L,
    past_present_share_buffer): past_key and past_value read B x Nkv x (T - S) x H elements each
    (the past positions attended, not the L of the buffer) and present_key and present_value
    written B x Nkv x S x H each (the new positions, in place); a growing cache reads its past and
    writes its present whole. Inputs: query, key, value, past_key, past_value, seqlens_k,
    total_sequence_length, cos_cache, sin_cache, position_ids, attention_bias, head_sink, k_scale,
    v_scale, q_norm_weight, k_norm_weight."""
    heads, kv_heads = int(node.attr("num_heads")), int(node.attr("kv_num_heads"))
    q = node.input_shape(0)
    batch, q_len = q[0], q[1]
    if node.has_input(1):
        head_dim = q[2] // heads
        kv_len = node.input_shape(1)[1]
    else:  # packed QKV
        head_dim = q[2] // (heads + 2 * kv_heads)
        kv_len = q_len
    total = _scalar(node, 6)  # total_sequence_length: past + new, the batch maximum
    shared = False  # past and present one max-length buffer, updated in place
    if node.has_input(3):
        buffer_len = node.input_shape(3)[2]
        present = node.outputs[1] if len(node.outputs) > 1 else None
        # (type: ignore below) is_known: the shape is set
        shared = present is not None and present.is_known and present.shape[2] == buffer_len  # type: ignore[index]
    if total is None and node.has_input(3):
        if shared:
            raise _unknown_length(node, 6, buffer_len)
        total = buffer_len + kv_len
    elif total is None:
        total = kv_len
    past = max(total - kv_len, 0)
    dims = AttentionDims(batch, heads, kv_heads, q_len, total, head_dim, head_dim, past)
    causal = bool(node.attr("causal", 1))
    window = int(node.attr("local_window_size", -1))
    macs, flops, formula = attention_cost(
        dims,
        masked=node.has_input(10),
        causal=causal,
        softcap=float(node.attr("softcap", 0.0)),
        window=window if window > 0 else 0,
    )
    formulas = [formula]
    qk_elements = batch * (q_len * heads + kv_len * kv_heads) * head_dim  # the new Q and K elements
    if node.attr("do_rotary", 0):
        rotary_dim = 2 * node.input_shape(7)[-1] if node.has_input(7) else head_dim
        rotated = qk_elements // head_dim * min(rotary_dim, head_dim)
        flops += ROTARY_FLOPS * rotated
        formulas.append(f"rotary {ROTARY_FLOPS}·{rotated:,} Q/K elements")
    if node.has_input(14) and node.has_input(15):
        flops += RMS_NORM_FLOPS * qk_elements
        formulas.append(f"q/k RMS norm {RMS_NORM_FLOPS}·{qk_elements:,} elements")
    cost = _cost(macs, flops, formulas)
    if shared:
        return _in_place(cost, node, (3, 4), (1, 2), past, kv_len)
    return cost


def _in_place(
    cost: OpCost, node: NodeView, past_slots: tuple[int, ...], present_slots: tuple[int, ...], past: int, new: int
) -> OpCost:
    """``cost`` with a KV buffer [B, N, L, H] shared by past and present: each past input read at its
    first ``past`` positions (min(past, L)), each present output written at the ``new`` positions."""
    reads, writes = [], []
    for slot in past_slots:
        shape = node.input_shape(slot)
        per_position = prod(shape) // shape[2] if shape[2] else 0
        reads.append((slot, per_position * min(past, shape[2])))
    for slot in present_slots:
        if slot < len(node.outputs) and node.node.output[slot]:
            shape = node.output_shape(slot)
            per_position = prod(shape) // shape[2] if shape[2] else 0
            writes.append((slot, per_position * min(new, shape[2])))
    length = node.input_shape(past_slots[0])[2]
    formula = (
        f"{cost.formula}; one {length}-long buffer for past and present, updated in place: "
        f"{past} past positions read, {new} new written"
    )
    return OpCost(
        macs=cost.macs, flops=cost.flops, formula=formula, activation_reads=tuple(reads), output_writes=tuple(writes)
    )


# DecoderMaskedMultiHeadAttention's inputs in MultiHeadAttention's order: query, key, value, bias (10),
# mask_index (3, MHA's key_padding_mask), attention_bias, past_key, past_value, past_sequence_length,
# cache_indirection; beam_width (8) is a setting
_DMMHA_AS_MHA = (0, 1, 2, 10, 3, 4, 5, 6, 7, 9)
_OMITTED = 1 << 16  # a slot no node has: with_inputs leaves it empty


def _as_multi_head_attention(node: NodeView) -> NodeView:
    """A DecoderMaskedMultiHeadAttention seen as the MultiHeadAttention it computes; without
    past_present_share_buffer the past grows by the new tokens, so past_sequence_length is dropped."""
    slots = list(_DMMHA_AS_MHA)
    if not node.attr("past_present_share_buffer", 0):
        slots[8] = _OMITTED
    return with_inputs(node, slots)


def decoder_masked_multi_head_attention(node: NodeView) -> OpCost:
    """As MultiHeadAttention on its inputs reordered (query, key, value, bias = input 10, mask_index,
    attention_bias, past_key, past_value, past_sequence_length, cache_indirection): with
    past_present_share_buffer the attended length is past_sequence_length's value + S, else the past
    buffer's length + S; beam_width and cache_indirection are settings (the generation decoder of
    onnxruntime's convert_generation)."""
    return multi_head_attention(_as_multi_head_attention(node))


def decoder_masked_multi_head_attention_shapes(node: NodeView) -> list[OutputType | None]:
    """As MultiHeadAttention's (output [B, S, N·Hv]; present_key / present_value past's own shape with
    past_present_share_buffer, else [B, N, past + S, H]); qk is not sized."""
    return multi_head_attention_shapes(_as_multi_head_attention(node))[:3]


def decoder_masked_self_attention(node: NodeView) -> OpCost:
    """As contrib Attention (the same inputs 0-6: input, weights, bias, mask_index, past, attention_bias,
    past_sequence_length; with past_present_share_buffer the attended length is past_sequence_length's
    value + S); beam_width and cache_indirection are settings (convert_generation's GPT-2 decoder)."""
    return contrib_attention(node)


def contrib_rotary_embedding(node: NodeView) -> OpCost:
    """FLOPs = 3 x rotated elements; rotated = elements x rotary_embedding_dim / head_size (all of
    them when it is 0). Input [B,S,N·H] or [B,N,S,H]; without num_heads the head size is twice
    cos_cache's width. Inputs: input, position_ids, cos_cache, sin_cache (onnxruntime contrib)."""
    return _rotary(node, cos_slot=2)


# --- shape rules of the com.microsoft ops (no ONNX schema) ----------------------------------------


def _fused_qkv_shapes(node: NodeView, past_slot: int, element_type: int) -> list[OutputType | None]:
    """Shared by contrib Attention and QAttention (see contrib_attention_shapes)."""
    x, weights = dims(node, 0), dims(node, 1)
    heads = int(node.attr("num_heads"))
    sizes = node.attr("qkv_hidden_sizes")
    q_hidden, v_hidden = (int(sizes[0]), int(sizes[2])) if sizes else (scale(weights[1], 1, 3),) * 2
    output = (element_type, (x[0], x[1], v_hidden))
    if node.has_input(past_slot):  # [2, B, N, past, H]: the new S keys appended, or one shared buffer
        past = dims(node, past_slot)
        if node.attr("past_present_share_buffer", 0):
            return [output, (element_type, past)]
        return [output, (element_type, (*past[:3], add(past[3], x[1]), past[4]))]
    head = None if q_hidden is None else scale(q_hidden, 1, heads)
    return [output, (element_type, (2, x[0], heads, x[1], head))]


def contrib_attention_shapes(node: NodeView) -> list[OutputType | None]:
    """output: [B, S, v_hidden] (qkv_hidden_sizes[2], else weights' dim 1 / 3); present: [2, B, N,
    past + S, H] (past's own shape with past_present_share_buffer; [2, B, N, S, H] without past);
    input's type."""
    return _fused_qkv_shapes(node, 4, dtype(node, 0))


def qattention_shapes(node: NodeView) -> list[OutputType | None]:
    """As contrib Attention's (past at input 8), typed as the float bias (input 2) or input_scale."""
    return _fused_qkv_shapes(node, 8, dtype(node, 2) or dtype(node, 3, FLOAT))


def multi_head_attention_shapes(node: NodeView) -> list[OutputType | None]:
    """output: [B, S, N·Hv]; present_key / present_value: [B, N, past + Skv, H] / [.., Hv] (past's
    length alone with past_sequence_length, a shared buffer; the cached key/value themselves for
    cross attention with 4-D key [B, N, Skv, H]); query's type. Layouts as the cost rule's."""
    heads = int(node.attr("num_heads"))
    q = dims(node, 0)
    element_type = dtype(node, 0)
    cross = False
    if len(q) == 5:  # packed QKV [B, S, N, 3, H]
        kv_len, qk_dim = q[1], q[4]
        v_dim = qk_dim
    else:
        qk_dim = scale(q[2], 1, heads)
        k = dims(node, 1)
        if len(k) == 5:  # packed KV [B, Skv, N, 2, H]
            kv_len, v_dim = k[1], k[4]
        elif len(k) == 4:  # cached key [B, N, Skv, H]
            cross = True
            kv_len, v_dim = k[2], dims(node, 2)[3]
        else:
            kv_len = k[1]
            v = dims(node, 2)
            v_dim = v[3] if len(v) == 4 else scale(v[2], 1, heads)
    output = (element_type, (q[0], q[1], scale(v_dim, heads)))
    if cross:
        return [output, (element_type, dims(node, 1)), (element_type, dims(node, 2))]
    total = kv_len
    if node.has_input(6):
        past = dims(node, 6)[2]
        total = past if node.has_input(8) else add(past, kv_len)
    return [output, (element_type, (q[0], heads, total, qk_dim)), (element_type, (q[0], heads, total, v_dim))]


def group_query_attention_shapes(node: NodeView) -> list[OutputType | None]:
    """output: [B, S, N·H] (H = query's width / N, or / (N + 2·Nkv) for packed QKV); present_key,
    present_value: [B, Nkv, P, H] with P = max(past buffer length, total_sequence_length's value)
    when both are known (a shared buffer keeps its length; a growing cache reaches the total),
    unknown with past but no value, and total_sequence_length's value or Skv without past; query's
    type (past_key's for present)."""
    heads, kv_heads = int(node.attr("num_heads")), int(node.attr("kv_num_heads"))
    q = dims(node, 0)
    packed = not node.has_input(1)
    head = scale(q[2], 1, heads + 2 * kv_heads if packed else heads)
    kv_len = q[1] if packed else dims(node, 1)[1]
    total = _scalar(node, 6)
    length: Dim
    if node.has_input(3):
        buffer_len = dims(node, 3)[2]
        length = max(buffer_len, total) if isinstance(buffer_len, int) and total is not None else None
    else:
        length = total if total is not None else kv_len
    present = (dtype(node, 3) or dtype(node, 0), (q[0], kv_heads, length, head))
    return [(dtype(node, 0), (q[0], q[1], scale(head, heads))), present, present]


register("Attention", attention, family="attention", arg_inputs=(3, 6))  # attn_mask, nonpad_kv_seqlen
register("RotaryEmbedding", rotary_embedding, family="attention", arg_inputs=(3,))  # position_ids
register(
    "Attention", contrib_attention, family="attention", domain=MS, arg_inputs=(3, 6), shapes=contrib_attention_shapes
)
register("QAttention", qattention, family="attention", domain=MS, arg_inputs=(5,), shapes=qattention_shapes)
register(
    "MultiHeadAttention",
    multi_head_attention,
    family="attention",
    domain=MS,
    arg_inputs=(4, 8, 9),
    shapes=multi_head_attention_shapes,
)
register(
    "GroupQueryAttention",
    group_query_attention,
    family="attention",
    domain=MS,
    arg_inputs=(5, 6, 9),
    shapes=group_query_attention_shapes,
)
register(
    "RotaryEmbedding", contrib_rotary_embedding, family="attention", domain=MS, arg_inputs=(1,), shapes=same_as_input(0)
)
register(
    "DecoderMaskedMultiHeadAttention",
    decoder_masked_multi_head_attention,
    family="attention",
    domain=MS,
    arg_inputs=(3, 7, 8, 9),
    shapes=decoder_masked_multi_head_attention_shapes,
)
register(
    "DecoderMaskedSelfAttention",
    decoder_masked_self_attention,
    family="attention",
    domain=MS,
    arg_inputs=(3, 6, 7, 8),
    shapes=contrib_attention_shapes,
)
