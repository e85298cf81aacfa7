"""The graph view: the layered layout on tiny graphs (layers, gaps, dummy lanes, worked out by
hand), the folding by module tree and by structure, the colours against `summary --format json`,
and the `graph` command."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from models import random_dag, transformer_like  # noqa: E402  (same folder)
from onnx import TensorProto, helper

from onnxroof import analyze
from onnxroof.cli.app import main
from onnxroof.core.examples import build_example
from onnxroof.report.graph.fold import folded_views, start_view
from onnxroof.report.graph.layout import BOX_GAP, LAYER_GAP, MARGIN, layered_layout, pack_layer
from onnxroof.report.graph.views import drawn_views, render_graph_svg

SQUARE = (40.0, 20.0)


def _overlap(a, b) -> bool:
    return a.x < b.x + b.width and b.x < a.x + a.width and a.y < b.y + b.height and b.y < a.y + a.height


def _segment_crosses(box, p, q) -> bool:
    """Whether the segment p-q passes through the inside of ``box`` (Liang-Barsky clipping
    against the box shrunk by half a pixel: touching its border is not passing through)."""
    low, high = 0.0, 1.0
    dx, dy = q[0] - p[0], q[1] - p[1]
    for step, room in (
        (-dx, p[0] - (box.x + 0.5)),
        (dx, (box.x + box.width - 0.5) - p[0]),
        (-dy, p[1] - (box.y + 0.5)),
        (dy, (box.y + box.height - 0.5) - p[1]),
    ):
        if step == 0:
            if room < 0:
                return False
            continue
        t = room / step
        if step < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return low < high


def assert_clean_layout(layout) -> None:
    boxes = list(layout.boxes.values())
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not _overlap(a, b), (a, b)
    for route in layout.routes:
        for box in boxes:
            if box.key in (route.source, route.target):
                continue
            for p, q in zip(route.points, route.points[1:]):
                assert not _segment_crosses(box, p, q), (route, box)


# ----------------------------------------------------------------------------------- layout


def test_a_diamond_takes_three_layers_with_its_branches_side_by_side():
    layout = layered_layout({k: SQUARE for k in "abcd"}, [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
    box = layout.boxes
    assert [box[k].layer for k in "abcd"] == [0, 1, 1, 2]
    # layers 20 px high, LAYER_GAP apart, from the margin
    assert [box[k].y for k in "abcd"] == [
        MARGIN,
        MARGIN + 20 + LAYER_GAP,
        MARGIN + 20 + LAYER_GAP,
        MARGIN + 2 * (20 + LAYER_GAP),
    ]
    # b and c exactly BOX_GAP apart, a and d centred above and below them
    assert box["c"].x - (box["b"].x + 40) == pytest.approx(BOX_GAP)
    middle = (box["b"].centre_x + box["c"].centre_x) / 2
    assert box["a"].centre_x == pytest.approx(middle) and box["d"].centre_x == pytest.approx(middle)
    assert_clean_layout(layout)


def test_a_long_edge_gets_a_dummy_lane_beside_the_box_it_skips():
    # a -> b -> c and a -> c: c is two layers below a, so a -> c crosses layer 1 through a dummy
    layout = layered_layout({k: SQUARE for k in "abc"}, [("a", "b"), ("b", "c"), ("a", "c")])
    assert [layout.boxes[k].layer for k in "abc"] == [0, 1, 2]
    assert len(layout.layers[1]) == 2 and any(key.startswith("~") for key in layout.layers[1])
    long = next(r for r in layout.routes if (r.source, r.target) == ("a", "c"))
    assert len(long.points) == 4  # a's bottom, the lane's top and bottom in layer 1, c's top
    lane_x = long.points[1][0]
    b = layout.boxes["b"]
    assert lane_x >= b.x + b.width + BOX_GAP or lane_x <= b.x - BOX_GAP  # beside b, a gap away
    assert_clean_layout(layout)


def test_a_cycle_is_drawn_with_one_edge_turned_back():
    layout = layered_layout({k: SQUARE for k in "ab"}, [("a", "b"), ("b", "a")])
    assert [layout.boxes[k].layer for k in "ab"] == [0, 1]
    back = next(r for r in layout.routes if r.source == "b")
    assert back.points[0][1] == layout.boxes["b"].y  # it leaves b at its top, going up to a's bottom
    assert back.points[-1][1] == layout.boxes["a"].y + 20


def test_a_source_sits_just_above_what_reads_it():
    # s feeds only d, three layers down a chain: it is drawn in layer 2, not at the top
    layout = layered_layout({k: SQUARE for k in "abcds"}, [("a", "b"), ("b", "c"), ("c", "d"), ("s", "d")])
    assert layout.boxes["s"].layer == 2


def test_packing_keeps_order_and_gaps_nearest_the_wanted_centres():
    # widths 20 and 40, gap 10: centres at least 30 + 10 = 40 apart; both want 100: split the move
    assert pack_layer([100, 100], [20, 40], gap=10) == [80.0, 120.0]
    # a heavier box moves less: weights 3 and 1 -> the first moves a quarter of the 40
    assert pack_layer([100, 100], [20, 40], weights=[3, 1], gap=10) == [90.0, 130.0]


def test_crossings_are_undone_by_the_sweeps():
    # a1 feeds b2, a2 feeds b1: given in crossed order, the sweeps swap one layer
    layout = layered_layout({"a1": SQUARE, "a2": SQUARE, "b1": SQUARE, "b2": SQUARE}, [("a1", "b2"), ("a2", "b1")])
    box = layout.boxes
    assert (box["a1"].x < box["a2"].x) == (box["b2"].x < box["b1"].x)


# ----------------------------------------------------------------------------------- folding


@pytest.fixture(scope="module")
def googlenet():
    return analyze(build_example("minigooglenet"), targets=["h100-sxm", "myriad-x"])


def _node_boxes(views):
    """node name -> (view, its placed box), from the drawn views' SVG."""
    found = {}
    for view in views:
        root = ET.fromstring(f'<svg xmlns="http://www.w3.org/2000/svg">{view.body}</svg>')
        for group in root.iter("{http://www.w3.org/2000/svg}g"):
            if group.get("data-gnode") is not None:
                rect = group.find("{http://www.w3.org/2000/svg}rect")
                found[int(group.get("data-gnode"))] = (
                    view,
                    group,
                    {k: float(rect.get(k)) for k in ("x", "y", "width", "height")},
                )
    return found


