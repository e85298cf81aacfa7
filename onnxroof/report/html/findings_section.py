"""The report's "What to change" section, at the top: every target's findings, ranked (a model
that does not fit first, then by the time each change saves, measured by analysing the model
again with it), each with its gain and links to the nodes it names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...findings.records import FINDING_KINDS
from ...findings.wording import gain_text
from ..text.table import distinct_clips

if TYPE_CHECKING:
    from ...findings import Review
    from ...result import Analysis

SHOWN = 5  # open at the top of the page; the rest fold under them
LINKED_NODES = 3  # the first few nodes a finding names, each a link to its row
NAME_WIDTH = 40


def findings_context(analysis: Analysis, review: Review | None) -> dict | None:
    """The section's rows, from the review's findings (none without a review: no section)."""
    findings = review.findings if review is not None else []
    if not findings:
        return None
    index = {n.name: i for i, n in enumerate(analysis.nodes)}
    several = len(analysis.targets) > 1
    rows = []
    for rank, finding in enumerate(findings, 1):
        named = [n for n in finding.nodes if n in index][:LINKED_NODES]
        rows.append(
            {
                "rank": rank,
                "kind": finding.kind,
                "kind_title": FINDING_KINDS.get(finding.kind, finding.kind),
                "target": finding.target if several else "",
                "title": finding.title,
                "detail": finding.detail,
                "gain": gain_text(finding),
                "gain_share": f"{finding.gain_share:.0%}" if finding.gain_s > 0 else "",
                "nodes": [
                    {"index": index[n], "name": n, "short": short}
                    for n, short in zip(named, distinct_clips(named, NAME_WIDTH))
                ],
                "more_nodes": len(finding.nodes) - len(named),
                "modules": list(finding.modules),
            }
        )
    caveat = next((r.findings_caveat for r in analysis.targets if r.findings_caveat), "")
    return {"shown": rows[:SHOWN], "rest": rows[SHOWN:], "count": len(rows), "caveat": caveat}
