#!/usr/bin/env python3
"""Build GPT-2 and BERT exports at a STATIC shape with torch.onnx's dynamo exporter, for issue 42's cases.

``torch.onnx.export(model, inputs, dynamo=True, optimize=True)`` with no ``dynamic_shapes``: batch
1 and 128 tokens are fixed in the inputs and in the graph's Reshape / Expand shape constants, which
is how a user who does not ask for dynamic axes gets a model out of torch.export. ``--batch 8`` on
such a file cannot be costed (a Reshape of 1024 x d to 1 x 128 x d).

Random (perturbed) weights from a config, nothing from a hub:
  gpt2-static-small  GPT2LMHeadModel, 2 layers, n_embd 256, 4 heads, vocab 1000 (build_hf.GPT2)
  gpt2-static-base   GPT-2 small's real size: 12 layers, n_embd 768, 12 heads, vocab 50257
  gpt2-static-48     GPT-2 XL's depth (48 layers) at n_embd 64, 4 heads, vocab 1000: the graph view's case
  bert-static-small  BertModel (no pooler) -> last_hidden_state, build_hf.BERT (2 x 256)
  bert-static-base   BERT-base's size (build_hf.BERT_BASE: 12 x 768, ffn 3072, vocab 30522)

Writes ``OUT/<id>/model.onnx`` and ``OUT/<id>.json``: the analytic MACs at batch 1, S tokens (GPT-2,
per layer 12 S d^2 for q, k, v, o and the 4d MLP; BERT, 4 S d^2 + 2 S d f; both plus 2 S^2 d for
Q.K^T and A.V over the full S x S rectangle; GPT-2 once the tied LM head S d V), a FlopCounterMode
cross-check on the eager model, and the stored parameters (build_hf.stored_params).

    /work/venvs/hf/bin/python benchmarks/corpus/build_static.py [--out DIR] [--only gpt2-static-small,bert-static-base]

Needs: torch==2.13.0 (CPU), transformers, onnxscript (the venv build_hf.py calls /work/venvs/hf).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_hf import BERT, BERT_BASE, GPT2, stored_params  # noqa: E402

SEED, BATCH, SEQ = 0, 1, 128
MODELS = {
    "gpt2-static-small": GPT2,
    "gpt2-static-base": dict(vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_positions=1024),
    "gpt2-static-48": dict(vocab_size=1000, n_embd=64, n_layer=48, n_head=4, n_positions=256),
    "bert-static-small": BERT,
    "bert-static-base": BERT_BASE,
}


def make_model(mid: str, attn: str):
    import torch
    import transformers

    torch.manual_seed(SEED)
    config = MODELS[mid]
    if mid.startswith("bert"):
        model = transformers.BertModel(
            transformers.BertConfig(**config, attn_implementation=attn), add_pooling_layer=False
        ).eval()
    else:
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**config, attn_implementation=attn)).eval()
    with torch.no_grad():  # default init leaves norms at 1 and biases at 0: perturb every parameter
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    return model


def wrap(mid: str, model):
    """(input_ids, attention_mask) -> GPT-2's logits (no cache) or BERT's last_hidden_state."""
    import torch

    class W(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            if mid.startswith("bert"):
                return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    return W(model).eval()


def analytic_macs(mid: str) -> tuple[int, dict]:
    c, S = MODELS[mid], SEQ
    if mid.startswith("bert"):
        d, L, f = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"]
        terms = {
            "q,k,v,o 4*S*d^2": L * 4 * S * d * d,
            "ffn 2*S*d*f": L * 2 * S * d * f,
            "QK^T+AV 2*S*S*d": L * 2 * S * S * d,
        }
    else:
        d, L, V = c["n_embd"], c["n_layer"], c["vocab_size"]
        terms = {
            "q,k,v,o + mlp 12*S*d^2": L * 12 * S * d * d,
            "QK^T+AV 2*S*S*d": L * 2 * S * S * d,
            "lm head S*d*V": S * d * V,
        }
    return BATCH * sum(terms.values()), terms


def build(mid: str, out_root: Path) -> dict:
    import torch
    import transformers
    from torch.utils.flop_counter import FlopCounterMode

    config = MODELS[mid]
    start = time.time()
    ids = torch.randint(0, config["vocab_size"], (BATCH, SEQ))
    mask = torch.ones_like(ids)
    folder = out_root / mid
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    tried, attn = [], ""
    for attn in ("sdpa", "eager"):
        try:
            prog = torch.onnx.export(
                wrap(mid, make_model(mid, attn)),
                (ids, mask),
                dynamo=True,
                optimize=True,
                input_names=["input_ids", "attention_mask"],
                output_names=["logits"],
            )
            prog.save(str(path))
            break
        except Exception as e:  # noqa: BLE001
            tried.append(f"attn {attn}: {type(e).__name__}: {str(e)[:500]}")
    else:
        raise RuntimeError(" | ".join(tried))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        wrap(mid, make_model(mid, "eager"))(ids, mask)
    macs, terms = analytic_macs(mid)
    sp = stored_params(str(path))
    exported = "BertModel -> last_hidden_state" if mid.startswith("bert") else "GPT2LMHeadModel -> logits"
    manifest = {
        "id": mid,
        "file": str(path),
        "exporter": (
            f"torch {md.version('torch')} torch.onnx.export({exported}, (input_ids, "
            f"attention_mask) at {BATCH}x{SEQ}, dynamo=True, optimize=True, no dynamic_shapes), attention "
            f"{attn}; transformers {transformers.__version__}, onnxscript {md.version('onnxscript')}"
            + (f"; earlier attempts failed: {' | '.join(tried)}" if tried else "")
        ),
        "bind": {"dims": {}},
        "static": {"batch": BATCH, "seq": SEQ},
        "independent": {
            "macs": macs,
            "macs_terms": terms,
            "macs_flopcounter": counter.get_total_flops() // 2,
            "macs_source": f"analytic from the config, batch {BATCH}, {SEQ} tokens (this file's docstring)",
            "params_stored": sp["total"],
            "params_stored_detail": sp,
        },
        "config": config,
    }
    (out_root / f"{mid}.json").write_text(json.dumps(manifest, indent=1))
    print(
        f"{mid}: macs {macs:,} (FlopCounterMode {manifest['independent']['macs_flopcounter']:,}), "
        f"params {sp['total']:,}, attention {attn}, {time.time() - start:.1f} s",
        flush=True,
    )
    return manifest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/work/corpus/static")
    parser.add_argument("--only", default="", help="comma-separated model ids")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    for mid in MODELS:
        if not only or mid in only:
            build(mid, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
