"""The HTML report: one self-contained page rendered from ``reports/templates/report.html.j2``.

The context is the JSON document (``Analysis.to_dict()``) plus every number already formatted
(SI prefixes for counts, IEC for bytes, the exact value for tooltips and sorting): the templates
only place strings, they compute nothing. Everything that comes from the model (names, doc
strings, producer) is untrusted and autoescaped; the document embedded for scripts is JSON with
``<``, ``>`` and ``&`` escaped, so no string in it can close its ``<script>`` element. The page
loads nothing from the network; a Content-Security-Policy pins its one script by hash.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable

import jinja2
from markupsafe import Markup

from ..resources import resource_dir
from ..units import iec, intensity, si

if TYPE_CHECKING:
    from ..analysis import Analysis

TEMPLATE = "report.html.j2"
SCRIPT_TEMPLATE = "partials/_script.js.j2"

STATUS_LABELS = {
    "ok": "counted",
    "constant": "folded",
    "unsupported": "unsupported",
    "unknown_shape": "unknown shape",
}

# The per-node numeric columns: (JSON key, header, tooltip unit, formatter).
NODE_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("macs", "MACs", "MACs", "count"),
    ("flops", "FLOPs", "FLOPs", "count"),
    ("params", "Params", "parameters", "count"),
    ("weight_bytes", "Weight bytes", "bytes", "bytes"),
    ("input_bytes", "Input bytes", "bytes", "bytes"),
    ("output_bytes", "Output bytes", "bytes", "bytes"),
    ("intensity", "Intensity (FLOP/B)", "FLOP/B", "ratio"),
)


def render_html(analysis: "Analysis") -> str:
    """Render ``analysis`` as one self-contained HTML page (no network, opens from file://)."""
    env = _environment()
    document = analysis.to_dict()
    script = env.get_template(SCRIPT_TEMPLATE).render()
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    context = _context(analysis, document)
    context["script"] = Markup(script)  # static template text: nothing from the model in it
    context["script_hash"] = f"sha256-{digest}"
    context["document_json"] = Markup(script_json(document))
    return env.get_template(TEMPLATE).render(context)


def script_json(value: Any) -> str:
    """JSON safe inside an HTML ``<script>`` element: no ``<``, ``>``, ``&`` or line separators."""
    text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


@lru_cache(maxsize=None)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource_dir("templates"))),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "j2"), default_for_string=True, default=True
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


# ---------------------------------------------------------------------------------------------
# Context: every string the templates show, built from the JSON document


def _context(analysis: "Analysis", document: dict) -> dict:
    model, totals = document["model"], document["totals"]
    nodes = document["nodes"]
    uncounted = totals["nodes"] - totals["counted_nodes"]
    return {
        "version": document["version"],
        "schema": document["schema"],
        "complete": document["complete"],
        "model": _model_context(model, analysis.model.doc_string),
        "totals": _totals_context(totals),
        "problems": _problems_context(document),
        "ops": _ops_context(nodes, totals["flops"]),
        "columns": [{"key": key, "label": label} for key, label, _, _ in NODE_COLUMNS],
        "rows": [_row_context(position, node) for position, node in enumerate(nodes)],
        "node_count": _count(len(nodes)),
        "uncounted_count": uncounted,
        "op_options": [
            {"value": op, "label": f"{op} ({count})"}
            for op, count in sorted(Counter(n["op_type"] for n in nodes).items(), key=lambda kv: kv[0].lower())
        ],
    }


def _model_context(model: dict, doc_string: str) -> dict:
    file_bytes = model["file_bytes"]
    other_opsets = [f"{domain} {version}" for domain, version in model["opsets"].items() if domain != "ai.onnx"]
    return {
        "name": model["name"],
        "path": model["path"],
        "producer": model["producer"] or "unknown",
        "ir_version": str(model["ir_version"]),
        "opset": str(model["opset"]) if model["opset"] else "none",
        "other_opsets": ", ".join(other_opsets),
        "file_size": iec(file_bytes) if file_bytes is not None else "in memory",
        "file_size_title": f"{file_bytes:,} bytes" if file_bytes is not None else "analysed from a ModelProto, not a file",
        "nodes": _count(model["nodes"]),
        "doc_string": doc_string.strip(),
        "inputs": [_tensor_context(t) for t in model["inputs"]],
        "outputs": [_tensor_context(t) for t in model["outputs"]],
    }


def _tensor_context(tensor: dict) -> dict:
    return {"name": tensor["name"], "shape": shape_text(tensor["shape"]), "dtype": tensor["dtype"]}


def _totals_context(totals: dict) -> dict:
    uncounted = totals["nodes"] - totals["counted_nodes"]
    return {
        "params": si(totals["params"]),
        "params_title": f"{totals['params']:,} parameters",
        "param_bytes": iec(totals["param_bytes"]),
        "param_bytes_title": f"{totals['param_bytes']:,} bytes",
        "mac_flops": si(totals["mac_flops"]),
        "mac_flops_title": f"{totals['mac_flops']:,} FLOPs (2 x MACs)",
        "macs": si(totals["macs"]),
        "macs_title": f"{totals['macs']:,} MACs",
        "flops": si(totals["flops"]),
        "flops_title": f"{totals['flops']:,} FLOPs",
        "other_flops": si(totals["flops"] - totals["mac_flops"]),
        "other_flops_title": f"{totals['flops'] - totals['mac_flops']:,} FLOPs outside multiply-accumulates",
        "counted_nodes": _count(totals["counted_nodes"]),
        "nodes": _count(totals["nodes"]),
        "uncounted": _count(uncounted),
        "all_counted": uncounted == 0,
        # with nodes left out, every sum is a lower bound: the cards say so
        "bound": "" if uncounted == 0 else "≥ ",
    }


