"""The pipeline in one place: load -> shapes -> cost graph -> totals.

``analyze`` is the Python API; the CLI prints exactly what it returns.

>>> from onnxroof.core.examples import build_example
>>> result = analyze(build_example("shallownet"))
>>> result.totals.mac_flops, result.totals.params
(2424832, 328586)
"""

from __future__ import annotations

import gc
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx

from .core.dtypes import dtype_name, tensor_bytes
from .core.errors import OptionError, UnboundDims
from .core.tensors import TensorInfo
from .cost.kv_report import llm_report
from .cost.llm import dims_fixed_by_the_graph
from .cost.records import CostOptions, NodeRecord, NodeStatus, TensorRecord
from .cost.splits import cost_graph_with_sizes
from .frontend.inputs import bind_inputs, input_values, unbound_dims, value_flags
from .frontend.inputs import dim_values as dim_values  # (symbolic.formulas imports it from here)
from .frontend.load import check_in_memory, open_model
from .frontend.shapes import ShapeResult, infer_shapes
from .frontend.table_bounds import check_table_rows
from .memory.liveness import analyze_memory
from .ops import output_types
from .ops.plugins import load_entry_points
from .options import BACK_OPTIONS, AnalysisOptions, check_call, check_progress, options_doc
from .preparation import Prepared, prepare
from .result import Analysis, ModelFacts, Totals

if TYPE_CHECKING:  # placing on targets is imported only when targets are given
    from .roofline.placement import TargetReport
    from .roofline.targets import Target


def analyze(
    model: str | os.PathLike | onnx.ModelProto,
    *,
    options: AnalysisOptions | None = None,
    progress: Callable[[str], None] | None = None,
    **changes: Any,
) -> Analysis:
    """Analyse an ONNX model given as a path or a ModelProto.

    The options (below, as :class:`~onnxroof.options.AnalysisOptions` declares them) are given
    whole as ``options``, or one by one as keyword arguments (``analyze(model, dims={"batch":
    1})``), each checked against the declarations (a keyword no option has is an
    :class:`~onnxroof.core.errors.OptionError` naming it); ``progress`` is called with the name of
    each stage as it starts.

    Unbound input dims: a dim name that stands only for the leading axis of the inputs (a batch
    dim; an unnamed leading axis is named ``batch``) is bound to 1 unless given, and
    ``analysis.assumed_dims`` says so; any other input dim left without a value raises
    :class:`~onnxroof.core.errors.UnboundDims`, naming each, unless ``partial=True``.
    ``devices`` (more than 1) plans the model on up to that many devices of each target, linked
    by its ``[interconnect]`` (``analysis.parallel``: :mod:`onnxroof.parallel`).

    The options:

    """
    check_call("analyze", (), changes, also=("progress", "options"))
    check_progress(progress)
    return analyze_keeping_front(model, options_of(options, changes), progress, front_up_to=0)[0]


if analyze.__doc__ is not None:  # (none under python -OO)
    analyze.__doc__ += options_doc("    ") + "\n"


def options_of(options: AnalysisOptions | None, changes: Mapping[str, object]) -> AnalysisOptions:
    """analyze()'s options: ``options``, or its keyword arguments (given both, those not at their
    defaults are refused)."""
    # (type: ignore below) the keywords' values are checked by AnalysisOptions at run time
    given = AnalysisOptions(**changes)  # type: ignore[arg-type]
    return AnalysisOptions.given(options, given.changed()) if options is not None else given


def analyze_keeping_front(
    model: str | os.PathLike | onnx.ModelProto,
    options: AnalysisOptions,
    progress: Callable[[str], None] | None = None,
    front_up_to: int | None = None,
) -> tuple[Analysis, Front | None]:
    """:func:`analyze`, and the :class:`Front` it started from (it holds the prepared model and
    its shapes: drop it unless a variant will be analysed from it, :func:`analyze_again`). A
    graph of more than ``front_up_to`` nodes gets no front (None): its node lists are let go as
    soon as the nodes are costed, before the placements are made (None: always a front)."""
    progress = progress or (lambda stage: None)
    with collector_paused():
        fusion, chosen = _checked_options(options)
        if not isinstance(model, (str, os.PathLike, onnx.ModelProto)):
            kind = f"{len(model):,} bytes" if isinstance(model, (bytes, bytearray)) else type(model).__name__
            raise OptionError(
                "model",
                "model: {kind} is not a model; give a path or an onnx.ModelProto"
                + (" (onnx.load_from_string(data) reads bytes)" if isinstance(model, (bytes, bytearray)) else ""),
                kind=kind,
            )
        front = _front(model, options, progress)
        analysis = _back(front, options, progress, fusion, chosen, front_up_to)
        return analysis, front if front_up_to is None or len(analysis.nodes) <= front_up_to else None


