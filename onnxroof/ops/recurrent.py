"""Recurrent ops: RNN, GRU, LSTM (ONNX layouts), and the linear-attention recurrence.

Gate products are MACs. With G gates (RNN 1, GRU 3, LSTM 4), D directions (2 when
bidirectional), hidden size H, input size I and S = sum of the sequence lengths over the batch
(T x B, or the sum of ``sequence_lens`` when its values are known), every step of every
direction multiplies the input by W [G·H, I] and the previous hidden state by R [G·H, H]:

    MACs = D x S x G·H x (I + H)

The biases (Wb + Rb) and the sum of the two products fold into the accumulate (cost-model.md
section 1). The element operations of the gates, per hidden unit per step per direction, go to
``flops`` with f, g, h the op's activations (defaults: RNN f = Tanh; GRU f = Sigmoid, g = Tanh;
LSTM f = Sigmoid, g = h = Tanh), each costing what the same op costs in elementwise.py:

| op | per hidden unit per step | default |
|---|---|---|
| RNN | f | 1 |
| GRU | 2·f (z, r) + g + 1 (r ⊙ h or r ⊙ (h·R + Rb)) + 4 ((1 - z) ⊙ h̃ + z ⊙ h) + 1 if linear_before_reset | 12 |
| LSTM | 3·f (i, f, o) + g (c̃) + h (of c) + 3 (f ⊙ c + i ⊙ c̃) + 1 (o ⊙ h(c)) + 6 with peepholes | 15 |

``clip`` adds 2 per activation input (min, max); LSTM ``input_forget`` replaces the forget
gate's f with 1 - i (1 FLOP).

com.microsoft DynamicQuantizeLSTM is the LSTM rule on int8 weights stored transposed (W [D, I, 4H],
R [D, H, 4H]), plus per step per direction 6 x (I + H) FLOPs quantizing x_t and h_t-1 on the fly
and 2 x 4H rescaling both int32 products to float. Outputs Y [T, D, B, H], Y_h and Y_c [D, B, H].
"""

from __future__ import annotations

from ._shapes import dims, dtype
from .base import Handler, NodeView, OpCost, OutputType, register
from .elementwise import ELEMENTWISE_FLOPS
from .quantized import DYNAMIC_QUANTIZE_FLOPS, TO_FLOAT_FLOPS

# RNN-family activation names -> FLOPs per element (the spec's list; Affine and ScaledTanh are RNN-only)
ACTIVATION_FLOPS: dict[str, int] = {
    **{
        name.lower(): ELEMENTWISE_FLOPS[name][0]
        for name in (
            "Relu",
            "Tanh",
            "Sigmoid",
            "LeakyRelu",
            "ThresholdedRelu",
            "HardSigmoid",
            "Elu",
            "Softsign",
            "Softplus",
        )
    },
    "affine": 2,  # alpha·x + beta
    "scaledtanh": 3,  # alpha·tanh(beta·x)
}

# op -> (gates, default activations per direction)
RECURRENT: dict[str, tuple[int, tuple[str, ...]]] = {
    "RNN": (1, ("Tanh",)),
    "GRU": (3, ("Sigmoid", "Tanh")),
    "LSTM": (4, ("Sigmoid", "Tanh", "Tanh")),
}


# the per-unit gate operations, as documented in the module table
PER_UNIT_DOC: dict[str, str] = {
    "RNN": "f (default Tanh: 1)",
    "GRU": "(2·f + g + 1 + 4, + 1 if linear_before_reset) = 12 with the default Sigmoid, Tanh",
    "LSTM": "(3·f + g + h + 3 + 1, + 6 with peepholes, f replaced by 1 - i with input_forget) = 15 with the "
    "default Sigmoid, Tanh, Tanh",
}


def _activation_costs(node: NodeView, defaults: tuple[str, ...], directions: int) -> list[list[int]]:
    """Per direction, the FLOPs per element of each activation (forward's first, then reverse's)."""
    names = node.attr("activations") or []
    names = [n.decode() if isinstance(n, bytes) else n for n in names]
    per_direction = len(defaults)
    costs = []
    for direction in range(directions):
        chosen = names[direction * per_direction : (direction + 1) * per_direction] or list(defaults)
        costs.append([ACTIVATION_FLOPS.get(name.lower(), 1) for name in chosen])
    return costs


def _gate_flops(op_type: str, node: NodeView, activation: list[int]) -> int:
    """Element operations per hidden unit per step for one direction (see the module table)."""
    clip = 2 if node.attr("clip") is not None else 0
    if op_type == "RNN":
        return activation[0] + clip
    if op_type == "GRU":
        f, g = activation
        return 2 * f + g + 1 + 4 + (1 if node.attr("linear_before_reset", 0) else 0) + 3 * clip
    f, g, h = activation
    gates = 3 * f
    if node.attr("input_forget", 0):
        gates = 2 * f + 1  # f = 1 - i
    peepholes = 6 if node.has_input(7) else 0
    return gates + g + h + 3 + 1 + peepholes + 5 * clip


