"""The cost rules, a plain mapping from (domain, op_type) to a small function.

Each rule's handler takes a :class:`NodeView` (the node with its input and output shapes) and
returns an :class:`OpCost`; its docstring is its formula. One module per op family holds the
handlers; families that share a shape share a parameterized factory instead of near-copies.
Users override or add rules with :func:`register` (the same hook plugins use). Each rule also
says what its op *is* (:class:`OpTrait`: a view, elementwise, a softmax, ...), for the stages
after costing: :func:`traits_of` reads it.

A rule for an op ONNX has no schema for (the ``com.microsoft`` contrib ops, onnxruntime's
SimplifiedLayerNormalization) also gives its outputs' types and shapes (``shapes=``), so shape
inference goes on through it; the shared dim arithmetic (symbolic broadcast, matmul, conv and pool
windows, concat) is in ``_shapes.py``.

Conventions (cost-model.md section 1): MAC-type ops report ``macs`` and their FLOPs are
``2 x macs`` (the bias add is folded into the accumulate); every other op reports its own element
operations in ``flops``. A node whose op has no rule is "unsupported", never a silent zero.
"""

from __future__ import annotations

from dataclasses import replace

# The families register themselves on import; order does not matter.
from . import (  # noqa: F401
    attention,
    control_flow,
    conv,
    elementwise,
    matmul,
    ml,
    normalization,
    pooling,
    quantized,
    recurrent,
    reduction,
    tensor,
)
from .base import (  # noqa: F401  (the package's interface)
    COST_RULES,
    Handler,
    InvalidNode,
    NodeView,
    OpCost,
    OpRule,
    OpTrait,
    OutputType,
    ShapeHandler,
    UnknownShape,
    UnknownValue,
    checked_cost,
    has_trait,
    output_types,
    per_element_flop_counter,
    register,
    rule_for,
    same_as_input,
    traits_of,
    zero_cost,
)

# Every rule so far is built in. Rules registered from here on (plugins, users) may read anything
# (a node's name, say), so they are called for every node.
COST_RULES.update({key: replace(rule, builtin=True) for key, rule in COST_RULES.items()})
