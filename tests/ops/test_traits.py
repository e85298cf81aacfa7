"""Op traits (ops/base.py): declared once with each rule, read through traits_of, declarable by a
plugin's register call, and kept when a rule is replaced without new traits."""

from __future__ import annotations

import pytest

from onnxroof.ops import COST_RULES, OpCost, OpTrait, register, rule_for, traits_of
from onnxroof.ops.tensor import VIEWS


@pytest.mark.parametrize("op_type", sorted(VIEWS))
def test_every_op_ops_tensor_lists_as_a_view_has_the_view_trait(op_type):
    assert OpTrait.VIEW in traits_of("", op_type)
    assert OpTrait.VIEW in traits_of("ai.onnx", op_type)  # the default domain by its other name


def test_copies_are_no_views_and_an_op_without_a_rule_has_no_traits():
    assert OpTrait.VIEW not in traits_of("", "Transpose")  # moves its bytes
    assert OpTrait.STRIDED_COPY in traits_of("", "Transpose")
    assert traits_of("", "NoSuchOp") == OpTrait.NONE
    assert traits_of("acme", "Reshape") == OpTrait.NONE  # traits belong to (domain, op), like rules


def test_the_families_declare_what_the_stages_used_to_list():
    # what memory, kernels, graph and llm read: the elementwise epilogues beyond the elementwise
    # family, the softmaxes, the broadcasting binary ops, and the ops sized by their data
    for op_type in ("Relu", "Add", "BatchNormalization", "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear"):
        assert OpTrait.ELEMENTWISE in traits_of("", op_type), op_type
    assert OpTrait.ELEMENTWISE in traits_of("com.microsoft", "DequantizeLinear")
    assert {op for op in ("Softmax", "LogSoftmax", "Relu") if OpTrait.SOFTMAX in traits_of("", op)} == {
        "Softmax",
        "LogSoftmax",
    }
    assert OpTrait.BROADCASTS in traits_of("", "Where") and OpTrait.BROADCASTS not in traits_of("", "Relu")
    for op_type in ("NonZero", "Unique", "Compress", "NonMaxSuppression"):
        assert OpTrait.DATA_DEPENDENT_SIZE in traits_of("", op_type), op_type


def test_a_plugin_declares_traits_and_a_replacing_rule_keeps_them():
    def my_op(node):
        """FLOPs = 0."""
        return OpCost()

    original = rule_for("", "Reshape")
    try:
        register("MyOp", my_op, family="custom", domain="acme", traits=OpTrait.VIEW | OpTrait.RESHAPE)
        assert traits_of("acme", "MyOp") == OpTrait.VIEW | OpTrait.RESHAPE
        register("MyOp", my_op, family="custom", domain="acme")  # a new formula, the same op
        assert traits_of("acme", "MyOp") == OpTrait.VIEW | OpTrait.RESHAPE
        register("MyOp", my_op, family="custom", domain="acme", traits=OpTrait.NONE)  # said otherwise
        assert traits_of("acme", "MyOp") == OpTrait.NONE
        register("Reshape", my_op, family="tensor")  # a user's formula for a built-in op
        assert OpTrait.VIEW in traits_of("", "Reshape")
    finally:
        COST_RULES.pop(("acme", "MyOp"), None)
        COST_RULES[("", "Reshape")] = original


def test_a_new_op_without_traits_has_its_familys(monkeypatch):
    monkeypatch.setattr("onnxroof.ops.base.COST_RULES", dict(COST_RULES))
    register("OldStyleGelu", lambda node: OpCost(), family="elementwise", domain="old.plugin")
    register("OldStyleGather", lambda node: OpCost(), family="tensor", domain="old.plugin")
    assert traits_of("old.plugin", "OldStyleGelu") == OpTrait.ELEMENTWISE  # fuses as it did by its family
    assert traits_of("old.plugin", "OldStyleGather") == OpTrait.NONE
