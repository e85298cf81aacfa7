"""Costs per module (issue 21): the module tree exporters keep in node names.

PyTorch's TorchScript exporter names a node after the module that made it (``/encoder/layer.0/
attention/self/MatMul``: module ``encoder/layer.0/attention/self``, node ``MatMul``), as optimum
and onnxruntime-genai's builder do (``/model/layers.3/mlp/...``) and tf2onnx
(``model/dense/MatMul``); its dynamo exporter names nodes ``node_MatMul_12`` and writes the path
in the node's metadata (``pkg.torch.onnx.name_scopes``), which wins where present.
:func:`module_tree` groups the node records by that path into a tree whose every module holds
the sums of the nodes below it, so children add up to their parent and the root to the model's
totals; :func:`op_breakdown` groups them by op type instead. A graph whose names carry no scope
(``Conv_0``, ``node_MatMul_12``) has no module tree: :func:`has_scopes` says so and the
outputs fall back to op types with a note.

Shared parameters (a tied embedding and LM head) count in the module of the first node that
reads them, once, so the modules' parameters add up to the model's. A fused kernel's time on a
target is split over its nodes by FLOPs (by bytes when it does none), the split a profile makes.

>>> from onnx import TensorProto, helper
>>> from onnxroof import analyze
>>> nodes = [helper.make_node("Relu", ["x"], ["a"], name="/block.0/act/Relu"),
...          helper.make_node("Relu", ["a"], ["y"], name="/block.1/act/Relu")]
>>> graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
...                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
>>> tree = module_tree(analyze(helper.make_model(graph)))
>>> [(m.name, m.flops, m.nodes) for m in tree.children]
[('block.0', 8, 1), ('block.1', 8, 1)]
>>> tree.flops
16
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from ..cost.records import NodeStatus
from ..roofline.placement import node_times as _node_times

if TYPE_CHECKING:
    from ..cost.records import CostGraph, NodeRecord
    from ..result import Analysis

Block = TypeVar("Block")  # a sibling in the module tree: a ModuleCost, or the graph view's module
ROOT = "(model)"
# a module tree is at most this deep: a longer path folds its rest into its last shown level's
# name ("m31/m32/.../m249"), so every tree walk and every path string stays bounded whatever
# the node names hold (a name of 100,000 '/'-separated levels is a 1 MB model)
MAX_MODULE_DEPTH = 32
FOLDED_NOTE = (
    f"module paths deeper than {MAX_MODULE_DEPTH} levels are folded: "
    f"the rest of such a path is its level {MAX_MODULE_DEPTH}'s name"
)
# a module tree holds at most this many modules: 20,000 nodes with distinct 50-level paths
# would make 640,000 (1.7 GB as JSON); past it the tree stops at the deepest level that fits
# (:func:`fitting_depth`), the deeper scopes in their ancestor there, and the outputs say so
MAX_MODULES = 50_000
OWN_NODES = "(its own nodes)"  # the nodes of a module that are in none of its children
NUMBER_DIGITS = 18  # a block's index has at most this many digits (a longer run of digits is a name)


@dataclass
class ModuleCost:
    """One module: the sums over every node below it."""

    name: str  # its own name ("layer.0")
    path: str  # from the root ("encoder/layer.0")
    nodes: int = 0
    macs: int = 0
    flops: int = 0
    params: int = 0
    weight_bytes: int = 0  # parameter bytes its nodes read per run
    activation_bytes: int = 0  # activation bytes its nodes read and write
    peak_bytes: int = 0  # the most live activation bytes while one of its nodes runs (model order)
    time_s: dict[str, float] = field(default_factory=dict)  # target -> seconds
    children: list[ModuleCost] = field(default_factory=list)
    parts: tuple[str, ...] = ()  # the path's levels (a folded level's name holds '/': split no path)
    cut_at: int | None = None  # (the root's) the level the tree stops at to hold MAX_MODULES modules

    def signature(self) -> tuple:
        """What two repeated blocks share when they are alike (names aside)."""
        return (
            self.nodes,
            self.macs,
            self.flops,
            self.params,
            self.weight_bytes,
            self.activation_bytes,
            tuple(c.signature() for c in self.children),
        )

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "path": self.path,
            "nodes": self.nodes,
            "macs": self.macs,
            "flops": self.flops,
            "params": self.params,
            "weight_bytes": self.weight_bytes,
            "activation_bytes": self.activation_bytes,
            "peak_bytes": self.peak_bytes,
            "time_s": self.time_s,
            "children": [c.to_dict() for c in self.children],
        }


# scopes an exporter writes for its own machinery, not the user's modules: PyTorch's dynamo
# exporter puts nodes it made outside any module under this hook's name
EXPORTER_SCOPES = frozenset({"_empty_nn_module_stack_from_metadata_hook"})


def module_of(record: NodeRecord) -> tuple[str, ...]:
    """A node's module path (the one definition: the module table, the graph view, findings and
    symbolic read it here): the exporter's metadata when it wrote one (PyTorch's dynamo
    exporter), else the scopes in its name; the exporter's own scopes left out; folded to
    :data:`MAX_MODULE_DEPTH` levels (:func:`fold_path`). Every module tree reads paths here."""
    if not record.scope and "/" not in record.name:  # an unscoped node: asked of every node of big graphs
        return ()
    path = record.scope or module_path(record.name)
    if EXPORTER_SCOPES.intersection(path):
        path = tuple(part for part in path if part not in EXPORTER_SCOPES)
    return fold_path(path)


def fold_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """``path`` with its levels past :data:`MAX_MODULE_DEPTH` joined into the last shown one.

    >>> fold_path(tuple(f"m{i}" for i in range(MAX_MODULE_DEPTH + 2)))[-2:]
    ('m30', 'm31/m32/m33')
    >>> fold_path(("a", "b"))
    ('a', 'b')
    """
    if len(path) <= MAX_MODULE_DEPTH:
        return path
    return (*path[: MAX_MODULE_DEPTH - 1], "/".join(path[MAX_MODULE_DEPTH - 1 :]))


def is_folded(module: ModuleCost) -> bool:
    """Whether a tree has a module whose path was folded (:func:`fold_path`): the outputs say so."""
    return any(level == MAX_MODULE_DEPTH and "/" in entry.name for entry, level in walk(module))


def folded_note(root: ModuleCost) -> str | None:
    """What the outputs say of a tree cut short (:data:`MAX_MODULES`) or with folded paths."""
    if root.cut_at is not None:
        return (
            f"the node names make more than {MAX_MODULES:,} modules: the tree stops {root.cut_at} "
            "level(s) deep, each deeper scope counted in its ancestor there"
        )
    return FOLDED_NOTE if is_folded(root) else None


def fitting_depth(paths: Sequence[tuple[str, ...]], most: int) -> int | None:
    """The deepest level at which the tree of ``paths`` holds at most ``most`` modules, or None
    when the whole tree does. Level by level, each path's prefix known by a number (its parent's
    number and its own name), so that no prefix is copied: linear in the paths' total length."""
    ids = [0] * len(paths)  # the number of each path's prefix at the level reached
    modules, level = 0, 0
    while True:
        level += 1
        numbers: dict[tuple[int, str], int] = {}
        for i, path in enumerate(paths):
            if len(path) >= level:
                ids[i] = numbers.setdefault((ids[i], path[level - 1]), len(numbers))
        if not numbers:
            return None
        modules += len(numbers)
        if modules > most:
            return level - 1