def test_inception_branches_are_side_by_side_between_their_input_and_their_concat(googlenet):
    from onnxroof.report.graph.costs import target_costs
    from onnxroof.report.graph.scene import lay_out

    (view,) = folded_views(googlenet)  # 74 nodes, no scopes: one view, every node a box
    layout, _ = lay_out(view, target_costs(googlenet))
    index = {r.name: f"n{i}" for i, r in enumerate(googlenet.nodes)}
    box = {name: layout.boxes[key] for name, key in index.items()}
    # the first inception module: activation_0 feeds a 1x1 branch (conv2d_1 -> ... -> activation_1)
    # and a 3x3 branch (conv2d_2 -> ... -> activation_2), both read by concatenate_0
    for one, three in (
        ("conv2d_1", "conv2d_2"),
        ("batch_normalization_1", "batch_normalization_2"),
        ("activation_1", "activation_2"),
    ):
        assert box[one].layer == box[three].layer
        assert box[one].x + box[one].width <= box[three].x or box[three].x + box[three].width <= box[one].x
        assert box["activation_0"].layer < box[one].layer < box["concatenate_0"].layer
    assert box["concatenate_0"].layer == box["activation_0"].layer + 4
    assert_clean_layout(layout)


def _scoped(model):
    """transformer_like's names as an exporter with modules writes them: /encoder/layer.3/q/matmul."""
    for node in model.graph.node:
        match = re.match(r"layer(\d+)\.(.*)", node.name)
        if match:
            node.name = f"/encoder/layer.{match.group(1)}/" + match.group(2).replace(".", "/")
    return model


