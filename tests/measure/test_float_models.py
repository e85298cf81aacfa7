import onnx
from onnx import helper

from onnxroof.measure.float_models import float_model, summed_fan_model


def test_a_float_model_is_valid_with_its_input_output_and_opsets():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["out"])]
    model = float_model(nodes, "relu-neg", (2, 3), (2, 3), output="out", opsets=[("", 17), ("com.microsoft", 1)])
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["x"] and [o.name for o in model.graph.output] == ["out"]
    assert [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim] == [2, 3]
    assert {(o.domain, o.version) for o in model.opset_import} == {("", 17), ("com.microsoft", 1)}
    assert model.ir_version == 8


def test_a_summed_fan_adds_its_links_outputs_into_y():
    length = 3
    nodes = [helper.make_node("Relu", ["x"], [f"p{i}"], name=f"relu_{i}") for i in range(length)]
    model = summed_fan_model(nodes, "fan", (4,), (4,), [], length)
    onnx.checker.check_model(model)
    total = model.graph.node[-1]
    assert total.op_type == "Sum" and list(total.input) == ["p0", "p1", "p2"] and list(total.output) == ["y"]