def module_path(name: str) -> tuple[str, ...]:
    """The module scopes in a node's name: all its ``/``-separated parts but the last.

    >>> module_path("/encoder/layer.0/attention/self/MatMul")
    ('encoder', 'layer.0', 'attention', 'self')
    >>> module_path("model/dense/MatMul"), module_path("Conv_0")
    (('model', 'dense'), ())
    """
    if "/" not in name:  # most names of an unscoped graph: asked of every node
        return ()
    parts = [part for part in name.split("/") if part]
    return tuple(parts[:-1])


def has_scopes(analysis: Analysis) -> bool:
    """Whether most counted nodes' names carry a module scope (of the nodes a run executes: a
    control-flow body's are named under its node, ``Analysis.run_view``)."""
    counted = [r for r in analysis.run_view.nodes if r.counted]
    # read until the answer is known: a graph of 100,000 unscoped nodes decides after half of them
    needed = (len(counted) + 1) // 2  # scoped nodes for "most" (at least half)
    scoped = unscoped = 0
    for record in counted:
        if module_of(record):
            scoped += 1
            if scoped >= needed:
                return True
        else:
            unscoped += 1
            if unscoped > len(counted) - needed:
                return False
    return False


def _add(module: ModuleCost, record: NodeRecord, params: int, peak: int, times: dict[str, float]) -> None:
    runs = record.runs  # a Loop's body node: its figures are one run's
    module.nodes += 1
    module.macs += record.macs * runs
    module.flops += record.flops * runs
    module.params += params
    module.weight_bytes += record.weight_bytes * runs
    module.activation_bytes += (record.input_bytes + record.output_bytes) * runs
    module.peak_bytes = max(module.peak_bytes, peak)
    for target, seconds in times.items():
        module.time_s[target] = module.time_s.get(target, 0.0) + seconds


