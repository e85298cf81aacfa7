"""A dataflow chip (Hailo-8, Hailo-8L): the compiler maps each layer onto some of the chip's compute
units and streams frames through the layers as a pipeline. Throughput is set by the slowest stage,
latency by the sum of the stages; a network whose parameters do not fit on chip is split into
contexts, loaded one after another over the host link, each running a group of frames (HailoRT's
batch) before the next is loaded.

The target's ``[dataflow]`` table (read here, :func:`read_dataflow`) gives the chip's constants:
``units`` (the compute units the compiler allocates, each layer at least one; each runs
peak / units; as many streaming units, each ``activation_bytes_per_s`` / units, given out apart:
dataflow_mapping.allocate), ``context_bytes`` (the parameters one context holds), ``switch_s`` (what
loading a context costs beyond its parameters' transfer), ``efficiency`` (the share of a unit's peak a
layer reaches). Without ``units`` every layer runs at the ideal share of the peak: the figures are bounds
(compute at the peak, parameters and frames over the link, whichever is longer).

The compiler's other resource is control: each layer takes a layer controller, of which a context has
``layers_per_context``; it builds a LayerNormalization and a Softmax of several layers
(``norm_layers``, ``softmax_layers``), so a transformer whose parameters fit one context may still
need several. ``stage_s`` is a layer's fixed time per frame on one unit (shared, as its work, by
the units it gets), ``fill_stages`` one frame's latency through a context in slowest stages (a
line-buffered pipeline: not the sum of the stages); a frame's latency adds each layer's last output row:
a layer of R output rows whose stage takes t a frame takes t / R a row, and the frame's last row leaves
a layer only after the last row of the layer before it, so the tail adds sum(t / R) over the layers (a
7-row layer late in a CNN adds a seventh of its stage, a classifier of one row its whole stage). The
frame rate of a network in several contexts leaves that tail out: fitted with it in each context's
fill, the zoo's rows are predicted worse (docs/validation-published.md, the Hailo-8 fit). ``row_s`` is the
least time a row of the frame takes to stream in: a frame crosses the host link row by row, so its
transfer takes the longer of its bytes at the link's rate and its input rows x ``row_s``; the transfer
overlaps the stages, so a frame takes at least that, however light its layers. ``partition_batch``: the
compiler's partitioner splits a network that needs several contexts for the most frames per second at
groups of that many frames, not filling each context in order (roofline/dataflow_mapping.py, where the
layers, contexts and the units' allocation live)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from ..core.units import iec, rate, seconds
from .dataflow_mapping import (
    Context,
    DataflowChip,
    Layer,
    allocated,
    controllers,
    group_of_frames_s,
    partitioned,
    split_contexts,
)
from .figures import read_figure, read_fraction, read_section

__all__ = ["Context", "DataflowChip", "Layer", "controllers", "split_contexts"]  # the mapping's, read from here too

# placement's TargetReport, kernels' Kernel and targets' Target: named only, not imported (placement
# and targets import this module)
TargetReport: TypeAlias = Any
Kernel: TypeAlias = Any
Target: TypeAlias = Any


@dataclass
class DataflowTiming:
    """A model on a dataflow chip: frames per second and one frame's latency, separately."""

    contexts: list[Context]
    frames_per_s: float
    latency_s: float
    group: int  # frames run per context load (HailoRT's batch)
    limiting: str  # the slowest stage's layer, or "host link" / "context switches" / "compute at the peak"
    limiting_share: float  # the limiting stage's share of the time per frame
    bound: bool  # peak figures: both are bounds
    # the layer with the most work, and its share of the chip's work per frame (what shrinking it frees)
    heaviest: str = ""
    heaviest_share: float = 0.0
    # what it was timed from, so that a what-if re-times it (:func:`retimed`)
    chip: DataflowChip | None = None
    io_bytes: int = 0  # a frame's inputs and outputs over the host link
    peak_flops_per_s: float = 0.0
    link_bytes_per_s: float = 0.0
    rows: int = 0  # the frame's input rows (0: not an image)

    @property
    def layers(self) -> list[Layer]:
        return [layer for context in self.contexts for layer in context.layers]

    @property
    def stage_limited(self) -> bool:
        """The frame rate is set by one layer's stage (not the link, the contexts or the peak)."""
        return self.limiting not in NOT_A_STAGE

    def work_share(self, name: str) -> float:
        """The named layer's share of a frame's work (its FLOPs over every layer's)."""
        total = sum(layer.flops for layer in self.layers)
        return sum(layer.flops for layer in self.layers if layer.name == name) / total if total else 0.0

    def stage_of(self, name: str) -> float:
        """The named layer's stage time per frame (0: no such layer)."""
        for context in self.contexts:
            for layer, stage_s in zip(context.layers, context.stage_s):
                if layer.name == name:
                    return stage_s
        return 0.0

    def limit_words(self) -> str:
        """What sets the frame rate, in words."""
        if self.limiting == "host link":
            reloads = sum(c.weight_bytes for c in self.contexts) if len(self.contexts) > 1 else 0
            per = "every frame" if self.group == 1 else f"every {self.group} frames"
            return f"the host link (each frame's {iec(self.io_bytes)} in and out" + (
                f", and the contexts' {iec(reloads)} of parameters {per})" if reloads else ")"
            )
        if self.limiting == "context switches":
            return f"loading the {len(self.contexts)} contexts' parameters over the host link"
        if self.limiting == "input rows":
            row_s = self.chip.row_s.value if self.chip is not None and self.chip.row_s else 0.0
            return f"the frame's {self.rows} input rows streaming in (at least {seconds(row_s)} a row)"
        if self.limiting == "compute at the peak":
            return f"compute at the peak; the heaviest stage {self.heaviest} ({self.heaviest_share:.0%} of the work)"
        return f"the slowest stage, {self.limiting} ({self.work_share(self.limiting):.0%} of the work)"

    def words(self, band: float | None = None, bound: bool = False) -> str:
        """Frames per second and one frame's latency, each as the bound or the forecast it is (``band``:
        the forecast's measured error; ``bound``: the run's latency is a bound whatever the chip's
        figures, as nodes were left out: ``TargetReport.latency_kind``), the contexts and what sets the
        frame rate: every output's line."""
        if self.bound or bound:
            fps, latency = f"≤ {rate(self.frames_per_s)} frames/s", f"latency ≥ {seconds(self.latency_s)} a frame"
        elif self.chip is not None and not self.chip.forecast:  # units given, not fitted on measurements
            fps = f"≈ {rate(self.frames_per_s)} frames/s"
            latency = f"latency ≈ {seconds(self.latency_s)} a frame (estimates: the chip's constants are not measured)"
        else:
            error = f" ±{band:.0%}" if band else ""
            fps = f"{rate(self.frames_per_s, band)} frames/s{error}"
            latency = f"latency {seconds(self.latency_s)}{error} a frame"
        count = len(self.contexts)
        contexts = f"{count} context{'s' * (count > 1)}" + (
            f", {self.group} frame{'s' * (self.group > 1)} per load" if count > 1 else ""
        )
        return f"{fps} · {latency} · {contexts} · throughput set by {self.limit_words()}"


