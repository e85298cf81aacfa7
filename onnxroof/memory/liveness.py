"""Stage 5: live activations, peak on-chip memory, and the execution order that lowers it.

Semantics (cost-model.md section 4): an activation is live from the step its producer runs
until its last consumer has run; graph inputs are live from step 0 and graph outputs to the
end; parameters are not activations. Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
Dropout) alias their input; by default Concat's producers write straight into slices of the
concat buffer. All of this is expressed as *buffers*: one per tensor that owns memory, each
with the nodes that allocate it and the nodes that read it. Every function here is pure over
a :class:`MemoryProblem`.

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> problem = build_problem(analyze(build_example("shallownet")).cost_graph)
>>> schedule_peak(problem, problem.model_order).peak_bytes  # the 128 KiB conv output, read by Relu
262144
"""

from __future__ import annotations

import bisect
import heapq
import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from operator import attrgetter
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from ..cost.records import CostGraph

# Ops whose output 0 shares its input 0's buffer (cost-model.md section 4).
ALIASING_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
# Budget of the exact search: memoized states before it gives way to the heuristic, and the
# largest graph it is tried on (its recursion is one frame per node). Searches that finish need
# far fewer states (9,238 on benchmarks/memory_search.py's hardest graph); one that runs out
# would not have finished with 50x more (a 555-node GPT-2 export: its many small shape nodes
# interleave in too many ways), so a bigger budget only adds time to the analysis.
EXACT_STATE_LIMIT = 20_000
EXACT_NODE_LIMIT = 2_000
EXACT_SECONDS = 0.5


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
            Buffer(name, size, frozenset(made), frozenset(read), uses.tensors.get(index, (name,)),
                   index < uses.from_start, index in uses.to_end)
            for index, (name, size, made, read) in enumerate(zip(self.buffer_names, self.buffer_bytes, made_by, read_by))
        )

    @cached_property
    def predecessors(self) -> dict[str, frozenset[str]]:
        """node -> nodes that must run before it (built on first use: only the searches need it)."""
        producer = {name: record.name for record in self.records for name in record.outputs if name}
        predecessors = {}
        for record in self.records:
            node = record.name
            predecessors[node] = frozenset(
                [made_by for n in record.inputs if (made_by := producer.get(n)) is not None and made_by != node])
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


@dataclass
class SearchResult:
    schedule: Schedule
    method: str  # "exact" | "heuristic" | "model order"
    states: int  # states the exact search visited (0 for the heuristic)
    note: str = ""


# ---------------------------------------------------------------------------------------------
# Buffers


def build_problem(graph: CostGraph, *, concat_in_place: bool = True, elementwise_in_place: bool = False) -> MemoryProblem:
    """The buffers of a cost DAG (graph stage), one pass over its nodes and tensors."""
    tensors = graph.tensors
    sizes = {
        name: tensor.bytes for name, tensor in tensors.items()
        if tensor.kind in ("input", "activation") and tensor.bytes is not None
    }
    # consumer counts only decide elementwise in-place updates
    consumers = {name: len(tensor.consumers) for name, tensor in tensors.items()} if elementwise_in_place else None
    return problem_from_records(graph.records, sizes, graph.inputs, graph.outputs, consumers,
                                concat_in_place=concat_in_place, elementwise_in_place=elementwise_in_place)


