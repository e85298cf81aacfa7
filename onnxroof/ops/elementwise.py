"""Elementwise arithmetic and activations: a fixed number of operations per output element.

Counting rule: each arithmetic operation, comparison or select counts 1, and so does each
transcendental (exp, log, sqrt, tanh, erf, sin, cos), as in the formula the op's spec gives.
Two readings are fixed here so every count follows from the table:

- a negation folded into a transcendental's argument is not counted (Sigmoid = 1 / (1 + exp(-x))
  is exp, add, divide = 3);
- branches are counted as computed branch-free, the way vectorized runtimes run them: Elu
  evaluates exp(x) - 1 for every element, not only the negative ones.

The tables below are the whole rule; docs/ops.md is generated from them. Window generators
(HannWindow, ...) and MelWeightMatrix build small constant tensors and live here too: they are a
per-element formula over their output.
"""

from __future__ import annotations

from ._shapes import dims, dtype, scale
from .base import Handler, NodeView, OpCost, OpTrait, OutputType, per_element_flop_counter, register, same_as_input

# op -> (operations per output element, the formula they come from)
ELEMENTWISE_FLOPS: dict[str, tuple[int, str]] = {
    # binary arithmetic (broadcast: one operation per output element)
    "Add": (1, "a + b"),
    "Sub": (1, "a - b"),
    "Mul": (1, "a · b"),
    "Div": (1, "a / b"),
    "Pow": (1, "a ^ b"),
    "Mod": (1, "a mod b"),
    "BitShift": (1, "a << b"),
    "PRelu": (2, "x < 0 ? slope·x : x (compare, multiply)"),
    "Equal": (1, "a == b"),
    "Less": (1, "a < b"),
    "LessOrEqual": (1, "a <= b"),
    "Greater": (1, "a > b"),
    "GreaterOrEqual": (1, "a >= b"),
    "And": (1, "a and b"),
    "Or": (1, "a or b"),
    "Xor": (1, "a xor b"),
    "BitwiseAnd": (1, "a & b"),
    "BitwiseOr": (1, "a | b"),
    "BitwiseXor": (1, "a ^ b"),
    # a select counts 1, like Relu's max(x, 0); its bytes are counted by the graph stage as for any op
    "Where": (1, "c ? a : b (one select)"),
    # unary
    "Relu": (1, "max(x, 0)"),
    "Abs": (1, "|x|"),
    "Neg": (1, "-x"),
    "Sign": (1, "sign(x)"),
    "Ceil": (1, "ceil(x)"),
    "Floor": (1, "floor(x)"),
    "Round": (1, "round(x)"),
    "Reciprocal": (1, "1 / x"),
    "Sqrt": (1, "sqrt(x)"),
    "Exp": (1, "exp(x)"),
    "Log": (1, "log(x)"),
    "Erf": (1, "erf(x)"),
    "Tanh": (1, "tanh(x)"),
    "Sin": (1, "sin(x)"),
    "Cos": (1, "cos(x)"),
    "Tan": (1, "tan(x)"),
    "Asin": (1, "asin(x)"),
    "Acos": (1, "acos(x)"),
    "Atan": (1, "atan(x)"),
    "Sinh": (1, "sinh(x)"),
    "Cosh": (1, "cosh(x)"),
    "Asinh": (1, "asinh(x)"),
    "Acosh": (1, "acosh(x)"),
    "Atanh": (1, "atanh(x)"),
    "Not": (1, "not x"),
    "BitwiseNot": (1, "~x"),
    "IsNaN": (1, "x != x"),
    "IsInf": (1, "x == ±inf"),
    "Sigmoid": (3, "1 / (1 + exp(-x)): exp, add, divide"),
    "HardSigmoid": (4, "max(0, min(1, alpha·x + beta)): multiply, add, min, max"),
    "HardSwish": (5, "x · max(0, min(1, x/6 + 1/2)): multiply, add, min, max, multiply"),
    "LeakyRelu": (2, "x < 0 ? alpha·x : x: compare, multiply"),
    "Elu": (4, "x < 0 ? alpha·(exp(x) - 1) : x: compare, exp, subtract, multiply"),
    "Selu": (5, "gamma·(x < 0 ? alpha·(exp(x) - 1) : x): compare, exp, subtract, multiply, multiply"),
    "Celu": (7, "max(0, x) + min(0, alpha·(exp(x/alpha) - 1)): max, divide, exp, subtract, multiply, min, add"),
    "ThresholdedRelu": (1, "x > alpha ? x : 0"),
    "Softplus": (3, "log(exp(x) + 1): exp, add, log"),
    "Softsign": (3, "x / (1 + |x|): abs, add, divide"),
    "Mish": (5, "x · tanh(softplus(x)): exp, add, log, tanh, multiply"),
    "Shrink": (3, "x < -lambd ? x + bias : x > lambd ? x - bias : 0: compare, compare, add"),
    "Clip": (2, "min(max(x, lo), hi)"),
    "Swish": (5, "x · sigmoid(alpha·x): multiply, sigmoid (3), multiply"),
    "SwiGLU": (6, "A · sigmoid(alpha·A) · B: multiply, sigmoid (3), multiply, multiply"),
}

