#!/usr/bin/env python3
"""Build the Hugging Face part of onnxroof's validation corpus, from scratch, on this machine.

Every model is built from a config object with random weights (nothing comes from a hub) and
exported through three paths:

1. transformers 5.x's own exporter (``transformers.exporters.OnnxExporter``: torch.export +
   torch.onnx, writes ``past_key_values.layers.N.keys`` / ``cache.layers.N.keys``), with and
   without a KV cache, and with its ``ort_fusions="cpu"`` option;
2. optimum-onnx (``optimum-cli export onnx`` on a local folder): a decoder with past
   (``present.N.key``) and a BERT encoder;
3. onnxruntime-genai's model builder (``python -m onnxruntime_genai.models.builder``), int4 and
   fp32, on small Llama, Qwen2 and Phi-3 folders written with ``save_pretrained`` plus a tiny
   WordLevel tokenizer made here with ``tokenizers``.

For each model it writes ``OUT/<id>/`` (the export) and ``OUT/<id>.json`` (a manifest: binding,
analytic MACs, a FlopCounterMode cross-check, stored parameters read from the file by the small
reader below, the framework's parameter count). ``--analyze`` then runs onnxroof on every manifest
and writes ``OUT/onnxroof_results.json``.

The tools pin incompatible transformers versions (optimum-onnx 0.1.0 wants transformers<4.58,
onnxruntime-genai 0.18 imports names that exist only in 5.x), so two venvs are used:

    /work/venvs/hf5  torch 2.13.0, transformers 5.x, onnxscript, onnxruntime-genai   (--py5)
    /work/venvs/hf   torch 2.13.0, transformers 4.57, optimum-onnx                   (--py4)

Usage:  python benchmarks/corpus/build_hf.py [--out /work/corpus/hf] [--only id,id] [--analyze-only]
The top level re-runs this file under each venv's python (``--stage``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve()
SEED = 0
S_PREFILL = 128
P_DECODE = 127
STATIC_LEN = 256  # StaticCache capacity of the static-cache exports

# ----------------------------------------------------------------------------------------------
# model configs (small, random weights)

GPT2 = dict(vocab_size=1000, n_embd=256, n_layer=2, n_head=4, n_positions=512)
LLAMA = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=False)
QWEN2 = dict(vocab_size=2000, hidden_size=256, intermediate_size=768, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)
PHI3 = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
            original_max_position_embeddings=512, tie_word_embeddings=False, pad_token_id=0,
            bos_token_id=1, eos_token_id=2)
BERT = dict(vocab_size=1000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024,
            max_position_embeddings=512)
# BERT-base's real size (12 x 768, vocab 30522), random weights: the size issue 42's findings were seen on
BERT_BASE = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 max_position_embeddings=512)

ARCH = {"gpt2": ("GPT2Config", GPT2), "llama": ("LlamaConfig", LLAMA), "qwen2": ("Qwen2Config", QWEN2),
        "phi3": ("Phi3Config", PHI3), "bert": ("BertConfig", BERT),
        "bert-base": ("BertConfig", BERT_BASE)}

# id -> (stage, arch, recipe)
MODELS = {
    "gpt2-hf-nokv": ("hf5", "gpt2", "hf-nokv"),
    "gpt2-hf-kv": ("hf5", "gpt2", "hf-kv"),
    "llama-hf-kv": ("hf5", "llama", "hf-kv"),
    "llama-hf-kv-ortcpu": ("hf5", "llama", "hf-kv-ortcpu"),
    # export_for_generation: separate prefill / decode graphs (DynamicCache, and StaticCache of 256)
    "llama-hf-gen-prefill": ("hf5", "llama", "hf-gen:prefill"),
    "llama-hf-gen-decode": ("hf5", "llama", "hf-gen:decode"),
    "llama-hf-static-prefill": ("hf5", "llama", "hf-gen-static:prefill"),
    "llama-hf-static-decode": ("hf5", "llama", "hf-gen-static:decode"),
    "llama-genai-int4": ("hf5", "llama", "genai-int4"),
    "llama-genai-fp32": ("hf5", "llama", "genai-fp32"),
    "qwen2-genai-int4": ("hf5", "qwen2", "genai-int4-tied"),
    "qwen2-genai-fp32": ("hf5", "qwen2", "genai-fp32"),
    "phi3-genai-int4": ("hf5", "phi3", "genai-int4-asym"),
    "phi3-genai-fp32": ("hf5", "phi3", "genai-fp32"),
    "gpt2-optimum-kv": ("hf4", "gpt2", "optimum-kv"),
    "llama-optimum-kv": ("hf4", "llama", "optimum-kv"),
    "bert-optimum": ("hf4", "bert", "optimum-encoder"),
    "bert-base-optimum": ("hf4", "bert-base", "optimum-encoder"),
}


def geometry(arch: str) -> dict:
    _, c = ARCH[arch]
    if arch == "gpt2":
        d, L, H, V = c["n_embd"], c["n_layer"], c["n_head"], c["vocab_size"]
        return dict(layers=L, hidden=d, heads=H, kv_heads=H, head_dim=d // H, d_ff=4 * d, vocab=V, gated=False)
    d, L, H = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
    return dict(layers=L, hidden=d, heads=H, kv_heads=c.get("num_key_value_heads", H), head_dim=d // H,
                d_ff=c["intermediate_size"], vocab=c["vocab_size"], gated=arch in ("llama", "qwen2", "phi3"),
                tied=c.get("tie_word_embeddings", arch != "phi3"))


def analytic_macs(arch: str, S: int, P: int, lm_head: bool = True, pooler: bool = False,
                  rotary_matmul: bool = False) -> tuple[int, str, dict]:
    g = geometry(arch)
    d, L, hd, ff = g["hidden"], g["layers"], g["head_dim"], g["d_ff"]
    qd, kvd, T = g["heads"] * hd, g["kv_heads"] * hd, P + S
    terms = {
        "q_proj S*d*(H*hd)": L * S * d * qd,
        "k_proj+v_proj 2*S*d*(Hkv*hd)": L * 2 * S * d * kvd,
        "o_proj S*(H*hd)*d": L * S * qd * d,
        ("mlp gate+up+down 3*S*d*d_ff" if g["gated"] else "mlp fc+proj 2*S*d*d_ff"): L * (3 if g["gated"] else 2) * S * d * ff,
        "attention QK^T + PV 2*S*T*(H*hd), full S x T rectangle": L * 2 * S * T * qd,
    }
    if lm_head:
        terms["lm head S*d*V"] = S * d * g["vocab"]
    if pooler:
        terms["pooler d*d (token 0)"] = d * d
    if rotary_matmul:  # transformers 4.x rotary: inv_freq[hd/2, 1] @ position_ids[1, S] is a real matmul (K = 1)
        terms["rotary inv_freq @ positions (hd/2)*S*1 (transformers 4.x, exported as MatMul)"] = (hd // 2) * S
    text = (f"analytic, batch 1, S={S} new tokens, T={T} attended (past {P}); d={d}, H={g['heads']}, "
            f"Hkv={g['kv_heads']}, hd={hd}, d_ff={ff}, L={L}, V={g['vocab']}: "
            + " + ".join(f"{k} = {v}" for k, v in terms.items())
            + "; embeddings, norms, softmax, activations, rotary, biases, masks are not MACs")
    return sum(terms.values()), text, terms


# ----------------------------------------------------------------------------------------------
# independent stored-parameter reader (protobuf only; does not import onnxroof)

def stored_params(path: str) -> dict:
    import onnx
    from onnx import TensorProto
    m = onnx.load(path, load_external_data=False)
    packed4 = set()  # (tensor name) stored as uint8 holding two 4-bit values
    def walk_nodes(graph):
        for n in graph.node:
            yield n
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    yield from walk_nodes(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        yield from walk_nodes(sg)
    nodes = list(walk_nodes(m.graph))
    read = set()
    for n in nodes:
        read.update(i for i in n.input if i)
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute if a.type == onnx.AttributeProto.INT}
        if n.op_type == "MatMulNBits" and attrs.get("bits", 4) == 4:
            packed4.add(n.input[1])
            if len(n.input) > 3 and n.input[3]:
                packed4.add(n.input[3])
        if n.op_type == "GatherBlockQuantized" and attrs.get("bits", 4) == 4:
            packed4.add(n.input[0])
            if len(n.input) > 3 and n.input[3]:
                packed4.add(n.input[3])
    out = dict(initializers=0, initializer_elements=0, constants=0, constant_elements=0,
               packed_int4_bytes=0, unread_initializers=0, by_dtype={})
    def add(name, dims, dtype, kind):
        n = 1
        for x in dims:
            n *= x
        if dtype == TensorProto.UINT8 and name in packed4:
            out["packed_int4_bytes"] += n
            n *= 2
        key = TensorProto.DataType.Name(dtype)
        out["by_dtype"][key] = out["by_dtype"].get(key, 0) + n
        out[kind + "_elements"] += n
        out[kind + "s"] += 1
    graphs = [m.graph]
    for n in nodes:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                graphs.append(a.g)
    for g in graphs:
        for t in g.initializer:
            if t.name in read:
                add(t.name, t.dims, t.data_type, "initializer")
            else:
                out["unread_initializers"] += 1
    for n in nodes:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            for a in n.attribute:
                if a.name == "value":
                    add(n.output[0], a.t.dims, a.t.data_type, "constant")
                elif a.name in ("value_float", "value_int"):
                    add(n.output[0], [], TensorProto.FLOAT, "constant")
                elif a.name in ("value_floats", "value_ints"):
                    add(n.output[0], [len(a.floats) or len(a.ints)], TensorProto.FLOAT, "constant")
    out["total"] = out["initializer_elements"] + out["constant_elements"]
    return out


# ----------------------------------------------------------------------------------------------
# binding

def kv_role(name: str) -> bool:
    low = name.lower()
    return ("past" in low or "cache" in low) and any(k in low for k in ("key", "value"))


def bind_for(path: str, S: int, P: int, g: dict, mask_len: int | None = None) -> dict:
    """Concrete shapes for every graph input by its role, and the symbol -> value map they imply."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    has_past = any(kv_role(i.name) for i in m.graph.input)
    shapes, dims, conflicts, digit = {}, {}, [], set()
    for i in m.graph.input:
        if i.name in inits:
            continue
        low = i.name.lower()
        rank = len(i.type.tensor_type.shape.dim)
        if kv_role(i.name):
            shape = [1, g["kv_heads"], P, g["head_dim"]]
        elif rank == 0:  # StaticCache's cumulative_length scalar
            shape = []
        elif "attention_mask" in low:
            n = mask_len if mask_len is not None else (P + S if has_past else S)
            shape = [1] * (rank - 1) + [n]
        else:  # input_ids, position_ids, token_type_ids
            shape = [1, S]
        shapes[i.name] = shape
        for k, d in enumerate(i.type.tensor_type.shape.dim):
            if d.HasField("dim_param"):
                if d.dim_param.strip().isdigit():
                    digit.add(d.dim_param)
                    continue
                if any(op in d.dim_param for op in "+-*/"):  # "past_sequence_length + sequence_length": its names bind it
                    continue
                if d.dim_param in dims and dims[d.dim_param] != shape[k]:
                    conflicts.append(f"{d.dim_param}: {dims[d.dim_param]} vs {shape[k]} ({i.name})")
                dims.setdefault(d.dim_param, shape[k])
            elif d.HasField("dim_value") and d.dim_value != shape[k]:
                conflicts.append(f"{i.name} axis {k}: fixed {d.dim_value} vs bound {shape[k]}")
    return {"dims": dims, "input_shapes": {}, "input_shapes_explicit": shapes,
            "digit_string_dim_params": sorted(digit), "conflicts": conflicts}


