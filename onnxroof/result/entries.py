"""The JSON entries of an analysis's records (schema ``onnxroof/1``): a tensor, a node (and its
subgraphs), a target with its kernels and their placements, each as plain values or, for the long
lists, as JSON chunks written once and shared between equal entries (``encoded``). The document
that holds them is the package's :func:`~onnxroof.result.to_document`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import fields
from json.encoder import encode_basestring_ascii as _string  # what json.dumps writes for a str
from operator import attrgetter
from typing import TYPE_CHECKING

from ..core.dtypes import dtype_name
from ..core.json_chunks import Encoded
from ..cost.records import NUMBERS
from ..roofline.target_schema import target_json

if TYPE_CHECKING:
    from ..core.tensors import TensorInfo
    from ..cost.records import NodeRecord

# json.dumps(value, separators=(",", ":")) without the cycle check: a document holds plain values only
compact_json = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def tensor_entry(info: TensorInfo) -> dict:
    return {
        "name": info.name,
        "shape": None if info.shape is None else list(info.shape),
        "dtype": dtype_name(info.dtype),
    }


def node_entry(record: NodeRecord) -> dict:
    # a new field read from the record joins the key in encoded_nodes, which shares encoded text
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
        "runs": subgraph.runs,
        "runs_reason": subgraph.runs_reason,
        "runs_bound": subgraph.runs_bound,  # as placed
        "nodes": [node_entry(r) for r in subgraph.records],
    }


def encoded_nodes(records: list[NodeRecord]) -> Iterator[str]:
    """The nodes as compact JSON, one by one. A node's index, name, inputs and outputs are its own; the
    rest (op, status, shapes, numbers, formula) repeats wherever a model repeats a layer, so each
    distinct rest is encoded once."""
    first: dict[tuple, tuple] = {}  # the hashable fields -> the first such node's shapes and shared texts
    by_shapes: dict[tuple, tuple[str, str]] = {}  # the hashable fields and the shapes' repr -> shared texts
    for r in records:
        if r.subgraphs:
            yield compact_json(node_entry(r))
            continue
        # everything node_entry reads but the node's own fields and the shapes (counted, mac_flops and
        # intensity follow from these)
        key = (r.op_type, r.domain, r.family, r.status, r.reason, r.dtype, r.view, *NUMBERS(r), r.formula)
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
        yield (
            f'{{"index":{r.index},"name":{_string(r.name)},{shared[0]},'
            f'"inputs":[{inputs_text}],"outputs":[{outputs_text}],{shared[1]}}}'
        )


def _shared_fields(record: NodeRecord) -> tuple[str, str]:
    """A node's compact JSON between "name" and "inputs", and after "outputs", without the
    separating commas: node_entry's fields in node_entry's order."""
    entry = node_entry(record)
    keys = list(entry)
    between, after = keys[keys.index("name") + 1 : keys.index("inputs")], keys[keys.index("outputs") + 1 :]
    return (
        compact_json({key: entry[key] for key in between})[1:-1],
        compact_json({key: entry[key] for key in after})[1:-1],
    )


def placement_entry(point) -> dict:
    return {
        "roof": point.roof,
        "flops": point.flops,
        "dram_bytes": point.dram_bytes,
        "onchip_bytes": point.onchip_bytes,
        "intensity": point.intensity,
        "onchip_intensity": point.onchip_intensity,  # FLOPs per on-chip byte: the on-chip level
        "peak_flops_per_s": point.peak_flops_per_s,
        "attainable_flops_per_s": point.attainable_flops_per_s,
        "compute_s": point.compute_s,
        "memory_s": point.memory_s,
        "onchip_s": point.onchip_s,
        "time_s": point.time_s,
        "latency_s": point.time_s,
        "bound": point.bound,
        "overhead_s": point.overhead_s,
        "subnormal_s": point.subnormal_s,  # a masked Softmax's underflowed exps on a CPU's slow path (in time_s)
        # DRAM time its compute did not hide (the target's dram_stall; in time_s)
        "exposed_dram_s": point.exposed_dram_s,
        "efficiency": point.efficiency,  # the fraction of the roofline the target's runtime reaches
        "op_efficiency": point.op_efficiency,  # its op's by_op figure, on the compute and on-chip roofs (None: none)
        "efficiency_rows": point.efficiency_rows,  # the output rows its efficiency was read at (by_rows; None: none)
        "efficiency_columns": point.efficiency_columns,  # the output columns it was read at (by_columns; None: none)
        "kernel_class": point.kernel_class,  # which efficiency figure applies
        "parallel_fraction": point.parallel_fraction,  # the share of the roof its work fills of the parallel units
        "percent_of_peak": point.percent_of_peak,
    }


def target_entry(report, encoded: bool = False, fit: dict | None = None) -> dict:
    """A target's entry; ``fit``: the findings stage's memory fit as plain values (None: not reviewed)."""
    target = report.target
    own = target_json(target)  # the target's own fields (roofline/target_schema.py), placed among the run's

    def take(*keys: str) -> dict:
        return {key: own.pop(key) for key in keys}

    return {
        **take("name", "description"),
        "path": target.path,
        "dtype": report.dtype,
        "batch": report.batch,
        **take("roofs", "dram_bytes_per_s", "onchip_bytes", "onchip_bytes_per_s", "node_overhead_s"),
        "launch_s": report.launch_s,  # what each kernel's launch cost in this run (cold when it streams past on chip)
        "run_overhead_s": report.run_s,  # what the run cost beyond its kernels (in latency_s)
        **take("dram_size_bytes"),  # device memory
        # efficiency (absent: 1.0, peak), by_op, by_rows and by_columns; the parallel units and their tiles
        **take("efficiency", "efficiency_by_op", "efficiency_by_rows", "efficiency_by_columns", "parallel"),
        **take("weights_resident"),  # parameters kept on chip between runs when they fit
        **{key: value for key, value in own.items() if key != "static_power_w"},  # fields added since
        "fusion": list(report.fusion),  # the rule sets the kernels ("nodes" below) were grouped under
        "latency_s": report.latency_s,
        # "bound" (peak figures, or complete false: nodes not counted; bound_reason says which): a run takes at least
        # latency_s; "forecast": measured efficiencies, within error_band (|predicted / measured - 1|) where stated
        "latency_kind": report.latency_kind,
        "bound_reason": report.bound_reason,
        "complete": report.complete,
        "uncounted_nodes": report.uncounted_nodes,
        "error_band": (
            {"value": report.band.value, "source": report.band.source, "roofs": list(target.error_band_roofs)}
            if report.band is not None
            else None
        ),
        "borrowed": {k: {"value": f.value, "source": f.source} for k, f in report.borrowed.items()},  # README: targets
        "throughput_per_s": report.throughput_per_s,
        "utilization": report.utilization,
        "energy_j": report.energy_j,
        "energy_kind": report.energy_kind,
        **take("static_power_w"),
        "energy_split": report.energy_split_j,
        "edp_js": report.edp_js,
        "time_share": report.time_share,
        "activations_on_chip": report.activations_on_chip,
        "weights_on_chip_bytes": report.weights_on_chip_bytes,
        "spilled_tensors": report.spilled,
        "spill_bytes": report.spill_bytes,
        # parameters + peak activations against the device memory, the largest batch and context that fit
        "fit": fit,
        # a layer pipeline's frames per second and latency apart (null: not a dataflow target); where
        # an Edge TPU's compiler cut the graph (null: not one, or nothing fell back to the CPU)
        "dataflow": dataflow_entry(report),
        "edge_tpu_cut": cut_entry(report.edge_tpu_cut),
        "notes": report.notes,
        "model_point": placement_entry(report.model_point),
        "nodes": (
            Encoded(_encoded_target_nodes(report.nodes)) if encoded else [target_node_entry(n) for n in report.nodes]
        ),
    }


def dataflow_entry(report) -> dict | None:
    """A dataflow target's pipeline (roofline/dataflow.py): fps and latency, each a bound (wherever
    the run's latency is one) or a forecast with its band, the contexts and their stages, what sets
    the frame rate."""
    timing = report.dataflow
    if timing is None:
        return None
    # peak figures (or nodes left out): bounds; the chip's constants fitted on measurements: forecasts; else estimates
    kind = "forecast" if timing.chip is None or timing.chip.forecast else "estimate"
    bound = timing.bound or report.latency_kind == "bound"
    band = report.band.value if report.band is not None else None
    return {
        "frames_per_s": timing.frames_per_s,
        "frames_per_s_kind": "upper bound" if bound else kind,
        "latency_s": timing.latency_s,  # one frame through every stage (and over the link)
        "latency_kind": "lower bound" if bound else kind,
        "error_band": band if kind == "forecast" and not bound else None,
        "context_count": len(timing.contexts),
        "frames_per_context_load": timing.group,
        "limiting": timing.limiting,  # a layer, or dataflow.NOT_A_STAGE's ("host link", "input rows", ...)
        "limiting_is_stage": timing.stage_limited,
        "limiting_share": timing.limiting_share,
        "heaviest_stage": timing.heaviest,
        "heaviest_work_share": timing.heaviest_share,
        "io_bytes": timing.io_bytes,
        "text": report.pipeline_words,
        "contexts": [
            {
                "weight_bytes": context.weight_bytes,
                "flops": context.flops,
                "slowest_stage_s": context.slowest_s,
                "fill_s": context.fill_s,
                "stages": [
                    {"name": layer.name, "flops": layer.flops, "weight_bytes": layer.weight_bytes, "stage_s": stage_s}
                    for layer, stage_s in zip(context.layers, context.stage_s)
                ],
            }
            for context in timing.contexts
        ],
    }


def cut_entry(cut) -> dict | None:
    """Where an Edge TPU's compiler cut the graph and what the host ran (roofline/edge_tpu.py)."""
    if cut is None:
        return None
    return {
        "first_unmapped": cut.first_unmapped,  # the node the graph is cut at
        "unmapped_ops": list(cut.unmapped_ops),  # the op types from it on that the compiler does not map
        "host": cut.host,
        "kernels": cut.kernels,
        "host_kernels": cut.host_kernels,  # the last host_kernels of them run on the host
        "host_s": cut.host_s,
        "cut_bytes": cut.cut_bytes,
        "transfer_s": cut.transfer_s,  # the cut's tensors over the host link, once
        "text": cut.words(),
    }


def target_node_entry(node) -> dict:
    # the name and the nodes come first: _encoded_target_nodes writes them, and shares the rest
    # between kernels; "nodes" are the ONNX nodes the kernel runs (its own name alone, unfused)
    return {
        "name": node.name,
        "nodes": node.nodes,
        "op_type": node.op_type,
        "dtype": node.dtype,
        "spill_bytes": node.spill_bytes,
        "energy_j": node.energy_j,
        **({"runs": node.runs} if node.runs > 1 else {}),
        **placement_entry(node.placement),
    }


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
        key = (n.op_type, n.dtype, n.spill_bytes, tuple(n.energy_j.items()), n.runs, placement_fields(n.placement))
        rest = shared.get(key)
        if rest is None:
            entry = target_node_entry(n)
            del entry["name"], entry["nodes"]
            rest = shared[key] = compact_json(entry)[1:-1]
        yield f'{{"name":{_string(n.name)},"nodes":[{",".join(map(_string, n.nodes))}],{rest}}}'
