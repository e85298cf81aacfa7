"""Normalization and softmax: a fixed number of operations per element of the normalized input.

Counting rule (as in ``elementwise.py``): each add, subtract, multiply, divide, compare, exp and
log counts 1. The per-element work is counted; the per-row work (dividing a sum by the count,
adding epsilon, one square root and one reciprocal per row, the log of a log-softmax's sum) is
O(rows), not O(elements), and is left out. An optional affine input (a bias, a shift) adds its
1 FLOP per element only when the node has it.

=================================  ================  =================================================
op (domain)                        FLOPs / element   operations per element
=================================  ================  =================================================
BatchNormalization                 2                 x·a + b (mean, var, scale, B folded per channel)
LayerNormalization                 6 (+1 with B)     sum (mean), subtract mean, square, sum (variance),
                                                     multiply by 1/σ, multiply by scale (+ add B)
GroupNormalization                 7                 as LayerNormalization, scale and bias required
InstanceNormalization              7                 as LayerNormalization, scale and B required
MeanVarianceNormalization          5                 sum (mean), square, sum (E[x²]), subtract, divide
RMSNormalization                   4                 square, sum, multiply by 1/rms, multiply by scale
SimplifiedLayerNormalization       4                 as RMSNormalization (onnxruntime's name; it is
  (default and com.microsoft)                        emitted in the default domain)
SkipLayerNormalization (ms)        7 (+1 beta,       input + skip (+ bias), then LayerNormalization
                                   +1 bias)
SkipSimplifiedLayerNormalization   5 (+1 bias)       input + skip (+ bias), then RMSNormalization
  (ms)
EmbedLayerNormalization (ms)       8 (+1 segment)    word + position (+ segment) embedding rows (the
                                                     gathers are free), then LayerNormalization with
                                                     gamma and beta; + 1 per mask element for the
                                                     mask index when a mask is given
QEmbedLayerNormalization (ms)      as Embed... + 2   + 2 per gathered element of each int8 table
                                   per table         (dequantize)
GroupNorm (ms)                     7 (+4 SiLU)       LayerNormalization per group with gamma, beta;
                                                     activation=1 adds SiLU (sigmoid 3 + multiply)
LpNormalization                    3                 |x| or x², sum, divide
LRN                                2·size + 3        window sum of squares (size multiplies and
                                                     adds), scale, add bias, power, divide
Softmax                            5                 max, subtract, exp, sum, divide
LogSoftmax                         5                 max, subtract, exp, sum, subtract log-sum
=================================  ================  =================================================

``(ms)``: the ``com.microsoft`` contrib domain. Attention's softmax uses ``SOFTMAX_FLOPS``; other
families reuse the constants below rather than restating the numbers. Hardmax (a row arg max) is
a selection and lives in ``reduction.py``.

Shapes (ops without an ONNX schema): Y keeps X's shape (the scale's type); the saved statistics
(mean, inv_std_var) are X's shape with the normalized dims set to 1, float; a skip norm's 4th
output (input + skip + bias) is X's; EmbedLayerNormalization writes [B, S, hidden], mask_index [B]
int32 and the optional embedding sum.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._shapes import FLOAT, INT32, dims, dtype
from .base import Handler, NodeView, OpCost, OpTrait, OutputType, register, same_as_input

SOFTMAX_FLOPS = 5  # max, subtract, exp, sum, divide (shared with the attention rules)
LOG_SOFTMAX_FLOPS = 5  # max, subtract, exp, sum, subtract the log-sum (one log per row, not counted)
LAYER_NORM_FLOPS = 6  # sum, subtract mean, square, sum, multiply by 1/σ, multiply by scale
RMS_NORM_FLOPS = 4  # square, sum, multiply by 1/rms, multiply by scale

MS = "com.microsoft"


def norm_flop_counter(flops_per_element: int, rule: str, optional: Mapping[int, str] | None = None) -> Handler:
    """A rule counting ``flops_per_element`` operations per element of input 0, plus 1 per element
    for each optional input (slot -> its name, added per element) that the node has."""
    optional = dict(optional or {})

    def handler(node: NodeView) -> OpCost:
        elements = node.input_elements(0)
        present = [name for slot, name in optional.items() if node.has_input(slot)]
        per_element = flops_per_element + len(present)
        flops = per_element * elements
        terms = " + ".join([str(flops_per_element), *(f"1 {name}" for name in present)])
        per = f"({terms})" if present else terms
        return OpCost(flops=flops, formula=f"{per}·{elements:,} elements = {flops:,} FLOPs ({rule})")

    count = " ".join([str(flops_per_element), *(f"+ 1 if {name} is given" for name in optional.values())])
    handler.__doc__ = f"FLOPs = {f'({count})' if optional else count} x input elements ({rule})"
    return handler


def lrn(node: NodeView) -> OpCost:
    """FLOPs = (2 x size + 3) x elements: a window sum of squares (size multiplies and adds),
    then scale, add bias, power and divide (LRN spec: x / (bias + alpha/size · Σx²)^beta)."""
    size = int(node.attr("size", 1))
    elements = node.input_elements(0)
    per_element = 2 * size + 3
    flops = per_element * elements
    return OpCost(flops=flops, formula=f"(2·{size} + 3)·{elements:,} elements = {flops:,} FLOPs")


def embed_layer_normalization(node: NodeView) -> OpCost:
    """FLOPs = (1 + 1 if segment embedding + 7) x output elements + mask elements (if a mask is given):
    word + position (+ segment) embedding rows added, then LayerNormalization with gamma and beta.
    The row gathers cost nothing; the embedding tables are parameters (inputs 2-4), of which it
    reads the gathered rows, as a Gather does: B x S rows of the word and segment tables, S rows
    of the position table (B x S with position_ids), each at most the table. Inputs: input_ids,
    segment_ids, word_embedding, position_embedding, segment_embedding, gamma, beta, mask,
    position_ids (onnxruntime contrib schema)."""
    elements = _embedded_elements(node)
    adds = 1 + (1 if node.has_input(4) else 0)
    per_element = adds + LAYER_NORM_FLOPS + 1
    mask = node.input_elements(7) if node.has_input(7) else 0
    flops = per_element * elements + mask
    formula = f"({adds} adds + {LAYER_NORM_FLOPS + 1} layernorm)·{elements:,} elements"
    if mask:
        formula += f" + {mask:,} mask elements"
    ids = node.input_shape(0)
    width = node.input_shape(2)[-1]
    positions = elements if node.has_input(8) else ids[-1] * width
    reads = ((2, elements), (3, positions), (4, elements))
    return OpCost(flops=flops, formula=f"{formula} = {flops:,} FLOPs; reads the gathered rows", weight_reads=reads)


def _embedded_elements(node: NodeView) -> int:
    """The output's elements from the inputs: input_ids' B x S rows of the word table's width."""
    return node.input_elements(0) * node.input_shape(2)[-1]