def problem_from_records(
    records: list, sizes: dict[str, int], inputs: Iterable[str], outputs: Iterable[str],
    consumers: dict[str, int] | None = None, *, concat_in_place: bool = True, elementwise_in_place: bool = False,
) -> MemoryProblem:
    """The buffers of a node list in execution order. ``sizes`` holds the bytes of every
    activation (tensors missing from it are parameters, constants or of unknown size)."""
    inputs, outputs = set(inputs), set(outputs)
    if consumers is None and elementwise_in_place:
        consumers = {}
        for record in records:
            for name in dict.fromkeys(n for n in record.inputs if n):
                consumers[name] = consumers.get(name, 0) + 1

    root: dict[str, str] = {}  # tensor -> the tensor owning its memory
    concats, nested = [], []
    for step, record in enumerate(records):
        if record.subgraphs:
            nested.append((step, record))
        op = record.op_type
        if op == "Concat":
            concats.append(record)
        aliasing = op in ALIASING_OPS
        if not (aliasing or elementwise_in_place):
            continue  # the common case: the outputs own their memory
        data = [n for n in record.inputs if n in sizes]
        if aliasing and data and record.outputs and record.outputs[0] in sizes:
            root[record.outputs[0]] = root.get(data[0], data[0])
        elif elementwise_in_place and _in_place_candidate(record, data, sizes, consumers, outputs, inputs):
            root[record.outputs[0]] = root.get(data[0], data[0])
    concat_owner: dict[str, str] = {}  # tensor -> the concat output it is written into
    if concat_in_place:
        claimed: set[str] = set()
        for record in concats:
            if not record.outputs or record.outputs[0] not in sizes:
                continue
            for name in record.inputs:
                source = root.get(name, name)
                if name in sizes and source not in inputs and source not in claimed and source not in outputs:
                    claimed.add(source)
                    concat_owner[source] = root.get(record.outputs[0], record.outputs[0])

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

    # One pass over the nodes in order gives each buffer's columns (name, bytes, first and last
    # step allocating it, last step reading it: the model order's lifetimes), the bytes each step
    # touches (the lower bound's terms), and a log of who allocates and reads what, from which
    # the Buffer objects are built only if a later stage asks for them. Plain lists of ints, as
    # a hundred thousand small objects per graph would cost more than all the rest.
    index_of: dict[str, int] = {}  # buffer (its owning tensor) -> its index
    names: list[str] = []
    sizes_of: list[int] = []
    first_made: list[int] = []  # 0 when nothing allocates it
    last_made: list[int] = []  # -1 when nothing allocates it
    last_read: list[int] = []  # -1 when nothing reads it
    uses = _Uses()
    ends = uses.to_end  # buffers holding a graph output
    guests: dict[str, list[str]] = {}  # buffer -> the other tensors living in it (views, slices)

    def new_buffer(name: str) -> int:
        index_of[name] = index = len(names)
        names.append(name)
        sizes_of.append(sizes[name])
        first_made.append(0)
        last_made.append(-1)
        last_read.append(-1)
        if name in outputs:
            ends.add(index)
        return index

    for name in inputs & sizes.keys():
        new_buffer(name)
    uses.from_start = len(names)
    shared = bool(root or concat_owner)  # without views or slices, every tensor owns its buffer
    touched: list[int] = []
    log_node, log_event = uses.nodes, uses.events
    for step, record in enumerate(records):
        node = record.name
        touches = 0  # bytes of the buffers this node allocates or reads, each once
        for name in record.outputs:
            if name in sizes:
                buffer = owner(name) if shared else name
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
                buffer = owner(name) if shared else name
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
    # If/Loop/Scan: while the node runs, its subgraph's own peak is live too (a scratch buffer)
    for step, record in nested:
        scratch = max((subgraph_peak(sub) for sub in record.subgraphs.values()), default=0)
        if scratch:
            index = len(names)
            names.append(f"{record.name} (subgraph working set)")
            sizes_of.append(scratch)
            first_made.append(step)
            last_made.append(step)
            last_read.append(step)
            uses.tensors[index] = ()
            log_node += (record.name, record.name)
            log_event += (index, ~index)
            touched[step] += scratch
    for buffer, tensors_in in guests.items():
        uses.tensors[index_of[buffer]] = tuple(dict.fromkeys([buffer, *tensors_in]))
    last = len(records) - 1
    spans = [
        _span(index < uses.from_start, index in ends or read < 0, first, made, read, last)
        for index, (first, made, read) in enumerate(zip(first_made, last_made, last_read))
    ]
    order = tuple(map(attrgetter("name"), records))
    # with a node name repeated, lifetimes() and the lower bound go by names, not steps: leave it to them
    unique = len(set(order)) == len(order)
    return MemoryProblem(order, tuple(names), tuple(sizes_of), uses, concat_in_place, elementwise_in_place,
                         tuple(records), len(concat_owner), tuple(spans) if unique else None,
                         tuple(touched) if unique else None)


def subgraph_peak(subgraph) -> int:
    """Peak live bytes inside one subgraph (an If branch, a Loop or Scan body) in its own order."""
    problem = problem_from_records(subgraph.records, subgraph.activation_bytes, subgraph.inputs, subgraph.outputs)
    return schedule_peak(problem, problem.model_order).peak_bytes


