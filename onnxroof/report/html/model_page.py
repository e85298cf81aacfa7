"""The model page (``onnxroof report``): one model, rendered by :func:`render_html`.

The header (the model, its inputs and outputs, dtype, batch, targets), the totals and a card per
target, problems and warnings, a roofline per target (``model_roofline.py``), the
:data:`HOTSPOTS` slowest nodes, the memory section (``memory_section.py``), the op types and the
node table (``node_table.py``). With an ``onnxroof profile`` result, the profiled target's
roofline also shows the measured nodes, and a "Predicted vs measured" section follows the
rooflines (``profile_section.py``).

Size stays bounded for big graphs: past ``AGGREGATE_ABOVE`` costed nodes a roofline draws one
dot per op type and cell of the log-log plane; the memory timeline keeps one column per pixel;
the node table's rows live once, as compact JSON; the full JSON document is embedded
(``#onnxroof-data``) only up to :data:`FULL_DOCUMENT_MAX_NODES` nodes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from ...core.dtypes import dtype_name
from ...core.text import model_label
from ...core.units import iec, intensity, si
from ...core.version import __version__
from ...result import SCHEMA
from ...roofline.placement import node_times
from ..bounds import BOUND_LABELS, BOUND_TITLES
from ..formatting import count_text, format_value, shape_text, share_percent
from ..json import document
from ..text.table import assumed_text, distinct_clips
from .chart_context import op_palette
from .devices_section import devices_context
from .findings_section import findings_context
from .graph_section import graph_context
from .memory_section import memory_context
from .model_roofline import roofline_context, top_modules
from .module_section import modules_context
from .node_table import node_data, node_table_context
from .page import TargetCard, bar_width, metric_cell, render_page, script_json, target_capacities, target_card
from .profile_section import profile_context, profiled_target

if TYPE_CHECKING:
    from ...core.tensors import TensorInfo
    from ...cost.records import NodeRecord
    from ...findings import Review
    from ...measure.profiling import ProfileResult
    from ...memory.liveness import MemoryReport
    from ...result import Analysis, Totals
    from ...roofline.placement import TargetReport
    from ...symbolic.formulas import Formulas

TEMPLATE = "report.html.j2"

FULL_DOCUMENT_MAX_NODES = 2_000  # larger graphs embed the node table only (the document is `summary --format json`)
HOTSPOTS = 10


# ---------------------------------------------------------------------------------------------
# The renderer


@dataclass
class ModelPage:
    """Everything the model page shows, formatted, section by section."""

    version: str
    schema: str
    complete: bool
    model: ModelHeader  # the header: name, file, producer, opsets, inputs and outputs, dtype, batch, targets
    totals: dict
    problems: dict
    ops: list[dict]  # a row per op type
    op_targets: list[str]
    node_count: str
    uncounted_count: int
    memory: dict | None
    targets: list[TargetCard]
    findings: dict | None  # "What to change": every target's findings, ranked
    rooflines: list[dict]
    devices: list[dict] | None  # "Several devices" (--devices N > 1): a table per target
    profile: dict | None  # "Predicted vs measured", with a profile
    hotspots: dict
    graph: dict | None  # the graph view: every view of the folded graph, laid out
    modules: dict | None
    formulas: dict | None
    table: dict  # the node table's frame (its rows are nodes_json)
    document_json: Markup | None  # the JSON document, up to FULL_DOCUMENT_MAX_NODES nodes
    nodes_json: Markup
    full_document_max: str


def render_html(analysis: Analysis, **options: Any) -> str:
    """Render ``analysis`` as one self-contained HTML page (no network, opens from file://);
    ``options`` are :func:`model_page`'s."""
    return render_page(TEMPLATE, model_page(analysis, **options))


def model_page(
    analysis: Analysis,
    capacities: Sequence[tuple[str, int]] | None = None,
    profile: ProfileResult | None = None,
    colour_by: str = "op",
    formulas: Formulas | None = None,
    review: Review | None = None,
) -> ModelPage:
    """The model page's view of ``analysis``.

    ``capacities`` are ``(label, bytes)`` on-chip memory sizes drawn as lines on the memory
    timeline; by default, each hardware target's on-chip memory. ``profile`` (``onnxroof
    profile``'s result, whose target must be one of ``analysis.targets``) adds the measured
    nodes to that target's roofline, hollow beside the predicted ones, and a "Predicted vs
    measured" section. ``colour_by`` "module" colours the roofline's dots by the top-level
    module of the node names (``encoder``, ``decoder``, ``lm_head``) instead of by op type.
    ``review`` (the findings stage's) gives the "What to change" section and each card's memory
    fit; without it, neither."""
    if capacities is None:
        capacities = target_capacities(analysis)
    # what shows nodes one by one shows those a run executes: a control-flow node's placed branch
    # or body in its place, a module under its name (Analysis.run_view)
    run = analysis.run_view
    profiled = profiled_target(analysis, profile) if profile is not None else None
    groups = top_modules(run) if colour_by == "module" else None
    palette = op_palette(run.nodes, lambda node: groups[node.name]) if groups else op_palette(run.nodes)
    totals = analysis.totals
    small = len(analysis.nodes) <= FULL_DOCUMENT_MAX_NODES
    return ModelPage(
        version=__version__,
        schema=SCHEMA,
        complete=analysis.complete,
        model=_model_context(run),
        totals=_totals_context(totals, analysis.memory),
        problems=_problems_context(analysis),
        ops=_ops_context(run.nodes, totals.flops, analysis.targets),
        op_targets=[r.target.name for r in analysis.targets],
        node_count=count_text(len(run.nodes)),
        uncounted_count=totals.nodes - totals.counted_nodes,
        memory=memory_context(run, capacities),
        findings=findings_context(run, review),
        targets=[target_card(r, review.fit(r) if review is not None else None) for r in analysis.targets],
        rooflines=[
            roofline_context(run, r, k, palette, profile if k == profiled else None, groups)
            for k, r in enumerate(analysis.targets)
        ],
        devices=devices_context(analysis),
        profile=profile_context(analysis, profile, profiled) if profile is not None else None,
        hotspots=_hotspots_context(run),
        graph=graph_context(run),
        modules=modules_context(analysis),
        formulas=_formulas_context(formulas) if formulas is not None and formulas.dims else None,
        table=node_table_context(run),
        # the page embeds the JSON document (summary --format json) for scripts that read it
        document_json=Markup(script_json(document(analysis, review))) if small else None,
        nodes_json=Markup(script_json(node_data(run))),
        full_document_max=count_text(FULL_DOCUMENT_MAX_NODES),
    )


@dataclass
class ModelHeader:
    """The page's header, formatted: the model and its file, inputs and outputs, the element type
    and batch it was analysed in (each with its tooltip), and the targets."""

    name: str
    path: str | None
    producer: str
    ir_version: str
    opset: str
    other_opsets: str
    file_size: str
    file_size_title: str
    nodes: str
    doc_string: str
    inputs: list[dict]  # name, shape, dtype
    outputs: list[dict]
    dtype: str
    dtype_title: str
    batch: str
    batch_title: str
    targets: str
    targets_title: str


def _model_context(analysis: Analysis) -> ModelHeader:
    model = analysis.model
    file_bytes = model.file_bytes
    targets = [r.target for r in analysis.targets]
    dtype, dtype_title = _dtype_cell(analysis)
    batch, batch_title = _batch_cell(analysis)
    return ModelHeader(
        name=model_label(model.name, model.graph_name),
        path=model.path,
        producer=model.producer or "unknown",
        ir_version=str(model.ir_version),
        opset=str(model.opset) if model.opset else "none",
        other_opsets=", ".join(
            f"{domain} {version}" for domain, version in model.opsets.items() if domain != "ai.onnx"
        ),
        file_size=iec(file_bytes) if file_bytes is not None else "in memory",
        file_size_title=(
            f"{file_bytes:,} bytes" if file_bytes is not None else "analysed from a ModelProto, not a file"
        ),
        nodes=count_text(model.node_count),
        doc_string=model.doc_string.strip(),
        inputs=[_tensor_context(t, analysis.input_values.get(t.name)) for t in analysis.inputs],
        outputs=[_tensor_context(t) for t in analysis.outputs],
        dtype=dtype,
        dtype_title=dtype_title,
        batch=batch,
        batch_title=batch_title,
        targets=", ".join(t.name for t in targets) if targets else "none",
        targets_title="; ".join(f"{t.name}: {t.description}" for t in targets)
        or "no --target given: no roofline, latency or energy",
    )


def _dtype_cell(analysis: Analysis) -> tuple[str, str]:
    """The element type the page's figures are in, and its tooltip: the model's own (the most
    common among the costed nodes), or the one --dtype re-costed it in."""
    if analysis.dtype != "model":
        return f"{analysis.dtype} (re-costed)", f"--dtype {analysis.dtype}: stored and run as if in this type"
    dtypes = Counter(n.dtype for n in analysis.nodes if n.counted and n.flops)
    main_dtype = dtypes.most_common(1)[0][0] if dtypes else "—"
    return f"{main_dtype} (as stored)", "the model's own element types; " + (
        ", ".join(f"{d}: {c:,} costed nodes" for d, c in dtypes.most_common()) or "no costed node"
    )


def _batch_cell(analysis: Analysis) -> tuple[str, str]:
    """The batch, and its tooltip: --batch, dims assumed for a batch the inputs leave open, or
    the input shapes'."""
    batch = analysis.batch
    if batch:
        return str(batch), f"--batch {batch}: axis 0 of every input"
    assumed = ", ".join(f"{symbol}={value}" for symbol, value in analysis.assumed_dims.items())
    if assumed:
        return f"{assumed} (assumed)", f"{assumed_text(analysis.assumed_dims)}"
    return "from the input shapes", "no --batch: axis 0 as the input shapes give it"


def _tensor_context(tensor: TensorInfo, value: list | None = None) -> dict:
    shape = shape_text(tensor.shape)
    if value is not None:  # a value given with --value
        shape += " = " + ",".join(map(str, value))
    return {"name": tensor.name, "shape": shape, "dtype": dtype_name(tensor.dtype)}


def _totals_context(totals: Totals, memory: MemoryReport | None) -> dict:
    uncounted = totals.nodes - totals.counted_nodes
    context = {
        "params": si(totals.params),
        "params_title": f"{totals.params:,} parameters",
        "param_bytes": iec(totals.param_bytes),
        "param_bytes_title": f"{totals.param_bytes:,} bytes",
        # what the nodes read of constants per run, when it is not the stored bytes (a Gather's rows)
        "weights_read": iec(totals.weight_bytes_read) if totals.weight_bytes_read != totals.param_bytes else None,
        "weights_read_title": f"{totals.weight_bytes_read:,} bytes of constants read per run",
        "mac_flops": si(totals.mac_flops),
        "mac_flops_title": f"{totals.mac_flops:,} FLOPs (2 x MACs)",
        "macs": si(totals.macs),
        "macs_title": f"{totals.macs:,} MACs",
        "flops": si(totals.flops),
        "flops_title": f"{totals.flops:,} FLOPs",
        "other_flops": si(totals.flops - totals.mac_flops),
        "other_flops_title": f"{totals.flops - totals.mac_flops:,} FLOPs outside multiply-accumulates",
        "counted_nodes": count_text(totals.counted_nodes),
        "nodes": count_text(totals.nodes),
        "uncounted": count_text(uncounted),
        "all_counted": uncounted == 0,
        # with nodes left out, every sum is a lower bound: the cards say so
        "bound": "" if uncounted == 0 else "≥ ",
        "peak": None,
    }
    if memory is not None:
        model, best = memory.model_order, memory.best
        peak, best_peak = model.peak_bytes, best.schedule.peak_bytes
        context["peak"] = {
            "value": iec(peak),
            "title": f"{peak:,} bytes live at step {model.peak_step} ({model.peak_node}), model order",
            "best": iec(best_peak),
            "best_title": f"{best_peak:,} bytes in the best order found ({best.method})",
            "saving": f" (−{share_percent((peak - best_peak) / peak)})" if best_peak < peak and peak else "",
        }
    return context


def _problems_context(analysis: Analysis) -> dict:
    totals = analysis.totals
    unresolved = [
        {"input": d.input_name, "axis": str(d.axis), "symbol": d.symbol or "", "fix": d.fix}
        for d in analysis.unresolved_dims
    ]
    unsupported = [{"op": op, "count": count_text(n)} for op, n in totals.unsupported.items()]
    unknown = [{"op": op, "count": count_text(n)} for op, n in totals.not_counted.items()]
    warnings = list(analysis.warnings)
    notes = [f"{r.target.name}: {note}" for r in analysis.targets for note in r.notes]
    return {
        "any": bool(warnings or unresolved or unsupported or unknown),
        "warnings": warnings,
        "unresolved": unresolved,
        "unsupported": unsupported,
        "unknown_shape": unknown,
        "uncounted_bytes": iec(totals.uncounted_bytes) if totals.uncounted_bytes else "",
        "uncounted_bytes_title": f"{totals.uncounted_bytes:,} bytes move through nodes that are not counted",
        "target_notes": notes,
    }


_NOT_COUNTED = {"text": "—", "title": "no node of this op type was counted", "value": "", "cls": "na"}


def _ops_context(nodes: list[NodeRecord], total_flops: int, reports: list[TargetReport]) -> list[dict]:
    groups: dict[str, dict] = {}
    for node in nodes:
        group = groups.setdefault(node.op_type, {"nodes": 0, "uncounted": 0, "macs": 0, "flops": 0, "params": 0})
        group["nodes"] += 1
        group["uncounted"] += 0 if node.counted else 1
        group["macs"] += node.macs
        group["flops"] += node.flops
        group["params"] += node.params
    # a fused kernel's time split over its nodes (by FLOPs, by bytes for those that do none), as
    # `summary --by op` and a profile split it, so a "Conv+Relu" kernel counts for Conv and Relu
    op_of = {node.name: node.op_type for node in nodes}
    times: list[dict[str, float]] = []
    for report in reports:
        per_op: dict[str, float] = defaultdict(float)
        for name, seconds in node_times([report])[report.target.name].items():
            per_op[op_of.get(name, name)] += seconds
        times.append(per_op)
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1]["flops"], -kv[1]["nodes"], kv[0].lower()))
    rows = []
    for op, group in ordered:
        share = group["flops"] / total_flops if total_flops else 0.0
        none_counted = group["uncounted"] == group["nodes"]
        metrics = {
            key: _NOT_COUNTED if none_counted else metric_cell(group[key], "count", unit)
            for key, unit in (("macs", "MACs"), ("flops", "FLOPs"), ("params", "parameters"))
        }
        time_shares = []
        for report, per_op in zip(reports, times):
            latency = report.latency_s
            spent = per_op.get(op, 0.0)
            part = spent / latency if latency else 0.0
            time_shares.append(
                {
                    "share": "—" if none_counted else share_percent(part),
                    "title": f"{format_value(spent, 'seconds')} ({spent:.6g} s) of {format_value(latency, 'seconds')} "
                    f"on {report.target.name}",
                    "bar": bar_width(part),
                }
            )
        rows.append(
            {
                "op": op,
                "nodes": count_text(group["nodes"]),
                "uncounted": count_text(group["uncounted"]) if group["uncounted"] else "",
                **metrics,
                "share": "—" if none_counted or not total_flops else share_percent(share),
                "share_title": f"{group['flops']:,} of {total_flops:,} FLOPs",
                "bar": bar_width(share),
                "times": time_shares,
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Hotspots


HOTSPOT_NAME = 36  # characters of a kernel's name a hotspot row shows, middle-clipped: the op at its end stays


def _hotspots_context(analysis: Analysis) -> dict:
    """The ten nodes that take longest on the first target (or have the most FLOPs)."""
    index = {n.name: i for i, n in enumerate(analysis.nodes)}
    if analysis.targets:
        return _slowest_kernels(analysis.targets[0], index)
    return _largest_nodes(analysis.nodes, analysis.totals.flops, index)


def _slowest_kernels(report: TargetReport, index: dict[str, int]) -> dict:
    target, latency = report.target, report.latency_s
    top = sorted(report.nodes, key=lambda k: (-k.placement.time_s, index.get(k.name, 0)))[:HOTSPOTS]
    largest = top[0].placement.time_s / latency if top and latency else 0.0  # bars are scaled to the largest share
    rows = []
    shorts = distinct_clips([k.name for k in top], HOTSPOT_NAME)
    for rank, (kernel, short) in enumerate(zip(top, shorts), 1):
        p = kernel.placement
        share = p.time_s / latency if latency else 0.0
        rows.append(
            {
                "rank": str(rank),
                "index": str(index[kernel.name]),
                "name": kernel.name,
                "short": short,
                "op": kernel.op_type,
                "time": format_value(p.time_s, "seconds"),
                "time_title": f"{p.time_s:.6g} s",
                "share": share_percent(share),
                "bar": bar_width(share / largest if largest else 0.0),
                "bound": BOUND_LABELS.get(p.bound, p.bound),
                "bound_key": p.bound,
                "bound_title": BOUND_TITLES.get(p.bound, ""),
                "flops": si(p.flops),
                "flops_title": f"{p.flops:,} FLOPs",
                "dram": iec(p.dram_bytes),
                "dram_title": f"{p.dram_bytes:,} DRAM bytes on {target.name}",
                "intensity": intensity(p.intensity) if p.intensity is not None else "∞",
                "intensity_title": (
                    f"{p.intensity:.6g} FLOP per DRAM byte"
                    if p.intensity is not None
                    else "no DRAM bytes: everything stays on chip"
                ),
            }
        )
    return {
        "by": "time",
        "target": target.name,
        "rows": rows,
        "title": f"by time on {target.name}",
        "sum": share_percent(sum(k.placement.time_s for k in top) / latency) if latency else "0%",
    }


def _largest_nodes(nodes: list[NodeRecord], total: int, index: dict[str, int]) -> dict:
    """No target, so no times: the nodes with the most FLOPs."""
    top = sorted((n for n in nodes if n.counted), key=lambda n: (-n.flops, n.index))[:HOTSPOTS]
    largest = top[0].flops / total if top and total else 0.0
    rows = []
    shorts = distinct_clips([n.name for n in top], HOTSPOT_NAME)
    for rank, (node, short) in enumerate(zip(top, shorts), 1):
        share = node.flops / total if total else 0.0
        moved = node.weight_bytes + node.input_bytes + node.output_bytes
        rows.append(
            {
                "rank": str(rank),
                "index": str(index[node.name]),
                "name": node.name,
                "short": short,
                "op": node.op_type,
                "flops": si(node.flops),
                "flops_title": f"{node.flops:,} FLOPs",
                "share": share_percent(share),
                "bar": bar_width(share / largest if largest else 0.0),
                "bytes": iec(moved),
                "bytes_title": f"{moved:,} bytes (weights + inputs + outputs)",
                "intensity": intensity(node.intensity),
                "intensity_title": f"{node.intensity or 0:.6g} FLOP/B",
            }
        )
    return {
        "by": "flops",
        "target": "",
        "rows": rows,
        "title": "by FLOPs (no --target: no times)",
        "sum": share_percent(sum(n.flops for n in top) / total) if total else "0%",
    }


def _formulas_context(found: Formulas) -> dict:
    """The formulas section: one row per metric (module formulas are summary --symbolic's), and
    each target's latency: its ranges and the bound of its dominant kernels."""
    from ...symbolic.fit_steps import points_text
    from ...symbolic.formulas_record import CHECK, LABELS, SAMPLES
    from ...symbolic.latency_ranges import FAR

    rows = [
        {
            "metric": LABELS[metric],
            "formula": found.text(metric),
            "reading": found.reading(metric) or "",
            "ok": polynomial is not None or metric in found.pieces or metric in found.candidates,
        }
        for metric, polynomial in found.polynomials.items()
        if metric in LABELS
    ]
    latency = []
    for formula in found.latency:
        if formula.refuted:
            latency.append({"target": formula.target, "refuted": formula.refuted})
            continue
        ranges = _latency_rows(formula, found.dims)
        holds = formula.holds
        if formula.beyond is not None:  # past a spill's start, the settled spill plan's formula
            ranges += [{**row, "span": f"{row['span']}, spilling"} for row in _latency_rows(formula.beyond, found.dims)]
            holds = f"{holds}; past it, {formula.beyond.holds}"
        latency.append(
            {
                "target": formula.target,
                "refuted": None,
                "kernels": formula.kernels,
                "ranges": ranges,
                "bounds": [
                    {"kernel": g.name, "op": g.op_type, "count": g.count, "bound": formula.bound_text(g)}
                    for g in formula.dominant()
                ],
                "holds": holds,
            }
        )
    held = "".join(f", {d} held at {v}" for d, v in found.held.items())
    return {
        "dims": ", ".join(found.dims) + held,
        "rows": rows,
        "notes": found.notes,
        "latency": latency,
        "method": f"exact: {points_text(found.dims, found.steps, SAMPLES, CHECK, FAR)}",
    }


def _latency_rows(formula, dims: list[str]) -> list[dict]:
    """One row per range of the one dim, or the latency at large dims (several)."""
    from ...symbolic.polynomials import polynomial_text

    if len(dims) == 1:
        return [{"span": span, "formula": text} for span, text in formula.shown_ranges()]
    return [
        {
            "span": "at large dims (each kernel bound as there)",
            "formula": polynomial_text(formula.at_large_dims(), dims, "s"),
        }
    ]
