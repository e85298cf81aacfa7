"""cost/splits.py: the sizes only the data decides, read from the shapes of a few hand-built nodes
(no model is loaded: find_splits reads node fields and tensor shapes)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from onnxroof.core.nodes import NodeFields
from onnxroof.core.tensors import TensorInfo
from onnxroof.cost.splits import find_splits


def node(op_type: str, inputs: list[str], outputs: list[str], **attributes) -> NodeFields:
    made = [helper.make_attribute(key, value) for key, value in attributes.items()]
    return NodeFields(outputs[0], op_type, "", inputs, outputs, made)


def shapes(**dims) -> dict[str, TensorInfo]:
    return {name: TensorInfo(name, 1, shape) for name, shape in dims.items()}


def test_a_nonzero_count_is_data_dependent_and_bounded_by_its_input_elements():
    # NonZero of a [4, 6] mask: at most 4 x 6 = 24 indices; no split holds the count
    fields = [node("NonZero", ["mask"], ["where"])]
    found = find_splits(fields, ["nz"], shapes(mask=(4, 6), where=(2, "n")), set())
    assert found.origins == {"n": "NonZero 'nz'"}
    assert found.bounds == {"n": 24}
    assert found.splits == [] and found.values == {}


def test_a_split_of_ten_rows_into_three_data_dependent_pieces_shares_them_evenly():
    # 10 rows in 3 pieces: 4, 3, 3 (the remainder to the first ones); one row more each: 5, 4, 4
    fields = [node("Split", ["x", "sizes"], ["a", "b", "c"], axis=0)]
    tensors = shapes(x=(10, 8), sizes=(3,), a=("p", 8), b=("q", 8), c=("r", 8))
    found = find_splits(fields, ["route"], tensors, set())
    assert [(s.source, s.pieces, s.total) for s in found.splits] == [("Split 'route' input", ("p", "q", "r"), 10)]
    assert found.values == {"p": 4, "q": 3, "r": 3}
    assert found.plus_one == {"p": 5, "q": 4, "r": 4}
    assert found.bounds == {}  # every data-dependent symbol is in the split


def test_an_unbound_input_dim_is_not_data_dependent():
    # "batch" is the user's to bind: a Relu passing it on sizes nothing
    fields = [node("Relu", ["x"], ["y"])]
    found = find_splits(fields, ["relu"], shapes(x=("batch", 3), y=("batch", 3)), {"batch"})
    assert found.origins == {} and found.splits == []


def test_a_reshape_back_to_a_known_size_solves_the_data_dependent_dim():
    # [n, 4] reshaped to [6, 2]: 12 elements, so n = 12 / 4 = 3
    fields = [node("NonZero", ["mask"], ["where"]), node("Reshape", ["rows", "shape"], ["fixed"])]
    tensors = shapes(mask=(12,), where=(1, "n"), rows=("n", 4), shape=(2,), fixed=(6, 2))
    found = find_splits(fields, ["nz", "back"], tensors, set())
    assert found.values == {"n": 3}
    assert found.bounds == {}  # solved: no bound stated


def test_counts_of_every_class_of_a_topk_index_add_up_to_its_size():
    # TopK over 3 experts of x [5, 3]: indices [5, 1]; the NonZero counts of indices == 0, 1, 2
    # add up to the 5 indices, so they form a split of 5 in 3 pieces: 2, 2, 1
    fields = [node("TopK", ["x", "k"], ["top", "idx"], axis=-1)]
    values = {}
    for c in range(3):
        values[f"c{c}"] = np.array(c)
        fields += [node("Equal", ["idx", f"c{c}"], [f"m{c}"]), node("NonZero", [f"m{c}"], [f"w{c}"])]
    dims = {"x": (5, 3), "k": (1,), "top": (5, 1), "idx": (5, 1)}
    dims.update({f"m{c}": (5, 1) for c in range(3)})
    dims.update({f"w{c}": (2, f"n{c}") for c in range(3)})
    found = find_splits(fields, [f.name for f in fields], shapes(**dims), set(), values)
    assert [(s.pieces, s.total) for s in found.splits] == [(("n0", "n1", "n2"), 5)]
    assert found.values == {"n0": 2, "n1": 2, "n2": 1}
