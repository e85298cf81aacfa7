"""`onnxroof calibrate`: measure this machine's roofs and write them as a target file.

In the spirit of the Empirical Roofline Toolkit (Lo et al., "Roofline Model Toolkit: A Practical
Tool for Architectural and Program Analysis", PMBS 2014): the roofs are what small kernels
actually reach on this machine, not the datasheet.

- **Compute roof** (``peak_ops_per_s.fp32``): float32 n x n matmuls on square operands from
  cache-resident (n = 128, 256) to larger than the last-level cache (n = 2048), by two
  methods: numpy's ``matmul`` (BLAS, with the threads BLAS starts: normally one per core;
  ``--threads N`` limits OpenBLAS, as numpy ships it, to N) and, when onnxruntime is installed,
  onnxruntime's own MatMul kernel on the same threads (the kernel ``onnxroof profile`` compares
  the predictions with). An n x n by n x n product is 2 n^3 FLOPs. The fastest timed run of
  any size and method is the roof, and the file says which method gave it and what the other
  reached: numpy's figure follows how its BLAS is built and configured (an
  ``OPENBLAS_CORETYPE`` that names an older core halves it on AVX-512 machines). float64 is
  measured too and written as a comment: the schema has no fp64 roof.
- **fp16 and int8 are not written as roofs.** numpy's float16 and int8 matmul are not BLAS
  calls but a generic C loop, one to two orders of magnitude below float32: timing them would
  measure numpy, not the CPU. Without those roofs a fp16 or int8 node falls back to the fp32
  roof (``targets.ROOF_PREFERENCE``), which is what a CPU without native fp16 arithmetic does
  (F16C converts, the FMA runs in fp32); for int8 it is pessimistic on CPUs with integer
  dot-product instructions (AVX-VNNI, AVX512-VNNI, Arm SDOT), and the file says so.
- **Memory roofs**: a STREAM-style sweep (McCalpin) over working sets from 32 KiB to 1 GiB
  (steps of sqrt 2), one thread per usable CPU, each on its own float64 arrays (numpy releases
  the GIL inside its loops). Kernels and the bytes counted per element, as STREAM counts them
  (write-allocate traffic not counted): copy ``b = a`` 2 x 8, add ``c = a + b`` 3 x 8, triad
  ``a = b + s c`` 3 x 8 (numpy has no fused multiply-add, so the triad runs in cache-sized
  blocks through a scratch block that stays in L1/L2; the arrays are streamed once). Each point
  is the fastest of several repetitions, and the best kernel at each working set is kept.
- **Levels** (:func:`memory_levels`): the DRAM bandwidth is the best over the largest working
  sets (within 4x of the largest); the largest cache plateau is the last run of points at least
  1.3x faster than DRAM; its bandwidth is the best over its top two octaves, and its size is
  the largest working set still above the geometric mean of that plateau and DRAM. These
  become ``onchip.bandwidth_bytes_per_s``, ``onchip.size_bytes`` and ``dram.bandwidth_bytes_per_s``.
- **Rounds**: the matmul sizes and the sweep are each measured in three rounds (one more per
  20 s of ``--seconds`` past 60), one after the other, and every point keeps its best round: a
  burst of other work on the machine then spoils one round of a point, not all of them. Under
  20 s (the quick calibration ``onnxroof profile`` runs when it has no target) there is one
  round and the sweep stops at 256 MiB.

Every figure is tagged ``measured`` and its ``source`` gives the date, CPU model, core count,
the method and the load average at the start (other work on the machine lowers the figures).
The run is bounded by ``--seconds`` (default 30 s); the arithmetic lives in small pure functions
that take a timer (:func:`best_rate`, :func:`matmul_flops`, :func:`stream_bytes`), so that the
tests check it with a mocked clock.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as _dt
import json
import math
import os
import platform
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from . import achieved
from .achieved import LAUNCH_CHAIN
from ..roofline.targets import EFFICIENCY_CLASSES, SCHEMA, Target, parse_target

DEFAULT_SECONDS = 30.0
QUICK_SECONDS = 6.0  # what `onnxroof profile` spends when it has no calibrated target
MIN_SECONDS = 2.0
MIN_BYTES = 32 * 2**10
MAX_BYTES = 2**30
# fp32 matmul sizes in the order measured (3 n^2 x 4 B: 192 KiB at n=128, in cache; 48 MiB at
# n=2048, beyond most last-level caches); 1024 first: it tells whether 2048 fits in the time given
MATMUL_ORDER = (1024, 2048, 512, 256, 128)
STREAM_KERNELS = {"copy": 2, "add": 3, "triad": 3}  # arrays touched per element: reads + writes
FAST_FACTOR = 1.3  # a cache plateau runs at least this much faster than DRAM
ROUNDS = 3  # every point is measured this many times, a whole round apart; the best is kept
QUICK_UNDER_S = 20.0  # below this --seconds: one round, and the sweep stops at QUICK_LARGEST
QUICK_LARGEST = 256 * 2**20
TRIAD_BLOCK = 4096  # elements per triad block: 3 x 32 KiB streamed through a 32 KiB scratch block

Timer = Callable[[], float]
Progress = Callable[[str], None]


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


@dataclass(frozen=True)
class Levels:
    """The memory levels read off a bandwidth sweep."""

    dram_bytes_per_s: float
    dram_sizes: tuple[int, int]  # the working sets the DRAM figure is the best of
    onchip_bytes: int | None  # the largest working set still at the last cache plateau's speed
    onchip_bytes_per_s: float | None  # that plateau's bandwidth
    onchip_sizes: tuple[int, int] | None  # the working sets the plateau bandwidth is the best of


def memory_levels(points: Sequence[tuple[int, float]], fast_factor: float = FAST_FACTOR) -> Levels:
    """DRAM and the largest cache plateau from (working-set bytes, bytes/s) points.

    DRAM is the best bandwidth among the points within 4x of the largest working set. The last
    cache plateau is the last run of (at least two, if there are) consecutive points at least
    ``fast_factor`` times faster than DRAM; its bandwidth is the best of its points in the top
    two octaves of the run, and its size the largest working set in the run still above the
    geometric mean of that bandwidth and DRAM's (the middle of the drop). Best, not median: other
    work on the machine only ever slows a pass down, so the fastest is the closest to the roof.

    >>> sweep = [(2**k, 100e9 if k <= 20 else 50e9 if k <= 24 else 10e9) for k in range(15, 31)]
    >>> levels = memory_levels(sweep)
    >>> levels.dram_bytes_per_s, levels.onchip_bytes == 2**24, levels.onchip_bytes_per_s
    (10000000000.0, True, 50000000000.0)
    """
    if not points:
        raise ValueError("no bandwidth points")
    ordered = sorted(points)
    largest = ordered[-1][0]
    tail = [(size, bw) for size, bw in ordered if size * 4 >= largest]
    dram = max(bw for _, bw in tail)
    fast = [bw >= fast_factor * dram for _, bw in ordered[: len(ordered) - len(tail)]]
    runs: list[tuple[int, int]] = []  # [start, end) index ranges of fast points
    start = None
    for index, is_fast in enumerate(fast + [False]):
        if is_fast and start is None:
            start = index
        elif not is_fast and start is not None:
            runs.append((start, index))
            start = None
    if not runs:
        return Levels(dram, (tail[0][0], largest), None, None, None)
    long_runs = [r for r in runs if r[1] - r[0] >= 2]
    first, last = (long_runs or runs)[-1]
    plateau = ordered[first:last]
    end = plateau[-1][0]
    top = [(size, bw) for size, bw in plateau if size * 4 >= end]
    cache = max(bw for _, bw in top)
    middle = math.sqrt(cache * dram)
    edge = max((size for size, bw in plateau if bw >= middle), default=end)
    return Levels(dram, (tail[0][0], largest), edge, cache, (top[0][0], end))


# --- the measurements ------------------------------------------------------------------------


@dataclass
class MatmulPoint:
    dtype: str
    n: int
    rate: Rate
    method: str = "numpy"  # "numpy" (BLAS) or "onnxruntime" (its MatMul kernel, what profile runs)


@dataclass
class StreamPoint:
    kernel: str
    working_set: int
    rate: Rate


@dataclass
class Calibration:
    """Everything one calibration measured, and where."""

    date: str
    cpu: str
    cores: str  # "2 cores, 2 logical CPUs"
    threads: int
    load_average: float | None
    numpy_version: str
    blas: str
    matmul: list[MatmulPoint] = field(default_factory=list)
    stream: list[StreamPoint] = field(default_factory=list)
    caches: str = ""  # what the OS says about the caches, for context
    seconds: float = 0.0  # how long it took
    rounds: int = ROUNDS  # how many times every point was measured (the best is kept)
    blas_threads: int | None = None  # the BLAS thread limit during the matmuls (None: BLAS's default)
    launch_overhead_s: float | None = None  # onnxruntime's cost per kernel (None: not measured)
    copy_bytes_per_s: float | None = None  # onnxruntime's elementwise kernel streaming from DRAM (None: not measured)
    efficiency: dict[str, list[achieved.Case]] = field(default_factory=dict)  # class -> sizes measured
    notes: list[str] = field(default_factory=list)

    def peak(self, dtype: str) -> MatmulPoint | None:
        points = [p for p in self.matmul if p.dtype == dtype]
        return max(points, key=lambda p: p.rate.per_second) if points else None

    def bandwidth_points(self) -> list[tuple[int, float]]:
        """The best kernel at each working set."""
        best: dict[int, float] = {}
        for point in self.stream:
            best[point.working_set] = max(best.get(point.working_set, 0.0), point.rate.per_second)
        return sorted(best.items())

    def levels(self) -> Levels:
        return memory_levels(self.bandwidth_points())

    def to_toml(self, name: str = "this-machine") -> str:
        return render_target(self, name)


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


def _onnxruntime_matmul_runner(n: int, threads: int | None, deadline: float):
    """``run(iterations)`` as :func:`_matmul_runner`, with onnxruntime's MatMul kernel (CPU), or
    None without onnxruntime: the kernel the predictions are compared against."""
    try:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    rng = np.random.default_rng(n)
    b = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "b")
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "matmul",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n])],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])], [b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {"a": rng.standard_normal((n, n)).astype(np.float32)}

    def run(iterations: int) -> float:
        done = 0
        while done < iterations:
            session.run(None, feeds)
            done += 1
            if time.monotonic() > deadline:
                break
        return float(done * matmul_flops(n))

    return run


def measure_matmul(dtype: str, n: int, timer: Timer, budget_s: float, minimum_call_s: float = 0.02,
                   method: str = "numpy", threads: int | None = None) -> MatmulPoint | None:
    """The fastest ``n x n`` matmul in ``dtype`` within about ``budget_s`` (cut short at twice
    that: after the deadline every timed call does one matmul), by numpy or, with ``method``
    "onnxruntime", by onnxruntime's MatMul on ``threads`` threads (None without onnxruntime)."""
    deadline = time.monotonic() + max(2 * budget_s, 0.2)
    if method == "onnxruntime":
        run = _onnxruntime_matmul_runner(n, threads, deadline)
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


