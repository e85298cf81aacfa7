"""The greedy schedule keeps its ready nodes in a heap and re-keys only the nodes a step affects.
These tests check it against the heuristic's plain definition (re-score every ready node at every
step) on random DAGs with branches, concats and multi-reader tensors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from onnxroof.pipeline import analyze
from onnxroof.memory.liveness import MemoryProblem, build_problem, greedy_order, schedule_peak

from conftest import make_model
from models import random_dag


def greedy_by_definition(problem: MemoryProblem) -> list[str]:
    """Run the ready node that keeps memory lowest now, then the one that frees most, ties by
    model order; every ready node re-scored at every step (quadratic, the reference)."""
    nodes = problem.model_order
    rank = {node: i for i, node in enumerate(nodes)}
    buffers = problem.buffers
    users = [b.readers | b.allocators for b in buffers]
    allocated = [b.from_start or not b.allocators for b in buffers]
    done: set[str] = set()
    order: list[str] = []
    while len(order) < len(nodes):
        ready = [n for n in nodes if n not in done and all(p in done for p in problem.predecessors[n])]

        def score(node: str) -> tuple[int, int, int]:
            new = sum(b.bytes for i, b in enumerate(buffers) if node in b.allocators and not allocated[i])
            freed = sum(
                b.bytes for i, b in enumerate(buffers)
                if node in users[i] and users[i] - done == {node} and not b.to_end and b.readers
            )
            return new, new - freed, rank[node]

        best = min(ready, key=score)
        for i, buffer in enumerate(buffers):
            if best in buffer.allocators:
                allocated[i] = True
        done.add(best)
        order.append(best)
    return order


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(2, 40))
def test_greedy_matches_its_definition(seed, size):
    graph = analyze(random_dag(seed, size)).cost_graph
    for variant in ({}, {"concat_in_place": False}, {"elementwise_in_place": True}):
        problem = build_problem(graph, **variant)
        assert greedy_order(problem) == greedy_by_definition(problem)


def test_greedy_is_a_topological_order_of_a_wide_graph():
    # 300 independent branches off one input: every branch is ready at once
    nodes = [helper.make_node("Relu", ["x"], [f"a{i}"]) for i in range(300)]
    nodes += [helper.make_node("Neg", [f"a{i}"], [f"b{i}"]) for i in range(300)]
    outputs = [(f"b{i}", TensorProto.FLOAT, [1, 8]) for i in range(300)]
    graph = analyze(make_model(nodes, [("x", TensorProto.FLOAT, [1, 8])], outputs)).cost_graph
    problem = build_problem(graph)
    order = greedy_order(problem)
    assert sorted(order) == sorted(problem.model_order)
    position = {node: i for i, node in enumerate(order)}
    assert all(position[p] < position[n] for n in order for p in problem.predecessors[n])
    # every tensor is 32 B and the 300 outputs b stay live to the end: when the last Neg runs, its
    # input a and all 300 b are live, 301 x 32 = 9,632 B, so no order does better; the model's
    # order (every Relu, then every Neg) reaches it too: x and 300 a after the last Relu
    assert schedule_peak(problem, order).peak_bytes == 301 * 32
    assert schedule_peak(problem, problem.model_order).peak_bytes == 301 * 32
