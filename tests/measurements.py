"""Measurements shared by the tests of measure/, report/ and cli/: a mocked clock and a hand-made
calibration. Each test file imports them from here, not from another test file."""

from __future__ import annotations

from onnxroof.measure.roof_kernels import MatmulPoint, Rate, StreamPoint, matmul_flops, sweep_sizes
from onnxroof.measure.roofs import Calibration

KiB, MiB, GiB = 2**10, 2**20, 2**30


class FakeClock:
    """Every reading is ``step`` seconds after the last: each timed call lasts ``step``."""

    def __init__(self, step: float = 1e-3):
        self.now, self.step, self.readings = 0.0, step, 0

    def __call__(self) -> float:
        self.now += self.step
        self.readings += 1
        return self.now


def sweep(levels, sizes=None):
    """Bandwidth per working set for (capacity, bytes/s) levels, DRAM last (capacity None)."""
    sizes = sizes or sweep_sizes()
    points = []
    for size in sizes:
        for capacity, bandwidth in levels:
            if capacity is None or size <= capacity:
                points.append((size, bandwidth))
                break
    return points


def hand_calibration(peak=150e9, levels=((1 * MiB, 200e9), (32 * MiB, 60e9), (None, 20e9))) -> Calibration:
    """A plausible machine's measurements, built by hand."""
    c = Calibration(date="2026-01-02 03:04 UTC", cpu='Test CPU "X" 9000', cores="4 cores, 8 logical CPUs",
                    threads=8, load_average=0.1, numpy_version="2.0", blas="OpenBLAS 0.3",
                    caches="L1d 32K, L2 1024K, L3 32768K (CPUs 0-7)")
    for n, share in ((128, 0.3), (1024, 0.9), (2048, 1.0)):
        c.matmul.append(MatmulPoint("float32", n, Rate(matmul_flops(n), matmul_flops(n) / (peak * share), 5)))
    c.matmul.append(MatmulPoint("float64", 1024, Rate(matmul_flops(1024), matmul_flops(1024) / (peak / 2), 3)))
    c.matmul.append(MatmulPoint("float16", 64, Rate(matmul_flops(64), matmul_flops(64) / 1e9, 3)))
    for size, bandwidth in sweep(list(levels)):
        for kernel, factor in (("copy", 0.9), ("add", 1.0), ("triad", 0.95)):
            work = bandwidth * factor * 1e-3
            c.stream.append(StreamPoint(kernel, size, Rate(work, 1e-3, 3)))
    return c