# ----------------------------------------------------------------------------------------------
# builders (run inside the matching venv)

def make_config(arch: str, **over):
    import transformers
    name, c = ARCH[arch]
    return getattr(transformers, name)(**{**c, **over})


def make_model(arch: str, eager: bool = False):
    import torch
    from transformers import AutoModelForCausalLM, AutoModel
    torch.manual_seed(SEED)
    cfg = make_config(arch)
    kw = {"attn_implementation": "eager"} if eager else {}
    model = (AutoModel if arch.startswith("bert") else AutoModelForCausalLM).from_config(cfg, **kw).eval()
    # perturb every parameter: default init leaves norms at 1 and biases at 0, and exporters that
    # deduplicate bit-identical initializers (onnx-ir's pass) would then store one copy for many
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    return model


def flop_counter_macs(arch: str, S: int, P: int, static_len: int | None = None) -> dict:
    """FlopCounterMode over the eager PyTorch model (FLOPs / 2), batch 1; decode counts the 2nd call only.
    With static_len, a StaticCache of that capacity (attention spans the whole capacity)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    model = make_model(arch, eager=True)
    g = geometry(arch)
    with torch.no_grad():
        if arch.startswith("bert"):
            ids = torch.randint(0, g["vocab"], (1, S))
            with FlopCounterMode(display=False) as fc:
                model(input_ids=ids, attention_mask=torch.ones_like(ids))
            return {"macs": fc.get_total_flops() // 2, "note": "BertModel incl. pooler"}
        if static_len:
            from transformers import StaticCache
            cache = StaticCache(config=model.config, max_cache_len=static_len)
            if P:
                model(input_ids=torch.randint(0, g["vocab"], (1, P)), past_key_values=cache, use_cache=True)
            ids = torch.randint(0, g["vocab"], (1, S))
            with FlopCounterMode(display=False) as fc:
                model(input_ids=ids, past_key_values=cache, use_cache=True, cache_position=torch.arange(P, P + S))
            return {"macs": fc.get_total_flops() // 2, "note": f"eager attention, StaticCache({static_len})"}
        cache = None
        if P:
            from transformers import DynamicCache
            try:
                cache = DynamicCache(config=model.config)
            except TypeError:
                cache = DynamicCache()
            pre = torch.randint(0, g["vocab"], (1, P))
            out = model(input_ids=pre, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
        ids = torch.randint(0, g["vocab"], (1, S))
        with FlopCounterMode(display=False) as fc:
            model(input_ids=ids, attention_mask=torch.ones(1, P + S, dtype=torch.long), past_key_values=cache,
                  use_cache=cache is not None)
    return {"macs": fc.get_total_flops() // 2, "note": "eager attention, all positions' logits"}


def framework_params(arch: str) -> int:
    return sum(p.numel() for p in make_model(arch).parameters())


def save_source(arch: str, folder: Path) -> Path:
    """save_pretrained + a tiny WordLevel tokenizer (the genai builder and optimum load one)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    model = make_model(arch)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    V = geometry(arch)["vocab"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"t{i}": i for i in range(3, V)}}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    extra = {"cls_token": "<s>", "sep_token": "</s>", "mask_token": "<unk>"} if arch.startswith("bert") else {}
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
                            pad_token="</s>", **extra).save_pretrained(folder)
    return folder


