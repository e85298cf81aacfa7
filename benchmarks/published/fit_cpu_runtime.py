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

Several dtypes (``fp32,fp16,int8``: a GPU runtime's engines at each precision) fit one (gemm, other)
pair per dtype, each the efficiency on the roof that dtype's kernels run on, and one launch cost
for all (the same runtime launches them). ``--fix gemm=0.55``, ``--fix other=0.52`` or ``--fix
launch=7.4e-6`` holds a figure (one a wider fit measured) instead of fitting it, so that a family
left out still leaves a fit with fewer unknowns than rows; ``--borrow TARGET`` holds gemm and other
at that bundled target's fitted efficiency.gemm and efficiency.gemv (a runtime's figures fitted on
other chips' rows: the Jetson Orin Nano takes the Jetson AGX Orin's TensorRT figures, the same
Ampere SMs and kernels, and fits only its launch cost). ``--fine`` searches the finer grids of the
GPU fitter (onnxroof.measure.efficiency_fit) where the coarse one steps 20 % at once. ``--run`` fits
a cost per run as well (a target's run_overhead_s: what a call costs beyond its kernels, such as a
Python harness's pre- and post-processing around the engine), on a grid of 0-10 ms; ``--by network``
leaves one network out at a time (all resolutions of it) where the rows are one family.

    python3 benchmarks/published/fit_cpu_runtime.py raspberry-pi-5-onnxruntime onnxruntime fp32
    python3 benchmarks/published/fit_cpu_runtime.py raspberry-pi-5 ncnn fp16
    python3 benchmarks/published/fit_cpu_runtime.py jetson-orin-nano-super-tensorrt TensorRT fp32,fp16,int8 --fine \
        --borrow jetson-agx-orin
    python3 benchmarks/published/fit_cpu_runtime.py jetson-orin-nano-tensorrt TensorRT fp16 --borrow jetson-agx-orin \
        --fix launch=2.85e-5 --run --by network

(a target's rows are those edge_rows sends to it: a runtime's rows go to its variant, RUNTIME_TARGETS)
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))
from onnxroof.measure.efficiency_fit import EFFICIENCY_GRID, LAUNCH_GRID_S  # noqa: E402
from onnxroof.pipeline import analyze  # noqa: E402
from onnxroof.roofline.targets import load_target  # noqa: E402
from published import edge_rows  # noqa: E402

