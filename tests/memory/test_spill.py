"""The spill plan's eviction policy (Belady: the resident buffer whose next use is farthest),
on a graph where the eviction step has several candidates with different next uses."""

from __future__ import annotations

from conftest import make_model
from onnx import TensorProto, helper

import onnxroof

F32 = TensorProto.FLOAT
S = 400  # every activation: 100 floats
CAPACITY = 1_400  # 3.5 x S: three buffers fit, four do not

TARGET = f"""schema = "onnxroof-target/1"
name = "small-sram"
description = "a test target with 1,400 B on chip"

[peak_ops_per_s.fp32]
value = 1e12
tag = "estimate"
source = "test"

[dram.bandwidth_bytes_per_s]
value = 100e9
tag = "estimate"
source = "test"

[onchip.size_bytes]
value = {CAPACITY}
tag = "estimate"
source = "test"
"""


def three_fan_out_model():
    # x -> a, b, c (three Relus); d = a + c; e = Relu(d); f = e + b; y = Relu(f)
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="A"),  # step 0
        helper.make_node("Relu", ["x"], ["b"], name="B"),  # step 1
        helper.make_node("Relu", ["x"], ["c"], name="C"),  # step 2: x's last read
        helper.make_node("Add", ["a", "c"], ["d"], name="D"),  # step 3: a's next use
        helper.make_node("Relu", ["d"], ["e"], name="E"),  # step 4
        helper.make_node("Add", ["e", "b"], ["f"], name="F"),  # step 5: b's next use
        helper.make_node("Relu", ["f"], ["y"], name="G"),  # step 6
    ]
    return make_model(nodes, [("x", F32, [1, 100])], [("y", F32, [1, 100])])


def test_spill_evicts_the_farthest_next_use_among_several_candidates(tmp_path):
    # Model order, S = 400 B per tensor, capacity 1,400 B:
    # A: x, a (800); B: x, a, b (1,200); C: x, a, b, c = 1,600 > 1,400, one must go. Not in use at
    # C: a (next used at D, step 3) and b (next used at F, step 5).
    # Farthest next use evicts b: write 400 at C; then x dies, a + c + d = 1,200 fits at D; at F,
    # b is read back (400) with e, f = 1,200. Extra DRAM bytes: 400 + 400 = 800, b spilled once.
    # Nearest next use would evict a: write 400 at C; D reads a back (400) with b, c, d resident
    # = 1,600 > 1,400, so b is written out (400) and F reads it back (400): 1,600 B, two spills.
    # (Evicting in the order buffers became resident would also pick a: 1,600 B.)
    path = tmp_path / "small-sram.toml"
    path.write_text(TARGET, encoding="utf-8")
    analysis = onnxroof.analyze(three_fan_out_model(), targets=[str(path)])
    (report,) = analysis.targets
    assert report.spilled == ["b"]
    assert report.spill_bytes == 2 * S == 800
    spill = {n.name: n.spill_bytes for n in report.nodes if n.spill_bytes}
    assert spill == {"C": S, "F": S}


def test_a_capacity_that_holds_the_live_buffers_at_every_step_spills_nothing_and_builds_no_buffers():
    from onnxroof.memory.problem import build_problem
    from onnxroof.memory.spill import spill_plan

    problem = build_problem(onnxroof.analyze(three_fan_out_model()).cost_graph)
    total = sum(problem.buffer_bytes)  # x, a..f, y: 8 buffers of S
    assert total == 8 * S
    plan = spill_plan(problem, problem.model_order, total)
    assert (plan.extra_dram_bytes, plan.per_node, plan.spilled, plan.streamed) == (0, {}, [], [])
    assert "buffers" not in vars(problem)  # the shortcut: the Buffer objects were never built
    # the model order's peak is 4 x S (x, a, b, c at C): a capacity of the peak still takes the shortcut
    plan = spill_plan(problem, problem.model_order, 4 * S)
    assert (plan.extra_dram_bytes, plan.per_node, plan.spilled, plan.streamed) == (0, {}, [], [])
    assert "buffers" not in vars(problem)
    # a byte less and the plan is made step by step: at C one buffer must go, b (used farthest
    # ahead, at F), written once and read back at F, as at 1,400 B in the test above
    assert spill_plan(problem, problem.model_order, 4 * S - 1).extra_dram_bytes == 2 * S
    assert "buffers" in vars(problem)
