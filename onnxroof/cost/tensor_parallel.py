"""The tensor-parallel structure of a model, read from its dataflow (never from node names).

A **projection** is a product with a stored weight matrix (a MatMul or Gemm that reads a
parameter, its activation ``[..., K]`` times ``[K, N]``). A **block** is a pair of layers of
projections with only unweighted work between them: walking back from a projection ``S``'s
activation input through the nodes that compute it, stopping at projections, reaches a set of
projections ``F`` that all read the same activation ``X``, and ``S`` writes as many columns as
``F`` reads (``hidden``: the block maps the residual stream back onto itself). Then:

- each projection of ``F`` is **column-parallel**: device ``d`` holds ``N_f / N`` of its output
  columns (an attention block's key and value projections hold whole heads: see
  :meth:`Block.ways`);
- the nodes between run on each device's columns alone (per head: scores, softmax, context; per
  column: an MLP's activation and gate);
- ``S`` is **row-parallel**: device ``d`` holds ``K_s / N`` of its rows and computes a partial sum
  of the whole output, which an all-reduce adds up.

A block whose walk reaches a product that is not a projection (the attention scores and
context, or a fused attention op) is an ``attention`` block, else an ``mlp``. Walks stop at shape
computations (a Reshape's shape read from a tensor's Shape is not data) and give up past :data:`MAX_REGION` nodes.

Everything else (embeddings, norms, residual adds, the LM head) is **replicated**: each device
runs it whole. A model with no block is not split at all, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cost.records import CostGraph, NodeRecord

# the most nodes between a block's two projections: an attention block of an export has a few
# dozen (RoPE, masks, head reshapes); a walk past this has left the block
MAX_REGION = 400


@dataclass(frozen=True)
class Block:
    """One column-parallel / row-parallel pair."""

    kind: str  # "attention" | "mlp"
    first: tuple[str, ...]  # the column-parallel projections, in the model's order
    second: str  # the row-parallel projection
    inner: tuple[str, ...]  # the nodes between them, in the model's order
    hidden: int  # the columns the block reads and writes (the residual stream's width)
    columns: dict[str, int] = field(default_factory=dict)  # projection -> output columns (the second: its rows K)
    heads: dict[str, int] = field(default_factory=dict)  # first projection -> heads its columns hold (attention)

    def ways(self, name: str, devices: int) -> int:
        """Over how many devices ``name``'s work is divided. A key or value projection with fewer
        heads than devices is replicated so that each device holds one whole head (Megatron-LM,
        TensorRT-LLM and vLLM replicate KV heads this way): it divides over its heads, not N."""
        heads = self.heads.get(name)
        return min(devices, heads) if heads else devices

    def splits_over(self, devices: int) -> str | None:
        """None when the block divides evenly over ``devices``; else why not."""
        if self.kind == "attention" and self.heads:
            query = max(self.heads.values())  # the query projection holds the most heads
            if query % devices:
                return f"{query} attention heads do not divide over {devices} devices"
            for heads in self.heads.values():
                if (heads % devices) if heads >= devices else (devices % heads):
                    return f"{heads} key/value heads neither divide over nor replicate evenly onto {devices} devices"
            return None
        for name in (*self.first, self.second):
            if self.columns.get(name, 0) % devices:
                return f"a projection of {self.columns.get(name, 0)} columns does not divide over {devices} devices"
        return None


@dataclass(frozen=True)
class Structure:
    blocks: tuple[Block, ...]
    replicated: tuple[str, ...]  # nodes with work outside every block: each device runs them whole
    notes: tuple[str, ...] = ()

    @property
    def recognised(self) -> bool:
        return bool(self.blocks)

    def split_ways(self, devices: int) -> dict[str, int]:
        """node -> over how many devices its work divides (absent: replicated)."""
        ways: dict[str, int] = {}
        for block in self.blocks:
            for name in block.first:
                ways[name] = block.ways(name, devices)
            for name in (*block.inner, block.second):
                ways[name] = devices
        return ways

    def byte_ways(self, devices: int) -> dict[str, int]:
        """node -> over how many devices the bytes it moves divide: its work's ways, but the
        attention between an attention block's projections reads the KV heads each device holds,
        so with fewer KV heads than devices it divides over the KV heads (each device reads one
        head's cache whole), while its FLOPs divide over the devices' query heads."""
        ways = self.split_ways(devices)
        for block in self.blocks:
            if block.kind == "attention" and block.heads:
                held = min(devices, min(block.heads.values()))
                for name in block.inner:
                    ways[name] = held
        return ways


def is_projection(record: NodeRecord) -> bool:
    """A product with a stored weight matrix: MACs, and a 2-D parameter operand ``W`` whose two
    dims are the activation's last dim (what it contracts) and the output's last dim (what it
    makes). A fused attention op that reads a stored rotary table is not one: the table's dims are
    neither.

    >>> from onnxroof.cost.records import NodeRecord
    >>> def node(shapes, out):
    ...     return NodeRecord("n", "MatMul", "", 0, "matmul", "ok", "", ["x", "w"], ["y"], shapes, [], [out], [], "",
    ...                       macs=1, param_inputs=["w"])
    >>> (is_projection(node([[1, 1, 64], [64, 16]], [1, 1, 16])),
    ...  is_projection(node([[1, 1, 64], [4096, 32]], [1, 1, 64])))
    (True, False)
    """
    if not record.macs or not record.param_inputs or not record.output_shapes:
        return False
    made = _width(record.output_shapes[0])
    read = [_width(shape) for name, shape in zip(record.inputs, record.input_shapes) if name not in record.param_inputs]
    for name, shape in zip(record.inputs, record.input_shapes):
        if name in record.param_inputs and shape is not None and len(shape) == 2:
            if made is not None and read and read[0] is not None and sorted(shape) == sorted((read[0], made)):
                return True
    return False


def _activation_input(record: NodeRecord) -> str | None:
    return next((name for name in record.inputs if name and name not in record.param_inputs), None)


def _width(shape: list | None) -> int | None:
    return shape[-1] if shape and isinstance(shape[-1], int) else None


def find_structure(graph: CostGraph, head_size: int | None = None) -> Structure:
    """The blocks of ``graph``. ``head_size`` (a decoder's KV cache's, when the LLM stage found
    one) counts the heads of a projection when the graph's score product does not show them."""
    by_name = {record.name: record for record in graph.records}
    position = {record.name: i for i, record in enumerate(graph.records)}
    blocks: list[Block] = []
    taken: set[str] = set()
    for record in graph.records:
        if not is_projection(record) or record.name in taken:
            continue
        block = _block_ending_at(record, graph, by_name, position, taken, head_size)
        if block is not None:
            blocks.append(block)
            taken.update(block.first, block.inner, (block.second,))
    replicated = tuple(
        r.name
        for r in graph.records
        if r.name not in taken and (r.flops or r.memory_bytes) and not r.shape_only and not r.view
    )
    notes = (
        ()
        if blocks
        else (
            "no attention or MLP block found (column-parallel projections feeding a row-parallel "
            "one): the model is not split by tensor parallelism; every node is replicated",
        )
    )
    return Structure(tuple(blocks), replicated, notes)


def _block_ending_at(
    second: NodeRecord,
    graph: CostGraph,
    by_name: dict,
    position: dict[str, int],
    taken: set[str],
    head_size: int | None,
) -> Block | None:
    """The block whose row-parallel projection is ``second``: the nodes between it and the
    column-parallel projections that all read one source, if they make a block."""
    start = _activation_input(second)
    if start is None:
        return None
    found = _region_above(start, graph, by_name)
    if found is None:
        return None
    region, firsts = found
    if not firsts or firsts & taken:
        return None
    first = sorted(firsts, key=position.__getitem__)
    sources = {_activation_input(by_name[name]) for name in first}
    if len(sources) != 1:
        return None
    source = sources.pop()
    if any(source in by_name[name].inputs for name in region):  # a path around the projections: no split
        return None
    hidden = _width(_shape(graph, source))
    if hidden is None or _width(second.output_shapes[0] if second.output_shapes else None) != hidden:
        return None
    inner = tuple(sorted(region, key=position.__getitem__))
    columns = {name: _width(by_name[name].output_shapes[0]) or 0 for name in first}
    columns[second.name] = _width(_shape(graph, start)) or 0
    # a product that is not a projection: scores and context (or a fused attention op reading a rotary table)
    products = [by_name[name] for name in inner if by_name[name].macs and not is_projection(by_name[name])]
    kind = "attention" if products else "mlp"
    heads = _heads(products[0], first, columns, head_size) if products else {}
    return Block(kind, tuple(first), second.name, inner, hidden, columns, heads)


def _region_above(start: str, graph: CostGraph, by_name: dict) -> tuple[set[str], set[str]] | None:
    """The nodes ``start`` is computed from, up to the projections (shape arithmetic left out):
    (the region, the projections that bound it); None past MAX_REGION nodes."""
    region: set[str] = set()
    firsts: set[str] = set()
    stack = [start]
    while stack:
        tensor = graph.tensors.get(stack.pop())
        producer = by_name.get(tensor.producer) if tensor is not None and tensor.producer else None
        if producer is None or producer.name in region or producer.name in firsts:
            continue
        if is_projection(producer):
            firsts.add(producer.name)
            continue
        if producer.shape_only:  # shape arithmetic: settings, not the block's data
            continue
        region.add(producer.name)
        if len(region) > MAX_REGION:
            return None
        stack.extend(name for name in producer.inputs if name and name not in producer.param_inputs)
    return region, firsts


def _shape(graph: CostGraph, tensor: str | None) -> list | None:
    record = graph.tensors.get(tensor) if tensor else None
    return list(record.shape) if record is not None and record.shape else None


def _heads(scores: NodeRecord, first: list[str], columns: dict[str, int], head_size: int | None) -> dict[str, int]:
    """Heads each first projection's columns hold: the head size from the score product's query
    operand ``[batch, heads, sequence, head size]`` (else the KV cache's), each projection's
    columns over it. {} when no head size is known (the block then splits by columns)."""
    shape = scores.input_shapes[0] if scores.input_shapes else None
    size = shape[-1] if shape and len(shape) == 4 and isinstance(shape[-1], int) else head_size
    if not size:
        return {}
    heads = {name: columns[name] // size for name in first if columns[name] and columns[name] % size == 0}
    return heads if len(heads) == len(first) else {}
