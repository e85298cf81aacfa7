"""cost/tensor_parallel.py: the column- and row-parallel blocks read from a hand-built MLP's
dataflow (x [1, 4, 64] -> MatMul W1 [64, 256] -> Relu -> MatMul W2 [256, 64])."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxroof import analyze
from onnxroof.cost.tensor_parallel import find_structure


def mlp(second_columns: int = 64):
    weights = [
        numpy_helper.from_array(np.zeros((64, 256), np.float32), "w1"),
        numpy_helper.from_array(np.zeros((256, second_columns), np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="up"),
        helper.make_node("Relu", ["h"], ["a"], name="act"),
        helper.make_node("MatMul", ["a", "w2"], ["y"], name="down"),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, second_columns])],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_mlp_is_one_block_from_its_up_projection_to_its_down_projection():
    structure = find_structure(analyze(mlp()).cost_graph)
    (block,) = structure.blocks
    assert (block.kind, block.first, block.second, block.inner) == ("mlp", ("up",), "down", ("act",))
    assert block.hidden == 64  # the width it reads and writes
    assert block.columns == {"up": 256, "down": 256}  # up makes 256 columns; down contracts 256 rows
    assert block.heads == {}  # no score product: no heads
    assert structure.replicated == ()  # every node with work is in the block


def test_a_down_projection_to_another_width_makes_no_block():
    # [.., 64] in, [.., 32] out: not a block that reads and writes the residual stream's width
    structure = find_structure(analyze(mlp(second_columns=32)).cost_graph)
    assert structure.blocks == ()
    assert set(structure.replicated) == {"up", "act", "down"}
    assert structure.notes and "not split by tensor parallelism" in structure.notes[0]