# what sets a frame rate when no single stage does
NOT_A_STAGE = frozenset({"host link", "context switches", "compute at the peak", "input rows"})


def read_dataflow(data: dict, where: str) -> DataflowChip | None:
    """The target's ``[dataflow]`` table, or None (not a dataflow chip)."""
    if "dataflow" not in data:
        return None
    table = read_section(data, "dataflow", where)
    context_bytes = read_figure(table, "context_bytes", "dataflow.context_bytes", where)
    assert context_bytes is not None  # (required)
    return DataflowChip(
        context_bytes=context_bytes,
        units=read_figure(table, "units", "dataflow.units", where, required=False),
        switch_s=read_figure(table, "switch_s", "dataflow.switch_s", where, required=False),
        efficiency=read_fraction(table, "efficiency", "dataflow.efficiency", where) if "efficiency" in table else None,
        activation_bytes_per_s=read_figure(
            table, "activation_bytes_per_s", "dataflow.activation_bytes_per_s", where, required=False
        ),
        **{
            name: read_figure(table, name, f"dataflow.{name}", where, required=False)
            for name in (
                "layers_per_context",
                "norm_layers",
                "softmax_layers",
                "stage_s",
                "fill_stages",
                "row_s",
                "partition_batch",
            )
        },
    )


def time_dataflow(
    layers: list[Layer],
    io_bytes: int,
    chip: DataflowChip,
    peak: float,
    link_bytes_per_s: float,
    group: int = 1,
    rows: int = 0,
) -> DataflowTiming:
    """Frames per second and one frame's latency of ``layers`` (in order) on the chip, ``group``
    frames per context load, the frames' inputs and outputs (``io_bytes`` each) over the host link,
    each frame ``rows`` rows high (the chip's ``row_s`` floors the first context: 0, no floor).

    One context: its parameters stay on chip; a frame per slowest stage (or per link transfer, if
    longer); the latency is the sum of the stages plus the frame's transfer. Several: each context
    is loaded (its parameters over the link, plus the switch cost) and runs the group:
    fill + (group - 1) x its slowest stage; the frames per second are the group over the sum.
    Without ``units`` (peak figures) a bound: compute at the peak and the link's bytes, whichever is longer."""
    units = int(chip.units.value) if chip.units else None
    timing = _timed(layers, io_bytes, chip, peak, link_bytes_per_s, group, units, rows)
    timing.heaviest, timing.heaviest_share = _heaviest(timing)
    timing.chip, timing.io_bytes, timing.peak_flops_per_s, timing.link_bytes_per_s, timing.rows = (
        chip,
        io_bytes,
        peak,
        link_bytes_per_s,
        rows,
    )
    return timing


