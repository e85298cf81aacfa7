"""Renderers for ``onnxroof diff`` (table, Markdown for a PR comment, JSON) and
``onnxroof compare`` (table, Markdown, JSON). They format; the numbers come from onnxroof.compare.diff."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ...core.units import iec, si
from ...core.version import __version__
from ...findings.wording import gain_text
from ...result.entries import target_entry
from ..bounds import bound_label, time_by_bound
from ..formatting import as_bound, format_value, percent_text, side_time, side_value, signed_change, verdict
from .markdown import details, escape, html_text, table

if TYPE_CHECKING:
    from ...compare.budgets import BudgetResult
    from ...compare.diff import Delta, ModelDiff
    from ...result import Analysis

SCHEMA = "onnxroof-diff/1"


def _deltas(diff: ModelDiff) -> list[tuple[str, Delta]]:
    rows = [(d.label, d) for d in diff.totals]
    for target, deltas in diff.targets.items():
        rows += [(f"{d.label} [{target}]", d) for d in deltas]
    return rows


def summary_line(diff: ModelDiff) -> str:
    keys = {"params", "flops", "peak_memory"}
    parts = [f"{d.label} {percent_text(d, threshold=diff.threshold)}" for d in diff.totals if d.key in keys]
    parts += [
        f"latency [{t}] {percent_text(d, threshold=diff.threshold)}"
        for t, ds in diff.targets.items()
        for d in ds
        if d.key == "latency_s"
    ]
    return " · ".join(parts)


def incomplete_sides(diff: ModelDiff) -> list[str]:
    """A line per side whose analysis left nodes out: its latencies, energy and traffic are lower
    bounds, its throughputs upper ones, so a change against it is a bound too."""
    return [
        f"{side} ({analysis.model.name}) is INCOMPLETE: {analysis.bounds_note}; each change against it is a "
        "bound (≥, ≤)"
        for side, analysis in (("base", diff.base), ("head", diff.head))
        if not analysis.complete
    ]


def target_origins(analyses: Iterable[Analysis]) -> list[str]:
    """A line per target not read from onnxroof's own files (``./hardware``, the user's folder, a
    path): the figures a diff or a comparison, and its budgets, rest on came from there."""
    from ...roofline.target_paths import origin_note

    notes = (origin_note(r.target.name, r.target.path) for a in analyses for r in a.targets)
    return [note for note in dict.fromkeys(notes) if note]


def render_diff_markdown(diff: ModelDiff, budgets: list[BudgetResult] = (), rows: int = 15) -> str:
    base, head = diff.base.model, diff.head.model
    lines = [f"### onnxroof diff: {escape(base.name)} → {escape(head.name)}", "", f"**{summary_line(diff)}**", ""]
    lines += _warning_lines(diff, budgets)
    if diff.findings:
        lines += [
            "**Findings that changed** (each gain measured by analysing the model again with the change):",
            "",
            *_finding_change_lines(diff),
            "",
        ]
    lines += _metric_tables(diff)
    for section in (_op_type_table(diff), _module_table(diff, rows), _node_table(diff, rows), *_time_tables(diff)):
        if section:
            lines += ["", section]
    lines += ["", f"<sub>onnxroof {__version__} · MAC-FLOPs = 2 x MACs · bytes IEC, counts SI</sub>"]
    return "\n".join(lines) + "\n"


def _warning_lines(diff: ModelDiff, budgets: list[BudgetResult]) -> list[str]:
    """Incomplete sides, targets from elsewhere, changed inputs and the budgets, each a paragraph."""
    lines = []
    incomplete, origins = incomplete_sides(diff), target_origins((diff.base, diff.head))
    lines += [f"⚠️ **{escape(line)}**" for line in incomplete] + ([""] if incomplete else [])
    lines += [f"⚠️ {escape(line)}" for line in origins] + ([""] if origins else [])
    if diff.input_changes:
        lines += ["⚠️ **Inputs changed:** " + "; ".join(escape(c) for c in diff.input_changes), ""]
    broken = [b for b in budgets if b.broken]
    if budgets:
        lines += [
            ("❌ **Budgets broken:** " + "; ".join(escape(b.describe()) for b in broken))
            if broken
            else f"✅ All {len(budgets)} budget(s) hold.",
            "",
        ]
    return lines


def _metric_tables(diff: ModelDiff) -> list[str]:
    """The metrics that changed, then those that did not, folded away."""
    changed = [(label, d) for label, d in _deltas(diff) if d.change != 0]
    same = [(label, d) for label, d in _deltas(diff) if d.change == 0]
    # a change's percent is marked against the threshold; an unchanged one's is plain
    lines = [_metric_table(changed, threshold=diff.threshold) if changed else "No metric changed."]
    if same:
        lines += ["", details(f"Unchanged metrics ({len(same)})", _metric_table(same, symbols=False))]
    return lines


def _metric_table(deltas: list[tuple[str, Delta]], symbols: bool = True, threshold: float = 0.0) -> str:
    """A row per metric: its label, both sides, the change and the percent (as ``percent_text``)."""
    rows = [
        (
            escape(label),
            side_value(d, "base"),
            side_value(d, "head"),
            signed_change(d),
            percent_text(d, symbols=symbols, threshold=threshold),
        )
        for label, d in deltas
    ]
    return table(("metric", "base", "head", "change", "%"), rows, "lrrrr")


def _op_type_table(diff: ModelDiff) -> str:
    """The op types whose count or FLOPs changed, folded away ("" when none did)."""
    ops = [r for r in diff.op_types if r["base_count"] != r["head_count"] or r["base_flops"] != r["head_flops"]]
    if not ops:
        return ""
    return details(
        f"Op types that changed ({len(ops)})",
        table(
            ("op", "count", "FLOPs base", "FLOPs head", "%"),
            [
                (
                    escape(r["op_type"]),
                    f"{r['base_count']} → {r['head_count']}",
                    si(r["base_flops"]),
                    si(r["head_flops"]),
                    _percent(r["base_flops"], r["head_flops"]),
                )
                for r in ops
            ],
            "lrrrr",
        ),
    )


def _module_table(diff: ModelDiff, rows: int) -> str:
    """The modules that changed, by time on head's first target when it has one."""
    if not diff.modules:
        return ""
    target = diff.head.targets[0].target.name if diff.head.targets else None
    title = f"Modules that changed ({len(diff.modules)})" + (f", by time on {html_text(target)}" if target else "")
    return details(
        title,
        table(
            ("module", "change", "params", "FLOPs", *(("time",) if target else ())),
            [_module_cells(row, target is not None) for row in diff.modules[:rows]],
            "llrrr",
        ),
    )