def test_alike_blocks_are_one_box_with_their_count_and_open_on_the_first():
    analysis = analyze(_scoped(transformer_like(layers=4, seq=16, dim=32, heads=2, ffn=64)), targets=["h100-sxm"])
    views = folded_views(analysis)
    top = views[0]
    (blocks,) = [item for item in top.items if item.kind == "module"]
    assert (blocks.label, blocks.repeats) == ("layer.0-3", 4)
    drawn = [r for r in analysis.nodes if r.status != "constant" and not r.shape_only]
    assert len(blocks.nodes) == len(drawn)  # the box holds all four blocks' nodes
    opened = next(v for v in views if v.key == blocks.view)
    assert opened.title == "encoder/layer.0 (the first of 4 alike blocks)"
    inside = [i for item in opened.items if item.kind == "node" for i in item.nodes]
    assert all(analysis.nodes[i].name.startswith("/encoder/layer.0/") for i in inside)
    assert len(inside) == len(drawn) // 4
    # every node is drawn in one view only (a variant unfolding a module in place draws it again)
    shown = [
        i for view in views if view.unfolds is None for item in view.items if item.kind == "node" for i in item.nodes
    ]
    assert len(shown) == len(set(shown))


def test_a_run_unfolds_in_place_on_its_first_block_and_the_page_opens_there():
    analysis = analyze(_scoped(transformer_like(layers=4, seq=16, dim=32, heads=2, ffn=64)), targets=["h100-sxm"])
    views = folded_views(analysis)
    top = views[0]
    (blocks,) = [item for item in top.items if item.kind == "module"]
    unfolded = next(v for v in views if v.key == blocks.variant)
    assert unfolded.unfolds == (top.key, blocks.key)
    drawn = [r for r in analysis.nodes if r.status != "constant" and not r.shape_only]
    boxes = [item for item in unfolded.items if item.kind in ("node", "module")]
    # the first block's nodes, each box standing for the same node in all four blocks
    assert len(boxes) == len(drawn) // 4 and all(item.repeats == 4 and len(item.nodes) == 4 for item in boxes)
    assert sorted(i for item in boxes for i in item.nodes) == sorted(analysis.nodes.index(r) for r in drawn)
    assert all(analysis.nodes[item.nodes[0]].name.startswith("/encoder/layer.0/") for item in boxes)
    # no edge runs from a block to the next (it would point back up): the view stays a DAG of the block
    from onnxroof.report.graph.costs import target_costs
    from onnxroof.report.graph.scene import lay_out

    layout = lay_out(unfolded, target_costs(analysis))[0]
    assert all(layout.boxes[e.source].layer < layout.boxes[e.target].layer for e in unfolded.edges)
    assert_clean_layout(layout)
    # the top view is 3 boxes: the page (and the SVG) open on the run unfolded, 30 boxes and the stubs
    assert start_view(views) is unfolded
    assert start_view(views, budget=20) is top


def test_a_large_graph_without_scopes_folds_into_views_of_at_most_the_budget():
    analysis = analyze(transformer_like(), targets=["h100-sxm"])  # 558 nodes, names without scopes
    views = folded_views(analysis)
    for view in views:
        assert len([i for i in view.items if i.kind in ("node", "module")]) <= 100, view.title
    drawn = [i for i, r in enumerate(analysis.nodes) if r.status != "constant" and not r.shape_only]
    assert _accounted(views) == drawn  # each drawn once, or inside a run of alike blocks; none lost
    # the 18 layers, unscoped, are found alike by structure: one box, x18, opening on the first
    top = views[0]
    (blocks,) = [item for item in top.items if item.kind == "module"]
    assert (blocks.label, blocks.repeats, len(blocks.nodes)) == ("block 0-17", 18, len(drawn))
    opened = next(v for v in views if v.key == blocks.view)
    assert len([i for i in opened.items if i.kind == "node"]) == len(drawn) // 18
    from onnxroof.report.graph.costs import target_costs
    from onnxroof.report.graph.scene import lay_out

    costs = target_costs(analysis)
    for view in views[:12]:  # the top view and the first parts: no overlap, no edge through a box
        assert_clean_layout(lay_out(view, costs)[0])
    assert len(drawn_views(analysis)) == len(views)


