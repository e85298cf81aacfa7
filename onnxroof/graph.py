"""Stage 3: the cost DAG, one networkx node per ONNX node holding its cost record.

Edges carry tensors (producer -> consumer) and their bytes. Tensors computed only from
initializers and constants are parameters, not activations, and their producers are folded
(they cost nothing at run time). One linear pass over the nodes; no weight is ever read.

>>> from onnxroof.examples import build_example
>>> from onnxroof.shapes import infer_shapes
>>> model = build_example("shallownet")
>>> graph = build_cost_graph(model, infer_shapes(model, model.graph.node))
>>> [graph.nodes[n]["record"].op_type for n in graph]
['Conv', 'Relu', 'Flatten', 'Gemm', 'Softmax']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import onnx

from .dtypes import dtype_name, tensor_bytes
from .ops import NodeView, OpCost, UnknownShape, rule_for
from .shapes import ShapeResult, TensorInfo

# Ops that only re-lay or re-type a constant: the stored bytes of their result are the bytes of
# the data they read (an int8 weight behind DequantizeLinear is stored as int8, not float32).
_STORAGE_PRESERVING = frozenset(
    "Cast CastLike DequantizeLinear Transpose Reshape Identity Squeeze Unsqueeze Flatten".split()
)
# Ops whose output is not a function of their inputs: never folded as constants.
_NONDETERMINISTIC = frozenset("RandomNormal RandomUniform RandomNormalLike RandomUniformLike Multinomial Bernoulli".split())

STATUS_OK = "ok"  # costed by its rule
STATUS_CONSTANT = "constant"  # computed from constants only: folded, costs nothing
STATUS_UNSUPPORTED = "unsupported"  # no rule for this op: not counted
STATUS_UNKNOWN_SHAPE = "unknown_shape"  # a shape its rule needs is unknown: not counted


@dataclass
class NodeRecord:
    """The cost of one ONNX node. Every number in every output traces back to one of these."""

    name: str
    op_type: str
    domain: str
    index: int  # position in the model's node list
    family: str
    status: str
    reason: str
    inputs: list[str]
    outputs: list[str]
    input_shapes: list[list | None]  # dims are ints, or a symbol's name / None when unknown
    input_dtypes: list[str]
    output_shapes: list[list | None]
    output_dtypes: list[str]
    dtype: str  # the element type the node computes in
    macs: int = 0
    flops: int = 0  # total: 2 x macs + other element operations
    params: int = 0  # elements of the parameter tensors this node reads
    weight_bytes: int = 0  # stored bytes of those parameters
    input_bytes: int = 0  # activation bytes read (0 for views and folded constants)
    output_bytes: int = 0  # activation bytes written (0 for views and folded constants)
    formula: str = ""
    view: bool = False
    param_inputs: list[str] = field(default_factory=list)

    @property
    def counted(self) -> bool:
        return self.status in (STATUS_OK, STATUS_CONSTANT)

    @property
    def mac_flops(self) -> int:
        return 2 * self.macs

    @property
    def memory_bytes(self) -> int:
        """Bytes moved if everything streams from DRAM: weights + inputs + outputs."""
        return self.weight_bytes + self.input_bytes + self.output_bytes

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte moved with everything streamed from DRAM (None if no bytes move)."""
        return self.flops / self.memory_bytes if self.memory_bytes else None


@dataclass
class TensorRecord:
    name: str
    dtype: str
    shape: tuple | None
    bytes: int | None  # None when the shape is unknown
    kind: str  # "input" | "activation" | "parameter" | "constant"
    producer: str | None = None
    consumers: list[str] = field(default_factory=list)


def node_names(nodes: list[onnx.NodeProto]) -> list[str]:
    """Unique, stable names: the node's own, or ``OpType_index`` when empty or repeated."""
    names, seen = [], set()
    for index, node in enumerate(nodes):
        name = node.name or f"{node.op_type}_{index}"
        if name in seen:
            name = f"{name}#{index}"
        seen.add(name)
        names.append(name)
    return names


def constant_tensors(model: onnx.ModelProto, nodes: list[onnx.NodeProto]) -> tuple[set[str], list[bool]]:
    """Tensors computed only from initializers and constants, and which nodes produce only such."""
    constant = {t.name for t in model.graph.initializer}
    folded = []
    for node in nodes:
        present = [name for name in node.input if name]
        is_constant = node.op_type not in _NONDETERMINISTIC and (
            (node.op_type == "Constant" and node.domain in ("", "ai.onnx"))
            or (bool(present) and all(name in constant for name in present))
        )
        folded.append(is_constant)
        if is_constant:
            constant.update(o for o in node.output if o)
    return constant, folded


