"""Robust on anything users feed it.

Bad input (files that are not models, graphs that are not DAGs, versions this onnx does not
know, bad flags) gets one line naming the problem and the fix, exit 2, no traceback and no
output file over a good one. External data is never read, so its absence is harmless, but a
location outside the model's directory is refused. Shape inference failing on one node leaves
the rest of the graph analysed. Names from the model are inert text in every output. Huge dims
are costed with Python integers, allocating nothing.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tracemalloc
from html.parser import HTMLParser

import numpy as np
import onnx
import pytest
from conftest import make_model, run
from onnx import TensorProto, helper, numpy_helper

import onnxroof
from onnxroof.core.examples import build_example
from onnxroof.frontend import load

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
ONNX_VERSION, ONNX_OPSET = onnx.__version__, onnx.defs.onnx_opset_version()


def relu_model(**kwargs) -> onnx.ModelProto:
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [("x", F32, [2, 3])], [("y", F32, [2, 3])], **kwargs
    )


def external(tensor: onnx.TensorProto, location: str, length: int | None = None) -> onnx.TensorProto:
    """``tensor`` with its data declared as external (at ``location``) and no inline data."""
    elements = int(np.prod(tensor.dims)) if tensor.dims else 1
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(length or 4 * elements))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def declared_tensor(name: str, dims: list[int], location: str = "weights.bin") -> onnx.TensorProto:
    """A float tensor of ``dims`` whose data lives (or would live) in an external file."""
    tensor = TensorProto(name=name, data_type=F32, dims=dims)
    return external(tensor, location)


def matmul_with_external_weight(location: str, k: int = 300, n: int = 200) -> onnx.ModelProto:
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", F32, [2, k])], [("y", F32, [2, n])]
    )
    model.graph.initializer.append(declared_tensor("w", [k, n], location))
    return model


def assert_one_line_error(code, out, err, path, fragment):
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("onnxroof: error: "), repr(err)
    assert "Traceback" not in err and out == ""
    assert str(path) in err
    assert fragment in err, err


# ---------------------------------------------------------------------------------------------
# Bad input: files that are not models


def _cycle():
    nodes = [
        helper.make_node("Relu", ["b"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"], name="second"),
    ]
    return make_model(nodes, [("x", F32, [1])], [("b", F32, [1])])


def _duplicate():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="one"), helper.make_node("Sigmoid", ["x"], ["y"], name="two")]
    return make_model(nodes, [("x", F32, [1])], [("y", F32, [1])])


def _dangling():
    return make_model([helper.make_node("Relu", ["nowhere"], ["y"], name="X")], [("x", F32, [1])], [("y", F32, [1])])


def _unsorted():
    nodes = [
        helper.make_node("Sigmoid", ["h"], ["y"], name="late"),
        helper.make_node("Relu", ["x"], ["h"], name="early"),
    ]
    return make_model(nodes, [("x", F32, [1])], [("y", F32, [1])])


def _unproduced_output():
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [1])], [("zzz", F32, [1])])


def _dangling_in_subgraph():
    then = helper.make_graph(
        [helper.make_node("Relu", ["ghost"], ["t"], name="inner")],
        "then",
        [],
        [helper.make_tensor_value_info("t", F32, [1])],
    )
    other = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F32, [1])]
    )
    return make_model(
        [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other)],
        [("x", F32, [1]), ("c", BOOL, [])],
        [("y", F32, [1])],
    )


def _opset(domain: str, version: int):
    model = relu_model()
    if domain:
        model.opset_import.append(helper.make_opsetid(domain, version))
    else:
        model.opset_import[0].version = version
    return model


def _ir_version():
    model = relu_model()
    model.ir_version = 99
    return model


def _no_opset():
    model = relu_model()
    del model.opset_import[:]
    return model


def _undeclared_domain():
    return make_model([helper.make_node("Foo", ["x"], ["y"], domain="my.ops")], [("x", F32, [1])], [("y", F32, [1])])


def _negative_dim():
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [-5])], [("y", F32, [None])])


def _wrong_size_initializer():
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [("x", F32, [6])],
        [("y", F32, [6])],
        [("w", np.zeros(6, np.float32))],
    )
    model.graph.initializer[0].dims[0] = 5  # 24 bytes of data, 5 elements declared
    return model


def _invalid_utf8() -> bytes:
    data = relu_model().SerializeToString()
    assert data.count(b"Relu") == 1
    return data.replace(b"Relu", b"R\xffl\xfe")


def _file_kinds(tmp_path) -> dict[str, tuple[object, str]]:
    """kind -> (path, fragment of the expected message)."""
    good = build_example("shallownet").SerializeToString()
    kinds = {
        "random": (np.random.default_rng(1).bytes(4000), "not a readable ONNX protobuf"),
        "truncated": (good[: len(good) // 3], "truncated or corrupt"),
        "tensorproto": (
            numpy_helper.from_array(np.ones((3, 4), np.float32), "w").SerializeToString(),
            "holds one serialized TensorProto",
        ),
        "graphproto": (
            build_example("shallownet").graph.SerializeToString(),
            "holds a bare GraphProto, not a ModelProto",
        ),
        "cycle": (_cycle(), "the graph has a cycle ('first' -> 'second' -> 'first')"),
        "duplicate": (_duplicate(), "nodes 'one' and 'two' both write 'y'"),
        "dangling": (_dangling(), "node 'X' (Relu) reads 'nowhere', which no node, input or initializer produces"),
        "dangling_in_subgraph": (_dangling_in_subgraph(), "node 'branch/then_branch/inner' (Relu) reads 'ghost'"),
        "unsorted": (_unsorted(), "node 'late' reads 'h' before node 'early' produces it"),
        "unproduced_output": (_unproduced_output(), "graph output 'zzz' is produced by no node"),
        "opset": (
            _opset("", 99),
            f"the model uses opset 99 of ai.onnx; this onnx ({ONNX_VERSION}) knows up to "
            f"{ONNX_OPSET}: upgrade onnx (pip install -U onnx)",
        ),
        "ml_opset": (_opset("ai.onnx.ml", 99), "opset 99 of ai.onnx.ml"),
        "ir_version": (_ir_version(), "IR version 99"),
        "no_opset": (_no_opset(), "declares no opset_import"),
        "undeclared_domain": (_undeclared_domain(), "my.ops"),
        "negative_dim": (_negative_dim(), "input 'x' declares dim -5 at axis 0"),
        "wrong_size_initializer": (
            _wrong_size_initializer(),
            "tensor 'w' holds 24 bytes, but its dims (5, float) need 20",
        ),
        "invalid_utf8": (_invalid_utf8(), "op_type is not valid UTF-8"),
        "external_absolute": (matmul_with_external_weight("/etc/passwd"), "an absolute path"),
        "external_windows_absolute": (matmul_with_external_weight("C:\\weights.bin"), "an absolute path"),
        "external_parent": (matmul_with_external_weight("../../secret.bin"), "through '..'"),
        "external_nested_parent": (matmul_with_external_weight("data/../../secret.bin"), "through '..'"),
    }
    paths = {}
    for kind, (content, fragment) in kinds.items():
        path = tmp_path / f"{kind}.onnx"
        path.write_bytes(content if isinstance(content, bytes) else content.SerializeToString())
        paths[kind] = (path, fragment)
    paths["missing"] = (tmp_path / "missing.onnx", "no such file")
    paths["directory"] = (tmp_path, "is a directory")
    paths["empty"] = (tmp_path / "empty.onnx", "the file is empty")
    paths["empty"][0].write_bytes(b"")
    os.mkfifo(tmp_path / "fifo.onnx")
    paths["fifo"] = (tmp_path / "fifo.onnx", "not a regular file")
    os.symlink(tmp_path / "gone.onnx", tmp_path / "dangling-link.onnx")
    paths["broken_link"] = (tmp_path / "dangling-link.onnx", "a symbolic link to a file that does not exist")
    return paths


BAD_KINDS = [
    "missing",
    "directory",
    "empty",
    "fifo",
    "broken_link",
    "random",
    "truncated",
    "tensorproto",
    "graphproto",
    "cycle",
    "duplicate",
    "dangling",
    "dangling_in_subgraph",
    "unsorted",
    "unproduced_output",
    "opset",
    "ml_opset",
    "ir_version",
    "no_opset",
    "undeclared_domain",
    "negative_dim",
    "wrong_size_initializer",
    "invalid_utf8",
    "external_absolute",
    "external_windows_absolute",
    "external_parent",
    "external_nested_parent",
]


@pytest.mark.parametrize("kind", BAD_KINDS)
@pytest.mark.parametrize("command", ["summary", "report"])
def test_bad_model_gives_one_line_naming_the_problem(capsys, tmp_path, kind, command):
    path, fragment = _file_kinds(tmp_path)[kind]
    target = tmp_path / "out" / "result.html"
    target.parent.mkdir()
    target.write_text("previous good output")
    code, out, err = run(capsys, command, path, "-o", target)
    assert_one_line_error(code, out, err, path, fragment)
    assert target.read_text() == "previous good output"  # never clobbered
    assert os.listdir(target.parent) == ["result.html"]  # no temporary left behind


def test_unreadable_file(capsys, tmp_path, monkeypatch):
    path = tmp_path / "locked.onnx"
    onnx.save(relu_model(), path)
    path.chmod(0)
    if os.geteuid() == 0:  # root reads any file: the refusal the OS gives others is simulated
        import builtins

        real_open = builtins.open

        def refusing_open(file, *args, **kwargs):
            if str(file) == str(path):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", refusing_open)
    code, out, err = run(capsys, "summary", path)
    assert_one_line_error(code, out, err, path, "cannot be read (Permission denied)")


def test_a_directory_given_as_the_model(capsys, tmp_path):
    code, out, err = run(capsys, "summary", tmp_path)
    assert_one_line_error(code, out, err, tmp_path, "is a directory")


def test_impossible_path_is_a_usage_error(capsys):
    code, out, err = run(capsys, "summary", "x" * 5000 + ".onnx")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_subprocess_bad_models_exit_2_without_traceback(tmp_path):
    paths = _file_kinds(tmp_path)
    for kind in ("cycle", "invalid_utf8"):
        process = subprocess.run(
            [sys.executable, "-m", "onnxroof.cli", "summary", str(paths[kind][0])],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert process.returncode == 2 and "Traceback" not in process.stderr, process.stderr
        assert len(process.stderr.splitlines()) == 1 and paths[kind][1] in process.stderr


# ---------------------------------------------------------------------------------------------
# Over 2 GiB: protobuf's limit, told before a byte is read


def test_file_over_2_gib_is_refused_before_reading(capsys, tmp_path):
    path = tmp_path / "huge.onnx"
    with open(path, "wb") as stream:  # sparse: no 2 GiB are written
        stream.truncate(2**31 + 1024)
    if path.stat().st_blocks * 512 > 2**20:
        pytest.skip("this filesystem has no sparse files")
    tracemalloc.start()
    code, out, err = run(capsys, "summary", path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert_one_line_error(code, out, err, path, "2.0 GiB, over protobuf's 2 GiB limit")
    assert "save_as_external_data=True" in err
    assert peak < 50 * 2**20  # never read


def test_size_limit_is_checked_on_a_real_model(capsys, tmp_path, monkeypatch):
    path = tmp_path / "model.onnx"
    onnx.save(relu_model(), path)
    monkeypatch.setattr(load, "MAX_PROTOBUF_BYTES", path.stat().st_size - 1)
    code, out, err = run(capsys, "summary", path)
    assert_one_line_error(code, out, err, path, "over protobuf's 2 GiB limit")
    monkeypatch.setattr(load, "MAX_PROTOBUF_BYTES", path.stat().st_size)
    assert run(capsys, "summary", path)[0] == 0


# ---------------------------------------------------------------------------------------------
# Opsets and domains


def test_unknown_domain_is_reported_as_unsupported_not_fatal(capsys, tmp_path):
    nodes = [
        helper.make_node("Relu", ["x"], ["h"], name="relu"),
        helper.make_node("Magic", ["h"], ["y"], domain="vendor.ops"),
    ]
    model = make_model(nodes, [("x", F32, [2, 3])], [("y", F32, [2, 3])])
    model.opset_import.append(helper.make_opsetid("vendor.ops", 7))
    path = tmp_path / "vendor.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "summary", path, "--format", "json")
    document = json.loads(out)
    assert code == 0 and document["totals"]["unsupported"] == {"Magic": 1}
    assert document["nodes"][0]["counted"] and document["totals"]["flops"] == 6
    assert "unsupported ops (not counted): Magic x1" in err
    code, out, err = run(capsys, "summary", path, "--strict", "-o", tmp_path / "out.json")
    assert code == 2 and "--strict" in err and not (tmp_path / "out.json").exists()


def test_every_opset_this_onnx_knows_is_accepted(capsys, tmp_path):
    path = tmp_path / "latest.onnx"
    onnx.save(_opset("", ONNX_OPSET), path)
    assert run(capsys, "summary", path)[0] == 0


# ---------------------------------------------------------------------------------------------
# External data: never read, so never needed; never followed outside the model's directory


def _save(model: onnx.ModelProto, path) -> None:
    path.write_bytes(model.SerializeToString())


def test_missing_external_data_still_analyses(capsys, tmp_path):
    path = tmp_path / "model.onnx"
    _save(matmul_with_external_weight("weights.bin"), path)
    code, out, err = run(capsys, "summary", path, "--format", "json")
    totals = json.loads(out)["totals"]
    assert code == 0 and err == ""
    assert totals["params"] == 300 * 200 and totals["param_bytes"] == 4 * 300 * 200 and totals["macs"] == 2 * 300 * 200


def test_external_data_of_the_wrong_size_is_never_read(capsys, tmp_path):
    path = tmp_path / "model.onnx"
    _save(matmul_with_external_weight("weights.bin"), path)
    (tmp_path / "weights.bin").write_bytes(b"\0" * 7)  # far too short
    code, out, _ = run(capsys, "summary", path, "--format", "json")
    assert code == 0 and json.loads(out)["totals"]["macs"] == 2 * 300 * 200


def test_missing_external_data_in_constants_and_subgraphs_still_analyses(capsys, tmp_path):
    # the checker insists on opening external data wherever it is: a Constant's value, an If
    # branch's initializer; onnxroof shows it the tensors as empty instead
    constant = declared_tensor("cw", [4, 4], "constant.bin")
    inner = declared_tensor("bw", [4, 4], "branch.bin")
    then = helper.make_graph(
        [helper.make_node("MatMul", ["h", "bw"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", F32, [1, 4])],
        [inner],
    )
    other = helper.make_graph(
        [helper.make_node("Relu", ["h"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F32, [1, 4])]
    )
    model = make_model(
        [
            helper.make_node("Constant", [], ["w"], value=constant),
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=other),
        ],
        [("x", F32, [1, 4]), ("c", BOOL, [])],
        [("y", F32, [1, 4])],
    )
    path = tmp_path / "model.onnx"
    _save(model, path)
    code, out, err = run(capsys, "summary", path, "--format", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["totals"]["macs"] == 16 + 16 and document["totals"]["params"] == 32
    assert document["complete"]


@pytest.mark.parametrize("location", ["weights.bin", "data/weights.bin", "./weights.bin", "data/x/../weights.bin"])
def test_locations_inside_the_directory_are_accepted(capsys, tmp_path, location):
    path = tmp_path / "model.onnx"
    _save(matmul_with_external_weight(location), path)
    assert run(capsys, "summary", path)[0] == 0


def test_symlink_inside_the_directory_is_accepted(capsys, tmp_path):
    (tmp_path / "real.bin").write_bytes(b"")
    os.symlink(tmp_path / "real.bin", tmp_path / "weights.bin")
    path = tmp_path / "model.onnx"
    _save(matmul_with_external_weight("weights.bin"), path)
    assert run(capsys, "summary", path)[0] == 0


@pytest.mark.parametrize("link", ["file", "directory"])
def test_symlink_out_of_the_directory_is_refused(capsys, tmp_path, link):
    outside, model_dir = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    model_dir.mkdir()
    (outside / "secret.bin").write_bytes(b"secret")
    if link == "file":
        os.symlink(outside / "secret.bin", model_dir / "weights.bin")
        location = "weights.bin"
    else:
        os.symlink(outside, model_dir / "data")
        location = "data/secret.bin"
    path = model_dir / "model.onnx"
    _save(matmul_with_external_weight(location), path)
    code, out, err = run(capsys, "summary", path)
    assert_one_line_error(code, out, err, path, "leads outside the model's directory through a symlink")
    assert "CVE-2024-27318" in err


def test_locations_are_checked_in_constants_subgraphs_and_sparse_tensors(capsys, tmp_path):
    constant = declared_tensor("cw", [4, 4], "../c.bin")
    nodes = [helper.make_node("Constant", [], ["w"], value=constant), helper.make_node("MatMul", ["x", "w"], ["y"])]
    model = make_model(nodes, [("x", F32, [1, 4])], [("y", F32, [1, 4])])
    path = tmp_path / "constant.onnx"
    _save(model, path)
    assert_one_line_error(*run(capsys, "summary", path), path, "tensor 'cw' keeps its external data at '../c.bin'")
    inner = declared_tensor("bw", [4, 4], "/abs/b.bin")
    then = helper.make_graph(
        [helper.make_node("MatMul", ["x", "bw"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", F32, [1, 4])],
        [inner],
    )
    other = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["e"])], "else", [], [helper.make_tensor_value_info("e", F32, [1, 4])]
    )
    model = make_model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [("x", F32, [1, 4]), ("c", BOOL, [])],
        [("y", F32, [1, 4])],
    )
    path = tmp_path / "subgraph.onnx"
    _save(model, path)
    assert_one_line_error(*run(capsys, "summary", path), path, "tensor 'bw' keeps its external data at '/abs/b.bin'")


# ---------------------------------------------------------------------------------------------
# Shape inference failing on one node: the rest is analysed, that node and its dependents are not


def _failing(op: str) -> tuple[onnx.ModelProto, str]:
    """A model where ``op`` (node 'bad') cannot be inferred, 'after' depends on it and
    'independent' does not; the second item is a fragment of onnx's own complaint."""
    if op == "Reshape":  # two -1 in the target shape
        bad = helper.make_node("Reshape", ["x", "shape"], ["h"], name="bad")
        initializers, complaint = [("shape", np.array([-1, -1, 2], np.int64))], "multiple -1"
    elif op == "MatMul":  # inner dims 3 and 4 disagree
        bad = helper.make_node("MatMul", ["x", "w"], ["h"], name="bad")
        initializers, complaint = [("w", np.zeros((4, 5), np.float32))], "ncompatible dimensions"
    else:  # Add of [2, 3] and [4]: not broadcastable
        bad = helper.make_node("Add", ["x", "w"], ["h"], name="bad")
        initializers, complaint = [("w", np.zeros(4, np.float32))], "Incompatible dimensions"
    nodes = [
        bad,
        helper.make_node("Relu", ["h"], ["y"], name="after"),
        helper.make_node("Sigmoid", ["x"], ["z"], name="independent"),
    ]
    model = make_model(nodes, [("x", F32, [2, 3])], [("y", F32, [None, None]), ("z", F32, [2, 3])], initializers)
    return model, complaint