def retimed(timing: DataflowTiming, name: str, factor: float) -> DataflowTiming:
    """The same pipeline with the layer ``name``'s work (its FLOPs and the activations it streams)
    times ``factor``: what shrinking it (fewer channels, a stride) or splitting it gives."""
    assert timing.chip is not None
    layers = [
        replace(layer, flops=round(layer.flops * factor), activation_bytes=round(layer.activation_bytes * factor))
        if layer.name == name
        else layer
        for layer in timing.layers
    ]
    return time_dataflow(
        layers,
        timing.io_bytes,
        timing.chip,
        timing.peak_flops_per_s,
        timing.link_bytes_per_s,
        timing.group,
        timing.rows,
    )


def _heaviest(timing: DataflowTiming) -> tuple[str, float]:
    """The layer with the most work and its share of the work of a frame, over every context."""
    layers = timing.layers
    if not layers or not any(layer.flops for layer in layers):
        return "", 0.0
    top = max(layers, key=lambda layer: layer.flops)
    return top.name, timing.work_share(top.name)


def _timed(
    layers: list[Layer],
    io_bytes: int,
    chip: DataflowChip,
    peak: float,
    link_bytes_per_s: float,
    group: int,
    units: int | None,
    rows: int = 0,
) -> DataflowTiming:
    contexts = split_contexts(layers, chip.context_bytes.value, units, chip)
    allocated(contexts, chip, peak, units)
    if units is not None and chip.partition_batch and len(contexts) > 1:
        contexts = partitioned(layers, contexts, chip, peak, link_bytes_per_s, units)
    io_s = io_bytes / link_bytes_per_s
    rows_s = rows * chip.row_s.value if chip.row_s else 0.0  # the frame streams in row by row
    if units is None:
        return _bound(contexts, io_s, link_bytes_per_s, group, rows_s)
    stream_s = max(io_s, rows_s)
    switch_s = chip.switch_s.value if chip.switch_s else 0.0
    # a line-buffered pipeline's frame leaves each layer a row at a time: the last rows' tail
    tail_s = sum(_last_rows_s(c) for c in contexts) if chip.fill_stages else 0.0
    if len(contexts) == 1:
        (context,) = contexts
        per_frame = max(context.slowest_s, stream_s)
        latency = context.fill_s + tail_s + stream_s
    else:
        group_s = group_of_frames_s(contexts, link_bytes_per_s, switch_s, group)
        per_frame = max(group_s / group, stream_s)
        # one frame: every context loaded, filled and run once (a group of one)
        latency = group_of_frames_s(contexts, link_bytes_per_s, switch_s, 1) + tail_s + stream_s
    limiting, share = _limiting(contexts, stream_s, per_frame)
    if limiting == "host link" and rows_s > io_s:
        limiting = "input rows"
    return DataflowTiming(contexts, 1 / per_frame if per_frame else 0.0, latency, group, limiting, share, False)


def _last_rows_s(context: Context) -> float:
    """The tail of a frame's latency through a line-buffered context: each layer's time for its last
    output row (its stage over its rows) after the layer before it gives its own last row."""
    return sum(stage_s / layer.rows for layer, stage_s in zip(context.layers, context.stage_s) if layer.rows)


