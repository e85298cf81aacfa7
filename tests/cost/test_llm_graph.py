"""cost/llm_graph.py: how the KV-cache search reads a graph, on hand-built nodes."""

from __future__ import annotations

from onnx import TensorProto, helper

from onnxroof.cost.llm_graph import branch_condition, cache_kind, reached_nodes, returned_as, searched_nodes, value_dims

FLOAT = TensorProto.FLOAT


def readers(nodes):
    consumers = {}
    for node in nodes:
        for slot, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, slot))
    return consumers


def test_a_cache_is_a_key_or_a_value_by_its_names_last_part_first():
    assert cache_kind("past_key_values.0.key", "present.0.key") == "key"
    assert cache_kind("past_key_values.0.encoder.value", "present.0.encoder.value") == "value"
    assert cache_kind("cache_a", "out_a") == "cache"  # nothing in the names says which


def test_an_inputs_dims_are_its_symbols_and_numbers():
    info = helper.make_tensor_value_info("past", FLOAT, ["batch", 4, None, 64])
    assert value_dims(info) == ["batch", 4, None, 64]
    assert value_dims(helper.make_tensor_value_info("no_shape", FLOAT, None)) == []


def test_a_reader_through_a_copy_and_a_transpose_comes_with_the_permutation():
    nodes = [
        helper.make_node("Identity", ["k"], ["k1"]),
        helper.make_node("Transpose", ["k1"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
    ]
    ((node, slot, perm),) = reached_nodes("k", readers(nodes))
    assert (node.op_type, slot, perm) == ("MatMul", 1, [0, 2, 1])


def test_a_tensor_is_returned_through_a_cast_or_as_an_if_output():
    nodes = [helper.make_node("Cast", ["present_in"], ["present"], to=FLOAT)]
    outputs = {"present": [1, 4, 10, 64], "branch_out_returned": []}
    assert returned_as("present_in", outputs, readers(nodes), {}) == "present"
    assert returned_as("inner", outputs, {}, {"inner": "branch_out_returned"}) == "branch_out_returned"
    assert returned_as("elsewhere", outputs, {}, {}) is None


def test_a_merged_decoders_if_takes_the_branch_reading_the_past():
    def branch(name, reads):
        return helper.make_graph(
            [helper.make_node("Identity", [reads], [f"{name}_out"])],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_out", FLOAT, None)],
        )

    node = helper.make_node(
        "If", ["use_cache"], ["y"], name="merge", then_branch=branch("then", "past"), else_branch=branch("else", "x")
    )
    inputs = [
        helper.make_tensor_value_info(n, t, None)
        for n, t in (("use_cache", TensorProto.BOOL), ("past", FLOAT), ("x", FLOAT))
    ]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", FLOAT, None)])
    assert branch_condition(graph, {i.name: i for i in inputs}, {"past"}) == ("use_cache", True, "merge")
    nodes, aliases, _ = searched_nodes(graph)
    assert [n.op_type for n in nodes] == ["If", "Identity", "Identity"]  # the main graph's, then each branch's
    assert aliases == {"then_out": "y", "else_out": "y"}
