"""The structural checks that refuse a broken model with one line each before anything else reads
it (load.py runs them): text that is not UTF-8, opsets and IR versions newer than the installed
onnx, negative dims, graphs that are not DAGs (a cycle, two nodes writing one tensor, a node
reading a tensor nothing produces), external data kept outside the model's directory, and inline
data of the wrong size. Weight data is never read.

Names from the model are untrusted: they appear in messages as quoted, escaped and clipped.
"""

from __future__ import annotations

import operator
import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

import onnx

from ..core.errors import ModelError
from ..core.nodes import DEFAULT_DOMAINS, node_names
from ..core.tensors import has_external_data

_NAME_CLIP = 80


# ---------------------------------------------------------------------------------------------
# Text that is not UTF-8: protobuf hands such string fields back as bytes instead of failing


def first_invalid_text(message, where: str) -> str | None:
    """The path of the first string field in ``message`` that is not valid UTF-8, or None.
    Only string and message fields are visited: weight data is never touched."""
    if isinstance(message, onnx.NodeProto):
        return _node_invalid_text(message, where)
    for name, is_message, repeated in _text_fields(message.DESCRIPTOR):
        if is_message:
            if repeated:
                items = getattr(message, name)
                walk_list = _LIST_WALKS.get(type(items[0])) if items else None
                if walk_list:
                    found = walk_list(items, f"{where}{name}")
                    if found:
                        return found
                    continue
            elif message.HasField(name):
                items = (getattr(message, name),)
            else:
                continue
            for index, item in enumerate(items):
                found = first_invalid_text(item, f"{where}{name}[{index}]." if repeated else f"{where}{name}.")
                if found:
                    return found
        else:
            value = getattr(message, name)
            if any(isinstance(v, bytes) for v in value) if repeated else isinstance(value, bytes):
                return where + name
    return None


def _nodes_invalid_text(nodes, where: str) -> str | None:
    """The walk below over a list of nodes (most of a big graph) as one tight loop. A node whose
    serialization is ASCII holds only ASCII text (one C call: the commonest case); one whose own
    text fields are str, with only plain attributes and inline tensors, is passed over too; any
    other is walked in full. When every node is ASCII (most models), that is all there is to it."""
    if all(map(bytes.isascii, map(_SERIALIZED, nodes))):  # no Python-level step per node
        return None
    node_texts, attribute_texts, tensor_texts = _NODE_TEXTS, _ATTRIBUTE_TEXTS, _TENSOR_TEXTS
    plain, tensor_type = _PLAIN_ATTRIBUTES, onnx.AttributeProto.TENSOR
    for index, node in enumerate(nodes):
        if node.SerializeToString().isascii():
            continue
        suspect = bytes in map(type, (*node_texts(node), *node.input, *node.output)) or (
            _NODE_HAS_METADATA and len(node.metadata_props) > 0
        )
        for attribute in node.attribute if not suspect else ():
            kind = attribute.type
            if kind == tensor_type:  # a Constant's value: its own text fields, nothing nested
                tensor = attribute.t
                suspect = (
                    bytes in map(type, (*attribute_texts(attribute), *tensor_texts(tensor)))
                    or len(tensor.external_data) > 0
                    or (_TENSOR_HAS_METADATA and len(tensor.metadata_props) > 0)
                )
            else:
                suspect = kind not in plain or bytes in map(type, attribute_texts(attribute))
            if suspect:
                break
        if suspect:
            found = _node_invalid_text(node, f"{where}[{index}].")
            if found:
                return found
    return None


def _value_infos_invalid_text(values, where: str) -> str | None:
    """The walk above over a list of ValueInfoProtos (a graph's value_info can hold one per tensor)
    as one tight loop: a type already found clean (tensors share a few) is not walked again."""
    clean_types: set[bytes] = set()
    for index, value in enumerate(values):
        type_key = value.type.SerializeToString()
        if (
            type_key in clean_types
            and bytes not in map(type, (value.name, value.doc_string))
            and not (_VALUE_INFO_HAS_METADATA and value.metadata_props)
        ):
            continue
        found = first_invalid_text(value, f"{where}[{index}].")
        if found:
            return found
        clean_types.add(type_key)
    return None


