"""The model order's lifetimes are found while the buffers are built; they must equal the plain
definition (first step an allocator runs, last step a reader or allocator runs; inputs from step
0, outputs to the end) on graphs with views, concat slices, in-place updates and Reshape chains."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from onnxroof.pipeline import analyze
from onnxroof.core.examples import build_example
from onnxroof.memory.liveness import MemoryProblem, build_problem, lifetimes

from conftest import make_model
from models import VARIANTS, random_dag_problems


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
    model = make_model(nodes, [("x", TensorProto.FLOAT, [1, 8])],
                       [("e", TensorProto.FLOAT, [1, 8]), ("f", TensorProto.FLOAT, [1, 8])], initializers=[shape])
    graphs = [analyze(model).cost_graph] + [analyze(build_example(name)).cost_graph for name in ("shallownet", "minigooglenet")]
    for graph in graphs:
        for variant in VARIANTS:
            problem = build_problem(graph, **variant)
            assert list(lifetimes(problem, problem.model_order)) == spans_by_definition(problem)