def _checked_options(options: AnalysisOptions) -> tuple[tuple[str, ...] | None, list[Target]]:
    """The fusion rules and the targets, loaded: a bad one fails before any work."""
    fusion = _fusion_rules(options.fusion)
    if options.dtype != "model" and options.dtype not in RECAST_DTYPES:
        raise OptionError(
            "dtype",
            "{opt.dtype} {dtype}: choose one of {choices}",
            dtype=options.dtype,
            choices=", ".join(RECAST_DTYPES),
        )
    chosen = _load_targets(options.targets)
    load_entry_points()
    return fusion, chosen


@dataclass
class Front:
    """The model read, prepared and its shapes inferred, in its stored types: what a change of
    only the options in :data:`BACK_OPTIONS` leaves as it was, so that an analysis with such a
    change (the findings' ``--dtype`` variants) starts from here (:func:`analyze_again`)."""

    options: AnalysisOptions  # those it was made with
    model: onnx.ModelProto  # prepared: functions inlined, inputs bound
    path: str | None
    file_bytes: int | None
    prepared: Prepared
    given_values: dict
    shapes: ShapeResult  # in the model's stored types (--dtype recasts a copy)


def analyze_again(start: Front | onnx.ModelProto, options: AnalysisOptions) -> Analysis:
    """An analysis with ``options``: from a :class:`Front` whose options differ from these only
    in :data:`BACK_OPTIONS` (no loading, no shape inference), or from a model analysed before
    (loaded and checked already: it is prepared and its shapes inferred again, not checked)."""
    fusion, chosen = _checked_options(options)
    noop: Callable[[str], None] = lambda stage: None  # noqa: E731
    with collector_paused():
        if isinstance(start, onnx.ModelProto):
            return _back(_front(start, options, noop, checked=True), options, noop, fusion, chosen)
        moved = {
            f.name
            for f in fields(AnalysisOptions)
            if f.name not in BACK_OPTIONS
            and getattr(start.options, f.name) is not getattr(options, f.name)
            and getattr(start.options, f.name) != getattr(options, f.name)
        }
        if moved:
            raise ValueError(f"analyze_again: {', '.join(sorted(moved))} changed, which the front was made with")
        return _back(start, options, noop, fusion, chosen)


def place_targets(analysis: Analysis, targets: Sequence[Target], options: AnalysisOptions) -> list[TargetReport]:
    """Each target's report of ``analysis`` (made with ``options``): its kernels placed on its roofs."""
    from .roofline.placement import place_model

    fusion, batch = _fusion_rules(options.fusion), options.batch or 1
    reports = [
        place_model(analysis.cost_graph, analysis.memory, target, analysis.dtype, batch, fusion, options.overhead)
        for target in targets
    ]
    for report in reports:  # the nodes left out take time too: every latency is a bound
        report.leave_out(analysis.uncounted_nodes, len(analysis.unresolved_dims))
    return reports


@contextmanager
def collector_paused():
    """The garbage collector off for a stage that builds many small objects and no cycles."""
    collecting = gc.isenabled()
    gc.disable()  # the stages build many small objects and no cycles: the collector only slows them
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _front(
    model: str | os.PathLike | onnx.ModelProto,
    options: AnalysisOptions,
    progress: Callable[[str], None],
    checked: bool = False,
) -> Front:
    """Load (or copy), check, prepare and infer the shapes: the stages a change of type leaves."""
    if isinstance(model, onnx.ModelProto):
        path, file_bytes, checking = None, None, None
        proto = onnx.ModelProto()
        proto.CopyFrom(model)  # binding writes into the model; leave the caller's untouched
        if not checked:  # (a model analysed before passed these already)
            check_in_memory(proto, proto.graph.name or "model")  # what would crash onnx's C++ or onnxroof
    else:
        path = str(model)
        progress("loading")
        proto, checking = open_model(path, options.checker_in_child)
        file_bytes = Path(path).stat().st_size
    try:
        prepared = prepare(proto, checking, options, progress, Path(path).name if path else proto.graph.name or "model")
    except BaseException:
        if checking is not None:
            checking.wait()  # the checker's verdict comes first, as when it ran before anything else
        raise
    if checking is not None:
        checking.wait()  # before ONNX's shape inference sees the model
    proto, layout = prepared.model, prepared.layout
    given: dict[str, Sequence[float]] = {**prepared.phase_values, **value_flags(options.values)}  # explicit ones win
    given_values = input_values(proto, given)
    shapes = _infer(proto, prepared, given_values)
    if layout is not None and options.phase is not None:
        # dims the export leaves symbolic although the graph fixes them (a head size): bound, and again
        fixed = {
            d: v for d, v in dims_fixed_by_the_graph(layout, shapes.tensors).items() if d not in prepared.explicit_dims
        }
        if fixed:
            bind_inputs(proto, (), fixed)
            shapes = _infer(proto, prepared, given_values)
        if not options.partial and (unbound := unbound_dims(proto)):
            raise UnboundDims(
                Path(path).name if path else proto.graph.name or "model", unbound, prepared.assumed, decoder=True
            )
    check_table_rows(proto, prepared.fields, shapes.values, options.phase)  # a length past a positional table's rows
    return Front(options, proto, path, file_bytes, prepared, given_values, shapes)


