"""calibrate --from-trace (issue 46 item 3): a target's efficiencies and launch cost fitted on
hand-made onnxruntime traces of tiny models whose kernel times are set from known figures, with
the profiler's own cost in each kernel event taken out."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import pytest
from conftest import target_text
from onnx import TensorProto, helper

from onnxroof.cli.app import main
from onnxroof.core.errors import UsageError
from onnxroof.measure.efficiency_fit import EFFICIENCY_GRID, LAUNCH_GRID_S
from onnxroof.measure.trace_fit import TracedKernel, TracedModel, fit_traces, profiler_costs, read_traced_model
from onnxroof.report.fitted_target import fitted_target, render_fitted_target
from onnxroof.roofline.targets import load_target

# The roofs: 1 GFLOP/s and 1 GB/s, no on-chip level, nothing else (no efficiency, no launch cost).
ROOFS = target_text(
    {"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9}, name="plain", description="1 GFLOP/s, 1 GB/s"
)
# The device the traces are "measured" on: GEMM-class kernels at half the roofline, streaming
# ones at a quarter, 4 µs a kernel launched. Its profiler adds 2 µs inside each kernel event and
# leaves 3 µs between events (its bookkeeping: the fit does not read the gaps).
GEMM, STREAMING, LAUNCH_US = 0.5, 0.25, 4.0
PROFILER_US, GAP_US = 2, 3
STEP = math.log(EFFICIENCY_GRID[1] / EFFICIENCY_GRID[0])  # the efficiency grid's step: a factor 20^(1/60)
LAUNCH_STEP = math.log(LAUNCH_GRID_S[2] / LAUNCH_GRID_S[1])  # the launch grid's: 200^(1/47)


def _model(n: int) -> onnx.ModelProto:
    """X [n, n] -> MatMul by W [n, n] (mm) -> Relu (relu) -> Reshape to [n*n] (reshape)."""
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm"),
        helper.make_node("Relu", ["Y"], ["Z"], name="relu"),
        helper.make_node("Reshape", ["Z", "shape"], ["out"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [n * n])],
        [
            helper.make_tensor("W", TensorProto.FLOAT, [n, n], np.zeros(n * n, np.float32)),
            helper.make_tensor("shape", TensorProto.INT64, [1], [n * n]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _kernel_us(n: int) -> dict[str, int]:
    """Each kernel's time on the device, by hand, rounded to whole µs as onnxruntime records them.
    MatMul: 2 n^3 FLOPs at 1 GFLOP/s (its 3 n^2 x 4 B at 1 GB/s take less: compute-bound), over
    0.5, plus the launch. Relu: n^2 x 4 B in and out at 1 GB/s (its n^2 FLOPs take less), over 0.25,
    plus the launch. Reshape: the launch alone."""
    return {
        "mm": round(2 * n**3 / 1e9 * 1e6 / GEMM + LAUNCH_US),
        "relu": round(2 * n * n * 4 / 1e9 * 1e6 / STREAMING + LAUNCH_US),
        "reshape": round(LAUNCH_US),
    }


def _trace(times_us: dict[str, int], runs: int = 3) -> list[dict]:
    """An onnxruntime profile: ``runs`` model_run events, each holding one event per kernel (the
    kernel's time and the profiler's PROFILER_US, then a gap of GAP_US); the first run (the
    warm-up, dropped) ten times slower."""
    events, ts = [], 0
    for run in range(runs):
        slower = 10 if run == 0 else 1
        start = ts
        for name, op in (("mm", "MatMul"), ("relu", "Relu"), ("reshape", "Reshape")):
            dur = (times_us[name] + PROFILER_US) * slower
            events.append(
                {"cat": "Node", "name": f"{name}_kernel_time", "ts": ts, "dur": dur, "args": {"op_name": op}, "tid": 1}
            )
            ts += dur + GAP_US
        events.append({"cat": "Session", "name": "model_run", "ts": start, "dur": ts - start, "tid": 1})
        ts += 5
    return events


@pytest.fixture
def files(tmp_path):
    """(model, trace, latency) of mm32, mm64 and mm128: the latency, as timed without the profiler,
    is the sum of the kernels' times on the device."""
    (tmp_path / "plain.toml").write_text(ROOFS)
    pairs = []
    for n in (32, 64, 128):
        model, trace = tmp_path / f"mm{n}.onnx", tmp_path / f"mm{n}.json"
        model.write_bytes(_model(n).SerializeToString())
        trace.write_text(json.dumps(_trace(_kernel_us(n))))
        pairs.append((str(model), str(trace), sum(_kernel_us(n).values()) * 1e-6))
    return tmp_path, pairs