def export_hf(arch: str, recipe: str, out: Path) -> tuple[Path, str]:
    import torch
    import transformers
    from transformers import DynamicCache
    from transformers.exporters import OnnxConfig, OnnxExporter
    model = make_model(arch)
    V = geometry(arch)["vocab"]
    torch.manual_seed(1)
    ids = torch.randint(0, V, (2, 8))
    if recipe == "hf-nokv":
        inputs = {"input_ids": ids, "attention_mask": torch.ones(2, 8, dtype=torch.long), "use_cache": False}
    else:
        with torch.no_grad():
            cache = model(input_ids=torch.randint(0, V, (2, 5)), past_key_values=DynamicCache(config=model.config),
                          use_cache=True).past_key_values
        inputs = {"input_ids": ids, "attention_mask": torch.ones(2, 13, dtype=torch.long),
                  "past_key_values": cache, "use_cache": True}
    fusions = "cpu" if recipe.endswith("ortcpu") else None
    cfg = OnnxConfig(dynamic=True, ort_fusions=fusions)
    exported = OnnxExporter().export(model, inputs, cfg)
    exported.save_pretrained(out)
    import onnxscript
    desc = (f"transformers {transformers.__version__} transformers.exporters.OnnxExporter().export(model, "
            f"sample_inputs{' + DynamicCache past' if recipe != 'hf-nokv' else ', use_cache=False'}, "
            f"OnnxConfig(dynamic=True, ort_fusions={fusions!r})) -> save_pretrained; torch {torch.__version__}, "
            f"onnxscript {onnxscript.__version__}")
    return out / "model.onnx", desc


