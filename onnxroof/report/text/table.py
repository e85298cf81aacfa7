"""Plain-text and CSV renderers for ``onnxroof summary``."""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING

from ...core.dtypes import dtype_name
from ...core.text import csv_cell, printable
from ...core.units import iec, intensity, joules, seconds, si
from ...core.version import __version__
from ...cost.records import NUMBERS
from ...roofline.targets import LatencyKind
from ..bounds import bound_label, time_by_bound
from ..formatting import as_bound, borrowed_mark, edge_lines, energy_words, latency_kind_words, rate_text
from .devices import device_plan_lines
from .names import apart_clips, clip, distinct_clips

if TYPE_CHECKING:
    from ...cost.records import NodeRecord
    from ...findings import Review, TargetReview
    from ...result import Analysis
    from ...roofline.placement import TargetReport

CONVENTIONS_LINE = (
    "MAC-FLOPs = 2 x MACs (bias folded in); FLOPs adds other element ops; counts SI (k M G), bytes IEC (KiB MiB)"
)
TERMINAL_COLUMNS = 120  # what the text outputs fit in: long descriptions wrap, long names are clipped
SHOWN_FINDINGS = 3  # per target in the summary: the others are in the JSON, the Markdown and the HTML report

CSV_COLUMNS = (
    "index",
    "name",
    "op_type",
    "domain",
    "status",
    "dtype",
    "output_shape",
    "macs",
    "mac_flops",
    "flops",
    "params",
    "weight_bytes",
    "input_bytes",
    "output_bytes",
    "intensity",
)


def shape_text(shape: list | None) -> str:
    if shape is None:
        return "?"
    return printable("x".join("?" if d is None else str(d) for d in shape)) or "scalar"  # dim names are the model's


INPUTS_SHOWN = 6  # a KV-cached decoder has a hundred inputs: one line names the first few


def inputs_line(analysis: Analysis) -> str:
    values = analysis.input_values
    shown = ", ".join(
        f"{printable(i.name)} {shape_text(None if i.shape is None else list(i.shape))} {dtype_name(i.dtype)}"
        + (f" = {','.join(map(str, values[i.name]))}" if i.name in values else "")
        for i in analysis.inputs[:INPUTS_SHOWN]
    )
    rest = len(analysis.inputs) - INPUTS_SHOWN
    return shown + (f" and {rest:,} more (--format json lists them)" if rest > 0 else "")


def llm_lines(llm, reports: list[TargetReport] = ()) -> list[str]:
    """The KV-cached decoder block: phase, cache figures, rates (each as the kind of its target's
    latency, from ``reports``: ≤ tokens/s and ≥ time to first token where that is a bound), and
    what was recognised."""
    heads = f", {llm.kv_heads} KV heads x {llm.head_size}" if llm.kv_heads and llm.head_size else ""
    lines = [f"KV-cached decoder ({_phase_text(llm)}): {llm.layers} layers{heads}", *_cache_lines(llm)]
    return lines + _rate_lines(llm, reports) + _recognised_lines(llm)


def _phase_text(llm) -> str:
    if llm.phase == "prefill" and llm.new_tokens:
        return f"prefill of {llm.new_tokens:,} tokens"
    if llm.phase == "decode" and llm.context:
        return f"decode of 1 token at context {llm.context:,}, {llm.context - 1:,} cached"
    return "phase not set: --phase prefill|decode"


def _cache_lines(llm) -> list[str]:
    """The KV cache read and written per step, its size at the context, and a seq2seq decoder's
    cross-attention cache."""
    lines = [
        f"  cache read {iec(llm.kv_read_bytes)} per step (the attended positions, the new ones included); written "
        f"{iec(llm.kv_write_bytes)} ({llm.kv_write_mode})"
        + (f"; {iec(llm.kv_bytes_per_token)} per token" if llm.kv_bytes_per_token else "")
    ]
    if llm.kv_cache_bytes and llm.context:
        lines.append(
            f"  KV cache at context {llm.context:,}: "
            + ", ".join(f"{dtype} {iec(size)}" for dtype, size in llm.kv_cache_bytes.items())
        )
    if llm.cross_read_bytes or llm.cross_length:  # a seq2seq decoder's cross-attention cache, apart
        length = f" of {llm.cross_length:,} encoder positions" if llm.cross_length else ""
        lines.append(
            f"  cross-attention cache{length} (never appended): read {iec(llm.cross_read_bytes)} per step; "
            f"written {iec(llm.cross_write_bytes)}"
            + (" (computed from the encoder output)" if llm.cross_write_bytes else "")
            + (
                "; " + ", ".join(f"{dtype} {iec(size)}" for dtype, size in llm.cross_cache_bytes.items())
                if llm.cross_cache_bytes
                else ""
            )
        )
    return lines