def _node_table(diff: ModelDiff, rows: int) -> str:
    """The first ``rows`` nodes added, removed or changed, and how many more."""
    changed_nodes = diff.changed_nodes
    if not changed_nodes:
        return ""
    counts = {kind: sum(1 for n in changed_nodes if n.kind == kind) for kind in ("added", "removed", "changed")}
    title = f"Nodes: {counts['added']} added, {counts['removed']} removed, {counts['changed']} changed"
    body = table(
        ("node", "op", "change", "FLOPs base", "FLOPs head"),
        [
            (
                escape(n.name),
                escape((n.head or n.base).op_type),
                n.kind + (f" ({', '.join(n.changes)})" if n.changes else ""),
                si(n.base.flops) if n.base else "-",
                si(n.head.flops) if n.head else "-",
            )
            for n in changed_nodes[:rows]
        ],
        "lllrr",
    )
    if len(changed_nodes) > rows:
        body += f"\n\n… and {len(changed_nodes) - rows} more (`onnxroof diff --format json` lists all)."
    return details(title, body)


def _time_tables(diff: ModelDiff) -> list[str]:
    """Per target, the nodes whose time changed most."""
    kinds = {n.name: n.kind for n in diff.nodes}
    return [
        details(
            f"Largest time changes on {html_text(target)}",
            table(
                ("node", "base", "head", "change"),
                [
                    (
                        escape(name),
                        side_time(b, kinds.get(name), "base"),
                        side_time(h, kinds.get(name), "head"),
                        ("+" if h > b else "−") + format_value(abs(h - b), "seconds"),
                    )
                    for name, b, h in top
                ],
                "lrrr",
            ),
        )
        for target, top in diff.top_time_changes.items()
        if top
    ]


FINDING_WORDS = {"new": "🆕 new", "resolved": "✅ resolved", "changed": "↕️ changed"}


def _finding_change_lines(diff: ModelDiff) -> list[str]:
    """A Markdown list: new and changed findings as head has them (a changed one with base's gain
    beside), resolved ones as base had them."""
    several = len({c.finding.target for c in diff.findings}) > 1
    lines = []
    for change in diff.findings:
        finding = change.finding
        gain = gain_text(finding)
        before = f"; base: {gain_text(change.base) or 'no gain'}" if change.kind == "changed" and change.base else ""
        lines.append(
            f"- {FINDING_WORDS[change.kind]}: "
            + (f"{escape(finding.target)}: " if several else "")
            + escape(finding.title)
            + (f" (**{escape(gain)}**{escape(before)})" if gain or before else "")
        )
    return lines


