"""The nodes a run executes (issue 42): the main graph's, with each control-flow node replaced by
the nodes of the subgraph it runs, so that a target places them as kernels like any others.

The cost walk costs every subgraph and the control-flow rules (ops/control_flow.py) say which
runs and how many times (``SubgraphCost.runs``): the branch an If's known condition selects, else
the costlier one; a Loop's body times its trip count; a Scan's times its length. This module is
the one place that expands them; the roofline fuses and places the result
(``CostGraph.running``), the outputs read it.

- An If's branch nodes write the If's outputs themselves: each branch output its nodes make is
  renamed to the If output it becomes, so a merged decoder (optimum's ``decoder_model_merged``:
  the whole network in the branches of one If) runs as the same nodes as its twin exported
  without the If. A branch output its nodes do not make (an outer tensor passed through) reaches
  the If's output through a view named after the If.
- A Loop's or Scan's body nodes keep their names and carry ``runs`` (the times they run per run
  of the model; their figures are one run's); their outputs reach the node's outputs through a
  view named after the node. A Loop's body reads the Loop's condition and initial values where
  they are (its first run's inputs); a Scan's body reads its slices as inputs of its own.
- Nested control flow is expanded the same way, the counts multiplied. A body node is named
  ``If_3/then_branch/MatMul_0`` (the cost walk's names): its module is its subgraph.

>>> from onnx import TensorProto, helper
>>> from onnxroof import analyze
>>> branch = lambda op: helper.make_graph([helper.make_node(op, ["x"], ["t"], name=op)], op, [],
...                                       [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])])
>>> node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("Relu"), else_branch=branch("Neg"))
>>> graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
...     helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
>>> running = analyze(helper.make_model(graph), values={"c": 0}).cost_graph.running
>>> [(r.name, r.op_type, r.inputs, r.outputs) for r in running.records]
[('if/else_branch/Neg', 'Neg', ['x'], ['y'])]
>>> running.notes
['If if: else_branch placed as kernels (1 node): its condition is False once the inputs are bound']
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..core.dtypes import bits_of, packed_bytes
from ..core.nodes import DEFAULT_DOMAINS
from .records import CostGraph, NodeRecord, NodeStatus, SubgraphCost, TensorRecord

_NO_SUBGRAPHS: dict[str, SubgraphCost] = {}


class _Expansion:
    """The running records, built in one walk (a class for the state the walk shares)."""

    def __init__(self, graph: CostGraph):
        self.graph = graph
        self.records: list[NodeRecord] = []
        self.body_of: dict[str, str] = {}
        self.notes: list[str] = []
        self.sizes: dict[str, int] = {}  # bytes of the subgraphs' activations (formal inputs, what their nodes make)

    def walk(self, records: list[NodeRecord], runs: int, rename: dict[str, str], body: str) -> None:
        for record in records:
            placed = [(attribute, sub) for attribute, sub in record.subgraphs.items() if sub.runs]
            if not placed:
                self.add(record, runs, rename, body)
                continue
            links: list[tuple[str, str]] = []  # (what the subgraph returns, the node output it becomes)
            for attribute, sub in placed:
                times = runs * sub.runs
                self.sizes.update(sub.activation_bytes)
                inner = dict(rename)
                links += _bind_subgraph(record, sub, rename, inner)
                self.walk(sub.records, times, inner, sub.name)
                count = len(sub.records)
                repeat = f", x {times:,}" if times > 1 else ""
                self.notes.append(
                    f"{record.op_type} {record.name}: {attribute} placed as kernels ({count:,} node"
                    f"{'s' if count != 1 else ''}{repeat}): {sub.runs_reason}"
                )
            if links:
                self.add(_link(record, links), runs, rename, body)

    def add(self, record: NodeRecord, runs: int, rename: dict[str, str], body: str) -> None:
        index = len(self.records)
        if rename:
            inputs = [rename.get(n, n) for n in record.inputs]
            outputs = [rename.get(n, n) for n in record.outputs]
            partial = (
                {rename.get(n, n): b for n, b in record.partial_bytes.items()}
                if record.partial_bytes
                else record.partial_bytes
            )
        else:
            inputs, outputs, partial = record.inputs, record.outputs, record.partial_bytes
        if index != record.index or runs != record.runs or inputs is not record.inputs or outputs is not record.outputs:
            record = replace(record, index=index, inputs=inputs, outputs=outputs, partial_bytes=partial, runs=runs)
        self.records.append(record)
        if body:
            self.body_of[record.name] = body


def _bind_subgraph(
    record: NodeRecord, sub: SubgraphCost, rename: dict[str, str], inner: dict[str, str]
) -> list[tuple[str, str]]:
    """How ``record``'s subgraph ``sub`` meets the outer graph: names it reads or makes that are
    the node's own go into ``inner`` (the subgraph's renames); returns the links (what the
    subgraph returns, the node output it becomes) a view passes on."""
    returned = list(zip(sub.outputs, record.outputs))
    links: list[tuple[str, str]] = []
    if record.op_type == "If" and record.domain in DEFAULT_DOMAINS:
        made = {name for r in sub.records for name in r.outputs if name}
        for branch_output, node_output in returned:
            if node_output and branch_output in made and branch_output not in inner:
                inner[branch_output] = rename.get(node_output, node_output)
            elif node_output:
                links.append((branch_output, node_output))
    elif record.op_type == "Loop":  # the body returns its condition first, then the carried values
        links += [(b, n) for b, n in zip(sub.outputs[1:], record.outputs) if n]
        # the condition and carried values it reads are the Loop's inputs (its first run's):
        # the body reads them where they are (the iteration number has no input)
        for formal, actual in zip(sub.inputs[1:], record.inputs[1:]):
            if actual and formal not in inner:
                inner[formal] = rename.get(actual, actual)
    else:
        links += [(b, n) for b, n in returned if n]
    return links


def _link(record: NodeRecord, links: list[tuple[str, str]]) -> NodeRecord:
    """A view named after the control-flow node: what its subgraph returns, as the node's outputs."""
    return replace(
        record,
        inputs=[b for b, _ in links],
        outputs=[n for _, n in links],
        macs=0,
        flops=0,
        params=0,
        weight_bytes=0,
        input_bytes=0,
        output_bytes=0,
        view=True,
        param_inputs=[],
        subgraphs=_NO_SUBGRAPHS,
        partial_bytes={},
        formula="its subgraph's outputs, passed on",
        subnormal_elements=0,
        status=NodeStatus.OK,
        reason="",
    )