def _accounted(views) -> list[int]:
    """Every node drawn as a box (in one view only, the variants that unfold a module in place
    aside), or inside a run of alike blocks (only the first block is drawn, in the run's view)."""
    shown = [
        i for view in views if view.unfolds is None for item in view.items if item.kind == "node" for i in item.nodes
    ]
    assert len(shown) == len(set(shown))
    in_runs = {i for view in views for item in view.items if item.repeats > 1 for i in item.nodes}
    return sorted(set(shown) | in_runs)


# ----------------------------------------------------------------------------------- colours


def test_every_box_takes_its_kernels_bound_from_the_summary_json(googlenet, tmp_path, capsys):
    # the same model and target through the command line: the JSON the user reads
    assert main(["summary", "--example", "minigooglenet", "--target", "h100-sxm", "--format", "json", "-q"]) == 0
    document = json.loads(capsys.readouterr().out)
    names = [node["name"] for node in document["nodes"]]
    bound_of = {member: kernel["bound"] for kernel in document["targets"][0]["nodes"] for member in kernel["nodes"]}
    assert len(set(bound_of.values())) >= 1 and any(len(k["nodes"]) > 1 for k in document["targets"][0]["nodes"])
    out = tmp_path / "g.svg"
    assert main(["graph", "--example", "minigooglenet", "--target", "h100-sxm", "-o", str(out), "-q"]) == 0
    root = ET.parse(out).getroot()
    checked = 0
    for group in root.iter("{http://www.w3.org/2000/svg}g"):
        if group.get("data-gnode") is None:
            continue
        name = names[int(group.get("data-gnode"))]
        assert group.get("data-b0") == bound_of.get(name, "unplaced"), name
        checked += 1
    assert checked == len(bound_of)  # every kernel's node has a box


def test_fused_kernels_are_outlined_on_the_target_that_fuses_them(googlenet):
    from onnxroof.report.graph.costs import target_costs
    from onnxroof.report.graph.svg import draw_view

    (view,) = folded_views(googlenet)
    body = draw_view(view, googlenet, target_costs(googlenet), {}).body
    outlines = re.findall(r'<path class="gk" data-t="(\d)"', body)
    assert outlines and set(outlines) == {"0"}  # h100-sxm fuses Conv+BatchNormalization+Relu; myriad-x fuses nothing


class _CountingMembers(tuple):
    """A kernel's members, counting the ones anything walks through (time is not measured)."""

    walked = 0

    def __iter__(self):
        for member in super().__iter__():
            _CountingMembers.walked += 1
            yield member


def test_a_kernel_of_2000_nodes_is_outlined_in_each_view_without_walking_it_per_box():
    import random

    from conftest import make_model

    from onnxroof.report.graph.costs import target_costs
    from onnxroof.report.graph.fold import BOX_BUDGET
    from onnxroof.report.graph.scene import fused_outlines, lay_out

    # a chain of 2,000 unary elementwise ops in no repeating order (a repeated block would fold
    # into one run box): folding cuts it into 2,000 / 100 = 20 views of 100 node boxes
    count, rng = 2_000, random.Random(0)
    ops = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Exp", "Sqrt", "Floor"]
    nodes = [
        helper.make_node(rng.choice(ops), ["x" if i == 0 else f"t{i - 1}"], [f"t{i}"], name=f"n{i}")
        for i in range(count)
    ]
    model = make_model(nodes, [("x", TensorProto.FLOAT, [1, 16])], [(f"t{count - 1}", TensorProto.FLOAT, [1, 16])])
    analysis = analyze(model, targets=["l4"])  # l4 fuses elementwise chains: the 2,000 nodes are one kernel
    (costs,) = target_costs(analysis)
    assert set(costs.kernel_members) == {tuple(range(count))}
    costs.kernel_members = [_CountingMembers(range(count))] * count
    _CountingMembers.walked = 0
    outlines = []
    for view in folded_views(analysis):
        layout, _ = lay_out(view, [costs])
        outlines += fused_outlines(view, layout, [costs])
    # one around the 100 boxes of each of the 20 views, and one around the top view's 20 parts
    # (each a module box holding nothing but the kernel's nodes)
    assert len(outlines) == count // BOX_BUDGET + 1
    # walking the kernel's 2,000 members for each of its 2,000 boxes made 4,000,000 steps
    assert _CountingMembers.walked < 10 * count


