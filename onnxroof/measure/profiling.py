"""`onnxroof profile`: run the model with onnxruntime on this machine and compare the time each
node took with the time onnxroof predicts for it on a target (by default this machine's
calibrated target, see :mod:`onnxroof.measure.calibration`).

How the times are measured: onnxruntime's CPU execution provider runs the model on random
inputs of the bound shapes (floats from a normal distribution; integer and bool inputs are all
ones, a valid index and "keep" in a mask) with ``SessionOptions.enable_profiling``. The first
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
the mapping below handles the fusion; ``--optimization basic`` keeps one kernel per compute
node when the per-node split matters more than the total.

**Mapping kernels to nodes** (:func:`map_profile`, pure), in this order:

1. *By name*: a kernel maps to the node of the same name; else with onnxruntime's decorations
   taken off ("fused X", "X_nchwc"), as a node or as a tensor (then its producer: the NCHWc
   transformer names a kernel after its output); else the longest node name it starts with
   followed by ``_ / : .`` (``node_MatMul_1/MatMulAddFusion``).
2. *By structure*, when the graph onnxruntime ran is known (``profile_model`` saves it with
   ``SessionOptions.optimized_model_filepath``; :class:`OptimizedGraph`): a kernel covers the
   original nodes between its inputs and its outputs, walking up from each output that is an
   original tensor through the tensors the rewritten graph no longer has. This places kernels
   with made-up names (``SkipLayerNormalization_token_56`` covers an Add and a
   LayerNormalization). A Reshape or Squeeze onnxruntime inserted after a fusion hands the
   nodes it "outputs" to the kernel that computed its input (the Gemm of a MatMul+Add fusion).
3. *By op*: when a kernel's op (``args.op_name``; ``FusedConv`` counts as ``Conv``) is not
   its node's, the kernel also covers the single-consumer chain above that node up to the node
   of its op (``activation_0_nchwc`` is a Conv: conv2d_0, batch_normalization_0, activation_0).
4. *By neighbourhood*: a node that does work and still has no kernel joins its producer's
   kernel when it is that producer's only consumer (BN and ReLU after a fused Conv), else its
   only consumer's (a chain folded into what reads it). Views and folded constants with no
   kernel were removed by onnxruntime and measure 0.

**A kernel that covers several nodes has its time split among them in proportion to their
predicted times** (FLOPs when no prediction is given), so those nodes share one
measured/predicted ratio: a profile cannot split a fused kernel's time further. Kernels that
match no node (layout reorders, reshapes onnxruntime inserts) are reported as unattributed and
counted in the measured total. At level ``all`` the NCHWc kernels rename their tensors, so
step 2 cannot see through them and steps 1 and 3 do the work; at ``basic`` and ``extended``
tensor names survive and step 2 decides.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import tempfile
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..core.errors import UsageError

if TYPE_CHECKING:
    import onnx

    from ..result import Analysis
    from ..roofline.placement import Placement, TargetReport
    from ..roofline.targets import Target

SCHEMA = "onnxroof-profile/1"
OPTIMIZATION_LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
DEFAULT_RUNS = 20
DEFAULT_WARMUP = 3
_KERNEL_SUFFIX = "_kernel_time"
# what onnxruntime puts around the name of a node it rewrites ("fused X": Gemm+activation)
_NAME_PREFIXES = ("fused ",)
_NAME_SUFFIXES = ("_nchwc",)
_FUSED_OPS = {"FusedConv": "Conv", "FusedGemm": "Gemm", "FusedMatMul": "MatMul", "NhwcFusedConv": "Conv",
              "NhwcConv": "Conv", "NhwcMaxPool": "MaxPool", "QLinearConv": "Conv", "QLinearMatMul": "MatMul"}
_UPSTREAM_DEPTH = 8  # how far up a renamed kernel's chain may reach for its op


# --- reading a profile -------------------------------------------------------------------------


@dataclass
class KernelTime:
    """One onnxruntime kernel (a node of the graph onnxruntime ran) and what it covers."""

    name: str  # onnxruntime's node name (the event name without "_kernel_time")
    op_type: str  # args.op_name
    seconds: float  # median over the measured runs
    nodes: list[str] = field(default_factory=list)  # onnxroof nodes it covers; empty: unattributed
    shares: dict[str, float] = field(default_factory=dict)  # node -> seconds of this kernel


@dataclass
class ProfileMapping:
    """Per-node measured times read from an onnxruntime profile."""

    seconds: dict[str, float]  # onnxroof node -> measured seconds (median per run)
    kernels: list[KernelTime]  # every kernel, in the order it first ran
    kernel_of: dict[str, str]  # onnxroof node -> the kernel it was measured in
    removed: list[str]  # views and folded constants onnxruntime did not run (measured 0)
    not_seen: list[str]  # nodes no kernel covers (their time, if any, is in an unattributed kernel)
    runs: int  # runs measured (after the warm-up)
    run_seconds: float | None  # median wall time of a measured run (model_run events), if recorded

    @property
    def unattributed(self) -> list[KernelTime]:
        return [k for k in self.kernels if not k.nodes]

    @property
    def measured_s(self) -> float:
        """Sum of every kernel's median: the measured total the per-node times add up to
        (plus the unattributed kernels)."""
        return sum(k.seconds for k in self.kernels)


def load_events(events: Any) -> list[dict]:
    """An onnxruntime profile as a list of events: a path, JSON text, bytes or the parsed list
    (a Chrome-trace ``{"traceEvents": [...]}`` object is accepted too)."""
    if isinstance(events, (bytes, bytearray)):
        events = json.loads(events)
    elif isinstance(events, os.PathLike) or (isinstance(events, str) and not events.lstrip().startswith(("[", "{"))):
        try:
            events = json.loads(Path(events).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"{events}: cannot read the profile ({exc.strerror or exc})") from exc
        except json.JSONDecodeError as exc:
            raise UsageError(f"{events}: not an onnxruntime profile (invalid JSON: {exc})") from exc
    elif isinstance(events, str):
        events = json.loads(events)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    if not isinstance(events, list):
        raise UsageError("not an onnxruntime profile: expected a JSON list of events")
    return [e for e in events if isinstance(e, dict)]


def kernel_medians(events: Iterable[dict], warmup: int = 0) -> tuple[dict[str, tuple[str, float]], int, float | None]:
    """{kernel name: (op, median seconds per run)} over the runs after ``warmup``, the number of
    runs measured and the median wall time of a run (None if the profile has no run events).

    A kernel that did not run in some run (an If branch) counts 0 there; kernel events nested
    inside another kernel's span (subgraph nodes) are inside the parent's time and skipped."""
    events = list(events)
    windows = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                     if e.get("cat") == "Session" and e.get("name") == "model_run" and "ts" in e and "dur" in e)
    kernels = sorted((e for e in events if e.get("cat") == "Node" and str(e.get("name", "")).endswith(_KERNEL_SUFFIX)
                      and "ts" in e and "dur" in e), key=lambda e: (e["ts"], -e["dur"]))
    starts = [start for start, _ in windows]
    per_run: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    ops: dict[str, str] = {}
    enclosing: dict[Any, float] = {}  # thread -> end of the last top-level kernel
    for event in kernels:
        if windows:
            run = bisect_right(starts, event["ts"]) - 1
            if run < 0 or event["ts"] > windows[run][1]:
                continue  # outside every run (e.g. a kernel run while initializing)
        else:
            run = 0
        thread = event.get("tid")
        end = enclosing.get(thread, -math.inf)
        if event["ts"] < end and event["ts"] + event["dur"] <= end:
            continue  # inside the previous kernel's span: a subgraph node, already in its time
        enclosing[thread] = event["ts"] + event["dur"]
        name = event["name"][: -len(_KERNEL_SUFFIX)]
        ops.setdefault(name, str(event.get("args", {}).get("op_name", "")))
        if run >= warmup or not windows:
            per_run[run][name] += event["dur"] * 1e-6
    measured = sorted(per_run)
    medians = {name: (op, statistics.median(per_run[run].get(name, 0.0) for run in measured)) for name, op in ops.items()
               if any(name in per_run[run] for run in measured)}
    wall = [(end - start) * 1e-6 for run, (start, end) in enumerate(windows) if run >= warmup]
    return medians, len(measured), statistics.median(wall) if wall else None


@dataclass(frozen=True)
class OptimizedGraph:
    """The top-level structure of the graph onnxruntime ran (saved with
    ``SessionOptions.optimized_model_filepath``): each node's inputs, outputs and op, the
    initializers and the graph inputs. Tensor names survive most rewrites, so a kernel covers
    the original nodes between its inputs and its outputs."""

    nodes: Mapping[str, tuple[tuple[str, ...], tuple[str, ...], str]]  # name -> (inputs, outputs, op)
    initializers: frozenset[str] = frozenset()
    inputs: frozenset[str] = frozenset()

    @classmethod
    def from_model(cls, model: "onnx.ModelProto") -> "OptimizedGraph":
        graph = model.graph
        return cls({node.name: (tuple(node.input), tuple(node.output), node.op_type) for node in graph.node},
                   frozenset(t.name for t in graph.initializer), frozenset(i.name for i in graph.input))

    @classmethod
    def from_dict(cls, data: Mapping) -> "OptimizedGraph":
        return cls({name: (tuple(io[0]), tuple(io[1]), io[2]) for name, io in data["nodes"].items()},
                   frozenset(data.get("initializers", ())), frozenset(data.get("inputs", ())))

    def to_dict(self) -> dict:
        return {"nodes": {name: [list(i), list(o), op] for name, (i, o, op) in self.nodes.items()},
                "initializers": sorted(self.initializers), "inputs": sorted(self.inputs)}

    def available(self) -> set[str]:
        """Tensors that exist in the optimized graph: produced by one of its nodes, or given."""
        return {t for _, outputs, _ in self.nodes.values() for t in outputs} | set(self.initializers) | set(self.inputs)


# ops onnxruntime inserts to move data around: such a kernel covers only original nodes of its own op
_MOVEMENT_OPS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Identity", "Cast",
                           "ReorderInput", "ReorderOutput", "MemcpyToHost", "MemcpyFromHost"})


def map_profile(events: Any, analysis: "Analysis", warmup: int = 0,
                weights: Mapping[str, float] | None = None, optimized: OptimizedGraph | None = None) -> ProfileMapping:
    """Map an onnxruntime profile's kernels to ``analysis``'s nodes (see the module docstring).

    ``weights`` (node -> predicted seconds) split a kernel that covers several nodes; without
    them the split follows the nodes' FLOPs. ``optimized`` (the graph onnxruntime ran) lets a
    kernel cover the original nodes between its inputs and outputs by tensor name, which also
    places kernels with generated names (``SkipLayerNormalization_token_3``)."""
    medians, runs, wall = kernel_medians(load_events(events), warmup)
    records = {r.name: r for r in analysis.nodes}
    tensors = analysis.tensors
    kernels = [KernelTime(name, op, seconds) for name, (op, seconds) in medians.items()]
    owner: dict[str, KernelTime] = {}  # node -> kernel covering it
    named: dict[str, KernelTime] = {}  # node -> the kernel that carries its name
    for kernel in kernels:
        node = _node_for_kernel(kernel.name, records, tensors)
        if node is not None and node not in named:
            named[node] = owner[node] = kernel
            kernel.nodes.append(node)

    def claim(kernel: KernelTime, nodes: Iterable[str]) -> None:
        for node in nodes:
            if node not in owner:
                owner[node] = kernel
                kernel.nodes.append(node)

    if optimized is not None:  # by structure: the nodes between a kernel's inputs and outputs
        available = optimized.available()
        by_name = {k.name: k for k in kernels}
        producer_of = {t: name for name, (_, outputs, _) in optimized.nodes.items() for t in outputs}
        for kernel in kernels:
            if kernel.name not in optimized.nodes:
                continue
            for tensor in optimized.nodes[kernel.name][1]:
                if tensor not in tensors or tensors[tensor].producer not in records:
                    continue  # a tensor onnxruntime made up: nothing of the original graph ends here
                target = _structural_owner(kernel, records[tensors[tensor].producer].op_type, optimized, producer_of, by_name)
                if target is not None:
                    claim(target, _walk_up(tensor, target, optimized.nodes[target.name][0], available, records,
                                           tensors, owner))

    def single_consumer_producers(name: str) -> list[str]:
        """Producers of ``name``'s activation inputs of which ``name`` is the only consumer."""
        found = []
        for tensor_name in dict.fromkeys(records[name].inputs):
            tensor = tensors.get(tensor_name)
            if tensor and tensor.producer in records and set(tensor.consumers) == {name}:
                found.append(tensor.producer)
        return found

    def only_consumer(name: str) -> str | None:
        consumers = {c for out in records[name].outputs if out in tensors for c in tensors[out].consumers}
        return next(iter(consumers)) if len(consumers) == 1 and next(iter(consumers)) in records else None

    # a renamed kernel whose op is not its node's (activation_0_nchwc is a Conv) covers the chain
    # above its node up to the node of its op
    for kernel in kernels:
        if len(kernel.nodes) != 1:
            continue
        node = kernel.nodes[0]
        wanted = _FUSED_OPS.get(kernel.op_type, kernel.op_type)
        if not wanted or records[node].op_type == wanted:
            continue
        claim(kernel, _chain_up_to(node, wanted, single_consumer_producers, records, owner))
    removed: list[str] = []
    pending = [r.name for r in analysis.nodes if r.name not in owner]
    for name in pending:
        if not _does_work(records[name]):
            removed.append(name)
    waiting = [name for name in pending if name not in set(removed)]
    changed = True
    while waiting and changed:
        changed = False
        for name in waiting:  # join the producer's kernel (model order: producers first)
            for producer in single_consumer_producers(name):
                if producer in owner:
                    claim(owner[producer], [name])
                    changed = True
                    break
        waiting = [name for name in waiting if name not in owner]
        for name in reversed(waiting):  # else the only consumer's kernel
            consumer = only_consumer(name)
            if consumer is not None and consumer in owner:
                claim(owner[consumer], [name])
                changed = True
        waiting = [name for name in waiting if name not in owner]
    seconds: dict[str, float] = {name: 0.0 for name in removed}
    for kernel in kernels:
        kernel.nodes.sort(key=lambda n: records[n].index)
        kernel.shares = _split(kernel, records, weights, named)
        for node, share in kernel.shares.items():
            seconds[node] = seconds.get(node, 0.0) + share
    order = {r.name: r.index for r in analysis.nodes}
    return ProfileMapping(
        seconds=dict(sorted(seconds.items(), key=lambda item: order[item[0]])),
        kernels=kernels,
        kernel_of={node: kernel.name for node, kernel in owner.items()},
        removed=removed,
        not_seen=waiting,
        runs=runs,
        run_seconds=wall,
    )


