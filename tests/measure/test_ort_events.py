"""Reading onnxruntime's profile: its events from a path, text or a list, each kernel's median over
the measured runs, and the structure of the graph onnxruntime ran."""

from __future__ import annotations

import json

import pytest
from measurements import PROFILES, kernel_event, recorded_profile, run_event

from onnxroof.core.errors import UsageError
from onnxroof.measure.ort_events import OptimizedGraph, kernel_medians, load_events


def test_recorded_profiles_are_small():
    for path in PROFILES.glob("minigooglenet-ort-*.json"):
        assert path.stat().st_size < 100_000


def test_load_events_accepts_paths_text_and_lists():
    document = recorded_profile("all")
    as_list = load_events(document["traceEvents"])
    assert load_events(json.dumps(document)) == as_list
    assert load_events(str(PROFILES / "minigooglenet-ort-all.json")) == as_list
    assert load_events(json.dumps(document).encode()) == as_list
    with pytest.raises(UsageError, match="no such file; give an onnxruntime profile"):
        load_events(PROFILES / "missing.json")


def test_warmup_missing_runs_nested_kernels_and_events_outside_runs():
    events = [
        kernel_event("c1", "Conv", 0, 7),  # during initialization: outside every run
        run_event(100, 100),
        kernel_event("c1", "Conv", 110, 50),
        kernel_event("r2", "Relu", 170, 10),  # warm-up
        run_event(300, 100),
        kernel_event("c1", "Conv", 310, 20),
        kernel_event("sub", "Add", 312, 5),
        kernel_event("r2", "Relu", 340, 4),
        run_event(500, 100),
        kernel_event("c1", "Conv", 510, 30),
        kernel_event("bn1", "Add", 540, 0),
        kernel_event("r2", "Relu", 545, 6),
        run_event(700, 100),
        kernel_event("c1", "Conv", 710, 40),  # r2 did not run (an If branch, say)
    ]
    medians, runs, wall = kernel_medians(events, warmup=1)
    assert runs == 3 and wall == pytest.approx(100e-6)
    assert medians["c1"] == ("Conv", pytest.approx(30e-6))
    assert medians["r2"] == ("Relu", pytest.approx(4e-6))  # median of 4, 6 and 0
    assert "sub" not in medians  # nested inside c1's span: a subgraph node, in c1's time already
    assert medians["bn1"] == ("Add", 0.0)  # starts as c1 ends, lasts under a microsecond: not nested
    # without run events, everything is one run
    medians, runs, wall = kernel_medians([kernel_event("c1", "Conv", 0, 7), kernel_event("c1", "Conv", 10, 3)])
    assert runs == 1 and wall is None and medians["c1"][1] == pytest.approx(10e-6)


def test_the_optimized_graph_knows_which_tensors_still_exist():
    graph = OptimizedGraph(
        {"gemm": (("x", "W"), ("y",), "Gemm"), "relu": (("y",), ("z",), "Relu")},
        initializers=frozenset({"W"}),
        inputs=frozenset({"x"}),
    )
    assert graph.available() == {"x", "W", "y", "z"}  # produced by a node, an initializer or a graph input
    assert OptimizedGraph.from_dict(json.loads(json.dumps(graph.to_dict()))) == graph
