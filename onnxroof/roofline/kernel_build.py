"""One kernel from its nodes (cost-model.md section 5, "Kernels"): :class:`Kernel` and
:func:`build_kernel`. A kernel's FLOPs and weight bytes are its nodes' sums; the activations it
reads and writes are the tensors that cross its boundary, each once. A tensor made and read inside
the kernel moves no bytes, unless something outside the kernel also reads it (or it is a graph
output), in which case it is written once. ``kernels.py`` groups the nodes, ``fusion_rules.py``
says which may join."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cost.records import NodeRecord

STORED = ("parameter", "constant")  # tensor kinds that exist before anything runs: never waited for
by_index = attrgetter("index")  # a record's position in the model: the candidates' order


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


def inputs_ready(candidate: NodeRecord, inside: set[str], start: int, position: dict[str, int], tensors: dict) -> bool:
    """Every activation ``candidate`` reads is made inside the kernel or before it starts; a folded
    constant (an exporter's inline Constant, a mask sliced from a stored buffer at known sizes)
    exists before anything runs, wherever its node stands."""
    for name in candidate.inputs:
        tensor = tensors.get(name) if name else None
        if tensor is None or tensor.kind in STORED:
            continue
        producer = tensor.producer
        if producer is not None and producer not in inside and position[producer] >= start:
            return False
    return True


def build_kernel(members: list[NodeRecord], tensors: dict, graph_outputs: set[str]) -> Kernel:
    """The kernel of ``members`` (sorted into model order): their sums, less the tensors that stay inside."""
    members.sort(key=by_index)
    if len(members) == 1:
        record = members[0]
        return Kernel(
            record.name,
            [record.name],
            record.op_type,
            members,
            record.flops,
            record.weight_bytes,
            record.input_bytes,
            record.output_bytes,
            runs=record.runs,
        )
    by_name = {m.name: m for m in members}
    input_bytes = sum(m.input_bytes for m in members)
    output_bytes = sum(m.output_bytes for m in members)
    escapes = _Escapes(by_name, tensors, graph_outputs)
    internal: list[str] = []
    for member in members:
        for name in member.outputs:
            tensor = tensors.get(name) if name else None
            if tensor is None:
                continue
            size = tensor.bytes or 0
            read_inside, outside, through_view = _readers(tensor, by_name)
            input_bytes -= size * read_inside
            if member.view or name in graph_outputs or outside or (through_view and escapes.leaves(name)):
                continue
            output_bytes -= size  # never written out
            internal.append(name)
    input_bytes -= _shared_input_bytes(members, by_name, tensors)
    op_type = kernel_op_type([m.op_type for m in members if not m.view]) or members[0].op_type
    return Kernel(
        members[0].name,
        [m.name for m in members],
        op_type,
        members,
        sum(m.flops for m in members),
        sum(m.weight_bytes for m in members),
        input_bytes,
        output_bytes,
        internal,
        members[0].runs,
    )


def _readers(tensor, by_name: dict) -> tuple[int, bool, bool]:
    """One look at a member's output's readers: (how many members read it counting input bytes,
    whether a node outside reads it, whether a view inside does: ``_Escapes.leaves`` follows it)."""
    read_inside, outside, through_view = 0, False, False
    consumers = tensor.consumers
    for consumer in consumers if len(consumers) < 2 else dict.fromkeys(consumers):  # each reader once
        reader = by_name.get(consumer)
        if reader is None:
            outside = True
        elif reader.view:
            through_view = True
        elif reader.input_bytes:
            read_inside += 1
    return read_inside, outside, through_view


def _shared_input_bytes(members: list[NodeRecord], by_name: dict, tensors: dict) -> int:
    """The bytes counted more than once of the tensors from outside that several members read: a
    tensor comes in once (the members' own outputs left out by name first: a long chain reads
    nothing else); its readers counted from the members' side, so a tensor 20,000 kernels read is
    not walked by each of them."""
    made = {t for m in members for t in m.outputs}
    readers: dict[str, int] = {}  # tensor from outside -> the members reading it that count input bytes
    for member in members:
        inputs = member.inputs
        if member.input_bytes and not member.view:
            for name in inputs if len(inputs) < 2 else dict.fromkeys(inputs):  # each tensor once
                if name and name not in made:
                    readers[name] = readers.get(name, 0) + 1
    shared = 0
    for name, count in readers.items():
        tensor = tensors.get(name)
        if count < 2 or tensor is None or tensor.kind in STORED or tensor.producer in by_name:
            continue
        shared += (count - 1) * (tensor.bytes or 0)
    return shared


class _Escapes:
    """Whether a tensor made inside a kernel leaves it: read outside the kernel, or a graph
    output, itself or through a view inside it (a chain of views followed without recursion, each
    tensor once)."""

    def __init__(self, by_name: dict, tensors: dict, graph_outputs: set[str]) -> None:
        self.by_name, self.tensors, self.graph_outputs = by_name, tensors, graph_outputs
        self.known: dict[str, bool] = {}  # tensor -> whether it leaves the kernel

    def leaves(self, name: str) -> bool:
        known = self.known
        stack = [name]
        while stack:
            current = stack[-1]
            if current in known:
                stack.pop()
                continue
            result, waiting = self._look(current)
            if result or not waiting:
                known[current] = result
                stack.pop()
            else:
                stack.extend(waiting)
        return known[name]

    def _look(self, current: str) -> tuple[bool, list[str]]:
        """(whether ``current`` leaves as far as its readers show, the views' outputs still to look at)."""
        known = self.known
        result, waiting = current in self.graph_outputs, []
        for consumer in self.tensors[current].consumers if not result else ():
            member = self.by_name.get(consumer)
            if member is None:
                result = True
            elif member.view:
                waiting += [o for o in member.outputs if o in self.tensors and o not in known]
                result = any(known.get(o, False) for o in member.outputs)
            if result:
                break
        return result, waiting
