"""A batch fixed inside the graph (issue 42): a static export (torch.onnx with no dynamic
shapes, ultralytics' default, tf2onnx with a fixed signature) writes its batch into the inputs
and into the shape constants of its Reshape, Expand and ConstantOfShape nodes. Another batch
given on the inputs then meets ``Reshape(x, [1, 128, 768])`` with 1024 x 768 elements: the
analysis is incomplete, or worse, a ``-1`` absorbs the batch and the graph is costed wrong
without a word. So a batch other than the export's is refused, naming the re-export that fixes it.

The rule reads the graph's structure only: the inputs' leading axis fixed at B (rank 2 or more),
and the shape operands that are stored constants (an initializer or a Constant node) whose first
element is B. The exporter's name is read only to word the fix.

>>> from onnx import TensorProto, helper, numpy_helper
>>> import numpy as np
>>> graph = helper.make_graph(
...     [helper.make_node("Reshape", ["x", "to"], ["y"])], "g",
...     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 64])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
...     [numpy_helper.from_array(np.array([1, 128, 4, 16]), "to")])
>>> fixed = fixed_batch(helper.make_model(graph, producer_name="pytorch"))
>>> fixed.batch, fixed.inputs, fixed.shapes
(1, ('x',), {'Reshape': 1})
>>> fixed.text()[:68]
'this export fixes batch 1 in its inputs and in 1 Reshape shape: re-e'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import onnx
from onnx import numpy_helper

from ..core.nodes import NodeFields, nested_graphs, read_node_fields
from .inputs import _dims_of, real_inputs

# op type -> the input that is a whole output shape (its first element is the batch)
SHAPE_OPERANDS = {"Reshape": 1, "Expand": 1, "ConstantOfShape": 0, "Resize": 3}
_MAX_SHAPE_RANK = 8  # longer int vectors are data, not shapes


@dataclass(frozen=True)
class FixedBatch:
    """The batch a static export fixes: in its inputs, and in how many shape constants of each op."""

    batch: int
    inputs: tuple[str, ...]  # inputs whose leading axis is fixed at ``batch``
    shapes: dict[str, int] = field(default_factory=dict)  # op type -> nodes whose constant shape starts with it
    fix: str = ""  # the exporter's way to a dynamic batch

    @property
    def in_shapes(self) -> int:
        """Nodes whose stored shape carries the batch: another batch makes their graph wrong."""
        return sum(self.shapes.values())

    def text(self) -> str:
        """One line for every output: where the batch is fixed and the re-export that frees it."""
        where = "its inputs"
        if self.shapes:
            counts = " and ".join(f"{n:,} {op} shape{'s' if n > 1 else ''}" for op, n in self.shapes.items())
            where += f" and in {counts}"
        return f"this export fixes batch {self.batch} in {where}: re-export with a dynamic batch ({self.fix})"

    def refusal(self, batch: int) -> str | None:
        """Why another ``batch`` cannot be analysed, or None when it can (the shapes do not carry it)."""
        if batch == self.batch or not self.shapes:
            return None
        return self.text()

    def to_dict(self) -> dict:
        return {
            "batch": self.batch,
            "inputs": list(self.inputs),
            "shapes": dict(self.shapes),
            "nodes_with_batch_in_shape": self.in_shapes,
            "fix": self.fix,
        }


def fixed_batch(model: onnx.ModelProto, fields: Sequence[NodeFields] | None = None) -> FixedBatch | None:
    """The batch the model's inputs and shape constants fix, or None (a dynamic or unnamed batch).
    ``fields``, the main graph's NodeFields when read already, spare reading each node again."""
    leading = _fixed_leading_dims(model)
    if not leading:
        return None
    batch = Counter(leading.values()).most_common(1)[0][0]
    main = read_node_fields(model.graph.node) if fields is None else fields
    graphs = [model.graph, *nested_graphs(model.graph, main)]
    nodes = [main, *(read_node_fields(graph.node) for graph in graphs[1:])]
    shapes = _shapes_holding(batch, nodes, _shape_constants(graphs, nodes))
    inputs = tuple(name for name, value in leading.items() if value == batch)
    return FixedBatch(batch, inputs, dict(shapes.most_common()), reexport_fix(model, inputs[0]))


def _fixed_leading_dims(model: onnx.ModelProto) -> dict[str, int]:
    """input -> its fixed axis 0, for the inputs of rank 2 or more that have one."""
    leading = {}
    for value_info in real_inputs(model.graph):
        dims = _dims_of(value_info)
        if dims and len(dims) >= 2 and dims[0].HasField("dim_value") and not dims[0].dim_param:
            leading[value_info.name] = dims[0].dim_value
    return leading


def _shape_constants(graphs: list[onnx.GraphProto], nodes: list[Sequence[NodeFields]]) -> dict[str, onnx.TensorProto]:
    """tensor -> the stored shape-like vector it holds (an initializer or a Constant's value);
    ``nodes``: each graph's NodeFields."""
    constants = {t.name: t for g in graphs for t in g.initializer if _shape_like(t)}
    for fields in nodes:
        for node in fields:
            if node.op_type == "Constant" and node.outputs:
                value = next((a.t for a in node.attributes if a.name == "value"), None)
                if value is not None and _shape_like(value):
                    constants[node.outputs[0]] = value
    return constants


def _shapes_holding(
    batch: int, nodes: list[Sequence[NodeFields]], constants: dict[str, onnx.TensorProto]
) -> Counter[str]:
    """op type -> its nodes whose shape operand is a constant starting with ``batch``."""
    shapes: Counter[str] = Counter()
    for fields in nodes:
        for node in fields:
            operand = SHAPE_OPERANDS.get(node.op_type)
            if node.domain in ("", "ai.onnx") and operand is not None and operand < len(node.inputs):
                tensor = constants.get(node.inputs[operand])
                if tensor is not None and _first_element(tensor) == batch:
                    shapes[node.op_type] += 1
    return shapes


def _shape_like(tensor: onnx.TensorProto) -> bool:
    """A stored 1-D int64/int32 vector of 2 to 8 elements, held in the file (not external)."""
    return (
        tensor.data_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)
        and len(tensor.dims) == 1
        and 2 <= tensor.dims[0] <= _MAX_SHAPE_RANK
        and tensor.data_location != onnx.TensorProto.EXTERNAL
    )


def _first_element(tensor: onnx.TensorProto) -> int | None:
    try:
        return int(numpy_helper.to_array(tensor).reshape(-1)[0])
    except (ValueError, IndexError, TypeError):
        return None


def reexport_fix(model: onnx.ModelProto, name: str) -> str:
    """The exporter's option for a dynamic batch of input ``name``, by the producer the file names."""
    producer = model.producer_name.lower()
    metadata = {p.key.lower(): p.value for p in model.metadata_props}
    if "ultralytics" in metadata.get("author", "").lower():
        return "ultralytics: model.export(format='onnx', dynamic=True)"
    if producer == "pytorch":
        return (
            f"torch.onnx.export(..., dynamic_shapes={{'{name}': {{0: torch.export.Dim('batch')}}}}) with "
            f"dynamo=True, or dynamic_axes={{'{name}': {{0: 'batch'}}}} with dynamo=False"
        )
    if producer.startswith("tf2onnx"):
        return "tf2onnx: a None batch dim in the input signature, or --inputs name:0[-1,...]"
    if producer.startswith("paddle"):
        return "paddle2onnx: an input_spec with shape [None, ...]"
    if producer.startswith("skl2onnx") or producer.startswith("onnxmltools"):
        return "initial_types with None as the batch dim"
    return "the exporter's dynamic axes / dynamic shapes option on the batch"