def _in_place_candidate(record, data: list[str], sizes: dict[str, int], consumers: dict[str, int],
                        outputs: set[str], inputs: set[str]) -> bool:
    """A single-consumer elementwise op may overwrite its input: same size, read only here."""
    if record.family != "elementwise" or not data or len(record.outputs) != 1:
        return False
    return (
        sizes.get(record.outputs[0]) == sizes[data[0]] and consumers.get(data[0], 0) == 1
        and data[0] not in outputs and data[0] not in inputs
    )


# ---------------------------------------------------------------------------------------------
# Liveness of one order


def lifetimes(problem: MemoryProblem, order: Sequence[str]) -> list[tuple[int, int]]:
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


def _span(from_start: bool, live_to_end: bool, first_made: int, last_made: int, last_read: int,
          last: int) -> tuple[int, int]:
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
        [(names[index], sizes[index]) for index, (start, end) in enumerate(spans)
         if start <= peak_step <= end and sizes[index]],
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


# ---------------------------------------------------------------------------------------------
# Schedule search


class _Search:
    """Incremental state for both searches: which nodes ran, which buffers are live."""

    def __init__(self, problem: MemoryProblem):
        self.problem = problem
        self.nodes = problem.model_order
        self.bit = {node: 1 << i for i, node in enumerate(self.nodes)}
        self.need = {node: sum(self.bit[p] for p in problem.predecessors[node]) for node in self.nodes}
        self.alloc = problem.allocated_by
        self.reads: dict[str, list[int]] = {node: [] for node in self.nodes}
        for index, buffer in enumerate(problem.buffers):
            for node in buffer.readers | buffer.allocators:
                self.reads[node].append(index)
        self.allocator_mask = [sum(self.bit[n] for n in b.allocators) for b in problem.buffers]
        self.release_mask = [sum(self.bit[n] for n in b.readers | b.allocators) for b in problem.buffers]
        self.base = sum(b.bytes for b in problem.buffers if b.from_start or not b.allocators)
        self.full = (1 << len(self.nodes)) - 1
        self.successors: dict[str, list[str]] = {node: [] for node in self.nodes}
        for node, preds in problem.predecessors.items():
            for pred in preds:
                self.successors[pred].append(node)

    def initially_ready(self) -> tuple[str, ...]:
        return tuple(n for n in self.nodes if not self.need[n])

    def ready_after(self, ready: tuple[str, ...], done: int, node: str) -> tuple[str, ...]:
        """The ready set once ``node`` (ready in ``done``) has run."""
        after = done | self.bit[node]
        unlocked = tuple(s for s in self.successors[node] if self.need[s] & after == self.need[s])
        return tuple(n for n in ready if n != node) + unlocked

    def step(self, done: int, live: int, node: str) -> tuple[int, int]:
        """(live bytes while ``node`` runs, live bytes after it) from the state ``done``."""
        bit = self.bit[node]
        new = sum(
            self.problem.buffers[i].bytes
            for i in self.alloc[node]
            if not self.allocator_mask[i] & done and not (self.problem.buffers[i].from_start)
        )
        during = live + new
        after_done = done | bit
        freed = sum(
            self.problem.buffers[i].bytes
            for i in self.reads[node]
            if not self.problem.buffers[i].to_end
            and self.release_mask[i] & after_done == self.release_mask[i]
            and self.problem.buffers[i].readers
        )
        return during, during - freed


