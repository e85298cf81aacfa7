#!/usr/bin/env python3
"""The formulas of `summary --symbolic` against the integer analysis on real exports (issue 22):
each formula evaluated at values outside the fitted points must equal onnxroof's own count there.

    python benchmarks/validate_symbolic.py     # needs the validation corpus in /work/corpus
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnxroof
from onnxroof.symbolic import formulas

CASES = [  # label, model, options, the free variable, values outside the fitted 2, 3, 5, 7 and 11
    ("GPT-2 (transformers exporter, KV cache), decode", "/work/corpus/hf/gpt2-hf-kv/model.onnx",
     {"phase": "decode"}, "context", (13, 64, 128, 500, 1000)),
    ("BERT (optimum), batch 1", "/work/corpus/hf/bert-optimum/model.onnx",
     {"dims": {"batch_size": 1}}, "sequence_length", (13, 64, 128, 200, 512)),
]


def main() -> int:
    print("| model | metric | formula | values checked | all equal |")
    print("|---|---|---|---|---|")
    failed = 0
    for label, path, options, variable, values in CASES:
        if not Path(path).is_file():
            print(f"| {label} | skipped: not in the corpus | | | |")
            continue
        found = formulas(path, **options)
        for metric in ("macs", "flops", "weight_bytes"):
            if found.polynomials.get(metric) is None:
                print(f"| {label} | {metric} | {found.text(metric)} | | |")
                continue
            equal = True
            for value in values:
                bound = ({**options, variable: value} if variable in ("context", "seq")
                         else {**options, "dims": {**options.get("dims", {}), variable: value}})
                analysis = onnxroof.analyze(path, **bound)
                actual = {"macs": analysis.totals.macs, "flops": analysis.totals.flops,
                          "weight_bytes": analysis.totals.weight_bytes_read}[metric]
                equal &= found.evaluate(metric, {variable: value}) == actual
            failed += not equal
            print(f"| {label} | {metric} | `{found.text(metric)}` | {', '.join(map(str, values))} | {'yes' if equal else 'NO'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
