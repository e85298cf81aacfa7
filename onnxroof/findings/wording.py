"""The findings' words, the same in the text summary, ``print(analysis)``, the Markdown and the
HTML report:

>>> gain_text(Finding("precision", "l4", "int8", gain_s=44e-6, latency_s=149e-6, change="--dtype int8"))
'saves 44 µs per inference (30%): --dtype int8'
>>> print(fit_text(DeviceFit("l4", 24_000_000_000, 6_625_000, 786_432, batch=1, largest_batch=30_509)))
... # doctest: +NORMALIZE_WHITESPACE
fits: 6.32 MiB of parameters + 768 KiB of peak activations in 22.4 GiB (24 GB) of device memory
(the largest batch that fits: 30,509)
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..core.units import iec, seconds
from ..roofline.verdicts import capacity_text
from .records import DeviceFit, Finding, Review

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

NO_BREAK = "\u00a0"  # textwrap breaks at spaces only: a flag's space, held while wrapping


def fewer_parameter_bytes(analysis: Analysis) -> str:
    """What stores the parameters in fewer bytes: a narrower type while they take more than a byte
    each (a model at --dtype int8 is told no such thing), else fewer of them.

    >>> from types import SimpleNamespace as Fake
    >>> fewer_parameter_bytes(Fake(totals=Fake(params=10, param_bytes=40)))
    'narrower parameters (--dtype int8) or a smaller model'
    >>> fewer_parameter_bytes(Fake(totals=Fake(params=10, param_bytes=10)))
    'a smaller model (its parameters take a byte each already)'
    """
    if analysis.totals.param_bytes > analysis.totals.params:
        return "narrower parameters (--dtype int8) or a smaller model"
    return "a smaller model (its parameters take a byte each already)"


def gain_text(finding: Finding) -> str:
    """What the change saves, as measured; '' for a finding that changes nothing."""
    if finding.gain_s <= 0:
        return f"{iec(finding.gain_bytes)} over" if finding.kind == "capacity" and finding.gain_bytes else ""
    share = f"{seconds(finding.gain_s)} per inference ({finding.gain_share:.0%})"
    return f"saves {share}: {finding.change}" if finding.change else f"{share} at stake"


def finding_line(finding: Finding) -> str:
    gain = gain_text(finding)  # (one made on an incomplete analysis has none: the findings' heading says why)
    return f"{finding.title}" + (f" [{gain}]" if gain else "")


def finding_lines(findings: Iterable[Finding], width: int, indent: str = "  ", with_target: bool = False) -> list[str]:
    """Numbered lines, wrapped to ``width``; a flag and its value stay on one line ("--batch 8")."""
    lines = []
    for number, finding in enumerate(findings, 1):
        head = f"{indent}{number}. " + (f"{finding.target}: " if with_target else "")
        text = finding_line(finding)
        if finding.change:
            text = text.replace(finding.change, finding.change.replace(" ", NO_BREAK))
        lines += [
            line.replace(NO_BREAK, " ") for line in textwrap.wrap(head + text, width, subsequent_indent=" " * len(head))
        ]
    return lines


def fit_text(fit: DeviceFit | None) -> str:
    """Whether parameters + peak activations fit in the device memory, and the largest batch and context."""
    if fit is None:
        return ""
    if fit.capacity_bytes is None:
        return "the target states no device memory: fit not checked"
    kv = f" (of which the KV cache {iec(fit.kv_cache_bytes)})" if fit.kv_cache_bytes else ""
    parts = [f"{iec(fit.parameter_bytes)} of parameters + {iec(fit.activation_bytes)} of peak activations{kv}"]
    verdict = "fits" if fit.fits else "does not fit"
    text = f"{verdict}: {parts[0]} in {capacity_text(fit.capacity_bytes)} of device memory"
    room = []
    if fit.largest_batch is not None:
        room.append(f"the largest batch that fits: {fit.largest_batch:,}")
    if fit.longest_context is not None:
        room.append(f"the longest context at batch {fit.batch}: {fit.longest_context:,}")
    return text + (f" ({'; '.join(room)})" if room else "")


SUMMARY_FINDINGS = 3  # the findings print(analysis) shows, the pointers to the largest kernel left out


def summary_findings_lines(review: Review, reports: Sequence[TargetReport]) -> list[str]:
    """The short summary's lines of what to change (``print(analysis)``): the top findings, or none."""
    findings = [f for f in review.findings if f.kind != "largest"][:SUMMARY_FINDINGS]
    if not findings:
        return []
    caveat = next((f"; {r.findings_caveat}" for r in reports if r.findings_caveat), "")
    return [
        f"  what to change (each gain measured by analysing again with the change{caveat}):",
        *finding_lines(findings, 110, indent="    ", with_target=len(reports) > 1),
    ]


def summary_fits(review: Review, reports: Sequence[TargetReport]) -> list[bool | None]:
    """Per target, whether the model fits in its memory (None: not checked), as the short summary says it."""
    return [fit.fits if (fit := review.fit(report)) is not None else None for report in reports]
