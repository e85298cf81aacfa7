"""What a node's cost record derives from its rule and its tensors alone, apart from the costing
walk's state (``graph._Coster``): the fields shared by alike nodes (:class:`Derived`), the rule's
outcome, which inputs are parameters, the bytes the node moves, and its subgraphs' tallies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..core.dtypes import dtype_name
from ..core.nodes import DEFAULT_DOMAINS
from ..core.tensors import TensorInfo
from ..ops import InvalidNode, NodeView, OpCost, OpRule, OpTrait, UnknownShape, UnknownValue, checked_cost
from .records import NodeRecord, NodeStatus, SubgraphCost

NO_COST = OpCost()


@dataclass(frozen=True, slots=True)
class Derived:
    """The fields of a node's record that follow from its signature (:meth:`_Coster._signature`):
    the same for every node that looks alike, so computed once and shared (lists included; no
    reader of a record mutates them)."""

    status: NodeStatus
    reason: str
    cost: OpCost
    family: str
    dtype: str
    input_shapes: list[list | None]
    input_dtypes: list[str]
    output_shapes: list[list | None]
    output_dtypes: list[str]
    param_slots: tuple[int, ...]  # input slots read as parameters (the first slot of a repeated name)
    input_bytes: int
    output_bytes: int
    # (slot, bytes) of the inputs / outputs the node moves only part of (OpCost.activation_reads,
    # output_writes), as the record's partial_bytes names them
    partial_inputs: tuple[tuple[int, int], ...]
    partial_outputs: tuple[tuple[int, int], ...]
    shape_only: bool
    shareable: bool  # False when the reason names the node's tensors or the rule read a known value


class ValueReads(Mapping):
    """The known values as a rule sees them, noting whether it read one: its result then depends
    on that value, not only on the node's signature."""

    def __init__(self, values: Mapping[str, np.ndarray]):
        self._known = values  # not ``values``: that would hide Mapping.values()
        self.read = False

    def __getitem__(self, name: str) -> np.ndarray:
        value = self._known[name]  # a KeyError (no value known) reads nothing
        self.read = True
        return value

    def __iter__(self):
        self.read = True
        return iter(self._known)

    def __len__(self) -> int:
        return len(self._known)


def computed_from_constants(
    op_type: str, domain: str, traits: OpTrait, inputs: list[str], has_subgraph: bool, constant: set[str]
) -> bool:
    """A node computed only from constants: folded at load time, its outputs are parameters."""
    if has_subgraph:  # its body reads more than its inputs
        return False
    if op_type == "Constant" and domain in DEFAULT_DOMAINS:
        return True
    folded = False  # it reads at least one tensor, and only constants
    for name in inputs:
        if name:
            if name not in constant:
                return False  # most nodes: asked before the traits (a Flag test is slow)
            folded = True
    return folded and OpTrait.NONDETERMINISTIC not in traits  # a random op's output is no function of its inputs


def split_inputs(
    inputs: list[str], constant: set[str], reads_parameters: bool, arg_slots: frozenset[int]
) -> tuple[list[int], list[str]]:
    """A node's inputs, each name once: the slots it reads as parameters (constants other than its
    settings, unless it is folded or computes shape arithmetic) and its activations."""
    param_slots: list[int] = []
    activation_inputs: list[str] = []
    seen: set[str] = set()
    for slot, tensor_name in enumerate(inputs):
        if not tensor_name or tensor_name in seen:
            continue
        seen.add(tensor_name)
        if tensor_name not in constant:
            activation_inputs.append(tensor_name)
        elif reads_parameters and slot not in arg_slots:
            param_slots.append(slot)
    return param_slots, activation_inputs


@dataclass(frozen=True, slots=True)
class Traffic:
    """The bytes a node moves: of its activations read and its outputs written."""

    input_bytes: int
    output_bytes: int
    # (slot, bytes) of the inputs / outputs it moves only part of (OpCost.activation_reads, output_writes)
    partial_inputs: tuple[tuple[int, int], ...]
    partial_outputs: tuple[tuple[int, int], ...]


NO_TRAFFIC = Traffic(0, 0, (), ())


def op_family(rule: OpRule | None, param_inputs: list[str], activation_inputs: list[str]) -> str:
    """The rule's op family; a matmul of two activations (Q·K^T and A·V, not a projection) is attention."""
    family = rule.family if rule else "unsupported"
    if family == "matmul" and not param_inputs and len(activation_inputs) >= 2:
        return "attention"
    return family


