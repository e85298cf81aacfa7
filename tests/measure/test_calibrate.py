"""`onnxroof calibrate`: the arithmetic with a mocked clock, the plateau reading, and the target
file it writes (which must pass the same validation as any target). Nothing here measures time."""

from __future__ import annotations

import itertools

import pytest

from onnxroof.measure import achieved
from onnxroof.measure import calibrate as cal
from onnxroof.cli.app import main
from onnxroof.roofline.targets import parse_target

KiB, MiB, GiB = 2**10, 2**20, 2**30


class FakeClock:
    """Every reading is ``step`` seconds after the last: each timed call lasts ``step``."""

    def __init__(self, step: float = 1e-3):
        self.now, self.step, self.readings = 0.0, step, 0

    def __call__(self) -> float:
        self.now += self.step
        self.readings += 1
        return self.now


# --- the arithmetic ---------------------------------------------------------------------------


def test_matmul_flops_is_two_n_cubed():
    assert cal.matmul_flops(1) == 2
    assert cal.matmul_flops(128) == 2 * 128**3 == 4_194_304
    assert cal.matmul_flops(2048) == 17_179_869_184


def test_stream_bytes_count_reads_and_writes_as_stream_does():
    # copy b = a: read a, write b; add c = a + b and triad a = b + s c: two reads, one write
    assert cal.stream_bytes("copy", 1000) == 2 * 8 * 1000
    assert cal.stream_bytes("add", 1000) == 3 * 8 * 1000
    assert cal.stream_bytes("triad", 1000) == 3 * 8 * 1000
    assert cal.stream_bytes("triad", 1000, itemsize=4) == 3 * 4 * 1000
    # each thread's own arrays fill the working set together, rounded down to whole 64-byte lines
    assert cal.stream_elements("triad", 3 * MiB, threads=2) == 65536
    assert cal.stream_elements("copy", 1 * MiB, threads=1) == 65536
    assert cal.stream_elements("copy", 1000, threads=3) % 8 == 0


def test_best_rate_keeps_the_fastest_call_with_a_mocked_timer():
    # three calls lasting 0.5 s, 0.25 s and 1 s: the best is 0.25 s
    ticks = iter([0.0, 0.5, 1.0, 1.25, 2.0, 3.0])
    calls = []
    rate = cal.best_rate(lambda: calls.append(1), work=1e9, timer=lambda: next(ticks), repetitions=3)
    assert len(calls) == 3
    assert rate.seconds == 0.25 and rate.repetitions == 3
    assert rate.per_second == 4e9


def test_best_rate_refuses_a_timer_that_does_not_advance():
    with pytest.raises(RuntimeError, match="did not advance"):
        cal.best_rate(lambda: None, work=1.0, timer=lambda: 5.0, repetitions=2)


def test_iterations_and_repetitions_fit_the_budget():
    assert cal.inner_iterations(1e-4, 2e-3) == 20  # 20 x 0.1 ms reaches 2 ms
    assert cal.inner_iterations(1.0, 2e-3) == 1
    assert cal.inner_iterations(0.0, 2e-3) == 1
    assert cal.repetitions_for(0.01, 0.1) == 10
    assert cal.repetitions_for(1.0, 0.1) == 2  # never fewer than two
    assert cal.repetitions_for(1e-6, 10.0) == 20  # nor more than twenty


def test_sweep_sizes_are_geometric_from_32_kib_to_1_gib():
    sizes = cal.sweep_sizes()
    assert sizes[0] == 32 * KiB and sizes[-1] == GiB
    assert all(b > a for a, b in zip(sizes, sizes[1:]))
    assert all(s % 4096 == 0 for s in sizes)
    assert len(sizes) == 31  # 15 octaves, two steps each