@pytest.mark.parametrize("op", ["Reshape", "MatMul", "Add"])
def test_shape_inference_failure_leaves_the_rest_analysed(capsys, tmp_path, op):
    model, _ = _failing(op)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "summary", path, "--format", "json")
    assert code == 0, err
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert nodes["independent"]["counted"] and nodes["independent"]["flops"] == 3 * 6
    assert nodes["after"]["status"] == "unknown_shape" and not nodes["after"]["counted"]
    assert "not counted" in err
    target = tmp_path / "out.json"
    target.write_text("good")
    code, out, err = run(capsys, "summary", path, "--strict", "-o", target)
    assert code == 2 and "--strict" in err and target.read_text() == "good"


@pytest.mark.parametrize("op", ["Reshape", "MatMul", "Add"])
def test_failing_node_and_dependents_carry_the_reason(capsys, tmp_path, op):
    model, complaint = _failing(op)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "summary", path, "--format", "json")
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    if op != "Reshape":  # a Reshape is a view: its rule needs no shape, so it is still counted (as 0)
        assert nodes["bad"]["status"] == "unknown_shape"
        assert "shape inference failed" in nodes["bad"]["reason"] and complaint in nodes["bad"]["reason"]
    assert nodes["after"]["status"] == "unknown_shape"
    assert "depends on node 'bad', whose shape inference failed" in nodes["after"]["reason"]
    assert complaint in nodes["after"]["reason"]
    assert f"shape inference failed on node 'bad' ({op})" in err and complaint in err  # the warning says why


