"""Shared builders: tiny ONNX graphs made with onnx.helper (no weights stored on disk); and the
run's environment, which holds no target of the user's."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

# The suite reads onnxroof's bundled targets and the files its tests write, never the user's (issue
# 47: after `onnxroof calibrate --save`, `onnxroof targets` listed this-machine): the user's targets
# folder and config (the only paths onnxroof finds from $HOME: roofline/target_paths.py) are empty
# folders of the run's own, and ./hardware of the folder pytest runs in is not searched. A test
# that means a ./hardware of its own deletes ONNXROOF_CWD_TARGETS; subprocesses inherit all three.
ISOLATED = {"ONNXROOF_TARGETS": "targets", "XDG_CONFIG_HOME": "config"}
_saved_environment: dict[str, str | None] = {}


def pytest_configure(config):
    home = tempfile.mkdtemp(prefix="onnxroof-tests-")
    settings = {variable: os.path.join(home, folder) for variable, folder in ISOLATED.items()}
    settings["ONNXROOF_CWD_TARGETS"] = "0"
    for variable, value in settings.items():
        _saved_environment.setdefault(variable, os.environ.get(variable))
        os.environ[variable] = value
    config.onnxroof_test_home = home


def pytest_unconfigure(config):
    for variable, value in _saved_environment.items():
        if value is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = value
    shutil.rmtree(getattr(config, "onnxroof_test_home", ""), ignore_errors=True)


def make_model(nodes, inputs, outputs, initializers=(), opset: int = 17, name: str = "test") -> onnx.ModelProto:
    """inputs/outputs: (name, elem_type, shape) tuples; initializers: (name, ndarray) tuples."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def zeros(*shape, dtype=np.float32):
    return np.zeros(shape, dtype=dtype)


@pytest.fixture
def float_type():
    return TensorProto.FLOAT


def analyse_node(
    node, inputs, outputs, initializers=(), opset: int = 17, contrib: bool = False, expect_ok: bool = True
):
    """Analyse a one-node model; ``contrib`` imports the com.microsoft domain."""
    import onnxroof

    model = make_model([node], inputs, outputs, initializers, opset=opset)
    if contrib:
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    (record,) = onnxroof.analyze(model).nodes
    if expect_ok:
        assert record.status == "ok", record.reason
    return record


def minigooglenet_by_hand(separable: bool = False) -> tuple[int, int, int]:
    """(MAC-FLOPs, params, params without BatchNormalization) walking the Keras definition of
    MiniGoogLeNet: conv => BN => ReLU modules, Inception and downsample modules, dense 10.
    ``separable``: every 3x3 conv is a depthwise 3x3 without bias (Ci x 9 weights,
    Ho x Wo x Ci x 9 MACs) then a 1x1 with bias (Ci x Co + Co weights)."""
    params = params_without_bn = macs = 0

    def conv(h, c_in, c_out, k, stride=1, same=True):
        nonlocal params, params_without_bn, macs
        h_out = -(-h // stride) if same else (h - k) // stride + 1
        if separable and k > 1:
            weights = c_in * k * k + c_in * c_out + c_out
            macs += h_out * h_out * c_in * (k * k + c_out)
        else:
            weights = c_in * k * k * c_out + c_out
            macs += h_out * h_out * c_out * k * k * c_in
        params += weights + 4 * c_out  # BN: gamma, beta, moving mean, moving variance
        params_without_bn += weights
        return h_out

    h, c = conv(32, 3, 96, 3), 96
    for k1, k3 in ((32, 32), (32, 48)):
        conv(h, c, k1, 1), conv(h, c, k3, 3)
        c = k1 + k3
    h, c = conv(h, c, 80, 3, 2, same=False), 80 + c
    for k1, k3 in ((112, 48), (96, 64), (80, 80), (48, 96)):
        conv(h, c, k1, 1), conv(h, c, k3, 3)
        c = k1 + k3
    h, c = conv(h, c, 96, 3, 2, same=False), 96 + c
    for k1, k3 in ((176, 160), (176, 160)):
        conv(h, c, k1, 1), conv(h, c, k3, 3)
        c = k1 + k3
    assert (h, c) == (7, 336)
    dense = c * 10 + 10
    return 2 * (macs + c * 10), params + dense, params_without_bn + dense


def target_text(figures: dict, extra: str = "", name: str = "test", description: str = "a hand-made target") -> str:
    """A target file's text: each figure (a dotted key, "dram.bandwidth_bytes_per_s") a table
    tagged estimate, then ``extra`` (more tables: [fusion], [efficiency.*], [weights])."""
    lines = [f'name = "{name}"', f'description = "{description}"']
    for key, value in figures.items():
        lines += [f"[{key}]", f"value = {value!r}", 'tag = "estimate"', 'source = "hand"']
    return "\n".join(lines) + "\n" + extra + "\n"


def run(capsys, *argv) -> tuple[int, str, str]:
    """``onnxroof ARGV...`` through the real entry point: (exit code, stdout, stderr)."""
    from onnxroof.cli.app import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def conv_relu(tmp_path):
    """x [n, 2, 8, 8] -> Conv 2 -> 4, 3x3, pad 1 -> Relu, saved. Per batch item: 4 x 64 x 2 x 9 =
    4,608 MACs (9,216 MAC-FLOPs) + 256 Relu = 9,472 FLOPs."""
    model = make_model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"], name="relu"),
        ],
        [("x", TensorProto.FLOAT, ["n", 2, 8, 8])],
        [("y", TensorProto.FLOAT, ["n", 4, 8, 8])],
        [("w", np.zeros((4, 2, 3, 3), np.float32)), ("b", np.zeros(4, np.float32))],
    )
    path = tmp_path / "conv_relu.onnx"
    onnx.save(model, path)
    return path


