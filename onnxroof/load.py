"""Stage 1: read an ONNX file into a ModelProto without ever reading weight data.

External data files are never opened (counts come from dims), so a model whose data
files are absent still loads. Every failure becomes a one-line ModelError.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from .errors import ModelError

_ONNX_MAGIC_HINT = "is it an .onnx model file?"


def load_model(path: str | os.PathLike) -> onnx.ModelProto:
    """Read and check ``path``; raise ModelError with the file name and the fix on failure."""
    file = Path(path)
    if not file.exists():
        raise ModelError(f"{file}: no such file; check the path")
    if file.is_dir():
        raise ModelError(f"{file}: is a directory, not an ONNX file; pass the .onnx file inside it")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ModelError(f"{file}: cannot be read ({exc.strerror}); check its permissions") from exc
    if not data:
        raise ModelError(f"{file}: the file is empty; re-export the model")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError as exc:
        raise ModelError(
            f"{file}: not a readable ONNX protobuf (truncated or not ONNX: {exc}); {_ONNX_MAGIC_HINT}"
        ) from exc
    del data
    check_model(model, str(file))
    return model


def check_model(model: onnx.ModelProto, label: str) -> None:
    """Run the ONNX checker, turning its verdict into one ModelError line."""
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise ModelError(f"{label}: the protobuf holds no ONNX graph; {_ONNX_MAGIC_HINT}")
    if not model.opset_import:
        raise ModelError(f"{label}: the model declares no opset_import; re-export it with an opset")
    try:
        onnx.checker.check_model(_checkable(model))
    except onnx.checker.ValidationError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"{label}: fails the ONNX checker: {first_line}; fix the export or run onnx.checker on it"
        ) from exc
    except Exception as exc:  # the checker's C++ core raises a few other types on broken protos
        raise ModelError(f"{label}: fails the ONNX checker ({type(exc).__name__}: {exc})") from exc


def _checkable(model: onnx.ModelProto) -> onnx.ModelProto:
    """What the checker can judge: external weights declared as inputs, and default-domain ops
    that this onnx has no schema for (onnxruntime's optimizer writes SimplifiedLayerNormalization
    there) moved to a private domain, which the checker skips; they are costed like any other op."""
    unknown = [n for n in model.graph.node if n.domain in ("", "ai.onnx") and not onnx.defs.has(n.op_type)]
    checkable = _without_external_data(model)
    if unknown:
        if checkable is model:
            checkable = onnx.ModelProto()
            checkable.CopyFrom(model)
        for node in checkable.graph.node:
            if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
                node.domain = _UNREGISTERED_DOMAIN
        checkable.opset_import.append(onnx.helper.make_opsetid(_UNREGISTERED_DOMAIN, 1))
    return checkable


_UNREGISTERED_DOMAIN = "onnxroof.unregistered"


def has_external_data(tensor: onnx.TensorProto) -> bool:
    return tensor.data_location == onnx.TensorProto.EXTERNAL


def _without_external_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """The checker insists on reading external data; check a copy that declares it as inputs.

    Only models with external data are copied, and their protobuf is small (no weights).
    """
    external = [t for t in model.graph.initializer if has_external_data(t)]
    if not external:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    keep = [t for t in copy.graph.initializer if not has_external_data(t)]
    declared = {i.name for i in copy.graph.input}
    for tensor in external:
        if tensor.name not in declared:
            copy.graph.input.append(
                onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
            )
    del copy.graph.initializer[:]
    copy.graph.initializer.extend(keep)
    if copy.ir_version < 4:
        copy.ir_version = 4
    return copy