def test_measure_matmul_arithmetic_with_a_mocked_timer():
    clock = FakeClock(step=1e-3)  # every timed call "takes" 1 ms
    point = cal.measure_matmul("float32", 32, clock, budget_s=0.005, minimum_call_s=0.004)
    # the probe lasts 1 ms, so 4 matmuls make a 4 ms call; the budget fits 2 of those (the minimum)
    assert point.rate.work == 4 * cal.matmul_flops(32)
    assert point.rate.seconds == pytest.approx(1e-3)
    assert point.rate.per_second == pytest.approx(4 * 2 * 32**3 / 1e-3)
    assert point.rate.repetitions == 2
    assert clock.readings == 2 * (1 + 2)  # two readings per timed call: probe + 2 repetitions


def test_measure_stream_arithmetic_with_a_mocked_timer():
    clock = FakeClock(step=1e-3)
    arrays = cal._StreamArrays(threads=2, largest=4 * MiB)
    try:
        point = cal.measure_stream(arrays, "triad", 3 * MiB, clock, budget_s=0.01, minimum_call_s=2e-3)
        copy = cal.measure_stream(arrays, "copy", 64 * KiB, clock, budget_s=0.01, minimum_call_s=2e-3)
        too_big = cal.measure_stream(arrays, "add", 64 * MiB, clock, budget_s=0.01)
    finally:
        arrays.close()
    elements = cal.stream_elements("triad", 3 * MiB, 2)
    # two passes per timed call (the 1 ms probe asks for 2 ms), each over both threads' arrays
    assert point.rate.work == 2 * 2 * cal.stream_bytes("triad", elements)
    assert point.rate.per_second == pytest.approx(2 * 2 * 3 * 8 * elements / 1e-3)
    assert point.working_set == 3 * MiB and point.kernel == "triad"
    assert copy.rate.work == 2 * 2 * cal.stream_bytes("copy", cal.stream_elements("copy", 64 * KiB, 2))
    assert too_big is None  # larger than the arrays allocated


def test_the_stream_kernels_compute_what_they_say():
    import numpy as np

    arrays = cal._StreamArrays(threads=1, largest=1 * MiB)
    try:
        a, b, c = arrays.arrays[0]
        n = cal.TRIAD_BLOCK * 2 + 8  # several blocks and a short last one
        a[:n], b[:n], c[:n] = 0.0, 2.0, 5.0
        arrays.runner("triad", n)(1)
        assert np.all(a[:n] == 2.0 + 3.0 * 5.0)
        arrays.runner("add", n)(1)
        assert np.all(c[:n] == a[:n] + b[:n])
        arrays.runner("copy", n)(1)
        assert np.all(b[:n] == a[:n])
    finally:
        arrays.close()


# --- reading the sweep -------------------------------------------------------------------------


def _sweep(levels, sizes=None):
    """Bandwidth per working set for (capacity, bytes/s) levels, DRAM last (capacity None)."""
    sizes = sizes or cal.sweep_sizes()
    points = []
    for size in sizes:
        for capacity, bandwidth in levels:
            if capacity is None or size <= capacity:
                points.append((size, bandwidth))
                break
    return points


def test_memory_levels_reads_the_last_cache_plateau_and_dram():
    # L2 1 MiB at 200 GB/s, L3 32 MiB at 60 GB/s, DRAM 20 GB/s
    points = _sweep([(1 * MiB, 200e9), (32 * MiB, 60e9), (None, 20e9)])
    levels = cal.memory_levels(points)
    assert levels.dram_bytes_per_s == 20e9
    assert levels.onchip_bytes_per_s == 60e9
    assert levels.onchip_bytes == 32 * MiB
    assert levels.dram_sizes == (256 * MiB, GiB)
    assert levels.onchip_sizes == (8 * MiB, 32 * MiB)