def test_inconsistent_reshape_is_not_counted(capsys, tmp_path):
    model = make_model(
        [
            helper.make_node("Reshape", ["x", "shape"], ["h"], name="bad"),
            helper.make_node("Relu", ["h"], ["y"], name="after"),
            helper.make_node("Relu", ["x"], ["z"], name="beside"),
        ],  # counted: the run is no blank
        [("x", F32, [2, 3])],
        [("y", F32, [4, 4]), ("z", F32, [2, 3])],
        [("shape", np.array([4, 4], np.int64))],
    )
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "summary", path, "--format", "json")
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert code == 0 and not nodes["bad"]["counted"] and not nodes["after"]["counted"]
    assert "6 elements" in nodes["bad"]["reason"] and "16" in nodes["bad"]["reason"]
    assert run(capsys, "summary", path, "--strict")[0] == 2


def test_huge_vector_does_not_exhaust_memory(tmp_path):
    model = make_model([helper.make_node("Add", ["x", "x"], ["y"])], [("x", F32, [10**12])], [("y", F32, [10**12])])
    path = tmp_path / "vector.onnx"
    onnx.save(model, path)

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**29, 3 * 2**29))  # 1.5 GiB: onnxroof needs a fraction

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    process = subprocess.run(
        [sys.executable, "-m", "onnxroof.cli", "summary", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit_memory,
        env=env,
    )
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout)["totals"]["flops"] == 10**12
    # under this limit the allocation fails (std::bad_alloc) instead of taking all the machine's memory
    assert "bad_alloc" not in process.stderr and "shape inference failed" not in process.stderr, process.stderr


