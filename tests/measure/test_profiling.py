"""`onnxroof profile`: mapping onnxruntime's profile events to onnxroof's nodes (on profiles
recorded once from the MiniGoogLeNet example, tests/measure/data/, and on hand-made events), the errors,
and, when onnxruntime is installed, a real run. No test depends on how fast anything runs."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnxroof
from onnxroof.measure import profiling as prof
from onnxroof.cli.app import main
from onnxroof.core.errors import UsageError
from onnxroof.core.examples import build_example
from onnxroof.report.html.profile_page import render_profile_html
from onnxroof.report.text.profile_table import render_profile_table
from onnxroof.roofline.targets import load_target

from conftest import make_model

DATA = Path(__file__).parent / "data"
F32 = TensorProto.FLOAT


@pytest.fixture(scope="module")
def minigooglenet():
    return onnxroof.analyze(build_example("minigooglenet"))


def _recorded(level: str) -> dict:
    return json.loads((DATA / f"minigooglenet-ort-{level}.json").read_text())


def _expected_median(document: dict, kernel: str) -> float:
    """The median per measured run of one kernel, computed straight from the events."""
    events = document["traceEvents"]
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "model_run")[document["warmup"]:]
    per_run = [sum(e["dur"] for e in events if e["name"] == f"{kernel}_kernel_time" and start <= e["ts"] <= end)
               for start, end in runs]
    return statistics.median(per_run) * 1e-6


# --- the recorded profiles ---------------------------------------------------------------------


def test_recorded_profiles_are_small():
    for path in DATA.glob("minigooglenet-ort-*.json"):
        assert path.stat().st_size < 100_000


def test_parse_profile_at_level_all_maps_every_node(minigooglenet):
    document = _recorded("all")
    seconds = prof.parse_profile(DATA / "minigooglenet-ort-all.json", minigooglenet, warmup=document["warmup"])
    assert set(seconds) == {r.name for r in minigooglenet.nodes}  # every node is accounted for
    assert seconds["dropout_0"] == 0.0  # removed by onnxruntime
    # kernels that are their node: the median over the three measured runs, in seconds
    for kernel in ("concatenate_0", "dense_0", "softmax_0", "flatten_0"):
        assert seconds[kernel] == pytest.approx(_expected_median(document, kernel))
    assert seconds["max_pooling2d_0"] == pytest.approx(_expected_median(document, "max_pooling2d_0_nchwc"))


def test_a_fused_nchwc_kernel_covers_its_conv_chain_split_by_flops(minigooglenet):
    document = _recorded("all")
    mapping = prof.map_profile(document, minigooglenet, warmup=1)
    kernel = next(k for k in mapping.kernels if k.name == "activation_0_nchwc")
    assert kernel.op_type == "Conv"
    assert kernel.nodes == ["conv2d_0", "batch_normalization_0", "activation_0"]
    assert kernel.seconds == pytest.approx(_expected_median(document, "activation_0_nchwc"))
    flops = {r.name: r.flops for r in minigooglenet.nodes}
    total = sum(flops[n] for n in kernel.nodes)
    for node in kernel.nodes:
        assert mapping.seconds[node] == pytest.approx(kernel.seconds * flops[node] / total)
        assert mapping.kernel_of[node] == "activation_0_nchwc"
    # every conv chain of the model is one kernel; the layout reorder belongs to no node
    assert sum(1 for k in mapping.kernels if len(k.nodes) == 3) == 19
    assert [k.name for k in mapping.unattributed] == ["ReorderOutput"]
    assert mapping.removed == ["dropout_0"] and mapping.not_seen == []
    assert mapping.runs == 3
    # the measured total is every kernel's median: the nodes' times plus the unattributed kernel
    assert mapping.measured_s == pytest.approx(sum(mapping.seconds.values()) + mapping.unattributed[0].seconds)
    runs = sorted(e["dur"] for e in document["traceEvents"] if e["name"] == "model_run")
    walls = [e["dur"] * 1e-6 for e in sorted((e for e in document["traceEvents"] if e["name"] == "model_run"),
                                             key=lambda e: e["ts"])[1:]]
    assert len(runs) == 4 and mapping.run_seconds == pytest.approx(statistics.median(walls))


def test_parse_profile_at_level_basic_folds_batchnorm_into_the_conv(minigooglenet):
    mapping = prof.map_profile(DATA / "minigooglenet-ort-basic.json", minigooglenet, warmup=1)
    kernels = {k.name: k for k in mapping.kernels}
    assert kernels["conv2d_0"].nodes == ["conv2d_0", "batch_normalization_0"]
    assert kernels["activation_0"].nodes == ["activation_0"]
    assert mapping.unattributed == [] and mapping.removed == ["dropout_0"] and mapping.not_seen == []
    assert set(mapping.seconds) == {r.name for r in minigooglenet.nodes}


@pytest.mark.parametrize("level", ["all", "basic"])
def test_the_optimized_graph_structure_agrees_with_the_names(minigooglenet, level):
    document = _recorded(level)
    optimized = prof.OptimizedGraph.from_dict(document["optimized"])
    by_name = prof.map_profile(document, minigooglenet, warmup=1)
    by_structure = prof.map_profile(document, minigooglenet, warmup=1, optimized=optimized)
    assert {k.name: k.nodes for k in by_structure.kernels} == {k.name: k.nodes for k in by_name.kernels}
    assert by_structure.seconds == pytest.approx(by_name.seconds)
    assert prof.OptimizedGraph.from_dict(optimized.to_dict()) == optimized


def test_a_fused_kernel_is_split_in_proportion_to_the_weights(minigooglenet):
    weights = {"conv2d_0": 3.0, "batch_normalization_0": 1.0, "activation_0": 0.0}
    mapping = prof.map_profile(DATA / "minigooglenet-ort-all.json", minigooglenet, warmup=1, weights=weights)
    kernel = next(k for k in mapping.kernels if k.name == "activation_0_nchwc")
    assert mapping.seconds["conv2d_0"] == pytest.approx(0.75 * kernel.seconds)
    assert mapping.seconds["batch_normalization_0"] == pytest.approx(0.25 * kernel.seconds)
    assert mapping.seconds["activation_0"] == 0.0
    # all-zero weights: the node the kernel is named after gets it all
    zero = prof.map_profile(DATA / "minigooglenet-ort-all.json", minigooglenet, warmup=1, weights={})
    assert zero.seconds["activation_0"] == pytest.approx(kernel.seconds)
    assert zero.seconds["conv2d_0"] == 0.0


def test_load_events_accepts_paths_text_and_lists():
    document = _recorded("all")
    as_list = prof.load_events(document["traceEvents"])
    assert prof.load_events(json.dumps(document)) == as_list
    assert prof.load_events(str(DATA / "minigooglenet-ort-all.json")) == as_list
    assert prof.load_events(json.dumps(document).encode()) == as_list
    with pytest.raises(UsageError, match="cannot read the profile"):
        prof.load_events(DATA / "missing.json")


# --- hand-made events --------------------------------------------------------------------------


def _kernel(name, op, ts, dur, tid=1):
    return {"cat": "Node", "name": f"{name}_kernel_time", "ph": "X", "ts": ts, "dur": dur, "tid": tid,
            "args": {"op_name": op, "provider": "CPUExecutionProvider"}}


def _run(ts, dur):
    return {"cat": "Session", "name": "model_run", "ph": "X", "ts": ts, "dur": dur, "tid": 1}


@pytest.fixture(scope="module")
def plain_cnn():
    """x -> c1 (Conv) -> bn1 -> r1 (Relu) -> c2 -> bn2 -> r2 -> y; tensors are named t_<node>."""
    c = 4
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in (1, 2):
        nodes += [
            helper.make_node("Conv", [x, f"w{i}"], [f"t_c{i}"], name=f"c{i}", pads=[1, 1, 1, 1]),
            helper.make_node("BatchNormalization", [f"t_c{i}", f"s{i}", f"b{i}", f"m{i}", f"v{i}"], [f"t_bn{i}"], name=f"bn{i}"),
            helper.make_node("Relu", [f"t_bn{i}"], [f"t_r{i}"], name=f"r{i}"),
        ]
        inits += [(f"w{i}", rng.standard_normal((c, c if i > 1 else 3, 3, 3)).astype(np.float32))]
        inits += [(f"{k}{i}", np.ones(c, np.float32)) for k in "sbmv"]
        x = f"t_r{i}"
    model = make_model(nodes, [("x", F32, [1, 3, 8, 8])], [("t_r2", F32, [1, c, 8, 8])], inits)
    return onnxroof.analyze(model)


def test_an_nchwc_kernel_named_after_its_output_tensor_takes_the_conv_above_it(plain_cnn):
    # at level all, r1's producer chain is c1 -> bn1; c2 reads r1's output and is its only
    # consumer, but belongs to the kernel of r2, not r1's
    events = [_run(0, 1000), _kernel("t_r1_nchwc", "Conv", 10, 100), _kernel("t_r2_nchwc", "Conv", 120, 300),
              _kernel("ReorderOutput", "ReorderOutput", 430, 20)]
    mapping = prof.map_profile(events, plain_cnn)
    kernels = {k.name: k.nodes for k in mapping.kernels}
    assert kernels == {"t_r1_nchwc": ["c1", "bn1", "r1"], "t_r2_nchwc": ["c2", "bn2", "r2"], "ReorderOutput": []}
    assert sum(mapping.seconds[n] for n in ("c2", "bn2", "r2")) == pytest.approx(300e-6)
    assert mapping.measured_s == pytest.approx(420e-6)


def test_a_fused_conv_named_after_the_conv_takes_what_follows(plain_cnn):
    events = [_run(0, 1000), _kernel("c1", "FusedConv", 10, 100), _kernel("c2", "FusedConv", 120, 300)]
    kernels = {k.name: k.nodes for k in prof.map_profile(events, plain_cnn).kernels}
    assert kernels == {"c1": ["c1", "bn1", "r1"], "c2": ["c2", "bn2", "r2"]}


def test_gemm_activation_fusion_named_fused_x(plain_cnn):
    events = [_run(0, 1000), _kernel("fused c1", "FusedConv", 10, 100), _kernel("c2", "Conv", 120, 300),
              _kernel("r2", "Relu", 430, 5)]
    mapping = prof.map_profile(events, plain_cnn)
    kernels = {k.name: k.nodes for k in mapping.kernels}
    assert kernels == {"fused c1": ["c1", "bn1", "r1"], "c2": ["c2", "bn2"], "r2": ["r2"]}
    assert mapping.seconds["r2"] == pytest.approx(5e-6)


@pytest.fixture(scope="module")
def residual_block():
    """x -> m1 (MatMul) -> a1 (Add bias) -> a2 (Add x) -> ln (LayerNormalization) -> y."""
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["t_m1"], name="m1"),
        helper.make_node("Add", ["t_m1", "B"], ["t_a1"], name="a1"),
        helper.make_node("Add", ["t_a1", "x"], ["t_a2"], name="a2"),
        helper.make_node("LayerNormalization", ["t_a2", "g", "b"], ["y"], name="ln", axis=-1),
    ]
    inits = [("W", rng.standard_normal((8, 8)).astype(np.float32)), ("B", np.zeros(8, np.float32)),
             ("g", np.ones(8, np.float32)), ("b", np.zeros(8, np.float32))]
    return onnxroof.analyze(make_model(nodes, [("x", F32, [1, 4, 8])], [("y", F32, [1, 4, 8])], inits))


def test_kernels_with_made_up_names_are_placed_by_the_optimized_graph(residual_block):
    # onnxruntime 1.2x: MatMul+Add -> Gemm between two inserted Reshapes; Add+LayerNorm -> SkipLayerNormalization
    optimized = prof.OptimizedGraph({
        "gemm_input_reshape": (("x", "shape_in"), ("reshaped_in",), "Reshape"),
        "m1/MatMulAddFusion": (("reshaped_in", "W", "B"), ("gemm_out",), "Gemm"),
        "gemm_output_reshape": (("gemm_out", "shape_out"), ("t_a1",), "Reshape"),
        "SkipLayerNormalization_token_7": (("t_a1", "x", "g", "b"), ("y",), "SkipLayerNormalization"),
    }, initializers=frozenset({"W", "B", "g", "b", "shape_in", "shape_out"}), inputs=frozenset({"x"}))
    events = [_run(0, 1000), _kernel("gemm_input_reshape", "Reshape", 10, 2),
              _kernel("m1/MatMulAddFusion", "Gemm", 20, 50), _kernel("gemm_output_reshape", "Reshape", 80, 3),
              _kernel("SkipLayerNormalization_token_7", "SkipLayerNormalization", 90, 8)]
    mapping = prof.map_profile(events, residual_block, optimized=optimized)
    kernels = {k.name: k.nodes for k in mapping.kernels}
    assert kernels == {"gemm_input_reshape": [], "m1/MatMulAddFusion": ["m1", "a1"], "gemm_output_reshape": [],
                       "SkipLayerNormalization_token_7": ["a2", "ln"]}
    assert mapping.seconds["a2"] + mapping.seconds["ln"] == pytest.approx(8e-6)
    assert [k.name for k in mapping.unattributed] == ["gemm_input_reshape", "gemm_output_reshape"]
    # by names alone the made-up name matches nothing, and a2 and ln join the Gemm before them
    names_only = prof.map_profile(events, residual_block)
    assert {k.name: k.nodes for k in names_only.kernels}["m1/MatMulAddFusion"] == ["m1", "a1", "a2", "ln"]
    assert "SkipLayerNormalization_token_7" in [k.name for k in names_only.unattributed]


def test_warmup_missing_runs_nested_kernels_and_events_outside_runs(plain_cnn):
    events = [
        _kernel("c1", "Conv", 0, 7),  # during initialization: outside every run
        _run(100, 100), _kernel("c1", "Conv", 110, 50), _kernel("r2", "Relu", 170, 10),  # warm-up
        _run(300, 100), _kernel("c1", "Conv", 310, 20), _kernel("sub", "Add", 312, 5), _kernel("r2", "Relu", 340, 4),
        _run(500, 100), _kernel("c1", "Conv", 510, 30), _kernel("bn1", "Add", 540, 0), _kernel("r2", "Relu", 545, 6),
        _run(700, 100), _kernel("c1", "Conv", 710, 40),  # r2 did not run (an If branch, say)
    ]
    medians, runs, wall = prof.kernel_medians(events, warmup=1)
    assert runs == 3 and wall == pytest.approx(100e-6)
    assert medians["c1"] == ("Conv", pytest.approx(30e-6))
    assert medians["r2"] == ("Relu", pytest.approx(4e-6))  # median of 4, 6 and 0
    assert "sub" not in medians  # nested inside c1's span: a subgraph node, in c1's time already
    assert medians["bn1"] == ("Add", 0.0)  # starts as c1 ends, lasts under a microsecond: not nested
    # without run events, everything is one run
    medians, runs, wall = prof.kernel_medians([_kernel("c1", "Conv", 0, 7), _kernel("c1", "Conv", 10, 3)])
    assert runs == 1 and wall is None and medians["c1"][1] == pytest.approx(10e-6)


def test_nodes_with_no_kernel_and_no_neighbour_are_not_seen(plain_cnn):
    mapping = prof.map_profile([_run(0, 100), _kernel("Mystery", "Mystery", 1, 5)], plain_cnn)
    assert [k.name for k in mapping.unattributed] == ["Mystery"]
    assert set(mapping.not_seen) == {"c1", "bn1", "r1", "c2", "bn2", "r2"}
    assert mapping.seconds == {}


# --- errors ------------------------------------------------------------------------------------


def test_missing_onnxruntime_is_a_one_line_usage_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    with pytest.raises(UsageError, match=r"pip install onnxroof\[profile\]"):
        prof.import_onnxruntime()
    code = main(["profile", "--example", "shallownet", "--target", "myriad-x"])
    _, err = capsys.readouterr()
    assert code == 2 and "pip install onnxroof[profile]" in err and err.count("\n") == 1


def test_onnxruntime_errors_name_the_op_and_node(minigooglenet):
    no_kernel = RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation "
                             "for Conv(11) node with name 'conv2d_3'")
    message = str(prof.onnxruntime_error(no_kernel, minigooglenet))
    assert "no CPU kernel for node 'conv2d_3' (Conv, opset 11, inputs float32" in message
    custom = RuntimeError("[ONNXRuntimeError] : 1 : FAIL : Fatal error: my.domain:MyOp(-1) is not a registered function/op")
    assert "op MyOp of domain my.domain" in str(prof.onnxruntime_error(custom, minigooglenet))
    other = RuntimeError("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Got invalid dimensions for input: input\nmore")
    assert str(prof.onnxruntime_error(other, minigooglenet)) == (
        "onnxruntime cannot run minigooglenet: Got invalid dimensions for input: input")


def test_unbound_dims_cannot_be_run():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [("x", F32, ["batch", 4])], [("y", F32, ["batch", 4])])
    with pytest.raises(UsageError, match="--dim batch="):
        prof.random_inputs(onnxroof.analyze(model, partial=True))
    feeds = prof.random_inputs(onnxroof.analyze(model, dims={"batch": 2}))
    assert feeds["x"].shape == (2, 4) and feeds["x"].dtype == np.float32


def test_integer_inputs_are_ones():
    model = make_model([helper.make_node("Cast", ["ids"], ["y"], name="c", to=F32)],
                       [("ids", TensorProto.INT64, [1, 5])], [("y", F32, [1, 5])])
    feeds = prof.random_inputs(onnxroof.analyze(model))
    assert feeds["ids"].dtype == np.int64 and (feeds["ids"] == 1).all()


# --- the target to predict on ------------------------------------------------------------------


def test_the_calibrated_target_in_hardware_is_used(tmp_path, monkeypatch):
    from test_calibrate import _calibration

    from onnxroof.measure import calibrate as cal

    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "this-machine.toml").write_text(cal.render_target(_calibration()), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cal, "calibrate", lambda **_: pytest.fail("calibrated although a target file exists"))
    target, note = prof.resolve_target(None, quiet=True)
    assert target.name == "this-machine" and note is None


def test_without_a_calibrated_target_a_quick_calibration_runs(tmp_path, monkeypatch):
    from test_calibrate import _calibration

    from onnxroof.measure import calibrate as cal
    from onnxroof.core import resources

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(resources, "resource_dir", lambda kind: tmp_path / "nowhere")
    asked = {}

    def fake_calibrate(seconds, **_):
        asked["seconds"] = seconds
        return _calibration()

    monkeypatch.setattr(cal, "calibrate", fake_calibrate)
    target, note = prof.resolve_target(None, quiet=True)
    assert asked["seconds"] == cal.QUICK_SECONDS
    assert target.peak_ops_per_s["fp32"].tag == "measured" and "onnxroof calibrate -o" in note
    assert prof.resolve_target("myriad-x")[0].name == "myriad-x"


# --- a real run (only where onnxruntime is installed) -------------------------------------------


@pytest.mark.parametrize("level", ["all", "basic", "disable"])
def test_profile_the_example_every_node_onnxruntime_ran_is_measured(tmp_path, level):
    pytest.importorskip("onnxruntime")
    model = build_example("minigooglenet")
    analysis = onnxroof.analyze(model)
    raw = tmp_path / "raw.json"
    result = prof.profile_model(analysis, load_target("myriad-x"), runs=2, model=model, warmup=1,
                                optimization=level, keep_profile=raw)
    ran = {e["name"][: -len("_kernel_time")] for e in json.loads(raw.read_text())
           if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")}
    kernels = {k.name: k for k in result.mapping.kernels}
    assert set(kernels) == ran
    for name in ran:
        if name.startswith("Reorder"):
            assert kernels[name].nodes == []  # layout conversions onnxruntime inserted
            continue
        assert kernels[name].nodes, f"kernel {name} was not mapped"
        for node in kernels[name].nodes:
            assert result.mapping.seconds[node] is not None and result.mapping.seconds[node] >= 0
    assert result.mapping.not_seen == []
    assert {n.name for n in result.nodes if n.measured_s is not None} == {r.name for r in analysis.nodes}
    assert all(n.predicted_s is not None for n in result.nodes)
    if level == "disable":
        assert all(len(k.nodes) == 1 for k in kernels.values())  # one kernel per node, nothing fused
    document = json.loads(json.dumps(result.to_dict()))
    assert document["schema"] == "onnxroof-profile/1" and document["onnxruntime"]["optimization"] == level
    assert document["totals"]["measured_s"] > 0 and document["totals"]["predicted_s"] > 0
    assert document["totals"]["wall_s"] > 0
    assert "prediction error" in render_profile_table(result)


def test_profile_cli_json_and_output_file(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    code = main(["profile", "--example", "shallownet", "--target", "myriad-x", "--runs", "2", "--warmup", "1",
                 "--format", "json", "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    document = json.loads(out)
    assert [n["name"] for n in document["nodes"]] == ["conv2d_0", "activation_0", "flatten_0", "dense_0", "softmax_0"]
    assert document["target"]["name"] == "myriad-x"
    path = tmp_path / "shallownet.onnx"
    onnx.save(build_example("shallownet"), path)
    out_file = tmp_path / "profile.txt"
    code = main(["profile", str(path), "--target", "myriad-x", "--runs", "1", "--warmup", "0", "-o", str(out_file), "-q"])
    assert code == 0 and "measured/predicted" in out_file.read_text()


def test_profile_cli_names_an_op_onnxruntime_cannot_run(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    model = make_model([helper.make_node("MyOp", ["x"], ["y"], name="custom_0", domain="my.domain")],
                       [("x", F32, [2, 3])], [("y", F32, [2, 3])])
    model.opset_import.append(helper.make_opsetid("my.domain", 1))
    path = tmp_path / "custom.onnx"
    onnx.save(model, path)
    code = main(["profile", str(path), "--target", "myriad-x", "-q"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert "op MyOp of domain my.domain (node 'custom_0')" in err


# --- the HTML report (`onnxroof profile -o report.html`) -----------------------------------------


def _recorded_result(note: str = "") -> prof.ProfileResult:
    """A ProfileResult built from the recorded profile, as profile_model builds it (no onnxruntime)."""
    analysis = onnxroof.analyze(build_example("minigooglenet"), targets=["myriad-x"])
    report = analysis.targets[0]
    predicted = {n.name: n.placement.time_s for n in report.nodes}
    mapping = prof.map_profile(DATA / "minigooglenet-ort-all.json", analysis, warmup=1, weights=predicted)
    return prof.ProfileResult(analysis, report, mapping, prof.compare(analysis, report, mapping), "all", None, 1,
                              "1.x", None, [note] if note else [])


def test_the_html_report_draws_a_measured_dot_per_measured_node():
    from onnxroof.report.html.pages import render_html

    result = _recorded_result(note="<script>alert(1)</script>")
    html = render_html(result.analysis, profile=result)
    document = result.to_dict()
    measured = [n for n in document["nodes"] if n["measured_s"] and n["flops"] > 0]
    assert measured and html.count('class="dot dot-measured') == len(measured)
    assert 'class="mark measured"' in html and "measured node" in html  # the model point and the legend
    # the section: totals, the error figure and the 15 nodes that took longest
    assert 'id="profile"' in html and "Predicted vs measured" in html
    assert f"{result.error:+.0%}" in html and f"{result.ratio:.2f}x" in html
    slowest = max(result.nodes, key=lambda n: n.measured_s or 0)
    assert f"{slowest.ratio:.2f}x" in html and f"measured/predicted: {slowest.ratio:.2f}x" in html
    assert html.count('<a class="node-link" href="#node-table"') == 15 + 10  # this table and the hotspots
    # nothing unescaped: the note's markup is text, the only scripts are the report's own
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script") == render_html(result.analysis).count("<script") == 3
    assert "http://" not in html and "https://" not in html


def test_the_html_report_without_a_profile_has_no_measured_series():
    from onnxroof.report.html.pages import render_html

    result = _recorded_result()
    html = render_html(result.analysis)
    assert 'class="dot dot-measured' not in html and 'class="mark measured"' not in html and 'id="profile"' not in html


def test_the_profile_target_must_be_one_of_the_analysis_targets():
    from onnxroof.report.html.pages import render_html

    result = _recorded_result()
    with pytest.raises(ValueError, match="myriad-x"):
        render_html(onnxroof.analyze(build_example("minigooglenet")), profile=result)
    # render_profile_html adds the profile's target to an analysis made without it
    bare = onnxroof.analyze(build_example("minigooglenet"))
    result.analysis = bare
    html = render_profile_html(result)
    assert 'class="dot dot-measured' in html and bare.targets == []


def test_profile_cli_writes_the_html_report(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    out_file = tmp_path / "report.html"
    code = main(["profile", "--example", "shallownet", "--target", "myriad-x", "--runs", "2", "--warmup", "1",
                 "-o", str(out_file), "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and out == "" and err == ""
    html = out_file.read_text()
    assert html.startswith("<!DOCTYPE html>") and "Predicted vs measured" in html and 'class="dot dot-measured' in html
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # written atomically, no temporary left