def build_cost_graph(model: onnx.ModelProto, shapes: ShapeResult) -> nx.DiGraph:
    """Cost every node of ``model``'s main graph and link them by the tensors they exchange."""
    nodes = list(model.graph.node)
    names = node_names(nodes)
    tensors = shapes.tensors
    constant, folded = constant_tensors(model, nodes)
    initializers = {t.name: t for t in model.graph.initializer}
    graph_inputs = {i.name for i in model.graph.input} - set(initializers)

    def info(name: str) -> TensorInfo:
        return tensors.get(name) or TensorInfo(name)

    def size(name: str) -> int | None:
        tensor = info(name)
        return None if tensor.numel is None else tensor_bytes(tensor.numel, tensor.dtype)

    stored: dict[str, int] = {name: size(name) or 0 for name in initializers}
    records: list[NodeRecord] = []
    producer: dict[str, str] = {}
    parameters: set[str] = set()
    for index, (node, name, is_folded) in enumerate(zip(nodes, names, folded)):
        rule = rule_for(node.domain, node.op_type)
        arg_slots = rule.arg_inputs if rule else frozenset()
        view = NodeView(
            node, tuple(info(n) if n else None for n in node.input), tuple(info(n) for n in node.output), shapes.values
        )
        if is_folded:
            status, reason, cost = STATUS_CONSTANT, "computed from constants only: folded, costs nothing", OpCost()
            _track_storage(node, arg_slots, stored, size)
        elif rule is None:
            domain = node.domain or "ai.onnx"
            status, reason, cost = STATUS_UNSUPPORTED, f"no cost rule for {domain}::{node.op_type}", OpCost()
        else:
            status, reason, cost = _apply_rule(rule.handler, view)
        param_inputs = []
        activation_inputs = []
        for slot, tensor_name in enumerate(node.input):
            if not tensor_name or tensor_name in param_inputs or tensor_name in activation_inputs:
                continue
            if tensor_name not in constant:
                activation_inputs.append(tensor_name)
            elif not is_folded and slot not in arg_slots:
                param_inputs.append(tensor_name)
        parameters.update(param_inputs)
        moves_bytes = not (is_folded or cost.view)
        record = NodeRecord(
            name=name,
            op_type=node.op_type,
            domain=node.domain,
            index=index,
            family=rule.family if rule else "unsupported",
            status=status,
            reason=reason,
            inputs=list(node.input),
            outputs=list(node.output),
            input_shapes=[_shape_list(info(n)) if n else None for n in node.input],
            input_dtypes=[dtype_name(info(n).dtype) if n else "" for n in node.input],
            output_shapes=[_shape_list(info(n)) for n in node.output],
            output_dtypes=[dtype_name(info(n).dtype) for n in node.output],
            dtype=_compute_dtype(node, activation_inputs, info),
            macs=cost.macs,
            flops=2 * cost.macs + cost.flops,
            params=sum(info(n).numel or 0 for n in param_inputs),
            weight_bytes=sum(stored.get(n, size(n) or 0) for n in param_inputs),
            input_bytes=sum(size(n) or 0 for n in activation_inputs) if moves_bytes else 0,
            output_bytes=sum(size(n) or 0 for n in node.output if n) if moves_bytes else 0,
            formula=cost.formula,
            view=cost.view,
            param_inputs=param_inputs,
        )
        records.append(record)
        for output in node.output:
            if output:
                producer[output] = name

    graph = nx.DiGraph(name=model.graph.name)
    for record in records:
        graph.add_node(record.name, record=record)
    tensor_records: dict[str, TensorRecord] = {}

    def tensor_record(name: str) -> TensorRecord:
        if name not in tensor_records:
            tensor = info(name)
            kind = (
                "parameter" if name in parameters
                else "constant" if name in constant
                else "input" if name in graph_inputs
                else "activation"
            )
            tensor_records[name] = TensorRecord(
                name, dtype_name(tensor.dtype), tensor.shape, stored.get(name, size(name)), kind, producer.get(name)
            )
        return tensor_records[name]

    for record in records:
        for output in record.outputs:
            if output:
                tensor_record(output)
        for tensor_name in dict.fromkeys(n for n in record.inputs if n):
            tensor = tensor_record(tensor_name)
            tensor.consumers.append(record.name)
            if tensor.producer is None:
                continue
            if graph.has_edge(tensor.producer, record.name):
                edge = graph.edges[tensor.producer, record.name]
                edge["tensors"].append(tensor_name)
                edge["bytes"] += tensor.bytes or 0
            else:
                graph.add_edge(tensor.producer, record.name, tensors=[tensor_name], bytes=tensor.bytes or 0)
    graph.graph["tensors"] = tensor_records
    graph.graph["inputs"] = [i.name for i in model.graph.input if i.name in graph_inputs]
    graph.graph["outputs"] = [o.name for o in model.graph.output]
    graph.graph["parameters"] = sorted(parameters, key=lambda n: (tensor_records[n].producer or "", n))
    return graph


def _apply_rule(handler, view: NodeView) -> tuple[str, str, OpCost]:
    try:
        return STATUS_OK, "", handler(view)
    except UnknownShape as exc:
        return STATUS_UNKNOWN_SHAPE, str(exc), OpCost()
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as exc:
        # a node the rule cannot read (a missing attribute, an odd rank): reported, not counted
        return STATUS_UNKNOWN_SHAPE, f"cost rule could not read this node ({type(exc).__name__}: {exc})", OpCost()


def _track_storage(node: onnx.NodeProto, arg_slots: frozenset[int], stored: dict[str, int], size) -> None:
    """Stored bytes of a folded node's outputs: its data inputs' for re-layouts, else its own size."""
    if node.op_type in _STORAGE_PRESERVING and node.domain in ("", "ai.onnx", "com.microsoft"):
        data = [n for slot, n in enumerate(node.input) if n and slot not in arg_slots]
        total = sum(stored.get(n, size(n) or 0) for n in dict.fromkeys(data))
        for output in node.output:
            if output:
                stored[output] = total
    else:
        for output in node.output:
            if output:
                stored[output] = size(output) or 0


def _shape_list(tensor: TensorInfo) -> list | None:
    return None if tensor.shape is None else list(tensor.shape)


def _compute_dtype(node: onnx.NodeProto, activation_inputs: list[str], info) -> str:
    for name in (*activation_inputs, *node.output, *node.input):
        if name and info(name).dtype:
            return dtype_name(info(name).dtype)
    return "unknown"