def _does_work(record) -> bool:
    """False for views and folded constants: with no kernel of their own they were removed."""
    return not (record.view or record.status == "constant" or not (record.flops or record.memory_bytes))


def _structural_owner(kernel: KernelTime, op_type: str, optimized: OptimizedGraph, producer_of: Mapping,
                      by_name: Mapping) -> KernelTime | None:
    """The kernel an original tensor that ``kernel`` outputs belongs to: ``kernel`` itself, unless
    it only moves data (a Reshape or Squeeze onnxruntime inserted after a fusion) and the tensor's
    original producer is another op: then the kernel that computed the moved data."""
    current = kernel
    for _ in range(_UPSTREAM_DEPTH):
        inputs, _, op = optimized.nodes[current.name]
        if op not in _MOVEMENT_OPS or op == op_type:
            return current
        upstream = by_name.get(producer_of.get(inputs[0], "")) if inputs else None
        if upstream is None or upstream.name not in optimized.nodes:
            return None
        current = upstream
    return None


def _walk_up(tensor: str, kernel: KernelTime, inputs: Iterable[str], available: set[str], records: Mapping,
             tensors: Mapping, owner: Mapping) -> list[str]:
    """Original nodes from ``tensor``'s producer upward, through tensors the optimized graph no
    longer has, up to the kernel's inputs; never into a node another kernel covers."""
    stop = set(inputs)
    stack, covered, seen = [tensor], [], set()
    while stack:
        producer = tensors[stack.pop()].producer
        if producer in seen or (producer in owner and owner[producer] is not kernel):
            continue
        seen.add(producer)
        if not _does_work(records[producer]) and producer not in owner:
            pass  # a view or a folded constant on the way: walked through, left to the "removed"
        else:
            covered.append(producer)
        for name in records[producer].inputs:
            if name and name not in stop and name not in available and name in tensors \
                    and tensors[name].producer in records:
                stack.append(name)
    return covered


