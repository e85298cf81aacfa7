"""The Coral Edge TPU as it runs: its compiler maps the ops of its supported-operations table and
cuts the graph at the first op it cannot map; that op and every op after it run on the host CPU
(coral.ai, "TensorFlow models on the Edge TPU": the compiler partitions the graph once, "all
operations after [the first unsupported one] run on the CPU, even if the Edge TPU supports them").

The target's ``[edge_tpu]`` table (read here, :func:`read_edge_tpu`) names the ``host`` target the
fallen-back part is timed on (its roofline on the host's peak figures and launch cost) and its
``source``. The cut's tensors cross the host link (the target's DRAM figure) once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..core.errors import UsageError
from ..core.units import iec, seconds
from .dataflow import retime_node

# kernels' Kernel and targets' Target: named only, not imported (placement and targets import this
# module); the roofline function (point.roofline) is handed in for the same reason
Kernel: TypeAlias = Any
Target: TypeAlias = Any

# ONNX ops whose TFLite form is in the Edge TPU compiler's supported-operations table (coral.ai
# "TensorFlow models on the Edge TPU", Supported operations): Conv2d, DepthwiseConv2d, TransposeConv,
# FullyConnected, Add, Sub, Mul, Maximum, Minimum, Logistic, Relu, Relu6, ReluN1To1, Tanh, PReLU,
# AveragePool2d, MaxPool2d, Mean, Sum, ReduceMax, ReduceMin, L2Normalization, Concatenation, Pad,
# Reshape, Squeeze, ExpandDims, Pack, Slice, StridedSlice, Split, Transpose, SpaceToDepth,
# ResizeBilinear, ResizeNearestNeighbor, Softmax, Rsqrt, SquaredDifference, Quantize, LSTM. Of the
# table's conditions on shapes, the one every op shares is checked (:func:`outside_three`: "if a
# tensor has more than 3 dimensions, then only the 3 innermost dimensions may have a size greater
# than 1", so a batch above 1 falls back); x/y-only Mean and Pad and a resize the compiler may leave
# on the CPU for precision are not.
MAPPED_OPS = frozenset(
    {
        "Conv",
        "ConvTranspose",
        "Gemm",
        "MatMul",
        "Add",
        "Sub",
        "Mul",
        "Max",
        "Min",
        "Sigmoid",
        "Relu",
        "Clip",
        "Tanh",
        "PRelu",
        "AveragePool",
        "MaxPool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "LpNormalization",
        "Concat",
        "Pad",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Slice",
        "Split",
        "Transpose",
        "SpaceToDepth",
        "Resize",
        "Upsample",
        "Softmax",
        "QuantizeLinear",
        "DequantizeLinear",
        "LSTM",
        "BatchNormalization",
        "Identity",
        "Dropout",
        "Constant",
        "Shape",
    }
)


@dataclass(frozen=True)
class EdgeTpuHost:
    """``[edge_tpu]``: the target the ops after the cut run on."""

    host: str
    source: str
    # ops mapped beyond the table: a what-if (the findings' "replace it by an op the compiler maps")
    mapped_too: frozenset[str] = frozenset()

    @property
    def mapped(self) -> frozenset[str]:
        return MAPPED_OPS | self.mapped_too


@dataclass
class EdgeTpuCut:
    """Where the compiler cut the graph and what the host ran."""

    first_unmapped: str  # the node the graph is cut at
    unmapped_ops: list[str]  # op types past the cut the table does not map, in order of first appearance
    host_kernels: int
    host_s: float  # the host's time for them
    transfer_s: float  # the cut's tensors over the host link
    host: str = ""  # the host target's name
    kernels: int = 0  # every kernel of the run: the Edge TPU runs kernels - host_kernels
    cut_bytes: int = 0  # the cut's tensors, crossing the host link once
    # why the node at the cut is not mapped when its op is in the table: its tensor's shape ("" : its op is not)
    shape_reason: str = ""
    host_at_peaks: bool = True  # the host target gives a bound (its peak figures), so the run's time is one too
    host_launch_s: float = 0.0  # the host's launch cost, summed over its kernels (in host_s)

    def words(self) -> str:
        """Which ops fall back to the CPU and where the graph is cut: every output's line."""
        ops = ", ".join(self.unmapped_ops)
        falls = "falls" if len(self.unmapped_ops) == 1 else "fall"
        if self.shape_reason:
            ops, falls = f"{self.unmapped_ops[0]} ({self.shape_reason})", "falls"
        mapped = self.kernels - self.host_kernels
        if not mapped:  # cut at the first kernel: nothing runs on the Edge TPU
            return (
                f"{ops} {falls} back to the CPU at the graph's first kernel, {self.first_unmapped}: the whole graph "
                f"runs on {self.host} ({seconds(self.host_s)})"
            )
        return (
            f"{ops} {falls} back to the CPU: the Edge TPU compiler cuts the graph in two at {self.first_unmapped} "
            f"(kernel {mapped + 1} of {self.kernels}); the Edge TPU runs the {mapped} kernel{'s' * (mapped != 1)} "
            f"before it, {self.host} the {self.host_kernels} from it on ({seconds(self.host_s)}), and the cut's "
            f"{iec(self.cut_bytes)} cross the host link ({seconds(self.transfer_s)})"
        )


