"""The graph view on real exports (issue 47): the views a page opens on fit the page's width, the
nodes an optimiser wrote with no scope are drawn in their layer, dead ends share one box, and
every fused-kernel outline is one of the kernels ``summary --format json`` lists."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from onnx import TensorProto, helper

import onnxroof
from onnxroof.compare.modules import module_of
from onnxroof.report.graph.adopt import adopted_paths
from onnxroof.report.graph.costs import target_costs
from onnxroof.report.graph.fold import drawn, folded_views, start_view
from onnxroof.report.graph.scene import build_scene

EXPORTS = Path(__file__).resolve().parents[1] / "data" / "exports"
CACHE = {"decoder_sequence_length": 1, "past_decoder_sequence_length": 127}
DIMS = {  # what each export needs bound (tests/data/exports/README.md says how each was built)
    "bert-optimum": {"sequence_length": 128},
    "bert-static-small": {},
    "gpt2-static-small": {},
    "gpt2-static-48": {},
    "t5-optimum-decoder-merged": CACHE | {"encoder_sequence_length": 256},
    "t5-optimum-decoder-with-past": CACHE | {"encoder_sequence_length": 256},
    "tf2onnx-keras-dynamic": {},
    "tf2onnx-keras-fixed": {},
    "timm-resnet18": {},
    "whisper-optimum-decoder-merged": CACHE | {"encoder_sequence_length": 1500},
    "whisper-optimum-decoder-with-past": CACHE | {"encoder_sequence_length": 1500},
    "yolov8n-ultralytics": {},
}
# the graph's frame on a 1,280 px wide window: the page's margins and the panel's border take
# 58 px (measured in Chromium: test_graph_view_browser's screenshots check it on screen)
FRAME_WIDTH = 1222


def widest_rank(scene) -> float:
    """The widest layer of a laid-out view: from its first box's left edge to its last's right
    (the boxes of a layer share their top)."""
    spans: dict[float, list[float]] = defaultdict(lambda: [float("inf"), 0.0])
    for box in scene.boxes:
        span = spans[round(box.y, 1)]
        span[0], span[1] = min(span[0], box.x), max(span[1], box.x + box.width)
    return max(right - left for left, right in spans.values())


def test_every_export_covers_the_folder():
    assert sorted(DIMS) == sorted(p.name.removesuffix(".onnx.gz") for p in EXPORTS.glob("*.onnx.gz"))


@pytest.mark.parametrize("name", sorted(DIMS))
def test_the_views_a_page_opens_on_fit_1280_pixels(export, name):
    analysis = onnxroof.analyze(export(name), targets=["l4"], dims=DIMS[name] or None)
    views = folded_views(analysis)
    costs = target_costs(analysis)
    for view in {id(v): v for v in (views[0], start_view(views))}.values():
        scene = build_scene(view, analysis, costs)
        assert widest_rank(scene) <= FRAME_WIDTH - 2 * 12, (name, view.title)  # the layout's margins


def test_the_unscoped_splits_of_a_dynamo_gpt2_are_drawn_in_their_layers(export):
    # torch.onnx's optimiser writes the Split of each layer's fused Q/K/V projection with no scope;
    # it reads the layer's c_attn and its three outputs are read by that layer's attention only,
    # so it is drawn in h.N/attn, not at the root (48 layers: 47 of them in one row)
    analysis = onnxroof.analyze(export("gpt2-static-small"))
    shown = {i: module_of(r) for i, r in enumerate(analysis.nodes) if drawn(r)}
    placed = adopted_paths(shown, analysis.nodes, analysis.cost_graph.outputs)
    splits = [i for i in shown if analysis.nodes[i].op_type == "Split"]
    assert [shown[i] for i in splits] == [(), ()]
    assert [placed[i] for i in splits] == [("m", "transformer", f"h.{n}", "attn") for n in (0, 1)]
    assert all(placed[i] == shown[i] for i in shown if i not in splits)  # nothing else moves


def _taps(count: int):
    """x -> Relu -> Relu -> y, with ``count`` dead-end Sigmoids reading the first Relu (a debug tap:
    no graph output reads them)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="/body/relu_0"),
        helper.make_node("Relu", ["a"], ["y"], name="/body/relu_1"),
    ]
    nodes += [helper.make_node("Sigmoid", ["a"], [f"tap{i}"], name=f"tap_{i}") for i in range(count)]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
    )
    return helper.make_model(graph)


def test_dead_ends_share_one_side_outputs_box():
    analysis = onnxroof.analyze(_taps(5))
    top = folded_views(analysis)[0]
    boxes = [(item.kind, item.label, len(item.nodes)) for item in top.items if item.kind in ("node", "module")]
    # the 5 taps read /body's first Relu: drawn in /body (opened in the top view), one box for the 5
    assert boxes == [("node", "Relu", 1), ("node", "Relu", 1), ("module", "5 side outputs", 5)]
    # one tap alone is drawn as itself, in /body's view
    (body,) = [view for view in folded_views(onnxroof.analyze(_taps(1))) if view.title == "body"]
    assert [item.label for item in body.items if item.kind == "node"] == ["Relu", "Relu", "Sigmoid"]


