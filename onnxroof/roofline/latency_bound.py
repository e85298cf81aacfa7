"""Whether a target's latency is a bound, and why: the one decision every output reads.

A target of peak figures gives a lower bound (every kernel at its roofs); one whose efficiencies
were measured on its runtime gives a forecast (``targets.LatencyKind``). An analysis that left
nodes out (unsupported ops, unknown shapes, unbound dims) gives a lower bound whatever the
figures: the nodes not counted take time too, so a run takes at least the latency shown and
reaches at most the throughput shown, and no forecast band covers what is missing.
"""

from __future__ import annotations

from .targets import Figure, LatencyKind

BAND_NOTE = "the error band ("  # how placement's note on a band its measurements do not cover starts


def missing_text(nodes: int, dims: int) -> str:
    """What an analysis leaves out, in the words every output uses.

    >>> missing_text(2064, 0), missing_text(3, 1), missing_text(0, 0)
    ('2,064 node(s) not counted', '3 node(s) not counted, 1 input dim(s) unbound', '')
    """
    parts = [f"{nodes:,} node(s) not counted"] if nodes else []
    if dims:
        parts.append(f"{dims} input dim(s) unbound")
    return ", ".join(parts)


class LatencyBound:
    """The bound-or-forecast decision of a :class:`~onnxroof.roofline.placement.TargetReport`,
    read from its fields ``latency_kind``, ``band``, ``peak_figures``, ``peak_host``, ``uncounted_nodes``,
    ``unbound_dims`` and ``notes``."""

    latency_kind: LatencyKind
    band: Figure | None
    peak_figures: bool
    peak_host: str
    uncounted_nodes: int
    unbound_dims: int
    notes: list[str]

    def leave_out(self, nodes: int, dims: int = 0) -> None:
        """Say that ``nodes`` nodes were not counted (``dims`` input dims unbound): they take time
        too, so the latency is a lower bound and the throughput an upper one, whatever the figures;
        a forecast's error band does not cover what is missing, so there is none."""
        self.uncounted_nodes, self.unbound_dims = nodes, dims
        if nodes or dims:
            self.latency_kind, self.band = LatencyKind.BOUND, None
            self.notes = [note for note in self.notes if not note.startswith(BAND_NOTE)]  # no forecast to qualify

    @property
    def complete(self) -> bool:
        """Every node counted, every input dim bound: the latency holds every node's time."""
        return not (self.uncounted_nodes or self.unbound_dims)

    @property
    def missing(self) -> str:
        """What the latency leaves out, in words ("2,064 node(s) not counted"); "" when complete."""
        return missing_text(self.uncounted_nodes, self.unbound_dims)

    @property
    def findings_caveat(self) -> str:
        """What every output says beside the target's findings when nodes were left out (their
        times and gains leave those nodes out too); "" when complete."""
        return f"computed on an incomplete analysis: {self.missing}, so no gain is measured" if self.missing else ""

    @property
    def bound_reason(self) -> str:
        """Why the latency is a lower bound, in words ("2,064 node(s) not counted; the target's
        figures are peaks"); "" for a forecast."""
        if self.latency_kind != LatencyKind.BOUND:
            return ""
        parts = (self.missing, "the target's figures are peaks" if self.peak_figures else "", self.host_words)
        return "; ".join(part for part in parts if part)

    @property
    def host_words(self) -> str:
        """The part of the run a host target times at its peak figures, in words ("" when none)."""
        if not self.peak_host:
            return ""
        return f"the ops past the Edge TPU compiler's cut run on {self.peak_host} at its peak figures"
