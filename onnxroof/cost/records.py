"""The cost DAG's records: :class:`NodeRecord` (one per ONNX node), :class:`TensorRecord`,
:class:`SubgraphCost`, :class:`CostGraph` and the :class:`NodeStatus` a node is costed with, plus
the user's :class:`CostOptions`. ``graph.py`` fills them in; every later stage reads them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

from ..core.enums import TextEnum

if TYPE_CHECKING:
    import networkx as nx


class NodeStatus(TextEnum):
    """Whether and how a node is counted; the value is the word the JSON document writes."""

    OK = "ok"  # costed by its rule
    CONSTANT = "constant"  # computed from constants only: folded, costs nothing
    UNSUPPORTED = "unsupported"  # no rule for this op: not counted
    UNKNOWN_SHAPE = "unknown_shape"  # a shape its rule needs is unknown: not counted
    UNKNOWN_VALUE = "unknown_value"  # a value its rule needs (a Loop's trip count) is unknown: not counted
    # a size only the data decides (rows routed to an expert) and no known total: not counted, its bound stated
    DATA_DEPENDENT = "data_dependent"
    INVALID = "invalid"  # the node breaks its op's definition (a runtime refuses it): not counted, the reason said


@dataclass(slots=True)  # slotted: one per node of graphs of 10^5 nodes
class NodeRecord:
    """The cost of one ONNX node. Every number in every output traces back to one of these."""

    name: str
    op_type: str
    domain: str
    index: int  # position in the model's node list
    family: str
    status: NodeStatus
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
    # all outputs known at analysis time (shape arithmetic once the dims are bound): runtimes
    # fold or run these on the host, so no target charges a kernel launch for them
    shape_only: bool = False
    subgraphs: dict[str, SubgraphCost] = field(default_factory=dict)  # If branches, Loop/Scan bodies
    # the module path the exporter wrote in the node's metadata (PyTorch's dynamo exporter:
    # pkg.torch.onnx.name_scopes), innermost last; () when it wrote none
    scope: tuple[str, ...] = ()
    # tensor -> the bytes this node reads or writes of it, for the tensors it moves only part of
    # (OpCost.activation_reads / output_writes: a shared KV buffer); the others whole
    partial_bytes: dict[str, int] = field(default_factory=dict)
    # a Softmax's input elements a causal mask of huge negatives hides (cost/masks.py): each exp
    # gives a subnormal float, which a CPU computes on its slow path
    subnormal_elements: int = 0
    # times the node runs per run of the model: a Loop's body nodes x its trip count, a Scan's x its
    # length (the records of CostGraph.running; 1 everywhere else). Its figures are one run's
    runs: int = 1

    @property
    def counted(self) -> bool:
        return self.status in (NodeStatus.OK, NodeStatus.CONSTANT)

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


# A record's counted numbers, in one tuple: what the outputs that encode alike records once
# (the node table's rows, the JSON document's nodes) key them by, beside the fields of their own.
NUMBERS = attrgetter("macs", "flops", "params", "weight_bytes", "input_bytes", "output_bytes")


@dataclass(slots=True)
class TensorRecord:
    name: str
    dtype: str
    shape: tuple | None
    bytes: int | None  # None when the shape is unknown
    kind: str  # "input" | "activation" | "parameter" | "constant"
    producer: str | None = None
    consumers: list[str] = field(default_factory=list)


@dataclass
class SubgraphCost:
    """The cost of one subgraph (an If branch, a Loop or Scan body), nested subgraphs included."""

    name: str
    records: list[NodeRecord]
    macs: int
    flops: int
    params: int  # parameters stored inside the subgraph (its initializers and constants)
    weight_bytes: int
    unsupported: Counter  # op -> nodes with no rule, nested ones included
    not_counted: Counter  # op -> nodes not counted for any other reason, nested ones included
    taken: bool = True  # False for an If branch its known condition does not select (shown, not counted)
    # for the memory stage: bytes of the activations the subgraph holds (its formal inputs and
    # what its nodes produce), and its formal inputs and outputs
    activation_bytes: dict[str, int] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    # what a target runs (cost/running.py): the times this subgraph runs per run of its node (an If's
    # branch 1, a Loop's body its trip count, a Scan's its length; 0: not run, not placed), why,
    # and whether that count is only a lower bound (a Loop whose trip count is unknown: placed once)
    runs: int = 0
    runs_reason: str = ""
    runs_bound: bool = False


@dataclass(frozen=True)
class CostOptions:
    """Settings the user gives for values a model does not fix."""

    loop_trips: int | None = None  # trip count for Loops whose count is not a constant


@dataclass
class CostGraph:
    """The cost DAG: one record per node, in the model's order, linked through the tensors they
    exchange (each tensor record names its producer and its consumers). Every later stage reads
    this; :meth:`to_networkx` gives the same DAG as a networkx graph, for graph algorithms."""

    name: str
    records: list[NodeRecord]  # in the model's order, which is topological
    tensors: dict[str, TensorRecord]
    inputs: list[str]  # graph inputs that are not initializers
    outputs: list[str]
    # every parameter of the model, subgraphs included: name -> (elements, stored bytes), counted once
    parameters: dict[str, tuple[int, int]]
    # folded constant -> the stored parameters it is computed from (a tied head's transposed copy
    # -> the embedding); a constant not here is its own root
    roots: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # in the graph of the nodes that run (:attr:`running`): node -> the subgraph it was placed from
    # ("If_3/then_branch"), for the nodes of control-flow bodies; and what was placed, and why
    body_of: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the nodes a run executes when control flow expands them (running.py, set by graph.cost_graph);
    # None: the graph itself (not stored: a graph holding itself would be a cycle for copy and asdict)
    expanded: CostGraph | None = field(default=None, repr=False, compare=False)

    @property
    def running(self) -> CostGraph:
        """The nodes a run executes, as the roofline places them: this graph with each
        control-flow node replaced by the nodes of the branch or body it runs (``running.py``);
        the graph itself when it has none."""
        return self.expanded if self.expanded is not None else self

    def edges(self) -> Iterator[tuple[str, str, dict]]:
        """``(producer, consumer, {"tensors": [...], "bytes": n})``: one edge per pair of nodes that
        exchange tensors, by consumer in the model's order, then in the order its tensors are read.

        >>> from onnxroof import analyze
        >>> from onnxroof.core.examples import build_example
        >>> next(analyze(build_example("shallownet")).cost_graph.edges())
        ('conv2d_0', 'activation_0', {'tensors': ['conv2d_0'], 'bytes': 131072})
        """
        tensors = self.tensors
        for record in self.records:
            by_producer: dict[str, dict] = {}
            for tensor_name in dict.fromkeys(record.inputs):
                tensor = tensors.get(tensor_name) if tensor_name else None
                if tensor is None or tensor.producer is None:
                    continue
                edge = by_producer.get(tensor.producer)
                if edge is None:
                    by_producer[tensor.producer] = {"tensors": [tensor_name], "bytes": tensor.bytes or 0}
                else:
                    edge["tensors"].append(tensor_name)
                    edge["bytes"] += tensor.bytes or 0
            for producer, data in by_producer.items():
                yield producer, record.name, data

    def to_networkx(self) -> nx.DiGraph:
        """The DAG as a networkx DiGraph: nodes in the model's order with their record as node
        attribute ``record``, edges with attributes ``tensors`` and ``bytes``, and the graph
        attributes ``tensors``, ``inputs``, ``outputs`` and ``parameters``. networkx is imported
        here: no stage needs it, and importing it alone takes 0.2 s."""
        import networkx as nx

        graph = nx.DiGraph(
            name=self.name, tensors=self.tensors, inputs=self.inputs, outputs=self.outputs, parameters=self.parameters
        )
        graph.add_nodes_from(record.name for record in self.records)
        # each record goes into its node's attribute dict ((name, attributes) pairs make networkx
        # raise and catch a TypeError per node)
        for (_, attributes), record in zip(graph.nodes(data=True), self.records):
            attributes["record"] = record
        graph.add_edges_from(self.edges())  # in one call: networkx's per-edge bookkeeping dominates otherwise
        return graph
