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
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx

from .core.dtypes import dtype_name, tensor_bytes
from .core.errors import OptionError, UnboundDims
from .core.nodes import read_node_fields
from .core.tensors import TensorInfo
from .cost.kv_report import llm_report
from .cost.llm import LOOKED_FOR, DecoderLayout, detect_decoder, dims_fixed_by_the_graph, phase_dims
from .cost.records import CostOptions, NodeRecord, NodeStatus, TensorRecord
from .cost.splits import cost_graph_with_sizes
from .frontend.fixed_batch import FixedBatch, fixed_batch
from .frontend.functions import inline_functions
from .frontend.inputs import (
    batch_flags,
    batch_symbols,
    bind_inputs,
    dim_values,
    fix_digit_dims,
    input_values,
    name_unnamed_batch_axes,
    real_inputs,
    shape_flags,
    unbound_dims,
    value_flags,
)
from .frontend.load import PendingCheck, check_in_memory, open_model
from .frontend.scopes import separate_sibling_scopes
from .frontend.shapes import ShapeResult, infer_shapes
from .frontend.table_bounds import check_table_rows
from .memory.liveness import analyze_memory
from .ops import output_types
from .ops.plugins import load_entry_points
from .options import BACK_OPTIONS, AnalysisOptions, check_call, check_progress, options_doc
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
    return analyze_keeping_front(model, options_of(options, changes), progress)[0]


if analyze.__doc__ is not None:  # (none under python -OO)
    analyze.__doc__ += options_doc("    ") + "\n"


def options_of(options: AnalysisOptions | None, changes: Mapping[str, object]) -> AnalysisOptions:
    """analyze()'s options: ``options``, or its keyword arguments (given both, those not at their
    defaults are refused)."""
    # (type: ignore below) the keywords' values are checked by AnalysisOptions at run time
    given = AnalysisOptions(**changes)  # type: ignore[arg-type]
    return AnalysisOptions.given(options, given.changed()) if options is not None else given


def analyze_keeping_front(
    model: str | os.PathLike | onnx.ModelProto, options: AnalysisOptions, progress: Callable[[str], None] | None = None
) -> tuple[Analysis, Front]:
    """:func:`analyze`, and the :class:`Front` it started from (it holds the prepared model and
    its shapes: drop it unless a variant will be analysed from it, :func:`analyze_again`)."""
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
        return _back(front, options, progress, fusion, chosen), front


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
    prepared: _Prepared
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
        prepared = _prepare(
            proto, checking, options, progress, Path(path).name if path else proto.graph.name or "model"
        )
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
    check_table_rows(proto, shapes.values, options.phase)  # a length past a positional table's rows
    return Front(options, proto, path, file_bytes, prepared, given_values, shapes)


def _infer(
    proto: onnx.ModelProto,
    prepared: _Prepared,
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
) -> Analysis:
    """From the shapes on: cost, memory, each target, the decoder's KV cache, several devices."""
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


@dataclass
class _Prepared:
    """The model ready for the shape stage: what is done while the ONNX checker judges it."""

    model: onnx.ModelProto  # functions inlined, inputs bound
    layout: DecoderLayout | None  # a KV-cached decoder's, or None
    nodes: list[onnx.NodeProto]
    fields: list  # each node's fields, read once for the shape and cost stages
    phase_values: dict[str, list[int]]  # input values the decoder phase stands for
    explicit_dims: set[str]  # the dims the user gave (the graph binds no dim of these)
    assumed: dict[str, int]  # batch dims nobody gave, bound to 1
    notes: list[str]  # warnings
    fixed_batch: FixedBatch | None = None  # the batch a static export fixes in its inputs and shapes


_CACHE_NAME = re.compile(r"past|cache", re.IGNORECASE)  # only to say a cache-like input was not recognised


def _prepare(
    proto: onnx.ModelProto,
    checking: PendingCheck | None,
    options: AnalysisOptions,
    progress: Callable[[str], None],
    label: str = "model",
) -> _Prepared:
    """The model with its functions inlined and its inputs bound, its decoder layout, its nodes
    and their fields: the work done while the ONNX checker judges the model in a child process."""
    phase, partial = options.phase, options.partial
    notes: list[str] = []
    if proto.functions:
        if checking is not None:
            checking.wait()  # the inliner is C++: it sees only a model the checker passed
        # model-local functions are costed through their bodies (a model inlining would blow up is refused)
        proto = inline_functions(proto, label)
    nodes = list(proto.graph.node)
    fields = read_node_fields(nodes)  # once, for this stage and the next ones (binding changes no node)
    separate_sibling_scopes(proto, fields)  # sibling If branches may reuse names; every stage keys tensors by name
    given_shapes, dim_flags = shape_flags(options.input_shapes), dim_values(options.dims)
    fix_digit_dims(proto, fields)  # a dim written "64" is 64, before anything reads the dims
    name_unnamed_batch_axes(proto)  # skl2onnx's batch axis has no name: give it one to bind it by
    if options.ignore_missing_dims:
        symbols = {d.dim_param for i in real_inputs(proto.graph) for d in i.type.tensor_type.shape.dim if d.dim_param}
        dim_flags = {symbol: value for symbol, value in dim_flags.items() if symbol in symbols}
    layout = detect_decoder(proto, prefill_only=phase == "prefill")
    if layout is None:
        notes += _cache_like_inputs(proto)
    explicit_dims = set(dim_flags)
    phase_values, dim_flags = _phase_binding(layout, options, dim_flags)
    fixed = fixed_batch(proto)
    if fixed is not None and fixed.shapes:
        notes.append(fixed.text())
    if options.batch is not None:
        given_shapes, dim_flags = _batch_binding(proto, fixed, options, given_shapes, dim_flags, phase_values)
    # a batch dim nobody gave is 1, and every output says so
    assumed = {} if partial else _assumed_batch_dims(proto, given_shapes, dim_flags)
    bind_inputs(proto, given_shapes, dim_flags)
    if not partial and not (layout is not None and phase is not None) and (unbound := unbound_dims(proto)):
        # (a decoder's phase leaves its head size to the graph: checked once that is bound)
        raise UnboundDims(label, unbound, assumed, decoder=layout is not None)
    progress(f"inferring shapes of {len(nodes):,} nodes")
    return _Prepared(proto, layout, nodes, fields, phase_values, explicit_dims, assumed, notes, fixed)


