"""What a reviewer acts on, per target: the findings (what to change, each with the gain that
re-running the analysis with the change measured) and whether the model fits in the device's
memory. The records only: ``onnxroof.findings`` makes them, every output renders them.

>>> f = Finding("precision", "l4", "int8 would take 1.9x less time", gain_s=1e-3, latency_s=2.1e-3)
>>> round(f.gain_share, 3)
0.476

Their words, the same in the text summary, ``print(analysis)``, the Markdown and the HTML report:

>>> gain_text(Finding("precision", "l4", "int8", gain_s=44e-6, latency_s=149e-6, change="--dtype int8"))
'saves 44 µs per inference (30%): --dtype int8'
>>> fit_text(DeviceFit("l4", 24_000_000_000, 6_625_000, 786_432, batch=1, largest_batch=30_509))
'fits: 6.32 MiB of parameters + 768 KiB of peak activations in 22.4 GiB (24 GB) of device memory (the largest batch that fits: 30,509)'
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field, replace
from typing import Iterable

from ..core.units import iec, seconds

# each bound (placement.Bound) in words, the same in every output: report/bounds.py, the findings
BOUND_LABELS = {"compute": "compute", "dram": "DRAM", "onchip": "on-chip", "parallelism": "parallelism",
                "overhead": "overhead", "none": "no work"}

# the kinds, in the order a reviewer reads them when their gains tie
FINDING_KINDS = {
    "capacity": "the model does not fit in the device's memory",
    "launch": "kernel launches take the time: batch up, or fuse",
    "precision": "the same model in a narrower type on this target",
    "fusion": "kernels a fusing runtime would merge",
    "spill": "activations spill off chip; another execution order or a smaller batch keeps them",
    "weights": "parameters that do not stay on chip are streamed every run",
    "subnormal": "a causal mask's hidden positions computed on the CPU's slow path for subnormal floats",
    "intensity": "kernels below the ridge: their time is bytes, not multiply-adds",
    "largest": "the kernel and the module that take the largest share of the time",
}


@dataclass(frozen=True)
class Finding:
    """One thing to change (or to know) about the model on one target."""

    kind: str  # FINDING_KINDS
    target: str
    title: str  # one line: what bounds it and what to change, with the figures
    detail: str = ""  # the evidence in words
    nodes: tuple[str, ...] = ()  # the nodes it concerns, in the model's order
    gain_s: float = 0.0  # seconds one inference saves with the change (re-analysed); 0: nothing re-analysed
    gain_bytes: int = 0  # bytes saved per run (DRAM traffic) or of memory, where the change saves bytes
    latency_s: float = 0.0  # the latency per inference the gain is measured from
    change: str = ""  # the change as the flags that make it ("--batch 8", "--dtype int8"); "" for none
    evidence: dict = field(default_factory=dict)  # the figures behind it, plain values
    modules: tuple[str, ...] = ()  # the modules it concerns, when it names modules
    incomplete: str = ""  # why the analysis it was made on is incomplete ('' when complete): no gain then
    blocking: bool = False  # the target cannot run the model as it is (no roof for its type): ranked first

    @property
    def gain_share(self) -> float:
        """The gain as a share of the latency per inference."""
        return self.gain_s / self.latency_s if self.latency_s else 0.0

    def to_dict(self) -> dict:
        return {"kind": self.kind, "target": self.target, "title": self.title, "detail": self.detail,
                "nodes": list(self.nodes), "modules": list(self.modules), "gain_s": self.gain_s,
                "gain_share": self.gain_share, "gain_bytes": self.gain_bytes, "latency_s": self.latency_s,
                "change": self.change, "evidence": self.evidence, "blocking": self.blocking, "complete": not self.incomplete,
                "incomplete": self.incomplete}

    def on_incomplete(self, why: str) -> Finding:
        """This finding made on an incomplete analysis: it says so, and claims no gain (the nodes
        not counted take time the gain does not know of)."""
        proposed = f"; the change it would measure: {self.change}" if self.change else ""
        return replace(self, gain_s=0.0, gain_bytes=0 if self.kind != "capacity" else self.gain_bytes, change="",
                       incomplete=why, title=f"{self.title} (of the counted nodes only)",
                       detail=f"no gain measured on an incomplete analysis{proposed}. " + self.detail)


def ranked(findings: list[Finding]) -> list[Finding]:
    """A model that does not fit first, then one the target cannot run as it is; then the largest gain (as a share of the latency);
    findings without one after, by kind."""
    kinds = list(FINDING_KINDS)
    return sorted(findings, key=lambda f: (f.kind != "capacity", not f.blocking, -f.gain_share,
                                           kinds.index(f.kind) if f.kind in kinds else len(kinds)))


@dataclass(frozen=True)
class DeviceFit:
    """Whether parameters + peak activations (+ a decoder's KV cache, which the activations hold)
    fit in the target's device memory, and the largest batch (and context) that does."""

    target: str
    capacity_bytes: int | None  # None: the target states no device memory
    parameter_bytes: int
    activation_bytes: int  # the peak of live activations, in the model's order
    kv_cache_bytes: int = 0  # of the activations, the decoder's KV cache (0: not a decoder)
    batch: int = 1
    largest_batch: int | None = None  # None: not found (no capacity, or the batch does not change the need)
    context: int | None = None  # a decoder's context (decode phase)
    longest_context: int | None = None
    how: str = ""  # how the largest batch and context were found

    @property
    def need_bytes(self) -> int:
        return self.parameter_bytes + self.activation_bytes

    @property
    def fits(self) -> bool | None:
        return None if self.capacity_bytes is None else self.need_bytes <= self.capacity_bytes

    def to_dict(self) -> dict:
        return {"target": self.target, "capacity_bytes": self.capacity_bytes, "need_bytes": self.need_bytes,
                "parameter_bytes": self.parameter_bytes, "activation_bytes": self.activation_bytes,
                "kv_cache_bytes": self.kv_cache_bytes, "fits": self.fits, "batch": self.batch,
                "largest_batch": self.largest_batch, "context": self.context,
                "longest_context": self.longest_context, "how": self.how}


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
        lines += [line.replace(NO_BREAK, " ")
                  for line in textwrap.wrap(head + text, width, subsequent_indent=" " * len(head))]
    return lines


NO_BREAK = "\u00a0"  # textwrap breaks at spaces only: a flag's space, held while wrapping


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


def capacity_text(capacity_bytes: int) -> str:
    """IEC, with the datasheet's decimal GB beside it: ``22.4 GiB (24 GB)``."""
    return f"{iec(capacity_bytes)} ({capacity_bytes / 1e9:.3g} GB)" if capacity_bytes >= 1e9 else iec(capacity_bytes)
