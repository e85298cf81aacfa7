"""The cost DAG, one cost record per ONNX node, linked by the tensors they exchange.

Edges carry tensors (producer -> consumer) and their bytes. Tensors computed only from
initializers and constants are parameters, not activations, and their producers are folded
(they cost nothing at run time). One linear pass over the nodes; no weight is ever read.

>>> from onnxroof.core.examples import build_example
>>> from onnxroof.frontend.shapes import infer_shapes
>>> model = build_example("shallownet")
>>> graph = cost_graph(model, infer_shapes(model, model.graph.node))
>>> [record.op_type for record in graph.records]
['Conv', 'Relu', 'Flatten', 'Gemm', 'Softmax']
>>> dag = graph.to_networkx()
>>> list(dag.successors("conv2d_0")), dag.edges["conv2d_0", "activation_0"]["bytes"]
(['activation_0'], 131072)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import onnx

from ..core.dtypes import dtype_name, tensor_bytes
from ..core.nodes import DEFAULT_DOMAINS, NodeFields, node_names, read_node_fields
from ..core.tensors import TensorInfo
from ..frontend.shape_arithmetic import settings_tensors
from ..frontend.shapes import ShapeResult
from ..ops import NodeView, OpCost, OpRule, OpTrait, rule_for
from .derived import (
    NO_COST,
    NO_TRAFFIC,
    Derived,
    Traffic,
    ValueReads,
    apply_rule,
    computed_from_constants,
    not_costed_ops,
    op_family,
    partial_bytes,
    shapes_and_dtypes,
    split_inputs,
    with_subgraphs,
)
from .masks import hidden_positions, softmax_axes
from .records import CostGraph, CostOptions, NodeRecord, NodeStatus, SubgraphCost, TensorRecord
from .running import running_graph

# Ops that only re-lay or re-type a constant: the bytes a node reads of their result per run are
# the bytes of the data they read (an int8 weight behind DequantizeLinear is read as int8: runtimes
# fuse the dequantization into the integer kernel).
_STORAGE_PRESERVING = OpTrait.RESHAPE | OpTrait.IDENTITY | OpTrait.RETYPE | OpTrait.PERMUTES_AXES | OpTrait.DEQUANTIZE
_NO_TRAITS = OpTrait.NONE
_GRAPH_ATTRIBUTE = onnx.AttributeProto.GRAPH
_NO_INFO = TensorInfo("")  # a tensor nothing is known about
# the parameter inputs and subgraphs of a record that has none: one shared empty object (no reader
# of a record mutates them) instead of one per node
_NO_PARAMETERS: list[str] = []
_NO_SUBGRAPHS: dict[str, SubgraphCost] = {}
_NO_PARTIAL: dict[str, int] = {}  # the partial reads and writes of a record that has none
_NO_SCOPE: tuple[str, ...] = ()


def _name_scopes(node: onnx.NodeProto) -> tuple[str, ...]:
    """The module path in PyTorch's ``pkg.torch.onnx.name_scopes`` metadata: each entry is a
    module's full dotted path (``['', 'm', 'm.model', 'm.model.layers.0', 'add_3']``, the last
    the node itself), so each module's own name is what it adds to its parent's
    (``('m', 'model', 'layers.0')``).

    >>> node = onnx.helper.make_node("Add", ["a", "b"], ["c"])
    >>> entry = node.metadata_props.add(); entry.key = "pkg.torch.onnx.name_scopes"
    >>> entry.value = "['', 'm', 'm.model', 'm.model.layers.0', 'add_3']"
    >>> _name_scopes(node)
    ('m', 'model', 'layers.0')
    """
    import ast

    text = next((p.value for p in node.metadata_props if p.key == "pkg.torch.onnx.name_scopes"), None)
    if not text:
        return _NO_SCOPE
    try:
        scopes = [s for s in ast.literal_eval(text) if isinstance(s, str)]
    except (ValueError, SyntaxError):
        return _NO_SCOPE
    path, parent = [], ""
    for scope in scopes[:-1]:  # the last entry is the node itself
        if not scope:
            continue
        own = scope[len(parent) + 1 :] if parent and scope.startswith(parent + ".") else scope
        path.append(own)
        parent = scope
    return tuple(path)


class _Coster:
    """Costs the nodes of a graph and, recursively, of its subgraphs (one pass per graph)."""

    def __init__(self, graph: onnx.GraphProto, shapes: ShapeResult, options: CostOptions):
        self.tensors = shapes.tensors
        self.values = shapes.values
        self.failures = shapes.failures
        self.uninferred = shapes.uninferred
        # folded constant -> the stored roots it is computed from (cost-model.md section 3); a
        # tensor not here is its own root (an initializer)
        self.roots: dict[str, tuple[str, ...]] = {}
        self.parameter_tensors: set[str] = set()  # every stored root some costed node reads
        self.options = options
        self._derived: dict[tuple, Derived] = {}  # node signature -> what its record derives from it
        self.constant: set[str] = set()
        self.stored: dict[str, int] = {}  # constant tensor -> bytes a node reads of it per run
        # stored root -> (elements, stored bytes): the model's parameters, each counted once
        self.parameters: dict[str, tuple[int, int]] = {}
        # DequantizeLinear output -> its quantized input, for the QDQ compute dtype (filled as costed)
        self.dequantized_from: dict[str, str] = {}
        # computed tensors that only set other nodes' shapes and options (shape arithmetic)
        self.settings: set[str] = set()
        self._add_initializers(list(graph.initializer))

    def info(self, name: str) -> TensorInfo:
        return self.tensors.get(name) or TensorInfo(name)

    def size(self, name: str) -> int | None:
        # not memoized: most tensors are sized once (their record), and TensorInfo holds numel
        tensor = self.tensors.get(name)
        return None if tensor is None or tensor.numel is None else tensor_bytes(tensor.numel, tensor.dtype)

    def _add_initializers(self, initializers: list[onnx.TensorProto]) -> None:
        for tensor in initializers:
            self.constant.add(tensor.name)
            self.stored[tensor.name] = self.size(tensor.name) or 0

    def cost_node(self, node: onnx.NodeProto, fields: NodeFields, name: str, index: int) -> NodeRecord:
        # the node's fields come read (protobuf field reads cost about 1 µs each): this runs once
        # per node of graphs of 10^5 nodes
        _, op_type, domain, inputs, outputs, attributes = fields
        graph_attributes = [a for a in attributes if a.type == _GRAPH_ATTRIBUTE] if attributes else None
        if op_type == "DequantizeLinear" and inputs and outputs:
            # for the QDQ compute dtype; nodes come in topological order (load checks it), so this
            # is known before any consumer is costed
            self.dequantized_from[outputs[0]] = inputs[0]
        rule = rule_for(domain, op_type)
        traits = rule.traits if rule is not None else _NO_TRAITS
        is_folded = computed_from_constants(op_type, domain, traits, inputs, bool(graph_attributes), self.constant)
        subgraphs = (
            {a.name: self.subgraph(a.g, f"{name}/{a.name}") for a in graph_attributes}
            if graph_attributes
            else _NO_SUBGRAPHS
        )
        derived = self._derived_for(node, fields, rule, is_folded, subgraphs)
        cost = derived.cost
        param_inputs = [inputs[slot] for slot in derived.param_slots] if derived.param_slots else _NO_PARAMETERS
        params, weight_bytes = self._read_parameters(param_inputs, inputs, cost) if param_inputs else (0, 0)
        if cost.attribute_params:  # stored in the node itself (ai.onnx.ml), read on every run
            params, weight_bytes = self._attribute_parameters(name, cost.attribute_params, params, weight_bytes)
        if subgraphs:
            params, weight_bytes = with_subgraphs(subgraphs, cost, derived, params, weight_bytes)
        if is_folded:
            self._track_storage(traits, domain, inputs, outputs, rule.arg_inputs if rule else frozenset())
        # positional, in field order: matching 25 keywords costs as much as the rest of a cache hit
        return NodeRecord(
            name,
            op_type,
            domain,
            index,
            derived.family,
            derived.status,
            derived.reason,
            inputs,
            outputs,
            derived.input_shapes,
            derived.input_dtypes,
            derived.output_shapes,
            derived.output_dtypes,
            derived.dtype,
            cost.macs,
            2 * cost.macs + cost.flops,
            params,
            weight_bytes,
            derived.input_bytes,
            derived.output_bytes,
            cost.formula,
            cost.view,
            param_inputs,
            derived.shape_only,
            subgraphs,
            _name_scopes(node) if node.metadata_props else _NO_SCOPE,
            partial_bytes(derived, inputs, outputs)
            if derived.partial_inputs or derived.partial_outputs
            else _NO_PARTIAL,
        )

    def _derived_for(
        self,
        node: onnx.NodeProto,
        fields: NodeFields,
        rule: OpRule | None,
        is_folded: bool,
        subgraphs: dict[str, SubgraphCost],
    ) -> Derived:
        """The node's derived fields: shared with an alike node costed before, when its rule is
        built in and nothing about it is its own (subgraphs, a failed shape inference)."""
        _, op_type, domain, inputs, outputs, attributes = fields
        failures = self.failures
        failure = next((failures[o] for o in outputs if o in failures), None) if failures else None
        key = None
        if not subgraphs and failure is None and (rule is None or rule.builtin):
            key = self._signature(op_type, domain, None if is_folded else attributes, inputs, outputs)
            derived = self._derived.get(key)
            if derived is not None:
                return derived
        derived = self._derive(node, op_type, domain, inputs, outputs, rule, is_folded, failure, subgraphs)
        if key is not None and derived.shareable:
            self._derived[key] = derived
        return derived

    def _attribute_parameters(self, name: str, elements: int, params: int, weight_bytes: int) -> tuple[int, int]:
        """Add the parameters stored in the node itself (ai.onnx.ml), read on every run: counted at
        4 bytes a number, as onnxruntime's ml kernels hold them as float32 (int64 attributes such as
        node ids are 8 in the file; an estimate, stated in docs/ops.md)."""
        self.parameters[f"{name}.attributes"] = (elements, 4 * elements)
        return params + elements, weight_bytes + 4 * elements

    def _signature(self, op_type: str, domain: str, attributes, inputs: list[str], outputs: list[str]) -> tuple:
        """Everything :meth:`_derive` reads of a node with a built-in rule (``attributes`` None for a
        folded node: its rule is not applied, and folding follows from the op and its constants).

        A built-in rule sees the node's attributes, which inputs are present, the dtypes and shapes
        of its tensors and which of its inputs have known values; the record's other shared fields
        also depend on which inputs are constants (folding, parameters vs activations), which
        inputs repeat (read once), which outputs are settings (shape arithmetic) and, in a QDQ
        graph, the type each input was dequantized from. Not here: the known values themselves (a
        rule that reads one is not shared), names, subgraphs and failed shape inference (the
        caller never shares those nodes) and per-analysis settings (the memo is per analysis).
        """
        tensors, constant, values, dequantized_from = self.tensors, self.constant, self.values, self.dequantized_from
        input_key: list[tuple | None] = []
        for tensor_name in inputs:
            if not tensor_name:
                input_key.append(None)
                continue
            info = tensors.get(tensor_name) or _NO_INFO
            known: tuple = (info.dtype, info.shape, tensor_name in constant, tensor_name in values)
            if dequantized_from:
                source = dequantized_from.get(tensor_name)
                known += (source and self.info(source).dtype,)
            input_key.append(known)
        output_key = []
        for tensor_name in outputs:
            info = tensors.get(tensor_name) or _NO_INFO
            output_key.append((info.dtype, info.shape, tensor_name in self.settings) if tensor_name else None)
        repeated = len(inputs) > 1 and len(set(inputs)) < len(inputs)
        repeats = tuple([inputs.index(n) for n in inputs]) if repeated else None
        attribute_key = tuple([a.SerializeToString() for a in attributes]) if attributes else None
        return op_type, domain, attribute_key, tuple(input_key), tuple(output_key), repeats

    def _derive(
        self,
        node: onnx.NodeProto,
        op_type: str,
        domain: str,
        inputs: list[str],
        outputs: list[str],
        rule: OpRule | None,
        is_folded: bool,
        failure: str | None,
        subgraphs: dict[str, SubgraphCost],
    ) -> Derived:
        """Apply the node's rule and work out the record fields that follow from its tensors."""
        tensors = self.tensors
        values_read = ValueReads(self.values)
        input_infos = tuple([(tensors.get(n) or TensorInfo(n)) if n else None for n in inputs])
        output_infos = tuple([tensors.get(n) or TensorInfo(n) for n in outputs])
        status, reason, cost = self._outcome(
            op_type,
            domain,
            outputs,
            rule,
            is_folded,
            failure,
            lambda: NodeView(node, input_infos, output_infos, values_read, subgraphs, self.options.loop_trips),
        )
        # a node computing shape arithmetic (settings_tensors: from shapes, read as settings) reads
        # settings such as Concat's [-1], not weights
        shape_only = bool(outputs) and all(o in self.settings for o in outputs if o)
        param_slots, activation_inputs = split_inputs(
            inputs, self.constant, not (is_folded or shape_only), rule.arg_inputs if rule else frozenset()
        )
        param_inputs = [inputs[slot] for slot in param_slots]
        # folded constants and views move no bytes
        traffic = NO_TRAFFIC if is_folded or cost.view else self._traffic(cost, inputs, outputs, activation_inputs)
        input_shapes, input_dtypes, output_shapes, output_dtypes = shapes_and_dtypes(input_infos, output_infos)
        return Derived(
            status=status,
            reason=reason,
            cost=cost,
            family=op_family(rule, param_inputs, activation_inputs),
            dtype=self._compute_dtype(op_type, rule, inputs, outputs, activation_inputs, param_inputs),
            input_shapes=input_shapes,
            input_dtypes=input_dtypes,
            output_shapes=output_shapes,
            output_dtypes=output_dtypes,
            param_slots=tuple(param_slots),
            input_bytes=traffic.input_bytes,
            output_bytes=traffic.output_bytes,
            partial_inputs=traffic.partial_inputs,
            partial_outputs=traffic.partial_outputs,
            shape_only=shape_only,
            # a reason naming the node's tensors, or a result depending on a value: this node's own
            shareable=status not in (NodeStatus.UNKNOWN_SHAPE, NodeStatus.UNKNOWN_VALUE) and not values_read.read,
        )

    def _outcome(
        self,
        op_type: str,
        domain: str,
        outputs: list[str],
        rule: OpRule | None,
        is_folded: bool,
        failure: str | None,
        view: Callable[[], NodeView],
    ) -> tuple[NodeStatus, str, OpCost]:
        """The node's status, its reason and its cost: folded, unsupported, downstream of a failed
        shape inference, or what its rule gives on ``view()``."""
        if is_folded:
            return NodeStatus.CONSTANT, "computed from constants only: folded, costs nothing", NO_COST
        if rule is None:
            return NodeStatus.UNSUPPORTED, f"no cost rule for {domain or 'ai.onnx'}::{op_type}", NO_COST
        if failure is not None and not all(o in self.uninferred for o in outputs if o in self.failures):
            # downstream of a node whose shape inference failed, or inconsistent itself: not costed
            return NodeStatus.UNKNOWN_SHAPE, failure, NO_COST
        status, reason, cost = apply_rule(rule.handler, view())
        if status == NodeStatus.UNKNOWN_SHAPE and failure is not None:
            reason = failure  # onnx could not infer this node: say why
        return status, reason, cost

    def _traffic(self, cost: OpCost, inputs: list[str], outputs: list[str], activation_inputs: list[str]) -> Traffic:
        """The bytes a node reads of its activations and writes, the partial ones in proportion."""
        size = self.size
        partial_inputs: tuple[tuple[int, int], ...] = ()
        partial_outputs: tuple[tuple[int, int], ...] = ()
        if cost.activation_reads or cost.output_writes:
            partial_inputs = self._partial(cost.activation_reads, inputs)
            partial_outputs = self._partial(cost.output_writes, outputs)
        read = {inputs[slot]: n for slot, n in partial_inputs}
        written = {outputs[slot]: n for slot, n in partial_outputs}
        input_bytes = output_bytes = 0
        for tensor_name in activation_inputs:
            input_bytes += read[tensor_name] if tensor_name in read else size(tensor_name) or 0
        for tensor_name in outputs:
            if tensor_name:
                output_bytes += written[tensor_name] if tensor_name in written else size(tensor_name) or 0
        return Traffic(input_bytes, output_bytes, partial_inputs, partial_outputs)

    def _partial(self, elements_by_slot: tuple[tuple[int, int], ...], names: list[str]) -> tuple[tuple[int, int], ...]:
        """(slot, bytes) of the tensors at ``names``' slots of which a node moves only the given
        elements: the tensor's bytes in that proportion, rounded up, never more than the whole."""
        moved = []
        for slot, elements in elements_by_slot:
            name = names[slot] if slot < len(names) else ""
            whole, numel = self.size(name) if name else None, self.info(name).numel if name else None
            if whole is not None and numel:
                moved.append((slot, min(whole, -(-whole * max(elements, 0) // numel))))
        return tuple(moved)

    def _read_parameters(self, param_inputs: list[str], inputs: list[str], cost: OpCost) -> tuple[int, int]:
        """Note the stored roots behind the constants a node reads; return the roots' elements
        (each once) and the bytes the node reads of those constants per run (a partial read, a
        Gather's, scales the first one; a folded constant is read at its folded size)."""
        packed = (
            {inputs[slot]: elements for slot, elements in cost.param_elements if slot < len(inputs)}
            if cost.param_elements
            else None
        )
        stored, size, parameters, roots = self.stored, self.size, self.parameters, self.roots
        params, read_bytes, counted = 0, [], set()
        for tensor_name in param_inputs:
            read_bytes.append(stored[tensor_name] if tensor_name in stored else size(tensor_name) or 0)
            for root in roots.get(tensor_name, (tensor_name,)):
                if root in counted:
                    continue
                counted.add(root)
                # packed weights (MatMulNBits' B) count the weights they hold, not storage elements
                elements = packed[root] if packed and root in packed else self.info(root).numel or 0
                parameters[root] = (elements, stored[root] if root in stored else size(root) or 0)
                self.parameter_tensors.add(root)
                params += elements
        if cost.weight_reads:
            part = {
                inputs[slot]: elements for slot, elements in cost.weight_reads if slot < len(inputs) and inputs[slot]
            }
            for index, tensor_name in enumerate(param_inputs):
                numel = self.info(tensor_name).numel if tensor_name in part else None
                if numel:
                    read_bytes[index] = min(read_bytes[index], -(-read_bytes[index] * part[tensor_name] // numel))
        if cost.weight_elements_read is not None:
            first_numel = self.info(param_inputs[0]).numel
            if first_numel:  # each parameter read in the first one's proportion, rounded up
                read_bytes = [min(b, -(-b * cost.weight_elements_read // first_numel)) for b in read_bytes]
        return params, sum(read_bytes)

    def subgraph(self, graph: onnx.GraphProto, name: str) -> SubgraphCost:
        """Cost a subgraph; it sees the outer scope's constants and adds its own."""
        before = set(self.parameters)
        self._add_initializers(list(graph.initializer))
        nodes = graph.node
        fields = read_node_fields(nodes)
        self.settings |= settings_tensors(fields, self.constant, {o.name for o in graph.output})
        records = [
            self.cost_node(node, node_fields, f"{name}/{node_name}", index)
            for index, (node, node_fields, node_name) in enumerate(zip(nodes, fields, node_names(fields)))
        ]
        own = [self.parameters[p] for p in set(self.parameters) - before]
        unsupported, not_counted = not_costed_ops(records)
        formal_inputs = [i.name for i in graph.input]
        return SubgraphCost(
            name=name,
            records=records,
            activation_bytes=self._activation_bytes(formal_inputs, records),
            inputs=formal_inputs,
            outputs=[o.name for o in graph.output],
            macs=sum(r.macs for r in records if r.counted),
            flops=sum(r.flops for r in records if r.counted),
            params=sum(elements for elements, _ in own),
            weight_bytes=sum(stored for _, stored in own),
            unsupported=unsupported,
            not_counted=not_counted,
        )

    def _activation_bytes(self, formal_inputs: list[str], records: list[NodeRecord]) -> dict[str, int]:
        """A subgraph's activations (its inputs and what its costed nodes write) -> their bytes."""
        produced = [n for r in records if r.status != NodeStatus.CONSTANT for n in r.outputs if n]
        sized = {n: self.size(n) for n in (*formal_inputs, *produced) if n not in self.constant}
        return {n: size for n, size in sized.items() if size is not None}

    def _track_storage(
        self, traits: OpTrait, domain: str, inputs: list[str], outputs: list[str], arg_slots: frozenset[int]
    ) -> None:
        """A folded node's outputs: the stored roots they come from (its data inputs' roots; a
        Constant or ConstantOfShape is a root itself) and the bytes a node reads of them per run
        (its data inputs' for re-layouts and re-types, else its own size)."""
        outputs = [o for o in outputs if o]
        stored, size, roots = self.stored, self.size, self.roots
        self.constant.update(outputs)
        data = [n for slot, n in enumerate(inputs) if n and slot not in arg_slots]
        default_domain = domain in DEFAULT_DOMAINS
        # a Constant's tensor and a ConstantOfShape's fill (materialized at load time) are stored
        # roots themselves (cost-model.md section 3)
        if not (default_domain and OpTrait.CONSTANT_SOURCE in traits):
            # settings (arg slots: a Reshape's shape, a Gather's indices) are no roots
            found = tuple(dict.fromkeys(root for n in data for root in roots.get(n, (n,))))
            for output in outputs:
                roots[output] = found
        if traits & _STORAGE_PRESERVING and (default_domain or domain == "com.microsoft"):
            total = sum(stored[n] if n in stored else size(n) or 0 for n in dict.fromkeys(data))
        else:
            total = None
        for output in outputs:
            stored[output] = total if total is not None else size(output) or 0

    def _compute_dtype(
        self,
        op_type: str,
        rule: OpRule | None,
        inputs: list[str],
        outputs: list[str],
        activation_inputs: list[str],
        param_inputs: list[str],
    ) -> str:
        """The element type the node computes in.

        In a QDQ graph a float op whose every data input comes out of DequantizeLinear runs in
        the quantized type (runtimes fuse DQ -> op -> Q into an integer kernel): report that type.
        """
        data_inputs = activation_inputs + param_inputs
        if self.dequantized_from and data_inputs and op_type not in ("DequantizeLinear", "QuantizeLinear"):
            sources = [self.dequantized_from.get(n) for n in data_inputs]
            if all(sources):
                return dtype_name(self.info(cast(str, sources[0])).dtype)
        tensors = self.tensors
        # a gather's activation input is its indices: it moves and computes in its data's type
        gathers = rule is not None and OpTrait.GATHER in rule.traits
        order = (*outputs, *activation_inputs, *inputs) if gathers else (*activation_inputs, *outputs, *inputs)
        for tensor_name in order:
            tensor = tensors.get(tensor_name) if tensor_name else None
            if tensor is not None and tensor.dtype:
                return dtype_name(tensor.dtype)
        return "unknown"


def cost_graph(
    model: onnx.ModelProto,
    shapes: ShapeResult,
    options: CostOptions | None = None,
    fields: Sequence[NodeFields] | None = None,
) -> CostGraph:
    """Cost every node of ``model``'s main graph and link them by the tensors they exchange.
    ``fields`` are its nodes' fields when the caller has read them already (:func:`read_node_fields`)."""
    nodes = model.graph.node
    fields = read_node_fields(nodes) if fields is None else fields
    names = node_names(fields)
    coster = _Coster(model.graph, shapes, options or CostOptions())
    # an input whose value the user gave (--value sr=16000) is a setting's source, as a constant is
    given = {i.name for i in model.graph.input if i.name in shapes.values}
    coster.settings = settings_tensors(fields, coster.constant | given, {o.name for o in model.graph.output})
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = {i.name for i in model.graph.input} - initializers
    records, tensor_records = _cost_and_link(coster, nodes, fields, names, graph_inputs)
    # constants (initializers, folded outputs) are known once their producer is costed, before
    # their record is made; those some node reads as parameters only once every node is
    for name in coster.constant:
        tensor = tensor_records.get(name)
        if tensor is not None:  # a folded tensor is never a parameter: the roots it comes from are
            tensor.kind = "parameter" if name in coster.parameter_tensors else "constant"
    opset = next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), 13)
    hidden = hidden_positions(records, coster.values, softmax_axes(nodes, names, opset))
    for record in records:
        record.subnormal_elements = hidden.get(record.name, 0)
    graph = CostGraph(
        name=model.graph.name,
        records=records,
        tensors=tensor_records,
        inputs=[i.name for i in model.graph.input if i.name in graph_inputs],
        outputs=[o.name for o in model.graph.output],
        parameters=dict(sorted(coster.parameters.items())),
        roots=coster.roots,
    )
    running = running_graph(graph)  # the nodes a run executes: control-flow bodies expanded
    graph.expanded = running if running is not graph else None
    return graph


def _cost_and_link(
    coster: _Coster,
    nodes: Sequence[onnx.NodeProto],
    fields: Sequence[NodeFields],
    names: list[str],
    graph_inputs: set[str],
) -> tuple[list[NodeRecord], dict[str, TensorRecord]]:
    """One pass: each node costed, then the records of the tensors it writes and reads. The nodes
    are in topological order (load checks it): a tensor a node reads that has no record yet is
    a graph input or an initializer."""
    size, tensors, stored = coster.size, coster.tensors, coster.stored
    tensor_records: dict[str, TensorRecord] = {}

    def tensor_record(name: str, dtype: str, producer: str | None) -> TensorRecord:
        # constants and parameters are marked once every node is costed (cost_graph)
        tensor = tensors.get(name)
        record = TensorRecord(
            name,
            dtype,
            tensor.shape if tensor else None,
            stored[name] if name in stored else size(name),
            "input" if name in graph_inputs else "activation",
            producer,
        )
        tensor_records[name] = record
        return record

    records = []
    for index, (node, node_fields, consumer) in enumerate(zip(nodes, fields, names)):
        record = coster.cost_node(node, node_fields, consumer, index)
        records.append(record)
        for output, dtype in zip(record.outputs, record.output_dtypes):
            if output and output not in tensor_records:
                tensor_record(output, dtype, consumer)
        inputs = record.inputs
        for tensor_name in dict.fromkeys(inputs) if len(inputs) > 1 else inputs:
            if tensor_name:
                tensor = tensor_records.get(tensor_name)
                if tensor is None:  # a graph input or an initializer
                    tensor = tensor_record(tensor_name, dtype_name(coster.info(tensor_name).dtype), None)
                tensor.consumers.append(consumer)
    return records, tensor_records
