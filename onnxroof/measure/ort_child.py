"""`profile`'s runs of onnxruntime, in a child process the command can stop.

onnxruntime's ``run`` does not come back to Python until the model is done: a Loop of 10^15
trips runs for ever, and Ctrl-C, which Python only acts on between bytecodes, never reaches it.
So the sessions live in a child process, a fresh interpreter running only this module (the
parent may have run onnxruntime's thread pools already, which do not survive a fork, and a
user's script is not re-imported as multiprocessing's spawn would). Job and result pass as files
in the caller's temporary folder. The parent waits for the child at most ``timeout_s`` seconds
and kills it then, or as soon as Ctrl-C or SIGTERM reaches the parent; the caller removes the
folder after the child is gone. A child whose parent was killed outright (SIGKILL, which nothing
can catch) notices, removes the folder and ends.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.text import printable

# How often an orphaned child looks whether its parent is still there.
_PARENT_CHECK_S = 0.5
# how the child's report of an allocation that failed starts (the parent words it)
OUT_OF_MEMORY = "out of memory"


@dataclass(frozen=True)
class InputSpec:
    """One model input to make random values for: its name, numpy dtype and shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class OrtJob:
    """What the child runs: ``model`` on random ``inputs`` (from ``seed``) with onnxruntime's
    settings, ``warmup + runs`` profiled runs, then as many timed without the profiler (and the
    fastest batch over ``wall_seconds`` when given), its files in ``directory``."""

    model: str  # a path: the caller writes a model built in memory into ``directory``
    inputs: tuple[InputSpec, ...]
    seed: int
    optimization: str  # an onnxruntime GraphOptimizationLevel name, ORT_ENABLE_ALL...
    threads: int | None
    warmup: int
    runs: int
    wall_seconds: float
    directory: str
    memory_bytes: int = 0  # the most data memory the child may take (RLIMIT_DATA); 0: no limit


@dataclass
class OrtRun:
    """What the child measured: onnxruntime's profile file and the optimized graph it saved ("" if
    it saved none), in the job's directory; seconds per run without the profiler; the fastest."""

    profile_path: str
    optimized_path: str
    wall: list[float]
    fastest_s: float
    version: str


class OrtFailed(Exception):
    """onnxruntime (or the making of the inputs) raised in the child: its message."""


class OrtStopped(Exception):
    """The child did not finish: over the time limit (``timed_out``), or it died (the message says how)."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


def random_feeds(inputs: tuple[InputSpec, ...] | list[InputSpec], seed: int = 0) -> dict:
    """One array per input: floats ~ N(0, 1); integers and bools are ones (a valid index and
    "keep" in a mask)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in inputs:
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            feeds[spec.name] = rng.standard_normal(spec.shape).astype(dtype)
        else:
            feeds[spec.name] = np.ones(spec.shape, dtype)
    return feeds


