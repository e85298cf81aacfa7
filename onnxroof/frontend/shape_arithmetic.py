"""Which computed tensors are shape arithmetic: settings such as a Reshape's target shape, not
data. Their nodes launch nothing on a device and read settings, not parameters (cost-model.md
section 3). Decided by the structure alone, so the answer is the same at every size.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx

from ..core.nodes import DEFAULT_DOMAINS, NodeFields
from ..ops import OpTrait, has_trait, rule_for

_GRAPH_ATTRIBUTE = onnx.AttributeProto.GRAPH


def settings_tensors(fields: Sequence[NodeFields], constants: set[str], outputs: set[str]) -> set[str]:
    """The tensors of one graph that are shape arithmetic: computed from shapes and constants only
    (``Shape``, ``Size`` and ``constants`` onwards) and read only in a rule's setting slots (a
    Reshape's shape, a Gather's indices, an Attention's mask) or by other shape arithmetic. Both
    follow from the structure, so a node is shape arithmetic at every size, whether or not the
    analysis computes its values. A shape-derived tensor that data flows from (a mask added to
    scores) is no setting. ``outputs`` (the graph's) and what a subgraph reads from its outer
    scope are data.

    >>> from onnxroof.core.nodes import NodeFields
    >>> fields = [NodeFields("s", "Shape", "", ["x"], ["shape"], ()),
    ...           NodeFields("r", "Reshape", "", ["x", "shape"], ["y"], ()),
    ...           NodeFields("m", "Cast", "", ["shape"], ["mask"], ()),
    ...           NodeFields("a", "Add", "", ["y", "mask"], ["z"], ())]
    >>> sorted(settings_tensors(fields, set(), {"z"}))
    []
    >>> sorted(settings_tensors(fields[:2], set(), {"y"}))
    ['shape']
    """
    outer: set[str] = set(outputs)  # read by a subgraph (outer scope): data
    derived, makers = _shape_derived(fields, constants, outer)
    if not makers:  # nothing is computed from shapes and constants alone (most graphs' nodes)
        return set()
    # who reads each derived tensor (reader's position, input slot): the only readers asked about
    # below, so the other tensors (nearly all of a large graph's) are not logged
    uses: dict[str, list[tuple[int, int]]] = {}
    for position, node in enumerate(fields):
        if derived.isdisjoint(node.inputs):
            continue
        for slot, name in enumerate(node.inputs):
            if name in derived:
                uses.setdefault(name, []).append((position, slot))
    return _read_as_settings(fields, makers, outer, uses)


def _shape_derived(fields: Sequence[NodeFields], constants: set[str], outer: set[str]) -> tuple[set[str], list[int]]:
    """The tensors computed from shapes and constants only, and the positions of the nodes making
    them; adds to ``outer`` what subgraphs read from their outer scope."""
    derived = set(constants)
    makers: list[int] = []
    for position, node in enumerate(fields):
        has_subgraph = False
        for attribute in node.attributes or ():
            if attribute.type == _GRAPH_ATTRIBUTE:
                outer |= _names_read(attribute.g)
                has_subgraph = True
        if has_subgraph:
            continue
        inputs = node.inputs
        # an op reading only its input's shape (Shape, Size) makes a tensor that follows from shapes alone
        if (
            derived.issuperset(inputs)
            or ("" in inputs and all(n in derived for n in inputs if n))
            or (node.domain in DEFAULT_DOMAINS and has_trait("", node.op_type, OpTrait.READS_SHAPE_ONLY))
        ):
            made = [o for o in node.outputs if o]
            if made:
                derived.update(made)
                makers.append(position)
    return derived, makers


def _read_as_settings(
    fields: Sequence[NodeFields], makers: list[int], outer: set[str], uses: dict[str, list[tuple[int, int]]]
) -> set[str]:
    """Of the tensors the ``makers`` make (from shapes and constants only), those no subgraph reads
    (``outer``) whose every reader reads them in a setting slot or is shape arithmetic itself: the
    makers walked from the last back, readers first."""
    arithmetic: set[int] = set()  # positions of shape-arithmetic nodes
    settings: set[str] = set()

    def a_setting(use: tuple[int, int]) -> bool:
        reader, slot = use
        if reader in arithmetic:
            return True
        rule = rule_for(fields[reader].domain, fields[reader].op_type)
        return rule is not None and slot in rule.arg_inputs

    for position in reversed(makers):  # readers before the nodes they read
        made = [o for o in fields[position].outputs if o]
        if any(o in outer for o in made):
            continue
        if all(a_setting(use) for o in made for use in uses.get(o, ())):
            arithmetic.add(position)
            settings.update(made)
    return settings


def _names_read(graph: onnx.GraphProto) -> set[str]:
    names = {name for node in graph.node for name in node.input if name}
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == _GRAPH_ATTRIBUTE:
                names |= _names_read(attribute.g)
    return names