def _cache_like_inputs(proto: onnx.ModelProto) -> list[str]:
    """A note when inputs are named like a KV cache although no decoder layout was found."""
    looks_like = [i.name for i in real_inputs(proto.graph) if _CACHE_NAME.search(i.name)]
    if not looks_like:
        return []
    return [
        f"input(s) {', '.join(looks_like[:3])} are named like a KV cache, but none is one (looked for "
        f"{LOOKED_FOR}): no decoder phase applies; bind the dims with --dim"
    ]


def _phase_binding(
    layout: DecoderLayout | None, options: AnalysisOptions, dims: dict[str, int]
) -> tuple[dict[str, list[int]], dict[str, int]]:
    """The input values a decoder's phase stands for, and the dims with those it implies (the
    explicit ones win); a phase's length without a phase, or a phase without a cache, refused."""
    phase = options.phase
    if phase is None and (options.seq or options.context or options.encoder_seq):  # a flag that would do nothing
        given = "seq" if options.seq else "context" if options.context else "encoder_seq"
        needed = {"seq": "prefill", "context": "decode", "encoder_seq": "prefill or decode"}[given]
        raise OptionError(
            given,
            f"{{opt.{given}}} sets a decoder's {needed.replace(' or ', '/')} step: give "
            f"{{opt.phase}} {needed.replace(' or ', '|')} with it",
        )
    if phase is None:
        return {}, dims
    if layout is None:
        raise OptionError(
            "phase",
            "{opt.phase} {phase}: no KV cache found (looked for {looked_for}); "
            "bind the model's dims with {opt.dims} instead",
            phase=phase,
            looked_for=LOOKED_FOR,
        )
    implied, phase_values = phase_dims(layout, phase, options.seq, options.context, options.batch, options.encoder_seq)
    dims = implied | dims
    _check_encoder_length(layout, phase, options.encoder_seq, dims)
    return phase_values, dims


def _batch_binding(
    proto: onnx.ModelProto,
    fixed: FixedBatch | None,
    options: AnalysisOptions,
    given_shapes: list,
    dims: dict[str, int],
    phase_values: dict[str, list[int]],
) -> tuple[list, dict[str, int]]:
    """The shapes and dims with ``options.batch`` on axis 0 of every input (a batch a static
    export fixes in its shapes refused where it cannot be changed)."""
    batch = options.batch
    assert batch is not None  # (called only when a batch is given)
    if fixed is not None and (refusal := fixed.refusal(batch)):
        raise OptionError("batch", "{opt.batch} {batch} cannot be analysed: {refusal}", batch=batch, refusal=refusal)
    valued = set(phase_values) | set(value_flags(options.values))  # settings (a merged decoder's switch): no batch
    return batch_flags(proto, batch, given_shapes, dims, valued)


def _assumed_batch_dims(proto: onnx.ModelProto, given_shapes: list, dims: dict[str, int]) -> dict[str, int]:
    """The batch dims nobody gave (by a dim or every input's shape), bound to 1: added to ``dims``."""
    assumed: dict[str, int] = {}
    inputs = real_inputs(proto.graph)
    shaped = {name for name, _ in given_shapes}
    if None in shaped:  # --input-shape 1,3,224,224 names the only input
        shaped |= {i.name for i in inputs}
    for symbol in batch_symbols(proto):
        carriers = [
            i.name
            for i in inputs
            if i.type.tensor_type.shape.dim and i.type.tensor_type.shape.dim[0].dim_param == symbol
        ]
        if symbol not in dims and not all(name in shaped for name in carriers):
            dims[symbol] = assumed[symbol] = 1
    return assumed


def _check_encoder_length(layout: DecoderLayout, phase: str, encoder_seq: int | None, dims: dict[str, int]) -> None:
    """A seq2seq decoder's encoder length is bound (by --encoder-seq, --dim, or fixed in the
    model); --encoder-seq on a decoder without cross-attention is an error."""
    encoder = [symbol for symbol, role in layout.roles.items() if role == "encoder"]
    if encoder_seq is not None and not encoder and not any(c.cross for c in layout.cross):
        raise OptionError(
            "encoder_seq", "{opt.encoder_seq}: this decoder has no cross-attention cache, so no encoder length to bind"
        )
    open_ = [symbol for symbol in encoder if symbol not in dims]
    if open_:
        raise OptionError(
            "encoder_seq",
            "{opt.phase} {phase}: the decoder's cross-attention reads an encoder output "
            "of length {symbol}, which the model leaves open: give {opt.encoder_seq} N (or {opt.dims} "
            "{symbol}=N)",
            phase=phase,
            symbol=open_[0],
        )


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
