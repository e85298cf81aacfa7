"""A layered drawing of a small directed graph, data flowing top to bottom (Sugiyama's method).

:func:`layered_layout` places boxes of given sizes and routes the edges between them, in four
steps, each a pure function here:

1. :func:`acyclic_edges`: edges that close a cycle (a folded graph can have some) are turned over
   for the layout and drawn back the other way;
2. :func:`longest_path_layers`: a box one layer below its lowest predecessor; a source box sits
   just above its first successor, so an input's stub does not hang far above what reads it;
3. :func:`order_layers`: long edges become chains of dummy points, one per layer they cross
   (so an edge keeps a lane of its own and passes through no box), and a few barycenter sweeps
   order each layer to cut crossings (the best order seen is kept);
4. :func:`pack_layer`: each box goes as near the mean of its neighbours as the boxes beside it
   allow (least squares under the layer's order and gaps: isotonic regression).

>>> layout = layered_layout({"a": (40, 20), "b": (40, 20), "c": (40, 20), "d": (40, 20)},
...                         [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])
>>> [layout.boxes[k].layer for k in "abcd"]
[0, 1, 1, 2]
>>> layout.boxes["b"].x + 40 <= layout.boxes["c"].x  # side by side, apart
True
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

BOX_GAP = 24.0  # pixels between two boxes of a layer
LAYER_GAP = 40.0  # pixels between two layers: room for the edges and their labels
DUMMY_WIDTH = 8.0  # the lane a long edge keeps in each layer it crosses
DUMMY_WEIGHT = 4.0  # long edges pulled straight harder than boxes are pulled to their neighbours
MARGIN = 12.0
SWEEPS = 6


@dataclass
class PlacedBox:
    """A box at its place: ``x``, ``y`` its top-left corner."""

    key: str
    x: float
    y: float
    width: float
    height: float
    layer: int
    order: int  # its position in its layer, left to right

    @property
    def centre_x(self) -> float:
        return self.x + self.width / 2


@dataclass
class Route:
    """One edge's polyline, from the bottom of its source to the top of its target."""

    source: str
    target: str
    points: list[tuple[float, float]]


@dataclass
class Layout:
    boxes: dict[str, PlacedBox]
    routes: list[Route]
    width: float
    height: float
    layers: list[list[str]] = field(default_factory=list)  # with the dummy points ("~3" ...)
    bottoms: list[float] = field(default_factory=list)  # each layer's lowest box edge: an edge's label goes below it

    def label_at(self, route: Route) -> tuple[float, float]:
        """Where the label of ``route`` goes: beside it, just below its source's layer, where no
        box is."""
        source = self.boxes[route.source]
        return source.centre_x + 4, self.bottoms[source.layer] + 13  # a 9px line box stands 12 above its baseline


def acyclic_edges(keys: Sequence[str], edges: Iterable[tuple[str, str]]) -> tuple[list[tuple[str, str]], set[int]]:
    """The edges with each one that closes a cycle turned over (a depth-first search from the
    boxes in ``keys`` order), and the positions of those turned over. Self-loops are dropped.

    >>> acyclic_edges(["a", "b"], [("a", "b"), ("b", "a")])
    ([('a', 'b'), ('a', 'b')], {1})
    """
    edge_list = [(u, v) for u, v in edges]
    successors: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for position, (u, v) in enumerate(edge_list):
        if u != v:
            successors[u].append((v, position))
    state: dict[str, int] = {}  # 1 on the search's path, 2 done
    back: set[int] = set()
    for start in keys:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(successors[start]))]
        while stack:
            node, remaining = stack[-1]
            step = next(remaining, None)
            if step is None:
                state[node] = 2
                stack.pop()
                continue
            successor, position = step
            seen = state.get(successor)
            if seen == 1:
                back.add(position)
            elif seen is None:
                state[successor] = 1
                stack.append((successor, iter(successors[successor])))
    result = [(v, u) if position in back else (u, v) for position, (u, v) in enumerate(edge_list) if u != v]
    kept = [position for position, (u, v) in enumerate(edge_list) if u != v]
    return result, {kept.index(position) for position in back}