def test_one_trace_gives_the_efficiencies_set_by_hand(files):
    folder, pairs = files
    result = fit_traces(pairs[1:2], load_target(str(folder / "plain.toml")))
    # n = 64: mm 2 x 64^3 = 524,288 FLOPs -> 524.288 µs at the roof, 1048.6 / 0.5 + 4 -> 1053 µs on the
    # device; relu 32,768 B -> 32.768 µs at the roof, 131.07 + 4 -> 135 µs; reshape 4 µs (the warm-up
    # run dropped). Each event also holds the profiler's 2 µs: 1055, 137 and 6 µs.
    (model,) = result.models
    assert {k.name: k.measured_s * 1e6 for k in model.kernels} == pytest.approx({"mm": 1055, "relu": 137, "reshape": 6})
    # the latency given, 1053 + 135 + 4 = 1192 µs: the events' 1198 µs less it, over 3 kernels, is
    # the profiler's 2 µs a kernel event, taken out of each
    assert model.profiler_s == pytest.approx(2e-6) and model.measured_s == pytest.approx(1192e-6)
    # each group's row weighs its share of the model's time: 1053, 135 and 4 of 1192 µs
    rows = model.rows("plain")
    assert [row.measured * 1e6 for row in rows] == pytest.approx([1053, 135, 4])
    assert [row.weight for row in rows] == pytest.approx([1053 / 1192, 135 / 1192, 4 / 1192])
    assert {k.name: k.roof_s * 1e6 for k in model.kernels} == pytest.approx(
        {"mm": 524.288, "relu": 32.768, "reshape": 0}
    )
    gemm, streaming, launch = result.figures
    # the fit is a grid search: each figure the grid point nearest the hand value, within a step
    assert abs(math.log(gemm / GEMM)) <= STEP
    assert abs(math.log(streaming / STREAMING)) <= STEP
    assert abs(math.log(launch / (LAUNCH_US * 1e-6))) <= LAUNCH_STEP
    assert result.band is None and "no error band" in result.why_no_band


def test_three_models_hold_each_other_out_within_the_grid(files):
    folder, pairs = files
    result = fit_traces(pairs, load_target(str(folder / "plain.toml")))
    assert sorted(result.held_out) == ["mm128.onnx", "mm32.onnx", "mm64.onnx"]
    # every trace follows the same figures (the profiler's 2 µs a kernel measured from the three
    # latencies: each model's events exceed its latency by 3 x 2 µs): a fit on two predicts the
    # third but for the grid's rounding (under a step, 5 %, in each figure) and the traces' whole µs
    assert [m.profiler_s for m in result.models] == pytest.approx([2e-6] * 3)
    assert result.band is not None and result.band < 0.06
    assert result.roofs() == ["fp32"]


def test_the_file_names_its_traces_and_loads_with_the_fitted_figures(files):
    folder, pairs = files
    result = fit_traces(pairs, load_target(str(folder / "plain.toml")))
    text = render_fitted_target(result, "my-device")
    target = fitted_target(text)
    gemm, streaming, launch = result.figures
    assert target.name == "my-device" and "mm64.onnx (mm64.json)" in target.description
    assert target.efficiency["gemm"].value == pytest.approx(gemm, rel=1e-3)
    assert target.efficiency["reduction"].value == pytest.approx(streaming, rel=1e-3)
    assert target.node_overhead_s.value == pytest.approx(launch, rel=1e-3)
    assert "mm128.json" in target.efficiency["gemm"].source
    assert target.error_band.value == pytest.approx(result.band, rel=1e-3) and target.error_band_roofs == ("fp32",)
    assert target.fusion == ("epilogue", "normalization")


def test_the_fitted_target_predicts_the_traced_model(files, tmp_path):
    import onnxroof

    folder, pairs = files
    result = fit_traces(pairs, load_target(str(folder / "plain.toml")))
    path = tmp_path / "fitted.toml"
    path.write_text(render_fitted_target(result, "fitted"))
    (report,) = onnxroof.analyze(pairs[1][0], targets=[str(path)], fusion="none").targets
    # by its rules, one kernel per node: the MatMul and the Relu each a launch and their roof over the
    # fitted figure (the Reshape, a view, runs nothing): close to the traced 1053 + 135 µs
    gemm, streaming, launch = result.figures
    # (rel 1e-3: the file writes each figure to 4 significant digits)
    assert report.latency_s == pytest.approx(524.288e-6 / gemm + 32.768e-6 / streaming + 2 * launch, rel=1e-3)