def recurrent_counter(op_type: str, *, quantized: bool = False) -> Handler:
    """The handler for RNN, GRU or LSTM (``op_type``): gate MACs plus per-unit gate FLOPs.
    ``quantized``: com.microsoft DynamicQuantizeLSTM, whose int8 W [D, I, G·H] and R [D, H, G·H] are
    stored transposed, and whose x_t and h_t-1 are quantized on the fly and both int32 products
    rescaled to float."""
    gates, defaults = RECURRENT[op_type]

    def handler(node: NodeView) -> OpCost:
        weight = node.input_shape(1)  # W: [D, G·H, I] ([D, I, G·H] transposed)
        recurrence = node.input_shape(2)  # R: [D, G·H, H] ([D, H, G·H] transposed)
        directions = weight[0]
        input_size, hidden = (weight[1], recurrence[1]) if quantized else (weight[2], recurrence[2])
        data = node.input_shape(0)  # X: [T, B, I] (layout 0) or [B, T, I] (layout 1)
        lengths = node.input_value(4)
        if lengths is not None:  # padded steps past a sequence's length are skipped
            steps = int(lengths.sum())
            steps_text = f"Σ sequence_lens = {steps}"
        else:
            steps = data[0] * data[1]
            steps_text = f"T·B = {data[0]}·{data[1]}" if not node.attr("layout", 0) else f"B·T = {data[0]}·{data[1]}"
        macs = directions * steps * gates * hidden * (input_size + hidden)
        activations = _activation_costs(node, defaults, directions)
        per_unit = [_gate_flops(op_type, node, activation) for activation in activations]
        flops = steps * hidden * sum(per_unit)
        formula = (
            f"{directions} dir·({steps_text})·{gates}·{hidden}·({input_size} + {hidden}) = {macs:,} MACs; "
            f"gates {'+'.join(map(str, per_unit))}·{steps}·{hidden} = {flops:,} FLOPs"
        )
        if quantized:
            per_step = DYNAMIC_QUANTIZE_FLOPS * (input_size + hidden) + 2 * TO_FLOAT_FLOPS * gates * hidden
            flops += directions * steps * per_step
            formula += (
                f"; dynamic quantization {directions} dir·{steps}·({DYNAMIC_QUANTIZE_FLOPS}·({input_size} + "
                f"{hidden}) + 2·{gates * hidden}) = {directions * steps * per_step:,} FLOPs"
            )
        return OpCost(macs=macs, flops=flops, formula=formula)

    layout = "W [D, I, 4H], R [D, H, 4H] (transposed), " if quantized else ""
    handler.__doc__ = (
        f"MACs = D x S x {gates}·H x (I + H), D directions, S = T x B or the sum of sequence_lens "
        f"(biases folded in); FLOPs = D x S x H x {PER_UNIT_DOC[op_type]}; clip adds 2 per activation"
    )
    if quantized:
        handler.__doc__ += (
            f"; {layout}+ D x S x ({DYNAMIC_QUANTIZE_FLOPS} x (I + H) (x_t and h_t-1 quantized on "
            f"the fly: min, max, quantize) + 2 x 4H (both int32 products rescaled to float)). "
            "Outputs: Y [T, D, B, H], Y_h and Y_c [D, B, H] (com.microsoft DynamicQuantizeLSTM; "
            "inputs X, W, R, B, sequence_lens, initial_h, initial_c, P, then W's and R's scales "
            "and zero points)"
        )
    return handler


def dynamic_quantize_lstm_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: [T, D, B, H]; Y_h, Y_c: [D, B, H] (X [T, B, I], D = W's dim 0, H = hidden_size or R's dim 1);
    X's type."""
    x, weight = dims(node, 0), dims(node, 1)
    hidden = node.attr("hidden_size") or dims(node, 2)[1]
    directions, element_type = weight[0], dtype(node, 0)
    state = (element_type, (directions, x[1], hidden))
    return [(element_type, (x[0], directions, x[1], hidden)), state, state]


def linear_attention(node: NodeView) -> OpCost:
    """Per token (S = B x T tokens), with Hq query heads, Hkv key/value heads, dk and dv the head
    sizes, counting the sequential recurrence the spec defines (a chunk-parallel kernel does the
    same products in another order):

    MACs = S x (Hkv·dk·dv (state update k ⊗ v, or k ⊗ β·(v - S^T k)) + Hq·dk·dv (readout q^T S)
    + Hkv·dk·dv for 'delta'/'gated_delta' (the retrieval S^T k));
    FLOPs = S x (Hq·dv (scale) + for 'gated'/'gated_delta': decay elements per token (exp) +
    Hkv·dk·dv (decay ⊙ S) + for 'delta'/'gated_delta': 2·Hkv·dv (subtract, β multiply))."""
    query, value = node.input_shape(0), node.input_shape(2)
    q_heads, kv_heads = int(node.attr("q_num_heads")), int(node.attr("kv_num_heads"))
    tokens = query[0] * query[1]
    dk, dv = query[2] // q_heads, value[2] // kv_heads
    rule = node.attr("update_rule", "gated_delta")
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    state = kv_heads * dk * dv
    macs = tokens * (state + q_heads * dk * dv + (state if delta else 0))
    decay = node.input_shape(4)[-1] if gated and node.has_input(4) else 0
    flops = tokens * (q_heads * dv + ((decay + state) if gated else 0) + (2 * kv_heads * dv if delta else 0))
    return OpCost(
        macs=macs,
        flops=flops,
        formula=f"{rule}: {tokens:,} tokens, Hq={q_heads}, Hkv={kv_heads}, dk={dk}, dv={dv}: "
        f"{macs:,} MACs + {flops:,} FLOPs",
    )


for _op in RECURRENT:
    register(_op, recurrent_counter(_op), family="recurrent", arg_inputs=(4,))  # sequence_lens
register("LinearAttention", linear_attention, family="recurrent")
register(
    "DynamicQuantizeLSTM",
    recurrent_counter("LSTM", quantized=True),
    family="recurrent",
    domain="com.microsoft",
    arg_inputs=(4,),
    shapes=dynamic_quantize_lstm_shapes,
)
