"""The JSON document (schema ``onnxroof/1``): raw numbers, units in the key names.

Counts are exact integers and bytes are bytes; README documents every key. Later stages add
"memory" and "targets" to the same document.
"""

from __future__ import annotations

import json
from dataclasses import fields
from itertools import islice
from json.encoder import encode_basestring_ascii as _string  # what json.dumps writes for a str
from operator import attrgetter
from typing import TYPE_CHECKING, Iterable, Iterator

from .. import __version__
from ..dtypes import dtype_name

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..graph import NodeRecord
    from ..shapes import TensorInfo

SCHEMA = "onnxroof/1"

CONVENTIONS = {
    "flops_per_mac": 2,
    "mac_flops": "2 x MACs: the multiply-accumulate work most papers quote",
    "flops": "2 x MACs + every other element operation, counted per op as docs/ops.md lists",
    "bias": "a bias add is folded into the accumulate and not counted again",
    "bytes": "each tensor in its own ONNX element type (sub-byte types packed, rounded up per tensor)",
    "params": "elements of the stored roots (initializers, Constant and ConstantOfShape tensors) that a costed "
    "node reads directly or through nodes computed only from constants, each counted once at its stored size; "
    "a tensor computed from constants is never itself a parameter; shape and setting inputs (Reshape's shape, "
    "Slice's starts, Gather's indices, ...) are not parameters",
    "param_bytes": "stored bytes of those roots: an int8 weight behind DequantizeLinear counts its int8 bytes",
    "weight_bytes_read": "bytes of constants the nodes read per run (per node: weight_bytes): a Gather reads its "
    "rows, a node reading a folded tensor reads its folded size",
    "intensity": "FLOPs / (weight_bytes + input_bytes + output_bytes): everything streamed from DRAM",
    "count_prefixes": "SI: k = 1e3, M = 1e6, G = 1e9, T = 1e12",
    "byte_prefixes": "IEC: KiB = 2^10, MiB = 2^20, GiB = 2^30 bytes",
}


def tensor_entry(info: "TensorInfo") -> dict:
    return {"name": info.name, "shape": None if info.shape is None else list(info.shape), "dtype": dtype_name(info.dtype)}


def node_entry(record: "NodeRecord") -> dict:
    # a new field read from the record joins the key in _encoded_nodes, which shares encoded text
    # between nodes with equal keys
    entry = {
        "index": record.index,
        "name": record.name,
        "op_type": record.op_type,
        "domain": record.domain,
        "family": record.family,
        "counted": record.counted,
        "status": record.status,
        "reason": record.reason,
        "dtype": record.dtype,
        "inputs": record.inputs,
        "outputs": record.outputs,
        "view": record.view,
        "input_shapes": record.input_shapes,
        "output_shapes": record.output_shapes,
        "macs": record.macs,
        "mac_flops": record.mac_flops,
        "flops": record.flops,
        "params": record.params,
        "weight_bytes": record.weight_bytes,
        "input_bytes": record.input_bytes,
        "output_bytes": record.output_bytes,
        "intensity": record.intensity,
        "formula": record.formula,
    }
    if record.subgraphs:
        entry["subgraphs"] = {attribute: subgraph_entry(sub) for attribute, sub in record.subgraphs.items()}
    return entry


def subgraph_entry(subgraph) -> dict:
    return {
        "macs": subgraph.macs,
        "flops": subgraph.flops,
        "params": subgraph.params,
        "weight_bytes": subgraph.weight_bytes,
        "nodes": [node_entry(r) for r in subgraph.records],
    }