@pytest.mark.parametrize(
    "pair, message",
    [
        ("missing.onnx={trace}", "no model file"),
        ("{model}=missing.json", "no trace file"),
        ("{other}={trace}", "maps to nodes of"),
        ("{model}={model}", "not an onnxruntime profile"),
    ],
)
def test_bad_inputs_are_one_line_errors(files, capsys, pair, message):
    folder, pairs = files
    other = folder / "other.onnx"
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"], name="elsewhere")],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])],
    )
    other.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    (model, trace, _) = pairs[1]
    given = pair.format(model=model, trace=trace, other=other)
    out = folder / "out.toml"
    argv = ["calibrate", "--from-trace", given, "--target", str(folder / "plain.toml"), "-o", str(out)]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1 and not out.exists()


def test_too_few_kernels_is_an_error(files):
    folder, _ = files
    model, trace = folder / "relu.onnx", folder / "relu.json"
    graph = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["Y"], name="relu")],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])],
    )
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    trace.write_text(
        json.dumps([{"cat": "Node", "name": "relu_kernel_time", "ts": 0, "dur": 3, "args": {"op_name": "Relu"}}])
    )
    with pytest.raises(UsageError, match="fewer than the 3 figures fitted"):
        fit_traces([(str(model), str(trace))], load_target(str(folder / "plain.toml")))


def test_the_command_writes_the_fitted_target(files, capsys):
    folder, pairs = files
    out = folder / "my-device.toml"
    argv = ["calibrate", "--target", str(folder / "plain.toml"), "-o", str(out)]
    for model, trace, latency in pairs:
        argv += ["--from-trace", f"{model}={trace}@{latency * 1e3:g}ms"]
    assert main(argv) == 0
    target = load_target(str(out))
    assert target.name == "my-device" and abs(math.log(target.efficiency["gemm"].value / GEMM)) <= STEP
    assert abs(math.log(target.node_overhead_s.value / (LAUNCH_US * 1e-6))) <= LAUNCH_STEP
    # mm64 given @1.192ms: its latency and the profiler's cost are in the file
    assert "mm64.onnx from" in target.node_overhead_s.source and "latency 1,192.0 µs" in target.node_overhead_s.source
    assert "2.00 µs a kernel event" in target.node_overhead_s.source
    assert "held-out error band" in capsys.readouterr().err
    assert main(["calibrate", "--from-trace", f"{pairs[0][0]}={pairs[0][1]}"]) == 2
    assert "--from-trace needs --target" in capsys.readouterr().err
    given = f"{pairs[0][0]}={pairs[0][1]}@12"  # no unit
    assert main(["calibrate", "--target", str(folder / "plain.toml"), "--from-trace", given]) == 2
    error = capsys.readouterr().err.strip()
    assert "needs its unit" in error and len(error.splitlines()) == 1


# --- the frames (issue 46 item 4) ----------------------------------------------------------------


def test_the_profile_comparison_as_a_frame(files):
    pytest.importorskip("pandas")
    import onnxroof
    from onnxroof.measure.profile_run import compare
    from onnxroof.measure.profiling import ProfileResult, map_profile
    from onnxroof.roofline.placement import place_model

    folder, pairs = files
    model, trace, _ = pairs[1]
    analysis = onnxroof.analyze(model)
    target = load_target(str(folder / "plain.toml"))
    report = place_model(analysis.cost_graph, analysis.memory, target, fusion=())
    mapping = map_profile(trace, analysis, warmup=1)
    result = ProfileResult(analysis, report, mapping, compare(analysis, report, mapping), "all", 1, 1, "test")
    frame = result.to_pandas().set_index("name")
    # the hand-made trace's medians over the two runs after the warm-up: 1055, 137 and 6 µs (with the
    # profiler's 2 µs, which `profile` leaves in: it compares what the profile shows)
    assert frame.loc["mm", "measured_s"] == pytest.approx(1055e-6)
    assert frame.loc["relu", "measured_s"] == pytest.approx(137e-6)
    # predicted on the plain roofs, one kernel per node: 524.288 µs and 32.768 µs (as above)
    assert frame.loc["mm", "predicted_s"] == pytest.approx(524.288e-6)
    assert frame.loc["mm", "ratio"] == pytest.approx(1055 / 524.288)
    assert frame.loc["mm", "error"] == pytest.approx(524.288 / 1055 - 1)
    assert frame.loc["mm", "kernel"] == "mm" and frame.loc["mm", "status"] == "own"