def test_a_single_node_box_does_not_repeat_its_op_type(export):
    # ultralytics names a node /model.0/conv/Conv: its box says "Conv" over "model.0/conv", the
    # module it is in, not "Conv" twice
    analysis = onnxroof.analyze(export("yolov8n-ultralytics"), targets=["l4"])
    scene = build_scene(folded_views(analysis)[0], analysis, target_costs(analysis))
    nodes = [box.lines for box in scene.boxes if box.item.kind == "node"]
    assert nodes[0] == ["Conv", "model.0/conv"]
    assert all(lines[1] != lines[0] for lines in nodes), [lines for lines in nodes if lines[1] == lines[0]]


@pytest.mark.parametrize("name", ["bert-static-small", "bert-optimum", "yolov8n-ultralytics"])
def test_every_fused_outline_is_a_kernel_of_the_summary_json(export, name, tmp_path):
    import json

    from onnxroof.cli.app import main

    path, dims = export(name), DIMS[name]
    out = tmp_path / "summary.json"
    flags = [arg for key, value in dims.items() for arg in ("--dim", f"{key}={value}")]
    assert main(["summary", str(path), "--target", "l4", *flags, "--format", "json", "-o", str(out), "-q"]) == 0
    kernels = [set(kernel["nodes"]) for kernel in json.loads(out.read_text())["targets"][0]["nodes"]]
    kernel_of = {node: number for number, kernel in enumerate(kernels) for node in kernel}
    analysis = onnxroof.analyze(path, targets=["l4"], dims=dims or None)
    costs, records, outlined = target_costs(analysis), analysis.nodes, set()
    for view in folded_views(analysis):
        scene = build_scene(view, analysis, costs)
        items = {item.key: item for item in view.items}
        for outline in scene.outlines:
            # the first block's nodes of each box it goes round: all of one JSON kernel, and only its
            names = {
                records[i].name
                for key in outline.boxes
                for i in items[key].nodes[: len(items[key].nodes) // items[key].repeats]
            }
            assert len({kernel_of[n] for n in names}) == 1, (view.title, sorted(names))
            assert records[outline.kernel].name in kernels[kernel_of[names.pop()]]
            outlined.add(kernel_of[records[outline.kernel].name])
    if name.startswith("bert"):
        # the first layer's fused attention (Q·K^T, mask, softmax, ·V: its own view, or the run
        # unfolded in place) is outlined; on the dynamo export so are its three projections that
        # read one input (horizontally fused: 3 MatMul+Add and their Reshapes, in one kernel)
        op_of = {record.name: record.op_type for record in records}
        first = [k for k in kernels if any(op_of[n] == "Softmax" for n in k)][0]
        assert kernels.index(first) in outlined
        qkv = [k for k in kernels if sum(op_of[n] == "MatMul" for n in k) == 3]
        assert len(qkv) == (2 if name == "bert-static-small" else 0)  # one a layer
        assert all(kernels.index(k) in outlined for k in qkv[:1])


def test_a_run_shows_one_block_in_the_graph_as_in_the_module_table(export):
    from onnxroof.compare.modules import module_tree, repeated_runs, walk
    from onnxroof.core.units import seconds

    # ultralytics' SPPF calls one MaxPool module three times: TorchScript names them m, m_1, m_2;
    # alike (same op, same shape), they are one run in the graph and in the module table
    analysis = onnxroof.analyze(export("yolov8n-ultralytics"), targets=["l4"])
    sppf = next(m for m, _ in walk(module_tree(analysis)) if m.path == "model.9")
    assert [(label, count) for _, count, label in repeated_runs(sppf.children)] == [
        ("cv1", 1),
        ("m, m_1-2", 3),
        ("cv2", 1),
        ("(its own nodes)", 1),  # the Concat
    ]
    blocks = {m.path: m for m, _ in walk(module_tree(analysis)) if m.path in ("model.4/m.0", "model.4/m.1")}
    assert blocks["model.4/m.0"].signature() == blocks["model.4/m.1"].signature()  # alike: one row, x2
    # the table's row is one block (m.0); the graph's box says "each block:" and the same time
    scene = build_scene(folded_views(analysis)[0], analysis, target_costs(analysis))
    lines = {box.lines[1]: box.lines for box in scene.boxes if box.item.kind == "module"}
    one = blocks["model.4/m.0"]
    assert lines["model.4/m.0"] == [
        "m.0-1 ×2",
        "model.4/m.0",
        f"each block: {one.nodes} nodes · {seconds(one.time_s['l4'])}",
    ]
    assert lines["model.9/m"][0] == "m, m_1-2 ×3"
    assert lines["model.9/m"][2].startswith("each block: 1 node · ")


@pytest.mark.parametrize("name", ["bert-optimum", "bert-static-small"])
def test_the_readme_s_graph_module_example_works_on_real_berts(export, name, tmp_path):
    from onnxroof.cli.app import main

    # README: onnxroof graph bert.onnx --module encoder/layer.0 -o l0.svg; the dynamo export's
    # paths start with its wrapper's "m/", which may be left out
    flags = [arg for key, value in DIMS[name].items() for arg in ("--dim", f"{key}={value}")]
    out = tmp_path / "l0.svg"
    prefix = "m/" if name == "bert-static-small" else ""
    for module, title in [
        ("encoder/layer.0", "encoder/layer.0 (the first of 2 alike blocks)"),
        ("encoder", "encoder"),
        ("encoder/layer.1", "encoder/layer.1"),
        ("encoder/layer.0/attention", "encoder/layer.0/attention"),
    ]:
        assert main(["graph", str(export(name)), *flags, "--module", module, "-o", str(out), "-q"]) == 0, module
        assert f"<title>{prefix}{title}</title>" in out.read_text(), module
