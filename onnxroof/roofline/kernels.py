"""The kernels a runtime executes (fusion), from the cost DAG alone (cost-model.md
section 5, "Kernels").

A runtime runs groups of nodes as one kernel: a convolution or matmul with its bias,
BatchNormalization, activation and residual Add (the *epilogue*), chains of elementwise ops, the
reductions and elementwise ops of a decomposed LayerNorm or Softmax, and attention's
QK^T-softmax-AV. A target's fusion policy names the rule sets its runtime applies
(``targets.FUSION_RULES``); with none, every node is its own kernel, the plain per-node roofline.

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

import itertools
import math
from bisect import bisect_left, insort
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Iterable

from .node_kinds import CONV_OPS as _CONV_OPS, KINDS, node_kind as _kind
from .targets import FUSION_RULES
# what a kernel's work is (its class, reuse and GEMM shape): read through this module too
from .work import (REUSE_CLASSES, WorkShape, efficiency_class, efficiency_columns, reuse_class, reuse_of,  # noqa: F401
                   work_shape)

if TYPE_CHECKING:
    from ..cost.records import CostGraph, NodeRecord

# named policies for --fusion; a policy may also list rule sets ("epilogue,elementwise")
POLICIES = {"none": (), "epilogue": ("epilogue",), "all": tuple(FUSION_RULES)}


@dataclass
class Kernel:
    """Nodes the runtime executes as one kernel (one node when nothing fuses)."""

    name: str  # the first node's
    nodes: list[str]  # in the model's order
    op_type: str  # the nodes' op types joined by "+" ("Conv+Relu"); views left out
    records: list[NodeRecord] = field(repr=False)
    flops: int = 0
    weight_bytes: int = 0
    input_bytes: int = 0  # activations read from outside the kernel
    output_bytes: int = 0  # activations written for readers outside the kernel (or graph outputs)
    internal: list[str] = field(default_factory=list)  # tensors made and used inside only: no bytes
    runs: int = 1  # times it runs per run of the model (a Loop's body x its trip count); the figures are one run's

    @property
    def memory_bytes(self) -> int:
        """Bytes the kernel moves if everything streams from DRAM: weights + inputs + outputs."""
        return self.weight_bytes + self.input_bytes + self.output_bytes


def kernel_op_type(op_types: list[str]) -> str:
    """A kernel's op types joined by "+", a run of more than three alike as one ("Relu×100"): a
    fused chain of 100,000 Relus is named in a few characters, not 500,000.

    >>> kernel_op_type(["Conv", "Relu"]), kernel_op_type(["Add"] * 3), kernel_op_type(["MatMul"] + ["Relu"] * 100)
    ('Conv+Relu', 'Add+Add+Add', 'MatMul+Relu×100')
    """
    parts: list[str] = []
    for op_type, run in itertools.groupby(op_types):
        count = len(list(run))
        parts += [f"{op_type}×{count}"] if count > 3 else [op_type] * count
    return "+".join(parts)


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


def fuse(graph: CostGraph, rules: Iterable[str]) -> list[Kernel]:
    """The counted nodes of ``graph`` grouped into kernels under the fusion ``rules``, in the
    order of each kernel's first node. With no rules every counted node is its own kernel. The
    nodes of a control-flow body (``graph.body_of``: the running graph, ``CostGraph.running``)
    fuse with each other only, as a runtime runs a subgraph on its own."""
    rules = frozenset(rules)
    records = [r for r in graph.records if r.counted]
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
            _grow(members, rules, by_body[body_of.get(record.name, "")] if body_of else by_name, position, tensors,
                  assigned, producers)
        kernels.append(_kernel(members, tensors, outputs))
    if "horizontal" in rules:
        kernels = _merge_siblings(kernels, tensors, outputs, position, body_of)
    if "attention" in rules:
        kernels = _absorb_head_layouts(kernels, tensors, outputs, body_of)
    return kernels


def _merge_siblings(kernels: list[Kernel], tensors: dict, graph_outputs: set[str], position: dict[str, int],
                    body_of: dict[str, str]) -> list[Kernel]:
    """Kernels whose convolution or matmul multiplies the same activation by a stored weight of the
    same depth into outputs of the same shape but for the channels, merged into one GEMM over the
    weights side by side: TensorRT's horizontal fusion (the Q, K and V projections as one QKV
    GEMM, the 1x1 branches of an Inception block), onnxruntime's packed QKV. The activation is read
    once. A sibling joins only if everything its kernel reads is made before the first one starts."""
    families: dict[tuple, list[int]] = {}
    for index, kernel in enumerate(kernels):
        anchor = next((m for m in kernel.records if m.macs and _kind(m) == "mac"), None)  # see reuse_of
        shape = anchor.output_shapes[0] if anchor is not None and anchor.output_shapes else None
        if anchor is None or not anchor.param_inputs or not anchor.inputs or not shape or anchor.inputs[0] in anchor.param_inputs:
            continue
        channel = 1 if anchor.op_type in _CONV_OPS else len(shape) - 1
        outputs = math.prod(d if isinstance(d, int) else 0 for d in shape)
        if not outputs:
            continue
        key = (anchor.op_type, anchor.inputs[0], tuple(d for i, d in enumerate(shape) if i != channel),
               anchor.macs // outputs, body_of.get(anchor.name, ""))  # MACs per output: the same depth; one subgraph
        families.setdefault(key, []).append(index)
    merged_into: dict[int, int] = {}
    members: dict[int, list] = {}
    for indices in families.values():
        first = indices[0]
        start = kernels[first].records[0].index
        for index in indices[1:]:
            inside = {m.name for m in kernels[index].records}
            if all(_inputs_ready(m, inside, start, position, tensors) for m in kernels[index].records):
                members.setdefault(first, list(kernels[first].records)).extend(kernels[index].records)
                merged_into[index] = first
    if not merged_into:
        return kernels
    return [_kernel(members[i], tensors, graph_outputs) if i in members else k
            for i, k in enumerate(kernels) if i not in merged_into]


def _absorb_head_layouts(kernels: list[Kernel], tensors: dict, graph_outputs: set[str],
                         body_of: dict[str, str]) -> list[Kernel]:
    """Each kernel of transposes alone that only an attention kernel reads, merged into it: a fused
    attention kernel reads Q, K and V in the projections' layout with strides (FlashAttention,
    TensorRT's fused MHA, onnxruntime's Attention take [B, S, N, H] directly), so the transposes
    that split the heads, and K's to K^T, are never launched; the one that merges the heads after
    AV joins the attention kernel as it grows (``_joins``). One pass from the last kernel back:
    a transpose read by another transpose (K's head split, then K^T) finds its reader already
    given to the attention kernel."""
    owner = {name: index for index, kernel in enumerate(kernels) for name in kernel.nodes}
    into: dict[int, int] = {}  # kernel -> the attention kernel it joins

    def final(index: int) -> int:
        while index in into:
            index = into[index]
        return index

    for index in range(len(kernels) - 1, -1, -1):
        kernel = kernels[index]
        layout = [m for m in kernel.records if not m.view]
        if not layout or any(_kind(m) != "layout" for m in layout):
            continue
        made = [t for m in kernel.records for t in m.outputs if t in tensors]
        readers = {final(owner[c]) if c in owner else None for t in made for c in tensors[t].consumers} - {index}
        if len(readers) == 1 and None not in readers and not any(t in graph_outputs for t in made):
            reader = readers.pop()
            if (any(_kind(m) == "attention" for m in kernels[reader].records)
                    and body_of.get(kernels[reader].name, "") == body_of.get(kernel.name, "")):
                into[index] = reader
    members: dict[int, list] = {}  # attention kernel -> its records and the transposes it takes
    for index in sorted(into):
        target = final(index)
        members.setdefault(target, list(kernels[target].records)).extend(kernels[index].records)
    return [_kernel(members[i], tensors, graph_outputs) if i in members else k
            for i, k in enumerate(kernels) if i not in into]


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
    kernels, placed = [], set()
    for names in groups:
        members = [by_name[n] for n in dict.fromkeys(names) if n in by_name and n not in placed]
        if members:
            placed.update(m.name for m in members)
            kernels.append(_kernel(members, tensors, outputs))
    position = {r.name: r.index for r in graph.records}
    return sorted(kernels, key=lambda kernel: position[kernel.nodes[0]])


def _grow(members: list[NodeRecord], rules: frozenset[str], by_name: dict, position: dict[str, int], tensors: dict,
          assigned: set[str], producers: dict[str, list[int]]) -> None:
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
                    candidate = by_name.get(consumer)
                    if candidate is None:
                        continue
                    queued[consumer] = _kind(candidate)
                    # no earlier member reads into it (it would be queued), so all its late producers are missing
                    left = _late_producers(candidate, start, producers, position, tensors) - made
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
            if candidates and (best is None or candidates[0].index < best.index) and _joins(kinds, kind, rules):
                best = candidates[0]
        joined = ((kinds["attention"] and _with_prologue(best, kinds, rules, waiting, queued, by_name, position, tensors,
                                                         inside, start, assigned)) or ([best] if best is not None else None))
        if joined is None:
            return
        for record in joined:
            members.append(record)
            inside.add(record.name)
            assigned.add(record.name)
            kind = queued.get(record.name)
            if kind is None:  # a prologue node, not read by the kernel
                kind = queued[record.name] = _kind(record)
            elif waiting.pop(record.name, None) is None:
                candidates = ready[kind]
                del candidates[bisect_left(candidates, record.index, key=_index)]
            kinds[kind] += 1
            take(record)


def _with_prologue(best: NodeRecord | None, kinds: dict[str, int], rules: frozenset[str], waiting: dict[str, NodeRecord],
                   queued: dict[str, str], by_name: dict, position: dict[str, int], tensors: dict, inside: set[str],
                   start: int, assigned: set[str]) -> list[NodeRecord] | None:
    """A waiting candidate earlier than ``best`` (the earliest ready one) that joins an attention
    kernel with the elementwise prologue that makes what it lacks: the prologue, then it; None
    when there is none (so the waiting are looked at only in attention kernels)."""
    for candidate in sorted(waiting.values(), key=_index):
        if best is not None and candidate.index > best.index:
            break
        if _joins(kinds, queued[candidate.name], rules):
            prologue = _prologue(candidate, kinds, rules, by_name, position, tensors, inside, start, assigned)
            if prologue:
                return prologue + [candidate]
    return None


def _late_producers(candidate: NodeRecord, start: int, producers: dict[str, list[int]], position: dict[str, int],
                    tensors: dict) -> int:
    """How many of the nodes making the activations ``candidate`` reads stand at or after
    ``start``. A node reading many is looked at whole once: its producers' positions are sorted
    and kept (``producers``, by ``fuse`` across its kernels), then each kernel's count is a
    bisection; a node reading a few is looked at each time (it is a candidate of a few kernels)."""
    inputs = candidate.inputs
    if len(inputs) <= _FEW_INPUTS:
        late: list[str] = []
        for name in inputs:
            tensor = tensors.get(name) if name else None
            if (tensor is not None and tensor.kind not in _STORED and tensor.producer is not None
                    and position[tensor.producer] >= start and tensor.producer not in late):
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
_STORED = ("parameter", "constant")  # tensor kinds that exist before anything runs: never waited for
_index = attrgetter("index")  # a record's position in the model: the candidates' order


def _prologue(candidate: NodeRecord, kinds: dict[str, int], rules: frozenset[str], by_name: dict, position: dict[str, int],
              tensors: dict, inside: set[str], start: int, assigned: set[str]) -> list[NodeRecord]:
    """The elementwise nodes that make the inputs ``candidate`` lacks, when each reads only what
    is ready when the attention kernel starts: the kernel computes them inline, as a fused
    attention kernel builds its causal mask on the fly. [] when an input is made any other way."""
    pulled = []
    for name in candidate.inputs:
        tensor = tensors.get(name) if name else None
        if tensor is None or tensor.kind in ("parameter", "constant") or tensor.producer is None:
            continue
        if tensor.producer in inside or position[tensor.producer] < start:
            continue
        producer = by_name.get(tensor.producer)
        if (producer is None or producer.name in assigned or _kind(producer) != "elementwise"
                or not _joins(kinds, "elementwise", rules) or not _inputs_ready(producer, inside, start, position, tensors)):
            return []
        pulled.append(producer)
    return pulled


def _joins(kinds: dict[str, int], kind: str, rules: frozenset[str]) -> bool:
    """Whether a node of ``kind`` may join a kernel whose nodes are of ``kinds`` under ``rules``."""
    if kind == "alone":
        return False
    if kind == "view":
        return True
    has_mac = kinds["mac"] > 0
    products = kinds["attention"]  # activation x activation matmuls
    if kind == "layout":  # the transpose that merges the heads after AV: the kernel writes that layout
        return products == 2 and "attention" in rules and not kinds["layout"]
    if kinds["layout"] and not products:
        return False  # transposes alone: _absorb_head_layouts gives them to the attention that reads them
    if kind in ("mac", "attention"):
        # the AV product closes an attention kernel: QK^T, then the softmax, then AV
        return kind == "attention" and "attention" in rules and products == 1 and kinds["softmax"] == 1
    if products:
        if products == 2:
            return kind == "elementwise" and "epilogue" in rules  # AV's epilogue
        if kinds["softmax"]:
            # between the softmax and AV: elementwise guards on the probabilities (optimum's
            # GPT-2 zeroes NaNs with IsNaN and Where), then the AV product
            return kind == "elementwise" and "attention" in rules
        return (kind == "elementwise" and ("epilogue" in rules or "attention" in rules)) or (
            kind == "softmax" and "attention" in rules)
    if has_mac:
        return kind == "elementwise" and "epilogue" in rules
    # a kernel of elementwise ops, reductions and softmaxes
    if kind == "elementwise":
        return "elementwise" in rules or ("normalization" in rules and bool(kinds["reduction"] or kinds["softmax"]))
    return "normalization" in rules


def _inputs_ready(candidate: NodeRecord, inside: set[str], start: int, position: dict[str, int],
                  tensors: dict) -> bool:
    """Every activation ``candidate`` reads is made inside the kernel or before it starts; a folded
    constant (an exporter's inline Constant, a mask sliced from a stored buffer at known sizes)
    exists before anything runs, wherever its node stands."""
    for name in candidate.inputs:
        tensor = tensors.get(name) if name else None
        if tensor is None or tensor.kind in ("parameter", "constant"):
            continue
        producer = tensor.producer
        if producer is not None and producer not in inside and position[producer] >= start:
            return False
    return True


def _kernel(members: list[NodeRecord], tensors: dict, graph_outputs: set[str]) -> Kernel:
    members.sort(key=_index)
    if len(members) == 1:
        record = members[0]
        return Kernel(record.name, [record.name], record.op_type, members, record.flops, record.weight_bytes,
                      record.input_bytes, record.output_bytes, runs=record.runs)
    by_name = {m.name: m for m in members}
    input_bytes = sum(m.input_bytes for m in members)
    output_bytes = sum(m.output_bytes for m in members)

    escapes: dict[str, bool] = {}  # tensor -> whether it leaves the kernel

    def leaves(name: str) -> bool:
        """Read outside the kernel, or a graph output, itself or through a view inside it (a chain
        of views followed without recursion, each tensor once)."""
        stack = [name]
        while stack:
            current = stack[-1]
            if current in escapes:
                stack.pop()
                continue
            result, waiting = current in graph_outputs, []
            for consumer in tensors[current].consumers if not result else ():
                member = by_name.get(consumer)
                if member is None:
                    result = True
                elif member.view:
                    waiting += [o for o in member.outputs if o in tensors and o not in escapes]
                    result = any(escapes.get(o, False) for o in member.outputs)
                if result:
                    break
            if result or not waiting:
                escapes[current] = result
                stack.pop()
            else:
                stack.extend(waiting)
        return escapes[name]

    internal: list[str] = []
    for member in members:
        for name in member.outputs:
            tensor = tensors.get(name) if name else None
            if tensor is None:
                continue
            size = tensor.bytes or 0
            # one look at its readers: those inside the kernel read nothing from outside, and one
            # outside (or a view inside, followed by leaves) may make it leave the kernel
            outside = through_view = False
            for consumer in dict.fromkeys(tensor.consumers):
                reader = by_name.get(consumer)
                if reader is None:
                    outside = True
                elif reader.view:
                    through_view = True
                elif reader.input_bytes:
                    input_bytes -= size
            if member.view:
                continue
            if name in graph_outputs or outside or (through_view and leaves(name)):
                continue
            output_bytes -= size  # never written out
            internal.append(name)
    # a tensor from outside that several members read comes in once (the members' own outputs
    # left out by name first: a long chain reads nothing else); its readers counted from the
    # members' side, so a tensor 20,000 kernels read is not walked by each of them
    made = {t for m in members for t in m.outputs}
    readers: dict[str, int] = {}  # tensor from outside -> the members reading it that count input bytes
    for member in members:
        if member.input_bytes and not member.view:
            for name in dict.fromkeys(member.inputs):
                if name and name not in made:
                    readers[name] = readers.get(name, 0) + 1
    for name, count in readers.items():
        tensor = tensors.get(name)
        if count < 2 or tensor is None or tensor.kind in ("parameter", "constant") or tensor.producer in by_name:
            continue
        input_bytes -= (count - 1) * (tensor.bytes or 0)
    op_type = kernel_op_type([m.op_type for m in members if not m.view]) or members[0].op_type
    return Kernel(members[0].name, [m.name for m in members], op_type, members, sum(m.flops for m in members),
                  sum(m.weight_bytes for m in members), input_bytes, output_bytes, internal, members[0].runs)