def qembed_layer_normalization(node: NodeView) -> OpCost:
    """As EmbedLayerNormalization + 2 x output elements per embedding table gathered (word, position,
    segment if given): each gathered int8 row element dequantized ((q - zero point) · scale); gamma and
    beta are dequantized once per call (O(hidden), not counted). Inputs: input_ids, segment_ids,
    word_embedding_quant, position_embedding_quant, segment_embedding_quant, gamma_quant, beta_quant,
    mask, then the scales and zero points of the five tables (onnxruntime's quantized BERT embedding)."""
    cost = embed_layer_normalization(node)
    elements = _embedded_elements(node)
    tables = 2 + (1 if node.has_input(4) else 0)
    dequantize = 2 * tables * elements
    return OpCost(
        flops=cost.flops + dequantize,
        weight_reads=cost.weight_reads,
        formula=f"{cost.formula} + dequantize 2·{tables} tables·{elements:,} = {cost.flops + dequantize:,} FLOPs",
    )


# --- shape rules of the com.microsoft norms (and the default-domain SimplifiedLayerNormalization, which
# onnxruntime defines but ONNX does not) ----------------------------------------------------------------


def _statistics(x: tuple, axis: int) -> tuple:
    """The shape of a norm's saved mean / inverse std: x's with the normalized dims (axis on) set to 1."""
    axis = axis + len(x) if axis < 0 else axis
    return tuple(d if i < axis else 1 for i, d in enumerate(x))


def layer_norm_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: X's shape, scale's type (X's if unknown); then per further output (LayerNormalization:
    Mean, InvStdDev; SimplifiedLayerNormalization: inv_std_var) X's shape with the dims from
    ``axis`` (default -1) on set to 1, float. Inputs: X, scale (, B)."""
    x = dims(node, 0)
    stats = (FLOAT, _statistics(x, int(node.attr("axis", -1))))
    return [(dtype(node, 1) or dtype(node, 0), x), *[stats] * (len(node.node.output) - 1)]


def skip_norm_shapes(node: NodeView) -> list[OutputType | None]:
    """output: input's shape and type; mean, inv_std_var: input's shape with the last dim 1, float;
    input_skip_bias_sum: input's shape and type. Inputs: input, skip, gamma (, beta), bias."""
    x, element_type = dims(node, 0), dtype(node, 0)
    stats = (FLOAT, _statistics(x, -1))
    return [(element_type, x), stats, stats, (element_type, x)]


def embed_layer_norm_shapes(node: NodeView) -> list[OutputType | None]:
    """output: [B, S, hidden] (input_ids [B, S], hidden = word_embedding's last dim), the word
    table's type (float for the quantized one); mask_index: [B] int32; embedding_sum (optional):
    as output."""
    ids, table = dims(node, 0), dims(node, 2)
    element_type = FLOAT if node.node.op_type.startswith("Q") else dtype(node, 2)
    out = (element_type, (*ids, table[-1]))
    return [out, (INT32, (ids[0],)), out]


