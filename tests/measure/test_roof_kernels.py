"""The kernels `onnxroof calibrate` times: the arithmetic that turns timed calls into rates
(with a mocked clock), the STREAM kernels and the BLAS thread limit. Nothing here measures time."""

from __future__ import annotations

import pytest
from measurements import FakeClock, GiB, KiB, MiB

from onnxroof.measure.roof_kernels import (
    ONNXRUNTIME_INT8,
    TRIAD_BLOCK,
    StreamArrays,
    _openblas_thread_functions,
    best_rate,
    blas_threads,
    inner_iterations,
    matmul_flops,
    measure_matmul,
    measure_stream,
    repetitions_for,
    stream_bytes,
    stream_elements,
    sweep_sizes,
)


def test_matmul_flops_is_two_n_cubed():
    assert matmul_flops(1) == 2
    assert matmul_flops(128) == 2 * 128**3 == 4_194_304
    assert matmul_flops(2048) == 17_179_869_184


def test_stream_bytes_count_reads_and_writes_as_stream_does():
    # copy b = a: read a, write b; add c = a + b and triad a = b + s c: two reads, one write
    assert stream_bytes("copy", 1000) == 2 * 8 * 1000
    assert stream_bytes("add", 1000) == 3 * 8 * 1000
    assert stream_bytes("triad", 1000) == 3 * 8 * 1000
    assert stream_bytes("triad", 1000, itemsize=4) == 3 * 4 * 1000
    # each thread's own arrays fill the working set together, rounded down to whole 64-byte lines
    assert stream_elements("triad", 3 * MiB, threads=2) == 65536
    assert stream_elements("copy", 1 * MiB, threads=1) == 65536
    assert stream_elements("copy", 1000, threads=3) % 8 == 0


def test_best_rate_keeps_the_fastest_call_with_a_mocked_timer():
    # three calls lasting 0.5 s, 0.25 s and 1 s: the best is 0.25 s
    ticks = iter([0.0, 0.5, 1.0, 1.25, 2.0, 3.0])
    calls = []
    rate = best_rate(lambda: calls.append(1), work=1e9, timer=lambda: next(ticks), repetitions=3)
    assert len(calls) == 3
    assert rate.seconds == 0.25 and rate.repetitions == 3
    assert rate.per_second == 4e9


def test_best_rate_refuses_a_timer_that_does_not_advance():
    with pytest.raises(RuntimeError, match="did not advance"):
        best_rate(lambda: None, work=1.0, timer=lambda: 5.0, repetitions=2)


def test_iterations_and_repetitions_fit_the_budget():
    assert inner_iterations(1e-4, 2e-3) == 20  # 20 x 0.1 ms reaches 2 ms
    assert inner_iterations(1.0, 2e-3) == 1
    assert inner_iterations(0.0, 2e-3) == 1
    assert repetitions_for(0.01, 0.1) == 10
    assert repetitions_for(1.0, 0.1) == 2  # never fewer than two
    assert repetitions_for(1e-6, 10.0) == 20  # nor more than twenty


def test_sweep_sizes_are_geometric_from_32_kib_to_1_gib():
    sizes = sweep_sizes()
    assert sizes[0] == 32 * KiB and sizes[-1] == GiB
    assert all(b > a for a, b in zip(sizes, sizes[1:]))
    assert all(s % 4096 == 0 for s in sizes)
    assert len(sizes) == 31  # 15 octaves, two steps each


def test_measure_matmul_arithmetic_with_a_mocked_timer():
    clock = FakeClock(step=1e-3)  # every timed call "takes" 1 ms
    point = measure_matmul("float32", 32, clock, budget_s=0.005, minimum_call_s=0.004)
    # the probe lasts 1 ms, so 4 matmuls make a 4 ms call; the budget fits 2 of those (the minimum)
    assert point.rate.work == 4 * matmul_flops(32)
    assert point.rate.seconds == pytest.approx(1e-3)
    assert point.rate.per_second == pytest.approx(4 * 2 * 32**3 / 1e-3)
    assert point.rate.repetitions == 2
    assert clock.readings == 2 * (1 + 2)  # two readings per timed call: probe + 2 repetitions


def test_the_int8_roof_is_timed_on_onnxruntime_s_matmulinteger_with_a_mocked_timer():
    pytest.importorskip("onnxruntime")
    clock = FakeClock(step=1e-3)
    point = measure_matmul("int8", 16, clock, budget_s=0.005, minimum_call_s=0.004, method=ONNXRUNTIME_INT8, threads=1)
    # as for fp32: the 1 ms probe asks for 4 products per 4 ms call; a 16 x 16 int8 product is
    # 2 x 16^3 = 8,192 operations (a multiply and an add per multiply-accumulate), so 4 of them in
    # the 1 ms the fastest call is said to last: 32,768 ops / 1e-3 s = 32.768 MOP/s
    assert point.dtype == "int8" and point.method == ONNXRUNTIME_INT8 and point.n == 16
    assert point.rate.work == 4 * 8_192
    assert point.rate.per_second == pytest.approx(32.768e6)


def test_the_int8_roof_is_left_out_without_onnxruntime(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_onnxruntime(name, *args, **kwargs):
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnxruntime)
    assert measure_matmul("int8", 16, FakeClock(), budget_s=0.005, method=ONNXRUNTIME_INT8) is None


def test_measure_stream_arithmetic_with_a_mocked_timer():
    clock = FakeClock(step=1e-3)
    arrays = StreamArrays(threads=2, largest=4 * MiB)
    try:
        point = measure_stream(arrays, "triad", 3 * MiB, clock, budget_s=0.01, minimum_call_s=2e-3)
        copy = measure_stream(arrays, "copy", 64 * KiB, clock, budget_s=0.01, minimum_call_s=2e-3)
        too_big = measure_stream(arrays, "add", 64 * MiB, clock, budget_s=0.01)
    finally:
        arrays.close()
    elements = stream_elements("triad", 3 * MiB, 2)
    # two passes per timed call (the 1 ms probe asks for 2 ms), each over both threads' arrays
    assert point.rate.work == 2 * 2 * stream_bytes("triad", elements)
    assert point.rate.per_second == pytest.approx(2 * 2 * 3 * 8 * elements / 1e-3)
    assert point.working_set == 3 * MiB and point.kernel == "triad"
    assert copy.rate.work == 2 * 2 * stream_bytes("copy", stream_elements("copy", 64 * KiB, 2))
    assert too_big is None  # larger than the arrays allocated


def test_the_stream_kernels_compute_what_they_say():
    import numpy as np

    arrays = StreamArrays(threads=1, largest=1 * MiB)
    try:
        a, b, c = arrays.arrays[0]
        n = TRIAD_BLOCK * 2 + 8  # several blocks and a short last one
        a[:n], b[:n], c[:n] = 0.0, 2.0, 5.0
        arrays.runner("triad", n)(1)
        assert np.all(a[:n] == 2.0 + 3.0 * 5.0)
        arrays.runner("add", n)(1)
        assert np.all(c[:n] == a[:n] + b[:n])
        arrays.runner("copy", n)(1)
        assert np.all(b[:n] == a[:n])
    finally:
        arrays.close()


def test_blas_threads_are_limited_and_restored():
    with blas_threads(None) as limited:
        assert limited
    _, getter = _openblas_thread_functions()  # numpy's OpenBLAS; None for another BLAS
    before = getter() if getter else None
    with blas_threads(1) as limited:
        assert limited == (getter is not None)  # another BLAS: --threads limits the sweep only
        if getter:
            assert getter() == 1
    if getter:
        assert getter() == before
