"""The model's graph folded by its module tree: a few views, each small enough to read.

A **view** opens one module: its boxes are its nodes and the modules inside it, opened as many
levels down as keep the view within :data:`BOX_BUDGET` boxes; the modules left folded are one
box each (with their totals), and each has a view of its own. A run of alike numbered blocks
(``layer.0`` ... ``layer.11``: same ops, same shapes) is one box ``layer.0-11`` with a repeat
count; its view is the first block's. Tensors that enter or leave the view's module are stubs
at its top and bottom. Every node is drawn in one view only, so the views together stay linear
in the graph's size; besides, a small view has a **variant** per folded module: the same view
with that module unfolded in place (its nodes and sub-modules instead of its box), laid out
anew, while the variants stay within half the view's nodes. A run unfolds on its first block,
opened as deep as the budget allows, each box standing for the same node or module in every
block (``MatMul ×12``); the edges from one block to the next are the repeat, not drawn. When the
whole model's view is a handful of boxes because a run holds nearly everything (a scoped
encoder), the page opens on that run unfolded (:func:`start_view`).

The module of a node is the path its name (or the exporter's metadata) carries
(``compare/modules.module_of``). A module with more than :data:`BOX_BUDGET` nodes of its own
(a graph with no scoped names: all of them at the root) is folded by the structure: the longest
stretch of one block repeated (the same op types and output shapes, in the model's order, three
times or more) becomes numbered blocks, one box ``block 0-17 ×18``; then chains of nodes that each
feed only the next become one box (``Conv→BatchNormalization→Relu``), and what is still too many
is cut, in the model's order, into parts of at most :data:`BOX_BUDGET` boxes (``structure.py``).

Folded constants and shape arithmetic (nodes no target runs as a kernel) are not drawn.

>>> from onnx import TensorProto, helper
>>> from onnxroof import analyze
>>> nodes = [helper.make_node("Relu", ["x"], ["a"], name="/block.0/Relu"),
...          helper.make_node("Relu", ["a"], ["b"], name="/block.1/Relu"),
...          helper.make_node("Sigmoid", ["b"], ["y"], name="/head/Sigmoid")]
>>> graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
...                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
>>> top = folded_views(analyze(helper.make_model(graph)), budget=3)[0]
>>> [(item.label, item.repeats) for item in top.items]
[('x', 1), ('block.0-1', 2), ('Sigmoid', 1), ('y', 1)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from os.path import commonprefix
from typing import TYPE_CHECKING

from ...compare.modules import MAX_MODULE_DEPTH, MAX_MODULES, fitting_depth, module_of, run_label, runs
from ...cost.records import NodeStatus
from ..formatting import shape_text
from .adopt import adopted_paths
from .structure import SYNTHETIC as _SYNTHETIC
from .structure import fold_structure

if TYPE_CHECKING:
    from ...cost.records import NodeRecord
    from ...result import Analysis

BOX_BUDGET = 100  # at most this many boxes in a view, where folding can make it so
VARIANT_WORK = 100_000  # node visits a view's variants may take (a variant walks the whole view again)
STUB_LIMIT = 8  # past this many tensors entering (or leaving) a view, the rest share one stub


@dataclass
class GraphItem:
    """One box of a view."""

    key: str  # unique in the page: "n12" (node 12 of the node table), "m3" (a module), "i0"/"o0" (stubs)
    kind: str  # "node", "module", "input" (a tensor entering the view) or "output" (one leaving it)
    label: str  # the first line: the op type, the module's name, the tensor's name
    name: str  # the second line: the node's name, the module's path, the tensor's shape
    nodes: list[int]  # the node-table rows inside (a run of blocks: all of theirs)
    repeats: int = 1  # alike blocks this box stands for
    view: str | None = None  # a module: the view that opens it
    variant: str | None = None  # a module: the view that is this one with the module unfolded in place
    folded: bool = False  # a module whose name holds the rest of a path deeper than MAX_MODULE_DEPTH


@dataclass
class GraphEdge:
    source: str  # item keys
    target: str
    tensor: str  # the first tensor it carries
    shape: str  # that tensor's shape ("1×64×32×32")
    bytes: int | None  # that tensor's bytes (None: unknown shape)
    tensors: int = 1  # how many tensors this one edge stands for


@dataclass
class GraphView:
    key: str  # "v0" is the whole model
    title: str  # the module's path ("the whole model" for the top)
    parent: str | None  # the view it was opened from
    items: list[GraphItem]
    edges: list[GraphEdge]
    depth: int  # module levels opened in place
    unfolds: tuple[str, str] | None = None  # a variant: (the view, the module box) it unfolds in place
    inside: list[str] = field(default_factory=list)  # a variant: its boxes that are inside that module


@dataclass(eq=False)  # compared and hashed by identity: a module is one place in the tree
class Module:
    """A node of the module tree, with the nodes below it."""

    path: tuple[str, ...]
    label: str
    children: dict[str, Module] = field(default_factory=dict)
    own: list[int] = field(default_factory=list)  # node indices at this module itself
    below: list[int] = field(default_factory=list)  # every node index under it, in model order
    run: list[Module] | None = None  # the first block of a run: every block of it
    kinds: list[tuple] = field(default_factory=list)  # (op type, output shapes) of the nodes under it
    runs: dict[str, list[Module]] | None = None  # its children's runs, once worked out


def drawn(record: NodeRecord) -> bool:
    """Whether a node gets a box: not a folded constant, not shape arithmetic (no kernel)."""
    return record.status != NodeStatus.CONSTANT and not record.shape_only


def folded_views(analysis: Analysis, budget: int = BOX_BUDGET, depth: int | None = None) -> list[GraphView]:
    """The views of ``analysis``'s graph, the whole model's first, then each module's in the
    order they are reached (breadth first). ``depth`` opens the top view that many module
    levels down whatever its size (else: as many as keep it within ``budget`` boxes)."""
    root, builder = folded_tree(analysis, budget)
    views = [builder.view(root, None, depth)]
    queue = [views[0]]
    view_of: dict[int, str] = {}  # a module (by identity) -> its view: one view a module
    roots = {views[0].key: root}
    variant_work = [4 * VARIANT_WORK]  # node visits the variants may take in all
    while queue:
        view = queue.pop(0)
        for child, module in _open_modules(builder, view, view_of):
            roots[child.key] = module
            views.append(child)
            queue.append(child)
        if view.unfolds is None:
            for variant in _variants(builder, view, roots[view.key], variant_work):
                views.append(variant)
                queue.append(variant)
    return views


def folded_tree(analysis: Analysis, budget: int) -> tuple[Module, _Views]:
    """The module tree of the nodes drawn (each where :func:`adopt.adopted_paths` puts it, a
    large unscoped module folded by structure) and the builder of its views."""
    records = analysis.nodes
    shown = [i for i, r in enumerate(records) if drawn(r)]
    real = {i: _real_path(module_of(records[i])) for i in shown}
    cut = fitting_depth(list(real.values()), MAX_MODULES)  # as many modules as the module table
    if cut is not None:
        real = {i: path[:cut] for i, path in real.items()}
    paths = adopted_paths(real, records, analysis.cost_graph.outputs)
    index_of = {records[i].name: i for i in shown}
    producer_of = {tensor: i for i in shown for tensor in records[i].outputs}
    fold_structure(paths, records, producer_of, budget)
    return _tree(paths, records), _Views(analysis, index_of, budget)


def _open_modules(builder: _Views, view: GraphView, view_of: dict[int, str]) -> list[tuple[GraphView, Module]]:
    """Point each of ``view``'s folded modules at its view, building the views not built yet
    (returned in order, each with its module): one view a module."""
    built = []
    for item in view.items:
        if item.kind == "module" and item.view in builder.modules and item.view == item.key:  # not opened yet
            module = builder.modules[item.key]
            if id(module) not in view_of and view.unfolds is not None:
                # a module inside the one a variant unfolds, opened in place in that module's view
                module = builder.modules[view.unfolds[1]]
            if id(module) not in view_of:
                child = builder.view(module, view.key, None)
                view_of[id(module)] = child.key
                built.append((child, module))
            item.view = view_of[id(module)]
    return built


def _variants(builder: _Views, view: GraphView, root: Module, work_left: list[int]) -> list[GraphView]:
    """Each plain module box of ``view`` unfolded in place: a variant of the view. Every variant
    copies the view, so a view has them only while they hold at most half its nodes (or two
    budgets) in all: all its modules unfold in place, or none does (they open their own views).
    ``work_left`` (node visits the variants may still take, a one-item list) is drawn on."""
    plain = [item for item in view.items if item.kind == "module"]
    room = max(len(root.below) // 2, 2 * builder.budget)
    work = len(plain) * len(root.below)  # each variant walks the view's nodes again
    if not plain or len(plain) * len(view.items) > room or work > min(VARIANT_WORK, work_left[0]):
        return []
    work_left[0] -= work
    # a run unfolds its first block as deep as the budget allows; a module, one level
    wanted = [(None if item.repeats > 1 else view.depth, {builder.modules[item.key]}) for item in plain]
    # the boxes first: when the variants would not fit, their edges are never walked (the keys
    # they would have taken are skipped, so every later box keeps its key)
    start = builder.count
    boxes = sum(len(builder.boxes(root, depth, opened)[0]) for depth, opened in wanted)
    stubs = builder.stub_keys[view.key]  # a variant has its view's stubs: the same module
    if boxes + len(plain) * builder.stub_items[view.key] > room:
        builder.count += len(plain) * (stubs + 1)
        return []
    builder.count = start
    variants = [
        builder.view(root, view.parent, depth, opened, (view.key, item.key))
        for item, (depth, opened) in zip(plain, wanted)
    ]
    for item, variant in zip(plain, variants):
        item.variant = variant.key
    return variants


def _real_path(path: tuple[str, ...]) -> tuple[str, ...]:
    r"""A node's module path with any NUL shown as '?' (as every output shows it): the parts that
    folding by structure makes start with NUL, so a model's own must hold none.

    >>> _real_path(("enc\x00oder", "layer.0"))
    ('enc?oder', 'layer.0')
    """
    return tuple(part.replace(_SYNTHETIC, "?") for part in path) if any(_SYNTHETIC in p for p in path) else path


def start_view(views: list[GraphView], budget: int = BOX_BUDGET) -> GraphView:
    """The view a reader sees first: the whole model's; or, when that is a handful of boxes
    because a run of alike blocks holds nearly everything (a scoped encoder: its input,
    ``layer.0-11 ×12``, its output), that view with the largest such run unfolded in place
    (its first block's boxes, each standing for every block's), if it keeps within ``budget``.

    >>> item = lambda kind, variant=None: GraphItem("k", kind, "", "", [], 2 if variant else 1, None, variant)
    >>> top = GraphView("v0", "top", None, [item("input"), item("module", "v1"), item("output")], [], 1)
    >>> unfolded = GraphView("v1", "top", None, [item("node")] * 30, [], 2, ("v0", "k"))
    >>> start_view([top, unfolded]).key, start_view([top, unfolded], budget=20).key
    ('v1', 'v0')
    """

    def boxes(view: GraphView) -> int:
        return sum(item.kind in ("node", "module") for item in view.items)

    top = views[0]
    if boxes(top) > budget // 4:
        return top
    by_key = {view.key: view for view in views}
    unfolded = [by_key[item.variant] for item in top.items if item.repeats > 1 and item.variant in by_key]
    return max((view for view in unfolded if boxes(view) <= budget), key=boxes, default=top)


def _tree(paths: dict[int, tuple[str, ...]], records: Sequence[NodeRecord]) -> Module:
    root = Module((), "(model)")
    for index in sorted(paths):
        module = root
        kind = (records[index].op_type, str(records[index].output_shapes))
        module.below.append(index)
        for part in paths[index]:
            if part not in module.children:
                label = part.split(_SYNTHETIC)[-1]
                module.children[part] = Module(module.path + (part,), label)
            module = module.children[part]
            module.below.append(index)
            module.kinds.append(kind)
        module.own.append(index)
    return root


class _Views:
    """Builds the views, numbering items and views across the page."""

    def __init__(self, analysis: Analysis, index_of: dict[str, int], budget: int):
        self.records = analysis.nodes
        self.tensors = analysis.cost_graph.tensors
        self.budget = budget
        self.modules: dict[str, Module] = {}  # a folded box's pending view -> its module
        self.count = 0
        self.stub_keys: dict[str, int] = {}  # a view -> the keys its stubs took (one a tensor)
        self.stub_items: dict[str, int] = {}  # a view -> its stub boxes
        self.index_of = index_of
        self.shapes: dict[tuple | None, str] = {}
        self.inputs, self.outputs = set(analysis.cost_graph.inputs), set(analysis.cost_graph.outputs)

    def _key(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def view(
        self,
        module: Module,
        parent: str | None,
        depth: int | None,
        opened: set[Module] = frozenset(),
        unfolds: tuple[str, str] | None = None,
    ) -> GraphView:
        """``module``'s view (``depth`` levels open, else as many as the budget allows); with
        ``opened``, the modules unfolded in place besides (a variant of the view ``unfolds``)."""
        ordered, depth = self.boxes(module, depth, opened)
        item_of = {index: item.key for item in ordered for index in item.nodes}
        block_of = {
            index: (id(m), number)
            for m in opened
            if m.run
            for number, block in enumerate(m.run)
            for index in block.below
        }
        before = self.count
        edges, sources, sinks = self._edges(module, item_of, block_of)
        stub_keys = self.count - before
        title = "/".join(part.split(_SYNTHETIC)[-1] for part in module.path) or "the whole model"
        if module.run:
            title += f" (the first of {len(module.run)} alike blocks)"
        inside = set().union(*(block.below for m in opened for block in (m.run or [m])))
        key = self._key("v") if parent is not None or unfolds else "v0"
        self.stub_keys[key], self.stub_items[key] = stub_keys, len(sources) + len(sinks)
        return GraphView(
            key,
            title,
            parent,
            sources + ordered + sinks,
            edges,
            depth,
            unfolds,
            [item.key for item in ordered if inside.issuperset(item.nodes)] if opened else [],
        )

    def boxes(
        self, module: Module, depth: int | None, opened: set[Module] = frozenset()
    ) -> tuple[list[GraphItem], int]:
        """The node and module boxes of ``module``'s view, in the model's order, and the levels
        open (``depth``, else as many as keep within the budget)."""
        depth, owner = self._owner(module, depth, opened)
        items: dict[tuple, GraphItem] = {}
        for index in module.below:
            where = owner[index]
            if where not in items:
                items[where] = self._item(where, index)
            items[where].nodes.append(index)
        run_of = {index: len(m.run) for m in opened if m.run for block in m.run for index in block.below}
        for item in items.values():
            blocks = run_of.get(item.nodes[0])
            if blocks is not None:  # inside an unfolded run: it stands for each block's
                item.repeats = blocks
            if item.kind == "module" and len(item.nodes) == item.repeats and (item.repeats == 1 or blocks):
                item.kind, item.view = "node", None  # one node (in each block): draw the node
                record = self.records[item.nodes[0]]
                item.label, item.name = record.op_type, record.name
        return list(items.values()), depth

    def _owner(self, module: Module, depth: int | None, opened: set[Module]) -> tuple[int, dict[int, tuple]]:
        """The levels open and what each node is drawn as (:func:`_assign`): ``depth``, else one
        more level while the boxes keep within the budget (each depth tried assigned once)."""
        runs = alike_runs(module)
        if depth is not None:
            return depth, _assign(module, depth, runs, opened)
        depth, height, owner = 1, _height(module), None
        while depth < height:
            deeper = _assign(module, depth + 1, runs, opened)
            if len(set(deeper.values())) > self.budget:
                break
            depth, owner = depth + 1, deeper
        return depth, owner if owner is not None else _assign(module, depth, runs, opened)

    def _item(self, where: tuple, index: int) -> GraphItem:
        if where[0] == "node":
            record = self.records[index]
            return GraphItem(f"n{index}", "node", record.op_type, record.name, [])
        module: Module = where[1]
        blocks = module.run or [module]
        label = run_label(module.label, len(blocks))
        key = self._key("m")
        self.modules[key] = module
        path = "/".join(part.split(_SYNTHETIC)[-1] for part in module.path)
        if module.path[-1].startswith(_SYNTHETIC):  # folded by structure: say which nodes, by name
            first, last = self.records[module.below[0]].name, self.records[module.below[-1]].name
            path = f"{first} … {last}" if first != last else first
        folded = len(module.path) == MAX_MODULE_DEPTH and "/" in module.path[-1]
        # a run's box: every block's nodes
        return GraphItem(key, "module", label, path, [], len(blocks), key, folded=folded)

    def _edges(
        self, module: Module, item_of: dict[int, str], block_of: dict[int, tuple[int, int]]
    ) -> tuple[list[GraphEdge], list[GraphItem], list[GraphItem]]:
        """The edges between the view's boxes, and its stubs: tensors from outside the module
        (the model's inputs, at the top view) and tensors read outside it (or the model's outputs).
        ``block_of`` (node -> (run, block) for the runs unfolded in place): an edge from one block
        of a run to the next is the repeat the boxes' count says, not drawn (it would run back up)."""
        edges: dict[tuple[str, str], GraphEdge] = {}
        stubs = _Stubs(self)
        tensors, index_of = self.tensors, self.index_of
        for index in module.below:
            record = self.records[index]
            target = item_of[index]
            for tensor in dict.fromkeys(record.inputs) if len(record.inputs) > 1 else record.inputs:
                info = tensors.get(tensor)
                if not tensor or info is None or info.kind not in ("input", "activation"):
                    continue
                producer = index_of.get(info.producer) if info.producer else None
                if producer is not None and producer in item_of:
                    source = item_of[producer]
                    if source == target:  # inside one box (most of a large view's nodes)
                        continue
                    here, there = (block_of.get(index), block_of.get(producer)) if block_of else (None, None)
                    if here is None or there is None or here == there or here[0] != there[0]:
                        self._connect(edges, source, target, tensor)
                elif producer is not None or tensor in self.inputs:  # made outside this module
                    self._connect(edges, stubs.source(tensor), target, tensor)
            for tensor in record.outputs:
                info = tensors.get(tensor)
                if info is not None and (tensor in self.outputs or _read_outside(info.consumers, index_of, item_of)):
                    self._connect(edges, target, stubs.sink(tensor), tensor)
        fewest = 2 if block_of else 3  # a run unfolded in place: the same tensor of each block
        sources = _shared(edges, stubs.boxes(stubs.sources), 0, fewest)
        sinks = _shared(edges, stubs.boxes(stubs.sinks), 1, fewest)
        return list(edges.values()), sources, sinks

    def _connect(self, edges: dict[tuple[str, str], GraphEdge], source: str, target: str, tensor: str) -> None:
        """An edge from box ``source`` to box ``target`` carrying ``tensor`` (counted once more
        when the two are joined already)."""
        if source == target:
            return
        edge = edges.get((source, target))
        if edge is not None:
            if edge.tensor != tensor:
                edge.tensors += 1
            return
        record = self.tensors.get(tensor)
        edges[(source, target)] = GraphEdge(
            source, target, tensor, self._shape(record.shape) if record else "?", record.bytes if record else None
        )

    def _shape(self, shape: Sequence | None) -> str:
        """``shape_text(shape)``, each shape written once (a long model has few)."""
        key = tuple(shape) if shape is not None else None
        text = self.shapes.get(key)
        if text is None:
            text = self.shapes[key] = shape_text(shape)
        return text


