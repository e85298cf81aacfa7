"""GitHub-flavoured Markdown building blocks; every model-supplied string goes through
:func:`escape`, so names render as text, never as HTML, links or table syntax.

>>> escape("a|b <script>")
'a\\\\|b &lt;script&gt;'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ...core.units import iec, intensity, seconds, si
from ...core.version import __version__
from ...findings.wording import gain_text
from ...roofline.devices import plan_sentences
from ..bounds import bound_label, time_by_bound
from ..formatting import as_bound, borrowed_mark, edge_lines, latency_kind_words, rate_text
from .devices import structure_line
from .table import assumed_text, incomplete_line

if TYPE_CHECKING:
    from ...findings import Review
    from ...result import Analysis
    from ...roofline.placement import TargetReport

_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>-])")


def escape(text: object) -> str:
    """Text safe in a Markdown table cell: HTML-escaped, Markdown punctuation backslashed."""
    value = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _SPECIAL.sub(r"\\\1", value)
    value = "".join(c if c.isprintable() or c.isspace() else "\ufffd" for c in value)  # no ANSI escapes
    return " ".join(value.split())  # no newlines: they would end the table row


def html_text(text: object) -> str:
    r"""Text safe inside an HTML block of a Markdown page (a ``<summary>``): HTML-escaped only. GFM
    does not read Markdown inside an HTML block, so a backslash there would show.

    >>> html_text("h100-sxm <b>"), escape("h100-sxm")
    ('h100-sxm &lt;b&gt;', 'h100\\-sxm')
    """
    value = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = "".join(c if c.isprintable() or c.isspace() else "\ufffd" for c in value)
    return " ".join(value.split())


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> str:
    """A pipe table; ``align`` has one letter per column: l (default) or r."""
    align = align.ljust(len(header), "l")
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


FINDINGS_SHOWN = 5


def findings_list(findings, with_target: bool) -> list[str]:
    """A numbered Markdown list: the finding, its gain, the nodes it names (the first few)."""
    lines = []
    for number, finding in enumerate(findings, 1):
        gain = gain_text(finding)
        nodes = (
            " — " + ", ".join(escape(n) for n in finding.nodes[:3]) + (" …" if len(finding.nodes) > 3 else "")
            if finding.nodes
            else ""
        )
        lines.append(
            f"{number}. "
            + (f"{escape(finding.target)}: " if with_target else "")
            + escape(finding.title)
            + (f" (**{escape(gain)}**)" if gain else "")
            + nodes
        )
    return lines


def device_plan_markdown(plan) -> list[str]:
    """Several devices on one target: a row per (TP, PP) split, then the answer in words."""
    rows = [
        (
            str(c.tensor),
            str(c.pipeline),
            iec(c.need_bytes),
            {True: "yes", False: "**no**", None: "?"}[c.fits],
            seconds(c.latency_s),
            f"{c.collective_share:.0%}",
            f"{c.per_s:,.1f}",
        )
        for c in plan.choices
    ]
    return [
        f"**Several devices on {escape(plan.target)}** (up to {plan.devices}; {escape(structure_line(plan))}):",
        "",
        table(("TP", "PP", "need a device", "fits", "step", "all-reduce", f"{plan.per_step_unit}/s"), rows, "rrrlrrr"),
        "",
        *(f"- {escape(sentence)}" for sentence in plan_sentences(plan)),
    ]


def _edge_bullets(analysis: Analysis) -> list[str]:
    """A chip's own execution model (a pipeline's fps and latency, an Edge TPU's graph cut), one bullet each."""
    edge = [(report, label, words) for report in analysis.targets for label, words in edge_lines(report)]
    return (
        ["", *(f"- **{escape(r.target.name)}** {label}: {escape(words)}" for r, label, words in edge)] if edge else []
    )


def _time_cell(report: TargetReport) -> str:
    """Where the time goes: by bound, or a pipeline's stages (its time is theirs, not its kernels' roofs)."""
    return "pipeline stages (below)" if report.dataflow else time_by_bound(report.time_share)


