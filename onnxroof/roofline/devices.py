"""The per-device picture on N devices: for each (tensor, pipeline) split of at most N devices,
the memory each device holds against its capacity, the time of one step on its roofline plus the
collectives, and the fewest devices on which the model fits.

**Tensor parallelism (TP = t).** The blocks of :mod:`onnxroof.cost.tensor_parallel` divide over t devices: each
split kernel's FLOPs are divided by its ways (its nodes' :meth:`Structure.split_ways`) and its bytes
by its bytes' ways (:meth:`Structure.byte_ways`: the KV heads a device holds, for the attention),
and placed again on the target's roofs, with the same efficiency and parallel fraction it had
whole (a split GEMM has fewer tiles, so its fill can only fall: the time is a bound). Each block
ends with a ring all-reduce of its row-parallel projection's output over the link class that
links t devices (:meth:`Link.all_reduce_s`). A kernel whose nodes do not split is replicated.

**Pipeline parallelism (PP = p).** The kernels, in the model's order, are cut into p stages of
balanced time; at each cut, the activations made before it and read after it are sent to the
next stage (:meth:`Link.send_s`). One step's latency is every stage's time plus the sends; with
m micro-batches in flight a stage runs one every period (its slowest stage and send), and the
pipeline idles for a fraction ``(p - 1) / (m + p - 1)`` of the time (the bubble).

**Memory per device.** Its stage's parameters, each divided over the ways of the nodes that read
it when all of them split (else whole), its share of the KV cache (its stage's attention blocks'
share, divided over ``min(t, kv heads)``: when t exceeds the KV heads each device holds one
head's cache, replicated), and the model's peak activations other than the KV cache, whole (an
upper bound: the split blocks' activations are smaller).

>>> bubble_fraction(2, 1), bubble_fraction(2, 8)
(0.5, 0.1111111111111111)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.units import iec, seconds
from .verdicts import BOUND_LABELS, capacity_text

if TYPE_CHECKING:  # (the renderers import this module's words: `onnxroof targets` loads no numpy)
    from ..cost.kv_report import LLMReport
    from ..cost.records import CostGraph
    from ..cost.tensor_parallel import Structure
    from .interconnect import Link
    from .placement import NodePlacement, TargetReport


def bubble_fraction(stages: int, micro_batches: int) -> float:
    """The share of a pipeline's time its stages idle: (p - 1) / (m + p - 1)."""
    return (stages - 1) / (micro_batches + stages - 1)


def ways_to_split(devices: int) -> list[int]:
    """1, 2, 4, ... up to ``devices``, and ``devices`` itself."""
    ways, n = [], 1
    while n <= devices:
        ways.append(n)
        n *= 2
    return ways if ways[-1] == devices else [*ways, devices]


@dataclass(frozen=True)
class AllReduce:
    """One block's all-reduce at a tensor-parallel degree."""

    after: str  # the row-parallel projection
    message_bytes: int  # its output: what is summed
    sent_bytes: float  # what each device sends (and receives): 2 (t - 1) / t of the message
    time_s: float


