"""How much of a compute-bound product's DRAM time its compute fails to hide (``dram_stall``):
a chain of :data:`FAN` MatMuls timed twice, once all reading one weight (it stays in the caches)
and once each reading a weight of its own (:data:`FAN` x 1-4 MiB, read past the caches every
run). The same arithmetic both ways, so the difference is the weights' reading that the
arithmetic did not hide; over the time the DRAM roof gives those bytes, it is the share stalled:

    stall = (own weights - one weight) / (weight bytes / DRAM bandwidth), the median of :data:`CASES`

The roofline's max() takes it as 0 (reads fully under the compute). Each weight is 1 MiB, so the
shared one stays on chip. On the machine this was written on (one core, onnxruntime's MLAS SGEMM
with pre-packed weights, DRAM roof 24 GB/s, 44 µs per weight): 111 then 128 µs per product at 32
rows (0.38 of the DRAM time stalled), 392 then 424 µs at 128 rows (0.73) and 1,791 then 1,863 µs
at 512 rows (1.0, capped: more than the DRAM time); the median, 0.73, is the figure. Products of
4 MiB weights stalled on more than their DRAM time (1,750 then 2,111 µs at 128 rows, the roof
175 µs).
"""

from __future__ import annotations

import statistics

import numpy as np

from . import achieved
from .float_models import float_model

FAN = 12  # products per chain
CASES = ((32, 512), (128, 512), (512, 512))  # (rows, width): x [rows, width] by weights [width, width], 1 MiB


def fan_model(rows: int, width: int, own_weights: bool):
    """:data:`FAN` MatMuls in a chain, x [rows, width] by [width, width] weights: one weight for
    all, or (``own_weights``) one each."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(0)
    count = FAN if own_weights else 1
    weights = [
        numpy_helper.from_array((0.05 * rng.standard_normal((width, width))).astype(np.float32), f"w{i}")
        for i in range(count)
    ]
    nodes = [
        helper.make_node("MatMul", [f"y{i - 1}" if i else "x", f"w{i % count}"], [f"y{i}"], name=f"matmul{i}")
        for i in range(FAN)
    ]
    return float_model(nodes, "fan", (rows, width), (rows, width), weights, output=f"y{FAN - 1}")


def stall_share(shared_s: float, own_s: float, weight_bytes: int, dram_bytes_per_s: float) -> float:
    """The share of the weights' DRAM time (``weight_bytes`` at ``dram_bytes_per_s``) that the
    own-weight chain took beyond the shared one, capped at 1 (never below 0).

    >>> round(stall_share(shared_s=2000e-6, own_s=2100e-6, weight_bytes=4_000_000, dram_bytes_per_s=20e9), 3)
    0.5
    """
    return min(1.0, max(0.0, (own_s - shared_s) / (weight_bytes / dram_bytes_per_s)))


def measure_dram_stall(dram_bytes_per_s: float, budget_s: float, threads: int | None = None) -> float | None:
    """The median :func:`stall_share` over :data:`CASES` (see the module); None without
    onnxruntime or when it is 0 (the compute hides the reads: the plain roofline)."""
    if not achieved.onnxruntime_available():
        return None
    shares = []
    for rows, width in CASES:
        feeds = {"x": np.random.default_rng(1).standard_normal((rows, width)).astype(np.float32)}
        shared_s, own_s = achieved.fastest_runs_s(
            [
                (achieved.cpu_session(fan_model(rows, width, own), threads, optimize=True), feeds)
                for own in (False, True)
            ],
            budget_s / len(CASES),
        )
        shares.append(stall_share(shared_s, own_s, FAN * width * width * 4, dram_bytes_per_s))
    share = statistics.median(shares)
    return share if share > 0 else None
