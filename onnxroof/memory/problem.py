"""The memory problem: the buffers of a cost DAG and the live bytes of one execution order.

Semantics (cost-model.md section 4): an activation is live from the step its producer runs
until its last consumer has run; graph inputs are live from step 0 and graph outputs to the
end; parameters are not activations. Views (the ops whose rule declares the ``VIEW`` trait:
Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, ...) alias their input; by default
Concat's producers write straight into slices of the concat buffer. All of this is expressed as
*buffers*: one per tensor that owns memory, each with the nodes that allocate it and the nodes
that read it. Every function here is pure over a :class:`MemoryProblem`; ``schedule.py``
searches the orders, ``spill.py`` plans the spills, ``liveness.py`` runs the whole analysis.

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> problem = build_problem(analyze(build_example("shallownet")).cost_graph)
>>> schedule_peak(problem, problem.model_order).peak_bytes  # the 128 KiB conv output, read by Relu
262144
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from operator import attrgetter
from typing import TYPE_CHECKING

from ..ops import OpTrait, has_trait

if TYPE_CHECKING:
    from ..cost.records import CostGraph


@dataclass(slots=True)  # not frozen: one per tensor, and frozen dataclasses are slow to build
class Buffer:
    """Memory owned by one tensor (and by the views and concat slices that share it). Treat as
    read-only: problems share their buffers."""

    name: str  # the owning tensor
    bytes: int
    allocators: frozenset[str]  # nodes whose run allocates it (the first one to run does)
    readers: frozenset[str]  # nodes that must run before it can be freed
    tensors: tuple[str, ...]  # every tensor living in it (views, concat slices)
    from_start: bool = False  # a graph input: live from step 0
    to_end: bool = False  # a graph output: live to the end


@dataclass(slots=True)
class _Uses:
    """Who allocates and reads each buffer, as logged while the buffers were found: what
    :attr:`MemoryProblem.buffers` is built from."""

    nodes: list[str] = field(default_factory=list)  # the node of each allocation or read
    events: list[int] = field(default_factory=list)  # the buffer allocated (i) or read (~i)
    from_start: int = 0  # the first this many buffers are the graph's inputs
    to_end: set[int] = field(default_factory=set)  # buffers holding a graph output
    tensors: dict[int, tuple[str, ...]] = field(default_factory=dict)  # buffers holding more than their own tensor


@dataclass(frozen=True)
class MemoryProblem:
    """The buffers of one graph and the model's own node order."""

    model_order: tuple[str, ...]
    buffer_names: tuple[str, ...]  # each buffer's name, as in ``buffers``
    buffer_bytes: tuple[int, ...]  # and its bytes
    uses: _Uses = field(repr=False)  # who allocates and reads them
    concat_in_place: bool
    elementwise_in_place: bool
    records: Sequence = field(repr=False, compare=False)  # the nodes, in model order
    concat_slices: int = 0  # tensors written straight into a Concat's buffer
    # found while building the buffers, unless a node name repeats: each buffer's (first step,
    # last step) under the model order, and the bytes each step allocates or reads
    model_spans: tuple[tuple[int, int], ...] | None = field(default=None, repr=False, compare=False)
    model_touched: tuple[int, ...] | None = field(default=None, repr=False, compare=False)
    # the Concats every input of which is written straight into their buffer: they copy nothing,
    # so they launch no kernel (the roofline stage reads this decision, placement.place_model)
    in_place_concats: frozenset[str] = field(default=frozenset(), compare=False)

    @cached_property
    def buffers(self) -> tuple[Buffer, ...]:
        """The buffers (built on first use: the model order's peak and its lower bound need only
        the names, bytes and spans)."""
        uses = self.uses
        made_by: list[list[str]] = [[] for _ in self.buffer_names]
        read_by: list[list[str]] = [[] for _ in self.buffer_names]
        for node, event in zip(uses.nodes, uses.events):
            if event >= 0:
                made_by[event].append(node)
            else:
                read_by[~event].append(node)
        return tuple(
            Buffer(
                name,
                size,
                frozenset(made),
                frozenset(read),
                uses.tensors.get(index, (name,)),
                index < uses.from_start,
                index in uses.to_end,
            )
            for index, (name, size, made, read) in enumerate(
                zip(self.buffer_names, self.buffer_bytes, made_by, read_by)
            )
        )

    @cached_property
    def predecessors(self) -> dict[str, frozenset[str]]:
        """node -> nodes that must run before it (built on first use: only the searches need it)."""
        producer = {name: record.name for record in self.records for name in record.outputs if name}
        predecessors = {}
        for record in self.records:
            node = record.name
            predecessors[node] = frozenset(
                [made_by for n in record.inputs if (made_by := producer.get(n)) is not None and made_by != node]
            )
        return predecessors

    @property
    def allocated_by(self) -> dict[str, list[int]]:
        table: dict[str, list[int]] = {n: [] for n in self.model_order}
        for index, buffer in enumerate(self.buffers):
            for node in buffer.allocators:
                table[node].append(index)
        return table


