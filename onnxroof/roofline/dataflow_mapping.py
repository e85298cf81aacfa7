"""How the Dataflow Compiler maps a network onto a dataflow chip (roofline/dataflow.py times it): the
chip's ``[dataflow]`` constants, the layers, their split into contexts (filled in order to the
context's limits, or as the compiler's partitioner sizes them for the most frames per second) and
each context's compute units shared out among its layers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .figures import Figure


@dataclass(frozen=True)
class DataflowChip:
    """The ``[dataflow]`` constants of a target."""

    context_bytes: Figure  # parameters one context holds on chip
    units: Figure | None = None  # compute units the compiler allocates layer by layer (None: the bound)
    switch_s: Figure | None = None  # a context load's fixed cost, beyond its parameters over the link
    efficiency: Figure | None = None  # share of a unit's peak a layer reaches (None: 1)
    activation_bytes_per_s: Figure | None = None  # the units' streaming rate of activations, all together
    layers_per_context: Figure | None = None  # layer controllers of a context (None: no such limit)
    norm_layers: Figure | None = None  # layers the compiler makes of a LayerNormalization (None: folded)
    softmax_layers: Figure | None = None  # layers it makes of a Softmax (None: folded)
    stage_s: Figure | None = None  # a layer's fixed time per frame on one unit, added to its work before sharing
    fill_stages: Figure | None = None  # one frame's latency through a context, in slowest stages (None: their sum)
    row_s: Figure | None = None  # the least time a row of the frame takes to stream in (None: no floor)
    # the frames per context load the compiler's partitioner sizes a multi-context split for (None: each
    # context filled in order to its limits)
    partition_batch: Figure | None = None

    @property
    def forecast(self) -> bool:
        """Its figures were fitted on measurements: a forecast, not a bound."""
        return self.units is not None and all(
            f.tag == "measured" for f in (self.units, self.switch_s, self.efficiency) if f is not None
        )


@dataclass(frozen=True)
class Layer:
    """One kernel as the pipeline sees it: its work and the parameters it holds."""

    name: str
    flops: int
    weight_bytes: int
    activation_bytes: int = 0  # what it reads and writes per frame, streamed between the stages on chip
    norms: int = 0  # LayerNormalizations folded into it (each several layers to the compiler)
    softmaxes: int = 0  # Softmaxes folded into it
    rows: int = 0  # the rows of its output (an image's height, a sequence's tokens, 1 for a vector; 0: unknown)


@dataclass
class Context:
    """Consecutive layers whose parameters fit on chip together."""

    layers: list[Layer]
    stage_s: list[float] = field(default_factory=list)  # each layer's time per frame, as allocated
    fill_s_override: float | None = None  # the chip's fill_stages x the slowest stage, where it gives one

    @property
    def weight_bytes(self) -> int:
        return sum(layer.weight_bytes for layer in self.layers)

    @property
    def flops(self) -> int:
        return sum(layer.flops for layer in self.layers)

    @property
    def slowest_s(self) -> float:
        return max(self.stage_s, default=0.0)

    @property
    def fill_s(self) -> float:
        """One frame through every stage: the pipeline's latency (their sum, unless the chip says how
        many slowest stages it is)."""
        return sum(self.stage_s) if self.fill_s_override is None else self.fill_s_override


def controllers(layer: Layer, chip: DataflowChip) -> float:
    """The layer controllers ``layer`` takes: one, plus the layers its folded normalizations and
    softmaxes become."""
    norm = chip.norm_layers.value if chip.norm_layers else 0.0
    softmax = chip.softmax_layers.value if chip.softmax_layers else 0.0
    return 1 + layer.norms * norm + layer.softmaxes * softmax


def split_contexts(
    layers: list[Layer], context_bytes: float, units: int | None = None, chip: DataflowChip | None = None
) -> list[Context]:
    """Consecutive layers, a new context where the next layer's parameters would not fit beside the
    context's (or, with ``units``, where every unit already holds a layer; with the chip's
    ``layers_per_context``, where its layer controllers would not). A layer larger than a context
    alone takes one of its own."""
    limit = chip.layers_per_context.value if chip is not None and chip.layers_per_context else math.inf
    contexts: list[Context] = []
    current: list[Layer] = []
    held, used = 0, 0.0
    for layer in layers:
        needs = controllers(layer, chip) if chip is not None else 1.0
        full = current and (
            held + layer.weight_bytes > context_bytes
            or (units is not None and len(current) >= units)
            or used + needs > limit
        )
        if full:
            contexts.append(Context(current))
            current, held, used = [], 0, 0.0
        current.append(layer)
        held += layer.weight_bytes
        used += needs
    if current:
        contexts.append(Context(current))
    return contexts


def allocate(
    context: Context,
    peak: float,
    units: int | None,
    efficiency: float = 1.0,
    activation_bytes_per_s: float | None = None,
    stage_s: float = 0.0,
) -> None:
    """Each layer's stage time. With ``units``: the compiler gives each layer a share of the compute
    units and, apart, a share of the streaming (memory) units, at least one of each (its compile logs
    count a cluster's compute and memory separately); there are ``units`` of each. On one compute unit
    a layer's work takes ``flops / (peak / units x efficiency) + stage_s``, on one streaming unit its
    activations ``activation_bytes / (activation_bytes_per_s / units)``. Each pool's shares make its
    slowest stage shortest (:func:`_slowest_stage`); the layers' stages are the longer of the two
    pools' (a layer heavy in work and light in activations takes compute units, not both). Without
    units: every layer gets its ideal share of the peak, every stage takes flops / peak."""
    if units is None or not any(layer.flops for layer in context.layers):
        total = context.flops / peak if peak else 0.0
        context.stage_s = [total if layer.flops else 0.0 for layer in context.layers]
        return
    rate = peak / units * efficiency
    stream = activation_bytes_per_s / units if activation_bytes_per_s else None
    work = [layer.flops / rate + stage_s for layer in context.layers]
    moved = [layer.activation_bytes / stream if stream else 0.0 for layer in context.layers]
    slowest = max(_slowest_stage(work, units), _slowest_stage(moved, units))
    # a layer alone on one unit of each takes the longer of the two; with more units, at most the slowest stage
    context.stage_s = [max(min(w, slowest), min(m, slowest)) for w, m in zip(work, moved)]


def _slowest_stage(alone: list[float], units: int) -> float:
    """The shortest slowest stage ``units`` units give layers taking ``alone`` on one unit each, each
    layer at least one unit: the smallest T with sum over layers of max(1, alone / T) <= units (the
    longest alone when there are more layers than units)."""
    busy = [t for t in alone if t > 0]
    if not busy:
        return 0.0
    low, high = max(busy) / units, max(busy)
    for _ in range(60):
        middle = (low + high) / 2
        if sum(max(1.0, t / middle) for t in busy) <= units:
            high = middle
        else:
            low = middle
    return high


def allocated(contexts: list[Context], chip: DataflowChip, peak: float, units: int | None) -> list[Context]:
    """Each context's stages allocated (:func:`allocate`) with the chip's constants, and its fill."""
    efficiency = chip.efficiency.value if chip.efficiency else 1.0
    streaming = chip.activation_bytes_per_s.value if chip.activation_bytes_per_s else None
    fixed = chip.stage_s.value if chip.stage_s else 0.0
    for context in contexts:
        allocate(context, peak, units, efficiency, streaming, fixed)
        if chip.fill_stages:  # a line-buffered pipeline: a frame is through a few slowest stages after it enters
            context.fill_s_override = chip.fill_stages.value * context.slowest_s
    return contexts


def balanced_contexts(layers: list[Layer], count: int, chip: DataflowChip, units: int | None = None) -> list[Context]:
    """``layers`` in ``count`` consecutive contexts of about equal layer controllers (a layer goes to the
    context its controllers' middle falls in); a context beyond the chip's limits (parameters,
    controllers) is split again in order, so there may be more."""
    needs = [controllers(layer, chip) for layer in layers]
    share = sum(needs) / count
    chunks: list[list[Layer]] = [[] for _ in range(count)]
    before = 0.0
    for layer, need in zip(layers, needs):
        chunks[min(count - 1, int((before + need / 2) / share))].append(layer)
        before += need
    return [
        context for chunk in chunks if chunk for context in split_contexts(chunk, chip.context_bytes.value, units, chip)
    ]


def group_of_frames_s(contexts: list[Context], link_bytes_per_s: float, switch_s: float, group: int) -> float:
    """A group of frames through every context: each loaded (its parameters, the switch), filled and run."""
    return sum(c.weight_bytes / link_bytes_per_s + switch_s + c.fill_s + (group - 1) * c.slowest_s for c in contexts)


def partitioned(
    layers: list[Layer], greedy: list[Context], chip: DataflowChip, peak: float, link_bytes_per_s: float, units: int
) -> list[Context]:
    """The compiler's partition of a network that needs several contexts: its partitioner searches the
    number of contexts and their boundaries for the most frames per second (its logs: "Finding the
    best partition to contexts", "Objective -> MAX_FPS", 4 contexts found valid and 7 chosen), so more
    contexts than the fewest that fit, each holding fewer layers and giving each more units, where that
    is faster. Modelled: the contexts filled in order (``greedy``, allocated) and every count from its
    own to twice it split into contexts of equal controllers (:func:`balanced_contexts`), the one whose
    group of ``partition_batch`` frames takes least per frame (the search stops two counts past the best)."""
    assert chip.partition_batch is not None
    group = max(1, round(chip.partition_batch.value))
    switch_s = chip.switch_s.value if chip.switch_s else 0.0
    best, best_s, worse = greedy, group_of_frames_s(greedy, link_bytes_per_s, switch_s, group), 0
    for count in range(len(greedy), 2 * len(greedy) + 1):
        trial = allocated(balanced_contexts(layers, count, chip, units), chip, peak, units)
        trial_s = group_of_frames_s(trial, link_bytes_per_s, switch_s, group)
        if trial_s < best_s:
            best, best_s, worse = trial, trial_s, 0
        else:
            worse += 1
            if worse >= 2:
                break
    return best
