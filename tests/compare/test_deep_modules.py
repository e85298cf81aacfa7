"""Deep module paths (issue 43, item 2): node names of hundreds to 100,000 '/'-separated levels.
A module tree is folded at MAX_MODULE_DEPTH (32) levels, the rest of a path joining into the
32nd level's name, and every output says so; no tree walk recurses with the depth. Expected
names and counts are worked out by hand in the comments."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import onnx
import pytest
from conftest import make_model, run
from onnx import TensorProto, helper

import onnxroof
from onnxroof.compare.modules import FOLDED_NOTE, MAX_MODULE_DEPTH, is_folded, module_of, module_tree, numbered, walk
from onnxroof.report.html.pages import render_html

F32 = TensorProto.FLOAT


def deep_model(levels: int, nodes: int = 1, part: str = "m"):
    """``nodes`` Relus in a chain, each named /m0/m1/.../m{levels-1}/Relu_i: all in one module
    ``levels`` deep. x [1, 8]: each Relu 8 FLOPs."""
    path = "/" + "/".join(f"{part}{level}" for level in range(levels))
    chain = [
        helper.make_node(
            "Relu", ["x" if i == 0 else f"t{i - 1}"], ["y" if i == nodes - 1 else f"t{i}"], name=f"{path}/Relu_{i}"
        )
        for i in range(nodes)
    ]
    return make_model(chain, [("x", F32, [1, 8])], [("y", F32, [1, 8])])


def test_a_path_past_the_cap_folds_its_rest_into_the_last_shown_level():
    analysis = onnxroof.analyze(deep_model(250))
    path = module_of(analysis.nodes[0])
    # levels m0 ... m30 as they are (31 levels), then m31 ... m249 joined: 32 levels in all
    assert len(path) == MAX_MODULE_DEPTH == 32
    assert path[:31] == tuple(f"m{i}" for i in range(31))
    assert path[31] == "/".join(f"m{i}" for i in range(31, 250))


def test_the_tree_of_a_1000_level_name_is_32_deep_and_says_it_is_folded():
    root = module_tree(onnxroof.analyze(deep_model(1000, nodes=3)))
    levels = [(module, level) for module, level in walk(root)]
    assert len(levels) == 1 + 32 and max(level for _, level in levels) == 32  # the root and one module a level
    deepest = levels[-1][0]
    assert deepest.name == "/".join(f"m{i}" for i in range(31, 1000))
    assert deepest.parts == tuple(f"m{i}" for i in range(31)) + (deepest.name,)
    assert (deepest.nodes, deepest.flops) == (3, 3 * 8) and root.flops == 24
    assert is_folded(root) and not is_folded(module_tree(onnxroof.analyze(deep_model(32))))


def test_path_strings_stay_linear_in_a_100000_level_name():
    """100,000 levels of 'aaaaaaa' + a number: a 1 MB name. Before the fold every level kept its
    full path (100,000 paths of up to 1 MB each). Now: 32 modules; levels 1-31 hold short
    prefixes, level 32 the rest, so all the paths together are under twice the name's length."""
    model = deep_model(100_000, part="aaaaaaa")
    name_length = len(model.graph.node[0].name)
    root = module_tree(onnxroof.analyze(model))
    modules = [module for module, level in walk(root) if level]
    assert len(modules) == 32
    assert sum(len(module.path) for module in modules) < 2 * name_length


@pytest.mark.parametrize("levels", [250, 1000])
def test_every_tree_output_of_a_deep_name_exits_0(capsys, tmp_path, levels):
    path = tmp_path / "deep.onnx"
    onnx.save(deep_model(levels, nodes=2), path)  # two nodes: the folded module is a box, not its one node
    code, out, _ = run(capsys, "summary", path, "--by", "module")
    assert code == 0 and FOLDED_NOTE in out
    # the table's rows: (model) and one per level, 32 of them
    table = out[out.index("By module") :].splitlines()
    assert len(table) == 2 + 1 + 32
    for argv in (
        ["report", "-o", tmp_path / "r.html"],
        ["graph", "-o", tmp_path / "g.svg"],
        ["diff", path, "--format", "html", "-o", tmp_path / "d.html"],
        ["summary", "--target", "l4"],
    ):
        code, _, err = run(capsys, *argv[:1], path, *argv[1:])
        assert code == 0, (argv, err)
    svg = ET.parse(tmp_path / "g.svg").getroot()
    assert any(FOLDED_NOTE in text for text in svg.itertext())  # the folded module's box's tooltip says so


def test_the_report_nests_one_details_a_level_without_a_recursive_macro():
    html = render_html(onnxroof.analyze(deep_model(250)))
    section = html[html.index('id="modules"') : html.index("</section>", html.index('id="modules"'))]
    # the model's row and one per level (32), each opened and closed once
    assert section.count("<details") == section.count("</details>") == 1 + 32
    assert FOLDED_NOTE.replace("'", "&#39;") in section


def test_the_largest_module_finding_names_a_folded_module_s_nodes():
    """One module, 40 levels deep: the largest module is its folded level 32 (every node in it),
    and the finding lists its node, found by its levels, not by splitting its path at '/'."""
    analysis = onnxroof.analyze(deep_model(40), targets=["l4"])
    largest = [f for f in analysis.findings if f.kind == "largest"]
    folded = "/".join(f"m{i}" for i in range(40))
    assert largest and largest[0].modules == (folded,)
    assert largest[0].nodes == (analysis.nodes[0].name,)