@dataclass
class Schedule:
    """Live bytes at every step of one execution order."""

    order: tuple[str, ...]
    live_bytes: list[int]  # during each step: inputs still live plus the outputs being written
    peak_bytes: int
    peak_step: int
    peak_node: str | None
    peak_tensors: list[tuple[str, int]]  # (buffer name, bytes) live at the peak, largest first


# ---------------------------------------------------------------------------------------------
# Buffers


def build_problem(
    graph: CostGraph, *, concat_in_place: bool = True, elementwise_in_place: bool = False
) -> MemoryProblem:
    """The buffers of a cost DAG (graph stage), one pass over its nodes and tensors."""
    tensors = graph.tensors
    sizes = {
        name: tensor.bytes
        for name, tensor in tensors.items()
        if tensor.kind in ("input", "activation") and tensor.bytes is not None
    }
    # consumer counts only decide elementwise in-place updates
    consumers = {name: len(tensor.consumers) for name, tensor in tensors.items()} if elementwise_in_place else None
    return problem_from_records(
        graph.records,
        sizes,
        graph.inputs,
        graph.outputs,
        consumers,
        concat_in_place=concat_in_place,
        elementwise_in_place=elementwise_in_place,
    )


def problem_from_records(
    records: list,
    sizes: dict[str, int],
    inputs: Iterable[str],
    outputs: Iterable[str],
    consumers: dict[str, int] | None = None,
    *,
    concat_in_place: bool = True,
    elementwise_in_place: bool = False,
) -> MemoryProblem:
    """The buffers of a node list in execution order. ``sizes`` holds the bytes of every
    activation (tensors missing from it are parameters, constants or of unknown size)."""
    inputs, outputs = set(inputs), set(outputs)
    if consumers is None and elementwise_in_place:
        consumers = _count_consumers(records)
    aliases = _find_aliases(records, sizes, inputs, outputs, consumers, elementwise_in_place)
    slices = _concat_slices(aliases, sizes, inputs, outputs) if concat_in_place else _ConcatSlices({}, set())
    table = _BufferTable(sizes, outputs)
    for name in inputs & sizes.keys():
        table.new_buffer(name)
    table.uses.from_start = len(table.names)
    # without views or slices, every tensor owns its buffer
    owner = _owner_function(aliases.root, slices.owner) if aliases.root or slices.owner else None
    touched = _walk_steps(table, records, sizes, outputs, owner)
    _add_subgraph_scratch(table, aliases.nested, touched)
    uses, index_of = table.uses, table.index_of
    for buffer, tensors_in in table.guests.items():
        uses.tensors[index_of[buffer]] = tuple(dict.fromkeys([buffer, *tensors_in]))
    last = len(records) - 1
    ends = uses.to_end
    spans = [
        _span(index < uses.from_start, index in ends or read < 0, first, made, read, last)
        for index, (first, made, read) in enumerate(zip(table.first_made, table.last_made, table.last_read))
    ]
    order = tuple(map(attrgetter("name"), records))
    # with a node name repeated, lifetimes() and the lower bound go by names, not steps: leave it to them
    unique = len(set(order)) == len(order)
    return MemoryProblem(
        order,
        tuple(table.names),
        tuple(table.sizes_of),
        uses,
        concat_in_place,
        elementwise_in_place,
        tuple(records),
        len(slices.owner),
        tuple(spans) if unique else None,
        tuple(touched) if unique else None,
        frozenset(slices.in_place_concats),
    )


