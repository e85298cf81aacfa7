"""How a target's devices are linked: the optional ``[interconnect]`` table of a target file.

One sub-table per link class (``[interconnect.nvlink]``, ``[interconnect.pcie]``), each with
three figures ``{value, tag, source}``: ``bandwidth_bytes_per_s`` (what one device sends, and
at the same time receives, per second: the per-direction figure, half a vendor's
"bidirectional" one), ``latency_s`` (the time of one step of a collective over the link: a
message's fixed cost) and ``devices`` (how many devices the class links all to all: an NVSwitch
node's 8, a PCIe host's GPUs). Optional: ``overhead_s``, a fixed cost per collective on top of
its steps (the library's launch and synchronisation).

A tensor- or pipeline-parallel group of N devices uses the fastest class that links at least N
(:meth:`Interconnect.link_for`); beyond every class's ``devices``, none does.

>>> link = Link("nvlink", Figure(450e9, "vendor", "x"), Figure(1e-6, "estimate", "x"), 8)
>>> round(link.all_reduce_s(16_384, 4) * 1e6, 3)  # 6 steps of 1 µs + 1.5 x 16 KiB / 450 GB/s
6.055
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import UsageError
from .figures import Figure, read_figure, read_section, shown

# the most devices one link class may say it links: a rack-scale NVLink domain has 576
MAX_LINKED_DEVICES = 100_000
# a link's per-direction bandwidth: from a slow serial link (1 MB/s) to 100 TB/s (no link is near)
BANDWIDTH_RANGE = (1e6, 1e14)
# a step's latency: from 1 ns to 1 s
LATENCY_RANGE = (1e-9, 1.0)


@dataclass(frozen=True)
class Link:
    """One link class: what a device sends per direction, a step's latency, how many it links."""

    name: str
    bandwidth_bytes_per_s: Figure  # per direction
    latency_s: Figure  # one step of a collective
    devices: int  # how many devices it links all to all
    overhead_s: Figure | None = None  # a fixed cost per collective (launch, synchronisation)

    def ring_bytes(self, message_bytes: int, devices: int) -> float:
        """What each device sends (and receives) in a ring all-reduce of ``message_bytes``: a
        reduce-scatter then an all-gather, N - 1 steps each of 1/N of the message."""
        return 2 * (devices - 1) / devices * message_bytes if devices > 1 else 0.0

    def all_reduce_s(self, message_bytes: int, devices: int) -> float:
        """Ring all-reduce: 2 (N - 1) steps of the link's latency plus 2 (N - 1) / N of the bytes
        over the per-direction bandwidth (each device sends and receives at once), plus the
        class's fixed cost per collective."""
        if devices <= 1:
            return 0.0
        fixed = self.overhead_s.value if self.overhead_s else 0.0
        return (
            2 * (devices - 1) * self.latency_s.value
            + self.ring_bytes(message_bytes, devices) / self.bandwidth_bytes_per_s.value
            + fixed
        )

    def send_s(self, message_bytes: int) -> float:
        """One point-to-point transfer (a pipeline stage handing its activations to the next)."""
        return self.latency_s.value + message_bytes / self.bandwidth_bytes_per_s.value


@dataclass(frozen=True)
class Interconnect:
    links: tuple[Link, ...]

    @property
    def most_devices(self) -> int:
        return max(link.devices for link in self.links)

    def link_for(self, devices: int) -> Link | None:
        """The fastest class that links ``devices`` all to all; None when none does."""
        fitting = [link for link in self.links if link.devices >= devices]
        return max(fitting, key=lambda link: link.bandwidth_bytes_per_s.value) if fitting else None


def read_interconnect(data: dict, where: str) -> Interconnect | None:
    """The ``[interconnect]`` table, validated; None when the file has none."""
    section = read_section(data, "interconnect", where, required=False)
    if not section:
        return None
    links = []
    for name, table in section.items():
        label = f"interconnect.{name}"
        if not isinstance(table, dict):
            raise UsageError(
                f"{where}: '{label}' must be a table of a link class (bandwidth_bytes_per_s, "
                f"latency_s, devices), not {shown(table)}"
            )
        for key in table:
            if key not in ("bandwidth_bytes_per_s", "latency_s", "devices", "overhead_s"):
                raise UsageError(
                    f"{where}: '{label}.{key}' is not a field of a link class "
                    "(bandwidth_bytes_per_s, latency_s, devices, overhead_s)"
                )
        bandwidth = read_figure(table, "bandwidth_bytes_per_s", f"{label}.bandwidth_bytes_per_s", where)
        latency = read_figure(table, "latency_s", f"{label}.latency_s", where)
        overhead = read_figure(table, "overhead_s", f"{label}.overhead_s", where, required=False)
        devices = read_figure(table, "devices", f"{label}.devices", where)
        _in_range(bandwidth, BANDWIDTH_RANGE, f"{label}.bandwidth_bytes_per_s", where, "bytes/s per direction")
        _in_range(latency, LATENCY_RANGE, f"{label}.latency_s", where, "seconds")
        if overhead is not None:
            _in_range(overhead, LATENCY_RANGE, f"{label}.overhead_s", where, "seconds")
        if devices.value != int(devices.value) or not 2 <= devices.value <= MAX_LINKED_DEVICES:
            raise UsageError(
                f"{where}: '{label}.devices.value' must be a whole number of devices from 2 to "
                f"{MAX_LINKED_DEVICES:,}, not {devices.value:g}"
            )
        links.append(Link(name, bandwidth, latency, int(devices.value), overhead))
    return Interconnect(tuple(links))


def _in_range(figure: Figure, bounds: tuple[float, float], label: str, where: str, unit: str) -> None:
    low, high = bounds
    if not low <= figure.value <= high:
        raise UsageError(
            f"{where}: '{label}.value' is {figure.value:g}, out of range for a link ({low:g} to {high:g} {unit})"
        )
