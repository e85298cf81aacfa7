"""Elementwise arithmetic and activations: a fixed number of operations per output element.

Counting rule: each arithmetic operation or comparison counts 1, and so does each
transcendental (exp, log, sqrt, tanh, erf), as in the formula the op's spec gives. The table
below is the whole rule; docs/ops.md is generated from it.
"""

from __future__ import annotations

from . import Handler, NodeView, OpCost, per_element_flop_counter, register

# op -> (operations per output element, the formula they come from)
ELEMENTWISE_FLOPS: dict[str, tuple[int, str]] = {
    # binary arithmetic (broadcast: one operation per output element)
    "Add": (1, "a + b"), "Sub": (1, "a - b"), "Mul": (1, "a · b"), "Div": (1, "a / b"),
    "Pow": (1, "a ^ b"), "Mod": (1, "a mod b"), "BitShift": (1, "a << b"),
    "PRelu": (2, "x < 0 ? slope·x : x (compare, multiply)"),
    "Equal": (1, "a == b"), "Less": (1, "a < b"), "LessOrEqual": (1, "a <= b"),
    "Greater": (1, "a > b"), "GreaterOrEqual": (1, "a >= b"),
    "And": (1, "a and b"), "Or": (1, "a or b"), "Xor": (1, "a xor b"),
    "BitwiseAnd": (1, "a & b"), "BitwiseOr": (1, "a | b"), "BitwiseXor": (1, "a ^ b"),
    # unary
    "Relu": (1, "max(x, 0)"), "Abs": (1, "|x|"), "Neg": (1, "-x"), "Sign": (1, "sign(x)"),
    "Ceil": (1, "ceil(x)"), "Floor": (1, "floor(x)"), "Round": (1, "round(x)"),
    "Reciprocal": (1, "1 / x"), "Sqrt": (1, "sqrt(x)"), "Exp": (1, "exp(x)"), "Log": (1, "log(x)"),
    "Erf": (1, "erf(x)"), "Tanh": (1, "tanh(x)"), "Sin": (1, "sin(x)"), "Cos": (1, "cos(x)"),
    "Tan": (1, "tan(x)"), "Asin": (1, "asin(x)"), "Acos": (1, "acos(x)"), "Atan": (1, "atan(x)"),
    "Sinh": (1, "sinh(x)"), "Cosh": (1, "cosh(x)"), "Asinh": (1, "asinh(x)"), "Acosh": (1, "acosh(x)"),
    "Atanh": (1, "atanh(x)"), "Not": (1, "not x"), "BitwiseNot": (1, "~x"),
    "IsNaN": (1, "x != x"), "IsInf": (1, "x == ±inf"),
    "Sigmoid": (3, "1 / (1 + exp(-x)): exp, add, divide"),
    "HardSigmoid": (3, "max(0, min(1, alpha·x + beta)): multiply, add, clamp"),
    "HardSwish": (4, "x · hardsigmoid(x): multiply, add, clamp, multiply"),
    "LeakyRelu": (2, "x < 0 ? alpha·x : x: compare, multiply"),
    "Elu": (3, "x < 0 ? alpha·(exp(x) - 1) : x: compare, exp, subtract·multiply"),
    "Selu": (4, "gamma·(x < 0 ? alpha·(exp(x) - 1) : x): compare, exp, subtract, multiply"),
    "Celu": (4, "max(0,x) + min(0, alpha·(exp(x/alpha) - 1))"),
    "ThresholdedRelu": (1, "x > alpha ? x : 0"),
    "Softplus": (3, "log(exp(x) + 1): exp, add, log"),
    "Softsign": (3, "x / (1 + |x|): abs, add, divide"),
    "Mish": (5, "x · tanh(softplus(x)): exp, add, log, tanh, multiply"),
    "Gelu": (8, "0.5·x·(1 + erf(x/√2)) (tanh form: same count)"),
    "Shrink": (2, "compare, add"),
    "Clip": (2, "min(max(x, lo), hi)"),
    "Where": (1, "c ? a : b"),
}

# variadic ops: (n_inputs - 1) pairwise operations per output element, plus ``extra``
VARIADIC_EXTRA: dict[str, tuple[int, str]] = {
    "Sum": (0, "x1 + x2 + ..."), "Max": (0, "max(x1, x2, ...)"), "Min": (0, "min(x1, x2, ...)"),
    "Mean": (1, "(x1 + x2 + ...) / n"),
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


for _op, (_count, _rule) in ELEMENTWISE_FLOPS.items():
    register(_op, elementwise_flop_counter(_count, _rule), family="elementwise",
             arg_inputs=(1, 2) if _op == "Clip" else ())
for _op, (_extra, _rule) in VARIADIC_EXTRA.items():
    register(_op, variadic_flop_counter(_extra, _rule), family="elementwise")
