"""The largest-kernel finding: where the time goes, a pointer with no gain."""

from __future__ import annotations

import onnxroof

from conftest import target_text
from test_intensity import convs


def test_the_largest_kernel_and_its_share(tmp_path):
    # the 3x3 convolution (75.497472 µs) and the 1x1 (27.0336 µs) of test_intensity, on the same
    # target: the 3x3 takes 75.497472 / 102.531072 = 74 % of the time, compute-bound
    path = tmp_path / "narrow.toml"
    path.write_text(target_text({"peak_ops_per_s.fp32": 1e12, "dram.bandwidth_bytes_per_s": 20e9},
                                '[fusion]\nrules = []\nsource = "hand"\n', name="narrow"))
    analysis = onnxroof.analyze(convs(), targets=[str(path)])
    (finding,) = [f for f in analysis.review() if f.kind == "largest"]
    assert finding.title == "kernel conv3x3 (Conv) takes 74% (75.5 µs), compute-bound"
    assert finding.gain_s == 0 and finding.nodes == ("conv3x3",)
    assert analysis.review()[-1] is finding  # a pointer comes after the changes that save time