def _read_outside(consumers: Sequence[str], index_of: dict[str, int], item_of: dict[int, str]) -> bool:
    """Whether a drawn node outside the view (not in ``item_of``) reads the tensor."""
    for consumer in consumers:
        reader = index_of.get(consumer)
        if reader is not None and reader not in item_of:
            return True
    return False


class _Stubs:
    """A view's stubs: a box per tensor entering (or leaving) it, up to :data:`STUB_LIMIT`, the
    rest sharing one "more tensors" box."""

    def __init__(self, builder: _Views):
        self.builder = builder
        self.sources: dict[str, GraphItem] = {}
        self.sinks: dict[str, GraphItem] = {}

    def source(self, tensor: str) -> str:
        return self._stub(self.sources, tensor, "input")

    def sink(self, tensor: str) -> str:
        return self._stub(self.sinks, tensor, "output")

    def _stub(self, table: dict[str, GraphItem], tensor: str, kind: str) -> str:
        if tensor not in table:
            key = self.builder._key(kind[0])  # a key a tensor, even one the shared box stands for
            if len(table) >= STUB_LIMIT:  # the rest share one stub
                others = table.setdefault("*", GraphItem(key, kind, "more tensors", "0 tensors", []))
                table[tensor] = others
                others.name = f"{int(others.name.split()[0]) + 1} tensors"
            else:
                record = self.builder.tensors.get(tensor)
                table[tensor] = GraphItem(key, kind, tensor, shape_text(record.shape) if record else "?", [])
        return table[tensor].key

    @staticmethod
    def boxes(table: dict[str, GraphItem]) -> list[GraphItem]:
        """Each stub once (a shared "more tensors" stub stands for several)."""
        return list({id(s): s for s in table.values()}.values())


