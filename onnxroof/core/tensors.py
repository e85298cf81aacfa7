"""What every stage knows of a tensor: its element type and shape (``TensorInfo``, read from a
ValueInfoProto by ``info_from_value_info``), and an input dim still unbound after binding
(``UnresolvedDim``, with the flag that fixes it)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

Dim = int | str | None  # int: known; str: a symbolic dim's name; None: unknown and unnamed


# the largest dim ONNX stores (an int64): a value given for a dim, or a dim the model writes as a
# number in its name, beyond it is refused
MAX_DIM = 2**63 - 1
MAX_DIM_TEXT = "2^63 - 1 = 9,223,372,036,854,775,807, the largest dim ONNX stores"


@dataclass(slots=True)  # one per tensor on a big graph: slots make them cheap to build and read
class TensorInfo:
    """What is known about one tensor: its element type and its shape. Treat as immutable."""

    name: str
    dtype: int = 0  # onnx.TensorProto.DataType; 0 = unknown
    shape: tuple[Dim, ...] | None = None  # None: rank unknown
    # worked out once here: every later stage reads them, most tensors several times
    is_known: bool = field(init=False, repr=False, compare=False)  # every dim is a number
    numel: int | None = field(init=False, repr=False, compare=False)  # None unless known

    def __post_init__(self) -> None:
        shape = self.shape  # dims are ints, names (str) or None
        self.is_known = known = shape is not None and None not in shape and str not in map(type, shape)
        self.numel = math.prod(shape) if known else None  # type: ignore[arg-type]  # known: every dim an int

    def renamed(self, name: str) -> TensorInfo:
        """The same type and shape for tensor ``name``: a copy of every field but the name (a big
        graph's tensors share a few types, so working out is_known and numel again is wasted)."""
        info = object.__new__(TensorInfo)
        info.name, info.dtype, info.shape, info.is_known, info.numel = (
            name,
            self.dtype,
            self.shape,
            self.is_known,
            self.numel,
        )
        return info

    def shape_text(self) -> str:
        if self.shape is None:
            return "?"
        return "x".join("?" if d is None else str(d) for d in self.shape) or "scalar"


@dataclass(frozen=True)
class UnresolvedDim:
    """An input dim still unknown after binding, with the flag that fixes it."""

    input_name: str
    axis: int  # -1: the input's rank itself is unknown
    symbol: str | None
    shape: tuple[Dim, ...] | None = None  # the input's shape as bound, for the fix

    @property
    def fix(self) -> str:
        """A flag that runs as pasted; 1 stands where the user's own value belongs (the
        warning says so), since a placeholder like VALUE would not parse."""
        if self.symbol:
            return f"--dim {self.symbol}=1"
        if self.shape is None:
            return f"--input-shape {self.input_name}:D1,D2,..."
        dims = ",".join(str(d) if isinstance(d, int) else "1" for d in self.shape)
        return f"--input-shape {self.input_name}:{dims}"


def info_from_value_info(value_info: onnx.ValueInfoProto) -> TensorInfo:
    """What a ValueInfoProto declares of its tensor (a negative dim is unknown)."""
    if not value_info.type.HasField("tensor_type"):
        return TensorInfo(value_info.name)
    tensor_type = value_info.type.tensor_type
    shape: tuple[Dim, ...] | None = None
    if tensor_type.HasField("shape"):
        shape = tuple(
            d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else (d.dim_param or None)
            for d in tensor_type.shape.dim
        )
    return TensorInfo(value_info.name, tensor_type.elem_type, shape)


def has_external_data(tensor: onnx.TensorProto) -> bool:
    """Whether the tensor's data lives in an external file (never read by onnxroof)."""
    from onnx import TensorProto  # here: importing this module stays free of onnx

    return tensor.data_location == TensorProto.EXTERNAL