_ABORTING_MODEL = """
import sys
import numpy as np
from onnx import helper, numpy_helper
import onnxroof
from onnxroof.core.errors import ModelError

graph = helper.make_graph(
    [helper.make_node("Slice", ["x", "starts", "ends"], ["y"])], "g",
    [helper.make_tensor_value_info("x", 1, [-5])], [helper.make_tensor_value_info("y", 1, [None])],
    [numpy_helper.from_array(np.array([1]), "starts"), numpy_helper.from_array(np.array([2]), "ends")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
try:
    onnxroof.analyze(model)
except ModelError as exc:
    print(exc)
    sys.exit(2)
"""


def test_negative_dim_in_a_file_never_reaches_onnx_inference(capsys, tmp_path):
    path = tmp_path / "negative.onnx"
    path.write_bytes(_negative_dim().SerializeToString())
    assert_one_line_error(*run(capsys, "summary", path), path, "declares dim -5")


def test_negative_dim_in_a_model_proto_is_refused_not_fatal():
    process = subprocess.run([sys.executable, "-c", _ABORTING_MODEL], capture_output=True, text=True, timeout=120)
    assert process.returncode == 2, (process.returncode, process.stderr[-500:])  # -6 (SIGABRT) without the patch
    assert "declares dim -5" in process.stdout