@dataclass(frozen=True)
class Choice:
    """One (TP, PP) split: per device, its memory and one step's time."""

    tensor: int
    pipeline: int
    weight_bytes: int  # the largest stage's parameters, per device
    kv_cache_bytes: int
    activation_bytes: int  # the peak activations other than the KV cache, whole (an upper bound)
    capacity_bytes: int | None
    compute_s: float  # the kernels' time on the roofline, all stages
    collective_s: float  # the all-reduces, all stages
    transfer_s: float  # the sends between stages
    latency_s: float  # one step: compute + collectives + transfers
    period_s: float  # the slowest stage and its send: one micro-batch per period in steady state
    micro_batches: int
    per_step: int  # tokens (a decoder) or inferences one step makes
    all_reduces: tuple[AllReduce, ...] = ()
    stage_cuts: tuple[str, ...] = ()  # the first kernel of each stage after the first
    # where one step's time goes: each kernel's bound (compute, dram, overhead...), "all-reduce" and "sends"
    seconds_by_bound: dict[str, float] = field(default_factory=dict)

    @property
    def devices(self) -> int:
        return self.tensor * self.pipeline

    @property
    def need_bytes(self) -> int:
        return self.weight_bytes + self.kv_cache_bytes + self.activation_bytes

    @property
    def fits(self) -> bool | None:
        return None if self.capacity_bytes is None else self.need_bytes <= self.capacity_bytes

    @property
    def bubble(self) -> float:
        return bubble_fraction(self.pipeline, self.micro_batches)

    @property
    def per_s(self) -> float:
        """Tokens (or inferences) per second with the micro-batches in flight."""
        busy_s = (self.micro_batches + self.pipeline - 1) * self.period_s
        return self.micro_batches * self.per_step / busy_s if busy_s else 0.0

    @property
    def collective_share(self) -> float:
        return self.collective_s / self.latency_s if self.latency_s else 0.0

    def to_dict(self) -> dict:
        return {
            "tensor": self.tensor,
            "pipeline": self.pipeline,
            "devices": self.devices,
            "weight_bytes": self.weight_bytes,
            "kv_cache_bytes": self.kv_cache_bytes,
            "activation_bytes": self.activation_bytes,
            "need_bytes": self.need_bytes,
            "capacity_bytes": self.capacity_bytes,
            "fits": self.fits,
            "compute_s": self.compute_s,
            "collective_s": self.collective_s,
            "transfer_s": self.transfer_s,
            "latency_s": self.latency_s,
            "period_s": self.period_s,
            "micro_batches": self.micro_batches,
            "bubble": self.bubble,
            "per_s": self.per_s,
            "collective_share": self.collective_share,
            "all_reduces": len(self.all_reduces),
            "all_reduce_message_bytes": sum(a.message_bytes for a in self.all_reduces),
            "stage_cuts": list(self.stage_cuts),
            "seconds_by_bound": self.seconds_by_bound,
        }

    @property
    def time_share(self) -> dict[str, float]:
        """Each bound's share of the step (the all-reduces and the sends as their own)."""
        return {k: v / self.latency_s for k, v in self.seconds_by_bound.items()} if self.latency_s else {}


@dataclass(frozen=True)
class DevicePlan:
    """A model on up to ``devices`` devices of one target."""

    target: str
    devices: int
    link: str | None  # the link class used for the most devices offered
    latency_kind: str  # "bound" or "forecast": the target's, for the kernels; the links' figures are peaks
    per_step_unit: str  # "tokens" or "inferences"
    attention_blocks: int
    mlp_blocks: int
    replicated_nodes: int
    choices: tuple[Choice, ...]
    notes: tuple[str, ...] = ()
    refused: dict[int, str] = field(default_factory=dict)  # TP degree -> why it is not offered

    @property
    def recognised(self) -> bool:
        return bool(self.attention_blocks or self.mlp_blocks)

    @property
    def fewest(self) -> Choice | None:
        """The split on the fewest devices that fits (the faster of a tie); None if none fits."""
        fitting = [c for c in self.choices if c.fits]
        return min(fitting, key=lambda c: (c.devices, c.latency_s)) if fitting else None

    @property
    def fastest(self) -> Choice | None:
        fitting = [c for c in self.choices if c.fits is not False]
        return min(fitting, key=lambda c: c.latency_s) if fitting else None

    def choice(self, tensor: int, pipeline: int = 1) -> Choice | None:
        return next((c for c in self.choices if (c.tensor, c.pipeline) == (tensor, pipeline)), None)

    def to_dict(self) -> dict:
        fewest = self.fewest
        return {
            "target": self.target,
            "devices": self.devices,
            "link": self.link,
            "latency_kind": self.latency_kind,
            "per_step_unit": self.per_step_unit,
            "recognised": self.recognised,
            "attention_blocks": self.attention_blocks,
            "mlp_blocks": self.mlp_blocks,
            "replicated_nodes": self.replicated_nodes,
            "fewest_devices": None
            if fewest is None
            else {"tensor": fewest.tensor, "pipeline": fewest.pipeline, "devices": fewest.devices},
            "choices": [c.to_dict() for c in self.choices],
            "refused": {str(k): v for k, v in self.refused.items()},
            "notes": list(self.notes),
            "summary": plan_sentences(self),
        }


