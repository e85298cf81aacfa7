"""The kernels a runtime executes (fusion), from the cost DAG alone (cost-model.md
section 5, "Kernels").

A runtime runs groups of nodes as one kernel: a convolution or matmul with its bias,
BatchNormalization, activation and residual Add (the *epilogue*), chains of elementwise ops, the
reductions and elementwise ops of a decomposed LayerNorm or Softmax, and attention's
QK^T-softmax-AV. A target's fusion policy names the rule sets its runtime applies
(``fusion_rules.RULES``, one object per rule); with none, every node is its own kernel, the plain per-node roofline.

A kernel's FLOPs and weight bytes are its nodes' sums; the activations it reads and writes are
the tensors that cross its boundary, each once. A tensor made and read inside the kernel moves
no bytes, unless something outside the kernel also reads it (or it is a graph output), in which
case it is written once. Kernels are grown greedily in the model's order, and a node joins a kernel only if
every activation it reads is made inside the kernel or before the kernel starts, so running the
kernels in order of their first node is a valid schedule.

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> graph = analyze(build_example("shallownet")).cost_graph
>>> [(k.op_type, k.nodes) for k in fuse(graph, ("epilogue",))]
[('Conv+Relu', ['conv2d_0', 'activation_0', 'flatten_0']), ('Gemm', ['dense_0']), ('Softmax', ['softmax_0'])]
>>> [k.output_bytes for k in fuse(graph, ("epilogue",))]  # the ReLU's 128 KiB only: the conv's stay inside
[131072, 40, 40]
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable
from typing import TYPE_CHECKING

# a kernel and how it is built, and the rules that say which nodes join one: read through this module too
from .fusion_rules import FUSION_RULES, RULES, FuseContext, FusionRule, joins, post_passes  # noqa: F401
from .kernel_build import STORED as _STORED  # noqa: F401
from .kernel_build import Kernel, build_kernel, inputs_ready
from .kernel_build import by_index as _index
from .node_kinds import KINDS
from .node_kinds import node_kind as _kind

# what a kernel's work is (its class, reuse and GEMM shape): read through this module too
from .work import REUSE_CLASSES, WorkShape, efficiency_class, efficiency_columns, reuse_class, reuse_of, work_shape  # noqa: F401

if TYPE_CHECKING:
    from ..cost.records import CostGraph, NodeRecord

# named policies for --fusion; a policy may also list rule sets ("epilogue,elementwise")
POLICIES = {"none": (), "epilogue": ("epilogue",), "all": tuple(FUSION_RULES)}


def parse_policy(text: str) -> tuple[str, ...]:
    """The rule sets of a policy name ("none", "epilogue", "all") or a comma-separated list.

    >>> parse_policy("all") == tuple(FUSION_RULES)
    True
    >>> parse_policy("epilogue,elementwise")
    ('epilogue', 'elementwise')
    """
    if text in POLICIES:
        return POLICIES[text]
    rules = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [rule for rule in rules if rule not in FUSION_RULES]
    if unknown or not rules:
        raise ValueError(f"{text!r}: choose {', '.join(POLICIES)}, or rule sets from {', '.join(FUSION_RULES)}")
    return rules


def fuse(graph: CostGraph, rules: Iterable[str], only: Iterable[NodeRecord] | None = None) -> list[Kernel]:
    """The counted nodes of ``graph`` grouped into kernels under the fusion ``rules``, in the
    order of each kernel's first node. With no rules every counted node is its own kernel. The
    nodes of a control-flow body (``graph.body_of``: the running graph, ``CostGraph.running``)
    fuse with each other only, as a runtime runs a subgraph on its own. ``only``: these of its
    nodes (in model order), fused with each other only (the ops past an Edge TPU's cut, which its
    host runs)."""
    rules = frozenset(rules)
    records = [r for r in (graph.records if only is None else only) if r.counted]
    by_name = {r.name: r for r in records}
    body_of = graph.body_of
    by_body: dict[str, dict[str, NodeRecord]] = {}  # subgraph -> its nodes: the candidates a kernel grows by
    if body_of:
        for record in records:
            by_body.setdefault(body_of.get(record.name, ""), {})[record.name] = record
    position = {r.name: r.index for r in graph.records}
    tensors = graph.tensors
    outputs = set(graph.outputs)
    assigned: set[str] = set()  # nodes already in a kernel
    producers: dict[str, list[int]] = {}  # node -> where the nodes making what it reads stand (_late_producers)
    kernels: list[Kernel] = []
    for record in records:
        if record.name in assigned:
            continue
        members = [record]
        assigned.add(record.name)
        if rules and _kind(record) != "alone":
            _grow(
                members,
                rules,
                by_body[body_of.get(record.name, "")] if body_of else by_name,
                position,
                tensors,
                assigned,
                producers,
            )
        kernels.append(build_kernel(members, tensors, outputs))
    return post_passes(kernels, rules, FuseContext(tensors, outputs, position, body_of))


def group(graph: CostGraph, groups: Iterable[Iterable[str]]) -> list[Kernel]:
    """Kernels as a runtime ran them: each of ``groups`` (node names, such as the ONNX nodes one
    onnxruntime kernel covers) is one kernel, in the order of each kernel's first node; a node in
    no group is left out (the runtime folded or removed it).

    >>> from onnxroof import analyze
    >>> from onnxroof.core.examples import build_example
    >>> graph = analyze(build_example("shallownet")).cost_graph
    >>> [k.nodes for k in group(graph, [["conv2d_0", "activation_0"], ["dense_0"], ["softmax_0"]])]
    [['conv2d_0', 'activation_0'], ['dense_0'], ['softmax_0']]
    """
    by_name = {r.name: r for r in graph.records if r.counted}
    tensors, outputs = graph.tensors, set(graph.outputs)
    kernels: list[Kernel] = []
    placed: set[str] = set()
    for names in groups:
        members = [by_name[n] for n in dict.fromkeys(names) if n in by_name and n not in placed]
        if members:
            placed.update(m.name for m in members)
            kernels.append(build_kernel(members, tensors, outputs))
    position = {r.name: r.index for r in graph.records}
    return sorted(kernels, key=lambda kernel: position[kernel.nodes[0]])


def _grow(
    members: list[NodeRecord],
    rules: frozenset[str],
    by_name: dict,
    position: dict[str, int],
    tensors: dict,
    assigned: set[str],
    producers: dict[str, list[int]],
) -> None:
    """Add to ``members`` every node the rules let join, earliest candidate first.

    The candidates (the unassigned readers of what the members make) are kept from one step to
    the next, by kind and in model order, so that a step looks only at the kinds that may join
    now: growing a kernel of n nodes is linear in n, not quadratic (a chain of 100,000 Relu is
    one kernel). Each candidate counts its producers that are neither before the kernel's start
    nor inside it (``_inputs_ready``'s rule), one fewer as each joins: each edge is looked at
    once, and a join of 20,000 branches is not checked whole by each branch's kernel. Only the
    candidates with none missing are ready; the others wait (an attention kernel may still pull
    in, as a prologue, the elementwise nodes that make what they lack)."""
    start = members[0].index
    inside = {m.name for m in members}
    kinds = dict.fromkeys(KINDS, 0)  # members of each kind
    for member in members:
        kinds[_kind(member)] += 1
    ready: dict[str, list[NodeRecord]] = {}  # kind -> candidates with every input ready, in model order
    waiting: dict[str, NodeRecord] = {}  # candidates with an input made after the start, outside the kernel
    missing: dict[str, int] = {}  # candidate -> its producers after the start not inside the kernel
    queued: dict[str, str] = {}  # candidate (once queued) -> its kind

    def take(record: NodeRecord) -> None:
        """``record`` has joined: its readers are candidates, each waiting on one producer fewer."""
        late = position[record.name] >= start
        outputs = record.outputs
        counted: set[str] | None = set() if len(outputs) > 1 else None  # readers of two of its outputs count it once
        for name in outputs:
            tensor = tensors.get(name)
            if tensor is None:
                continue
            made = late and tensor.producer == record.name and tensor.kind not in _STORED
            for consumer in tensor.consumers:
                if consumer in assigned:
                    continue
                if consumer in queued:
                    if not made or consumer not in waiting or (counted is not None and consumer in counted):
                        continue
                    left = missing[consumer] - 1
                    if counted is not None:
                        counted.add(consumer)
                    if left:
                        missing[consumer] = left
                        continue
                    candidate = waiting.pop(consumer)
                else:
                    found = by_name.get(consumer)
                    if found is None:
                        continue
                    candidate = found
                    queued[consumer] = _kind(candidate)
                    # no earlier member reads into it (it would be queued), so all its late producers are
                    # missing; a node reading one tensor reads this one, so none is (a chain's every node)
                    left = (
                        0
                        if len(candidate.inputs) == 1
                        else _late_producers(candidate, start, producers, position, tensors) - made
                    )
                    if counted is not None and made:
                        counted.add(consumer)
                    if left:
                        missing[consumer] = left
                        waiting[consumer] = candidate
                        continue
                insort(ready.setdefault(queued[consumer], []), candidate, key=_index)

    for member in members:
        take(member)
    while True:
        best = None  # the earliest ready candidate of a kind that may join: the first of its kind's list
        for kind, candidates in ready.items():
            if candidates and (best is None or candidates[0].index < best.index) and joins(kinds, kind, rules):
                best = candidates[0]
        joined = (
            kinds["attention"]
            and _with_prologue(best, kinds, rules, waiting, queued, by_name, position, tensors, inside, start, assigned)
        ) or ([best] if best is not None else None)
        if joined is None:
            return
        for record in joined:
            members.append(record)
            inside.add(record.name)
            assigned.add(record.name)
            queued_kind = queued.get(record.name)
            if queued_kind is None:  # a prologue node, not read by the kernel
                kind = queued[record.name] = _kind(record)
            else:
                kind = queued_kind
                if waiting.pop(record.name, None) is None:
                    candidates = ready[kind]
                    del candidates[bisect_left(candidates, record.index, key=_index)]
            kinds[kind] += 1
            take(record)


def _with_prologue(
    best: NodeRecord | None,
    kinds: dict[str, int],
    rules: frozenset[str],
    waiting: dict[str, NodeRecord],
    queued: dict[str, str],
    by_name: dict,
    position: dict[str, int],
    tensors: dict,
    inside: set[str],
    start: int,
    assigned: set[str],
) -> list[NodeRecord] | None:
    """A waiting candidate earlier than ``best`` (the earliest ready one) that joins an attention
    kernel with the elementwise prologue that makes what it lacks: the prologue, then it; None
    when there is none (so the waiting are looked at only in attention kernels). The prologue is
    the nodes making the inputs the candidate lacks, when each is elementwise and reads only what
    is ready when the kernel starts: the kernel computes them inline, as a fused attention kernel
    builds its causal mask on the fly; an input made any other way, and the candidate waits."""
    for candidate in sorted(waiting.values(), key=_index):
        if best is not None and candidate.index > best.index:
            break
        if not joins(kinds, queued[candidate.name], rules):
            continue
        prologue: list[NodeRecord] = []
        for name in candidate.inputs:
            tensor = tensors.get(name) if name else None
            if tensor is None or tensor.kind in ("parameter", "constant") or tensor.producer is None:
                continue
            if tensor.producer in inside or position[tensor.producer] < start:
                continue
            producer = by_name.get(tensor.producer)
            if (
                producer is None
                or producer.name in assigned
                or _kind(producer) != "elementwise"
                or not joins(kinds, "elementwise", rules)
                or not inputs_ready(producer, inside, start, position, tensors)
            ):
                prologue = []
                break
            prologue.append(producer)
        if prologue:
            return prologue + [candidate]
    return None


def _late_producers(
    candidate: NodeRecord, start: int, producers: dict[str, list[int]], position: dict[str, int], tensors: dict
) -> int:
    """How many of the nodes making the activations ``candidate`` reads stand at or after
    ``start``. A node reading many is looked at whole once: its producers' positions are sorted
    and kept (``producers``, by ``fuse`` across its kernels), then each kernel's count is a
    bisection; a node reading a few is looked at each time (it is a candidate of a few kernels)."""
    inputs = candidate.inputs
    if len(inputs) <= _FEW_INPUTS:
        late: list[str] = []
        for name in inputs:
            tensor = tensors.get(name) if name else None
            if (
                tensor is not None
                and tensor.kind not in _STORED
                and tensor.producer is not None
                and position[tensor.producer] >= start
                and tensor.producer not in late
            ):
                late.append(tensor.producer)
        return len(late)
    positions = producers.get(candidate.name)
    if positions is None:
        made_by = set()
        for name in inputs:
            tensor = tensors.get(name) if name else None
            if tensor is not None and tensor.kind not in _STORED and tensor.producer is not None:
                made_by.add(tensor.producer)
        positions = producers[candidate.name] = sorted(position[p] for p in made_by)
    return len(positions) - bisect_left(positions, start)


_FEW_INPUTS = 8  # up to this many inputs, a candidate's producers are looked at again for each kernel
