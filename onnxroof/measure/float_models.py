"""The wrapper of every model ``onnxroof calibrate`` times: nodes from one float32 input ``x`` to
one float32 output, at the opset (17) and IR version (8) that older onnxruntimes still run.

>>> from onnx import helper
>>> model = float_model([helper.make_node("Relu", ["x"], ["y"])], "relu", (2, 3), (2, 3))
>>> [i.name for i in model.graph.input], [o.name for o in model.graph.output], model.ir_version
(['x'], ['y'], 8)
"""

from __future__ import annotations

from collections.abc import Sequence

OPSETS = (("", 17),)  # (domain, version): the default domain's opset 17


def float_model(
    nodes: list,
    name: str,
    input_shape: Sequence[int],
    output_shape: Sequence[int],
    initializers: Sequence = (),
    output: str = "y",
    opsets: Sequence[tuple[str, int]] = OPSETS,
    ir_version: int = 8,
):
    """``nodes`` as the graph ``name``: input ``x`` of ``input_shape``, output ``output`` of
    ``output_shape`` (both float32), the ``initializers`` (TensorProtos), the ``opsets``."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, output_shape)],
        list(initializers),
    )
    opset_imports = [helper.make_opsetid(domain, version) for domain, version in opsets]
    return helper.make_model(graph, opset_imports=opset_imports, ir_version=ir_version)


def summed_fan_model(
    nodes: list, name: str, input_shape: Sequence[int], output_shape: Sequence[int], initializers: list, length: int
):
    """A fan: ``nodes`` whose ``length`` links each end in an output ``p{index}``, the links'
    outputs summed into ``y`` (so that the run returns one output whatever the length)."""
    from onnx import helper

    nodes.append(helper.make_node("Sum", [f"p{index}" for index in range(length)], ["y"], name="sum"))
    return float_model(nodes, name, input_shape, output_shape, initializers)
