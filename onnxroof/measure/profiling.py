"""Mapping the kernels of an onnxruntime profile to the ONNX nodes onnxroof costs, and what
`onnxroof profile` finds: each node's measured time against its predicted time. How the model is
run and timed is in :mod:`onnxroof.measure.profile_run`; reading the profile's events in
:mod:`onnxroof.measure.ort_events`.

**Mapping kernels to nodes** (:func:`map_profile`, pure), in this order:

1. *By name*: a kernel maps to the node of the same name; else with onnxruntime's decorations
   taken off ("fused X", "X_nchwc"), as a node or as a tensor (then its producer: the NCHWc
   transformer names a kernel after its output); else the longest node name it starts with
   followed by ``_ / : .`` (``node_MatMul_1/MatMulAddFusion``).
2. *By structure*, when the graph onnxruntime ran is known (``profile_model`` saves it with
   ``SessionOptions.optimized_model_filepath``; :class:`OptimizedGraph`): a kernel covers the
   original nodes between its inputs and its outputs, walking up from each output that is an
   original tensor through the tensors the rewritten graph no longer has. This places kernels
   with made-up names (``SkipLayerNormalization_token_56`` covers an Add and a
   LayerNormalization). A Reshape or Squeeze onnxruntime inserted after a fusion hands the
   nodes it "outputs" to the kernel that computed its input (the Gemm of a MatMul+Add fusion).
3. *By op*: when a kernel's op (``args.op_name``; ``FusedConv`` counts as ``Conv``) is not
   its node's, the kernel also covers the single-consumer chain above that node up to the node
   of its op (``activation_0_nchwc`` is a Conv: conv2d_0, batch_normalization_0, activation_0).
4. *By neighbourhood*: a node that does work and still has no kernel joins its producer's
   kernel when it is that producer's only consumer (BN and ReLU after a fused Conv), else its
   only consumer's (a chain folded into what reads it). Views and folded constants with no
   kernel were removed by onnxruntime and measure 0.

**A kernel that covers several nodes has its time split among them in proportion to their
predicted times** (FLOPs when no prediction is given), so those nodes share one
measured/predicted ratio: a profile cannot split a fused kernel's time further. Kernels that
match no node (layout reorders, reshapes onnxruntime inserts) are reported as unattributed and
counted in the measured total. At level ``all`` the NCHWc kernels rename their tensors, so
step 2 cannot see through them and steps 1 and 3 do the work; at ``basic`` and ``extended``
tensor names survive and step 2 decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.enums import TextEnum
from ..cost.records import NodeStatus
from ..ops import OpTrait, traits_of
from .ort_events import OptimizedGraph, kernel_medians, kernel_sizes, kernel_splits, load_events

if TYPE_CHECKING:
    from ..result import Analysis
    from ..roofline.placement import TargetReport

# what onnxruntime puts around the name of a node it rewrites ("fused X": Gemm+activation)
_NAME_PREFIXES = ("fused ",)
_NAME_SUFFIXES = ("_nchwc",)
_FUSED_OPS = {
    "FusedConv": "Conv",
    "FusedGemm": "Gemm",
    "FusedMatMul": "MatMul",
    "NhwcFusedConv": "Conv",
    "NhwcConv": "Conv",
    "NhwcMaxPool": "MaxPool",
    "QLinearConv": "Conv",
    "QLinearMatMul": "MatMul",
}
_UPSTREAM_DEPTH = 8  # how far up a renamed kernel's chain may reach for its op


# --- the mapping -------------------------------------------------------------------------------


@dataclass
class KernelTime:
    """One onnxruntime kernel (a node of the graph onnxruntime ran) and what it covers."""

    name: str  # onnxruntime's node name (the event name without "_kernel_time")
    op_type: str  # args.op_name
    seconds: float  # median over the measured runs
    nodes: list[str] = field(default_factory=list)  # onnxroof nodes it covers; empty: unattributed
    shares: dict[str, float] = field(default_factory=dict)  # node -> seconds of this kernel
    sizes: tuple[int, int, int] | None = None  # (activation, parameter, output) bytes its profile event records
    split: bool = False  # onnxruntime's intra-op pool split it over its threads (in most runs)


@dataclass
class ProfileMapping:
    """Per-node measured times read from an onnxruntime profile."""

    seconds: dict[str, float]  # onnxroof node -> measured seconds (median per run)
    kernels: list[KernelTime]  # every kernel, in the order it first ran
    kernel_of: dict[str, str]  # onnxroof node -> the kernel it was measured in
    removed: list[str]  # views and folded constants onnxruntime did not run (measured 0)
    not_seen: list[str]  # nodes no kernel covers (their time, if any, is in an unattributed kernel)
    runs: int  # runs measured (after the warm-up)
    run_seconds: float | None  # median wall time of a measured run (model_run events), if recorded

    @property
    def unattributed(self) -> list[KernelTime]:
        return [k for k in self.kernels if not k.nodes]

    @property
    def measured_s(self) -> float:
        """Sum of every kernel's median: the measured total the per-node times add up to
        (plus the unattributed kernels)."""
        return sum(k.seconds for k in self.kernels)


# Kernels that move data around (onnxruntime inserts some): such a kernel covers only original
# nodes of its own op. They are the ONNX ops that only rearrange or retype their input (the
# registry's traits), and onnxruntime's own layout and copy ops, which ONNX does not define.
_REARRANGES = OpTrait.RESHAPE | OpTrait.IDENTITY | OpTrait.PERMUTES_AXES | OpTrait.RETYPE
_ONNXRUNTIME_MOVEMENT_OPS = frozenset({"ReorderInput", "ReorderOutput", "MemcpyToHost", "MemcpyFromHost"})


def _moves_data(op_type: str) -> bool:
    return op_type in _ONNXRUNTIME_MOVEMENT_OPS or bool(traits_of("", op_type) & _REARRANGES)


def map_profile(
    events: Any,
    analysis: Analysis,
    warmup: int = 0,
    weights: Mapping[str, float] | None = None,
    optimized: OptimizedGraph | None = None,
) -> ProfileMapping:
    """Map an onnxruntime profile's kernels to ``analysis``'s nodes (see the module docstring).

    ``weights`` (node -> predicted seconds) split a kernel that covers several nodes; without
    them the split follows the nodes' FLOPs. ``optimized`` (the graph onnxruntime ran) lets a
    kernel cover the original nodes between its inputs and outputs by tensor name, which also
    places kernels with generated names (``SkipLayerNormalization_token_3``)."""
    loaded = load_events(events)
    medians, runs, wall = kernel_medians(loaded, warmup)
    sizes, split = kernel_sizes(loaded), kernel_splits(loaded)
    kernels = [
        KernelTime(name, op, seconds, sizes=sizes.get(name), split=name in split)
        for name, (op, seconds) in medians.items()
    ]
    return map_kernels(kernels, analysis, runs, wall, weights, optimized)


def map_kernels(
    kernels: list[KernelTime],
    analysis: Analysis,
    runs: int = 1,
    run_seconds: float | None = None,
    weights: Mapping[str, float] | None = None,
    optimized: OptimizedGraph | None = None,
    declared: Mapping[str, Iterable[str]] | None = None,
) -> ProfileMapping:
    """Map a runtime's measured kernels to ``analysis``'s nodes (the steps of the module
    docstring), whichever runtime measured them: onnxruntime's profile (:func:`map_profile`) or a
    vendor's per-layer report (:mod:`onnxroof.measure.traces`). ``declared`` (kernel name -> the
    ONNX nodes the runtime says it ran, such as TensorRT's ``[ONNX Layer: X]`` metadata) is
    claimed first, before the names."""
    records = {r.name: r for r in analysis.nodes}
    claims = _Claims(records, analysis.tensors)
    if declared:
        for kernel in kernels:
            claims.claim(kernel, [n for n in declared.get(kernel.name, ()) if n in records])
            if kernel.nodes:
                claims.named.setdefault(kernel.nodes[-1], kernel)
    claims.by_name(kernels)
    if optimized is not None:
        claims.by_structure(kernels, optimized)
    claims.by_op(kernels)
    removed, waiting = claims.by_neighbourhood([r.name for r in analysis.nodes if r.name not in claims.owner])
    seconds: dict[str, float] = {name: 0.0 for name in removed}
    for kernel in kernels:
        kernel.nodes.sort(key=lambda n: records[n].index)
        kernel.shares = _split(kernel, records, weights, claims.named)
        for node, share in kernel.shares.items():
            seconds[node] = seconds.get(node, 0.0) + share
    order = {r.name: r.index for r in analysis.nodes}
    return ProfileMapping(
        seconds=dict(sorted(seconds.items(), key=lambda item: order[item[0]])),
        kernels=kernels,
        kernel_of={node: kernel.name for node, kernel in claims.owner.items()},
        removed=removed,
        not_seen=waiting,
        runs=runs,
        run_seconds=run_seconds,
    )


class _Claims:
    """Which kernel covers each node, claimed step by step (the first claim of a node holds)."""

    def __init__(self, records: Mapping, tensors: Mapping):
        self.records = records  # node name -> its record
        self.tensors = tensors
        self.owner: dict[str, KernelTime] = {}  # node -> kernel covering it
        self.named: dict[str, KernelTime] = {}  # node -> the kernel that carries its name

    def claim(self, kernel: KernelTime, nodes: Iterable[str]) -> None:
        for node in nodes:
            if node not in self.owner:
                self.owner[node] = kernel
                kernel.nodes.append(node)

    def single_consumer_producers(self, name: str) -> list[str]:
        """Producers of ``name``'s activation inputs of which ``name`` is the only consumer."""
        found = []
        for tensor_name in dict.fromkeys(self.records[name].inputs):
            tensor = self.tensors.get(tensor_name)
            if tensor and tensor.producer in self.records and set(tensor.consumers) == {name}:
                found.append(tensor.producer)
        return found

    def only_consumer(self, name: str) -> str | None:
        tensors = self.tensors
        consumers = {c for out in self.records[name].outputs if out in tensors for c in tensors[out].consumers}
        return next(iter(consumers)) if len(consumers) == 1 and next(iter(consumers)) in self.records else None

    def by_name(self, kernels: list[KernelTime]) -> None:
        """Step 1: each kernel covers the node it is named after (the first kernel so named)."""
        for kernel in kernels:
            node = _node_for_kernel(kernel.name, self.records, self.tensors)
            if node is not None and node not in self.named and node not in self.owner:
                self.named[node] = self.owner[node] = kernel
                kernel.nodes.append(node)

    def by_structure(self, kernels: list[KernelTime], optimized: OptimizedGraph) -> None:
        """Step 2: each kernel covers the original nodes between its inputs and outputs."""
        records, tensors = self.records, self.tensors
        available = optimized.available()
        by_name = {k.name: k for k in kernels}
        producer_of = {t: name for name, (_, outputs, _) in optimized.nodes.items() for t in outputs}
        for kernel in kernels:
            if kernel.name not in optimized.nodes:
                continue
            for tensor in optimized.nodes[kernel.name][1]:
                if tensor not in tensors or tensors[tensor].producer not in records:
                    continue  # a tensor onnxruntime made up: nothing of the original graph ends here
                op_type = records[tensors[tensor].producer].op_type
                target = _structural_owner(kernel, op_type, optimized, producer_of, by_name)
                if target is not None:
                    self.claim(
                        target,
                        _walk_up(
                            tensor, target, optimized.nodes[target.name][0], available, records, tensors, self.owner
                        ),
                    )

    def by_op(self, kernels: list[KernelTime]) -> None:
        """Step 3: a renamed kernel whose op is not its node's (activation_0_nchwc is a Conv)
        covers the chain above its node up to the node of its op."""
        for kernel in kernels:
            if len(kernel.nodes) != 1:
                continue
            node = kernel.nodes[0]
            wanted = _FUSED_OPS.get(kernel.op_type, kernel.op_type)
            if not wanted or self.records[node].op_type == wanted:
                continue
            self.claim(kernel, _chain_up_to(node, wanted, self.single_consumer_producers, self.records, self.owner))

    def by_neighbourhood(self, pending: list[str]) -> tuple[list[str], list[str]]:
        """Step 4: of the nodes no kernel covers yet, those that do no work were removed; the others
        join their producer's or their only consumer's kernel, until none does. Returns the removed
        nodes and those left without a kernel."""
        removed = [name for name in pending if not _does_work(self.records[name])]
        waiting = [name for name in pending if name not in set(removed)]
        owner = self.owner
        changed = True
        while waiting and changed:
            changed = False
            for name in waiting:  # join the producer's kernel (model order: producers first)
                for producer in self.single_consumer_producers(name):
                    if producer in owner:
                        self.claim(owner[producer], [name])
                        changed = True
                        break
            waiting = [name for name in waiting if name not in owner]
            for name in reversed(waiting):  # else the only consumer's kernel
                consumer = self.only_consumer(name)
                if consumer is not None and consumer in owner:
                    self.claim(owner[consumer], [name])
                    changed = True
            waiting = [name for name in waiting if name not in owner]
            for name in waiting:  # else the kernel that computed all its inputs (Swish's Mul after a Conv)
                kernel = self.sole_producer_kernel(name)
                if kernel is not None:
                    self.claim(kernel, [name])
                    changed = True
            waiting = [name for name in waiting if name not in owner]
        return removed, waiting

    def sole_producer_kernel(self, name: str) -> KernelTime | None:
        """The one kernel that covers every producer of ``name``'s activation inputs, if there is one."""
        kernels = {
            id(self.owner.get(tensor.producer)): self.owner.get(tensor.producer)
            for tensor_name in self.records[name].inputs
            if (tensor := self.tensors.get(tensor_name)) is not None and tensor.producer in self.records
        }
        return next(iter(kernels.values())) if len(kernels) == 1 else None


