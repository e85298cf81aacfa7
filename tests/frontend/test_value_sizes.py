"""The evaluator predicts an op's output size before running it (onnxroof.frontend.value_sizes):
an op that would write more than it keeps is not run, its value stays unknown and its shape comes
from ONNX's inference, so the counts downstream are still right.

Every predicted size is worked out by hand in a comment. The end-to-end tests lower the cap
(evaluator.MAX_VALUE_ELEMENTS) so that small graphs cross it.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import onnxroof
from onnxroof.frontend import evaluator
from onnxroof.frontend.evaluator import EVALUABLE_OPS, PartialEvaluator
from onnxroof.frontend.shapes import infer_shapes
from onnxroof.frontend.value_sizes import predicted_elements, size_rule

I64 = np.int64


def zeros(*shape, dtype=I64):
    return np.zeros(shape, dtype)


def scalar(value):
    return np.array(value)


@pytest.mark.parametrize(
    "op_type, args, attributes, expected",
    [
        # Concat: 4 + 4 + 4 elements
        ("Concat", [zeros(4)] * 3, {"axis": 0}, 12),
        # Gather of data [2,3,5] along axis 1 by indices [4,6]: [2,4,6,5] = 240
        ("Gather", [zeros(2, 3, 5), zeros(4, 6)], {"axis": 1}, 240),
        # ... along axis -1 (= 2): [2,3,4,6] = 144
        ("Gather", [zeros(2, 3, 5), zeros(4, 6)], {"axis": -1}, 144),
        # GatherElements: the indices' shape [3,7] = 21
        ("GatherElements", [zeros(3, 2), zeros(3, 7)], {"axis": 1}, 21),
        # GatherND of data [2,3,4] by indices [5,2]: indices[:-1] = [5], data[2:] = [4]: 20
        ("GatherND", [zeros(2, 3, 4), zeros(5, 2)], {}, 20),
        # ... with batch_dims 1, indices [2,1]: [2] + data[1 + 1:] = [2,4]: 8
        ("GatherND", [zeros(2, 3, 4), zeros(2, 1)], {"batch_dims": 1}, 8),
        # NonZero of [3,4]: at most [2, 12] = 24
        ("NonZero", [zeros(3, 4)], {}, 24),
        # Expand [3,1] to [2,1,4]: [2,3,4] = 24
        ("Expand", [zeros(3, 1), np.array([2, 1, 4], I64)], {}, 24),
        # Tile [2,3] by [2,3]: [4,9] = 36
        ("Tile", [zeros(2, 3), np.array([2, 3], I64)], {}, 36),
        # Range(0, 10, 3) = 0 3 6 9; Range(10, 0, -3) = 10 7 4 1; Range(0.0, 1.0, 0.3) = 0 .3 .6 .9; Range(5, 0, 1) = empty
        ("Range", [scalar(0), scalar(10), scalar(3)], {}, 4),
        ("Range", [scalar(10), scalar(0), scalar(-3)], {}, 4),
        ("Range", [scalar(0.0), scalar(1.0), scalar(0.3)], {}, 4),
        ("Range", [scalar(5), scalar(0), scalar(1)], {}, 0),
        # ConstantOfShape [2,3,4] = 24; of an empty shape: a scalar, 1
        ("ConstantOfShape", [np.array([2, 3, 4], I64)], {}, 24),
        ("ConstantOfShape", [np.array([], I64)], {}, 1),
        # Where of [3,1,1], [1,4,1], [1,1,5]: [3,4,5] = 60
        ("Where", [zeros(3, 1, 1, dtype=bool), zeros(1, 4, 1), zeros(1, 1, 5)], {}, 60),
        # Max of four inputs broadcast: [2,1] [1,3] [1] [4,1,1]: [4,2,3] = 24
        ("Max", [zeros(2, 1), zeros(1, 3), zeros(1), zeros(4, 1, 1)], {}, 24),
        # a unary elementwise op: its input's 6
        ("Neg", [zeros(2, 3)], {}, 6),
        # Clip with min and max: its input broadcast with them, [2,3] = 6
        ("Clip", [zeros(2, 3), scalar(0), scalar(1)], {}, 6),
        # a reshape keeps the 6 elements; a cast too, whatever its second input (CastLike)
        ("Reshape", [zeros(2, 3), np.array([3, 2], I64)], {}, 6),
        ("CastLike", [zeros(2, 3), zeros(5)], {}, 6),
        # a sum over the empty axis of [0, 7] writes 7 zeros: at most 1 x 7
        ("ReduceSum", [zeros(0, 7), np.array([0], I64)], {"keepdims": 0}, 7),
    ],
)
def test_output_sizes_predicted_by_hand(op_type, args, attributes, expected):
    assert predicted_elements(op_type, args, attributes) == expected


@pytest.mark.parametrize(
    "op_type, args",
    [
        ("Tile", [zeros(2), np.array([-1], I64)]),  # a negative repeat
        ("ConstantOfShape", [np.array([3, -2], I64)]),  # a negative dim
        ("Expand", [zeros(3), np.array([4], I64)]),  # 3 does not broadcast to 4
        ("Range", [scalar(0), scalar(5), scalar(0)]),  # a step of 0
        ("Range", [scalar(0.0), scalar(np.inf), scalar(1.0)]),  # an infinite bound
        ("Pad", [zeros(2), np.array([1, 1], I64)]),  # an op the evaluator does not run: no rule
        ("Gather", [None, np.array([0], I64)]),  # an omitted input the rule needs
        ("GatherElements", [zeros(2), None]),
    ],
)
def test_what_cannot_be_predicted_is_not_run(op_type, args):
    assert predicted_elements(op_type, args, {}) is None


def test_every_evaluable_op_has_a_size_rule():
    assert [op for op in sorted(EVALUABLE_OPS) if size_rule(op) is None] == []


def concat_model(listed):
    # Constant c = [1, 2, 3, 4] (4 int64); y = Concat(c listed `listed` times) = [4 x listed];
    # s = Shape(y) = [4 x listed]; yf = Cast(y) to float; z = Add(x [4 x listed], yf)
    c = numpy_helper.from_array(np.array([1, 2, 3, 4], I64), "c_value")
    nodes = [
        helper.make_node("Constant", [], ["c"], value=c, name="c"),
        helper.make_node("Concat", ["c"] * listed, ["y"], axis=0, name="cat"),
        helper.make_node("Shape", ["y"], ["s"], name="shape"),
        helper.make_node("Cast", ["y"], ["yf"], to=T.FLOAT, name="cast"),
        helper.make_node("Add", ["x", "yf"], ["z"], name="add"),
    ]
    return make_model(nodes, [("x", T.FLOAT, [4 * listed])], [("z", T.FLOAT, None), ("s", T.INT64, None)])


def refuse_to_run(monkeypatch, op_type):
    """Fail the test if the evaluator runs an ``op_type`` node."""
    original = PartialEvaluator._run

    def run(self, node, args):
        assert node.op_type != op_type, f"{op_type} was run"
        return original(self, node, args)

    monkeypatch.setattr(PartialEvaluator, "_run", run)


def test_a_concat_over_the_cap_is_not_run_and_its_shape_is_inferred(monkeypatch):
    # with a cap of 8 elements: c listed 3 times writes 12 > 8, so the Concat is not run; its
    # shape [12] comes from ONNX's inference, and Shape gives [12] from it
    monkeypatch.setattr(evaluator, "MAX_VALUE_ELEMENTS", 8)
    refuse_to_run(monkeypatch, "Concat")
    model = concat_model(3)
    result = infer_shapes(model, list(model.graph.node))
    assert "y" not in result.values
    assert result.tensors["y"].shape == (12,)
    assert result.values["s"].tolist() == [12]


def test_a_concat_within_the_cap_is_run():
    # c listed twice: 8 elements, within the cap of 4,096: the value is 1 2 3 4 1 2 3 4
    model = concat_model(2)
    result = infer_shapes(model, list(model.graph.node))
    assert result.values["y"].tolist() == [1, 2, 3, 4, 1, 2, 3, 4]


def test_a_value_not_evaluated_still_counts_what_reads_it(monkeypatch):
    # cap 8, c listed 5 times: y is [20], not evaluated; the Add of x [20] and Cast(y) [20] is
    # still counted: 20 additions, and the analysis is complete
    monkeypatch.setattr(evaluator, "MAX_VALUE_ELEMENTS", 8)
    refuse_to_run(monkeypatch, "Concat")
    analysis = onnxroof.analyze(concat_model(5))
    assert analysis.complete
    assert analysis.find_node("add").flops == 20
    assert analysis.find_node("cat").output_shapes == [[20]]


@pytest.mark.parametrize(
    "nodes, skipped",
    [
        # Expand [1] to [64, 64]: 4,096 > 100
        (
            [
                helper.make_node("Constant", [], ["sh"], value=numpy_helper.from_array(np.array([64, 64], I64), "v")),
                helper.make_node("Expand", ["one", "sh"], ["y"]),
            ],
            "Expand",
        ),
        # Gather of data [1, 16] by 16 zero indices along axis 0: [16, 16] = 256 > 100
        (
            [
                helper.make_node("Constant", [], ["d"], value=numpy_helper.from_array(np.zeros((1, 16), I64), "v")),
                helper.make_node("Constant", [], ["i"], value=numpy_helper.from_array(np.zeros(16, I64), "w")),
                helper.make_node("Gather", ["d", "i"], ["y"], axis=0),
            ],
            "Gather",
        ),
        # Range(0, 1000, 1): 1,000 > 100
        (
            [
                helper.make_node("Constant", [], ["hi"], value=numpy_helper.from_array(np.array(1000, I64), "v")),
                helper.make_node("Range", ["zero", "hi", "one0"], ["y"]),
            ],
            "Range",
        ),
    ],
)
def test_ops_whose_output_outgrows_the_cap_are_not_run(monkeypatch, nodes, skipped):
    monkeypatch.setattr(evaluator, "MAX_VALUE_ELEMENTS", 100)
    refuse_to_run(monkeypatch, skipped)
    model = make_model(
        nodes + [helper.make_node("Shape", ["y"], ["s"])],
        [],
        [("s", T.INT64, None)],
        initializers=[("one", np.array([1], I64)), ("zero", np.array(0, I64)), ("one0", np.array(1, I64))],
    )
    result = infer_shapes(model, list(model.graph.node))
    assert "y" not in result.values
    assert result.values["s"].tolist() in ([64, 64], [16, 16], [1000])


def test_values_kept_stop_at_the_total_budget(monkeypatch):
    # 5 Adds of base [10] and a scalar k, each a distinct [10] value; with room for 35 elements in
    # all: base (10) and the 5 scalars (5) leave 20, so the first two Adds are kept and the others
    # are not run (their shapes, [10], are still inferred)
    monkeypatch.setattr(evaluator, "MAX_KEPT_ELEMENTS", 35)
    nodes = []
    for k in range(5):
        nodes.append(
            helper.make_node("Constant", [], [f"k{k}"], value=numpy_helper.from_array(np.array(k, I64), f"v{k}"))
        )
    for k in range(5):
        nodes.append(helper.make_node("Add", ["base", f"k{k}"], [f"y{k}"]))
    model = make_model(
        nodes, [], [(f"y{k}", T.INT64, None) for k in range(5)], initializers=[("base", np.arange(10, dtype=I64))]
    )
    result = infer_shapes(model, list(model.graph.node))
    assert [f"y{k}" in result.values for k in range(5)] == [True, True, False, False, False]
    assert result.values["y1"].tolist() == list(range(1, 11))
    assert all(result.tensors[f"y{k}"].shape == (10,) for k in range(5))


def test_data_propagation_is_off_when_the_listed_inputs_are_over_the_cap(monkeypatch):
    # u = Reshape(NonZero([0, 1, 1]), [-1]) = [1, 2]: ONNX cannot size it, the evaluator can;
    # y = Concat(c, c, c, u) = 4 + 4 + 4 + 2 = 14 elements, over a cap of 8, so it is not run and
    # is inferred alone, with c and u as constants: onnx's data propagation would hold every
    # element of every listed input (14 > 8), so it is off, and the shape [14] comes without it
    monkeypatch.setattr(evaluator, "MAX_VALUE_ELEMENTS", 8)
    asked = []
    original = evaluator.onnx.shape_inference.infer_shapes

    def infer_shapes_recorded(model, *args, **kwargs):
        asked.append(([n.op_type for n in model.graph.node], kwargs.get("data_prop")))
        return original(model, *args, **kwargs)

    monkeypatch.setattr(evaluator.onnx.shape_inference, "infer_shapes", infer_shapes_recorded)
    c = numpy_helper.from_array(np.array([1, 2, 3, 4], I64), "c_value")
    nodes = [
        helper.make_node("Constant", [], ["c"], value=c),
        helper.make_node("NonZero", ["m"], ["nz"]),
        helper.make_node("Reshape", ["nz", "flat"], ["u"]),
        helper.make_node("Concat", ["c", "c", "c", "u"], ["y"], axis=0),
    ]
    model = make_model(
        nodes, [], [("y", T.INT64, None)], initializers=[("m", np.array([0, 1, 1], I64)), ("flat", np.array([-1], I64))]
    )
    result = infer_shapes(model, list(model.graph.node))
    assert result.values["u"].tolist() == [1, 2]
    assert "y" not in result.values and result.tensors["y"].shape == (14,)
    assert (["Concat"], False) in asked and (["Concat"], True) not in asked


def test_an_op_reading_too_much_as_listed_is_not_run(monkeypatch):
    # cap 8, so inputs may hold 16 x 8 = 128 elements as listed: Max of c [4] listed 32 times
    # reads 128 and is run (its value is c); listed 33 times it reads 132 and is not (shape [4])
    monkeypatch.setattr(evaluator, "MAX_VALUE_ELEMENTS", 8)
    for listed, run in ((32, True), (33, False)):
        nodes = [helper.make_node("Max", ["c"] * listed, ["y"])]
        model = make_model(nodes, [], [("y", T.INT64, None)], initializers=[("c", np.array([1, 5, 2, 4], I64))])
        result = infer_shapes(model, list(model.graph.node))
        assert ("y" in result.values) == run and result.tensors["y"].shape == (4,)