def _rate_lines(llm, reports: list[TargetReport]) -> list[str]:
    """Tokens/s and time to first token per target, as bounds where the target's report is one."""
    lines = []
    kinds = {report.target.name: report for report in reports}
    for target, rate in llm.tokens_per_s.items():
        first, report = llm.time_to_first_token_s.get(target), kinds.get(target)
        rate_shown = rate_text(rate, report) if report is not None else f"{rate:,.1f}"
        first_text = f"{first * 1e3:,.3f} ms" if first else ""
        if report is not None and not report.complete:  # nodes left out: the rates are bounds
            rate_shown = as_bound(rate_shown, report, at_most=True)
            first_text = first_text and as_bound(first_text, report)
        lines.append(
            f"  {target}: {rate_shown} tokens/s" + (f", time to first token {first_text}" if first_text else "")
        )
    return lines


def _recognised_lines(llm) -> list[str]:
    """What the search recognised: two of each kind of cache, then the rest."""
    lines = []
    for kind in ("cache ", "cross-attention cache "):
        caches = [line for line in llm.recognised if line.startswith(kind)]
        lines += [f"  recognised: {printable(line)}" for line in caches[:2]]
        if len(caches) > 2:
            lines.append(f"  recognised: ... and {len(caches) - 2} more {kind.strip()}s (--format json lists them)")
    lines += [
        f"  recognised: {printable(line)}"
        for line in llm.recognised
        if not line.startswith(("cache ", "cross-attention cache "))
    ]
    return lines


def assumed_text(assumed: dict[str, int]) -> str:
    """ "batch=1 (a batch dim the inputs leave open; --dim batch=N to change)"."""
    pairs = ", ".join(f"{printable(symbol)}={value}" for symbol, value in assumed.items())  # the model's dim names
    flags = " ".join(f"--dim {printable(symbol)}=N" for symbol in assumed)
    return f"{pairs} (a batch dim the inputs leave open; {flags} or --batch N to change)"


def incomplete_line(analysis: Analysis) -> str:
    """The first line of an analysis that could not count everything: what is missing, and that
    the totals are lower bounds (the warnings say why)."""
    figures = "the totals and latencies are lower bounds" if analysis.targets else "the totals are lower bounds"
    return f"INCOMPLETE: {analysis.missing or 'not everything was counted'}; {figures} (see the warnings)"


def formulas_header(declared: Analysis, formulas) -> list[str]:
    """The first lines of `summary --symbolic`, as every output starts: the model, its inputs as
    ``declared`` (a partial analysis: the free dims by name) and the dims the fits assumed."""
    model = declared.model
    assumed = formulas.context.assumed_dims if formulas.context is not None else {}
    return [
        f"onnxroof {__version__} · {printable(model.label)} · opset {model.opset} · {model.node_count} nodes"
        + (f" · {printable(model.producer)}" if model.producer else ""),
        *textwrap.wrap(f"inputs: {_declared_inputs_text(declared)}", 120, subsequent_indent="  "),
        *([f"assumed: {assumed_text(assumed)}"] if assumed else []),
        "",
    ]


def _declared_inputs_text(declared: Analysis) -> str:
    """``images batch x 3 x height x width float32``: spaced, as dim names run into an x."""
    shown = [
        f"{printable(i.name)} "
        f"{'unknown' if i.shape is None else printable(' x '.join(map(str, i.shape))) or 'scalar'} "
        f"{dtype_name(i.dtype)}"
        for i in declared.inputs[:INPUTS_SHOWN]
    ]
    rest = len(declared.inputs) - INPUTS_SHOWN
    return ", ".join(shown) + (f" and {rest:,} more" if rest > 0 else "")