# ---------------------------------------------------------------------------------------------
# Bad flags


@pytest.fixture
def two_inputs(tmp_path):
    model = make_model(
        [helper.make_node("Add", ["images", "mask"], ["y"])],
        [("images", F32, ["batch", 3]), ("mask", F32, ["batch", 3])],
        [("y", F32, ["batch", 3])],
    )
    path = tmp_path / "two.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize(
    "text",
    [
        "",
        ":",
        "images:",
        "images:-1,3",
        "images:1,,3",
        "images:1.5,3",
        "images:a,b",
        "images:1;3",
        "images:١,٣",
        "images:1 x 3 x",
        "images:+1,3",
    ],
)
def test_malformed_input_shape(capsys, two_inputs, text):
    code, out, err = run(capsys, "summary", two_inputs, f"--input-shape={text}")
    assert code == 2 and err.count("\n") == 1 and out == "" and "expected NAME:D1,D2" in err, err


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("image:1,3", "did you mean 'images'"),
        ("zzz:1,3", "its inputs are 'images', 'mask'"),
        ("1,3", "needs a model with one input; this one has images, mask"),
        ("images:1,3,5", "rank 2"),
    ],
)
def test_input_shape_that_does_not_fit_the_model(capsys, two_inputs, text, fragment):
    code, out, err = run(capsys, "summary", two_inputs, "--input-shape", text)
    assert code == 2 and err.count("\n") == 1 and fragment in err, err


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("batch", "expected SYMBOL=VALUE"),
        ("batch=-1", "non-negative integer"),
        ("=3", "expected SYMBOL=VALUE"),
        ("batch=x", "non-negative integer"),
        ("bacth=2", "no dim named 'bacth' (named dims: batch)"),
    ],
)
def test_bad_dim(capsys, two_inputs, text, fragment):
    code, out, err = run(capsys, "summary", two_inputs, f"--dim={text}")
    assert code == 2 and err.count("\n") == 1 and fragment in err, err


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("myriad", "did you mean myriad-x"),
        ("h100", "h100-sxm"),
        ("qqqqqqqq", "onnxroof targets"),
        ("nosuch.toml", "no such file"),
    ],
)
def test_target_that_does_not_exist(capsys, name, fragment):
    code, out, err = run(capsys, "summary", "--example", "shallownet", "--target", name)
    assert code == 2 and err.count("\n") == 1 and fragment in err, err


