"""Reading onnxruntime's profile: its events (:func:`load_events`), each kernel's median time
over the measured runs (:func:`kernel_medians`), and the structure of the graph onnxruntime ran
(:class:`OptimizedGraph`). :mod:`onnxroof.measure.profiling` maps the kernels to ONNX nodes."""

from __future__ import annotations

import json
import math
import os
import statistics
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError

if TYPE_CHECKING:
    import onnx

_KERNEL_SUFFIX = "_kernel_time"


def load_events(events: Any) -> list[dict]:
    """An onnxruntime profile as a list of events: a path, JSON text, bytes or the parsed list
    (a Chrome-trace ``{"traceEvents": [...]}`` object is accepted too)."""
    if isinstance(events, (bytes, bytearray)):
        events = json.loads(events)
    elif isinstance(events, os.PathLike) or (isinstance(events, str) and not events.lstrip().startswith(("[", "{"))):
        from .trace_records import parse_json, read_text  # one owner for reading a profile file

        what = "onnxruntime profile"
        events = parse_json(read_text(events, what), events, what)
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
    windows = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("cat") == "Session" and e.get("name") == "model_run" and "ts" in e and "dur" in e
    )
    per_run, ops = _kernel_seconds_per_run(events, windows, warmup)
    measured = sorted(per_run)
    medians = {
        name: (op, statistics.median(per_run[run].get(name, 0.0) for run in measured))
        for name, op in ops.items()
        if any(name in per_run[run] for run in measured)
    }
    wall = [(end - start) * 1e-6 for run, (start, end) in enumerate(windows) if run >= warmup]
    return medians, len(measured), statistics.median(wall) if wall else None


def _kernel_seconds_per_run(
    events: list[dict], windows: list[tuple[float, float]], warmup: int
) -> tuple[dict[int, dict[str, float]], dict[str, str]]:
    """run -> kernel -> its seconds in that run (the runs from ``warmup`` on; one run 0 when the
    profile has no run ``windows``), and kernel -> its op, of every top-level kernel event."""
    kernels = sorted(
        (
            e
            for e in events
            if e.get("cat") == "Node" and str(e.get("name", "")).endswith(_KERNEL_SUFFIX) and "ts" in e and "dur" in e
        ),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    starts = [start for start, _ in windows]
    per_run: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    ops: dict[str, str] = {}
    enclosing: dict[Any, float] = {}  # thread -> end of the last top-level kernel
    for event in kernels:
        run = _run_of(event["ts"], starts, windows)
        if run is None:
            continue  # outside every run (e.g. a kernel run while initializing)
        thread = event.get("tid")
        end = enclosing.get(thread, -math.inf)
        if event["ts"] < end and event["ts"] + event["dur"] <= end:
            continue  # inside the previous kernel's span: a subgraph node, already in its time
        enclosing[thread] = event["ts"] + event["dur"]
        name = event["name"][: -len(_KERNEL_SUFFIX)]
        ops.setdefault(name, str(event.get("args", {}).get("op_name", "")))
        if run >= warmup or not windows:
            per_run[run][name] += event["dur"] * 1e-6
    return per_run, ops


def _run_of(start: float, starts: list[float], windows: list[tuple[float, float]]) -> int | None:
    """The run whose window holds an event starting at ``start`` (0 with no windows), or None."""
    if not windows:
        return 0
    run = bisect_right(starts, start) - 1
    return None if run < 0 or start > windows[run][1] else run


def kernel_sizes(events: Iterable[dict]) -> dict[str, tuple[int, int, int]]:
    """{kernel name: (activation, parameter, output) bytes} as onnxruntime's profile records them
    (the ``activation_size``, ``parameter_size`` and ``output_size`` of a kernel's event: what it
    read of other kernels' outputs and of initializers, and what it wrote); the first event of
    each kernel that carries them."""
    sizes: dict[str, tuple[int, int, int]] = {}
    for event in events:
        name = str(event.get("name", ""))
        if event.get("cat") != "Node" or not name.endswith(_KERNEL_SUFFIX):
            continue
        name = name[: -len(_KERNEL_SUFFIX)]
        args = event.get("args") or {}
        if name in sizes or "output_size" not in args:
            continue
        try:
            sizes[name] = (
                int(args.get("activation_size", 0)),
                int(args.get("parameter_size", 0)),
                int(args["output_size"]),
            )
        except (TypeError, ValueError):
            continue
    return sizes


def kernel_splits(events: Iterable[dict]) -> set[str]:
    """The kernels onnxruntime's intra-op pool split over its threads in most of their runs: the
    events whose ``thread_scheduling_stats`` show the calling thread handing out blocks of work
    (a non-empty ``main_thread.block_size``; a profile on one thread records no such stats)."""
    runs: dict[str, list[bool]] = defaultdict(list)
    for event in events:
        name = str(event.get("name", ""))
        if event.get("cat") != "Node" or not name.endswith(_KERNEL_SUFFIX):
            continue
        stats = (event.get("args") or {}).get("thread_scheduling_stats")
        if isinstance(stats, str):
            try:
                stats = json.loads(stats) if stats.strip() else None
            except json.JSONDecodeError:
                stats = None
        if not isinstance(stats, dict):
            continue
        main = stats.get("main_thread") or {}
        runs[name[: -len(_KERNEL_SUFFIX)]].append(bool(main.get("block_size")))
    return {name for name, split in runs.items() if sum(split) * 2 > len(split)}


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
    def from_model(cls, model: onnx.ModelProto) -> OptimizedGraph:
        graph = model.graph
        return cls(
            {node.name: (tuple(node.input), tuple(node.output), node.op_type) for node in graph.node},
            frozenset(t.name for t in graph.initializer),
            frozenset(i.name for i in graph.input),
        )

    @classmethod
    def from_dict(cls, data: Mapping) -> OptimizedGraph:
        return cls(
            {name: (tuple(io[0]), tuple(io[1]), io[2]) for name, io in data["nodes"].items()},
            frozenset(data.get("initializers", ())),
            frozenset(data.get("inputs", ())),
        )

    def to_dict(self) -> dict:
        return {
            "nodes": {name: [list(i), list(o), op] for name, (i, o, op) in self.nodes.items()},
            "initializers": sorted(self.initializers),
            "inputs": sorted(self.inputs),
        }

    def available(self) -> set[str]:
        """Tensors that exist in the optimized graph: produced by one of its nodes, or given."""
        return {t for _, outputs, _ in self.nodes.values() for t in outputs} | set(self.initializers) | set(self.inputs)
