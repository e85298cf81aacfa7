"""Read an ONNX file into a ModelProto without ever reading weight data, and judge it.

External data files are never opened (counts come from dims), so a model whose data files are
absent, or of the wrong size, still loads and is costed in full. Their ``location`` entries are
still checked (checks.py): one pointing outside the model's directory (an absolute path, ``..``,
a symlink leading out) is refused, as onnx itself refuses it (CVE-2024-27318).

Every failure becomes a one-line ModelError naming the problem and the fix: files that are not
models (empty, random bytes, truncated, a bare TensorProto or GraphProto, over protobuf's 2 GiB
limit) here, broken models in checks.py (text, versions, dims, a graph that is not a DAG, external
locations, tensor sizes), then the ONNX checker, in a forked child where the process may fork.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from ..core.errors import ModelError
from ..core.nodes import DEFAULT_DOMAINS
from .checks import (
    TYPED_FIELD,
    Contents,
    check_dims,
    check_external_locations,
    check_graph,
    check_tensor_sizes,
    check_versions,
    clean,
    contents_of,
    first_invalid_text,
    has_external_data,
)
from .shapes import without_weight_data

_ONNX_MAGIC_HINT = "is it an .onnx model file?"
# protobuf cannot parse (or write) one message over 2 GiB; bigger models keep weights outside
MAX_PROTOBUF_BYTES = 2**31 - 1
_UNREGISTERED_DOMAIN = "onnxroof.unregistered"


def load_model(path: str | os.PathLike) -> onnx.ModelProto:
    """Read and check ``path``; raise ModelError with the file name and the fix on failure."""
    model, checking = open_model(path, checker_in_child=False)
    checking.wait()
    return model


def open_model(path: str | os.PathLike, checker_in_child: bool) -> tuple[onnx.ModelProto, PendingCheck]:
    """Read and check ``path`` as :func:`load_model` does, but leave the ONNX checker's verdict
    pending: with ``checker_in_child``, where the process may fork (:func:`_may_fork`), the
    checker judges the model in a child process while the caller goes on; ``wait()`` raises its
    ModelError, if any."""
    file = Path(path)
    try:
        is_dir, is_file = file.is_dir(), file.is_file()
        size = file.stat().st_size if is_file else 0
    except (OSError, ValueError) as exc:  # a NUL byte, a name too long, a symlink loop
        raise ModelError(f"{file}: cannot be opened ({_reason(exc)}); check the path") from exc
    if is_dir:
        raise ModelError(f"{file}: is a directory, not an ONNX file; pass the .onnx file inside it")
    if not is_file:
        if file.is_symlink():
            raise ModelError(f"{file}: a symbolic link to a file that does not exist; check the link")
        if not os.path.lexists(file):
            raise ModelError(f"{file}: no such file; check the path")
        raise ModelError(f"{file}: not a regular file (a device or a pipe); pass the .onnx file itself")
    if size > MAX_PROTOBUF_BYTES:
        raise ModelError(
            f"{file}: the file is {size / 2**30:.1f} GiB, over protobuf's 2 GiB limit for one ONNX file, so no "
            "ONNX tool can read it; re-export with the weights as external data "
            "(onnx.save_model(model, path, save_as_external_data=True); torch.onnx.export does it past 2 GiB)"
        )
    if size == 0:
        raise ModelError(f"{file}: the file is empty; re-export the model")
    try:
        # parsed straight from the mapped file: no second copy of the whole file in memory
        with open(file, "rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            with memoryview(mapped) as data:
                model = _parse(data, file)
    except (OSError, ValueError) as exc:
        raise ModelError(f"{file}: cannot be read ({_reason(exc)}); check its permissions") from exc
    invalid = first_invalid_text(model, "")
    if invalid:
        raise ModelError(
            f"{file}: the model's {invalid} is not valid UTF-8 text, so the file is corrupt (or not ONNX); "
            "re-export the model"
        )
    return model, check_model(model, str(file), directory=file.parent, checker_in_child=checker_in_child)


def _parse(data: memoryview, file: Path) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError as exc:
        other = _what_else(data)
        if other:
            raise ModelError(f"{file}: not an ONNX model: {other}") from exc
        raise ModelError(
            f"{file}: not a readable ONNX protobuf ({_reason(exc)}): the file is truncated or corrupt, or not an "
            "ONNX model; re-download or re-export it"
        ) from exc
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        other = _what_else(data)
        if other:
            raise ModelError(f"{file}: not an ONNX model: {other}")
    return model


def check_in_memory(model: onnx.ModelProto, label: str = "model") -> None:
    """The checks that keep a ModelProto handed to ``analyze`` from crashing the interpreter (or
    onnxroof): text that is not UTF-8, negative dims (onnx's shape inference aborts on some),
    inline data of the wrong size, and a graph that is not a DAG of single-producer tensors in
    topological order (every later stage walks the nodes in the model's order). The rest of the
    ONNX checker is not run: models built in code often skip what it insists on."""
    invalid = first_invalid_text(model, "")
    if invalid:
        raise ModelError(f"{label}: the model's {invalid} is not valid UTF-8 text; fix the code that built it")
    graph = model.graph
    if not (graph.node or graph.input or graph.output or graph.initializer):
        raise ModelError(
            f"{label}: the ModelProto is empty (no nodes, inputs or outputs); pass the model you built or loaded"
        )
    check_graph(model.graph, set(), label, "")
    contents = contents_of(model)
    check_dims(model, label, contents)
    check_tensor_sizes(model, label, contents)


def check_model(
    model: onnx.ModelProto, label: str, directory: str | os.PathLike | None = None, checker_in_child: bool = False
) -> PendingCheck:
    """Judge ``model`` (read from ``directory``, if from a file), turning every verdict into one
    ModelError line that names the problem and the fix (the node, for a graph that is not a DAG).
    The ONNX checker sees large inline weights as empty tensors (their sizes are checked here
    first): handing it the weights would copy and re-parse them all in C++. Its verdict is
    pending until ``wait()`` (given already unless ``checker_in_child``)."""
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise ModelError(f"{label}: the protobuf holds no ONNX graph; {_ONNX_MAGIC_HINT}")
    if not model.opset_import:
        raise ModelError(f"{label}: the model declares no opset_import; re-export it with an opset")
    check_versions(model, label)
    contents = contents_of(model)
    check_external_locations(model, label, directory, contents)
    check_dims(model, label, contents)
    check_tensor_sizes(model, label, contents)
    return PendingCheck(model, contents, label, in_child=checker_in_child and _may_fork())


class PendingCheck:
    """The ONNX checker's verdict on a model. Judged in a forked child when asked: the checker
    is C++ holding the interpreter (a third of the analysis's own work on 10^5 nodes), and the
    caller has Python work to do meanwhile; a checker that crashes takes only the child down."""

    def __init__(self, model: onnx.ModelProto, contents: Contents, label: str, in_child: bool):
        self._model, self._label = model, label
        self._child: tuple[int, int] | None = None  # (pid, read end of the pipe)
        self._verdict: tuple[str, str] | None = None
        if not in_child:
            self._verdict = _checker_verdict(model, contents)
            return
        read_end, write_end = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+ warns of any native thread
            pid = os.fork()
        if pid == 0:  # the child: judge, report, leave without running the parent's exit handlers
            try:
                os.close(read_end)
                with os.fdopen(write_end, "w", encoding="utf-8") as stream:
                    json.dump(_checker_verdict(model, contents), stream)
            finally:
                os._exit(0)
        os.close(write_end)
        self._child = (pid, read_end)

    def wait(self) -> None:
        """Raise the ModelError the checker's verdict calls for, if any."""
        if self._child is not None:
            pid, read_end = self._child
            self._child = None
            with os.fdopen(read_end, encoding="utf-8") as stream:
                report = stream.read()
            _, status = os.waitpid(pid, 0)
            if report:
                self._verdict = json.loads(report)
            else:  # the child died before reporting: the checker crashed on this model
                how = (
                    signal.Signals(os.WTERMSIG(status)).name
                    if os.WIFSIGNALED(status)
                    else f"exit status {os.waitstatus_to_exitcode(status)}"
                )
                self._verdict = ("crash", f"it crashed ({how}); the file is corrupt or hits an onnx bug: re-export it")
        if self._verdict is not None:
            kind, message = self._verdict
            if kind == "ValidationError":
                # a graph that is not a DAG of single-producer tensors: name the node (the checker's
                # own message stops short of it); walked only on failure, as it costs a pass over the nodes
                check_graph(self._model.graph, set(), self._label, "")
                raise ModelError(
                    f"{self._label}: fails the ONNX checker: {message}; fix the export or run onnx.checker on it"
                )
            raise ModelError(f"{self._label}: fails the ONNX checker ({message})")


def _checker_verdict(model: onnx.ModelProto, contents: Contents) -> tuple[str, str] | None:
    """None when the model passes the ONNX checker, else (kind, the one-line message part)."""
    try:
        _run_checker(model, contents)
    except onnx.checker.ValidationError as exc:
        first_line = clean(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
        return "ValidationError", first_line
    except Exception as exc:  # the checker's C++ core raises a few other types on broken protos
        return type(exc).__name__, f"{type(exc).__name__}: {_reason(exc)}"
    return None


def _may_fork() -> bool:
    """Whether a child process may be forked safely: on Linux, and with no other Python thread
    (a lock another thread holds at the fork stays held in the child). Native threads, such as
    a BLAS pool idling since import, take no lock the checker needs."""
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


# ---------------------------------------------------------------------------------------------
# What a file that is not a ModelProto holds


def _what_else(data: bytes | memoryview) -> str | None:
    """'a serialized GraphProto', ... when ``data`` clearly is another ONNX message (or a Git LFS
    pointer), else None."""
    if bytes(data[: len(_LFS_POINTER)]) == _LFS_POINTER:  # a checkout made without Git LFS
        return (
            "the file is a Git LFS pointer, not the model (checked out without Git LFS): run git lfs pull "
            "(in a GitHub workflow: actions/checkout with lfs: true)"
        )
    graph = onnx.GraphProto()
    try:
        graph.ParseFromString(data)
    except DecodeError:
        pass
    else:
        if graph.node and all(isinstance(n.op_type, str) and _IDENTIFIER.match(n.op_type) for n in graph.node):
            return (
                "the file holds a bare GraphProto, not a ModelProto; wrap it with "
                "onnx.helper.make_model(graph, opset_imports=[...]) and save that"
            )
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(data)
    except DecodeError:
        return None
    known_type = tensor.data_type in onnx.TensorProto.DataType.values() and tensor.data_type != 0
    has_data = bool(
        tensor.raw_data
        or tensor.float_data
        or tensor.int32_data
        or tensor.int64_data
        or tensor.double_data
        or tensor.string_data
        or tensor.uint64_data
        or tensor.external_data
    )
    if known_type and has_data and (tensor.dims or tensor.name):
        return (
            "the file holds one serialized TensorProto (a weight or a test input), not a model; "
            "pass the .onnx model file"
        )
    return None


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"  # the first line of every Git LFS pointer file


# ---------------------------------------------------------------------------------------------
# What the checker can judge


def _run_checker(model: onnx.ModelProto, contents: Contents) -> None:
    """The ONNX checker on ``model``, judged in place and left as it was (no copy of the weights
    is ever made).

    The checker insists on opening external data wherever it is (initializers, Constant values,
    subgraphs): those tensors are shown to it as empty. Default-domain ops this onnx has no
    schema for (onnxruntime's optimizer writes SimplifiedLayerNormalization there) are moved to a
    private domain, which the checker skips; they are costed like any other op. They are rare, so
    they are looked for only when the checker fails."""
    with _external_data_hidden(contents.tensors):
        try:
            onnx.checker.check_model(without_weight_data(model, _empty_stand_in))
        except onnx.checker.ValidationError:
            with _unregistered_ops_moved(model) as moved:
                if not moved:
                    raise
                onnx.checker.check_model(without_weight_data(model, _empty_stand_in))


@contextmanager
def _external_data_hidden(tensors: list[onnx.TensorProto]) -> Iterator[None]:
    """Every tensor with external data shown as an empty one of its name and type, then restored."""
    saved: list[tuple[onnx.TensorProto, onnx.TensorProto]] = []
    try:
        for tensor in tensors:
            if has_external_data(tensor):
                original = onnx.TensorProto()
                original.CopyFrom(tensor)
                saved.append((tensor, original))
                tensor.Clear()
                tensor.name, tensor.data_type = original.name, original.data_type
                tensor.dims.append(0)
        yield
    finally:
        for tensor, original in saved:
            tensor.CopyFrom(original)


@contextmanager
def _unregistered_ops_moved(model: onnx.ModelProto) -> Iterator[bool]:
    """The main graph's default-domain nodes of ops with no schema moved to a private domain, then
    moved back; yields whether there were any."""
    nodes = model.graph.node
    ops = {node.op_type for node in nodes if node.domain in DEFAULT_DOMAINS}
    unknown = {op for op in ops if not onnx.defs.has(op)}
    moved = [(n, n.domain) for n in nodes if n.domain in DEFAULT_DOMAINS and n.op_type in unknown] if unknown else []
    try:
        for node, _ in moved:
            node.domain = _UNREGISTERED_DOMAIN
        if moved:
            model.opset_import.append(onnx.helper.make_opsetid(_UNREGISTERED_DOMAIN, 1))
        yield bool(moved)
    finally:
        for node, domain in moved:
            node.domain = domain
        if moved:
            del model.opset_import[-1]


def _empty_stand_in(tensor: onnx.TensorProto) -> onnx.TensorProto:
    """What the checker sees of a large inline weight: an empty tensor of its name and type, as
    for external data. A tensor holding no data at all is shown as it is, for the checker's verdict."""
    if not tensor.HasField("raw_data"):
        field_name, _ = TYPED_FIELD.get(tensor.data_type, (None, 0))
        if field_name is None or not len(getattr(tensor, field_name)):
            return tensor
    return onnx.TensorProto(name=tensor.name, data_type=tensor.data_type, dims=[0])


# ---------------------------------------------------------------------------------------------
# Messages


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return clean(" ".join(str(text).split()))[:300]
