"""Policies of the memory stage (cost-model.md sections 4 and 5) at their edges: what a spill
plan charges when a node streams, a live set exactly the size of on-chip memory, outputs and
buffers evicted twice, the elementwise in-place rule, the order search on a chain. Written for
the survivors of a mutmut run over memory.py (docs/testing.md, "Mutation testing"); every
number is derived in the comments, S = 400 B = one [1, 100] float tensor."""

from __future__ import annotations

from conftest import make_model, zeros
from models import interleaved_branches_model
from onnx import TensorProto, helper

import onnxroof
from onnxroof.memory.problem import build_problem, schedule_peak
from onnxroof.memory.schedule import best_order
from onnxroof.memory.spill import spill_plan

F32 = TensorProto.FLOAT
S = 400


def problem_of(model, **options):
    return build_problem(onnxroof.analyze(model).cost_graph, **options)


def plan_of(model, capacity):
    problem = problem_of(model)
    return spill_plan(problem, problem.model_order, capacity)


def relu(source, out, name=None):
    return helper.make_node("Relu", [source], [out], name=name or out.upper())


def wide_then_narrow_model():
    # A: a = Relu(x); M: L = x . w (1,500 floats, 6,000 B); N: n = L . w2; F: y = a + n
    nodes = [
        relu("x", "a", "A"),
        helper.make_node("MatMul", ["x", "w"], ["L"], name="M"),
        helper.make_node("MatMul", ["L", "w2"], ["n"], name="N"),
        helper.make_node("Add", ["a", "n"], ["y"], name="F"),
    ]
    return make_model(
        nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])], [("w", zeros(100, 1_500)), ("w2", zeros(1_500, 100))]
    )


# A node that does not fit streams: what it and the next reader pay


def test_a_streaming_node_pays_for_its_activations_not_again_for_the_model_input():
    # 5,000 B on chip. M needs x + L = 6,400 B and streams: x is the model's input (the roofline
    # charges its read already), so M pays for writing L: 6,000 B. N needs L + n = 6,400 B and
    # streams too: it reads L back (6,000) and writes n (400). F fits (a, n, y: 1,200 B) and
    # reads n back from DRAM: 400 B.
    plan = plan_of(wide_then_narrow_model(), 5_000)
    assert plan.streamed == ["M", "N"]
    assert plan.per_node == {"M": 6_000, "N": 6_400, "F": 400}
    assert plan.extra_dram_bytes == 12_800


def test_a_target_whose_on_chip_memory_holds_nothing_costs_what_one_without_it_costs(tmp_path):
    # x -> Relu A -> a -> Relu B -> y, S each. With 1 B on chip every node streams: A reads x (the
    # model input, charged once) and writes a; B reads a back and writes y (the model output,
    # charged once): 2 S per node, exactly each node's weights + inputs + outputs, as on a target
    # with no on-chip memory at all.
    def target(name, onchip):
        path = tmp_path / f"{name}.toml"
        text = (
            f'schema = "onnxroof-target/1"\nname = "{name}"\ndescription = "test"\n'
            '[peak_ops_per_s.fp32]\nvalue = 1e12\ntag = "estimate"\nsource = "test"\n'
            '[dram.bandwidth_bytes_per_s]\nvalue = 1e11\ntag = "estimate"\nsource = "test"\n'
        )
        if onchip:
            text += f'[onchip.size_bytes]\nvalue = {onchip}\ntag = "estimate"\nsource = "test"\n'
        path.write_text(text)
        return str(path)

    model = make_model([relu("x", "a", "A"), relu("a", "y", "B")], [("x", F32, [1, 100])], [("y", F32, [1, 100])])
    tiny, none = onnxroof.analyze(model, targets=[target("tiny", 1), target("none", None)]).targets
    assert [n.placement.dram_bytes for n in tiny.nodes] == [2 * S, 2 * S]
    assert [n.placement.dram_bytes for n in none.nodes] == [2 * S, 2 * S]


# The spill plan at its edges (model order; every tensor S = 400 B unless said)


def three_fan_out_model():
    # A, B, C read x; D = a + c; E = Relu(d); F = e + b; G = Relu(f) -> y
    nodes = [
        relu("x", "a", "A"),
        relu("x", "b", "B"),
        relu("x", "c", "C"),
        helper.make_node("Add", ["a", "c"], ["d"], name="D"),
        relu("d", "e", "E"),
        helper.make_node("Add", ["e", "b"], ["f"], name="F"),
        relu("f", "y", "G"),
    ]
    return make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])])