def _node_invalid_text(node: onnx.NodeProto, where: str) -> str | None:
    """The walk above for the commonest message, unrolled: nodes are most of a big graph."""
    for name in ("name", "op_type", "domain", "overload", "doc_string"):
        if isinstance(getattr(node, name, ""), bytes):  # overload: onnx >= 1.16 only
            return where + name
    for name in ("input", "output"):
        if not all(isinstance(v, str) for v in getattr(node, name)):
            return where + name
    for index, attribute in enumerate(node.attribute):
        for name in ("name", "ref_attr_name", "doc_string"):
            if isinstance(getattr(attribute, name), bytes):
                return f"{where}attribute[{index}].{name}"
        if attribute.type not in _PLAIN_ATTRIBUTES:
            found = first_invalid_text(attribute, f"{where}attribute[{index}].")
            if found:
                return found
    for index, entry in enumerate(getattr(node, "metadata_props", ())):  # onnx >= 1.17 only
        if isinstance(entry.key, bytes) or isinstance(entry.value, bytes):
            return f"{where}metadata_props[{index}]"
    return None


# the string fields _node_invalid_text reads, each as one getter (overload: onnx >= 1.16 only)
_NODE_TEXTS = operator.attrgetter(
    *(
        name
        for name in ("name", "op_type", "domain", "overload", "doc_string")
        if name in onnx.NodeProto.DESCRIPTOR.fields_by_name
    )
)
_ATTRIBUTE_TEXTS = operator.attrgetter("name", "ref_attr_name", "doc_string")
_SERIALIZED = onnx.NodeProto.SerializeToString
_TENSOR_TEXTS = operator.attrgetter("name", "doc_string")
_NODE_HAS_METADATA = "metadata_props" in onnx.NodeProto.DESCRIPTOR.fields_by_name  # onnx >= 1.17 only
_TENSOR_HAS_METADATA = "metadata_props" in onnx.TensorProto.DESCRIPTOR.fields_by_name  # onnx >= 1.16
_VALUE_INFO_HAS_METADATA = "metadata_props" in onnx.ValueInfoProto.DESCRIPTOR.fields_by_name  # onnx >= 1.16
_LIST_WALKS = {onnx.NodeProto: _nodes_invalid_text, onnx.ValueInfoProto: _value_infos_invalid_text}

# attributes that hold only numbers or bytes: nothing more in them to check
_PLAIN_ATTRIBUTES = frozenset(
    {
        onnx.AttributeProto.FLOAT,
        onnx.AttributeProto.INT,
        onnx.AttributeProto.STRING,
        onnx.AttributeProto.FLOATS,
        onnx.AttributeProto.INTS,
        onnx.AttributeProto.STRINGS,
    }
)
_TEXT_FIELDS: dict = {}


def _text_fields(descriptor) -> tuple[tuple[str, bool, bool], ...]:
    """(name, is a message, is repeated) of the string and message fields of a message type."""
    if descriptor not in _TEXT_FIELDS:
        fields = []
        for field in descriptor.fields:
            repeated = getattr(field, "is_repeated", None)
            if repeated is None:  # protobuf < 5.27
                repeated = field.label == field.LABEL_REPEATED
            if field.type == field.TYPE_STRING:
                fields.append((field.name, False, repeated))
            elif field.type == field.TYPE_MESSAGE:
                fields.append((field.name, True, repeated))
        _TEXT_FIELDS[descriptor] = tuple(fields)
    return _TEXT_FIELDS[descriptor]


# ---------------------------------------------------------------------------------------------
# Versions


def check_versions(model: onnx.ModelProto, label: str) -> None:
    """An IR version or an opset of a standard domain newer than this onnx knows cannot be
    judged or inferred: say so and how to fix it. Unknown domains are left alone (their ops are
    reported as unsupported)."""
    if model.ir_version > onnx.IR_VERSION:
        raise ModelError(
            f"{label}: the model uses IR version {model.ir_version}; this onnx ({onnx.__version__}) reads up to "
            f"{onnx.IR_VERSION}: upgrade onnx (pip install -U onnx)"
        )
    known = onnx.defs.C.schema_version_map()
    for opset in model.opset_import:
        domain = "" if opset.domain in DEFAULT_DOMAINS else opset.domain
        if domain in known and opset.version > known[domain][1]:
            raise ModelError(
                f"{label}: the model uses opset {opset.version} of {domain or 'ai.onnx'}; this onnx "
                f"({onnx.__version__}) knows up to {known[domain][1]}: upgrade onnx (pip install -U onnx)"
            )


# ---------------------------------------------------------------------------------------------
# Dims: never negative (onnx's C++ shape inference aborts the whole process on some)