def greedy_order(problem: MemoryProblem) -> list[str]:
    """Heuristic: run the ready node that keeps memory lowest now (then the one that frees most),
    ties broken by model order.

    The ready nodes wait in a heap keyed (bytes the node allocates, those minus the bytes it
    frees, model position); the live bytes are common to every candidate, so they drop out of
    the comparison. Running a node changes the key only of other users of the buffers it
    touches (a buffer they allocate is now allocated; the one user left now frees it), so only
    those are re-keyed: near-linear in the graph, however many nodes are ready at once.
    """
    nodes = problem.model_order
    rank = {node: i for i, node in enumerate(nodes)}
    buffers = problem.buffers
    allocates: dict[str, list[int]] = {n: [] for n in nodes}
    touches: dict[str, list[int]] = {n: [] for n in nodes}
    users_of: list[frozenset[str]] = []
    remaining = []  # nodes that still have to run before a buffer can be freed
    for index, buffer in enumerate(buffers):
        for node in buffer.allocators:
            allocates[node].append(index)
        users = buffer.readers | buffer.allocators
        for node in users:
            touches[node].append(index)
        users_of.append(users)
        remaining.append(len(users))
    allocated = [b.from_start or not b.allocators for b in buffers]
    freeable = [not b.to_end and bool(b.readers) for b in buffers]
    waiting = {node: len(problem.predecessors[node]) for node in nodes}
    successors: dict[str, list[str]] = {node: [] for node in nodes}
    for node, preds in problem.predecessors.items():
        for pred in preds:
            successors[pred].append(node)

    keys: dict[str, tuple[int, int, int]] = {}  # ready node -> its current key
    heap: list[tuple[int, int, int, str]] = []

    def push(node: str) -> None:
        new = sum(buffers[i].bytes for i in allocates[node] if not allocated[i])
        freed = sum(buffers[i].bytes for i in touches[node] if remaining[i] == 1 and freeable[i])
        keys[node] = key = (new, new - freed, rank[node])
        heapq.heappush(heap, (*key, node))

    for node in nodes:
        if waiting[node] == 0:
            push(node)
    order = []
    while heap:
        new, net, position, best = heapq.heappop(heap)
        if keys.get(best) != (new, net, position):
            continue  # stale: the node was re-keyed since this entry was pushed
        del keys[best]
        order.append(best)
        rekey: set[str] = set()
        for i in allocates[best]:
            if not allocated[i]:
                allocated[i] = True
                rekey.update(n for n in buffers[i].allocators if n in keys)
        for i in touches[best]:
            remaining[i] -= 1
            if remaining[i] == 1 and freeable[i]:
                rekey.update(n for n in users_of[i] if n in keys)
        for node in rekey:
            push(node)
        for successor in successors[best]:
            waiting[successor] -= 1
            if waiting[successor] == 0:
                push(successor)
    return order


def best_order(problem: MemoryProblem, state_limit: int = EXACT_STATE_LIMIT) -> SearchResult:
    """The order with the lowest peak: exact (memoized search over sets of scheduled nodes,
    pruned by the best peak known) when it finishes within ``state_limit`` states, otherwise the
    better of the greedy heuristic and the model's order. Either way the result is never worse
    than the model order and never below :func:`largest_layer_bytes`."""
    return _best_order(problem, schedule_peak(problem, problem.model_order), largest_layer_bytes(problem)[0],
                       state_limit)


def _best_order(problem: MemoryProblem, model: Schedule, lower_bound: int, state_limit: int) -> SearchResult:
    """:func:`best_order` given the model order's schedule and the lower bound."""
    if model.peak_bytes <= lower_bound:  # no order peaks lower: nothing to search for
        return SearchResult(model, "model order", 0, "meets the largest-layer lower bound: optimal")
    # the greedy order is a topological order, so when the model order is the only one it is the same
    greedy = model if _only_order(problem) else schedule_peak(problem, greedy_order(problem))
    incumbent = min((model, greedy), key=lambda s: s.peak_bytes)
    method = "model order" if incumbent is model else "heuristic"
    if incumbent.peak_bytes <= lower_bound:
        return SearchResult(incumbent, method, 0, "meets the largest-layer lower bound: optimal")
    bounds = f"between the lower bound {lower_bound:,} B and the model-order peak {model.peak_bytes:,} B"
    if len(problem.model_order) > EXACT_NODE_LIMIT:
        note = f"{len(problem.model_order):,} nodes: over the exact search's {EXACT_NODE_LIMIT:,}; heuristic result, {bounds}"
        return SearchResult(incumbent, method, 0, note)
    exact = _exact(problem, incumbent.peak_bytes, state_limit)
    if exact is None:
        note = f"exact search ran out of its budget ({state_limit:,} states or {EXACT_SECONDS:g} s); heuristic result, {bounds}"
        return SearchResult(incumbent, method, state_limit, note)
    order, states = exact
    if order is None:  # nothing beats the incumbent: it came from elsewhere, the search proved it optimal
        return SearchResult(incumbent, method, states, f"the exact search proved no order beats the {method}")
    return SearchResult(schedule_peak(problem, order), "exact", states, "exact search")