def render_table(analysis: Analysis, review: Review | None = None) -> str:
    return "".join(table_chunks(analysis, review))


def table_chunks(analysis: Analysis, review: Review | None = None) -> list[str]:
    """The text table in chunks to write one after the other: the summary, then the node table. Kept
    apart, a big model's node table (ASCII for most models) is encoded by plain copying, and is not
    copied again into one string with the summary's "·". ``review``: the findings stage's, whose fit
    and findings each target's block shows (none without it)."""
    model, totals = analysis.model, analysis.totals
    lines = [
        *([incomplete_line(analysis)] if not analysis.complete else []),
        f"onnxroof {__version__} · {printable(model.label)} · opset {model.opset} · {model.node_count} nodes"
        + (f" · {printable(model.producer)}" if model.producer else ""),
        f"inputs: {inputs_line(analysis)}",
        *([f"assumed: {assumed_text(analysis.assumed_dims)}"] if analysis.assumed_dims else []),
        f"conventions: {CONVENTIONS_LINE}",
        "",
        "Totals",
        f"  params     {si(totals.params):>10}  ({totals.params:,}; {iec(totals.param_bytes)} = "
        f"{totals.param_bytes:,} B stored)",
        *(
            [
                f"  weights read {iec(totals.weight_bytes_read):>8}  ({totals.weight_bytes_read:,} B per run: "
                "the nodes read folded or partial constants, not the stored tensors)"
            ]
            if totals.weight_bytes_read != totals.param_bytes
            else []
        ),
        f"  MACs       {si(totals.macs):>10}  ({totals.macs:,})",
        f"  MAC-FLOPs  {si(totals.mac_flops):>10}  ({totals.mac_flops:,})",
        f"  FLOPs      {si(totals.flops):>10}  ({totals.flops:,})",
        f"  nodes      {totals.nodes:>10}  ({totals.counted_nodes:,} counted)",
    ]
    memory = analysis.memory
    best = memory.best.schedule
    lines += [
        "",
        "Peak activation memory (live tensors, parameters excluded)",
        f"  model order  {iec(memory.model_order.peak_bytes):>10}  at step {memory.model_order.peak_step} "
        f"({clip(memory.model_order.peak_node or '-', 40)}): "
        + ", ".join(f"{clip(n, 30)} {iec(b)}" for n, b in memory.model_order.peak_tensors[:4]),
        f"  best order   {iec(best.peak_bytes):>10}  "
        f"({memory.best.method}{'; ' + memory.best.note if memory.best.note else ''})",
        f"  lower bound  {iec(memory.largest_layer_bytes):>10}  "
        f"(largest single layer: {clip(memory.largest_layer_node or '-', 40)})",
        f"  concat copy  {iec(memory.concat_copy_peak_bytes):>10}  (model order, if Concat copied its inputs)",
    ]
    if analysis.llm is not None:
        lines += ["", *llm_lines(analysis.llm, analysis.targets)]
    # a decode step makes one token per batch row: its rate in tokens/s, as its KV section gives it
    unit = "tokens/s" if analysis.llm is not None and analysis.llm.phase == "decode" else "inferences/s"
    for report in analysis.targets:
        lines += [""] + target_lines(report, review.of(report) if review is not None else None, unit)
    for plan in analysis.parallel:  # --devices N > 1
        lines += ["", *device_plan_lines(plan)]
    if analysis.warnings:
        lines += ["", "Warnings"] + [f"  ! {printable(w)}" for w in analysis.warnings]
    # the nodes a run executes: a control-flow node's placed branch or body in its place (Analysis.run_view)
    return ["\n".join(lines) + "\n\n", _node_table(analysis.run_view.nodes), "\n"]  # a blank line before the nodes


_NODE_HEADER = ("#", "name", "op", "dtype", "output", "MACs", "FLOPs", "params", "weights", "in", "out", "FLOP/B", "")
_RIGHT_ALIGNED = frozenset({0, 5, 6, 7, 8, 9, 10, 11})


