"""`onnxroof profile`: run the model with onnxruntime on this machine and compare the time each
node took with the time onnxroof predicts for it on a target (by default this machine's
calibrated target, see :mod:`onnxroof.measure.calibration`).

How the times are measured: onnxruntime's CPU execution provider runs the model (in a child
process stopped at a time limit, :mod:`onnxroof.measure.ort_child`) on random inputs of the
bound shapes (floats from a normal distribution; integer and bool inputs are all ones, a valid
index and "keep" in a mask) with ``SessionOptions.enable_profiling``. The first
``warmup`` runs are dropped; each kernel's time is the median over the other runs of the
``<node>_kernel_time`` events (their ``dur``) that fall inside that run's ``model_run`` event.
Kernel events nested inside another kernel (the nodes of an If/Loop/Scan body) are inside their
parent's time and are not counted again.

**Optimization level.** onnxruntime rewrites the graph before it runs it, and the profile names
the kernels of the rewritten graph:

- ``disable``: one kernel per ONNX node, same names; but nothing is fused, so the times are not
  what a deployment sees (BatchNormalization runs as its own pass, Dropout runs).
- ``basic``: constant folding, BatchNormalization folded into the Conv before it, Dropout and
  Identity removed. Kernels keep their node's name (the Conv's kernel includes the folded BN).
- ``extended``: also Conv+BN+activation into one ``FusedConv`` named after the Conv,
  MatMul+Add into Gemm, GELU/LayerNorm fusions.
- ``all`` (onnxruntime's default, and ours): also the NCHWc layout: a fused conv chain runs as
  one kernel named after its output tensor plus ``_nchwc`` (``activation_0_nchwc`` is
  Conv+BN+Relu, named after the Relu's output), and ``ReorderInput``/``ReorderOutput`` kernels
  are inserted that belong to no ONNX node.

On one core of the machine this was written on, MiniGoogLeNet runs in 7.2 ms at ``all``, 11.3
ms at ``extended``, 11.5 ms at ``basic`` and 15.6 ms with ``disable``: profiling at a lower
level would measure a slower program than the one people run, so the default is ``all`` and
the mapping (:mod:`onnxroof.measure.profiling`) handles the fusion; ``--optimization basic`` keeps
one kernel per compute node when the per-node split matters more than the total.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..core.errors import UsageError, sigterm_stops
from ..core.units import iec
from .machine import available_memory
from .ort_child import OUT_OF_MEMORY, InputSpec, OrtFailed, OrtJob, OrtStopped, random_feeds, run_onnxruntime
from .ort_events import OptimizedGraph
from .profiling import Coverage, NodeComparison, ProfileMapping, ProfileResult, map_profile

if TYPE_CHECKING:
    import onnx

    from ..result import Analysis
    from ..roofline.placement import Placement, TargetReport
    from ..roofline.targets import Target

OPTIMIZATION_LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
DEFAULT_RUNS = 20
DEFAULT_WARMUP = 3
# Seconds onnxruntime is given for all its runs before it is stopped (`profile --timeout`).
DEFAULT_TIMEOUT_S = 300.0
# The data memory onnxruntime's process is given by default (`profile --max-memory`): what it
# takes itself (importing it and numpy reserves about 100 MB; a 4 MB model runs in 70 MB of RSS
# under a 150 MB limit), twice the parameters (the stored ones and onnxruntime's copy) and four
# times the peak of live activations (its arena grows in doubling chunks). A Loop growing a tensor
# every trip then fails within it instead of taking the machine's memory (24 GB, and the
# kernel's OOM killer, before this).
BASE_MEMORY_BYTES = 384 * 2**20


def default_memory_bytes(analysis: Analysis) -> int:
    """The data memory onnxruntime's process is given for ``analysis``'s model (``BASE_MEMORY_BYTES``
    beside its parameters and activations).

    >>> from types import SimpleNamespace as S
    >>> run = S(totals=S(param_bytes=100 * 2**20), memory=S(model_order=S(peak_bytes=25 * 2**20)))
    >>> default_memory_bytes(run) // 2**20  # 384 + 2 x 100 + 4 x 25
    684
    """
    return BASE_MEMORY_BYTES + 2 * analysis.totals.param_bytes + 4 * analysis.memory.model_order.peak_bytes


# The random inputs may take at most this share of the memory free when the run starts (the run
# needs as much again for its outputs and activations); 4 GiB where the system does not say.
INPUT_MEMORY_SHARE = 0.5
FALLBACK_INPUT_BYTES = 4 * 2**30
# Runs predicted to take this many times the time limit are not started: a Loop of 10^15 trips
# would only be stopped at the limit. A prediction on a slow target may be tens of times this
# machine's time, so only the hopeless are refused.
HOPELESS_OVER_TIMEOUT = 100
# onnxruntime's profiler keeps at most this many events (its max_num_events_), one a kernel run
# at least: past it the profile is cut short ("Maximum number of events reached"), unmappable,
# after holding gigabytes.
ORT_MAX_PROFILE_EVENTS = 1_000_000


def profile_model(
    analysis: Analysis,
    target: Target,
    runs: int = DEFAULT_RUNS,
    *,
    model: str | os.PathLike | onnx.ModelProto | None = None,
    warmup: int = DEFAULT_WARMUP,
    optimization: str = "all",
    threads: int | None = None,
    keep_profile: str | os.PathLike | None = None,
    seed: int = 0,
    wall_seconds: float = 0.0,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_memory_bytes: int | None = None,
) -> ProfileResult:
    """Run the model ``warmup + runs`` times with onnxruntime (CPU) and compare each node's
    measured time with its predicted time on ``target``.

    ``model`` is what onnxruntime loads (default: the file ``analysis`` was read from; give the
    ModelProto for a model built in memory). ``keep_profile`` copies onnxruntime's raw profile
    there. The wall times come from the same number of runs without the profiler; with
    ``wall_seconds``, the fastest is instead calibrate's own statistic over that long (or as long
    as those runs took, if longer): the fastest mean of a batch of runs about 5 ms long
    (:func:`achieved.fastest_run_s`, what the roofs are), so a 100 µs model is judged as the roofs
    were, not on its one luckiest run.

    onnxruntime runs in a child process, stopped after ``timeout_s`` seconds (a UsageError), or at
    Ctrl-C or SIGTERM; its temporary folder is removed on every way out. It may take
    ``max_memory_bytes`` of data memory (default :func:`default_memory_bytes`; 0: no limit): past
    it, an allocation fails (a UsageError naming the limit)."""
    from ..roofline.placement import place_model, split_kernel_times

    import_onnxruntime()
    if optimization not in OPTIMIZATION_LEVELS:
        raise UsageError(f"--optimization {optimization}: choose one of {', '.join(OPTIMIZATION_LEVELS)}")
    if runs < 1 or warmup < 0:
        raise UsageError("--runs must be at least 1 and --warmup at least 0")
    source = model if model is not None else analysis.model.path
    if source is None:
        raise UsageError("profile_model: the analysis was made from a ModelProto; pass it as model=")
    batch = analysis.batch or 1
    # one kernel per node first: the weights that split a fused kernel's time over its nodes
    unfused = place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch, fusion=())
    weights = {n.name: n.placement.time_s for n in unfused.nodes}
    inputs = input_specs(analysis)
    by_rules = place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch)
    _refuse_overlong_profile(analysis, warmup + runs)
    _refuse_hopeless_runs(analysis, by_rules, 2 * (warmup + runs), timeout_s)
    payload, notes = _model_for_onnxruntime(source)
    if analysis.dtype != "model":
        notes.append(f"predicted as if re-costed in {analysis.dtype}; onnxruntime runs the model as stored")
    with sigterm_stops(), tempfile.TemporaryDirectory(prefix="onnxroof-profile-") as directory:
        if isinstance(payload, bytes):  # renamed in memory: the child reads it from the folder
            Path(directory, "model.onnx").write_bytes(payload)
            payload = str(Path(directory, "model.onnx"))
        job = OrtJob(
            str(payload),
            tuple(inputs),
            seed,
            OPTIMIZATION_LEVELS[optimization],
            threads,
            warmup,
            runs,
            wall_seconds,
            directory,
            default_memory_bytes(analysis) if max_memory_bytes is None else max_memory_bytes,
        )
        try:
            measured = run_onnxruntime(job, timeout_s)
        except OrtFailed as exc:
            if job.memory_bytes and _OUT_OF_MEMORY.search(str(exc)):
                given = (
                    f" (its parameters twice, its activations four times, and {iec(BASE_MEMORY_BYTES)})"
                    if max_memory_bytes is None
                    else ""
                )
                raise UsageError(
                    f"{analysis.model.name}: onnxruntime needed more than the {iec(job.memory_bytes)} of memory "
                    f"profile gives it{given}: the model allocates more as it runs (a Loop growing a tensor?); "
                    "give more with --max-memory MIB, or 0 for no limit"
                ) from None
            raise onnxruntime_error(exc, analysis) from None
        except OrtStopped as exc:
            if not exc.timed_out:
                raise UsageError(f"onnxruntime could not run {analysis.model.name}: {exc}") from None
            raise UsageError(
                f"{analysis.model.name}: onnxruntime did not finish its runs within --timeout {timeout_s:g} s "
                "and was stopped (a Loop of many trips, or a slow model); give it longer with --timeout "
                "SECONDS, or fewer --runs"
            ) from None
        text = Path(measured.profile_path).read_text(encoding="utf-8")
        optimized = _read_optimized(Path(measured.optimized_path or Path(directory, "optimized.onnx")), notes)
    wall, fastest = measured.wall, measured.fastest_s
    if keep_profile:
        from ..core.files import write_atomically

        write_atomically(keep_profile, text, flag="--keep-profile")
    mapping = map_profile(text, analysis, warmup=warmup, weights=weights, optimized=optimized)
    # predicted as onnxruntime ran it (read off its optimized graph and profile): one kernel per
    # kernel it launched, each paying the launch cost; a kernel's predicted time is split over its
    # nodes as its measured time is. The target's own fusion policy is given beside it.
    report = placed_as_run(analysis, mapping, target)
    predicted = split_kernel_times(report, weights)
    notes.append(
        f"predicted as onnxruntime ran the model: its {len(mapping.kernels)} kernels, each paying the launch cost "
        f"({len(mapping.unattributed)} with no ONNX node, such as layout reorders, costed from the bytes their "
        f"profile events record); under the target's fusion policy ({', '.join(by_rules.fusion) or 'none'}) "
        f"onnxroof predicts {by_rules.latency_s * 1e3:.4g} ms"
    )
    unattributed_s = sum(unattributed_kernel_s(kernel, target, report.launch_s) for kernel in mapping.unattributed)
    return ProfileResult(
        analysis,
        report,
        mapping,
        compare(analysis, report, mapping, predicted),
        optimization,
        threads,
        warmup,
        measured.version,
        statistics.median(wall),
        notes,
        unattributed_s=unattributed_s,
        by_rules=by_rules,
        wall_fastest_s=fastest,
    )


def placed_as_run(analysis: Analysis, mapping: ProfileMapping, target: Target) -> TargetReport:
    """The model placed on ``target`` as onnxruntime ran it: one kernel per kernel of its profile
    (``mapping``), each paying the launch cost, the split ones the split cost too, the integer
    nodes it computed in float on the float roof."""
    from ..roofline.placement import place_model

    return place_model(
        analysis.cost_graph,
        analysis.memory,
        target,
        analysis.dtype,
        analysis.batch or 1,
        groups=[[n for n in k.nodes if mapping.kernel_of.get(n) == k.name] for k in mapping.kernels if k.nodes],
        compute_dtypes=float_computed(analysis, mapping),
        split=[n for k in mapping.kernels if k.split for n in k.nodes],
    )


def _refuse_overlong_profile(analysis: Analysis, profiled_runs: int) -> None:
    """UsageError, before anything runs, when a Loop's or Scan's trips make the ``profiled_runs``
    record more kernel runs than onnxruntime's profiler keeps (ORT_MAX_PROFILE_EVENTS). A model
    without them is left to onnxruntime: its nodes overcount the kernels it fuses them into."""
    records = analysis.cost_graph.running.records
    if not any(record.runs > 1 for record in records):
        return
    kernel_runs = sum(record.runs for record in records)
    if kernel_runs * profiled_runs <= ORT_MAX_PROFILE_EVENTS:
        return
    raise UsageError(
        f"{analysis.model.name}: a run executes {kernel_runs:,} nodes (a loop's body once a trip), so "
        f"the {profiled_runs} profiled runs would record {kernel_runs * profiled_runs:,} kernel events, more "
        f"than onnxruntime's profiler keeps ({ORT_MAX_PROFILE_EVENTS:,}); nothing was run. Give it fewer "
        "--runs and --warmup, or a model of fewer trips"
    )


def _refuse_hopeless_runs(analysis: Analysis, report: TargetReport, run_count: int, timeout_s: float) -> None:
    """UsageError, before anything runs, when ``run_count`` runs at the latency predicted on the
    target (``report``) would take HOPELESS_OVER_TIMEOUT times ``timeout_s`` or more."""
    from ..core.units import seconds

    total = report.latency_s * run_count
    if total < HOPELESS_OVER_TIMEOUT * timeout_s:
        return
    raise UsageError(
        f"{analysis.model.name}: onnxroof predicts {seconds(report.latency_s)} per run on "
        f"{report.target.name}, so the {run_count} runs profile makes (profiled, then timed) would take "
        f"{seconds(total)}, far past --timeout {timeout_s:g} s; nothing was run. Give it fewer "
        "--runs and --warmup, smaller inputs, or a longer --timeout"
    )


# onnxruntime's own kernels (no ONNX node) by the efficiency class of what they do: layout
# reorders and transposes are strided copies, quantize/dequantize and casts map elements
_ADDED_KERNEL_CLASSES = {
    "ReorderInput": "transpose",
    "ReorderOutput": "transpose",
    "Transpose": "transpose",
    "QuantizeLinear": "elementwise",
    "DequantizeLinear": "elementwise",
    "Cast": "elementwise",
}


def unattributed_kernel_s(kernel, target: Target, launch_s: float | None = None) -> float:
    """The predicted seconds of a kernel onnxruntime added (no ONNX node: a layout reorder, a
    transpose around an NHWC kernel, a copy of a shared DequantizeLinear): the launch cost
    (``launch_s``, what the model's own kernels paid; default the target's ``node_overhead_s``) (and
    the target's split cost if onnxruntime split it over its threads), plus
    :func:`added_kernel_roof_s` of the bytes its profile event records; the launch cost alone
    when the profile records no sizes.

    >>> from types import SimpleNamespace as S
    >>> from onnxroof.roofline.targets import Figure, Target
    >>> f = lambda v: Figure(v, "measured", "x")
    >>> t = Target("t", "", "", {"fp32": f(1e11)}, f(1e10), onchip_bytes=f(2**21), onchip_bytes_per_s=f(1e11),
    ...            node_overhead_s=f(1e-6), efficiency={"transpose": f(0.5)})
    >>> round(unattributed_kernel_s(S(op_type="ReorderOutput", sizes=(131072, 0, 131072)), t) * 1e6, 4)
    6.2429
    """
    if launch_s is None:
        launch_s = target.node_overhead_s.value if target.node_overhead_s else 0.0
    launch = launch_s
    if getattr(kernel, "split", False) and target.split_overhead_s:
        launch += target.split_overhead_s.value
    if not kernel.sizes:
        return launch
    return launch + added_kernel_roof_s(kernel.op_type, kernel.sizes, target)


def added_kernel_roof_s(op_type: str, sizes: tuple[int, int, int], target: Target) -> float:
    """The roofline seconds of a kernel onnxruntime added, of ``op_type``, on ``sizes`` (the bytes
    of its inputs, its initializers and its output): all of them on chip when its inputs and output
    fit there, the initializers from DRAM, over the efficiency of its class
    (:data:`_ADDED_KERNEL_CLASSES`, else data movement) and of its op where the class's ``by_op``
    names it (a copy of a DequantizeLinear runs at DequantizeLinear's pace, a layout reorder at
    the reorders' own).

    >>> from onnxroof.roofline.targets import Figure, Target
    >>> f = lambda v: Figure(v, "measured", "x")
    >>> t = Target("t", "", "", {"fp32": f(1e11)}, f(1e10), onchip_bytes=f(2**21), onchip_bytes_per_s=f(1e11),
    ...            efficiency={"transpose": f(0.2)}, efficiency_by_op={"transpose": {"ReorderInput": 0.8}})
    >>> round(added_kernel_roof_s("ReorderInput", (262144, 0, 262144), t) * 1e6, 4)  # 512 KiB at 100 GB/s / 0.8
    6.5536
    """
    from ..roofline.placement import roofline

    activations, parameters, output = sizes
    moved = activations + parameters + output
    onchip_bw = target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None
    fits = bool(target.onchip_bytes and onchip_bw and activations + output <= target.onchip_bytes.value)
    dram = parameters if fits else moved
    onchip = moved if onchip_bw else 0
    kernel_class = _ADDED_KERNEL_CLASSES.get(op_type, "data_movement")
    point = roofline(
        0,
        dram,
        target.roof("float32")[1],
        target.dram_bytes_per_s.value,
        onchip,
        onchip_bw,
        efficiency=target.efficiency_of(kernel_class),
        op_efficiency=target.op_efficiency(kernel_class, (op_type,)),
    )
    return point.time_s


FLOAT_KERNELS = frozenset(
    {"Conv", "FusedConv", "NhwcFusedConv", "ConvTranspose", "MatMul", "FusedMatMul", "Gemm", "FusedGemm"}
)


def float_computed(analysis: Analysis, mapping: ProfileMapping) -> dict[str, str]:
    """The nodes onnxroof reads as integer that onnxruntime ran in one of its float kernels (a
    QDQ convolution it did not turn into a QLinearConv: it dequantizes the weights at run time
    and convolves in float32): node name -> "float32", for the placement's roof."""
    integer = {r.name for r in analysis.cost_graph.records if r.macs and r.dtype.startswith(("int", "uint"))}
    return {
        name: "float32"
        for kernel in mapping.kernels
        if kernel.op_type in FLOAT_KERNELS
        for name in kernel.nodes
        if name in integer and mapping.kernel_of.get(name) == kernel.name
    }


def _read_optimized(path: Path, notes: list[str]) -> OptimizedGraph | None:
    """The structure of the graph onnxruntime saved (None, with a note, if it saved none)."""
    import onnx

    try:
        return OptimizedGraph.from_model(onnx.load(str(path), load_external_data=False))
    except Exception as exc:  # a missing or unreadable file only costs the structural mapping
        notes.append(
            f"onnxruntime's optimized graph could not be read ({type(exc).__name__}); kernels mapped by name only"
        )
        return None


def kernel_placements(report: TargetReport) -> dict[str, Placement]:
    """Each ONNX node's kernel's placement on the target (its own, when nothing fuses it)."""
    return {name: kernel.placement for kernel in report.nodes for name in kernel.nodes}


def compare(
    analysis: Analysis, report: TargetReport, mapping: ProfileMapping, predicted: Mapping[str, float] | None = None
) -> list[NodeComparison]:
    """Each node's predicted (``predicted``, default its kernel's time) against measured time."""
    placements = kernel_placements(report)
    predicted = predicted if predicted is not None else {n: p.time_s for n, p in placements.items()}
    kernels = {k.name: k for k in mapping.kernels}
    removed = set(mapping.removed)
    rows = []
    for record in analysis.nodes:
        placement = placements.get(record.name)
        kernel = kernels.get(mapping.kernel_of.get(record.name, ""))
        if kernel is not None:
            status = Coverage.SPLIT if len(kernel.nodes) > 1 else Coverage.OWN
        else:
            status = Coverage.REMOVED if record.name in removed else Coverage.NOT_SEEN
        rows.append(
            NodeComparison(
                name=record.name,
                op_type=record.op_type,
                bound=placement.bound if placement else None,
                # a counted node in no kernel was removed or folded by the runtime: nothing to run
                predicted_s=predicted.get(record.name) if placement else (0.0 if record.counted else None),
                measured_s=mapping.seconds.get(record.name),
                kernel=kernel.name if kernel else None,
                kernel_op=kernel.op_type if kernel else None,
                shared=bool(kernel and len(kernel.nodes) > 1),
                status=status,
            )
        )
    return rows


def import_onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise UsageError(
            "onnxroof profile needs onnxruntime, which is not installed: pip install onnxroof[profile] "
            "(or pip install onnxruntime)"
        ) from None
    return onnxruntime


def random_inputs(analysis: Analysis, seed: int = 0) -> dict:
    """One random array per model input, of the shape the analysis bound (floats ~ N(0, 1);
    integers and bools are ones: a valid index and "keep" in a mask)."""
    return random_feeds(input_specs(analysis), seed)


def input_specs(analysis: Analysis, limit_bytes: int | None = None) -> list[InputSpec]:
    """What to make random values of, for each model input: its bound shape and numpy dtype.
    UsageError, before anything is allocated, when a shape is not bound or the inputs together
    would take more than ``limit_bytes`` (default: :func:`input_memory_limit`)."""
    import numpy as np
    from onnx import helper

    name = analysis.model.name
    if analysis.unresolved_dims:
        fixes = " ".join(dict.fromkeys(d.fix for d in analysis.unresolved_dims))
        raise UsageError(
            f"{name}: input dims are not bound, so there is nothing to run; fix (with your values): {fixes}"
        )
    specs, sizes = [], []
    for info in analysis.inputs:
        if info.shape is None or not all(isinstance(d, int) for d in info.shape):
            raise UsageError(
                f"{name}: input {info.name!r} has no known shape; give it with --input-shape {info.name}:..."
            )
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(info.dtype))
        except (KeyError, TypeError, ValueError):
            raise UsageError(
                f"{name}: input {info.name!r} has an element type onnxroof cannot make random values of"
            ) from None
        if dtype.kind not in "fiub":
            raise UsageError(
                f"{name}: input {info.name!r} is {dtype}: onnxroof profile cannot make random values of it"
            )
        shape = cast("tuple[int, ...]", info.shape)  # every dim an int: checked above
        specs.append(InputSpec(info.name, dtype.str, tuple(shape)))
        sizes.append(math.prod(shape) * dtype.itemsize)
    limit = input_memory_limit() if limit_bytes is None else limit_bytes
    if specs and sum(sizes) > limit:
        largest = max(range(len(specs)), key=sizes.__getitem__)
        spec = specs[largest]
        dims = ",".join(str(d) for d in spec.shape)
        raise UsageError(
            f"{name}: input {spec.name!r} of shape [{dims}] ({np.dtype(spec.dtype).name}) takes "
            f"{iec(sizes[largest])}"
            + (f" ({iec(sum(sizes))} with the other inputs)" if len(specs) > 1 else "")
            + f", more than profile makes random inputs of here ({iec(limit)}); give a smaller shape with "
            f"--input-shape {spec.name}:D1,D2,... (or --dim, --batch)"
        )
    return specs


def input_memory_limit() -> int:
    """The bytes the random inputs may take: INPUT_MEMORY_SHARE of the memory free now."""
    available = available_memory()
    return int(available * INPUT_MEMORY_SHARE) if available else FALLBACK_INPUT_BYTES


def _model_for_onnxruntime(source) -> tuple[Any, list[str]]:
    """What to hand onnxruntime: the model with every top-level node named as onnxroof names it
    (an unnamed node would show up in the profile as "_kernel_time"). A file whose nodes all have
    unique names is passed by path, so that external data loads as usual."""
    import onnx

    from ..core.nodes import node_names

    notes: list[str] = []
    if isinstance(source, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(source)
    else:
        path = str(source)
        try:
            header = onnx.load(path, load_external_data=False)
        except Exception as exc:
            raise UsageError(f"{path}: cannot be read by onnx ({exc})") from exc
        names = [n.name for n in header.graph.node]
        if all(names) and len(set(names)) == len(names):
            return path, notes
        try:
            proto = onnx.load(path)
        except Exception as exc:
            raise UsageError(f"{path}: cannot be read by onnx ({exc})") from exc
    if proto.functions:
        from ..frontend.functions import inline_functions

        proto = inline_functions(
            proto, Path(source).name if isinstance(source, (str, os.PathLike)) else "model"
        )  # as onnxroof costs it: node names match
    for node, name in zip(proto.graph.node, node_names(list(proto.graph.node))):
        node.name = name
    try:
        return proto.SerializeToString(), notes
    except ValueError:  # over 2 GiB: let onnxruntime read the file, unnamed nodes stay unmapped
        notes.append("the model is too large to rename its unnamed nodes in memory: those nodes are not mapped")
        return str(source), notes


_NO_KERNEL = re.compile(r"Could not find an implementation for (\S+?)\((\d+)\) node with name '([^']*)'")
_NO_OP = re.compile(r"([\w.\-]*):(\w+)\(-?\d+\) is not a registered function/op")


# an allocation that failed in onnxruntime's process: its arena's words, C++'s, or the child's own
_OUT_OF_MEMORY = re.compile(r"Failed to allocate memory|bad_alloc|" + OUT_OF_MEMORY)


def onnxruntime_error(exc: BaseException, analysis: Analysis) -> UsageError:
    """One line saying which node or op onnxruntime could not run."""
    message = str(exc)
    if match := _NO_KERNEL.search(message):
        op, version, node = match.groups()
        try:
            types = ", ".join(t for t in analysis.find_node(node).input_dtypes if t) or "?"
        except UsageError:
            types = "?"
        return UsageError(
            f"onnxruntime has no CPU kernel for node {node!r} ({op}, opset {version}, inputs {types}); "
            "onnxroof summary still predicts it, but it cannot be profiled here"
        )
    if match := _NO_OP.search(message):
        domain, op = match.groups()
        nodes = [r.name for r in analysis.nodes if r.op_type == op and (r.domain or "") == domain]
        where = f" (node {nodes[0]!r}" + (f" and {len(nodes) - 1} more)" if len(nodes) > 1 else ")") if nodes else ""
        return UsageError(
            f"onnxruntime does not know op {op} of domain {domain or 'ai.onnx'}{where}: a custom op needs "
            "its kernel library registered with onnxruntime; it cannot be profiled here"
        )
    text = re.sub(
        r"^\[ONNXRuntimeError\] : \d+ : \w+ : ",
        "",
        message.strip().splitlines()[0] if message.strip() else type(exc).__name__,
    )
    if len(text) > 300:
        text = text[:297] + "..."
    return UsageError(f"onnxruntime cannot run {analysis.model.name}: {text}")