def _only_order(problem: MemoryProblem) -> bool:
    """Whether the model order is the graph's only topological order: every edge points forward
    and every node depends on the one just before it (a chain)."""
    position = dict(zip(problem.model_order, range(len(problem.model_order))))
    if len(position) != len(problem.model_order):
        return False  # repeated node names: leave it to the search
    predecessors = problem.predecessors
    for step, node in enumerate(problem.model_order):
        preds = predecessors[node]
        if step and problem.model_order[step - 1] not in preds:
            return False
        for pred in preds:
            if position[pred] >= step:
                return False  # an edge pointing backwards: no topological order at all
    return True


def _exact(problem: MemoryProblem, bound: int, state_limit: int,
           seconds: float = EXACT_SECONDS) -> tuple[list[str] | None, int] | None:
    """min over orders of the peak, as f(done) = min over ready v of max(during(v), f(done + v)).

    Memoized on the set of scheduled nodes (live bytes are a function of it); branches whose
    step already reaches ``bound`` are cut, and a ready node that allocates nothing is run at
    once (running it first never raises a later step). Returns (order, or None if none beats
    ``bound``; states visited), or None when the state or time budget runs out.
    """
    search = _Search(problem)
    memo: dict[int, tuple[int, str | None]] = {}
    deadline = time.monotonic() + seconds

    def solve(done: int, live: int, ready: tuple[str, ...], limit: int) -> int:
        # the best peak of the rest from ``done``, or >= limit when it cannot beat limit
        if done == search.full:
            return 0
        cached = memo.get(done)
        if cached is not None and (cached[1] is not None or cached[0] >= limit):
            return cached[0]
        if len(memo) >= state_limit or (len(memo) & 1023 == 0 and time.monotonic() > deadline):
            raise _Budget
        steps = {node: search.step(done, live, node) for node in ready}
        free = [node for node in ready if steps[node][0] == live]
        candidates = free[:1] or sorted(ready, key=lambda n: steps[n])
        best, best_node = limit, None
        for node in candidates:
            during, after = steps[node]
            if during >= best:
                continue
            rest = solve(done | search.bit[node], after, search.ready_after(ready, done, node), best)
            peak = max(during, rest)
            if peak < best:
                best, best_node = peak, node
        memo[done] = (best, best_node)
        return best

    depth = sys.getrecursionlimit()
    sys.setrecursionlimit(max(depth, 4 * len(search.nodes) + 1000))  # one frame per scheduled node
    try:
        peak = solve(0, search.base, search.initially_ready(), bound)
    except (_Budget, RecursionError):
        return None
    finally:
        sys.setrecursionlimit(depth)
    if peak >= bound:
        return None, len(memo)
    order, done = [], 0
    while done != search.full:
        node = memo[done][1]
        order.append(node)
        done |= search.bit[node]
    return order, len(memo)


