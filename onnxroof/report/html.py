"""The HTML report: one self-contained page rendered from ``reports/templates/report.html.j2``.

The context is the JSON document (``Analysis.to_dict()``) plus every number already formatted
(SI prefixes for counts, IEC for bytes, the exact value for tooltips and sorting): the templates
only place strings, they compute nothing. Everything that comes from the model (names, doc
strings, producer) is untrusted and autoescaped; the document embedded for scripts is JSON with
``<``, ``>`` and ``&`` escaped, so no string in it can close its ``<script>`` element. The page
loads nothing from the network; a Content-Security-Policy pins its one script by hash.

The memory section explains the memory stage's numbers in words (built here, from the numbers)
and draws the live-activation timeline as inline SVG whose geometry comes from ``charts.py``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import jinja2
from markupsafe import Markup

from ..memory import build_problem
from ..resources import resource_dir
from ..units import iec, intensity, si
from .charts import TimelineChart, svg_number, timeline_chart

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


def render_html(analysis: "Analysis", capacities: Sequence[tuple[str, int]] = ()) -> str:
    """Render ``analysis`` as one self-contained HTML page (no network, opens from file://).

    ``capacities`` are ``(label, bytes)`` on-chip memory sizes drawn as lines on the memory
    timeline (one per hardware target)."""
    env = _environment()
    document = analysis.to_dict()
    script = env.get_template(SCRIPT_TEMPLATE).render()
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    context = _context(analysis, document)
    context["memory"] = _memory_context(analysis, document, capacities)
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
# Memory: live activations (the memory stage's numbers, explained and drawn)

MEMORY_CHART_SIZE = (1240, 300)  # SVG user units; the chart scales to the panel's width
METHOD_LABELS = {
    "exact": "exact search",
    "heuristic": "greedy heuristic",
    "model order": "model order kept",
}
_LABEL_CHARS = 36  # node names longer than this are cut on the chart (the titles keep them whole)


def _memory_context(analysis: "Analysis", document: dict, capacities: Sequence[tuple[str, int]] = ()) -> dict | None:
    memory = document.get("memory")
    if memory is None:
        return None
    model_steps = memory["timeline"]
    best_steps = memory["best_order_timeline"]
    if not model_steps:
        return {"empty": True}
    peak, peak_step, peak_node = memory["peak_bytes"], memory["peak_step"], memory["peak_node"]
    best_peak = memory["best_order_peak_bytes"]
    same_order = [e["node"] for e in model_steps] == [e["node"] for e in best_steps]
    problem = build_problem(analysis.graph, elementwise_in_place=memory["elementwise_in_place"])
    buffers = {b.name: b for b in problem.buffers}
    position = {e["node"]: e["step"] for e in model_steps}
    records = {r.name: r for r in analysis.nodes}
    tensors = analysis.tensors
    unknown = sorted(n for n, t in tensors.items() if t.kind in ("input", "activation") and t.bytes is None)
    bound = "≥ " if unknown else ""
    lower_bound, lower_node = memory["largest_layer_bytes"], memory["largest_layer_node"]
    concat_copy = memory["concat_copy_peak_bytes"]
    concats = sum(1 for r in analysis.nodes if r.op_type == "Concat")
    method = memory["best_order_method"]

    rows = []
    for entry in memory["peak_tensors"]:
        buffer = buffers.get(entry["name"])
        tensor = tensors.get(entry["name"])
        role, role_title = _buffer_role(buffer, peak_node, peak_step, position) if buffer else ("live", "")
        share = entry["bytes"] / peak if peak else 0.0
        slices = [t for t in (buffer.tensors if buffer else ()) if t != entry["name"]]
        if tensor is not None:
            producer = tensor.producer or "graph input"
        else:  # no tensor: an If/Loop/Scan's scratch, its subgraph's own peak
            producer = ", ".join(sorted(buffer.allocators)) if buffer and buffer.allocators else "?"
        rows.append({
            "name": entry["name"],
            "slices": ", ".join(slices),
            "producer": producer,
            "shape": shape_text(tensor.shape) if tensor else "—",
            "dtype": tensor.dtype if tensor else "",
            "role": role,
            "role_title": role_title,
            "bytes": iec(entry["bytes"]),
            "bytes_title": f"{entry['bytes']:,} bytes",
            "share": _percent(share),
            "bar": f"{min(share, 1.0) * 100:.2f}%",
        })

    reduction = peak - best_peak
    if same_order and best_peak <= lower_bound:
        best_sub = "the model order: already optimal"
    elif same_order:
        best_sub = f"the model order ({METHOD_LABELS.get(method, method)})"
    else:
        best_sub = (f"{METHOD_LABELS.get(method, method)} · step {memory['best_order_peak_step']} · "
                    f"{memory['best_order_peak_node']}")
    if concats == 0:
        concat_sub = "no Concat in this model"
    elif concat_copy == peak:
        concat_sub = "unchanged: no copy at the peak"
    else:
        concat_sub = f"+{iec(concat_copy - peak)} over writing in place"
    cards = [
        {
            "label": "Peak live activations",
            "value": bound + iec(peak),
            "title": f"{peak:,} bytes live at step {peak_step} of the model order",
            "sub": f"model order · step {peak_step} · {peak_node}",
            "sub_title": f"{peak_node} ({records[peak_node].op_type}) runs at step {peak_step}" if peak_node in records else "",
            "delta": "",
            "cls": "",
        },
        {
            "label": "Best order found",
            "value": bound + iec(best_peak),
            "title": f"{best_peak:,} bytes at step {memory['best_order_peak_step']} of the best order",
            "sub": best_sub,
            "sub_title": memory["best_order_note"],
            "delta": ("−" + iec(reduction) + f" ({_percent(reduction / peak)})") if reduction > 0 else "",
            "cls": "stat-good" if reduction > 0 else "",
        },
        {
            "label": "Lower bound",
            "value": bound + iec(lower_bound),
            "title": f"{lower_bound:,} bytes: the inputs and outputs of {lower_node}, needed at once",
            "sub": f"largest layer · {lower_node}" if lower_node else "no nodes",
            "sub_title": f"{lower_node} needs its inputs and outputs at once: no execution order can peak lower",
            "delta": "",
            "cls": "",
        },
        {
            "label": "Peak if Concat copied",
            "value": bound + iec(concat_copy),
            "title": f"{concat_copy:,} bytes: the model-order peak with every Concat copying its inputs",
            "sub": concat_sub,
            "sub_title": "by default a Concat's inputs are written straight into slices of its output",
            "delta": "",
            "cls": "",
        },
    ]
    chart = timeline_chart(
        [("model", [e["live_bytes"] for e in model_steps]), ("best", [e["live_bytes"] for e in best_steps])],
        [(label, size) for label, size in capacities],
        width=MEMORY_CHART_SIZE[0],
        height=MEMORY_CHART_SIZE[1],
    )
    return {
        "empty": False,
        "bound": bound,
        "unknown": (f"{len(unknown):,} activation tensor(s) of unknown size are left out: every figure here is a lower bound"
                    if unknown else ""),
        "cards": cards,
        "explanation": _memory_explanation(
            memory, problem_buffers=buffers, position=position, records=records, tensors=tensors,
            same_order=same_order, concats=concats,
        ) if peak else (
            "No activation of known size is live at any step"
            + (": bind the input dims named in the warnings to size them." if unknown else ".")
        ),
        "rows": rows,
        "peak_step": str(peak_step),
        "peak_node": peak_node,
        "chart": _chart_context(chart, memory, records, same_order),
        "same_order": same_order,
        "method": METHOD_LABELS.get(method, method),
        "note": memory["best_order_note"],
        "in_place": "elementwise ops overwrite their input in place" if memory["elementwise_in_place"] else "",
    }


def _buffer_role(buffer, node: str, step: int, position: dict[str, int]) -> tuple[str, str]:
    """What the peak node does with a live buffer: (short role, tooltip)."""
    writes, reads = node in buffer.allocators, node in buffer.readers
    later = sorted((position[r], r) for r in buffer.readers if position.get(r, -1) > step)
    if not buffer.tensors:
        return "subgraph scratch", f"the peak working set of {node}'s subgraph, live while it runs"
    if writes and reads:
        return "read and written", f"{node} reads and writes this buffer (a view or a concat)"
    if writes:
        start = min(position[n] for n in buffer.allocators if n in position)
        if start == step:
            return "written", f"allocated at step {step}: {node} writes it"
        return "written (slice)", f"{node} writes its slice into this buffer, live since step {start}"
    if reads:
        if later:
            return "read", f"{node} reads it; still needed by {later[0][1]} at step {later[0][0]}"
        if buffer.to_end:
            return "read", f"{node} reads it; a graph output, kept to the end"
        return "read, last use", f"{node} is its last reader: freed after step {step}"
    if later:
        return f"held for step {later[0][0]}", f"waiting for {later[0][1]} at step {later[0][0]}"
    if buffer.to_end:
        return "graph output", "a graph output, kept to the end"
    return "held", "live at this step"


def _buffer_phrase(name: str, buffer, tensors: dict, node: str, records: dict) -> str:
    """``conv2d_0's output``, ``its own output``, ``the graph input x``, ``concat_0's buffer``."""
    tensor = tensors.get(name)
    producer = tensor.producer if tensor else None
    if buffer is not None and buffer.from_start:
        return f"the graph input {name}"
    if buffer is not None and not buffer.tensors:  # an If/Loop/Scan's scratch
        return "its subgraph's working set" if node in buffer.allocators else f"{name}"
    if producer in records and records[producer].op_type == "Concat" and producer != node:
        return f"{producer}'s concat buffer"
    if producer == node:
        return "its own output"
    return f"{producer}'s output" if producer else name


def _join(items: list[str]) -> str:
    if len(items) <= 2:
        return " and ".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _memory_explanation(memory: dict, *, problem_buffers: dict, position: dict[str, int], records: dict,
                        tensors: dict, same_order: bool, concats: int) -> str:
    """One plain-language paragraph from the memory numbers (the template only places it)."""
    peak, step, node = memory["peak_bytes"], memory["peak_step"], memory["peak_node"]
    op = records[node].op_type if node in records else "?"
    read, written, held = [], [], []  # (phrase, bytes)
    for entry in memory["peak_tensors"]:
        buffer = problem_buffers.get(entry["name"])
        item = (_buffer_phrase(entry["name"], buffer, tensors, node, records), entry["bytes"])
        if buffer is not None and node in buffer.allocators:
            written.append(item)
        elif buffer is not None and node in buffer.readers:
            read.append(item)
        else:
            later = sorted((position[r], r) for r in buffer.readers if position.get(r, -1) > step) if buffer else []
            held.append((item[0], item[1], f", needed by {later[0][1]} at step {later[0][0]}" if later else ""))

    def sized(items) -> str:
        return _join([f"{phrase} ({iec(size)}{extra[0] if extra else ''})" for phrase, size, *extra in items])

    others = [phrase for phrase, *_ in read + held if phrase != "its own output"]
    if len(others) > 3:
        others = [f"{len(others)} other buffers"]
    text = f"At step {step}, {node} ({op}) runs"
    if others:
        text += f" while {_join(others)} {'is' if len(others) == 1 and 'buffers' not in others[0] else 'are'} still live"
    actions = []
    if read:
        actions.append(f"it reads {sized(read)}")
    if written:
        actions.append(("and writes " if read else "it writes ") + sized(written))
    if read and written:
        actions[0:2] = [actions[0] + " " + actions[1]]
    if len(held) > 2:
        waiting = sum(size for _, size, _ in held)
        actions.append(f"{len(held)} more ({iec(waiting)}) wait for later nodes")
    elif held:
        actions.append(f"{sized(held)} {'waits' if len(held) == 1 else 'wait'} for a later node")
    exact = f"{iec(peak)} ({peak:,} bytes)" if peak >= 1024 else f"{peak:,} bytes"
    text += (": " + "; ".join(actions) if actions else "") + f". That is {exact} live in all."
    ties = [e["step"] for e in memory["timeline"] if e["live_bytes"] == peak and e["step"] != step]
    if ties:
        listed = _join([str(t) for t in ties[:6]]) + (f" and {len(ties) - 6} more" if len(ties) > 6 else "")
        text += f" The same total recurs at step{'s' if len(ties) > 1 else ''} {listed}."

    best, method = memory["best_order_peak_bytes"], memory["best_order_method"]
    lower, lower_node = memory["largest_layer_bytes"], memory["largest_layer_node"]
    if best < peak:
        saved = peak - best
        how = {"exact": "exact search", "heuristic": "greedy heuristic"}.get(method, "")
        text += (f" Reordering helps: the best order{' (' + how + ')' if how else ''} peaks at {iec(best)} "
                 f"({best:,} bytes), {iec(saved)} ({_percent(saved / peak)}) lower, at step "
                 f"{memory['best_order_peak_step']} ({memory['best_order_peak_node']}).")
        if best <= lower:
            text += f" That meets the largest-layer lower bound ({lower_node}), so no order can do better."
    elif peak <= lower:
        who = "this node" if lower_node == node else lower_node
        text += (f" No execution order can go lower: {who} alone needs {iec(lower)} for its inputs and outputs "
                 "(the largest-layer lower bound), so the model's own order is already optimal.")
    elif method == "exact":
        text += (f" An exact search over execution orders found none with a lower peak; the largest-layer "
                 f"lower bound is {iec(lower)} ({lower_node}).")
    else:
        text += f" The search found no order with a lower peak ({memory['best_order_note']})."
    if concats:
        copy = memory["concat_copy_peak_bytes"]
        if copy == peak:
            text += (" Concat inputs are written straight into the concat buffer; copying them instead would "
                     "leave this peak unchanged.")
        else:
            text += (" Concat inputs are written straight into the concat buffer; if Concat copied them, the peak "
                     f"would be {iec(copy)} ({copy:,} bytes, +{iec(copy - peak)}).")
    return text


def _short(name: str) -> str:
    return name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"


def _chart_context(chart: TimelineChart, memory: dict, records: dict, same_order: bool) -> dict:
    """Strings for the timeline SVG: every coordinate already a number, every title already text."""
    model_steps, best_steps = memory["timeline"], memory["best_order_timeline"]
    plot = chart.plot
    model, best = chart.series

    def op_of(node: str) -> str:
        return records[node].op_type if node in records else "?"

    def describe(steps: list[dict], first: int, last: int) -> str:
        if first == last:
            entry = steps[first]
            return f"{entry['node']} ({op_of(entry['node'])}): {iec(entry['live_bytes'])} ({entry['live_bytes']:,} bytes)"
        top = max(steps[first:last + 1], key=lambda e: (e["live_bytes"], -e["step"]))
        return (f"max {iec(top['live_bytes'])} ({top['live_bytes']:,} bytes) at step {top['step']}, "
                f"{top['node']} ({op_of(top['node'])})")

    columns = []
    for column in chart.columns:
        head = f"step {column.first}" if column.first == column.last else f"steps {column.first}–{column.last}"
        lines = [head, "model order: " + describe(model_steps, column.first, column.last)]
        if same_order:
            lines.append("best order: the same")
        elif column.first < len(best_steps):
            lines.append("best order: " + describe(best_steps, column.first, min(column.last, len(best_steps) - 1)))
        columns.append({"x": svg_number(column.x), "width": svg_number(column.width), "title": "\n".join(lines)})

    markers = []
    peak_title = (f"Peak, model order: {memory['peak_bytes']:,} bytes ({iec(memory['peak_bytes'])}) at step "
                  f"{memory['peak_step']}, {memory['peak_node']}")
    if model.peak is not None:
        markers.append(_marker(model.peak, plot, "model", peak_title,
                               f"peak {iec(model.peak.value)} · step {model.peak.step} · {_short(memory['peak_node'])}"))
    if best.peak is not None and (best.peak.step, best.peak.value) != (model.peak.step, model.peak.value):
        title = (f"Peak, best order: {memory['best_order_peak_bytes']:,} bytes "
                 f"({iec(memory['best_order_peak_bytes'])}) at step {memory['best_order_peak_step']}, "
                 f"{memory['best_order_peak_node']}")
        label = f"best {iec(best.peak.value)} · step {best.peak.step} · {_short(memory['best_order_peak_node'])}"
        second = _marker(best.peak, plot, "best", title, label, near=best.peak.y - plot.top > 30)
        markers.append(second)
    series = [
        {"key": "model", "d": model.path,
         "title": f"Model order: live activation bytes per step (peak {memory['peak_bytes']:,} bytes)"},
        {"key": "best", "d": best.path,
         "title": f"Best order: live activation bytes per step (peak {memory['best_order_peak_bytes']:,} bytes)"
                  + (", the same order as the model's" if same_order else "")},
    ]
    references = [
        {"y": svg_number(line.y), "label": f"{line.label} · {iec(line.value)}",
         "title": f"{line.label}: {int(line.value):,} bytes on chip"}
        for line in chart.references if line.y is not None
    ]
    off_scale = [f"{line.label} ({iec(line.value)})" for line in chart.references if line.y is None]
    return {
        "width": svg_number(chart.width),
        "height": svg_number(chart.height),
        "view_box": f"0 0 {svg_number(chart.width)} {svg_number(chart.height)}",
        "left": svg_number(plot.left), "right": svg_number(plot.right), "top": svg_number(plot.top), "bottom": svg_number(plot.bottom),
        "plot_height": svg_number(plot.height),
        "tick_end": svg_number(plot.bottom + 5),
        "middle_x": svg_number((plot.left + plot.right) / 2),
        "middle_y": svg_number((plot.top + plot.bottom) / 2),
        "x_label_y": svg_number(chart.height - 8),
        "y_ticks": [{"y": svg_number(t.position), "label": t.label} for t in chart.y_ticks],
        "x_ticks": [{"x": svg_number(t.position), "label": t.label} for t in chart.x_ticks],
        "area": model.area,
        # identical orders: the best-order line goes under the model line rather than muddying it
        "series": series[::-1] if same_order else series,
        "markers": markers,
        "references": references,
        "off_scale": ", ".join(off_scale),
        "columns": columns,
        "steps": f"{chart.steps:,}",
        "summary": (f"Live activation bytes at each of {chart.steps:,} steps, model order"
                    + (" (the best order is the same)" if same_order else " and best order")
                    + f"; peak {iec(memory['peak_bytes'])} at step {memory['peak_step']}."),
    }


def _marker(point, plot, key: str, title: str, label: str, near: bool = False) -> dict:
    """A peak marker with its label in the top margin (or just above the point when ``near``),
    flipped to the left of the point in the right part of the plot."""
    right_half = point.x > plot.left + plot.width * 0.62
    label_y = point.y - 12 if near else plot.top - 9
    return {
        "key": key,
        "cx": svg_number(point.x),
        "cy": svg_number(point.y),
        "leader_y": svg_number(label_y + 3),
        "label_x": svg_number(point.x - 7 if right_half else point.x + 7),
        "label_y": svg_number(label_y),
        "anchor": "end" if right_half else "start",
        "title": title,
        "label": label,
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
