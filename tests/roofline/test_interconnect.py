"""A target's [interconnect]: the bundled multi-GPU targets state their links with sources, the
ring all-reduce by hand, and a malformed table is one line naming the field."""

from __future__ import annotations

import pytest
from test_targets import VALID, usage_error, write  # noqa: E402  (same folder: the tiny target and its helpers)

from onnxroof.roofline.targets import load_target

LINK = """
[interconnect.nvlink.bandwidth_bytes_per_s]
value = 450e9
tag = "vendor"
source = "datasheet: 900 GB/s both ways"

[interconnect.nvlink.latency_s]
value = 1e-6
tag = "estimate"
source = "a guess"

[interconnect.nvlink.devices]
value = 8
tag = "vendor"
source = "an 8-GPU node"
"""


@pytest.mark.parametrize(
    "name, per_direction, devices",
    [
        ("h100-sxm", 450e9, 8),
        ("h200-sxm", 450e9, 8),
        ("a100-80gb-sxm", 300e9, 8),
        ("a100-40gb-sxm", 300e9, 8),
        ("l4", 32e9, 8),
    ],
)
def test_bundled_links(name, per_direction, devices):
    target = load_target(name)
    link = target.interconnect.link_for(2)
    assert link.bandwidth_bytes_per_s.value == per_direction  # half the vendor's bidirectional figure
    assert link.devices == devices and target.interconnect.link_for(devices + 1) is None
    assert "/ 2" in link.bandwidth_bytes_per_s.source  # the arithmetic is shown
    assert link.latency_s.tag == "estimate" and "tuning.cc" in link.latency_s.source


def test_targets_without_links_have_none():
    assert load_target("raspberry-pi-5").interconnect is None


def test_ring_all_reduce_by_hand(tmp_path):
    link = load_target(str(write(tmp_path, VALID + LINK))).interconnect.link_for(4)
    # 1 MB over 4 devices: each sends 2 x 3/4 x 1e6 = 1.5e6 B; 6 steps of 1 µs + 1.5e6 / 450e9 s
    assert link.ring_bytes(1_000_000, 4) == 1_500_000
    assert link.all_reduce_s(1_000_000, 4) == pytest.approx(6e-6 + 1.5e6 / 450e9)
    assert link.all_reduce_s(1_000_000, 2) == pytest.approx(2e-6 + 1e6 / 450e9)  # 2 x 1/2 of the bytes
    assert link.all_reduce_s(1_000_000, 1) == 0


@pytest.mark.parametrize(
    "change, words",
    [
        (("value = 450e9", "value = 450e30"), "'interconnect.nvlink.bandwidth_bytes_per_s.value'"),
        (("value = 1e-6", "value = 5.0"), "'interconnect.nvlink.latency_s.value' is 5, out of range"),
        (("value = 8", "value = 2.5"), "'interconnect.nvlink.devices.value' must be a whole number"),
        (("value = 8", "value = 1"), "from 2 to"),
        (
            ("[interconnect.nvlink.latency_s]", "[interconnect.nvlink.jitter_s]"),
            "'interconnect.nvlink.jitter_s' is not a field",
        ),
        (('value = 1e-6\ntag = "estimate"', 'value = nan\ntag = "estimate"'), "'interconnect.nvlink.latency_s.value'"),
    ],
)
def test_malformed_links_are_one_line(tmp_path, change, words):
    assert words in usage_error(write(tmp_path, VALID + LINK.replace(*change)))
