"""Costs per module (issue 21, item 3): the module tree the node names carry, each module the
sum of the nodes below it. Expected numbers are worked out by hand in the comments."""

from __future__ import annotations

import json

from conftest import make_model, run, zeros
from onnx import TensorProto, helper

import onnxroof
from onnxroof.compare.modules import module_tree, repeated_runs
from onnxroof.report.html.pages import render_html

F32 = TensorProto.FLOAT


def two_layer_model():
    """x [1, 16] -> /encoder/layer.{0,1}/fc/MatMul (16 x 16 weights) -> /encoder/layer.{0,1}/act/Relu
    -> /head/MatMul (16 x 4) -> y. Each layer: 256 MACs, 512 + 16 FLOPs, 256 params; the head 64 MACs."""
    nodes, previous, weights = [], "x", []
    for layer in range(2):
        nodes.append(
            helper.make_node("MatMul", [previous, f"w{layer}"], [f"h{layer}"], name=f"/encoder/layer.{layer}/fc/MatMul")
        )
        nodes.append(helper.make_node("Relu", [f"h{layer}"], [f"r{layer}"], name=f"/encoder/layer.{layer}/act/Relu"))
        weights.append((f"w{layer}", zeros(16, 16)))
        previous = f"r{layer}"
    nodes.append(helper.make_node("MatMul", [previous, "head"], ["y"], name="/head/MatMul"))
    weights.append(("head", zeros(16, 4)))
    return make_model(nodes, [("x", F32, [1, 16])], [("y", F32, [1, 4])], weights)


def test_children_sum_to_their_parent_and_the_root_to_the_totals():
    analysis = onnxroof.analyze(two_layer_model())
    root = module_tree(analysis)
    encoder, head = root.children
    assert (encoder.name, head.name) == ("encoder", "head")
    layer0, layer1 = encoder.children
    assert (layer0.macs, layer0.flops, layer0.params, layer0.nodes) == (256, 2 * 256 + 16, 256, 2)
    assert encoder.macs == 2 * 256 and head.macs == 64 and root.macs == 2 * 256 + 64 == analysis.totals.macs
    assert root.params == 2 * 256 + 64 == analysis.totals.params
    assert root.flops == analysis.totals.flops


def test_alike_blocks_are_shown_once_with_their_count():
    encoder = module_tree(onnxroof.analyze(two_layer_model())).children[0]
    assert [(m.name, count, label) for m, count, label in repeated_runs(encoder.children)] == [
        ("layer.0", 2, "layer.0-1")
    ]