def _infer(
    proto: onnx.ModelProto,
    prepared: Prepared,
    given_values: dict,
    dtype: str = "model",
    assumed_sizes: dict[str, int] | None = None,
) -> ShapeResult:
    """The shape stage (again, for sizes only the data decides: splits.py), in ``dtype``."""
    result = infer_shapes(proto, prepared.nodes, prepared.fields, output_types, given_values, assumed_sizes)
    return _recast(result, dtype)


def _recast(shapes: ShapeResult, dtype: str) -> ShapeResult:
    """``shapes`` with every floating-point tensor in ``dtype`` (a copy: a front's stay as stored)."""
    if dtype == "model":
        return shapes
    return replace(shapes, tensors=recast_tensors(shapes.tensors, RECAST_DTYPES[dtype]))


def _back(
    front: Front,
    options: AnalysisOptions,
    progress: Callable[[str], None],
    fusion: tuple[str, ...] | None,
    chosen: list[Target],
    front_up_to: int | None = None,
) -> Analysis:
    """From the shapes on: cost, memory, each target, the decoder's KV cache, several devices.
    Past ``front_up_to`` nodes the front's node lists are emptied once costed (no variant starts
    from it: :func:`analyze_keeping_front`)."""
    dtype, phase, prepared, proto = options.dtype, options.phase, front.prepared, front.model
    layout = prepared.layout
    progress("costing nodes")
    graph, shapes, size_notes = cost_graph_with_sizes(
        proto,
        _recast(front.shapes, dtype),
        CostOptions(loop_trips=options.loop_trips),
        prepared.fields,
        lambda sizes: _infer(proto, prepared, front.given_values, dtype, sizes),
    )
    records = graph.records
    if front_up_to is not None and len(records) > front_up_to:
        # a wrapper and a field record per node (33 MB at 10^5 nodes) that nothing reads again
        prepared.nodes.clear()
        prepared.fields.clear()
    totals = _totals(records, graph.parameters)
    analysis = Analysis(
        model=_facts(proto, front.path, front.file_bytes),
        inputs=shapes.inputs,
        outputs=[shapes.tensors.get(o.name) or TensorInfo(o.name) for o in proto.graph.output],
        cost_graph=graph,
        nodes=records,
        totals=totals,
        unresolved_dims=shapes.unresolved,
        # the buffers of the nodes a run executes (control-flow bodies expanded, as the targets place them)
        memory=_with_progress(
            progress,
            "tracking live activations",
            lambda: analyze_memory(
                graph.running, elementwise_in_place=options.elementwise_in_place, search=options.search_order
            ),
        ),
        dtype=dtype,
        batch=options.batch,
        input_values={name: value.reshape(-1).tolist() for name, value in front.given_values.items()},
        assumed_dims=prepared.assumed,
        fixed_batch=prepared.fixed_batch,
    )
    batch = options.batch or 1
    if chosen:
        progress(f"placing on {len(chosen)} target(s)")
        analysis.targets = place_targets(analysis, chosen, options)
    if layout is not None:
        seq, context = options.seq, options.context
        new_tokens = seq if phase == "prefill" else 1 if phase == "decode" else None
        latencies = {report.target.name: report.latency_s for report in analysis.targets}
        analysis.llm = llm_report(
            _with_inputs(analysis.tensors, shapes.inputs),
            layout,
            phase,
            new_tokens,
            context if phase == "decode" else seq,
            batch,
            latencies,
        )
    if options.devices > 1 and analysis.targets:
        from .cost.tensor_parallel import find_structure
        from .roofline.devices import ModelFacts, plan_devices

        running = graph.running  # the nodes the targets' kernels run (control-flow bodies expanded)
        structure = find_structure(running, analysis.llm.head_size if analysis.llm is not None else None)
        facts = ModelFacts(running, structure, totals.param_bytes, analysis.memory.model_order.peak_bytes, analysis.llm)
        analysis.parallel = [
            plan_devices(facts, report, options.devices, options.micro_batches) for report in analysis.targets
        ]
    analysis.warnings = prepared.notes + shapes.notes + size_notes + _warnings(analysis)
    if options.devices > 1 and not analysis.targets:  # said, not silently nothing
        analysis.warnings.append(
            f"several devices ({options.devices}) are planned on a target's devices, linked by "
            "its "
            "interconnect: give a target to plan them"
        )
    return analysis


