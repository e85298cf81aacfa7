"""`onnxroof calibrate`: measure this machine's roofs, for the target file :mod:`onnxroof.report.target_file` writes.

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
- **int8 roof** (``peak_ops_per_s.int8``, when onnxruntime is installed): onnxruntime's
  MatMulInteger on n x n operands (n = 512 ... 2048, uint8 activations by int8 weights into
  int32, the pair its quantizers give a CPU model and its integer GEMM's native one: VNNI or
  AMX where the CPU has them), 2 n^3 operations as onnxroof counts a quantized product. Without
  onnxruntime no int8 roof is written and int8 nodes fall back to the fp32 roof.
- **fp16 is not written as a roof.** numpy's float16 and int8 matmul are not BLAS calls but a
  generic C loop, one to two orders of magnitude below float32: timing them would measure numpy,
  not the CPU. Without that roof a fp16 node falls back to the fp32 roof
  (``targets.ROOF_PREFERENCE``), which is what a CPU without native fp16 arithmetic does (F16C
  converts, the FMA runs in fp32).
- **Memory roofs**: a STREAM-style sweep (McCalpin) over working sets from 32 KiB to 8 last-level
  caches (at least 256 MiB, at most 1 GiB) (steps of sqrt 2), one thread per usable CPU, each on
  its own float64 arrays (numpy releases the GIL inside its loops). Kernels and the bytes counted
  per element, as STREAM counts them (write-allocate traffic not counted): copy ``b = a`` 2 x 8,
  add ``c = a + b`` 3 x 8, triad ``a = b + s c`` 3 x 8 (numpy has no fused multiply-add, so the
  triad runs in cache-sized blocks through a scratch block that stays in L1/L2; the arrays are
  streamed once). Each point is the fastest of several repetitions, and the best kernel at each working set is kept.
- **Levels** (:func:`onnxroof.measure.roofs.memory_levels`): the DRAM bandwidth is the best over the largest working
  sets (within 4x of the largest); the largest cache plateau is the last run of points at least
  1.3x faster than DRAM; its bandwidth is the best over its top two octaves, and its size is
  where the sweep drops through the geometric mean of that plateau and DRAM, interpolated in log
  size between the points on either side (a point that lands on either side of the middle from
  one calibration to the next then moves the size a little, not a step of the sweep). These
  become ``onchip.bandwidth_bytes_per_s``, ``onchip.size_bytes`` and ``dram.bandwidth_bytes_per_s``.
- **Rounds**: the matmul sizes and the sweep are each measured in three rounds (one more per
  20 s of ``--seconds`` past 60), one after the other, and every point keeps its best round: a
  burst of other work on the machine then spoils one round of a point, not all of them. Under
  20 s (the quick calibration ``onnxroof profile`` runs when it has no target) there is one
  round and the sweep stops at 256 MiB.

Every figure is tagged ``measured`` and its ``source`` gives the date, CPU model, core count,
the method and the load average at the start (other work on the machine lowers the figures).
The run is bounded by ``--seconds`` (default 30 s). The kernels and the arithmetic that turns
their timings into rates are in :mod:`onnxroof.measure.roof_kernels`, the levels and roofs read
off them in :mod:`onnxroof.measure.roofs`; the target file is written by
:mod:`onnxroof.report.target_file`.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Sequence

import numpy as np

from . import achieved, cold_launch, dram_stall, kernel_figures, op_efficiency, rows_efficiency, subnormal
from .machine import (
    blas_name,
    cache_text,
    core_text,
    cpu_model,
    fit_in_memory,
    last_level_cache_bytes,
    load_average,
    size_text,
    usable_cpus,
)
from .roof_kernels import (
    MAX_BYTES,
    MIN_BYTES,
    ONNXRUNTIME_INT8,
    STREAM_KERNELS,
    StreamArrays,
    Timer,
    blas_threads,
    blas_variables,
    matmul_flops,
    measure_matmul,
    measure_stream,
    numpy_in_clean_environment,
    sweep_sizes,
)
from .roofs import ROUNDS, Calibration, measured_roofs

DEFAULT_SECONDS = 30.0
QUICK_SECONDS = 6.0  # what `onnxroof profile` spends when it has no calibrated target
MIN_SECONDS = 2.0
# fp32 matmul sizes in the order measured (3 n^2 x 4 B: 192 KiB at n=128, in cache; 48 MiB at
# n=2048, beyond most last-level caches); 1024 first: it tells whether 2048 fits in the time given
MATMUL_ORDER = (1024, 2048, 512, 256, 128)
INT8_ORDER = (1024, 2048, 512)  # onnxruntime's MatMulInteger, in the same way
QUICK_UNDER_S = 20.0  # below this --seconds: one round, and the sweep stops at QUICK_LARGEST
QUICK_LARGEST = 256 * 2**20
# the sweep's largest working set, in last-level caches: DRAM bandwidth shows well before 8x (the
# sweep's 1 GiB default held 1.3 GiB at once on a 32 MiB-cache machine, for no other figure)
CACHES_SWEPT = 8

Progress = Callable[[str], None]


def calibrate(
    seconds: float = DEFAULT_SECONDS,
    threads: int | None = None,
    largest: int = MAX_BYTES,
    progress: Progress | None = None,
    timer: Timer = time.perf_counter,
    matmul_sizes: Sequence[int] = MATMUL_ORDER,
    smallest: int = MIN_BYTES,
    int8_sizes: Sequence[int] = INT8_ORDER,
) -> Calibration:
    """Measure this machine's roofs in about ``seconds`` (see the module docstring).

    ``largest`` and ``smallest`` bound the bandwidth sweep's working sets, ``matmul_sizes`` the
    fp32 matmul sizes (in the order measured: the first one predicts whether larger ones fit),
    ``int8_sizes`` onnxruntime's int8 ones (the same way)."""
    say = progress or (lambda text: None)
    started = time.monotonic()
    with blas_threads(threads) as limited:
        result = _calibrate(seconds, threads or usable_cpus(), largest, say, timer, matmul_sizes, smallest, int8_sizes)
    if threads is not None and not limited:
        result.notes.append(
            f"--threads {threads} limits the bandwidth sweep only: onnxroof cannot set this BLAS's threads"
        )
    result.blas_threads = threads if threads is not None and limited else None
    result.seconds = time.monotonic() - started
    return result


