"""A measured per-layer profile from any runtime, mapped to the ONNX nodes onnxroof costs:
:func:`read_trace` (the entry point: a file, or a TensorRT profile and its layer information, in
one of :data:`FORMATS`, detected from its content or named) returns a :class:`MeasuredTrace`,
whose ``mapping.seconds`` are the measured seconds per ONNX node.

The formats, each read by its own module (the format documented and sourced there):
onnxruntime's profile JSON (:mod:`ort_events`, what ``onnxroof profile`` itself records), TensorRT
``trtexec --exportProfile`` with ``--exportLayerInfo`` (:mod:`trace_tensorrt`), OpenVINO
``benchmark_app -report_type detailed_counters`` (:mod:`trace_openvino`) and Rockchip RKNN's
``eval_perf``/``perf_detail`` table (:mod:`trace_rknn`).

**Mapping layers to nodes** is onnxruntime's mapping (:func:`profiling.map_kernels`, its steps in
:mod:`profiling`), given first what the report itself says a layer ran: the ONNX nodes TensorRT's
metadata or layer names list (a name may be a tensor's: then its producer), and a Myelin
``ForeignNode[first...last]``: the nodes from ``first`` to ``last`` in the model's order that no
other layer names. Layers that list their input and output tensors (TensorRT's layer
information) also cover the original nodes between them (the structural step). Layers the runtime
added (layout reformats, input and output operators) belong to no node. The **mapped share** is
the share of the measured time in layers that cover at least one ONNX node.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from .ort_events import OptimizedGraph
from .profiling import KernelTime, ProfileMapping, map_kernels, map_profile
from .trace_openvino import looks_like_openvino, read_openvino
from .trace_records import Trace, TraceLayer, parse_json, read_text
from .trace_rknn import looks_like_rknn, read_rknn
from .trace_tensorrt import is_layer_info, is_profile, read_tensorrt

if TYPE_CHECKING:
    from ..result import Analysis

FORMATS = ("onnxruntime", "tensorrt", "openvino", "rknn")


@dataclass
class MeasuredTrace:
    """A measured profile mapped to ONNX nodes: ``mapping.seconds`` is node -> measured seconds."""

    format: str  # one of FORMATS
    source: str  # what measured it, in words
    files: list[str]
    mapping: ProfileMapping
    layers: dict[str, TraceLayer] = field(default_factory=dict)  # kernel name -> what the report says of it

    @property
    def measured_s(self) -> float:
        return self.mapping.measured_s

    @property
    def mapped_s(self) -> float:
        """The measured seconds in kernels that cover at least one ONNX node."""
        return sum(k.seconds for k in self.mapping.kernels if k.nodes)

    @property
    def mapped_share(self) -> float | None:
        """The share of the measured time mapped to ONNX nodes (None when nothing was measured)."""
        return self.mapped_s / self.measured_s if self.measured_s > 0 else None


def detect_format(paths: Sequence[str | os.PathLike]) -> str:
    """The format of the files, from their content; a UsageError naming the file when none fits."""
    path = paths[0]
    text = read_text(path, "trace")
    stripped = text.lstrip()
    if looks_like_openvino(text):
        return "openvino"
    if stripped.startswith(("[", "{")):
        document = parse_json(text, path, "profile onnxroof reads")
        if is_profile(document) or is_layer_info(document):
            return "tensorrt"
        events = document.get("traceEvents") if isinstance(document, dict) else document
        if isinstance(events, list) and _ort_events(events):
            return "onnxruntime"
    elif looks_like_rknn(text):
        return "rknn"
    raise UsageError(
        f"{path}: not a profile onnxroof reads: expected onnxruntime's profile JSON, a TensorRT trtexec "
        "--exportProfile JSON (with its --exportLayerInfo), OpenVINO benchmark_app detailed_counters CSV or "
        "an RKNN eval_perf table (or name one with --trace-format)"
    )


def _ort_events(events: list) -> bool:
    return any(isinstance(e, dict) and e.get("cat") in ("Node", "Session") for e in events)


def load_trace(paths: Sequence[str | os.PathLike], trace_format: str | None = None) -> tuple[str, Trace | list]:
    """The format and the parsed trace (onnxruntime's: its events), read before any analysis so
    that a bad file fails first."""
    if not paths:
        raise UsageError("--trace: give the file of a measured profile")
    chosen = trace_format or detect_format(paths)
    if chosen not in FORMATS:
        raise UsageError(f"--trace-format {chosen}: choose one of {', '.join(FORMATS)}")
    if chosen != "tensorrt" and len(paths) > 1:
        raise UsageError(
            f"--trace given {len(paths)} times: only a TensorRT profile comes in two files (the profile and "
            "its layer information)"
        )
    if chosen == "tensorrt":
        return chosen, read_tensorrt(paths)
    if chosen == "openvino":
        return chosen, read_openvino(paths[0])
    if chosen == "rknn":
        return chosen, read_rknn(paths[0])
    from .ort_events import load_events

    return chosen, load_events(Path(paths[0]))


def read_trace(
    paths: str | os.PathLike | Sequence[str | os.PathLike],
    analysis: Analysis,
    trace_format: str | None = None,
    weights: Mapping[str, float] | None = None,
    loaded: tuple[str, Trace | list] | None = None,
) -> MeasuredTrace:
    """The measured profile in ``paths`` (one file, or a TensorRT profile and its layer information)
    mapped to ``analysis``'s nodes: per node its measured seconds (``.mapping.seconds``), per kernel
    the nodes it covers. ``weights`` (node -> predicted seconds) split a fused kernel's time over its
    nodes (default: their FLOPs). ``loaded`` is :func:`load_trace`'s answer, if already read."""
    files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    chosen, parsed = loaded or load_trace(files, trace_format)
    if isinstance(parsed, list):
        mapping = map_profile(parsed, analysis, weights=weights)
        if not mapping.kernels:
            raise UsageError(f"{files[0]}: the onnxruntime profile has no kernel events (was profiling enabled?)")
        measured = MeasuredTrace(chosen, "onnxruntime profile", [str(f) for f in files], mapping)
    else:
        measured = map_trace(parsed, analysis, weights)
    if measured.measured_s > 0 and measured.mapped_s == 0:
        raise UsageError(
            f"{files[0]}: none of the trace's {len(measured.mapping.kernels)} layers matches a node of "
            f"{analysis.model.name}: is it another model's trace? (layer names must be the ONNX node or tensor names)"
        )
    return measured


def map_trace(trace: Trace, analysis: Analysis, weights: Mapping[str, float] | None = None) -> MeasuredTrace:
    """A vendor's trace mapped to ``analysis``'s nodes (see the module docstring)."""
    kernels, layers, declared = [], {}, {}
    records = _records(analysis)
    names = _unique_names(trace.layers)
    for layer, name in zip(trace.layers, names):
        kernels.append(KernelTime(name, layer.op_type, layer.seconds))
        layers[name] = layer
        declared[name] = _declared_nodes(layer, records, analysis.tensors)
    _resolve_spans(trace.layers, names, declared, analysis)
    optimized = _layer_graph(trace.layers, names, analysis)
    # the layers the runtime added take part in no step (a reformat named after its consumer would
    # take the consumer's name): they join the kernels afterwards, unattributed, in the trace's order
    mapping = map_kernels(
        [k for k in kernels if not layers[k.name].added],
        analysis,
        runs=trace.runs or 1,
        weights=weights,
        optimized=optimized,
        declared=declared,
    )
    mapping.kernels = kernels
    return MeasuredTrace(trace.format, trace.source, trace.files, mapping, layers)


def _unique_names(layers: Sequence[TraceLayer]) -> list[str]:
    """Layer names made unique (a runtime may repeat one: ``name``, ``name#2``)."""
    seen: dict[str, int] = {}
    names = []
    for layer in layers:
        seen[layer.name] = seen.get(layer.name, 0) + 1
        names.append(layer.name if seen[layer.name] == 1 else f"{layer.name}#{seen[layer.name]}")
    return names


def _node_of(name: str, records: Mapping, tensors: Mapping) -> str | None:
    """The ONNX node a runtime names: a node's name, or a tensor's (then its producer)."""
    if name in records:
        return name
    tensor = tensors.get(name)
    return tensor.producer if tensor is not None and tensor.producer in records else None


def _records(analysis: Analysis) -> dict:
    return {r.name: r for r in analysis.nodes}


def _declared_nodes(layer: TraceLayer, records: Mapping, tensors: Mapping) -> list[str]:
    return [node for name in layer.nodes if (node := _node_of(name, records, tensors)) is not None]


def _resolve_spans(
    layers: Sequence[TraceLayer], names: Sequence[str], declared: dict[str, list[str]], analysis: Analysis
) -> None:
    """A ForeignNode[first...last] covers the nodes from first to last (model order) no other layer names."""
    order = [r.name for r in analysis.nodes]
    index = {name: i for i, name in enumerate(order)}
    named = {node for nodes in declared.values() for node in nodes}
    records = _records(analysis)
    for layer, name in zip(layers, names):
        if layer.span is None or layer.added:
            continue
        first, last = (_node_of(end, records, analysis.tensors) for end in layer.span)
        if first is None or last is None:
            continue
        low, high = sorted((index[first], index[last]))
        declared[name] = [n for n in order[low : high + 1] if n not in named or n in (first, last)]
        named.update(declared[name])


def _layer_graph(layers: Sequence[TraceLayer], names: Sequence[str], analysis: Analysis) -> OptimizedGraph | None:
    """The graph the runtime ran, from the tensors each layer reads and writes (None when the
    report names no tensors)."""
    if not any(layer.outputs for layer in layers):
        return None
    records = _records(analysis)
    given = frozenset(name for name, tensor in analysis.tensors.items() if tensor.producer not in records)
    return OptimizedGraph(
        {name: (layer.inputs, layer.outputs, layer.op_type) for layer, name in zip(layers, names) if not layer.added},
        initializers=given,
    )
