"""calibrate --from-trace (issue 46 item 3): a target's efficiencies and launch cost fitted on
hand-made onnxruntime traces of tiny models whose kernel times are set from known figures."""

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
from onnxroof.measure.trace_fit import fit_traces, read_traced_model
from onnxroof.report.fitted_target import fitted_target, render_fitted_target
from onnxroof.roofline.targets import load_target

# The roofs: 1 GFLOP/s and 1 GB/s, no on-chip level, nothing else (no efficiency, no launch cost).
ROOFS = target_text(
    {"peak_ops_per_s.fp32": 1e9, "dram.bandwidth_bytes_per_s": 1e9}, name="plain", description="1 GFLOP/s, 1 GB/s"
)
# The device the traces are "measured" on: GEMM-class kernels at half the roofline, streaming
# ones at a quarter, 4 µs a kernel launched.
GEMM, STREAMING, LAUNCH_US = 0.5, 0.25, 4.0
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
    """An onnxruntime profile: ``runs`` model_run events, each holding one event per kernel; the
    first run (the warm-up, dropped) ten times slower."""
    events, ts = [], 0
    for run in range(runs):
        slower = 10 if run == 0 else 1
        start = ts
        for name, op in (("mm", "MatMul"), ("relu", "Relu"), ("reshape", "Reshape")):
            dur = times_us[name] * slower
            events.append(
                {"cat": "Node", "name": f"{name}_kernel_time", "ts": ts, "dur": dur, "args": {"op_name": op}, "tid": 1}
            )
            ts += dur + 1
        events.append({"cat": "Session", "name": "model_run", "ts": start, "dur": ts - start, "tid": 1})
        ts += 5
    return events


@pytest.fixture
def files(tmp_path):
    (tmp_path / "plain.toml").write_text(ROOFS)
    pairs = []
    for n in (32, 64, 128):
        model, trace = tmp_path / f"mm{n}.onnx", tmp_path / f"mm{n}.json"
        model.write_bytes(_model(n).SerializeToString())
        trace.write_text(json.dumps(_trace(_kernel_us(n))))
        pairs.append((str(model), str(trace)))
    return tmp_path, pairs


def test_one_trace_gives_the_efficiencies_set_by_hand(files):
    folder, pairs = files
    result = fit_traces(pairs[1:2], load_target(str(folder / "plain.toml")))
    # n = 64: mm 2 x 64^3 = 524,288 FLOPs -> 524.288 µs at the roof, 1048.6 / 0.5 + 4 -> 1053 µs measured;
    # relu 32,768 B -> 32.768 µs at the roof, 131.07 + 4 -> 135 µs; reshape 4 µs (the warm-up run dropped)
    (model,) = result.models
    assert {k.name: k.measured_s * 1e6 for k in model.kernels} == pytest.approx({"mm": 1053, "relu": 135, "reshape": 4})
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
    # every trace follows the same figures: a fit on two predicts the third but for the grid's
    # rounding (under a step, 5 %, in each figure) and the traces' whole µs
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
    (model, trace) = pairs[1]
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
    for model, trace in pairs:
        argv += ["--from-trace", f"{model}={trace}"]
    assert main(argv) == 0
    target = load_target(str(out))
    assert target.name == "my-device" and abs(math.log(target.efficiency["gemm"].value / GEMM)) <= STEP
    assert "held-out error band" in capsys.readouterr().err
    assert main(["calibrate", "--from-trace", f"{pairs[0][0]}={pairs[0][1]}"]) == 2
    assert "--from-trace needs --target" in capsys.readouterr().err


# --- the frames (issue 46 item 4) ----------------------------------------------------------------


def test_the_profile_comparison_as_a_frame(files):
    pytest.importorskip("pandas")
    import onnxroof
    from onnxroof.measure.profile_run import compare
    from onnxroof.measure.profiling import ProfileResult, map_profile
    from onnxroof.roofline.placement import place_model

    folder, pairs = files
    model, trace = pairs[1]
    analysis = onnxroof.analyze(model)
    target = load_target(str(folder / "plain.toml"))
    report = place_model(analysis.cost_graph, analysis.memory, target, fusion=())
    mapping = map_profile(trace, analysis, warmup=1)
    result = ProfileResult(analysis, report, mapping, compare(analysis, report, mapping), "all", 1, 1, "test")
    frame = result.to_pandas().set_index("name")
    # the hand-made trace's medians over the two runs after the warm-up: 1053, 135 and 4 µs
    assert frame.loc["mm", "measured_s"] == pytest.approx(1053e-6)
    assert frame.loc["relu", "measured_s"] == pytest.approx(135e-6)
    # predicted on the plain roofs, one kernel per node: 524.288 µs and 32.768 µs (as above)
    assert frame.loc["mm", "predicted_s"] == pytest.approx(524.288e-6)
    assert frame.loc["mm", "ratio"] == pytest.approx(1053 / 524.288)
    assert frame.loc["mm", "error"] == pytest.approx(524.288 / 1053 - 1)
    assert frame.loc["mm", "kernel"] == "mm" and frame.loc["mm", "status"] == "own"


def test_the_trace_fit_as_a_frame(files):
    pytest.importorskip("pandas")
    folder, pairs = files
    result = fit_traces(pairs, load_target(str(folder / "plain.toml")))
    frame = result.to_pandas().set_index("model")
    assert list(frame.index) == ["mm32.onnx", "mm64.onnx", "mm128.onnx"]
    # mm64: 1053 + 135 + 4 µs measured, 3 kernels
    assert frame.loc["mm64.onnx", "measured_s"] == pytest.approx(1192e-6)
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