def test_memory_levels_takes_the_middle_of_a_gradual_drop_and_the_best_of_noisy_points():
    points = dict(_sweep([(1 * MiB, 200e9), (16 * MiB, 60e9), (None, 20e9)]))
    sizes = sorted(points)
    after = [s for s in sizes if s > 16 * MiB]
    points[after[0]] = 40e9  # partly cached: above the middle (sqrt(60 x 20) = 34.6)
    points[after[1]] = 30e9  # below it
    points[sizes[0]] = 5e9  # the smallest size is call-overhead bound
    points[GiB] = 12e9  # other work slowed these passes down: the best of the tail stands
    points[8 * MiB] = 45e9
    levels = cal.memory_levels(sorted(points.items()))
    assert levels.dram_bytes_per_s == 20e9
    assert levels.onchip_bytes == after[0]
    assert levels.onchip_bytes_per_s == 60e9


def test_memory_levels_without_a_cache_plateau():
    flat = [(size, 10e9) for size in cal.sweep_sizes()]
    levels = cal.memory_levels(flat)
    assert levels.dram_bytes_per_s == 10e9
    assert levels.onchip_bytes is None and levels.onchip_bytes_per_s is None


# --- the target file ---------------------------------------------------------------------------


def _calibration(peak=150e9, levels=((1 * MiB, 200e9), (32 * MiB, 60e9), (None, 20e9))):
    """A plausible machine's measurements, built by hand."""
    c = cal.Calibration(date="2026-01-02 03:04 UTC", cpu='Test CPU "X" 9000', cores="4 cores, 8 logical CPUs",
                        threads=8, load_average=0.1, numpy_version="2.0", blas="OpenBLAS 0.3",
                        caches="L1d 32K, L2 1024K, L3 32768K (CPUs 0-7)")
    for n, share in ((128, 0.3), (1024, 0.9), (2048, 1.0)):
        c.matmul.append(cal.MatmulPoint("float32", n, cal.Rate(cal.matmul_flops(n), cal.matmul_flops(n) / (peak * share), 5)))
    c.matmul.append(cal.MatmulPoint("float64", 1024, cal.Rate(cal.matmul_flops(1024), cal.matmul_flops(1024) / (peak / 2), 3)))
    c.matmul.append(cal.MatmulPoint("float16", 64, cal.Rate(cal.matmul_flops(64), cal.matmul_flops(64) / 1e9, 3)))
    for size, bandwidth in _sweep(list(levels)):
        for kernel, factor in (("copy", 0.9), ("add", 1.0), ("triad", 0.95)):
            work = bandwidth * factor * 1e-3
            c.stream.append(cal.StreamPoint(kernel, size, cal.Rate(work, 1e-3, 3)))
    return c


def test_rendered_target_validates_and_is_tagged_measured(tmp_path):
    path = tmp_path / "this-machine.toml"
    path.write_text(cal.render_target(_calibration()), encoding="utf-8")
    target = parse_target(path)
    assert target.name == "this-machine"
    assert list(target.peak_ops_per_s) == ["fp32"]  # fp16/int8 in numpy are not BLAS: not written
    assert target.peak_ops_per_s["fp32"].value == pytest.approx(150e9)
    assert target.dram_bytes_per_s.value == pytest.approx(20e9)  # the best kernel (add) per size
    assert target.onchip_bytes.value == 32 * MiB
    assert target.onchip_bytes_per_s.value == pytest.approx(60e9)
    figures = [target.peak_ops_per_s["fp32"], target.dram_bytes_per_s, target.onchip_bytes, target.onchip_bytes_per_s]
    for figure in figures:
        assert figure.tag == "measured"
        assert "2026-01-02 03:04 UTC" in figure.source and 'Test CPU "X" 9000' in figure.source
        assert "4 cores, 8 logical CPUs" in figure.source
    assert "2 n^3" in target.peak_ops_per_s["fp32"].source
    assert "STREAM" in target.dram_bytes_per_s.source
    assert "L3 32768K" in target.onchip_bytes.source
    text = path.read_text()
    assert "# fp64 matmul n=1024: 75.0 GFLOP/s" in text
    assert "# fp16 matmul n=64: 1.00 GFLOP/s in numpy" in text
    # within physical reason: the cache beats DRAM, the ridge point is a sane FLOP/B
    assert target.onchip_bytes_per_s.value > target.dram_bytes_per_s.value
    assert 1 < target.ridge("fp32") < 1000