def parse_profile(events_json: Any, analysis: "Analysis", warmup: int = 0,
                  weights: Mapping[str, float] | None = None, optimized: OptimizedGraph | None = None) -> dict[str, float]:
    """{node name: measured seconds} from an onnxruntime profile (a path, JSON text or the
    parsed events): the median over the runs after ``warmup`` (see :func:`map_profile`)."""
    return map_profile(events_json, analysis, warmup, weights, optimized).seconds


def _node_for_kernel(kernel: str, records: Mapping, tensors: Mapping) -> str | None:
    """The node a kernel is named after: its own name; the name with onnxruntime's decorations
    taken off ("fused X", "X_nchwc"), as a node or as a tensor (then its producer: the NCHWc
    transformer names a kernel after its output); else the longest node name it starts with."""
    if kernel in records:
        return kernel
    bare = kernel
    for prefix in _NAME_PREFIXES:
        bare = bare.removeprefix(prefix)
    for suffix in _NAME_SUFFIXES:
        bare = bare.removesuffix(suffix)
    if bare in records:
        return bare
    tensor = tensors.get(bare)
    if tensor is not None and tensor.producer in records:
        return tensor.producer
    best = None
    for name in records:
        if len(kernel) > len(name) and kernel.startswith(name) and kernel[len(name)] in "_/:." and (
                best is None or len(name) > len(best)):
            best = name
    return best


