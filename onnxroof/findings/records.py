"""The findings stage's records: what a review finds on each target (a :class:`Finding`: what to
change, each with the gain that re-running the analysis with the change measured), whether the
model fits in the device's memory (:class:`DeviceFit`), and the stage's product, a
:class:`Review` (per target: the fit and the ranked findings). ``onnxroof.findings.review``
makes it; the commands pass it to every output that shows findings.

>>> f = Finding("precision", "l4", "int8 would take 1.9x less time", gain_s=1e-3, latency_s=2.1e-3)
>>> round(f.gain_share, 3)
0.476
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..roofline.placement import TargetReport

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
    "stage": "a layer pipeline's slowest stage: the share of the chip's work that sets its frame rate",
    "contexts": "a layer pipeline's parameters need several contexts, reloaded over the host link",
    "fallback": "an op the Edge TPU compiler does not map: the graph is cut there and the rest runs on the CPU",
    "largest": "the kernel and the module that take the largest share of the time",
}


# the columns of Review.to_pandas, in Finding.to_dict's order
FINDING_COLUMNS = (
    "kind",
    "target",
    "title",
    "detail",
    "nodes",
    "modules",
    "gain_s",
    "gain_share",
    "gain_bytes",
    "latency_s",
    "change",
    "evidence",
    "blocking",
    "complete",
    "incomplete",
)


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
        return {
            "kind": self.kind,
            "target": self.target,
            "title": self.title,
            "detail": self.detail,
            "nodes": list(self.nodes),
            "modules": list(self.modules),
            "gain_s": self.gain_s,
            "gain_share": self.gain_share,
            "gain_bytes": self.gain_bytes,
            "latency_s": self.latency_s,
            "change": self.change,
            "evidence": self.evidence,
            "blocking": self.blocking,
            "complete": not self.incomplete,
            "incomplete": self.incomplete,
        }

    def on_incomplete(self, why: str) -> Finding:
        """This finding made on an incomplete analysis: it says so, and claims no gain (the nodes
        not counted take time the gain does not know of)."""
        proposed = f"; the change it would measure: {self.change}" if self.change else ""
        return replace(
            self,
            gain_s=0.0,
            gain_bytes=0 if self.kind != "capacity" else self.gain_bytes,
            change="",
            incomplete=why,
            title=f"{self.title} (of the counted nodes only)",
            detail=f"no gain measured on an incomplete analysis{proposed}. " + self.detail,
        )


def ranked(findings: list[Finding]) -> list[Finding]:
    """A model that does not fit first, then one the target cannot run as it is; then the largest
    gain (as a share of the latency); findings without one after, by kind."""
    kinds = list(FINDING_KINDS)
    return sorted(
        findings,
        key=lambda f: (
            f.kind != "capacity",
            not f.blocking,
            -f.gain_share,
            kinds.index(f.kind) if f.kind in kinds else len(kinds),
        ),
    )


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
        return {
            "target": self.target,
            "capacity_bytes": self.capacity_bytes,
            "need_bytes": self.need_bytes,
            "parameter_bytes": self.parameter_bytes,
            "activation_bytes": self.activation_bytes,
            "kv_cache_bytes": self.kv_cache_bytes,
            "fits": self.fits,
            "batch": self.batch,
            "largest_batch": self.largest_batch,
            "context": self.context,
            "longest_context": self.longest_context,
            "how": self.how,
        }


@dataclass(frozen=True)
class TargetReview:
    """One target's part of a review: whether the model fits in its device memory (None: not
    reviewed) and its findings, ranked."""

    report: TargetReport | None = field(default=None, repr=False, compare=False)  # the report reviewed
    fit: DeviceFit | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def target(self) -> str:
        return self.report.target.name if self.report is not None else ""


@dataclass(frozen=True)
class Review:
    """What the findings stage returns for one analysis: a :class:`TargetReview` per target, in
    the analysis's order. An analysis not reviewed (no targets, ``--no-findings``, the pipeline
    alone) has :data:`NO_REVIEW`, which has no fit and no finding on any target."""

    targets: tuple[TargetReview, ...] = ()

    def of(self, report: TargetReport) -> TargetReview:
        """The part of ``report`` (one of the analysis's target reports); an empty one when it was
        not reviewed."""
        found = next((t for t in self.targets if t.report is report), None)  # the same target may be given twice
        if found is None:  # a copy of the report (an analysis and its review pickled apart): by its name
            found = next((t for t in self.targets if t.target == report.target.name), None)
        return found if found is not None else TargetReview(report)

    def fit(self, report: TargetReport) -> DeviceFit | None:
        """Whether the model fits in ``report``'s device memory (None: not checked)."""
        return self.of(report).fit

    @property
    def findings(self) -> list[Finding]:
        """Every target's findings, ranked (a model that does not fit first, then by the time each saves)."""
        return ranked([f for part in self.targets for f in part.findings])

    def to_pandas(self):
        """The findings, ranked, one row each, as a pandas DataFrame (``pip install pandas``): the
        target, the kind, the one-line title, the gain (seconds, share of the latency, bytes), the
        change that makes it, the nodes and modules it concerns, and the evidence's figures."""
        from ..core.frames import data_frame

        rows = []
        for finding in self.findings:
            row = finding.to_dict()
            row["nodes"], row["modules"] = tuple(finding.nodes), tuple(finding.modules)
            rows.append(row)
        return data_frame(rows, "Review.to_pandas", FINDING_COLUMNS)


NO_REVIEW = Review()
