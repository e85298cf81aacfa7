"""The cost DAG: records linked through the tensors they exchange, and its networkx form."""

import subprocess
import sys

import networkx as nx
from conftest import make_model
from onnx import TensorProto, helper

import onnxroof


def _split_and_join():
    """x[1,8] -> Split into a[1,4], b[1,4]; Relu(a) -> r; Concat(a, b, r) -> y[1,12]; Add(r, r) -> z."""
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=1, num_outputs=2),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("Concat", ["a", "b", "r"], ["y"], name="concat", axis=1),
        helper.make_node("Add", ["r", "r"], ["z"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "split_and_join",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 12]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_edges_group_the_tensors_each_pair_of_nodes_exchanges():
    analysis = onnxroof.analyze(_split_and_join())
    # one edge per pair of nodes: Concat reads a and b from Split (2 x 4 floats = 32 B), r from Relu;
    # Add reads r twice, one edge of 16 B
    assert list(analysis.cost_graph.edges()) == [
        ("split", "relu", {"tensors": ["a"], "bytes": 16}),
        ("split", "concat", {"tensors": ["a", "b"], "bytes": 32}),
        ("relu", "concat", {"tensors": ["r"], "bytes": 16}),
        ("relu", "add", {"tensors": ["r"], "bytes": 16}),
    ]
    tensors = analysis.tensors
    assert (tensors["a"].producer, tensors["a"].consumers) == ("split", ["relu", "concat"])
    assert (tensors["r"].producer, tensors["r"].consumers) == ("relu", ["concat", "add"])
    assert (tensors["x"].kind, tensors["x"].producer, tensors["x"].consumers) == ("input", None, ["split"])


def test_the_networkx_graph_is_the_same_dag():
    analysis = onnxroof.analyze(_split_and_join())
    graph = analysis.graph
    assert isinstance(graph, nx.DiGraph) and graph is analysis.graph  # built once
    assert list(graph) == ["split", "relu", "concat", "add"]
    assert [graph.nodes[name]["record"] for name in graph] == analysis.nodes
    assert graph.edges["split", "concat"] == {"tensors": ["a", "b"], "bytes": 32}
    assert sorted(graph.edges) == sorted((p, c) for p, c, _ in analysis.cost_graph.edges())
    assert nx.is_directed_acyclic_graph(graph)
    assert graph.graph["inputs"] == ["x"] and graph.graph["outputs"] == ["y", "z"]
    assert graph.graph["tensors"] is analysis.tensors


def test_summary_does_not_import_networkx():
    """No stage needs networkx: importing it alone costs 0.2 s of every command."""
    code = (
        "import sys; from onnxroof.cli.app import main; "
        "main(['summary', '--example', 'minigooglenet', '-q', '-o', '/dev/null']); "
        "print('networkx' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_an_embedding_gather_computes_in_its_tables_type_not_its_indices():
    # Gather(table float32 [100, 8], ids int64 [1, 3]): it reads and writes float32 rows
    import numpy as np
    from conftest import make_model
    from onnx import TensorProto, helper

    import onnxroof

    model = make_model(
        [helper.make_node("Gather", ["table", "ids"], ["rows"], name="embed")],
        [("ids", TensorProto.INT64, [1, 3])],
        [("rows", TensorProto.FLOAT, [1, 3, 8])],
        [("table", np.zeros((100, 8), np.float32))],
    )
    (record,) = onnxroof.analyze(model).nodes
    assert record.dtype == "float32"


def test_a_computed_tensor_that_data_flows_from_is_no_shape_arithmetic_at_any_size():
    # x [1, s] -> Shape -> ConstantOfShape (ones [1, s]) -> Add to x. The ones' values are known
    # while small (4,096 elements), but data flows from them: ConstantOfShape is a kernel at
    # every size (it used to launch nothing below 4,096 elements, and one kernel above). The
    # Shape only sets ConstantOfShape's shape: shape arithmetic at every size
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node(
            "ConstantOfShape",
            ["shape"],
            ["ones"],
            name="ones",
            value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]),
        ),
        helper.make_node("Add", ["x", "ones"], ["y"], name="add"),
    ]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [1, "s"])], [("y", TensorProto.FLOAT, [1, "s"])])
    for s in (4, 5000):
        records = {r.name: r for r in onnxroof.analyze(model, dims={"s": s}).nodes}
        assert not records["ones"].shape_only and records["shape"].shape_only, s
