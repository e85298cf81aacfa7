#!/usr/bin/env python3
"""Fit a dataflow target's chip constants (roofline/dataflow.py's [dataflow] table) on the Hailo model
zoo's rows, leaving one network family out at a time.

Each buildable zoo network is analysed once on the target and its pipeline layers (flops, parameter
bytes, activations, output rows, folded LayerNorms and Softmaxes), frame bytes and input rows are
kept; the constants are then
searched coordinate by coordinate on a grid (from a start point, a few rounds), scoring the mean
|log(predicted / measured)| over the fps rows at batch 1 and 8 (the mean, not the median: every row
pulls). The pipeline is the module's own ``time_dataflow``. Prints the fit on every row (each row's
factor, its context count and what limits it), and per family left out the constants and the
held-out errors; the hardware-latency rows are not fitted on, only predicted (by the all-row fit and
by their family's fold).

    python3 benchmarks/published/fit_dataflow.py [--target hailo-8] [--rounds 2] [--fix context_bytes=28e6]

(about 13 minutes on one core with the partitioner; the figures in hardware/hailo-8.toml and the docs:
--fix context_bytes=28e6 --fix layers_per_context=96 --rounds 2, 3 rounds the same)
"""

from __future__ import annotations

import argparse
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

# the [dataflow] constants and the values each may take (context_bytes and activation_bytes_per_s in
# bytes, switch_s and stage_s in seconds)
GRID: dict[str, tuple[float, ...]] = {
    "units": (64, 96, 112, 128, 160, 192, 256, 384, 512),
    "efficiency": (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 1.0),
    "activation_bytes_per_s": (20e9, 35e9, 50e9, 70e9, 100e9, 200e9),
    "context_bytes": (16e6, 20e6, 24e6, 28e6, 32e6, 40e6),
    "layers_per_context": (48, 64, 80, 96, 112, 128, 160),
    "switch_s": (0.0, 0.2e-3, 0.5e-3, 1e-3, 1.25e-3, 1.5e-3, 1.75e-3, 2e-3, 3e-3),
    "norm_layers": (0, 2, 4, 8, 12, 16, 24),
    "softmax_layers": (0, 1, 2, 4, 6, 8),
    "stage_s": (0.0, 5e-6, 10e-6, 20e-6, 30e-6, 40e-6, 60e-6),
    "fill_stages": (1, 2, 4),
    "row_s": (0.0, 0.8e-6, 1.0e-6, 1.2e-6, 1.3e-6, 1.4e-6, 1.5e-6, 1.6e-6, 1.8e-6, 2.0e-6, 2.4e-6, 3.0e-6),
    # the frames per context load the partitioner sizes a multi-context split for (0: contexts filled in order)
    "partition_batch": (0, 1, 2, 4, 8, 16),
}
START = {
    "units": 128,
    "efficiency": 0.5,
    "activation_bytes_per_s": 35e9,
    "context_bytes": 32e6,
    "layers_per_context": 96,
    "switch_s": 1.5e-3,
    "norm_layers": 16,
    "softmax_layers": 6,
    "stage_s": 20e-6,
    "fill_stages": 1,
    "row_s": 1.3e-6,
    "partition_batch": 16,
}
FAMILIES = (
    "resnet",
    "squeezenet",
    "inception",
    "mobilenet",
    "ssd",
    "efficientnet_lite",
    "efficientnet_",
    "vit",
    "deit",
    "yolov8",
    "yolov11",
    "yolox",
)


@dataclass
class Network:
    layers: list[dataflow.Layer]
    io_bytes: int
    peak: float
    link: float
    rows: int = 0  # the frame's input rows


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

        def capture(layers, io_bytes, chip, peak, link, group=1, rows=0, captured=captured):
            captured.append(Network(layers, io_bytes, peak, link, rows))
            return real(layers, io_bytes, chip, peak, link, group, rows)

        dataflow.time_dataflow = capture
        try:
            analyze(row.build(1, row.resolution), targets=[row.target], dtype=row.dtype)
        finally:
            dataflow.time_dataflow = real
        seen[key] = captured[0]
    return seen


def chip_of(constants: dict[str, float]) -> dataflow.DataflowChip:
    def fig(name: str) -> Figure:
        return Figure(constants[name], "measured", "fit_dataflow.py")

    # partition_batch 0: no partitioner (each context filled in order)
    given = [name for name in constants if constants[name] or name != "partition_batch"]
    return dataflow.DataflowChip(**{name: fig(name) for name in given})