# Gelu by its ``approximate`` attribute
GELU_FLOPS: dict[str, tuple[int, str]] = {
    "none": (5, "0.5·x·(1 + erf(x/√2)): divide, erf, add, multiply, multiply"),
    "tanh": (
        9,
        (
            "0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): 2 multiplies (x³), multiply, add, multiply, "
            "tanh, add, multiply, multiply"
        ),
    ),
}

FAST_GELU_FLOPS = 9  # 0.5·x·(1 + tanh(0.797885·x + 0.035677·x³)), see fast_gelu

# com.microsoft contrib activations (onnxruntime ContribOperators.md); output shape = input 0's
CONTRIB_FLOPS: dict[str, tuple[int, str]] = {
    "Gelu": (5, "0.5·x·(1 + erf(x/√2)) (exact Gelu, as ai.onnx Gelu approximate='none')"),
    "BiasGelu": (6, "Gelu(A + B): add, then exact Gelu (5)"),
    "QuickGelu": (5, "x · sigmoid(alpha·x): multiply, sigmoid (3), multiply"),
    "BiasAdd": (2, "X + bias + skip: two adds"),
    "BiasSoftmax": (6, "softmax(data + bias): add, then max, subtract, exp, sum, divide (Softmax's 5)"),
}

# variadic ops: (n_inputs - 1) pairwise operations per output element, plus ``extra``
VARIADIC_EXTRA: dict[str, tuple[int, str]] = {
    "Sum": (0, "x1 + x2 + ..."),
    "Max": (0, "max(x1, x2, ...)"),
    "Min": (0, "min(x1, x2, ...)"),
    "Mean": (1, "(x1 + x2 + ...) / n"),
}

# window generators: operations per output sample, with θ = 2π·n/N (one multiply, 2π/N precomputed)
WINDOW_FLOPS: dict[str, tuple[int, str]] = {
    "HannWindow": (4, "a0 - a1·cos(θ): θ, cos, multiply, subtract"),
    "HammingWindow": (4, "a0 - a1·cos(θ): θ, cos, multiply, subtract"),
    "BlackmanWindow": (8, "a0 - a1·cos(θ) + a2·cos(2θ): θ, 2θ, 2 cos, 2 multiplies, subtract, add"),
}


def elementwise_flop_counter(flops_per_element: int, rule: str = "") -> Handler:
    """A rule counting ``flops_per_element`` operations per output element."""
    return per_element_flop_counter(flops_per_element, rule, on="output")


def variadic_flop_counter(extra_per_element: int, rule: str = "") -> Handler:
    """A handler for n-input ops: (n - 1 + extra) operations per output element."""

    def handler(node: NodeView) -> OpCost:
        operands = sum(1 for name in node.node.input if name)
        per_element = max(operands - 1, 0) + extra_per_element
        elements = node.output_elements(0)
        return OpCost(flops=per_element * elements, formula=f"{per_element}·{elements:,} outputs ({rule})")

    handler.__doc__ = f"FLOPs = (inputs - 1 + {extra_per_element}) x output elements ({rule})"
    return handler


def gelu(node: NodeView) -> OpCost:
    """FLOPs = 5 x output elements for the erf form (approximate='none': divide, erf, add, multiply,
    multiply); 9 for approximate='tanh' (x³ is 2 multiplies, then multiply, add, multiply, tanh,
    add, multiply, multiply)."""
    approximate = node.attr("approximate", "none")
    per_element, rule = GELU_FLOPS.get(approximate, GELU_FLOPS["none"])
    elements = node.output_elements(0)
    return OpCost(
        flops=per_element * elements,
        formula=f"{per_element}·{elements:,} outputs = {per_element * elements:,} FLOPs (Gelu {approximate}: {rule})",
    )


def fast_gelu(node: NodeView) -> OpCost:
    """FLOPs = (9 + 1 if bias) x elements: Y = 0.5·X·(1 + tanh(0.797885·X + 0.035677·X³)) is
    2 multiplies (X³), multiply, multiply, add, tanh, add, multiply, multiply = 9; the optional
    bias adds one add (com.microsoft FastGelu)."""
    per_element = FAST_GELU_FLOPS + (1 if node.has_input(1) else 0)
    elements = node.input_elements(0)  # output shape = X's; contrib outputs may have no inferred shape
    return OpCost(
        flops=per_element * elements, formula=f"{per_element}·{elements:,} elements = {per_element * elements:,} FLOPs"
    )