def to_document(analysis: "Analysis", encoded: bool = False) -> dict:
    """The document as plain values; with ``encoded``, its per-node lists (nodes, memory
    timelines, each target's nodes) are compact JSON chunks, written once by :func:`document_json`."""
    model, totals = analysis.model, analysis.totals
    return {
        "schema": SCHEMA,
        "version": __version__,
        "conventions": CONVENTIONS,
        "model": {
            "name": model.name,
            "path": model.path,
            "file_bytes": model.file_bytes,
            "producer": model.producer,
            "doc_string": model.doc_string,
            "ir_version": model.ir_version,
            "opset": model.opset,
            "opsets": model.opsets,
            "nodes": model.node_count,
            "inputs": [tensor_entry(i) | ({"value": analysis.input_values[i.name]} if i.name in analysis.input_values
                                          else {}) for i in analysis.inputs],
            "outputs": [tensor_entry(o) for o in analysis.outputs],
        },
        "complete": analysis.complete,
        "warnings": analysis.warnings,
        "unresolved_dims": [
            {"input": d.input_name, "axis": d.axis, "symbol": d.symbol, "fix": d.fix} for d in analysis.unresolved_dims
        ],
        "totals": {
            "macs": totals.macs,
            "mac_flops": totals.mac_flops,
            "flops": totals.flops,
            "params": totals.params,
            "param_bytes": totals.param_bytes,
            "weight_bytes_read": totals.weight_bytes_read,
            "nodes": totals.nodes,
            "counted_nodes": totals.counted_nodes,
            "unsupported": totals.unsupported,
            "not_counted": totals.not_counted,
            "uncounted_bytes": totals.uncounted_bytes,
        },
        "dtype": analysis.dtype,
        "batch": analysis.batch,
        "memory": memory_entry(analysis, encoded),
        "targets": [target_entry(report, encoded) for report in analysis.targets],
        "llm": None if analysis.llm is None else {
            "phase": analysis.llm.phase,
            "new_tokens": analysis.llm.new_tokens,
            "context": analysis.llm.context,
            "layers": analysis.llm.layers,
            "kv_cache_read_bytes": analysis.llm.kv_read_bytes,
            "kv_cache_write_bytes": analysis.llm.kv_write_bytes,
            "kv_cache_bytes_per_token": analysis.llm.kv_bytes_per_token,
            "kv_cache_write_mode": analysis.llm.kv_write_mode,
            "kv_heads": analysis.llm.kv_heads,
            "head_size": analysis.llm.head_size,
            "kv_cache_bytes_at_context": analysis.llm.kv_cache_bytes,
            "tokens_per_s": analysis.llm.tokens_per_s,
            "time_to_first_token_s": analysis.llm.time_to_first_token_s,
            "recognised": list(analysis.llm.recognised),
        },
        "nodes": Encoded(_encoded_nodes(analysis.nodes)) if encoded else [node_entry(r) for r in analysis.nodes],
    }


def memory_entry(analysis: "Analysis", encoded: bool = False) -> dict:
    memory = analysis.memory
    model, best = memory.model_order, memory.best.schedule
    shared = encoded and best is model  # see best_order_timeline
    timeline = _timeline(model, encoded, twice=shared)
    return {
        "peak_bytes": model.peak_bytes,
        "peak_step": model.peak_step,
        "peak_node": model.peak_node,
        "peak_tensors": [{"name": name, "bytes": size} for name, size in model.peak_tensors],
        "largest_layer_bytes": memory.largest_layer_bytes,
        "largest_layer_node": memory.largest_layer_node,
        "concat_copy_peak_bytes": memory.concat_copy_peak_bytes,
        "elementwise_in_place": memory.elementwise_in_place,
        "order": "model",
        "best_order_peak_bytes": best.peak_bytes,
        "best_order_peak_step": best.peak_step,
        "best_order_peak_node": best.peak_node,
        "best_order_method": memory.best.method,
        "best_order_note": memory.best.note,
        "best_order": list(best.order),
        "timeline": timeline,
        # when no order beats the model's, the best order is the model order's very schedule: its
        # encoded timeline is written twice, from the same chunks
        "best_order_timeline": timeline if shared else _timeline(best, encoded),
    }


def _timeline(schedule, encoded: bool, twice: bool = False) -> "list[dict] | Encoded":
    steps = enumerate(zip(schedule.order, schedule.live_bytes))
    if encoded:  # steps and live bytes are ints, which format as JSON writes them
        return Encoded((f'{{"step":{step},"node":{_string(node)},"live_bytes":{live}}}' for step, (node, live) in steps),
                       keep=twice)
    return [{"step": step, "node": node, "live_bytes": live} for step, (node, live) in steps]


