"""Tensor movement and sampling. Copies move their bytes; pure views alias their input and move
nothing; shape queries read metadata only. Resampling ops (Resize, Upsample, GridSample) are
data movement for "nearest" and count their interpolation arithmetic otherwise.

Interpolation (shared by Resize, Upsample, GridSample, RoiAlign, DeformConv): an output value
blended from ``taps`` input values costs ``taps`` multiplies and ``taps - 1`` adds = 2·taps - 1
FLOPs. Per interpolated axis, linear reads 2 taps and cubic 4, so bilinear = 7, trilinear = 15,
bicubic = 31; nearest reads 1 and does no arithmetic. The tap weights depend only on the
coordinate along one axis and are shared across channels; they are not counted.

No-arithmetic classifications (each rule's docstring says which): random draws, string handling
and image decoding cost 0 FLOPs with a stated reason; sequence and optional containers are data
movement (a copy into or out of the container) or bookkeeping with no bytes.
"""

from __future__ import annotations

from math import ceil, prod

from .base import Handler, NodeView, OpCost, OpTrait, register, zero_cost

TAPS_PER_AXIS: dict[str, int] = {"nearest": 1, "linear": 2, "cubic": 4}
# older spellings: Upsample-7 "bilinear", GridSample-16 "bilinear"/"bicubic"
_MODE_ALIASES = {"bilinear": "linear", "bicubic": "cubic", "trilinear": "linear"}


def interpolation_mode(mode: str) -> str:
    mode = _MODE_ALIASES.get(mode, mode)
    return mode if mode in TAPS_PER_AXIS else "linear"


def blend_flops(taps: int) -> int:
    """FLOPs to blend ``taps`` weighted values: taps multiplies + (taps - 1) adds; 0 for one tap."""
    return 0 if taps <= 1 else 2 * taps - 1


def data_movement(node: NodeView) -> OpCost:
    """FLOPs = 0; reads its inputs and writes its outputs (bytes counted by the graph stage)."""
    return OpCost(formula="0 FLOPs (copies data)")


def view(node: NodeView) -> OpCost:
    """FLOPs = 0 and no bytes moved: the output aliases the input's buffer."""
    return OpCost(formula="0 FLOPs, a view of its input", view=True)


def metadata(node: NodeView) -> OpCost:
    """FLOPs = 0: reads only the input's shape, never its data."""
    return OpCost(formula="0 FLOPs (reads the shape only)", view=True)


def container(node: NodeView) -> OpCost:
    """FLOPs = 0 and no tensor bytes: creates or queries a sequence/optional container (its length,
    whether it holds a value) without touching element data."""
    return OpCost(formula="0 FLOPs (container bookkeeping, no element data)", view=True)


def scatter(node: NodeView) -> OpCost:
    """FLOPs = 0 for reduction='none' (a copy); otherwise 1 x update elements (each update is
    combined with the existing value by add/mul/max/min). Bytes counted by the graph stage."""
    reduction = node.attr("reduction", "none")
    if reduction == "none":
        return OpCost(formula="0 FLOPs (copies data; reduction='none')")
    updates = node.input_elements(2)
    return OpCost(flops=updates, formula=f"1·{updates:,} updates ({reduction}) = {updates:,} FLOPs")


def _resized_taps(node: NodeView, mode: str) -> list[int]:
    """Taps per resized axis (an axis whose size changes). With antialias a downscaled axis widens
    its filter by in/out: ceil(base taps x in/out) taps."""
    base = TAPS_PER_AXIS[mode]
    antialias = bool(node.attr("antialias", 0))
    taps = []
    for size_in, size_out in zip(node.input_shape(0), node.output_shape(0)):
        if size_in == size_out:
            continue
        taps.append(ceil(base * size_in / size_out) if antialias and size_out < size_in and base > 1 else base)
    return taps


