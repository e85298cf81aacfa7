"""Policies of the memory stage (cost-model.md sections 4 and 5) at their edges: what a spill
plan charges when a node streams, a live set exactly the size of on-chip memory, outputs and
buffers evicted twice, the elementwise in-place rule, the order search on a chain. Written for
the survivors of a mutmut run over memory.py (docs/testing.md, "Mutation testing"); every
number is derived in the comments, S = 400 B = one [1, 100] float tensor."""

from __future__ import annotations

from onnx import TensorProto, helper

import onnxroof
from onnxroof.memory import best_order, build_problem, schedule_peak, spill_plan

from conftest import make_model, zeros

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
    nodes = [relu("x", "a", "A"), helper.make_node("MatMul", ["x", "w"], ["L"], name="M"),
             helper.make_node("MatMul", ["L", "w2"], ["n"], name="N"), helper.make_node("Add", ["a", "n"], ["y"], name="F")]
    return make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])],
                      [("w", zeros(100, 1_500)), ("w2", zeros(1_500, 100))])


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
        text = (f'schema = "onnxroof-target/1"\nname = "{name}"\ndescription = "test"\n'
                '[peak_ops_per_s.fp32]\nvalue = 1e12\ntag = "estimate"\nsource = "test"\n'
                '[dram.bandwidth_bytes_per_s]\nvalue = 1e11\ntag = "estimate"\nsource = "test"\n')
        if onchip:
            text += f'[onchip.size_bytes]\nvalue = {onchip}\ntag = "estimate"\nsource = "test"\n'
        path.write_text(text)
        return str(path)

    model = make_model([relu("x", "a", "A"), relu("a", "y", "B")], [("x", F32, [1, 100])], [("y", F32, [1, 100])])
    tiny, none = onnxroof.analyze(model, targets=[target("tiny", 1), target("none", None)]).targets
    assert [n.placement.dram_bytes for n in tiny.nodes] == [2 * S, 2 * S]
    assert [n.placement.dram_bytes for n in none.nodes] == [2 * S, 2 * S]