def export_hf_gen(arch: str, recipe: str, out: Path, work: Path) -> tuple[Path, str]:
    """OnnxExporter().export_for_generation: the prefill and decode components of one generate() capture."""
    import onnxscript
    import torch
    import transformers
    from transformers import GenerationConfig
    from transformers.exporters import OnnxConfig, OnnxExporter
    kind, component = recipe.split(":")
    static = kind == "hf-gen-static"
    where = work / f"{arch}-{kind}"
    if not (where / f"{component}.onnx").exists():
        model = make_model(arch)
        torch.manual_seed(1)
        ids = torch.randint(0, geometry(arch)["vocab"], (1, 8))
        gen = GenerationConfig(cache_implementation="static", max_cache_len=STATIC_LEN, do_sample=False) \
            if static else None
        exported = OnnxExporter().export_for_generation(
            model, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, OnnxConfig(dynamic=True),
            generation_config=gen)
        if where.exists():
            shutil.rmtree(where)
        exported.save_pretrained(where)
    out.mkdir(parents=True, exist_ok=True)
    for f in where.iterdir():
        if f.name.startswith(component + ".onnx") or f.suffix == ".json":
            shutil.copy(f, out / f.name)
    desc = (f"transformers {transformers.__version__} transformers.exporters.OnnxExporter().export_for_generation("
            f"model, {{input_ids, attention_mask}}, OnnxConfig(dynamic=True)"
            + (f", generation_config=GenerationConfig(cache_implementation='static', max_cache_len={STATIC_LEN})"
               if static else "")
            + f") -> save_pretrained, component '{component}'; torch {torch.__version__}, onnxscript "
            f"{onnxscript.__version__}")
    return out / f"{component}.onnx", desc