def test_a_live_set_exactly_the_size_of_on_chip_memory_fits():
    # 1,200 B = 3 S on chip. A: x, a (800). B: x, a, b = 1,200: exactly full, nothing moves.
    # C: + c = 1,600: one buffer not used by C must go: a (next use D, step 3) or b (F, step 5):
    # the farthest, b, is written out (400) and the live set is 1,200 again, full, so nothing
    # else goes. x dies; D: a, c, d = 1,200; E: d, e; F reads b back (400) with e, f = 1,200.
    # F's working set, 1,200 B, fits exactly: no node streams.
    plan = plan_of(three_fan_out_model(), 1_200)
    assert plan.capacity_bytes == 1_200
    assert plan.streamed == [] and plan.spilled == ["b"]
    assert plan.per_node == {"C": S, "F": S} and plan.extra_dram_bytes == 2 * S


def test_an_output_nobody_reads_again_is_evicted_first_and_for_free():
    # B: b = Relu(x) (read by the last node); P: p = Relu(x), a model output read by no one;
    # Q: q = Relu(x); R: r = Relu(q); S: y = r + b. 1,200 B on chip. B: x, b; P: x, b, p = 1,200;
    # Q: + q = 1,600: b (next use S, step 4) or p (never used again, a model output): p goes. Its
    # DRAM write is the roofline's (every output ends in DRAM) and nobody reads it back: 0 B.
    # Evicting b instead would cost writing it and reading it back at S: 800 B.
    nodes = [
        relu("x", "b", "B"),
        relu("x", "p", "P"),
        relu("x", "q", "Q"),
        relu("q", "r", "R"),
        helper.make_node("Add", ["r", "b"], ["y"], name="S"),
    ]
    model = make_model(nodes, [("x", F32, [1, 100])], [("p", F32, [1, 100]), ("y", F32, [1, 100])])
    plan = plan_of(model, 1_200)
    assert plan.spilled == ["p"]
    assert plan.extra_dram_bytes == 0 and plan.per_node == {}


def test_a_buffer_evicted_twice_is_charged_twice_and_listed_once():
    # a = Relu(x) is read at P (step 3) and Q (step 6); two wide MatMuls (L1, L2: 1,100 floats,
    # 4,400 B) force it out, 5,000 B on chip. M1: x, a, L1 = 5,200: a goes (400). x dies. N1:
    # L1, n1 = 4,800. P reads a back (400). M2: a, p, L2 = 5,200: a goes again (400). Q reads it
    # back (400). Four moves of 400 B; a is one spilled buffer.
    nodes = [
        relu("x", "a", "A"),
        helper.make_node("MatMul", ["x", "w1"], ["L1"], name="M1"),
        helper.make_node("MatMul", ["L1", "v1"], ["n1"], name="N1"),
        helper.make_node("Add", ["a", "n1"], ["p"], name="P"),
        helper.make_node("MatMul", ["p", "w2"], ["L2"], name="M2"),
        helper.make_node("MatMul", ["L2", "v2"], ["n2"], name="N2"),
        helper.make_node("Add", ["a", "n2"], ["y"], name="Q"),
    ]
    weights = [
        ("w1", zeros(100, 1_100)),
        ("v1", zeros(1_100, 100)),
        ("w2", zeros(100, 1_100)),
        ("v2", zeros(1_100, 100)),
    ]
    plan = plan_of(make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])], weights), 5_000)
    assert plan.spilled == ["a"]
    assert plan.per_node == {"M1": S, "P": S, "M2": S, "Q": S} and plan.extra_dram_bytes == 4 * S


def test_two_buffers_read_back_at_one_step_are_both_charged():
    # a = Relu(x), b = Neg(x), both read by the final Sum; M writes L (1,100 floats, 4,400 B),
    # 5,000 B on chip. M: x, a, b, L = 5,600: a goes (5,200, still over), then b (4,800): 800 B
    # written. N: L, n = 4,800. F = Sum(a, b, n) reads a and b back: 800 B at one step.
    nodes = [
        relu("x", "a", "A"),
        helper.make_node("Neg", ["x"], ["b"], name="B"),
        helper.make_node("MatMul", ["x", "w"], ["L"], name="M"),
        helper.make_node("MatMul", ["L", "v"], ["n"], name="N"),
        helper.make_node("Sum", ["a", "b", "n"], ["y"], name="F"),
    ]
    model = make_model(
        nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])], [("w", zeros(100, 1_100)), ("v", zeros(1_100, 100))]
    )
    plan = plan_of(model, 5_000)
    assert sorted(plan.spilled) == ["a", "b"]
    assert plan.per_node == {"M": 2 * S, "F": 2 * S}