def test_the_trace_fit_as_a_frame(files):
    pytest.importorskip("pandas")
    folder, pairs = files
    result = fit_traces(pairs, load_target(str(folder / "plain.toml")))
    frame = result.to_pandas().set_index("model")
    assert list(frame.index) == ["mm32.onnx", "mm64.onnx", "mm128.onnx"]
    # mm64: 1055 + 137 + 6 µs of events, less the profiler's 2 µs in each of its 3 kernels
    assert frame.loc["mm64.onnx", "events_s"] == pytest.approx(1198e-6)
    assert frame.loc["mm64.onnx", "measured_s"] == pytest.approx(1192e-6)
    assert frame.loc["mm64.onnx", "latency_s"] == pytest.approx(1192e-6)
    assert frame.loc["mm64.onnx", "kernels"] == 3
    assert frame["held_out_error"].abs().max() == pytest.approx(result.band)


def test_an_input_dim_left_open_is_read_from_the_trace(files):
    folder, _ = files
    model = _model(64)
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "width"  # X [64, width]: not a batch dim
    path, trace = folder / "open.onnx", folder / "open.json"
    path.write_bytes(model.SerializeToString())
    events = _trace(_kernel_us(64))
    for event in events:
        if event["name"] == "mm_kernel_time":  # onnxruntime records the shapes each kernel read
            event["args"]["input_type_shape"] = [{"float": [64, 64]}, {"float": [64, 64]}]
    trace.write_text(json.dumps(events))
    traced = read_traced_model(str(path), str(trace), load_target(str(folder / "plain.toml")))
    # X bound to [64, 64] from the trace: the MatMul's 2 x 64^3 FLOPs at 1 GFLOP/s, as for mm64
    assert {k.name: k.roof_s * 1e6 for k in traced.kernels}["mm"] == pytest.approx(524.288)
    for event in events:
        event.get("args", {}).pop("input_type_shape", None)  # (a model_run event has no args)
    trace.write_text(json.dumps(events))
    with pytest.raises(UsageError, match="width.*does not show them"):
        read_traced_model(str(path), str(trace), load_target(str(folder / "plain.toml")))


def test_a_fitted_file_refitted_keeps_one_fitted_block(files):
    folder, pairs = files
    first = folder / "first.toml"
    first.write_text(render_fitted_target(fit_traces(pairs, load_target(str(folder / "plain.toml"))), "first"))
    text = render_fitted_target(fit_traces(pairs, load_target(str(first))), "second")
    assert text.count("# BEGIN fitted") == 1 and text.count("[efficiency.gemm]") == 1
    assert fitted_target(text).description.count("fitted on onnxruntime traces") == 1


# --- the profiler's own cost (issue 46 item 3's acceptance) ---------------------------------------


def test_a_trace_alone_takes_its_cheapest_event_as_the_profiler(files):
    folder, pairs = files
    result = fit_traces([(model, trace) for model, trace, _ in pairs], load_target(str(folder / "plain.toml")))
    # no latency: the cheapest event of the three traces, a reshape's 4 µs launch + 2 µs profiler = 6 µs
    # (mm32's, 2 x 32^3 = 65,536 FLOPs, is 131 + 4 + 2 = 137 µs), is taken as all profiler
    assert [m.profiler_s for m in result.models] == pytest.approx([6e-6] * 3)
    assert "cheapest kernel event" in result.profiler_basis and "reshape" in result.profiler_basis
    # mm64's kernels: 1055 - 6, 137 - 6 and 6 - 6 µs, the last kept at an eighth of the cost, 0.75 µs;
    # the launch the trace alone cannot tell from the profiler's cost is taken out with it
    rows = result.models[1].rows("plain")
    assert [row.measured * 1e6 for row in rows] == pytest.approx([1049, 131, 6 / 8])
    assert result.figures[2] < LAUNCH_US * 1e-6


