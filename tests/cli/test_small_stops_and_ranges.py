"""Issue 43, item 12: `--devices` past its range says so (not ONNX's dim limit), `graph --module`
names each module with a view once, and SIGTERM exits 143 (128 + 15) where Ctrl-C exits 130."""

from __future__ import annotations

import os
import signal

import onnx
import pytest
from conftest import make_model, one_error_line, run
from onnx import TensorProto, helper

import onnxroof
from onnxroof.core.errors import OptionError, Terminated
from onnxroof.core.examples import build_example


@pytest.mark.parametrize("value", [str(2**63), str(2**64 + 1), "4097", "0", "-1"])
def test_devices_out_of_range_names_its_range(capsys, value):
    code, out, err = run(capsys, "summary", "--example", "shallownet", f"--devices={value}")
    assert code == 2 and out == "" and one_error_line(err)
    assert "--devices" in err and "from 1 to 4,096" in err and "ONNX" not in err and "dim" not in err


def test_devices_out_of_range_through_the_api():
    with pytest.raises(OptionError, match=r"devices 18446744073709551616: give a whole number from 1 to 4,096"):
        onnxroof.analyze(build_example("shallownet"), devices=2**64)


def three_modules(path):
    """/a, /b, /c: 60 nodes each, a chain (180 boxes: more than a view's 100), then /out: the top
    view shows a, b, c folded, each with a view of its own, and the top view's variants (each
    with one of them unfolded) carry the top view's title."""
    nodes, previous = [], "x"
    for module in "abc":
        for i in range(60):
            nodes.append(
                helper.make_node(
                    "Relu" if i % 2 else "Sigmoid", [previous], [f"{module}{i}"], name=f"/{module}/n{i}/Op"
                )
            )
            previous = f"{module}{i}"
    nodes.append(helper.make_node("Identity", [previous], ["y"], name="/out/Identity"))
    onnx.save(make_model(nodes, [("x", TensorProto.FLOAT, [1, 8])], [("y", TensorProto.FLOAT, [1, 8])]), path)
    return path


def test_graph_module_not_found_names_each_module_once(capsys, tmp_path):
    model = three_modules(tmp_path / "m.onnx")
    code, _, err = run(capsys, "graph", model, "--module", "nope", "-o", tmp_path / "g.svg")
    assert code == 2 and one_error_line(err)
    assert err.endswith("no such module; modules at the top: a, b, c, out\n")  # each once
    code, _, err = run(capsys, "graph", model, "--module", "/b", "-o", tmp_path / "g.svg")
    assert code == 0 and "<title>b</title>" in (tmp_path / "g.svg").read_text()


def test_a_sigterm_exits_143_with_one_line(capsys, monkeypatch):
    import onnxroof.findings

    def terminated(*args, **kwargs):
        raise Terminated

    monkeypatch.setattr(onnxroof.findings, "analyze_keeping_front", terminated)  # the pipeline, as the CLI runs it
    code, out, err = run(capsys, "summary", "--example", "shallownet")
    assert code == 128 + 15 and out == "" and err == "onnxroof: terminated (SIGTERM)\n"


def test_check_turns_sigterm_into_terminated_and_puts_the_old_handler_back():
    from onnxroof.core.errors import sigterm_stops

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), sigterm_stops():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) == before
    assert issubclass(Terminated, KeyboardInterrupt)  # every clean-up an interrupt gets, SIGTERM gets
