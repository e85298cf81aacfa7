"""``onnxroof calibrate --from-trace``: a target's efficiencies and launch cost fitted on a user's
own onnxruntime profiles, with the fitter the bundled targets are fitted with
(:mod:`onnxroof.measure.efficiency_fit`).

For a device onnxroof does not bundle, the roofs come from a base target (a bundled one, or a
TOML of the device's datasheet figures: peak ops, memory bandwidths); its efficiencies, launch
and run costs and error band are set aside, and what the runtime reaches of those roofs is
fitted on the traces:

1. Each trace is read as ``onnxroof profile`` reads its own (:func:`profiling.map_profile`: each
   onnxruntime kernel's median over the runs after the first, mapped to the ONNX nodes it
   covers).
2. The model is placed on the base target's plain roofs *as onnxruntime ran it* (its kernels
   are the groups, :func:`placement.place_model`), and each kernel's roofline seconds are read
   at efficiency 1, no launch cost: its class says whether it is GEMM-class, streaming or of no
   class. A kernel onnxruntime added (a layout reorder) is costed from the bytes its event
   records (:func:`profile_run.added_kernel_roof_s`).
3. Each model gives the fitter up to three rows (:class:`efficiency_fit.FitRow`): its GEMM-class
   kernels, its streaming kernels and its kernels of no class, each with its roof seconds, its
   launches (one a kernel) and its measured seconds. A row is a sum of kernels, and weighs its
   share of its model's time, so the fit weighs kernels by their time, as a model's latency does.
4. The fit (:func:`efficiency_fit.fit`, the streaming efficiency searched over the whole grid: a
   trace times the streaming kernels apart) gives the GEMM efficiency, the streaming one and the
   launch cost. Held out: each model's total is predicted by a fit on the other models' rows; the
   error band is the largest of those errors (with at least three models: leaving one out must
   leave :data:`efficiency_fit.MIN_ROWS` rows).

**The profiler's own cost.** A kernel's time is its event's duration less what onnxruntime's
profiler adds inside each kernel event (:func:`profiler_costs`). Measured on one core of the
machine this was written on (onnxruntime 1.32, x86; docs/validation-measured.md): a kernel that
does almost nothing (Shape, Unsqueeze, Flatten) lasts 2 µs in the profile, and the Whisper decoder
step, 169 such kernels, shows 471 µs of events for a 146 µs unprofiled run, 1.9 µs a kernel more;
the gaps between events (3.9 µs a kernel there) are mostly the profiler's too and are not read. For
a model of a few large kernels it does not matter (ResNet-50 at 96x96: 17,607 µs of events, 17,328
µs unprofiled); for a decoder step it is two-thirds of the events' time. The cost taken out of each
kernel:

- with models given with their unprofiled latency (``MODEL=TRACE@LATENCY``: ``session.run``
  timed without the profiler, same threads): the cost that fits their events' excess over their
  latency, per kernel (least squares on the relative excess: the launch-bound models, whose
  excess is mostly the profiler's, weigh; a large model's, mostly its timing noise, barely),
  one figure for every model. With three timed models or more, of different kernel counts, the
  run's own cost beyond its kernels (binding inputs and outputs, the call from Python: no trace
  holds it) is fitted beside it (the excess is kernels x cost - run) and written as the target's
  ``[run_overhead_s]``: 1.98 µs an event and 5.30 µs a run here (``calibrate``: 4.5 µs a run);
- no latency at all: the duration of the cheapest kernel event of all the traces, taken as all
  profiler (2 µs here): an estimate that reads the device's own speed, but takes most of the
  cheapest kernels' own work out of the fitted launch cost.

No kernel is left below :data:`KERNEL_FLOOR` of the profiler's cost (0.25 µs here): a kernel whose
event the profiler's cost takes whole (the cheapest, with traces alone; any short one, with a
latency timed under load) keeps the time of a launch, and its group its row.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UnboundDims, UsageError
from . import efficiency_fit
from .efficiency_fit import STREAMING, Fit, FitRow
from .ort_events import load_events
from .profile_run import _ADDED_KERNEL_CLASSES, added_kernel_roof_s, placed_as_run
from .profiling import ProfileMapping, map_profile

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.targets import Target

# a trace whose mapped kernels hold less of its time than this is not a profile of the model
MIN_MAPPED_SHARE = 0.5
MIN_TIMED_ROWS = 3  # three figures are fitted: fewer timed rows leave one free
# the groups a model's kernels are summed in, one row each
GROUPS = ("gemm", "streaming", "other")
# A kernel's time without the profiler is kept at least this share of the profiler's cost per event:
# a kernel is never free (here calibrate measures 0.26 µs per extra kernel, 1/7 of the profiler's
# 1.83 µs), and a group of the cheapest kernels keeps its row when the cost is their whole event
KERNEL_FLOOR = 1 / 8
MIN_RUN_FIT = 3  # timed models from which the run's own cost is fitted beside the profiler's


@dataclass
class TracedKernel:
    """One kernel of a trace: what it ran, its roofline seconds on the base target's plain roofs
    and its measured median seconds."""

    name: str
    op_type: str
    group: str  # GROUPS
    roof_s: float
    measured_s: float
    roof: str | None = None  # the compute roof it ran on (None: a kernel onnxruntime added)


@dataclass
class TracedModel:
    """A model and its trace, read and taken apart."""

    model: str  # the model's file as given
    trace: str  # the trace's file as given
    analysis: Analysis
    mapping: ProfileMapping
    kernels: list[TracedKernel]
    latency_s: float | None = None  # the model's unprofiled latency, if the user timed it
    profiler_s: float = 0.0  # the profiler's cost in each kernel event, taken out (profiler_costs)
    profiler_basis: str = ""  # where profiler_s comes from, in words
    run_s: float = 0.0  # the run's cost beyond its kernels, fitted with profiler_s (0: not measured)

    @property
    def label(self) -> str:
        return Path(self.model).name

    @property
    def events_s(self) -> float:
        """The sum of the kernel events' medians, as the profile has them."""
        return sum(k.measured_s for k in self.kernels)

    def kernel_s(self, kernel: TracedKernel) -> float:
        """The kernel's time without the profiler: its event less the profiler's cost, and at least
        KERNEL_FLOOR of that cost (a kernel is never free)."""
        return max(kernel.measured_s - self.profiler_s, KERNEL_FLOOR * self.profiler_s)

    @property
    def measured_s(self) -> float:
        """The kernels' time without the profiler."""
        return sum(self.kernel_s(k) for k in self.kernels)

    def rows(self, target: str) -> list[FitRow]:
        """The fitter's rows: one per group of kernels with measured time."""
        rows = []
        total = self.measured_s
        for group in GROUPS:
            mine = [k for k in self.kernels if k.group == group]
            measured = sum(self.kernel_s(k) for k in mine)
            if not mine or measured <= 0:
                continue
            row = FitRow(target, self.label, measured, launches=float(len(mine)), weight=measured / total)
            roof = sum(k.roof_s for k in mine)
            if group == "gemm":
                row.gemm_s = roof
            elif group == "streaming":
                row.streaming_s = roof
            else:
                row.other_s = roof
            rows.append(row)
        return rows