def check_dims(model: onnx.ModelProto, label: str, contents: Contents | None = None) -> None:
    """No declared dim is negative: in graph inputs, outputs, value_info (subgraphs too) or
    tensor dims. onnx's shape inference asserts on them (a Slice of a [-5] input kills the
    interpreter), so they must be refused before it runs. A declared -1 is how Paddle2ONNX and
    TensorFlow exporters write an unknown dim: it is rewritten as one (in place), to be bound
    like any other."""
    contents = contents or contents_of(model)
    checked_types: set[bytes] = set()  # types with no negative dim (tensors share a few)
    for graph in contents.graphs:
        for kind, values in (("input", graph.input), ("output", graph.output), ("value_info", graph.value_info)):
            for value in values:
                type_key = value.type.SerializeToString()
                if type_key in checked_types:
                    continue
                rewritten = False
                for axis, dim in enumerate(_declared_dims(value.type)):
                    if dim.dim_value == -1:
                        dim.ClearField("dim_value")  # unknown, with no name
                        rewritten = True
                    elif dim.dim_value < 0:  # an unset dim_value reads 0
                        raise ModelError(
                            f"{label}: {kind} {_quote(value.name)} declares dim {dim.dim_value} at axis {axis}; a dim "
                            "is a count (>= 0), a name, or -1 for unknown: fix the export"
                        )
                if not rewritten:  # a type rewritten here must be rewritten in every tensor that has it
                    checked_types.add(type_key)
    for tensor in contents.tensors:
        if any(d < 0 for d in tensor.dims):
            raise ModelError(
                f"{label}: tensor {_quote(tensor.name)} declares dims {list(tensor.dims)}; a dim cannot be "
                "negative: the file is corrupt; re-export the model"
            )


def _declared_dims(type_proto: onnx.TypeProto) -> list:
    """The dims of a tensor type, or of the tensor type inside a sequence or optional."""
    kind = type_proto.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        holder = getattr(type_proto, kind)
        return list(holder.shape.dim) if holder.HasField("shape") else []
    if kind == "sequence_type":
        return _declared_dims(type_proto.sequence_type.elem_type)
    if kind == "optional_type":
        return _declared_dims(type_proto.optional_type.elem_type)
    return []


# ---------------------------------------------------------------------------------------------
# Graph structure: a DAG in which every tensor has one producer


def check_graph(graph: onnx.GraphProto, outer: set[str], label: str, where: str) -> None:
    """Every node reads tensors produced before it; no tensor is written twice; no cycle.

    ``outer`` holds the names visible from the enclosing graphs (subgraphs may read them);
    ``where`` prefixes node names inside subgraphs ("If_3/then_branch/")."""
    names = _node_labels(graph.node, where)
    sources = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    sources |= {s.values.name for s in graph.sparse_initializer}
    producer: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for output in node.output:
            if not output:
                continue
            if output in producer:
                raise ModelError(
                    f"{label}: nodes {_quote(names[producer[output]])} and {_quote(names[index])} both write "
                    f"{_quote(output)}; every tensor must have exactly one producer: fix the export"
                )
            if output in sources:
                raise ModelError(
                    f"{label}: node {_quote(names[index])} writes {_quote(output)}, which is also a graph input or "
                    "initializer; every tensor must have exactly one producer: fix the export"
                )
            producer[output] = index
    available = set(outer) | sources
    for index, node in enumerate(graph.node):
        for name in node.input:
            if not name or name in available:
                continue
            if name not in producer:
                raise ModelError(
                    f"{label}: node {_quote(names[index])} ({clean(node.op_type)}) reads {_quote(name)}, which no "
                    "node, input or initializer produces: fix the export (or declare it as a graph input)"
                )
            cycle = _find_cycle(graph, producer)
            if cycle:
                path = " -> ".join(_quote(names[i]) for i in cycle)
                raise ModelError(
                    f"{label}: the graph has a cycle ({path}); an ONNX graph must be acyclic: fix the export"
                )
            raise ModelError(
                f"{label}: node {_quote(names[index])} reads {_quote(name)} before node "
                f"{_quote(names[producer[name]])} produces it: the nodes are not in topological order, as ONNX "
                "requires; save them sorted (e.g. onnx_graphsurgeon's graph.toposort())"
            )
        for attribute in node.attribute:
            subgraphs = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)
            for subgraph in subgraphs:
                check_graph(subgraph, available, label, f"{names[index]}/{attribute.name}/")
        available.update(o for o in node.output if o)
    for output in graph.output:
        if output.name not in available:
            kind = "subgraph" if where else "graph"
            raise ModelError(
                f"{label}: {kind} output {_quote(where + output.name)} is produced by no node, input or "
                "initializer: fix the export"
            )


