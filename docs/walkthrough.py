# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # onnxroof in a notebook: load, analyse, compare with a trace, fit my device, export to Netron
#
# A script of `# %%` cells: open it in Jupyter (jupytext, or VS Code's "Run Cell") or run it whole with
# `python docs/walkthrough.py`; `tests/system/test_walkthrough.py` runs it. It needs onnxruntime (the
# traces) and pandas (the frames). Everything it writes goes to a temporary folder, or to
# `$ONNXROOF_WALKTHROUGH_DIR`.
#
# The story: a device onnxroof does not bundle (here, the machine this runs on), whose roofs you know
# (a datasheet's peaks and bandwidths; here measured), and an afternoon of onnxruntime profiles on it.

# %%
import os
import tempfile
from pathlib import Path

import onnx
import pandas

import onnxroof
from onnxroof.core.examples import build_example

pandas.set_option("display.width", 160)
pandas.set_option("display.max_columns", 10)
work = Path(os.environ.get("ONNXROOF_WALKTHROUGH_DIR") or tempfile.mkdtemp(prefix="onnxroof-walkthrough-"))
work.mkdir(parents=True, exist_ok=True)
models = {}
for name in ("shallownet", "minigooglenet", "minigooglenet-separable"):
    models[name] = work / f"{name}.onnx"
    onnx.save(build_example(name), models[name])
print(f"working in {work}")

# %% [markdown]
# ## 1. Load and analyse
#
# `onnxroof.analyze` takes a path or a ModelProto; `print` gives the short summary with the findings,
# `to_pandas()` one row per node, `findings_to_pandas()` one row per finding.

# %%
analysis = onnxroof.analyze(models["minigooglenet"], targets=["raspberry-pi-5"])
print(analysis)
nodes = analysis.to_pandas()
print(
    nodes.sort_values("time_s[raspberry-pi-5]", ascending=False)[
        ["name", "op_type", "macs", "time_s[raspberry-pi-5]"]
    ].head()
)

# %%
findings = analysis.findings_to_pandas()
print(findings[["target", "kind", "gain_share", "change", "title"]])

# %% [markdown]
# ## 2. My device's roofs
#
# A target file of the device's roofs alone: for a device you cannot run onnxroof on, write its
# datasheet's peak ops and memory bandwidths (see any file in `hardware/`); here, the machine this runs
# on, measured by `onnxroof calibrate` and written without its efficiencies. On plain roofs a latency is
# a bound, not a forecast.

# %%
from onnxroof.measure.calibration import calibrate  # noqa: E402
from onnxroof.report.target_file import render_target  # noqa: E402
from onnxroof.roofline.targets import load_target  # noqa: E402

roofs_file = work / "my-roofs.toml"
roofs_file.write_text(render_target(calibrate(seconds=2.0, threads=1), "my-roofs", with_efficiency=False))
roofs = load_target(str(roofs_file))
print(
    f"fp32 {roofs.peak_ops_per_s['fp32'].value / 1e9:.0f} GFLOP/s, DRAM {roofs.dram_bytes_per_s.value / 1e9:.1f} GB/s"
)

# %% [markdown]
# ## 3. Compare with a trace
#
# `profile_model` runs the model with onnxruntime's profiler (`onnxroof profile` does the same), keeps
# its raw trace (`keep_profile`), maps each kernel to the ONNX nodes it ran and sets the measured time
# beside the predicted one. `to_pandas()` gives one row per node.

# %%
from onnxroof.measure.profile_run import profile_model  # noqa: E402

traces, latencies = {}, {}
for name, path in models.items():
    traces[name] = work / f"{name}.trace.json"
    profiled = profile_model(onnxroof.analyze(path), roofs, runs=10, threads=1, keep_profile=traces[name])
    latencies[name] = profiled.wall_fastest_s  # its fastest run without the profiler
    print(
        f"{name}: predicted {profiled.predicted_s * 1e6:,.0f} µs on the plain roofs, "
        f"measured {profiled.measured_s * 1e6:,.0f} µs"
    )
comparison = profiled.to_pandas()  # the last model's, MiniGoogLeNet separable
comparison["gap_s"] = comparison["measured_s"] - comparison["predicted_s"]
print(
    comparison.sort_values("gap_s", ascending=False)[
        ["name", "op_type", "kernel", "predicted_s", "measured_s", "ratio"]
    ].head()
)

# %% [markdown]
# ## 4. Fit my device
#
# `onnxroof calibrate --from-trace MODEL=TRACE@LATENCY ... --target my-roofs.toml -o my-device.toml` in
# Python: the efficiencies and launch cost the bundled targets are fitted with, on these traces, each
# model also predicted by a fit on the others (the error band). Each model's latency without the
# profiler (optional) measures the profiler's own cost in each kernel event, which the fit takes out.
# The file names the traces it was fitted on.

# %%
from onnxroof.measure.trace_fit import fit_traces  # noqa: E402
from onnxroof.report.fitted_target import render_fitted_target  # noqa: E402

fitted = fit_traces([(str(models[name]), str(traces[name]), latencies[name]) for name in models], roofs)
print(fitted.to_pandas())
device_file = work / "my-device.toml"
device_file.write_text(render_fitted_target(fitted, "my-device"))
gemm, streaming, launch_s = fitted.figures
print(
    f"gemm {gemm:.2f}, streaming {streaming:.2f} of the roofline, {launch_s * 1e6:.2f} µs a kernel; "
    + (f"band {fitted.band:.0%}" if fitted.band is not None else fitted.why_no_band)
)

# %% [markdown]
# On the fitted target the latency is a forecast, with its error band:

# %%
forecast = onnxroof.analyze(models["minigooglenet"], targets=[str(device_file)])
(report,) = forecast.targets
print(
    f"{report.latency_kind}: {report.latency_s * 1e6:,.0f} µs (band ±{report.band.value:.0%})"
    if report.band
    else report.latency_s
)

# %% [markdown]
# ## 5. Export to Netron
#
# The Netron attachment (`onnxroof export MODEL --to netron --target my-device.toml`): open the model in
# Netron, then this file; each node's sidebar lists onnxroof's figures on the fitted device.

# %%
from onnxroof.report.netron import render_netron  # noqa: E402

attachment = work / "minigooglenet.onnxroof.json"
attachment.write_text(render_netron(forecast, onnxroof.review(forecast)))
print(f"wrote {attachment}")
