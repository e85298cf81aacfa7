#!/usr/bin/env python3
"""What the findings cost: the analysis alone (onnxroof.pipeline.analyze) against the analysis and
its review (onnxroof.analyze(...).review(): the model analysed again with each change), in-process,
the median of ``--runs`` runs each, on the models given (default: the built-in MiniGoogLeNet and
the corpus exports named in docs/performance.md when they are present).

    python benchmarks/findings_cost.py [MODEL.onnx ...] [--target h100-sxm --target jetson-orin-nano] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import onnxroof
from onnxroof.core.examples import build_example
from onnxroof.pipeline import analyze as analyze_once

CORPUS = [("/work/corpus/tools/gpt2-optimized.onnx", {"dims": {"sequence": 128}}),
          ("/work/corpus/hf/bert-optimum/model.onnx", {"dims": {"sequence_length": 128}}),
          ("/work/corpus/pypi/nudenet-320n.onnx", {"dims": {"height": 320, "width": 320}})]


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--target", action="append", default=None)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    targets = args.target or ["h100-sxm", "jetson-orin-nano"]
    models = [(m, {}) for m in args.models] or [("minigooglenet", {})] + [c for c in CORPUS if Path(c[0]).exists()]
    print(f"targets: {', '.join(targets)}; median of {args.runs} runs\n")
    print("| model | nodes | analysis s | analysis + findings s | ratio | findings |")
    print("|---|---:|---:|---:|---:|---:|")
    for model, options in models:
        source = build_example(model) if not model.endswith(".onnx") else model
        alone = [timed(lambda: analyze_once(source, targets=targets, **options)) for _ in range(args.runs)]
        found = []
        both = []
        for _ in range(args.runs):
            def review():
                found.append(len(onnxroof.analyze(source, targets=targets, **options).review()))
            both.append(timed(review))
        nodes = len(analyze_once(source, **options).nodes)
        a, b = statistics.median(alone), statistics.median(both)
        print(f"| {Path(model).name if model.endswith('.onnx') else model} | {nodes:,} | {a:.2f} | {b:.2f} | "
              f"{b / a:.1f}x | {found[-1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