@dataclass
class TraceFit:
    """The fit on the traces: the figures, each model's held-out error and the band."""

    base: Target
    models: list[TracedModel]
    fit: Fit
    held_out: dict[str, float] = field(default_factory=dict)  # model label -> predicted / measured - 1, held out
    band: float | None = None  # the largest |held-out error|; None with fewer than three models
    why_no_band: str = ""
    profiler_basis: str = ""  # how the profiler's cost per kernel event was set, in words

    @property
    def figures(self) -> tuple[float, float, float]:
        return self.fit.figures(self.base.name)

    @property
    def run_s(self) -> float:
        """The run's cost beyond its kernels, fitted on the latencies (0 when not measured)."""
        return self.models[0].run_s if self.models else 0.0

    def fitted_error(self, model: TracedModel) -> float:
        """The model's error under the fit on every trace (its own included)."""
        return total_error(model.rows(self.base.name), self.figures, model.run_s)

    def to_pandas(self):
        """One row per traced model (``pip install pandas``): its model and trace, kernels, the kernel
        events' sum, the profiler's cost per kernel taken out of it, measured seconds (the kernels
        without the profiler), the latency given, its error under the fit on every trace and held out."""
        from ..core.frames import data_frame

        rows = [
            {
                "model": m.label,
                "trace": m.trace,
                "kernels": len(m.kernels),
                "events_s": m.events_s,
                "profiler_s_per_kernel": m.profiler_s,
                "measured_s": m.measured_s,
                "latency_s": m.latency_s,
                "fitted_error": self.fitted_error(m),
                "held_out_error": self.held_out.get(m.label),
            }
            for m in self.models
        ]
        return data_frame(rows, "TraceFit.to_pandas")

    def roofs(self) -> list[str]:
        """The compute roofs the traces' kernels ran on (where the band holds)."""
        return sorted({k.roof for m in self.models for k in m.kernels if k.roof})


