#!/usr/bin/env python3
"""A merged decoder against the same decoder exported without its If (issue 42): optimum's
``decoder_model_merged.onnx`` holds the network in the two branches of one If on
``use_cache_branch``; ``decoder_with_past_model.onnx`` (a decode step) and ``decoder_model.onnx``
(the prompt step) are the same branches exported alone. onnxroof places the branch an If takes as
kernels (cost/running.py), so the latencies should agree on every bundled target.

The corpus is what ``benchmarks/corpus/build_seq2seq.py --out DIR`` writes (small configs, random
weights): ``DIR/whisper-optimum/`` and ``DIR/t5-optimum/``. Decode is ``--phase decode --context
128`` (127 cached + 1 new, the manifests' ``decode`` binding), with the encoder length of each
model (Whisper 1,500, T5 256); prefill binds 128 new tokens and ``use_cache_branch=0``.

Usage: python benchmarks/merged_decoders.py --corpus DIR [--phase decode|prefill|both]
Prints a Markdown table (docs/llm.md shows it); exit status 1 when a pair differs by more than 2 %.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnxroof
from onnxroof.roofline.targets import bundled_targets

MODELS = (("whisper", 1500), ("t5", 256))
TOLERANCE = 0.02


def pairs(corpus: Path, phase: str):
    """(model, phase, merged analysis, twin analysis) per model and phase."""
    targets = sorted(bundled_targets())
    for model, encoder in MODELS:
        folder = corpus / f"{model}-optimum"
        if phase in ("decode", "both"):
            options = dict(phase="decode", context=128, encoder_seq=encoder, targets=targets)
            yield (model, "decode", onnxroof.analyze(folder / "decoder_model_merged.onnx", **options),
                   onnxroof.analyze(folder / "decoder_with_past_model.onnx", **options))
        if phase in ("prefill", "both"):
            dims = {"batch_size": 1, "decoder_sequence_length": 128, "encoder_sequence_length": encoder}
            merged = onnxroof.analyze(folder / "decoder_model_merged.onnx", dims=dims | {"past_decoder_sequence_length": 0},
                                      values={"use_cache_branch": 0}, targets=targets)
            yield model, "prefill", merged, onnxroof.analyze(folder / "decoder_model.onnx", dims=dims, targets=targets)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="build_seq2seq.py's output folder")
    parser.add_argument("--phase", choices=("decode", "prefill", "both"), default="decode")
    args = parser.parse_args(argv)
    from onnxroof.core.units import seconds

    print("| model | phase | target | merged (If) | without If | merged / without | kernels |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for model, phase, merged, twin in pairs(args.corpus, args.phase):
        for placed, alone in zip(merged.targets, twin.targets):
            ratio = placed.latency_s / alone.latency_s
            worst = max(worst, abs(ratio - 1))
            working = [sum(1 for k in r.nodes if k.placement.time_s) for r in (placed, alone)]  # kernels that take time
            print(f"| {model} | {phase} | {placed.target.name} | {seconds(placed.latency_s)} | "
                  f"{seconds(alone.latency_s)} | {ratio:.4f} | {working[0]} / {working[1]} |")
    print(f"\nlargest difference {worst:.2%} (limit {TOLERANCE:.0%})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
