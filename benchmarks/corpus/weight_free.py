#!/usr/bin/env python3
"""A weight-free copy of an ONNX export, for the test fixtures (tests/data/exports/): the same
graph with every initializer over 1 KiB moved to external data, whose file is then deleted, and
the result gzipped. onnxroof counts tensors by their stored dims, so the totals are unchanged.

    python benchmarks/corpus/weight_free.py EXPORT.onnx OUT.onnx.gz
"""

from __future__ import annotations

import gzip
import sys
import tempfile
from pathlib import Path

import onnx


def weight_free(source: Path, target: Path) -> int:
    """Write the gzipped weight-free copy; returns its size in bytes."""
    model = onnx.load(str(source))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / target.name.removesuffix(".gz")
        onnx.save_model(model, str(path), save_as_external_data=True, size_threshold=1024,
                        location=path.stem + ".data")
        target.write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))
    return target.stat().st_size


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(weight_free(Path(sys.argv[1]), Path(sys.argv[2])))