def shapes_and_dtypes(
    input_infos: tuple[TensorInfo | None, ...], output_infos: tuple[TensorInfo, ...]
) -> tuple[list[list | None], list[str], list[list | None], list[str]]:
    """The shapes and dtype names of a node's inputs (None: an absent input) and outputs, as its record holds them."""
    return (
        [None if i is None or i.shape is None else list(i.shape) for i in input_infos],
        [dtype_name(i.dtype) if i else "" for i in input_infos],
        [None if o.shape is None else list(o.shape) for o in output_infos],
        [dtype_name(o.dtype) for o in output_infos],
    )


def partial_bytes(derived: Derived, inputs: list[str], outputs: list[str]) -> dict[str, int]:
    """tensor -> the bytes a node moves of it, for those it moves only part of."""
    return {inputs[slot]: n for slot, n in derived.partial_inputs} | {
        outputs[slot]: n for slot, n in derived.partial_outputs
    }


def with_subgraphs(
    subgraphs: dict[str, SubgraphCost], cost: OpCost, derived: Derived, params: int, weight_bytes: int
) -> tuple[int, int]:
    """Mark which subgraphs the node takes and how often it runs them; add their parameters."""
    for attribute in cost.untaken:
        subgraphs[attribute].taken = False
    _mark_runs(subgraphs, cost, derived)
    params += sum(sub.params for sub in subgraphs.values())
    weight_bytes += sum(sub.weight_bytes for sub in subgraphs.values())
    return params, weight_bytes


def not_costed_ops(records: list[NodeRecord]) -> tuple[Counter, Counter]:
    """op type -> nodes with no cost rule, and -> nodes with a rule left uncounted, in a subgraph
    and the subgraphs it takes."""
    unsupported: Counter = Counter(r.op_type for r in records if r.status == NodeStatus.UNSUPPORTED)
    not_counted: Counter = Counter(r.op_type for r in records if not r.counted and r.status != NodeStatus.UNSUPPORTED)
    for record in records:
        for sub in record.subgraphs.values():
            if sub.taken:
                unsupported.update(sub.unsupported)
                not_counted.update(sub.not_counted)
    return unsupported, not_counted


def _mark_runs(subgraphs: dict[str, SubgraphCost], cost: OpCost, derived: Derived) -> None:
    """Note on each subgraph how many times a target runs it per run of its node (cost/running.py
    places its nodes that many times); a lone subgraph whose count the rule could not work out
    (a Loop of unknown trip count) runs once, as a lower bound."""
    for attribute, times, reason in cost.runs:
        if attribute in subgraphs:
            subgraphs[attribute].runs, subgraphs[attribute].runs_reason = times, reason
    if not cost.runs and derived.status == NodeStatus.UNKNOWN_VALUE and len(subgraphs) == 1:
        only = next(iter(subgraphs.values()))
        only.runs, only.runs_bound = 1, True
        only.runs_reason = f"how many times it runs is not known ({derived.reason}): placed once, a lower bound"


def apply_rule(handler, view: NodeView) -> tuple[NodeStatus, str, OpCost]:
    try:
        cost, problem = checked_cost(handler(view))  # a plugin's rule may return NaN or a negative count
        return (NodeStatus.OK, "", cost) if cost is not None else (NodeStatus.UNKNOWN_SHAPE, problem, NO_COST)
    except UnknownValue as exc:
        return NodeStatus.UNKNOWN_VALUE, str(exc), NO_COST
    except InvalidNode as exc:
        return NodeStatus.INVALID, str(exc), NO_COST
    except UnknownShape as exc:
        return NodeStatus.UNKNOWN_SHAPE, str(exc), NO_COST
    except SystemExit as exc:  # a rule registered in code that exits (a --plugin's stops the run: ops/plugins.py)
        return NodeStatus.UNKNOWN_SHAPE, f"cost rule exited (SystemExit: {exc}); a rule returns an OpCost", NO_COST
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as exc:
        # a node the rule cannot read (a missing attribute, an odd rank): reported, not counted
        return NodeStatus.UNKNOWN_SHAPE, f"cost rule could not read this node ({type(exc).__name__}: {exc})", NO_COST