def _module_cells(row: dict, timed: bool) -> tuple:
    def pair(key: str, unit: str) -> str:
        b, h = row[f"base_{key}"], row[f"head_{key}"]
        mark = verdict(key if key != "time_s" else "latency_s", (h or 0) - (b or 0))
        return f"{mark} {format_value(b, unit)} → {format_value(h, unit)}" if b != h else format_value(h, unit)

    cells = (escape(row["module"]), row["kind"], pair("params", "count"), pair("flops", "count"))
    return cells + ((pair("time_s", "seconds"),) if timed else ())


def _percent(before: float, after: float) -> str:
    from ...compare.budgets import percent_change

    change = percent_change(before, after)
    return "new" if math.isinf(change) else f"{change:+.1f}%".replace("-", "−")


def render_diff_table(diff: ModelDiff, budgets: list[BudgetResult] = ()) -> str:
    lines = [f"onnxroof diff: {diff.base.model.name} -> {diff.head.model.name}", summary_line(diff)]
    lines += [f"! {c}" for c in [*incomplete_sides(diff), *target_origins((diff.base, diff.head)), *diff.input_changes]]
    width = max(len(label) for label, _ in _deltas(diff))
    for label, d in _deltas(diff):
        lines.append(
            f"  {label:{width}}  {side_value(d, 'base'):>12}  {side_value(d, 'head'):>12}  "
            f"{signed_change(d):>12}  {percent_text(d, symbols=False):>8}"
        )
    changed = diff.changed_nodes
    lines.append(
        f"nodes: {sum(n.kind == 'added' for n in changed)} added, {sum(n.kind == 'removed' for n in changed)} "
        f"removed, {sum(n.kind == 'changed' for n in changed)} changed, "
        f"{sum(n.kind == 'unchanged' for n in diff.nodes)} unchanged"
    )
    for n in changed[:20]:
        lines.append(
            f"  {n.kind:9} {n.name} ({(n.head or n.base).op_type})" + (f": {', '.join(n.changes)}" if n.changes else "")
        )
    if diff.modules:
        lines.append(f"modules that changed ({len(diff.modules)}, the largest first):")
        for row in diff.modules[:10]:
            lines.append(
                f"  {row['kind']:9} {row['module']}: "
                f"params {si(row['base_params'])} -> {si(row['head_params'])}, "
                f"FLOPs {si(row['base_flops'])} -> {si(row['head_flops'])}"
                + (
                    f", time {format_value(row['base_time_s'], 'seconds')} -> "
                    f"{format_value(row['head_time_s'], 'seconds')}"
                    if row["head_time_s"] is not None or row["base_time_s"] is not None
                    else ""
                )
            )
    lines += [b.describe() for b in budgets]
    return "\n".join(lines) + "\n"


def diff_document(diff: ModelDiff, budgets: list[BudgetResult] = ()) -> dict:
    def delta(d: Delta) -> dict:
        percent = d.percent
        return {
            "key": d.key,
            "unit": d.unit,
            "base": d.base,
            "head": d.head,
            "change": d.change,
            "percent": None if percent is None or math.isinf(percent) else percent,
            # a side that left nodes out is a bound: "≥"/"≤" the change is at least / at most this,
            # "?" unknown
            "base_complete": not d.base_missing,
            "head_complete": not d.head_missing,
            "change_bound": d.change_bound,
        }

    return {
        "schema": SCHEMA,
        "version": __version__,
        "base": {
            "name": diff.base.model.name,
            "path": diff.base.model.path,
            "complete": diff.base.complete,
            "missing": diff.base.missing,
        },
        "head": {
            "name": diff.head.model.name,
            "path": diff.head.model.path,
            "complete": diff.head.complete,
            "missing": diff.head.missing,
        },
        "input_changes": diff.input_changes,
        # targets not read from onnxroof's own files, in words
        "target_origins": target_origins((diff.base, diff.head)),
        "threshold": diff.threshold,  # a change below this fraction is marked neither better nor worse
        "totals": [delta(d) for d in diff.totals],
        "targets": {name: [delta(d) for d in ds] for name, ds in diff.targets.items()},
        "op_types": diff.op_types,
        "nodes": [
            {
                "name": n.name,
                "kind": n.kind,
                "matched_by": n.matched_by,
                "changes": n.changes,
                "base": n.base.name if n.base else None,
                "head": n.head.name if n.head else None,
                "op_type": (n.head or n.base).op_type,
                "base_flops": n.base.flops if n.base else None,
                "head_flops": n.head.flops if n.head else None,
            }
            for n in diff.nodes
        ],
        "modules": diff.modules,  # per module (two levels deep) that changed, the largest change first
        "findings": [change.to_dict() for change in diff.findings],  # new, resolved, or whose gain moved
        "top_time_changes": {
            t: [{"node": n, "base_s": b, "head_s": h} for n, b, h in rows] for t, rows in diff.top_time_changes.items()
        },
        "budgets": [{"budget": b.budget.text, "value": b.value, "broken": b.broken} for b in budgets],
    }


