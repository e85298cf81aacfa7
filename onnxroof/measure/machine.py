"""Facts about the machine a calibration runs on, for the target file's sources: the CPU, its
cores and caches, the BLAS numpy uses, the load and the free memory."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np


def size_text(size: int) -> str:
    """A byte count as people read it: "32 KiB", "1.5 MiB"."""
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"


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


def last_level_cache_bytes() -> int | None:
    """The size of CPU 0's largest data or unified cache as sysfs gives it ("32768K"), or None
    where it does not say."""
    sizes = []
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=None)


def blas_name() -> str:
    try:
        config = np.show_config(mode="dicts")  # numpy >= 1.25
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', 'BLAS')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy or an unusual build: the name is context only
        return "BLAS"


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def available_memory() -> int | None:
    """The bytes of memory this machine has free for a new program (Linux's MemAvailable), or None
    where it does not say."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def fit_in_memory(largest: int) -> tuple[int, str]:
    """Shrink the sweep's largest working set until its arrays (1.33x) fit in half the free memory."""
    available = available_memory()
    if available is None:
        return largest, ""
    wanted = largest
    while largest > 64 * 2**20 and largest * 1.34 > available / 2:
        largest //= 2
    if largest < wanted:
        return largest, f"the sweep stops at {size_text(largest)} (memory available: {size_text(available)})"
    return largest, ""