def _bound(
    contexts: list[Context], io_s: float, link_bytes_per_s: float, group: int, rows_s: float = 0.0
) -> DataflowTiming:
    """Peak figures: a frame takes at least its work at the peak, at least its share of what crosses
    the link (its inputs and outputs; with several contexts, every context's parameters once per
    group), and at least its rows' time to stream in (``rows_s``: the chip's ``row_s``, where the
    target gives one, x the frame's rows); these may overlap, so the longest of them."""
    compute_s = sum(c.slowest_s for c in contexts)  # each context's flops / peak
    reload_s = sum(c.weight_bytes for c in contexts) / link_bytes_per_s / group if len(contexts) > 1 else 0.0
    per_frame = max(compute_s, io_s + reload_s, rows_s)
    limiting = (
        "input rows"
        if rows_s > max(compute_s, io_s + reload_s)
        else "compute at the peak"
        if compute_s >= io_s + reload_s
        else "host link"
    )
    # a frame passes through every context, each loaded before it runs: all their parameters
    # cross the link in its latency, whatever the group
    loads_s = reload_s * group
    latency = max(compute_s, io_s + loads_s, rows_s)
    return DataflowTiming(contexts, 1 / per_frame if per_frame else 0.0, latency, group, limiting, 1.0, True)


def _limiting(contexts: list[Context], io_s: float, per_frame: float) -> tuple[str, float]:
    """What sets the frame rate: the host link, or the slowest stage (its share of a frame's time)."""
    if io_s >= per_frame:
        return "host link", 1.0
    if len(contexts) > 1:
        return "context switches", 1.0
    context = contexts[0]
    # several stages may tie at the slowest (every layer that holds more than one unit): the one
    # with the most work, whose shrinking frees the most units
    slowest = context.slowest_s
    index = max(
        range(len(context.stage_s)), key=lambda i: (context.stage_s[i] >= slowest * (1 - 1e-9), context.layers[i].flops)
    )
    return context.layers[index].name, context.stage_s[index] / per_frame


# the bytes an element crosses the host link in when the model is re-costed in that type (the chip
# takes 8-bit frames: HailoRT's default input format is uint8)
_LINK_WIDTH = {"int8": 1, "fp16": 2, "bf16": 2}


def frame_io_bytes(tensors: dict, names: set[str], dtype: str) -> int:
    """The model's inputs and outputs (``names``) as they cross the host link: in the re-costed type's
    width where the model is re-costed (``dtype``), else as stored."""
    width = _LINK_WIDTH.get(dtype)
    total = 0
    for name in names:
        tensor = tensors.get(name)
        if tensor is None:  # an input no node reads (a control-flow body's)
            continue
        shape = tensor.shape
        static = bool(shape) and all(isinstance(d, int) for d in shape)
        total += math.prod(shape) * width if width and static else tensor.bytes or 0
    return total


def frame_rows(tensors: dict, names: set[str]) -> int:
    """The rows of a frame as it enters the chip: the height of the model's image inputs (rank 4,
    NCHW as ONNX lays images out), the tallest; 0 where no input is an image (tokens, vectors)."""
    heights = [
        tensor.shape[2]
        for tensor in (tensors.get(name) for name in names)
        if tensor is not None
        and tensor.kind == "input"
        and tensor.shape is not None
        and len(tensor.shape) == 4
        and isinstance(tensor.shape[2], int)
    ]
    return max(heights, default=0)


def _output_rows(kernel: Kernel) -> int:
    """The rows a kernel's first output streams in: an image's height (NCHW), a sequence's tokens
    (batch, tokens, features), 1 for a vector (batch, features); 0 where its shape is not known."""
    shapes = [shape for record in kernel.records for shape in record.output_shapes if shape]
    if not shapes or not all(isinstance(d, int) for d in shapes[-1]):
        return 0
    shape = shapes[-1]
    return shape[2] if len(shape) == 4 else shape[1] if len(shape) == 3 else 1 if len(shape) == 2 else 0


def pipeline_layers(kernels: list[Kernel], batch: int) -> list[Layer]:
    """The kernels as the compiler's layers, per frame: a kernel with multiply-adds (a convolution, a
    matmul) is a layer; the elementwise and reshaping kernels after it run in its units (the compiler
    folds batch norms, activations and additions into the layer before them), so their work and
    parameters join it."""
    layers: list[Layer] = []
    for kernel in kernels:
        flops, weights = kernel.flops // batch, kernel.weight_bytes
        moved = (kernel.input_bytes + kernel.output_bytes) // batch
        products = any(member.macs and not member.view for member in kernel.records)
        norms = sum(member.op_type == "LayerNormalization" for member in kernel.records)
        softmaxes = sum(member.op_type == "Softmax" for member in kernel.records)
        if layers and not products:  # folded into the layer before: its work, not another pass over the data
            last = layers[-1]
            layers[-1] = Layer(
                last.name,
                last.flops + flops,
                last.weight_bytes + weights,
                last.activation_bytes,
                last.norms + norms,
                last.softmaxes + softmaxes,
                last.rows,
            )
        elif flops or weights:
            layers.append(Layer(kernel.name, flops, weights, moved, norms, softmaxes, _output_rows(kernel)))
    return layers