def test_the_svg_command_writes_a_standalone_file_with_a_legend(tmp_path):
    out = tmp_path / "model.svg"
    assert main(["graph", "--example", "shallownet", "--target", "myriad-x", "-o", str(out), "-q"]) == 0
    text = out.read_text()
    root = ET.fromstring(text)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "bound on myriad-x:" in text and "DRAM" in text
    assert text == render_graph_svg(analyze(build_example("shallownet"), targets=["myriad-x"]))


@pytest.mark.parametrize("seed", range(4))
def test_random_dags_lay_out_with_no_overlap_and_no_edge_through_a_box(seed):
    # unnamed nodes, fan-outs, wide Concats reading three tensors, several graph outputs
    from onnxroof.report.graph.costs import target_costs
    from onnxroof.report.graph.scene import lay_out

    analysis = analyze(random_dag(seed, 60))
    views = folded_views(analysis, budget=30)  # more than 30 boxes: folded by structure too
    for view in views:
        layout, _ = lay_out(view, target_costs(analysis))
        assert_clean_layout(layout)
        # an edge goes down from layer to layer, each edge of the view drawn
        assert len(layout.routes) == len(view.edges)
    assert _accounted(views) == list(range(60))


# ----------------------------------------------------------------------------------- diff


def test_the_diff_marks_added_changed_and_removed_boxes_as_the_diff_matched_them():
    from onnxroof.compare.diff import diff_analyses
    from onnxroof.report.html.graph_section import diff_graph_context

    base = analyze(build_example("shallownet"), targets=["myriad-x"])
    head = analyze(build_example("shallownet-separable"), targets=["myriad-x"])
    diff = diff_analyses(base, head)
    context = diff_graph_context(diff)
    head_data, base_data = json.loads(str(context["json"])), json.loads(str(context["base_json"]))

    def marked(data):
        view = data["views"][0]  # five nodes or so: one view each
        return {data["nodes"][str(view["boxes"][k][5])][1]: mark for k, mark in view["marks"]}

    # what the diff says, node by node: the head's added and changed, the base's removed and changed
    assert marked(head_data) == {c.head.name: c.kind for c in diff.nodes if c.kind in ("added", "changed")}
    assert marked(base_data) == {c.base.name: c.kind for c in diff.nodes if c.kind in ("removed", "changed")}
    assert "added" in marked(head_data).values()  # the separable conv's second Conv is new


