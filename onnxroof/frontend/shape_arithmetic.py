"""Which computed tensors are shape arithmetic: settings such as a Reshape's target shape, not
data. Their nodes launch nothing on a device and read settings, not parameters (cost-model.md
section 3). Decided by the structure alone, so the answer is the same at every size.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx

from ..core.nodes import DEFAULT_DOMAINS, NodeFields
from ..ops import OpTrait, rule_for, traits_of

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
    derived = _shape_derived(fields, constants, outer)
    # who reads each derived tensor (reader's position, input slot): the only readers asked about
    # below, so the other tensors (nearly all of a large graph's) are not logged
    uses: dict[str, list[tuple[int, int]]] = {}
    for position, node in enumerate(fields):
        for slot, name in enumerate(node.inputs):
            if name in derived:
                uses.setdefault(name, []).append((position, slot))
    return _read_as_settings(fields, derived, outer, uses)


def _shape_derived(fields: Sequence[NodeFields], constants: set[str], outer: set[str]) -> set[str]:
    """The tensors computed from shapes and constants only; adds to ``outer`` what subgraphs read
    from their outer scope."""
    derived = set(constants)
    for node in fields:
        has_subgraph = False
        for attribute in node.attributes or ():
            if attribute.type == _GRAPH_ATTRIBUTE:
                outer |= _names_read(attribute.g)
                has_subgraph = True
        # an op reading only its input's shape (Shape, Size) makes a tensor that follows from shapes alone
        shape_source = node.domain in DEFAULT_DOMAINS and OpTrait.READS_SHAPE_ONLY in traits_of("", node.op_type)
        if not has_subgraph and (shape_source or all(n in derived for n in node.inputs if n)):
            derived.update(o for o in node.outputs if o)
    return derived


def _read_as_settings(
    fields: Sequence[NodeFields], derived: set[str], outer: set[str], uses: dict[str, list[tuple[int, int]]]
) -> set[str]:
    """Of the ``derived`` tensors (none of them ``outer``), those every reader reads in a setting
    slot or is shape arithmetic itself: walked from the last node back, readers first."""
    arithmetic: set[int] = set()  # positions of shape-arithmetic nodes
    settings: set[str] = set()

    def a_setting(use: tuple[int, int]) -> bool:
        reader, slot = use
        if reader in arithmetic:
            return True
        rule = rule_for(fields[reader].domain, fields[reader].op_type)
        return rule is not None and slot in rule.arg_inputs

    for position in range(len(fields) - 1, -1, -1):  # readers before the nodes they read
        made = [o for o in fields[position].outputs if o]
        if not made or any(o not in derived or o in outer for o in made):
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
