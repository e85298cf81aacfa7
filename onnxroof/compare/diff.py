"""Two analyses side by side: what got bigger, slower or hungrier, and where.

Nodes are matched by name first; nodes whose names changed are matched by graph structure: a
signature of the node's op type and output shape, refined three times with its producers'
signatures (a Weisfeiler-Lehman hash), so a renamed but identical model matches node for node.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from .budgets import percent_change

if TYPE_CHECKING:
    from ..cost.records import NodeRecord
    from ..result import Analysis

_REFINEMENTS = 3


@dataclass(frozen=True)
class Delta:
    key: str
    label: str
    unit: str  # "count" | "bytes" | "seconds" | "per_second" | "joules"
    base: float | None
    head: float | None
    # what each side's analysis left out ("2 node(s) not counted"): that side's figure is only a
    # bound (a latency, energy or traffic at least it, a throughput at most it); "" when complete
    base_missing: str = ""
    head_missing: str = ""

    @property
    def change_bound(self) -> str:
        """How the change relates to the true one when a side is a bound: "≥" (the change is at
        least this), "≤" (at most), "?" (both sides bounds: no direction); "" when both are figures.

        >>> Delta("latency_s", "latency", "seconds", 2.0, 1.0, head_missing="2 node(s) not counted").change_bound
        '≥'
        >>> Delta("throughput_per_s", "throughput", "per_second", 2.0, 1.0, head_missing="2 node(s)").change_bound
        '≤'
        """
        if not (self.base_missing or self.head_missing):
            return ""
        if self.base_missing and self.head_missing:
            return "?"
        at_least = self.unit != "per_second"  # a cost's bound is a floor; a throughput's a ceiling
        return "≥" if bool(self.head_missing) == at_least else "≤"

    @property
    def change(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base

    @property
    def percent(self) -> float | None:
        return None if self.base is None or self.head is None else percent_change(self.base, self.head)


@dataclass
class NodeChange:
    base: NodeRecord | None
    head: NodeRecord | None
    matched_by: str  # "name" | "structure" | "" (added or removed)
    changes: list[str] = field(default_factory=list)  # what differs: "macs", "output_shape", ...

    @property
    def kind(self) -> str:
        if self.base is None:
            return "added"
        if self.head is None:
            return "removed"
        return "changed" if self.changes else "unchanged"

    @property
    def name(self) -> str:
        return (self.head or self.base).name  # type: ignore[union-attr]  # a change has a base, a head or both


class Finding(Protocol):
    """What a diff reads of a finding (``onnxroof.findings.Finding``, made by the findings stage,
    which sits above this layer: the command passes each side's findings in)."""

    @property
    def kind(self) -> str: ...

    @property
    def target(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def gain_share(self) -> float: ...

    @property
    def gain_bytes(self) -> int: ...

    def to_dict(self) -> dict: ...


@dataclass(frozen=True)
class FindingChange:
    """A finding that appeared, went away, or whose gain moved between base and head (one finding
    per kind and target)."""

    kind: str  # "new" | "resolved" | "changed"
    base: Finding | None
    head: Finding | None

    @property
    def finding(self) -> Finding:
        return self.head or self.base  # type: ignore[return-value]  # a change has a base, a head or both

    def to_dict(self) -> dict:
        return {
            "change": self.kind,
            "base": self.base.to_dict() if self.base else None,
            "head": self.head.to_dict() if self.head else None,
        }


@dataclass
class ModelDiff:
    base: Analysis
    head: Analysis
    input_changes: list[str]
    totals: list[Delta]
    targets: dict[str, list[Delta]]
    op_types: list[dict]
    nodes: list[NodeChange]
    top_time_changes: dict[str, list[tuple[str, float, float]]]  # target -> (node, base s, head s)
    modules: list[dict] = field(default_factory=list)  # per module (two levels deep) that changed, by impact
    threshold: float = 0.02  # a metric's change below this fraction is marked neither better nor worse
    findings: list[FindingChange] = field(default_factory=list)  # what to change: new, resolved or moved

    @property
    def changed_nodes(self) -> list[NodeChange]:
        """The nodes that differ, the largest change first: time on the first target, then FLOPs,
        then bytes moved; nodes that cost nothing on either side (views, shape arithmetic) last.
        Ties keep the graph order."""
        times = self._first_target_times
        position = {id(n): i for i, n in enumerate(self.nodes)}

        def impact(change: NodeChange) -> tuple:
            def side(record, which: int) -> tuple[float, int, int]:
                if record is None:
                    return 0.0, 0, 0
                return times[which].get(record.name, 0.0), record.flops, record.memory_bytes

            (tb, fb, bb), (th, fh, bh) = side(change.base, 0), side(change.head, 1)
            free = not (tb or th or fb or fh or bb or bh)
            return free, -abs(th - tb), -abs(fh - fb), -abs(bh - bb), position[id(change)]

        return sorted((n for n in self.nodes if n.kind != "unchanged"), key=impact)

    @cached_property
    def _first_target_times(self) -> tuple[dict[str, float], dict[str, float]]:
        """Kernel times (by the kernel's first node) on the head's first target, base and head."""
        if not self.head.targets:
            return {}, {}
        name = self.head.targets[0].target.name
        before = next((r for r in self.base.targets if r.target.name == name), None)
        return (
            {n.name: n.placement.time_s for n in before.nodes} if before else {},
            {n.name: n.placement.time_s for n in self.head.targets[0].nodes},
        )


SIGNIFICANT = 0.02  # the default threshold: a 2 % change is one a reviewer would call a change


def diff_analyses(
    base: Analysis,
    head: Analysis,
    top: int = 10,
    threshold: float = SIGNIFICANT,
    findings: tuple[Sequence[Finding], Sequence[Finding]] = ((), ()),
) -> ModelDiff:
    """The two analyses compared; ``findings``: base's and head's, each ranked (the findings
    stage's reviews, ``Review.findings``), whose changes the diff lists (none without them)."""
    nodes = match_nodes(base.nodes, head.nodes)
    targets: dict[str, list[Delta]] = {}
    base_reports = {r.target.name: r for r in base.targets}
    top_changes: dict[str, list[tuple[str, float, float]]] = {}
    for report in head.targets:
        before = base_reports.get(report.target.name)
        # a side that left nodes out shows bounds: its figures miss those nodes' time, energy and bytes
        sides = {"base_missing": before.missing if before else "", "head_missing": report.missing}
        targets[report.target.name] = [
            Delta("latency_s", "latency", "seconds", before.latency_s if before else None, report.latency_s, **sides),
            Delta(
                "throughput_per_s",
                "throughput",
                "per_second",
                before.throughput_per_s if before else None,
                report.throughput_per_s,
                **sides,
            ),
            Delta(
                "energy_j",
                f"{report.energy_kind} energy",
                "joules",
                before.energy_j if before else None,
                report.energy_j,
                **sides,
            ),
            Delta(
                "dram_bytes",
                "DRAM traffic",
                "bytes",
                before.model_point.dram_bytes if before else None,
                report.model_point.dram_bytes,
                **sides,
            ),
        ]
        targets[report.target.name] += _device_deltas(base, head, report.target.name)
        base_times = {n.name: n.placement.time_s for n in before.nodes} if before else {}
        head_times = {n.name: n.placement.time_s for n in report.nodes}
        rows = []
        for change in nodes:
            b = base_times.get(change.base.name, 0.0) if change.base else 0.0
            h = head_times.get(change.head.name, 0.0) if change.head else 0.0
            if b != h:
                rows.append((change.name, b, h))
        top_changes[report.target.name] = sorted(rows, key=lambda row: -abs(row[2] - row[1]))[:top]
    return ModelDiff(
        base=base,
        head=head,
        input_changes=_input_changes(base, head),
        totals=_total_deltas(base, head),
        targets=targets,
        op_types=_op_type_rows(base, head),
        nodes=nodes,
        top_time_changes=top_changes,
        threshold=threshold,
        modules=module_changes(base, head),
        findings=finding_changes(*findings, threshold=threshold),
    )


def _device_deltas(base: Analysis, head: Analysis, target: str) -> list[Delta]:
    """With --devices N > 1: the fewest devices that fit and the fastest split's step, per target."""
    after = next((p for p in head.parallel if p.target == target), None)
    if after is None:
        return []
    before = next((p for p in base.parallel if p.target == target), None)

    def fewest(plan):
        return plan.fewest.devices if plan is not None and plan.fewest is not None else None

    def fastest(plan):
        return plan.fastest.latency_s if plan is not None and plan.fastest is not None else None

    return [
        Delta(
            "fewest_devices", f"fewest devices that fit (of {after.devices})", "count", fewest(before), fewest(after)
        ),
        Delta("fastest_split_s", "fastest split's step", "seconds", fastest(before), fastest(after)),
    ]


def finding_changes(
    base: Sequence[Finding], head: Sequence[Finding], threshold: float = SIGNIFICANT
) -> list[FindingChange]:
    """The findings head has and base has not (new), base has and head has not (resolved), and
    those whose gain moved by at least ``threshold`` of the latency (changed), in head's ranking
    then base's (each side's findings ranked)."""
    before = {(f.target, f.kind): f for f in base}
    after = {(f.target, f.kind): f for f in head}
    changes = []
    for key, finding in after.items():
        old = before.get(key)
        if old is None:
            changes.append(FindingChange("new", None, finding))
        elif _moved(old, finding, threshold):
            changes.append(FindingChange("changed", old, finding))
    changes += [FindingChange("resolved", finding, None) for key, finding in before.items() if key not in after]
    return changes


def _moved(old: Finding, new: Finding, threshold: float) -> bool:
    """The gain moved by ``threshold`` of the latency, or its bytes by ``threshold`` of theirs
    (a model that does not fit by more or less)."""
    return abs(new.gain_share - old.gain_share) >= threshold or abs(new.gain_bytes - old.gain_bytes) >= threshold * max(
        old.gain_bytes, 1
    )


MODULE_DIFF_DEPTH = 2


def module_changes(base: Analysis, head: Analysis, depth: int = MODULE_DIFF_DEPTH) -> list[dict]:
    """The modules (down to ``depth`` levels) whose cost changed, matched by path, the largest
    change first (time on the head's first target, then FLOPs, then parameters); [] when
    neither model's node names carry module scopes."""
    from .modules import descendants, has_scopes, module_tree

    if not (has_scopes(base) or has_scopes(head)):
        return []
    target = head.targets[0].target.name if head.targets else None

    before, after = ({m.path: m for m in descendants(module_tree(a, depth))} for a in (base, head))
    rows = []
    for path in before.keys() | after.keys():
        b, h = before.get(path), after.get(path)
        row: dict[str, Any] = {"module": path, "kind": "added" if b is None else "removed" if h is None else "changed"}
        for key in ("params", "macs", "flops"):
            row[f"base_{key}"], row[f"head_{key}"] = getattr(b, key, 0), getattr(h, key, 0)
        row["base_time_s"] = b.time_s.get(target, 0.0) if b and target else None
        row["head_time_s"] = h.time_s.get(target, 0.0) if h and target else None
        same = all(row[f"base_{k}"] == row[f"head_{k}"] for k in ("params", "macs", "flops"))
        if b is not None and h is not None and same and row["base_time_s"] == row["head_time_s"]:
            continue
        rows.append(row)

    def impact(row: dict) -> tuple:
        time = abs((row["head_time_s"] or 0.0) - (row["base_time_s"] or 0.0))
        return (
            -time,
            -abs(row["head_flops"] - row["base_flops"]),
            -abs(row["head_params"] - row["base_params"]),
            row["module"],
        )

    return sorted(rows, key=impact)


def _total_deltas(base: Analysis, head: Analysis) -> list[Delta]:
    b, h = base.totals, head.totals
    return [
        Delta("params", "parameters", "count", b.params, h.params),
        Delta("param_bytes", "parameter bytes", "bytes", b.param_bytes, h.param_bytes),
        Delta("mac_flops", "MAC-FLOPs", "count", b.mac_flops, h.mac_flops),
        Delta("flops", "FLOPs", "count", b.flops, h.flops),
        Delta(
            "peak_memory",
            "peak activations",
            "bytes",
            base.memory.model_order.peak_bytes,
            head.memory.model_order.peak_bytes,
        ),
        Delta(
            "best_peak_memory",
            "peak activations (best order)",
            "bytes",
            base.memory.best.schedule.peak_bytes,
            head.memory.best.schedule.peak_bytes,
        ),
        Delta("nodes", "nodes", "count", b.nodes, h.nodes),
    ]


def _input_changes(base: Analysis, head: Analysis) -> list[str]:
    before = {i.name: i for i in base.inputs}
    after = {i.name: i for i in head.inputs}
    lines = []
    for name in sorted(before.keys() | after.keys()):
        b, h = before.get(name), after.get(name)
        if b is None and h is not None:
            lines.append(f"input {name} added: {h.shape_text()} {_dtype(h)}")
        elif h is None and b is not None:
            lines.append(f"input {name} removed (was {b.shape_text()} {_dtype(b)})")
        elif b is not None and h is not None and (b.shape != h.shape or b.dtype != h.dtype):
            lines.append(f"input {name}: {b.shape_text()} {_dtype(b)} -> {h.shape_text()} {_dtype(h)}")
    if base.dtype != head.dtype or base.batch != head.batch:
        lines.append(
            f"costed as dtype {base.dtype}, batch {base.batch or 1} -> dtype {head.dtype}, batch {head.batch or 1}"
        )
    return lines


def _dtype(info) -> str:
    from ..core.dtypes import dtype_name

    return dtype_name(info.dtype)


def _op_type_rows(base: Analysis, head: Analysis) -> list[dict]:
    rows: dict[str, dict] = defaultdict(lambda: {"base_count": 0, "head_count": 0, "base_flops": 0, "head_flops": 0})
    for side, analysis in (("base", base), ("head", head)):
        for record in analysis.nodes:
            row = rows[record.op_type]
            row[f"{side}_count"] += 1
            row[f"{side}_flops"] += record.flops
    result = [{"op_type": op, **row} for op, row in rows.items()]
    return sorted(result, key=lambda r: (-abs(r["head_flops"] - r["base_flops"]), r["op_type"]))


# ---------------------------------------------------------------------------------------------
# Node matching


def match_nodes(base: list[NodeRecord], head: list[NodeRecord]) -> list[NodeChange]:
    """Pair the nodes of two models: by name, then by structure; the rest are added or removed."""
    head_by_name = {r.name: r for r in head}
    pairs: list[NodeChange] = []
    unmatched_base = []
    for record in base:
        partner = head_by_name.pop(record.name, None)
        if partner is not None and partner.op_type == record.op_type:
            pairs.append(NodeChange(record, partner, "name", _changes(record, partner)))
        else:
            if partner is not None:
                head_by_name[record.name] = partner
            unmatched_base.append(record)
    unmatched_head = [r for r in head if r.name in head_by_name]
    if unmatched_base and unmatched_head:
        base_signatures = structural_signatures(base)
        head_signatures = structural_signatures(head)
        # the head's nodes of each signature, taken first to last (a chain of 100,000 alike nodes
        # shares one signature: taking from the front of a list would be quadratic)
        waiting: dict[str, deque[NodeRecord]] = defaultdict(deque)
        for record in unmatched_head:
            waiting[head_signatures[record.name]].append(record)
        still_base = []
        for record in unmatched_base:
            candidates = waiting.get(base_signatures[record.name])
            if candidates:
                partner = candidates.popleft()
                pairs.append(NodeChange(record, partner, "structure", _changes(record, partner)))
            else:
                still_base.append(record)
        unmatched_base = still_base
        unmatched_head = [r for group in waiting.values() for r in group]
    pairs += [NodeChange(r, None, "") for r in unmatched_base]
    pairs += [NodeChange(None, r, "") for r in unmatched_head]
    order = {r.name: i for i, r in enumerate(head)}
    # head's order; a node head has not after them, in base's order
    return sorted(
        pairs,
        key=lambda p: order.get(p.head.name, len(order)) if p.head else len(order) + (p.base.index if p.base else 0),
    )


def structural_signatures(records: list[NodeRecord]) -> dict[str, str]:
    """A name-free signature per node: op type and output shapes, refined with the producers'."""
    producer = {name: r.name for r in records for name in r.outputs if name}
    signature = {r.name: f"{r.op_type}|{r.output_shapes}|{r.params}" for r in records}
    for _ in range(_REFINEMENTS):
        signature = {
            r.name: _hash(
                signature[r.name]
                + "<"
                + ",".join(
                    signature[producer[n]] if n in producer else f"in:{shape}"
                    for n, shape in zip(r.inputs, r.input_shapes)
                )
            )
            for r in records
        }
    return signature


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _changes(base: NodeRecord, head: NodeRecord) -> list[str]:
    fields = ("macs", "flops", "params", "weight_bytes", "input_bytes", "output_bytes", "dtype", "status")
    changes = [f for f in fields if getattr(base, f) != getattr(head, f)]
    if base.output_shapes != head.output_shapes:
        changes.append("output_shape")
    return changes
