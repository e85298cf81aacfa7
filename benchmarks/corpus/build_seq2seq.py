#!/usr/bin/env python3
"""Build the seq2seq part of onnxroof's validation corpus: optimum's Whisper and T5 exports.

Each model is built from a config object with small sizes and random (perturbed) weights, nothing
comes from a hub: ``save_pretrained`` writes it to a local folder, and optimum's exporter
(``optimum.exporters.onnx.main_export``, task ``automatic-speech-recognition-with-past`` or
``text2text-generation-with-past``) exports that folder as four files: the encoder, the decoder
(no cache: the prompt step), the decoder with past (a decode step) and the merged decoder (both
in the two branches of one If on ``use_cache_branch``).

For each file it writes ``OUT/<model>/<file>.onnx`` (optimum's own output folder) and a manifest
``OUT/<model>-<component>.json``: how to bind it with ``--dim``/``--value`` (for
benchmarks/validate_corpus.py), the analytic MACs and KV-cache bytes of each phase derived by hand
from the config (for benchmarks/validate_llm.py, which checks ``--phase decode --context 128`` and
``--phase prefill --seq 128``), a FlopCounterMode cross-check of the MACs on the eager PyTorch model,
and the stored parameters read from the file (build_hf.stored_params).

The analytic counts, batch 1, S new tokens, T attended (self-attention, the new ones included), E
encoder positions, per decoder layer (d hidden, a = heads x head size, f feed-forward):

  self-attention projections q, k, v, o     4 S d a
  self-attention Q.K^T and A.V              2 S T a   (the full S x T rectangle)
  cross-attention projections q, o          2 S d a
  cross-attention k, v from the encoder     2 E d a   (only in the step without a cache)
  cross-attention Q.K^T and A.V             2 S E a
  feed-forward                              2 S d f
and once the LM head S d V. The encoder: per layer 4 E d a + 2 E E a + 2 E d f, and for Whisper
the two convolutions 3000 x d x (mels x 3) + 1500 x d x (d x 3) (kernel 3, the second of stride 2).
Whisper has a = d; T5 has a = heads x d_kv. Embeddings, norms, softmax, activations, biases,
masks, the position bias and scalings are not MACs.

KV cache (fp32): self 2 x layers x heads x head size x T x 4 B, read whole and written whole (the
Concat copies the past); cross 2 x layers x heads x head size x E x 4 B, read every step, written
only by the step without a cache (which computes it), never appended.

Usage:  /work/venvs/hf/bin/python benchmarks/corpus/build_seq2seq.py [--out /work/corpus/hf] [--only whisper,t5]
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from build_hf import stored_params  # noqa: E402  (the same independent parameter reader)

SEED = 0
S_PREFILL, CONTEXT = 128, 128  # --phase prefill --seq 128; --phase decode --context 128 (127 cached + 1)
WHISPER = dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
               decoder_attention_heads=4, encoder_ffn_dim=256, decoder_ffn_dim=256, num_mel_bins=80,
               max_source_positions=1500, max_target_positions=448, pad_token_id=0, bos_token_id=1,
               eos_token_id=2, decoder_start_token_id=1)
T5 = dict(vocab_size=1200, d_model=64, d_kv=32, d_ff=192, num_layers=2, num_decoder_layers=2, num_heads=4,
          feed_forward_proj="relu", decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
MODELS = {
    # id -> (config class, model class, config, optimum task, encoder length E)
    "whisper-optimum": ("WhisperConfig", "WhisperForConditionalGeneration", WHISPER,
                        "automatic-speech-recognition-with-past", 1500),  # 3000 mel frames, conv stride 2
    "t5-optimum": ("T5Config", "T5ForConditionalGeneration", T5, "text2text-generation-with-past", 256),
}
COMPONENTS = {  # file -> component id
    "encoder_model.onnx": "encoder", "decoder_model.onnx": "decoder",
    "decoder_with_past_model.onnx": "decoder-with-past", "decoder_model_merged.onnx": "decoder-merged",
}


def geometry(mid: str) -> dict:
    """The sizes the formulas read, from the config."""
    _, _, c, _, encoder = MODELS[mid]
    if mid.startswith("whisper"):
        d, heads = c["d_model"], c["decoder_attention_heads"]
        return dict(arch="whisper", hidden=d, heads=heads, head_dim=d // heads, attn=d, d_ff=c["decoder_ffn_dim"],
                    enc_layers=c["encoder_layers"], dec_layers=c["decoder_layers"], vocab=c["vocab_size"],
                    mels=c["num_mel_bins"], frames=2 * c["max_source_positions"], encoder_seq=encoder)
    return dict(arch="t5", hidden=c["d_model"], heads=c["num_heads"], head_dim=c["d_kv"], attn=c["num_heads"] * c["d_kv"],
                d_ff=c["d_ff"], enc_layers=c["num_layers"], dec_layers=c["num_decoder_layers"], vocab=c["vocab_size"],
                encoder_seq=encoder)


def decoder_macs(g: dict, S: int, T: int, E: int, cross_computed: bool) -> tuple[int, dict]:
    """One decoder step (see the module's docstring), with its terms."""
    d, a, f, L = g["hidden"], g["attn"], g["d_ff"], g["dec_layers"]
    terms = {"self q,k,v,o 4*S*d*a": L * 4 * S * d * a, "self QK^T+AV 2*S*T*a": L * 2 * S * T * a,
             "cross q,o 2*S*d*a": L * 2 * S * d * a,
             "cross k,v from the encoder 2*E*d*a": L * 2 * E * d * a if cross_computed else 0,
             "cross QK^T+AV 2*S*E*a": L * 2 * S * E * a, "ffn 2*S*d*f": L * 2 * S * d * f,
             "lm head S*d*V": S * d * g["vocab"]}
    return sum(terms.values()), terms


def encoder_macs(g: dict) -> tuple[int, dict]:
    d, a, f, L, E = g["hidden"], g["attn"], g["d_ff"], g["enc_layers"], g["encoder_seq"]
    terms = {"q,k,v,o 4*E*d*a": L * 4 * E * d * a, "QK^T+AV 2*E*E*a": L * 2 * E * E * a, "ffn 2*E*d*f": L * 2 * E * d * f}
    if g["arch"] == "whisper":
        terms["conv1 frames*d*(mels*3)"] = g["frames"] * d * g["mels"] * 3
        terms["conv2 E*d*(d*3)"] = E * d * d * 3
    return sum(terms.values()), terms


def kv_bytes(g: dict, positions: int) -> int:
    """Key and value of every decoder layer at ``positions`` positions, fp32."""
    return 2 * g["dec_layers"] * g["heads"] * g["head_dim"] * positions * 4


def phases(g: dict, component: str) -> dict:
    """The analytic figures of the phases a decoder file runs: prefill (no cache) and decode."""
    E, out = g["encoder_seq"], {}
    if component in ("decoder", "decoder-merged"):  # the prompt step computes the cross cache
        macs, terms = decoder_macs(g, S_PREFILL, S_PREFILL, E, cross_computed=True)
        out["prefill"] = dict(seq=S_PREFILL, macs=macs, macs_terms=terms, kv_read=kv_bytes(g, S_PREFILL),
                              kv_write=kv_bytes(g, S_PREFILL), cross_read=kv_bytes(g, E), cross_write=kv_bytes(g, E))
    if component in ("decoder-with-past", "decoder-merged"):  # the cross cache is read, never written
        macs, terms = decoder_macs(g, 1, CONTEXT, E, cross_computed=False)
        out["decode"] = dict(context=CONTEXT, macs=macs, macs_terms=terms, kv_read=kv_bytes(g, CONTEXT),
                             kv_write=kv_bytes(g, CONTEXT), cross_read=kv_bytes(g, E), cross_write=0)
    return out


def make_model(mid: str):
    import torch
    import transformers
    config_class, model_class, config, _, _ = MODELS[mid]
    torch.manual_seed(SEED)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config),).eval()
    with torch.no_grad():  # default init leaves norms at 1 and biases at 0: perturb every parameter
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    return model