def _node_labels(nodes, where: str) -> list[str]:
    """The names onnxroof shows for nodes (nodes.node_names), prefixed with the subgraph path."""
    return [where + name for name in node_names(list(nodes))]


def _find_cycle(graph: onnx.GraphProto, producer: dict[str, int]) -> list[int] | None:
    """Node indices along one cycle (first node repeated at the end), or None if acyclic."""
    successors: dict[int, list[int]] = {i: [] for i in range(len(graph.node))}
    for index, node in enumerate(graph.node):
        for name in _reads(node):
            if name in producer:
                successors[producer[name]].append(index)
    state: dict[int, int] = {}  # 1: on the stack, 2: done
    for start in successors:
        if start in state:
            continue
        stack: list[tuple[int, Iterator[int]]] = [(start, iter(successors[start]))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                return path[path.index(child) :] + [child]
            elif child not in state:
                state[child] = 1
                path.append(child)
                stack.append((child, iter(successors[child])))
    return None


def _reads(node: onnx.NodeProto) -> Iterator[str]:
    """The names ``node`` reads, including those its subgraphs read from the outer scope."""
    yield from (n for n in node.input if n)
    for attribute in node.attribute:
        subgraphs = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else list(attribute.graphs)
        for subgraph in subgraphs:
            for inner in subgraph.node:
                yield from _reads(inner)


# ---------------------------------------------------------------------------------------------
# External data: never read, but never allowed to point outside the model's directory


def check_external_locations(
    model: onnx.ModelProto, label: str, directory: str | os.PathLike | None, contents: Contents | None = None
) -> None:
    """Refuse a model whose external data would be read from outside ``directory`` (the model's
    own): an absolute path, a ``..`` component, or (when ``directory`` is known) a path that
    resolves, through symlinks, outside it. The data itself is never opened."""
    base = Path(directory).resolve() if directory is not None else None
    for tensor in (contents or contents_of(model)).tensors:
        if not has_external_data(tensor):
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        problem = _location_problem(location, base)
        if problem:
            raise ModelError(
                f"{label}: tensor {_quote(tensor.name)} keeps its external data at {_quote(location)}, {problem}; "
                "onnxroof refuses such models, as onnx does (CVE-2024-27318): keep the data files next to the "
                "model and save it with a relative location"
            )


def _location_problem(location: str, base: Path | None) -> str | None:
    if not location:
        return None  # nothing to follow (onnxroof never reads the data anyway)
    if "\0" in location:
        return "a path with a NUL byte"
    posix, windows = PurePosixPath(location), PureWindowsPath(location)
    if posix.is_absolute() or windows.is_absolute() or windows.drive or windows.root:
        return "an absolute path outside the model's directory"
    normalized = posixpath.normpath(location.replace("\\", "/"))
    if normalized == ".." or normalized.startswith("../"):
        return "a path that leaves the model's directory through '..'"
    if base is not None:
        try:
            resolved = (base / location).resolve()
        except (OSError, RuntimeError, ValueError):  # a symlink loop
            return "a path that cannot be resolved (a symlink loop)"
        if resolved != base and base not in resolved.parents:
            return f"a path that leads outside the model's directory through a symlink (to {clean(str(resolved))})"
    return None


@dataclass
class Contents:
    """What the checks look at, gathered in one walk over the nodes (on a big graph, walking the
    nodes costs more than the checks themselves)."""

    graphs: list[onnx.GraphProto]  # the main graph, then its subgraphs depth first
    # every TensorProto: initializers (sparse ones too), Constant values and other tensor attributes,
    # in the main graph, every subgraph and every model-local function
    tensors: list[onnx.TensorProto]


def contents_of(model: onnx.ModelProto) -> Contents:
    contents = Contents([], [])
    _gather(model.graph, contents.graphs, contents.tensors)
    for function in model.functions:
        for node in function.node:
            if node.attribute:
                _gather_attributes(node, [], contents.tensors)  # function subgraphs have no dims checked
    return contents


def _gather(graph: onnx.GraphProto, graphs: list, tensors: list) -> None:
    graphs.append(graph)
    tensors += graph.initializer
    for sparse in graph.sparse_initializer:
        tensors += (sparse.values, sparse.indices)
    for node in filter(_NODE_ATTRIBUTES, graph.node):  # the nodes with attributes, picked in C (most have none)
        _gather_attributes(node, graphs, tensors)


_NODE_ATTRIBUTES = operator.attrgetter("attribute")


def _gather_attributes(node: onnx.NodeProto, graphs: list, tensors: list) -> None:
    for attribute in node.attribute:
        if attribute.HasField("t"):
            tensors.append(attribute.t)
        tensors += attribute.tensors
        for sparse in (
            *([attribute.sparse_tensor] if attribute.HasField("sparse_tensor") else []),
            *attribute.sparse_tensors,
        ):
            tensors += (sparse.values, sparse.indices)
        if attribute.HasField("g"):
            _gather(attribute.g, graphs, tensors)
        for subgraph in attribute.graphs:
            _gather(subgraph, graphs, tensors)


# ---------------------------------------------------------------------------------------------
# Inline data of the size its dims declare (onnxruntime insists on it; onnx only on "not less")

_T = onnx.TensorProto
# element type -> (the field holding typed values, values per element); raw_data bytes per element
_BYTES_PER_ELEMENT: dict[int, int] = {  # keyed by a TensorProto's data_type, a plain int
    _T.FLOAT: 4,
    _T.UINT8: 1,
    _T.INT8: 1,
    _T.UINT16: 2,
    _T.INT16: 2,
    _T.INT32: 4,
    _T.INT64: 8,
    _T.BOOL: 1,
    _T.FLOAT16: 2,
    _T.DOUBLE: 8,
    _T.UINT32: 4,
    _T.UINT64: 8,
    _T.COMPLEX64: 8,
    _T.COMPLEX128: 16,
    _T.BFLOAT16: 2,
}
_BYTES_PER_ELEMENT.update(
    {
        getattr(_T, n): 1
        for n in ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT8E8M0")
        if hasattr(_T, n)
    }
)
_HALF_BYTE = frozenset(getattr(_T, n) for n in ("INT4", "UINT4", "FLOAT4E2M1") if hasattr(_T, n))
TYPED_FIELD: dict[int, tuple[str, int]] = {
    _T.FLOAT: ("float_data", 1),
    _T.COMPLEX64: ("float_data", 2),
    _T.DOUBLE: ("double_data", 1),
    _T.COMPLEX128: ("double_data", 2),
    _T.INT64: ("int64_data", 1),
    _T.UINT32: ("uint64_data", 1),
    _T.UINT64: ("uint64_data", 1),
    **{
        t: ("int32_data", 1)
        for t in (_T.INT32, _T.INT16, _T.INT8, _T.UINT16, _T.UINT8, _T.BOOL, _T.FLOAT16, _T.BFLOAT16)
    },
}


_RAW_CHECK_LIMIT = 2**20


def check_tensor_sizes(model: onnx.ModelProto, label: str, contents: Contents | None = None) -> None:
    """Every inline tensor holds exactly the data its dims and type declare: a mismatch means a
    corrupt file (a flipped dim), and would otherwise surface as a crash wherever it is read."""
    for tensor in (contents or contents_of(model)).tensors:
        if has_external_data(tensor):
            continue
        elements = 1
        for dim in tensor.dims:
            elements *= dim
        kind = tensor.data_type
        if tensor.HasField("raw_data"):
            if kind in _HALF_BYTE:
                expected = (elements + 1) // 2
            elif kind in _BYTES_PER_ELEMENT:
                expected = elements * _BYTES_PER_ELEMENT[kind]
            else:
                continue
            if expected > _RAW_CHECK_LIMIT:
                continue  # reading raw_data copies it; big tensors are never read as values anyway
            held, unit = len(tensor.raw_data), "bytes"
        elif kind in TYPED_FIELD:
            field_name, per_element = TYPED_FIELD[kind]
            held, unit = len(getattr(tensor, field_name)), f"values in {field_name}"
            expected = elements * per_element
            if held == 0 and elements:
                continue  # no data at all: the checker's verdict ("one and only one value field")
        else:
            continue
        if held != expected:
            dims = "x".join(map(str, tensor.dims)) or "scalar"
            type_name = onnx.helper.tensor_dtype_to_string(kind).split(".")[-1].lower()
            raise ModelError(
                f"{label}: tensor {_quote(tensor.name)} holds {held:,} {unit}, but its dims ({dims}, {type_name}) "
                f"need {expected:,}: the file is corrupt; re-export the model"
            )


# ---------------------------------------------------------------------------------------------
# Messages


def clean(text: str) -> str:
    """One printable line: control characters (newlines, ANSI escapes) shown as '?'."""
    return "".join(c if c.isprintable() else "?" for c in text)


def _quote(name: str) -> str:
    """A model-supplied name for a message: clipped, quoted, control characters escaped."""
    clipped = name if len(name) <= _NAME_CLIP else name[: _NAME_CLIP - 1] + "…"
    return repr(clipped)