def export_genai(arch: str, recipe: str, out: Path, work: Path) -> tuple[Path, str]:
    import onnxruntime_genai
    import transformers
    src = save_source(arch, work / f"{arch}_src")
    prec = "int4" if "int4" in recipe else "fp32"
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(src), "-o", str(out), "-p", prec,
           "-e", "cpu", "-c", str(work / "genai_cache")]
    extra = []
    if recipe == "genai-int4-tied":
        extra = ["shared_embeddings=true", "op_types_to_quantize=MatMul/Gather"]
    if recipe == "genai-int4-asym":
        extra = ["is_symmetric=false"]
    if extra:
        cmd += ["--extra_options", *extra]
    log = work / f"{out.name}.builder.log"
    with open(log, "w") as fh:
        r = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if r.returncode:
        raise RuntimeError(f"builder exited {r.returncode}; see {log}: " + log.read_text()[-1500:])
    desc = (f"onnxruntime-genai {onnxruntime_genai.__version__} model builder: python -m "
            f"onnxruntime_genai.models.builder -i <save_pretrained folder + tiny WordLevel tokenizer> -o OUT -p {prec} "
            f"-e cpu{(' --extra_options ' + ' '.join(extra)) if extra else ''}; transformers {transformers.__version__}")
    return out / "model.onnx", desc