def total_error(rows: Sequence[FitRow], figures: tuple[float, float, float], run_s: float = 0.0) -> float:
    """The summed rows' predicted over measured seconds, each with the run's cost ``run_s``, minus 1."""
    return (sum(r.predict(*figures) for r in rows) + run_s) / (sum(r.measured for r in rows) + run_s) - 1


def plain_roofs(target: Target) -> Target:
    """``target`` with only its roofs: no efficiency, launch, run or split cost, stall or band
    (what the fit measures against, and replaces)."""
    return dataclasses.replace(
        target,
        efficiency={},
        efficiency_on_roof={},
        efficiency_by_columns={},
        efficiency_by_op={},
        efficiency_by_rows={},
        node_overhead_s=None,
        split_overhead_s=None,
        cold_node_overhead_s=None,
        run_overhead_s=None,
        dram_stall=None,
        subnormal_s_per_element=None,
        error_band=None,
        error_band_roofs=(),
    )


def read_traced_model(
    model: str, trace: str, base: Target, latency_s: float | None = None, **analysis_options
) -> TracedModel:
    """Read ``trace`` (an onnxruntime profile of ``model``, analysed with ``analysis_options``:
    its dims, input shapes) and take it apart on ``base``'s roofs; ``latency_s`` is the model's
    unprofiled latency, if timed. UsageError, in one line, when a file is missing, the trace has no
    kernels or is another model's."""
    from ..pipeline import analyze
    from ..roofline.placement import place_model

    if not os.path.isfile(model):
        raise UsageError(f"--from-trace {model}={trace}: no model file {model}")
    if not os.path.isfile(trace):
        raise UsageError(f"--from-trace {model}={trace}: no trace file {trace}")
    events = load_events(trace)
    runs = sum(1 for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    if not any(e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time") for e in events):
        raise UsageError(
            f"{trace}: no kernel events (NAME_kernel_time): not an onnxruntime profile; record one with "
            "SessionOptions.enable_profiling = True and a few runs"
        )
    try:
        analysis = analyze(model, **analysis_options)
    except UnboundDims as unbound:  # the trace ran the model at some shapes: its events record them
        shapes = trace_input_shapes(events, model)
        if not shapes or analysis_options:
            raise UsageError(
                f"{unbound.head()}, and {trace} does not show them (no kernel of a node that reads the "
                "input records its shape); export the model with fixed input shapes"
            ) from None
        analysis = analyze(model, input_shapes=shapes)
    roofs = plain_roofs(base)
    unfused = place_model(analysis.cost_graph, analysis.memory, roofs, analysis.dtype, analysis.batch or 1, fusion=())
    weights = {n.name: n.placement.time_s for n in unfused.nodes}
    # the first run is onnxruntime's warm-up (allocations, first touches): dropped when there are others
    mapping = map_profile(events, analysis, warmup=1 if runs >= 2 else 0, weights=weights)
    total = mapping.measured_s
    mapped = sum(k.seconds for k in mapping.kernels if k.nodes)
    if total <= 0 or mapped < MIN_MAPPED_SHARE * total:
        raise UsageError(
            f"{trace}: only {mapped / total if total else 0:.0%} of its kernel time maps to nodes of {model}: "
            "a trace of another model? Pair each model with its own trace (MODEL.onnx=TRACE.json)"
        )
    if latency_s is not None and not latency_s > 0:
        raise UsageError(f"--from-trace {model}={trace}@...: the latency must be a positive time, like @12.3ms")
    return TracedModel(model, trace, analysis, mapping, _kernels(analysis, mapping, roofs), latency_s)


def trace_input_shapes(events: Sequence[dict], model: str) -> dict[str, list[int]]:
    """The shapes the trace ran the model's inputs at: each input's shape in the
    ``input_type_shape`` of the first kernel event named after a node that reads it (a kernel
    onnxruntime renamed or fused away shows none)."""
    import onnx

    graph = onnx.load(model, load_external_data=False).graph
    inputs = {i.name for i in graph.input} - {t.name for t in graph.initializer}
    readers: dict[str, list[tuple[int, str]]] = {}  # node -> (position, model input)
    for node in graph.node:
        for position, name in enumerate(node.input):
            if name in inputs:
                readers.setdefault(node.name, []).append((position, name))
    shapes: dict[str, list[int]] = {}
    for event in events:
        name = str(event.get("name", "")).removesuffix("_kernel_time")
        recorded = (event.get("args") or {}).get("input_type_shape")
        if event.get("cat") != "Node" or name not in readers or not isinstance(recorded, list):
            continue
        for position, tensor in readers[name]:
            if position < len(recorded) and isinstance(recorded[position], dict) and tensor not in shapes:
                dims = next(iter(recorded[position].values()), None)
                if isinstance(dims, list) and all(isinstance(d, int) and d >= 0 for d in dims):
                    shapes[tensor] = dims
    return shapes


def _kernels(analysis: Analysis, mapping: ProfileMapping, roofs: Target) -> list[TracedKernel]:
    """Each kernel of the trace with its group and roofline seconds on the plain ``roofs``."""
    report = placed_as_run(analysis, mapping, roofs)
    placed = {kernel.nodes[0]: kernel.placement for kernel in report.nodes}
    found = []
    for kernel in mapping.kernels:
        point = next((placed[n] for n in kernel.nodes if n in placed), None)
        if point is not None:
            group = _group_of(point.kernel_class)
            found.append(TracedKernel(kernel.name, kernel.op_type, group, point.time_s, kernel.seconds, point.roof))
        elif kernel.nodes:  # a view or shape op onnxruntime launched: a launch, no roof time
            found.append(TracedKernel(kernel.name, kernel.op_type, "other", 0.0, kernel.seconds))
        else:  # a kernel onnxruntime added (a layout reorder): its bytes, at its class's pace
            roof_s = added_kernel_roof_s(kernel.op_type, kernel.sizes, roofs) if kernel.sizes else 0.0
            group = _group_of(_ADDED_KERNEL_CLASSES.get(kernel.op_type, "data_movement")) if kernel.sizes else "other"
            found.append(TracedKernel(kernel.name, kernel.op_type, group, roof_s, kernel.seconds))
    return found


def _group_of(kernel_class: str | None) -> str:
    return "gemm" if kernel_class == "gemm" else "streaming" if kernel_class in STREAMING else "other"


def profiler_costs(models: Sequence[TracedModel]) -> str:
    """Set each model's ``profiler_s``, the profiler's cost in each kernel event, and ``run_s``, the
    run's cost beyond its kernels (the rules are the module docstring's), and its
    ``profiler_basis``; return the rule used, in words."""
    timed = [m for m in models if m.latency_s]
    run = 0.0
    if timed:
        cost, run = _cost_and_run(timed)
        basis = (
            f"the kernel events' excess over the unprofiled latency of the {len(timed)} model(s) given with one, "
            "per kernel (least squares)"
        )
    else:
        cheapest = min((k for m in models for k in m.kernels), key=lambda k: k.measured_s)
        cost = cheapest.measured_s
        basis = (
            f"the cheapest kernel event of the traces ({cheapest.name}, {cheapest.op_type}), taken as all profiler; "
            "give MODEL=TRACE@LATENCY for the device's own figure"
        )
    for m in models:
        m.profiler_s, m.run_s, m.profiler_basis = cost, run, basis
    return basis


def _cost_and_run(timed: Sequence[TracedModel]) -> tuple[float, float]:
    """The profiler's cost per kernel event and the run's cost beyond its kernels that fit
    events - latency = cost x kernels - run over the timed models, in least squares on the relative
    excess (divided by the latency): each model's relative error weighs alike, so the launch-bound
    models (many kernels a µs) tell the cost, the smallest the run's, and a large model timed under
    other load (its excess all noise) barely moves either. The run's cost is fitted from
    MIN_RUN_FIT models of different kernel counts on, and set to 0 where it comes out negative."""
    import numpy as np

    latency = np.array([m.latency_s or 0.0 for m in timed])
    kernels = np.array([len(m.kernels) for m in timed], dtype=float) / latency
    excess = np.array([m.events_s for m in timed]) / latency - 1
    design = np.stack([kernels, -1 / latency], axis=1)
    # (models of one kernel count cannot tell a run's cost from their kernels': fitted then as the kernels')
    if len(timed) >= MIN_RUN_FIT and np.linalg.matrix_rank(design / np.abs(design).max(axis=0)) == 2:
        (cost, run), *_ = np.linalg.lstsq(design, excess, rcond=None)
        if cost >= 0 and run >= 0:
            return float(cost), float(run)
    return max(0.0, float(kernels @ excess / (kernels @ kernels))), 0.0


def fit_traces(
    pairs: Sequence[tuple[str, str] | tuple[str, str, float | None]],
    base: Target,
    progress: Callable[[str], None] | None = None,
) -> TraceFit:
    """Fit ``base``'s efficiencies and launch cost on the (model, trace[, unprofiled latency in
    seconds]) ``pairs`` (see the module docstring); each model's held-out error and the band when
    there are enough models."""
    say = progress or (lambda text: None)
    labels = [Path(pair[0]).name for pair in pairs]
    if len(set(labels)) < len(labels):
        twice = next(label for label in labels if labels.count(label) > 1)
        raise UsageError(f"--from-trace: {twice} is given twice; give each model once, with one trace")
    if base.dataflow is not None:
        raise UsageError(
            f"--target {base.name}: a layer-pipelined dataflow chip, whose time no efficiency per kernel "
            "class stands for; choose a target of kernels run one after another"
        )
    models = []
    for model, trace, *latency in pairs:
        traced = read_traced_model(model, trace, base, latency[0] if latency else None)
        models.append(traced)
    result = fit_models(models, base)
    for m in result.models:
        run = m.mapping.run_seconds
        late = m.latency_s is not None and run is not None and m.latency_s > run
        say(
            f"{m.label}: {len(m.kernels)} kernels, {m.events_s * 1e6:,.0f} µs of kernel events in {m.trace}, "
            f"{m.measured_s * 1e6:,.0f} µs without the profiler's {m.profiler_s * 1e6:.2f} µs a kernel"
            + (
                f" (its latency is longer than its profiled runs, {(run or 0) * 1e6:,.0f} µs: timed under load?)"
                if late
                else ""
            )
        )
    return result


def fit_models(models: Sequence[TracedModel], base: Target) -> TraceFit:
    """The fit on traces already read (:func:`read_traced_model`), each model held out in turn (each
    model's profiler cost set first, :func:`profiler_costs`, on copies: a fit on a subset of the
    models sets its own)."""
    models = [dataclasses.replace(m) for m in models]
    basis = profiler_costs(models)
    rows = [row for m in models for row in m.rows(base.name)]
    if len(rows) < MIN_TIMED_ROWS:
        raise UsageError(
            f"--from-trace: the traces hold {sum(len(m.kernels) for m in models)} kernel(s) in {len(rows)} timed "
            f"group(s), fewer than the {MIN_TIMED_ROWS} figures fitted (GEMM and streaming efficiency, launch "
            "cost); give traces of more or larger models"
        )
    default_launch = base.node_overhead_s.value if base.node_overhead_s else efficiency_fit.DEFAULT_LAUNCH_S
    options = dict(streaming_grid=efficiency_fit.EFFICIENCY_GRID, default_launch_s=default_launch)
    result = TraceFit(base, list(models), efficiency_fit.fit(rows, **options), profiler_basis=basis)  # type: ignore[arg-type]
    why = efficiency_fit.fittable(rows)
    if why:
        result.why_no_band = f"no error band: {why} (give traces of three or more models)"
        return result
    for left_out in models:
        others = [row for m in models if m is not left_out for row in m.rows(base.name)]
        held = efficiency_fit.fit(others, **options)  # type: ignore[arg-type]
        result.held_out[left_out.label] = total_error(left_out.rows(base.name), held.figures(base.name), left_out.run_s)
    result.band = max(abs(e) for e in result.held_out.values())
    return result