def split_name(choice: Choice) -> str:
    return f"TP={choice.tensor}, PP={choice.pipeline}"


def plan_sentences(plan: DevicePlan) -> list[str]:
    """The answer in words, the same in every output: the fewest devices that fit, the fastest
    split that fits, and what the all-reduces cost at the widest tensor split.

    >>> c = Choice(1, 1, 10, 0, 0, 100, 1e-3, 0.0, 0.0, 1e-3, 1e-3, 1, 1)
    >>> for line in plan_sentences(DevicePlan("t", 1, None, "bound", "tokens", 0, 0, 0, (c,))):
    ...     print(line)
    fits on 1 device at the fewest (TP=1, PP=1): 10 B of 100 B each
    fastest that fits: TP=1, PP=1, 1 ms a step, 1,000 tokens/s
    """
    lines = []
    fewest, fastest = plan.fewest, plan.fastest
    if fewest is not None and fewest.capacity_bytes is not None:  # (a split fits only against a capacity)
        lines.append(
            f"fits on {fewest.devices} device{'s' if fewest.devices > 1 else ''} at the fewest "
            f"({split_name(fewest)}): {iec(fewest.need_bytes)} of {capacity_text(fewest.capacity_bytes)} each"
        )
    elif plan.choices and (capacity := plan.choices[0].capacity_bytes) is not None:  # every split's: the target's
        least = min(plan.choices, key=lambda c: c.need_bytes)
        lines.append(
            f"does not fit on up to {plan.devices} devices: the least need is "
            f"{iec(least.need_bytes)} a device ({split_name(least)}) of {capacity_text(capacity)}"
        )
    if fastest is not None:
        shares = sorted(((b, s) for b, s in fastest.time_share.items() if s >= 0.005), key=lambda item: -item[1])
        split = ", ".join(f"{BOUND_LABELS.get(b, b)} {s:.0%}" for b, s in shares)
        lines.append(
            f"fastest that fits: {split_name(fastest)}, {seconds(fastest.latency_s)} a step, "
            f"{fastest.per_s:,.0f} {plan.per_step_unit}/s" + (f" (time: {split})" if split else "")
        )
    widest = max((c for c in plan.choices if c.pipeline == 1 and c.tensor > 1), key=lambda c: c.tensor, default=None)
    if widest is not None and widest.collective_s > 0:
        text = f"at TP={widest.tensor} the all-reduces are {widest.collective_share:.0%} of the step"
        if fastest is not None and fastest is not widest and fastest.latency_s < widest.latency_s:
            text += f": {split_name(fastest)} fits and is {widest.latency_s / fastest.latency_s:.2f}x faster a step"
        lines.append(text)
    return lines


@dataclass(frozen=True)
class ModelFacts:
    """What the plan reads of an analysis besides the target's report."""

    graph: CostGraph
    structure: Structure
    parameter_bytes: int
    peak_activation_bytes: int
    llm: LLMReport | None = None


def plan_devices(facts: ModelFacts, report: TargetReport, devices: int, micro_batches: int = 1) -> DevicePlan:
    """Every (TP, PP) of powers of two (and ``devices``) on at most ``devices`` devices of
    ``report``'s target, linked by its interconnect."""
    target, structure, llm = report.target, facts.structure, facts.llm
    kv = llm.kv_read_bytes + llm.cross_read_bytes if llm is not None else 0
    per_step = (llm.new_tokens or 1) * report.batch if llm is not None else report.batch
    capacity = int(target.dram_size_bytes.value) if target.dram_size_bytes else None
    notes = list(structure.notes)
    attention = sum(b.kind == "attention" for b in structure.blocks)
    refused: dict[int, str] = {}
    choices: list[Choice] = []
    link_name = None
    interconnect = target.interconnect
    if devices > 1 and interconnect is None:
        notes.append(
            f"{target.name} states no interconnect ([interconnect] in its target file): only one device is planned"
        )
    for tensor, pipeline, link in _splits(report, devices, structure, refused):
        if link is not None:
            link_name = link.name
        choices.append(_choice(facts, report, tensor, pipeline, link, kv, capacity, micro_batches, per_step, attention))
    kv_heads = llm.kv_heads if llm is not None else None
    if kv_heads and attention and any(c.tensor > kv_heads for c in choices):
        notes.append(
            f"{kv_heads} KV heads: above TP={kv_heads} each device holds one KV head's cache and its "
            f"share of the key and value projections, each replicated TP / {kv_heads} times"
        )
    unit = "tokens" if llm is not None else "inferences"
    return DevicePlan(
        target.name,
        devices,
        link_name,
        str(report.latency_kind),
        unit,
        attention,
        len(structure.blocks) - attention,
        len(structure.replicated),
        tuple(choices),
        tuple(notes),
        refused,
    )


