"""Model-local functions: inlined for costing, and a model whose inlining would blow up refused in
one line, exit 2 (issue 32, item 1). Node counts worked out by hand."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

import onnxroof
import onnxroof.frontend.functions as functions
from onnxroof.cli.app import main
from onnxroof.core.errors import ModelError
from onnxroof.frontend.functions import inlined_node_count

OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]


def doubling_model(depth: int) -> onnx.ModelProto:
    """f0 is one Relu; f(i) calls f(i-1) twice; the graph calls f(depth) once: 2^depth Relu inlined."""
    made = [helper.make_function("local", "f0", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])], OPSETS[:1])]
    for i in range(1, depth + 1):
        calls = [
            helper.make_node(f"f{i - 1}", ["x"], ["h"], domain="local"),
            helper.make_node(f"f{i - 1}", ["h"], ["y"], domain="local"),
        ]
        made.append(helper.make_function("local", f"f{i}", ["x"], ["y"], calls, OPSETS))
    graph = helper.make_graph(
        [helper.make_node(f"f{depth}", ["x"], ["y"], domain="local", name="call")],
        "doubling",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
    )
    model = helper.make_model(graph, opset_imports=OPSETS, functions=made)
    model.ir_version = 8
    return model


def test_the_inlined_size_is_counted_from_the_call_graph():
    assert inlined_node_count(doubling_model(3)) == 8  # f3 -> 2 f2 -> 4 f1 -> 8 f0 -> 8 Relu
    assert inlined_node_count(doubling_model(40), limit=10**15) == 2**40
    assert inlined_node_count(doubling_model(40)) == functions.MAX_INLINED_NODES + 1  # past the limit: stops


def test_a_small_model_with_functions_is_inlined_and_costed():
    analysis = onnxroof.analyze(doubling_model(3))
    # 8 Relu on 16 floats: 8 x 16 = 128 FLOPs
    assert analysis.totals.nodes == 8 and analysis.totals.flops == 128


def test_a_model_inlining_past_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(functions, "MAX_INLINED_NODES", 7)
    onnxroof.analyze(doubling_model(2))  # 4 nodes: fine
    with pytest.raises(ModelError, match=r"would make more than 7 nodes"):
        onnxroof.analyze(doubling_model(3))  # 8 nodes


def test_the_41_function_model_of_the_issue_exits_2_in_one_line(tmp_path, capsys):
    path = tmp_path / "doubling.onnx"
    path.write_bytes(doubling_model(40).SerializeToString())  # 41 functions: 2^40 Relu once inlined
    assert path.stat().st_size < 8_000
    assert main(["summary", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        f"onnxroof: error: doubling.onnx: inlining its 41 model-local functions would make more than "
        f"{functions.MAX_INLINED_NODES:,} nodes (functions that call each other several times over "
        "multiply); onnxroof refuses models past that: check the export, or inline the functions "
        "yourself (onnx.inliner) if the model really is that large"
    )


def test_a_function_calling_itself_is_refused():
    model = doubling_model(2)
    model.functions[1].node[1].op_type = "f2"  # f1 calls f0, then f2, which calls f1
    with pytest.raises(ModelError, match=r"model-local function 'f1' calls itself \(through 'f2'\)"):
        inlined_node_count(model)


def test_the_limit_keeps_the_benchmark_chain_and_refuses_the_adversarial_bomb():
    # benchmarks/scale.py's chain has 100,000 nodes; 2^17 = 131,072 Relus from doubling functions
    # took 500 MB in report --target l4 (issue 43's budget) and 2^19 = 524,288 reached 2 GB: both
    # refused before inlining, the count stopping one past the limit
    assert 100_000 < functions.MAX_INLINED_NODES < 2**17
    assert inlined_node_count(doubling_model(16)) == 2**16
    assert inlined_node_count(doubling_model(17)) == functions.MAX_INLINED_NODES + 1
    with pytest.raises(ModelError, match=r"would make more than 120,000 nodes"):
        onnxroof.analyze(doubling_model(17))
