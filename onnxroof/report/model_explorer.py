"""Model Explorer node data: onnxroof's figures as colours on the graph, one file per target and
metric, loaded beside the model (its "Node data" panel, or ``--node_data_paths``).

The format (ai-edge-model-explorer's ``node_data_builder``: ``ModelNodeData`` of ``GraphNodeData``):
``{GRAPH_ID: {"results": {KEY: {"value": V, "bgColor": ...}}, "gradient": [...], ...}}``. The web app
finds a result's node by KEY, as an output tensor's ``tensor_name`` or else as the node's id; the ONNX
adapter (model-explorer-onnx) gives each node its name as id and the graph's name, as stored, as the
graph's id, and records output tensors as ``__tensor_tag``, which the lookup does not
read: so the results are keyed by node name. The nodes the adapter names itself (none given, or
repeated: onnx_ir's NameFixPass) are keyed by their first output tensor, which adapters that record
``tensor_name`` find. Group nodes (the ``/``-scoped layers) show the web app's own aggregates:
sums and shares for numbers, the mix of labels for strings.

Two metrics per target: ``share`` (the node's share of the latency, in percent, on a white-to-red
gradient) and ``bound`` (the kernel's bound as a label, in the report's bound colours).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .bounds import bound_label
from .graph.svg import BOUND_COLOURS
from .overlays import NodeOnTarget, placed_nodes, viewer_names

if TYPE_CHECKING:
    from ..result import Analysis

METRICS = ("share", "bound")
# white at the smallest share, red at the largest (the report's share colours)
SHARE_GRADIENT = [
    {"stop": 0, "bgColor": "#ffffff"},
    {"stop": 0.5, "bgColor": "#ffa94d"},
    {"stop": 1, "bgColor": "#c92a2a"},
]


def node_data_files(analysis: Analysis) -> dict[tuple[str, str], dict]:
    """(target, metric) -> its ModelNodeData as a JSON-ready dict, in target order."""
    placed = placed_nodes(analysis)
    keys = _result_keys(analysis)
    graph = analysis.model.graph_name  # "" for a graph without a name, as onnx_ir reads it
    files = {}
    for target, nodes in placed.items():
        files[(target, "share")] = {graph: _share_data(target, nodes, keys)}
        files[(target, "bound")] = {graph: _bound_data(target, nodes, keys)}
    return files


def render_node_data(data: dict) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _result_keys(analysis: Analysis) -> dict[str, str]:
    """node name -> the key Model Explorer finds it by (the module docstring says which)."""
    names = viewer_names(analysis.nodes)
    return {r.name: names.get(r.name) or next((o for o in r.outputs if o), r.name) for r in analysis.nodes}


def _share_data(target: str, nodes: dict[str, NodeOnTarget], keys: dict[str, str]) -> dict:
    # percent, rounded to what a colour and a table show: the aggregates on group nodes add them up
    results = {keys[name]: {"value": round(100 * on.share, 4)} for name, on in nodes.items() if name in keys}
    return {"name": f"{target}: share of latency (%)", "results": results, "gradient": SHARE_GRADIENT}


def _bound_data(target: str, nodes: dict[str, NodeOnTarget], keys: dict[str, str]) -> dict:
    results = {}
    for name, on in nodes.items():
        if name in keys:
            fill, text = BOUND_COLOURS.get(on.bound, BOUND_COLOURS["none"])
            results[keys[name]] = {"value": bound_label(on.bound), "bgColor": fill, "textColor": text}
    return {
        "name": f"{target}: bound",
        "results": results,
        "showExpandedSummaryOnGroupNode": True,
        "showLabelCountColumnsInChildrenStatsTable": True,
    }
