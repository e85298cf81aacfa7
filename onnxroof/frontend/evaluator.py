"""The partial evaluator of shape computations, run by the shape stage (shapes.py) after ONNX's
own inference.

ONNX's inference (even with data propagation) often stops at shape arithmetic in real exports:
Shape -> Gather -> Concat -> Reshape, Range, Expand, Where over int64 tensors. Once every input
dim is bound, those small integer computations have concrete values, so ``PartialEvaluator``
runs them (with onnx's own reference kernels, one node at a time) and re-infers the nodes still
left unknown with the computed values as constants. One pass in topological order; weights are
never converted to arrays (only small initializers and Constant nodes are read).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..core.nodes import DEFAULT_DOMAINS, NodeFields, has_subgraph, node_names, read_node_fields
from ..core.tensors import TensorInfo, info_from_value_info
from .bodies import bind_body_inputs, taken_branch
from .one_node import inference_complaint, merged_info, node_signature, run_reference
from .value_sizes import constant_info, predicted_elements

# Shape arithmetic the partial evaluator runs when all inputs have values: this stage's own
# choice of what it runs (onnx.reference's kernels, on small values), not a fact about the ops.
EVALUABLE_OPS = frozenset(
    """Abs Add And Cast CastLike Ceil Clip Concat ConstantOfShape CumSum Div Equal Expand Flatten
    Floor Gather GatherElements GatherND Greater GreaterOrEqual Identity Less LessOrEqual Max Min
    Mod Mul Neg NonZero Not Or Pow Range Reciprocal ReduceMax ReduceMin ReduceProd ReduceSum
    Reshape Round ScatterElements ScatterND Shape Sign Size Slice Split Sqrt Squeeze Sub Tile
    Transpose Trilu Unsqueeze Where Xor""".split()
)
# Values larger than this are not kept: shape arithmetic is tiny, weights are not evaluated.
# An op predicted to write more (value_sizes.py) is not run at all.
MAX_VALUE_ELEMENTS = 4096
# All the values kept, together, at most (each distinct array counted once): 32 MB of int64s. A
# graph of 100,000 nodes each computing its own 4,096-element value stops keeping them here.
MAX_KEPT_ELEMENTS = 2**22
# An op whose inputs, as listed, hold more than this many times MAX_VALUE_ELEMENTS is not run.
_READ_FACTOR = 16


# What the cost rules say an op without an ONNX schema writes (ops.output_types): the rules sit
# above this stage, so the caller hands it in.
OutputTypes = Callable[[onnx.NodeProto, tuple["TensorInfo | None", ...], dict], "list[TensorInfo | None] | None"]


def has_schema(domain: str, op_type: str, opsets: dict[str, int] | None = None) -> bool:
    """Whether ONNX has a schema for the op at the model's opset (``opsets``: domain -> version):
    LayerNormalization exists from opset 17, and onnxruntime's optimizer writes its own into
    opset 12-16 models, which its rule must then size."""
    domain = "" if domain in DEFAULT_DOMAINS else domain
    if opsets and domain in opsets:
        return onnx.defs.has(op_type, opsets[domain], domain)
    return onnx.defs.has(op_type, domain)


class PartialEvaluator:
    """Runs small shape computations and re-infers, one node at a time, what ONNX left unknown."""

    def __init__(
        self,
        model: onnx.ModelProto,
        tensors: dict[str, TensorInfo],
        values: dict[str, np.ndarray],
        stored: dict[str, TensorInfo],
        order: Sequence[onnx.NodeProto],
        fields: Sequence[NodeFields],
        nested: bool,
        output_types: OutputTypes | None = None,
        assumed_sizes: dict[str, int] | None = None,
    ):
        self.tensors = tensors
        self.values = values
        self.stored = stored
        self.opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version for o in model.opset_import}
        self.opset_imports = list(model.opset_import)
        self.ir_version = model.ir_version
        self.failures: dict[str, str] = {}  # tensor -> why its shape is unknown
        self.uninferred: set[str] = set()  # outputs of nodes onnx could not infer
        self.roots: list[list] = []  # [label, op_type, complaint, nodes affected] per failing node
        self.untaken: list[str] = []  # labels of the If branches a known condition does not take
        self._root_of: dict[str, int] = {}  # tensor -> index in roots
        self._order = order
        self._fields = fields  # NodeFields of the order, aligned with it
        self._nested = nested  # whether any node may have a subgraph
        self._onnx_inferred = dict(tensors)  # as onnx's whole-graph inference left them
        self._labels: list[str] | None = None  # node_names(fields), named only once a node fails
        # node signature (_signature) -> what running it gave, and what onnx inferred of it alone:
        # most models repeat one layer, so most shape computations are repeats
        self._runs: dict[tuple, tuple | None] = {}
        self._inferences: dict[tuple, list[TensorInfo] | None] = {}
        self._ruled_ops: dict[tuple[str, str], bool] = {}  # (domain, op_type) -> sized by its rule (see _ruled)
        self._output_types = output_types
        self._assumed = assumed_sizes or {}  # data-dependent symbol -> the size it is taken to be
        self._rule_disagreements: list[tuple[str, TensorInfo, TensorInfo]] = []  # (op, stored, rule's)
        self._kept_elements = sum(v.size for v in values.values())  # of the values kept (MAX_KEPT_ELEMENTS)
        self._counted = {id(v) for v in values.values()}  # the arrays counted in it (results are shared)

    def run(self) -> None:
        """Visit every node of the order that has anything left to do."""
        settled = self._settled
        for index, node_fields in enumerate(self._fields):
            if self._root_of and self._tainted(node_fields):
                continue
            if not settled(node_fields):
                self.visit(self._order[index], node_fields, index)

    def _tainted(self, node_fields: NodeFields) -> bool:
        """Whether the node reads an output of a failed node: if so its own outputs are not to be
        trusted either, and are failed too."""
        root_of = self._root_of
        tainted = next((n for n in node_fields.inputs if n in root_of), None)
        if tainted is None:
            return False
        root = self.roots[root_of[tainted]]
        root[3] += 1
        self._fail(
            node_fields.outputs,
            root_of[tainted],
            f"depends on node {root[0]!r}, whose shape inference failed: {root[2]}",
        )
        return True

    def _split_pieces(self, node: onnx.NodeProto, node_fields: NodeFields) -> None:
        """A Split by sizes computed from the data (a Mixture-of-Experts router's counts): onnx gives
        its outputs no shape at all. Each output is the input with a size of its own along the axis,
        ``<output>_rows``; the sizes are data-dependent and add up to the input's (see splits.py)."""
        data = self._info(node_fields.inputs[0]) if node_fields.inputs else None
        outputs = [o for o in node_fields.outputs if o]
        if data is None or data.shape is None or any(self._info(o).shape is not None for o in outputs):
            return
        axis = next((helper.get_attribute_value(a) for a in node_fields.attributes if a.name == "axis"), 0)
        axis = axis + len(data.shape) if axis < 0 else axis
        if not 0 <= axis < len(data.shape):
            return
        for output in outputs:
            rows = f"{output}_rows"
            self.tensors[output] = TensorInfo(
                output, data.dtype, (*data.shape[:axis], self._assumed.get(rows, rows), *data.shape[axis + 1 :])
            )

    def _ruled(self, node_fields: NodeFields) -> bool:
        """Whether the node's outputs are sized by its cost rule: ops with no ONNX schema, and the
        ai.onnx.ml ops, whose schemas infer no shape for most of them (Scaler, SVMClassifier, ...)."""
        if self._output_types is None:
            return False
        kind = (node_fields.domain, node_fields.op_type)
        ruled = self._ruled_ops.get(kind)
        if ruled is None:
            ruled = self._ruled_ops[kind] = kind[0] == "ai.onnx.ml" or not has_schema(*kind, self.opsets)
        return ruled

    def visit(
        self, node: onnx.NodeProto, node_fields: NodeFields, index: int, labels: Sequence[str] | None = None
    ) -> None:
        """Evaluate or re-infer ``node`` (of fields ``node_fields``), the ``index``-th of the order
        (of a subgraph's order when ``labels``, its nodes' names, are given)."""
        op_type, outputs = node_fields.op_type, node_fields.outputs
        if self._ruled(node_fields):
            self._from_rule(node, node_fields)
        elif self._nested and has_subgraph(node_fields.attributes):
            if node_fields.domain in DEFAULT_DOMAINS:
                self._visit_subgraphs(node, node_fields, labels, index)
        elif node_fields.domain in DEFAULT_DOMAINS:
            if op_type == "Constant":
                self._constant(node, node_fields)
            elif not (op_type in EVALUABLE_OPS and self._evaluate(node, node_fields)):
                if any(not self._info(o).is_known for o in outputs if o):
                    complaint = self._reinfer(node, node_fields)
                    if complaint:
                        shapes = ", ".join(self._info(n).shape_text() if n else "-" for n in node_fields.inputs)
                        self._root(node_fields, index, f"{complaint} (input shapes {shapes})", labels)
                        self.uninferred.update(o for o in outputs if o)
                        return
            if op_type == "Split":
                self._split_pieces(node, node_fields)
            if op_type == "Reshape":
                complaint = self._reshape_mismatch(node_fields)
                if complaint:
                    self._root(node_fields, index, complaint, labels)
                    return
        for output in outputs:  # last resort: the shape the exporter stored
            if output in self.stored:
                self._update(self.stored[output])

    def _from_rule(self, node: onnx.NodeProto, node_fields: NodeFields) -> None:
        """The outputs of an op ONNX has no schema for, as its cost rule sizes them from the inputs.
        A shape the rule derives wins over the stored one (stale once inputs are re-bound); the
        disagreement is noted."""
        inputs = tuple(self._info(n) if n else None for n in node_fields.inputs)
        # (type: ignore below) only nodes _ruled accepts come here, which needs a rule
        found = self._output_types(node, inputs, self.values)  # type: ignore[misc]
        for info in found or ():
            if info is None:
                continue
            old = self._info(info.name)
            stored = self.stored.get(info.name)
            if info.is_known:
                if stored is not None and stored.is_known and stored.shape != info.shape:
                    self._rule_disagreements.append((node_fields.op_type, stored, info))
                self.tensors[info.name] = TensorInfo(info.name, info.dtype or old.dtype, info.shape)
            else:
                self._update(TensorInfo(info.name, info.dtype or old.dtype, info.shape))

    def rule_notes(self) -> list[str]:
        if not self._rule_disagreements:
            return []
        op_type, stored, derived = self._rule_disagreements[0]
        return [
            f"{len(self._rule_disagreements)} stored shape(s) of contrib-op outputs differ from what the op's "
            f"rule derives from its inputs (e.g. {op_type} output {stored.name}: stored {stored.shape_text()}, "
            f"derived {derived.shape_text()}); the derived ones are used"
        ]

    def _visit_subgraphs(
        self, node: onnx.NodeProto, node_fields: NodeFields, labels: Sequence[str] | None, index: int
    ) -> None:
        """Evaluate the nodes of an If's branches or a Loop's or Scan's body, which see the outer
        scope's values. Both branches of an If are evaluated (both are shown and their stored
        tensors counted, so what is a setting must not depend on the branch taken); when its
        condition is known, its outputs are the taken branch's (with their values)."""
        label = (labels if labels is not None else self._node_labels())[index]
        bodies = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
        if node_fields.op_type == "If":
            self._visit_branches(node_fields, bodies, label)
            return
        body = bodies.get("body")
        if body is None:
            return
        bind_body_inputs(node_fields.op_type, node, node_fields.inputs, body, self._info, self.tensors)
        self.run_graph(body, f"{label}/body")

    def _visit_branches(self, node_fields: NodeFields, bodies: dict[str, onnx.GraphProto], label: str) -> None:
        """Both branches of an If visited; its outputs those its branches agree on (the taken one's
        when its condition is known, with their values)."""
        inputs = node_fields.inputs
        taken = taken_branch(self.values.get(inputs[0]) if inputs and inputs[0] else None)
        for name, body in bodies.items():
            self.run_graph(body, f"{label}/{name}")
            if taken and name != taken:  # shown, not counted: its failures are noted as such
                self.untaken.append(f"{label}/{name}/")
        branches = [bodies[taken]] if taken else list(bodies.values())
        for slot, output in enumerate(node_fields.outputs):
            results = [self._info(b.output[slot].name) for b in branches if slot < len(b.output)]
            if output and results and all(r.is_known and r.shape == results[0].shape for r in results):
                self.tensors[output] = TensorInfo(
                    output, results[0].dtype or self._info(output).dtype, results[0].shape
                )
                value = self.values.get(branches[0].output[slot].name) if taken else None
                if value is not None:
                    self.values[output] = value

    def run_graph(self, graph: onnx.GraphProto, prefix: str) -> None:
        """Visit the nodes of a subgraph (names are model-wide, so its tensors share the maps)."""
        for tensor in graph.initializer:
            if tensor.name not in self.tensors or not self.tensors[tensor.name].is_known:
                self.tensors[tensor.name] = TensorInfo(tensor.name, tensor.data_type, tuple(tensor.dims))
        nodes = list(graph.node)
        fields = read_node_fields(nodes)
        labels = [f"{prefix}/{name}" for name in node_names(fields)]
        for index, (node, node_fields) in enumerate(zip(nodes, fields)):
            if self._root_of and self._tainted(node_fields):
                continue
            if not self._settled(node_fields):
                self.visit(node, node_fields, index, labels)

    def _node_labels(self) -> list[str]:
        if self._labels is None:
            self._labels = node_names(self._fields)
        return self._labels

    def _settled(self, node_fields: NodeFields) -> bool:
        """Nothing left to do for the node (most nodes of a big graph): onnx knows every output's
        shape, and there is nothing to evaluate or check (the stored shapes cannot add to a known one)."""
        op_type = node_fields.op_type
        if op_type in _ALWAYS_VISITED or self._ruled(node_fields):
            return False
        if self._nested and node_fields.attributes and has_subgraph(node_fields.attributes):
            return False  # its body's shape computations are evaluated
        tensors = self.tensors
        for output in node_fields.outputs:
            info = tensors.get(output)
            if (info is None or not info.is_known) and (output or output in self.stored):
                return False
        if op_type in EVALUABLE_OPS:  # settled unless every input has a value to evaluate it with
            values = self.values
            for name in node_fields.inputs:
                if name and name not in values:
                    return True
            return False
        return True

    def _root(self, node_fields: NodeFields, index: int, complaint: str, labels: Sequence[str] | None = None) -> None:
        self.roots.append(
            [(labels if labels is not None else self._node_labels())[index], node_fields.op_type, complaint, 1]
        )
        self._fail(node_fields.outputs, len(self.roots) - 1, f"shape inference failed on this node: {complaint}")

    def _fail(self, outputs: Iterable[str], root: int, reason: str) -> None:
        """Forget what is known of a node's ``outputs``: they are unknown, for ``reason``."""
        for output in outputs:
            if output:
                self.tensors[output] = TensorInfo(output, self._info(output).dtype)
                self.values.pop(output, None)
                self.failures[output] = reason
                self._root_of[output] = root

    def _reshape_mismatch(self, node_fields: NodeFields) -> str | None:
        """onnx infers a Reshape to a constant shape without checking the element count."""
        source, result = self._info(node_fields.inputs[0]), self._info(node_fields.outputs[0])
        if not (source.is_known and result.is_known) or source.numel == result.numel:
            return None
        return (
            f"cannot reshape {source.shape_text()} ({source.numel:,} elements) to {result.shape_text()} "
            f"({result.numel:,} elements)"
        )

    def _info(self, name: str) -> TensorInfo:
        return self.tensors.setdefault(name, TensorInfo(name))

    def _update(self, new: TensorInfo) -> None:
        merged = merged_info(self._info(new.name), new)
        if merged is not None:
            self.tensors[new.name] = merged

    def _constant(self, node: onnx.NodeProto, node_fields: NodeFields) -> None:
        """A Constant's shape comes from its attribute; its value is read only when small."""
        declared = constant_info(node)
        if declared is None:
            self._reinfer(node, node_fields)
            return
        dtype, shape, readable = declared
        output = node_fields.outputs[0]
        self.tensors[output] = TensorInfo(output, dtype, shape)
        if readable and math.prod(shape) <= MAX_VALUE_ELEMENTS:
            self._evaluate(node, node_fields)

    def _evaluate(self, node: onnx.NodeProto, node_fields: NodeFields) -> bool:
        """Run ``node`` if all its inputs have values; True when every output got a value."""
        op_type, inputs = node_fields.op_type, node_fields.inputs
        if op_type in ("Shape", "Size"):
            return self._shape_value(node_fields)
        values = self.values
        if not all(name in values for name in inputs if name):
            return False
        args = [values[name] if name else None for name in inputs]
        if op_type != "Constant" and not self._small_enough(op_type, args, node_fields):
            return False  # not run: its shape is inferred instead (a Constant's size was read first)
        results = self._once(self._runs, node_fields, lambda: self._run(node, args))
        if results is None:
            return False
        outputs = [(name, result) for name, result in zip(node_fields.outputs, results) if name]
        if not all(isinstance(result, (np.ndarray, np.generic)) for _, result in outputs):
            return False
        for name, result in outputs:
            self._store(name, np.asarray(result))
        return True

    def _small_enough(self, op_type: str, args: list[np.ndarray | None], node_fields: NodeFields) -> bool:
        """Whether the op's outputs, predicted before running it, would be kept: each no larger than
        MAX_VALUE_ELEMENTS, and room for them in MAX_KEPT_ELEMENTS; and its inputs as listed are
        shape arithmetic's size (a Max of one value listed 100,000 times reads 400 million)."""
        if sum(arg.size for arg in args if arg is not None) > _READ_FACTOR * MAX_VALUE_ELEMENTS:
            return False
        attributes = {a.name: a.i for a in node_fields.attributes if a.type == onnx.AttributeProto.INT}
        predicted = predicted_elements(op_type, args, attributes)
        return (
            predicted is not None
            and predicted <= MAX_VALUE_ELEMENTS
            and self._kept_elements + predicted <= MAX_KEPT_ELEMENTS
        )

    def _run(self, node: onnx.NodeProto, args: list[np.ndarray | None]) -> tuple | None:
        """The results of onnx's reference kernel for ``node`` on ``args``, or None if it fails."""
        return run_reference(node, args, self.opsets)

    def _once(self, done: dict, node_fields: NodeFields, work: Callable[[], Any]) -> Any:
        """``work()`` for the node, or what it gave for an earlier node of the same signature (kept in ``done``)."""
        signature = node_signature(node_fields, self.values, self._info)
        if signature is None:
            return work()
        if signature not in done:
            done[signature] = work()
        return done[signature]

    def _shape_value(self, node_fields: NodeFields) -> bool:
        info = self._info(node_fields.inputs[0])
        if not info.is_known:
            return False
        shape: tuple[int, ...] = info.shape  # type: ignore[assignment]  # is_known: every dim an int
        if node_fields.op_type == "Size":
            self._store(node_fields.outputs[0], np.array(math.prod(shape), dtype=np.int64))
            return True
        attributes = {a.name: helper.get_attribute_value(a) for a in node_fields.attributes}
        rank = len(shape)
        start, end = (
            max(0, min(rank, i + rank if i < 0 else i))
            for i in (attributes.get("start", 0), attributes.get("end", rank))
        )
        self._store(node_fields.outputs[0], np.array(shape[start:end], dtype=np.int64))
        return True

    def _store(self, name: str, value: np.ndarray) -> None:
        dtype = self._info(name).dtype  # what inference said, else the value's own
        if not dtype:
            try:
                dtype = helper.np_dtype_to_tensor_dtype(value.dtype)
            except Exception:  # strings, exotic float types
                dtype = 0
        self.tensors[name] = TensorInfo(name, dtype, tuple(int(d) for d in value.shape))
        if value.size > MAX_VALUE_ELEMENTS:
            return
        if id(value) not in self._counted:
            if self._kept_elements + value.size > MAX_KEPT_ELEMENTS:
                return  # the shape is known; the value is left unknown, as a too-big one is
            self._kept_elements += value.size
            self._counted.add(id(value))
        self.values[name] = value

    def _reinfer(self, node: onnx.NodeProto, node_fields: NodeFields) -> str | None:
        """Infer one node alone, feeding every input value the evaluator knows as a constant.

        Returns onnx's complaint when this node, with every input known, still has no shape."""
        if self._nothing_to_learn(node_fields):
            return None
        outputs = [o for o in node_fields.outputs if o]
        names = list(dict.fromkeys(n for n in node_fields.inputs if n))
        if not self._typed(names):
            return None
        inferred = self._once(self._inferences, node_fields, lambda: self._infer_alone(node, names, outputs))
        if inferred is None:
            return None
        self._take_inferred(names, outputs, inferred)
        if all(self._info(o).shape is not None for o in outputs) or not has_schema(
            node_fields.domain, node_fields.op_type
        ):
            return None
        try:  # still no shape, with every input known: ask again, strictly, to hear why
            single, small = self._alone(node, names, outputs)
            onnx.shape_inference.infer_shapes(single, strict_mode=True, data_prop=small)
        except onnx.shape_inference.InferenceError as exc:
            return inference_complaint(exc)
        except Exception:
            return None
        return None

    def _typed(self, names: list[str]) -> bool:
        """Whether every input has a value, or a shape and a type (what a model of the node alone needs)."""
        for name in names:
            if name not in self.values:
                info = self._info(name)
                if info.shape is None or not info.dtype:
                    return False
        return True

    def _take_inferred(self, names: list[str], outputs: list[str], inferred: list[TensorInfo]) -> None:
        """Merge what onnx inferred of the node alone. A dim onnx names afresh (unk__0: a NonZero's
        count) is this node's own: named after its output, since onnx restarts its names in every
        one-node model and look-alike nodes share a result."""
        input_symbols = {d for n in names for d in (self._info(n).shape or ()) if isinstance(d, str)}
        for output, info in zip(outputs, inferred):
            shape = info.shape
            if shape is not None and any(isinstance(d, str) and d not in input_symbols for d in shape):
                shape = tuple(
                    self._assumed.get(f"{output}_{axis}", f"{output}_{axis}")
                    if isinstance(d, str) and d not in input_symbols
                    else d
                    for axis, d in enumerate(shape)
                )
            self._update(TensorInfo(output, info.dtype, shape))

    def _nothing_to_learn(self, node_fields: NodeFields) -> bool:
        """Whether inferring the node alone can tell no more than onnx's whole-graph inference did:
        it gave every output a rank, and saw the inputs as they are now (no values, the same
        shapes). On a model with unbound dims that is most nodes."""
        inferred, tensors = self._onnx_inferred, self.tensors
        for name in node_fields.inputs:
            if name and (name in self.values or name not in inferred or tensors.get(name) is not inferred[name]):
                return False
        return all(self._info(o).shape is not None for o in node_fields.outputs if o)

    def _alone(self, node: onnx.NodeProto, names: list[str], outputs: list[str]) -> tuple[onnx.ModelProto, bool]:
        """A model of ``node`` alone, its inputs (``names``) the values and types the evaluator
        knows, its named ``outputs``; and whether onnx's data propagation may run on it."""
        graph_inputs, initializers = [], []
        for name in names:
            if name in self.values:
                initializers.append(numpy_helper.from_array(self.values[name], name))
            else:
                info = self._info(name)
                graph_inputs.append(helper.make_tensor_value_info(name, info.dtype, list(info.shape or ())))
        single = helper.make_model(
            helper.make_graph(
                [node], "single", graph_inputs, [onnx.ValueInfoProto(name=o) for o in outputs], initializers
            ),
            opset_imports=self.opset_imports,
            ir_version=self.ir_version,
        )
        # data propagation only over small vectors: onnx's allocates one entry per element, of every
        # input as often as it is listed (a Concat of one vector 100,000 times), values included
        listed = 0
        for name in node.input:
            listed_info = self._info(name) if name else None
            if listed_info is not None and listed_info.shape is not None and len(listed_info.shape) <= 1:
                size = listed_info.shape[0] if listed_info.shape else 1
                listed += size if isinstance(size, int) else 0  # an unknown length: no data to propagate
        return single, listed <= MAX_VALUE_ELEMENTS

    def _infer_alone(self, node: onnx.NodeProto, names: list[str], outputs: list[str]) -> list[TensorInfo] | None:
        """What onnx infers of ``node``'s named ``outputs`` (in order) in a model of its own."""
        single, small = self._alone(node, names, outputs)
        try:
            inferred = onnx.shape_inference.infer_shapes(single, strict_mode=False, data_prop=small)
        except Exception:
            return None
        return [info_from_value_info(value_info) for value_info in inferred.graph.output]


# Nodes visited even when onnx knows their outputs: a Constant's value, Shape and Size from the
# shape onnx inferred, a Reshape's element count.
_ALWAYS_VISITED = frozenset({"Constant", "Reshape", "Shape", "Size"})