def resize(node: NodeView) -> OpCost:
    """FLOPs = output elements x (2 x taps - 1), taps = product over the resized axes of 2 (linear)
    or 4 (cubic), widened by in/out on downscaled axes with antialias=1; mode 'nearest' is a
    gather: 0 FLOPs, bytes only. The per-axis coordinate transform and tap weights are not counted."""
    mode = interpolation_mode(node.attr("mode", "nearest"))
    outputs = node.output_elements(0)
    if mode == "nearest":
        return OpCost(formula=f"0 FLOPs (nearest: copies {outputs:,} values)")
    taps = _resized_taps(node, mode)
    per_output = blend_flops(prod(taps))
    flops = per_output * outputs
    return OpCost(
        flops=flops,
        formula=f"{mode} over {len(taps)} axes, {prod(taps)} taps: "
        f"(2·{prod(taps)} - 1)·{outputs:,} outputs = {flops:,} FLOPs",
    )


def grid_sample(node: NodeView) -> OpCost:
    """FLOPs = output elements x (2 x taps - 1) + grid points x 2 x d: each output value blends
    2^d (linear) or 4^d (cubic) taps over the d spatial axes (nearest: 0), and each grid
    coordinate is un-normalized once ((g + 1)·size/2: a multiply-add, 2 FLOPs) per location,
    shared across channels."""
    mode = interpolation_mode(node.attr("mode", "linear"))
    grid = node.input_shape(1)  # [N, D1, ..., Dd, d]
    spatial_rank = grid[-1]
    outputs = node.output_elements(0)
    taps = TAPS_PER_AXIS[mode] ** spatial_rank
    grid_coordinates = prod(grid)
    blend = blend_flops(taps)
    flops = blend * outputs + 2 * grid_coordinates
    return OpCost(
        flops=flops,
        formula=f"{mode}, {taps} taps: {blend}·{outputs:,} outputs + 2·{grid_coordinates:,} "
        f"grid coordinates = {flops:,} FLOPs",
    )


def affine_grid(node: NodeView) -> OpCost:
    """MACs = output elements x (d + 1): each of the d coordinates of every grid point is a row of
    theta ([N, d, d+1]) times the homogeneous base point (x, y, [z,] 1). The base grid depends only
    on the size input and is not counted."""
    theta = node.input_shape(0)
    row = theta[-1]  # d + 1
    outputs = node.output_elements(0)
    macs = outputs * row
    return OpCost(macs=macs, formula=f"{outputs:,} grid coordinates·{row} = {macs:,} MACs")


def col2im(node: NodeView) -> OpCost:
    """FLOPs = input elements: every column element is added into its image position (overlapping
    blocks accumulate); the scatter itself is data movement."""
    elements = node.input_elements(0)
    return OpCost(flops=elements, formula=f"1·{elements:,} column elements = {elements:,} adds")


# op -> input slots that hold shapes or settings rather than data
DATA_MOVEMENT: dict[str, tuple[int, ...]] = {
    "Concat": (),
    "Transpose": (),
    "GatherElements": (1,),
    "GatherND": (1,),
    "Slice": (1, 2, 3, 4),
    "Split": (1,),
    "Pad": (1, 2, 3),
    "Expand": (1,),
    "Tile": (1,),
    "Cast": (),
    "CastLike": (1,),
    "DepthToSpace": (),
    "SpaceToDepth": (),
    "ReverseSequence": (1,),
    "Compress": (1,),
    "Trilu": (1,),
    "OneHot": (1, 2),
    "CenterCropPad": (1,),
    "EyeLike": (0,),  # reads only its input's shape, writes the identity
    "TensorScatter": (2,),  # KV-cache write: copies the update into the cache
    # sequences: onnxruntime copies tensors into and out of the container
    "SequenceConstruct": (),
    "SequenceInsert": (2,),
    "SequenceAt": (1,),
    "SequenceErase": (1,),
    "ConcatFromSequence": (),
    "SplitToSequence": (1,),
}
VIEWS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Flatten": (),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Identity": (),
    "Dropout": (1, 2),  # inference: the identity
    "BitCast": (),  # reinterprets the same bits as another type of the same width
    "Optional": (),
    "OptionalGetElement": (),  # wrap / unwrap a reference
}
SCATTERS: dict[str, tuple[int, ...]] = {"ScatterElements": (1,), "ScatterND": (1,), "Scatter": (1,)}
# what the copies and views above are, beyond moving (or aliasing) their data (OpTrait)
_RESHAPE_VIEW = OpTrait.VIEW | OpTrait.RESHAPE
TRAITS: dict[str, OpTrait] = {
    "Reshape": _RESHAPE_VIEW,
    "Flatten": _RESHAPE_VIEW,
    "Squeeze": _RESHAPE_VIEW,
    "Unsqueeze": _RESHAPE_VIEW,
    "Identity": OpTrait.VIEW | OpTrait.IDENTITY,
    "Transpose": OpTrait.PERMUTES_AXES | OpTrait.STRIDED_COPY,
    "DepthToSpace": OpTrait.STRIDED_COPY,
    "SpaceToDepth": OpTrait.STRIDED_COPY,
    # a conversion per element: joins a kernel as its epilogue
    "Cast": OpTrait.RETYPE | OpTrait.ELEMENTWISE,
    "CastLike": OpTrait.RETYPE | OpTrait.ELEMENTWISE,
    "GatherElements": OpTrait.GATHER,
    "GatherND": OpTrait.GATHER,
    "Compress": OpTrait.DATA_DEPENDENT_SIZE,  # as many rows as the condition selects
}