def _does_work(record) -> bool:
    """False for views and folded constants: with no kernel of their own they were removed."""
    return not (record.view or record.status == NodeStatus.CONSTANT or not (record.flops or record.memory_bytes))


def _structural_owner(
    kernel: KernelTime, op_type: str, optimized: OptimizedGraph, producer_of: Mapping, by_name: Mapping
) -> KernelTime | None:
    """The kernel an original tensor that ``kernel`` outputs belongs to: ``kernel`` itself, unless
    it only moves data (a Reshape or Squeeze onnxruntime inserted after a fusion) and the tensor's
    original producer is another op: then the kernel that computed the moved data."""
    current = kernel
    for _ in range(_UPSTREAM_DEPTH):
        inputs, _, op = optimized.nodes[current.name]
        if not _moves_data(op) or op == op_type:
            return current
        upstream = by_name.get(producer_of.get(inputs[0], "")) if inputs else None
        if upstream is None or upstream.name not in optimized.nodes:
            return None
        current = upstream
    return None


def _walk_up(
    tensor: str,
    kernel: KernelTime,
    inputs: Iterable[str],
    available: set[str],
    records: Mapping,
    tensors: Mapping,
    owner: Mapping,
) -> list[str]:
    """Original nodes from ``tensor``'s producer upward, through tensors the optimized graph no
    longer has, up to the kernel's inputs; never into a node another kernel covers."""
    stop = set(inputs)
    stack, covered, seen = [tensor], [], set()
    while stack:
        producer = tensors[stack.pop()].producer
        if producer in seen or (producer in owner and owner[producer] is not kernel):
            continue
        seen.add(producer)
        if not _does_work(records[producer]) and producer not in owner:
            pass  # a view or a folded constant on the way: walked through, left to the "removed"
        else:
            covered.append(producer)
        for name in records[producer].inputs:
            if (
                name
                and name not in stop
                and name not in available
                and name in tensors
                and tensors[name].producer in records
            ):
                stack.append(name)
    return covered


