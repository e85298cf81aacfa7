"""The kernels `onnxroof calibrate` times to find this machine's roofs (ERT and STREAM style,
see :mod:`onnxroof.measure.calibration`): float32 matmuls by numpy (BLAS) and by onnxruntime's
MatMul for the compute roof, STREAM copy/add/triad over a sweep of working sets for the memory
roofs, and the arithmetic that turns timed calls into rates. The arithmetic is pure and takes a
timer (:func:`best_rate`, :func:`matmul_flops`, :func:`stream_bytes`), so that the tests check it
with a mocked clock.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np

MIN_BYTES = 32 * 2**10
MAX_BYTES = 2**30
STREAM_KERNELS = {"copy": 2, "add": 3, "triad": 3}  # arrays touched per element: reads + writes
TRIAD_BLOCK = 4096  # elements per triad block: 3 x 32 KiB streamed through a 32 KiB scratch block
CLEAN = "numpy, clean environment"  # the method of a matmul timed in a child process without the BLAS variables
ONNXRUNTIME_INT8 = "onnxruntime MatMulInteger"  # the method of the int8 roof: uint8 x int8 -> int32

Timer = Callable[[], float]


# --- the arithmetic (pure; the tests drive it with a mocked timer) ----------------------------


def matmul_flops(n: int) -> int:
    """FLOPs of an n x n by n x n matrix product: n^2 outputs, n multiply-adds each.

    >>> matmul_flops(1024)
    2147483648
    """
    return 2 * n**3


def stream_bytes(kernel: str, elements: int, itemsize: int = 8) -> int:
    """Bytes a STREAM kernel moves over arrays of ``elements`` items, as STREAM counts them
    (reads + writes, no write-allocate): copy 2, add 3, triad 3 arrays.

    >>> stream_bytes("triad", 1000), stream_bytes("copy", 1000, itemsize=4)
    (24000, 8000)
    """
    return STREAM_KERNELS[kernel] * itemsize * elements


def stream_elements(kernel: str, working_set: int, threads: int, itemsize: int = 8) -> int:
    """Elements per array so that every thread's own arrays together fill ``working_set`` bytes
    (rounded down to a multiple of 8, one 64-byte line of float64).

    >>> stream_elements("triad", 3 * 2**20, threads=2)
    65536
    """
    return working_set // (STREAM_KERNELS[kernel] * itemsize * threads) // 8 * 8


@dataclass(frozen=True)
class Rate:
    """The fastest of ``repetitions`` timed calls that each did ``work`` (FLOPs or bytes)."""

    work: float
    seconds: float
    repetitions: int

    @property
    def per_second(self) -> float:
        return self.work / self.seconds


def best_rate(run: Callable[[], float | None], work: float, timer: Timer, repetitions: int) -> Rate:
    """Call ``run`` ``repetitions`` times, timing each call with ``timer``; keep the fastest
    (work per second). ``run`` may return the work it actually did (when it stopped early),
    else each call did ``work``.

    >>> ticks = iter([0.0, 0.5, 1.0, 1.25, 2.0, 3.0])
    >>> best_rate(lambda: None, work=1e9, timer=lambda: next(ticks), repetitions=3).per_second
    4000000000.0
    """
    best: Rate | None = None
    for _ in range(max(1, repetitions)):
        start = timer()
        done = run()
        elapsed = timer() - start
        amount = work if done is None else done
        if elapsed > 0 and amount > 0 and (best is None or amount / elapsed > best.per_second):
            best = Rate(amount, elapsed, max(1, repetitions))
    if best is None:
        raise RuntimeError("the timer did not advance; cannot measure")
    return best


def inner_iterations(seconds_per_iteration: float, minimum_s: float) -> int:
    """How many back-to-back iterations make one timed call last at least ``minimum_s`` (so
    that the timer's resolution and the thread hand-off are small against it).

    >>> inner_iterations(1e-4, 2e-3), inner_iterations(0.5, 2e-3)
    (20, 1)
    """
    if seconds_per_iteration <= 0:
        return 1
    return max(1, math.ceil(minimum_s / seconds_per_iteration))


def repetitions_for(seconds_per_call: float, budget_s: float, minimum: int = 2, maximum: int = 20) -> int:
    """Repetitions of a timed call that fit in ``budget_s`` (between ``minimum`` and ``maximum``).

    >>> repetitions_for(0.01, 0.1), repetitions_for(1.0, 0.1), repetitions_for(1e-4, 1.0)
    (10, 2, 20)
    """
    if seconds_per_call <= 0:
        return maximum
    return max(minimum, min(maximum, int(budget_s / seconds_per_call)))


def sweep_sizes(smallest: int = MIN_BYTES, largest: int = MAX_BYTES, steps_per_octave: int = 2) -> list[int]:
    """Working-set sizes from ``smallest`` to ``largest``, geometric, rounded to 4 KiB.

    >>> [s // 1024 for s in sweep_sizes(32 * 1024, 128 * 1024)]
    [32, 44, 64, 92, 128]
    """
    sizes: list[int] = []
    size = float(smallest)
    step = 2 ** (1 / steps_per_octave)
    while size <= largest * 1.0001:
        rounded = max(4096, int(round(size / 4096)) * 4096)
        if not sizes or rounded > sizes[-1]:
            sizes.append(rounded)
        size *= step
    return sizes


# --- the measurements ------------------------------------------------------------------------


@dataclass
class MatmulPoint:
    dtype: str
    n: int
    rate: Rate
    method: str = "numpy"  # "numpy" (BLAS), "onnxruntime" (its MatMul kernel, what profile runs) or ONNXRUNTIME_INT8


@dataclass
class StreamPoint:
    kernel: str
    working_set: int
    rate: Rate


def _matmul_runner(dtype, n: int, rng: np.random.Generator, deadline: float):
    """``run(iterations)``: that many matmuls back to back, or fewer if the wall clock passes
    ``deadline`` (a multithreaded BLAS on a busy machine can stall a small matmul for a long
    while); returns the FLOPs done."""
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    c = np.empty((n, n), dtype)

    def run(iterations: int) -> float:
        done = 0
        while done < iterations:
            np.matmul(a, b, out=c)
            done += 1
            if time.monotonic() > deadline:
                break
        return float(matmul_flops(n) * done)

    return run


def _openblas_thread_functions() -> tuple[Callable | None, Callable | None]:
    """OpenBLAS's set/get-threads functions from the library numpy loaded (as threadpoolctl finds
    them), or (None, None) for another BLAS or when they cannot be found."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line})
    except OSError:
        return None, None
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("", ""), ("scipy_", "64_"), ("", "64_"), ("scipy_", "")):
            setter = getattr(library, f"{prefix}openblas_set_num_threads{suffix}", None)
            getter = getattr(library, f"{prefix}openblas_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                return setter, getter
    return None, None


@contextlib.contextmanager
def blas_threads(count: int | None):
    """Run the body with BLAS limited to ``count`` threads (None: as it is); yields whether the
    limit could be set."""
    if count is None:
        yield True
        return
    setter, getter = _openblas_thread_functions()
    if setter is None or getter is None:
        yield False
        return
    previous = getter()
    setter(count)
    try:
        yield True
    finally:
        setter(previous)


def _onnxruntime_matmul_runner(n: int, threads: int | None, deadline: float, dtype: str = "float32"):
    """``run(iterations)`` as :func:`_matmul_runner`, with onnxruntime's MatMul kernel (CPU) for
    float32 or its MatMulInteger for int8 (uint8 x int8 -> int32, the pair its quantizers give a
    CPU model's activations and weights and its integer GEMM's native one), or None without
    onnxruntime: the kernels the predictions are compared against."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    rng = np.random.default_rng(n)
    if dtype == "int8":
        b = numpy_helper.from_array(rng.integers(-127, 128, (n, n), dtype=np.int8), "b")
        node = helper.make_node("MatMulInteger", ["a", "b"], ["c"])
        types, feeds = (TensorProto.UINT8, TensorProto.INT32), {"a": rng.integers(0, 256, (n, n), dtype=np.uint8)}
    else:
        b = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "b")
        node = helper.make_node("MatMul", ["a", "b"], ["c"])
        types, feeds = (TensorProto.FLOAT, TensorProto.FLOAT), {"a": rng.standard_normal((n, n)).astype(np.float32)}
    graph = helper.make_graph(
        [node],
        "matmul",
        [helper.make_tensor_value_info("a", types[0], [n, n])],
        [helper.make_tensor_value_info("c", types[1], [n, n])],
        [b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def run(iterations: int) -> float:
        done = 0
        while done < iterations:
            session.run(None, feeds)
            done += 1
            if time.monotonic() > deadline:
                break
        return float(done * matmul_flops(n))

    return run


def measure_matmul(
    dtype: str,
    n: int,
    timer: Timer,
    budget_s: float,
    minimum_call_s: float = 0.02,
    method: str = "numpy",
    threads: int | None = None,
) -> MatmulPoint | None:
    """The fastest ``n x n`` matmul in ``dtype`` within about ``budget_s`` (cut short at twice
    that: after the deadline every timed call does one matmul), by numpy or, with ``method``
    "onnxruntime", by onnxruntime's MatMul on ``threads`` threads, or for ``dtype`` "int8" with
    :data:`ONNXRUNTIME_INT8`, by its MatMulInteger (None without onnxruntime). An int8 product
    counts 2 n^3 operations, as onnxroof counts a quantized product's multiply-adds."""
    deadline = time.monotonic() + max(2 * budget_s, 0.2)
    if method in ("onnxruntime", ONNXRUNTIME_INT8):
        run = _onnxruntime_matmul_runner(n, threads, deadline, dtype)
        if run is None:
            return None
    else:
        run = _matmul_runner(np.dtype(dtype), n, np.random.default_rng(n), deadline)
    probe = best_rate(lambda: run(1), matmul_flops(n), timer, 1)  # also warms BLAS's threads up
    inner = inner_iterations(probe.seconds, minimum_call_s)
    repetitions = repetitions_for(probe.seconds * inner, budget_s)
    rate = best_rate(lambda: run(inner), matmul_flops(n) * inner, timer, repetitions)
    if probe.per_second > rate.per_second:  # the probe is a timed run too
        rate = Rate(probe.work, probe.seconds, repetitions + 1)
    return MatmulPoint(dtype, n, rate, method)


class StreamArrays:
    """Per-thread float64 arrays for the sweep, allocated once at the largest size (and
    touched, so that page faults stay out of the timings); each point uses views of them."""

    def __init__(self, threads: int, largest: int):
        self.threads = threads
        self.capacity = largest // (2 * 8 * threads)  # elements: copy's two arrays fill ``largest``
        self.arrays = [
            (
                np.full(self.capacity, 1.0),
                np.full(self.capacity, 2.0),
                np.full(max(1, largest // (3 * 8 * threads)), 3.0),
            )
            for _ in range(threads)
        ]
        self.scratch = [np.empty(TRIAD_BLOCK) for _ in range(threads)]
        self.pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def runner(self, kernel: str, elements: int) -> Callable[[int], None]:
        """One call runs ``iterations`` passes of ``kernel`` on every thread at once."""
        work: list[Callable[[], None]] = []
        for index in range(self.threads):
            a, b, c = (x[:elements] for x in self.arrays[index])
            if kernel == "copy":
                work.append(partial(np.copyto, b, a))
            elif kernel == "add":
                work.append(partial(np.add, a, b, out=c))
            else:
                scratch = self.scratch[index]
                blocks = [
                    (
                        a[i : i + TRIAD_BLOCK],
                        b[i : i + TRIAD_BLOCK],
                        c[i : i + TRIAD_BLOCK],
                        scratch[: min(TRIAD_BLOCK, elements - i)],
                    )
                    for i in range(0, elements, TRIAD_BLOCK)
                ]

                def triad(blocks=blocks) -> None:
                    for x, y, z, t in blocks:  # a = b + 3 c, one block at a time
                        np.multiply(z, 3.0, out=t)
                        np.add(y, t, out=x)

                work.append(triad)

        def one_thread(index: int, iterations: int) -> None:
            job = work[index]
            for _ in range(iterations):
                job()

        def run(iterations: int) -> None:
            if self.pool is None:
                one_thread(0, iterations)
            else:
                list(self.pool.map(one_thread, range(self.threads), [iterations] * self.threads))

        return run


def measure_stream(
    arrays: StreamArrays, kernel: str, working_set: int, timer: Timer, budget_s: float, minimum_call_s: float = 2e-3
) -> StreamPoint | None:
    """The fastest pass of ``kernel`` over ``working_set`` bytes (all threads together)."""
    elements = stream_elements(kernel, working_set, arrays.threads)
    a, _, c = arrays.arrays[0]
    if elements < 8 or elements > len(a if kernel == "copy" else c):
        return None
    run = arrays.runner(kernel, elements)
    moved = arrays.threads * stream_bytes(kernel, elements)
    probe = best_rate(lambda: run(1), moved, timer, 1)
    inner = inner_iterations(probe.seconds, minimum_call_s)
    repetitions = repetitions_for(probe.seconds * inner, budget_s)
    rate = best_rate(lambda: run(inner), moved * inner, timer, repetitions)
    return StreamPoint(kernel, working_set, rate)  # the nominal size: the elements are rounded down to 8


# BLAS settings in the environment that change which kernels the BLAS runs
BLAS_VARIABLES = (
    "OPENBLAS_CORETYPE",
    "OPENBLAS_VERBOSE",
    "GOTOBLAS_CORETYPE",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_CBWR",
    "MKL_DEBUG_CPU_TYPE",
    "NPY_DISABLE_CPU_FEATURES",
)


def blas_variables() -> list[str]:
    """The BLAS-steering variables set in this process's environment."""
    return [name for name in BLAS_VARIABLES if os.environ.get(name)]


def numpy_in_clean_environment(n: int, threads: int, budget_s: float) -> MatmulPoint | None:
    """numpy's float32 n x n matmul in a child process whose environment lacks
    :data:`BLAS_VARIABLES` (``OPENBLAS_CORETYPE=Haswell`` halves OpenBLAS's GEMM on AVX-512),
    on ``threads`` BLAS threads; None if the child fails."""
    import subprocess
    import sys

    script = (
        "import time, numpy as np\n"
        f"n = {n}\na = np.ones((n, n), np.float32); b = np.ones((n, n), np.float32); c = np.empty((n, n), np.float32)\n"
        "np.matmul(a, b, out=c); best = 1e9; end = time.monotonic() + " + repr(max(budget_s, 0.2)) + "\n"
        "for i in range(200):\n"
        "    t = time.perf_counter(); np.matmul(a, b, out=c); best = min(best, time.perf_counter() - t)\n"
        "    if i >= 2 and time.monotonic() > end: break\n"
        "print(best)\n"
    )
    environment = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    environment["OPENBLAS_NUM_THREADS"] = str(threads)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            env=environment,
            capture_output=True,
            text=True,
            timeout=30 + 2 * budget_s,
            check=True,
        )
        seconds = float(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return MatmulPoint("float32", n, Rate(matmul_flops(n), seconds, 1), CLEAN)
