"""Tensor movement: no arithmetic. Copies move their bytes; pure views alias their input and
move nothing; shape queries read metadata only."""

from __future__ import annotations

from . import NodeView, OpCost, register


def data_movement(node: NodeView) -> OpCost:
    """FLOPs = 0; reads its inputs and writes its outputs (bytes counted by the graph stage)."""
    return OpCost(formula="0 FLOPs (copies data)")


def view(node: NodeView) -> OpCost:
    """FLOPs = 0 and no bytes moved: the output aliases the input's buffer."""
    return OpCost(formula="0 FLOPs, a view of its input", view=True)


def metadata(node: NodeView) -> OpCost:
    """FLOPs = 0: reads only the input's shape, never its data."""
    return OpCost(formula="0 FLOPs (reads the shape only)", view=True)


# op -> input slots that hold shapes or settings rather than data
DATA_MOVEMENT: dict[str, tuple[int, ...]] = {
    "Concat": (), "Transpose": (), "Gather": (1,), "GatherElements": (1,), "GatherND": (1,),
    "Slice": (1, 2, 3, 4), "Split": (1,), "Pad": (1, 2, 3), "Expand": (1,), "Tile": (1,),
    "Cast": (), "CastLike": (1,), "ScatterElements": (1,), "ScatterND": (1,), "DepthToSpace": (),
    "SpaceToDepth": (), "ReverseSequence": (1,), "Compress": (1,),
}
VIEWS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Flatten": (), "Squeeze": (1,), "Unsqueeze": (1,), "Identity": (),
    "Dropout": (1, 2),  # inference: the identity
}

for _op, _args in DATA_MOVEMENT.items():
    register(_op, data_movement, family="tensor", arg_inputs=_args)
for _op, _args in VIEWS.items():
    register(_op, view, family="tensor", arg_inputs=_args)
register(["Shape", "Size"], metadata, family="tensor")
# Constant producers are folded at load time; the graph stage marks their outputs as parameters.
register("Constant", data_movement, family="tensor")
register("ConstantOfShape", data_movement, family="tensor", arg_inputs=(0,))
register("Range", data_movement, family="tensor", arg_inputs=(0, 1, 2))