def _count_consumers(records: list) -> dict[str, int]:
    """tensor -> the number of nodes reading it (a node reading it twice counts once)."""
    consumers: dict[str, int] = {}
    for record in records:
        for name in dict.fromkeys(n for n in record.inputs if n):
            consumers[name] = consumers.get(name, 0) + 1
    return consumers


@dataclass(slots=True)
class _Aliases:
    """What one pass over the nodes finds before the buffers: who shares whose memory."""

    root: dict[str, str] = field(default_factory=dict)  # tensor -> the tensor owning its memory
    concats: list = field(default_factory=list)  # the Concat nodes, in order
    nested: list = field(default_factory=list)  # (step, node) of the nodes with subgraphs


def _find_aliases(
    records: list,
    sizes: dict[str, int],
    inputs: set[str],
    outputs: set[str],
    consumers: dict[str, int] | None,
    elementwise_in_place: bool,
) -> _Aliases:
    """Views (and, with ``elementwise_in_place``, single-consumer elementwise ops) write into
    their input 0's buffer; also collects the Concats and the nodes with subgraphs."""
    aliases = _Aliases()
    root, concats, nested = aliases.root, aliases.concats, aliases.nested
    for step, record in enumerate(records):
        if record.subgraphs:
            nested.append((step, record))
        op = record.op_type
        if op == "Concat":
            concats.append(record)
        # a view's output 0 shares its input 0's buffer (cost-model.md section 4)
        aliasing = has_trait(record.domain, op, OpTrait.VIEW)
        if not (aliasing or elementwise_in_place):
            continue  # the common case: the outputs own their memory
        data = [n for n in record.inputs if n in sizes]
        if aliasing and data and record.outputs and record.outputs[0] in sizes:
            root[record.outputs[0]] = root.get(data[0], data[0])
        elif elementwise_in_place and _in_place_candidate(record, data, sizes, consumers or {}, outputs, inputs):
            root[record.outputs[0]] = root.get(data[0], data[0])
    return aliases


@dataclass(slots=True)
class _ConcatSlices:
    owner: dict[str, str]  # tensor -> the concat output it is written into
    in_place_concats: set[str]  # Concats all of whose inputs are written into their buffer


def _concat_slices(aliases: _Aliases, sizes: dict[str, int], inputs: set[str], outputs: set[str]) -> _ConcatSlices:
    """Each Concat input written straight into a slice of the Concat's buffer: one made by a node
    of this graph, not an output, and not already taken by an earlier Concat."""
    root = aliases.root
    slices = _ConcatSlices({}, set())
    claimed: set[str] = set()
    for record in aliases.concats:
        if not record.outputs or record.outputs[0] not in sizes:
            continue
        written = 0  # inputs written straight into this Concat's buffer
        for name in record.inputs:
            source = root.get(name, name)
            if name in sizes and source not in inputs and source not in claimed and source not in outputs:
                claimed.add(source)
                slices.owner[source] = root.get(record.outputs[0], record.outputs[0])
                written += 1
        # an input it must copy (a graph input, a stored constant, one another Concat took, one
        # given twice) leaves it a copy kernel
        if record.inputs and written == len(record.inputs):
            slices.in_place_concats.add(record.name)
    return slices


def _owner_function(root: dict[str, str], concat_owner: dict[str, str]) -> Callable[[str], str]:
    """tensor -> the tensor owning the buffer it lives in."""

    def owner(name: str) -> str:
        # a concat slice's own views and in-place results live in the concat buffer too
        name = root.get(name, name)
        if name not in concat_owner:
            return name
        seen = set()
        while name in concat_owner and name not in seen:
            seen.add(name)
            name = root.get(concat_owner[name], concat_owner[name])
        return name

    return owner