class _Budget(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Spilling to DRAM when the live set exceeds an on-chip capacity


@dataclass
class SpillPlan:
    capacity_bytes: int
    extra_dram_bytes: int  # writes of evicted buffers plus their reloads
    per_node: dict[str, int] = field(default_factory=dict)  # node -> extra DRAM bytes it causes
    spilled: list[str] = field(default_factory=list)  # buffers evicted at least once
    streamed: list[str] = field(default_factory=list)  # nodes whose own working set exceeds capacity


def spill_plan(problem: MemoryProblem, order: Sequence[str], capacity_bytes: int) -> SpillPlan:
    """Which buffers leave on-chip memory, and the DRAM bytes that costs, under Belady's policy:
    when the live set does not fit, evict the resident buffer whose next use is farthest away
    (written once to DRAM, read back at its next use). A node whose own inputs and outputs do
    not fit streams them from DRAM (their bytes count as extra traffic, and a later reader reads
    them back). The model's inputs start in DRAM and its outputs end there: the roofline charges
    reading the one and writing the other, so neither counts again here, and evicting an output
    costs only its reload, if a later node reads it."""
    position = {node: step for step, node in enumerate(order)}
    buffers = problem.buffers
    uses: dict[int, list[int]] = {}
    needed: list[list[int]] = [[] for _ in order]
    for index, buffer in enumerate(buffers):
        steps = sorted({position[n] for n in buffer.readers | buffer.allocators})
        uses[index] = steps
        for step in steps:
            needed[step].append(index)
    plan = SpillPlan(capacity_bytes, 0)
    resident: dict[int, int] = {}  # buffer -> bytes, on chip
    resident_bytes = 0
    evicted: set[int] = set()
    spilled: set[str] = set()
    # the step after which a buffer is dead (never, for the model's outputs)
    last = {index: (len(order) if buffers[index].to_end else (steps[-1] if steps else 0)) for index, steps in uses.items()}
    dying: list[list[int]] = [[] for _ in range(len(order) + 1)]
    for index, step in last.items():
        dying[min(step, len(order))].append(index)

    def next_use(index: int, step: int) -> int:
        steps = uses[index]
        later = bisect.bisect_right(steps, step)
        return steps[later] if later < len(steps) else (len(order) + 1 if buffers[index].to_end else 10**18)

    for step, node in enumerate(order):
        working = needed[step]
        working_bytes = sum(buffers[i].bytes for i in working)
        extra = 0
        if working_bytes > capacity_bytes:
            plan.streamed.append(node)
            for index in working:
                buffer = buffers[index]
                # the roofline already charges reading the model's inputs and writing its outputs
                if not (buffer.from_start or (buffer.to_end and node in buffer.allocators)):
                    extra += buffer.bytes
                resident_bytes -= resident.pop(index, 0)
                if not buffer.from_start:
                    evicted.add(index)  # now in DRAM: its next reader reads it back
        else:
            for index in working:
                if index in evicted and index not in resident:
                    extra += buffers[index].bytes  # reload
                    evicted.discard(index)
                if index not in resident:
                    resident[index] = buffers[index].bytes
                    resident_bytes += buffers[index].bytes
            if resident_bytes > capacity_bytes:
                in_use = set(working)
                # farthest next use first; ties keep the order buffers became resident
                victims = sorted((i for i in resident if i not in in_use), key=lambda i: -next_use(i, step))
                for victim in victims:
                    if resident_bytes <= capacity_bytes:
                        break
                    if next_use(victim, step) < 10**18:
                        # written back to be read again later; a model output is written to DRAM
                        # anyway (the roofline charges that write), so it costs only its reload
                        if not buffers[victim].to_end:
                            extra += buffers[victim].bytes
                        evicted.add(victim)
                        if buffers[victim].name not in spilled:
                            spilled.add(buffers[victim].name)
                            plan.spilled.append(buffers[victim].name)
                    resident_bytes -= resident.pop(victim)
        for index in dying[step]:
            if index in resident and not buffers[index].to_end:
                resident_bytes -= resident.pop(index)
        if extra:
            plan.per_node[node] = extra
            plan.extra_dram_bytes += extra
    return plan


def order_text(order: Iterable[str]) -> str:
    """The order as written by --emit-order: one node name per line."""
    return "".join(f"{name}\n" for name in order)


# ---------------------------------------------------------------------------------------------
# The whole analysis


@dataclass
class MemoryReport:
    model_order: Schedule
    best: SearchResult
    concat_copy_peak_bytes: int  # the model-order peak if Concat copies its inputs
    largest_layer_bytes: int  # lower bound: the most one node touches
    largest_layer_node: str | None
    elementwise_in_place: bool
    # the buffers and dependencies behind these figures, for later stages (spill plans, the
    # report's timeline) to reuse rather than rebuild
    problem: MemoryProblem = field(repr=False, compare=False)


def analyze_memory(graph: CostGraph, *, elementwise_in_place: bool = False,
                   state_limit: int = EXACT_STATE_LIMIT, search: bool = True) -> MemoryReport:
    """Peak live activations under the model's order and the best order found (without
    ``search``, the model's order stands for it: the formulas' grid reads the model order only)."""
    problem = build_problem(graph, concat_in_place=True, elementwise_in_place=elementwise_in_place)
    model_order = schedule_peak(problem, problem.model_order)
    if problem.concat_slices:
        copying = build_problem(graph, concat_in_place=False, elementwise_in_place=elementwise_in_place)
        copy_peak = schedule_peak(copying, copying.model_order).peak_bytes
    else:
        copy_peak = model_order.peak_bytes  # no Concat input written in place: copying changes nothing
    lower_bound, node = largest_layer_bytes(problem)
    return MemoryReport(
        model_order=model_order,
        best=(_best_order(problem, model_order, lower_bound, state_limit) if search
              else SearchResult(model_order, "model order", 0, "not searched")),
        concat_copy_peak_bytes=copy_peak,
        largest_layer_bytes=lower_bound,
        largest_layer_node=node,
        elementwise_in_place=elementwise_in_place,
        problem=problem,
    )