def parse_profile(
    events_json: Any,
    analysis: Analysis,
    warmup: int = 0,
    weights: Mapping[str, float] | None = None,
    optimized: OptimizedGraph | None = None,
) -> dict[str, float]:
    """{node name: measured seconds} from an onnxruntime profile (a path, JSON text or the
    parsed events): the median over the runs after ``warmup`` (see :func:`map_profile`)."""
    return map_profile(events_json, analysis, warmup, weights, optimized).seconds


def _node_for_kernel(kernel: str, records: Mapping, tensors: Mapping) -> str | None:
    """The node a kernel is named after: its own name; the name with onnxruntime's decorations
    taken off ("fused X", "X_nchwc"), as a node or as a tensor (then its producer: the NCHWc
    transformer names a kernel after its output); else the longest node name it starts with."""
    if kernel in records:
        return kernel
    bare = kernel
    for prefix in _NAME_PREFIXES:
        bare = bare.removeprefix(prefix)
    for suffix in _NAME_SUFFIXES:
        bare = bare.removesuffix(suffix)
    if bare in records:
        return bare
    tensor = tensors.get(bare)
    if tensor is not None and tensor.producer in records:
        return tensor.producer
    best = None
    for name in records:
        if (
            len(kernel) > len(name)
            and kernel.startswith(name)
            and kernel[len(name)] in "_/:."
            and (best is None or len(name) > len(best))
        ):
            best = name
    return best


