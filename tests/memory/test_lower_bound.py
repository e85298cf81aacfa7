"""The lower bound (the most bytes one node allocates or reads) is summed per step while the
buffers are found; it must equal the plain definition over the buffers' allocators and readers
(each buffer counted once per node, ties going to the first node in model order) on graphs with
views, concat slices, in-place updates and subgraphs, and with a node name repeated."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from onnxroof.pipeline import analyze
from onnxroof.core.examples import build_example
from onnxroof.memory.liveness import MemoryProblem, build_problem, largest_layer_bytes, problem_from_records

from models import chain_model, loop_model, random_dag_problems


def largest_layer_by_definition(problem: MemoryProblem) -> tuple[int, str | None]:
    touched = {node: sum(b.bytes for b in problem.buffers if node in b.allocators | b.readers)
               for node in problem.model_order}
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