def test_the_svg_command_draws_one_module_or_says_which_have_a_view(tmp_path, capsys):
    model = tmp_path / "encoder.onnx"
    model.write_bytes(_scoped(transformer_like(layers=3, seq=8, dim=16, heads=2, ffn=32)).SerializeToString())
    out = tmp_path / "layer.svg"
    assert main(["graph", str(model), "--module", "/encoder/layer.0/", "-o", str(out), "-q"]) == 0
    text = out.read_text()
    assert "<title>encoder/layer.0 (the first of 3 alike blocks)</title>" in text
    assert text.count('class="gb gb-node"') == 31  # one block's nodes (tests/models.py: 31 a layer)
    # any module of the tree: the encoder, a block folded into the run, the run by its label
    for module, title in [
        ("encoder", "encoder"),
        ("encoder/layer.2", "encoder/layer.2"),
        ("encoder/layer.0-2", "encoder/layer.0 (the first of 3 alike blocks)"),
        ("layer.1", "encoder/layer.1"),  # the end of one module's path
    ]:
        assert main(["graph", str(model), "--module", module, "-o", str(out), "-q"]) == 0, module
        assert f"<title>{title}</title>" in out.read_text()
    capsys.readouterr()
    assert main(["graph", str(model), "--module", "encoder/layer.3", "-o", str(tmp_path / "no.svg"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "--module encoder/layer.3: no such module; modules under encoder: encoder/layer.0, encoder/layer.1" in err
    assert not (tmp_path / "no.svg").exists()


def test_past_eight_tensors_entering_a_view_the_rest_share_one_stub():
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, 4]) for i in range(12)]
    relus = [helper.make_node("Relu", [f"x{i}"], [f"r{i}"], name=f"relu{i}") for i in range(12)]
    graph = helper.make_graph(
        [*relus, helper.make_node("Sum", [f"r{i}" for i in range(12)], ["y"], name="sum")],
        "g",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    (view,) = folded_views(analyze(helper.make_model(graph)))
    stubs = [(item.label, item.name) for item in view.items if item.kind == "input"]
    # 12 inputs, each read by its own Relu: the first 8 a stub each, the other 4 one stub
    assert stubs == [(f"x{i}", "1×4") for i in range(8)] + [("more tensors", "4 tensors")]
    assert len([e for e in view.edges if e.source.startswith("i")]) == 12  # one edge to each Relu


def test_tensors_entering_one_box_share_one_stub():
    """A decoder's cache tensors all read by its run of layers would stand in one row as wide as
    the screen: three or more tensors entering (or leaving) only one box share one stub."""
    from onnx import TensorProto, helper

    names = [f"past.{i}.key" for i in range(6)]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4]) for name in names]
    split = helper.make_node("Split", ["s"], [f"present.{i}" for i in range(3)], name="split", axis=1, num_outputs=3)
    graph = helper.make_graph(
        [helper.make_node("Sum", names, ["s"], name="sum"), split],
        "g",
        inputs,
        [helper.make_tensor_value_info(f"present.{i}", TensorProto.FLOAT, None) for i in range(3)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    (view,) = folded_views(analyze(model))
    stubs = [(item.kind, item.label, item.name) for item in view.items if item.kind in ("input", "output")]
    # the 6 inputs' common prefix "past." without its dot; the outputs' "present."
    assert stubs == [("input", "past…", "6 tensors"), ("output", "present…", "3 tensors")]
    assert [(e.tensors) for e in view.edges if e.source.startswith("i") or e.target.startswith("o")] == [6, 3]


def three_modules(length: int = 45):
    """A chain of Relu in three modules (/alpha/relu_0 ... /gamma/relu_44), not numbered alike."""
    from onnx import TensorProto, helper

    nodes, x = [], "x"
    for module in ("alpha", "beta", "gamma"):
        for i in range(length):
            nodes.append(helper.make_node("Relu", [x], [f"{module}{i}"], name=f"/{module}/relu_{i}"))
            x = f"{module}{i}"
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 64])],
    )
    return helper.make_model(graph)


def test_a_module_unfolds_in_place_as_a_variant_of_its_view():
    views = folded_views(analyze(three_modules()))
    top = views[0]
    # 135 nodes: opening the three modules would make 135 boxes, over the budget of 100: three boxes
    assert [(item.kind, item.label) for item in top.items] == [
        ("input", "x"),
        ("module", "alpha"),
        ("module", "beta"),
        ("module", "gamma"),
        ("output", "gamma44"),
    ]
    alpha = top.items[1]
    variant = next(v for v in views if v.key == alpha.variant)
    assert variant.unfolds == (top.key, alpha.key)
    # alpha's 45 nodes in place of its box, beta and gamma still folded, the two stubs
    assert len(variant.items) == 45 + 2 + 2 and len(variant.inside) == 45
    assert [i.label for i in variant.items if i.kind == "module"] == ["beta", "gamma"]
    # its boxes open the same views as the top view's; alpha's own view is still there (double-click)
    assert {i.label: i.view for i in variant.items if i.kind == "module"} == {
        i.label: i.view for i in top.items if i.label in ("beta", "gamma")
    }
    assert next(v for v in views if v.key == alpha.view).title == "alpha"
