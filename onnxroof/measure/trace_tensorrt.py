"""TensorRT's per-layer profile, as ``trtexec`` writes it, read into a :class:`Trace`.

``trtexec --onnx=model.onnx --profilingVerbosity=detailed --exportProfile=prof.json
--exportLayerInfo=layers.json`` writes two JSON files (the formats as NVIDIA's own readers take
them: ``samples/trtexec/profiler.py`` and ``tools/experimental/trt-engine-explorer/trex/parser.py``
in github.com/NVIDIA/TensorRT; trtexec's options in the TensorRT developer guide, "trtexec"):

- **the profile** (``--exportProfile``): a JSON list whose first item is ``{"count": N}`` (the
  profiled runs) and every other item a layer ``{"name", "timeMs", "averageMs", "percentage"}``
  (TensorRT 8.6 on adds ``"medianMs"``): ``timeMs`` is the total over the N runs, ``averageMs`` per
  run. The time read here is ``medianMs`` where given, else ``averageMs``.
- **the layer information** (``--exportLayerInfo``, detailed only with
  ``--profilingVerbosity=detailed``): ``{"Layers": [...], "Bindings": [...]}``, each layer
  ``{"Name", "LayerType", "Inputs": [{"Name", "Format/Datatype", ...}], "Outputs": [...],
  "Metadata", "TacticName", ...}``. Since TensorRT 8.6 ``Metadata`` lists the ONNX nodes a layer
  ran, ``[ONNX Layer: /conv1/Conv]`` each, joined by the separator ``\\x1e`` (or ``\\x1f``).

A layer's **name** says what it fused where there is no metadata: nodes joined by ``" + "``
(``/conv1/Conv + /act1/Relu``), layers merged side by side joined by ``" || "`` (older
releases: ``a + relu_a || b + relu_b``), pointwise fusions ``PWN(a, b)``, a Myelin subgraph
``{ForeignNode[/first/Node.../last/Node]}`` (every node from the first to the last) and layout
copies TensorRT adds (``Reformatting CopyNode for Input Tensor 0 to /conv1/Conv``, layer type
``Reformat``; before TensorRT 8, ``conv1 + relu1 input reformatter 0``), which belong to no ONNX
node. Precision: the ``Format/Datatype`` of its first output
(``Row major linear FP32``, ``Channel major FP16 format ...``, ``... Int8 ...``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from ..core.errors import UsageError
from .trace_records import Trace, TraceLayer, number, parse_json, precision_of, read_text

_METADATA = re.compile(r"\[ONNX Layer: ([^\]|\x1e\x1f]+?)(?: \|[^\]]*)?\]")
_FOREIGN = re.compile(r"^\{ForeignNode\[(.*)\]\}$")
_REFORMAT = re.compile(r"^Reformatting CopyNode for (?:Input|Output) Tensor| (?:input|output) reformatter \d+$")
_PROFILE_SUFFIX = re.compile(r" \[profile \d+\]$")
_ADDED_TYPES = frozenset({"Reformat", "Shuffle(reformat)", "signal", "wait"})


def is_profile(document: object) -> bool:
    """A trtexec ``--exportProfile`` document: a list of {"count"} then {"name", "averageMs"} items."""
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(item, dict) for item in document)
        and any("averageMs" in item or "timeMs" in item for item in document)
        and all("name" in item or "count" in item for item in document)
    )


def is_layer_info(document: object) -> bool:
    """A trtexec ``--exportLayerInfo`` document: {"Layers": [...]}."""
    return isinstance(document, dict) and isinstance(document.get("Layers"), list)


def read_tensorrt(paths: Sequence[str | os.PathLike]) -> Trace:
    """The trace of a trtexec profile, with its layer information when one of ``paths`` is it."""
    profile: list[dict] | None = None
    layers: dict | None = None
    profile_path = None
    for path in paths:
        document = load_json(path, "TensorRT profile")
        if isinstance(document, list) and is_profile(document):
            profile, profile_path = document, path
        elif isinstance(document, dict) and is_layer_info(document):
            layers = document
        else:
            raise UsageError(
                f"{path}: not a TensorRT profile (trtexec --exportProfile) nor its layer information "
                "(--exportLayerInfo)"
            )
    if profile is None or profile_path is None:
        raise UsageError(
            f"{paths[0]}: TensorRT layer information has no times; give the profile too "
            "(--trace prof.json --trace layers.json, from trtexec --exportProfile and --exportLayerInfo)"
        )
    info = _layer_info(layers) if layers is not None else {}
    count = next((item["count"] for item in profile if "count" in item and "name" not in item), None)
    trace_layers = []
    for item in profile:
        if "name" not in item:
            continue
        name = str(item["name"])
        if "medianMs" in item:
            ms = number(item["medianMs"], profile_path, f"layer {name!r} medianMs")
        elif "averageMs" in item:
            ms = number(item["averageMs"], profile_path, f"layer {name!r} averageMs")
        else:
            total = number(item.get("timeMs"), profile_path, f"layer {name!r} timeMs")
            ms = total / count if isinstance(count, (int, float)) and count > 0 else total
        trace_layers.append(_layer(name, ms * 1e-3, info.get(_PROFILE_SUFFIX.sub("", name))))
    if not trace_layers:
        raise UsageError(f"{profile_path}: the TensorRT profile lists no layers")
    return Trace(
        "tensorrt",
        trace_layers,
        runs=int(count) if isinstance(count, (int, float)) else None,
        source="TensorRT (trtexec --exportProfile" + (" with --exportLayerInfo)" if layers is not None else ")"),
        files=[str(p) for p in paths],
    )


def load_json(path: str | os.PathLike, what: str) -> object:
    return parse_json(read_text(path, what), path, what)


def _layer_info(document: dict) -> dict[str, dict]:
    """Layer name -> its detailed record (a layer given as a bare name, without
    ``--profilingVerbosity=detailed``, has none)."""
    return {
        _PROFILE_SUFFIX.sub("", str(layer.get("Name", ""))): layer
        for layer in document["Layers"]
        if isinstance(layer, dict)
    }


def _layer(name: str, seconds: float, info: dict | None) -> TraceLayer:
    """One profiled layer, with what its name and its layer information say it ran."""
    bare = _PROFILE_SUFFIX.sub("", name)
    info = info or {}
    layer_type = str(info.get("LayerType", "") or "")
    inputs = tuple(str(t.get("Name")) for t in info.get("Inputs", ()) if isinstance(t, dict) and t.get("Name"))
    outputs = tuple(str(t.get("Name")) for t in info.get("Outputs", ()) if isinstance(t, dict) and t.get("Name"))
    first_output = next((t for t in info.get("Outputs", ()) if isinstance(t, dict)), {})
    precision = _precision(str(first_output.get("Format/Datatype", "")))
    added = layer_type in _ADDED_TYPES or bool(_REFORMAT.search(bare))
    declared = tuple(dict.fromkeys(m.strip() for m in _METADATA.findall(str(info.get("Metadata", "") or ""))))
    nodes, span = (declared, None) if declared else _named_nodes(bare)
    return TraceLayer(
        name=name,
        op_type=layer_type or _type_from_name(bare),
        seconds=seconds,
        nodes=() if added else nodes,
        span=None if added else span,
        inputs=inputs,
        outputs=outputs,
        precision=precision,
        added=added,
    )


def _named_nodes(name: str) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    """The ONNX names a layer's name is made of, and a ForeignNode's first...last range."""
    foreign = _FOREIGN.match(name)
    if foreign:
        inner = foreign.group(1)
        if "..." in inner:
            first, last = inner.split("...", 1)
            return (), (first.strip(), last.strip())
        return tuple(part.strip() for part in inner.split(" + ") if part.strip()), None
    if "PWN(" in name:  # pointwise fusions, nested: PWN(PWN(a, b), c)
        parts = [p.strip().rstrip(")") for p in re.split(r" \+ |, | \|\| ", name.replace("PWN(", ""))]
    else:
        parts = [p.strip() for p in re.split(r" \+ | \|\| ", name)]
    return tuple(p for p in dict.fromkeys(parts) if p), None


def _type_from_name(name: str) -> str:
    if _FOREIGN.match(name):
        return "Myelin"
    if name.startswith("PWN("):
        return "PointWise"
    return ""


def _precision(format_text: str) -> str | None:
    """The precision a ``Format/Datatype`` names (``Row major linear FP32`` -> FP32)."""
    for word in re.split(r"[\s(),]+", format_text):
        found = precision_of(word)
        if found:
            return found
    return None