class _StreamArrays:
    """Per-thread float64 arrays for the sweep, allocated once at the largest size (and
    touched, so that page faults stay out of the timings); each point uses views of them."""

    def __init__(self, threads: int, largest: int):
        self.threads = threads
        self.capacity = largest // (2 * 8 * threads)  # elements: copy's two arrays fill ``largest``
        self.arrays = [(np.full(self.capacity, 1.0), np.full(self.capacity, 2.0),
                        np.full(max(1, largest // (3 * 8 * threads)), 3.0)) for _ in range(threads)]
        self.scratch = [np.empty(TRIAD_BLOCK) for _ in range(threads)]
        self.pool = ThreadPoolExecutor(max_workers=threads) if threads > 1 else None

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def runner(self, kernel: str, elements: int) -> Callable[[int], None]:
        """One call runs ``iterations`` passes of ``kernel`` on every thread at once."""
        work = []
        for index in range(self.threads):
            a, b, c = (x[:elements] for x in self.arrays[index])
            if kernel == "copy":
                work.append(lambda a=a, b=b: np.copyto(b, a))
            elif kernel == "add":
                work.append(lambda a=a, b=b, c=c: np.add(a, b, out=c))
            else:
                scratch = self.scratch[index]
                blocks = [(a[i:i + TRIAD_BLOCK], b[i:i + TRIAD_BLOCK], c[i:i + TRIAD_BLOCK],
                           scratch[: min(TRIAD_BLOCK, elements - i)]) for i in range(0, elements, TRIAD_BLOCK)]

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


def measure_stream(arrays: _StreamArrays, kernel: str, working_set: int, timer: Timer, budget_s: float,
                   minimum_call_s: float = 2e-3) -> StreamPoint | None:
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


def calibrate(seconds: float = DEFAULT_SECONDS, threads: int | None = None, largest: int = MAX_BYTES,
              progress: Progress | None = None, timer: Timer = time.perf_counter,
              matmul_sizes: Sequence[int] = MATMUL_ORDER, smallest: int = MIN_BYTES) -> Calibration:
    """Measure this machine's roofs in about ``seconds`` (see the module docstring).

    ``largest`` and ``smallest`` bound the bandwidth sweep's working sets, ``matmul_sizes`` the
    fp32 matmul sizes (in the order measured: the first one predicts whether larger ones fit)."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    with blas_threads(threads) as limited:
        result = _calibrate(seconds, threads or usable_cpus(), largest, say, timer, matmul_sizes, smallest)
    if threads is not None and not limited:
        result.notes.append(f"--threads {threads} limits the bandwidth sweep only: onnxroof cannot set this BLAS's threads")
    result.blas_threads = threads if threads is not None and limited else None
    result.seconds = time.monotonic() - started
    return result


def _calibrate(seconds: float, threads: int, largest: int, say: Progress, timer: Timer, matmul_sizes: Sequence[int],
               smallest: int) -> Calibration:
    quick_rounds = 1
    if seconds < QUICK_UNDER_S and largest > QUICK_LARGEST:
        largest = QUICK_LARGEST  # still 8x a 32 MiB last-level cache
    largest, memory_note = _fit_in_memory(largest)
    result = Calibration(
        date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        cpu=cpu_model(), cores=core_text(), threads=threads, load_average=_load_average(),
        numpy_version=np.__version__, blas=_blas_name(), caches=cache_text(),
    )
    if memory_note:
        result.notes.append(memory_note)
    if result.load_average is not None and result.load_average > 0.5:
        say(f"note: load average {result.load_average:.2f}: other work on this machine lowers the figures")
    rounds = result.rounds = quick_rounds if seconds < QUICK_UNDER_S else max(ROUNDS, int(seconds // 20))
    # a quarter for the matmuls, half for the sweep, the rest for onnxruntime's own kernels
    matmul_budget, stream_budget = 0.25 * seconds / rounds, 0.45 * seconds / rounds
    per_size = matmul_budget * 0.85 / len(matmul_sizes)
    sizes = sweep_sizes(smallest, largest)
    slice_s = stream_budget / (len(sizes) * len(STREAM_KERNELS))
    say(f"allocating {largest * 1.33 / 2**30:.2f} GiB for the bandwidth sweep ({threads} thread(s))")
    arrays = _StreamArrays(threads, largest)
    try:
        for round_ in range(1, rounds + 1):
            say(f"round {round_} of {rounds}")
            # compute roof: fp32 over sizes, by numpy and by onnxruntime's MatMul; fp64 and fp16
            # once (comments in the file)
            measured = [p for p in result.matmul if p.dtype == "float32" and p.method == "numpy"]
            for n in matmul_sizes:
                if round_ == 1 and measured and n > measured[0].n:
                    predicted = measured[0].rate.seconds / measured[0].rate.work * matmul_flops(n)
                    if predicted * 3 > per_size * 2:
                        result.notes.append(f"fp32 matmul n={n} left out: it does not fit in --seconds {seconds:g}")
                        continue
                elif round_ > 1 and not any(p.n == n for p in measured):
                    continue
                point = measure_matmul("float32", n, timer, per_size / 2)
                result.matmul.append(point)
                measured.append(point)
                say(f"fp32 matmul n={n:<5} {point.rate.per_second / 1e9:8.1f} GFLOP/s (numpy)")
                runtime = measure_matmul("float32", n, timer, per_size / 2, method="onnxruntime", threads=threads)
                if runtime is not None:
                    result.matmul.append(runtime)
                    say(f"fp32 matmul n={n:<5} {runtime.rate.per_second / 1e9:8.1f} GFLOP/s (onnxruntime)")
            if round_ == 1:
                for dtype, n in (("float64", min(1024, max(matmul_sizes))), ("float16", min(64, min(matmul_sizes)))):
                    point = measure_matmul(dtype, n, timer, matmul_budget * 0.075, minimum_call_s=0.01)
                    result.matmul.append(point)
                    say(f"{'fp64' if dtype == 'float64' else 'fp16'} matmul n={n:<5} {point.rate.per_second / 1e9:8.2f} GFLOP/s"
                        + ("  (numpy's float16 matmul is a generic loop, not BLAS: not written as a roof)"
                           if dtype == "float16" else ""))
            # memory roofs: the sweep
            for size in sizes:
                best = None
                for kernel in STREAM_KERNELS:
                    point = measure_stream(arrays, kernel, size, timer, slice_s)
                    if point is None:
                        continue
                    result.stream.append(point)
                    if best is None or point.rate.per_second > best.rate.per_second:
                        best = point
                if best is not None:
                    say(f"bandwidth {size_text(size):>9} {best.rate.per_second / 1e9:8.1f} GB/s  ({best.kernel})")
    finally:
        arrays.close()
    result.matmul.sort(key=lambda p: (p.dtype != "float32", p.method, p.n))
    if blas_variables():  # the cross-check: is numpy slow because of how this environment steers its BLAS?
        clean = numpy_in_clean_environment(min(1024, max(matmul_sizes)), threads, 0.03 * seconds)
        if clean is not None:
            result.matmul.insert(0, clean)
            say(f"fp32 matmul n={clean.n:<5} {clean.rate.per_second / 1e9:8.1f} GFLOP/s "
                f"(numpy in a child process without {', '.join(blas_variables())})")
    _measure_onnxruntime_kernels(result, 0.27 * seconds, threads, say)
    return result


def _measure_onnxruntime_kernels(result: Calibration, budget_s: float, threads: int, say: Progress) -> None:
    """onnxruntime's cost per kernel, its copy bandwidth and, against the roofs just measured,
    the fraction of the roofline each kernel class reaches (:mod:`onnxroof.measure.achieved`)."""
    result.launch_overhead_s = achieved.measure_launch_overhead(max(0.1 * budget_s, 0.2), threads)
    if result.launch_overhead_s is None:
        result.notes.append("onnxruntime is not installed: no launch cost, copy bandwidth or efficiency measured")
        return
    say(f"onnxruntime launch {result.launch_overhead_s * 1e6:.2f} µs per kernel")
    result.copy_bytes_per_s = achieved.measure_copy_bandwidth(max(0.1 * budget_s, 0.3), threads)
    say(f"onnxruntime copy {result.copy_bytes_per_s / 1e9:.1f} GB/s (Mul by a scalar over "
        f"{size_text(4 * achieved.COPY_ELEMENTS)})")
    roofs = calibrated_target(result, with_efficiency=False)
    result.efficiency = achieved.measure_efficiency(roofs, result.launch_overhead_s, 0.8 * budget_s, threads, say)


# BLAS settings in the environment that change which kernels the BLAS runs
BLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_VERBOSE", "GOTOBLAS_CORETYPE", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR",
                  "MKL_DEBUG_CPU_TYPE", "NPY_DISABLE_CPU_FEATURES")


def blas_variables() -> list[str]:
    """The BLAS-steering variables set in this process's environment."""
    return [name for name in BLAS_VARIABLES if os.environ.get(name)]


def numpy_in_clean_environment(n: int, threads: int, budget_s: float) -> MatmulPoint | None:
    """numpy's float32 n x n matmul in a child process whose environment lacks
    :data:`BLAS_VARIABLES` (``OPENBLAS_CORETYPE=Haswell`` halves OpenBLAS's GEMM on AVX-512),
    on ``threads`` BLAS threads; None if the child fails."""
    import subprocess
    import sys

    script = ("import time, numpy as np\n"
              f"n = {n}\na = np.ones((n, n), np.float32); b = np.ones((n, n), np.float32); c = np.empty((n, n), np.float32)\n"
              "np.matmul(a, b, out=c); best = 1e9; end = time.monotonic() + " + repr(max(budget_s, 0.2)) + "\n"
              "for i in range(200):\n"
              "    t = time.perf_counter(); np.matmul(a, b, out=c); best = min(best, time.perf_counter() - t)\n"
              "    if i >= 2 and time.monotonic() > end: break\n"
              "print(best)\n")
    environment = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    environment["OPENBLAS_NUM_THREADS"] = str(threads)
    try:
        done = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True,
                              timeout=30 + 2 * budget_s, check=True)
        seconds = float(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return MatmulPoint("float32", n, Rate(matmul_flops(n), seconds, 1), CLEAN)




# --- the target file -------------------------------------------------------------------------


def render_target(calibration: Calibration, name: str = "this-machine", with_efficiency: bool = True) -> str:
    """The target file (schema onnxroof-target/1), every figure tagged ``measured`` (without
    ``with_efficiency``: the roofs alone, which the efficiencies are measured against)."""
    c = calibration
    fp32 = c.peak("float32")
    if fp32 is None:
        raise ValueError("no fp32 matmul was measured")
    levels = c.levels()
    where = (f"onnxroof calibrate {c.date} on {c.cpu} ({c.cores}; {c.threads} thread(s)"
             + (f"; load average {c.load_average:.2f} at the start" if c.load_average is not None else "") + ")")
    best: dict[tuple[str, int], float] = {}
    for p in c.matmul:
        if p.dtype == "float32":
            best[(p.method, p.n)] = max(best.get((p.method, p.n), 0.0), p.rate.per_second)

    def sizes(method: str) -> str:
        return ", ".join(f"n={n}: {rate / 1e9:.1f}" for (m, n), rate in sorted(best.items()) if m == method)

    blas = c.blas + (f", {c.blas_threads} thread(s)" if c.blas_threads else ", its default threads")
    peak_source = (f"{where}: float32 n x n matmuls, FLOPs = 2 n^3, fastest of repeated runs in {c.rounds} "
                   f"rounds per size; numpy {c.numpy_version} ({blas}) GFLOP/s {sizes('numpy')}")
    if any(m == "onnxruntime" for m, _ in best):
        peak_source += f"; onnxruntime's MatMul ({c.threads} thread(s)) GFLOP/s {sizes('onnxruntime')}"
    if any(m == CLEAN for m, _ in best):
        peak_source += f"; numpy in a child process without {', '.join(blas_variables())} GFLOP/s {sizes(CLEAN)}"
    peak_source += f"; the roof is the best: {fp32.method} at n={fp32.n}"
    slower: dict[str, float] = {}  # every other method's best
    for (method, _), rate in best.items():
        if method != fp32.method:
            slower[method] = max(slower.get(method, 0.0), rate)
    if slower and min(slower.values()) >= 0.9 * fp32.rate.per_second:
        peak_source += " (the methods agree within 10%)"
    for method, rate in sorted(slower.items()):
        if rate < 0.9 * fp32.rate.per_second:
            variables = [f"{v}={os.environ[v]}" for v in blas_variables()] if method == "numpy" else []
            peak_source += (f" ({method} reaches {rate / fp32.rate.per_second:.0%} of it: its GEMM is built or configured "
                            "for less" + (f"; {', '.join(variables)} is set here" if variables else "") + ")")
    stream_source = (f"{where}: STREAM-style sweep (copy 2x8, add 3x8, triad 3x8 bytes per float64 element, "
                     f"no write-allocate), {c.threads} thread(s) on their own arrays, fastest of repeated passes "
                     f"in {c.rounds} rounds, best kernel per working set")
    dram_source = (f"{stream_source}; best over working sets {size_text(levels.dram_sizes[0])}"
                   f"..{size_text(levels.dram_sizes[1])}")
    dram = levels.dram_bytes_per_s
    if c.copy_bytes_per_s:
        copy = (f"onnxruntime's Mul by a scalar over {size_text(4 * achieved.COPY_ELEMENTS)} of float32 (8 B per "
                f"element, a slope over chains of 1 and 5) {c.copy_bytes_per_s / 1e9:.1f} GB/s")
        if c.copy_bytes_per_s > dram:
            dram_source = f"{where}: {copy}, the best; the STREAM sweep reached {levels.dram_bytes_per_s / 1e9:.1f} GB/s"
            dram = c.copy_bytes_per_s
        else:
            dram_source += (f"; {copy}, {c.copy_bytes_per_s / dram:.0%} of it (its elementwise kernels stream less "
                            "well than STREAM: efficiency.elementwise carries that)")
    description = (f"{c.cpu}, {c.cores}: roofs measured by onnxroof calibrate on {c.date}"
                   + (f" with {c.blas_threads} thread(s)" if c.blas_threads else ""))
    lines = [
        "# Measured by `onnxroof calibrate` on this machine: re-run it rather than edit the figures.",
        "# Sweep (working set -> best GB/s): "
        + ", ".join(f"{size_text(size)} {bw / 1e9:.1f}" for size, bw in c.bandwidth_points()),
    ]
    for point in c.matmul:
        if point.dtype == "float64":
            lines.append(f"# fp64 matmul n={point.n}: {point.rate.per_second / 1e9:.1f} GFLOP/s (the schema has no fp64 roof)")
        elif point.dtype == "float16":
            lines.append(f"# fp16 matmul n={point.n}: {point.rate.per_second / 1e9:.2f} GFLOP/s in numpy (a generic loop, "
                         "not BLAS): not written as a roof; fp16 and int8 nodes fall back to the fp32 roof")
    lines += [f"# note: {note}" for note in c.notes]
    lines += [
        f'schema = "{SCHEMA}"',
        f"name = {_toml_string(name)}",
        f"description = {_toml_string(description)}",
        "",
        "[peak_ops_per_s.fp32]",
        *_figure_lines(fp32.rate.per_second, peak_source),
        "",
        "[dram.bandwidth_bytes_per_s]",
        *_figure_lines(dram, dram_source),
    ]
    if c.launch_overhead_s:
        lines += [
            "",
            "[node_overhead_s]",
            *_figure_lines(c.launch_overhead_s,
                           f"{where}: onnxruntime's CPU run time per extra kernel, without its profiler: the slope "
                           f"from a chain of 1 to {LAUNCH_CHAIN} Add nodes on a 16-float tensor, fastest of batches "
                           "of 50 runs (onnxruntime's profiler adds several µs to each small kernel it times)"),
        ]
    if levels.onchip_bytes and levels.onchip_bytes_per_s and levels.onchip_sizes:
        lo, hi = levels.onchip_sizes
        lines += [
            "",
            "[onchip.size_bytes]",
            *_figure_lines(levels.onchip_bytes,
                           f"{where}: the largest working set of the sweep still above the geometric mean of the last "
                           f"cache plateau's and DRAM's bandwidth" + (f" (the OS reports {c.caches})" if c.caches else "")),
            "",
            "[onchip.bandwidth_bytes_per_s]",
            *_figure_lines(levels.onchip_bytes_per_s,
                           f"{stream_source}; best over the last cache plateau, working sets "
                           f"{size_text(lo)}..{size_text(hi)}"),
        ]
    if with_efficiency and c.efficiency:
        lines += ["", "# The fraction of the roofline onnxruntime's kernels reach per kernel class: a kernel's roofline",
                  "# time is divided by it (onnxroof.measure.achieved; --no-overhead leaves it out)."]
        for kernel_class, cases in c.efficiency.items():
            sizes_text = "; ".join(f"{case.label}: {case.measured_s * 1e6:.3g} µs against {case.roof_s * 1e6:.3g} µs, "
                                   f"{case.fraction:.0%}" for case in cases)
            lines += ["", f"[efficiency.{kernel_class}]",
                      *_figure_lines(round(achieved.class_efficiency([case.fraction for case in cases]), 4),
                                     f"{where}: onnxruntime ({c.threads} thread(s), no profiler) on "
                                     f"{EFFICIENCY_CLASSES[kernel_class]}: the roofline time on the roofs above over "
                                     f"the time beyond the launch cost, geometric mean of {sizes_text}")]
    if levels.onchip_bytes:
        lines += ["", "[weights]", "resident = true",
                  "source = " + _toml_string("a CPU's caches keep the parameters from one run to the next when they fit "
                                             "beside the activations; onnxroof profile measures such warm, repeated runs")]
    if c.launch_overhead_s:
        lines += ["", "[fusion]", 'rules = ["epilogue", "normalization"]',
                  "source = " + _toml_string(HOST_FUSION_SOURCE)]
    return "\n".join(lines) + "\n"


CLEAN = "numpy, clean environment"
HOST_FUSION_SOURCE = (
    "onnxruntime's CPU graph optimizations at its default level (onnxruntime.ai/docs/performance/model-optimizations/"
    "graph-optimizations.html): BatchNormalization and Add folded into the Conv before it, Conv/Gemm + activation, "
    "MatMul + Add into Gemm, LayerNormalization and GELU fusions; it fuses no general elementwise chain, and attention "
    "only in models its transformer optimizer rewrote offline")


def _figure_lines(value: float, source: str) -> list[str]:
    if float(value).is_integer() and value < 2**53:
        number = str(int(value))
    else:  # a fraction as it reads (0.8063), a rate or a time in exponent form
        number = f"{value:.4g}" if 1e-3 <= value < 1e3 else f"{value:.6e}"
    return [f"value = {number}", 'tag = "measured"', f"source = {_toml_string(source)}"]


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes (\\" \\\\ \\n \\uXXXX) are valid TOML."""
    return json.dumps(text, ensure_ascii=True)


def size_text(size: int) -> str:
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"


def calibrated_target(calibration: Calibration, name: str = "this-machine", with_efficiency: bool = True) -> Target:
    """The calibration as a Target, through the same validation a file gets."""
    with tempfile.TemporaryDirectory(prefix="onnxroof-calibrate-") as directory:
        path = Path(directory) / f"{name}.toml"
        path.write_text(render_target(calibration, name, with_efficiency), encoding="utf-8")
        target = parse_target(path)
    return target


# --- facts about the machine -----------------------------------------------------------------


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpuinfo() -> list[dict[str, str]]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    blocks = []
    for block in text.split("\n\n"):
        entries = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            entries[key.strip()] = value.strip()
        if entries.get("processor"):
            blocks.append(entries)
    return blocks


def cpu_model() -> str:
    for entry in _cpuinfo():
        for key in ("model name", "Model", "Hardware", "cpu model"):
            if entry.get(key):
                return entry[key]
    return platform.processor() or platform.machine() or "unknown CPU"


def core_text() -> str:
    logical = os.cpu_count() or 1
    cores = {(e.get("physical id", "0"), e.get("core id")) for e in _cpuinfo() if e.get("core id") is not None}
    if cores:
        return f"{len(cores)} cores, {logical} logical CPUs" if len(cores) != logical else f"{logical} cores"
    return f"{logical} logical CPUs"


def cache_text() -> str:
    """What sysfs says about CPU 0's data caches, e.g. "L1d 32K, L2 512K, L3 32768K (shared by 2 CPUs)"."""
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    parts = []
    for index in sorted(base.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = (index / "level").read_text().strip()
            size = (index / "size").read_text().strip()
            shared = (index / "shared_cpu_list").read_text().strip()
        except OSError:
            continue
        label = f"L{level}{'d' if kind == 'Data' else ''}"
        parts.append(f"{label} {size}" + (f" (CPUs {shared})" if shared not in ("0", "") else ""))
    return ", ".join(parts)


def _blas_name() -> str:
    try:
        config = np.show_config(mode="dicts")  # numpy >= 1.25
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'BLAS')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy or an unusual build: the name is context only
        return "BLAS"


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _fit_in_memory(largest: int) -> tuple[int, str]:
    """Shrink the sweep's largest working set until its arrays (1.33x) fit in half the free memory."""
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        return largest, ""
    wanted = largest
    while largest > 64 * 2**20 and largest * 1.34 > available / 2:
        largest //= 2
    if largest < wanted:
        return largest, f"the sweep stops at {size_text(largest)} (memory available: {size_text(available)})"
    return largest, ""