GOOD_TARGET = """schema = "onnxroof-target/1"
name = "chip"
description = "a test chip"
[peak_ops_per_s.fp32]
value = 1e12
tag = "estimate"
source = "test"
[dram.bandwidth_bytes_per_s]
value = 1e10
tag = "estimate"
source = "test"
"""


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("name = \n", "not valid TOML"),
        ("[[[", "not valid TOML"),
        (GOOD_TARGET.replace('name = "chip"\n', ""), "'name' must be a non-empty string"),
        (GOOD_TARGET.replace("value = 1e10", 'value = "fast"'), "'dram.bandwidth_bytes_per_s.value' must be a number"),
        (GOOD_TARGET.replace("value = 1e10", "value = -1"), "must be positive"),
        (GOOD_TARGET.replace("value = 1e10", "value = nan"), "must be positive"),
        (
            GOOD_TARGET.replace('tag = "estimate"\nsource = "test"\n[dram', 'tag = "guess"\nsource = "test"\n[dram'),
            "'peak_ops_per_s.fp32.tag' must be one of",
        ),
        (
            GOOD_TARGET.replace("[dram.bandwidth_bytes_per_s]", "[dram.other]"),
            "'dram.bandwidth_bytes_per_s' is missing",
        ),
        (GOOD_TARGET.replace("fp32", "fp64"), "'peak_ops_per_s.fp64' is not a known dtype"),
        (GOOD_TARGET.replace("onnxroof-target/1", "onnxroof-target/9"), "'schema' is"),
    ],
)
def test_malformed_target_file(capsys, tmp_path, text, fragment):
    path = tmp_path / "chip.toml"
    path.write_text(text)
    code, out, err = run(capsys, "summary", "--example", "shallownet", "--target", path)
    assert code == 2 and err.count("\n") == 1 and fragment in err and str(path) in err, err


def test_target_file_that_is_not_text(capsys, tmp_path):
    path = tmp_path / "chip.toml"
    path.write_bytes(b"\xff\xfe\x00binary")
    code, out, err = run(capsys, "summary", "--example", "shallownet", "--target", path)
    assert code == 2 and err.count("\n") == 1 and "cannot be read" in err, err


