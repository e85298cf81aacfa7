"""The spill plan: which buffers leave on-chip memory when the live set exceeds a
target's capacity, and the DRAM bytes that costs (Belady's policy)."""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from .problem import Buffer, MemoryProblem, schedule_peak


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
    if sum(problem.buffer_bytes) <= capacity_bytes or schedule_peak(problem, order).peak_bytes <= capacity_bytes:
        # every buffer fits at once, or the live ones do at every step (a buffer is resident from
        # its first use to its last, within its lifetime): no step streams or evicts, and the plan
        # is empty, found without the Buffer objects where the order is the model's (a fused
        # kernel's internals take no space, so a long fused chain lands here; so does an unfused one)
        return SpillPlan(capacity_bytes, 0)
    chip = _OnChip(problem.buffers, order, capacity_bytes)
    plan = chip.plan
    for step, node in enumerate(order):
        working = chip.needed[step]
        if sum(chip.buffers[i].bytes for i in working) > capacity_bytes:
            plan.streamed.append(node)
            extra = chip.stream(node, working)
        else:
            extra = chip.load(working, step)
            if chip.resident_bytes > capacity_bytes:
                extra += chip.evict(set(working))
        chip.drop_dead(step)
        if extra:
            plan.per_node[node] = extra
            plan.extra_dram_bytes += extra
    return plan


_NEVER = 10**18  # the next use of a buffer nothing reads again


class _OnChip:
    """The buffers resident on chip as the steps of ``order`` run, and the plan they make."""

    def __init__(self, buffers: Sequence[Buffer], order: Sequence[str], capacity_bytes: int):
        self.buffers = buffers
        self.steps = len(order)
        self.capacity_bytes = capacity_bytes
        self.plan = SpillPlan(capacity_bytes, 0)
        position = {node: step for step, node in enumerate(order)}
        self.uses: dict[int, list[int]] = {}  # buffer -> the steps using it, in order
        self.needed: list[list[int]] = [[] for _ in order]  # step -> the buffers it uses
        for index, buffer in enumerate(buffers):
            steps = sorted({position[n] for n in buffer.readers | buffer.allocators})
            self.uses[index] = steps
            for step in steps:
                self.needed[step].append(index)
        # the step after which a buffer is dead (never, for the model's outputs)
        last = {
            index: (len(order) if buffers[index].to_end else (steps[-1] if steps else 0))
            for index, steps in self.uses.items()
        }
        self.dying: list[list[int]] = [[] for _ in range(len(order) + 1)]
        for index, step in last.items():
            self.dying[min(step, len(order))].append(index)
        self.resident: dict[int, int] = {}  # buffer -> bytes, on chip
        self.resident_bytes = 0
        self.evicted: set[int] = set()
        self.spilled: set[str] = set()
        # the resident buffers, farthest next use first, ties in the order they became resident: a
        # heap of (-next use, arrival, buffer) with stale entries skipped (``key`` holds the live
        # one), so an eviction does not sort every resident buffer again (20,000 branches a Sum
        # joins are resident at once)
        self.heap: list[tuple[int, int, int]] = []
        self.key: dict[int, tuple[int, int]] = {}  # resident buffer -> its entry in the heap
        self.arrivals = itertools.count()

    def next_use(self, index: int, step: int) -> int:
        steps = self.uses[index]
        later = bisect.bisect_right(steps, step)
        return steps[later] if later < len(steps) else (self.steps + 1 if self.buffers[index].to_end else _NEVER)

    def mark(self, index: int, step: int) -> None:
        key = self.key
        entry = key[index] = (-self.next_use(index, step), key[index][1] if index in key else next(self.arrivals))
        heapq.heappush(self.heap, (*entry, index))

    def stream(self, node: str, working: list[int]) -> int:
        """A step whose working set does not fit streams it from DRAM: the extra bytes."""
        extra = 0
        for index in working:
            buffer = self.buffers[index]
            # the roofline already charges reading the model's inputs and writing its outputs
            if not (buffer.from_start or (buffer.to_end and node in buffer.allocators)):
                extra += buffer.bytes
            self.resident_bytes -= self.resident.pop(index, 0)
            self.key.pop(index, None)
            if not buffer.from_start:
                self.evicted.add(index)  # now in DRAM: its next reader reads it back
        return extra

    def load(self, working: list[int], step: int) -> int:
        """The step's buffers made resident (an evicted one read back): the extra bytes."""
        extra = 0
        for index in working:
            size = self.buffers[index].bytes
            if index in self.evicted and index not in self.resident:
                extra += size  # reload
                self.evicted.discard(index)
            if index not in self.resident:
                self.resident[index] = size
                self.resident_bytes += size
            self.mark(index, step)  # used now: its next use moves on
        return extra

    def evict(self, in_use: set[int]) -> int:
        """Evict the farthest-used buffers not ``in_use`` until the rest fit: the extra bytes."""
        extra = 0
        held = []  # entries of the buffers this step uses: not victims, kept for later steps
        heap, key, buffers = self.heap, self.key, self.buffers
        while self.resident_bytes > self.capacity_bytes and heap:
            entry = heapq.heappop(heap)
            victim = entry[2]
            if key.get(victim) != entry[:2]:
                continue  # stale: evicted, dead, or used since
            if victim in in_use:
                held.append(entry)
                continue
            del key[victim]
            if -entry[0] < _NEVER:
                # written back to be read again later; a model output is written to DRAM
                # anyway (the roofline charges that write), so it costs only its reload
                if not buffers[victim].to_end:
                    extra += buffers[victim].bytes
                self.evicted.add(victim)
                self._note_spilled(buffers[victim].name)
            self.resident_bytes -= self.resident.pop(victim)
        for entry in held:
            heapq.heappush(heap, entry)
        return extra

    def _note_spilled(self, name: str) -> None:
        if name not in self.spilled:
            self.spilled.add(name)
            self.plan.spilled.append(name)

    def drop_dead(self, step: int) -> None:
        """The buffers dead after ``step`` leave the chip (a model output stays to the end)."""
        for index in self.dying[step]:
            if index in self.resident and not self.buffers[index].to_end:
                self.resident_bytes -= self.resident.pop(index)
                del self.key[index]
