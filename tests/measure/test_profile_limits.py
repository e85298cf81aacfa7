"""`profile` on models it cannot run whole: inputs too large to make are refused before anything
is allocated, onnxruntime runs in a child process stopped at a time limit (a Loop of 10^15 trips),
at Ctrl-C or at SIGTERM, and its temporary folder is removed on every way out."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading

import numpy as np
import onnx
import pytest
from conftest import make_model
from onnx import TensorProto, helper, numpy_helper

import onnxroof
from onnxroof.cli.app import main
from onnxroof.core.errors import UsageError
from onnxroof.measure import ort_child
from onnxroof.measure.profile_run import input_specs, profile_model
from onnxroof.roofline.targets import load_target

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def relu_model(shape):
    return make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [("x", F32, shape)], [("y", F32, shape)])


def test_an_input_too_large_to_make_is_refused_before_it_is_allocated():
    # x [2^20, 2^20] float32: 2^40 elements x 4 bytes = 2^42 bytes = 4 TiB
    analysis = onnxroof.analyze(relu_model([2**20, 2**20]))
    with pytest.raises(UsageError) as raised:
        input_specs(analysis, limit_bytes=2**30)
    message = str(raised.value)
    assert "input 'x' of shape [1048576,1048576] (float32) takes 4 TiB" in message
    assert "(1 GiB)" in message and "--input-shape x:" in message and "\n" not in message


def test_the_inputs_are_limited_together():
    # a [1000] float32 = 4,000 bytes (/ 1,024 = 3.91 KiB) and b [10] int64 = 80 bytes: 4,080 bytes
    # in all (3.98 KiB); the message names the larger
    model = make_model(
        [
            helper.make_node("Cast", ["b"], ["bf"], to=F32, name="c"),
            helper.make_node("Add", ["a", "bf"], ["y"], name="add"),
        ],
        [("a", F32, [1000]), ("b", I64, [10])],
        [("y", F32, [1000])],
    )
    analysis = onnxroof.analyze(model, partial=True)
    with pytest.raises(UsageError, match=r"input 'a' of shape \[1000\] \(float32\) takes 3.91 KiB \(3.98 KiB with"):
        input_specs(analysis, limit_bytes=4079)
    specs = input_specs(analysis, limit_bytes=4080)
    assert [(s.name, s.dtype, s.shape) for s in specs] == [("a", "<f4", (1000,)), ("b", "<i8", (10,))]


def test_the_cli_refuses_a_huge_input_in_one_line(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    path = tmp_path / "huge.onnx"
    onnx.save(relu_model([2**20, 2**20]), path)
    code = main(["profile", str(path), "--target", "myriad-x"])
    _, err = capsys.readouterr()
    # as above: 4 TiB of float32 for x
    assert code == 2 and err.count("\n") == 1 and "input 'x'" in err and "takes 4 TiB" in err
    assert "--input-shape x:" in err


def endless_loop_model(trips=10**4, shape=(1024, 1024)):
    # a Loop of ``trips`` trips whose body adds 1 to a float ``shape``: by default 10^4 trips of
    # 2^20 additions, about 9 s a run on onnxruntime here; myriad-x predicts 6.6 s, far from the
    # 100 x 1.5 s that would refuse it, and 2 x 10^4 kernel runs are far from the profiler's cap
    shape = list(shape)
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
            helper.make_node("Add", ["v_in", "one"], ["v_out"], name="add"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", F32, shape),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", F32, shape),
        ],
        [numpy_helper.from_array(np.ones(1, np.float32), "one")],
    )
    return make_model(
        [helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body, name="loop")],
        [("x", F32, shape)],
        [("y", F32, shape)],
        initializers=[("trips", np.array(trips, np.int64)), ("cond", np.array(True))],
    )


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The temporary folders profile makes, in a folder of the test's own."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.fixture
def children(monkeypatch):
    """The child processes profile starts, to check they are gone."""
    started = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(ort_child.subprocess, "Popen", Recorded)
    return started


def test_a_run_over_the_time_limit_is_stopped_and_its_folder_removed(private_tmp, children):
    pytest.importorskip("onnxruntime")
    model = endless_loop_model()
    with pytest.raises(UsageError, match=r"did not finish its runs within --timeout 1.5 s and was stopped"):
        profile_model(onnxroof.analyze(model), load_target("myriad-x"), runs=1, warmup=0, model=model, timeout_s=1.5)
    assert len(children) == 1 and children[0].poll() is not None
    assert list(private_tmp.iterdir()) == []


def doubling_loop_model(trips=40):
    # a Loop whose body concatenates its tensor with itself: 2^trips x 1,024 floats after ``trips``
    # trips (2^40 x 4 KiB = 4 PiB at 40), which onnxruntime allocates as it runs
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
            helper.make_node("Concat", ["v_in", "v_in"], ["v_out"], axis=0, name="double"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", F32, ["d"]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", F32, ["e"]),
        ],
    )
    return make_model(
        [helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body, name="loop")],
        [("x", F32, [1024])],
        [("y", F32, ["f"])],
        [("trips", np.array(trips, np.int64)), ("cond", np.array(True))],
    )


def test_a_loop_growing_a_tensor_fails_within_the_memory_it_is_given(private_tmp, children):
    # unbounded, it took all 24 GB of this machine before the kernel killed it; given 384 MiB plus
    # its (tiny) parameters and activations, onnxruntime's arena fails an allocation well before
    pytest.importorskip("onnxruntime")
    model = doubling_loop_model()
    analysis = onnxroof.analyze(model)
    with pytest.raises(UsageError) as raised:
        profile_model(analysis, load_target("myriad-x"), runs=1, warmup=0, model=model, timeout_s=60)
    message = str(raised.value)
    assert "onnxruntime needed more than the 384 MiB of memory profile gives it" in message
    assert "--max-memory MIB" in message and "\n" not in message
    assert len(children) == 1 and children[0].poll() is not None
    assert list(private_tmp.iterdir()) == []
    # a limit the user gave is named as given, not as the default's parts
    with pytest.raises(UsageError, match=r"more than the 300 MiB of memory profile gives it: the model allocates"):
        profile_model(analysis, load_target("myriad-x"), runs=1, warmup=0, model=model, max_memory_bytes=300 * 2**20)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_the_run_and_removes_its_folder(private_tmp, children, signum):
    pytest.importorskip("onnxruntime")
    model = endless_loop_model()
    analysis = onnxroof.analyze(model)
    before = signal.getsignal(signal.SIGTERM)
    # Python's own Ctrl-C, as the command line has it (an earlier test may have left another)
    interrupt = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signum))  # while the child runs the Loop
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            profile_model(analysis, load_target("myriad-x"), runs=1, warmup=0, model=model, timeout_s=60)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, interrupt)
    assert len(children) == 1 and children[0].poll() is not None
    assert list(private_tmp.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) == before  # the handler profile set is taken back


def test_a_finished_run_leaves_no_folder(private_tmp, children):
    pytest.importorskip("onnxruntime")
    model = relu_model([1, 4])
    result = profile_model(onnxroof.analyze(model), load_target("myriad-x"), runs=1, warmup=0, model=model)
    assert result.mapping.kernels and children[0].poll() == 0
    assert list(private_tmp.iterdir()) == []


def test_onnxruntime_refusing_the_model_is_one_line(private_tmp):
    pytest.importorskip("onnxruntime")
    # a Reshape to a shape onnxroof reads as given but onnxruntime finds wrong: 6 elements into [4]
    model = make_model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad")],
        [("x", F32, [2, 3])],
        [("y", F32, None)],
        initializers=[("shape", np.array([4], np.int64))],
    )
    analysis = onnxroof.analyze(model, partial=True)
    with pytest.raises(UsageError, match="onnxruntime cannot run") as raised:
        profile_model(analysis, load_target("myriad-x"), runs=1, warmup=0, model=model)
    assert "\n" not in str(raised.value)
    assert list(private_tmp.iterdir()) == []


def test_an_orphaned_child_removes_the_folder_and_ends(tmp_path):
    # the watcher, told its parent is a process that is not its parent (as when the parent was
    # killed and the child re-parented), removes the folder and ends the child with exit code 1
    folder = tmp_path / "onnxroof-profile-x"
    folder.mkdir()
    (folder / "ort.json").write_text("{}")
    code = f"from onnxroof.measure.ort_child import _watch_parent; _watch_parent(-1, {str(folder)!r})"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 1
    assert not folder.exists()


def test_the_cli_timeout_stops_the_run_in_one_line(tmp_path, capsys, private_tmp):
    pytest.importorskip("onnxruntime")
    path = tmp_path / "loop.onnx"
    onnx.save(endless_loop_model(), path)
    code = main(["profile", str(path), "--target", "myriad-x", "--runs", "1", "--warmup", "0", "--timeout", "1"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "within --timeout 1 s and was stopped" in err
    assert [p.name for p in private_tmp.iterdir()] == ["loop.onnx"]  # no onnxroof-profile-* folder left


@pytest.mark.parametrize("value", ["0", "-5", "abc", "inf"])
def test_the_cli_timeout_must_be_a_positive_number_of_seconds(capsys, value):
    code = main(["profile", "example:shallownet", "--timeout", value])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "expected a positive number of seconds" in err


def test_runs_predicted_hopeless_are_not_started():
    # 10 s a run predicted, 46 runs: 460 s, which is 100 x a limit of 4.6 s: refused; not 100 x 4.61 s
    from types import SimpleNamespace

    from onnxroof.measure.profile_run import HOPELESS_OVER_TIMEOUT, _refuse_hopeless_runs

    assert HOPELESS_OVER_TIMEOUT == 100
    analysis, report = (
        SimpleNamespace(model=SimpleNamespace(name="m")),
        SimpleNamespace(latency_s=10.0, target=SimpleNamespace(name="t")),
    )
    with pytest.raises(UsageError, match=r"m: onnxroof predicts 10 s per run on t, so the 46 runs .* would take 460 s"):
        _refuse_hopeless_runs(analysis, report, 46, 4.6)
    _refuse_hopeless_runs(analysis, report, 46, 4.61)


def test_a_loop_of_10_to_the_15_trips_is_refused_before_it_runs(tmp_path, capsys, children):
    # its body (2 nodes) runs 10^15 times, and the Loop once: 2 x 10^15 + 1 kernel runs a run, and
    # 3 + 20 profiled runs record 23 times as many events, past onnxruntime's 1,000,000
    pytest.importorskip("onnxruntime")
    path = tmp_path / "loop.onnx"
    onnx.save(endless_loop_model(10**15, (1,)), path)
    code = main(["profile", str(path), "--target", "l4"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "nothing was run" in err
    assert "a run executes 2,000,000,000,000,001 nodes" in err and "46,000,000,000,000,023 kernel events" in err
    assert children == []


def test_a_loop_within_the_profilers_events_runs():
    # 10^4 trips: 2 x 10^4 + 1 = 20,001 kernel runs a run, x 23 profiled runs = 460,023 events
    from onnxroof.measure.profile_run import _refuse_overlong_profile

    _refuse_overlong_profile(onnxroof.analyze(endless_loop_model(10**4, (1,))), 23)
    with pytest.raises(UsageError, match="would record 1,000,050 kernel events"):
        _refuse_overlong_profile(onnxroof.analyze(endless_loop_model(10**4, (1,))), 50)