def _node_table(records: list[NodeRecord]) -> str:
    """One aligned row per node. Rows differ in index and name; everything right of the name (the
    "tail": op, dtype, shape, numbers, reason) repeats wherever a model repeats a layer, so each
    distinct tail is formatted once."""
    rows = _look_alike_rows(records)
    tail_cells = [_NODE_HEADER[2:]]
    for r in rows.firsts:
        tail_cells.append(
            (
                printable(r.op_type),
                r.dtype,
                shape_text(_output_shape(r)),
                si(r.macs),
                si(r.flops),
                si(r.params),
                iec(r.weight_bytes),
                iec(r.input_bytes),
                iec(r.output_bytes),
                intensity(r.intensity),
                f"NOT COUNTED: {printable(r.reason)}"
                if not r.counted
                else f"runs x {r.runs:,} (a loop body's: one run's figures)"
                if r.runs > 1
                else "",
            )
        )
    indices = [_NODE_HEADER[0], *map(str, rows.indices)]
    names = [_NODE_HEADER[1], *rows.names]
    if max(map(len, names)) > 40 or not all(map(str.isprintable, names)):  # most models: no name to clip
        names = apart_clips(names, 40)
    columns = len(_NODE_HEADER) - 1  # the last column (the reason) is not padded
    widths = [max(map(len, indices)), max(map(len, names))]
    widths += [max(len(cells[i]) for cells in tail_cells) for i in range(columns - 2)]
    excess = sum(widths) + 2 * (columns - 1) - TERMINAL_COLUMNS
    for column, floor in ((1, 16), (2, 12)):  # long names give way first, then long op types
        cut = min(max(excess, 0), max(widths[column] - floor, 0))
        widths[column] -= cut
        excess -= cut
    if widths[1] < max(map(len, names)):
        names = apart_clips(names, widths[1])  # middle-clipped, but never two rows alike
    if widths[2] < max(len(cells[0]) for cells in tail_cells):
        tail_cells = [(clip(cells[0], widths[2]), *cells[1:]) for cells in tail_cells]
    tail_texts = [
        (
            "  ".join(
                cell.rjust(widths[i]) if i in _RIGHT_ALIGNED else cell.ljust(widths[i])
                for i, cell in enumerate(cells[:-1], start=2)
            )
            + "  "
            + cells[-1]
        ).rstrip()
        for cells in tail_cells
    ]
    # every tail has a non-blank numeric cell, so stripping it alone strips the whole row
    header_tail, *group_tails = tail_texts
    tails = [header_tail, *map(group_tails.__getitem__, rows.groups)]
    return "\n".join(
        map("  ".join, zip(map(str.rjust, indices, repeat(widths[0])), map(str.ljust, names, repeat(widths[1])), tails))
    )


def _output_shape(record: NodeRecord) -> list | None:
    return record.output_shapes[0] if record.output_shapes else None


@dataclass(slots=True)
class LookAlikeRows:
    """The nodes in rows, grouped by everything a table or CSV row shows but the index and name."""

    indices: list[int]
    names: list[str]
    groups: list[int]  # each row's group: its position in ``firsts``
    firsts: list[NodeRecord]  # each group's first node


def _look_alike_rows(records: list[NodeRecord]) -> LookAlikeRows:
    """One pass over the nodes (a big model's records do not fit in the cache, so every pass costs):
    each row's index, name and group. Dims are ints or names, so equal shapes print alike."""
    rows = LookAlikeRows([], [], [], [])
    add_index, add_name, add_group = rows.indices.append, rows.names.append, rows.groups.append
    groups: dict[tuple, int] = {}
    for r in records:
        shapes = r.output_shapes
        shape = tuple(shapes[0]) if shapes and shapes[0] is not None else None
        key = (r.op_type, r.domain, r.dtype, shape, *NUMBERS(r), r.status, r.reason, r.runs)
        group = groups.get(key)
        if group is None:
            group = groups[key] = len(rows.firsts)
            rows.firsts.append(r)
        add_index(r.index)
        add_name(r.name)
        add_group(group)
    return rows


