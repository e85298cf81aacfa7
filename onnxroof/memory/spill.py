"""The spill plan: which buffers leave on-chip memory when the live set exceeds a
target's capacity, and the DRAM bytes that costs (Belady's policy)."""

from __future__ import annotations

import bisect
import heapq
import itertools
from dataclasses import dataclass, field
from typing import Sequence

from .problem import MemoryProblem

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
    if sum(problem.buffer_bytes) <= capacity_bytes:
        # every buffer fits at once, so no step streams or evicts: the plan is empty, found
        # without building the Buffer objects (a fused kernel's internals take no space, so a
        # long fused chain lands here)
        return SpillPlan(capacity_bytes, 0)
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

    # the resident buffers, farthest next use first, ties in the order they became resident: a
    # heap of (-next use, arrival, buffer) with stale entries skipped (``key`` holds the live
    # one), so an eviction does not sort every resident buffer again (20,000 branches a Sum
    # joins are resident at once)
    heap: list[tuple[int, int, int]] = []
    key: dict[int, tuple[int, int]] = {}  # resident buffer -> its entry in the heap
    arrivals = itertools.count()

    def mark(index: int, step: int) -> None:
        entry = key[index] = (-next_use(index, step), key[index][1] if index in key else next(arrivals))
        heapq.heappush(heap, (*entry, index))

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
                key.pop(index, None)
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
                mark(index, step)  # used now: its next use moves on
            if resident_bytes > capacity_bytes:
                in_use = set(working)
                held = []  # entries of the buffers this step uses: not victims, kept for later steps
                while resident_bytes > capacity_bytes and heap:
                    entry = heapq.heappop(heap)
                    victim = entry[2]
                    if key.get(victim) != entry[:2]:
                        continue  # stale: evicted, dead, or used since
                    if victim in in_use:
                        held.append(entry)
                        continue
                    del key[victim]
                    if -entry[0] < 10**18:
                        # written back to be read again later; a model output is written to DRAM
                        # anyway (the roofline charges that write), so it costs only its reload
                        if not buffers[victim].to_end:
                            extra += buffers[victim].bytes
                        evicted.add(victim)
                        if buffers[victim].name not in spilled:
                            spilled.add(buffers[victim].name)
                            plan.spilled.append(buffers[victim].name)
                    resident_bytes -= resident.pop(victim)
                for entry in held:
                    heapq.heappush(heap, entry)
        for index in dying[step]:
            if index in resident and not buffers[index].to_end:
                resident_bytes -= resident.pop(index)
                del key[index]
        if extra:
            plan.per_node[node] = extra
            plan.extra_dram_bytes += extra
    return plan