def _first_reads(records: list[NodeRecord], graph: CostGraph | None = None) -> dict[str, int]:
    """Each node's parameters, counted at the first node that reads each stored root: a folded
    constant (the legacy exporter's transposed copy of a tied embedding) counts as the roots it is
    computed from (``CostGraph.roots``), as the model's totals count them, and at the node that
    folded it (a position table's Gather on constant positions), not at the node that reads it:
    the module tree puts a table where its Gather is."""
    seen: set[str] = set()
    counted = {record.name: 0 for record in records}
    roots_of = graph.roots if graph is not None else {}
    elements = graph.parameters if graph is not None else {}
    folded_by = {
        output: record.name for record in records if record.status == NodeStatus.CONSTANT for output in record.outputs
    }
    for record in records:
        owners = {
            r: folded_by.get(name, record.name) for name in record.param_inputs for r in roots_of.get(name, (name,))
        }
        sizes = {r: elements[r][0] if r in elements else 1 for r in owners}
        total = sum(sizes.values())
        fresh = {r: size for r, size in sizes.items() if r not in seen}
        seen.update(owners)
        mine = round(record.params * sum(fresh.values()) / total) if total else record.params
        for root, size in fresh.items():  # the share of a table another node folded: that node's
            if owners[root] != record.name:
                moved = round(record.params * size / total)
                counted[owners[root]] += moved
                mine -= moved
        counted[record.name] += mine
    return counted


def module_tree(analysis: Analysis, depth: int | None = None) -> ModuleCost:
    """The module tree of ``analysis`` (down to ``depth`` levels below the root; deeper scopes
    fold into their ancestor at that depth). Nodes without a scope sit at the root. The nodes are
    those a run executes (``Analysis.run_view``): a control-flow body is a module under its node."""
    analysis = analysis.run_view
    records = analysis.nodes
    params = _first_reads(records, analysis.cost_graph)
    live = dict(zip(analysis.memory.model_order.order, analysis.memory.model_order.live_bytes))
    times = _node_times(analysis.targets)
    root = ModuleCost(ROOT, "")
    index: dict[tuple[str, ...], ModuleCost] = {(): root}
    own: dict[tuple[str, ...], ModuleCost] = {}  # the nodes that sit at a module itself, not in a child
    paths = [module_of(record)[:depth] if depth is not None else module_of(record) for record in records]
    root.cut_at = fitting_depth(paths, MAX_MODULES)
    if root.cut_at is not None:
        paths = [path[: root.cut_at] for path in paths]
    for record, path in zip(records, paths):
        node_time = {target: per_node.get(record.name, 0.0) for target, per_node in times.items()}
        cost = (record, params[record.name], live.get(record.name, 0), node_time)
        _add(root, *cost)
        for level in range(1, len(path) + 1):
            key = path[:level]
            module = index.get(key)
            if module is None:
                parent = index[key[:-1]]
                module = index[key] = ModuleCost(
                    key[-1], f"{parent.path}/{key[-1]}" if parent.path else key[-1], parts=key
                )
                parent.children.append(module)
            _add(module, *cost)
        if path not in own:
            own[path] = ModuleCost(OWN_NODES, "/".join((*path, OWN_NODES)), parts=(*path, OWN_NODES))
        _add(own[path], *cost)
    for path, nodes in own.items():  # beside children, a module's own nodes are one more child
        if index[path].children:
            index[path].children.append(nodes)
    return root


def op_breakdown(analysis: Analysis) -> list[ModuleCost]:
    """One entry per op type (its ``name``), costliest first (FLOPs, then bytes), over the nodes a
    run executes (``Analysis.run_view``)."""
    analysis = analysis.run_view
    params = _first_reads(analysis.nodes, analysis.cost_graph)
    live = dict(zip(analysis.memory.model_order.order, analysis.memory.model_order.live_bytes))
    times = _node_times(analysis.targets)
    by_op: dict[str, ModuleCost] = {}
    for record in analysis.nodes:
        entry = by_op.setdefault(record.op_type, ModuleCost(record.op_type, record.op_type))
        _add(
            entry,
            record,
            params[record.name],
            live.get(record.name, 0),
            {target: per_node.get(record.name, 0.0) for target, per_node in times.items()},
        )
    return sorted(by_op.values(), key=lambda m: (-m.flops, -(m.weight_bytes + m.activation_bytes), m.name))


def descendants(module: ModuleCost) -> Iterator[ModuleCost]:
    """Every module below ``module``, parents before their children (depth first, in order);
    walked with a stack, not Python recursion."""
    for entry, _level in walk(module):
        if entry is not module:
            yield entry


