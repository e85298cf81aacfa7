"""OpenVINO's per-layer performance counters, as ``benchmark_app`` writes them, read into a
:class:`Trace`.

``benchmark_app -m model.onnx -report_type detailed_counters -report_folder DIR`` writes
``DIR/benchmark_detailed_counters_report.csv`` (the format as OpenVINO's own writer makes it:
``StatisticsReport::dump_performance_counters_request`` in
``samples/cpp/benchmark_app/statistics_report.cpp``, github.com/openvinotoolkit/openvino; the
option in the benchmark_app documentation, "-report_type"): ``;``-separated, one block per infer
request, each

    layerName;execStatus;layerType;execType;realTime (ms);cpuTime (ms)
    /conv1/Conv;EXECUTED;Convolution;brgconv_avx512_FP32;0.215000;0.215000
    ...
    Total;;;;4.120000;4.120000

and a blank line. ``execStatus`` is ``EXECUTED``, ``NOT_RUN`` (parameters, constants, results)
or ``OPTIMIZED_OUT`` (fused into another layer): only executed layers are read. ``execType`` is
the kernel the plugin chose, its precision last (``jit_avx2_FP32``, ``brgconv_avx512_I8``); a
``ref_`` kernel is the plugin's reference implementation (no optimised kernel for that layer).
``-report_type average_counters`` writes the same table once, averaged; ``sort_detailed_counters``
adds a ``%`` column. The JSON form (``-json_stats``: ``{"report_type": "detailed",
"detailed_performance": [{"nodes": [{"name", "status", "node_type", "exec_type", "real_time",
"cpu_time"}]}]}``, or ``"avg_performance"``) is read too, and so is the CSV of the 2019 releases
(``samples/benchmark_app/statistics_report.cpp`` then: after a ``Configuration setup`` section, one
table ``layer name;exec status;layer type;exec type;realTime_iter0;cpuTime_iter0;realTime_iter1;...``,
every request in one row, or ``median real time;median cpu time``). A layer's time is its median
real time over the requests.

Names: OpenVINO's ONNX frontend names each layer after its ONNX node, after its output tensor
when the node has no name (``Graph::set_friendly_names`` in ``src/frontends/onnx/frontend/src/core/
graph.cpp``; releases before 2023 always used the output tensor's name, and a node split over
several layers gives ``node_output``), so :func:`onnxroof.measure.profiling.map_kernels` finds them
by name, as a node, a tensor (its producer) or a prefix;
the CPU plugin's fusions (a Conv's ReLU, a MatMul's bias Add) are ``OPTIMIZED_OUT`` and join their
kernel by neighbourhood. ``Reorder`` layers are layout conversions the plugin adds: no ONNX node.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict

from ..core.errors import UsageError
from .trace_records import Trace, TraceLayer, number, parse_json, precision_of, read_text

HEADER = ("layerName", "execStatus", "layerType", "execType", "realTime (ms)")  # today's; _header reads 2019's too
_ADDED_TYPES = frozenset({"Reorder", "Parameter", "Result", "Input", "Output", "Constant"})


def looks_like_openvino(text: str) -> bool:
    """The text is benchmark_app's counters, CSV or JSON."""
    head = text.lstrip()[:4096]
    return (
        "layerName;execStatus" in head
        or "layer name;exec status" in head
        or (head.startswith("{") and ('"detailed_performance"' in head or '"avg_performance"' in head))
    )


def read_openvino(path: str | os.PathLike) -> Trace:
    text = read_text(path, "OpenVINO benchmark_app report")
    blocks = _json_blocks(text, path) if text.lstrip().startswith("{") else _csv_blocks(text, path)
    if not blocks or not any(blocks):
        raise UsageError(
            f"{path}: the OpenVINO report has no executed layers; write it with benchmark_app "
            "-report_type detailed_counters"
        )
    times: dict[str, list[float]] = defaultdict(list)
    kinds: dict[str, tuple[str, str]] = {}
    for block in blocks:
        for name, layer_type, exec_type, ms in block:
            times[name].append(ms)
            kinds.setdefault(name, (layer_type, exec_type))
    layers = []
    for name, values in times.items():
        layer_type, exec_type = kinds[name]
        values += [0.0] * (len(blocks) - len(values))  # a request that did not run it
        layers.append(
            TraceLayer(
                name=name,
                op_type=layer_type,
                seconds=statistics.median(values) * 1e-3,
                precision=precision_of(exec_type.rsplit("_", 1)[-1]) if "_" in exec_type else None,
                reference=exec_type.startswith("ref"),
                added=layer_type in _ADDED_TYPES,
            )
        )
    return Trace(
        "openvino",
        layers,
        runs=len(blocks),
        source=f"OpenVINO benchmark_app per-layer counters ({len(blocks)} infer request(s))",
        files=[str(path)],
    )


