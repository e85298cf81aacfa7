"""One node through onnx, for the partial evaluator (evaluator.py): its reference kernel run on
known values, the signature its runs and inferences are shared by, onnx's complaint about it in
one line, and what a run or an inference of it adds to a tensor's info."""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Callable

import numpy as np
import onnx

from ..core.nodes import NodeFields
from ..core.tensors import Dim, TensorInfo

# A value larger than this many bytes is known to a node's signature by its digest, not its bytes.
_SIGNATURE_BYTES = 256
# What onnx.reference's kernels expect from their evaluator (no logging, no custom ops).
_RUN_PARAMS = {
    "log": lambda *args: None,
    "verbose": 0,
    "new_ops": None,
    "existing_functions": {},
    "evaluator_cls": None,
}


def run_reference(node: onnx.NodeProto, args: list[np.ndarray | None], opsets: dict[str, int]) -> tuple | None:
    """The results of onnx's reference kernel for ``node`` on ``args``, or None if it fails."""
    from onnx.reference.ops import load_op  # imported on first use: a tenth of a second

    try:  # (a Mod or Div by an integer zero, a Cast of inf: numpy's warnings are not the user's)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            op_class = load_op("", node.op_type, opsets.get(""))
            results = op_class(node, _RUN_PARAMS | {"opsets": opsets}).run(*args)
    except Exception:  # an odd node: shape inference handles it instead
        return None
    return tuple(results) if isinstance(results, (tuple, list)) else (results,)


def node_signature(
    node_fields: NodeFields, values: dict[str, np.ndarray], info: Callable[[str], TensorInfo]
) -> tuple | None:
    """All that onnx's inference and reference kernels see of a node: its op, attributes and
    outputs, and each input's value (when known) or type and shape. Nodes alike in these
    evaluate and infer alike, whatever their names. None for inputs holding Python objects
    (strings), whose bytes do not say what they hold."""
    inputs: list[tuple | None] = []
    seen: dict[str, tuple] = {}  # an input listed again (a Concat of one name 100,000 times) is read once
    for name in node_fields.inputs:
        if not name:
            inputs.append(None)
        elif name in seen:
            inputs.append(seen[name])
        elif (value := values.get(name)) is not None:
            if value.dtype.hasobject:
                return None
            data = value.tobytes()
            if len(data) > _SIGNATURE_BYTES:
                data = hashlib.blake2b(data, digest_size=16).digest()
            inputs.append(seen.setdefault(name, (value.dtype.str, value.shape, data)))
        else:
            known = info(name)
            inputs.append(seen.setdefault(name, (known.dtype, known.shape)))
    return (
        node_fields.domain,
        node_fields.op_type,
        tuple(bool(o) for o in node_fields.outputs),
        tuple(a.SerializeToString() for a in node_fields.attributes),
        tuple(inputs),
    )


def merged_info(old: TensorInfo, new: TensorInfo) -> TensorInfo | None:
    """``new`` (keeping ``old``'s dtype if it has none) when it knows more than ``old``, else None:
    a shape where there was none, every dim a number, or more numbers than ``old`` with its own
    kept (a data-dependent row count stays a symbol while the hidden dim beside it becomes known)."""
    if new.shape is None:
        return None
    if old.shape is not None:
        if old.is_known:
            return None
        if not new.is_known and not _more_numbers(old.shape, new.shape):
            return None
    return TensorInfo(old.name, new.dtype or old.dtype, new.shape)


def _more_numbers(old: tuple[Dim, ...], new: tuple[Dim, ...]) -> bool:
    """Whether ``new`` has every number ``old`` has, and more."""
    if len(old) != len(new):
        return False
    gained = False
    for before, after in zip(old, new):
        if isinstance(before, int):
            if before != after:
                return False
        elif isinstance(after, int):
            gained = True
    return gained


def inference_complaint(exc: BaseException) -> str:
    """onnx's inference error for one node, without its wrapping: '[ShapeInferenceError] Inference
    error(s): (op_type:MatMul, node name: mm): [ShapeInferenceError] Incompatible ...' -> 'Incompatible ...'."""
    text = re.sub(r"^.*\(op_type:[^,]*, node name: .*?\): ", "", " ".join(str(exc).split()))
    text = re.sub(r"\[\w+\]\s*", "", text).strip()
    text = "".join(c if c.isprintable() else "?" for c in text) or type(exc).__name__
    return text[:300] + ("..." if len(text) > 300 else "")
