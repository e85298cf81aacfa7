"""What an analysis returns, and its plain form (the JSON document, schema ``onnxroof/1``).

The result types sit above the stages whose records they hold (the cost graph's node records,
the memory report, each target's placement) and below everything that reads a result: the
orchestrator (``analysis.py``) builds an :class:`Analysis`, the renderers and ``diff``,
``compare`` and ``sweep`` read one. No stage imports this module: stages take and return data.

The document's numbers are raw (counts exact integers, bytes bytes), with units in the key
names; README documents every key. The entries of its records (a node, a tensor, a target) are
``entries.py``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from json.encoder import encode_basestring_ascii as _string  # what json.dumps writes for a str
from typing import TYPE_CHECKING

from ..core.errors import UsageError
from ..core.json_chunks import Encoded  # the document's long lists, written as JSON chunks (report/json.py)
from ..core.text import model_label
from ..core.version import __version__
from ..roofline.latency_bound import missing_text
from ..roofline.verdicts import BOUND_LABELS
from .entries import encoded_nodes, node_entry, target_entry, tensor_entry

if TYPE_CHECKING:  # types only: placing on targets is imported only when targets are given
    import networkx as nx

    from ..core.tensors import TensorInfo, UnresolvedDim
    from ..cost.kv_report import LLMReport
    from ..cost.records import CostGraph, NodeRecord, TensorRecord
    from ..frontend.fixed_batch import FixedBatch
    from ..memory.liveness import MemoryReport
    from ..roofline.devices import DevicePlan
    from ..roofline.placement import TargetReport


@dataclass(frozen=True)
class ModelFacts:
    name: str  # the file's stem (every PyTorch export's graph is "main_graph"), else the graph's name
    path: str | None
    file_bytes: int | None
    producer: str
    ir_version: int
    opset: int  # the default-domain opset
    opsets: dict[str, int]
    node_count: int
    doc_string: str
    graph_name: str = ""  # the graph's own name, as stored

    @property
    def label(self) -> str:
        return model_label(self.name, self.graph_name)


@dataclass
class Totals:
    """Sums over the node records (parameters counted once even when shared)."""

    macs: int
    mac_flops: int
    flops: int
    params: int  # elements of the stored roots (cost-model.md section 3), each once
    param_bytes: int  # their stored bytes
    weight_bytes_read: int  # bytes of constants the nodes read per run (a Gather its rows, a folded tensor its size)
    nodes: int
    counted_nodes: int
    unsupported: dict[str, int]  # op -> nodes with no cost rule (inside subgraphs too)
    not_counted: dict[str, int]  # op -> nodes not counted for another reason (unknown shape or value)
    uncounted_bytes: int  # bytes the uncounted nodes move: what the FLOP totals leave out


@dataclass(repr=False)
class Analysis:
    model: ModelFacts
    inputs: list[TensorInfo]  # the input shapes actually used
    outputs: list[TensorInfo]
    cost_graph: CostGraph  # the cost DAG: node records linked by tensor records
    nodes: list[NodeRecord]  # in execution (model) order (cost_graph.records)
    totals: Totals
    unresolved_dims: list[UnresolvedDim]
    memory: MemoryReport
    dtype: str = "model"  # "model" (as stored) or the type --dtype re-costed it in
    batch: int | None = None  # --batch, when given
    targets: list[TargetReport] = field(default_factory=list)
    llm: LLMReport | None = None  # KV cache and tokens/s, for a KV-cached decoder
    parallel: list[DevicePlan] = field(default_factory=list)  # per target, on several devices (--devices > 1)
    warnings: list[str] = field(default_factory=list)
    input_values: dict[str, list] = field(default_factory=dict)  # values given for inputs (--value), flattened
    assumed_dims: dict[str, int] = field(default_factory=dict)  # batch dims nobody gave, bound to 1
    fixed_batch: FixedBatch | None = None  # the batch a static export fixes in its inputs and shape constants
    # (the findings are not part of an analysis: the findings stage, onnxroof.findings.review, makes them from it)

    @property
    def tensors(self) -> dict[str, TensorRecord]:
        return self.cost_graph.tensors

    @cached_property
    def run_view(self) -> Analysis:
        """This analysis with the nodes a run executes (``cost_graph.running``: control-flow bodies in
        their node's place), which the outputs that show nodes one by one read. A plain Analysis: an
        API analysis's view keeps none of what its review is made from (onnxroof/api.py)."""
        running = self.cost_graph.running
        if running is self.cost_graph:
            return self
        kept = {f.name: getattr(self, f.name) for f in fields(Analysis)}
        return Analysis(**{**kept, "cost_graph": running, "nodes": running.records})

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The cost DAG as a networkx DiGraph (node attribute "record", edge attributes "tensors" and
        "bytes"), built on first use: no stage needs networkx, whose import alone takes 0.2 s."""
        return self.cost_graph.to_networkx()

    def to_pandas(self):
        """One row per node as a pandas DataFrame (``pip install pandas``): name, op, status,
        dtype, output shape, MACs, FLOPs, parameters, bytes, intensity, and per target the
        node's share of its kernel's time (``time_s[TARGET]``) and the kernel's bound."""
        from ..core.frames import data_frame
        from ..roofline.placement import node_times

        nodes = self.run_view.nodes  # the nodes a run executes, as the node tables list them
        times = node_times(self.targets)
        bounds = {
            report.target.name: {name: kernel.placement.bound for kernel in report.nodes for name in kernel.nodes}
            for report in self.targets
        }
        rows = []
        for r in nodes:
            row = {
                "name": r.name,
                "op_type": r.op_type,
                "domain": r.domain,
                "status": r.status,
                "dtype": r.dtype,
                "output_shape": r.output_shapes[0] if r.output_shapes else None,
                "macs": r.macs,
                "mac_flops": r.mac_flops,
                "flops": r.flops,
                "params": r.params,
                "weight_bytes": r.weight_bytes,
                "input_bytes": r.input_bytes,
                "output_bytes": r.output_bytes,
                "intensity": r.intensity,
            }
            for target in times:
                row[f"time_s[{target}]"] = times[target].get(r.name, 0.0)
                row[f"bound[{target}]"] = bounds[target].get(r.name)
            rows.append(row)
        return data_frame(rows, "Analysis.to_pandas")

    def __repr__(self) -> str:
        """One line: the model and its size, not the records (which run to megabytes)."""
        from ..core.units import si

        t, targets = self.totals, ", ".join(r.target.name for r in self.targets)
        return (
            f"<onnxroof.Analysis of {self.model.label}: {t.nodes:,} nodes, {si(t.params)} parameters, "
            f"{si(t.mac_flops)} MAC-FLOPs" + (f"; targets {targets}" if targets else "") + ">"
        )

    def __str__(self) -> str:
        """The short summary ``print(analysis)`` shows (:meth:`summary_text`); ``onnxroof.analyze``'s
        analysis adds each target's memory fit and the top findings."""
        return self.summary_text()

    def summary_text(self, fits: Sequence[bool | None] = (), findings: Sequence[str] = ()) -> str:
        """The short summary: the totals, the peak activation memory, each target's latency, said
        as the bound or the forecast it is, and, given them, whether the model fits in each
        target's memory (``fits``, per target in order; None: not checked) and the lines of what to
        change (``findings``, worded by the findings stage); ``onnxroof summary`` prints the full one."""
        from ..core.units import iec, seconds, si
        from ..roofline.targets import LatencyKind

        t = self.totals
        lines = [
            f"onnxroof: {self.model.label} ({t.nodes:,} nodes, {t.counted_nodes:,} counted)",
            f"  parameters {si(t.params)} · MACs {si(t.macs)} · MAC-FLOPs {si(t.mac_flops)} · FLOPs {si(t.flops)}",
            f"  peak activations {iec(self.memory.model_order.peak_bytes)} (model order)",
        ]
        for index, report in enumerate(self.targets):
            if report.latency_kind == LatencyKind.BOUND:
                reason = report.bound_reason or "peak figures"
                latency = f"latency ≥ {seconds(report.latency_s)} (a lower bound: {reason})"
            else:  # with its band where it holds, and a launch cost taken from other targets said
                band = (f" ±{report.band.value:.0%}" if report.band is not None else "") + " (a forecast"
                latency = f"latency {seconds(report.latency_s)}{band}{'; borrowed figures' * bool(report.borrowed)})"
            shares = sorted(report.time_share.items(), key=lambda kv: -kv[1])
            split = ", ".join(
                f"{BOUND_LABELS.get(bound, bound)} {share:.0%}" for bound, share in shares if share >= 0.05
            )
            fits_memory = fits[index] if index < len(fits) else None
            memory = (
                "" if fits_memory is None else "; fits in its memory" if fits_memory else "; does not fit in its memory"
            )
            split = "its pipeline's stages" if report.dataflow is not None else split  # not its kernels' roofs
            lines.append(f"  {report.target.name}: {latency}; time: {split}{memory}")
            if report.dataflow is not None and report.dataflow.frames_per_s:  # a layer pipeline: fps and latency apart
                lines.append(f"    pipeline: {report.pipeline_words}")
            if report.edge_tpu_cut is not None:
                lines.append(f"    graph cut: {report.edge_tpu_cut.words()}")
        lines += findings
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """What a notebook shows: the short summary (``onnxroof.analyze``'s analysis shows the
        report's view: the findings, the totals and each target's card and roofline)."""
        from html import escape

        return f"<pre>{escape(str(self))}</pre>"

    @property
    def complete(self) -> bool:
        """True when every node was costed and every input dim is bound."""
        return not (self.unresolved_dims or self.totals.unsupported or self.totals.not_counted)

    @property
    def uncounted_nodes(self) -> int:
        """Nodes with no cost: no rule for their op, or a shape or value nobody knows."""
        return sum(self.totals.unsupported.values()) + sum(self.totals.not_counted.values())

    def incomplete_text(self) -> str:
        """What the analysis leaves out and the first node's reason ("2,064 node(s) not counted
        (cannot reshape ...)"); "" when it is complete."""
        reason = next((r.reason for r in self.nodes if not r.counted and r.reason), "") if self.missing else ""
        return self.missing + (f" ({reason})" if reason else "")

    @property
    def missing(self) -> str:
        """What the analysis leaves out, in words ("2,064 node(s) not counted"); "" when complete."""
        return missing_text(self.uncounted_nodes, len(self.unresolved_dims))

    @property
    def bounds_note(self) -> str:
        """What an incomplete analysis's figures are, in the words every output uses; "" when complete."""
        return (
            ""
            if self.complete
            else (f"{self.missing}: its totals and latencies are lower bounds, its throughputs upper bounds")
        )

    def find_node(self, name: str) -> NodeRecord:
        """The record of node ``name`` (subgraph nodes are named ``If_3/then_branch/MatMul_0``)."""
        stack = list(self.nodes)
        while stack:
            record = stack.pop()
            if record.name == name:
                return record
            stack.extend(r for sub in record.subgraphs.values() for r in sub.records)
        import difflib

        names = [r.name for r in self.nodes]
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = (
            f"did you mean {', '.join(repr(c) for c in close)}?"
            if close
            else "run `onnxroof summary` to list node names"
        )
        raise UsageError(f"the model has no node named {name!r}; {hint}")

    def to_dict(self) -> dict:
        """The JSON document (schema onnxroof/1) that ``summary --format json`` prints."""
        return to_document(self)


# --- the document ----------------------------------------------------------------------------


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


def to_document(
    analysis: Analysis, encoded: bool = False, findings: Sequence[dict] = (), fits: Sequence[dict | None] = ()
) -> dict:
    """The document as plain values; with ``encoded``, its per-node lists (nodes, memory
    timelines, each target's nodes) are compact JSON chunks, written once by :func:`document_json`.
    ``findings`` (ranked) and ``fits`` (per target, in order) are the findings stage's, as plain
    values (``report/json.document`` gives them from a review); without them, none."""
    model, totals = analysis.model, analysis.totals
    return {
        "schema": SCHEMA,
        "version": __version__,
        "conventions": CONVENTIONS,
        "model": {
            "name": model.name,
            "graph_name": model.graph_name,
            "path": model.path,
            "file_bytes": model.file_bytes,
            "producer": model.producer,
            "doc_string": model.doc_string,
            "ir_version": model.ir_version,
            "opset": model.opset,
            "opsets": model.opsets,
            "nodes": model.node_count,
            "inputs": [
                tensor_entry(i) | ({"value": analysis.input_values[i.name]} if i.name in analysis.input_values else {})
                for i in analysis.inputs
            ],
            "outputs": [tensor_entry(o) for o in analysis.outputs],
        },
        "complete": analysis.complete,
        "missing": analysis.missing,  # what is not counted, in words ("" when complete): why the figures are bounds
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
        "assumed_dims": analysis.assumed_dims,  # batch dims nobody gave, bound to 1
        "fixed_batch": analysis.fixed_batch.to_dict() if analysis.fixed_batch else None,
        "memory": memory_entry(analysis, encoded),
        # what to change on each target, ranked; each gain measured by analysing again with the change
        "findings": list(findings),
        "targets": [
            target_entry(report, encoded, fits[index] if index < len(fits) else None)
            for index, report in enumerate(analysis.targets)
        ],
        "llm": None
        if analysis.llm is None
        else {
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
            # a seq2seq decoder's cross-attention cache (read every step, never appended), apart
            "cross_attention_cache": None
            if not (analysis.llm.cross_read_bytes or analysis.llm.cross_length)
            else {
                "read_bytes": analysis.llm.cross_read_bytes,
                "write_bytes": analysis.llm.cross_write_bytes,
                "encoder_length": analysis.llm.cross_length,
                "bytes_at_encoder_length": analysis.llm.cross_cache_bytes,
            },
            "tokens_per_s": analysis.llm.tokens_per_s,
            "time_to_first_token_s": analysis.llm.time_to_first_token_s,
            "recognised": list(analysis.llm.recognised),
        },
        # on several devices of each target (--devices N > 1): absent with one, as before
        **({"parallel": [plan.to_dict() for plan in analysis.parallel]} if analysis.parallel else {}),
        "nodes": Encoded(encoded_nodes(analysis.nodes)) if encoded else [node_entry(r) for r in analysis.nodes],
    }


def memory_entry(analysis: Analysis, encoded: bool = False) -> dict:
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


def _timeline(schedule, encoded: bool, twice: bool = False) -> list[dict] | Encoded:
    steps = enumerate(zip(schedule.order, schedule.live_bytes))
    if encoded:  # steps and live bytes are ints, which format as JSON writes them
        return Encoded(
            (f'{{"step":{step},"node":{_string(node)},"live_bytes":{live}}}' for step, (node, live) in steps),
            keep=twice,
        )
    return [{"step": step, "node": node, "live_bytes": live} for step, (node, live) in steps]