def bias_split_gelu(node: NodeView) -> OpCost:
    """FLOPs = input elements (X + bias) + 6 x output elements (exact Gelu 5 on the right half, then
    the multiply by the left half); X [N, S, D], bias [D], Y [N, S, D/2] (com.microsoft BiasSplitGelu,
    the Stable Diffusion optimizer's fusion)."""
    inputs = node.input_elements(0)
    outputs = inputs // 2
    per_output = GELU_FLOPS["none"][0] + 1
    flops = inputs + per_output * outputs
    return OpCost(flops=flops, formula=f"{inputs:,} bias adds + {per_output}·{outputs:,} outputs = {flops:,} FLOPs")


def bias_split_gelu_shapes(node: NodeView) -> list[OutputType | None]:
    """Y: X's shape with the last dim halved, X's type."""
    x = dims(node, 0)
    return [(dtype(node, 0), (*x[:-1], scale(x[-1], 1, 2)))]


def window(flops_per_sample: int, rule: str) -> Handler:
    """A rule for a window generator: ``flops_per_sample`` operations per output sample."""

    def handler(node: NodeView) -> OpCost:
        samples = node.output_elements(0)
        flops = flops_per_sample * samples
        return OpCost(flops=flops, formula=f"{flops_per_sample}·{samples:,} samples = {flops:,} FLOPs ({rule})")

    handler.__doc__ = f"FLOPs = {flops_per_sample} x window samples ({rule}; θ = 2π·n/N)"
    return handler


def mel_weight_matrix(node: NodeView) -> OpCost:
    """FLOPs = 2 x output elements ([dft_length/2 + 1, num_mel_bins]): each weight is one side of a
    triangle, (f - lower) / (center - lower): a subtract and a divide. The per-bin Hz<->mel
    conversions (one log per mel bin) are negligible and not counted. Folded when its inputs are
    constants, as they almost always are."""
    elements = node.output_elements(0)
    return OpCost(flops=2 * elements, formula=f"2·{elements:,} weights = {2 * elements:,} FLOPs")


# Every op here is ELEMENTWISE (it may run as another kernel's epilogue). Those whose output is the
# broadcast of their inputs are BROADCASTS too. PRelu, BitShift, the Bitwise ops, Sum and Mean
# broadcast as well but are not declared yet: the split solver (cost/splits.py) would then infer
# more from them, a change of its results for a commit of its own.
BROADCASTING = frozenset(
    "Add And Div Equal Greater GreaterOrEqual Less LessOrEqual Max Min Mod Mul Or Pow Sub Where Xor".split()
)


def _traits(op_type: str) -> OpTrait:
    return OpTrait.ELEMENTWISE | OpTrait.BROADCASTS if op_type in BROADCASTING else OpTrait.ELEMENTWISE


for _op, (_count, _rule) in ELEMENTWISE_FLOPS.items():
    register(
        _op,
        elementwise_flop_counter(_count, _rule),
        family="elementwise",
        arg_inputs=(1, 2) if _op == "Clip" else (),
        traits=_traits(_op),
    )
register("Gelu", gelu, family="elementwise", traits=OpTrait.ELEMENTWISE)
for _op, (_extra, _rule) in VARIADIC_EXTRA.items():
    register(_op, variadic_flop_counter(_extra, _rule), family="elementwise", traits=_traits(_op))
for _op, (_count, _rule) in CONTRIB_FLOPS.items():
    # contrib outputs keep X's shape; count on input 0 so a missing stored output shape does not matter
    register(
        _op,
        per_element_flop_counter(_count, _rule, on="input"),
        family="elementwise",
        domain="com.microsoft",
        shapes=same_as_input(0),
        traits=OpTrait.ELEMENTWISE,
    )
register(
    "FastGelu",
    fast_gelu,
    family="elementwise",
    domain="com.microsoft",
    shapes=same_as_input(0),
    traits=OpTrait.ELEMENTWISE,
)
register(
    "BiasSplitGelu",
    bias_split_gelu,
    family="elementwise",
    domain="com.microsoft",
    shapes=bias_split_gelu_shapes,
    traits=OpTrait.ELEMENTWISE,
)
for _op, (_count, _rule) in WINDOW_FLOPS.items():
    register(_op, window(_count, _rule), family="signal", arg_inputs=(0,))
register("MelWeightMatrix", mel_weight_matrix, family="signal", arg_inputs=(0, 1, 2, 3, 4))
