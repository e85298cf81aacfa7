#!/usr/bin/env python3
"""The formulas of `summary --symbolic` against the integer analysis on real exports (issue 22):
each formula evaluated at values outside the fitted points must equal onnxroof's own count there,
and each target's latency formula its placement's latency (to 1e-9, over the range it says it
holds on), or, for a formula that leaves whole waves of tiles out (a lower bound), stay at or under it.

    python benchmarks/validate_symbolic.py [TARGET.toml ...]   # needs the validation corpus in /work/corpus

Extra targets (a file `onnxroof calibrate` wrote, whose efficiency classes differ) are added to
the bundled three.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import onnxroof
from onnxroof.symbolic.formulas import formulas

TARGETS = ["h100-sxm", "jetson-orin-nano", "raspberry-pi-5"]
CASES = [  # label, model, options, the free variable, values outside the fitted 2, 3, 5, 7 and 11
    ("GPT-2 (transformers exporter, KV cache), decode", "/work/corpus/hf/gpt2-hf-kv/model.onnx",
     {"phase": "decode"}, "context", (13, 64, 128, 500, 1000, 3000)),
    ("Llama (transformers exporter, KV cache), decode", "/work/corpus/hf/llama-hf-kv/model.onnx",
     {"phase": "decode"}, "context", (13, 64, 128, 500, 1000, 3000)),
    ("Llama (onnxruntime-genai builder, GroupQueryAttention), decode", "/work/corpus/hf/llama-genai-fp32/model.onnx",
     {"phase": "decode"}, "context", (13, 64, 128, 500, 1000, 3000)),
    ("BERT (optimum), batch 1", "/work/corpus/hf/bert-optimum/model.onnx",
     {"dims": {"batch_size": 1}}, "sequence_length", (13, 64, 128, 200, 512)),
    ("BERT (onnxruntime dynamic int8 quantizer), batch 1", "/work/corpus/tools/bert-dynamic-int8.onnx",
     {"dims": {"batch": 1}}, "sequence", (13, 64, 128, 200, 512)),
    ("ResNet-50 (onnxruntime static QDQ quantizer)", "/work/corpus/tools/resnet50-qdq.onnx",
     {}, "batch", (12, 16, 100, 300, 1000, 2000)),
]
METRICS = ("macs", "flops", "weight_bytes", "peak_bytes", "kv_cache_bytes")


def actual(analysis, metric: str) -> int | None:
    return {"macs": analysis.totals.macs, "flops": analysis.totals.flops,
            "weight_bytes": analysis.totals.weight_bytes_read,
            "peak_bytes": analysis.memory.model_order.peak_bytes,
            "kv_cache_bytes": analysis.llm.kv_read_bytes if analysis.llm is not None else None}[metric]


def main() -> int:
    TARGETS.extend(sys.argv[1:])
    print("| model | metric | formula | values checked | all equal |")
    print("|---|---|---|---|---|")
    failed = 0
    timings = []
    for label, path, options, variable, values in CASES:
        if not Path(path).is_file():
            print(f"| {label} | skipped: not in the corpus | | | |")
            continue
        start = time.perf_counter()
        found = formulas(path, targets=TARGETS, **options)
        timings.append((label, time.perf_counter() - start))
        analyses = {}
        for value in values:
            bound = ({**options, variable: value} if variable in ("context", "seq")
                     else {**options, "dims": {**options.get("dims", {}), variable: value}})
            analyses[value] = onnxroof.analyze(path, targets=TARGETS, **bound)
        for metric in METRICS:
            if metric not in found.polynomials:
                continue
            if found.evaluate(metric, {variable: values[0]}) is None:
                print(f"| {label} | {metric} | {found.text(metric)} | | |")
                continue
            equal = all(found.evaluate(metric, {variable: v}) == actual(analyses[v], metric) for v in values)
            failed += not equal
            print(f"| {label} | {metric} | `{found.text(metric)}` | {', '.join(map(str, values))} | {'yes' if equal else 'NO'} |")
        for position, latency in enumerate(found.latency):
            if latency.refuted:
                print(f"| {label} | latency on {latency.target} | not a formula: {latency.refuted} | | |")
                continue
            for formula, name in ((latency, f"latency on {latency.target}"),
                                  (latency.beyond, f"latency on {latency.target}, past the spill's start")):
                if formula is None:
                    continue
                inside = [v for v in values if (formula.holds_to is None or v <= formula.holds_to)
                          and (formula.holds_from is None or v >= formula.holds_from)]
                placed = [analyses[v].targets[position].latency_s for v in inside]
                given = [formula.seconds({variable: v}) for v in inside]
                if formula.waves_left_out:  # a lower bound: at or under the placement at every value
                    equal = all(g <= p * (1 + 1e-9) for g, p in zip(given, placed))
                    worst = max((p / g - 1 for g, p in zip(given, placed)), default=0.0)
                    yes = f"a bound: at or under, by up to {worst:.1%}"
                else:
                    equal = all(math.isclose(g, p, rel_tol=1e-9) for g, p in zip(given, placed))
                    yes = "yes"
                failed += not equal
                ranges = "; ".join(f"{span}: {text}" for span, text in formula.shown_ranges())
                verdict = (yes if equal else "NO") if inside else "none of these values in its range"
                print(f"| {label} | {name} | `{ranges}` ({formula.holds or 'holds throughout'}) "
                      f"| {', '.join(map(str, inside))} | {verdict} |")
    print()
    for label, seconds in timings:
        print(f"- {label}: the formulas with {len(TARGETS)} targets in {seconds:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
