"""The graph folded by its structure where its names carry no modules: a module with more nodes
of its own than a view holds gets synthetic modules — numbered blocks for the longest stretch of
one block repeated, chains of nodes that each feed only the next, and parts of the model's order
— so that ``fold.py`` folds it as it folds a module tree (``fold.py`` says how it is drawn).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...cost.records import NodeRecord

SYNTHETIC = "\x00"  # starts the path parts folding by structure makes: no exporter writes it


def fold_structure(
    paths: dict[int, tuple[str, ...]], records: Sequence[NodeRecord], producer_of: dict[str, int], budget: int
) -> None:
    """Give the nodes of a module with more than ``budget`` of its own a synthetic module each:
    their chain (nodes that each feed only the next), and a part of the model's order."""
    own: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, path in paths.items():
        own[path].append(index)
    successors: dict[int, set[int]] = defaultdict(set)
    predecessors: dict[int, set[int]] = defaultdict(set)
    for index in paths:
        for tensor in records[index].inputs:
            producer = producer_of.get(tensor)
            if producer is not None:
                successors[producer].add(index)
                predecessors[index].add(producer)
    for path, indices in own.items():
        if len(indices) <= budget:
            continue
        indices = sorted(indices)
        groups = [indices]
        repeat = (
            _repeats([(records[i].op_type, str(records[i].output_shapes)) for i in indices], budget)
            if len(indices) <= REPEATS_MAX_NODES
            else None
        )
        if repeat is not None:  # alike blocks, one after another: numbered modules, so they fold into one run
            start, length, count = repeat
            for block in range(count):
                for index in indices[start + block * length : start + (block + 1) * length]:
                    paths[index] = path + (f"{SYNTHETIC}r{block}{SYNTHETIC}block {block}",)
            groups = [indices[:start], indices[start + length * count :]]
            if sum(len(g) for g in groups) < budget:
                continue
        for group in groups:
            _fold_chains_and_parts(path, group, paths, records, successors, predecessors, budget)


# past this many nodes of its own, a module is not searched for repeats (time: nodes x budget)
REPEATS_MAX_NODES = 20_000


def _repeats(tokens: Sequence, longest: int) -> tuple[int, int, int] | None:
    """The longest stretch of ``tokens`` that is one block repeated at least three times, the block
    at most ``longest`` long: (start, block length, count), or None. The most tokens covered wins,
    then the shortest block.

    >>> _repeats("xabcabcabcy", 5)  # "abc" three times from position 1
    (1, 3, 3)
    >>> _repeats("abcabd", 5) is None, _repeats("aaaa", 5) is None  # "aa" twice only; "a" is one node
    (True, True)
    """
    best: tuple[int, int, int] | None = None
    covered = 0
    for length in range(2, min(longest, len(tokens) // 3) + 1):  # a block of one node is no subgraph
        run = 0  # positions in a row whose token is the one a block later
        for i in range(len(tokens) - length):
            if tokens[i] == tokens[i + length]:
                run += 1
                count = (run + length) // length
                if count >= 3 and count * length > covered:
                    best, covered = (i - run + 1, length, count), count * length
            else:
                run = 0
    return best


def _fold_chains_and_parts(
    path: tuple[str, ...],
    indices: list[int],
    paths: dict[int, tuple[str, ...]],
    records: Sequence[NodeRecord],
    successors: dict[int, set[int]],
    predecessors: dict[int, set[int]],
    budget: int,
) -> None:
    """``indices`` (nodes of ``path`` itself, in order) in chains, and the chains in parts."""
    units = _chains(indices, successors, predecessors, budget)
    parts = _parts(len(units), budget)
    spans: dict[tuple[int, ...], list[int]] = {}  # a part (with the parts above it) -> its first and last node
    for unit, part in zip(units, parts):
        for level in range(1, len(part) + 1):
            span = spans.setdefault(part[:level], [unit[0], unit[-1]])
            span[1] = unit[-1]
    for unit, part in zip(units, parts):
        # keyed by the group's first node too: the parts before and after a run of blocks stay apart
        named = tuple(
            f"{SYNTHETIC}p{indices[0]}.{'.'.join(map(str, part[:level]))}"
            f"{SYNTHETIC}nodes {spans[part[:level]][0]}–{spans[part[:level]][1]}"
            for level in range(1, len(part) + 1)
        )
        chain = f"{SYNTHETIC}{unit[0]}{SYNTHETIC}{_chain_label(records, unit)}" if len(unit) > 1 else None
        for index in unit:
            paths[index] = path + named + ((chain,) if chain else ())


def _chains(
    indices: list[int], successors: dict[int, set[int]], predecessors: dict[int, set[int]], longest: int
) -> list[list[int]]:
    """``indices`` (in model order) cut into chains: a node joins the chain of its one
    predecessor when it is that predecessor's one successor (and the chain is shorter than
    ``longest``).

    >>> _chains([0, 1, 2, 3], {0: {1}, 1: {2, 3}}, {1: {0}, 2: {1}, 3: {1}}, 10)
    [[0, 1], [2], [3]]
    """
    members = set(indices)
    chain_of: dict[int, list[int]] = {}
    chains: list[list[int]] = []
    for index in indices:
        before = predecessors.get(index, set())
        if len(before) == 1:
            (previous,) = before
            if (
                previous in members
                and previous in chain_of
                and successors.get(previous) == {index}
                and chain_of[previous][-1] == previous
                and len(chain_of[previous]) < longest
            ):
                chain_of[previous].append(index)
                chain_of[index] = chain_of[previous]
                continue
        chain_of[index] = [index]
        chains.append(chain_of[index])
    return chains


def _parts(count: int, budget: int) -> list[tuple[int, ...]]:
    """For ``count`` boxes in order, the part each falls in at each level of parts (outermost
    first), so that no view holds more than about ``budget`` boxes: parts of about ``budget / 2``
    boxes, so the view above them shows the model's course in some fifty steps.

    >>> _parts(2, 2)
    [(), ()]
    >>> _parts(5, 2)  # parts of two boxes; three parts are still too many: two parts of parts
    [(0, 0), (0, 0), (0, 1), (0, 1), (1, 2)]
    """
    if count <= budget:
        return [()] * count
    size = max(2, math.ceil(count / max(1, budget // 2)))
    size = min(size, budget)
    groups = math.ceil(count / size)
    upper = _parts(groups, budget)
    return [upper[position // size] + (position // size,) for position in range(count)]


def _chain_label(records: Sequence[NodeRecord], unit: list[int]) -> str:
    ops = [records[i].op_type for i in unit]
    return "→".join(ops) if len(ops) <= 3 else f"{ops[0]}→…→{ops[-1]} ({len(ops)})"
