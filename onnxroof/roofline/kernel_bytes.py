"""What a kernel moves that its records do not sum: the model's inputs and outputs it reads and
writes, the constants a runtime computes on every run, and which kernels keep their parameters on
chip between runs (cost-model.md section 5)."""

from __future__ import annotations

import math

from ..core.dtypes import bits_of, packed_bytes
from ..cost.records import NodeStatus
from .kernels import Kernel


def ran_constant_bytes(members: list, tensors: dict) -> tuple[int, int]:
    """(bytes read, bytes written) by the members onnxroof folds as constants, which a runtime
    that launched them computes on every run: onnxruntime keeps a QDQ model's DequantizeLinear of
    the weights it does not fuse, turning int8 weights into float ones each run. A folded tensor's
    record gives the bytes stored for it (the int8 source of a dequantized weight); what the
    runtime writes is its elements in its own type.

    >>> from types import SimpleNamespace as S
    >>> from onnxroof.cost.records import NodeStatus
    >>> tensors = {"w": S(bytes=1024), "s": S(bytes=4), "w_f": S(bytes=1028, dtype="float32", shape=(32, 32))}
    >>> dq = S(status=NodeStatus.CONSTANT, view=False, shape_only=False, inputs=["w", "s"], outputs=["w_f"])
    >>> ran_constant_bytes([dq, S(status=NodeStatus.OK)], tensors)
    (1028, 4096)
    """
    ran = [m for m in members if m.status == NodeStatus.CONSTANT and not m.view and not m.shape_only]
    read = sum(tensors[t].bytes or 0 for m in ran for t in m.inputs if t in tensors)
    written = sum(own_bytes(tensors[t]) for m in ran for t in m.outputs if t in tensors)
    return read, written


def own_bytes(tensor) -> int:
    """A tensor's elements in its own element type (its stored bytes if that is unknown)."""
    shape = tensor.shape
    if shape and all(isinstance(d, int) for d in shape):
        bits = bits_of(tensor.dtype)
        if bits:
            return packed_bytes(math.prod(shape), bits)
    return tensor.bytes or 0


def model_io_bytes(members: list, tensors: dict, inputs: set[str], outputs: set[str]) -> int:
    """The bytes a kernel moves of the model's inputs (read; views read nothing) and outputs
    (written): each tensor once, whole unless the members that move it move only part of it (their
    ``partial_bytes``: a KV buffer shared by past and present, read at the attended positions and
    written at the new ones), then the most any of them moves."""
    moved: dict[str, int] = {}
    for member in members:
        partial = member.partial_bytes
        for name in member.inputs if not member.view else ():
            if name in inputs:
                moved[name] = max(moved.get(name, 0), partial.get(name, tensors[name].bytes or 0))
        for name in member.outputs:
            if name in outputs:
                moved[name] = max(moved.get(name, 0), partial.get(name, tensors[name].bytes or 0))
    return sum(moved.values())


def cached_kernels(kernels: list[Kernel], budget_bytes: int) -> set[int]:
    """The kernels whose parameters a target keeps on chip between runs: in model order, each
    whose parameters still fit in ``budget_bytes`` (the on-chip memory beside the peak
    activations), as the Edge TPU compiler caches what fits and streams the rest.

    >>> from types import SimpleNamespace as K
    >>> sorted(cached_kernels([K(weight_bytes=4), K(weight_bytes=8), K(weight_bytes=3), K(weight_bytes=0)], 8))
    [0, 2]
    """
    cached, left = set(), budget_bytes
    for position, kernel in enumerate(kernels):
        if kernel.weight_bytes and kernel.weight_bytes <= left:
            cached.add(position)
            left -= kernel.weight_bytes
    return cached