def _shared(edges: dict[tuple[str, str], GraphEdge], stubs: list[GraphItem], end: int, fewest: int) -> list[GraphItem]:
    """``stubs`` with those that join one and the same box, ``fewest`` or more, drawn as one box
    ("past_key_values… / 8 tensors"): a decoder's cache tensors would stand in one row as wide as
    the screen. ``end``: 0 for the stubs the edges leave (sources), 1 for those they reach."""
    joined: dict[str, list[tuple[str, str]]] = {}
    for pair in edges:
        joined.setdefault(pair[end], []).append(pair)
    by_box: dict[str, list[GraphItem]] = {}
    for stub in stubs:
        pairs = joined.get(stub.key, [])
        if len(pairs) == 1:
            by_box.setdefault(pairs[0][1 - end], []).append(stub)
    dropped: set[str] = set()
    for group in by_box.values():
        if len(group) < fewest:
            continue
        kept, pairs = group[0], [joined[stub.key][0] for stub in group]
        edge = edges[pairs[0]]
        edge.tensors = sum(edges.pop(pair).tensors for pair in pairs)
        edges[pairs[0]] = edge
        prefix = commonprefix([stub.label for stub in group if stub.label != "more tensors"]).rstrip("._/-")
        kept.label = f"{prefix}…" if len(prefix) >= 3 else "tensors"
        kept.name = f"{edge.tensors} tensors"
        dropped.update(stub.key for stub in group[1:])
    return [stub for stub in stubs if stub.key not in dropped]