def timing(net: Network, row: edge_rows.Row, constants: dict[str, float]) -> dataflow.DataflowTiming:
    return dataflow.time_dataflow(net.layers, net.io_bytes, chip_of(constants), net.peak, net.link, row.batch, net.rows)


def factor(net: Network, row: edge_rows.Row, constants: dict[str, float]) -> float:
    """Predicted over measured rate (measured over predicted time): above 1, too optimistic."""
    t = timing(net, row, constants)
    return t.frames_per_s / row.measured if row.throughput else row.measured / (t.latency_s * 1e3)


def score(rows: list[edge_rows.Row], nets: dict[tuple, Network], constants: dict[str, float]) -> float:
    return statistics.mean(abs(math.log(factor(nets[(r.label, r.resolution)], r, constants))) for r in rows)


def fit(rows: list[edge_rows.Row], nets: dict[tuple, Network], rounds: int = 3) -> dict[str, float]:
    """Coordinate descent on the grid from START: each constant in turn to its best value, a few rounds."""
    best, best_score = dict(START), score(rows, nets, START)
    for _ in range(rounds):
        improved = False
        for name, values in GRID.items():
            for value in values:
                trial = {**best, name: value}
                trial_score = score(rows, nets, trial)
                if trial_score < best_score - 1e-9:
                    best, best_score, improved = trial, trial_score, True
        if not improved:
            break
    return best


def error(f: float) -> float:
    """|error| in the row's own metric: a rate predicted f x the measured one is off by |f - 1|."""
    return abs(f - 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="hailo-8")
    parser.add_argument("--rounds", type=int, default=3, help="coordinate-descent rounds per fit")
    parser.add_argument(
        "--fix",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="hold a constant at a value instead of fitting it (e.g. context_bytes=28e6)",
    )
    args = parser.parse_args()
    for item in args.fix:
        name, value = item.split("=")
        GRID[name] = (float(value),)
        START[name] = float(value)
    every = [r for r in edge_rows.read_rows() if edge_rows.comparable(r) and r.target == args.target]
    # the fps rows are fitted on; the hardware latencies (one frame through the pipeline) only predicted
    rows = [r for r in every if "hw latency" not in r.data["metric"]]
    latencies = [r for r in every if "hw latency" in r.data["metric"]]
    nets = networks(every)
    print(f"{len(rows)} rows, {len(nets)} networks, families: {sorted({family(r) for r in rows})}")
    constants = fit(rows, nets, args.rounds)
    print(f"fit on every row: {constants}; mean |log| {score(rows, nets, constants):.3f}")
    for row in sorted(rows, key=lambda r: -abs(math.log(factor(nets[(r.label, r.resolution)], r, constants)))):
        net = nets[(row.label, row.resolution)]
        t = timing(net, row, constants)
        print(
            f"  {row.data['model']:28s} bs{row.batch} {row.measured:>7g} x{factor(net, row, constants):5.2f}"
            f" contexts {len(t.contexts)}, limited by {t.limiting}"
        )
    for row in latencies:
        net = nets[(row.label, row.resolution)]
        print(f"  latency (not fitted on) {row.data['model']}: {row.measured:g} ms, x{factor(net, row, constants):.2f}")
    held: list[tuple[float, edge_rows.Row]] = []
    for left_out in sorted({family(r) for r in rows}):
        train = [r for r in rows if family(r) != left_out]
        test = [r for r in rows + latencies if family(r) == left_out]
        fitted = fit(train, nets, args.rounds)
        found = [(factor(nets[(r.label, r.resolution)], r, fitted), r) for r in test]
        held += found
        changed = {k: v for k, v in fitted.items() if v != constants[k]}
        print(
            f"  without {left_out}: {len(test)} rows, median |error| "
            f"{statistics.median(error(f) for f, _ in found):.0%}; constants unlike the all-row fit: {changed}"
        )
    worst = sorted(held, key=lambda pair: -abs(math.log(pair[0])))
    within_2x = sum(1 for f, _ in held if 0.5 <= f <= 2)
    within_3x = sum(1 for f, _ in held if 1 / 3 <= f <= 3)
    print(
        f"held out: {len(held)} rows ({len(latencies)} latencies), median |error| "
        f"{statistics.median(error(f) for f, _ in held):.1%}, within 2x {within_2x}/{len(held)}, within 3x "
        f"{within_3x}/{len(held)}, the largest |error| (the band) {max(error(f) for f, _ in held):.0%}; worst: "
        + "; ".join(f"{r.data['model']} bs{r.batch} {r.measured:g} (x{f:.2f})" for f, r in worst[:6])
    )


if __name__ == "__main__":
    main()
