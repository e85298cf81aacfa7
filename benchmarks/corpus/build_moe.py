#!/usr/bin/env python3
"""Build the Mixture-of-Experts part of onnxroof's validation corpus (small Mixtral / Qwen2-MoE decoders).

Same approach and manifest schema as ``build_hf.py`` (whose ``stored_params`` and ``bind_for`` are reused):
every model is built from a config object with random (perturbed) weights, nothing comes from a hub, and
it is exported without a KV cache (``use_cache=False``) through:

* ``torch.onnx.export(..., dynamo=True)``  (torch.export + onnxscript), eager experts;
* ``torch.onnx.export(..., dynamo=False)`` (TorchScript tracer), eager experts -- the Python loop over
  the experts hit by the sample input is unrolled into the graph;
* transformers 5's own exporter ``transformers.exporters.OnnxExporter`` with the model's default (eager)
  experts, and with ``experts_implementation="batched_mm"`` (every token-expert pair gathers its expert's
  weights: no data-dependent shapes);
* (transformers 4.57 venv) ``torch.onnx.export(..., dynamo=False)`` of 4.57's ModuleList experts.

For each export: ``OUT/<id>/model.onnx`` and ``OUT/<id>.json`` (manifest with the analytic MACs, a
FlopCounterMode cross-check on the eager model, stored parameters, framework parameters).  ``--stage analyze``
runs ``onnx.shape_inference.infer_shapes`` on a copy with all input dims fixed (lists the outputs that stay
symbolic / unknown, per op type, and dumps layer 0's MoE nodes) and onnxroof, into ``OUT/moe_results.json``
and ``OUT/<id>.routing.txt``.

Usage:  python benchmarks/corpus/build_moe.py [--out /work/corpus/moe] [--only id,id] [--analyze-only]
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from build_hf import bind_for, stage_main, stored_params  # noqa: E402  (same reader, binder, command line)

SEED = 0
S = 32          # bound sequence length (batch 1)
SAMPLE = (1, 32)  # export sample (batch, seq)

MIXTRAL = dict(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2,
               max_position_embeddings=512, tie_word_embeddings=False, use_cache=False)
QWEN2MOE = dict(vocab_size=1000, hidden_size=128, intermediate_size=256, moe_intermediate_size=256,
                shared_expert_intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
                mlp_only_layers=[], norm_topk_prob=False, max_position_embeddings=512,
                tie_word_embeddings=False, use_cache=False)
ARCH = {"mixtral": ("MixtralConfig", "MixtralForCausalLM", MIXTRAL),
        "qwen2moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", QWEN2MOE)}

# id -> (stage, arch, recipe); recipe "dynamo[:experts]" / "script[:experts]" (torch.onnx.export) or
# "hf[-experts]" (transformers.exporters.OnnxExporter); experts = transformers 5 experts_implementation
# ("eager" unless given; "loop_all" is registered below).
MODELS = {
    "mixtral-dynamo": ("hf5", "mixtral", "dynamo"),
    "mixtral-dynamo-loopall": ("hf5", "mixtral", "dynamo:loop_all"),
    "mixtral-dynamo-batchedmm": ("hf5", "mixtral", "dynamo:batched_mm"),
    "mixtral-dynamo-groupedmm": ("hf5", "mixtral", "dynamo:grouped_mm"),
    "mixtral-script": ("hf5", "mixtral", "script"),
    "mixtral-hf-loopall": ("hf5", "mixtral", "hf-loop_all"),
    "mixtral-hf-nokv": ("hf5", "mixtral", "hf"),
    "mixtral-hf-eager": ("hf5", "mixtral", "hf-eager"),
    "mixtral-hf-batchedmm": ("hf5", "mixtral", "hf-batched_mm"),
    "qwen2moe-dynamo": ("hf5", "qwen2moe", "dynamo"),
    "qwen2moe-dynamo-loopall": ("hf5", "qwen2moe", "dynamo:loop_all"),
    "qwen2moe-dynamo-batchedmm": ("hf5", "qwen2moe", "dynamo:batched_mm"),
    "qwen2moe-script": ("hf5", "qwen2moe", "script"),
    "qwen2moe-hf-nokv": ("hf5", "qwen2moe", "hf"),
    "qwen2moe-hf-eager": ("hf5", "qwen2moe", "hf-eager"),
    "qwen2moe-hf-batchedmm": ("hf5", "qwen2moe", "hf-batched_mm"),
    "mixtral-t457-script": ("hf4", "mixtral", "script"),
    "mixtral-t457-dynamo": ("hf4", "mixtral", "dynamo"),
}


def geometry(arch: str) -> dict:
    c = ARCH[arch][2]
    d, H = c["hidden_size"], c["num_attention_heads"]
    g = dict(layers=c["num_hidden_layers"], hidden=d, heads=H, kv_heads=c["num_key_value_heads"], head_dim=d // H,
             vocab=c["vocab_size"], gated=True, tied=c["tie_word_embeddings"], top_k=c["num_experts_per_tok"])
    if arch == "mixtral":
        g.update(experts=c["num_local_experts"], d_ff=c["intermediate_size"], shared_d_ff=0, shared_gate=False)
    else:
        g.update(experts=c["num_experts"], d_ff=c["moe_intermediate_size"],
                 shared_d_ff=c["shared_expert_intermediate_size"], shared_gate=True)
    return g


def analytic_macs(arch: str, S: int, rotary_matmul: bool = False) -> tuple[int, str, dict]:
    g = geometry(arch)
    d, L, hd, ff, E, k = g["hidden"], g["layers"], g["head_dim"], g["d_ff"], g["experts"], g["top_k"]
    qd, kvd = g["heads"] * hd, g["kv_heads"] * hd
    terms = {
        "q_proj S*d*(H*hd)": L * S * d * qd,
        "k_proj+v_proj 2*S*d*(Hkv*hd)": L * 2 * S * d * kvd,
        "o_proj S*(H*hd)*d": L * S * qd * d,
        "attention QK^T + PV 2*S*S*(H*hd), full S x S rectangle": L * 2 * S * S * qd,
        "router S*d*E": L * S * d * E,
        "routed experts S*top_k*(3*d*d_ff) (gate+up+down, each token runs top_k experts)": L * S * k * 3 * d * ff,
    }
    if g["shared_d_ff"]:
        terms["shared expert gate+up+down 3*S*d*d_shared"] = L * 3 * S * d * g["shared_d_ff"]
    if g["shared_gate"]:
        terms["shared_expert_gate S*d*1"] = L * S * d
    terms["lm head S*d*V"] = S * d * g["vocab"]
    if rotary_matmul:  # transformers 4.x rotary: inv_freq[hd/2, 1] @ position_ids[1, S] is a real matmul (K = 1)
        terms["rotary inv_freq @ positions (hd/2)*S*1 (transformers 4.x, exported as MatMul)"] = (hd // 2) * S
    text = (f"analytic, batch 1, S={S}, no cache; d={d}, H={g['heads']}, Hkv={g['kv_heads']}, hd={hd}, L={L}, "
            f"E={E} experts, top_k={k}, d_ff(expert)={ff}"
            + (f", shared expert d_ff={g['shared_d_ff']} + sigmoid gate d->1" if g["shared_d_ff"] else "")
            + f", V={g['vocab']}: " + " + ".join(f"{kk} = {v}" for kk, v in terms.items())
            + "; embeddings, norms, softmax, topk, activations, rotary, routing weights multiply, biases, masks "
              "are not MACs")
    return sum(terms.values()), text, terms


# ----------------------------------------------------------------------------------------------
# builders (run inside the matching venv)

def loop_all_experts_forward(self, hidden_states, top_k_index, top_k_weights):
    """transformers 5's eager experts loop, but over range(num_experts) instead of over the experts hit
    (``for expert_idx in expert_hit`` iterates a data-dependent-length tensor, which torch.export rejects).
    Same math: torch.where -> gather rows -> gate_up / down linear -> * routing weight -> index_add_."""
    import torch
    final = torch.zeros_like(hidden_states)
    for e in range(self.num_experts):
        token_idx, top_k_pos = torch.where(top_k_index == e)
        current = hidden_states[token_idx]
        gate, up = torch.nn.functional.linear(current, self.gate_up_proj[e]).chunk(2, dim=-1)
        h = torch.nn.functional.linear(self.act_fn(gate) * up, self.down_proj[e])
        h = h * top_k_weights[token_idx, top_k_pos, None]
        final.index_add_(0, token_idx, h.to(final.dtype))
    return final


def setup_transformers():
    import transformers
    if transformers.__version__.startswith("5"):
        from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS
        ALL_EXPERTS_FUNCTIONS.register("loop_all", loop_all_experts_forward)
    else:  # 4.57: sdpa_mask_recent_torch builds the mask with vmap, which the TorchScript tracer rejects
        from transformers import masking_utils as mu
        mu.sdpa_mask = mu.sdpa_mask_older_torch
        mu.ALL_MASK_ATTENTION_FUNCTIONS._global_mapping["sdpa"] = mu.sdpa_mask_older_torch

def make_model(arch: str, eager_attn: bool = True, experts: str | None = "eager"):
    """experts: transformers 5 experts_implementation (None = the library default, which resolves to grouped_mm
    where torch has it); ignored on 4.x (ModuleList experts, always the Python loop)."""
    import torch
    import transformers
    cname, mname, c = ARCH[arch]
    torch.manual_seed(SEED)
    cfg = getattr(transformers, cname)(**c)
    v5 = transformers.__version__.startswith("5")
    setup_transformers()
    kw = {"attn_implementation": "eager"} if eager_attn else {}
    if experts and v5:
        kw["experts_implementation"] = experts
    model = getattr(transformers, mname)._from_config(cfg, **kw).eval()
    with torch.no_grad():  # perturb: default init leaves norms at 1, router/biases at 0
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    return model


def flop_counter_macs(arch: str, S: int, experts: str | None = "eager") -> dict:
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    model = make_model(arch, eager_attn=True, experts=experts)
    torch.manual_seed(2)
    ids = torch.randint(0, geometry(arch)["vocab"], (1, S))
    with torch.no_grad():
        with FlopCounterMode(display=False) as fc:
            model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    by_op = {str(k): v // 2 for k, v in fc.get_flop_counts().get("Global", {}).items()}
    return {"macs": fc.get_total_flops() // 2, "by_op": by_op,
            "note": f"eager attention, experts {experts or 'eager'}, all positions' logits, random ids seed 2"}


def framework_params(arch: str) -> int:
    return sum(p.numel() for p in make_model(arch).parameters())


def sample_inputs(arch: str):
    import torch
    torch.manual_seed(1)
    ids = torch.randint(0, geometry(arch)["vocab"], SAMPLE)
    return ids, torch.ones_like(ids)


def wrapped(model):
    import torch

    class W(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
    return W(model).eval()


def export_torch(arch: str, recipe: str, out: Path) -> tuple[Path, str]:
    import torch
    import transformers
    recipe, _, experts = recipe.partition(":")
    experts = experts or "eager"
    model = make_model(arch, eager_attn=True, experts=experts)
    ids, mask = sample_inputs(arch)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "model.onnx"
    w = wrapped(model)
    if recipe == "dynamo":
        seq = torch.export.Dim("seq", min=2, max=512)
        tried = []
        for dyn in ({"input_ids": {1: seq}, "attention_mask": {1: seq}}, None):
            try:
                prog = torch.onnx.export(w, (ids, mask), dynamo=True, input_names=["input_ids", "attention_mask"],
                                         output_names=["logits"], dynamic_shapes=dyn, optimize=True)
                prog.save(str(path))
                break
            except Exception as e:  # noqa: BLE001
                msg = str(e)
                cut = msg.find("## Exception summary")
                tried.append(f"dynamic_shapes={dyn is not None}: {type(e).__name__}: "
                             + (msg[cut + 20:cut + 700] if cut >= 0 else msg[:700]).strip())
        else:
            raise RuntimeError(" | ".join(tried))
        desc = (f"torch {torch.__version__} torch.onnx.export(model, (input_ids, attention_mask), dynamo=True, "
                f"dynamic_shapes={'seq' if dyn else None}, optimize=True), sample {list(SAMPLE)}, eager attention, "
                f"experts_implementation={experts}; transformers {transformers.__version__}"
                + (f"; earlier attempts failed: {' | '.join(tried)}" if tried else ""))
    else:
        torch.onnx.export(w, (ids, mask), str(path), dynamo=False, input_names=["input_ids", "attention_mask"],
                          output_names=["logits"], opset_version=17,
                          dynamic_axes={"input_ids": {1: "seq"}, "attention_mask": {1: "seq"},
                                        "logits": {1: "seq"}})
        desc = (f"torch {torch.__version__} torch.onnx.export(model, (input_ids, attention_mask), dynamo=False, "
                f"opset 17, dynamic_axes seq), TorchScript trace of sample {list(SAMPLE)}, eager attention, eager "
                f"experts; transformers {transformers.__version__}")
    return path, desc


def export_hf(arch: str, recipe: str, out: Path) -> tuple[Path, str]:
    import onnxscript
    import torch
    import transformers
    from transformers.exporters import OnnxConfig, OnnxExporter
    experts = recipe.split("-", 1)[1] if "-" in recipe else None
    model = make_model(arch, eager_attn=False, experts=experts)
    resolved = model.config._experts_implementation
    torch.manual_seed(1)
    ids = torch.randint(0, geometry(arch)["vocab"], (2, 16))
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": False}
    exported = OnnxExporter().export(model, inputs, OnnxConfig(dynamic=True))
    exported.save_pretrained(out)
    desc = (f"transformers {transformers.__version__} transformers.exporters.OnnxExporter().export(model, "
            f"sample_inputs [2,16], use_cache=False, OnnxConfig(dynamic=True)) -> save_pretrained; experts "
            f"{experts or 'library default'} (resolved: {resolved}); torch {torch.__version__}, onnxscript {onnxscript.__version__}")
    return out / "model.onnx", desc


def build_one(mid: str, out_root: Path) -> dict:
    stage, arch, recipe = MODELS[mid]
    out = out_root / mid
    if out.exists():
        shutil.rmtree(out)
    t0 = time.time()
    if recipe.startswith("hf"):
        path, desc = export_hf(arch, recipe, out)
    else:
        path, desc = export_torch(arch, recipe, out)
    import onnx
    import transformers
    g = geometry(arch)
    cfg = dict(g)
    cfg["arch"], cfg["hf_config"] = arch, ARCH[arch][2]
    proto = onnx.load(str(path), load_external_data=False)
    rot = transformers.__version__.startswith("4.") and \
        any(n.op_type == "MatMul" and "rotary" in n.name.lower() for n in proto.graph.node)
    macs, src, terms = analytic_macs(arch, S, rotary_matmul=rot)
    experts = recipe.split("-", 1)[1] if recipe.startswith("hf-") else ("grouped_mm (default)" if recipe == "hf"
                                                                         else (recipe.partition(":")[2] or "eager"))
    fc = flop_counter_macs(arch, S, experts="eager")
    sp = stored_params(str(path))
    manifest = {
        "id": mid, "file": str(path), "exporter": desc, "config": cfg,
        "bind": bind_for(str(path), S, 0, g),
        "phase": "prefill", "phase_context": 0,
        "independent": {"macs": macs, "macs_source": src, "macs_terms": terms,
                        "macs_flopcounter": fc["macs"], "macs_flopcounter_by_op": fc["by_op"],
                        "macs_flopcounter_source": "torch.utils.flop_counter.FlopCounterMode on the eager PyTorch "
                                                   "model, total FLOPs / 2 (" + fc["note"] + "); the eager experts "
                                                   "loop runs each expert on the rows routed to it, S*top_k rows "
                                                   "in all",
                        "params_stored": sp["total"],
                        "params_stored_source": "build_hf.stored_params(): element counts of every initializer read "
                                                "by some node (subgraphs included) plus every Constant node's "
                                                "tensor, read from the protobuf without onnxroof",
                        "params_stored_detail": sp,
                        "params_framework": framework_params(arch)},
        "outputs": [o.name for o in proto.graph.output],
        "moe": {"experts": g["experts"], "top_k": g["top_k"], "d_ff_expert": g["d_ff"],
                "shared_expert_d_ff": g["shared_d_ff"], "experts_implementation": experts,
                "transformers": transformers.__version__},
        "decoder": {"kv_heads": g["kv_heads"], "head_dim": g["head_dim"], "layers": g["layers"],
                    "cache_layout": "BHSD", "has_past_inputs": False},
        "notes": "",
    }
    notes = [f"MoE: {g['experts']} experts, top_k {g['top_k']}, gated experts (SiLU(gate)*up -> down)"]
    if g["shared_d_ff"]:
        notes.append("Qwen2-MoE: every token also runs the shared expert (3*d*d_shared) scaled by "
                     "sigmoid(shared_expert_gate(x)) (d->1); norm_topk_prob=False")
    if experts == "loop_all":
        notes.append("experts_implementation='loop_all' (registered by this script): the eager loop over "
                     "range(num_experts) instead of the data-dependent expert_hit list, so torch.export can trace "
                     "it; torch.where + index_add_ per expert, same math")
    if recipe.startswith("script"):
        notes.append("TorchScript trace: the Python loop over experts hit by the sample is unrolled; experts not "
                     "hit by the sample input would be missing from the graph")
    if recipe == "hf":
        notes.append("transformers 5 default experts_implementation resolves to grouped_mm (histc counts per "
                     "expert, argsort of expert ids, transformers::grouped_mm_fallback custom op)")
    if experts == "batched_mm":
        notes.append("batched_mm: token rows repeated top_k times, expert weights gathered per row "
                     "([S*k, 2*d_ff, d] etc.), batched MatMul: all shapes static in S")
    manifest["notes"] = "; ".join(notes)
    manifest["build_seconds"] = round(time.time() - t0, 1)
    (out_root / f"{mid}.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def run_stage(stage: str, out_root: Path, only: set[str] | None) -> None:
    failures = {}
    for mid, (st, arch, recipe) in MODELS.items():
        if st != stage or (only and mid not in only):
            continue
        print(f"[{stage}] {mid} ...", flush=True)
        try:
            m = build_one(mid, out_root)
            print(f"[{stage}] {mid}: macs {m['independent']['macs']} flopcounter "
                  f"{m['independent']['macs_flopcounter']} params_stored {m['independent']['params_stored']} "
                  f"({m['build_seconds']} s)", flush=True)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            failures[mid] = f"{type(e).__name__}: {str(e)[-1500:]}"
    (out_root / f"_failures_{stage}.json").write_text(json.dumps(failures, indent=1))


# ----------------------------------------------------------------------------------------------
# inspection: shape inference with every input dim fixed

ROUTING_OPS = {"TopK", "NonZero", "Where", "Gather", "GatherND", "GatherElements", "ScatterND", "ScatterElements",
               "Concat", "Split", "Loop", "If", "MatMul", "Gemm", "OneHot", "Compress", "Equal", "Slice", "Expand",
               "Tile", "ReduceSum", "Transpose", "Reshape", "Mul", "Add", "Sigmoid", "Softmax", "Cast",
               "Unsqueeze", "Squeeze", "Greater", "Sum", "Range", "Einsum"}


def _shape(vi):
    if vi is None or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in vi.type.tensor_type.shape.dim]


def inspect(path: str, dims: dict, shapes: dict) -> dict:
    import onnx
    m = onnx.load(path)
    for i in m.graph.input:
        if i.name in shapes:
            for k, d in enumerate(i.type.tensor_type.shape.dim):
                d.Clear()
                d.dim_value = shapes[i.name][k]
    for o in m.graph.output:  # let inference decide the outputs
        o.type.tensor_type.ClearField("shape")
    del m.graph.value_info[:]  # exporter's own (symbolic, u0...) annotations dropped
    inf = onnx.shape_inference.infer_shapes(m, data_prop=True)
    vis = {v.name: v for v in list(inf.graph.value_info) + list(inf.graph.output) + list(inf.graph.input)}
    for t in inf.graph.initializer:
        vis.setdefault(t.name, onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    # taint: values downstream of the router's TopK (indices/values) or of any NonZero; an output with an
    # unknown / symbolic dim is "routed" when tainted, else an ordinary inference gap (Range of a Shape
    # value, masks, rotary: sizes onnx's data propagation does not carry)
    tainted = set()
    unknown = {"routed": collections.defaultdict(lambda: {"count": 0, "examples": []}),
               "other": collections.defaultdict(lambda: {"count": 0, "examples": []})}
    rows = []

    def walk(graph, prefix=""):
        for n in graph.node:
            outs = [_shape(vis.get(o)) for o in n.output]
            ins = [_shape(vis.get(i)) if i else None for i in n.input]
            if n.op_type in ("TopK", "NonZero") or any(i in tainted for i in n.input):
                tainted.update(n.output)
            sym = [s for s in outs if s is None or any(not isinstance(x, int) for x in s)]
            if sym:
                u = unknown["routed" if n.output[0] in tainted else "other"][f"{prefix}{n.op_type}"]
                u["count"] += 1
                if len(u["examples"]) < 2:
                    u["examples"].append({"node": n.name, "inputs": ins, "outputs": outs})
            rows.append((prefix, n, ins, outs))
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, prefix + f"{n.op_type}[{n.name}]/")
    walk(inf.graph)
    ops = collections.Counter(n.op_type for _, n, _, _ in rows)
    return {"unknown_by_op": {k: dict(v) for k, v in unknown.items()}, "op_counts": dict(ops), "rows": rows}


def moe_dump(rows) -> str:
    """Layer 0's MoE block: from the router (a few nodes before the first TopK) to the next layer's router."""
    idx = [i for i, r in enumerate(rows) if r[1].op_type == "TopK" and r[3] and r[3][0] and len(r[3][0]) == 2
           and r[3][0][-1] == 2]  # router top_k=2 (not the argsort TopK of grouped_mm)
    a = idx[0] if idx else 0
    b = idx[1] if len(idx) > 1 else len(rows)
    lines = []
    for prefix, n, ins, outs in rows[max(0, a - 6):b]:
        if n.op_type == "Constant":
            continue
        at = {x.name: x.i if x.type == 2 else (list(x.ints) if x.type == 7 else x.s.decode(errors="replace"))
              for x in n.attribute if x.name in ("reduction", "axis", "split", "num_outputs", "k", "batch_dims")}
        lines.append(f"{prefix}{n.op_type:16s} {n.name[:60]:60s} {at or ''} in={ins} out={outs}")
    return "\n".join(lines)


def ort_check(path: str, vocab: int) -> dict:
    """Run the export on ONNX Runtime with a few random [1, S] inputs (does it run off its sample?)."""
    import numpy as np
    try:
        import onnxruntime as ort
    except ImportError as e:
        return {"error": str(e)}
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    res = {}
    for seed in (0, 1, 2, 3):
        rng = np.random.default_rng(seed)
        ids = rng.integers(0, vocab, (1, S), dtype=np.int64)
        feed = {n: (ids if "ids" in n else np.ones((1, S), np.int64)) for n in names}
        try:
            out = sess.run(None, feed)[0]
            res[f"seed{seed}"] = f"ok {list(out.shape)}"
        except Exception as e:  # noqa: BLE001
            res[f"seed{seed}"] = f"{type(e).__name__}: {str(e)[:300]}"
    return res


def analyze_all(out_root: Path, only: set[str] | None) -> None:
    import onnxroof
    results = {}
    for mf in sorted(out_root.glob("*.json")):
        if mf.name.startswith("_") or mf.name == "moe_results.json":
            continue
        m = json.loads(mf.read_text())
        if only and m["id"] not in only:
            continue
        r = {"independent_macs": m["independent"]["macs"], "macs_flopcounter": m["independent"]["macs_flopcounter"],
             "independent_params_stored": m["independent"]["params_stored"]}
        b = m["bind"]
        try:
            ins = inspect(m["file"], b["dims"], b["input_shapes_explicit"])
            r["shape_inference_unknown_by_op"] = ins["unknown_by_op"]
            r["op_counts"] = ins["op_counts"]
            (out_root / f"{m['id']}.routing.txt").write_text(moe_dump(ins["rows"]))
        except Exception as e:  # noqa: BLE001
            r["inspect_error"] = f"{type(e).__name__}: {str(e)[:800]}"
        try:
            r["ort"] = ort_check(m["file"], m["config"]["vocab"])
        except Exception as e:  # noqa: BLE001
            r["ort"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        try:
            a = onnxroof.analyze(m["file"], dims=b["dims"], input_shapes=b["input_shapes"])
            nc = []
            reasons = collections.OrderedDict()
            for n in a.nodes:
                if n.status not in ("ok", "constant"):
                    op = f"{n.domain + '.' if n.domain not in ('', 'ai.onnx') else ''}{n.op_type}"
                    rr = reasons.setdefault(f"{op}:{n.status}", {"count": 0, "first": n.reason, "node": n.name})
                    rr["count"] += 1
                    if len(nc) < 60:
                        nc.append({"op": op, "name": n.name, "status": n.status, "reason": n.reason,
                                   "input_shapes": n.input_shapes, "output_shapes": n.output_shapes})
            r.update({"macs": a.totals.macs, "params": a.totals.params, "unsupported": a.totals.unsupported,
                      "not_counted": a.totals.not_counted, "reasons": reasons, "not_counted_nodes": nc,
                      "warnings": [str(w) for w in a.warnings][:12],
                      "unresolved_dims": [str(u) for u in a.unresolved_dims][:12]})
        except Exception as e:  # noqa: BLE001
            r["onnxroof_error"] = f"{type(e).__name__}: {str(e)[:800]}"
        results[m["id"]] = r
        print(m["id"], {k: r.get(k) for k in ("macs", "independent_macs", "macs_flopcounter", "not_counted",
                                              "unsupported", "onnxroof_error", "inspect_error")}, flush=True)
    prev = out_root / "moe_results.json"
    if only and prev.exists():
        results = {**json.loads(prev.read_text()), **results}
    prev.write_text(json.dumps(results, indent=1, default=str))


def main() -> int:
    return stage_main(HERE, "/work/corpus/moe", __doc__, run_stage, analyze_all)


if __name__ == "__main__":
    sys.exit(main())