def render_csv(analysis: Analysis) -> str:
    """One row per node. The model's text (names, op types, domains, dims) is made safe for a
    terminal and a spreadsheet program: control characters as '?', and a cell that starts as a
    formula (= + - @, tab, carriage return) prefixed with ' (the OWASP rule)."""
    import csv  # only this format needs it

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    rows = _look_alike_rows(analysis.run_view.nodes)  # the nodes a run executes, as the text table
    tails = [  # each group's cells right of the name
        (
            csv_cell(r.op_type),
            csv_cell(r.domain),
            r.status,
            r.dtype,
            csv_cell(shape_text(_output_shape(r))),
            r.macs,
            r.mac_flops,
            r.flops,
            r.params,
            r.weight_bytes,
            r.input_bytes,
            r.output_bytes,
            "" if r.intensity is None else f"{r.intensity:.6g}",
        )
        for r in rows.firsts
    ]
    for index, name, group in zip(rows.indices, rows.names, rows.groups):
        writer.writerow((index, csv_cell(name), *tails[group]))
    return buffer.getvalue()


def target_lines(report, reviewed: TargetReview | None = None, unit: str = "inferences/s") -> list[str]:
    """One target: latency, frame rate (``unit``: a decode step's is tokens/s), bound shares, energy,
    the model point, top-5 nodes; with ``reviewed`` (its part of the review), whether the model fits
    in its memory and what to change."""
    import textwrap

    lines = [
        *textwrap.wrap(
            f"Target {printable(report.target.name)} ({report.dtype}, batch {report.batch}): "
            f"{printable(report.target.description)}",
            TERMINAL_COLUMNS,
            subsequent_indent="    ",
        ),
        *textwrap.wrap(
            f"  latency {as_bound(seconds(report.latency_s), report)}{borrowed_mark(report)} · "
            f"{as_bound(rate_text(report.throughput_per_s, report), report, at_most=True)} {unit} · "
            f"utilization {report.utilization:.1%}"
            # a pipeline's time is its stages', not its kernels' on the roofline
            + ("" if report.dataflow else f" · time: {time_by_bound(report.time_share)}"),
            TERMINAL_COLUMNS,
            subsequent_indent="    ",
        ),
        *textwrap.wrap(f"  latency: {latency_kind_words(report)}", TERMINAL_COLUMNS, subsequent_indent="    "),
        *(
            line
            for label, words in edge_lines(report)
            for line in textwrap.wrap(f"  {label}: {words}", TERMINAL_COLUMNS, subsequent_indent="    ")
        ),
        _model_point_line(report),
        *textwrap.wrap(energy_line(report), TERMINAL_COLUMNS, subsequent_indent="    "),
    ]
    fit, findings = (reviewed.fit, reviewed.findings) if reviewed is not None else (None, ())
    if fit is not None:
        from ...findings.wording import fit_text  # (the findings package is loaded once an analysis was reviewed)

        lines += textwrap.wrap(f"  memory: {fit_text(fit)}", TERMINAL_COLUMNS, subsequent_indent="    ")
    if report.spilled:
        lines.append(f"  spills {len(report.spilled)} tensor(s) to DRAM: {iec(report.spill_bytes)} extra traffic")
    if findings:
        from ...findings.wording import finding_lines

        caveat = f"; {report.findings_caveat}" if report.findings_caveat else ""
        lines += textwrap.wrap(
            f"  what to change (each gain measured by analysing again with the change{caveat}):",
            TERMINAL_COLUMNS,
            subsequent_indent="    ",
        )
        lines += finding_lines(
            [f for f in findings if f.kind != "largest"][:SHOWN_FINDINGS] or list(findings[:1]),
            TERMINAL_COLUMNS,
            indent="    ",
        )
    lines += [
        line
        for note in report.notes
        for line in textwrap.wrap(f"  note: {printable(note)}", TERMINAL_COLUMNS, subsequent_indent="        ")
    ]
    if report.dataflow:
        return lines + _stage_lines(report.dataflow)
    lines.append("  top kernels by time:")
    top = report.top_nodes(5)
    for node, name in zip(top, distinct_clips([n.name for n in top], 40)):
        p = node.placement
        share = p.time_s / report.latency_s if report.latency_s else 0
        lines.append(
            f"    {name:40} {clip(node.op_type, 24):24} {seconds(p.time_s):>9} {share:6.1%}  "
            f"{bound_label(p.bound):11} {intensity(p.intensity):>8} FLOP/B"
        )  # "parallelism": 11
    return lines


