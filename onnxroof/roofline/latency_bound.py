"""Whether a target's latency is a bound, and why: the one decision every output reads.

A target of peak figures gives a lower bound (every kernel at its roofs); one whose efficiencies
were measured on its runtime gives a forecast (``targets.LatencyKind``). An analysis that left
nodes out (unsupported ops, unknown shapes, unbound dims) gives a lower bound whatever the
figures: the nodes not counted take time too, so a run takes at least the latency shown and
reaches at most the throughput shown, and no forecast band covers what is missing. So does a
model whose FLOPs are mostly in a type the target has no roof for (fp32 on an int8-only chip):
timed on a roof of another type, it is a run the target's compiler would refuse or leave to a
host, and no measurement covers it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from .targets import Figure, LatencyKind, Target

if TYPE_CHECKING:
    from .dataflow import DataflowTiming

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


class _Counted(Protocol):
    @property
    def flops(self) -> int: ...


class _Kernel(Protocol):
    """A placed kernel (placement.NodePlacement), as far as missing_roof reads it."""

    @property
    def dtype(self) -> str: ...

    @property
    def placement(self) -> _Counted: ...


def missing_roof(target: Target, kernels: Iterable[_Kernel]) -> tuple[str, str, float] | None:
    """(the model's type, the roof of ``target`` it falls back to, their share of the FLOPs) when
    most of the FLOPs of ``kernels`` are in a type ``target`` has no roof for (an Edge TPU's host
    kernels past its cut count too: they are in that type because the model is); None otherwise.

    >>> from types import SimpleNamespace as S
    >>> from onnxroof.roofline.targets import load_target
    >>> kernels = [S(dtype="float32", placement=S(flops=90)), S(dtype="int8", placement=S(flops=10))]
    >>> missing_roof(load_target("coral-edge-tpu"), kernels)
    ('fp32', 'int8', 0.9)
    >>> missing_roof(load_target("l4"), kernels) is None
    True
    """
    flops = 0
    fallen: dict[tuple[str, str], int] = {}  # (wanted roof, roof used) -> FLOPs
    for kernel in kernels:
        kernel_flops = kernel.placement.flops
        flops += kernel_flops
        wanted = target.wanted_roof(kernel.dtype)
        if kernel_flops and wanted not in target.peak_ops_per_s:
            key = (wanted, target.roof(kernel.dtype)[0])
            fallen[key] = fallen.get(key, 0) + kernel_flops
    if not flops or not fallen:
        return None
    (wanted, roof), count = max(fallen.items(), key=lambda item: item[1])
    return (wanted, roof, count / flops) if count > flops / 2 else None


class LatencyBound:
    """The bound-or-forecast decision of a :class:`~onnxroof.roofline.placement.TargetReport`,
    read from its fields ``latency_kind``, ``band``, ``peak_figures``, ``peak_host``, ``uncounted_nodes``,
    ``unbound_dims``, ``fallen_roof``, ``dataflow`` and ``notes``."""

    latency_kind: LatencyKind
    band: Figure | None
    peak_figures: bool
    peak_host: str
    uncounted_nodes: int
    unbound_dims: int
    fallen_roof: tuple[str, str, float] | None  # missing_roof's answer for the run's kernels
    dataflow: DataflowTiming | None
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
    def pipeline_words(self) -> str:
        """A layer pipeline's line (fps, latency, contexts, what sets the frame rate), a bound
        wherever the latency is one; "" when the target is no layer pipeline."""
        if self.dataflow is None:
            return ""
        band = self.band.value if self.band is not None else None
        return self.dataflow.words(band, self.latency_kind == LatencyKind.BOUND)

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
        parts = (
            self.missing,
            "the target's figures are peaks" if self.peak_figures else "",
            self.host_words,
            self.fallback_words,
        )
        return "; ".join(part for part in parts if part)

    @property
    def fallback_words(self) -> str:
        """The model's type the target cannot run, in words ("" when it runs it)."""
        if self.fallen_roof is None:
            return ""
        wanted, roof, share = self.fallen_roof
        return (
            f"{share:.0%} of the FLOPs are {wanted}, which the target cannot run (its {roof} roof stands in): "
            "a figure for a model its compiler would refuse or leave to a host"
        )

    @property
    def host_words(self) -> str:
        """The part of the run a host target times at its peak figures, in words ("" when none)."""
        if not self.peak_host:
            return ""
        return f"the ops past the Edge TPU compiler's cut run on {self.peak_host} at its peak figures"