def test_a_block_index_is_its_trailing_digits_up_to_18():
    assert numbered("layer.11") == ("layer.", 11) and numbered("h.0") == ("h.", 0)
    assert numbered("layer.007") == ("layer.", 7)  # the next block is layer.8, as before
    assert numbered("x" + "9" * 18) == ("x", 10**18 - 1) and numbered("x" + "9" * 19) is None
    assert numbered("1" * 20_000 + "x") is None  # no digit at the end


@pytest.mark.parametrize("segment", ["layer" + "1" * 5000, "1" * 20_000 + "x"])
def test_module_names_of_many_digits(capsys, tmp_path, segment):
    """5,000 digits: past Python's 4,300-digit int() limit (it was exit 3); 20,000 digits then a
    letter: a regular expression backtracked over every suffix (seconds per name)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name=f"/{segment}/Relu"),
        helper.make_node("Relu", ["a"], ["y"], name=f"/{segment}b/Relu"),
    ]
    path = tmp_path / "m.onnx"
    onnx.save(make_model(nodes, [("x", F32, [1, 8])], [("y", F32, [1, 8])]), path)
    for argv in (["summary", path, "--by", "module"], ["graph", path, "-o", tmp_path / "g.svg"]):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
    root = module_tree(onnxroof.analyze(onnx.load(path)))
    assert [m.name for m in root.children] == [segment, segment + "b"]


def test_the_flat_rows_nest_as_the_tree_does():
    """/encoder/layer.{0,1}/{fc,act}, /head: (model) > encoder > layer.0-1 > fc, act; (model) > head."""
    from html.parser import HTMLParser

    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="/encoder/layer.0/fc/Relu"),
        helper.make_node("Relu", ["a"], ["b"], name="/encoder/layer.0/act/Relu"),
        helper.make_node("Relu", ["b"], ["c"], name="/encoder/layer.1/fc/Relu"),
        helper.make_node("Relu", ["c"], ["d"], name="/encoder/layer.1/act/Relu"),
        helper.make_node("Relu", ["d"], ["y"], name="/head/Relu"),
    ]
    html = render_html(onnxroof.analyze(make_model(nodes, [("x", F32, [1, 8])], [("y", F32, [1, 8])])))
    section = html[html.index('id="modules"') : html.index("</section>", html.index('id="modules"'))]

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.depth, self.rows, self.naming = 0, [], False

        def handle_starttag(self, tag, attributes):
            self.depth += tag == "details"
            self.naming = tag == "span" and ("class", "module-name mono") in attributes

        def handle_endtag(self, tag):
            self.depth -= tag == "details"

        def handle_data(self, data):
            if self.naming:
                self.rows.append((self.depth, data.strip()))
                self.naming = False

    rows = Rows()
    rows.feed(section)
    assert rows.rows == [(1, "(model)"), (2, "encoder"), (3, "layer.0-1"), (4, "fc"), (4, "act"), (2, "head")]
    assert rows.depth == 0


def test_the_deepest_level_holding_the_module_budget_is_found_level_by_level():
    from onnxroof.compare.modules import fitting_depth

    # level 1: {a} (1 module); level 2: a/b0, a/b1, a/b2 (3, 4 in all); level 3: one under each (3, 7 in all)
    paths = [("a", f"b{i}", "c") for i in range(3)] + [("a",)]
    assert fitting_depth(paths, most=7) is None  # the whole tree fits
    assert fitting_depth(paths, most=6) == 2
    assert fitting_depth(paths, most=3) == 1
    assert fitting_depth(paths, most=0) == 0
    assert fitting_depth([(), ()], most=0) is None  # no module at all


def wide_model(siblings: int, levels: int):
    """``siblings`` Relus in a chain, Relu i named /root/m{i}/d/d/... (``levels`` d's)/Relu: each
    its own path, 2 + ``levels`` modules deep under the root."""
    chain = [
        helper.make_node(
            "Relu",
            ["x" if i == 0 else f"t{i - 1}"],
            ["y" if i == siblings - 1 else f"t{i}"],
            name=f"/root/m{i}/" + "d/" * levels + "Relu",
        )
        for i in range(siblings)
    ]
    return make_model(chain, [("x", F32, [1, 8])], [("y", F32, [1, 8])])


def test_a_tree_of_more_modules_than_the_budget_stops_at_the_deepest_level_that_fits(monkeypatch, capsys, tmp_path):
    import onnxroof.compare.modules as modules

    monkeypatch.setattr(modules, "MAX_MODULES", 25)
    analysis = onnxroof.analyze(wide_model(10, 5))
    # level 1: root (1); level 2: m0..m9 (11 in all); level 3: a d under each (21); level 4: 31 > 25
    root = module_tree(analysis)
    assert root.cut_at == 3
    assert max(level for _, level in walk(root)) == 3 and root.flops == 10 * 8
    assert "stops 3 level(s) deep" in modules.folded_note(root)
    path = tmp_path / "wide.onnx"
    onnx.save(wide_model(10, 5), path)
    code, out, _ = run(capsys, "summary", path, "--by", "module", "-q")
    assert code == 0 and "more than 25 modules: the tree stops 3 level(s) deep" in out