class Encoded:
    """A list already written as compact JSON, one item at a time: :func:`compact_chunks`
    passes it on in chunks of a few hundred items, so a big model's document never sits in
    memory whole (each fresh megabyte costs page faults, not just copying). A list the document
    holds twice (``keep``) keeps its chunks from the first writing for the second."""

    def __init__(self, items: Iterable[str], keep: bool = False):
        self.items = iter(items)
        self.kept: list[str] | None = [] if keep else None

    def chunks(self, batch: int = 512) -> Iterator[str]:
        if self.kept:  # written once already
            yield from self.kept
            return
        for chunk in self._encode(batch):
            if self.kept is not None:
                self.kept.append(chunk)
            yield chunk

    def _encode(self, batch: int) -> Iterator[str]:
        # the separators are chunks of their own: prefixing one to a joined batch would copy it again
        separator = "["
        while part := list(islice(self.items, batch)):
            yield separator
            yield ",".join(part)
            separator = ","
        yield "[]" if separator == "[" else "]"


_compact = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def compact_chunks(value: object) -> Iterator[str]:
    """``json.dumps(value, separators=(",", ":"))``, byte for byte, in chunks, for a document
    whose dicts (and lists of dicts) may hold :class:`Encoded` lists."""
    if isinstance(value, Encoded):
        yield from value.chunks()
    elif isinstance(value, dict) and value and all(type(key) is str for key in value):
        separator = "{"
        for key, item in value.items():
            yield f"{separator}{_string(key)}:"
            separator = ","
            yield from compact_chunks(item)
        yield "}"
    elif isinstance(value, list) and value and isinstance(value[0], dict):  # the targets; long lists are Encoded
        separator = "["
        for item in value:
            yield separator
            separator = ","
            yield from compact_chunks(item)
        yield "]"
    else:
        yield _compact(value)


def document_json(analysis: "Analysis", compact: bool) -> Iterable[str]:
    """The document as JSON text, in chunks to write one after the other: indented, or on one
    line for a big model (indenting makes Python's encoder ten times slower)."""
    if compact:
        yield from compact_chunks(to_document(analysis, encoded=True))
        yield "\n"
    else:
        # a document is plain values from an analysis, and no container in it holds itself: skip
        # the encoder's cycle check
        yield json.dumps(to_document(analysis), indent=2, check_circular=False) + "\n"


def _encoded_nodes(records: list["NodeRecord"]) -> Iterator[str]:
    """The nodes as compact JSON, one by one. A node's index, name, inputs and outputs are its own; the
    rest (op, status, shapes, numbers, formula) repeats wherever a model repeats a layer, so each
    distinct rest is encoded once."""
    first: dict[tuple, tuple] = {}  # the hashable fields -> the first such node's shapes and shared texts
    by_shapes: dict[tuple, tuple[str, str]] = {}  # the hashable fields and the shapes' repr -> shared texts
    for r in records:
        if r.subgraphs:
            yield _compact(node_entry(r))
            continue
        # everything node_entry reads but the node's own fields and the shapes (counted, mac_flops and
        # intensity follow from these)
        key = (r.op_type, r.domain, r.family, r.status, r.reason, r.dtype, r.view, r.macs, r.flops, r.params,
               r.weight_bytes, r.input_bytes, r.output_bytes, r.formula)
        known = first.get(key)
        if known is None:
            known = first[key] = (r.input_shapes, r.output_shapes, _shared_fields(r))
        shared = known[2]
        # shapes are lists, compared rather than hashed: equal lists of dims (ints, names, None) encode alike
        if known[0] != r.input_shapes or known[1] != r.output_shapes:
            # the same op and numbers on other shapes (views, shape arithmetic): the shapes' text joins the key
            shaped = (key, repr(r.input_shapes), repr(r.output_shapes))
            shared = by_shapes.get(shaped)
            if shared is None:
                shared = by_shapes[shaped] = _shared_fields(r)
        # most nodes have one output and many one input: one encoding call then, no map and join
        inputs, outputs = r.inputs, r.outputs
        inputs_text = _string(inputs[0]) if len(inputs) == 1 else ",".join(map(_string, inputs))
        outputs_text = _string(outputs[0]) if len(outputs) == 1 else ",".join(map(_string, outputs))
        yield (f'{{"index":{r.index},"name":{_string(r.name)},{shared[0]},'
               f'"inputs":[{inputs_text}],"outputs":[{outputs_text}],{shared[1]}}}')