def _assign(
    module: Module, depth: int, runs: dict[str, list[Module]], opened: set[Module] = frozenset()
) -> dict[int, tuple]:
    """Each node under ``module`` -> what it is drawn as when ``depth`` levels are open (and the
    modules in ``opened`` one level more): ("node", index), or ("module", the folded module or
    the first block of its run)."""
    owner: dict[int, tuple] = {}
    # a stack of tasks, not Python recursion (a tree as deep as the names make it): done in the
    # order a depth-first walk does them, so a run's first block is drawn before its copies
    tasks: list[tuple] = [("walk", module, 0)]
    while tasks:
        task = tasks.pop()
        if task[0] == "copy":  # a block of a run unfolded in place: each node as its first block's
            _, child, first = task
            for index, counterpart in zip(child.below, first.below):
                owner[index] = owner[counterpart]
            continue
        _, current, level = task
        for index in current.own:
            owner[index] = ("node", index)
        local = runs if current is module else alike_runs(current)
        later: list[tuple] = []
        for part, child in current.children.items():
            first = local.get(part)
            if first is not None and len(first) > 1 and first[0] in opened:
                # a run unfolded in place: its first block's boxes stand for every block (alike:
                # the same nodes in the same order), each box the node or module in all of them
                later.append(("walk", child, level + 1) if child is first[0] else ("copy", child, first[0]))
            elif first is not None and len(first) > 1:  # a run of alike blocks stays one box
                for index in child.below:
                    owner[index] = ("module", first[0])
            elif level + 1 >= depth and child not in opened:
                for index in child.below:
                    owner[index] = ("module", child)
            else:
                later.append(("walk", child, level + 1))
        tasks.extend(reversed(later))
    return owner


def _height(module: Module) -> int:
    """The levels of modules below ``module`` (0: it has none); walked with a stack."""
    height, stack = 0, [(module, 0)]
    while stack:
        current, level = stack.pop()
        height = max(height, level)
        stack.extend((child, level + 1) for child in current.children.values())
    return height


def alike_runs(module: Module) -> dict[str, list[Module]]:
    """The module's children in runs of alike numbered blocks (``layer.0``, ``layer.1``, ...: the
    same ops with the same shapes, ``compare/modules.runs``): each child's part -> its run (the
    first block holds it)."""
    if module.runs is not None:
        return module.runs
    found: dict[str, list[Module]] = {}
    for run in runs(list(module.children.values()), lambda child: child.label, _signature):
        if len(run) > 1:
            run[0].run = run
        for block in run:
            found[block.path[-1]] = run
    module.runs = found
    return found


def _signature(module: Module) -> tuple:
    """What alike blocks share: their modules' names, their nodes' op types and output shapes."""
    return tuple(module.children), tuple(module.kinds)
