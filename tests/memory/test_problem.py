"""memory/problem.py: the figures found while the buffers are built must equal their plain
definitions, on random DAGs and on graphs with views, concat slices, in-place updates, Reshape
chains, subgraphs and a repeated node name.

- The model order's lifetimes: first step an allocator runs, last step a reader or allocator
  runs; inputs from step 0, outputs to the end.
- The lower bound (the most bytes one node allocates or reads), summed per step: each buffer
  counted once per node, ties going to the first node in model order."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from conftest import make_model
from hypothesis import given, settings
from hypothesis import strategies as st
from models import VARIANTS, chain_model, loop_model, random_dag_problems
from onnx import TensorProto, helper

from onnxroof.core.examples import build_example
from onnxroof.memory.problem import (
    MemoryProblem,
    build_problem,
    largest_layer_bytes,
    lifetimes,
    problem_from_records,
    schedule_peak,
)
from onnxroof.ops import COST_RULES, OpCost, OpTrait, register, same_as_input
from onnxroof.pipeline import analyze


def spans_by_definition(problem: MemoryProblem) -> list[tuple[int, int]]:
    step = {node: i for i, node in enumerate(problem.model_order)}
    last = len(problem.model_order) - 1
    spans = []
    for buffer in problem.buffers:
        made = [step[n] for n in buffer.allocators] or [0]
        read = [step[n] for n in buffer.readers]
        start = 0 if buffer.from_start else min(made)
        end = last if buffer.to_end or not read else max(read)
        spans.append((start, max(end, max(made))))
    return spans


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(2, 30))
def test_model_spans_match_their_definition(seed, size):
    for problem in random_dag_problems(seed, size):
        assert list(lifetimes(problem, problem.model_order)) == spans_by_definition(problem)


def test_model_spans_of_examples_and_views():
    # a view of a view read twice, and a graph output read by a later node
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Reshape", ["a", "shape"], ["b"]),
        helper.make_node("Identity", ["b"], ["c"]),
        helper.make_node("Neg", ["c"], ["d"]),
        helper.make_node("Add", ["d", "c"], ["e"]),
        helper.make_node("Relu", ["e"], ["f"]),
    ]
    shape = ("shape", np.array([1, 8], dtype=np.int64))
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, [1, 8])],
        [("e", TensorProto.FLOAT, [1, 8]), ("f", TensorProto.FLOAT, [1, 8])],
        initializers=[shape],
    )
    graphs = [analyze(model).cost_graph] + [
        analyze(build_example(name)).cost_graph for name in ("shallownet", "minigooglenet")
    ]
    for graph in graphs:
        for variant in VARIANTS:
            problem = build_problem(graph, **variant)
            assert list(lifetimes(problem, problem.model_order)) == spans_by_definition(problem)


def largest_layer_by_definition(problem: MemoryProblem) -> tuple[int, str | None]:
    touched = {
        node: sum(b.bytes for b in problem.buffers if node in b.allocators | b.readers) for node in problem.model_order
    }
    if not touched:
        return 0, None
    most = max(touched.values())
    return most, next(node for node in problem.model_order if touched[node] == most)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(2, 30))
def test_lower_bound_matches_its_definition(seed, size):
    for problem in random_dag_problems(seed, size):
        assert problem.model_touched is not None
        assert largest_layer_bytes(problem) == largest_layer_by_definition(problem)


def test_lower_bound_of_examples_a_loop_and_a_repeated_node_name():
    graphs = [analyze(build_example(name)).cost_graph for name in ("shallownet", "minigooglenet")]
    graphs.append(analyze(loop_model(constant_trips=True)).cost_graph)  # the Loop also holds its body's working set
    for graph in graphs:
        problem = build_problem(graph)
        assert largest_layer_bytes(problem) == largest_layer_by_definition(problem)
    # two nodes named "n": the bound goes by name, both nodes' buffers counted once for "n"
    records = [
        replace(record, name="n") if record.name in ("relu_a", "relu_c") else record
        for record in analyze(chain_model()).nodes
    ]
    sizes = {"x": 4_000, "a": 4_000, "b": 8_000, "c": 8_000, "d": 2_000}
    problem = problem_from_records(records, sizes, ["x"], ["d"])
    assert problem.model_touched is None
    # "n" allocates a and c and reads x and b: 4,000 + 4,000 + 8,000 + 8,000
    assert largest_layer_bytes(problem) == (24_000, "n") == largest_layer_by_definition(problem)


def _view_plugin_model():
    """x [1, 100] -> Relu -> a -> acme::MyView -> b; c = Add(a, b): a and b are both live at the Add."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("MyView", ["a"], ["b"], name="view", domain="acme"),
        helper.make_node("Add", ["a", "b"], ["c"], name="add"),
    ]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [1, 100])], [("c", TensorProto.FLOAT, [1, 100])])
    model.opset_import.append(helper.make_opsetid("acme", 1))
    return model


@pytest.mark.parametrize(
    "traits, peak",
    [
        # a view: b is a's buffer. relu: x + a = 800 B; view: nothing new, a = 400; add: a(b) + c = 800
        (OpTrait.VIEW, 800),
        # not declared a view: b owns 400 B; the add holds a, b and c: 1,200 B
        (OpTrait.NONE, 1_200),
    ],
)
def test_a_plugin_op_declared_a_view_shares_its_inputs_buffer(traits, peak):
    def my_view(node):
        """FLOPs = 0."""
        return OpCost(formula="0 FLOPs")

    register("MyView", my_view, family="custom", domain="acme", shapes=same_as_input(0), traits=traits)
    try:
        problem = build_problem(analyze(_view_plugin_model()).cost_graph)
        assert schedule_peak(problem, problem.model_order).peak_bytes == peak
        assert problem.buffer_names == (("x", "a", "c") if traits == OpTrait.VIEW else ("x", "a", "b", "c"))
    finally:
        COST_RULES.pop(("acme", "MyView"), None)