Row = tuple[str, str, str, float]  # name, layer type, exec type, real time in ms


def _csv_blocks(text: str, path: str | os.PathLike) -> list[list[Row]]:
    """One block of rows per infer request; the lines around the tables (a configuration, the
    statistics) are skipped."""
    blocks: list[list[Row]] = []
    columns: dict[str, int] | None = None
    times: list[int] = []  # the columns of real times: one (a block per table), or one per request (2019)
    for number_, line in enumerate(text.splitlines(), 1):
        cells = [c.strip() for c in line.split(";")]
        if cells[0] in ("layerName", "layer name"):
            columns, times = _header(cells, path, number_)
            blocks += [[] for _ in times]
            continue
        if not line.strip():
            columns = None  # a table ends at a blank line
        if columns is None:
            continue
        if cells[0] == "Total" or len(cells) <= max([*columns.values(), *times]):
            continue
        if cells[columns["status"]] != "EXECUTED":
            continue
        for k, column in enumerate(times):
            ms = number(cells[column], path, f"line {number_}: real time")
            blocks[len(blocks) - len(times) + k].append((cells[0], cells[columns["type"]], cells[columns["exec"]], ms))
    if not blocks:
        raise UsageError(f"{path}: not an OpenVINO benchmark_app counters report (no layerName;execStatus;... header)")
    return blocks


def _header(cells: list[str], path: str | os.PathLike, line: int) -> tuple[dict[str, int], list[int]]:
    """The columns of a counters table: today's ``layerName;execStatus;...;realTime (ms)`` (one
    request a table), or the 2019 releases' ``layer name;exec status;...;realTime_iter0;...`` (every
    request in one row) and ``median real time``."""
    if cells[0] == "layerName":
        missing = [h for h in HEADER if h not in cells]
        if missing:
            raise UsageError(f"{path}:{line}: the OpenVINO counters' header has no {', '.join(missing)} column")
        names = {"status": "execStatus", "type": "layerType", "exec": "execType"}
        return {key: cells.index(name) for key, name in names.items()}, [cells.index("realTime (ms)")]
    times = [i for i, cell in enumerate(cells) if cell.startswith("realTime_iter") or cell == "median real time"]
    if not times or not {"exec status", "layer type", "exec type"} <= set(cells):
        raise UsageError(f"{path}:{line}: the OpenVINO counters' header has no real time column")
    names = {"status": "exec status", "type": "layer type", "exec": "exec type"}
    return {key: cells.index(name) for key, name in names.items()}, times


def _json_blocks(text: str, path: str | os.PathLike) -> list[list[Row]]:
    document = parse_json(text, path, "OpenVINO report")
    requests = document.get("detailed_performance") if isinstance(document, dict) else None
    if requests is None and isinstance(document, dict) and isinstance(document.get("avg_performance"), dict):
        requests = [document["avg_performance"]]
    if not isinstance(requests, list):
        raise UsageError(f"{path}: not an OpenVINO benchmark_app report (no detailed_performance)")
    blocks = []
    for request in requests:
        nodes = request.get("nodes", []) if isinstance(request, dict) else []
        blocks.append(
            [
                (
                    str(n.get("name", "")),
                    str(n.get("node_type", "")),
                    str(n.get("exec_type", "")),
                    number(n.get("real_time"), path, f"layer {n.get('name')!r} real_time"),
                )
                for n in nodes
                if isinstance(n, dict) and n.get("status") == "EXECUTED"
            ]
        )
    return blocks