# Elementwise in place (--in-place): a single-consumer elementwise op overwrites its input


def live(model, **options):
    problem = problem_of(model, **options)
    return schedule_peak(problem, problem.model_order).live_bytes


def test_a_chain_of_elementwise_ops_overwrites_one_buffer_but_not_the_model_input():
    # x -> A -> a -> B -> b -> C -> c. A may not overwrite x (a model input): x + a = 800.
    # B overwrites a (its only reader), C overwrites that again: 400 B at B and at C.
    # Without --in-place every step holds an input and an output: 800 B.
    model = make_model(
        [relu("x", "a", "A"), relu("a", "b", "B"), relu("b", "c", "C")], [("x", F32, [1, 100])], [("c", F32, [1, 100])]
    )
    assert live(model, elementwise_in_place=True) == [2 * S, S, S]
    assert live(model) == [2 * S, 2 * S, 2 * S]


def test_an_input_read_twice_is_not_overwritten():
    # a is read by B and by C: neither overwrites it. D = b + c overwrites b (its only reader):
    # A: x, a; B: a, b; C: a, b, c; D: b, c (y lives in b's buffer) = 800 instead of 1,200
    nodes = [
        relu("x", "a", "A"),
        relu("a", "b", "B"),
        helper.make_node("Neg", ["a"], ["c"], name="C"),
        helper.make_node("Add", ["b", "c"], ["y"], name="D"),
    ]
    model = make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])])
    assert live(model, elementwise_in_place=True) == [2 * S, 2 * S, 3 * S, 2 * S]
    assert live(model) == [2 * S, 2 * S, 3 * S, 3 * S]


def test_a_model_output_is_not_overwritten():
    # a is a model output read by B: B writes b beside it (800 B), never over it
    model = make_model(
        [relu("x", "a", "A"), relu("a", "b", "B")], [("x", F32, [1, 100])], [("a", F32, [1, 100]), ("b", F32, [1, 100])]
    )
    assert live(model, elementwise_in_place=True) == [2 * S, 2 * S]


def test_only_an_input_of_the_output_size_is_overwritten():
    # y = s + t with s [1, 1] (4 B) broadcast over t [1, 100]: s, the first data input, is too
    # small to hold y, so y gets its own buffer: s, t and y live at the Add (x1 and x2 died at
    # their Relus): 4 + 400 + 400 B (overwriting s would give 404 B)
    nodes = [relu("x1", "s", "P"), relu("x2", "t", "Q"), helper.make_node("Add", ["s", "t"], ["y"], name="R")]
    model = make_model(nodes, [("x1", F32, [1, 1]), ("x2", F32, [1, 100])], [("y", F32, [1, 100])])
    assert live(model, elementwise_in_place=True)[-1] == 4 + 2 * S


def test_a_matmul_never_overwrites_its_input():
    # a [1, 100] . w [100, 100] = b [1, 100]: the same size, a read only here, but a MatMul reads
    # all of a for every output element, so it is no elementwise op: a + b = 800 at M
    nodes = [relu("x", "a", "A"), helper.make_node("MatMul", ["a", "w"], ["b"], name="M")]
    model = make_model(nodes, [("x", F32, [1, 100])], [("b", F32, [1, 100])], [("w", zeros(100, 100))])
    assert live(model, elementwise_in_place=True) == [2 * S, 2 * S]


# The order search


def test_the_best_order_of_a_chain_is_the_chain_itself():
    # a chain has one order: x -> A -> a -> B -> b -> C -> c, S each, peaks at 2 S at every step
    model = make_model(
        [relu("x", "a", "A"), relu("a", "b", "B"), relu("b", "c", "C")], [("x", F32, [1, 100])], [("c", F32, [1, 100])]
    )
    problem = problem_of(model)
    result = best_order(problem)
    assert result.schedule.order == ("A", "B", "C") and result.schedule.peak_bytes == 2 * S


