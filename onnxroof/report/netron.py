"""The Netron attachment: onnxroof's figures in Netron's sidebar, opened after the model.

Netron (source/view.js, ``metadata.Attachment``) reads a ``.json`` file whose ``signature`` is
``netron:attachment`` and whose ``metadata`` and ``metrics`` are lists of items ``{"kind", "target",
"name", "value", "type"}``. An item belongs to the model (``kind`` "model", ``target`` ""), a node
(``target`` its name's first line) or a value (a tensor's name); Netron lists a node's items under
"Metrics" in its sidebar, one row per ``name`` (the last item of a name wins).

Per node: MACs, FLOPs, parameters, bytes and intensity, and per target its kernel, the node's time,
its share of the latency and the kernel's bound. Per model: the totals, and per target the latency
and the verdict (the first finding). A node Netron cannot find by name (none given, or a name
several nodes share) gets its figures on its first output's value instead; the model's metadata
counts them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..core.units import intensity, seconds
from .bounds import bound_label
from .formatting import share_percent
from .overlays import NodeOnTarget, placed_nodes, verdicts, viewer_names

if TYPE_CHECKING:
    from ..cost.records import NodeRecord
    from ..findings import Review
    from ..result import Analysis

SIGNATURE = "netron:attachment"


def netron_attachment(analysis: Analysis, review: Review | None = None) -> dict:
    """The attachment as a JSON-ready dict; each target's verdict from ``review`` (the findings
    stage's; None, as under --no-findings: no verdict)."""
    records = analysis.nodes
    names = viewer_names(records)
    placed = placed_nodes(analysis)
    metrics = _model_items(analysis, review)
    by_output = 0
    for record in records:
        kind, target = ("node", names[record.name]) if record.name in names else ("value", _first_output(record))
        if not target:
            continue
        by_output += kind == "value"
        metrics += [_item(kind, target, name, value) for name, value in _node_figures(record, placed)]
    metadata = [_item("model", "", "onnxroof", "figures per node under Metrics (onnxroof export --to netron)")]
    if by_output:
        metadata.append(
            _item(
                "model",
                "",
                "onnxroof: nodes shown on their output",
                f"{by_output} (no name of their own, or a name several nodes share)",
            )
        )
    return {"signature": SIGNATURE, "metadata": metadata, "metrics": metrics}


def render_netron(analysis: Analysis, review: Review | None = None) -> str:
    """The attachment's text: one item a line, so that two of them diff line by line."""
    attachment = netron_attachment(analysis, review)
    parts = [f' "signature": {json.dumps(attachment["signature"])}']
    for key in ("metadata", "metrics"):
        items = ",\n".join(f"  {json.dumps(item, ensure_ascii=False)}" for item in attachment[key])
        parts.append(f' "{key}": [\n{items}\n ]')
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _item(kind: str, target: str, name: str, value: object) -> dict:
    return {"kind": kind, "target": target, "name": name, "value": value, "type": "attribute"}


def _first_output(record: NodeRecord) -> str:
    return next((name for name in record.outputs if name), "")


def _node_figures(record: NodeRecord, placed: dict[str, dict[str, NodeOnTarget]]) -> list[tuple[str, object]]:
    """(metric, value) of one node: its own figures, then its kernel on each target."""
    figures: list[tuple[str, object]] = [
        ("MACs", record.macs),
        ("FLOPs", record.flops),
        ("parameters", record.params),
        ("bytes", record.memory_bytes),
        ("intensity", f"{intensity(record.intensity)} FLOP/byte"),
    ]
    if not record.counted:
        figures.append(("not counted", record.reason or str(record.status)))
    for target, nodes in placed.items():
        on = nodes.get(record.name)
        if on is None:
            continue
        kernel = on.kernel if on.kernel_op == record.op_type else f"{on.kernel} ({on.kernel_op})"
        figures += [
            (f"{target}: kernel", kernel),
            (f"{target}: time", seconds(on.time_s)),
            (f"{target}: share", share_percent(on.share)),
            (f"{target}: bound", bound_label(on.bound)),
        ]
    return figures


def _model_items(analysis: Analysis, review: Review | None) -> list[dict]:
    t = analysis.totals
    items = [
        _item("model", "", name, value)
        for name, value in (
            ("MACs", t.macs),
            ("FLOPs", t.flops),
            ("parameters", t.params),
            ("parameter bytes", t.param_bytes),
            ("nodes", t.nodes),
            ("counted nodes", t.counted_nodes),
        )
    ]
    found = verdicts(analysis, review) if review is not None else {}
    for report in analysis.targets:
        name = report.target.name
        items.append(_item("model", "", f"{name}: latency", f"{seconds(report.latency_s)} ({report.latency_kind})"))
        if review is not None:
            finding = found.get(name)
            items.append(_item("model", "", f"{name}: verdict", finding.title if finding else "nothing to change"))
    return items
