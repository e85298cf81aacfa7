"""cost/derived.py: what a node's record derives from its rule and tensors alone."""

from __future__ import annotations

from onnxroof.core.tensors import TensorInfo
from onnxroof.cost.derived import (
    NO_COST,
    apply_rule,
    computed_from_constants,
    op_family,
    shapes_and_dtypes,
    split_inputs,
)
from onnxroof.cost.records import NodeStatus
from onnxroof.ops import InvalidNode, OpCost, OpTrait, UnknownValue, rule_for

NONE = OpTrait.NONE


def test_a_node_of_constants_only_is_folded_unless_it_is_random_or_holds_a_subgraph():
    assert computed_from_constants("Mul", "", NONE, ["w", "scale"], False, {"w", "scale"})
    assert not computed_from_constants("Mul", "", NONE, ["w", "x"], False, {"w"})  # x is data
    assert not computed_from_constants("RandomNormalLike", "", OpTrait.NONDETERMINISTIC, ["w"], False, {"w"})
    assert not computed_from_constants("If", "", NONE, ["flag"], True, {"flag"})
    assert computed_from_constants("Constant", "", NONE, [], False, set())  # reads nothing, is a constant
    assert not computed_from_constants("RandomNormal", "", NONE, [], False, set())  # reads nothing: not folded


def test_inputs_split_into_parameters_and_activations_each_name_once():
    # Gemm(x, w, b) with b also listed again: parameters at slots 1 and 2, x the activation
    assert split_inputs(["x", "w", "b", "b"], {"w", "b"}, True, frozenset()) == ([1, 2], ["x"])
    # a setting slot (Reshape's shape, slot 1) is no parameter; a folded node reads none
    assert split_inputs(["x", "shape"], {"shape"}, True, frozenset({1})) == ([], ["x"])
    assert split_inputs(["w", "v"], {"w", "v"}, False, frozenset()) == ([], [])


def test_a_matmul_of_two_activations_is_attention():
    matmul = rule_for("", "MatMul")
    assert op_family(matmul, [], ["q", "k"]) == "attention"
    assert op_family(matmul, ["w"], ["x"]) == "matmul"
    assert op_family(None, [], ["x"]) == "unsupported"


def test_shapes_and_dtypes_as_the_record_holds_them():
    inputs = (TensorInfo("x", 1, (2, 3)), None, TensorInfo("y", 7, None))
    outputs = (TensorInfo("z", 1, (2, 3)),)
    assert shapes_and_dtypes(inputs, outputs) == ([[2, 3], None, None], ["float32", "", "int64"], [[2, 3]], ["float32"])


def test_a_rules_failures_become_statuses():
    def failing(error):
        def handler(view):
            raise error

        return handler

    assert apply_rule(lambda view: OpCost(macs=6), None)[:2] == (NodeStatus.OK, "")
    assert apply_rule(failing(UnknownValue("k")), None) == (NodeStatus.UNKNOWN_VALUE, "k", NO_COST)
    assert apply_rule(failing(InvalidNode("rank 5")), None) == (NodeStatus.INVALID, "rank 5", NO_COST)
    status, reason, _ = apply_rule(failing(KeyError("axis")), None)
    assert status == NodeStatus.UNKNOWN_SHAPE and reason == "cost rule could not read this node (KeyError: 'axis')"