def test_when_the_model_order_meets_the_lower_bound_nothing_is_searched():
    # a chain's peak (2 S at every step) is its largest layer (one input and one output, 2 S):
    # no order can peak lower, so the model order is returned as optimal without a search
    model = make_model([relu("x", "a", "A"), relu("a", "b", "B")], [("x", F32, [1, 100])], [("b", F32, [1, 100])])
    result = best_order(problem_of(model))
    assert result.method == "model order" and result.states == 0 and "lower bound" in result.note


def test_the_search_can_prove_the_model_order_optimal_above_the_lower_bound():
    # three fan-out (A, B, C read x; D = a + c; E; F = e + b; G): every order holds 4 S at once,
    # x with a, b, c (the third of A, B, C) or x with a, c, d (D before B); its largest layer is
    # 3 S (D: a, c, d). The model order peaks at 4 S: the exact search proves it optimal.
    result = best_order(problem_of(three_fan_out_model()))
    assert result.schedule.peak_bytes == 4 * S
    assert result.method == "model order" and result.states > 0 and "proved" in result.note


def test_a_search_out_of_budget_says_so_and_keeps_the_heuristic_order():
    # interleaved branches (tests/models.py): the greedy order finishes branch A first, 4,044 B
    # against the model order's 8,040 B; one state is not enough for the exact search to finish
    result = best_order(problem_of(interleaved_branches_model()), state_limit=1)
    assert result.method == "heuristic" and result.schedule.peak_bytes == 4_044
    assert result.states == 1 and "ran out of its budget" in result.note


def test_a_repeated_node_name_still_gives_the_peak_and_the_largest_layer():
    # A: a = Relu(x), x [1, 1000]: 8,000 B, the largest layer; two nodes named Z: b = Relu(y),
    # c = Relu(b) on [1, 10] (80 B each). Model order live bytes: x and y are inputs, live from
    # step 0 until read: A: x + y + a = 8,040; Z: y + a + b = 4,080 (x died at A; a is an output);
    # Z: a + b + c = 4,080.
    from onnxroof.memory.problem import largest_layer_bytes

    nodes = [relu("x", "a", "A"), relu("y", "b", "Z"), relu("b", "c", "Z")]
    model = make_model(
        nodes, [("x", F32, [1, 1_000]), ("y", F32, [1, 10])], [("a", F32, [1, 1_000]), ("c", F32, [1, 10])]
    )
    problem = problem_of(model)
    assert schedule_peak(problem, problem.model_order).live_bytes == [8_040, 4_080, 4_080]
    assert largest_layer_bytes(problem) == (8_000, "A")


def test_the_tensors_at_the_peak_are_listed_largest_first():
    # a small tensor named "a" and a large one named "z" live at the peak together:
    # A: a = Relu(x) [1, 10]; Z: z = MatMul(x, w) [1, 1000]; R: s = ReduceSum(z); S: y = a + s
    nodes = [
        relu("x", "a", "A"),
        helper.make_node("MatMul", ["x", "w"], ["z"], name="Z"),
        helper.make_node("ReduceSum", ["z"], ["s"], name="R", keepdims=1),
        helper.make_node("Add", ["a", "s"], ["y"], name="S"),
    ]
    model = make_model(nodes, [("x", F32, [1, 10])], [("y", F32, [1, 10])], [("w", zeros(10, 1_000))])
    problem = problem_of(model)
    # Z: x (40) + a (40) + z (4,000) = 4,080 B, the peak
    peak = schedule_peak(problem, problem.model_order)
    assert peak.peak_node == "Z" and peak.peak_bytes == 4_080
    assert [size for _, size in peak.peak_tensors] == [4_000, 40, 40]
    assert peak.peak_tensors[0] == ("z", 4_000)


def test_a_model_with_no_nodes_has_no_step_and_no_largest_layer():
    # the input is the output and no node runs: there is no step, so no live set, no peak node,
    # and no node touches anything
    analysis = onnxroof.analyze(make_model([], [("x", F32, [4])], [("x", F32, [4])]))
    memory = analysis.memory
    assert memory.model_order.peak_bytes == 0 and memory.model_order.peak_node is None
    assert memory.model_order.order == () and memory.model_order.live_bytes == []
    assert memory.model_order.peak_step == 0 and memory.model_order.peak_tensors == []
    assert memory.largest_layer_bytes == 0 and memory.largest_layer_node is None