def read_edge_tpu(data: dict, where: str) -> EdgeTpuHost | None:
    section = data.get("edge_tpu")
    if section is None:
        return None
    host, source = section.get("host") if isinstance(section, dict) else None, (section or {}).get("source")
    if not isinstance(host, str) or not host.strip() or not isinstance(source, str) or not source.strip():
        raise UsageError(f"{where}: '[edge_tpu]' needs 'host' (a target's name) and 'source'")
    return EdgeTpuHost(host, source)


def outside_three(member: Any) -> list | None:
    """The first output of ``member`` with a dimension above 1 outside its 3 innermost (the Edge
    TPU's tensors may have no such dimension), or None.

    >>> from types import SimpleNamespace as S
    >>> outside_three(S(output_shapes=[[1, 16, 320, 320]])), outside_three(S(output_shapes=[[8, 16, 32, 32]]))
    (None, [8, 16, 32, 32])
    """
    for shape in member.output_shapes:
        if shape and any(isinstance(d, int) and d > 1 for d in shape[:-3]):
            return shape
    return None


def unmapped(member: Any, mapped: frozenset[str] = MAPPED_OPS) -> bool:
    """Whether the compiler leaves ``member`` on the CPU: its op is not in the table, or one of its
    tensors has a dimension above 1 outside the 3 innermost."""
    return not member.shape_only and (member.op_type not in mapped or outside_three(member) is not None)


def cut_at(kernels: list[Kernel], mapped: frozenset[str] = MAPPED_OPS) -> int | None:
    """The position of the first kernel running an op the compiler does not map (None: all mapped)."""
    for position, kernel in enumerate(kernels):
        if any(unmapped(member, mapped) for member in kernel.records):
            return position
    return None


def host_point(kernel: Kernel, host: Target, roofline: Callable[..., Any]) -> Any:
    """One kernel on the host CPU: its roofline on the host's peak figures for its type, plus the
    host's launch cost per kernel (a point.Placement: its time, roofs, launch and bound are the host's)."""
    anchor = next((m for m in kernel.records if m.macs), kernel.records[0])
    roof, peak = host.roof(anchor.dtype)
    launch = host.node_overhead_s.value if host.node_overhead_s else 0.0
    return roofline(kernel.flops, kernel.memory_bytes, peak, host.dram_bytes_per_s.value, roof=roof, overhead_s=launch)


def _cut_bytes(kernels: list[Kernel], start: int, tensors: dict) -> int:
    """The bytes of the tensors the mapped part makes and the host's part reads."""
    made = {name for kernel in kernels[:start] for member in kernel.records for name in member.outputs}
    crossing = {
        name for kernel in kernels[start:] for member in kernel.records for name in member.inputs if name in made
    }
    return sum(tensors[name].bytes or 0 for name in crossing if name in tensors)


def run_cut(
    target: Target,
    nodes: list[Any],
    kernels: list[Kernel],
    start: int,
    tensors: dict,
    host: Target,
    roofline: Callable[..., Any],
) -> EdgeTpuCut:
    """Place the kernels from the cut (``start``: :func:`cut_at`; fused as ``host`` fuses) on the
    host (the one hook in placement.place_model for an Edge TPU), before the run is summed up: each of
    their ``nodes`` (placement's NodePlacement, one per kernel) gets the host's placement, so its
    time, launch cost and bound are the host's in every figure built from them. The tensors
    entering the cut from the mapped part cross the link once (``EdgeTpuCut.transfer_s``, for the
    latency). Which ops fell back and where the graph is cut: the returned cut, whose words every
    output prints."""
    mapped = target.edge_tpu.mapped
    tail = kernels[start:]
    cut_bytes = _cut_bytes(kernels, start, tensors)
    transfer_s = cut_bytes / target.dram_bytes_per_s.value
    host_total = host_launch = 0.0
    by_name = {node.name: node for node in nodes}
    for kernel in tail:
        point = host_point(kernel, host, roofline)
        host_total += point.time_s
        host_launch += point.overhead_s
        node = by_name.get(kernel.name)
        if node is not None:
            retime_node(node, point.time_s, point)
    fallen = [member for kernel in tail for member in kernel.records if unmapped(member, mapped)]
    first = fallen[0].name
    ops = list(dict.fromkeys(member.op_type for member in fallen))
    shape = outside_three(fallen[0]) if fallen[0].op_type in mapped else None
    reason = (
        f"its output {'x'.join(map(str, shape))} has a dimension above 1 outside the 3 innermost"
        if shape is not None
        else ""
    )
    return EdgeTpuCut(
        first,
        ops,
        len(tail),
        host_total,
        transfer_s,
        host.name,
        len(kernels),
        cut_bytes,
        reason,
        host.latency_kind == "bound",  # targets.LatencyKind.BOUND (a text enum: targets imports this module)
        host_launch,
    )
