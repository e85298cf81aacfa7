"""memory/schedule.py: the order search and its greedy heuristic.

- The greedy schedule keeps its ready nodes in a heap and re-keys only the nodes a step affects;
  it is checked against the heuristic's plain definition (re-score every ready node at every
  step) on random DAGs with branches, concats and multi-reader tensors.
- On a three-branch DAG the search finds an order whose peak, derived by hand, is lower than the
  model order's, and the order it emits is a topological order."""

from __future__ import annotations

from conftest import make_model, zeros
from hypothesis import given, settings
from hypothesis import strategies as st
from models import random_dag
from onnx import TensorProto, helper

import onnxroof
from onnxroof.memory.problem import MemoryProblem, build_problem, schedule_peak
from onnxroof.memory.schedule import greedy_order
from onnxroof.pipeline import analyze


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
                b.bytes
                for i, b in enumerate(buffers)
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


F32 = TensorProto.FLOAT


def three_branch_model():
    # x (10 floats) -> each branch i: MatMul to a 1,000-float li, MatMul to a 1-float si;
    # y = sa + sb + sc. The model runs every expansion first (A1, B1, C1), then every shrink.
    nodes = [helper.make_node("MatMul", ["x", f"w{b}1"], [f"l{b}"], name=f"{b.upper()}1") for b in "abc"]
    nodes += [helper.make_node("MatMul", [f"l{b}", f"w{b}2"], [f"s{b}"], name=f"{b.upper()}2") for b in "abc"]
    nodes.append(helper.make_node("Sum", ["sa", "sb", "sc"], ["y"], name="join"))
    weights = [(f"w{b}1", zeros(10, 1000)) for b in "abc"] + [(f"w{b}2", zeros(1000, 1)) for b in "abc"]
    return make_model(nodes, [("x", F32, [1, 10])], [("y", F32, [1, 1])], weights)


def is_topological(order, model) -> bool:
    """Every node runs once, after the nodes producing its inputs."""
    producer = {out: node.name for node in model.graph.node for out in node.output}
    step = {name: i for i, name in enumerate(order)}
    if sorted(order) != sorted(node.name for node in model.graph.node):
        return False
    return all(step[producer[i]] < step[node.name] for node in model.graph.node for i in node.input if i in producer)


def test_search_finds_the_branch_by_branch_order_and_its_lower_peak():
    model = three_branch_model()
    memory = onnxroof.analyze(model).memory
    x, large, small = 40, 4_000, 4
    # model order: at C1, x (still read) and la, lb, lc are live: 40 + 3 x 4,000 = 12,040
    assert memory.model_order.peak_bytes == x + 3 * large == 12_040
    # finishing each branch before the next: the worst step creates the last li while x and the
    # two finished si are live: 40 + 4,000 + 2 x 4 = 4,048; no order does better, since whichever
    # li comes last is made while x is read and each other branch holds its li or si
    best = memory.best.schedule
    assert best.peak_bytes == x + large + 2 * small == 4_048
    assert is_topological(best.order, model)
    assert is_topological(memory.model_order.order, model)  # the checker accepts the model's own order
    assert not is_topological(best.order[::-1], model)  # and rejects one running consumers first