def test_good_target_file_works(capsys, tmp_path):
    path = tmp_path / "chip.toml"
    path.write_text(GOOD_TARGET)
    assert run(capsys, "summary", "--example", "shallownet", "--target", path)[0] == 0


# ---------------------------------------------------------------------------------------------
# Untrusted models: every name, doc string and metadata value is inert text in every output

PAYLOADS = [
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "\"'><svg onload=alert(1)>",
    "| col | injection",
    "[link](javascript:alert(1))",
    "line\nbreak\r\n# heading",
    "\x1b[31mred\x1b[0m\x07\x1b]0;title\x07",
]
ALL = " ".join(PAYLOADS)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile_model(payloads: list[str] = PAYLOADS) -> onnx.ModelProto:
    """Every string the model carries holds the payloads: graph, node, tensor, doc and metadata."""
    PAYLOADS, ALL = payloads, " ".join(payloads)
    x, w, h, y = (f"{prefix}{p}" for prefix, p in zip(("in", "w", "h", "out"), PAYLOADS))
    nodes = [
        helper.make_node("MatMul", [x, w], [h], name="mm" + PAYLOADS[5], doc_string=ALL),
        helper.make_node("Relu", [h], [y], name="relu" + PAYLOADS[6], doc_string=ALL),
        helper.make_node(
            "Evil" + PAYLOADS[1], [y], ["z" + PAYLOADS[4]], name="custom" + PAYLOADS[3], domain="evil.domain"
        ),
    ]
    batch = "batch" + PAYLOADS[6]
    model = make_model(
        nodes,
        [(x, F32, [batch, 4])],
        [("z" + PAYLOADS[4], F32, [batch, 4])],
        [(w, np.ones((4, 4), np.float32))],
        name="graph" + ALL,
    )
    model.opset_import.append(helper.make_opsetid("evil.domain", 1))
    model.doc_string = model.graph.doc_string = ALL
    model.producer_name, model.producer_version = ALL, PAYLOADS[6]
    helper.set_model_props(model, {PAYLOADS[0]: ALL, "key": PAYLOADS[6]})
    return model


@pytest.fixture
def hostile_file(tmp_path):
    path = tmp_path / "hostile.onnx"
    onnx.save(hostile_model(), path)
    return path


def test_hostile_names_survive_json_exactly(capsys, hostile_file):
    code, out, err = run(capsys, "summary", hostile_file, "--format", "json", "-q", "--dim", f"batch{PAYLOADS[6]}=2")
    document = json.loads(out)
    assert code == 0 and document["model"]["graph_name"] == "graph" + ALL
    assert document["nodes"][0]["name"] == "mm" + PAYLOADS[5]
    assert document["totals"]["unsupported"] == {"Evil" + PAYLOADS[1]: 1}
    assert document["totals"]["macs"] == 2 * 4 * 4


def test_html_report_has_no_raw_payload(capsys, hostile_file, tmp_path):
    target = tmp_path / "report.html"
    code, _, err = run(
        capsys, "report", hostile_file, "-o", target, "-q", "--dim", f"batch{PAYLOADS[6]}=2", "--target", "myriad-x"
    )
    page = target.read_text()
    assert code == 0, err
    for raw in ("</script><script>", "<script>alert", "<img src=x", "<svg onload", "\"'>"):
        assert raw not in page, raw
    benign_file, benign = tmp_path / "benign.onnx", tmp_path / "benign.html"
    onnx.save(hostile_model([f"p{i}" for i in range(len(PAYLOADS))]), benign_file)  # same model, harmless names
    assert run(capsys, "report", benign_file, "-o", benign, "-q", "--dim", "batchp6=2", "--target", "myriad-x")[0] == 0
    hostile_tags, benign_tags = _Elements.of(page), _Elements.of(benign.read_text())
    assert hostile_tags.scripts == benign_tags.scripts  # no script element added
    assert hostile_tags.tags <= benign_tags.tags  # no element the report does not make itself
    assert not hostile_tags.handlers and not hostile_tags.javascript_urls
    # the data the page's script reads is JSON that decodes back to the exact names
    match = re.search(r'<script type="application/json" id="onnxroof-data">(.*?)</script>', page, re.S)
    assert match and "</" not in match.group(1)
    document = json.loads(match.group(1))
    assert document["model"]["graph_name"] == "graph" + ALL