def _chain_up_to(node: str, op_type: str, producers, records: Mapping, owner: Mapping) -> list[str]:
    """The nodes above ``node`` (each its producer's only consumer, none with a kernel of its
    own) up to and including the nearest one of ``op_type``; [] when there is none."""
    chain: list[str] = []
    current = node
    for _ in range(_UPSTREAM_DEPTH):
        candidates = [p for p in producers(current) if p not in owner]
        if len(candidates) != 1:
            return []
        current = candidates[0]
        chain.append(current)
        if records[current].op_type == op_type:
            return chain
    return []


def _split(kernel: KernelTime, records: Mapping, weights: Mapping[str, float] | None, named: Mapping) -> dict[str, float]:
    """The kernel's time over its nodes, in proportion to ``weights`` (else FLOPs); all of it to
    the node it is named after when the weights are all zero."""
    if not kernel.nodes:
        return {}
    if len(kernel.nodes) == 1:
        return {kernel.nodes[0]: kernel.seconds}
    share = {n: float(weights.get(n, 0.0)) if weights is not None else float(records[n].flops) for n in kernel.nodes}
    total = sum(share.values())
    if total <= 0:
        head = next((n for n in kernel.nodes if named.get(n) is kernel), kernel.nodes[0])
        return {n: (kernel.seconds if n == head else 0.0) for n in kernel.nodes}
    return {n: kernel.seconds * w / total for n, w in share.items()}