def test_summary_by_module_prints_the_tree_and_json_has_it(capsys, tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(two_layer_model().SerializeToString())
    code, out, _ = run(capsys, "summary", str(path), "--by", "module", "--target", "l4")
    tree = out[out.index("By module") :]
    assert code == 0 and "layer.0-1" in tree and "x2" in tree and "time [l4]" in tree
    code, out, _ = run(capsys, "summary", str(path), "--by", "module", "--format", "json")
    modules = json.loads(out)["modules"]
    assert modules["macs"] == 576 and [c["name"] for c in modules["children"]] == ["encoder", "head"]
    code, out, _ = run(capsys, "summary", str(path), "--by", "module", "--depth", "1", "--format", "json")
    assert [c["children"] for c in json.loads(out)["modules"]["children"]] == [[], []]


def test_a_kernel_s_time_is_split_over_its_modules_and_sums_to_the_latency():
    analysis = onnxroof.analyze(two_layer_model(), targets=["l4"])
    root = module_tree(analysis)
    assert abs(root.time_s["l4"] - analysis.targets[0].latency_s) < 1e-15
    assert abs(sum(c.time_s["l4"] for c in root.children) - root.time_s["l4"]) < 1e-15


def test_names_without_scopes_fall_back_to_op_types(capsys):
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--by", "module")
    assert code == 0 and "By op type (the node names carry no module scopes" in out
    code, out, _ = run(capsys, "summary", "--example", "shallownet", "--by", "op", "--format", "json")
    ops = {entry["name"]: entry for entry in json.loads(out)["ops"]}
    assert ops["Conv"]["macs"] == 884_736 and "modules" not in json.loads(out)


def test_the_report_has_a_collapsible_module_tree():
    html = render_html(onnxroof.analyze(two_layer_model()))
    section = html[html.index('id="modules"') : html.index("</section>", html.index('id="modules"'))]
    assert (
        section.count("<details") == 1 + 2 + 1 + 2
    )  # the model, encoder and head, one row for both layers, fc and act
    assert "layer.0-1" in section and "x2" in section
    assert 'id="modules"' not in render_html(
        onnxroof.analyze(__import__("onnxroof.core.examples", fromlist=["x"]).build_example("shallownet"))
    )


def test_the_dynamo_exporter_s_metadata_gives_the_path():
    # torch.onnx.export(dynamo=True) names nodes node_add_3 and writes each module's full dotted path
    node = helper.make_node("Relu", ["x"], ["y"], name="node_relu_0")
    entry = node.metadata_props.add()
    entry.key, entry.value = "pkg.torch.onnx.name_scopes", "['', 'm', 'm.layers.0', 'm.layers.0.act', 'relu']"
    analysis = onnxroof.analyze(make_model([node], [("x", F32, [1, 8])], [("y", F32, [1, 8])]))
    root = module_tree(analysis)
    path = [root.children[0].name, root.children[0].children[0].name, root.children[0].children[0].children[0].name]
    assert path == ["m", "layers.0", "act"] and root.children[0].flops == 8


def test_a_tied_weight_counts_once_in_the_module_tree_through_its_folded_copy():
    # the legacy exporter's tied LM head: the embedding table E [10, 4] is gathered by /embed and
    # its transpose, folded to a constant, multiplies by /lm_head. The model has 40 parameters:
    # /embed counts them (it reads E first), /lm_head none, and the root sums to the totals
    nodes = [
        helper.make_node("Gather", ["E", "ids"], ["h"], name="/embed/Gather"),
        helper.make_node("Transpose", ["E"], ["Et"], name="/lm_head/Transpose", perm=[1, 0]),
        helper.make_node("MatMul", ["h", "Et"], ["logits"], name="/lm_head/MatMul"),
    ]
    model = make_model(
        nodes, [("ids", TensorProto.INT64, [1, 3])], [("logits", F32, [1, 3, 10])], [("E", zeros(10, 4))]
    )
    analysis = onnxroof.analyze(model)
    root = module_tree(analysis)
    params = {child.name: child.params for child in root.children}
    assert analysis.totals.params == root.params == 40
    assert params == {"embed": 40, "lm_head": 0}


def test_the_exporter_s_own_scope_is_not_a_module():
    # torch's dynamo exporter files the nodes it made outside any module under a hook's name
    node = helper.make_node("Relu", ["x"], ["y"], name="node_relu_0")
    entry = node.metadata_props.add()
    entry.key, entry.value = "pkg.torch.onnx.name_scopes", "['_empty_nn_module_stack_from_metadata_hook', 'relu']"
    root = module_tree(onnxroof.analyze(make_model([node], [("x", F32, [1, 8])], [("y", F32, [1, 8])])))
    assert not root.children and root.flops == 8


def test_the_roofline_can_colour_its_dots_by_top_level_module():
    analysis = onnxroof.analyze(two_layer_model(), targets=["l4"])
    html = render_html(analysis, colour_by="module")
    legend = html[html.index('id="roofline-0"') - 3000 : html.index('id="roofline-0"')]
    assert "encoder" in legend and "head" in legend
    assert 'data-op="encoder"' in html and 'data-op="head"' in html
    assert 'data-op="MatMul"' in render_html(analysis)  # by op type unless asked


def test_a_table_gathered_at_constant_positions_counts_where_its_gather_is():
    """/emb/pos/Gather reads a 16 x 8 position table at the constant positions 0..3 (folded: the
    analysis knows its output), /emb/Add adds it to x [1, 4, 8]. The table's 16·8 = 128 params
    belong to emb/pos, where the Gather is, not to the Add that reads the folded rows (issue 47)."""
    import numpy as np
    from conftest import make_model
    from onnx import TensorProto, helper

    from onnxroof.compare.modules import descendants, module_tree
    from onnxroof.pipeline import analyze

    nodes = [
        helper.make_node("Gather", ["table", "positions"], ["rows"], name="/emb/pos/Gather"),
        helper.make_node("Add", ["x", "rows"], ["y"], name="/emb/Add"),
    ]
    model = make_model(
        nodes,
        [("x", TensorProto.FLOAT, [1, 4, 8])],
        [("y", TensorProto.FLOAT, [1, 4, 8])],
        [("table", np.ones((16, 8), np.float32)), ("positions", np.arange(4, dtype=np.int64))],
    )
    analysis = analyze(model)
    modules = {m.path: m for m in descendants(module_tree(analysis))}
    assert modules["emb/pos"].params == 16 * 8
    assert module_tree(analysis).params == analysis.totals.params == 16 * 8
