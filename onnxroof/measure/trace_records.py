"""What a vendor's per-layer report says, read into one shape: :class:`TraceLayer` (one layer the
runtime ran: its name, its time, the ONNX nodes and tensors it names, the unit and precision it
ran on) and :class:`Trace` (the layers, the format, how many runs). The readers, one module a
format (:mod:`trace_tensorrt`, :mod:`trace_openvino`, :mod:`trace_rknn`), make them;
:mod:`onnxroof.measure.traces` detects the format and maps the layers to ONNX nodes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ..core.errors import UsageError
from ..core.files import read_small_file, with_article

# A profile of a few hundred runs of a large model is tens of MB; past this a file is no profile a
# run writes, and parsing it would take many times its size in memory.
MAX_TRACE_BYTES = 128 * 2**20


@dataclass
class TraceLayer:
    """One layer (kernel) of a runtime's per-layer report."""

    name: str  # the runtime's layer name
    op_type: str  # the runtime's layer type ("CaskConvolution", "Convolution", "ConvRelu")
    seconds: float  # per run (the report's average or median)
    nodes: tuple[str, ...] = ()  # ONNX node (or tensor) names the runtime says the layer ran
    span: tuple[str, str] | None = None  # a first...last range of ONNX nodes (TensorRT's ForeignNode[a...b])
    inputs: tuple[str, ...] = ()  # tensor names it reads (TensorRT's layer information)
    outputs: tuple[str, ...] = ()  # tensor names it writes
    unit: str | None = None  # the unit it ran on where the report says (RKNN's NPU/CPU)
    precision: str | None = None  # the precision it ran in ("FP32", "FP16", "INT8")
    reference: bool = False  # a runtime's reference (unoptimised) implementation (OpenVINO's ref_*)
    added: bool = False  # the runtime made it (a reformat, a copy, an input or output operator): no ONNX node


@dataclass
class Trace:
    """A per-layer report: its layers in the order they ran, and what it says about its runs."""

    format: str  # "tensorrt", "openvino", "rknn"
    layers: list[TraceLayer]
    runs: int | None = None  # runs (inferences) the times are over, where the report says
    source: str = ""  # what measured it, in words ("TensorRT trtexec --exportProfile")
    files: list[str] = field(default_factory=list)


def read_text(path: str | os.PathLike, what: str) -> str:
    """The file's text; a UsageError naming it when it cannot be read, is not text, or is no
    regular file of at most :data:`MAX_TRACE_BYTES` (a FIFO or ``/dev/zero`` is never read)."""
    data = read_small_file(path, MAX_TRACE_BYTES, what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not {with_article(what)}: the file is not text") from None


def parse_json(text: str, path: str | os.PathLike, what: str) -> object:
    """``text`` parsed as JSON; a UsageError naming the file when it is not JSON, or nests deeper
    than the parser goes (no profile nests more than a few levels)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not {with_article(what)} (invalid JSON: {exc})") from None
    except RecursionError:
        raise UsageError(f"{path}: not {with_article(what)}: its JSON nests deeper than any profile") from None


def number(text: object, path: str | os.PathLike, what: str) -> float:
    """``text`` as a float, or a UsageError naming the file and the field."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise UsageError(f"{path}: {what} {text!r} is not a number; is the file cut short or edited?") from None
    if value != value or value < 0:
        raise UsageError(f"{path}: {what} {text!r} is not a time")
    return value


# the precisions the readers report, from the words each runtime uses
PRECISION_WORDS = {
    "fp32": "FP32",
    "float": "FP32",
    "float32": "FP32",
    "f32": "FP32",
    "fp16": "FP16",
    "half": "FP16",
    "float16": "FP16",
    "f16": "FP16",
    "bf16": "BF16",
    "int8": "INT8",
    "i8": "INT8",
    "u8": "INT8",
    "uint8": "INT8",
    "int4": "INT4",
    "i32": "INT32",
    "int32": "INT32",
    "i64": "INT64",
    "int64": "INT64",
}


def precision_of(word: str | None) -> str | None:
    """The precision a runtime's word names (``Half`` -> FP16, ``I8`` -> INT8), None if none."""
    if not word:
        return None
    return PRECISION_WORDS.get(word.strip().lower())