def _with_inputs(tensors: dict[str, TensorRecord], inputs: list[TensorInfo]) -> dict[str, TensorRecord]:
    """The cost graph's tensors and the graph inputs only subgraphs read (a merged decoder's past
    inputs, read in one If branch), which the cost graph of the main graph has no record of."""
    missing = [i for i in inputs if i.name not in tensors]
    if not missing:
        return tensors
    return tensors | {
        i.name: TensorRecord(
            i.name,
            dtype_name(i.dtype),
            i.shape,
            tensor_bytes(i.numel, i.dtype) if i.numel is not None else None,
            "input",
            None,
        )
        for i in missing
    }


# --dtype choices -> the ONNX element type every floating-point tensor is re-costed in
RECAST_DTYPES = {"fp32": 1, "fp16": 10, "bf16": 16, "fp8": 17, "int8": 3, "int4": 22}  # fp8: E4M3FN
_FLOAT_TYPES = frozenset({1, 10, 11, 16})


def _load_targets(targets: Iterable[str | Target]) -> list[Target]:
    """Targets given by name or path, loaded (first, so that a bad one fails before any work)."""
    targets = list(targets)
    if not targets:
        return []
    from .roofline.targets import Target, load_target

    return [t if isinstance(t, Target) else load_target(t) for t in targets]