RANDOM_REASON = "random draws: RNG work is not counted as arithmetic; the output's bytes are counted"
STRING_REASON = "string handling: character work, not numeric arithmetic"
IMAGE_DECODE_REASON = (
    "entropy decoding of an encoded image (JPEG, PNG, ...): not tensor arithmetic; output bytes counted"
)


def gather(node: NodeView) -> OpCost:
    """FLOPs = 0: data movement that reads only the gathered rows: an embedding lookup reads one row of
    the table per index, so its weight traffic is the output's bytes, not the whole table."""
    rows = node.output_elements(0)
    return OpCost(formula=f"0 FLOPs; reads {rows:,} gathered elements", weight_elements_read=rows)


register("Gather", gather, family="tensor", arg_inputs=(1,), traits=OpTrait.GATHER)
for _op, _args in DATA_MOVEMENT.items():
    register(_op, data_movement, family="tensor", arg_inputs=_args, traits=TRAITS.get(_op, OpTrait.NONE))
for _op, _args in VIEWS.items():
    register(_op, view, family="tensor", arg_inputs=_args, traits=TRAITS.get(_op, OpTrait.VIEW))
for _op, _args in SCATTERS.items():
    register(_op, scatter, family="tensor", arg_inputs=_args)
register(["Shape", "Size"], metadata, family="tensor", traits=OpTrait.READS_SHAPE_ONLY)
register(["SequenceEmpty", "SequenceLength", "OptionalHasElement"], container, family="tensor")
# Constant producers are folded at load time; the graph stage marks their outputs as parameters.
register("Constant", data_movement, family="tensor", traits=OpTrait.CONSTANT_SOURCE)
register("ConstantOfShape", data_movement, family="tensor", arg_inputs=(0,), traits=OpTrait.CONSTANT_SOURCE)
register("Range", data_movement, family="tensor", arg_inputs=(0, 1, 2))
register("Resize", resize, family="tensor", arg_inputs=(1, 2, 3))  # roi, scales, sizes
register("Upsample", resize, family="tensor", arg_inputs=(1,))  # scales
register("GridSample", grid_sample, family="tensor")
register("AffineGrid", affine_grid, family="tensor", arg_inputs=(1,))  # size
register("Col2Im", col2im, family="tensor", arg_inputs=(1, 2))  # image_shape, block_shape
_random: Handler = zero_cost(RANDOM_REASON)
register(
    ["RandomNormal", "RandomUniform", "Bernoulli", "Multinomial"],
    _random,
    family="random",
    traits=OpTrait.NONDETERMINISTIC,
)
register(
    ["RandomNormalLike", "RandomUniformLike"],
    _random,
    family="random",
    arg_inputs=(0,),
    traits=OpTrait.NONDETERMINISTIC,
)  # shape source only
register(
    ["RegexFullMatch", "StringConcat", "StringNormalizer", "StringSplit"], zero_cost(STRING_REASON), family="string"
)
register("ImageDecoder", zero_cost(IMAGE_DECODE_REASON), family="image")