def export_optimum(arch: str, recipe: str, out: Path, work: Path) -> tuple[Path, str]:
    import optimum.version
    import transformers
    import importlib.metadata as md
    src = save_source(arch, work / f"{arch}_src4")
    task = "feature-extraction" if recipe == "optimum-encoder" else "text-generation-with-past"
    cli = str(Path(sys.executable).with_name("optimum-cli"))
    cmd = [cli, "export", "onnx", "--model", str(src), "--task", task, str(out)]
    log = work / f"{out.name}.optimum.log"
    with open(log, "w") as fh:
        r = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if r.returncode:
        raise RuntimeError(f"optimum-cli exited {r.returncode}; see {log}: " + log.read_text()[-1500:])
    desc = (f"optimum-onnx {md.version('optimum-onnx')} (optimum {optimum.version.__version__}, transformers "
            f"{transformers.__version__}, torch {md.version('torch')}): optimum-cli export onnx --model <local "
            f"save_pretrained folder> --task {task} OUT")
    return out / "model.onnx", desc


def build_one(mid: str, out_root: Path, work: Path) -> dict:
    stage, arch, recipe = MODELS[mid]
    out = out_root / mid
    if out.exists():
        shutil.rmtree(out)
    t0 = time.time()
    if recipe.startswith("hf-gen"):
        path, desc = export_hf_gen(arch, recipe, out, work)
    elif recipe.startswith("hf-"):
        path, desc = export_hf(arch, recipe, out)
    elif recipe.startswith("genai"):
        path, desc = export_genai(arch, recipe, out, work)
    else:
        path, desc = export_optimum(arch, recipe, out, work)
    g = geometry(arch)
    cfg = {k: v for k, v in g.items()}
    cfg["arch"], cfg["hf_config"] = arch, ARCH[arch][1]
    decoder = not arch.startswith("bert")
    import onnx
    proto = onnx.load(str(path), load_external_data=False)
    has_past = any(kv_role(i.name) for i in proto.graph.input)
    out_names = [o.name for o in proto.graph.output]
    pooler = arch.startswith("bert") and any("pooler" in n for n in out_names)
    import transformers
    rot = arch in ("llama", "qwen2", "phi3") and transformers.__version__.startswith("4.") and \
        any(n.op_type == "MatMul" and "rotary" in n.name.lower() for n in proto.graph.node)
    # the step this graph is bound for: (new tokens S, tokens already cached P, KV input length, mask length)
    component = recipe.split(":")[1] if ":" in recipe else None
    static = recipe.startswith("hf-gen-static")
    if component == "decode":
        S, P = 1, (STATIC_LEN - 1 if static else P_DECODE)
    else:
        S, P = S_PREFILL, (STATIC_LEN - S_PREFILL if static else 0)
    kv_len = STATIC_LEN if static else P
    macs, src, terms = analytic_macs(arch, S, P, lm_head=decoder, pooler=pooler, rotary_matmul=rot)
    if static:
        src += (f"; StaticCache({STATIC_LEN}): attention spans the whole capacity T={STATIC_LEN} (masked), "
                f"so the formula is evaluated with past = {P}")
    sp = stored_params(str(path))
    fw = framework_params(arch)
    fc = flop_counter_macs(arch, S, P if not static or component == "decode" else 0,
                           static_len=STATIC_LEN if static else None)
    manifest = {
        "id": mid, "file": str(path), "exporter": desc, "config": cfg,
        "bind": bind_for(str(path), S, kv_len, g, mask_len=STATIC_LEN if static else None),
        "phase": "decode" if component == "decode" else "prefill",
        "phase_context": (STATIC_LEN if static else P_DECODE) if component == "decode" else 0,
        "independent": {"macs": macs, "macs_source": src, "macs_terms": terms,
                        "macs_flopcounter": fc["macs"],
                        "macs_flopcounter_source": "torch.utils.flop_counter.FlopCounterMode on the eager PyTorch "
                                                   "model, total FLOPs / 2 (" + fc["note"] + ")",
                        "params_stored": sp["total"],
                        "params_stored_source": "this script's stored_params(): element counts from the dims of every "
                                                "initializer read by some node (subgraphs included) plus every Constant "
                                                "node's tensor, read from the protobuf without onnxroof; uint8 data of "
                                                "4-bit MatMulNBits B / zero_points and GatherBlockQuantized data / "
                                                "zero_points counted 2 elements per byte",
                        "params_stored_detail": sp,
                        "params_framework": fw},
        "outputs": out_names,
        "notes": "",
    }
    if decoder:
        manifest["decoder"] = {"kv_heads": g["kv_heads"], "head_dim": g["head_dim"], "layers": g["layers"],
                               "cache_layout": "BHSD", "has_past_inputs": has_past}
    if has_past and component is None:
        dm, dsrc, dterms = analytic_macs(arch, 1, P_DECODE, lm_head=True, rotary_matmul=rot)
        manifest["bind_decode"] = bind_for(str(path), 1, P_DECODE, g)
        manifest["independent_decode"] = {"macs": dm, "macs_source": dsrc, "macs_terms": dterms,
                                          "macs_flopcounter": flop_counter_macs(arch, 1, P_DECODE)["macs"]}
    notes = []
    if g.get("tied") and decoder and not arch.startswith("bert"):
        notes.append("tied embeddings: the framework counts wte/embed_tokens once; the export may store it once "
                     "(shared) or twice (embedding + transposed/quantized lm_head)")
    if arch == "gpt2":
        notes.append("GPT-2 ties lm_head to wte")
    if "int4" in recipe:
        notes.append("int4: MatMulNBits B is uint8 [N, K/32, 16] (2 weights per byte), plus float scales [N*K/32]"
                     + (" and packed uint4 zero points" if "asym" in recipe else " (symmetric: no zero points)")
                     + "; params_stored counts logical weights + scales (+ zero points)")
    if static:
        notes.append(f"StaticCache export: cache tensors are the full capacity {STATIC_LEN}; attention runs over all "
                     f"{STATIC_LEN} slots (masked), so the bound 'past' length is the capacity, not the tokens cached"
                     + ("; the decode binding uses onnxroof --phase decode --context 256 (the capacity)"
                        if component == "decode" else ""))
    if component:
        notes.append(f"export_for_generation component '{component}' of one generate() capture")
    if recipe.startswith("genai"):
        notes.append("genai: rotary cos/sin caches [max_pos, hd/2] are stored initializers (not framework params); "
                     "QKV fused into one MatMul(NBits) per layer; GroupQueryAttention computes attention + rotary")
    if pooler:
        notes.append("BERT pooler output kept: pooler d*d counted once (token 0)")
    elif arch.startswith("bert"):
        notes.append("BERT exported for feature-extraction: pooler output pruned from the graph")
    manifest["notes"] = "; ".join(notes)
    manifest["build_seconds"] = round(time.time() - t0, 1)
    (out_root / f"{mid}.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def run_stage(stage: str, out_root: Path, only: set[str] | None) -> None:
    work = out_root / "_work"
    work.mkdir(parents=True, exist_ok=True)
    failures = {}
    for mid, (st, arch, recipe) in MODELS.items():
        if st != stage or (only and mid not in only):
            continue
        print(f"[{stage}] {mid} ...", flush=True)
        try:
            m = build_one(mid, out_root, work)
            print(f"[{stage}] {mid}: macs {m['independent']['macs']} params_stored "
                  f"{m['independent']['params_stored']} ({m['build_seconds']} s)", flush=True)
        except Exception as e:
            traceback.print_exc()
            failures[mid] = f"{type(e).__name__}: {str(e)[-1200:]}"
    fpath = out_root / f"_failures_{stage}.json"
    fpath.write_text(json.dumps(failures, indent=1))


# ----------------------------------------------------------------------------------------------
# onnxroof

def analyze_all(out_root: Path, only: set[str] | None) -> None:
    import collections
    import onnxroof
    results = {}
    for mf in sorted(out_root.glob("*.json")):
        if mf.name.startswith("_") or mf.name == "onnxroof_results.json":
            continue
        m = json.loads(mf.read_text())
        if only and m["id"] not in only:
            continue
        first = m.get("phase", "prefill")
        for phase, bkey, ikey in ((first, "bind", "independent"), ("decode", "bind_decode", "independent_decode")):
            if bkey not in m:
                continue
            modes = ("dims", "explicit", "phase") if "decoder" in m and m["decoder"].get("has_past_inputs") \
                else ("dims", "explicit")
            for mode in modes:
                b = m[bkey]
                if mode == "dims":
                    kw = dict(dims=b["dims"], input_shapes=b["input_shapes"])
                elif mode == "explicit":
                    kw = dict(input_shapes=b["input_shapes_explicit"])
                else:  # onnxroof's own decoder binding: --phase prefill --seq 128 / --phase decode --context 127
                    ctx = m.get("phase_context") or P_DECODE
                    kw = dict(phase="prefill", seq=S_PREFILL) if phase == "prefill" else \
                        dict(phase="decode", context=ctx)
                key = f"{m['id']}/{phase}/{mode}"
                try:
                    a = onnxroof.analyze(m["file"], **kw)
                    reasons = collections.OrderedDict()
                    for n in a.nodes:
                        if n.status not in ("ok", "constant"):
                            op = f"{n.domain + '.' if n.domain not in ('', 'ai.onnx') else ''}{n.op_type}"
                            r = reasons.setdefault(f"{op}:{n.status}", {"count": 0, "first": n.reason, "node": n.name})
                            r["count"] += 1
                    results[key] = {
                        "macs": a.totals.macs, "independent_macs": m[ikey]["macs"],
                        "params": a.totals.params, "independent_params_stored": m["independent"]["params_stored"],
                        "unsupported": a.totals.unsupported, "not_counted": a.totals.not_counted,
                        "reasons": reasons, "warnings": [str(w) for w in a.warnings][:12],
                        "unresolved_dims": [str(u) for u in a.unresolved_dims][:12],
                        "inputs": {t.name: list(t.shape) if t.shape is not None else None for t in a.inputs},
                    }
                    if mode == "phase":
                        from onnxroof.cost.llm import detect_decoder, phase_dims
                        import onnx
                        from onnxroof.frontend.inputs import fix_digit_dims
                        raw = onnx.load(m["file"], load_external_data=False)
                        fix_digit_dims(raw)  # as analyze does before detect_decoder
                        lay = detect_decoder(raw)
                        results[key]["layout"] = str(lay)
                        results[key]["phase_dims"] = phase_dims(lay, **({"phase": "prefill", "seq": S_PREFILL,
                                                                          "context": None} if phase == "prefill" else
                                                                         {"phase": "decode", "seq": None,
                                                                          "context": ctx}))
                        results[key]["llm"] = str(a.llm)
                except Exception as e:
                    results[key] = {"error": f"{type(e).__name__}: {str(e)[:800]}"}
                r = results[key]
                print(key, {k: r.get(k) for k in ("macs", "independent_macs", "params", "independent_params_stored",
                                                    "error")}, flush=True)
    prev = out_root / "onnxroof_results.json"
    if only and prev.exists():
        results = {**json.loads(prev.read_text()), **results}
    prev.write_text(json.dumps(results, indent=1, default=str))


def stage_main(script: Path, default_out: str, doc: str | None, run_stage, analyze_all) -> int:
    """The command line of a two-venv collector (this one, build_moe.py): each export stage runs
    in the venv that has its transformers version, then the analysis."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--only", default="", help="comma-separated model ids")
    ap.add_argument("--stage", choices=["hf5", "hf4", "analyze"], help="internal: run one stage in this python")
    ap.add_argument("--py5", default="/work/venvs/hf5/bin/python")
    ap.add_argument("--py4", default="/work/venvs/hf/bin/python")
    ap.add_argument("--analyze-only", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, args.only.split(","))) or None
    if args.stage in ("hf5", "hf4"):
        run_stage(args.stage, out, only)
        return 0
    if args.stage == "analyze":
        analyze_all(out, only)
        return 0
    rest = ["--out", str(out)] + (["--only", args.only] if args.only else [])
    if not args.analyze_only:
        for stage, py in (("hf5", args.py5), ("hf4", args.py4)):
            subprocess.run([py, str(script), "--stage", stage, *rest], check=False)
    subprocess.run([args.py5, str(script), "--stage", "analyze", *rest], check=False)
    return 0


def main() -> int:
    return stage_main(HERE, "/work/corpus/hf", __doc__, run_stage, analyze_all)


if __name__ == "__main__":
    sys.exit(main())
