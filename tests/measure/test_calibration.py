"""`onnxroof calibrate`'s measuring, end to end with a mocked clock on tiny sizes."""

from __future__ import annotations

import pytest
from measurements import FakeClock, KiB, MiB

from onnxroof.measure.calibration import calibrate
from onnxroof.measure.op_efficiency import OP_CASES
from onnxroof.measure.roof_kernels import STREAM_KERNELS, matmul_flops, stream_bytes, stream_elements
from onnxroof.report.target_file import calibrated_target


def test_calibrate_end_to_end_with_a_mocked_timer():
    """The whole pipeline on tiny sizes; the clock says every timed call takes 1 ms, so every
    figure is the work of one call per millisecond, and the file it makes validates."""
    clock = FakeClock(step=1e-3)
    messages = []
    result = calibrate(
        seconds=2,
        threads=2,
        largest=1 * MiB,
        progress=messages.append,
        timer=clock,
        matmul_sizes=(32, 64),
        int8_sizes=(16, 32),
    )
    # int8 by onnxruntime's MatMulInteger (installed with the test extras)
    assert {p.dtype for p in result.matmul} == {"float32", "float64", "float16", "int8"}
    assert sorted(p.n for p in result.matmul if p.dtype == "int8") == [16, 32]
    # every size in every round, by numpy and by onnxruntime's MatMul (installed with the test extras)
    for method in ("numpy", "onnxruntime"):
        assert [p.n for p in result.matmul if p.dtype == "float32" and p.method == method] == sorted(
            [32, 64] * result.rounds
        )
    for point in result.matmul:
        assert point.rate.seconds == pytest.approx(1e-3)
        assert point.rate.work % matmul_flops(point.n) == 0
    sizes = sorted({p.working_set for p in result.stream})
    assert sizes[0] == 32 * KiB and sizes[-1] == 1 * MiB
    assert result.rounds == 1  # a quick calibration: one round
    assert len(result.stream) == result.rounds * len(sizes) * len(STREAM_KERNELS)
    for point in result.stream:
        elements = stream_elements(point.kernel, point.working_set, 2)
        assert point.rate.work % (2 * stream_bytes(point.kernel, elements)) == 0
    assert any("fp32 matmul n=64" in m for m in messages) and any("bandwidth" in m for m in messages)
    # every op of the by_op table measured (onnxruntime's own clock), or a note says why not
    measured = {m.case.label for m in result.efficiency_by_op}
    assert all(case.label in measured or any(n.startswith(case.label) for n in result.notes) for case in OP_CASES)
    target = calibrated_target(result, "mocked")
    assert target.peak_ops_per_s["fp32"].value == pytest.approx(
        max(p.rate.per_second for p in result.matmul if p.dtype == "float32")
    )
    # every call "lasts" 1 ms: the int8 roof is the larger size's 2 x 32^3 = 65,536 ops per call
    # times the calls the 1 ms probe asks for, per ms; the best int8 point is the roof
    assert target.peak_ops_per_s["int8"].value == pytest.approx(
        max(p.rate.per_second for p in result.matmul if p.dtype == "int8")
    )
    assert target.peak_ops_per_s["int8"].tag == "measured"