def _calibrate(
    seconds: float,
    threads: int,
    largest: int,
    say: Progress,
    timer: Timer,
    matmul_sizes: Sequence[int],
    smallest: int,
    int8_sizes: Sequence[int] = INT8_ORDER,
) -> Calibration:
    quick_rounds = 1
    if seconds < QUICK_UNDER_S and largest > QUICK_LARGEST:
        largest = QUICK_LARGEST  # still 8x a 32 MiB last-level cache
    cache = last_level_cache_bytes()
    if cache:
        largest = min(largest, max(QUICK_LARGEST, CACHES_SWEPT * cache))
    largest, memory_note = fit_in_memory(largest)
    result = Calibration(
        date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        cpu=cpu_model(),
        cores=core_text(),
        threads=threads,
        load_average=load_average(),
        numpy_version=np.__version__,
        blas=blas_name(),
        caches=cache_text(),
    )
    if memory_note:
        result.notes.append(memory_note)
    if result.load_average is not None and result.load_average > 0.5:
        say(f"note: load average {result.load_average:.2f}: other work on this machine lowers the figures")
    rounds = result.rounds = quick_rounds if seconds < QUICK_UNDER_S else max(ROUNDS, int(seconds // 20))
    # a quarter for the matmuls, half for the sweep, the rest for onnxruntime's own kernels
    matmul_budget, stream_budget = 0.25 * seconds / rounds, 0.45 * seconds / rounds
    # an fp32 size gets a share, an int8 one half a share (one method, not two)
    per_size = matmul_budget * 0.85 / (len(matmul_sizes) + 0.5 * len(int8_sizes))
    sizes = sweep_sizes(smallest, largest)
    slice_s = stream_budget / (len(sizes) * len(STREAM_KERNELS))
    say(f"allocating {largest * 1.33 / 2**30:.2f} GiB for the bandwidth sweep ({threads} thread(s))")
    arrays = StreamArrays(threads, largest)
    try:
        for round_ in range(1, rounds + 1):
            say(f"round {round_} of {rounds}")
            # compute roof: fp32 over sizes, by numpy and by onnxruntime's MatMul; fp64 and fp16
            # once (comments in the file)
            _measure_fp32(result, matmul_sizes, round_, per_size / 2, f"--seconds {seconds:g}", threads, timer, say)
            _measure_int8(result, int8_sizes, round_, per_size / 2, threads, timer, say)
            if round_ == 1:
                _measure_fp64_fp16(result, matmul_sizes, matmul_budget * 0.075, timer, say)
            _sweep(result, arrays, sizes, slice_s, timer, say)  # memory roofs
    finally:
        arrays.close()
    result.matmul.sort(key=lambda p: (p.dtype != "float32", p.dtype, p.method, p.n))
    # the cross-check: is numpy slow because of how this environment steers its BLAS? A child process
    # keeps its own clock, so it runs only when this calibration keeps the real one
    if blas_variables() and timer is time.perf_counter:
        clean = numpy_in_clean_environment(min(1024, max(matmul_sizes)), threads, 0.03 * seconds)
        if clean is not None:
            result.matmul.insert(0, clean)
            say(
                f"fp32 matmul n={clean.n:<5} {clean.rate.per_second / 1e9:8.1f} GFLOP/s "
                f"(numpy in a child process without {', '.join(blas_variables())})"
            )
    _measure_onnxruntime_kernels(result, 0.27 * seconds, threads, say)
    return result


def _measure_fp32(
    result: Calibration,
    sizes: Sequence[int],
    round_: int,
    budget_s: float,
    limit: str,
    threads: int,
    timer: Timer,
    say: Progress,
) -> None:
    """One round of fp32 matmuls over ``sizes``, by numpy and by onnxruntime's MatMul (a size that
    would not fit in ``budget_s`` left out)."""
    measured = [p for p in result.matmul if p.dtype == "float32" and p.method == "numpy"]
    for n in sizes:
        if _left_out(result, measured, n, round_, budget_s, f"fp32 matmul n={n}", limit):
            continue
        point = measure_matmul("float32", n, timer, budget_s)
        assert point is not None  # numpy's is always measured (None: onnxruntime missing)
        result.matmul.append(point)
        measured.append(point)
        say(f"fp32 matmul n={n:<5} {point.rate.per_second / 1e9:8.1f} GFLOP/s (numpy)")
        runtime = measure_matmul("float32", n, timer, budget_s, method="onnxruntime", threads=threads)
        if runtime is not None:
            result.matmul.append(runtime)
            say(f"fp32 matmul n={n:<5} {runtime.rate.per_second / 1e9:8.1f} GFLOP/s (onnxruntime)")


def _measure_fp64_fp16(result: Calibration, sizes: Sequence[int], budget_s: float, timer: Timer, say: Progress) -> None:
    """One fp64 matmul (at most n = 1024) and one fp16 (at most n = 64), in the first round."""
    for dtype, n in (("float64", min(1024, max(sizes))), ("float16", min(64, min(sizes)))):
        point = measure_matmul(dtype, n, timer, budget_s, minimum_call_s=0.01)
        assert point is not None  # numpy's is always measured (None: onnxruntime missing)
        result.matmul.append(point)
        say(
            f"{'fp64' if dtype == 'float64' else 'fp16'} matmul n={n:<5} {point.rate.per_second / 1e9:8.2f} GFLOP/s"
            + (
                "  (numpy's float16 matmul is a generic loop, not BLAS: not written as a roof)"
                if dtype == "float16"
                else ""
            )
        )


def _sweep(
    result: Calibration, arrays: StreamArrays, sizes: Sequence[int], slice_s: float, timer: Timer, say: Progress
) -> None:
    """One round of the bandwidth sweep: every stream kernel at every size."""
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


def _left_out(result: Calibration, measured: list, n: int, round_: int, budget_s: float, what: str, limit: str) -> bool:
    """Whether to leave a matmul of size ``n`` out: in round 1 when the smallest size measured
    predicts that three calls take more than ``4 x budget_s`` (a note says so); in later rounds
    when round 1 left it out."""
    if round_ == 1 and measured and n > measured[0].n:
        predicted = measured[0].rate.seconds / measured[0].rate.work * matmul_flops(n)
        if predicted * 3 > budget_s * 4:
            result.notes.append(f"{what} left out: it does not fit in {limit}")
            return True
        return False
    return round_ > 1 and not any(p.n == n for p in measured)


def _measure_int8(
    result: Calibration, sizes: Sequence[int], round_: int, budget_s: float, threads: int, timer: Timer, say: Progress
) -> None:
    """onnxruntime's MatMulInteger at ``sizes`` (in round 1 a size whose predicted time does not
    fit ``budget_s`` is left out, as the fp32 ones; later rounds measure the sizes round 1 did);
    nothing without onnxruntime."""
    measured = [p for p in result.matmul if p.dtype == "int8"]
    for n in sizes:
        if _left_out(result, measured, n, round_, budget_s, f"int8 matmul n={n}", "the time given"):
            continue
        point = measure_matmul("int8", n, timer, budget_s, method=ONNXRUNTIME_INT8, threads=threads)
        if point is None:  # no onnxruntime: no int8 roof
            return
        result.matmul.append(point)
        measured.append(point)
        say(f"int8 matmul n={n:<5} {point.rate.per_second / 1e9:8.1f} GOP/s (onnxruntime MatMulInteger)")


def _measure_onnxruntime_kernels(result: Calibration, budget_s: float, threads: int, say: Progress) -> None:
    """onnxruntime's cost per kernel, its copy bandwidth and, against the roofs just measured,
    the fraction of the roofline each kernel class reaches (:mod:`onnxroof.measure.kernel_figures`)."""
    line = kernel_figures.measure_launch_line(max(0.12 * budget_s, 0.4), threads)
    if line is None:
        result.notes.append("onnxruntime is not installed: no launch cost, copy bandwidth or efficiency measured")
        return
    result.launch_overhead_s, result.run_overhead_s = line
    say(f"onnxruntime launch {result.launch_overhead_s * 1e6:.2f} µs per kernel")
    if result.run_overhead_s:
        say(f"onnxruntime run {result.run_overhead_s * 1e6:.2f} µs beyond its kernels")
    result.cold_launch_s = cold_launch.measure_cold_launch_s(
        result.launch_overhead_s, max(0.08 * budget_s, 0.8), threads
    )
    if result.cold_launch_s:
        say(f"onnxruntime launch {result.cold_launch_s * 1e6:.2f} µs per kernel when the run streams past the caches")
    if threads > 1:
        handoff = kernel_figures.measure_handoff(result.launch_overhead_s, threads, max(0.06 * budget_s, 0.3))
        if handoff is not None:
            result.handoff_s, result.handoff_cases = handoff
            say(f"onnxruntime hand-off {result.handoff_s * 1e6:.2f} µs per kernel split over {threads} threads")
    result.subnormal_s = subnormal.measure_subnormal_s(max(0.04 * budget_s, 0.4), threads)
    if result.subnormal_s:
        say(f"onnxruntime softmax {result.subnormal_s * 1e9:.2f} ns per exp underflowed to a subnormal (a causal mask)")
    result.copy_bytes_per_s = kernel_figures.measure_copy_bandwidth(max(0.1 * budget_s, 0.3), threads)
    # (not None: onnxruntime is there, its launch line was measured)
    say(
        f"onnxruntime copy {result.copy_bytes_per_s / 1e9:.1f} GB/s (Mul by a scalar over "  # type: ignore[operator]
        f"{size_text(4 * achieved.COPY_ELEMENTS)})"
    )
    roofs = measured_roofs(result)
    result.efficiency = kernel_figures.measure_efficiency(
        roofs, result.launch_overhead_s, 0.65 * budget_s, threads, say
    )
    result.efficiency_on_roof = kernel_figures.measure_roof_efficiency(
        roofs, result.launch_overhead_s, 0.2 * budget_s, threads, say
    )
    # the gemm sizes of fewer rows, and the class's own sizes that join their curves
    measured = {
        "gemm": result.efficiency.get("gemm", []),
        "gemm.int8": result.efficiency_on_roof.get("gemm", {}).get("int8", []),
    }
    result.efficiency_by_rows = rows_efficiency.measure_rows_efficiency(
        roofs, result.launch_overhead_s, 0.15 * budget_s, {k: v for k, v in measured.items() if v}, threads, say
    )
    # on top of the budget's share above: the ops whose kernels run at a figure of their own
    result.efficiency_by_op, notes = op_efficiency.measure_op_efficiency(
        roofs, result.launch_overhead_s, 0.35 * budget_s, threads, say
    )
    result.notes += notes
    reorder, notes = op_efficiency.measure_reorder_efficiency(
        roofs, result.launch_overhead_s, 0.03 * budget_s, threads, say
    )
    result.efficiency_by_op += [reorder] if reorder else []
    result.notes += notes
    # after the efficiencies: they are fractions of the plain roofline, which this figure is not part of
    result.dram_stall = dram_stall.measure_dram_stall(roofs.dram_bytes_per_s.value, max(0.1 * budget_s, 1.0), threads)
    if result.dram_stall:
        say(f"onnxruntime matmuls stall on {result.dram_stall:.0%} of their weights' DRAM time")