def pipeline_timing(report: TargetReport, kernels: list[Kernel], tensors: dict, io_names: set[str]) -> None:
    """Re-time a placed model on its dataflow target (the one hook in placement.place_model): the
    kernels as pipeline layers, ``report.batch`` frames per context load; the report's throughput
    becomes the pipeline's frames per second (no longer batch / latency), its latency the batch's
    last frame out (the first frame's latency + the rest at the frame rate)."""
    target, batch = report.target, max(report.batch, 1)
    chip = target.dataflow
    assert chip is not None
    layers = pipeline_layers(kernels, batch)
    io_bytes = frame_io_bytes(tensors, io_names, report.dtype)
    peak = report.model_point.peak_flops_per_s
    rows = frame_rows(tensors, io_names)
    timing = time_dataflow(layers, io_bytes // batch, chip, peak, target.dram_bytes_per_s.value, batch, rows)
    report.dataflow = timing
    if not timing.frames_per_s:
        return
    _kernel_times(report, kernels, timing)
    report.notes.append(
        "a layer pipeline: each kernel is timed as its stage runs it, the stages at once; the host link's bytes "
        "(frames in and out, context loads) are the pipeline's, and the on-chip bandwidth is shared by the stages, "
        "so a kernel may sit above the DRAM and on-chip roofs"
    )
    report.throughput_per_s = timing.frames_per_s
    report.latency_s = timing.latency_s + (batch - 1) / timing.frames_per_s
    total = sum(layer.flops for layer in layers) * batch
    report.utilization = total / (report.latency_s * peak) if report.latency_s and peak else 0.0


def layer_times(timing: DataflowTiming) -> dict[str, float]:
    """Each layer's part of one frame's latency: its stage (with units), or its work at the peak
    (peak figures: the stages' times are the context's whole work, each). A line-buffered pipeline
    (the chip's ``fill_stages``) has a frame through its stages in less than their sum: each stage's
    part is then its share of the latency, so that the parts add up to it, not to several frames'."""
    if timing.bound and timing.peak_flops_per_s:
        return {layer.name: layer.flops / timing.peak_flops_per_s for layer in timing.layers}
    stages = {
        layer.name: stage_s for context in timing.contexts for layer, stage_s in zip(context.layers, context.stage_s)
    }
    total = sum(stages.values())
    scale = min(1.0, timing.latency_s / total) if total else 1.0
    return {name: stage_s * scale for name, stage_s in stages.items()}


def _kernel_times(report: TargetReport, kernels: list[Kernel], timing: DataflowTiming) -> None:
    """The kernels' placements timed as the pipeline runs them: each layer's part of a frame's
    latency (:func:`layer_times`, x the batch) split over the kernels folded into it by their FLOPs
    (the layer's head takes it all when they do none), so that every output's per-kernel times and
    shares are the pipeline's, not the roofline's of kernels the chip does not run one by one."""
    times, batch = layer_times(timing), max(report.batch, 1)
    layer_of: dict[str, str] = {}  # kernel -> the layer it runs in (pipeline_layers' folding)
    head = ""
    for kernel in kernels:
        if any(member.macs and not member.view for member in kernel.records) or not head:
            head = kernel.name if (kernel.flops or kernel.weight_bytes) else head
        if head:
            layer_of[kernel.name] = head
    flops_of: dict[str, int] = {}
    for kernel in kernels:
        if kernel.name in layer_of:
            flops_of[layer_of[kernel.name]] = flops_of.get(layer_of[kernel.name], 0) + kernel.flops
    for node in report.nodes:
        layer = layer_of.get(node.name)
        total = flops_of.get(layer, 0) if layer else 0
        share = node.placement.flops / total if total else float(node.name == layer)
        seconds_now = times.get(layer, 0.0) * batch * share if layer else 0.0
        retime_node(node, seconds_now)


def retime_node(node: Any, time_s: float, placement: Any = None) -> None:
    """A placed kernel (placement's NodePlacement) given another time by a chip's own execution model
    (a pipeline's stage; the Edge TPU's host, which gives its whole ``placement``): its placement's
    time and each of its nodes' share of it (placement.node_times reads them), scaled alike."""
    before = node.placement.time_s
    node.placement = placement if placement is not None else replace(node.placement, time_s=time_s)
    node.node_time_s = (
        {name: share * time_s / before for name, share in node.node_time_s.items()} if before else {node.name: time_s}
    )
