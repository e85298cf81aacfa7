"""Build a long MatMul/Add/Relu chain (the scale case peers choke on) and time each stage.

    python benchmarks/chain.py 30000
"""

from __future__ import annotations

import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def chain_model(nodes: int, width: int = 16) -> onnx.ModelProto:
    graph_nodes, initializers = [], [numpy_helper.from_array(np.zeros((width, width), np.float32), "w"),
                                      numpy_helper.from_array(np.zeros(width, np.float32), "b")]
    x = "x"
    for i in range(nodes // 3):
        graph_nodes += [
            helper.make_node("MatMul", [x, "w"], [f"m{i}"], name=f"matmul_{i}"),
            helper.make_node("Add", [f"m{i}", "b"], [f"a{i}"], name=f"add_{i}"),
            helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu_{i}"),
        ]
        x = f"r{i}"
    graph = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def elementwise_chain_model(nodes: int, width: int = 16) -> onnx.ModelProto:
    """``nodes`` Relu one after another on a 1 x ``width`` tensor: one kernel under a target whose
    policy fuses elementwise ops (issue 32: fusion was quadratic in a kernel's length)."""
    graph_nodes, x = [], "x"
    for i in range(nodes):
        graph_nodes.append(helper.make_node("Relu", [x], [f"r{i}"], name=f"relu_{i}"))
        x = f"r{i}"
    graph = helper.make_graph(graph_nodes, "relu_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def fan_in_model(branches: int, width: int = 16) -> onnx.ModelProto:
    """One ``Sum`` of ``branches`` Relu, each reading the input (issue 43: a join of many inputs
    made fusion quadratic, and its findings cost five analyses)."""
    graph_nodes = [helper.make_node("Relu", ["x"], [f"r{i}"], name=f"relu_{i}") for i in range(branches)]
    graph_nodes.append(helper.make_node("Sum", [f"r{i}" for i in range(branches)], ["y"], name="sum"))
    graph = helper.make_graph(graph_nodes, "fan_in", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


if __name__ == "__main__":
    import onnxroof
    from onnxroof.cost.graph import cost_graph
    from onnxroof.frontend.shapes import infer_shapes

    count = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    model = chain_model(count)
    start = time.perf_counter()
    onnx.shape_inference.infer_shapes(model, data_prop=True)
    bare = time.perf_counter() - start
    start = time.perf_counter()
    shapes = infer_shapes(model, model.graph.node)
    mid = time.perf_counter()
    cost_graph(model, shapes)
    end = time.perf_counter()
    start2 = time.perf_counter()
    onnxroof.analyze(model)
    total = time.perf_counter() - start2
    print(f"{len(model.graph.node)} nodes: bare onnx inference {bare:.2f}s; onnxroof shapes {mid - start:.2f}s, "
          f"graph {end - mid:.2f}s; analyze() {total:.2f}s")
