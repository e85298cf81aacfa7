"""Rockchip RKNN's per-layer performance table (an NPU vendor's report), read into a :class:`Trace`.

``rknn.init_runtime(target="rk3588", perf_debug=True)`` then ``rknn.eval_perf()`` (rknn-toolkit2)
prints, and returns as text, the per-layer table; on the board the C API's
``rknn_query(ctx, RKNN_QUERY_PERF_DETAIL, ...)`` returns the same table (``perf_detail``). The
format (the RKNN-Toolkit2 user guide, section "模型性能评估" / "Model performance evaluation",
table 3-2 of its fields, github.com/airockchip/rknn-toolkit2 ``doc/``): a header line, then one
whitespace-aligned row per layer (columns abridged here)::

    ID  OpType         DataType Target InputShape       OutputShape    DDR Cycles ... Time(us) ... FullName
    1   InputOperator  UINT8    CPU    \\                (1,3,224,224)  0          ... 7        ... InputOperator:images
    2   ConvRelu       UINT8    NPU    (1,3,224,224),.. (1,32,112,112) 94150      ... 428      ... Conv:/conv1/Conv

``Target`` is the unit the layer ran on (NPU, CPU or GPU: a layer on the CPU fell back from
the NPU), ``DataType`` its input's type, ``Time(us)`` its time in one run, ``FullName`` the ONNX op
and node it came from (``Conv:/conv1/Conv``; the rest of a fusion, ConvRelu's ReLU, is not
named). Newer toolkits print the cycles as one column ``Cycles(DDR/NPU/Total)`` and add columns
(``WorkLoad(0/1/2)``, ``Task Number``); the columns are found by the header's names, so
either reads. The table may sit in a log, each line behind ``D RKNN: [time]``; the table ends at
``Total Operator Elapsed ...``. ``InputOperator``/``OutputOperator`` rows belong to no ONNX node.
"""

from __future__ import annotations

import os
import re

from ..core.errors import UsageError
from .trace_records import Trace, TraceLayer, number, precision_of, read_text

# headers of more than one word, made one token so that header and rows count alike
_MULTIWORD = ("DDR Cycles", "NPU Cycles", "Total Cycles", "Task Number", "Lut Number", "Task Size", "Regcmd Size")
_LOG_PREFIX = re.compile(r"^(?:[A-Z] RKNN(?:API)?: \[[^\]]*\]\s*|--->\s*)")
_ADDED_TYPES = frozenset({"InputOperator", "OutputOperator"})


def looks_like_rknn(text: str) -> bool:
    return any(_is_header(_LOG_PREFIX.sub("", line)) for line in text.splitlines()[:400])


def _is_header(line: str) -> bool:
    tokens = line.split()
    return bool(tokens) and tokens[0] == "ID" and "OpType" in tokens and "Time(us)" in tokens


def read_rknn(path: str | os.PathLike) -> Trace:
    text = read_text(path, "RKNN performance table")
    lines = [_LOG_PREFIX.sub("", line) for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if _is_header(line)), None)
    if start is None:
        raise UsageError(
            f"{path}: not an RKNN performance table (no 'ID OpType ... Time(us) ... FullName' header); "
            "print it with rknn.eval_perf() after init_runtime(perf_debug=True)"
        )
    header = lines[start]
    for words in _MULTIWORD:
        header = header.replace(words, words.replace(" ", ""))
    columns = header.split()
    where = {name: columns.index(name) for name in ("OpType", "DataType", "Target", "Time(us)") if name in columns}
    if "Time(us)" not in where:
        raise UsageError(f"{path}: the RKNN table has no Time(us) column")
    layers: list[TraceLayer] = []
    for line in lines[start + 1 :]:
        tokens = line.split()
        if line.startswith("Total Operator") or (layers and not tokens):
            break
        if not tokens or not tokens[0].isdigit() or len(tokens) <= where["Time(us)"]:
            continue
        full_name = tokens[-1]
        onnx_op, _, node = full_name.partition(":") if ":" in full_name else ("", "", full_name)
        op_type = tokens[where["OpType"]] if "OpType" in where else onnx_op
        seconds = number(tokens[where["Time(us)"]], path, f"layer {tokens[0]} Time(us)") * 1e-6
        layers.append(
            TraceLayer(
                name=f"{tokens[0]}:{full_name}",
                op_type=op_type,
                seconds=seconds,
                nodes=(node,) if op_type not in _ADDED_TYPES else (),
                unit=tokens[where["Target"]] if "Target" in where else None,
                precision=precision_of(tokens[where["DataType"]]) if "DataType" in where else None,
                added=op_type in _ADDED_TYPES,
            )
        )
    if not layers:
        raise UsageError(f"{path}: the RKNN table has a header but no layer rows")
    source = "Rockchip RKNN per-layer table (eval_perf / perf_detail)"
    return Trace("rknn", layers, runs=1, source=source, files=[str(path)])
