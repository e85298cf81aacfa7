"""Measurements shared by the tests of measure/, report/ and cli/: a mocked clock, a hand-made
calibration, onnxruntime profile events by hand and the profiles recorded in tests/measure/data/.
Each test file imports them from here, not from another test file."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import onnxroof
from onnxroof.core.examples import build_example
from onnxroof.measure.profile_run import compare
from onnxroof.measure.profiling import ProfileResult, map_profile
from onnxroof.measure.roof_kernels import MatmulPoint, Rate, StreamPoint, matmul_flops, sweep_sizes
from onnxroof.measure.roofs import Calibration

KiB, MiB, GiB = 2**10, 2**20, 2**30
PROFILES = Path(__file__).parent / "measure" / "data"  # onnxruntime profiles of MiniGoogLeNet, recorded once


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
    c = Calibration(
        date="2026-01-02 03:04 UTC",
        cpu='Test CPU "X" 9000',
        cores="4 cores, 8 logical CPUs",
        threads=8,
        load_average=0.1,
        numpy_version="2.0",
        blas="OpenBLAS 0.3",
        caches="L1d 32K, L2 1024K, L3 32768K (CPUs 0-7)",
    )
    for n, share in ((128, 0.3), (1024, 0.9), (2048, 1.0)):
        c.matmul.append(MatmulPoint("float32", n, Rate(matmul_flops(n), matmul_flops(n) / (peak * share), 5)))
    c.matmul.append(MatmulPoint("float64", 1024, Rate(matmul_flops(1024), matmul_flops(1024) / (peak / 2), 3)))
    c.matmul.append(MatmulPoint("float16", 64, Rate(matmul_flops(64), matmul_flops(64) / 1e9, 3)))
    for size, bandwidth in sweep(list(levels)):
        for kernel, factor in (("copy", 0.9), ("add", 1.0), ("triad", 0.95)):
            work = bandwidth * factor * 1e-3
            c.stream.append(StreamPoint(kernel, size, Rate(work, 1e-3, 3)))
    return c


def small_calibration(**fields) -> Calibration:
    """A one-thread machine measured at its simplest: one float32 matmul at 40 GFLOP/s (512, 1 s)
    and a copy at 10 GB/s at every size of the sweep (1e10 bytes in 1 s); ``fields`` replace or
    add :class:`Calibration` fields (a launch cost, efficiency cases, another matmul)."""
    made = dict(
        date="2026-12-01",
        cpu="test CPU",
        cores="2 cores",
        threads=1,
        load_average=None,
        numpy_version="2",
        blas="OpenBLAS",
        matmul=[MatmulPoint("float32", 512, Rate(40e9, 1.0, 3))],
        stream=[StreamPoint("copy", size, Rate(1e10, 1.0, 3)) for size in (2**20, 2**24, 2**28, 2**30)],
    )
    return Calibration(**{**made, **fields})


def kernel_event(name, op, ts, dur, tid=1) -> dict:
    """An onnxruntime profile event: kernel ``name`` ran from ``ts`` for ``dur`` µs."""
    return {
        "cat": "Node",
        "name": f"{name}_kernel_time",
        "ph": "X",
        "ts": ts,
        "dur": dur,
        "tid": tid,
        "args": {"op_name": op, "provider": "CPUExecutionProvider"},
    }


def run_event(ts, dur) -> dict:
    """An onnxruntime profile event: one run of the model."""
    return {"cat": "Session", "name": "model_run", "ph": "X", "ts": ts, "dur": dur, "tid": 1}


def recorded_profile(level: str) -> dict:
    """The recorded profile of MiniGoogLeNet at optimization ``level`` (its events, warm-up and graph)."""
    return json.loads((PROFILES / f"minigooglenet-ort-{level}.json").read_text())


def expected_median(document: dict, kernel: str) -> float:
    """The median per measured run of one kernel of a recorded profile, computed straight from its events."""
    events = document["traceEvents"]
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "model_run")[document["warmup"] :]
    per_run = [
        sum(e["dur"] for e in events if e["name"] == f"{kernel}_kernel_time" and start <= e["ts"] <= end)
        for start, end in runs
    ]
    return statistics.median(per_run) * 1e-6


def recorded_result(note: str = "") -> ProfileResult:
    """A ProfileResult built from the recorded profile, as profile_model builds it (no onnxruntime)."""
    analysis = onnxroof.analyze(build_example("minigooglenet"), targets=["myriad-x"])
    report = analysis.targets[0]
    predicted = {n.name: n.placement.time_s for n in report.nodes}
    mapping = map_profile(PROFILES / "minigooglenet-ort-all.json", analysis, warmup=1, weights=predicted)
    return ProfileResult(
        analysis,
        report,
        mapping,
        compare(analysis, report, mapping),
        "all",
        None,
        1,
        "1.x",
        None,
        [note] if note else [],
    )