def run_onnxruntime(job: OrtJob, timeout_s: float) -> OrtRun:
    """The job's runs, in a child process given ``timeout_s`` seconds from its start. Raises
    OrtFailed (onnxruntime raised), OrtStopped (the time ran out, or the child died), or
    KeyboardInterrupt (Ctrl-C, or SIGTERM under :func:`onnxroof.core.errors.sigterm_stops`); the child is dead
    whenever this returns or raises."""
    folder = Path(job.directory)
    (folder / "job.pickle").write_bytes(pickle.dumps(job))
    # the onnxroof the parent imported, whatever the current folder holds
    start = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
        f"from {__name__} import main; main()"
    )
    with open(folder / "child.log", "wb") as log:
        child = subprocess.Popen(
            [sys.executable, "-c", start, str(folder), str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        try:
            code = child.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise OrtStopped(f"not done after {timeout_s:g} s", timed_out=True) from None
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    result = folder / "result.pickle"
    if code != 0 or not result.is_file():
        raise OrtStopped(_ended(code, folder / "child.log"))
    status, payload = pickle.loads(result.read_bytes())
    if status == "failed":
        raise OrtFailed(payload)
    return payload


def _ended(code: int, log: Path) -> str:
    """Why the child ended without a result, in words (with the last line it wrote, if any)."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        said = f"onnxruntime's process was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
    else:
        said = f"onnxruntime's process ended (exit code {code}) without a result"
    try:
        last = next((line for line in reversed(log.read_text(errors="replace").splitlines()) if line.strip()), "")
    except OSError:
        last = ""
    last = printable(last.strip()[:200])  # onnxruntime colours its log
    return said + (f": {last}" if last else "")


# ---------------------------------------------------------------------------------------------
# The child


def main() -> None:
    """The child, started as ``python -c "...main()" FOLDER PARENT_PID``. Ctrl-C is the
    parent's to handle (it kills the child). Runs FOLDER/job.pickle and writes FOLDER/result.pickle:
    ("done", OrtRun) or ("failed", onnxruntime's message)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    folder, parent = Path(sys.argv[1]), int(sys.argv[2])
    threading.Thread(target=_watch_parent, args=(parent, str(folder)), daemon=True).start()
    job = pickle.loads((folder / "job.pickle").read_bytes())
    if job.memory_bytes:  # before onnxruntime is imported: a model growing a tensor fails, not the machine
        _limit_memory(job.memory_bytes)
    try:
        result: tuple[str, Any] = ("done", _run(job))
    except MemoryError as exc:
        result = ("failed", f"{OUT_OF_MEMORY} ({exc})")
    except Exception as exc:  # onnxruntime raises its own exception types
        result = ("failed", str(exc) or type(exc).__name__)
    partial = folder / "result.pickle.partial"
    partial.write_bytes(pickle.dumps(result))
    partial.replace(folder / "result.pickle")  # whole or absent


def _limit_memory(most: int) -> None:
    """At most ``most`` bytes of data (heap and private mappings: what onnxruntime allocates
    tensors in), where the system can say so (RLIMIT_DATA); an allocation past it fails in the
    child, which reports it, instead of the kernel killing processes to make room."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_DATA, (most, most))
    except (ImportError, ValueError, OSError):  # not on this system, or above a hard limit set outside
        pass


def _watch_parent(parent: int, directory: str) -> None:
    """End the child, removing the folder, once its parent is gone (killed by a signal it could
    not catch): nobody is left to wait for the result or to clean up."""
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_S)
    shutil.rmtree(directory, ignore_errors=True)
    os._exit(1)


def _run(job: OrtJob) -> OrtRun:
    """The profiled runs, then the same runs without the profiler (what the model takes when
    nobody is watching)."""
    import onnxruntime as ort

    from . import achieved

    feeds = random_feeds(job.inputs, job.seed)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(Path(job.directory) / "ort")
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, job.optimization)
    options.log_severity_level = 3
    if job.threads:
        options.intra_op_num_threads = job.threads
    optimized_path = str(Path(job.directory) / "optimized.onnx")
    options.optimized_model_filepath = optimized_path  # the graph it runs, weights kept apart
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "optimized.data")
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "64")
    try:
        session = ort.InferenceSession(job.model, options, providers=["CPUExecutionProvider"])
    except Exception:  # perhaps only the saving of the optimized graph failed: once more without
        options.optimized_model_filepath = optimized_path = ""
        session = ort.InferenceSession(job.model, options, providers=["CPUExecutionProvider"])
    for _ in range(job.warmup + job.runs):
        session.run(None, feeds)
    profile_path = session.end_profiling()
    options.enable_profiling = False
    options.optimized_model_filepath = ""
    plain = ort.InferenceSession(job.model, options, providers=["CPUExecutionProvider"])
    wall = _wall_times(plain, feeds, job.warmup, job.runs)
    # (at least as long as the single runs took: a 50 ms model still gets its 30 tries)
    fastest = achieved.fastest_run_s(plain, feeds, max(job.wall_seconds, sum(wall))) if job.wall_seconds else min(wall)
    return OrtRun(profile_path, optimized_path, wall, fastest, ort.__version__)


def _wall_times(session, feeds: dict, warmup: int, runs: int) -> list[float]:
    """Seconds per run of ``session`` (after ``warmup`` runs), timed around ``session.run``."""
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return times
