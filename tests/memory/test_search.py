"""The memory stage's order search: on a three-branch DAG it finds an order whose peak, derived by
hand, is lower than the model order's, and the order it emits is a topological order."""

from __future__ import annotations

from onnx import TensorProto, helper

import onnxroof

from conftest import make_model, zeros

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