def render_markdown(analysis: Analysis, hotspots: int = 10, review: Review | None = None) -> str:
    """The summary as a PR comment: totals, per-target table, hotspots; details collapsed.
    ``review``: the findings stage's, whose fits and findings it shows (none without it)."""
    model, totals, memory = analysis.model, analysis.totals, analysis.memory
    # escaped names stay out of code spans, where backslash escapes and entities show literally
    inputs = ", ".join(f"{escape(i.name)} {escape(i.shape_text())}" for i in analysis.inputs)
    lines = [
        f"### onnxroof: {escape(model.label)}",
        "",
        *([f"⚠️ **{escape(incomplete_line(analysis))}**", ""] if not analysis.complete else []),
        f"opset {model.opset} · {model.node_count} nodes · inputs {inputs} · dtype {analysis.dtype}"
        + (f" · batch {analysis.batch}" if analysis.batch else "")
        + (f" · assumed {escape(assumed_text(analysis.assumed_dims))}" if analysis.assumed_dims else ""),
        "",
        table(
            ("params", "param bytes", "MAC-FLOPs", "FLOPs", "peak activations", "best-order peak"),
            [
                (
                    si(totals.params),
                    iec(totals.param_bytes),
                    si(totals.mac_flops),
                    si(totals.flops),
                    iec(memory.model_order.peak_bytes),
                    iec(memory.best.schedule.peak_bytes),
                )
            ],
            "rrrrrr",
        ),
    ]
    if analysis.targets:
        findings = review.findings if review is not None else []
        rows = []
        for report in analysis.targets:
            energy = "n/a" if report.energy_j is None else f"{report.energy_j * 1e3:.3g} mJ ({report.energy_kind})"
            fit = review.fit(report) if review is not None else None
            memory_cell = "–" if fit is None or fit.fits is None else "fits" if fit.fits else "**does not fit**"
            rows.append(
                (
                    escape(report.target.name),
                    escape(as_bound(seconds(report.latency_s), report) + borrowed_mark(report)),
                    escape(as_bound(rate_text(report.throughput_per_s, report), report, at_most=True)),
                    _time_cell(report),
                    f"{report.utilization:.1%}",
                    energy,
                    memory_cell,
                )
            )
        lines += [
            "",
            table(
                ("target", "latency", "inferences/s", "time by bound", "utilization", "energy", "device memory"),
                rows,
                "lrrlrrl",
            ),
        ]
        kinds = {escape(latency_kind_words(report)) for report in analysis.targets}
        lines += ["", "Latency: " + "; ".join(sorted(kinds)) + "."]
        lines += _edge_bullets(analysis)
        if findings:
            caveat = next((f"; {escape(r.findings_caveat)}" for r in analysis.targets if r.findings_caveat), "")
            lines += [
                "",
                f"**What to change** (each gain measured by analysing the model again with the change{caveat}):",
                "",
                *findings_list(findings[:FINDINGS_SHOWN], with_target=len(analysis.targets) > 1),
            ]
    for plan in analysis.parallel:  # --devices N > 1
        lines += ["", *device_plan_markdown(plan)]
    warnings = analysis.warnings
    if warnings:
        lines += ["", "⚠️ " + "<br>⚠️ ".join(escape(w) for w in warnings)]
    by_flops = sorted(analysis.nodes, key=lambda r: -r.flops)[:hotspots]
    lines += [
        "",
        details(
            f"Top {len(by_flops)} nodes by FLOPs",
            table(
                ("node", "op", "FLOPs", "params", "bytes moved", "FLOP/B"),
                [
                    (
                        escape(r.name),
                        escape(r.op_type),
                        si(r.flops),
                        si(r.params),
                        iec(r.memory_bytes),
                        intensity(r.intensity),
                    )
                    for r in by_flops
                ],
                "llrrrr",
            ),
        ),
    ]
    for report in analysis.targets:
        top = report.top_nodes(hotspots)
        lines += [
            "",
            details(
                f"Top {len(top)} kernels by time on {html_text(report.target.name)}",
                table(
                    ("kernel", "op", "time", "share", "bound", "FLOP/B"),
                    [
                        (
                            escape(n.name),
                            escape(n.op_type),
                            seconds(n.placement.time_s),
                            f"{n.placement.time_s / report.latency_s:.1%}" if report.latency_s else "-",
                            bound_label(n.placement.bound),
                            intensity(n.placement.intensity),
                        )
                        for n in top
                    ],
                    "llrrlr",
                ),
            ),
        ]
    lines += ["", f"<sub>onnxroof {__version__} · MAC-FLOPs = 2 x MACs · counts SI, bytes IEC</sub>"]
    return "\n".join(lines) + "\n"