def _splits(
    report: TargetReport, devices: int, structure: Structure, refused: dict[int, str]
) -> Iterator[tuple[int, int, Link | None]]:
    """Every (TP, PP, the link between its devices) the model and the target's interconnect allow
    on at most ``devices`` devices; each refused group of devices says why in ``refused``."""
    target, interconnect = report.target, report.target.interconnect
    for tensor in ways_to_split(devices):
        reason = next((r for b in structure.blocks if (r := b.splits_over(tensor))), None) if tensor > 1 else None
        if reason is not None:
            refused[tensor] = reason
            continue
        for pipeline in ways_to_split(devices // tensor):
            group = tensor * pipeline
            if pipeline > len(report.nodes):
                refused.setdefault(group, f"{len(report.nodes)} kernel(s) cannot make {pipeline} pipeline stages")
                continue
            link = interconnect.link_for(group) if interconnect is not None and group > 1 else None
            if group > 1 and link is None:
                if interconnect is not None and tensor * pipeline <= devices:
                    refused.setdefault(
                        group,
                        f"no link class of {target.name} links {group} devices (the most: "
                        f"{interconnect.most_devices}); several nodes are not modelled",
                    )
                continue
            yield tensor, pipeline, link


def _choice(
    facts: ModelFacts,
    report: TargetReport,
    tensor: int,
    pipeline: int,
    link: Link | None,
    kv: int,
    capacity: int | None,
    micro_batches: int,
    per_step: int,
    attention: int,
) -> Choice:
    structure, graph = facts.structure, facts.graph
    ways = structure.split_ways(tensor) if tensor > 1 else {}
    byte_ways = structure.byte_ways(tensor) if tensor > 1 else {}
    records = {r.name: r for r in graph.records}
    placed = [_split_time(kernel, ways, byte_ways, records, report) for kernel in report.nodes]
    kernel_s = [seconds_ for seconds_, _ in placed]
    reduces = _all_reduces(structure, records, link, tensor) if tensor > 1 and link is not None else []
    after = {r.after: r for r in reduces}
    step_s = [t + sum(after[n].time_s for n in kernel.nodes if n in after) for t, kernel in zip(kernel_s, report.nodes)]
    cuts, stage_of, stage_s, send_s = _stages(graph, report, step_s, pipeline, link)
    period = max(s + (send_s[i] if i < len(send_s) else 0.0) for i, s in enumerate(stage_s)) if stage_s else 0.0
    weights, kv_device = _device_memory(facts, ways, stage_of, tensor, pipeline, kv, attention)
    by_bound: dict[str, float] = {}
    for seconds_, bound in placed:
        by_bound[bound] = by_bound.get(bound, 0.0) + seconds_
    by_bound["overhead"] = by_bound.get("overhead", 0.0) + pipeline * report.run_s
    by_bound |= {"all-reduce": sum((r.time_s for r in reduces), 0.0), "sends": sum(send_s, 0.0)}
    return Choice(
        tensor,
        pipeline,
        weights,
        kv_device,
        max(facts.peak_activation_bytes - kv, 0),
        capacity,
        sum(kernel_s),
        by_bound["all-reduce"],
        by_bound["sends"],
        sum(stage_s) + sum(send_s),
        period,
        micro_batches,
        per_step,
        tuple(reduces),
        tuple(report.nodes[start].name for start in cuts),
        {bound: seconds_ for bound, seconds_ in by_bound.items() if seconds_ > 0},
    )


def _stages(
    graph: CostGraph, report: TargetReport, step_s: list[float], pipeline: int, link: Link | None
) -> tuple[tuple[int, ...], dict[str, int], list[float], list[float]]:
    """(where stages 2..p begin, node -> its stage, each stage's time, each send's time between stages)."""
    kernel_of = {name: k for k, kernel in enumerate(report.nodes) for name in kernel.nodes}
    cuts = _cuts(step_s, pipeline, _boundary_bytes(graph, kernel_of, len(step_s)) if pipeline > 1 else None)
    stages = [range(start, end) for start, end in zip((0, *cuts), (*cuts, len(step_s)))]
    stage_of = {name: i for i, stage in enumerate(stages) for k in stage for name in report.nodes[k].nodes}
    sends = [_crossing_bytes(graph, stage_of, i) for i in range(1, pipeline)]
    send_s = [link.send_s(b) if link is not None else 0.0 for b in sends]
    stage_s = [report.run_s + sum(step_s[k] for k in stage) for stage in stages]  # each stage's device runs once
    return cuts, stage_of, stage_s, send_s


def _device_memory(
    facts: ModelFacts,
    ways: dict[str, int],
    stage_of: dict[str, int],
    tensor: int,
    pipeline: int,
    kv: int,
    attention: int,
) -> tuple[int, int]:
    """(the parameter bytes the fullest stage's device holds, the KV cache bytes a device holds)."""
    graph, structure = facts.graph, facts.structure
    readers = _readers(graph)
    # the parameters no node reads: held whole, by the first stage
    unread = facts.parameter_bytes - sum(graph.parameters[root][1] for root in readers)
    weights = max(
        _stage_weights(graph, readers, ways, stage_of, i) + (max(unread, 0) if i == 0 else 0) for i in range(pipeline)
    )
    kv_heads = facts.llm.kv_heads if facts.llm is not None else None
    kv_ways = min(tensor, kv_heads) if kv_heads else (tensor if attention else 1)
    blocks_in = [
        sum(stage_of.get(b.second) == i for b in structure.blocks if b.kind == "attention") for i in range(pipeline)
    ]
    kv_stage = kv * max(blocks_in) // attention if attention and pipeline > 1 else kv
    return weights, -(-kv_stage // kv_ways)


def _split_time(
    kernel: NodePlacement, ways: dict[str, int], byte_ways: dict[str, int], records: dict, report: TargetReport
) -> tuple[float, str]:
    """The kernel's time with its FLOPs divided over its work's ways and its bytes over its bytes'
    ways (:meth:`Structure.byte_ways`), placed again on the same roofs; a fused kernel takes the
    fewest ways of its nodes that do the work (those with multiply-adds, else all). With its bound."""
    working = [n for n in kernel.nodes if n in records and records[n].macs] or kernel.nodes
    flops_divide = min((ways.get(n, 1) for n in working), default=1)
    bytes_divide = min((byte_ways.get(n, 1) for n in working), default=1)
    point = kernel.placement
    if flops_divide == bytes_divide == 1:
        return point.time_s, str(point.bound)
    from .placement import roofline

    target = report.target
    onchip_bw = target.onchip_bytes_per_s.value if target.onchip_bytes_per_s else None
    # a device's share of the kernel's counts is fractional (roofline's are whole counts): this
    # point is read only for its time and bound, so the ignores below change nothing it keeps
    split = roofline(
        point.flops / flops_divide,  # type: ignore[arg-type]
        point.dram_bytes / bytes_divide,  # type: ignore[arg-type]
        point.peak_flops_per_s,
        target.dram_bytes_per_s.value,
        point.onchip_bytes / bytes_divide,  # type: ignore[arg-type]
        onchip_bw,
        point.roof,
        point.overhead_s,
        point.efficiency,
        point.kernel_class,
        point.parallel_fraction,
        point.op_efficiency,
        point.dram_stall,
    )
    # a masked Softmax's subnormal exps divide over the heads with its work
    return split.time_s + point.subnormal_s / flops_divide, str(split.bound)


def _all_reduces(structure: Structure, records: dict, link: Link, tensor: int) -> list[AllReduce]:
    reduces = []
    for block in structure.blocks:
        message = records[block.second].output_bytes
        reduces.append(
            AllReduce(block.second, message, link.ring_bytes(message, tensor), link.all_reduce_s(message, tensor))
        )
    return reduces


def _cuts(step_s: list[float], pipeline: int, boundary_bytes: list[int] | None = None) -> tuple[int, ...]:
    """Where stages 2..p begin: for stage k, among the kernels before which the running time is
    within a quarter of a stage of k / p of the whole, the one whose boundary the fewest activation
    bytes cross (a decoder's layer boundary: the residual stream alone), the nearest to k / p of a
    tie; each stage keeps at least one kernel (``pipeline`` at most the kernels).

    >>> _cuts([1.0, 1.0, 1.0, 1.0], 2), _cuts([3.0, 1.0, 1.0, 1.0], 2), _cuts([0.0, 0.0, 5.0], 3)
    ((2,), (1,), (1, 2))
    >>> _cuts([1.0] * 8, 2, [0, 9, 9, 1, 9, 9, 9, 9, 0])  # the cut moves to the narrow boundary before kernel 3
    (3,)
    """
    count, total = len(step_s), sum(step_s)
    before = [0.0]
    for seconds_ in step_s:
        before.append(before[-1] + seconds_)
    window = total / pipeline / 4
    cuts: list[int] = []
    for stage in range(1, pipeline):
        goal = total * stage / pipeline
        low, high = (cuts[-1] + 1 if cuts else 1), count - (pipeline - stage)  # room for the stages after it
        near = [k for k in range(low, high + 1) if abs(before[k] - goal) <= window]
        if not near:  # kernels longer than the window: the boundary nearest the goal
            near = [min(range(low, high + 1), key=lambda k: (abs(before[k] - goal), k))]
        cut = min(near, key=lambda k: (boundary_bytes[k] if boundary_bytes else 0, abs(before[k] - goal), k))
        cuts.append(cut)
    return tuple(cuts)


def _boundary_bytes(graph: CostGraph, kernel_of: dict[str, int], count: int) -> list[int]:
    """The activation bytes that cross the boundary before each kernel (0..count): made by an
    earlier kernel and read by this one or a later one."""
    delta = [0] * (count + 2)
    for tensor in graph.tensors.values():
        if tensor.kind != "activation" or tensor.producer is None or not tensor.bytes:
            continue
        made = kernel_of.get(tensor.producer)
        last = max((kernel_of.get(c, -1) for c in tensor.consumers), default=-1)
        if made is not None and last > made:
            delta[made + 1] += tensor.bytes
            delta[last + 1] -= tensor.bytes
    crossing, running = [], 0
    for k in range(count + 1):
        running += delta[k]
        crossing.append(running)
    return crossing


def _crossing_bytes(graph: CostGraph, stage_of: dict[str, int], boundary: int) -> int:
    """Activations made before stage ``boundary`` and read in it or later: what is sent."""
    sent = 0
    for tensor in graph.tensors.values():
        if tensor.kind != "activation" or tensor.producer is None or not tensor.bytes:
            continue
        made = stage_of.get(tensor.producer)
        if made is not None and made < boundary and any(stage_of.get(c, -1) >= boundary for c in tensor.consumers):
            sent += tensor.bytes
    return sent


def _readers(graph: CostGraph) -> dict[str, list[str]]:
    """stored parameter -> the nodes that read it (directly or through folded constants)."""
    readers: dict[str, list[str]] = {}
    for record in graph.records:
        for name in record.param_inputs:
            for root in graph.roots.get(name, (name,)):
                if root in graph.parameters:
                    readers.setdefault(root, []).append(record.name)
    return readers


def _stage_weights(
    graph: CostGraph, readers: dict[str, list[str]], ways: dict[str, int], stage_of: dict[str, int], stage: int
) -> int:
    """The parameters stage ``stage``'s nodes read, each divided over the fewest ways of its readers
    when every reader splits, else whole; a parameter read in two stages is held by both."""
    held = 0
    for root, names in readers.items():
        if not any(stage_of.get(n, 0) == stage for n in names):
            continue
        divide = min(ways.get(n, 1) for n in names)
        held += graph.parameters[root][1] // divide
    return held
