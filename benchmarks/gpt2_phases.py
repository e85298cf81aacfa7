"""Export a GPT-2-style decoder with a KV cache (random weights, from a config: nothing is
downloaded) and analyse prefill and decode on h100-sxm. The numbers are explained in docs/llm.md.

    python benchmarks/gpt2_phases.py [--layers 12] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.cache_utils import DynamicCache

import onnxroof


def export(layers: int, directory: Path) -> Path:
    config = GPT2Config(n_layer=layers, n_positions=4096)  # GPT-2 small width: d 768, 12 heads, vocab 50,257
    model = GPT2LMHeadModel(config).eval()
    heads, head = config.n_head, config.n_embd // config.n_head

    class WithCache(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, *past):
            cache = DynamicCache()
            for layer in range(layers):
                cache.update(past[2 * layer], past[2 * layer + 1], layer)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True)
            presents = []
            for layer in out.past_key_values.layers:
                presents += [layer.keys, layer.values]
            return (out.logits, *presents)

    past = [torch.zeros(1, heads, 5, head) for _ in range(2 * layers)]
    inputs = (torch.randint(0, 1000, (1, 3)), torch.ones(1, 8, dtype=torch.long), *past)
    past_names = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present_names = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    dynamic = {"input_ids": {0: "batch", 1: "sequence_length"}, "attention_mask": {0: "batch", 1: "total_sequence_length"}}
    dynamic |= {n: {0: "batch", 2: "past_sequence_length"} for n in past_names}
    dynamic |= {n: {0: "batch", 2: "total_sequence_length"} for n in present_names}
    path = directory / f"gpt2_{layers}l_kv.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(WithCache(), inputs, str(path), input_names=["input_ids", "attention_mask", *past_names],
                          output_names=["logits", *present_names], dynamic_axes=dynamic, dynamo=False, opset_version=17)
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--keep")
    args = parser.parse_args()
    directory = Path(args.keep or tempfile.mkdtemp())
    path = export(args.layers, directory)
    print("| phase | tokens | MAC-FLOPs | DRAM bytes | FLOP/B | bound (model point) | latency | tokens/s | KV read |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for phase, value in (("decode", 2048), ("decode", 128), ("prefill", 128), ("prefill", 2048)):
        options = {"context": value} if phase == "decode" else {"seq": value}
        analysis = onnxroof.analyze(path, phase=phase, targets=["h100-sxm"], **options)
        report, llm = analysis.targets[0], analysis.llm
        point = report.model_point
        print(f"| {phase} | {value} | {analysis.totals.mac_flops:,} | {point.dram_bytes:,} | {point.intensity:.3g} | "
              f"{point.bound} ({point.time_s * 1e6:.0f} µs) | {report.latency_s * 1e3:.2f} ms | "
              f"{llm.tokens_per_s['h100-sxm']:,.0f} | {llm.kv_read_bytes:,} |")


if __name__ == "__main__":
    main()