SHARES = (0.05, 0.07, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
LAUNCH_S = (0.0, 5e-6, 10e-6, 20e-6, 50e-6, 100e-6, 200e-6)
RUN_S = tuple(i * 0.25e-3 for i in range(41))  # --run: 0 to 10 ms a call
FAMILIES = (
    "yolo11",
    "yolov8",
    "yolov9",
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
Figures = tuple[dict[str, tuple[float, float]], float, float]  # dtype -> (gemm, other); launch s; run s


def family(row: edge_rows.Row) -> str:
    low = row.label.lower()
    return next((f for f in FAMILIES if low.startswith(f)), low)


def network(row: edge_rows.Row) -> str:
    """The network a row measures, whatever its resolution: the hold-out group of ``--by network``."""
    return row.label


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


def predict(p: Parts, row: edge_rows.Row, gemm: float, other: float, launch_s: float, run_s: float = 0.0) -> float:
    """The row's figure: ms, or frames per second for a rate row."""
    seconds = p[0] / gemm + p[1] / other + p[2] * launch_s + run_s
    return 1 / seconds if row.throughput else seconds * 1e3


def fit(
    rows: list[edge_rows.Row],
    table: dict[tuple, Parts],
    fixed: dict[str, float] | None = None,
    fine: bool = False,
    per_run: bool = False,
) -> Figures:
    """Per dtype its (gemm, other) efficiencies, and one launch cost (and with ``per_run`` one cost per
    run) for all: for each launch and run cost on the grids the best pair per dtype, then the costs
    whose total squared log error is least."""
    fixed = fixed or {}
    shares = [float(x) for x in EFFICIENCY_GRID] if fine else list(SHARES)
    launches = sorted({*LAUNCH_S, *(float(x) for x in LAUNCH_GRID_S)}) if fine else list(LAUNCH_S)
    gemms = [fixed["gemm"]] if "gemm" in fixed else shares
    others = [fixed["other"]] if "other" in fixed else shares
    launches = [fixed["launch"]] if "launch" in fixed else launches
    runs = [fixed["run"]] if "run" in fixed else list(RUN_S) if per_run else [0.0]
    by_dtype: dict[str, list[edge_rows.Row]] = {}
    for r in rows:
        by_dtype.setdefault(r.dtype or "", []).append(r)

    def loss(mine: list[edge_rows.Row], gemm: float, other: float, launch_s: float, run_s: float) -> float:
        return sum(
            math.log(predict(table[(r.label, r.resolution, r.dtype)], r, gemm, other, launch_s, run_s) / r.measured)
            ** 2
            for r in mine
        )

    best: tuple[float, Figures] | None = None
    for launch_s, run_s in itertools.product(launches, runs):
        pairs, total = {}, 0.0
        for dtype, mine in by_dtype.items():
            pairs[dtype] = min(itertools.product(gemms, others), key=lambda pair: loss(mine, *pair, launch_s, run_s))
            total += loss(mine, *pairs[dtype], launch_s, run_s)
        if best is None or total < best[0]:
            best = (total, (pairs, launch_s, run_s))
    assert best is not None
    return best[1]


def shown(figures: Figures) -> str:
    pairs, launch_s, run_s = figures
    return ", ".join(f"{d} gemm {g:.3g} other {o:.3g}" for d, (g, o) in sorted(pairs.items())) + (
        f", launch {launch_s * 1e6:.3g} us" + (f", run {run_s * 1e3:.3g} ms" if run_s else "")
    )


def held_out(
    rows: list[edge_rows.Row],
    table: dict[tuple, Parts],
    fixed: dict[str, float],
    fine: bool,
    per_run: bool = False,
    group: Callable[[edge_rows.Row], str] = family,
) -> list[tuple[float, edge_rows.Row]]:
    """Each row predicted by a fit that never saw its group (its family, or its network with
    ``group=network``): (predicted / measured - 1, row)."""
    held: list[tuple[float, edge_rows.Row]] = []
    for left_out in sorted({group(r) for r in rows}):
        kept = [r for r in rows if group(r) != left_out]
        if not kept:
            print(f"  without {left_out}: no row left to fit on (one group: try --by network)")
            continue
        figures = fit(kept, table, fixed, fine, per_run)
        found = []
        for r in rows:
            if group(r) != left_out:
                continue
            if r.dtype not in figures[0]:  # no row of its dtype left to fit on
                print(f"  without {left_out}: no {r.dtype} row left: {r.data['model'][:24]} not predicted")
                continue
            gemm, other = figures[0][r.dtype]
            error = predict(table[(r.label, r.resolution, r.dtype)], r, gemm, other, *figures[1:]) / r.measured - 1
            found.append((error, r))
        held += found
        print(
            f"  without {left_out} ({len(kept)} rows): {shown(figures)}; "
            + ", ".join(f"{r.data['model'][:12]} {r.resolution or ''} {r.dtype} {e:+.0%}" for e, r in found)
        )
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("runtime", help="as edge_rows.runtime names it: onnxruntime, ncnn, TensorRT, ...")
    parser.add_argument("dtype", help="one dtype, or several separated by commas (one figure pair each)")
    parser.add_argument("--fix", action="append", default=[], metavar="NAME=VALUE", help="hold gemm, other or launch")
    parser.add_argument("--borrow", metavar="TARGET", help="hold gemm and other at this target's fitted figures")
    parser.add_argument("--fine", action="store_true", help="the GPU fitter's finer efficiency and launch grids")
    parser.add_argument("--run", action="store_true", help="fit a cost per run (run_overhead_s) as well")
    parser.add_argument(
        "--by", choices=("family", "network"), default="family", help="the group left out at a time (default family)"
    )
    args = parser.parse_args()
    fixed: dict[str, float] = {}
    if args.borrow:
        lender = load_target(args.borrow)
        if "gemm" not in lender.efficiency or "gemv" not in lender.efficiency:
            parser.error(f"--borrow {args.borrow}: it has no fitted efficiency.gemm and efficiency.gemv to lend")
        fixed = {"gemm": lender.efficiency["gemm"].value, "other": lender.efficiency["gemv"].value}
    for item in args.fix:
        name, _, value = item.partition("=")
        if name not in ("gemm", "other", "launch", "run"):
            parser.error(f"--fix {item}: hold 'gemm', 'other', 'launch' or 'run', e.g. --fix launch=7.4e-6")
        try:
            fixed[name] = float(value)
        except ValueError:
            parser.error(f"--fix {item}: the value is not a number")
    dtypes = args.dtype.split(",")
    rows = [
        r
        for r in edge_rows.read_rows()
        if edge_rows.comparable(r)
        and r.target == args.target
        and edge_rows.runtime(r) == args.runtime
        and r.dtype in dtypes
        and not one_thread(r)
    ]
    if not rows:
        parser.error(f"no comparable {args.runtime} {args.dtype} rows of {args.target}: check the names")
    table = parts(rows, args.target)
    print(f"{len(rows)} rows; fit on every row: {shown(fit(rows, table, fixed, args.fine, args.run))}")
    held = held_out(rows, table, fixed, args.fine, args.run, network if args.by == "network" else family)
    if not held:
        parser.error("no row was held out: every row is of one group (try --by network)")
    worst = max(held, key=lambda pair: abs(pair[0]))
    within = sum(1 for e, _ in held if 0.5 <= 1 + e <= 2)
    print(
        f"held out: {len(held)} rows, median |error| {statistics.median(abs(e) for e, _ in held):.0%}, "
        f"within 2x {within}/{len(held)}; worst {worst[1].data['model']} {worst[1].dtype} {worst[0]:+.0%}"
    )


if __name__ == "__main__":
    main()