def flop_counter(mid: str, g: dict) -> dict:
    """FlopCounterMode over the eager PyTorch model (FLOPs / 2), batch 1: the encoder; the decoder
    on S_PREFILL tokens without a cache; one token after CONTEXT - 1 cached (the cache built by a
    first call, not counted: its cross-attention keys and values are then reused)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    model = make_model(mid)
    model.config._attn_implementation = "eager"
    E, V = g["encoder_seq"], g["vocab"]

    def count(work) -> int:
        with FlopCounterMode(display=False) as counter:
            work()
        return counter.get_total_flops() // 2

    with torch.no_grad():
        if g["arch"] == "whisper":
            features = torch.randn(1, g["mels"], g["frames"])
            encoder = model.get_encoder()(features)
            encoder_macs_ = count(lambda: model.get_encoder()(features))
        else:
            ids = torch.randint(2, V, (1, E))
            encoder = model.get_encoder()(input_ids=ids)
            encoder_macs_ = count(lambda: model.get_encoder()(input_ids=ids))
        prompt = torch.randint(2, V, (1, S_PREFILL))
        prefill = count(lambda: model(encoder_outputs=encoder, decoder_input_ids=prompt, use_cache=True))
        cached = model(encoder_outputs=encoder, decoder_input_ids=torch.randint(2, V, (1, CONTEXT - 1)),
                       use_cache=True).past_key_values
        decode = count(lambda: model(encoder_outputs=encoder, decoder_input_ids=torch.randint(2, V, (1, 1)),
                                     past_key_values=cached, use_cache=True))
    return {"encoder": encoder_macs_, "prefill": prefill, "decode": decode}


def export(mid: str, out: Path, work: Path) -> str:
    import optimum.version
    import transformers
    from optimum.exporters.onnx import main_export
    src = work / f"{mid}_src"
    if src.exists():
        shutil.rmtree(src)
    make_model(mid).save_pretrained(src)
    if out.exists():
        shutil.rmtree(out)
    main_export(str(src), str(out), task=MODELS[mid][3], do_validation=False)
    return (f"optimum-onnx {md.version('optimum-onnx')} (optimum {optimum.version.__version__}, transformers "
            f"{transformers.__version__}, torch {md.version('torch')}): optimum.exporters.onnx.main_export(<local "
            f"save_pretrained folder of a random-weight {MODELS[mid][1]}>, task={MODELS[mid][3]!r})")


def bindings(g: dict, component: str, inputs: dict) -> tuple[dict, list]:
    """--dim/--value bindings for validate_corpus: the prompt step (or the encoder), and decode."""
    E = g["encoder_seq"]
    prefill = {"batch_size": 1, "decoder_sequence_length": S_PREFILL, "encoder_sequence_length": E}
    decode = {"batch_size": 1, "decoder_sequence_length": 1, "past_decoder_sequence_length": CONTEXT - 1,
              "encoder_sequence_length": E}
    symbols = {d for dims in inputs.values() for d in dims if isinstance(d, str)}
    keep = lambda dims: {k: v for k, v in dims.items() if k in symbols}  # noqa: E731
    if component == "encoder":
        return {"dims": keep({"batch_size": 1, "encoder_sequence_length": E})}, []
    if component == "decoder":
        return {"dims": keep(prefill)}, []
    if component == "decoder-with-past":
        return {"dims": keep(decode)}, []
    return ({"dims": keep(prefill | {"past_decoder_sequence_length": 0}), "values": {"use_cache_branch": 0}},
            [{"label": "decode", "dims": keep(decode), "values": {"use_cache_branch": 1}}])


def build(mid: str, out_root: Path) -> list[dict]:
    import onnx
    work = out_root / "_work"
    work.mkdir(parents=True, exist_ok=True)
    start = time.time()
    folder = out_root / mid
    exporter = export(mid, folder, work)
    g = geometry(mid)
    counted = flop_counter(mid, g)
    manifests = []
    for file, component in COMPONENTS.items():
        path = folder / file
        model = onnx.load(str(path), load_external_data=False)
        inputs = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
        bind, more = bindings(g, component, inputs)
        run = phases(g, component)
        if component == "encoder":
            macs, terms = encoder_macs(g)
            independent = {"macs": macs, "macs_terms": terms, "macs_flopcounter": counted["encoder"]}
        else:
            first = run.get("prefill") or run["decode"]
            independent = {"macs": first["macs"], "macs_terms": first["macs_terms"],
                           "macs_flopcounter": counted["prefill" if "prefill" in run else "decode"]}
        for binding in more:
            binding["independent_macs"] = run[binding["label"]]["macs"]
        sp = stored_params(str(path))
        independent |= {
            "macs_source": "analytic from the config (benchmarks/corpus/build_seq2seq.py docstring), batch 1"
                           + (f", {S_PREFILL} new tokens, E={g['encoder_seq']}" if component in ("decoder", "decoder-merged")
                              else f", 1 new token after {CONTEXT - 1} cached, E={g['encoder_seq']}"
                              if component == "decoder-with-past" else f", E={g['encoder_seq']}"),
            "macs_flopcounter_source": "torch.utils.flop_counter.FlopCounterMode on the eager PyTorch model, FLOPs / 2",
            "params_stored": sp["total"], "params_stored_detail": sp,
            "params_stored_source": "build_hf.stored_params(): initializers read by some node (If branches included) "
                                    "and Constant tensors, from the protobuf without onnxroof",
        }
        manifest = {"id": f"{mid}-{component}", "file": str(path), "exporter": exporter, "bind": bind,
                    "independent": independent, "config": {**g, "hf_config": MODELS[mid][2]},
                    "notes": "optimum's merged decoder: the network in the two branches of one If on use_cache_branch "
                             "(the branch with a cache returns empty placeholders for the cross-attention presents)"
                             if component == "decoder-merged" else ""}
        if more:
            manifest["bindings"] = more
        if component != "encoder":
            manifest["seq2seq"] = {"component": component, "encoder_seq": g["encoder_seq"], "phases": run,
                                   "flopcounter": {k: v for k, v in counted.items() if k in run}}
        (out_root / f"{manifest['id']}.json").write_text(json.dumps(manifest, indent=1))
        manifests.append(manifest)
        print(f"{manifest['id']}: macs {independent['macs']:,} (FlopCounterMode {independent['macs_flopcounter']:,}), "
              f"params {sp['total']:,}; phases {json.dumps({k: v['macs'] for k, v in run.items()})}", flush=True)
    print(f"{mid}: {time.time() - start:.1f} s", flush=True)
    return manifests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="/work/corpus/hf")
    parser.add_argument("--only", default="", help="comma-separated model ids (whisper-optimum, t5-optimum)")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    for mid in MODELS:
        if not only or mid in only or mid.split("-")[0] in only:
            build(mid, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
