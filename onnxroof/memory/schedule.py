"""The schedule search: the execution order that lowers the peak of live activations,
exactly (a memoized search over the sets of nodes run) when the graph is small enough, else by a
greedy heuristic.

>>> from onnxroof import analyze
>>> from onnxroof.core.examples import build_example
>>> from onnxroof.memory.problem import build_problem
>>> problem = build_problem(analyze(build_example("shallownet")).cost_graph)
>>> found = best_order(problem)
>>> found.schedule.peak_bytes, found.method  # a chain has one order: the model's
(262144, 'model order')
"""

from __future__ import annotations

import heapq
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.text import escaped
from .problem import MemoryProblem, Schedule, largest_layer_bytes, schedule_peak

# Budget of the exact search: memoized states before it gives way to the heuristic, and the
# largest graph it is tried on (its recursion is one frame per node). Searches that finish need
# far fewer states (9,238 on benchmarks/memory_search.py's hardest graph); one that runs out
# would not have finished with 50x more (a 555-node GPT-2 export: its many small shape nodes
# interleave in too many ways), so a bigger budget only adds time to the analysis.
EXACT_STATE_LIMIT = 20_000
EXACT_NODE_LIMIT = 2_000
EXACT_SECONDS = 0.5


@dataclass
class SearchResult:
    schedule: Schedule
    method: str  # "exact" | "heuristic" | "model order"
    states: int  # states the exact search visited (0 for the heuristic)
    note: str = ""


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
    ready = _ReadyNodes(problem)
    for node in problem.model_order:
        if ready.waiting[node] == 0:
            ready.push(node)
    order = []
    while (best := ready.pop()) is not None:
        order.append(best)
        ready.run(best)
    return order


class _ReadyNodes:
    """The greedy order's state: the ready nodes in a heap by key, and what decides the keys."""

    def __init__(self, problem: MemoryProblem):
        nodes = problem.model_order
        self.rank = {node: i for i, node in enumerate(nodes)}
        self.buffers = buffers = problem.buffers
        self.allocates: dict[str, list[int]] = {n: [] for n in nodes}  # node -> buffers it allocates
        self.touches: dict[str, list[int]] = {n: [] for n in nodes}  # node -> buffers it allocates or reads
        self.users_of: list[frozenset[str]] = []
        self.remaining: list[int] = []  # nodes that still have to run before a buffer can be freed
        for index, buffer in enumerate(buffers):
            for node in buffer.allocators:
                self.allocates[node].append(index)
            users = buffer.readers | buffer.allocators
            for node in users:
                self.touches[node].append(index)
            self.users_of.append(users)
            self.remaining.append(len(users))
        self.allocated = [b.from_start or not b.allocators for b in buffers]
        self.freeable = [not b.to_end and bool(b.readers) for b in buffers]
        self.waiting = {node: len(problem.predecessors[node]) for node in nodes}
        self.successors: dict[str, list[str]] = {node: [] for node in nodes}
        for node, preds in problem.predecessors.items():
            for pred in preds:
                self.successors[pred].append(node)
        self.keys: dict[str, tuple[int, int, int]] = {}  # ready node -> its current key
        self.heap: list[tuple[int, int, int, str]] = []

    def push(self, node: str) -> None:
        """(Re-)key a ready node: the bytes it allocates, those minus what it frees, its position."""
        buffers, allocated, remaining, freeable = self.buffers, self.allocated, self.remaining, self.freeable
        new = sum(buffers[i].bytes for i in self.allocates[node] if not allocated[i])
        freed = sum(buffers[i].bytes for i in self.touches[node] if remaining[i] == 1 and freeable[i])
        self.keys[node] = key = (new, new - freed, self.rank[node])
        heapq.heappush(self.heap, (*key, node))

    def pop(self) -> str | None:
        """The ready node of the lowest key, taken off the heap; None when none is ready."""
        while self.heap:
            new, net, position, best = heapq.heappop(self.heap)
            if self.keys.get(best) == (new, net, position):
                del self.keys[best]
                return best
            # else stale: the node was re-keyed since this entry was pushed
        return None

    def run(self, best: str) -> None:
        """``best`` runs: re-key the other users of the buffers it touches, push what it made ready."""
        buffers, keys = self.buffers, self.keys
        rekey: set[str] = set()
        for i in self.allocates[best]:
            if not self.allocated[i]:
                self.allocated[i] = True
                rekey.update(n for n in buffers[i].allocators if n in keys)
        for i in self.touches[best]:
            self.remaining[i] -= 1
            if self.remaining[i] == 1 and self.freeable[i]:
                rekey.update(n for n in self.users_of[i] if n in keys)
        for node in rekey:
            self.push(node)
        for successor in self.successors[best]:
            self.waiting[successor] -= 1
            if self.waiting[successor] == 0:
                self.push(successor)


def best_order(problem: MemoryProblem, state_limit: int = EXACT_STATE_LIMIT) -> SearchResult:
    """The order with the lowest peak: exact (memoized search over sets of scheduled nodes,
    pruned by the best peak known) when it finishes within ``state_limit`` states, otherwise the
    better of the greedy heuristic and the model's order. Either way the result is never worse
    than the model order and never below :func:`largest_layer_bytes`."""
    return best_order_from(
        problem, schedule_peak(problem, problem.model_order), largest_layer_bytes(problem)[0], state_limit
    )


def best_order_from(problem: MemoryProblem, model: Schedule, lower_bound: int, state_limit: int) -> SearchResult:
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
        note = (
            f"{len(problem.model_order):,} nodes: over the exact search's {EXACT_NODE_LIMIT:,}; "
            f"heuristic result, {bounds}"
        )
        return SearchResult(incumbent, method, 0, note)
    exact = _exact(problem, incumbent.peak_bytes, state_limit)
    if exact is None:
        note = (
            f"exact search ran out of its budget ({state_limit:,} states or {EXACT_SECONDS:g} s); "
            f"heuristic result, {bounds}"
        )
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


def _exact(
    problem: MemoryProblem, bound: int, state_limit: int, seconds: float = EXACT_SECONDS
) -> tuple[list[str] | None, int] | None:
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
    order: list[str] = []
    done = 0
    while done != search.full:
        node = memo[done][1]
        assert node is not None  # the memo's chain from the empty set reaches every node: peak < bound
        order.append(node)
        done |= search.bit[node]
    return order, len(memo)


class _Budget(Exception):
    pass


def order_text(order: Iterable[str]) -> str:
    """The order as written by --emit-order: one node name per line, escaped (a name holding a
    line break or a terminal escape is the model's, untrusted: it must not forge lines);
    ``core.text.unescaped`` reads a line back."""
    return "".join(f"{escaped(name)}\n" for name in order)