def relu_file(path, shape=(1, 3, 4, 4)):
    """A one-Relu model at ``path`` (a name in ``shape`` is a dim without a value)."""
    onnx.save(
        make_model(
            [helper.make_node("Relu", ["x"], ["y"], name="relu")],
            [("x", TensorProto.FLOAT, list(shape))],
            [("y", TensorProto.FLOAT, list(shape))],
        ),
        path,
    )
    return path


def one_error_line(err: str) -> bool:
    """A CLI error as the project promises it: one line, no traceback."""
    return err.startswith("onnxroof: error: ") and err.count("\n") == 1 and "Traceback" not in err


def launch_target(tmp_path, rules: str = "[]") -> str:
    """A target file: 1 TFLOP/s fp32, 1 TB/s DRAM, nothing on chip, 3 µs per kernel, fusing ``rules``
    (one kernel per node by default)."""
    path = tmp_path / "launchy.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 1e12, "node_overhead_s": 3e-6},
            f'[fusion]\nrules = {rules}\nsource = "hand"\n',
            name="launchy",
        )
    )
    return str(path)


def int8_target(tmp_path, efficiency: str, name: str = "i") -> str:
    """A target file: fp32 1 TFLOP/s, int8 100 GOP/s, DRAM 1 TB/s, 1 TB/s on chip (1 GiB), no
    launch cost, and the ``efficiency`` tables."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        target_text(
            {
                "peak_ops_per_s.fp32": 1e12,
                "peak_ops_per_s.int8": 1e11,
                "dram.bandwidth_bytes_per_s": 1e12,
                "onchip.size_bytes": 1 << 30,
                "onchip.bandwidth_bytes_per_s": 1e12,
            },
            efficiency,
        )
    )
    return str(path)


def unfused_target(tmp_path, name: str, dram_bytes_per_s: float) -> str:
    """A target file ``name``: 1 TFLOP/s fp32, a DRAM of ``dram_bytes_per_s``, nothing on chip, no
    fusion (a kernel per node), no launch cost."""
    path = tmp_path / f"{name}.toml"
    path.write_text(
        target_text(
            {"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": dram_bytes_per_s},
            '[fusion]\nrules = []\nsource = "hand"\n',
            name=name,
        )
    )
    return str(path)


def fixed_reshape_chain(adds: int = 20) -> onnx.ModelProto:
    """x [batch, 128, 64] -> Relu -> Reshape to a stored [1, 128, 64] -> ``adds`` Adds: complete at
    batch 1; at batch 8 the Reshape meets 8 x 8,192 elements, and it and every Add are not counted."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "fixed"], ["a0"], name="fixed_reshape"),
    ]
    nodes += [helper.make_node("Add", [f"a{i}", f"a{i}"], [f"a{i + 1}"], name=f"add_{i}") for i in range(adds)]
    return make_model(
        nodes,
        [("x", TensorProto.FLOAT, ["batch", 128, 64])],
        [(f"a{adds}", TensorProto.FLOAT, None)],
        [("fixed", np.array([1, 128, 64]))],
    )


EXPORTS = Path(__file__).resolve().parent / "data" / "exports"


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A real export of tests/data/exports unzipped (once a test module): ``export(name)`` is its path."""
    folder = tmp_path_factory.mktemp("exports")

    def unzipped(name: str) -> Path:
        path = folder / f"{name}.onnx"
        if not path.exists():
            path.write_bytes(gzip.decompress((EXPORTS / f"{name}.onnx.gz").read_bytes()))
        return path

    return unzipped
