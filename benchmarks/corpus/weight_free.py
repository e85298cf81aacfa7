#!/usr/bin/env python3
"""A weight-free copy of an ONNX export, for the test fixtures (tests/data/exports/): the same
graph with every initializer over 1 KiB moved to external data, whose file is then deleted, and
the result gzipped. onnxroof counts tensors by their stored dims, so the totals are unchanged.

    python benchmarks/corpus/weight_free.py EXPORT.onnx OUT.onnx.gz [--small]

``--small`` (a deep export: GPT-2 48 layers) also moves initializers over 128 bytes out and keeps
of each node's metadata only the module path onnxroof reads (``pkg.torch.onnx.name_scopes``),
dropping the dynamo exporter's stack traces.
"""

from __future__ import annotations

import gzip
import sys
import tempfile
from pathlib import Path

import onnx

SCOPES = "pkg.torch.onnx.name_scopes"


def weight_free(source: Path, target: Path, small: bool = False) -> int:
    """Write the gzipped weight-free copy; returns its size in bytes."""
    model = onnx.load(str(source))
    if small:
        for node in model.graph.node:
            kept = [(p.key, p.value) for p in node.metadata_props if p.key == SCOPES]
            del node.metadata_props[:]
            for key, value in kept:
                node.metadata_props.add(key=key, value=value)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / target.name.removesuffix(".gz")
        onnx.save_model(
            model,
            str(path),
            save_as_external_data=True,
            size_threshold=128 if small else 1024,
            location=path.stem + ".data",
        )
        target.write_bytes(gzip.compress(path.read_bytes(), compresslevel=9, mtime=0))
    return target.stat().st_size


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--small"]
    if len(arguments) != 2:
        sys.exit(__doc__)
    print(weight_free(Path(arguments[0]), Path(arguments[1]), "--small" in sys.argv[1:]))