def _shared_fields(record: "NodeRecord") -> tuple[str, str]:
    """A node's compact JSON between "name" and "inputs", and after "outputs", without the
    separating commas: node_entry's fields in node_entry's order."""
    entry = node_entry(record)
    keys = list(entry)
    between, after = keys[keys.index("name") + 1:keys.index("inputs")], keys[keys.index("outputs") + 1:]
    return (_compact({key: entry[key] for key in between})[1:-1], _compact({key: entry[key] for key in after})[1:-1])


def placement_entry(point) -> dict:
    return {
        "roof": point.roof,
        "flops": point.flops,
        "dram_bytes": point.dram_bytes,
        "onchip_bytes": point.onchip_bytes,
        "intensity": point.intensity,
        "peak_flops_per_s": point.peak_flops_per_s,
        "attainable_flops_per_s": point.attainable_flops_per_s,
        "compute_s": point.compute_s,
        "memory_s": point.memory_s,
        "onchip_s": point.onchip_s,
        "time_s": point.time_s,
        "latency_s": point.time_s,
        "bound": point.bound,
        "overhead_s": point.overhead_s,
        "percent_of_peak": point.percent_of_peak,
    }


def target_entry(report, encoded: bool = False) -> dict:
    target = report.target
    return {
        "name": target.name,
        "description": target.description,
        "path": target.path,
        "dtype": report.dtype,
        "batch": report.batch,
        "roofs": {
            roof: {"peak_flops_per_s": figure.value, "ridge_flops_per_byte": target.ridge(roof), "tag": figure.tag,
                   "source": figure.source}
            for roof, figure in target.peak_ops_per_s.items()
        },
        "dram_bytes_per_s": target.dram_bytes_per_s.value,
        "onchip_bytes": target.onchip_bytes.value if target.onchip_bytes else None,
        "onchip_bytes_per_s": target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None,
        "node_overhead_s": target.node_overhead_s.value if target.node_overhead_s else None,
        "latency_s": report.latency_s,
        "throughput_per_s": report.throughput_per_s,
        "utilization": report.utilization,
        "energy_j": report.energy_j,
        "energy_split": report.energy_split_j,
        "edp_js": report.edp_js,
        "time_share": report.time_share,
        "activations_on_chip": report.activations_on_chip,
        "spilled_tensors": report.spilled,
        "spill_bytes": report.spill_bytes,
        "notes": report.notes,
        "model_point": placement_entry(report.model_point),
        "nodes": Encoded(_encoded_target_nodes(report.nodes)) if encoded else [target_node_entry(n) for n in report.nodes],
    }


def target_node_entry(node) -> dict:
    # the name comes first: _encoded_target_nodes writes it, and shares the rest between nodes
    return {"name": node.name, "op_type": node.op_type, "dtype": node.dtype, "spill_bytes": node.spill_bytes,
            "energy_j": node.energy_j, **placement_entry(node.placement)}


def _encoded_target_nodes(nodes: list) -> Iterator[str]:
    """A target's nodes as compact JSON, one by one. A node's name is its own; its op, type,
    energy and placement repeat wherever a model repeats a layer, so each distinct rest is
    encoded once."""
    if not nodes:
        return
    # every field of a placement: placement_entry reads them or what follows from them
    placement_fields = attrgetter(*(f.name for f in fields(nodes[0].placement)))
    shared: dict[tuple, str] = {}
    for n in nodes:
        key = (n.op_type, n.dtype, n.spill_bytes, tuple(n.energy_j.items()), placement_fields(n.placement))
        rest = shared.get(key)
        if rest is None:
            entry = target_node_entry(n)
            del entry["name"]
            rest = shared[key] = _compact(entry)[1:-1]
        yield f'{{"name":{_string(n.name)},{rest}}}'


def sweep_document(points) -> dict:
    """One full document per sweep point, with the point's values."""
    return {
        "schema": "onnxroof-sweep/1",
        "version": __version__,
        "symbols": list(points[0].values) if points else [],
        "points": [{"values": point.values, **to_document(point.analysis)} for point in points],
    }
