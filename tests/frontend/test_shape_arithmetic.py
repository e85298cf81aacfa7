"""frontend/shape_arithmetic.py: which computed tensors are settings (shape arithmetic), on
hand-made node lists."""

from __future__ import annotations

from onnx import helper

from onnxroof.core.nodes import NodeFields
from onnxroof.frontend.shape_arithmetic import settings_tensors


def node(name: str, op_type: str, inputs: list[str], outputs: list[str], attributes=()) -> NodeFields:
    return NodeFields(name, op_type, "", inputs, outputs, attributes)


# x -> Shape -> Gather(axis 0 of the shape) -> Concat with a constant -> Reshape's shape
CHAIN = [
    node("s", "Shape", ["x"], ["shape"]),
    node("g", "Gather", ["shape", "zero"], ["batch"]),
    node("c", "Concat", ["batch", "minus_one"], ["target"]),
    node("r", "Reshape", ["x", "target"], ["y"]),
]


def test_a_reshape_target_computed_from_a_shape_is_settings_all_the_way_up():
    # every tensor of the chain up to the Reshape's slot 1 is read only as a setting
    assert settings_tensors(CHAIN, {"zero", "minus_one"}, {"y"}) == {"shape", "batch", "target"}


def test_a_shape_derived_tensor_data_flows_from_is_no_setting():
    # the Concat's result also goes into an Add with the data: it and what it is made from are data
    fields = [*CHAIN, node("a", "Add", ["y", "target"], ["z"])]
    assert settings_tensors(fields, {"zero", "minus_one"}, {"z"}) == set()


def test_a_graph_output_is_data():
    assert settings_tensors(CHAIN[:1], set(), {"shape"}) == set()


def test_a_tensor_a_subgraph_reads_from_its_outer_scope_is_data():
    # an If whose branch reads "target": the Concat making it is no shape arithmetic, the Gather
    # feeding only that Concat is not either (its reader is data)
    branch = helper.make_graph([helper.make_node("Identity", ["target"], ["t"])], "then", [], [])
    attribute = helper.make_attribute("then_branch", branch)
    fields = [*CHAIN, node("if", "If", ["cond"], ["out"], [attribute])]
    assert settings_tensors(fields, {"zero", "minus_one"}, {"y", "out"}) == set()