def running_graph(graph: CostGraph) -> CostGraph:
    """``graph`` with its control flow expanded (see the module's docstring); ``graph`` itself
    when no node runs a subgraph."""
    if not any(sub.runs for record in graph.records if record.subgraphs for sub in record.subgraphs.values()):
        return graph
    expansion = _Expansion(graph)
    expansion.walk(graph.records, 1, {}, "")
    return CostGraph(
        name=graph.name,
        records=expansion.records,
        tensors=_tensors(expansion.records, graph, expansion.sizes),
        inputs=graph.inputs,
        outputs=graph.outputs,
        parameters=graph.parameters,
        roots=graph.roots,
        body_of=expansion.body_of,
        notes=expansion.notes,
    )


def _tensors(records: list[NodeRecord], graph: CostGraph, sizes: dict[str, int]) -> dict[str, TensorRecord]:
    """The tensor records of the running nodes, linked as ``cost_graph`` links the main graph's: the
    main graph's figures where it has them, the subgraphs' activation sizes, else the reader's
    shape and type (a graph input only a subgraph reads). A subgraph's own constants get none:
    fusion reads a tensor without a record as a constant."""
    main, graph_inputs = graph.tensors, set(graph.inputs)
    tensors: dict[str, TensorRecord] = {}
    for record in records:
        for name, dtype, shape in zip(record.outputs, record.output_dtypes, record.output_shapes):
            if not name or name in tensors:
                continue
            known = main.get(name)
            if known is not None:
                tensors[name] = TensorRecord(name, known.dtype, known.shape, known.bytes, known.kind, record.name)
            else:
                kind = "constant" if record.status == NodeStatus.CONSTANT else "activation"
                size = sizes.get(name, _bytes(shape, dtype))
                tensors[name] = TensorRecord(name, dtype, tuple(shape) if shape else None, size, kind, record.name)
        seen: set[str] = set()
        for slot, name in enumerate(record.inputs):
            if not name or name in seen:
                continue
            seen.add(name)
            tensor = tensors.get(name)
            if tensor is None:
                known = main.get(name)
                if known is not None:
                    tensor = TensorRecord(name, known.dtype, known.shape, known.bytes, known.kind, None)
                # a graph input only a subgraph reads; a body's formal input
                elif name in graph_inputs or name in sizes:
                    shape = record.input_shapes[slot] if slot < len(record.input_shapes) else None
                    dtype = record.input_dtypes[slot] if slot < len(record.input_dtypes) else ""
                    tensor = TensorRecord(
                        name,
                        dtype,
                        tuple(shape) if shape else None,
                        sizes.get(name, _bytes(shape, dtype)),
                        "input" if name in graph_inputs else "activation",
                        None,
                    )
                else:
                    continue
                tensors[name] = tensor
            tensor.consumers.append(record.name)
    return tensors


def _bytes(shape: list | None, dtype: str) -> int | None:
    """A tensor's bytes from its shape and type name; None when either is unknown.

    >>> _bytes([2, 3], "float32"), _bytes([], "bool"), _bytes(["n", 3], "float32"), _bytes([2], "")
    (24, 1, None, None)
    """
    bits = bits_of(dtype) if dtype else 0
    if shape is None or not bits or not all(isinstance(d, int) for d in shape):
        return None
    return packed_bytes(math.prod(shape), bits)