def _stage_lines(timing) -> list[str]:
    """A pipeline's heaviest stages: each layer's share of a frame's work and its stage time."""
    layers = sorted(
        ((layer, stage_s) for c in timing.contexts for layer, stage_s in zip(c.layers, c.stage_s)),
        key=lambda pair: -pair[0].flops,
    )[:5]
    how = "stage per frame" if not timing.bound else "its work at the peak"
    lines = [f"  heaviest stages (share of a frame's work; {how}):"]
    for (layer, stage_s), name in zip(layers, distinct_clips([layer.name for layer, _ in layers], 40)):
        time_s = layer.flops / timing.peak_flops_per_s if timing.bound and timing.peak_flops_per_s else stage_s
        lines.append(f"    {name:40} {timing.work_share(layer.name):6.1%} {seconds(time_s):>9}")
    return lines


def energy_line(report) -> str:
    """The energy of one run, and what it counts: the work's dynamic energy by part, and the
    static power x latency where the target states its static power (else it says "dynamic")."""
    split = report.energy_split_j
    dynamic = f"compute {joules(split['compute'])}, on-chip {joules(split['onchip'])}, DRAM {joules(split['dram'])}"
    static = report.target.static_power_w
    if static is not None and "static" in split:
        at_least = "≥ " if report.latency_kind == LatencyKind.BOUND else ""  # the latency it multiplies is a bound
        parts = f"dynamic: {dynamic}; static {at_least}{joules(split['static'])} = {static.value:g} W x the latency"
    else:
        parts = f"{dynamic}; the target states no static power"
    return f"  {energy_words(report)} {joules(report.energy_j)} ({parts})" + (
        "" if report.edp_js is None else f" · EDP {report.edp_js:.3g} J·s"
    )


def render_sweep_table(points) -> str:
    """One row per sweep point: how compute, bytes, memory and each target's time and bound move.
    A latency is shown as what it is (``≥`` a bound); a point that left nodes out says how many in
    its "counted" column, and a line under the table says its figures are bounds."""
    symbols = list(points[0].values) if points else []
    targets = [r.target.name for r in points[0].analysis.targets] if points else []
    header = [*symbols, "MAC-FLOPs", "FLOPs", "param bytes", "peak act.", "best peak"]
    for target in targets:
        header += [f"{target} latency", "model bound", "time by bound", "FLOP/B"]
    if points and points[0].analysis.llm is not None:
        header += ["KV read", *(f"{t} tok/s" for t in targets)]
    header.append("nodes counted")
    rows = [header]
    for point in points:
        a = point.analysis
        row = [str(point.values[s]) for s in symbols]
        counted = f"{a.totals.counted_nodes:,}/{a.totals.nodes:,}" + ("" if a.complete else " INCOMPLETE")
        row += [
            si(a.totals.mac_flops),
            si(a.totals.flops),
            iec(a.totals.param_bytes),
            iec(a.memory.model_order.peak_bytes),
            iec(a.memory.best.schedule.peak_bytes),
        ]
        for report in a.targets:
            row += [
                as_bound(seconds(report.latency_s), report),
                bound_label(report.model_point.bound),
                time_by_bound(report.time_share),
                intensity(report.model_point.intensity),
            ]
        if a.llm is not None:
            row += [
                iec(a.llm.kv_read_bytes),
                *(
                    as_bound(f"{a.llm.tokens_per_s.get(t, 0):,.1f}", report, at_most=True)
                    for t, report in zip(targets, a.targets)
                ),
            ]
        rows.append([*row, counted])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    notes = [
        f"{point.label}: INCOMPLETE, {point.analysis.bounds_note}" for point in points if not point.analysis.complete
    ]
    return "\n".join(["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows] + notes) + "\n"


def _model_point_line(report: TargetReport) -> str:
    """The whole-model point on the target's roofline: its kernels only, when an Edge TPU's graph
    cut runs the others on the host (which has a roofline of its own)."""
    point, cut = report.model_point, report.edge_tpu_cut
    if cut is not None and cut.host_kernels >= cut.kernels:
        return f"  model point: none on {report.target.name} (the whole graph runs on {cut.host})"
    which = f" ({cut.kernels - cut.host_kernels} kernels before the cut)" if cut is not None else ""
    return (
        f"  model point{which}: {intensity(point.intensity)} FLOP/B on the {point.roof} roof "
        f"(ridge {intensity(report.target.ridge(point.roof))}): {bound_label(point.bound)}-bound, "
        f"{seconds(point.time_s)}"
    )