def test_rendered_target_without_a_cache_plateau_has_no_onchip_section(tmp_path):
    path = tmp_path / "flat.toml"
    path.write_text(cal.render_target(_calibration(levels=((None, 10e9),)), name="flat"), encoding="utf-8")
    target = parse_target(path)
    assert target.onchip_bytes is None and target.onchip_bytes_per_s is None
    assert target.dram_bytes_per_s.value == pytest.approx(10e9)


def test_calibrated_target_goes_through_parse_target():
    target = cal.calibrated_target(_calibration(), name="quick")
    assert target.name == "quick" and target.peak_ops_per_s["fp32"].tag == "measured"


def test_calibrate_end_to_end_with_a_mocked_timer(tmp_path):
    """The whole pipeline on tiny sizes; the clock says every timed call takes 1 ms, so every
    figure is the work of one call per millisecond, and the file it makes validates."""
    clock = FakeClock(step=1e-3)
    messages = []
    result = cal.calibrate(seconds=2, threads=2, largest=1 * MiB, progress=messages.append, timer=clock,
                           matmul_sizes=(32, 64))
    assert {p.dtype for p in result.matmul} == {"float32", "float64", "float16"}
    # every size in every round, by numpy and by onnxruntime's MatMul (installed with the test extras)
    for method in ("numpy", "onnxruntime"):
        assert [p.n for p in result.matmul if p.dtype == "float32" and p.method == method] == sorted([32, 64] * result.rounds)
    for point in result.matmul:
        assert point.rate.seconds == pytest.approx(1e-3)
        assert point.rate.work % cal.matmul_flops(point.n) == 0
    sizes = sorted({p.working_set for p in result.stream})
    assert sizes[0] == 32 * KiB and sizes[-1] == 1 * MiB
    assert result.rounds == 1  # a quick calibration: one round
    assert len(result.stream) == result.rounds * len(sizes) * len(cal.STREAM_KERNELS)
    for point in result.stream:
        elements = cal.stream_elements(point.kernel, point.working_set, 2)
        assert point.rate.work % (2 * cal.stream_bytes(point.kernel, elements)) == 0
    assert any("fp32 matmul n=64" in m for m in messages) and any("bandwidth" in m for m in messages)
    path = tmp_path / "mocked.toml"
    path.write_text(result.to_toml("mocked"), encoding="utf-8")
    target = parse_target(path)
    assert target.peak_ops_per_s["fp32"].value == pytest.approx(max(p.rate.per_second for p in result.matmul
                                                                     if p.dtype == "float32"))


# --- the command -------------------------------------------------------------------------------


@pytest.fixture
def fake_calibration(monkeypatch):
    seen = {}

    def fake(seconds, threads=None, progress=None, **_):
        seen.update(seconds=seconds, threads=threads)
        if progress:
            progress("measuring (fake)")
        return _calibration()

    monkeypatch.setattr(cal, "calibrate", fake)
    return seen


def test_cli_writes_the_target_file_atomically(tmp_path, capsys, fake_calibration):
    out = tmp_path / "this-machine.toml"
    code = main(["calibrate", "-o", str(out), "--seconds", "5", "--threads", "3"])
    stdout, stderr = capsys.readouterr()
    assert code == 0 and stdout == ""
    assert fake_calibration == {"seconds": 5.0, "threads": 3}
    assert "measuring (fake)" in stderr and f"wrote {out}" in stderr
    target = parse_target(out)
    assert target.name == "this-machine" and target.peak_ops_per_s["fp32"].tag == "measured"
    assert [p.name for p in tmp_path.iterdir()] == ["this-machine.toml"]  # no temporary left behind


def test_cli_prints_to_stdout_and_is_quiet_with_q(capsys, fake_calibration):
    code = main(["calibrate", "-q", "--name", "box"])
    stdout, stderr = capsys.readouterr()
    assert code == 0 and stderr == ""
    assert 'name = "box"' in stdout and 'schema = "onnxroof-target/1"' in stdout
    assert fake_calibration["seconds"] == cal.DEFAULT_SECONDS