def _problems_context(document: dict) -> dict:
    totals = document["totals"]
    unresolved = [
        {
            "input": d["input"],
            "axis": str(d["axis"]),
            "symbol": d["symbol"] or "",
            "fix": d["fix"],
        }
        for d in document["unresolved_dims"]
    ]
    unsupported = [{"op": op, "count": _count(n)} for op, n in totals["unsupported"].items()]
    unknown = [{"op": op, "count": _count(n)} for op, n in totals["not_counted"].items()]
    warnings = list(document["warnings"])
    return {
        "any": bool(warnings or unresolved or unsupported or unknown),
        "warnings": warnings,
        "unresolved": unresolved,
        "unsupported": unsupported,
        "unknown_shape": unknown,
    }


_NOT_COUNTED = {"text": "—", "title": "no node of this op type was counted", "value": "", "cls": "na"}


def _ops_context(nodes: list[dict], total_flops: int) -> list[dict]:
    groups: dict[str, dict] = {}
    for node in nodes:
        group = groups.setdefault(node["op_type"], {"nodes": 0, "uncounted": 0, "macs": 0, "flops": 0, "params": 0})
        group["nodes"] += 1
        group["uncounted"] += 0 if node["counted"] else 1
        for key in ("macs", "flops", "params"):
            group[key] += node[key]
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1]["flops"], -kv[1]["nodes"], kv[0].lower()))
    rows = []
    for op, group in ordered:
        share = group["flops"] / total_flops if total_flops else 0.0
        none_counted = group["uncounted"] == group["nodes"]
        metrics = {
            key: _NOT_COUNTED if none_counted else _metric(group[key], "count", unit)
            for key, unit in (("macs", "MACs"), ("flops", "FLOPs"), ("params", "parameters"))
        }
        rows.append({
            "op": op,
            "nodes": _count(group["nodes"]),
            "uncounted": _count(group["uncounted"]) if group["uncounted"] else "",
            **metrics,
            "share": "—" if none_counted or not total_flops else _percent(share),
            "share_title": f"{group['flops']:,} of {total_flops:,} FLOPs",
            "bar": f"{min(share, 1.0) * 100:.2f}%",
        })
    return rows


def _row_context(position: int, node: dict) -> dict:
    """One row of the node table; ``position`` is the node's place in execution order."""
    counted = node["counted"]
    status = node["status"]
    metrics = []
    for key, _, unit, kind in NODE_COLUMNS:
        if not counted:
            metrics.append({"text": "—", "title": f"not counted: {node['reason']}", "value": "", "cls": "na"})
            continue
        metric = _metric(node[key], kind, unit)
        if key == "flops" and node["formula"]:
            metric["title"] = f"{metric['title']}\n{node['formula']}"
        metrics.append(metric)
    shape = "; ".join(shape_text(s) for s in node["output_shapes"]) or "-"
    domain = node["domain"]
    return {
        "index": str(position),
        "number": str(position + 1),
        "name": node["name"],
        "op_type": node["op_type"],
        "op_title": f"{domain or 'ai.onnx'}::{node['op_type']} ({node['family']})",
        "dtype": node["dtype"],
        "shape": shape,
        "status": status,
        "status_label": STATUS_LABELS.get(status, status),
        "status_title": node["reason"] or ("costed by its rule" if status == "ok" else status),
        "counted": counted,
        "metrics": metrics,
        "search": " ".join((node["name"], node["op_type"], node["dtype"], STATUS_LABELS.get(status, status))).lower(),
    }


# ---------------------------------------------------------------------------------------------
# Formatting


def shape_text(shape: Iterable | None) -> str:
    """``[1, 3, 224, 224]`` -> ``1×3×224×224``; symbols stay names, unknown dims are ``?``."""
    if shape is None:
        return "?"
    dims = ["?" if d is None else str(d) for d in shape]
    return "×".join(dims) if dims else "scalar"


def _metric(value: int | float | None, kind: str, unit: str) -> dict:
    if value is None:
        return {"text": "-", "title": "no bytes move", "value": "", "cls": "na"}
    if kind == "bytes":
        text, title = iec(value), f"{value:,} {unit}"
    elif kind == "ratio":
        text, title = intensity(value), f"{value:.6g} {unit}"
    else:
        text, title = si(value), f"{value:,} {unit}"
    return {"text": text, "title": title, "value": repr(value), "cls": "zero" if value == 0 else ""}


def _count(value: int) -> str:
    return f"{value:,}"


def _percent(share: float) -> str:
    if share == 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{share * 100:.1f}%"


def _finite(value: Any) -> Any:
    """Replace NaN and infinities (invalid JSON) by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
