"""Control flow: the cost of a node that runs subgraphs is the cost of the subgraphs it runs.

The graph stage costs every subgraph first (``NodeView.subgraphs``: attribute name ->
SubgraphCost, nested subgraphs included); these rules only say how many times each one runs.
"""

from __future__ import annotations

from .base import NodeView, OpCost, UnknownValue, register

# Exporters write "no trip limit" (a while loop) as the largest int64.
_NO_TRIP_LIMIT = 2**62


def _repeat(body, times: int, how: str, attribute: str = "body") -> OpCost:
    """``body`` run ``times`` times, with the MAC part kept apart from the other FLOPs."""
    other = body.flops - 2 * body.macs
    return OpCost(
        macs=body.macs * times,
        flops=other * times,
        formula=f"{how}: {body.flops:,} FLOPs x {times:,} = {body.flops * times:,} FLOPs",
        runs=((attribute, times, f"{how} = {times:,}"),),
    )


def if_rule(node: NodeView) -> OpCost:
    """FLOPs = the branch the condition selects when its value is known once the inputs are bound
    (the other is shown, not counted), else the costlier of then_branch and else_branch (both shown)."""
    then_branch, else_branch = node.subgraphs["then_branch"], node.subgraphs["else_branch"]
    condition = node.input_value(0)
    if condition is not None and condition.size == 1:
        name = "then" if bool(condition.reshape(-1)[0]) else "else"
        taken = then_branch if name == "then" else else_branch
        return OpCost(
            macs=taken.macs,
            flops=taken.flops - 2 * taken.macs,
            formula=f"condition {bool(condition.reshape(-1)[0])} once the inputs are bound: counted {name} "
            f"({taken.flops:,} FLOPs); then {then_branch.flops:,}, else {else_branch.flops:,} FLOPs",
            untaken=("else_branch" if name == "then" else "then_branch",),
            runs=(
                (f"{name}_branch", 1, f"its condition is {bool(condition.reshape(-1)[0])} once the inputs are bound"),
            ),
        )
    taken, name = max((then_branch, "then"), (else_branch, "else"), key=lambda pair: pair[0].flops)
    return OpCost(
        macs=taken.macs,
        flops=taken.flops - 2 * taken.macs,
        formula=f"then {then_branch.flops:,} FLOPs, else {else_branch.flops:,} FLOPs: counted the costlier ({name})",
        runs=(
            (
                f"{name}_branch",
                1,
                f"its condition is not known: the costlier branch ({taken.flops:,} FLOPs, the "
                f"other {min(then_branch.flops, else_branch.flops):,}); --value picks one",
            ),
        ),
    )


def loop_rule(node: NodeView) -> OpCost:
    """FLOPs = body FLOPs x trip count (input M when it is a constant, else --loop-trips N)."""
    trips_value = node.input_value(0)
    if trips_value is not None and 0 <= int(trips_value.reshape(-1)[0]) < _NO_TRIP_LIMIT:
        trips, source = int(trips_value.reshape(-1)[0]), "trip count M"
    elif node.loop_trips is not None:
        trips, source = node.loop_trips, "--loop-trips"
    else:
        raise UnknownValue("Loop trip count is not a constant (a while loop or a computed count); pass --loop-trips N")
    return _repeat(node.subgraphs["body"], trips, f"body x {source}")


def scan_rule(node: NodeView) -> OpCost:
    """FLOPs = body FLOPs x scan length (the scan axis of the first scan input)."""
    scan_inputs = int(node.attr("num_scan_inputs"))
    first_scan = len(node.node.input) - scan_inputs
    axes = node.attr("scan_input_axes") or [0] * scan_inputs
    shape = node.input_shape(first_scan)
    axis = axes[0] % len(shape)
    return _repeat(node.subgraphs["body"], shape[axis], f"body x scan length (axis {axis})")


def sequence_map_rule(node: NodeView) -> OpCost:
    """FLOPs = body FLOPs x sequence length (given by --loop-trips, since ONNX types carry no length)."""
    if node.loop_trips is None:
        raise UnknownValue("SequenceMap length is not part of the model's types; pass --loop-trips N")
    return _repeat(node.subgraphs["body"], node.loop_trips, "body x --loop-trips")


register("If", if_rule, family="control_flow", arg_inputs=(0,))
register("Loop", loop_rule, family="control_flow", arg_inputs=(0, 1))
register("Scan", scan_rule, family="control_flow")
register("SequenceMap", sequence_map_rule, family="control_flow")