def _neighbours(edges: Iterable[tuple[str, str]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(each box's predecessors, each box's successors), in the edges' order."""
    predecessors: dict[str, list[str]] = defaultdict(list)
    successors: dict[str, list[str]] = defaultdict(list)
    for u, v in edges:
        predecessors[v].append(u)
        successors[u].append(v)
    return predecessors, successors


def longest_path_layers(keys: Sequence[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Each box's layer on an acyclic graph: one below its lowest predecessor (0 for a source);
    then each source moves down to just above its highest successor.

    >>> longest_path_layers("abcd", [("a", "b"), ("b", "c"), ("d", "c")])
    {'a': 0, 'b': 1, 'c': 2, 'd': 1}
    """
    predecessors, successors = _neighbours(edges)
    layer: dict[str, int] = {}
    waiting = {k: len(set(predecessors[k])) for k in keys}
    ready = [k for k in keys if waiting[k] == 0]
    done: set[str] = set()
    while ready:  # Kahn's order, so each box comes after all its predecessors
        key = ready.pop()
        layer[key] = max((layer[p] + 1 for p in predecessors[key]), default=0)
        done.add(key)
        for successor in dict.fromkeys(successors[key]):
            waiting[successor] -= 1
            if waiting[successor] == 0:
                ready.append(successor)
    for key in keys:  # only on a graph with a cycle left: never here after acyclic_edges
        layer.setdefault(key, 0)
    for key in keys:
        if not predecessors[key] and successors[key]:
            layer[key] = max(0, min(layer[s] for s in successors[key]) - 1)
    return {k: layer[k] for k in keys}


def _crossings(upper: Mapping[str, int], lower: Mapping[str, int], edges: Sequence[tuple[str, str]]) -> int:
    """Pairs of edges between two layers that cross: inversions of the lower ends once the
    edges are sorted by their upper ends (counted with a Fenwick tree)."""
    ends = sorted((upper[u], lower[v]) for u, v in edges)
    size = len(lower) + 1
    tree = [0] * (size + 1)
    crossings = 0
    for seen, (_, position) in enumerate(ends):
        index, below = position + 1, 0
        while index > 0:  # how many ends seen so far are at or left of this one
            below += tree[index]
            index -= index & -index
        crossings += seen - below
        index = position + 1
        while index <= size:
            tree[index] += 1
            index += index & -index
    return crossings


def order_layers(layers: list[list[str]], edges: Sequence[tuple[str, str]], sweeps: int = SWEEPS) -> list[list[str]]:
    """Each layer's order after ``sweeps`` barycenter sweeps (down, then up, ...), the one with
    fewest crossings kept; ``edges`` join adjacent layers only. A box with no neighbour in the
    layer it is sorted against keeps its place.

    >>> order_layers([["a", "b"], ["c", "d"]], [("a", "d"), ("b", "c")])
    [['a', 'b'], ['d', 'c']]
    """
    up, down = _neighbours(edges)
    current = [list(layer) for layer in layers]

    if all(len(layer) < 2 for layer in current):  # a chain: nothing to order
        return current

    def total(order: list[list[str]]) -> int:
        positions = [{k: i for i, k in enumerate(layer)} for layer in order]
        count = 0
        for i in range(len(order) - 1):
            if len(order[i]) > 1 and len(order[i + 1]) > 1:  # edges into or out of one box never cross
                between = [(u, v) for u in order[i] for v in down[u]]
                count += _crossings(positions[i], positions[i + 1], between)
        return count

    best, best_count = [list(layer) for layer in current], total(current)
    for sweep in range(sweeps):
        downward = sweep % 2 == 0
        indices = range(1, len(current)) if downward else range(len(current) - 2, -1, -1)
        for i in indices:
            if len(current[i]) < 2:
                continue
            fixed = current[i - 1] if downward else current[i + 1]
            position = {k: p for p, k in enumerate(fixed)}
            neighbours = up if downward else down
            keyed = []
            for place, key in enumerate(current[i]):
                around = [position[n] for n in neighbours[key] if n in position]
                keyed.append((sum(around) / len(around) if around else float(place), place, key))
            current[i] = [key for _, _, key in sorted(keyed)]
        count = total(current)
        if count < best_count:
            best, best_count = [list(layer) for layer in current], count
    return best


def _isotonic(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence nearest ``values`` in weighted least squares (pool adjacent
    violators)."""
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for value, weight in zip(values, weights):
        blocks.append([value * weight, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, mass, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += mass
            blocks[-1][2] += count
    result: list[float] = []
    for total, mass, count in blocks:
        result.extend([total / mass] * int(count))
    return result


def pack_layer(
    wanted: Sequence[float], widths: Sequence[float], weights: Sequence[float] | None = None, gap: float = BOX_GAP
) -> list[float]:
    """Centres for a layer's boxes, in their order, at least ``gap`` apart, as near the
    ``wanted`` centres as can be (weighted least squares).

    >>> pack_layer([50, 50], [20, 20], gap=10)  # both want 50: they share the difference
    [35.0, 65.0]
    >>> pack_layer([0, 100], [20, 20], gap=10)  # room enough: each where it wants
    [0.0, 100.0]
    """
    offsets = [0.0]
    for left, right in zip(widths, widths[1:]):
        offsets.append(offsets[-1] + (left + right) / 2 + gap)
    fitted = _isotonic([w - o for w, o in zip(wanted, offsets)], weights or [1.0] * len(wanted))
    return [f + o for f, o in zip(fitted, offsets)]


def layered_layout(
    sizes: Mapping[str, tuple[float, float]],
    edges: Iterable[tuple[str, str]],
    box_gap: float = BOX_GAP,
    layer_gap: float = LAYER_GAP,
) -> Layout:
    """Boxes of ``sizes`` (key -> (width, height), in the order to start from: the model's) placed
    in layers, and one route per edge (duplicate edges drawn once)."""
    keys = list(sizes)
    unique = list(dict.fromkeys((u, v) for u, v in edges if u in sizes and v in sizes and u != v))
    acyclic, turned = acyclic_edges(keys, unique)
    layer_of = longest_path_layers(keys, acyclic)
    count = max(layer_of.values(), default=-1) + 1
    layers: list[list[str]] = [[] for _ in range(count)]
    for key in _depth_first(keys, acyclic):  # a start in which a box's successors sit near each other
        layers[layer_of[key]].append(key)
    chains: list[list[str]] = []  # each edge as the points it passes: source, dummies..., target
    short: list[tuple[str, str]] = []
    for number, (u, v) in enumerate(acyclic):
        chain = [u]
        for layer in range(layer_of[u] + 1, layer_of[v]):
            dummy = f"~{number}.{layer}"
            layers[layer].append(dummy)
            layer_of[dummy] = layer
            chain.append(dummy)
        chain.append(v)
        chains.append(chain)
        short.extend(zip(chain, chain[1:]))
    layers = order_layers(layers, short)
    width_of = {k: (sizes[k][0] if k in sizes else DUMMY_WIDTH) for layer in layers for k in layer}
    centre = _coordinates(layers, short, width_of, box_gap)
    tops, heights = [], []
    y = MARGIN
    for layer in layers:
        height = max((sizes[k][1] for k in layer if k in sizes), default=0.0)
        tops.append(y)
        heights.append(height)
        y += height + layer_gap
    boxes = {
        k: PlacedBox(
            k, centre[k] - sizes[k][0] / 2, tops[layer_of[k]], sizes[k][0], sizes[k][1], layer_of[k], layer.index(k)
        )
        for layer in layers
        for k in layer
        if k in sizes
    }
    routes = []
    for number, chain in enumerate(chains):
        source, target = chain[0], chain[-1]
        points = [(centre[source], boxes[source].y + boxes[source].height)]
        if boxes[source].height < heights[layer_of[source]]:  # straight down to the layer's bottom first
            points.append((centre[source], tops[layer_of[source]] + heights[layer_of[source]]))
        for dummy in chain[1:-1]:  # a long edge runs down its own lane through each layer it crosses
            points.append((centre[dummy], tops[layer_of[dummy]]))
            points.append((centre[dummy], tops[layer_of[dummy]] + heights[layer_of[dummy]]))
        points.append((centre[target], boxes[target].y))
        if number in turned:
            routes.append(Route(target, source, points[::-1]))
        else:
            routes.append(Route(source, target, points))
    right = max((b.x + b.width for b in boxes.values()), default=0.0)
    return Layout(
        boxes,
        routes,
        right + MARGIN,
        max(y - layer_gap + MARGIN, 2 * MARGIN),
        layers,
        [top + height for top, height in zip(tops, heights)],
    )


def _depth_first(keys: Sequence[str], edges: Sequence[tuple[str, str]]) -> list[str]:
    """The boxes in depth-first order from the first source: the branches of a fork come
    one after the other, which the sweeps then only refine."""
    predecessors, successors = _neighbours(edges)
    has_predecessor = set(predecessors)
    seen: set[str] = set()
    order: list[str] = []
    for start in [k for k in keys if k not in has_predecessor] + list(keys):
        stack = [start]
        while stack:
            key = stack.pop()
            if key in seen:
                continue
            seen.add(key)
            order.append(key)
            stack.extend(reversed(successors[key]))
    return order


def _coordinates(
    layers: list[list[str]], edges: Sequence[tuple[str, str]], width_of: Mapping[str, float], gap: float
) -> dict[str, float]:
    """Centres: packed left to right, then pulled towards their neighbours' mean, sweeping down
    (predecessors), up (successors) and both, with :func:`pack_layer` keeping order and gaps."""
    up, down = _neighbours(edges)
    centre: dict[str, float] = {}
    for layer in layers:
        x = MARGIN
        for key in layer:
            centre[key] = x + width_of[key] / 2
            x += width_of[key] + gap
    passes = [(range(1, len(layers)), (up,)), (range(len(layers) - 2, -1, -1), (down,))] * 3
    passes.append((range(len(layers)), (up, down)))
    for indices, sides in passes:
        for i in indices:
            layer = layers[i]
            wanted = []
            for key in layer:
                around = [centre[n] for side in sides for n in side[key]]
                wanted.append(sum(around) / len(around) if around else centre[key])
            if len(layer) == 1:  # alone in its layer: it goes where it wants
                centre[layer[0]] = wanted[0]
                continue
            weights = [DUMMY_WEIGHT if key.startswith("~") else 1.0 for key in layer]
            for key, x in zip(layer, pack_layer(wanted, [width_of[k] for k in layer], weights, gap)):
                centre[key] = x
    left = min((centre[k] - width_of[k] / 2 for layer in layers for k in layer), default=MARGIN)
    return {k: x - left + MARGIN for k, x in centre.items()}


class LayoutCache:
    """Layouts kept by their problem's shape: the boxes' sizes in order and the edges between
    positions. The layout reads a box's key only to tell it apart (a tie never goes by key), so
    views alike in shape (the thousand chains of a long model folded by structure) are laid out
    once, and each gets that layout under its own keys."""

    def __init__(self) -> None:
        self.done: dict[tuple, Layout] = {}

    def layout(self, sizes: Mapping[str, tuple[float, float]], edges: Iterable[tuple[str, str]]) -> Layout:
        keys = list(sizes)
        position = {key: str(number) for number, key in enumerate(keys)}  # no key starts with "~": a dummy's
        joined = tuple((position[u], position[v]) for u, v in edges if u in position and v in position)
        problem = (tuple(sizes.values()), joined)
        found = self.done.get(problem)
        if found is None:
            found = self.done[problem] = layered_layout(dict(zip(position.values(), sizes.values())), joined)
        return _relabelled(found, keys)


def _relabelled(layout: Layout, keys: Sequence[str]) -> Layout:
    """``layout`` (its boxes keyed by their positions in ``keys``) under ``keys``; the routes'
    points are shared, not copied (nothing changes them)."""
    boxes = {}
    for key, box in layout.boxes.items():
        real = keys[int(key)]
        boxes[real] = PlacedBox(real, box.x, box.y, box.width, box.height, box.layer, box.order)
    routes = [Route(keys[int(route.source)], keys[int(route.target)], route.points) for route in layout.routes]
    layers = [[k if k[0] == "~" else keys[int(k)] for k in layer] for layer in layout.layers]
    return Layout(boxes, routes, layout.width, layout.height, layers, layout.bottoms)
