"""ONNX element types: short names and sizes in bits (sub-byte types pack, e.g. int4 = 4 bits)."""

from __future__ import annotations

# TensorProto.DataType -> (name, bits per element)
_DTYPES: dict[int, tuple[str, int]] = {
    1: ("float32", 32),
    2: ("uint8", 8),
    3: ("int8", 8),
    4: ("uint16", 16),
    5: ("int16", 16),
    6: ("int32", 32),
    7: ("int64", 64),
    8: ("string", 0),
    9: ("bool", 8),
    10: ("float16", 16),
    11: ("float64", 64),
    12: ("uint32", 32),
    13: ("uint64", 64),
    14: ("complex64", 64),
    15: ("complex128", 128),
    16: ("bfloat16", 16),
    17: ("float8e4m3fn", 8),
    18: ("float8e4m3fnuz", 8),
    19: ("float8e5m2", 8),
    20: ("float8e5m2fnuz", 8),
    21: ("uint4", 4),
    22: ("int4", 4),
    23: ("float4e2m1", 4),
    24: ("float8e8m0", 8),
    25: ("uint2", 2),
    26: ("int2", 2),
    27: ("float6e2m3", 6),
    28: ("float6e3m2", 6),
}


def dtype_name(elem_type: int) -> str:
    return _DTYPES.get(elem_type, ("unknown", 0))[0]


def dtype_bits(elem_type: int) -> int:
    """Bits per element; 0 when unknown (strings have no fixed size)."""
    return _DTYPES.get(elem_type, ("unknown", 0))[1]


def tensor_bytes(elements: int, elem_type: int) -> int:
    """Bytes to store ``elements`` of ``elem_type``, rounding packed sub-byte types up."""
    return packed_bytes(elements, dtype_bits(elem_type))


def packed_bytes(elements: int, bits: int) -> int:
    """Bytes to store ``elements`` of ``bits`` each, packed, the last byte rounded up.

    >>> packed_bytes(1024, 32), packed_bytes(3, 4)
    (4096, 2)
    """
    return (elements * bits + 7) // 8


def bits_of(name: str) -> int:
    """Bits per element of a type by its short name ("float32" -> 32); 0 when unknown.

    >>> bits_of("float32"), bits_of("int4"), bits_of("tensor")
    (32, 4, 0)
    """
    return next((bits for known, bits in _DTYPES.values() if known == name), 0)
