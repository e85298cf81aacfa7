#!/usr/bin/env python3
"""Fit a dataflow target's chip constants (roofline/dataflow.py: units, efficiency, switch_s,
context_bytes) on the Hailo model zoo's rows, leaving one network family out at a time.

Each buildable zoo network is analysed once on the target (peak figures) and its pipeline layers
(flops per frame, parameter bytes) and frame bytes are kept; the constants are then searched on a
grid, scoring |log(predicted / measured)| over the fps rows (batch 1 and 8) and the hardware
latency rows. Prints the fit on every row, and per family left out the held-out errors.

    python3 benchmarks/published/fit_dataflow.py [--target hailo-8]
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from onnxroof.pipeline import analyze  # noqa: E402
from onnxroof.roofline import dataflow  # noqa: E402
from onnxroof.roofline.figures import Figure  # noqa: E402
from published import edge_rows  # noqa: E402

UNITS = (16, 32, 64, 96, 128, 192, 256)
EFFICIENCY = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
SWITCH_S = (0.0, 0.2e-3, 0.5e-3, 1e-3, 2e-3, 4e-3)
CONTEXT_BYTES = (12e6, 16e6, 20e6, 24e6, 28e6)
STREAM = (0.0, 10e9, 20e9, 35e9, 50e9, 100e9, 200e9)  # activation_bytes_per_s (0: not a limit)
FAMILIES = ("resnet", "squeezenet", "inception", "mobilenet", "ssd", "efficientnet_lite", "efficientnet_",
            "vit", "deit", "yolov8", "yolov11", "yolox")


@dataclass
class Network:
    layers: list[dataflow.Layer]
    io_bytes: int
    peak: float
    link: float


def family(row: edge_rows.Row) -> str:
    name = row.data["model"].lower()
    name = name.split("(")[-1].rstrip(")") if "(" in name else name
    return next((f for f in FAMILIES if name.startswith(f)), name)


def networks(rows: list[edge_rows.Row]) -> dict[tuple, Network]:
    """Each row's network as the pipeline sees it (captured from the analysis's own call)."""
    seen: dict[tuple, Network] = {}
    real = dataflow.time_dataflow
    for row in rows:
        key = (row.label, row.resolution)
        if key in seen:
            continue
        captured = []

        def capture(layers, io_bytes, chip, peak, link, group=1, captured=captured):
            captured.append(Network(layers, io_bytes, peak, link))
            return real(layers, io_bytes, chip, peak, link, group)

        dataflow.time_dataflow = capture
        try:
            analyze(row.build(1, row.resolution), targets=[row.target], dtype=row.dtype)
        finally:
            dataflow.time_dataflow = real
        seen[key] = captured[0]
    return seen


@dataclass
class Shape:
    """A network's contexts under one (units, context_bytes) at efficiency 1: (parameter bytes, fill,
    slowest stage) each; the efficiency divides the stage times, the switch cost adds per context."""

    contexts: list[tuple[int, float, float]]
    io_s: float
    link: float


def shape(net: Network, units: int, context_bytes: float, stream: float) -> Shape:
    chip = dataflow.DataflowChip(Figure(context_bytes, "measured", "fit"), Figure(units, "measured", "fit"),
                                 activation_bytes_per_s=Figure(stream, "measured", "fit") if stream else None)
    timing = dataflow.time_dataflow(net.layers, net.io_bytes, chip, net.peak, net.link)
    return Shape([(c.weight_bytes, c.fill_s, c.slowest_s) for c in timing.contexts], net.io_bytes / net.link,
                 net.link)


def predict(s: Shape, row: edge_rows.Row, efficiency: float, switch_s: float) -> float:
    """time_dataflow's arithmetic on a precomputed shape (tests/roofline/test_dataflow.py holds the module's)."""
    group = row.batch
    if len(s.contexts) == 1:
        _, fill, slowest = s.contexts[0]
        per_frame, latency = max(slowest / efficiency, s.io_s), fill / efficiency + s.io_s
    else:
        group_s = sum(w / s.link + switch_s + (fill + (group - 1) * slowest) / efficiency
                      for w, fill, slowest in s.contexts)
        per_frame = max(group_s / group, s.io_s)
        latency = sum(w / s.link + switch_s + fill / efficiency for w, fill, _ in s.contexts) + s.io_s
    return 1 / per_frame if row.throughput else latency * 1e3


def error(predicted: float, row: edge_rows.Row) -> float:
    return predicted / row.measured - 1 if row.throughput else row.measured / predicted - 1  # + : too optimistic


def shapes(nets: dict[tuple, Network]) -> dict[tuple, Shape]:
    return {(key, units, cb, stream): shape(net, units, cb, stream)
            for key, net in nets.items() for units, cb, stream in itertools.product(UNITS, CONTEXT_BYTES, STREAM)}


def fit(rows: list[edge_rows.Row], table: dict[tuple, Shape]) -> tuple[tuple, float]:
    best, best_score = None, math.inf
    for constants in itertools.product(UNITS, EFFICIENCY, SWITCH_S, CONTEXT_BYTES, STREAM):
        score = statistics.median(abs(math.log(predicted(table, r, constants) / r.measured)) for r in rows)
        if score < best_score:
            best, best_score = constants, score
    return best, best_score


def predicted(table: dict[tuple, Shape], row: edge_rows.Row, constants: tuple) -> float:
    units, efficiency, switch_s, context_bytes, stream = constants
    return predict(table[((row.label, row.resolution), units, context_bytes, stream)], row, efficiency, switch_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="hailo-8")
    args = parser.parse_args()
    rows = [r for r in edge_rows.read_rows() if edge_rows.comparable(r) and r.target == args.target
            and "hw latency" not in r.data["metric"]]
    nets = networks(rows)
    table = shapes(nets)
    print(f"{len(rows)} rows, {len(nets)} networks, families: {sorted({family(r) for r in rows})}")
    constants, score = fit(rows, table)
    print("fit on every row: units, efficiency, switch_s, context_bytes, activation_bytes_per_s = "
          f"{constants}; median |log| {score:.3f}")
    held: list[tuple[float, edge_rows.Row]] = []
    for left_out in sorted({family(r) for r in rows}):
        train = [r for r in rows if family(r) != left_out]
        test = [r for r in rows if family(r) == left_out]
        fitted, _ = fit(train, table)
        for r in test:
            held.append((error(predicted(table, r, fitted), r), r))
        print(f"  without {left_out}: {fitted}; held out {len(test)} rows, "
              f"median |error| {statistics.median(abs(e) for e, _ in held[-len(test):]):.0%}")
    errors = sorted(held, key=lambda pair: -abs(pair[0]))
    within_2x = sum(1 for e, _ in held if 0.5 <= 1 + e <= 2)
    print(f"held out: {len(held)} rows, median |error| {statistics.median(abs(e) for e, _ in held):.0%}, "
          f"within 2x {within_2x}/{len(held)}; worst: " + "; ".join(
              f"{r.data['model']} {r.data['metric']} {r.measured:g} ({e:+.0%})" for e, r in errors[:5]))


if __name__ == "__main__":
    main()