@dataclass(slots=True)
class _BufferTable:
    """The buffers' columns as they are found: name, bytes, first and last step allocating it,
    last step reading it (the model order's lifetimes), and the log of who allocates and reads
    what, from which the Buffer objects are built only if a later stage asks for them. Plain
    lists of ints, as a hundred thousand small objects per graph would cost more than all the rest."""

    sizes: dict[str, int]  # every activation's bytes
    outputs: set[str]  # the graph's outputs
    index_of: dict[str, int] = field(default_factory=dict)  # buffer (its owning tensor) -> its index
    names: list[str] = field(default_factory=list)
    sizes_of: list[int] = field(default_factory=list)
    first_made: list[int] = field(default_factory=list)  # 0 when nothing allocates it
    last_made: list[int] = field(default_factory=list)  # -1 when nothing allocates it
    last_read: list[int] = field(default_factory=list)  # -1 when nothing reads it
    uses: _Uses = field(default_factory=_Uses)
    guests: dict[str, list[str]] = field(default_factory=dict)  # buffer -> the other tensors living in it

    def new_buffer(self, name: str) -> int:
        self.index_of[name] = index = len(self.names)
        self.names.append(name)
        self.sizes_of.append(self.sizes[name])
        self.first_made.append(0)
        self.last_made.append(-1)
        self.last_read.append(-1)
        if name in self.outputs:
            self.uses.to_end.add(index)
        return index


def _walk_steps(
    table: _BufferTable, records: list, sizes: dict[str, int], outputs: set[str], owner: Callable[[str], str] | None
) -> list[int]:
    """Runs the nodes in order into ``table``; returns the bytes each step touches (the buffers
    it allocates or reads, each once: the lower bound's terms)."""
    index_of, new_buffer, guests = table.index_of, table.new_buffer, table.guests
    sizes_of, first_made, last_made, last_read = table.sizes_of, table.first_made, table.last_made, table.last_read
    ends = table.uses.to_end
    log_node, log_event = table.uses.nodes, table.uses.events
    touched: list[int] = []
    for step, record in enumerate(records):
        node = record.name
        touches = 0
        for name in record.outputs:
            if name in sizes:
                buffer = owner(name) if owner else name
                index = index_of.get(buffer)
                if index is None:
                    index = new_buffer(buffer)
                if buffer != name:
                    guests.setdefault(buffer, []).append(name)
                    if name in outputs:
                        ends.add(index)
                if last_made[index] != step:  # a second output into the same buffer changes nothing
                    if last_made[index] < 0:
                        first_made[index] = step
                    last_made[index] = step
                    touches += sizes_of[index]
                    log_node.append(node)
                    log_event.append(index)
        for name in record.inputs:
            if name in sizes:
                buffer = owner(name) if owner else name
                index = index_of.get(buffer)
                if index is None:
                    index = new_buffer(buffer)
                if last_read[index] != step:
                    if last_made[index] != step:
                        touches += sizes_of[index]
                    last_read[index] = step
                    log_node.append(node)
                    log_event.append(~index)
        touched.append(touches)
    return touched


def _add_subgraph_scratch(table: _BufferTable, nested: list, touched: list[int]) -> None:
    """If/Loop/Scan: while the node runs, its subgraph's own peak is live too (a scratch buffer)."""
    uses = table.uses
    for step, record in nested:
        scratch = max((subgraph_peak(sub) for sub in record.subgraphs.values()), default=0)
        if scratch:
            index = len(table.names)
            table.names.append(f"{record.name} (subgraph working set)")
            table.sizes_of.append(scratch)
            table.first_made.append(step)
            table.last_made.append(step)
            table.last_read.append(step)
            uses.tensors[index] = ()
            uses.nodes += (record.name, record.name)
            uses.events += (index, ~index)
            touched[step] += scratch


def subgraph_peak(subgraph) -> int:
    """Peak live bytes inside one subgraph (an If branch, a Loop or Scan body) in its own order."""
    problem = problem_from_records(subgraph.records, subgraph.activation_bytes, subgraph.inputs, subgraph.outputs)
    return schedule_peak(problem, problem.model_order).peak_bytes