def _chain_up_to(node: str, op_type: str, producers, records: Mapping, owner: Mapping) -> list[str]:
    """The nodes above ``node`` (each its producer's only consumer, none with a kernel of its
    own) up to and including the nearest one of ``op_type``; [] when there is none."""
    chain: list[str] = []
    current = node
    for _ in range(_UPSTREAM_DEPTH):
        candidates = [p for p in producers(current) if p not in owner]
        if len(candidates) != 1:
            return []
        current = candidates[0]
        chain.append(current)
        if records[current].op_type == op_type:
            return chain
    return []


def _split(
    kernel: KernelTime, records: Mapping, weights: Mapping[str, float] | None, named: Mapping
) -> dict[str, float]:
    """The kernel's time over its nodes, in proportion to ``weights`` (else FLOPs); all of it to
    the node it is named after when the weights are all zero."""
    if not kernel.nodes:
        return {}
    if len(kernel.nodes) == 1:
        return {kernel.nodes[0]: kernel.seconds}
    share = {n: float(weights.get(n, 0.0)) if weights is not None else float(records[n].flops) for n in kernel.nodes}
    total = sum(share.values())
    if total <= 0:
        head = next((n for n in kernel.nodes if named.get(n) is kernel), kernel.nodes[0])
        return {n: (kernel.seconds if n == head else 0.0) for n in kernel.nodes}
    return {n: kernel.seconds * w / total for n, w in share.items()}


