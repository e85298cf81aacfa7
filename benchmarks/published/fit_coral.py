#!/usr/bin/env python3
"""Fit the Coral Edge TPU's efficiencies on Coral's benchmark table (the C++ rows, USB Accelerator and
Dev Board), leaving one network family out at a time.

Each row's network is analysed once on ``coral-edge-tpu`` at its peak figures (the target's fitted
tables taken off): per kernel, its compute seconds at 4 TOPS, its seconds over the host link (the
parameters that stream, the inputs and outputs) and its class. A row's time is then, per kernel, the
longer of compute / the class's share of the peak (convolutions and matmuls ``gemm``, depthwise
convolutions ``depthwise``, every other kernel ``link``) and link seconds / the link's share
``link``, plus ``launch`` per kernel: the arithmetic of roofline() with the target's ``by_op``
figures on the compute roof and the class's value on the DRAM roof (the link). Searched on a grid
minimising the squared log error; held out by family; printed with the TOML block it gives.

    python3 benchmarks/published/fit_coral.py
"""

from __future__ import annotations

import itertools
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from onnxroof.measure.trace_fit import plain_roofs  # noqa: E402
from onnxroof.pipeline import analyze  # noqa: E402
from onnxroof.roofline.targets import load_target  # noqa: E402
from published import edge_rows  # noqa: E402

SHARES = (0.05, 0.07, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
LINK = (0.6, 0.8, 1.0)
LAUNCH_S = (0.0, 5e-6, 10e-6, 20e-6, 40e-6, 80e-6)
FAMILIES = ("ssd", "mobilenet", "resnet", "efficientnet", "inception", "squeezenet", "vgg")


@dataclass
class Kernel:
    kernel_class: str | None
    compute_s: float
    link_s: float


def family(row: edge_rows.Row) -> str:
    return next(f for f in FAMILIES if row.label.lower().startswith(f))


def kernels(rows: list[edge_rows.Row]) -> dict[tuple, list[Kernel]]:
    """Each network's kernels on the target at its peak figures."""
    peak = plain_roofs(load_target("coral-edge-tpu"))
    seen: dict[tuple, list[Kernel]] = {}
    for row in rows:
        key = (row.label, row.resolution)
        if key not in seen:
            report = analyze(row.build(1, row.resolution), targets=[peak], dtype="int8").targets[0]
            seen[key] = [
                Kernel(n.placement.kernel_class, n.placement.compute_s, n.placement.memory_s) for n in report.nodes
            ]
    return seen


def predict(ks: list[Kernel], gemm: float, depthwise: float, launch_s: float, link: float) -> float:
    """Milliseconds."""
    share = {"gemm": gemm, "depthwise": depthwise}
    total = sum(
        max(k.compute_s / share.get(k.kernel_class or "", link), k.link_s / link)
        + (launch_s if k.compute_s or k.link_s else 0.0)
        for k in ks
    )
    return total * 1e3


def fit(rows: list[edge_rows.Row], nets: dict[tuple, list[Kernel]]) -> tuple[float, float, float, float]:
    def loss(figures: tuple[float, float, float, float]) -> float:
        return sum(math.log(predict(nets[(r.label, r.resolution)], *figures) / r.measured) ** 2 for r in rows)

    return min(itertools.product(SHARES, SHARES, LAUNCH_S, LINK), key=loss)


def main() -> None:
    rows = [
        r
        for r in edge_rows.read_rows()
        if edge_rows.comparable(r) and r.target == "coral-edge-tpu" and edge_rows.runtime(r) == "Edge TPU C++"
    ]
    nets = kernels(rows)
    figures = fit(rows, nets)
    print(
        f"{len(rows)} rows, {len(nets)} networks; fit on every row: gemm {figures[0]}, depthwise {figures[1]}, "
        f"launch {figures[2]:g} s, link {figures[3]}"
    )
    held: list[tuple[float, edge_rows.Row]] = []
    for left_out in sorted({family(r) for r in rows}):
        fitted = fit([r for r in rows if family(r) != left_out], nets)
        test = [r for r in rows if family(r) == left_out]
        found = [(predict(nets[(r.label, r.resolution)], *fitted) / r.measured - 1, r) for r in test]
        held += found
        print(
            f"  without {left_out}: {fitted}; held out "
            + ", ".join(f"{r.data['model']} {r.data['accelerators'][:20]} {r.measured:g} ms {e:+.0%}" for e, r in found)
        )
    worst = max(held, key=lambda pair: abs(pair[0]))
    within = sum(1 for e, _ in held if 0.5 <= 1 + e <= 2)
    print(
        f"held out: {len(held)} rows, median |error| {statistics.median(abs(e) for e, _ in held):.0%}, "
        f"within 2x {within}/{len(held)}; worst {worst[1].data['model']} ({worst[1].data['accelerators'][:30]}) "
        f"{worst[1].measured:g} ms {worst[0]:+.0%}"
    )


if __name__ == "__main__":
    main()