# ---------------------------------------------------------------------------------------------
# compare: several candidates side by side


def _compare_rows(analyses: list[Analysis]) -> tuple[list[str], list[list[str]]]:
    header = ["model", "params", "param bytes", "MAC-FLOPs", "FLOPs", "peak activations", "best-order peak"]
    for first in analyses[0].targets if analyses else []:  # energy: "dynamic" unless the target states static power
        target = first.target.name
        header += [
            f"latency [{target}]",
            f"throughput [{target}]",
            f"model bound [{target}]",
            f"time by bound [{target}]",
            f"{first.energy_kind} energy [{target}]",
        ]
    rows = []
    for a in analyses:
        row = [
            a.model.name,
            si(a.totals.params),
            iec(a.totals.param_bytes),
            si(a.totals.mac_flops),
            si(a.totals.flops),
            iec(a.memory.model_order.peak_bytes),
            iec(a.memory.best.schedule.peak_bytes),
        ]
        for report in a.targets:  # each as what it is: ≥ a bound (peak figures, or nodes left out)
            row += [
                as_bound(format_value(report.latency_s, "seconds"), report),
                as_bound(format_value(report.throughput_per_s, "per_second"), report, at_most=True),
                bound_label(report.model_point.bound),
                time_by_bound(report.time_share),
                format_value(report.energy_j, "joules"),
            ]
        rows.append(row)
    return header, rows


def _incomplete_models(analyses: list[Analysis]) -> list[str]:
    """A line per model whose analysis left nodes out: its figures in the tables are bounds."""
    return [f"{a.model.name} is INCOMPLETE: {a.bounds_note}" for a in analyses if not a.complete]


def render_compare_markdown(analyses: list[Analysis]) -> str:
    header, rows = _compare_rows(analyses)
    escaped = [[escape(row[0]), *row[1:]] for row in rows]
    notes = "".join(f"\n⚠️ **{escape(line)}**\n" for line in _incomplete_models(analyses))
    notes += "".join(f"\n⚠️ {escape(line)}\n" for line in target_origins(analyses))
    return "### onnxroof compare\n\n" + table(header, escaped, "l" + "r" * (len(header) - 1)) + "\n" + notes


def render_compare_table(analyses: list[Analysis]) -> str:
    """The models' totals, then one block per target: each fits a 120-column terminal, however
    many targets are compared (the Markdown and HTML tables put them side by side)."""
    header, rows = _compare_rows(analyses)
    totals = 7  # model + six totals; then five columns per target
    blocks = [_aligned([header[:totals], *(row[:totals] for row in rows)])]
    for index, report in enumerate(analyses[0].targets if analyses else []):
        start = totals + 5 * index
        names = [h.rsplit(" [", 1)[0] for h in header[start : start + 5]]
        blocks.append(
            f"target {report.target.name}\n"
            + _aligned([["model", *names], *([row[0], *row[start : start + 5]] for row in rows)])
        )
    notes = [*_incomplete_models(analyses), *target_origins(analyses)]
    return "\n".join(blocks) + "".join(f"! {line}\n" for line in notes)


def _aligned(table: list[list]) -> str:
    widths = [max(len(str(r[i])) for r in table) for i in range(len(table[0]))]
    return (
        "\n".join(
            "  ".join(str(cell).rjust(w) if i else str(cell).ljust(w) for i, (cell, w) in enumerate(zip(r, widths)))
            for r in table
        )
        + "\n"
    )


def compare_document(analyses: list[Analysis]) -> dict:
    return {
        "schema": "onnxroof-compare/1",
        "version": __version__,
        "target_origins": target_origins(analyses),  # targets not read from onnxroof's own files, in words
        "models": [
            {
                "name": a.model.name,
                "path": a.model.path,
                "totals": {
                    "params": a.totals.params,
                    "param_bytes": a.totals.param_bytes,
                    "mac_flops": a.totals.mac_flops,
                    "flops": a.totals.flops,
                    "peak_bytes": a.memory.model_order.peak_bytes,
                    "best_order_peak_bytes": a.memory.best.schedule.peak_bytes,
                },
                "targets": [{k: v for k, v in target_entry(r).items() if k != "nodes"} for r in a.targets],
            }
            for a in analyses
        ],
    }
