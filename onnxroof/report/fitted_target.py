"""The target file `onnxroof calibrate --from-trace` writes: the base target's file with its
efficiency, launch, run and split costs, stall, error band and fusion tables replaced by the
figures fitted on the user's traces (:mod:`onnxroof.measure.trace_fit`), each saying which
traces it was fitted on."""

from __future__ import annotations

import datetime as _dt
import json
import re
import tempfile
from pathlib import Path

from ..measure.efficiency_fit import STREAMING
from ..measure.trace_fit import TraceFit
from ..roofline.targets import Target, parse_target
from .target_file import HOST_FUSION_RULES, HOST_FUSION_SOURCE, _toml_string

BEGIN = "# BEGIN fitted by onnxroof calibrate --from-trace: run it again rather than edit these tables"
END = "# END fitted"
FITTED_ON = "; efficiencies and launch cost fitted on onnxruntime traces of "
# the tables the fit replaces (what trace_fit.plain_roofs sets aside), with their lines up to the next table
_REPLACED = re.compile(
    r"^\[(efficiency(?:\.[A-Za-z0-9_.]+)?|node_overhead_s|split_overhead_s|cold_node_overhead_s|run_overhead_s"
    r"|dram_stall|subnormal_s_per_element|error_band|fusion)\]\n(?:(?!\[)[^\n]*\n)*",
    re.M,
)
_MARKERS = re.compile(r"^# (BEGIN fitted|END fitted)[^\n]*\n", re.M)


def render_fitted_target(result: TraceFit, name: str, base_text: str | None = None) -> str:
    """The fitted target's file: ``base_text`` (default: the base target's file) with the fitted
    tables in place of its own, under ``name``."""
    base = result.base
    text = base_text if base_text is not None else Path(base.path).read_text(encoding="utf-8")
    text = _REPLACED.sub("", _MARKERS.sub("", text))
    text = re.sub(r"^name = [^\n]*$", lambda _: f"name = {_toml_string(name)}", text, count=1, flags=re.M)
    kept = base.description.split(FITTED_ON)[0]  # a fitted file refitted: its earlier traces no longer count
    description = f"{kept}{FITTED_ON}{_traces(result)}"
    text = re.sub(
        r"^description = [^\n]*$", lambda _: f"description = {_toml_string(description)}", text, count=1, flags=re.M
    )
    return text.rstrip("\n") + "\n\n" + _block(result) + "\n"


def _traces(result: TraceFit) -> str:
    return ", ".join(f"{m.label} ({Path(m.trace).name})" for m in result.models)


def _block(result: TraceFit) -> str:
    gemm, streaming, launch = result.figures
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    measured = "; ".join(
        f"{m.label} from {m.trace}"
        + (f" (unprofiled latency {m.latency_s * 1e6:,.1f} µs)" if m.latency_s else "")
        + f": {len(m.kernels)} kernels, {m.events_s * 1e6:,.1f} µs of kernel events, {m.measured_s * 1e6:,.1f} µs "
        f"without the profiler, fitted {result.fitted_error(m):+.0%}"
        + (f", held out {result.held_out[m.label]:+.0%}" if result.held_out else "")
        for m in result.models
    )
    profiler = result.models[0].profiler_s if result.models else 0.0
    basis = (
        f"fitted by onnxroof calibrate --from-trace {date} on {len(result.models)} onnxruntime trace(s) "
        f"({measured}), on the roofs of {result.base.name}; onnxruntime's profiler's own cost, "
        f"{profiler * 1e6:.2f} µs a kernel event, taken out of each kernel ({result.profiler_basis})"
    )

    def table(key: str, value: float, source: str) -> str:
        return f'[{key}]\nvalue = {value:.4g}\ntag = "measured"\nsource = {_toml_string(source)}\n'

    parts = [BEGIN, table("efficiency.gemm", gemm, f"{basis}: the fraction of the roofline GEMM-class kernels reach")]
    parts += [
        table(
            f"efficiency.{c}",
            streaming,
            f"{basis}: the fraction of the roofline the streaming kernels reach (gemv, depthwise, elementwise, "
            "reduction, data movement and transpose fitted as one, as for the bundled targets)",
        )
        for c in STREAMING
    ]
    parts.append(table("node_overhead_s", launch, f"{basis}: seconds per kernel launched"))
    if result.run_s > 0:
        parts.append(
            table(
                "run_overhead_s",
                result.run_s,
                f"{basis}: seconds per run beyond its kernels, fitted with the profiler's cost on the unprofiled "
                "latencies (no trace holds it)",
            )
        )
    if result.band is not None:
        parts.append(
            table(
                "error_band",
                result.band,
                f"the largest |predicted / measured - 1| over the {len(result.models)} traced models, each "
                "predicted by a fit that left it out (onnxroof calibrate --from-trace)",
            )
            + "roofs = ["
            + ", ".join(f'"{roof}"' for roof in result.roofs())
            + "]\n"
        )
    parts.append(
        f"[fusion]\nrules = {json.dumps(list(HOST_FUSION_RULES))}\nsource = {_toml_string(HOST_FUSION_SOURCE)}\n"
    )
    if result.why_no_band:
        parts.append(f"# {result.why_no_band}\n")
    return "\n".join(parts) + END


def fitted_target(text: str) -> Target:
    """The fitted file's Target, through the validation any target file gets."""
    with tempfile.TemporaryDirectory(prefix="onnxroof-calibrate-") as directory:
        path = Path(directory) / "target.toml"
        path.write_text(text, encoding="utf-8")
        return parse_target(path)