# --- what profile finds --------------------------------------------------------------------------


class Coverage(TextEnum):
    """How a node's measured time was found: what the profile's kernels did with it."""

    OWN = "own"  # one kernel ran this node alone
    SPLIT = "split"  # one kernel ran it with other nodes: the kernel's time is split between them
    REMOVED = "removed"  # onnxruntime's optimizer removed it (folded, or fused away)
    NOT_SEEN = "not_seen"  # no kernel of the profile covers it


@dataclass
class NodeComparison:
    name: str
    op_type: str
    bound: str | None  # the roofline's verdict on the target
    predicted_s: float | None  # None: onnxroof did not count the node
    measured_s: float | None  # None: no kernel covers it
    kernel: str | None  # the onnxruntime kernel it was measured in
    kernel_op: str | None
    shared: bool  # the kernel covers other nodes too (its time was split)
    status: Coverage

    @property
    def ratio(self) -> float | None:
        """measured / predicted (None when either is missing or the prediction is 0)."""
        if self.measured_s is None or not self.predicted_s:
            return None
        return self.measured_s / self.predicted_s


@dataclass
class ProfileResult:
    analysis: Analysis
    target: TargetReport  # onnxroof's prediction
    mapping: ProfileMapping
    nodes: list[NodeComparison]
    optimization: str
    threads: int | None  # intra-op threads (None: onnxruntime's default, one per physical core)
    warmup: int
    ort_version: str
    wall_s: float | None = None  # median seconds per run without the profiler (session.run, timed in Python)
    notes: list[str] = field(default_factory=list)
    unattributed_s: float = 0.0  # predicted for the kernels with no ONNX node (profile_run.unattributed_kernel_s)
    by_rules: TargetReport | None = None  # the prediction under the target's fusion policy (what report says)
    # the fastest run without the profiler, or (profile_model's wall_seconds) the fastest ~5 ms batch's mean:
    # the roofs' statistic
    wall_fastest_s: float | None = None
    runtime: str | None = None  # what measured it, when not this machine's onnxruntime (profile --trace)

    @property
    def runtime_name(self) -> str:
        """The runtime's name in a sentence ("onnxruntime kernel X", "runtime kernel X")."""
        return "runtime" if self.runtime else "onnxruntime"

    @property
    def measured_by(self) -> str:
        """What measured the nodes, in words: the runtime of a trace, else onnxruntime and its settings."""
        if self.runtime:
            return self.runtime
        threads = f"{self.threads} intra-op threads" if self.threads else "default threads"
        return (
            f"onnxruntime {self.ort_version} CPU, optimization {self.optimization}, {threads}, "
            f"median of {self.mapping.runs} runs after {self.warmup} warm-up"
        )

    @property
    def predicted_s(self) -> float:
        """onnxroof's prediction of the kernels onnxruntime ran."""
        return self.target.latency_s + self.unattributed_s

    @property
    def measured_s(self) -> float:
        """Sum of the kernels' medians (attributed or not)."""
        return self.mapping.measured_s

    @property
    def ratio(self) -> float | None:
        return self.measured_s / self.predicted_s if self.predicted_s else None

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured: -0.4 means the prediction is 40 % too fast."""
        return (self.predicted_s - self.measured_s) / self.measured_s if self.measured_s else None

    def to_pandas(self):
        """The comparison as a pandas DataFrame (``pip install pandas``), one row per node
        (name, op, bound, predicted and measured seconds, measured / predicted, the error, the
        onnxruntime kernel it ran in, whether that kernel's time was split, how it was found), then
        one per kernel onnxruntime added that no node covers (status ``unattributed``: its measured
        seconds; predicted from its bytes on the target, in ``unattributed_s`` as a whole)."""
        from ..core.frames import data_frame

        rows = [
            {
                "name": node.name,
                "op_type": node.op_type,
                "bound": node.bound,
                "predicted_s": node.predicted_s,
                "measured_s": node.measured_s,
                "ratio": node.ratio,
                "error": (node.predicted_s - node.measured_s) / node.measured_s
                if node.predicted_s is not None and node.measured_s
                else None,
                "kernel": node.kernel,
                "kernel_op": node.kernel_op,
                "shared": node.shared,
                "status": str(node.status),
            }
            for node in self.nodes
        ]
        rows += [
            {
                "name": k.name,
                "op_type": k.op_type,
                "measured_s": k.seconds,
                "kernel": k.name,
                "kernel_op": k.op_type,
                "shared": False,
                "status": "unattributed",
            }
            for k in self.mapping.unattributed
        ]
        return data_frame(rows, "ProfileResult.to_pandas", PROFILE_COLUMNS)


PROFILE_COLUMNS = (
    "name",
    "op_type",
    "bound",
    "predicted_s",
    "measured_s",
    "ratio",
    "error",
    "kernel",
    "kernel_op",
    "shared",
    "status",
)
