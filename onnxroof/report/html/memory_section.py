"""The model page's memory section: live activations, the memory stage's numbers explained and drawn.

Four cards (the model-order peak, the best order found, the largest-layer lower bound, the peak
if Concat copied), a paragraph on what is live at the peak and why, the tensors live there (the
:data:`PEAK_ROWS_SHOWN` largest, the rest summed in one row) and the timeline of both orders,
one column per pixel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...core.units import iec
from ..formatting import shape_text, share_percent
from .chart_context import MEMORY_CHART_SIZE, capacity_lines, peak_marker, timeline_frame
from .charts import TimelineChart, timeline_chart
from .page import bar_width
from .scales import svg_number

if TYPE_CHECKING:
    from ...memory.liveness import MemoryReport
    from ...memory.problem import Schedule
    from ...result import Analysis

PEAK_ROWS_SHOWN = 12  # rows of the live-at-the-peak table; the rest are summed in one row
METHOD_LABELS = {"exact": "exact search", "heuristic": "greedy heuristic", "model order": "model order kept"}
_LABEL_CHARS = 36  # node names longer than this are cut on the chart (the titles keep them whole)


def memory_context(analysis: Analysis, capacities: Sequence[tuple[str, int]] = ()) -> dict | None:
    report = analysis.memory
    if report is None:
        return None
    model, best = report.model_order, report.best.schedule
    if not model.order:
        return {"empty": True}
    same_order = list(model.order) == list(best.order)
    problem = report.problem
    buffers = {b.name: b for b in problem.buffers}
    position = {node: step for step, node in enumerate(model.order)}
    records = {r.name: r for r in analysis.nodes}
    tensors = analysis.tensors
    unknown = sorted(n for n, t in tensors.items() if t.kind in ("input", "activation") and t.bytes is None)
    bound = "≥ " if unknown else ""
    concats = sum(1 for r in analysis.nodes if r.op_type == "Concat")
    method = report.best.method
    # a KV-cached decoder holds a hundred caches at its peak: the biggest show, the rest are summed
    rows = [
        _peak_row(name, size, model, buffers, tensors, position) for name, size in model.peak_tensors[:PEAK_ROWS_SHOWN]
    ]
    rest = model.peak_tensors[PEAK_ROWS_SHOWN:]
    rest_row = (
        {"count": f"{len(rest):,}", **_share_cells(sum(size for _, size in rest), model.peak_bytes)} if rest else None
    )
    chart = timeline_chart(
        [("model", list(model.live_bytes)), ("best", list(best.live_bytes))],
        [(label, size) for label, size in capacities],
        width=MEMORY_CHART_SIZE[0],
        height=MEMORY_CHART_SIZE[1],
    )
    return {
        "empty": False,
        "bound": bound,
        "unknown": (
            f"{len(unknown):,} activation tensor(s) of unknown size are left out: every figure here is a lower bound"
            if unknown
            else ""
        ),
        "cards": _cards(report, records, bound, same_order, concats),
        "explanation": _memory_explanation(
            report, problem_buffers=buffers, position=position, records=records, tensors=tensors, concats=concats
        )
        if model.peak_bytes
        else (
            "No activation of known size is live at any step"
            + (": bind the input dims named in the warnings to size them." if unknown else ".")
        ),
        "rows": rows,
        "rest": rest_row,
        "peak_step": str(model.peak_step),
        "peak_node": model.peak_node,
        "chart": _chart_context(chart, report, records, same_order),
        "same_order": same_order,
        "method": METHOD_LABELS.get(method, method),
        "note": report.best.note,
        "in_place": "elementwise ops overwrite their input in place" if report.elementwise_in_place else "",
    }


def _peak_row(name: str, size: int, model: Schedule, buffers: dict, tensors: dict, position: dict[str, int]) -> dict:
    """A tensor live at the peak: what produced it, its shape, what the peak node does with it."""
    buffer = buffers.get(name)
    tensor = tensors.get(name)
    role, role_title = _buffer_role(buffer, model.peak_node, model.peak_step, position) if buffer else ("live", "")
    slices = [t for t in (buffer.tensors if buffer else ()) if t != name]
    if tensor is not None:
        producer = tensor.producer or "graph input"
    else:  # no tensor: an If/Loop/Scan's scratch, its subgraph's own peak
        producer = ", ".join(sorted(buffer.allocators)) if buffer and buffer.allocators else "?"
    return {
        "name": name,
        "slices": ", ".join(slices),
        "producer": producer,
        "shape": shape_text(tensor.shape) if tensor else "—",
        "dtype": tensor.dtype if tensor else "",
        "role": role,
        "role_title": role_title,
        **_share_cells(size, model.peak_bytes),
    }


def _cards(report: MemoryReport, records: dict, bound: str, same_order: bool, concats: int) -> list[dict]:
    """The four cards: the model-order peak, the best order found, the largest-layer lower bound
    and the peak if Concat copied."""
    model, best = report.model_order, report.best.schedule
    peak, peak_step, peak_node = model.peak_bytes, model.peak_step, model.peak_node
    lower_bound, lower_node = report.largest_layer_bytes, report.largest_layer_node
    concat_copy = report.concat_copy_peak_bytes
    method = report.best.method
    reduction = peak - best.peak_bytes
    if same_order and best.peak_bytes <= lower_bound:
        best_sub = "the model order: already optimal"
    elif same_order:
        best_sub = f"the model order ({METHOD_LABELS.get(method, method)})"
    else:
        best_sub = f"{METHOD_LABELS.get(method, method)} · step {best.peak_step} · {best.peak_node}"
    if concats == 0:
        concat_sub = "no Concat in this model"
    elif concat_copy == peak:
        concat_sub = "unchanged: no copy at the peak"
    else:
        concat_sub = f"+{iec(concat_copy - peak)} over writing in place"
    return [
        {
            "label": "Peak live activations",
            "value": bound + iec(peak),
            "title": f"{peak:,} bytes live at step {peak_step} of the model order",
            "sub": f"model order · step {peak_step} · {peak_node}",
            "sub_title": (
                f"{peak_node} ({records[peak_node].op_type}) runs at step {peak_step}" if peak_node in records else ""
            ),
            "delta": "",
            "cls": "",
        },
        {
            "label": "Best order found",
            "value": bound + iec(best.peak_bytes),
            "title": f"{best.peak_bytes:,} bytes at step {best.peak_step} of the best order",
            "sub": best_sub,
            "sub_title": report.best.note,
            "delta": ("−" + iec(reduction) + f" ({share_percent(reduction / peak)})") if reduction > 0 else "",
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


def _share_cells(size: int, peak: int) -> dict[str, str]:
    """A row's bytes and its share of the peak, as the live-at-the-peak table shows them."""
    share = size / peak if peak else 0.0
    return {
        "bytes": iec(size),
        "bytes_title": f"{size:,} bytes",
        "share": share_percent(share),
        "bar": bar_width(share),
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


def _memory_explanation(
    report: MemoryReport, *, problem_buffers: dict, position: dict[str, int], records: dict, tensors: dict, concats: int
) -> str:
    """One plain-language paragraph from the memory numbers (the template only places it)."""
    model = report.model_order
    peak, step, node = model.peak_bytes, model.peak_step, model.peak_node
    op = records[node].op_type if node in records else "?"
    read, written, held = _peak_buffers(model, problem_buffers, position, records, tensors)
    others = [phrase for phrase, *_ in read + held if phrase != "its own output"]
    if len(others) > 3:
        others = [f"{len(others)} other buffers"]
    text = f"At step {step}, {node} ({op}) runs"
    if others:
        verb = "is" if len(others) == 1 and "buffers" not in others[0] else "are"
        text += f" while {_join(others)} {verb} still live"
    actions = _peak_actions(read, written, held)
    exact = f"{iec(peak)} ({peak:,} bytes)" if peak >= 1024 else f"{peak:,} bytes"
    text += (": " + "; ".join(actions) if actions else "") + f". That is {exact} live in all."
    return text + _ties_sentence(model) + _order_sentence(report) + (_concat_sentence(report) if concats else "")


def _peak_buffers(
    model: Schedule, problem_buffers: dict, position: dict[str, int], records: dict, tensors: dict
) -> tuple[list, list, list]:
    """The buffers live at the peak, as (phrase, bytes): those the peak node reads, those it
    writes, and those held for later nodes (phrase, bytes, ", needed by NODE at step N")."""
    step, node = model.peak_step, model.peak_node
    read, written, held = [], [], []
    for name, size in model.peak_tensors:
        buffer = problem_buffers.get(name)
        item = (_buffer_phrase(name, buffer, tensors, node, records), size)
        if buffer is not None and node in buffer.allocators:
            written.append(item)
        elif buffer is not None and node in buffer.readers:
            read.append(item)
        else:
            later = sorted((position[r], r) for r in buffer.readers if position.get(r, -1) > step) if buffer else []
            held.append((item[0], item[1], f", needed by {later[0][1]} at step {later[0][0]}" if later else ""))
    return read, written, held


def _sized(items: list) -> str:
    """``a (1 KiB) and b (2 KiB, needed by ...)``."""
    return _join([f"{phrase} ({iec(size)}{extra[0] if extra else ''})" for phrase, size, *extra in items])


def _peak_actions(read: list, written: list, held: list) -> list[str]:
    """What the peak node does: reads, writes (one clause when it does both), and what waits."""
    actions = []
    if read:
        actions.append(f"it reads {_sized(read)}")
    if written:
        actions.append(("and writes " if read else "it writes ") + _sized(written))
    if read and written:
        actions[0:2] = [actions[0] + " " + actions[1]]
    if len(held) > 2:
        waiting = sum(size for _, size, _ in held)
        actions.append(f"{len(held)} more ({iec(waiting)}) wait for later nodes")
    elif held:
        actions.append(f"{_sized(held)} {'waits' if len(held) == 1 else 'wait'} for a later node")
    return actions


def _ties_sentence(model: Schedule) -> str:
    """The other steps with the same live total as the peak, the first six named."""
    peak, step = model.peak_bytes, model.peak_step
    ties = [s for s, live in enumerate(model.live_bytes) if live == peak and s != step]
    if not ties:
        return ""
    listed = _join([str(t) for t in ties[:6]]) + (f" and {len(ties) - 6} more" if len(ties) > 6 else "")
    return f" The same total recurs at step{'s' if len(ties) > 1 else ''} {listed}."


def _order_sentence(report: MemoryReport) -> str:
    """Whether another execution order peaks lower, and whether any could."""
    peak, node = report.model_order.peak_bytes, report.model_order.peak_node
    text = ""
    best, method = report.best.schedule.peak_bytes, report.best.method
    lower, lower_node = report.largest_layer_bytes, report.largest_layer_node
    if best < peak:
        saved = peak - best
        how = {"exact": "exact search", "heuristic": "greedy heuristic"}.get(method, "")
        text += (
            f" Reordering helps: the best order{' (' + how + ')' if how else ''} peaks at {iec(best)} "
            f"({best:,} bytes), {iec(saved)} ({share_percent(saved / peak)}) lower, at step "
            f"{report.best.schedule.peak_step} ({report.best.schedule.peak_node})."
        )
        if best <= lower:
            text += f" That meets the largest-layer lower bound ({lower_node}), so no order can do better."
    elif peak <= lower:
        who = "this node" if lower_node == node else lower_node
        text += (
            f" No execution order can go lower: {who} alone needs {iec(lower)} for its inputs and outputs "
            "(the largest-layer lower bound), so the model's own order is already optimal."
        )
    elif method == "exact":
        text += (
            f" An exact search over execution orders found none with a lower peak; the largest-layer "
            f"lower bound is {iec(lower)} ({lower_node})."
        )
    else:
        text += f" The search found no order with a lower peak ({report.best.note})."
    return text


def _concat_sentence(report: MemoryReport) -> str:
    """What the peak would be if Concat copied its inputs rather than taking them in place."""
    peak, copy = report.model_order.peak_bytes, report.concat_copy_peak_bytes
    if copy == peak:
        return (
            " Concat inputs are written straight into the concat buffer; copying them instead would "
            "leave this peak unchanged."
        )
    return (
        " Concat inputs are written straight into the concat buffer; if Concat copied them, the peak "
        f"would be {iec(copy)} ({copy:,} bytes, +{iec(copy - peak)})."
    )


def _short(name: str) -> str:
    return name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"


def _chart_context(chart: TimelineChart, report: MemoryReport, records: dict, same_order: bool) -> dict:
    """Strings for the timeline SVG: every coordinate already a number, every title already text."""
    model_order, best_order = report.model_order, report.best.schedule
    plot = chart.plot
    model, best = chart.series

    def op_of(node: str) -> str:
        return records[node].op_type if node in records else "?"

    def describe(schedule: Schedule, first: int, last: int) -> str:
        live = schedule.live_bytes
        if first == last:
            node = schedule.order[first]
            return f"{node} ({op_of(node)}): {iec(live[first])} ({live[first]:,} bytes)"
        top = max(range(first, min(last + 1, len(live))), key=lambda step: (live[step], -step))
        node = schedule.order[top]
        return f"max {iec(live[top])} ({live[top]:,} bytes) at step {top}, {node} ({op_of(node)})"

    columns = []
    for column in chart.columns:
        head = f"step {column.first}" if column.first == column.last else f"steps {column.first}–{column.last}"
        lines = [head, "model order: " + describe(model_order, column.first, column.last)]
        if same_order:
            lines.append("best order: the same")
        elif column.first < len(best_order.order):
            last = min(column.last, len(best_order.order) - 1)
            lines.append("best order: " + describe(best_order, column.first, last))
        columns.append({"x": svg_number(column.x), "width": svg_number(column.width), "title": "\n".join(lines)})

    markers = []
    peak_title = (
        f"Peak, model order: {model_order.peak_bytes:,} bytes ({iec(model_order.peak_bytes)}) at step "
        f"{model_order.peak_step}, {model_order.peak_node}"
    )
    if model.peak is not None:
        label = f"peak {iec(model.peak.value)} · step {model.peak.step} · {_short(model_order.peak_node)}"
        markers.append(peak_marker(model.peak, plot, "model", peak_title, label))
    if best.peak is not None and (best.peak.step, best.peak.value) != (model.peak.step, model.peak.value):
        title = (
            f"Peak, best order: {best_order.peak_bytes:,} bytes "
            f"({iec(best_order.peak_bytes)}) at step {best_order.peak_step}, "
            f"{best_order.peak_node}"
        )
        label = f"best {iec(best.peak.value)} · step {best.peak.step} · {_short(best_order.peak_node)}"
        second = peak_marker(best.peak, plot, "best", title, label, near=best.peak.y - plot.top > 30)
        markers.append(second)
    series = [
        {
            "key": "model",
            "d": model.path,
            "title": f"Model order: live activation bytes per step (peak {model_order.peak_bytes:,} bytes)",
        },
        {
            "key": "best",
            "d": best.path,
            "title": f"Best order: live activation bytes per step (peak {best_order.peak_bytes:,} bytes)"
            + (", the same order as the model's" if same_order else ""),
        },
    ]
    references = capacity_lines(chart, [float(marker["cx"]) for marker in markers])
    off_scale = [f"{line.label} ({iec(line.value)})" for line in chart.references if line.y is None]
    return {
        **timeline_frame(chart),
        "area": model.area,
        # identical orders: the best-order line goes under the model line rather than muddying it
        "series": series[::-1] if same_order else series,
        "markers": markers,
        "references": references,
        "off_scale": ", ".join(off_scale),
        "columns": columns,
        "steps": f"{chart.steps:,}",
        "summary": (
            f"Live activation bytes at each of {chart.steps:,} steps, model order"
            + (" (the best order is the same)" if same_order else " and best order")
            + f"; peak {iec(model_order.peak_bytes)} at step {model_order.peak_step}."
        ),
    }