def test_a_model_without_latency_gets_the_timed_models_profiler_cost(files):
    folder, pairs = files
    given = [pairs[0], pairs[1][:2], pairs[2]]  # mm64 without its latency
    result = fit_traces(given, load_target(str(folder / "plain.toml")))
    # mm32 and mm128 each exceed their latency by 3 kernels x 2 µs: the least squares gives 2 µs, mm64's too
    assert [m.profiler_s for m in result.models] == pytest.approx([2e-6] * 3)
    assert "unprofiled latency of the 2 model(s)" in result.profiler_basis


def _timed(kernels: int, events_us: float, latency_us: float) -> TracedModel:
    """A traced model reduced to what profiler_costs reads: its kernel events and its latency."""
    each = [TracedKernel(f"k{i}", "Add", "streaming", 0.0, events_us / kernels * 1e-6) for i in range(kernels)]
    return TracedModel("m.onnx", "m.json", None, None, each, latency_s=latency_us * 1e-6)  # type: ignore[arg-type]


def test_the_profiler_cost_weighs_each_model_by_its_relative_error():
    # A: 3 kernels, 106 µs of events, 100 µs unprofiled (excess 2 µs a kernel); B: 3 kernels, 1030 µs
    # against 1000 (10 µs a kernel, say its timing noise). Least squares of excess / latency = cost x
    # kernels / latency: r = 3/100 and 3/1000 per µs, e = 0.06 and 0.03; cost = (0.03 x 0.06 + 0.003 x
    # 0.03) / (0.03^2 + 0.003^2) = 0.00189 / 0.000909 = 2.0792 µs: A, whose excess is all per kernel, rules
    models = [_timed(3, 106, 100), _timed(3, 1030, 1000)]
    profiler_costs(models)
    assert [m.profiler_s * 1e6 for m in models] == pytest.approx([0.00189 / 0.000909] * 2)
    # a latency longer than the events (timed under load) never gives a negative cost
    late = [_timed(3, 100, 200)]
    profiler_costs(late)
    assert late[0].profiler_s == 0.0
    # one much shorter (the events timed under load): 3 events of 10 µs, 1 µs unprofiled -> the cost
    # (30 - 1) / 3 = 9.67 µs an event, which leaves each kernel 0.33 µs: kept at an eighth of the cost
    short = [_timed(3, 30, 1)]
    profiler_costs(short)
    assert short[0].profiler_s * 1e6 == pytest.approx(29 / 3)
    assert short[0].measured_s * 1e6 == pytest.approx(3 * 29 / 3 / 8)


def test_three_timed_models_also_give_the_runs_own_cost():
    # events - latency = kernels x cost - run, with a cost of 2 µs and a run of 5 µs:
    # 3 kernels, 100 µs -> 101 µs of events; 30 kernels, 500 µs -> 555; 10 kernels, 50 µs -> 65.
    # Three equations, two unknowns, all met: least squares gives them back
    models = [_timed(3, 101, 100), _timed(30, 555, 500), _timed(10, 65, 50)]
    profiler_costs(models)
    assert models[0].profiler_s * 1e6 == pytest.approx(2) and models[0].run_s * 1e6 == pytest.approx(5)
    # two timed models fit the cost alone (the run's cost is 0): see the test above
    assert profiler_costs(models[:2]) and models[0].run_s == 0.0


def test_the_runs_cost_goes_in_the_file(files):
    folder, pairs = files
    # each latency 5 µs longer (a run's own cost): events - latency = 3 x 2 - 5 = 1 µs for all three.
    # The three have 3 kernels each, so a run's cost cannot be told from the kernels': none is fitted,
    # and the 1 µs excess is the profiler's, 1/3 µs a kernel event
    given = [(model, trace, latency + 5e-6) for model, trace, latency in pairs]
    result = fit_traces(given, load_target(str(folder / "plain.toml")))
    assert result.run_s == 0.0 and result.models[0].profiler_s * 1e6 == pytest.approx(1 / 3)
    assert "[run_overhead_s]" not in render_fitted_target(result, "my-device")
    for model in result.models:  # a run's cost fitted (as from models of several kernel counts)
        model.run_s = 5e-6
    target = fitted_target(render_fitted_target(result, "my-device"))
    assert target.run_overhead_s is not None and target.run_overhead_s.value == pytest.approx(5e-6, rel=1e-3)