def walk(module: ModuleCost) -> Iterator[tuple[ModuleCost, int]]:
    """``module`` and every module below it with its level (``module``'s is 0), parents before
    their children, in order, without Python recursion."""
    stack = [(module, 0)]
    while stack:
        entry, level = stack.pop()
        yield entry, level
        stack.extend((child, level + 1) for child in reversed(entry.children))


def numbered(name: str) -> tuple[str, int] | None:
    """A block repeated by index (``layer.11``, ``layers_3``, ``h.0``): its name's prefix and its
    trailing number; None when it ends in no digit or in more than :data:`NUMBER_DIGITS` (a
    name is any text: a backwards scan, linear, where a regular expression backtracked in the
    square of the digits, and no int() of thousands of digits).

    >>> numbered("layer.11"), numbered("pool"), numbered("1" * 40)
    (('layer.', 11), None, None)
    """
    start = len(name)
    while start > 0 and len(name) - start <= NUMBER_DIGITS and name[start - 1] in "0123456789":
        start -= 1
    digits = len(name) - start
    if digits == 0 or digits > NUMBER_DIGITS:
        return None
    return name[:start], int(name[start:])


def runs(
    siblings: Sequence[Block], name: Callable[[Block], str], signature: Callable[[Block], Hashable]
) -> list[list[Block]]:
    """Siblings in order cut into runs of alike numbered blocks: ``layer.0``, ``layer.1``, ...
    (each named the first's prefix and the next index) whose ``signature`` is the first's; a
    sibling in no such run is a run of one. A name with no number followed by the same name with
    ``_1``, ``_2`` ... (TorchScript names a module called again so: ultralytics' SPPF ``m``,
    ``m_1``, ``m_2``) is such a run from index 0. The one definition of "alike blocks": the module
    table compares the blocks' costs, the graph view their ops and shapes.

    >>> [len(run) for run in runs(["layer.0", "layer.1", "layer.3", "pool"], str, len)]
    [2, 1, 1]
    >>> [len(run) for run in runs(["cv1", "m", "m_1", "m_2", "cv2"], str, lambda name: 0)]
    [1, 3, 1]
    """
    found: list[list[Block]] = []
    i = 0
    while i < len(siblings):
        run = [siblings[i]]
        index = numbered(name(siblings[i]))
        if index is None and i + 1 < len(siblings) and name(siblings[i + 1]) == f"{name(siblings[i])}_1":
            index = (f"{name(siblings[i])}_", 0)  # m, m_1, m_2: m is block 0
        if index is not None and i + 1 < len(siblings):
            prefix, number = index
            alike = signature(siblings[i])
            j = i + 1
            while (
                j < len(siblings)
                and name(siblings[j]) == f"{prefix}{number + (j - i)}"
                and signature(siblings[j]) == alike
            ):
                run.append(siblings[j])
                j += 1
        found.append(run)
        i += len(run)
    return found


def run_label(first: str, count: int) -> str:
    """A run's name: its first block's, with the last index (``layer.0-11``); a run whose first
    block has no number (``m``, ``m_1``, ``m_2``: :func:`runs`), its first name and the others'.

    >>> run_label("layer.0", 12), run_label("pool", 1), run_label("m", 3), run_label("m", 2)
    ('layer.0-11', 'pool', 'm, m_1-2', 'm, m_1')
    """
    index = numbered(first)
    if count == 1:
        return first
    if index is None:
        return f"{first}, {first}_1" + (f"-{count - 1}" if count > 2 else "")
    return f"{first}-{index[1] + count - 1}"


def repeated_runs(children: list[ModuleCost]) -> list[tuple[ModuleCost, int, str]]:
    """Siblings in order, with runs of alike numbered blocks (``layer.0`` ... ``layer.11``, the
    same costs) as one entry: (the first block, how many, a label such as ``layer.0-11``).

    >>> blocks = [ModuleCost(f"layer.{i}", f"layer.{i}", nodes=3, flops=10) for i in range(3)]
    >>> [(m.name, count, label) for m, count, label in repeated_runs(blocks + [ModuleCost("pool", "pool")])]
    [('layer.0', 3, 'layer.0-2'), ('pool', 1, 'pool')]
    """
    return [
        (run[0], len(run), run_label(run[0].name, len(run)))
        for run in runs(children, lambda m: m.name, ModuleCost.signature)
    ]


def shown_rows(root: ModuleCost) -> list[tuple[ModuleCost, int, str, int]]:
    """The tree's rows in order, (module, count, label, level), alike blocks once; walked with a
    stack, not Python recursion."""
    rows: list[tuple[ModuleCost, int, str, int]] = []
    stack = [(root, 1, root.name, 0)]
    while stack:
        module, count, label, level = stack.pop()
        rows.append((module, count, label, level))
        stack.extend((child, n, text, level + 1) for child, n, text in reversed(repeated_runs(module.children)))
    return rows