def group_norm(node: NodeView) -> OpCost:
    """FLOPs = (7 + 4 with activation=1 (SiLU: sigmoid 3 + multiply)) x input elements: GroupNorm's
    layer norm over each group with gamma and beta (6 + 1), then the optional SiLU. Input NHWC
    (channels_last=1, the default) or NCHW; output = input's shape (com.microsoft GroupNorm, the
    Stable Diffusion optimizer's fusion)."""
    elements = node.input_elements(0)
    per_element = LAYER_NORM_FLOPS + 1 + (4 if node.attr("activation", 0) else 0)
    flops = per_element * elements
    return OpCost(flops=flops, formula=f"{per_element}·{elements:,} elements = {flops:,} FLOPs")


_LN = "sum, subtract mean, square, sum, multiply by 1/σ, multiply by scale"
_RMS = "square, sum, multiply by 1/rms, multiply by scale"

# op -> (FLOPs per element, the operations, {optional input slot: what it adds}); the table above
NORM_FLOPS: dict[str, tuple[int, str, dict[int, str]]] = {
    # inference BatchNormalization folds into one per-channel scale and shift
    "BatchNormalization": (2, "folded per-channel scale and shift", {}),
    "LayerNormalization": (LAYER_NORM_FLOPS, _LN, {2: "B"}),
    "GroupNormalization": (LAYER_NORM_FLOPS + 1, _LN + ", add bias", {}),
    "InstanceNormalization": (LAYER_NORM_FLOPS + 1, _LN + ", add B", {}),
    "MeanVarianceNormalization": (5, "sum, square, sum of squares, subtract mean, divide by σ", {}),
    "RMSNormalization": (RMS_NORM_FLOPS, _RMS, {}),
    "SimplifiedLayerNormalization": (RMS_NORM_FLOPS, _RMS, {}),
    "LpNormalization": (3, "|x| or x², sum, divide", {}),
    "Softmax": (SOFTMAX_FLOPS, "max, subtract, exp, sum, divide", {}),
    "LogSoftmax": (LOG_SOFTMAX_FLOPS, "max, subtract, exp, sum, subtract the log-sum (one log per row)", {}),
}
# com.microsoft fusions: the residual add, then the norm
CONTRIB_NORM_FLOPS: dict[str, tuple[int, str, dict[int, str]]] = {
    "SkipLayerNormalization": (1 + LAYER_NORM_FLOPS, "input + skip, then " + _LN, {3: "beta", 4: "bias"}),
    "SkipSimplifiedLayerNormalization": (1 + RMS_NORM_FLOPS, "input + skip, then " + _RMS, {3: "bias"}),
    "SimplifiedLayerNormalization": (RMS_NORM_FLOPS, _RMS, {}),
}
_CONTRIB_NORM_SHAPES = {
    "SkipLayerNormalization": skip_norm_shapes,
    "SkipSimplifiedLayerNormalization": skip_norm_shapes,
    "SimplifiedLayerNormalization": layer_norm_shapes,
}
# Default-domain ops onnxruntime defines itself: SimplifiedLayerNormalization (no ONNX schema at all),
# and LayerNormalization at opsets below 17, where ONNX has none but onnxruntime's opset-1 schema
# lets its transformers optimizer emit it (opset 12-16 BERT and GPT-2 exports).
_ORT_DEFAULT_DOMAIN_SHAPES = {
    "SimplifiedLayerNormalization": layer_norm_shapes,
    "LayerNormalization": layer_norm_shapes,
}

# inference BatchNormalization is a per-channel scale and shift: it joins a kernel as its epilogue
_NORM_TRAITS = {"BatchNormalization": OpTrait.ELEMENTWISE, "Softmax": OpTrait.SOFTMAX, "LogSoftmax": OpTrait.SOFTMAX}

for _op, (_flops, _rule, _optional) in NORM_FLOPS.items():
    register(
        _op,
        norm_flop_counter(_flops, _rule, _optional),
        family="normalization",
        shapes=_ORT_DEFAULT_DOMAIN_SHAPES.get(_op),
        traits=_NORM_TRAITS.get(_op, OpTrait.NONE),
    )
for _op, (_flops, _rule, _optional) in CONTRIB_NORM_FLOPS.items():
    register(
        _op,
        norm_flop_counter(_flops, _rule, _optional),
        family="normalization",
        domain=MS,
        shapes=_CONTRIB_NORM_SHAPES[_op],
    )
register("LRN", lrn, family="normalization")
# input_ids, segment_ids, mask and position_ids are indices: constants there are not parameters
register(
    "EmbedLayerNormalization",
    embed_layer_normalization,
    family="normalization",
    domain=MS,
    arg_inputs=(0, 1, 7, 8),
    shapes=embed_layer_norm_shapes,
)
register(
    "QEmbedLayerNormalization",
    qembed_layer_normalization,
    family="normalization",
    domain=MS,
    arg_inputs=(0, 1, 7),
    shapes=embed_layer_norm_shapes,
)
register("GroupNorm", group_norm, family="normalization", domain=MS, shapes=same_as_input(0))