def _fusion_rules(fusion: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if fusion is None:
        return None
    from .roofline.kernels import parse_policy

    try:
        return parse_policy(fusion if isinstance(fusion, str) else ",".join(fusion) or "none")
    except ValueError as exc:
        raise OptionError("fusion", "{opt.fusion} {problem}", problem=str(exc)) from None


def _with_progress(progress: Callable[[str], None], stage: str, work: Callable):
    progress(stage)
    return work()


def recast_tensors(tensors: dict[str, TensorInfo], elem_type: int) -> dict[str, TensorInfo]:
    """Every floating-point tensor as if stored in ``elem_type``; integer tensors (indices,
    shapes, already-quantized weights) keep their type."""
    return {
        name: TensorInfo(info.name, elem_type, info.shape) if info.dtype in _FLOAT_TYPES else info
        for name, info in tensors.items()
    }


def _facts(model: onnx.ModelProto, path: str | None, file_bytes: int | None) -> ModelFacts:
    opsets = {(o.domain or "ai.onnx"): o.version for o in model.opset_import}
    producer = " ".join(p for p in (model.producer_name, model.producer_version) if p)
    name = Path(path).stem if path else (model.graph.name or "model")
    return ModelFacts(
        name=name,
        path=path,
        file_bytes=file_bytes,
        producer=producer,
        ir_version=model.ir_version,
        opset=opsets.get("ai.onnx", 0),
        opsets=opsets,
        node_count=len(model.graph.node),
        doc_string=model.doc_string,
        graph_name=model.graph.name,
    )


def _totals(records: list[NodeRecord], parameters: dict[str, tuple[int, int]]) -> Totals:
    unsupported: Counter = Counter()
    not_counted: Counter = Counter()
    macs = flops = counted_nodes = uncounted_bytes = weight_bytes_read = 0
    for record in records:  # one pass: big graphs have hundreds of thousands of records
        macs += record.macs
        flops += record.flops
        weight_bytes_read += record.weight_bytes
        if record.counted:
            counted_nodes += 1
        else:
            uncounted_bytes += record.memory_bytes
            (unsupported if record.status == NodeStatus.UNSUPPORTED else not_counted)[record.op_type] += 1
        if record.subgraphs:
            for subgraph in record.subgraphs.values():
                if subgraph.taken:  # an If branch its known condition does not select does not run
                    unsupported.update(subgraph.unsupported)
                    not_counted.update(subgraph.not_counted)
    return Totals(
        macs=macs,
        mac_flops=2 * macs,
        flops=flops,
        params=sum(elements for elements, _ in parameters.values()),
        param_bytes=sum(stored for _, stored in parameters.values()),
        weight_bytes_read=weight_bytes_read,
        nodes=len(records),
        counted_nodes=counted_nodes,
        unsupported=dict(sorted(unsupported.items())),
        not_counted=dict(sorted(not_counted.items())),
        uncounted_bytes=uncounted_bytes,
    )


def _warnings(analysis: Analysis) -> list[str]:
    warnings = []
    if analysis.unresolved_dims:
        fixes = " ".join(dict.fromkeys(d.fix for d in analysis.unresolved_dims))
        names = ", ".join(
            f"{d.input_name}[{d.axis}]" + (f" ({d.symbol})" if d.symbol else "") for d in analysis.unresolved_dims
        )
        warnings.append(
            f"input dims not bound: {names}; nodes depending on them are not counted. Fix (with your values): {fixes}"
        )
    if analysis.totals.unsupported:
        ops = ", ".join(f"{op} x{count}" for op, count in analysis.totals.unsupported.items())
        warnings.append(f"unsupported ops (not counted): {ops}")
    unsized = [name for name, (elements, _) in analysis.cost_graph.parameters.items() if not elements]
    if unsized:
        warnings.append(
            f"{len(unsized)} parameter tensor(s) of unknown shape are left out of the parameter totals: "
            + ", ".join(unsized[:5])
            + (" ..." if len(unsized) > 5 else "")
        )
    warnings += _undecided_conditions(analysis)
    invalid = [r for r in analysis.nodes if r.status == NodeStatus.INVALID]
    if invalid:
        more = f" (and {len(invalid) - 1} more)" if len(invalid) > 1 else ""
        warnings.append(
            f"{len(invalid)} invalid node(s), which no runtime runs, are not counted: {invalid[0].op_type} "
            f"{invalid[0].name}: {invalid[0].reason}{more}; fix the export"
        )
    if analysis.totals.not_counted:
        ops = ", ".join(f"{op} x{count}" for op, count in analysis.totals.not_counted.items())
        reasons = sorted({r.reason for r in analysis.nodes if r.status == NodeStatus.UNKNOWN_VALUE})
        warnings.append(
            "nodes not counted (unknown shapes or values, invalid nodes, or sizes only the data decides): "
            f"{ops}" + (f"; {reasons[0]}" if reasons else "")
        )
    from .roofline.target_paths import origin_note

    # last (the first warning is the reason nothing was counted): a target ./hardware or the user's folder gave
    return warnings + [
        note for note in dict.fromkeys(origin_note(r.target.name, r.target.path) for r in analysis.targets) if note
    ]


def _undecided_conditions(analysis: Analysis) -> list[str]:
    """Each If whose condition no given value decides (both branches shown, the costlier counted),
    with the inputs whose values decide it: the flag to give names them."""
    producer = {r.name: r for r in analysis.nodes}
    tensors, given = analysis.tensors, set(analysis.input_values)
    found = []
    for record in analysis.nodes:
        if record.op_type != "If" or not record.subgraphs or not all(s.taken for s in record.subgraphs.values()):
            continue
        deciding, seen, stack = [], set(), [record.inputs[0]] if record.inputs else []
        while stack:  # back from the condition to the graph inputs it is computed from
            name = stack.pop()
            tensor = tensors.get(name)
            if name in seen or tensor is None:
                continue
            seen.add(name)
            if tensor.kind == "input" and name not in given:
                deciding.append(name)
            elif tensor.producer in producer:
                stack.extend(producer[tensor.producer].inputs)
        if deciding:
            flags = " ".join(f"--value {name}=V" for name in sorted(deciding))
            found.append(
                f"If {record.name}: its condition depends on the value of input "
                f"{', '.join(sorted(deciding))}, "
                f"which was not given: the costlier branch is counted; give it ({flags}, values= in Python) "
                "to cost the branch the model takes"
            )
    return found


def input_dtype(info: TensorInfo) -> str:
    return dtype_name(info.dtype)
