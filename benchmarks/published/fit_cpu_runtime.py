#!/usr/bin/env python3
"""Fit one runtime's efficiencies on an edge CPU or GPU target's published rows (issue 45 item 4),
leaving one network family out at a time: the per-runtime figure set a target variant carries.

Each row's network is analysed once on the target; its kernels' roof seconds are taken with the
target's own efficiencies and launch cost undone (so a refit on a fitted target gives the same figures);
per row, its kernels' roof seconds in GEMM-class kernels and in every other
class, and its kernel count. A row's time is gemm / e_gemm + other / e_other + kernels x launch
(placement.roofline's arithmetic with one efficiency per class group); searched on a grid minimising
the squared log error. Rows: the target's comparable rows of the named runtime at the named dtype,
the 1-thread rows left out (a target is the whole CPU).

    python3 benchmarks/published/fit_cpu_runtime.py raspberry-pi-5-onnxruntime onnxruntime fp32
    python3 benchmarks/published/fit_cpu_runtime.py raspberry-pi-5 ncnn fp16
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from onnxroof.pipeline import analyze  # noqa: E402
from published import edge_rows  # noqa: E402

SHARES = (0.05, 0.07, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
LAUNCH_S = (0.0, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6)
FAMILIES = (
    "yolo11",
    "yolov8",
    "yolox",
    "ssd",
    "mobilenet",
    "resnet",
    "efficientnet",
    "inception",
    "squeezenet",
    "vgg",
    "vit",
)
Parts = tuple[float, float, float]  # gemm roof seconds, other roof seconds, kernels


def family(row: edge_rows.Row) -> str:
    low = row.label.lower()
    return next((f for f in FAMILIES if low.startswith(f)), low)


def one_thread(row: edge_rows.Row) -> bool:
    return "1 thread" in row.data["software"] + row.data["accelerators"] + row.data["caveats"][:80]


def parts(rows: list[edge_rows.Row], target: str) -> dict[tuple, Parts]:
    seen: dict[tuple, Parts] = {}
    for row in rows:
        key = (row.label, row.resolution, row.dtype)
        if key in seen:
            continue
        report = analyze(row.build(1, row.resolution), targets=[target], dtype=row.dtype).targets[0]
        gemm = other = kernels = 0.0
        for kernel in report.nodes:
            point = kernel.placement
            roof_s = (point.time_s - point.overhead_s) * point.efficiency
            gemm += roof_s if point.kernel_class == "gemm" else 0.0
            other += roof_s if point.kernel_class != "gemm" else 0.0
            kernels += roof_s > 0
        seen[key] = (gemm, other, kernels)
    return seen


def predict(p: Parts, row: edge_rows.Row, gemm: float, other: float, launch_s: float) -> float:
    """The row's figure: ms, or frames per second for a rate row."""
    seconds = p[0] / gemm + p[1] / other + p[2] * launch_s
    return 1 / seconds if row.throughput else seconds * 1e3


def fit(rows: list[edge_rows.Row], table: dict[tuple, Parts]) -> tuple[float, float, float]:
    def loss(figures: tuple[float, float, float]) -> float:
        return sum(
            math.log(predict(table[(r.label, r.resolution, r.dtype)], r, *figures) / r.measured) ** 2 for r in rows
        )

    return min(itertools.product(SHARES, SHARES, LAUNCH_S), key=loss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("runtime", help="as edge_rows.runtime names it: onnxruntime, ncnn, TensorRT, ...")
    parser.add_argument("dtype")
    args = parser.parse_args()
    rows = [
        r
        for r in edge_rows.read_rows()
        if edge_rows.comparable(r)
        and r.target == args.target
        and edge_rows.runtime(r) == args.runtime
        and r.dtype == args.dtype
        and not one_thread(r)
    ]
    table = parts(rows, args.target)
    print(f"{len(rows)} rows; fit on every row (gemm, other, launch s): {fit(rows, table)}")
    held: list[tuple[float, edge_rows.Row]] = []
    for left_out in sorted({family(r) for r in rows}):
        figures = fit([r for r in rows if family(r) != left_out], table)
        found = [
            (predict(table[(r.label, r.resolution, r.dtype)], r, *figures) / r.measured - 1, r)
            for r in rows
            if family(r) == left_out
        ]
        held += found
        print(f"  without {left_out}: {figures}; " + ", ".join(f"{r.data['model'][:24]} {e:+.0%}" for e, r in found))
    worst = max(held, key=lambda pair: abs(pair[0]))
    within = sum(1 for e, _ in held if 0.5 <= 1 + e <= 2)
    print(
        f"held out: {len(held)} rows, median |error| {statistics.median(abs(e) for e, _ in held):.0%}, "
        f"within 2x {within}/{len(held)}; worst {worst[1].data['model']} {worst[0]:+.0%}"
    )


if __name__ == "__main__":
    main()