class _Elements(HTMLParser):
    """The elements of a page as a browser's tokenizer sees them (attribute values decoded)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self.handlers, self.javascript_urls = set(), 0, [], []

    @classmethod
    def of(cls, page: str) -> _Elements:
        parser = cls()
        parser.feed(page)
        parser.close()
        return parser

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.scripts += tag == "script"
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append((tag, name, value))
            if value and value.strip().lower().startswith("javascript:"):
                self.javascript_urls.append((tag, name, value))


MARKDOWN_TAGS = re.compile(r"</?(?:details|summary|sub|br)>")


def _markdown_tables(text: str) -> list[list[list[str]]]:
    """Each pipe table, as the cells of its rows: split on pipes not escaped by a backslash."""
    tables: list[list[list[str]]] = []
    previous_was_row = False
    for line in text.splitlines():
        is_row = line.startswith("|")
        if is_row:
            if not previous_was_row:
                tables.append([])
            tables[-1].append(re.split(r"(?<!\\)\|", line.strip())[1:-1])
        previous_was_row = is_row
    return tables


def _markdown(capsys, hostile_file) -> str:
    code, out, err = run(
        capsys,
        "summary",
        hostile_file,
        "--format",
        "markdown",
        "-q",
        "--dim",
        f"batch{PAYLOADS[6]}=2",
        "--target",
        "myriad-x",
    )
    assert code == 0, err
    return out


def test_markdown_renders_payloads_as_text(capsys, hostile_file):
    out = _markdown(capsys, hostile_file)
    assert "<" not in MARKDOWN_TAGS.sub("", out)  # no raw HTML from the model
    assert "](javascript:" not in out  # no link syntax
    tables = _markdown_tables(out)
    assert len(tables) >= 4  # totals, targets, the nodes by FLOPs and by time
    for rows in tables:  # no payload splits a cell: every row has its header's columns
        assert all(len(cells) == len(rows[0]) for cells in rows), rows
    assert not any(line.startswith("# heading") for line in out.splitlines())  # a newline cannot start a heading


def test_markdown_has_no_control_characters(capsys, hostile_file):
    out = _markdown(capsys, hostile_file)
    assert not CONTROL.search(out), CONTROL.findall(out)


def test_terminal_table_has_no_control_characters(capsys, hostile_file):
    code, out, err = run(
        capsys, "summary", hostile_file, "-q", "--dim", f"batch{PAYLOADS[6]}=2", "--target", "myriad-x"
    )
    assert code == 0
    assert not CONTROL.search(out), sorted(set(CONTROL.findall(out)))
    lines = out.splitlines()
    assert not any(line.startswith("# heading") for line in lines)  # a name cannot start a line of its own


def test_explain_has_no_control_characters(capsys, hostile_file):
    code, out, err = run(capsys, "explain", hostile_file, "relu" + PAYLOADS[6], "-q", "--dim", f"batch{PAYLOADS[6]}=2")
    assert code == 0, err
    assert not CONTROL.search(out.replace("\n", "")), out


def test_warnings_on_stderr_have_no_control_characters(capsys, hostile_file):
    code, out, err = run(capsys, "summary", hostile_file, "--format", "json")  # batch left unbound: warnings
    assert code == 0 and err
    assert all(line.startswith("onnxroof: warning: ") for line in err.splitlines()), err
    assert not CONTROL.search(err.replace("\n", "")), err


def test_error_naming_a_hostile_node_is_one_clean_line(capsys, tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["no\nwhere\x1b[2J"], ["y"], name="bad\nnode\x1b[31m")],
        [("x", F32, [1])],
        [("y", F32, [1])],
    )
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    code, out, err = run(capsys, "summary", path)
    assert code == 2 and err.count("\n") == 1 and not CONTROL.search(err.rstrip("\n")), repr(err)
    assert "'bad\\nnode\\x1b[31m'" in err  # shown escaped, not interpreted


# ---------------------------------------------------------------------------------------------
# Nothing is executed: huge declared dims are costed with Python integers, allocating nothing


def huge_model() -> onnx.ModelProto:
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [("x", F32, [1, 10**6])], [("y", F32, [1, 10**6])]
    )
    model.graph.initializer.append(declared_tensor("w", [10**6, 10**6], "w.bin"))  # 4 TB, no file
    return model


def test_huge_declared_dims_cost_exactly_without_allocating(tmp_path):
    path = tmp_path / "huge.onnx"
    _save(huge_model(), path)
    tracemalloc.start()
    result = onnxroof.analyze(path, targets=["myriad-x"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert result.totals.macs == 10**12 and result.totals.mac_flops == 2 * 10**12
    assert result.totals.params == 10**12 and result.totals.param_bytes == 4 * 10**12
    (record,) = result.nodes
    assert record.weight_bytes == 4 * 10**12 and record.input_bytes == record.output_bytes == 4 * 10**6
    assert result.targets[0].latency_s > 4 * 10**12 / 12.8e9 * 0.99  # at least the weights streamed once
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_huge_declared_dims_through_the_cli(capsys, tmp_path):
    path = tmp_path / "huge.onnx"
    _save(huge_model(), path)
    code, out, err = run(capsys, "summary", path, "--format", "json")
    totals = json.loads(out)["totals"]
    assert code == 0 and totals["macs"] == 10**12 and totals["params"] == 10**12 and totals["param_bytes"] == 4 * 10**12
