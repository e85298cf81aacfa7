"""Live activations and schedules (cost-model.md section 4), with every peak worked out by hand."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from conftest import make_model, zeros
from models import chain_model, interleaved_branches_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.examples import build_example
from onnxroof.memory.problem import build_problem, largest_layer_bytes, schedule_peak
from onnxroof.memory.schedule import best_order, greedy_order, order_text
from onnxroof.memory.spill import spill_plan

F32 = TensorProto.FLOAT


def problem_of(model, **options):
    return build_problem(onnxroof.analyze(model).cost_graph, **options)


def test_chain_peak_is_the_largest_adjacent_pair():
    problem = problem_of(chain_model())
    schedule = schedule_peak(problem, problem.model_order)
    # steps: x+a = 8,000; a+b = 12,000; b+c = 16,000; c+d = 10,000 (weights are not activations)
    assert schedule.live_bytes == [8_000, 12_000, 16_000, 10_000]
    assert (schedule.peak_bytes, schedule.peak_step, schedule.peak_node) == (16_000, 2, "relu_c")
    assert schedule.peak_tensors == [("b", 8_000), ("c", 8_000)]
    assert largest_layer_bytes(problem) == (16_000, "relu_c")


def test_diamond_keeps_the_fan_out_alive_until_both_branches_ran():
    size = 64 * 4
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="A"),
            helper.make_node("Relu", ["a"], ["b"], name="B"),
            helper.make_node("Neg", ["a"], ["c"], name="C"),
            helper.make_node("Add", ["b", "c"], ["y"], name="D"),
        ],
        [("x", F32, [64])],
        [("y", F32, [64])],
    )
    schedule = schedule_peak(problem := problem_of(model), problem.model_order)
    # A: x+a; B: a+b; C: a+b+c (a still needed by C); D: b+c+y
    assert schedule.live_bytes == [2 * size, 2 * size, 3 * size, 3 * size]


def inception_model():
    # two branches expand x (10 floats) to 1,000 floats each; their concat (2,000 floats) is the output
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["p"], name="branch_1"),
            helper.make_node("MatMul", ["x", "w2"], ["q"], name="branch_2"),
            helper.make_node("Concat", ["p", "q"], ["cat"], name="concat", axis=1),
        ],
        [("x", F32, [1, 10])],
        [("cat", F32, [1, 2000])],
        [("w1", zeros(10, 1000)), ("w2", zeros(10, 1000))],
    )


def test_concat_in_place_versus_copy():
    in_place = problem_of(inception_model())
    # in place the branches write into the 8,000 B concat buffer: x + cat at both branches, cat alone at concat
    assert schedule_peak(in_place, in_place.model_order).live_bytes == [8_040, 8_040, 8_000]
    copying = problem_of(inception_model(), concat_in_place=False)
    # copying: x+p; x+p+q; p+q+cat: the concat step holds its inputs and its output at once
    assert schedule_peak(copying, copying.model_order).live_bytes == [4_040, 8_040, 16_000]
    analysis = onnxroof.analyze(inception_model())
    assert analysis.memory.model_order.peak_bytes == 8_040
    assert analysis.memory.concat_copy_peak_bytes == 16_000


def test_views_add_nothing():
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["a"], name="relu_a"),
            helper.make_node("Reshape", ["a", "shape"], ["r"], name="reshape"),
            helper.make_node("Relu", ["r"], ["b"], name="relu_b"),
        ],
        [("x", F32, [4, 25])],
        [("b", F32, [100])],
        [("shape", np.array([100], np.int64))],
    )
    schedule = schedule_peak(problem := problem_of(model), problem.model_order)
    # 400 B each: x+a; the reshape allocates nothing (a alone); a(=r)+b
    assert schedule.live_bytes == [800, 400, 800]


def test_best_order_beats_the_model_order_by_a_known_amount():
    problem = problem_of(interleaved_branches_model())
    x, large, small = 40, 4_000, 4
    model = schedule_peak(problem, problem.model_order)
    assert model.peak_bytes == x + 2 * large  # at B1: x, la and lb
    result = best_order(problem)
    # finishing branch A first: at B1 only x, sa and lb are live
    assert result.schedule.peak_bytes == x + large + small
    assert model.peak_bytes - result.schedule.peak_bytes == large - small
    # the greedy heuristic finds this order, and the exact search proves nothing beats it
    assert result.method == "heuristic" and "proved" in result.note
    assert list(result.schedule.order[:2]) == ["A1", "A2"]
    analysis = onnxroof.analyze(interleaved_branches_model())
    assert analysis.memory.best.schedule.peak_bytes == 4_044
    document = analysis.to_dict()["memory"]
    assert document["peak_bytes"] == 8_040 and document["best_order_peak_bytes"] == 4_044
    assert document["peak_node"] == "B1" and document["timeline"][1] == {"step": 1, "node": "B1", "live_bytes": 8_040}


def test_analyze_can_skip_the_order_search():
    # the interleaved branches: the model order peaks at x + 2 large (8,040 B), a better order at
    # x + large + small (4,044 B); without the search the model order stands for the best
    found = onnxroof.analyze(interleaved_branches_model(), search_order=False).memory
    assert found.model_order.peak_bytes == 40 + 2 * 4_000
    assert found.best.schedule.peak_bytes == 40 + 2 * 4_000 and found.best.note == "not searched"


def random_dag_model(seed: int, nodes: int = 7):
    rng = random.Random(seed)
    tensors = ["x"]
    graph_nodes = []
    for i in range(nodes):
        if len(tensors) > 1 and rng.random() < 0.3:
            a, b = rng.sample(tensors, 2)
            graph_nodes.append(helper.make_node("Concat", [a, b], [f"t{i}"], name=f"n{i}", axis=0))
        else:
            source = rng.choice(tensors)
            graph_nodes.append(helper.make_node("Tile", [source, f"r{i}"], [f"t{i}"], name=f"n{i}"))
        tensors.append(f"t{i}")
    used = {name for node in graph_nodes for name in node.input}
    outputs = [t for t in tensors[1:] if t not in used]
    repeats = [(f"r{i}", np.array([rng.choice([1, 2, 4])], np.int64)) for i in range(nodes)]
    return make_model(graph_nodes, [("x", F32, [8])], [(o, F32, None) for o in outputs], repeats)


@pytest.mark.parametrize("seed", range(12))
def test_exact_search_matches_brute_force_on_small_graphs(seed):
    analysis = onnxroof.analyze(random_dag_model(seed))
    problem = build_problem(analysis.cost_graph)
    dag = nx.DiGraph()
    dag.add_nodes_from(problem.model_order)
    dag.add_edges_from((p, n) for n, preds in problem.predecessors.items() for p in preds)
    brute = min(schedule_peak(problem, order).peak_bytes for order in nx.all_topological_sorts(dag))
    result = best_order(problem)
    assert result.schedule.peak_bytes == brute
    assert largest_layer_bytes(problem)[0] <= brute <= schedule_peak(problem, problem.model_order).peak_bytes
    assert schedule_peak(problem, greedy_order(problem)).peak_bytes >= brute


def test_minigooglenet_peak_is_explained():
    memory = onnxroof.analyze(build_example("minigooglenet")).memory
    # conv2d_0's output and batch_normalization_0's output, 96 x 32 x 32 floats each, live together
    assert memory.model_order.peak_bytes == 2 * 96 * 32 * 32 * 4
    assert memory.model_order.peak_node == "batch_normalization_0"
    assert memory.best.schedule.peak_bytes <= memory.model_order.peak_bytes
    assert memory.largest_layer_bytes <= memory.best.schedule.peak_bytes


def test_spill_plan_evicts_the_farthest_next_use():
    problem = problem_of(interleaved_branches_model())
    # capacity 6,000 B under the model order (A1, B1, A2, B2, join):
    # B1 needs x + lb while la is resident: 8,040 B > 6,000, so la (not needed by B1) is written out;
    # A2 reads la back and writes sa while lb is resident: 8,004 B > 6,000, so lb is written out,
    # and B2 reads it back. Extra DRAM traffic: 4 x 4,000 B.
    plan = spill_plan(problem, problem.model_order, 6_000)
    assert plan.spilled == ["la", "lb"] and plan.extra_dram_bytes == 16_000
    assert plan.per_node == {"B1": 4_000, "A2": 8_000, "B2": 4_000}
    assert spill_plan(problem, problem.model_order, 10_000).extra_dram_bytes == 0
    best = best_order(problem).schedule.order
    assert spill_plan(problem, best, 6_000).extra_dram_bytes == 0  # the better order fits


def test_spill_plan_leaves_the_model_inputs_in_dram():
    # two 2,000 B inputs, each reduced to a 4 B scalar, then added; capacity 3,000 B. Each step
    # needs at most 2,008 B. The inputs start in DRAM (the roofline charges their reads to the nodes
    # that read them), so nothing spills; were both on chip at the start (4,000 B), x2 would be
    # written out to make room and read back: 4,000 B of traffic that does not exist.
    nodes = [
        helper.make_node("ReduceMax", ["x1"], ["p"], name="P"),
        helper.make_node("ReduceMax", ["x2"], ["q"], name="Q"),
        helper.make_node("Add", ["p", "q"], ["y"], name="Add"),
    ]
    model = make_model(
        nodes,
        [("x1", TensorProto.FLOAT, [1, 500]), ("x2", TensorProto.FLOAT, [1, 500])],
        [("y", TensorProto.FLOAT, [1, 1])],
    )
    problem = problem_of(model)
    plan = spill_plan(problem, problem.model_order, 3_000)
    assert plan.per_node == {} and plan.extra_dram_bytes == 0 and plan.spilled == []


def test_spill_plan_charges_an_evicted_output_only_its_reload():
    # P = Relu(x) -> p, a model output also read by the final Add; Q = Relu(x) -> q; R = Relu(q) -> r;
    # Add(p, r) -> y; 2,000 B tensors. At 6,500 B every step fits (6,000 B at most). At 4,500 B, Q
    # needs x + q (4,000 B) while p is resident, so p (next used by the Add) is evicted: p is a
    # model output, whose DRAM write the roofline already charges, so Q pays nothing. The Add
    # needs p + r + y (6,000 B > 4,500 B) and streams them: it reads p and r back (4,000 B); y is
    # a model output, whose write the roofline charges already (as it does for Q's eviction).
    nodes = [
        helper.make_node("Relu", ["x"], ["p"], name="P"),
        helper.make_node("Relu", ["x"], ["q"], name="Q"),
        helper.make_node("Relu", ["q"], ["r"], name="R"),
        helper.make_node("Add", ["p", "r"], ["y"], name="Add"),
    ]
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, [1, 500])],
        [("p", TensorProto.FLOAT, [1, 500]), ("y", TensorProto.FLOAT, [1, 500])],
    )
    problem = problem_of(model)
    assert spill_plan(problem, problem.model_order, 6_500).extra_dram_bytes == 0
    plan = spill_plan(problem, problem.model_order, 4_500)
    assert plan.spilled == ["p"] and plan.per_node == {"Add": 4_000}


def test_emit_order_writes_the_best_order(tmp_path, capsys):
    import onnx

    from onnxroof.cli.app import main

    path = tmp_path / "m.onnx"
    onnx.save(interleaved_branches_model(), path)
    target = tmp_path / "order.txt"
    assert main(["summary", str(path), "--emit-order", str(target), "-q"]) == 0
    assert target.read_text().splitlines()[:2] == ["A1", "A2"]
    assert order_text(["a", "b"]) == "a\nb\n"
    assert "best order" in capsys.readouterr().out


def test_emit_order_escapes_names_that_would_forge_lines_and_reads_back(tmp_path, capsys):
    from conftest import make_model
    from onnx import TensorProto, helper

    from onnxroof.cli.app import main
    from onnxroof.core.text import unescaped

    hostile = ["\x1b[2J\x1b]0;PWNED\x07evil\nFAKE LINE: all good", "a\\x0a", "\x9b31mred\u2028x"]
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=name) for i, name in enumerate(hostile)]
    path = tmp_path / "m.onnx"
    path.write_bytes(
        make_model(nodes, [("t0", TensorProto.FLOAT, [1, 4])], [("t3", TensorProto.FLOAT, [1, 4])]).SerializeToString()
    )
    target = tmp_path / "order.txt"
    assert main(["summary", str(path), "--emit-order", str(target), "-q"]) == 0
    text = target.read_text()
    # one line per node, nothing a terminal interprets; a real backslash doubled
    assert text.splitlines() == [
        "\\x1b[2J\\x1b]0;PWNED\\x07evil\\x0aFAKE LINE: all good",
        "a\\\\x0a",
        "\\x9b31mred\\u2028x",
    ]
    assert text.isascii() and [unescaped(line) for line in text.split("\n")[:-1]] == hostile
    capsys.readouterr()
