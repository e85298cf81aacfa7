"""Mapping onnxruntime's kernels to onnxroof's nodes, on profiles recorded once from the
MiniGoogLeNet example (tests/measure/data/) and on hand-made events. No test depends on how fast
anything runs."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from conftest import make_model
from measurements import PROFILES, expected_median, kernel_event, recorded_profile, run_event
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.examples import build_example
from onnxroof.measure.ort_events import OptimizedGraph
from onnxroof.measure.profiling import map_profile, parse_profile

F32 = TensorProto.FLOAT


@pytest.fixture(scope="module")
def minigooglenet():
    return onnxroof.analyze(build_example("minigooglenet"))


# --- the recorded profiles ---------------------------------------------------------------------


def test_parse_profile_at_level_all_maps_every_node(minigooglenet):
    document = recorded_profile("all")
    seconds = parse_profile(PROFILES / "minigooglenet-ort-all.json", minigooglenet, warmup=document["warmup"])
    assert set(seconds) == {r.name for r in minigooglenet.nodes}  # every node is accounted for
    assert seconds["dropout_0"] == 0.0  # removed by onnxruntime
    # kernels that are their node: the median over the three measured runs, in seconds
    for kernel in ("concatenate_0", "dense_0", "softmax_0", "flatten_0"):
        assert seconds[kernel] == pytest.approx(expected_median(document, kernel))
    assert seconds["max_pooling2d_0"] == pytest.approx(expected_median(document, "max_pooling2d_0_nchwc"))


def test_a_fused_nchwc_kernel_covers_its_conv_chain_split_by_flops(minigooglenet):
    document = recorded_profile("all")
    mapping = map_profile(document, minigooglenet, warmup=1)
    kernel = next(k for k in mapping.kernels if k.name == "activation_0_nchwc")
    assert kernel.op_type == "Conv"
    assert kernel.nodes == ["conv2d_0", "batch_normalization_0", "activation_0"]
    assert kernel.seconds == pytest.approx(expected_median(document, "activation_0_nchwc"))
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
    walls = [
        e["dur"] * 1e-6
        for e in sorted((e for e in document["traceEvents"] if e["name"] == "model_run"), key=lambda e: e["ts"])[1:]
    ]
    assert len(runs) == 4 and mapping.run_seconds == pytest.approx(statistics.median(walls))


def test_parse_profile_at_level_basic_folds_batchnorm_into_the_conv(minigooglenet):
    mapping = map_profile(PROFILES / "minigooglenet-ort-basic.json", minigooglenet, warmup=1)
    kernels = {k.name: k for k in mapping.kernels}
    assert kernels["conv2d_0"].nodes == ["conv2d_0", "batch_normalization_0"]
    assert kernels["activation_0"].nodes == ["activation_0"]
    assert mapping.unattributed == [] and mapping.removed == ["dropout_0"] and mapping.not_seen == []
    assert set(mapping.seconds) == {r.name for r in minigooglenet.nodes}


@pytest.mark.parametrize("level", ["all", "basic"])
def test_the_optimized_graph_structure_agrees_with_the_names(minigooglenet, level):
    document = recorded_profile(level)
    optimized = OptimizedGraph.from_dict(document["optimized"])
    by_name = map_profile(document, minigooglenet, warmup=1)
    by_structure = map_profile(document, minigooglenet, warmup=1, optimized=optimized)
    assert {k.name: k.nodes for k in by_structure.kernels} == {k.name: k.nodes for k in by_name.kernels}
    assert by_structure.seconds == pytest.approx(by_name.seconds)
    assert OptimizedGraph.from_dict(optimized.to_dict()) == optimized


def test_a_fused_kernel_is_split_in_proportion_to_the_weights(minigooglenet):
    weights = {"conv2d_0": 3.0, "batch_normalization_0": 1.0, "activation_0": 0.0}
    mapping = map_profile(PROFILES / "minigooglenet-ort-all.json", minigooglenet, warmup=1, weights=weights)
    kernel = next(k for k in mapping.kernels if k.name == "activation_0_nchwc")
    assert mapping.seconds["conv2d_0"] == pytest.approx(0.75 * kernel.seconds)
    assert mapping.seconds["batch_normalization_0"] == pytest.approx(0.25 * kernel.seconds)
    assert mapping.seconds["activation_0"] == 0.0
    # all-zero weights: the node the kernel is named after gets it all
    zero = map_profile(PROFILES / "minigooglenet-ort-all.json", minigooglenet, warmup=1, weights={})
    assert zero.seconds["activation_0"] == pytest.approx(kernel.seconds)
    assert zero.seconds["conv2d_0"] == 0.0


# --- hand-made events --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_cnn():
    """x -> c1 (Conv) -> bn1 -> r1 (Relu) -> c2 -> bn2 -> r2 -> y; tensors are named t_<node>."""
    c = 4
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in (1, 2):
        nodes += [
            helper.make_node("Conv", [x, f"w{i}"], [f"t_c{i}"], name=f"c{i}", pads=[1, 1, 1, 1]),
            helper.make_node(
                "BatchNormalization", [f"t_c{i}", f"s{i}", f"b{i}", f"m{i}", f"v{i}"], [f"t_bn{i}"], name=f"bn{i}"
            ),
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
    events = [
        run_event(0, 1000),
        kernel_event("t_r1_nchwc", "Conv", 10, 100),
        kernel_event("t_r2_nchwc", "Conv", 120, 300),
        kernel_event("ReorderOutput", "ReorderOutput", 430, 20),
    ]
    mapping = map_profile(events, plain_cnn)
    kernels = {k.name: k.nodes for k in mapping.kernels}
    assert kernels == {"t_r1_nchwc": ["c1", "bn1", "r1"], "t_r2_nchwc": ["c2", "bn2", "r2"], "ReorderOutput": []}
    assert sum(mapping.seconds[n] for n in ("c2", "bn2", "r2")) == pytest.approx(300e-6)
    assert mapping.measured_s == pytest.approx(420e-6)


def test_a_fused_conv_named_after_the_conv_takes_what_follows(plain_cnn):
    events = [run_event(0, 1000), kernel_event("c1", "FusedConv", 10, 100), kernel_event("c2", "FusedConv", 120, 300)]
    kernels = {k.name: k.nodes for k in map_profile(events, plain_cnn).kernels}
    assert kernels == {"c1": ["c1", "bn1", "r1"], "c2": ["c2", "bn2", "r2"]}


def test_gemm_activation_fusion_named_fused_x(plain_cnn):
    events = [
        run_event(0, 1000),
        kernel_event("fused c1", "FusedConv", 10, 100),
        kernel_event("c2", "Conv", 120, 300),
        kernel_event("r2", "Relu", 430, 5),
    ]
    mapping = map_profile(events, plain_cnn)
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
    inits = [
        ("W", rng.standard_normal((8, 8)).astype(np.float32)),
        ("B", np.zeros(8, np.float32)),
        ("g", np.ones(8, np.float32)),
        ("b", np.zeros(8, np.float32)),
    ]
    return onnxroof.analyze(make_model(nodes, [("x", F32, [1, 4, 8])], [("y", F32, [1, 4, 8])], inits))


def test_kernels_with_made_up_names_are_placed_by_the_optimized_graph(residual_block):
    # onnxruntime 1.2x: MatMul+Add -> Gemm between two inserted Reshapes; Add+LayerNorm -> SkipLayerNormalization
    optimized = OptimizedGraph(
        {
            "gemm_input_reshape": (("x", "shape_in"), ("reshaped_in",), "Reshape"),
            "m1/MatMulAddFusion": (("reshaped_in", "W", "B"), ("gemm_out",), "Gemm"),
            "gemm_output_reshape": (("gemm_out", "shape_out"), ("t_a1",), "Reshape"),
            "SkipLayerNormalization_token_7": (("t_a1", "x", "g", "b"), ("y",), "SkipLayerNormalization"),
        },
        initializers=frozenset({"W", "B", "g", "b", "shape_in", "shape_out"}),
        inputs=frozenset({"x"}),
    )
    events = [
        run_event(0, 1000),
        kernel_event("gemm_input_reshape", "Reshape", 10, 2),
        kernel_event("m1/MatMulAddFusion", "Gemm", 20, 50),
        kernel_event("gemm_output_reshape", "Reshape", 80, 3),
        kernel_event("SkipLayerNormalization_token_7", "SkipLayerNormalization", 90, 8),
    ]
    mapping = map_profile(events, residual_block, optimized=optimized)
    kernels = {k.name: k.nodes for k in mapping.kernels}
    assert kernels == {
        "gemm_input_reshape": [],
        "m1/MatMulAddFusion": ["m1", "a1"],
        "gemm_output_reshape": [],
        "SkipLayerNormalization_token_7": ["a2", "ln"],
    }
    assert mapping.seconds["a2"] + mapping.seconds["ln"] == pytest.approx(8e-6)
    assert [k.name for k in mapping.unattributed] == ["gemm_input_reshape", "gemm_output_reshape"]
    # by names alone the made-up name matches nothing, and a2 and ln join the Gemm before them
    names_only = map_profile(events, residual_block)
    assert {k.name: k.nodes for k in names_only.kernels}["m1/MatMulAddFusion"] == ["m1", "a1", "a2", "ln"]
    assert "SkipLayerNormalization_token_7" in [k.name for k in names_only.unattributed]


def test_nodes_with_no_kernel_and_no_neighbour_are_not_seen(plain_cnn):
    mapping = map_profile([run_event(0, 100), kernel_event("Mystery", "Mystery", 1, 5)], plain_cnn)
    assert [k.name for k in mapping.unattributed] == ["Mystery"]
    assert set(mapping.not_seen) == {"c1", "bn1", "r1", "c2", "bn2", "r2"}
    assert mapping.seconds == {}