def _in_place_candidate(
    record, data: list[str], sizes: dict[str, int], consumers: dict[str, int], outputs: set[str], inputs: set[str]
) -> bool:
    """A single-consumer elementwise op may overwrite its input: same size, read only here."""
    if record.family != "elementwise" or not data or len(record.outputs) != 1:
        return False
    return (
        sizes.get(record.outputs[0]) == sizes[data[0]]
        and consumers.get(data[0], 0) == 1
        and data[0] not in outputs
        and data[0] not in inputs
    )


# ---------------------------------------------------------------------------------------------
# Liveness of one order


def lifetimes(problem: MemoryProblem, order: Sequence[str]) -> Sequence[tuple[int, int]]:
    """(first step, last step) each buffer is live under ``order``."""
    if order is problem.model_order and problem.model_spans is not None:
        return problem.model_spans
    step_of = dict(zip(order, range(len(order)))).__getitem__
    last = len(order) - 1
    spans = []
    for buffer in problem.buffers:
        # most buffers have one allocator and one reader: unpack those rather than take min/max
        allocators, readers = buffer.allocators, buffer.readers
        if len(allocators) == 1:
            (node,) = allocators
            first_made = last_made = step_of(node)
        elif allocators:
            first_made, last_made = min(map(step_of, allocators)), max(map(step_of, allocators))
        else:
            first_made = last_made = 0
        live_to_end = buffer.to_end or not readers
        if live_to_end:
            last_read = last
        elif len(readers) == 1:
            (node,) = readers
            last_read = step_of(node)
        else:
            last_read = max(map(step_of, readers))
        spans.append(_span(buffer.from_start, live_to_end, first_made, last_made, last_read, last))
    return spans


def _span(
    from_start: bool, live_to_end: bool, first_made: int, last_made: int, last_read: int, last: int
) -> tuple[int, int]:
    """A buffer's (first step, last step) live: from its first allocation (step 0 for the model's
    inputs) to its last read or allocation (the last step for outputs and buffers nothing reads)."""
    end = last if live_to_end else last_read
    return 0 if from_start else first_made, end if end > last_made else last_made


def schedule_peak(problem: MemoryProblem, order: Sequence[str]) -> Schedule:
    """Live bytes at each step of ``order`` (a topological order of the problem's nodes)."""
    if not order:
        return Schedule((), [], sum(problem.buffer_bytes), 0, None, [])
    spans = lifetimes(problem, order)
    names, sizes = problem.buffer_names, problem.buffer_bytes
    steps = len(order)
    change = [0] * (steps + 1)
    for size, (start, end) in zip(sizes, spans):
        change[start] += size
        change[end + 1] -= size
    live_bytes = list(accumulate(change[:steps]))
    peak_bytes = max(live_bytes)
    peak_step = live_bytes.index(peak_bytes)  # the first step at the peak
    peak_tensors = sorted(
        # by index: reading every buffer's name would touch a hundred thousand scattered strings
        [
            (names[index], sizes[index])
            for index, (start, end) in enumerate(spans)
            if start <= peak_step <= end and sizes[index]
        ],
        key=lambda item: (-item[1], item[0]),
    )
    return Schedule(tuple(order), live_bytes, peak_bytes, peak_step, order[peak_step], peak_tensors)


def largest_layer_bytes(problem: MemoryProblem) -> tuple[int, str | None]:
    """The lower bound: the most bytes any one node needs at once (its inputs and outputs)."""
    if problem.model_touched is not None:
        if not problem.model_touched:
            return 0, None
        most = max(problem.model_touched)
        return most, problem.model_order[problem.model_touched.index(most)]  # the first node at the most
    touched: dict[str, int] = dict.fromkeys(problem.model_order, 0)
    for buffer in problem.buffers:
        size, allocators = buffer.bytes, buffer.allocators
        for node in allocators:
            touched[node] += size
        for node in buffer.readers:
            if node not in allocators:
                touched[node] += size
    if not touched:
        return 0, None
    node = max(problem.model_order, key=touched.__getitem__)
    return touched[node], node