# --- running the model -------------------------------------------------------------------------


@dataclass
class NodeComparison:
    name: str
    op_type: str
    bound: str | None  # the roofline's verdict on the target
    predicted_s: float | None  # None: onnxroof did not count the node
    measured_s: float | None  # None: no kernel covers it
    kernel: str | None  # the onnxruntime kernel it was measured in
    kernel_op: str | None
    shared: bool  # the kernel covers other nodes too (its time was split)
    status: str  # "own" | "split" | "removed" | "not_seen"

    @property
    def ratio(self) -> float | None:
        """measured / predicted (None when either is missing or the prediction is 0)."""
        if self.measured_s is None or not self.predicted_s:
            return None
        return self.measured_s / self.predicted_s


@dataclass
class ProfileResult:
    analysis: "Analysis"
    target: "TargetReport"  # onnxroof's prediction
    mapping: ProfileMapping
    nodes: list[NodeComparison]
    optimization: str
    threads: int | None  # intra-op threads (None: onnxruntime's default, one per physical core)
    warmup: int
    ort_version: str
    wall_s: float | None = None  # median seconds per run without the profiler (session.run, timed in Python)
    notes: list[str] = field(default_factory=list)
    unattributed_s: float = 0.0  # predicted for the kernels with no ONNX node: their launch cost
    by_rules: "TargetReport | None" = None  # the prediction under the target's fusion policy (what report says)
    wall_fastest_s: float | None = None  # the fastest run without the profiler: the statistic calibrate's roofs are

    @property
    def predicted_s(self) -> float:
        """onnxroof's prediction of the kernels onnxruntime ran."""
        return self.target.latency_s + self.unattributed_s

    @property
    def measured_s(self) -> float:
        """Sum of the kernels' medians (attributed or not)."""
        return self.mapping.measured_s

    @property
    def ratio(self) -> float | None:
        return self.measured_s / self.predicted_s if self.predicted_s else None

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured: -0.4 means the prediction is 40 % too fast."""
        return (self.predicted_s - self.measured_s) / self.measured_s if self.measured_s else None

    def to_dict(self) -> dict:
        return profile_document(self)


def profile_model(analysis: "Analysis", target: "Target", runs: int = DEFAULT_RUNS, *,
                  model: "str | os.PathLike | onnx.ModelProto | None" = None, warmup: int = DEFAULT_WARMUP,
                  optimization: str = "all", threads: int | None = None, keep_profile: str | os.PathLike | None = None,
                  seed: int = 0) -> ProfileResult:
    """Run the model ``warmup + runs`` times with onnxruntime (CPU) and compare each node's
    measured time with its predicted time on ``target``.

    ``model`` is what onnxruntime loads (default: the file ``analysis`` was read from; give the
    ModelProto for a model built in memory). ``keep_profile`` copies onnxruntime's raw profile
    there."""
    from ..roofline.placement import place_model, split_kernel_times

    ort = import_onnxruntime()
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
    feeds = random_inputs(analysis, seed)
    payload, notes = _model_for_onnxruntime(source)
    if analysis.dtype != "model":
        notes.append(f"predicted as if re-costed in {analysis.dtype}; onnxruntime runs the model as stored")
    with tempfile.TemporaryDirectory(prefix="onnxroof-profile-") as directory:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(directory) / "ort")
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION_LEVELS[optimization])
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        optimized_path = Path(directory) / "optimized.onnx"
        options.optimized_model_filepath = str(optimized_path)  # the graph it runs, weights kept apart
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "optimized.data")
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "64")
        try:
            try:
                session = ort.InferenceSession(payload, options, providers=["CPUExecutionProvider"])
            except Exception:  # perhaps only the saving of the optimized graph failed: once more without
                options.optimized_model_filepath = ""
                session = ort.InferenceSession(payload, options, providers=["CPUExecutionProvider"])
            for _ in range(warmup + runs):
                session.run(None, feeds)
            profile_path = session.end_profiling()
            # the same runs without the profiler: what the model takes when nobody is watching
            options.enable_profiling = False
            options.optimized_model_filepath = ""
            plain = ort.InferenceSession(payload, options, providers=["CPUExecutionProvider"])
            wall = _wall_times(plain, feeds, warmup, runs)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise onnxruntime_error(exc, analysis) from exc
        text = Path(profile_path).read_text(encoding="utf-8")
        optimized = _read_optimized(optimized_path, notes)
    if keep_profile:
        from ..core.files import write_atomically

        write_atomically(keep_profile, text)
    mapping = map_profile(text, analysis, warmup=warmup, weights=weights, optimized=optimized)
    # predicted as onnxruntime ran it (read off its optimized graph and profile): one kernel per
    # kernel it launched, each paying the launch cost; a kernel's predicted time is split over its
    # nodes as its measured time is. The target's own fusion policy is given beside it.
    groups = [[n for n in k.nodes if mapping.kernel_of.get(n) == k.name] for k in mapping.kernels if k.nodes]
    report = place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch, groups=groups)
    by_rules = place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch)
    launch_s = target.node_overhead_s.value if target.node_overhead_s else 0.0
    predicted = split_kernel_times(report, weights)
    notes.append(f"predicted as onnxruntime ran the model: its {len(mapping.kernels)} kernels, each paying the launch cost "
                 f"({len(mapping.unattributed)} with no ONNX node, such as layout reorders, the launch cost only); under "
                 f"the target's fusion policy ({', '.join(by_rules.fusion) or 'none'}) onnxroof predicts "
                 f"{by_rules.latency_s * 1e3:.4g} ms")
    return ProfileResult(analysis, report, mapping, compare(analysis, report, mapping, predicted), optimization, threads,
                         warmup, ort.__version__, statistics.median(wall), notes,
                         unattributed_s=len(mapping.unattributed) * launch_s, by_rules=by_rules, wall_fastest_s=min(wall))


def _read_optimized(path: Path, notes: list[str]) -> OptimizedGraph | None:
    """The structure of the graph onnxruntime saved (None, with a note, if it saved none)."""
    import onnx

    try:
        return OptimizedGraph.from_model(onnx.load(str(path), load_external_data=False))
    except Exception as exc:  # a missing or unreadable file only costs the structural mapping
        notes.append(f"onnxruntime's optimized graph could not be read ({type(exc).__name__}); kernels mapped by name only")
        return None


def _wall_times(session, feeds: dict, warmup: int, runs: int) -> list[float]:
    """Seconds per run of ``session`` (after ``warmup`` runs), timed around ``session.run``."""
    import time

    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return times


def kernel_placements(report: "TargetReport") -> dict[str, "Placement"]:
    """Each ONNX node's kernel's placement on the target (its own, when nothing fuses it)."""
    return {name: kernel.placement for kernel in report.nodes for name in kernel.nodes}


def compare(analysis: "Analysis", report: "TargetReport", mapping: ProfileMapping,
            predicted: Mapping[str, float] | None = None) -> list[NodeComparison]:
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
            status = "split" if len(kernel.nodes) > 1 else "own"
        else:
            status = "removed" if record.name in removed else "not_seen"
        rows.append(NodeComparison(
            name=record.name, op_type=record.op_type,
            bound=placement.bound if placement else None,
            # a counted node in no kernel was removed or folded by the runtime: nothing to run
            predicted_s=predicted.get(record.name) if placement else (0.0 if record.counted else None),
            measured_s=mapping.seconds.get(record.name),
            kernel=kernel.name if kernel else None,
            kernel_op=kernel.op_type if kernel else None,
            shared=bool(kernel and len(kernel.nodes) > 1),
            status=status,
        ))
    return rows


def import_onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise UsageError("onnxroof profile needs onnxruntime, which is not installed: pip install onnxroof[profile] "
                         "(or pip install onnxruntime)") from None
    return onnxruntime


def random_inputs(analysis: "Analysis", seed: int = 0) -> dict:
    """One random array per model input, of the shape the analysis bound (floats ~ N(0, 1);
    integers and bools are ones: a valid index and "keep" in a mask)."""
    import numpy as np
    from onnx import helper

    if analysis.unresolved_dims:
        fixes = " ".join(dict.fromkeys(d.fix for d in analysis.unresolved_dims))
        raise UsageError(f"{analysis.model.name}: input dims are not bound, so there is nothing to run; fix (with your values): {fixes}")
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in analysis.inputs:
        if info.shape is None or not all(isinstance(d, int) for d in info.shape):
            raise UsageError(f"{analysis.model.name}: input {info.name!r} has no known shape; give it with --input-shape {info.name}:...")
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(info.dtype))
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"{analysis.model.name}: input {info.name!r} has an element type onnxroof cannot make random values of") from None
        if dtype.kind == "f":
            feeds[info.name] = rng.standard_normal(info.shape).astype(dtype)
        elif dtype.kind in "iub":
            feeds[info.name] = np.ones(info.shape, dtype)
        else:
            raise UsageError(f"{analysis.model.name}: input {info.name!r} is {dtype}: onnxroof profile cannot make random values of it")
    return feeds


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
        import onnx.inliner

        proto = onnx.inliner.inline_local_functions(proto)  # as onnxroof costs it: node names match
    for node, name in zip(proto.graph.node, node_names(list(proto.graph.node))):
        node.name = name
    try:
        return proto.SerializeToString(), notes
    except ValueError:  # over 2 GiB: let onnxruntime read the file, unnamed nodes stay unmapped
        notes.append("the model is too large to rename its unnamed nodes in memory: those nodes are not mapped")
        return str(source), notes


_NO_KERNEL = re.compile(r"Could not find an implementation for (\S+?)\((\d+)\) node with name '([^']*)'")
_NO_OP = re.compile(r"([\w.\-]*):(\w+)\(-?\d+\) is not a registered function/op")


def onnxruntime_error(exc: BaseException, analysis: "Analysis") -> UsageError:
    """One line saying which node or op onnxruntime could not run."""
    message = str(exc)
    if match := _NO_KERNEL.search(message):
        op, version, node = match.groups()
        try:
            types = ", ".join(t for t in analysis.find_node(node).input_dtypes if t) or "?"
        except UsageError:
            types = "?"
        return UsageError(f"onnxruntime has no CPU kernel for node {node!r} ({op}, opset {version}, inputs {types}); "
                          "onnxroof summary still predicts it, but it cannot be profiled here")
    if match := _NO_OP.search(message):
        domain, op = match.groups()
        nodes = [r.name for r in analysis.nodes if r.op_type == op and (r.domain or "") == domain]
        where = f" (node {nodes[0]!r}" + (f" and {len(nodes) - 1} more)" if len(nodes) > 1 else ")") if nodes else ""
        return UsageError(f"onnxruntime does not know op {op} of domain {domain or 'ai.onnx'}{where}: a custom op needs "
                          "its kernel library registered with onnxruntime; it cannot be profiled here")
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", message.strip().splitlines()[0] if message.strip() else type(exc).__name__)
    if len(text) > 300:
        text = text[:297] + "..."
    return UsageError(f"onnxruntime cannot run {analysis.model.name}: {text}")


# --- output --------------------------------------------------------------------------------------


def profile_document(result: ProfileResult) -> dict:
    """The JSON document (``schema: onnxroof-profile/1``)."""
    from ..result import tensor_entry

    analysis, mapping, report = result.analysis, result.mapping, result.target
    target = report.target
    placements = kernel_placements(report)
    flops = {r.name: r.flops for r in analysis.nodes}

    def achieved(work: int, seconds: float | None) -> float | None:
        return work / seconds if seconds and work else None

    def node_entry(n: NodeComparison) -> dict:
        point = placements.get(n.name)
        return {"name": n.name, "op_type": n.op_type, "bound": n.bound, "predicted_s": n.predicted_s,
                "measured_s": n.measured_s, "ratio": n.ratio, "kernel": n.kernel, "kernel_op": n.kernel_op,
                "status": n.status, "flops": flops[n.name],
                "intensity": point.intensity if point else None,  # FLOP per DRAM byte of its kernel on the target
                "predicted_flops_per_s": achieved(flops[n.name], n.predicted_s),
                "measured_flops_per_s": achieved(flops[n.name], n.measured_s)}

    total_flops = sum(n.placement.flops for n in report.nodes)
    return {
        "schema": SCHEMA,
        "model": {"name": analysis.model.name, "path": analysis.model.path,
                  "inputs": [tensor_entry(i) for i in analysis.inputs]},
        "target": {
            "name": target.name, "path": target.path, "description": target.description,
            "roofs": {roof: {"peak_flops_per_s": figure.value, "tag": figure.tag} for roof, figure in target.peak_ops_per_s.items()},
            "dram_bytes_per_s": target.dram_bytes_per_s.value,
            "onchip_bytes": target.onchip_bytes.value if target.onchip_bytes else None,
            "onchip_bytes_per_s": target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None,
        },
        "onnxruntime": {"version": result.ort_version, "provider": "CPUExecutionProvider",
                        "optimization": result.optimization, "intra_op_threads": result.threads,
                        "runs": mapping.runs, "warmup": result.warmup},
        "totals": {
            "predicted_s": result.predicted_s,  # the kernels onnxruntime ran, costed on the target
            "predicted_by_rules_s": result.by_rules.latency_s if result.by_rules else None,  # the target's fusion policy
            "measured_s": result.measured_s,  # sum of the kernels' medians
            "measured_nodes_s": sum(mapping.seconds.values()),
            "unattributed_s": sum(k.seconds for k in mapping.unattributed),
            "run_s": mapping.run_seconds,  # median wall time of one profiled run, executor overhead included
            "wall_s": result.wall_s,  # median time of one run without the profiler
            "wall_fastest_s": result.wall_fastest_s,  # fastest run without the profiler (roofs are fastest runs too)
            "ratio": result.ratio,  # measured / predicted
            "error": result.error,  # (predicted - measured) / measured
            "flops": total_flops,
            "intensity": report.model_point.intensity,
            "predicted_flops_per_s": achieved(total_flops, result.predicted_s),
            "measured_flops_per_s": achieved(total_flops, result.measured_s),
        },
        "nodes": [node_entry(n) for n in result.nodes],
        "kernels": [{"name": k.name, "op_type": k.op_type, "measured_s": k.seconds, "nodes": k.nodes,
                     "shares_s": k.shares, "flops": sum(flops[n] for n in k.nodes),
                     "measured_flops_per_s": achieved(sum(flops[n] for n in k.nodes), k.seconds)}
                    for k in mapping.kernels],
        "unattributed": [{"name": k.name, "op_type": k.op_type, "measured_s": k.seconds} for k in mapping.unattributed],
        "removed": mapping.removed,
        "not_seen": mapping.not_seen,
        "notes": result.notes,
    }