def test_the_memory_report_states_its_figures_and_settings():
    # x -> A -> a -> B -> b -> C -> c with --in-place: A 2 S, B and C S each (see above); the
    # largest layer is A's x + a = 2 S; no Concat, so copying concats changes nothing
    model = make_model(
        [relu("x", "a", "A"), relu("a", "b", "B"), relu("b", "c", "C")], [("x", F32, [1, 100])], [("c", F32, [1, 100])]
    )
    memory = onnxroof.analyze(model, elementwise_in_place=True).memory
    assert memory.elementwise_in_place is True
    assert memory.model_order.live_bytes == [2 * S, S, S]
    assert memory.concat_copy_peak_bytes == memory.model_order.peak_bytes == 2 * S
    assert (memory.largest_layer_bytes, memory.largest_layer_node) == (2 * S, "A")


def test_analyze_memory_does_not_overwrite_inputs_unless_asked():
    from onnxroof.memory.liveness import analyze_memory

    model = make_model(
        [relu("x", "a", "A"), relu("a", "b", "B"), relu("b", "c", "C")], [("x", F32, [1, 100])], [("c", F32, [1, 100])]
    )
    graph = onnxroof.analyze(model).cost_graph
    assert analyze_memory(graph).model_order.live_bytes == [2 * S, 2 * S, 2 * S]
    assert analyze_memory(graph).elementwise_in_place is False


def test_an_order_only_the_exact_search_finds_is_reported_as_exact():
    # random_dag(0, 6) (tests/models.py): the greedy order is not the best one; the lowest peak over
    # every topological order, by brute force, is what the exact search returns
    import networkx as nx
    from models import random_dag

    from onnxroof.memory.schedule import greedy_order

    problem = problem_of(random_dag(0, 6))
    dag = nx.DiGraph()
    dag.add_nodes_from(problem.model_order)
    dag.add_edges_from((p, n) for n, preds in problem.predecessors.items() for p in preds)
    lowest = min(schedule_peak(problem, order).peak_bytes for order in nx.all_topological_sorts(dag))
    assert schedule_peak(problem, greedy_order(problem)).peak_bytes > lowest
    result = best_order(problem)
    assert result.schedule.peak_bytes == lowest
    assert result.method == "exact" and result.states > 0 and "exact" in result.note


def test_after_a_streaming_node_the_live_set_on_chip_is_counted_right():
    # a = Relu(x) waits on chip for the last node; M (x . w -> L, 6,000 B) and N (L . w2 -> n) stream;
    # P: big = n . w3 (1,150 floats, 4,600 B); Q: q = big . w4; F: y = a + q. 5,398 B on chip.
    # M: writes L (6,000; x is the model input). N: reads L back, writes n (6,400). P: a is still on
    # chip (400 B), n comes back (400) and big is written: 5,400 B > 5,398: a goes (400 written).
    # Q: big + q = 5,000 fits. F reads a back (400). Counting the live set wrong after M by as
    # little as 2 B (5,398 instead of 5,400) would keep a on chip.
    nodes = [
        relu("x", "a", "A"),
        helper.make_node("MatMul", ["x", "w"], ["L"], name="M"),
        helper.make_node("MatMul", ["L", "w2"], ["n"], name="N"),
        helper.make_node("MatMul", ["n", "w3"], ["big"], name="P"),
        helper.make_node("MatMul", ["big", "w4"], ["q"], name="Q"),
        helper.make_node("Add", ["a", "q"], ["y"], name="F"),
    ]
    weights = [
        ("w", zeros(100, 1_500)),
        ("w2", zeros(1_500, 100)),
        ("w3", zeros(100, 1_150)),
        ("w4", zeros(1_150, 100)),
    ]
    plan = plan_of(make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])], weights), 5_398)
    assert plan.streamed == ["M", "N"] and plan.spilled == ["a"]
    assert plan.per_node == {"M": 6_000, "N": 6_400, "P": 2 * S, "F": S}


def test_a_heuristic_order_that_meets_the_lower_bound_is_optimal_without_a_search():
    # random_dag(27, 4) (tests/models.py): the model order peaks above the largest layer, the
    # greedy order peaks at it; no order can go lower, so no exact search is run (0 states)
    from models import random_dag

    from onnxroof.memory.problem import largest_layer_bytes

    problem = problem_of(random_dag(27, 4))
    bound = largest_layer_bytes(problem)[0]
    assert schedule_peak(problem, problem.model_order).peak_bytes > bound
    result = best_order(problem)
    assert result.schedule.peak_bytes == bound
    assert result.method == "heuristic" and result.states == 0 and "lower bound" in result.note