@pytest.mark.parametrize("argv, message", [
    (["calibrate", "--seconds", "0.5"], "at least 2 seconds"),
    (["calibrate", "--seconds", "soon"], "expected a number of seconds"),
    (["calibrate", "--threads", "0"], "positive integer"),
    (["calibrate", "-o", "/no/such/dir/x.toml"], "does not exist"),
])
def test_cli_errors_are_one_line_with_exit_2(capsys, fake_calibration, argv, message):
    code = main(argv)
    _, stderr = capsys.readouterr()
    assert code == 2 and message in stderr and stderr.count("\n") == 1


def test_blas_threads_are_limited_and_restored():
    with cal.blas_threads(None) as limited:
        assert limited
    _, getter = cal._openblas_thread_functions()  # numpy's OpenBLAS; None for another BLAS
    before = getter() if getter else None
    with cal.blas_threads(1) as limited:
        assert limited == (getter is not None)  # another BLAS: --threads limits the sweep only
        if getter:
            assert getter() == 1
    if getter:
        assert getter() == before


def test_machine_facts_are_strings():
    assert cal.cpu_model() and isinstance(cal.cpu_model(), str)
    assert "CPU" in cal.core_text() or "cores" in cal.core_text()
    assert cal.usable_cpus() >= 1
    assert isinstance(cal.cache_text(), str)
    assert list(itertools.islice(cal.sweep_sizes(), 1)) == [32 * KiB]


def test_the_target_file_says_which_method_gave_the_compute_roof(tmp_path):
    # numpy reaches 40 GFLOP/s, onnxruntime's MatMul 80 (made-up rates, 1 s each): the roof is
    # onnxruntime's, and the source says numpy reached 50% of it
    def point(method, flops):
        return cal.MatmulPoint("float32", 512, cal.Rate(flops, 1.0, 3), method)

    result = cal.Calibration(date="2026-12-01", cpu="test CPU", cores="2 cores", threads=1, load_average=None,
                             numpy_version="2", blas="OpenBLAS",
                             matmul=[point("numpy", 40e9), point("onnxruntime", 80e9)],
                             stream=[cal.StreamPoint("copy", size, cal.Rate(1e10, 1.0, 3))
                                     for size in (2**20, 2**24, 2**28, 2**30)])
    path = tmp_path / "t.toml"
    path.write_text(result.to_toml("t"), encoding="utf-8")
    target = parse_target(path)
    figure = target.peak_ops_per_s["fp32"]
    assert figure.value == 80e9
    assert "the roof is the best: onnxruntime at n=512" in figure.source
    assert "numpy reaches 50% of it" in figure.source


def test_the_launch_overhead_becomes_the_measured_targets_cost_per_kernel(tmp_path):
    # a chain of 1 tiny kernel runs in 20 µs, one of 65 in 660 µs: 640 µs / 64 = 10 µs per kernel
    overhead = achieved.per_kernel_seconds(20e-6, 660e-6, kernels=65)
    assert overhead == pytest.approx(10e-6)
    result = cal.Calibration(date="2026-12-01", cpu="test CPU", cores="2 cores", threads=1, load_average=None,
                             numpy_version="2", blas="OpenBLAS",
                             matmul=[cal.MatmulPoint("float32", 512, cal.Rate(40e9, 1.0, 3))],
                             stream=[cal.StreamPoint("copy", size, cal.Rate(1e10, 1.0, 3))
                                     for size in (2**20, 2**24, 2**28, 2**30)],
                             launch_overhead_s=overhead)
    path = tmp_path / "t.toml"
    path.write_text(result.to_toml("t"), encoding="utf-8")
    target = parse_target(path)
    assert target.node_overhead_s.value == pytest.approx(10e-6) and target.node_overhead_s.tag == "measured"
