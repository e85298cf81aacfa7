"""The roofline's words that every output shares: a bound's label and a device memory's size.
(The findings' records and words are ``onnxroof.findings``'s: ``findings/records.py``,
``findings/wording.py``.)

>>> capacity_text(24_000_000_000)
'22.4 GiB (24 GB)'
"""

from __future__ import annotations

from ..core.units import iec

# each bound (placement.Bound) in words, the same in every output: report/bounds.py, the findings
BOUND_LABELS = {
    "compute": "compute",
    "dram": "DRAM",
    "onchip": "on-chip",
    "parallelism": "parallelism",
    "overhead": "overhead",
    "none": "no work",
}


def capacity_text(capacity_bytes: int) -> str:
    """IEC, with the datasheet's decimal GB beside it: ``22.4 GiB (24 GB)``."""
    return f"{iec(capacity_bytes)} ({capacity_bytes / 1e9:.3g} GB)" if capacity_bytes >= 1e9 else iec(capacity_bytes)
